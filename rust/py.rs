//! Python bindings: convert arguments, call the core, map errors. No logic lives here.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyBytes, PyList, PyMemoryView, PyString};

use crate::batch;
use crate::estimate::Encoding;
use crate::pairing::{self, EventKind, PairingEvent};
use crate::select;
use crate::text::{self, TextError};
use crate::units::Text;

pyo3::import_exception!(ctxbudget.errors, BinaryContentError);

/// Inputs at least this large are processed with the interpreter released.
const DETACH_THRESHOLD: usize = 64 * 1024;

/// Borrowed bytes of a `bytes`, `bytearray` or `memoryview` (any C-contiguous buffer).
pub(crate) enum ByteSource<'py> {
    Bytes(Bound<'py, PyBytes>),
    /// A buffer, and whether its bytes cannot change (a `memoryview` of `bytes`).
    Buffer(PyUntypedBuffer, bool),
}

impl<'py> ByteSource<'py> {
    pub(crate) fn new(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Self> {
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return Ok(Self::Bytes(bytes.clone()));
        }
        if obj.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(format!(
                "{what} takes bytes, bytearray or memoryview, not str (a str is already text)"
            )));
        }
        let buffer = PyUntypedBuffer::get(obj).or_else(|err| {
            // An exporter that gives no strides (a ctypes array: "strides is null"): a
            // memoryview of it has them.
            if err.is_instance_of::<PyBufferError>(obj.py())
                && !obj.is_instance_of::<PyMemoryView>()
            {
                if let Ok(view) = PyMemoryView::from(obj) {
                    return PyUntypedBuffer::get(view.as_any()).map_err(|_| err);
                }
            }
            Err(err)
        });
        let buffer = buffer.map_err(|err| {
            if err.is_instance_of::<PyTypeError>(obj.py()) {
                PyTypeError::new_err(format!(
                    "{what} takes bytes, bytearray or memoryview, not {}",
                    type_name(obj)
                ))
            } else if obj
                .getattr(intern!(obj.py(), "ndim"))
                .and_then(|n| n.extract::<usize>())
                .is_ok_and(|n| n == 0)
            {
                // A 0-d array (one item, no shape): PyO3 refuses it with "shape is null".
                PyValueError::new_err(format!(
                    "{what} takes a buffer of bytes, not a 0-dimensional {}",
                    type_name(obj)
                ))
            } else {
                // A buffer that cannot be read now (a released memoryview, a closed mmap):
                // its own error says why.
                err
            }
        })?;
        if !buffer.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{what} needs a C-contiguous buffer"
            )));
        }
        if buffer.item_size() != 1 {
            // A numpy array of strings or an array('I') would be read as raw bytes and
            // silently miscounted.
            return Err(PyValueError::new_err(format!(
                "{what} takes a buffer of bytes, not items of {} bytes ({})",
                buffer.item_size(),
                type_name(obj)
            )));
        }
        // Only bytes are sure not to change: a read-only flag is the view's, not the memory's
        // (`memoryview(bytearray).toreadonly()`, a read-only numpy view of a writable array).
        let immutable = obj
            .cast::<PyMemoryView>()
            .ok()
            .and_then(|view| view.getattr(intern!(obj.py(), "obj")).ok())
            .is_some_and(|base| base.is_instance_of::<PyBytes>());
        Ok(Self::Buffer(buffer, immutable))
    }

    /// Whether other Python threads may change the bytes while the interpreter is released:
    /// anything but `bytes` and a `memoryview` of `bytes` (a `bytearray`, any view of one,
    /// read-only or not, an `array`, a numpy array, an `mmap`).
    fn writable(&self) -> bool {
        match self {
            Self::Bytes(_) => false,
            Self::Buffer(_, immutable) => !immutable,
        }
    }

    /// The size to give [`maybe_detach`] for work over these bytes: their length, or zero for
    /// a buffer other threads may write, which is read with the interpreter held (a write
    /// meanwhile would be a data race on the slice the core reads).
    pub(crate) fn detach_size(&self) -> usize {
        if self.writable() {
            0
        } else {
            self.as_slice().len()
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Self::Bytes(bytes) => bytes.as_bytes(),
            Self::Buffer(buffer, _) => {
                let len = buffer.len_bytes();
                if len == 0 {
                    return &[];
                }
                // SAFETY: the buffer is C-contiguous and stays exported (so cannot be resized or
                // freed) for as long as `self` lives; we only read it.
                unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), len) }
            }
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "an unknown type".to_owned(), |name| name.to_string())
}

