//! Estimating text stored as fixed-width code units (Python's PEP 393 `str` layouts: Latin-1,
//! UCS-2, UCS-4) without a UTF-8 copy of the whole text.
//!
//! The units are transcoded into a small UTF-8 buffer; when it fills, the buffer is cut at a
//! position where every pre-tokenizer we emulate is known to start a new piece, the part before
//! the cut is estimated as a text of its own and the rest moves to the front. Because pieces never
//! straddle such a cut, the estimate equals that of the whole text's UTF-8 bytes. Safe cuts, in
//! order of preference (searched in the second half of the buffer):
//!
//! 1. after `\n` when an ASCII character other than whitespace or `/` follows (a newline run
//!    ends there; newlines never prefix a word or punctuation piece; o200k lets a punctuation
//!    piece swallow `[\r\n/]*`, hence no `/`);
//! 2. before a space that follows an ASCII letter or digit (letter and digit runs end there, and
//!    a space always starts the next piece);
//! 3. before an ideographic space, `、`, `。` or a CJK bracket (U+3000-3002, U+3008-3011) that
//!    follows a CJK ideograph or a kana (a letter run ends at a non-letter).
//!
//! A buffer without any of them (64 KB without a space after a word or a line start) is cut at
//! its end: the estimate may then differ from the UTF-8 one by about one token per 32-64 KB.

use crate::estimate::{Encoding, Estimator};

/// UTF-8 buffer size: small enough for L2, large enough that cuts are rare.
const BUF: usize = 64 * 1024;

