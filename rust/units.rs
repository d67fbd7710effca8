//! Estimating text stored as fixed-width code units (Python's PEP 393 `str` layouts: Latin-1,
//! UCS-2, UCS-4) without a UTF-8 copy of the whole text.
//!
//! The units are transcoded into a small UTF-8 buffer; when it fills, the buffer is cut at a
//! position where every pre-tokenizer we emulate is known to start a new piece, the part before
//! the cut is estimated as a text of its own and the rest moves to the front. Because pieces never
//! straddle such a cut, the estimate equals that of the whole text's UTF-8 bytes. The cut is the
//! last such position in the second half of the buffer, by the rules of [`is_cut`] (which
//! [`Text::split`] uses too).
//!
//! A buffer without any (64 KB without a line start or a space after a character: a long
//! hex or base64 line) grows, doubling, until one comes: the extra memory is about the longest
//! such run (64 KB for text with lines or words). Only a run of `MAX_BUF` without any (one
//! piece of 64 MB) is cut at its end, inside its piece, where the estimate may then differ
//! from the UTF-8 one. (Until 2026-12-02 that was 4 MB: 4 MB of letters and an accented one
//! counted 4,864 tokens more than their UTF-8 in cl100k.)

use crate::estimate::{Encoding, Estimator};

/// UTF-8 buffer size: small enough for L2, large enough that cuts are rare.
const BUF: usize = 64 * 1024;
/// Largest the buffer grows to while no cut comes (the most extra memory a `str` estimate
/// takes: an adversarial text, one piece this long, costs this much, never more).
pub(crate) const MAX_BUF: usize = 64 * 1024 * 1024;

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

impl<'a> Text<'a> {
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
        let mut est = Estimator::new(encoding);
        self.feed(&mut est)?;
        Ok(est.tokens())
    }

    /// Adds the text to a running estimate.
    ///
    /// # Errors
    ///
    /// [`Surrogate`] for code units with no UTF-8 form.
    pub fn feed(&self, est: &mut Estimator) -> Result<(), Surrogate> {
        match *self {
            Text::Utf8(b) => {
                est.feed(b);
                Ok(())
            }
            Text::Latin1(b) if b.is_ascii() => {
                est.feed(b);
                Ok(())
            }
            Text::Latin1(b) => feed_units(b, est),
            Text::Ucs2(u) => feed_units(u, est),
            Text::Ucs4(u) => feed_units(u, est),
        }
    }

    /// How many line feeds the text holds (`str.count("\n")`, `bytes.count(b"\n")`).
    #[must_use]
    pub fn count_newlines(&self) -> usize {
        match *self {
            Text::Utf8(b) | Text::Latin1(b) => crate::text::count_newlines(b),
            Text::Ucs2(u) => u.iter().filter(|&&c| c == 0x0A).count(),
            Text::Ucs4(u) => u.iter().filter(|&&c| c == 0x0A).count(),
        }
    }

    /// Number of code units (bytes for UTF-8).
    #[must_use]
    pub fn units(&self) -> usize {
        match self {
            Text::Utf8(b) | Text::Latin1(b) => b.len(),
            Text::Ucs2(u) => u.len(),
            Text::Ucs4(u) => u.len(),
        }
    }

    /// The units `range` as a text of the same layout.
    fn slice(&self, range: std::ops::Range<usize>) -> Text<'a> {
        match *self {
            Text::Utf8(b) => Text::Utf8(&b[range]),
            Text::Latin1(b) => Text::Latin1(&b[range]),
            Text::Ucs2(u) => Text::Ucs2(&u[range]),
            Text::Ucs4(u) => Text::Ucs4(&u[range]),
        }
    }

    /// The text cut into at most `parts` consecutive parts of similar size, each with its
    /// offset in units, at positions where every pre-tokenizer starts a new piece
    /// ([`is_cut`]): the estimates of the parts add up to the estimate of the whole. A part boundary with no such position within
    /// [`CUT_SEARCH`] units is dropped (the parts around it stay one).
    #[must_use]
    pub fn split(&self, parts: usize) -> Vec<(usize, Text<'a>)> {
        let n = self.units();
        let step = n / parts.max(1);
        let mut cuts = vec![0];
        for k in 1..parts {
            let from = (k * step).max(cuts[cuts.len() - 1] + 1);
            let cut = match self {
                Text::Utf8(b) => cut_after_utf8(b, from),
                Text::Latin1(b) => cut_after(b, from),
                Text::Ucs2(u) => cut_after(u, from),
                Text::Ucs4(u) => cut_after(u, from),
            };
            if let Some(cut) = cut {
                cuts.push(cut);
            }
        }
        cuts.push(n);
        cuts.windows(2)
            .filter(|w| w[1] > w[0])
            .map(|w| (w[0], self.slice(w[0]..w[1])))
            .collect()
    }
}

