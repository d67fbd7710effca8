//! Reading plain Chat Completions message dicts for [`weigh_messages`](crate::py_weigh::weigh_messages).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::py_read::{as_exact_str, exact_str, field, get_all, push_text};
use crate::py_weigh::Fields;

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
/// tool_calls, reasoning_content, role, name, function_call, tool_call_id, refusal)`, every
/// field the count depends on.
pub(crate) fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    let read = get_all(
        m,
        [
            intern!(py, "content"),
            intern!(py, "tool_calls"),
            intern!(py, "reasoning_content"),
            intern!(py, "role"),
            intern!(py, "name"),
            intern!(py, "function_call"),
            intern!(py, "tool_call_id"),
            intern!(py, "refusal"),
        ],
    )?;
    let [content, calls, reasoning, role, name, legacy, call_id, refusal] = &read;
    let role = as_exact_str(role)?;
    let role = role.to_str().map_err(|_| ())?;
    if !ROLES.contains(&role) || !legacy.is_none() {
        return Err(());
    }
    let mut texts = push_text(content, strings)?;
    // A participant name is sent as text (the OpenAI cookbook counts it, plus `per_name`).
    texts += push_text(name, strings)?;
    let (mut args, mut calls_made) = (0, 0);
    if role == "assistant" {
        texts += push_text(reasoning, strings)?;
        // An assistant's refusal (`ChatCompletionMessage.refusal`, sent back as it came) is
        // text the model reads.
        texts += push_text(refusal, strings)?;
        let before = strings.len();
        calls_made = push_calls(calls, strings)?;
        args = strings.len() - before;
    } else if role == "tool" {
        as_exact_str(call_id)?;
    }
    let system = role == "system" || role == "developer";
    Ok(Fields {
        system,
        // A name of `None` (as a dump of an SDK object writes it) is no name.
        named: !name.is_none(),
        texts,
        args,
        calls: calls_made,
        refs: PyTuple::new(py, read).map_err(|_| ())?,
    })
}
