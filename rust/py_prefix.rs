//! The caches' unchanged-prefix check over a caller's message dicts, in one pass.
//!
//! Every cache that keeps counts across turns (request estimate, scans, pairing) asks the
//! same question on each call: does this list start with the messages seen last time, the
//! same objects with the same content fields? In Python that is a list comparison plus one
//! `map(dict.get, ...)` list per field, each built and compared: most of an appended turn's
//! cost. Here it is one loop over the messages with no list built, comparing pointers; only
//! objects that are not the same ones are compared, by value and type (`rust/py_same.rs`:
//! `1 == 1.0` in Python, but the two are written, and counted, differently).
//!
//! A cache that passes a [`DictVersions`] skips even the field lookups of a message that is
//! the same dict, unchanged since its fields last matched (see [`crate::py_dict_versions`]).
//!
//! A message that is a plain pydantic model (a provider SDK's message, appended to a history
//! as the response gave it; which classes are plain, Python's `plain_model` says) has its
//! fields read from its instance `__dict__`, then its extra fields, as the Python side saves
//! them (`field_refs` in `python/ctxbudget/formats/common.py`, [`object_fields`] here); any
//! other object makes the answer 0.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use crate::py_dict_versions::{record, version, DictVersions, Mark, MARK_KEYS};
use crate::py_same::same_ptr as equal;

/// Item `i` of `list` (borrowed), or None past its end: a caller's `__eq__` may have
/// shortened it since its length was read.
fn item(list: &Bound<'_, PyList>, i: usize) -> Option<*mut ffi::PyObject> {
    // SAFETY: the index is checked against the current length, under the GIL.
    (i < list.len()).then(|| unsafe { ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t) })
}

/// How many leading `messages` are unchanged since `previous`: `len(previous)` when each of
/// them is the same as (usually: is) the message at its index and, for every key `keys[j]`,
/// its `dict.get(keys[j])` (an object's `__dict__.get(keys[j])`) is the same as `refs[j][i]`
/// (or equal to it with the same types throughout,
/// [`same_value`](crate::py_same::same_value)); else 0 (all or nothing). 0 as well when a
/// message is neither a dict nor an object with a `__dict__`, or the saved lists are not laid
/// out as described: the caller then counts every message again, which is always right.
///
/// With `seen`, a message that is the same dict as before, at the version it had when its
/// fields last matched the same saved references by identity, is not looked up again; `seen`
/// is updated for the next call. The answer is the same with or without it.
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
    seen: Option<&Bound<'_, DictVersions>>,
) -> PyResult<usize> {
    // Taken out, not borrowed, while the check runs a caller's `__eq__` (which may use the
    // same cache again).
    let mut marks = seen
        .map(|s| DictVersions::take(s, keys))
        .unwrap_or_default();
    let k = check(py, messages, previous, refs, keys, &mut marks);
    if let (Some(seen), Ok(k)) = (seen, &k) {
        marks.truncate(*k);
        DictVersions::put(seen, keys, marks);
    }
    k
}