/// How far [`Text::split`] looks for a safe cut after its ideal position, in units.
pub const CUT_SEARCH: usize = 64 * 1024;

/// The first position in `from..from + CUT_SEARCH` (and inside `units`) where every
/// pre-tokenizer starts a new piece whatever came before, by [`is_cut`].
fn cut_after<U: Unit>(units: &[U], from: usize) -> Option<usize> {
    let end = units.len().min(from.saturating_add(CUT_SEARCH));
    (from.max(1)..end).find(|&k| is_cut(units[k - 1].code(), units[k].code()))
}

/// [`cut_after`] for UTF-8 bytes.
fn cut_after_utf8(b: &[u8], from: usize) -> Option<usize> {
    let end = b.len().min(from.saturating_add(CUT_SEARCH));
    (from.max(1)..end).find(|&k| is_cut_utf8(b, k))
}

/// [`is_cut`] at byte `k` of UTF-8 `b`: ASCII pairs as they are, and a 3-byte character
/// followed by U+3000-3011 (`E3 80 xx`) decoded.
fn is_cut_utf8(bytes: &[u8], at: usize) -> bool {
    let (Some(&prev), Some(&next)) = (at.checked_sub(1).and_then(|i| bytes.get(i)), bytes.get(at))
    else {
        return false;
    };
    if prev < 0x80 {
        return next < 0x80 && is_cut(u32::from(prev), u32::from(next));
    }
    if next == b' ' {
        // A space after a character of two bytes or more: decoded, for `is_cut`'s rule.
        let start = (at.saturating_sub(4)..at)
            .rev()
            .find(|&i| bytes[i] & 0xC0 != 0x80)
            .unwrap_or(at);
        return std::str::from_utf8(&bytes[start..at])
            .ok()
            .and_then(|s| s.chars().next())
            .is_some_and(|c| is_cut(u32::from(c), u32::from(b' ')));
    }
    if next != 0xE3 || at < 3 || bytes.get(at + 1) != Some(&0x80) {
        return false;
    }
    let decode3 = |s: &[u8]| match *s {
        [lead, mid, last] if lead & 0xF0 == 0xE0 && mid & 0xC0 == 0x80 && last & 0xC0 == 0x80 => {
            Some(
                (u32::from(lead & 0x0F) << 12)
                    | (u32::from(mid & 0x3F) << 6)
                    | u32::from(last & 0x3F),
            )
        }
        _ => None,
    };
    match (
        decode3(&bytes[at - 3..at]),
        bytes.get(at..at + 3).and_then(decode3),
    ) {
        (Some(a), Some(b)) => is_cut(a, b),
        _ => false,
    }
}

