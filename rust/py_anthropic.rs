//! Reading plain Anthropic Messages dicts for [`weigh_messages`](crate::py_weigh::weigh_messages).
//!
//! A plain message is a dict with role `user` or `assistant` and content a string or a list of
//! `text`, `thinking`, `redacted_thinking`, `tool_use` and `tool_result` blocks (a tool result's
//! content: a string or `text` blocks). Images, documents, other block types and anything
//! malformed are left to the Python path. A tool call's input is counted as the Python path
//! counts it: the text of `json.dumps(input, ensure_ascii=False)` ([`json_text`]).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::py_json::json_text;
use crate::py_read::{as_exact_str, exact_str, field, get_all, push_text, Counts};
use crate::py_weigh::Fields;

/// A `tool_use` block: one call, its input's JSON text and its name as arguments.
fn tool_use<'py>(block: &Bound<'py, PyDict>, counts: &mut Counts<'py>) -> Result<(), ()> {
    let py = block.py();
    exact_str(block, intern!(py, "id"))?;
    let name = exact_str(block, intern!(py, "name"))?;
    let input = block
        .get_item(intern!(py, "input"))
        .map_err(|_| ())?
        .ok_or(())?;
    let input = input.cast_into_exact::<PyDict>().map_err(|_| ())?;
    counts.calls += 1;
    if !input.is_empty() {
        push_text(json_text(input.as_any())?.as_any(), &mut counts.args)?;
    }
    push_text(name.as_any(), &mut counts.args)?;
    Ok(())
}

/// A `tool_result` block: its content (a string or `text` blocks) counts as text.
fn tool_result<'py>(
    block: &Bound<'py, PyDict>,
    strings: &mut Vec<Bound<'py, PyString>>,
    counts: &mut Counts<'py>,
) -> Result<(), ()> {
    let py = block.py();
    exact_str(block, intern!(py, "tool_use_id"))?;
    if let Some(flag) = field(block, intern!(py, "is_error"))? {
        flag.cast_exact::<PyBool>().map_err(|_| ())?;
    }
    let Some(content) = field(block, intern!(py, "content"))? else {
        return Ok(());
    };
    if content.is_exact_instance_of::<PyString>() {
        counts.texts += push_text(&content, strings)?;
        return Ok(());
    }
    for inner in content.cast_exact::<PyList>().map_err(|_| ())?.iter() {
        let inner = inner.cast_into_exact::<PyDict>().map_err(|_| ())?;
        if exact_str(&inner, intern!(py, "type"))?
            .to_str()
            .map_err(|_| ())?
            != "text"
        {
            return Err(());
        }
        counts.texts += push_text(exact_str(&inner, intern!(py, "text"))?.as_any(), strings)?;
    }
    Ok(())
}

/// One content block, or not a plain one.
fn block<'py>(
    raw: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
    counts: &mut Counts<'py>,
) -> Result<(), ()> {
    let py = raw.py();
    let block = raw.cast_exact::<PyDict>().map_err(|_| ())?;
    let kind = exact_str(block, intern!(py, "type"))?;
    match kind.to_str().map_err(|_| ())? {
        "text" => {
            let text = exact_str(block, intern!(py, "text"))?;
            counts.texts += push_text(text.as_any(), strings)?;
        }
        "thinking" => {
            let text = exact_str(block, intern!(py, "thinking"))?;
            counts.texts += push_text(text.as_any(), strings)?;
        }
        "redacted_thinking" => {
            exact_str(block, intern!(py, "data"))?;
        }
        "tool_use" => tool_use(block, counts)?,
        "tool_result" => tool_result(block, strings, counts)?,
        _ => return Err(()),
    }
    Ok(())
}

/// What the Python path would count in message `m`, its strings pushed to `strings` (texts,
/// then tool-call arguments); or `Err(())` when it is not a plain Anthropic message. The
/// content is read once: the strings counted are those of [`Fields::refs`], `(content, role)`.
pub(crate) fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    let [content, role] = get_all(m, [intern!(py, "content"), intern!(py, "role")])?;
    let role = as_exact_str(&role)?;
    if !matches!(role.to_str().map_err(|_| ())?, "user" | "assistant") {
        return Err(());
    }
    let mut counts = Counts::default();
    if content.is_exact_instance_of::<PyString>() {
        counts.texts += push_text(&content, strings)?;
    } else {
        for raw in content.cast_exact::<PyList>().map_err(|_| ())?.iter() {
            block(&raw, strings, &mut counts)?;
        }
    }
    let refs = PyTuple::new(py, [content, role.into_any()]).map_err(|_| ())?;
    Ok(counts.into_fields(refs, strings))
}
