//! Weighing plain Anthropic Messages dicts in one call ([`py_weigh`](crate::py_weigh)).
//!
//! A plain message is a dict with role `user` or `assistant` and content a string or a list of
//! `text`, `thinking`, `redacted_thinking`, `tool_use` and `tool_result` blocks (a tool result's
//! content: a string or `text` blocks). Images, documents, other block types and anything
//! malformed are left to the Python path. A tool call's input is counted as the Python path
//! counts it: the text of `json.dumps(input, ensure_ascii=False)`, made by that very function.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::py_weigh::{
    exact_str, field, json_dumps, plain_json, push_text, walk, weigh, Fields, Sums,
    WeighedMessages, Weights,
};

/// What a message's blocks count, as the walk reads them.
struct Counts<'py> {
    texts: usize,
    calls: usize,
    /// Tool-call strings (inputs and names), pushed after the texts.
    args: Vec<Bound<'py, PyString>>,
}

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
    if !plain_json(input.as_any()) {
        return Err(());
    }
    counts.calls += 1;
    if !input.is_empty() {
        push_text(json_dumps(input.as_any())?.as_any(), &mut counts.args)?;
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
/// content is read once: the strings counted are those of [`Fields::refs`], `(content,)`.
fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    let content = m
        .get_item(intern!(py, "content"))
        .map_err(|_| ())?
        .unwrap_or_else(|| py.None().into_bound(py));
    let role = exact_str(m, intern!(py, "role"))?;
    if !matches!(role.to_str().map_err(|_| ())?, "user" | "assistant") {
        return Err(());
    }
    let mut counts = Counts {
        texts: 0,
        calls: 0,
        args: Vec::new(),
    };
    if content.is_exact_instance_of::<PyString>() {
        counts.texts += push_text(&content, strings)?;
    } else {
        for raw in content.cast_exact::<PyList>().map_err(|_| ())?.iter() {
            block(&raw, strings, &mut counts)?;
        }
    }
    let args = counts.args.len();
    strings.extend(counts.args);
    Ok(Fields {
        refs: PyTuple::new(py, [content]).map_err(|_| ())?,
        system: false,
        texts: counts.texts,
        args,
        calls: counts.calls,
        named: false,
    })
}

/// For each of `messages`, a plain Anthropic Messages dict's counts weighed by a framing
/// profile's `weights`, with the field they were read from: `((content,), (False, body,
/// framing, 0, total, True))`; `None` for a message the Python path must count. Second, the
/// sums when every message is plain. See [`weigh`] (the same contract as `chat_weighed`).
///
/// # Errors
///
/// An unknown encoding, or an error building the result.
#[pyfunction]
#[pyo3(signature = (messages, /, encoding, weights))]
pub fn anthropic_weighed<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    encoding: &str,
    weights: Weights,
) -> PyResult<(WeighedMessages<'py>, Option<Sums>)> {
    let (fields, strings) = walk(messages, fields_of);
    weigh(py, fields, strings, encoding, weights)
}
