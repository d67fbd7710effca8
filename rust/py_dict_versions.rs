//! What the unchanged-prefix check ([`crate::py_prefix`]) remembers between calls, so that a
//! message it checked before costs no field lookups.
//!
//! `CPython` gives every dict a version number, unique in the process and renewed by each
//! change to the dict (PEP 509; a private field of 3.10-3.13, gone in 3.14). A [`Mark`] says:
//! this dict, at this version, held exactly these objects (the same ones, not equal ones) in
//! the fields checked, and they were the cache's saved references. While the dict keeps that
//! version it still holds those objects, which keeps them alive; if the cache's saved
//! references are the same objects too, a lookup would find what it found then. Nothing else
//! is assumed: a mark read against another cache's references, other keys or a rebuilt list
//! is simply not used.
//!
//! Not kept where the field is missing (3.14, `PyPy`, free-threaded builds), nor for dicts whose
//! values live outside the dict (an instance's `__dict__`: on 3.13 setting an attribute changes
//! it without a new version).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

/// Most fields a mark holds references for (the call-id renamer compares up to sixteen,
/// format detection ten, the Chat Completions count eight); a caller with more keys is
/// compared field by field every time.
pub(crate) const MARK_KEYS: usize = 16;

/// Message `i`'s state when its fields last matched the saved references by identity.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The dict's address (0: no mark).
    pub dict: usize,
    pub version: u64,
    /// The saved references' addresses, one per key.
    pub refs: [usize; MARK_KEYS],
}

/// Per index, the [`Mark`] of the message a cache saw there, and the keys they were made
/// for. Copied or pickled empty: versions belong to this process's dicts.
#[pyclass(module = "ctxbudget._core")]
#[derive(Default)]
pub struct DictVersions {
    pub(crate) marks: Vec<Mark>,
    /// The keys tuple the marks were made for (held, so its address is not reused).
    pub(crate) keys: Option<Py<PyTuple>>,
}

#[pymethods]
impl DictVersions {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Whether this interpreter has dict versions: if not, every check looks fields up.
    #[classattr]
    fn supported(py: Python<'_>) -> PyResult<bool> {
        // Not empty: an empty dict may share a table of values (3.10).
        let d = PyDict::new(py);
        d.set_item(0, 0)?;
        Ok(version(d.as_ptr()).is_some())
    }

    fn __len__(&self) -> usize {
        self.marks.len()
    }

    /// Copied or pickled empty: the next check looks the fields up, which is always right.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, ()) {
        (slf.get_type(), ())
    }
}

impl DictVersions {
    /// The marks, taken out for one check (empty if they were made for other keys, or if
    /// another check holds them); give them back with [`DictVersions::put`].
    pub(crate) fn take(seen: &Bound<'_, Self>, keys: &Bound<'_, PyTuple>) -> Vec<Mark> {
        let Ok(mut this) = seen.try_borrow_mut() else {
            return Vec::new();
        };
        let same_keys = this.keys.as_ref().is_some_and(|k| k.is(keys));
        let marks = std::mem::take(&mut this.marks);
        if same_keys {
            marks
        } else {
            Vec::new()
        }
    }

    /// Keep `marks`, made for `keys`.
    pub(crate) fn put(seen: &Bound<'_, Self>, keys: &Bound<'_, PyTuple>, marks: Vec<Mark>) {
        if let Ok(mut this) = seen.try_borrow_mut() {
            this.marks = marks;
            this.keys = Some(keys.clone().unbind());
        }
    }
}

/// Set message `i`'s mark (`None`: it has none).
pub(crate) fn record(marks: &mut Vec<Mark>, i: usize, mark: Option<Mark>) {
    let mark = mark.unwrap_or_default();
    if let Some(slot) = marks.get_mut(i) {
        *slot = mark;
    } else if marks.len() == i {
        marks.push(mark);
    } // else a gap (cannot happen: marks are set in index order): left unmarked
}

/// The dict's version number, where one is kept for it (`CPython` 3.10-3.13 with the GIL, a
/// dict that holds its own values; `cfg`s from `build.rs`).
#[cfg(not(any(Py_3_14, PyPy, GraalPy, RustPython, Py_LIMITED_API, Py_GIL_DISABLED)))]
#[allow(deprecated)] // deprecated from 3.12 on, and there up to 3.13
pub(crate) fn version(d: *mut ffi::PyObject) -> Option<u64> {
    // SAFETY: the caller passes a live dict (or a subclass: the same layout first), read
    // under the GIL.
    let d = unsafe { &*d.cast::<ffi::PyDictObject>() };
    d.ma_values.is_null().then_some(d.ma_version_tag)
}

#[cfg(any(Py_3_14, PyPy, GraalPy, RustPython, Py_LIMITED_API, Py_GIL_DISABLED))]
pub(crate) fn version(_d: *mut ffi::PyObject) -> Option<u64> {
    None
}