/// Whether a piece starts between the characters `a` and `b` in every dialect, whatever
/// precedes `a` and follows `b`:
/// - after `\n`, before ASCII other than whitespace and `/` (a newline run ends there;
///   newlines never lead a piece; o200k lets punctuation swallow `[\r\n/]*`);
/// - after any character but white space, before a space (the space leads the next piece:
///   no piece runs on past a character into a space, and a run of white space starts there);
/// - after an ASCII letter or digit, before ASCII punctuation other than `'` (o200k appends
///   `'s`, `'t`, ... to the word before);
/// - after a CJK ideograph or a kana letter, before U+3000-3002 or U+3008-3011 (spaces, `、`,
///   `。` and brackets: a letter run ends there). Not after the kana blocks' marks and
///   punctuation (the combining sound marks of decomposed text, `゛`, `・`): cl100k reads them
///   and what follows as one punctuation piece.
#[must_use]
pub fn is_cut(a: u32, b: u32) -> bool {
    let ascii_alnum = |c: u32| c < 0x80 && (c as u8).is_ascii_alphanumeric();
    if a == u32::from(b'\n') {
        // `\s` of the pre-tokenizers; Rust's `is_ascii_whitespace` leaves out U+000B.
        let whitespace = matches!(b, 0x09..=0x0D | 0x20);
        return b < 0x80 && b != u32::from(b'/') && !whitespace;
    }
    if b == u32::from(b' ') {
        // `\s` of the pre-tokenizers is Unicode's White_Space, as `char::is_whitespace`.
        return char::from_u32(a).is_some_and(|c| !c.is_whitespace());
    }
    if ascii_alnum(a) {
        return b < 0x80 && (b as u8).is_ascii_punctuation() && b != u32::from(b'\'');
    }
    let kana_letter =
        matches!(a, 0x3041..=0x3096 | 0x309D..=0x309F | 0x30A1..=0x30FA | 0x30FC..=0x30FF);
    let cjk = (0x4E00..=0x9FFF).contains(&a) || kana_letter;
    cjk && matches!(b, 0x3000..=0x3002 | 0x3008..=0x3011)
}

/// A code unit of a fixed-width string layout.
pub trait Unit: Copy {
    /// The code point (or lone surrogate) the unit stands for.
    fn code(self) -> u32;

    /// `units`, all ASCII, as bytes into `out`.
    #[inline]
    fn narrow_ascii(units: &[Self; BLOCK], out: &mut [u8; BLOCK]) {
        for (b, u) in out.iter_mut().zip(units) {
            *b = u.code() as u8;
        }
    }
}

impl Unit for u8 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }

    #[inline]
    fn narrow_ascii(units: &[u8; BLOCK], out: &mut [u8; BLOCK]) {
        out.copy_from_slice(units);
    }
}

impl Unit for u16 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn narrow_ascii(units: &[u16; BLOCK], out: &mut [u8; BLOCK]) {
        #[allow(clippy::wildcard_imports)]
        use std::arch::x86_64::*;
        for (i, o) in units.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
            // SAFETY: SSE2 is part of the x86_64 baseline; 16 units (32 bytes) in, 16 bytes
            // out. Every unit is below 0x80, so the saturating pack keeps it as it is.
            unsafe {
                let a = _mm_loadu_si128(i.as_ptr().cast());
                let b = _mm_loadu_si128(i.as_ptr().add(8).cast());
                _mm_storeu_si128(o.as_mut_ptr().cast(), _mm_packus_epi16(a, b));
            }
        }
    }
}

impl Unit for u32 {
    #[inline]
    fn code(self) -> u32 {
        self
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn narrow_ascii(units: &[u32; BLOCK], out: &mut [u8; BLOCK]) {
        #[allow(clippy::wildcard_imports)]
        use std::arch::x86_64::*;
        for (i, o) in units.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
            // SAFETY: SSE2 is part of the x86_64 baseline; 16 units (64 bytes) in, 16 bytes
            // out. Every unit is below 0x80, so the saturating packs keep it as it is.
            unsafe {
                let p = i.as_ptr();
                let ab =
                    _mm_packs_epi32(_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(4).cast()));
                let cd = _mm_packs_epi32(
                    _mm_loadu_si128(p.add(8).cast()),
                    _mm_loadu_si128(p.add(12).cast()),
                );
                _mm_storeu_si128(o.as_mut_ptr().cast(), _mm_packus_epi16(ab, cd));
            }
        }
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
    feed_units(units, &mut est)?;
    Ok(est.tokens())
}

/// Units transcoded at a time when a [`BLOCK`] is not all ASCII.
const RUN: usize = 16;
/// Units checked and narrowed at once while the text is ASCII (most of a `str` that is not
/// ASCII-only): one test for the whole block, with no per-run branches.
pub const BLOCK: usize = 256;
/// Bytes the UTF-8 buffer keeps past its flush point: a block, or a run of the longest
/// characters.
const SPARE: usize = if BLOCK > 4 * RUN { BLOCK } else { 4 * RUN };

