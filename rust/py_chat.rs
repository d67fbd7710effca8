//! Weighing plain Chat Completions message dicts in one call ([`py_weigh`](crate::py_weigh)).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::py_weigh::{
    exact_str, field, push_text, walk, weigh, Fields, Sums, WeighedMessages, Weights,
};

/// Roles of Chat Completions messages (`function`: the result of a legacy `function_call`).
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// The strings of `tool_calls` (each call's arguments and name) pushed to `out`, and the
/// number of calls; or not a plain message.
fn push_calls<'py>(
    calls: &Bound<'py, PyAny>,
    out: &mut Vec<Bound<'py, PyString>>,
) -> Result<usize, ()> {
    let py = calls.py();
    if calls.is_none() {
        return Ok(0);
    }
    let calls = calls.cast_exact::<PyList>().map_err(|_| ())?;
    for call in calls.iter() {
        let call = call.cast_into_exact::<PyDict>().map_err(|_| ())?;
        exact_str(&call, intern!(py, "id"))?;
        let function = field(&call, intern!(py, "function"))?.ok_or(())?;
        let function = function.cast_into_exact::<PyDict>().map_err(|_| ())?;
        out.push(exact_str(&function, intern!(py, "arguments"))?);
        out.push(exact_str(&function, intern!(py, "name"))?);
    }
    Ok(calls.len())
}

/// What the Python fast path would count in message `m`, its strings pushed to `strings`; or
/// `Err(())` when it is not a plain Chat Completions dict (the Python path then takes it).
/// Each field is read once: the strings counted are those of [`Fields::refs`], `(content,
/// tool_calls, reasoning_content)`.
fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    let keys = [
        intern!(py, "content"),
        intern!(py, "tool_calls"),
        intern!(py, "reasoning_content"),
    ];
    let get = |key: &Bound<'py, PyString>| match m.get_item(key) {
        Ok(value) => Ok(value.unwrap_or_else(|| py.None().into_bound(py))),
        Err(_) => Err(()),
    };
    let read = [get(keys[0])?, get(keys[1])?, get(keys[2])?];
    let role = exact_str(m, intern!(py, "role"))?;
    let role = role.to_str().map_err(|_| ())?;
    if !ROLES.contains(&role) || field(m, intern!(py, "function_call"))?.is_some() {
        return Err(());
    }
    let [content, calls, reasoning] = &read;
    let mut texts = push_text(content, strings)?;
    let (mut args, mut calls_made) = (0, 0);
    if role == "assistant" {
        texts += push_text(reasoning, strings)?;
        let before = strings.len();
        calls_made = push_calls(calls, strings)?;
        args = strings.len() - before;
    } else if role == "tool" {
        exact_str(m, intern!(py, "tool_call_id"))?;
    }
    Ok(Fields {
        system: role == "system" || role == "developer",
        named: m.contains(intern!(py, "name")).map_err(|_| ())?,
        texts,
        args,
        calls: calls_made,
        refs: PyTuple::new(py, read).map_err(|_| ())?,
    })
}

/// For each of `messages`, a plain Chat Completions dict's counts weighed by a framing
/// profile's `weights`, with the fields they were read from: `(fields, (system, body, framing,
/// 0, total, True))`, where `fields` is `(content, tool_calls, reasoning_content)` as the walk
/// read them (the strings counted are those objects' own) and text and arguments are counted
/// in tokens of `encoding`, each string on its own. `None` for a message the Python path must
/// count; all `None` when some string has no UTF-8 form (a lone surrogate), so that the Python
/// path raises its error in message order.
///
/// Second, when every message is plain: the sums `ctxbudget.request` keeps of them, added in
/// message order — `(system bodies, other bodies, framing)`; else `None`.
///
/// # Errors
///
/// An unknown encoding, or an error building the result.
#[pyfunction]
#[pyo3(signature = (messages, /, encoding, weights))]
pub fn chat_weighed<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    encoding: &str,
    weights: Weights,
) -> PyResult<(WeighedMessages<'py>, Option<Sums>)> {
    let (fields, strings) = walk(messages, fields_of);
    weigh(py, fields, strings, encoding, weights)
}
