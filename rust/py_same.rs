//! Whether two Python values would be counted alike: equal, and of the same types throughout.
//!
//! The caches that keep counts across turns take a value that is not the very object counted
//! before as unchanged when it equals it. Python's `==` says `1 == 1.0 == True` and
//! `0.0 == -0.0`, but their JSON text, which is what gets counted, differs (`1`, `1.0`, `true`,
//! `-0.0`). Here dicts, lists and tuples are compared item by item (dict keys in order, as
//! JSON writes them), every value must be of the very same type as its counterpart, and floats
//! must be the same bits; anything else is compared with `==`.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyTuple};

/// Nesting past which two values are taken as different (and so counted again, which is
/// always right) rather than compared further: the recursion stays shallow.
const MAX_DEPTH: u32 = 200;

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
    if a.is(b) {
        return Ok(true);
    }
    if !a.get_type().is(b.get_type()) || depth == 0 {
        return Ok(false);
    }
    if let (Ok(a), Ok(b)) = (a.cast_exact::<PyDict>(), b.cast_exact::<PyDict>()) {
        // The items taken out first: an `__eq__` below may change either dict.
        let (a, b) = (a.items(), b.items());
        return same_items(
            a.len(),
            b.len(),
            |i| Ok((a.get_item(i)?, b.get_item(i)?)),
            depth,
        );
    }
    if let (Ok(a), Ok(b)) = (a.cast_exact::<PyList>(), b.cast_exact::<PyList>()) {
        // Read by index as it goes: an `__eq__` below may shorten either list.
        return same_items(
            a.len(),
            b.len(),
            |i| Ok((a.get_item(i)?, b.get_item(i)?)),
            depth,
        );
    }
    if let (Ok(a), Ok(b)) = (a.cast_exact::<PyTuple>(), b.cast_exact::<PyTuple>()) {
        return same_items(
            a.len(),
            b.len(),
            |i| Ok((a.get_item(i)?, b.get_item(i)?)),
            depth,
        );
    }
    if let (Ok(a), Ok(b)) = (a.cast_exact::<PyFloat>(), b.cast_exact::<PyFloat>()) {
        return Ok(a.value().to_bits() == b.value().to_bits());
    }
    a.eq(b)
}

/// Whether two containers of `len_a` and `len_b` items hold as many, each [`same`] as its
/// counterpart (`pair(i)` reads the `i`-th of each; an error there, an item gone, means not).
fn same_items<'py>(
    len_a: usize,
    len_b: usize,
    pair: impl Fn(usize) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    depth: u32,
) -> PyResult<bool> {
    if len_a != len_b {
        return Ok(false);
    }
    for i in 0..len_a {
        let Ok((x, y)) = pair(i) else {
            return Ok(false);
        };
        if !same(&x, &y, depth - 1)? {
            return Ok(false);
        }
    }
    Ok(true)
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