/// Narrows `block` into `out` if every unit of it is ASCII; else leaves `out` alone. Fixed
/// sizes: the check and the narrowing compile to vector instructions.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn ascii_block<U: Unit>(block: &[U; BLOCK], out: &mut [u8; BLOCK]) -> bool {
    if block.iter().fold(0, |acc, u| acc | u.code()) >= 0x80 {
        return false;
    }
    U::narrow_ascii(block, out);
    true
}

/// Units [`three_byte_block`] transcodes at once.
const THREE: usize = 8;

/// Writes `units` into `out` if each is a character of three UTF-8 bytes (U+0800..U+FFFF
/// but surrogates: CJK, kana, Hangul, most Indic scripts and symbols); else leaves `out` alone.
/// Fixed sizes and no branch per unit: each character's bytes are one 32-bit store, the next
/// character's overwriting its spare byte.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn three_byte_block<U: Unit>(units: &[U; THREE], out: &mut [u8; 3 * THREE]) -> bool {
    let all = units.iter().fold(true, |all, u| {
        let c = u.code();
        all & (0x800..=0xFFFF).contains(&c) & !(0xD800..=0xDFFF).contains(&c)
    });
    if !all {
        return false;
    }
    let mut bytes = [0u8; 3 * THREE + 1];
    for (k, u) in units.iter().enumerate() {
        let c = u.code();
        let w = (0xE0 | (c >> 12)) | (0x80 | ((c >> 6) & 0x3F)) << 8 | (0x80 | (c & 0x3F)) << 16;
        bytes[3 * k..3 * k + 4].copy_from_slice(&w.to_le_bytes());
    }
    out.copy_from_slice(&bytes[..3 * THREE]);
    true
}

/// Appends the UTF-8 form of `run` to `buf` at `len`; the new length, or the index in `run`
/// of a unit with no UTF-8 form.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn encode_run<U: Unit>(run: &[U], buf: &mut [u8], mut len: usize) -> Result<usize, usize> {
    if run.iter().fold(0, |acc, u| acc | u.code()) < 0x80 {
        for (b, u) in buf[len..len + run.len()].iter_mut().zip(run) {
            *b = u.code() as u8;
        }
        return Ok(len + run.len());
    }
    for (k, u) in run.iter().enumerate() {
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
            0xD800..=0xDFFF | 0x11_0000.. => return Err(k),
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
    }
    Ok(len)
}

/// Adds the text whose code points are `units` to a running estimate (see [`estimate_units`]).
fn feed_units<U: Unit>(units: &[U], est: &mut Estimator) -> Result<(), Surrogate> {
    // Sized to the text when it is small (most calls): zeroing 64 KB would cost more than
    // estimating a short message. Up to 4 bytes per unit, so a small buffer never fills.
    let mut buf = vec![0u8; BUF.min(units.len().saturating_mul(4)) + SPARE];
    let mut len = 0;
    let mut flush_at = BUF;
    let mut at = 0;
    // Where whole blocks are worth trying again: past a block that was not all ASCII (dense
    // non-ASCII text would otherwise check every block once per run).
    let mut blocks_from = 0;
    while at < units.len() {
        let narrowed = at >= blocks_from && {
            let block = units
                .get(at..at + BLOCK)
                .and_then(|b| <&[U; BLOCK]>::try_from(b).ok());
            let out = buf
                .get_mut(len..len + BLOCK)
                .and_then(|o| <&mut [u8; BLOCK]>::try_from(o).ok());
            let narrowed = match (block, out) {
                (Some(block), Some(out)) => ascii_block(block, out),
                _ => false,
            };
            if !narrowed {
                blocks_from = at + BLOCK;
            }
            narrowed
        };
        if narrowed {
            at += BLOCK;
            len += BLOCK;
        } else {
            let three = units
                .get(at..at + THREE)
                .and_then(|b| <&[U; THREE]>::try_from(b).ok());
            let out = buf
                .get_mut(len..len + 3 * THREE)
                .and_then(|o| <&mut [u8; 3 * THREE]>::try_from(o).ok());
            let wrote = match (three, out) {
                (Some(three), Some(out)) => three_byte_block(three, out),
                _ => false,
            };
            if wrote {
                at += THREE;
                len += 3 * THREE;
            } else {
                let run = &units[at..units.len().min(at + RUN)];
                len = encode_run(run, &mut buf, len).map_err(|k| Surrogate(at + k))?;
                at += run.len();
            }
        }
        if len >= flush_at {
            let cut = match safe_cut(&buf[..len]) {
                Some(cut) => cut,
                None if flush_at < MAX_BUF => {
                    // No cut yet: take more of the run (the buffer keeps its spare bytes).
                    // Never shrunk: after a flush from a grown buffer, what is left can be
                    // longer than the flush point.
                    flush_at *= 2;
                    if buf.len() < flush_at + SPARE {
                        buf.resize(flush_at + SPARE, 0);
                    }
                    continue;
                }
                None => len,
            };
            est.feed(&buf[..cut]);
            buf.copy_within(cut..len, 0);
            len -= cut;
            flush_at = BUF;
        }
    }
    est.feed(&buf[..len]);
    Ok(())
}

