//! Typed lookups for the walks over message dicts: each takes a field only in the exact form
//! the Python readers take it the same way (an exact `str`, `dict`, `list`; JSON values in
//! [`py_json`](crate::py_json)), and answers `Err(())` for anything else, which leaves the
//! message to the Python path.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::py_weigh::Fields;

/// `d[key]` when it is exactly a `str`; `Err(())` when present and anything else (or absent).
pub(crate) fn exact_str<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> Result<Bound<'py, PyString>, ()> {
    match d.get_item(key) {
        Ok(Some(v)) if v.is_exact_instance_of::<PyString>() => {
            v.cast_into::<PyString>().map_err(|_| ())
        }
        _ => Err(()),
    }
}

/// `v` when it is exactly a `str` (a field read with [`get_all`]: what [`exact_str`] takes).
pub(crate) fn as_exact_str<'py>(v: &Bound<'py, PyAny>) -> Result<Bound<'py, PyString>, ()> {
    if v.is_exact_instance_of::<PyString>() {
        v.cast::<PyString>().cloned().map_err(|_| ())
    } else {
        Err(())
    }
}

/// `d[key]`, `None` when absent or `None`; `Err(())` when the lookup raised.
pub(crate) fn field<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> Result<Option<Bound<'py, PyAny>>, ()> {
    match d.get_item(key) {
        Ok(Some(v)) if !v.is_none() => Ok(Some(v)),
        Ok(_) => Ok(None),
        Err(_) => Err(()),
    }
}

/// A non-empty exact `str` is pushed to `out` (1); `None` or `""` is nothing (0); anything
/// else is not a plain message.
pub(crate) fn push_text<'py>(
    v: &Bound<'py, PyAny>,
    out: &mut Vec<Bound<'py, PyString>>,
) -> Result<usize, ()> {
    if v.is_none() {
        return Ok(0);
    }
    let s = v.cast_exact::<PyString>().map_err(|_| ())?;
    if s.len().map_err(|_| ())? == 0 {
        return Ok(0);
    }
    out.push(s.clone());
    Ok(1)
}

/// `d[key]`, Python's `None` when absent; `Err(())` when the lookup raised.
pub(crate) fn get_or_none<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> Result<Bound<'py, PyAny>, ()> {
    match d.get_item(key) {
        Ok(value) => Ok(value.unwrap_or_else(|| d.py().None().into_bound(d.py()))),
        Err(_) => Err(()),
    }
}

/// `d[key]` for each of `keys`, Python's `None` for those absent; `Err(())` when a lookup
/// raised.
pub(crate) fn get_all<'py, const N: usize>(
    d: &Bound<'py, PyDict>,
    keys: [&Bound<'py, PyString>; N],
) -> Result<[Bound<'py, PyAny>; N], ()> {
    let mut values = Vec::with_capacity(N);
    for key in keys {
        values.push(get_or_none(d, key)?);
    }
    values.try_into().map_err(|_| ())
}

/// What a message's parts count, as a walk reads them: texts go to the walk's strings as they
/// come, tool-call strings are kept here and go after them ([`Counts::into_fields`]).
#[derive(Default)]
pub(crate) struct Counts<'py> {
    pub texts: usize,
    pub calls: usize,
    /// Tool-call strings (arguments and names).
    pub args: Vec<Bound<'py, PyString>>,
}

impl<'py> Counts<'py> {
    /// The message's [`Fields`], its tool-call strings pushed to `strings` after its texts
    /// (a message of a role that is neither system nor named).
    pub fn into_fields(
        self,
        refs: Bound<'py, PyTuple>,
        strings: &mut Vec<Bound<'py, PyString>>,
    ) -> Fields<'py> {
        let args = self.args.len();
        strings.extend(self.args);
        Fields {
            refs,
            system: false,
            texts: self.texts,
            args,
            calls: self.calls,
            named: false,
        }
    }
}