/// Runs `f` with the interpreter released when the input is large enough to be worth it.
pub(crate) fn maybe_detach<T: Send>(py: Python<'_>, len: usize, f: impl FnOnce() -> T + Send) -> T {
    if len >= DETACH_THRESHOLD {
        py.detach(f)
    } else {
        f()
    }
}

pub(crate) fn text_error(err: &TextError) -> PyErr {
    BinaryContentError::new_err((
        err.to_string(),
        err.offset,
        err.reason.as_str(),
        err.detected_type,
    ))
}

/// Adds `note` to `err`'s `__notes__` (PEP 678): with `add_note` where Python has it (3.11),
/// else by setting the attribute as `add_note` would, which readers of notes on 3.10 (the
/// `exceptiongroup` backport) show. Best effort: an exception refusing attributes keeps none.
fn add_note(py: Python<'_>, err: &PyErr, note: &str) {
    let value = err.value(py);
    if value.call_method1("add_note", (note,)).is_ok() {
        return;
    }
    let notes = if let Ok(notes) = value.getattr("__notes__") {
        notes.cast_into::<PyList>().ok()
    } else {
        let list = PyList::empty(py);
        value.setattr("__notes__", &list).ok().map(|()| list)
    };
    if let Some(notes) = notes {
        let _ = notes.append(note);
    }
}

pub(crate) fn parse_encoding(name: &str) -> PyResult<Encoding> {
    Encoding::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
        PyValueError::new_err(format!(
            "unknown encoding {name:?}; expected one of: {}",
            known.join(", ")
        ))
    })
}

#[pyfunction]
#[pyo3(signature = (data, /))]
fn validate_text(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
    let source = ByteSource::new(data, "validate_text")?;
    let bytes = source.as_slice();
    maybe_detach(py, source.detach_size(), || text::validate(bytes)).map_err(|e| text_error(&e))
}

/// Decodes with `CPython`'s own UTF-8 decoder (the same code as `bytes.decode()`), after a
/// `memchr` scan for NUL; only when something is wrong does the core locate and name it.
/// Building the `str` is the bulk of the cost, so this matches `find(b"\0") + decode()`.
#[pyfunction]
#[pyo3(signature = (data, /))]
fn check_text<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    let source = ByteSource::new(data, "check_text")?;
    let bytes = source.as_slice();
    // The NUL scan and the decode must see the same bytes: a buffer another thread may write
    // is scanned with the interpreter held (the str would otherwise hold a NUL put in between).
    let size = source.detach_size();
    let has_nul = maybe_detach(py, size, || text::has_nul(bytes));
    if !has_nul {
        if let Ok(decoded) = decode_utf8(py, bytes) {
            return Ok(decoded);
        }
    }
    let err = maybe_detach(py, size, || text::validate(bytes));
    Err(err.map_or_else(
        |e| text_error(&e),
        |()| PyValueError::new_err("check_text: decoding failed on valid text"),
    ))
}

fn decode_utf8<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(bytes.len())
        .map_err(|_| PyValueError::new_err("check_text: input too large"))?;
    // SAFETY: `bytes` is a live, readable buffer of `len` bytes; the call holds the
    // interpreter (we have `py`) and returns a new reference or NULL with an error set.
    unsafe {
        let raw = pyo3::ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"strict".as_ptr());
        Ok(Bound::from_owned_ptr_or_err(py, raw)?.cast_into_unchecked::<PyString>())
    }
}

/// `data.count(b"\n")` (or `"\n"` for a `str`, read in its own storage), without `count`'s
/// restart at every hit.
#[pyfunction]
#[pyo3(signature = (data, /))]
fn count_newlines(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
    let source = TextSource::new(data, "count_newlines")?;
    let view = source.text()?;
    Ok(maybe_detach(py, source.detach_size(&view), || {
        view.count_newlines()
    }))
}

#[pyfunction]
#[pyo3(signature = (data, /))]
fn detect_type(data: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    let source = ByteSource::new(data, "detect_type")?;
    Ok(text::detect_type(source.as_slice()))
}