/// The last position in the second half of `b` (valid UTF-8) where a new piece starts in
/// every dialect ([`is_cut`]), if any (see the module docs).
pub(crate) fn safe_cut(b: &[u8]) -> Option<usize> {
    (b.len() / 2..b.len()).rev().find(|&k| is_cut_utf8(b, k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::XorShift;

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
    fn newlines_are_counted_in_every_layout() {
        let text = "line 1\nligne 2 é\n第三行\n\n😀\n".repeat(50);
        let want = text.matches('\n').count();
        let u16s: Vec<u16> = text
            .chars()
            .filter(|&c| (c as u32) < 0x1_0000)
            .map(|c| c as u16)
            .collect();
        let u32s: Vec<u32> = text.chars().map(|c| c as u32).collect();
        let latin: Vec<u8> = text
            .chars()
            .filter(|&c| (c as u32) < 0x100)
            .map(|c| c as u8)
            .collect();
        assert_eq!(Text::Utf8(text.as_bytes()).count_newlines(), want);
        assert_eq!(Text::Ucs2(&u16s).count_newlines(), want);
        assert_eq!(Text::Ucs4(&u32s).count_newlines(), want);
        assert_eq!(Text::Latin1(&latin).count_newlines(), want);
    }

    #[test]
    fn same_as_utf8_on_small_texts() {
        check("");
        check("plain ascii text");
        check("café déjà vu, naïve façade");
        check("日本語の文章、中文。한국어");
        check("emoji 🎉 and math 𝔸");
        // Runs of three-byte characters, whole blocks of them and not, at the edges of the
        // range (U+0800, U+D7FF, U+E000, U+FFFF) and next to other sizes.
        for n in [7, 8, 9, 16, 17, 40] {
            for ch in [
                "中", "ア", "한", "\u{800}", "\u{D7FF}", "\u{E000}", "\u{FFFF}", "─",
            ] {
                let run = ch.repeat(n);
                check(&run);
                check(&format!("a{run}é{run}😀{run}\n{run} x"));
            }
        }
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
        // Where no piece starts though the characters look like it: a kana's combining
        // sound mark (decomposed text) or `・` before `、`/`。` (one punctuation piece in
        // cl100k), and a newline before a vertical tab (one run of white space).
        for tail in ["\u{304b}\u{3099}\u{3001}", "\u{30fb}\u{3002}", "\n\u{b}\n"] {
            check(&format!("{}{tail}", "é".repeat(3000)).repeat(40));
        }
        // Runs longer than the buffer with no safe cut in them (the buffer grows).
        check(&"é".repeat(BUF));
        let mut rng = XorShift(0x4e_78);
        let hex = |rng: &mut XorShift, n: usize| -> String {
            (0..n)
                .map(|_| char::from(b"0123456789abcdef"[rng.index(16)]))
                .collect()
        };
        let runs: Vec<String> = (0..4).map(|_| hex(&mut rng, 150_000)).collect();
        check(&format!("Ünïcode\n{}", runs.join("\n")));
    }

    #[test]
    fn a_run_without_a_cut_is_never_cut() {
        // 4 MB of letters, then an accented one: one piece, costed in the class its last
        // letter gives it (cut at 4 MB, the first part was costed as ASCII letters).
        let s = format!("{}é", "a".repeat(4 * 1024 * 1024 + 100));
        let u: Vec<u8> = s.chars().map(|c| c as u8).collect();
        for e in [Encoding::Cl100k, Encoding::O200k] {
            let want = crate::estimate::estimate_tokens(s.as_bytes(), e);
            assert_eq!(estimate_units(&u, e), Ok(want), "{e:?}");
        }
    }

    #[test]
    fn parts_cut_at_every_cut_add_up() {
        const ATOMS: &[&str] = &[
            "a",
            "s",
            "t",
            "l",
            "e",
            "Z",
            "0",
            "7",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            ".",
            ",",
            "/",
            "'",
            "'s",
            "'ll",
            "\"",
            "(",
            "=",
            "é",
            "中",
            "文",
            "の",
            "、",
            "。",
            "「",
            "\u{3000}",
            "😀",
            "\u{300}",
            "word",
            "Word",
            "camelCase",
        ];
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        for _ in 0..3000 {
            let len = 1 + rng.below(200) as usize;
            let mut text = String::new();
            while text.len() < len {
                text.push_str(ATOMS[rng.below(ATOMS.len() as u64) as usize]);
            }
            let chars: Vec<u32> = text.chars().map(|c| c as u32).collect();
            let cuts: Vec<usize> = (1..chars.len())
                .filter(|&k| is_cut(chars[k - 1], chars[k]))
                .collect();
            for e in Encoding::ALL {
                let mut whole = Estimator::new(e);
                whole.feed(text.as_bytes());
                let mut parts = Estimator::new(e);
                let mut from = 0;
                for &k in cuts.iter().chain([chars.len()].iter()) {
                    let part: String = chars[from..k]
                        .iter()
                        .filter_map(|&c| char::from_u32(c))
                        .collect();
                    parts.feed(part.as_bytes());
                    from = k;
                }
                assert_eq!(
                    parts.tokens(),
                    whole.tokens(),
                    "{e:?} on {text:?} cut at {cuts:?}"
                );
                let mut split = Estimator::new(e);
                for (_, part) in Text::Utf8(text.as_bytes()).split(8) {
                    part.feed(&mut split).expect("valid");
                }
                assert_eq!(
                    split.tokens(),
                    whole.tokens(),
                    "{e:?} on {text:?} (UTF-8 split)"
                );
            }
        }
    }

    #[test]
    fn ascii_runs_of_every_length_next_to_other_characters() {
        let mut rng = XorShift(0x51_7e);
        let others = ["é", "ÿ", "—", "中", "😀", "\n", " "];
        for _ in 0..200 {
            let mut s = String::new();
            while s.len() < 3 * BLOCK {
                for _ in 0..rng.below(40) {
                    s.push(char::from(b'a' + rng.below(26) as u8));
                }
                s.push_str(others[rng.index(others.len())]);
            }
            check(&s);
        }
        // Across the buffer's flush points: long ASCII stretches between rare other characters.
        let mut s = String::new();
        while s.len() < 3 * BUF + 100 {
            s.push_str(&"word ".repeat(1 + rng.index(700)));
            s.push('é');
        }
        check(&s);
    }

    #[test]
    fn what_is_left_after_flushing_a_grown_buffer_is_kept() {
        // A run with no cut grows the buffer past 128 KB; after its flush, more than the next
        // flush point is left, and it must not be cut off (this once shrank the buffer and
        // panicked).
        let text = format!("{}a {}", "é".repeat(131_072 + 20), "é".repeat(204_800));
        check(&text);
    }

    #[test]
    fn a_surrogate_inside_ascii_is_reported_at_its_index() {
        // Inside and after whole blocks of ASCII, and in the runs past the last block.
        for at in (0..40).chain((BLOCK - 20..3 * BLOCK + 40).step_by(3)) {
            let mut units: Vec<u16> = vec![u16::from(b'x'); 3 * BLOCK + 48];
            units[at] = 0xDC00;
            assert_eq!(estimate_units(&units, Encoding::O200k), Err(Surrogate(at)));
            let wide: Vec<u32> = units.iter().map(|&u| u32::from(u)).collect();
            assert_eq!(estimate_units(&wide, Encoding::O200k), Err(Surrogate(at)));
        }
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
