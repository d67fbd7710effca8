//! Weighing plain Chat Completions message dicts in one call.
//!
//! A cold request estimate walks every message of the history: in Python that walk (field
//! lookups, type checks, one count per string, weighing and summing) cost about as much as
//! estimating the text itself. Here the walk reads the dicts once, the strings are estimated
//! together (in parallel across cores when they are many, [`batch::estimate_batch`]), and each
//! message gets back the weighed tuple the Python path would have built, with the sums the
//! Python loop keeps when every message is plain. Anything that is not a plain, well-formed
//! message (content parts, a legacy `function_call`, a field of the wrong type) gets `None`:
//! Python's own path counts it, or raises the error that names the field.

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

/// What one message counts, and the fields it was read from. Its strings are in the walk's
/// list of strings to estimate: first `texts` strings of text, then `args` of tool calls.
struct Fields<'py> {
    /// `message.get(key)` of `content`, `tool_calls` and `reasoning_content` (the references
    /// `_FAST_KEYS["openai_chat"]` names in `ctxbudget.request`), as the walk read the
    /// message: the strings counted are these objects' own.
    read: [Bound<'py, PyAny>; 3],
    system: bool,
    texts: usize,
    args: usize,
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

/// A non-empty exact `str` is pushed to `out` (1); `None` or `""` is nothing (0); anything
/// else is not a plain message.
fn push_text<'py>(v: &Bound<'py, PyAny>, out: &mut Vec<Bound<'py, PyString>>) -> Result<usize, ()> {
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
/// `Err(())`, with `strings` as it was, when it is not a plain Chat Completions dict (the
/// Python path then takes it).
fn fields_of<'py>(
    m: &Bound<'py, PyAny>,
    strings: &mut Vec<Bound<'py, PyString>>,
) -> Result<Fields<'py>, ()> {
    let before = strings.len();
    let fields = read_fields(m, strings);
    if fields.is_err() {
        strings.truncate(before);
    }
    fields
}

/// [`fields_of`], which leaves `strings` as it was on `Err`. Each field is read once: the
/// strings counted are those of [`Fields::read`].
fn read_fields<'py>(
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
        read,
    })
}

/// A framing profile's weights of a message's counts (`FramingProfile` in `ctxbudget.request`):
/// `(text_factor, args_factor, per_message, per_tool_call, per_name)`.
type Weights = (f64, f64, f64, f64, f64);

/// A message weighed as `ctxbudget.request` weighs it: `(system, body, framing, attachments,
/// total, exact)`, with the same floating-point operations in the same order (and Python's
/// rounding of halves to even), so that the numbers are the Python path's to the last bit.
struct Weighed {
    system: bool,
    body: f64,
    frame: f64,
    total: f64,
}

impl Weighed {
    fn of(f: &Fields<'_>, text: u64, args: u64, w: Weights) -> Self {
        let (text_factor, args_factor, per_message, per_tool_call, per_name) = w;
        let body = text as f64 * text_factor + args as f64 * args_factor;
        let frame =
            per_message + f.calls as f64 * per_tool_call + if f.named { per_name } else { 0.0 };
        Weighed {
            system: f.system,
            body,
            frame,
            total: (body + frame).round_ties_even(),
        }
    }

    fn to_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                self.system.into_pyobject(py)?.to_owned().into_any(),
                self.body.into_pyobject(py)?.into_any(),
                self.frame.into_pyobject(py)?.into_any(),
                0u64.into_pyobject(py)?.into_any(),
                (self.total as i64).into_pyobject(py)?.into_any(),
                true.into_pyobject(py)?.to_owned().into_any(),
            ],
        )
    }
}

/// Each message of a list weighed, as the Python path's tuple, with the fields it was read
/// from; `None` for a message the Python path must count.
type WeighedMessages<'py> = Vec<Option<(Bound<'py, PyTuple>, Bound<'py, PyTuple>)>>;

/// Sums of weighed messages: `(system bodies, other bodies, framing)`.
type Sums = (f64, f64, f64);

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
    let encoding = parse_encoding(encoding)?;
    let mut strings = Vec::new();
    let fields: Vec<Option<Fields<'py>>> = messages
        .iter()
        .map(|m| fields_of(&m, &mut strings).ok())
        .collect();
    let sources: Vec<TextSource<'py>> = strings.into_iter().map(TextSource::Str).collect();
    let views = sources
        .iter()
        .map(TextSource::text)
        .collect::<PyResult<Vec<Text<'_>>>>()?;
    let total: usize = views.iter().map(Text::size).sum();
    let Ok(counts) = maybe_detach(py, total, || batch::estimate_batch(&views, encoding)) else {
        return Ok((fields.iter().map(|_| None).collect(), None));
    };
    let mut next = counts.into_iter();
    let mut sum = |n: usize| -> u64 { next.by_ref().take(n).sum() };
    let mut sums = Some((0.0, 0.0, 0.0));
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let Some(f) = f else {
            sums = None;
            out.push(None);
            continue;
        };
        let weighed = Weighed::of(&f, sum(f.texts), sum(f.args), weights);
        if let Some((system, other, frame)) = &mut sums {
            if weighed.system {
                *system += weighed.body;
            } else {
                *other += weighed.body;
            }
            *frame += weighed.frame;
        }
        out.push(Some((PyTuple::new(py, f.read)?, weighed.to_tuple(py)?)));
    }
    Ok((out, sums))
}