/// The text of a `str` (its own PEP 393 storage, no UTF-8 copy) or of a bytes-like object.
pub(crate) enum TextSource<'py> {
    Str(Bound<'py, PyString>),
    Bytes(ByteSource<'py>),
}

impl<'py> TextSource<'py> {
    fn new(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Self> {
        match obj.cast::<PyString>() {
            Ok(string) => Ok(Self::Str(string.clone())),
            Err(_) => ByteSource::new(obj, what).map(Self::Bytes).map_err(|e| {
                if e.is_instance_of::<PyTypeError>(obj.py()) {
                    PyTypeError::new_err(format!(
                        "{what} takes str, bytes, bytearray or memoryview, not {}",
                        type_name(obj)
                    ))
                } else {
                    e
                }
            }),
        }
    }

    pub(crate) fn text(&self) -> PyResult<Text<'_>> {
        match self {
            Self::Bytes(bytes) => Ok(Text::Utf8(bytes.as_slice())),
            // SAFETY: the data stays valid and unchanged while `self` holds the (immutable)
            // string; the slice does not outlive `self`.
            Self::Str(string) => Ok(match unsafe { string.data() }? {
                PyStringData::Ucs1(b) => Text::Latin1(b),
                PyStringData::Ucs2(u) => Text::Ucs2(u),
                PyStringData::Ucs4(u) => Text::Ucs4(u),
            }),
        }
    }

    /// The size to give [`maybe_detach`] for work over `view` (this source's text): zero for
    /// a buffer other threads may write ([`ByteSource::detach_size`]; a `str` never changes).
    fn detach_size(&self, view: &Text<'_>) -> usize {
        match self {
            Self::Str(_) => view.size(),
            Self::Bytes(bytes) => bytes.detach_size(),
        }
    }

    /// The error for text with no UTF-8 form: `CPython`'s own `UnicodeEncodeError`.
    fn no_utf8(&self) -> PyErr {
        match self {
            Self::Str(string) => string.to_str().err(),
            Self::Bytes(_) => None,
        }
        .unwrap_or_else(|| PyValueError::new_err("text has no UTF-8 form"))
    }
}

#[pyfunction]
#[pyo3(signature = (text, /, encoding = "o200k", *, parallel = false))]
fn estimate_tokens(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    encoding: &str,
    parallel: bool,
) -> PyResult<u64> {
    let encoding = parse_encoding(encoding)?;
    let source = TextSource::new(text, "estimate_tokens")?;
    let view = source.text()?;
    maybe_detach(py, source.detach_size(&view), || {
        if parallel {
            batch::estimate_parallel(&view, encoding)
        } else {
            view.estimate(encoding)
        }
    })
    .map_err(|_| source.no_utf8())
}

#[pyfunction]
#[pyo3(signature = (texts, /, encoding = "o200k"))]
fn estimate_batch<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    encoding: &str,
) -> PyResult<Bound<'py, numpy::PyArray1<i64>>> {
    use numpy::IntoPyArray;

    let encoding = parse_encoding(encoding)?;
    if texts.is_instance_of::<PyString>() || texts.is_instance_of::<PyBytes>() {
        // Iterable, one character or byte at a time: surely not what was meant.
        return Err(PyTypeError::new_err(format!(
            "estimate_batch takes a list of texts, not one {}: use estimate_tokens",
            type_name(texts)
        )));
    }
    let mut sources = Vec::new();
    for (index, item) in texts.try_iter()?.enumerate() {
        let item = item?;
        sources.push(TextSource::new(&item, "estimate_batch").map_err(|e| {
            let message = format!("estimate_batch: item {index}: {}", e.value(py));
            if e.is_instance_of::<PyTypeError>(py) {
                PyTypeError::new_err(message)
            } else {
                PyValueError::new_err(message)
            }
        })?);
    }
    let views = sources
        .iter()
        .map(TextSource::text)
        .collect::<PyResult<Vec<Text<'_>>>>()?;
    // Released only when no item is a buffer other threads may write.
    let sizes = sources
        .iter()
        .zip(&views)
        .map(|(s, v)| (s.detach_size(v), v.size()));
    let total = sizes
        .map(|(detach, size)| (detach == size).then_some(size))
        .sum::<Option<usize>>()
        .unwrap_or(0);
    let counts = maybe_detach(py, total, || batch::estimate_batch(&views, encoding)).map_err(
        |(index, _)| {
            // CPython's own error, which names a position in the item: say which item.
            let err = sources[index].no_utf8();
            let note = format!("estimate_batch: item {index} has no UTF-8 form");
            add_note(py, &err, &note);
            err
        },
    )?;
    Ok(counts
        .into_iter()
        .map(|n| i64::try_from(n).unwrap_or(i64::MAX))
        .collect::<Vec<i64>>()
        .into_pyarray(py))
}

#[pyfunction]
fn encodings() -> Vec<&'static str> {
    Encoding::ALL.iter().map(|e| e.name()).collect()
}

