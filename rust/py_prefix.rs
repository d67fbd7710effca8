//! The caches' unchanged-prefix check over a caller's message dicts, in one pass.
//!
//! Every cache that keeps counts across turns (request estimate, scans, pairing) asks the
//! same question on each call: does this list start with the messages seen last time, the
//! same objects with the same content fields? In Python that is a list comparison plus one
//! `map(dict.get, ...)` list per field, each built and compared: most of an appended turn's
//! cost. Here it is one loop over the messages with no list built, comparing pointers; only
//! objects that are not the same ones are compared with `==`.
//!
//! A cache that passes a [`DictVersions`] skips even the field lookups of the messages it
//! checked before: `CPython` gives every dict a version number, unique in the process and
//! renewed by each change to the dict (PEP 509; a private field of 3.10-3.13, gone in
//! 3.14). The same dict at the same version still holds the objects its fields were checked
//! against. Where the field is missing (3.14, `PyPy`, free-threaded builds), every message is
//! looked up, as without it.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

/// What a cache remembers of the messages [`unchanged_prefix`] found unchanged, to skip
/// their fields next time: per index, the message dict's address and its version when its
/// fields last matched the saved ones. Kept beside the cache's saved messages and fields.
#[pyclass(module = "ctxbudget._core")]
#[derive(Default)]
pub struct DictVersions {
    seen: Vec<(usize, u64)>,
}

#[pymethods]
impl DictVersions {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Whether this interpreter has dict versions: if not, every check looks fields up.
    #[classattr]
    fn supported(py: Python<'_>) -> bool {
        version(PyDict::new(py).as_ptr()).is_some()
    }

    fn __len__(&self) -> usize {
        self.seen.len()
    }

    /// Copied or pickled empty: versions belong to this process's dicts, and a copy of a
    /// cache holds copies of them (with versions of their own). Empty, the next check looks
    /// the fields up, which is always right.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, ()) {
        (slf.get_type(), ())
    }
}

/// The dict's version number, on the interpreters that keep one (`CPython` 3.10-3.13 with
/// the GIL; `cfg`s from `build.rs`).
#[cfg(not(any(Py_3_14, PyPy, GraalPy, RustPython, Py_LIMITED_API, Py_GIL_DISABLED)))]
#[allow(deprecated)] // deprecated from 3.12 on, and there up to 3.13
#[allow(clippy::unnecessary_wraps)] // None where the field is not
fn version(d: *mut ffi::PyObject) -> Option<u64> {
    // SAFETY: the caller passes a live dict (or a subclass: the same layout first), read
    // under the GIL.
    Some(unsafe { (*d.cast::<ffi::PyDictObject>()).ma_version_tag })
}

#[cfg(any(Py_3_14, PyPy, GraalPy, RustPython, Py_LIMITED_API, Py_GIL_DISABLED))]
fn version(_d: *mut ffi::PyObject) -> Option<u64> {
    None
}

/// `a == b` for two objects that are not the same one (the caller checked identity).
fn equal(py: Python<'_>, a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> PyResult<bool> {
    // SAFETY: both pointers were read under the GIL from live lists or dicts, with no Python
    // code run since; the owned references taken here keep them alive while `__eq__` runs,
    // which may change those containers.
    let (a, b) = unsafe {
        (
            Bound::from_borrowed_ptr(py, a),
            Bound::from_borrowed_ptr(py, b),
        )
    };
    a.eq(b)
}

/// Item `i` of `list` (borrowed), or None past its end: a caller's `__eq__` may have
/// shortened it since its length was read.
fn item(list: &Bound<'_, PyList>, i: usize) -> Option<*mut ffi::PyObject> {
    // SAFETY: the index is checked against the current length, under the GIL.
    (i < list.len()).then(|| unsafe { ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t) })
}

