//! The JSON text of a tool call's input (or a function's response) as the Python path counts
//! it: `json.dumps(value, ensure_ascii=False)`.
//!
//! Calling Python's encoder costs about two microseconds a value, most of it the call into
//! `JSONEncoder.encode` and its `iterencode`: for a conversation of Anthropic or Gemini tool
//! calls, as much as reading every other field. [`json_text`] writes the common values here
//! (exact dicts with `str` keys, lists, tuples, strings, `int`s of 64 bits, booleans, `None`),
//! character for character as Python's C encoder writes them, and leaves anything else
//! (floats, other keys, larger integers, strings without a UTF-8 form) to that encoder.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Deepest nesting of a tool call's input (or a result) the Python readers accept (`_MAX_JSON_DEPTH` in
/// `ctxbudget.formats.common`); deeper input is left to it, to raise its error.
const MAX_JSON_DEPTH: usize = 256;

/// `json.dumps(value, ensure_ascii=False)` when `value` is plain JSON ([`plain_json`]);
/// `Err(())` when it is not, or when Python's encoder raises. Where [`write`] stops at
/// something only Python's encoder writes, the whole value is checked and given to it.
pub(crate) fn json_text<'py>(value: &Bound<'py, PyAny>) -> Result<Bound<'py, PyString>, ()> {
    let mut out = String::new();
    match write(value, 1, &mut out) {
        Written::Done => Ok(PyString::new(value.py(), &out)),
        Written::Python if plain_json(value) => json_dumps(value),
        Written::Python | Written::NotPlain => Err(()),
    }
}

/// What [`write`] made of a value.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Its text is written.
    Done,
    /// It holds something [`plain_json`] refuses (or nests too deep).
    NotPlain,
    /// It holds something Python's encoder must write (a float, a key that is not a `str`, an
    /// integer past 64 bits, a string without a UTF-8 form).
    Python,
}

/// `value`'s JSON text appended to `out`, for a value at nesting `depth` (the outermost 1).
fn write(value: &Bound<'_, PyAny>, depth: usize, out: &mut String) -> Written {
    if let Ok(s) = value.cast_exact::<PyString>() {
        return match s.to_str() {
            Ok(s) => {
                quote(s, out);
                Written::Done
            }
            Err(_) => Written::Python,
        };
    }
    if value.is_none() {
        out.push_str("null");
        return Written::Done;
    }
    if let Ok(b) = value.cast_exact::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
        return Written::Done;
    }
    if value.is_exact_instance_of::<PyInt>() {
        return match value.extract::<i64>() {
            Ok(n) => {
                out.push_str(itoa(n, &mut [0; 20]));
                Written::Done
            }
            Err(_) => Written::Python,
        };
    }
    if value.is_exact_instance_of::<PyFloat>() {
        return Written::Python;
    }
    if depth > MAX_JSON_DEPTH {
        return Written::NotPlain;
    }
    if let Ok(d) = value.cast_exact::<PyDict>() {
        return write_dict(d, depth, out);
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = value.cast_exact::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = value.cast_exact::<PyTuple>() {
        t.iter().collect()
    } else {
        return Written::NotPlain;
    };
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let written = write(item, depth + 1, out);
        if written != Written::Done {
            return written;
        }
    }
    out.push(']');
    Written::Done
}

/// An exact dict's text: `{"key": value, ...}` in its order.
fn write_dict(d: &Bound<'_, PyDict>, depth: usize, out: &mut String) -> Written {
    out.push('{');
    for (i, (key, item)) in d.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        // Python writes other keys its own way (`1`, `true`, `null`, a float's repr), or raises.
        let Some(key) = key
            .cast_exact::<PyString>()
            .ok()
            .and_then(|k| k.to_str().ok())
        else {
            return Written::Python;
        };
        quote(key, out);
        out.push_str(": ");
        let written = write(&item, depth + 1, out);
        if written != Written::Done {
            return written;
        }
    }
    out.push('}');
    Written::Done
}

/// `s` as a JSON string, escaped as Python's encoder escapes it with `ensure_ascii=False`:
/// `"`, `\` and the control characters below U+0020 only (`\n`, `\r`, `\t`, `\b`, `\f`, else
/// `\u00xx` in lower case).
fn quote(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push('"');
    let mut clean = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[clean..i]);
        clean = i + 1;
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        } else {
            out.push_str(escape);
        }
    }
    out.push_str(&s[clean..]);
    out.push('"');
}

/// `n` in decimal, written into `buf`.
fn itoa(n: i64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
}

/// Whether `value` nests at most [`MAX_JSON_DEPTH`] containers deep and holds only exact
/// dicts, lists and tuples of exact strings, numbers, booleans and `None` (anything else is
/// left to the Python path).
fn plain_json(value: &Bound<'_, PyAny>) -> bool {
    let mut stack = vec![(value.clone(), 1)];
    while let Some((item, depth)) = stack.pop() {
        let children: Vec<Bound<'_, PyAny>> = if let Ok(d) = item.cast_exact::<PyDict>() {
            d.values().iter().collect()
        } else if let Ok(l) = item.cast_exact::<PyList>() {
            l.iter().collect()
        } else if let Ok(t) = item.cast_exact::<PyTuple>() {
            t.iter().collect()
        } else {
            let leaf = item.is_none()
                || item.is_exact_instance_of::<PyString>()
                || item.is_exact_instance_of::<PyInt>()
                || item.is_exact_instance_of::<PyFloat>()
                || item.is_exact_instance_of::<PyBool>();
            if !leaf {
                return false;
            }
            continue;
        };
        if depth > MAX_JSON_DEPTH {
            return false;
        }
        stack.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    true
}

/// `JSONEncoder(ensure_ascii=False).encode` of Python's `json` module, made once: what
/// `json.dumps(value, ensure_ascii=False)` calls, without building an encoder per call.
static ENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `json.dumps(value, ensure_ascii=False)` made by Python's encoder; `Err(())` when it raises.
fn json_dumps<'py>(value: &Bound<'py, PyAny>) -> Result<Bound<'py, PyString>, ()> {
    let py = value.py();
    let encode = ENCODE
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            let kwargs = PyDict::new(py);
            kwargs.set_item(intern!(py, "ensure_ascii"), false)?;
            let encoder = py
                .import(intern!(py, "json"))?
                .getattr(intern!(py, "JSONEncoder"))?
                .call((), Some(&kwargs))?;
            Ok(encoder.getattr(intern!(py, "encode"))?.unbind())
        })
        .map_err(|_| ())?;
    let text = encode.bind(py).call1((value,)).map_err(|_| ())?;
    text.cast_into_exact::<PyString>().map_err(|_| ())
}

/// `json.dumps(value, ensure_ascii=False)` of a plain JSON value (see [`json_text`]), `None`
/// for any other: the text the walks count for a tool call's input.
#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn json_text_of<'py>(value: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
    json_text(value).ok()
}