/// Sizes as an `int64` numpy array (borrowed) or any sequence of ints (copied).
fn extract_sizes(sizes: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    use numpy::PyReadonlyArray1;
    if let Ok(array) = sizes.extract::<PyReadonlyArray1<'_, i64>>() {
        return Ok(array.as_array().iter().copied().collect());
    }
    sizes.extract::<Vec<i64>>().map_err(|err| {
        PyTypeError::new_err(format!(
            "sizes must be a sequence of ints that fit in int64, or a 1-D int64 numpy array \
             (got {}: {err})",
            type_name(sizes)
        ))
    })
}

#[pyfunction]
#[pyo3(signature = (sizes, need, /, protected))]
fn select_largest(
    py: Python<'_>,
    sizes: &Bound<'_, PyAny>,
    need: i64,
    protected: Vec<i64>,
) -> PyResult<(Vec<usize>, i64, i64)> {
    let sizes = extract_sizes(sizes)?;
    let protected = protected
        .into_iter()
        .map(|index| {
            usize::try_from(index)
                .map_err(|_| PyValueError::new_err(format!("protected index {index} is negative")))
        })
        .collect::<PyResult<Vec<usize>>>()?;
    let selection = maybe_detach(py, sizes.len() * 8, || {
        select::select_largest(&sizes, need, &protected)
    })
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((selection.indices, selection.freed, selection.shortfall))
}

fn event_kind(kind: &Bound<'_, PyAny>, index: usize) -> PyResult<EventKind> {
    if let Ok(value) = kind.extract::<i64>() {
        return match value {
            0 => Ok(EventKind::Call),
            1 => Ok(EventKind::Result),
            _ => Err(PyValueError::new_err(format!(
                "event {index}: kind must be 0 (call) or 1 (result), not {value}"
            ))),
        };
    }
    match kind
        .cast::<PyString>()
        .ok()
        .map(|s| s.to_str().map(str::to_owned))
    {
        Some(Ok(name)) if name == "call" => Ok(EventKind::Call),
        Some(Ok(name)) if name == "result" => Ok(EventKind::Result),
        _ => Err(PyValueError::new_err(format!(
            "event {index}: kind must be EventKind.CALL/RESULT, 0/1 or 'call'/'result'"
        ))),
    }
}

#[pyfunction]
#[pyo3(signature = (events, /))]
fn validate_pairing(
    py: Python<'_>,
    events: &Bound<'_, PyAny>,
) -> PyResult<Vec<(&'static str, String, Vec<i64>)>> {
    let mut raw: Vec<(i64, EventKind, Bound<'_, PyString>)> = Vec::new();
    for (index, item) in events.try_iter()?.enumerate() {
        let item = item?;
        let (position, kind, call_id): (i64, Bound<'_, PyAny>, Bound<'_, PyAny>) =
            item.extract().map_err(|err| {
                PyTypeError::new_err(format!(
                    "event {index}: expected a (position: int64, kind, call_id) tuple \
                     (got {}: {err})",
                    type_name(&item)
                ))
            })?;
        let call_id = call_id
            .cast_into::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("event {index}: call_id must be a str")))?;
        raw.push((position, event_kind(&kind, index)?, call_id));
    }
    let ids = raw
        .iter()
        .map(|(_, _, id)| id.to_str())
        .collect::<PyResult<Vec<&str>>>()?;
    let events: Vec<PairingEvent<'_>> = raw
        .iter()
        .zip(&ids)
        .map(|((position, kind, _), call_id)| PairingEvent {
            position: *position,
            kind: *kind,
            call_id,
        })
        .collect();
    let violations = maybe_detach(py, events.len() * 16, || pairing::validate_pairing(&events))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(violations
        .into_iter()
        .map(|v| (v.kind.as_str(), v.call_id, v.positions))
        .collect())
}

// Not declared free-threading safe: the unchanged-prefix check (`py_prefix.rs`) holds borrowed
// references to list items (`PyList_GET_ITEM`), which only the GIL keeps alive against other
// threads, and `py_dict_versions.rs` reads dicts' private version field. A free-threaded
// interpreter turns the GIL back on when it imports this module (and says so).
#[pymodule(gil_used = true)]
mod _core {
    #[pymodule_export]
    use super::{
        check_text, count_newlines, detect_type, encodings, estimate_batch, estimate_tokens,
        select_largest, validate_pairing, validate_text,
    };
    #[pymodule_export]
    use crate::py_dict_versions::DictVersions;
    #[pymodule_export]
    use crate::py_json::json_text_of;
    #[pymodule_export]
    use crate::py_prefix::{register_plain_model, unchanged_prefix};
    #[pymodule_export]
    use crate::py_same::same_value;
    #[pymodule_export]
    use crate::py_stream::TextStream;
    #[pymodule_export]
    use crate::py_weigh::weigh_messages;
}
