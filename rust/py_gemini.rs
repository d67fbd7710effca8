//! Reading plain google-genai `contents` dicts for [`weigh_messages`](crate::py_weigh::weigh_messages).
//!
//! A plain content is a dict with role `user`, `model` or `function` (or none: `user`) and a
//! list of parts in `snake_case`: `text` (thoughts too), `function_call` and `function_response`.
//! Blobs, file data, other parts, `camelCase` keys, `google.genai.types.Content` objects and
//! anything malformed are left to the Python path. Call arguments and responses are counted as
//! the Python path counts them, from `json.dumps(value, ensure_ascii=False)`.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::py_json::json_text;
use crate::py_read::{as_exact_str, exact_str, field, get_all, push_text, Counts};
use crate::py_weigh::Fields;

/// The `camelCase` part keys the Python reader turns into `snake_case` (`_CAMEL` in
/// `ctxbudget.formats.gemini`): a part that has one is left to it.
const CAMEL: [&str; 11] = [
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "thoughtSignature",
    "mimeType",
    "fileUri",
    "displayName",
    "executableCode",
    "codeExecutionResult",
    "videoMetadata",
];

/// An optional call id: absent, `None` or a `str`.
fn optional_id(d: &Bound<'_, PyDict>) -> Result<(), ()> {
    match field(d, intern!(d.py(), "id"))? {
        Some(id) if !id.is_exact_instance_of::<PyString>() => Err(()),
        _ => Ok(()),
    }
}

/// A `function_call`: one call, its arguments' JSON text and its name.
fn function_call<'py>(fc: &Bound<'py, PyAny>, counts: &mut Counts<'py>) -> Result<(), ()> {
    let py = fc.py();
    let fc = fc.cast_exact::<PyDict>().map_err(|_| ())?;
    optional_id(fc)?;
    let name = exact_str(fc, intern!(py, "name"))?;
    if let Some(args) = field(fc, intern!(py, "args"))? {
        let args = args.cast_into_exact::<PyDict>().map_err(|_| ())?;
        if !args.is_empty() {
            push_text(json_text(args.as_any())?.as_any(), &mut counts.args)?;
        }
    }
    counts.calls += 1;
    push_text(name.as_any(), &mut counts.args)?;
    Ok(())
}

/// A `function_response`: its response as the tool result's text (a lone string `result` as
/// it is, anything else as JSON); not a plain one when it carries `parts` (media).
fn function_response<'py>(
    fr: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
    counts: &mut Counts<'py>,
) -> Result<(), ()> {
    let py = fr.py();
    let fr = fr.cast_exact::<PyDict>().map_err(|_| ())?;
    if fr.contains(intern!(py, "parts")).map_err(|_| ())? {
        return Err(()); // media beside the response: the Python reader prices them
    }
    optional_id(fr)?;
    exact_str(fr, intern!(py, "name"))?;
    let response =
        field(fr, intern!(py, "response"))?.unwrap_or_else(|| PyDict::new(py).into_any());
    let lone_result = response
        .cast_exact::<PyDict>()
        .ok()
        .filter(|d| d.len() == 1)
        .and_then(|d| d.get_item(intern!(py, "result")).ok().flatten());
    let text = match lone_result {
        Some(result) if result.is_exact_instance_of::<PyString>() => {
            result.cast_into::<PyString>().map_err(|_| ())?
        }
        _ => json_text(&response)?,
    };
    counts.texts += push_text(text.as_any(), strings)?;
    Ok(())
}

/// One part, or not a plain one.
fn part<'py>(
    raw: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
    counts: &mut Counts<'py>,
) -> Result<(), ()> {
    let py = raw.py();
    let block = raw.cast_exact::<PyDict>().map_err(|_| ())?;
    // The part's own keys (a few) against the list, rather than a lookup of each name.
    for key in block.keys() {
        let key = key.cast_exact::<PyString>().map_err(|_| ())?;
        if CAMEL.contains(&key.to_str().map_err(|_| ())?) {
            return Err(());
        }
    }
    let has = |key: &Bound<'py, PyString>| block.contains(key).map_err(|_| ());
    if has(intern!(py, "text"))? {
        // A thought is counted as text too; the Python reader tests the flag's truth.
        if let Some(thought) = field(block, intern!(py, "thought"))? {
            thought.cast_exact::<PyBool>().map_err(|_| ())?;
        }
        let text = exact_str(block, intern!(py, "text"))?;
        counts.texts += push_text(text.as_any(), strings)?;
    } else if has(intern!(py, "inline_data"))? || has(intern!(py, "file_data"))? {
        return Err(());
    } else if let Some(fc) = block
        .get_item(intern!(py, "function_call"))
        .map_err(|_| ())?
    {
        function_call(&fc, counts)?;
    } else if let Some(fr) = block
        .get_item(intern!(py, "function_response"))
        .map_err(|_| ())?
    {
        function_response(&fr, strings, counts)?;
    } else {
        return Err(());
    }
    Ok(())
}

/// What the Python path would count in content `m`, its strings pushed to `strings` (texts,
/// then call arguments); or `Err(())` when it is not a plain content. The parts are read once:
/// the strings counted are those of [`Fields::refs`], `(parts, role)`, or made from them.
pub(crate) fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let py = m.py();
    let m = m.cast_exact::<PyDict>().map_err(|_| ())?;
    let [parts, role] = get_all(m, [intern!(py, "parts"), intern!(py, "role")])?;
    if m.contains(intern!(py, "role")).map_err(|_| ())? {
        let role = as_exact_str(&role)?;
        if !matches!(
            role.to_str().map_err(|_| ())?,
            "user" | "model" | "function"
        ) {
            return Err(());
        }
    }
    let mut counts = Counts::default();
    for raw in parts.cast_exact::<PyList>().map_err(|_| ())?.iter() {
        part(&raw, strings, &mut counts)?;
    }
    let refs = PyTuple::new(py, [parts, role]).map_err(|_| ())?;
    Ok(counts.into_fields(refs, strings))
}