fn check(
    py: Python<'_>,
    messages: &Bound<'_, PyList>,
    previous: &Bound<'_, PyList>,
    refs: &Bound<'_, PyList>,
    keys: &Bound<'_, PyTuple>,
    marks: &mut Vec<Mark>,
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
    // the classes of object messages met in this call, and whether their fields are readable
    let mut models: Vec<(Bound<'_, PyType>, bool)> = Vec::new();
    for i in 0..k {
        // Owned: an `__eq__` below must not free the message under us.
        let (Ok(message), Some(before)) = (messages.get_item(i), item(previous, i)) else {
            return Ok(0);
        };
        let same = message.as_ptr() == before;
        if !same && !equal(py, message.as_ptr(), before)? {
            return Ok(0);
        }
        let is_dict = message.cast::<PyDict>().is_ok();
        let Some(Fields { own: d, extra }) = object_fields(py, &message, &mut models)? else {
            return Ok(0);
        };
        // Read before the lookups, which may run Python code that changes the dict.
        let version = if same && is_dict {
            version(before)
        } else {
            None
        };
        if let (Some(v), Some(mark)) = (version, marks.get(i)) {
            if mark.dict == before as usize && mark.version == v && same_refs(&saved, i, mark) {
                continue;
            }
        }
        let mut mark = Mark {
            dict: before as usize,
            version: version.unwrap_or_default(),
            refs: [0; MARK_KEYS],
        };
        let mut identical = version.is_some() && keys.len() <= MARK_KEYS;
        for (j, (key, list)) in keys.iter().zip(&saved).enumerate() {
            // SAFETY: `d` is a live dict and `key` a live object, under the GIL. The lookup
            // may run Python code (the `__eq__` of a key with the same hash), so the saved
            // reference is read after it; the value is borrowed from the dict and compared
            // before any Python code runs (`equal` takes references first).
            let mut value = unsafe { ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr()) };
            if value.is_null() {
                if let Some(err) = PyErr::take(py) {
                    return Err(err);
                }
                if let Some(extra) = &extra {
                    // SAFETY: as above, a live dict (an extra field not declared by the model)
                    value = unsafe { ffi::PyDict_GetItemWithError(extra.as_ptr(), key.as_ptr()) };
                    if let Some(err) = PyErr::take(py) {
                        return Err(err);
                    }
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
            } else if value != saved_ref {
                identical = false;
                if !equal(py, value, saved_ref)? {
                    return Ok(0);
                }
            }
            if let Some(slot) = mark.refs.get_mut(j) {
                *slot = saved_ref as usize;
            }
        }
        record(marks, i, identical.then_some(mark));
    }
    Ok(k)
}

/// Where a message's fields are read from: a dict itself; a pydantic model's instance
/// `__dict__`, then its `__pydantic_extra__` (undeclared fields an SDK allows); `None` for
/// anything else, or a model with computed fields (not kept in the instance).
struct Fields<'py> {
    own: Bound<'py, PyDict>,
    extra: Option<Bound<'py, PyDict>>,
}

/// The [`Fields`] of `message`, if it has them.
fn object_fields<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
    models: &mut Vec<(Bound<'py, PyType>, bool)>,
) -> PyResult<Option<Fields<'py>>> {
    if let Ok(d) = message.cast::<PyDict>() {
        return Ok(Some(Fields {
            own: d.clone(),
            extra: None,
        }));
    }
    let cls = message.get_type();
    let readable = if let Some((_, readable)) = models.iter().find(|(seen, _)| seen.is(&cls)) {
        *readable
    } else {
        let readable = plain_model(py, &cls)?;
        models.push((cls, readable));
        readable
    };
    if !readable {
        return Ok(None);
    }
    let Some(own) = optional_attr(py, message, intern!(py, "__dict__"))?
        .and_then(|d| d.cast_into::<PyDict>().ok())
    else {
        return Ok(None);
    };
    let extra = optional_attr(py, message, intern!(py, "__pydantic_extra__"))?
        .and_then(|d| d.cast_into::<PyDict>().ok())
        .filter(|d| !d.is_empty());
    Ok(Some(Fields { own, extra }))
}

/// `ctxbudget.formats.common.plain_model`, the one place that says which classes' instances
/// hold their fields (the Python caches save references only for those); registered by that
/// module when it is imported ([`register_plain_model`]).
static PLAIN_MODEL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Registers the predicate that says which message classes are read from their instances
/// (the first one registered stays).
#[pyfunction]
pub fn register_plain_model(py: Python<'_>, predicate: Bound<'_, PyAny>) {
    let _ = PLAIN_MODEL.set(py, predicate.unbind());
}

/// Whether instances of `cls` are read from their `__dict__` and extra fields (asked of the
/// registered predicate, once per class and call; none registered: no class is).
fn plain_model(py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<bool> {
    match PLAIN_MODEL.get(py) {
        Some(ask) => ask.bind(py).call1((cls,))?.is_truthy(),
        None => Ok(false),
    }
}

/// `obj.name`, or `None` when it has no such attribute (other errors propagate).
fn optional_attr<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, pyo3::types::PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match obj.getattr(name) {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Whether the saved references of message `i` are the objects `mark` holds.
fn same_refs(saved: &[Bound<'_, PyList>], i: usize, mark: &Mark) -> bool {
    saved
        .iter()
        .zip(mark.refs)
        .all(|(list, r)| item(list, i) == Some(r as *mut ffi::PyObject))
}