/// Text in any of the layouts we estimate without copying: UTF-8 bytes or `str` code units.
#[derive(Debug, Clone, Copy)]
pub enum Text<'a> {
    /// UTF-8 bytes (invalid bytes tolerated) — also an ASCII-only Latin-1 `str`.
    Utf8(&'a [u8]),
    /// Latin-1 code units (a PEP 393 1-byte `str`).
    Latin1(&'a [u8]),
    /// UCS-2 code units (a PEP 393 2-byte `str`).
    Ucs2(&'a [u16]),
    /// UCS-4 code units (a PEP 393 4-byte `str`).
    Ucs4(&'a [u32]),
}

impl Text<'_> {
    /// Size in bytes of the stored text (for thresholds and throughput).
    #[must_use]
    pub fn size(&self) -> usize {
        match self {
            Text::Utf8(b) | Text::Latin1(b) => b.len(),
            Text::Ucs2(u) => u.len() * 2,
            Text::Ucs4(u) => u.len() * 4,
        }
    }

    /// The estimate in `encoding`, the same as for the text's UTF-8 bytes.
    ///
    /// # Errors
    ///
    /// [`Surrogate`] for code units with no UTF-8 form.
    pub fn estimate(&self, encoding: Encoding) -> Result<u64, Surrogate> {
        match *self {
            Text::Utf8(b) => Ok(crate::estimate::estimate_tokens(b, encoding)),
            Text::Latin1(b) if b.is_ascii() => Ok(crate::estimate::estimate_tokens(b, encoding)),
            Text::Latin1(b) => estimate_units(b, encoding),
            Text::Ucs2(u) => estimate_units(u, encoding),
            Text::Ucs4(u) => estimate_units(u, encoding),
        }
    }
}

/// A code unit of a fixed-width string layout.
pub trait Unit: Copy {
    /// The code point (or lone surrogate) the unit stands for.
    fn code(self) -> u32;
}

impl Unit for u8 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u16 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u32 {
    #[inline]
    fn code(self) -> u32 {
        self
    }
}

/// The text holds a lone surrogate (no UTF-8 form) at this unit index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Surrogate(pub usize);

/// Estimated token count of the text whose code points are `units`, in `encoding`; the same
/// number [`estimate_tokens`](crate::estimate::estimate_tokens) gives for its UTF-8 bytes.
///
/// # Errors
///
/// [`Surrogate`] when a unit is a surrogate code point (a `str` such as `"\ud800"`) or beyond
/// U+10FFFF: such text has no UTF-8 form.
pub fn estimate_units<U: Unit>(units: &[U], encoding: Encoding) -> Result<u64, Surrogate> {
    let mut est = Estimator::new(encoding);
    // Sized to the text when it is small (most calls): zeroing 64 KB would cost more than
    // estimating a short message. Up to 4 bytes per unit, so a small buffer never fills.
    let mut buf = vec![0u8; BUF.min(units.len().saturating_mul(4)) + 4];
    let mut len = 0;
    for (i, &u) in units.iter().enumerate() {
        let c = u.code();
        len += match c {
            0..=0x7F => {
                buf[len] = c as u8;
                1
            }
            0x80..=0x7FF => {
                buf[len] = 0xC0 | (c >> 6) as u8;
                buf[len + 1] = 0x80 | (c & 0x3F) as u8;
                2
            }
            0xD800..=0xDFFF | 0x11_0000.. => return Err(Surrogate(i)),
            0x800..=0xFFFF => {
                buf[len] = 0xE0 | (c >> 12) as u8;
                buf[len + 1] = 0x80 | ((c >> 6) & 0x3F) as u8;
                buf[len + 2] = 0x80 | (c & 0x3F) as u8;
                3
            }
            _ => {
                buf[len] = 0xF0 | (c >> 18) as u8;
                buf[len + 1] = 0x80 | ((c >> 12) & 0x3F) as u8;
                buf[len + 2] = 0x80 | ((c >> 6) & 0x3F) as u8;
                buf[len + 3] = 0x80 | (c & 0x3F) as u8;
                4
            }
        };
        if len >= BUF {
            let cut = safe_cut(&buf[..len]);
            est.feed(&buf[..cut]);
            buf.copy_within(cut..len, 0);
            len -= cut;
        }
    }
    est.feed(&buf[..len]);
    Ok(est.tokens())
}

/// A cut position in the second half of `b` (valid UTF-8) where a new piece starts in every
/// dialect; see the module docs. Always in `1..=b.len()` (for a non-empty `b` of whole
/// characters), on a character boundary.
fn safe_cut(b: &[u8]) -> usize {
    let lo = b.len() / 2;
    let window = &b[lo..];
    // 1. `\n` followed by ASCII non-whitespace.
    if let Some(k) = window
        .windows(2)
        .rposition(|w| w[0] == b'\n' && w[1] < 0x80 && !w[1].is_ascii_whitespace() && w[1] != b'/')
    {
        return lo + k + 1;
    }
    // 2. A space after an ASCII letter or digit.
    if let Some(k) = window
        .windows(2)
        .rposition(|w| w[1] == b' ' && w[0].is_ascii_alphanumeric())
    {
        return lo + k + 1;
    }
    // 3. U+3000-3002 or U+3008-3011 (E3 80 xx) after a CJK ideograph U+4E00..U+9FFF
    //    (E4..E9 xx xx) or a kana U+3040..U+30FF (E3 81..83 xx).
    if let Some(k) = window.windows(6).rposition(|w| {
        let letter =
            (0xE4..=0xE9).contains(&w[0]) || (w[0] == 0xE3 && (0x81..=0x83).contains(&w[1]));
        letter && w[3] == 0xE3 && w[4] == 0x80 && matches!(w[5], 0x80..=0x82 | 0x88..=0x91)
    }) {
        return lo + k + 3;
    }
    // The buffer holds whole characters: its end is a character boundary.
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) {
        let u8s: Option<Vec<u8>> = text.chars().map(|c| u8::try_from(c as u32).ok()).collect();
        let u16s: Option<Vec<u16>> = text.chars().map(|c| u16::try_from(c as u32).ok()).collect();
        let u32s: Vec<u32> = text.chars().map(|c| c as u32).collect();
        for e in Encoding::ALL {
            let want = crate::estimate::estimate_tokens(text.as_bytes(), e);
            assert_eq!(estimate_units(&u32s, e), Ok(want), "{e:?} ucs4");
            if let Some(v) = &u16s {
                assert_eq!(estimate_units(v, e), Ok(want), "{e:?} ucs2");
            }
            if let Some(v) = &u8s {
                assert_eq!(estimate_units(v, e), Ok(want), "{e:?} latin-1");
            }
        }
    }

    #[test]
    fn same_as_utf8_on_small_texts() {
        check("");
        check("plain ascii text");
        check("café déjà vu, naïve façade");
        check("日本語の文章、中文。한국어");
        check("emoji 🎉 and math 𝔸");
    }

    #[test]
    fn same_as_utf8_across_cuts() {
        let mut s = String::new();
        let parts = [
            "Ünïcode wörds and 12345 numbers,\n",
            "日本語のテキスト。中文文本，还有。",
            "  indented line\n\n\tx = 1;\n",
            "Привет мир ",
            "🎉🎉 ",
        ];
        let mut i = 0usize;
        while s.len() < 3 * BUF {
            s.push_str(parts[i % parts.len()]);
            i += 1;
        }
        check(&s);
        check(&"日本語のテキスト。".repeat(BUF / 8));
        // No safe cut at all: off by at most a token per cut.
        let s = "é".repeat(BUF);
        let u: Vec<u16> = s.chars().map(|c| c as u16).collect();
        let want = crate::estimate::estimate_tokens(s.as_bytes(), Encoding::O200k);
        let got = estimate_units(&u, Encoding::O200k).unwrap_or(0);
        assert!(got.abs_diff(want) <= 4, "{got} vs {want}");
    }

    #[test]
    fn surrogates_are_errors() {
        let units: Vec<u16> = vec![u16::from(b'a'), 0xD800, u16::from(b'b')];
        assert_eq!(estimate_units(&units, Encoding::O200k), Err(Surrogate(1)));
        assert_eq!(
            estimate_units(&[0x11_0000u32], Encoding::O200k),
            Err(Surrogate(0))
        );
    }
}
