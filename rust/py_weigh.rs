//! Weighing messages that a format's walk has read, as `ctxbudget.request` weighs them.
//!
//! A cold request estimate counts every message of the history. Walked in Python (field
//! lookups, type checks, one estimate per string, weighing and summing) that cost as much as
//! estimating the text itself, or many times more for formats read through the internal view.
//! A walk in Rust reads each plain message once ([`py_chat`](crate::py_chat),
//! [`py_anthropic`](crate::py_anthropic), [`py_responses`](crate::py_responses),
//! [`py_gemini`](crate::py_gemini), with the typed lookups of [`py_read`](crate::py_read))
//! and hands its strings here: they are estimated
//! together, in parallel across cores when they are many ([`batch::estimate_batch`]), and each
//! message gets back the weighed tuple the Python path would build, with the sums the Python
//! loop keeps when every message is plain. A message a walk does not take (`None`) is left to
//! the Python path, which counts it or raises the error naming the field.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::batch;
use crate::py::{maybe_detach, parse_encoding, TextSource};
use crate::units::Text;
use crate::{py_anthropic, py_chat, py_gemini, py_responses};

/// What one plain message counts, and the fields it was read from. Its strings are in the
/// walk's list of strings to estimate, in message order: first `texts` strings of text, then
/// `args` of tool calls.
pub(crate) struct Fields<'py> {
    /// The message's fields that `ctxbudget.request` keeps as its references
    /// (`_FAST_KEYS[format]`), as the walk read them: the strings counted are these objects'
    /// own, or made from them.
    pub refs: Bound<'py, PyTuple>,
    pub system: bool,
    pub texts: usize,
    pub args: usize,
    pub calls: usize,
    pub named: bool,
}

/// A framing profile's weights of a message's counts (`FramingProfile` in `ctxbudget.request`):
/// `(text_factor, args_factor, per_message, per_tool_call, per_name)`.
pub(crate) type Weights = (f64, f64, f64, f64, f64);

/// Each message of a list weighed, as the Python path's tuple, with the fields it was read
/// from; `None` for a message the Python path must count.
pub(crate) type WeighedMessages<'py> = Vec<Option<(Bound<'py, PyTuple>, Bound<'py, PyTuple>)>>;

/// Sums of weighed messages: `(system bodies, other bodies, framing)`.
pub(crate) type Sums = (f64, f64, f64);

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

/// The walked messages weighed: `fields` (one per message, `None` where the walk left it to
/// Python) with `strings`, every plain message's strings in order, estimated in `encoding`,
/// each on its own. All `None` when some string has no UTF-8 form (a lone surrogate), so that
/// the Python path raises its error in message order. Second, when every message is plain,
/// the sums `ctxbudget.request` keeps of them, added in message order; else `None`.
fn weigh<'py>(
    py: Python<'py>,
    fields: Vec<Option<Fields<'py>>>,
    strings: Vec<Bound<'py, PyString>>,
    encoding: &str,
    weights: Weights,
) -> PyResult<(WeighedMessages<'py>, Option<Sums>)> {
    let encoding = parse_encoding(encoding)?;
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
        out.push(Some((f.refs, weighed.to_tuple(py)?)));
    }
    Ok((out, sums))
}

/// A walk's reading of a list of messages: `read` takes each message (pushing its strings),
/// or leaves it to Python (`Err(())`, with the strings as they were).
fn walk<'py>(
    messages: &Bound<'py, PyList>,
    mut read: impl FnMut(&Bound<'py, PyAny>, &mut Vec<Bound<'py, PyString>>) -> Result<Fields<'py>, ()>,
) -> (Vec<Option<Fields<'py>>>, Vec<Bound<'py, PyString>>) {
    let mut strings = Vec::new();
    let fields = messages
        .iter()
        .map(|m| {
            let before = strings.len();
            let fields = read(&m, &mut strings);
            if fields.is_err() {
                strings.truncate(before);
            }
            fields.ok()
        })
        .collect();
    (fields, strings)
}

/// For each of `messages`, in `format` (`openai_chat`, `anthropic`, `openai_responses` or
/// `gemini`), a plain message's counts weighed by a framing profile's `weights`, with the
/// fields they were read from: `(fields, (system, body, framing, 0, total, True))`, where
/// `fields` holds `message.get(key)` for each key `ctxbudget.request` keeps as the message's
/// references (`_FAST_KEYS[format]`), as the walk read them, and text and tool-call arguments
/// are counted in tokens of `encoding`, each string on its own. `None` for a message the Python
/// path must count (all of them for a format without a walk); all `None` when some string has
/// no UTF-8 form (a lone surrogate), so that the Python path raises its error in message
/// order. Second, when every message is plain: the sums `ctxbudget.request` keeps of them,
/// added in message order — `(system bodies, other bodies, framing)`; else `None`.
///
/// # Errors
///
/// An unknown encoding, or an error building the result.
#[pyfunction]
#[pyo3(signature = (messages, /, format, encoding, weights))]
pub fn weigh_messages<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    format: &str,
    encoding: &str,
    weights: Weights,
) -> PyResult<(WeighedMessages<'py>, Option<Sums>)> {
    let (fields, strings) = match format {
        "openai_chat" => walk(messages, py_chat::fields_of),
        "anthropic" => walk(messages, py_anthropic::fields_of),
        "openai_responses" => walk(messages, py_responses::fields_of),
        "gemini" => walk(messages, py_gemini::fields_of),
        _ => return Ok((messages.iter().map(|_| None).collect(), None)),
    };
    weigh(py, fields, strings, encoding, weights)
}
