//! Python binding of [`stream::TextStream`]: text read in chunks, checked and estimated.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::py::{maybe_detach, parse_encoding, text_error, ByteSource};
use crate::stream;

/// Text fed in chunks (`bytes`, `bytearray`, `memoryview`), checked as UTF-8 without NUL and
/// estimated in each of the encodings given, with only a chunk and a short tail held.
#[pyclass(module = "ctxbudget._core")]
pub struct TextStream {
    /// `None` once finished.
    inner: Option<stream::TextStream>,
}

/// The encoding names of `TextStream(encodings)`: a list of `str` (a `str` alone is refused,
/// not read as a list of one-letter names).
fn encoding_names(encodings: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(name) = encodings.cast::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "TextStream takes a list of encoding names, got the str {}: pass [{0}]",
            name.repr()?
        )));
    }
    encodings.extract::<Vec<String>>().map_err(|_| {
        let kind = encodings
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        PyTypeError::new_err(format!(
            "TextStream takes a list of encoding names (str), got {kind}"
        ))
    })
}

fn finished() -> PyErr {
    PyRuntimeError::new_err("this TextStream is finished: make a new one")
}

#[pymethods]
impl TextStream {
    #[new]
    #[pyo3(signature = (encodings, /))]
    fn new(encodings: &Bound<'_, PyAny>) -> PyResult<Self> {
        let encodings = encoding_names(encodings)?;
        if encodings.is_empty() {
            return Err(PyValueError::new_err(
                "TextStream needs at least one encoding",
            ));
        }
        let encodings = encodings
            .iter()
            .map(|name| parse_encoding(name))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self {
            inner: Some(stream::TextStream::new(&encodings)),
        })
    }

    /// Adds `data`. Raises `BinaryContentError` at the stream's first NUL or ill-formed UTF-8
    /// byte (its offset counted from the stream's start), and again on every later call.
    #[pyo3(signature = (data, /))]
    fn feed(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let source = ByteSource::new(data, "TextStream.feed")?;
        let inner = self.inner.as_mut().ok_or_else(finished)?;
        let bytes = source.as_slice();
        // A buffer other threads may write is read with the interpreter held.
        maybe_detach(py, source.detach_size(), || inner.feed(bytes)).map_err(|e| text_error(&e))
    }

    /// `(bytes, tokens per encoding, bytes of an unfinished UTF-8 character at the end)`, and
    /// the stream is finished. Raises the error `feed` raised, if it raised one.
    fn finish(&mut self, py: Python<'_>) -> PyResult<(usize, Vec<u64>, usize)> {
        let inner = self.inner.take().ok_or_else(finished)?;
        let counted = py
            .detach(move || inner.finish())
            .map_err(|e| text_error(&e))?;
        Ok((counted.bytes, counted.tokens, counted.cut_character))
    }
}