/// How many leading `messages` are unchanged since `previous`: `len(previous)` when each of
/// them is equal to (usually: is) the message at its index and, for every key `keys[j]`, its
/// `dict.get(keys[j])` equals `refs[j][i]`; else 0 (all or nothing). 0 as well when a message
/// is not a dict or the saved lists are not laid out as described: the caller then counts
/// every message again, which is always right.
///
/// With `seen`, a message that is the same dict as before, at the version it had when its
/// fields last matched, is not looked up again; `seen` is updated for the next call (and
/// emptied when the answer is 0). It must be used with one cache's saved lists only.
///
/// Errors raised by a comparison (a caller's `__eq__`) propagate.
#[pyfunction]
#[pyo3(signature = (messages, previous, refs, keys, seen=None))]
pub fn unchanged_prefix(
    py: Python<'_>,
    messages: &Bound<'_, PyList>,
    previous: &Bound<'_, PyList>,
    refs: &Bound<'_, PyList>,
    keys: &Bound<'_, PyTuple>,
    seen: Option<PyRefMut<'_, DictVersions>>,
) -> PyResult<usize> {
    let Some(mut seen) = seen else {
        return check(
            py,
            messages,
            previous,
            refs,
            keys,
            &mut DictVersions::default(),
        );
    };
    let k = check(py, messages, previous, refs, keys, &mut seen)?;
    seen.seen.truncate(k);
    Ok(k)
}

fn check(
    py: Python<'_>,
    messages: &Bound<'_, PyList>,
    previous: &Bound<'_, PyList>,
    refs: &Bound<'_, PyList>,
    keys: &Bound<'_, PyTuple>,
    seen: &mut DictVersions,
) -> PyResult<usize> {
    let k = previous.len();
    if k == 0 || messages.len() < k || refs.len() != keys.len() {
        return Ok(0);
    }
    let mut saved = Vec::with_capacity(keys.len());
    for r in refs.iter() {
        match r.cast_into::<PyList>() {
            Ok(list) if list.len() == k => saved.push(list),
            _ => return Ok(0),
        }
    }
    let keys: Vec<Bound<'_, PyAny>> = keys.iter().collect();
    for i in 0..k {
        // Owned: an `__eq__` below must not free the message under us.
        let (Ok(message), Some(before)) = (messages.get_item(i), item(previous, i)) else {
            return Ok(0);
        };
        let same = message.as_ptr() == before;
        if !same && !equal(py, message.as_ptr(), before)? {
            return Ok(0);
        }
        let Ok(d) = message.cast::<PyDict>() else {
            return Ok(0);
        };
        // Read before the lookups, which may run Python code that changes the dict.
        let mark = if same {
            version(before).map(|v| (before as usize, v))
        } else {
            None
        };
        if mark.is_some() && seen.seen.get(i) == mark.as_ref() {
            continue;
        }
        for (key, list) in keys.iter().zip(&saved) {
            // SAFETY: `d` is a live dict and `key` a live object, under the GIL. The lookup
            // may run Python code (the `__eq__` of a key with the same hash), so the saved
            // reference is read after it; the value is borrowed from the dict and compared
            // before any Python code runs (`equal` takes references first).
            let value = unsafe { ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr()) };
            if value.is_null() {
                if let Some(err) = PyErr::take(py) {
                    return Err(err);
                }
            }
            let Some(saved_ref) = item(list, i) else {
                return Ok(0);
            };
            if value.is_null() {
                // SAFETY: comparing with the None singleton's address.
                if saved_ref != unsafe { ffi::Py_None() } {
                    return Ok(0);
                }
            } else if value != saved_ref && !equal(py, value, saved_ref)? {
                return Ok(0);
            }
        }
        seen.record(i, mark);
    }
    Ok(k)
}

impl DictVersions {
    /// Remember message `i`'s mark (or that it has none) after its fields matched.
    fn record(&mut self, i: usize, mark: Option<(usize, u64)>) {
        let mark = mark.unwrap_or((0, 0)); // address 0 is no message's
        match self.seen.get_mut(i) {
            Some(slot) => *slot = mark,
            None => self.seen.push(mark),
        }
    }
}
