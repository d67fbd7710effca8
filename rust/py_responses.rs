//! Reading plain `OpenAI` Responses input items for [`weigh_messages`](crate::py_weigh::weigh_messages).
//!
//! Plain items: messages (role `system`, `developer`, `user` or `assistant`; content a string or
//! text, output-text and refusal parts), `function_call`, `function_call_output` (output a
//! string or text parts) and `reasoning` without `content` (its summary texts, counted joined
//! as the Python path joins them). Images, files, audio, reasoning texts, other item types and
//! anything malformed are left to the Python path.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::py_read::{as_exact_str, exact_str, field, get_all, push_text};
use crate::py_weigh::Fields;

/// Most `{` and `[` in a call's arguments the walk takes: beyond, the Python reader checks
/// how deep the JSON nests (`_parse_args` in `ctxbudget.formats.common`), and may refuse it.
const MAX_BRACKETS: usize = 256;

/// Content (a string or a list of text parts) pushed to `strings`; the number of strings.
fn content_texts<'py>(
    content: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<usize, ()> {
    let py = content.py();
    if content.is_exact_instance_of::<PyString>() {
        return push_text(content, strings);
    }
    let mut texts = 0;
    for part in content.cast_exact::<PyList>().map_err(|_| ())?.iter() {
        let part = part.cast_into_exact::<PyDict>().map_err(|_| ())?;
        let key = match field(&part, intern!(py, "type"))? {
            Some(kind) if kind.is_exact_instance_of::<PyString>() => {
                match kind
                    .cast_into::<PyString>()
                    .map_err(|_| ())?
                    .to_str()
                    .map_err(|_| ())?
                {
                    "input_text" | "output_text" | "text" => intern!(py, "text"),
                    "refusal" => intern!(py, "refusal"),
                    _ => return Err(()),
                }
            }
            _ => return Err(()),
        };
        texts += push_text(exact_str(&part, key)?.as_any(), strings)?;
    }
    Ok(texts)
}

/// A `reasoning` item's summary texts, joined by blank lines as the Python reader joins them
/// (one string, or none when there is no text).
fn summary_text(summary: Option<Bound<'_, PyAny>>) -> Result<Option<Bound<'_, PyString>>, ()> {
    let Some(summary) = summary else {
        return Ok(None);
    };
    let py = summary.py();
    let mut joined = String::new();
    for (i, s) in summary
        .cast_exact::<PyList>()
        .map_err(|_| ())?
        .iter()
        .enumerate()
    {
        let s = s.cast_into_exact::<PyDict>().map_err(|_| ())?;
        let text = exact_str(&s, intern!(py, "text"))?;
        if i > 0 {
            joined.push_str("\n\n");
        }
        joined.push_str(text.to_str().map_err(|_| ())?);
    }
    Ok((!joined.is_empty()).then(|| PyString::new(py, &joined)))
}

/// What the Python path would count in item `m`, its strings pushed to `strings` (texts, then
/// call arguments); or `Err(())` when it is not a plain item. The strings counted are those of
/// [`Fields::refs`], `(content, arguments, output, summary, type, role, name, call_id, input)`,
/// or made from them: every field the count depends on.
pub(crate) fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    let keys = [
        intern!(py, "content"),
        intern!(py, "arguments"),
        intern!(py, "output"),
        intern!(py, "summary"),
        intern!(py, "type"),
        intern!(py, "role"),
        intern!(py, "name"),
        intern!(py, "call_id"),
        intern!(py, "input"),
    ];
    let refs = get_all(m, keys)?;
    let [content, arguments, output, summary, kind, role, name, call_id, _input] = &refs;
    let kind_str = if kind.is_none() {
        None
    } else {
        Some(as_exact_str(kind)?)
    };
    let kind = match &kind_str {
        None => "message",
        Some(kind) => kind.to_str().map_err(|_| ())?,
    };
    let (mut system, mut texts, mut args, mut calls) = (false, 0, 0, 0);
    match kind {
        "message" => {
            let role = as_exact_str(role)?;
            let role = role.to_str().map_err(|_| ())?;
            if !matches!(role, "system" | "developer" | "user" | "assistant") {
                return Err(());
            }
            system = matches!(role, "system" | "developer");
            texts = content_texts(content, strings)?;
        }
        "function_call" => {
            let arguments = arguments.cast_exact::<PyString>().map_err(|_| ())?;
            as_exact_str(call_id)?;
            let name = as_exact_str(name)?;
            let raw = arguments.to_str().map_err(|_| ())?;
            if raw.bytes().filter(|&b| b == b'{' || b == b'[').count() > MAX_BRACKETS {
                return Err(());
            }
            calls = 1;
            args = push_text(arguments.as_any(), strings)? + push_text(name.as_any(), strings)?;
        }
        "function_call_output" => {
            as_exact_str(call_id)?;
            texts = content_texts(output, strings)?;
        }
        "reasoning" => {
            if !content.is_none() {
                return Err(()); // its reasoning texts: the Python path reads them
            }
            // Absent is no summary; present and None is refused by the Python reader.
            let absent = !m.contains(keys[3]).map_err(|_| ())?;
            let summary = (!absent).then(|| summary.clone());
            if let Some(text) = summary_text(summary)? {
                strings.push(text);
                texts = 1;
            }
        }
        _ => return Err(()),
    }
    Ok(Fields {
        refs: PyTuple::new(py, refs).map_err(|_| ())?,
        system,
        texts,
        args,
        calls,
        named: false,
    })
}
