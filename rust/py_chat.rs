//! Counting the text of plain Chat Completions message dicts in one call.
//!
//! A cold request estimate walks every message of the history: in Python that walk (field
//! lookups, type checks, one count per string) cost about as much as estimating the text
//! itself. Here the walk reads the dicts once, the strings are estimated together (in
//! parallel across cores when they are many, [`batch::estimate_batch`]), and each message
//! gets back the tuple the Python fast path would have built. Anything that is not a plain,
//! well-formed message (content parts, a legacy `function_call`, a field of the wrong type)
//! gets `None`: Python's own path counts it, or raises the error that names the field.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::batch;
use crate::py::{maybe_detach, parse_encoding, TextSource};
use crate::units::Text;

/// Roles of Chat Completions messages (`function`: the result of a legacy `function_call`).
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// The strings of one message to estimate, by what they count as, and the fields it was read
/// from.
#[derive(Default)]
struct Fields<'py> {
    /// `message.get(key)` of each of the caller's keys, as the walk read the message.
    read: Vec<Bound<'py, PyAny>>,
    system: bool,
    text: Vec<Bound<'py, PyString>>,
    args: Vec<Bound<'py, PyString>>,
    calls: usize,
    named: bool,
}

/// `d[key]` when it is exactly a `str`; `Err(())` when present and anything else (or absent).
fn exact_str<'py>(
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

/// `d[key]`, `None` when absent or `None`; `Err(())` when the lookup raised.
fn field<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> Result<Option<Bound<'py, PyAny>>, ()> {
    match d.get_item(key) {
        Ok(Some(v)) if !v.is_none() => Ok(Some(v)),
        Ok(_) => Ok(None),
        Err(_) => Err(()),
    }
}

/// A non-empty exact `str` at `d[key]` is pushed to `out`; `None`, absent or `""` is nothing;
/// anything else is not a plain message.
fn push_text<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
    out: &mut Vec<Bound<'py, PyString>>,
) -> Result<(), ()> {
    let Some(v) = field(d, key)? else {
        return Ok(());
    };
    let s = v.cast_into_exact::<PyString>().map_err(|_| ())?;
    if s.len().map_err(|_| ())? > 0 {
        out.push(s);
    }
    Ok(())
}

/// The strings of `tool_calls` (each call's arguments and name), or not a plain message.
fn push_calls<'py>(calls: &Bound<'py, PyAny>, fields: &mut Fields<'py>) -> Result<(), ()> {
    let py = calls.py();
    let calls = calls.cast_exact::<PyList>().map_err(|_| ())?;
    for call in calls.iter() {
        let call = call.cast_into_exact::<PyDict>().map_err(|_| ())?;
        exact_str(&call, intern!(py, "id"))?;
        let function = field(&call, intern!(py, "function"))?.ok_or(())?;
        let function = function.cast_into_exact::<PyDict>().map_err(|_| ())?;
        fields
            .args
            .push(exact_str(&function, intern!(py, "arguments"))?);
        fields.args.push(exact_str(&function, intern!(py, "name"))?);
    }
    fields.calls = calls.len();
    Ok(())
}

/// What the Python fast path would count in message `m`, with `m.get(key)` of each of `keys`,
/// or `Err(())` when it is not a plain Chat Completions dict (the Python path then takes it).
fn fields_of<'py>(m: &Bound<'py, PyAny>, keys: &Bound<'py, PyTuple>) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    // The fields as the walk reads them (it runs no Python code in between, unless the dict
    // holds keys of a type with an `__eq__` of its own).
    let read = keys
        .iter()
        .map(|key| match m.get_item(key) {
            Ok(value) => Ok(value.unwrap_or_else(|| py.None().into_bound(py))),
            Err(_) => Err(()),
        })
        .collect::<Result<Vec<_>, ()>>()?;
    let role = exact_str(m, intern!(py, "role"))?;
    let role = role.to_str().map_err(|_| ())?;
    if !ROLES.contains(&role) || field(m, intern!(py, "function_call"))?.is_some() {
        return Err(());
    }
    let mut fields = Fields {
        read,
        system: role == "system" || role == "developer",
        named: m.contains(intern!(py, "name")).map_err(|_| ())?,
        ..Fields::default()
    };
    push_text(m, intern!(py, "content"), &mut fields.text)?;
    if role == "assistant" {
        push_text(m, intern!(py, "reasoning_content"), &mut fields.text)?;
        if let Some(calls) = field(m, intern!(py, "tool_calls"))? {
            push_calls(&calls, &mut fields)?;
        }
    } else if role == "tool" {
        exact_str(m, intern!(py, "tool_call_id"))?;
    }
    Ok(fields)
}

/// For each of `messages`, the counts of a plain Chat Completions dict, with the fields they
/// were read from: `(fields, (system, text, args, calls, named, 0, True))`, where `fields` is
/// `tuple(message.get(key) for key in keys)` as the walk read the message, and the second tuple
/// is what `ctxbudget.request` sums (text and args in tokens of `encoding`, each string
/// estimated on its own). `None` for a message the Python path must count. All `None` when
/// some string has no UTF-8 form (a lone surrogate), so that the Python path raises its error
/// in message order.
///
/// # Errors
///
/// An unknown encoding.
#[pyfunction]
#[pyo3(signature = (messages, /, encoding = "o200k", keys = None))]
pub fn chat_counts<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    encoding: &str,
    keys: Option<&Bound<'py, PyTuple>>,
) -> PyResult<Vec<Option<Bound<'py, PyTuple>>>> {
    let encoding = parse_encoding(encoding)?;
    let no_keys = PyTuple::empty(py);
    let keys = keys.unwrap_or(&no_keys);
    let fields: Vec<Option<Fields<'py>>> =
        messages.iter().map(|m| fields_of(&m, keys).ok()).collect();
    let sources: Vec<TextSource<'py>> = fields
        .iter()
        .flatten()
        .flat_map(|f| f.text.iter().chain(&f.args))
        .map(|s| TextSource::Str(s.clone()))
        .collect();
    let views = sources
        .iter()
        .map(TextSource::text)
        .collect::<PyResult<Vec<Text<'_>>>>()?;
    let total: usize = views.iter().map(Text::size).sum();
    let Ok(counts) = maybe_detach(py, total, || batch::estimate_batch(&views, encoding)) else {
        return Ok(fields.iter().map(|_| None).collect());
    };
    let mut next = counts.into_iter();
    let mut sum = |n: usize| -> u64 { next.by_ref().take(n).sum() };
    fields
        .into_iter()
        .map(|f| {
            f.map(|f| {
                let text = sum(f.text.len());
                let args = sum(f.args.len());
                let counted = PyTuple::new(
                    py,
                    [
                        f.system.into_pyobject(py)?.to_owned().into_any(),
                        text.into_pyobject(py)?.into_any(),
                        args.into_pyobject(py)?.into_any(),
                        f.calls.into_pyobject(py)?.into_any(),
                        f.named.into_pyobject(py)?.to_owned().into_any(),
                        0u64.into_pyobject(py)?.into_any(),
                        true.into_pyobject(py)?.to_owned().into_any(),
                    ],
                )?;
                PyTuple::new(
                    py,
                    [PyTuple::new(py, f.read)?.into_any(), counted.into_any()],
                )
            })
            .transpose()
        })
        .collect()
}
