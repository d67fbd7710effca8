//! Whether two Python values would be counted alike: equal, and of the same types throughout.
//!
//! The caches that keep counts across turns take a value that is not the very object counted
//! before as unchanged when it equals it. Python's `==` says `1 == 1.0 == True` and
//! `0.0 == -0.0`, but their JSON text, which is what gets counted, differs (`1`, `1.0`, `true`,
//! `-0.0`). Here dicts, lists and tuples (and their subclasses: `OrderedDict`, a namedtuple)
//! are compared item by item (dict keys in order, as JSON writes them), every value must be of
//! the very same type as its counterpart, and floats (`numpy.float64` too) must be the same
//! bits; anything else is compared with `==`. Each level of nesting counts toward Python's
//! recursion limit, as `==`'s own do (a caller's `__eq__` may call this again).

use pyo3::ffi;
use pyo3::prelude::*;

/// Nesting past which two values are taken as different (and so counted again, which is
/// always right) rather than compared further: the recursion stays shallow (a thread with a
/// small stack compares what Python's `==` compares there).
const MAX_DEPTH: u32 = 100;

/// Whether `a` and `b` would be counted alike: the same object, or equal with the same types
/// at every level (see the module's doc).
///
/// Errors raised by a comparison (a caller's `__eq__`) propagate.
#[pyfunction]
#[pyo3(signature = (a, b, /))]
pub fn same_value(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    same(a, b, MAX_DEPTH)
}

/// [`same_value`] within `depth` more levels of nesting.
pub(crate) fn same(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, depth: u32) -> PyResult<bool> {
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    if pa == pb {
        return Ok(true);
    }
    // SAFETY: `a` and `b` are live objects, under the GIL.
    let ty = unsafe { ffi::Py_TYPE(pa) };
    if ty != unsafe { ffi::Py_TYPE(pb) } || depth == 0 {
        return Ok(false);
    }
    let py = a.py();
    // SAFETY (each branch): `a` and `b` are of one type, which the branch reads them as.
    unsafe {
        if ffi::PyFloat_Check(pa) != 0 {
            let (x, y) = (ffi::PyFloat_AS_DOUBLE(pa), ffi::PyFloat_AS_DOUBLE(pb));
            return Ok(x.to_bits() == y.to_bits());
        }
        let container =
            ffi::PyDict_Check(pa) != 0 || ffi::PyList_Check(pa) != 0 || ffi::PyTuple_Check(pa) != 0;
        if !container {
            return match ffi::PyObject_RichCompareBool(pa, pb, ffi::Py_EQ) {
                -1 => Err(PyErr::fetch(py)),
                equal => Ok(equal == 1),
            };
        }
        let _level = Level::enter(py)?;
        if ffi::PyDict_Check(pa) != 0 {
            return same_dicts(py, pa, pb, depth - 1);
        }
        if ffi::PyList_Check(pa) != 0 {
            return same_items(py, depth - 1, |i| {
                // Read by index as it goes: an `__eq__` may shorten either list meanwhile.
                let (la, lb) = (ffi::PyList_GET_SIZE(pa), ffi::PyList_GET_SIZE(pb));
                if la != lb {
                    return Err(());
                }
                Ok((i < la).then(|| (ffi::PyList_GET_ITEM(pa, i), ffi::PyList_GET_ITEM(pb, i))))
            });
        }
        if ffi::PyTuple_GET_SIZE(pa) != ffi::PyTuple_GET_SIZE(pb) {
            return Ok(false);
        }
        let n = ffi::PyTuple_GET_SIZE(pa);
        same_items(py, depth - 1, |i| {
            Ok((i < n).then(|| (ffi::PyTuple_GET_ITEM(pa, i), ffi::PyTuple_GET_ITEM(pb, i))))
        })
    }
}

/// One level of nesting entered, counted toward Python's recursion limit while it lives.
struct Level;

impl Level {
    /// `RecursionError` past the limit.
    fn enter(py: Python<'_>) -> PyResult<Level> {
        // SAFETY: under the GIL; the message is a C string literal.
        if unsafe { ffi::Py_EnterRecursiveCall(c" while comparing values".as_ptr()) } != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(Level)
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        // SAFETY: under the GIL, leaving the level `enter` counted.
        unsafe { ffi::Py_LeaveRecursiveCall() };
    }
}

/// Whether the dicts `a` and `b` hold as many items, in the same order, each key and value
/// [`same`] as its counterpart.
///
/// # Safety
/// `a` and `b` are live dicts, under the GIL.
unsafe fn same_dicts(
    py: Python<'_>,
    a: *mut ffi::PyObject,
    b: *mut ffi::PyObject,
    depth: u32,
) -> PyResult<bool> {
    // SAFETY: as the caller promises.
    if unsafe { ffi::PyDict_Size(a) != ffi::PyDict_Size(b) } {
        return Ok(false);
    }
    let (mut at_a, mut at_b) = (0, 0);
    loop {
        let [mut ka, mut va, mut kb, mut vb] = [std::ptr::null_mut(); 4];
        // SAFETY: live dicts; a dict changed by an `__eq__` since is still read in bounds
        // (the positions are checked against its current table).
        let (more_a, more_b) = unsafe {
            (
                ffi::PyDict_Next(a, &raw mut at_a, &raw mut ka, &raw mut va),
                ffi::PyDict_Next(b, &raw mut at_b, &raw mut kb, &raw mut vb),
            )
        };
        if more_a == 0 || more_b == 0 {
            return Ok(more_a == more_b);
        }
        // Owned before any comparison runs a caller's `__eq__`, which may drop them from
        // their dicts. SAFETY: borrowed from live dicts, no Python code run since.
        let [ka, va, kb, vb] = [ka, va, kb, vb].map(|p| unsafe { Bound::from_borrowed_ptr(py, p) });
        if !same(&ka, &kb, depth)? || !same(&va, &vb, depth)? {
            return Ok(false);
        }
    }
}

/// Whether two sequences hold the same items: `pair(i)` gives the `i`-th of each (borrowed,
/// under the GIL, read just then), `Ok(None)` past their end, `Err(())` when their lengths
/// differ (now).
fn same_items(
    py: Python<'_>,
    depth: u32,
    pair: impl Fn(ffi::Py_ssize_t) -> Result<Option<(*mut ffi::PyObject, *mut ffi::PyObject)>, ()>,
) -> PyResult<bool> {
    let mut i = 0;
    loop {
        let (x, y) = match pair(i) {
            Err(()) => return Ok(false),
            Ok(None) => return Ok(true),
            Ok(Some(items)) => items,
        };
        // Owned before a comparison runs Python code. SAFETY: as `pair` promises.
        let (x, y) = unsafe {
            (
                Bound::from_borrowed_ptr(py, x),
                Bound::from_borrowed_ptr(py, y),
            )
        };
        if !same(&x, &y, depth)? {
            return Ok(false);
        }
        i += 1;
    }
}

/// [`same`] of two borrowed object pointers read under the GIL from live containers, with no
/// Python code run since.
pub(crate) fn same_ptr(
    py: Python<'_>,
    a: *mut ffi::PyObject,
    b: *mut ffi::PyObject,
) -> PyResult<bool> {
    // SAFETY: as the caller promises; the owned references taken here keep both alive while
    // a caller's `__eq__` runs, which may change those containers.
    let (a, b) = unsafe {
        (
            Bound::from_borrowed_ptr(py, a),
            Bound::from_borrowed_ptr(py, b),
        )
    };
    same(&a, &b, MAX_DEPTH)
}
