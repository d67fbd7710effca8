//! Pre-tokenization of ASCII text (and two-byte letters with case) 64 bytes at a time, with
//! bit masks instead of a byte loop.
//!
//! A window of 64 bytes that starts at a known piece start is classified into one bit mask per
//! character class (AVX-512, AVX2 or SSE2 on `x86_64`, a byte loop elsewhere). The pre-tokenizer
//! rules that [`scan`](crate::scan) applies byte by byte become shifts, ands and one
//! carry-propagating add over those masks, giving the set of positions where a piece starts.
//! Starts that could still depend on bytes past the window (inside its last run of one class)
//! are not trusted: the pieces that end at trusted starts are emitted, with the same features
//! the byte scanner computes, and the next window starts at the last trusted start
//! (contractions read the two characters after an apostrophe from the text itself, wherever
//! they are). Two-byte letters with case (accented Latin, Greek, Cyrillic, ...) count as
//! letters of their case (`take_cased`), and the pieces holding one take their features
//! from the byte scanner. A window stops at its first other non-ASCII byte; the byte scanner
//! takes over there (see [`scan::scan`](crate::scan::scan)), and it stays the reference: tests
//! check that both give identical pieces.
//!
//! Rules for ASCII, per piece start (cl100k; o200k differs where noted):
//! - a letter run starts a piece, or its previous character does when that is whitespace
//!   other than a newline, or punctuation that starts a piece and is not followed by another
//!   punctuation character (`[^\r\n\p{L}\p{N}]?\p{L}+`); o200k also starts a piece at each
//!   lower → upper case change;
//! - a digit run starts a piece (the estimator splits it into digit groups);
//! - a punctuation run starts a piece unless a space precedes it (the space leads the piece);
//!   the newlines right after the run belong to it (o200k: newlines and `/`);
//! - a whitespace run starts a piece; if it holds newlines, that piece ends after the last one;
//!   the whitespace after the last newline starts a piece, and so does its last character
//!   when something other than the end of the text follows (it leads a word or punctuation,
//!   or stands alone before a digit or after a tab);
//! - cl100k splits `'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d` off as pieces of their own where
//!   an apostrophe starts a piece; o200k appends them to the word they follow.

use crate::scan::{
    case, cased_pair, content, contraction_len, found_at, prefix, Dialect, Found, Kind, Piece,
};

/// Bytes per window.
pub const WIDTH: usize = 64;

/// A window shorter than this before its first byte it cannot take (non-ASCII, not a
/// two-byte letter with case) is not worth the masks.
const MIN_TAKEN: u32 = 16;

/// Texts (or their rest) shorter than this go to the byte scanner: a window would cost more
/// than it saves.
pub const MIN_TEXT: usize = 32;

/// The first position from `from` on, in steps of 8 bytes, where 8 ASCII bytes follow (or the
/// end of `text`): where windows are worth trying again after non-ASCII text.
#[must_use]
pub fn next_ascii(text: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(chunk) = text.get(at..at + 8) {
        if chunk.is_ascii() {
            return at;
        }
        at += 8;
    }
    text.len()
}

/// One bit per byte of the window, per character class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Masks {
    lower: u64,
    upper: u64,
    digit: u64,
    /// `\r` or `\n`.
    nl: u64,
    /// `\n`.
    lf: u64,
    /// Whitespace that is not a newline: space, tab, `\x0b`, `\x0c`.
    ws: u64,
    /// A literal space.
    space: u64,
    /// A tab.
    tab: u64,
    /// `'`.
    apos: u64,
    /// `/`.
    slash: u64,
    /// Non-ASCII bytes (after [`take_cased`]: those the window does not take).
    high: u64,
    /// The bytes of the two-byte letters with case the window takes ([`take_cased`]).
    wide: u64,
}

#[cfg(target_arch = "x86_64")]
impl Masks {
    /// Adds the classes of `other` (bytes of another part of the window) to these.
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn merge(&mut self, other: Masks) {
        self.lower |= other.lower;
        self.upper |= other.upper;
        self.digit |= other.digit;
        self.nl |= other.nl;
        self.lf |= other.lf;
        self.ws |= other.ws;
        self.space |= other.space;
        self.tab |= other.tab;
        self.apos |= other.apos;
        self.slash |= other.slash;
        self.high |= other.high;
        self.wide |= other.wide;
    }
}

/// The class masks of some bytes from their compares: `eq(b)` has the bit of each byte equal
/// to `b`, `range(lo, n)` of each in `lo..lo + n`, and `high` of each non-ASCII byte, all at
/// the same positions. Every vector path's classes, so that they share one definition.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn classes(eq: impl Fn(u8) -> u64, range: impl Fn(u8, u8) -> u64, high: u64) -> Masks {
    let (lf, space, tab) = (eq(b'\n'), eq(b' '), eq(b'\t'));
    Masks {
        lower: range(b'a', 26),
        upper: range(b'A', 26),
        digit: range(b'0', 10),
        nl: lf | eq(b'\r'),
        lf,
        ws: space | tab | range(0x0b, 2),
        space,
        tab,
        apos: eq(b'\''),
        slash: eq(b'/'),
        high,
        wide: 0,
    }
}

/// The class masks of a window: with AVX-512 where the processor has the features every
/// vector path needs (see `rust/avx512.rs`), else with AVX2 where it has those of
/// `rust/avx2.rs`, else SSE2.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn masks(w: &[u8; WIDTH]) -> Masks {
    if crate::avx512::available() {
        // SAFETY: the processor has the features.
        unsafe { masks_avx512(w) }
    } else if crate::avx2::available() {
        // SAFETY: the processor has the features.
        unsafe { masks_avx2(w) }
    } else {
        masks_sse2(w)
    }
}

/// [`masks`] 64 bytes at once.
#[cfg(target_arch = "x86_64")]
#[target_feature(
    enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,bmi1,bmi2,popcnt"
)]
fn masks_avx512(w: &[u8; WIDTH]) -> Masks {
    #[allow(clippy::wildcard_imports)]
    use std::arch::x86_64::*;
    // SAFETY: 64 bytes.
    let v = unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
    let eq = |b: u8| _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b as i8));
    let range = |lo: u8, n: u8| {
        _mm512_cmplt_epu8_mask(
            _mm512_sub_epi8(v, _mm512_set1_epi8(lo as i8)),
            _mm512_set1_epi8(n as i8),
        )
    };
    classes(eq, range, _mm512_movepi8_mask(v))
}

/// [`masks`] 32 bytes at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
fn masks_avx2(w: &[u8; WIDTH]) -> Masks {
    #[allow(clippy::wildcard_imports)]
    use std::arch::x86_64::*;
    let mut m = Masks::default();
    for k in 0..WIDTH / 32 {
        // SAFETY: the unaligned load reads bytes 32k..32k+32 of a 64-byte array.
        let v = unsafe { _mm256_loadu_si256(w.as_ptr().add(32 * k).cast()) };
        let bits = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32) << (32 * k);
        let eq = |b: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8));
        // Unsigned `v - lo < n`: `v - lo` is at most `n - 1`.
        let range = |lo: u8, n: u8| {
            let x = _mm256_sub_epi8(v, _mm256_set1_epi8(lo as i8));
            _mm256_cmpeq_epi8(_mm256_min_epu8(x, _mm256_set1_epi8((n - 1) as i8)), x)
        };
        m.merge(classes(
            |b| bits(eq(b)),
            |lo, n| bits(range(lo, n)),
            bits(v),
        ));
    }
    m
}

/// [`masks`] 16 bytes at a time.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn masks_sse2(w: &[u8; WIDTH]) -> Masks {
    #[allow(clippy::wildcard_imports)]
    use std::arch::x86_64::*;
    let mut m = Masks::default();
    for k in 0..WIDTH / 16 {
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned load reads bytes
        // 16k..16k+16 of a 64-byte array.
        unsafe {
            let v = _mm_loadu_si128(w.as_ptr().add(16 * k).cast());
            let bits = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
            let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            // Unsigned `v - lo < n` through a signed compare with the sign bits flipped.
            let range = |lo: u8, n: u8| {
                let x = _mm_xor_si128(
                    _mm_sub_epi8(v, _mm_set1_epi8(lo as i8)),
                    _mm_set1_epi8(-128),
                );
                _mm_cmplt_epi8(x, _mm_set1_epi8((n ^ 0x80) as i8))
            };
            m.merge(classes(
                |b| bits(eq(b)),
                |lo, n| bits(range(lo, n)),
                bits(v),
            ));
        }
    }
    m
}

/// The non-ASCII bytes of a window (checked before the other masks are worth computing).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn high_bytes(w: &[u8; WIDTH]) -> u64 {
    use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
    let mut high = 0;
    for k in 0..WIDTH / 16 {
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned load reads bytes
        // 16k..16k+16 of a 64-byte array.
        let bits = unsafe { _mm_movemask_epi8(_mm_loadu_si128(w.as_ptr().add(16 * k).cast())) };
        high |= u64::from(bits as u16) << (16 * k);
    }
    high
}

#[cfg(not(target_arch = "x86_64"))]
fn high_bytes(w: &[u8; WIDTH]) -> u64 {
    w.iter()
        .enumerate()
        .fold(0, |m, (k, &b)| m | (u64::from(b >= 0x80) << k))
}

#[cfg(not(target_arch = "x86_64"))]
fn masks(w: &[u8; WIDTH]) -> Masks {
    masks_bytes(w)
}

/// [`masks`] a byte at a time: the path without SSE2, and the tests' reference.
#[cfg(any(not(target_arch = "x86_64"), test))]
fn masks_bytes(w: &[u8; WIDTH]) -> Masks {
    let mut m = Masks::default();
    for (k, &b) in w.iter().enumerate() {
        let bit = 1u64 << k;
        let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
        set(&mut m.lower, b.is_ascii_lowercase());
        set(&mut m.upper, b.is_ascii_uppercase());
        set(&mut m.digit, b.is_ascii_digit());
        set(&mut m.nl, b == b'\n' || b == b'\r');
        set(&mut m.lf, b == b'\n');
        set(&mut m.ws, matches!(b, b' ' | b'\t' | 0x0b | 0x0c));
        set(&mut m.space, b == b' ');
        set(&mut m.tab, b == b'\t');
        set(&mut m.apos, b == b'\'');
        set(&mut m.slash, b == b'/');
        set(&mut m.high, b >= 0x80);
    }
    m
}

/// The piece `start..end` of `text` with the features the byte scanner gives it (script,
/// characters, case): for window pieces with non-ASCII letters. Kept out of line: the ASCII
/// pieces' path stays small.
#[cold]
#[inline(never)]
fn scanned(text: &[u8], start: usize, end: usize, dialect: Dialect) -> Piece {
    let p = found_at(text, start, dialect).piece();
    debug_assert_eq!((p.start, p.end), (start, end));
    p
}

/// Takes the two-byte letters with case (accented Latin, Greek, Cyrillic, Armenian, ...) at
/// the window's first non-ASCII bytes, up to the first non-ASCII byte that is not one, into the
/// letter masks: both bytes of a letter into `upper` or `lower` and `wide`, out of `high`. The
/// case is the byte scanner's (`scan::cased_pair`; windows and the byte scanner must agree,
/// and the byte scanner is the reference), and the window's rules then treat the letter as an
/// ASCII letter of that case, as the byte scanner's rules do. So windows run on through
/// accented text; the pieces that hold such a letter get their features from the byte scanner
/// ([`Window::piece`]). Only the first `avail` bytes (at most [`WIDTH`]) are text.
///
/// The byte scanner's categories approximate Unicode's where it matters for token counts; they
/// differ from the tokenizers' regexes in a few places, which windows now share: titlecase
/// letters (`ǅ`) count as lower case, and so does all of U+0180-U+02AF, upper-case letters of
/// Latin Extended-B included; `ϒ` and `ϴ` count as lower case and `϶` as a letter; `'ſ` is no
/// contraction.
fn take_cased(w: &[u8; WIDTH], avail: usize, m: &mut Masks) {
    while m.high != 0 {
        let p = m.high.trailing_zeros() as usize;
        let Some(upper) = w[..avail]
            .get(p + 1)
            .and_then(|&cont| cased_pair(w[p], cont))
        else {
            return;
        };
        let both = 3u64 << p;
        if upper {
            m.upper |= both;
        } else {
            m.lower |= both;
        }
        m.wide |= both;
        m.high &= !both;
    }
}

/// Bits `0..n` (`n <= 64`).
#[inline]
fn below(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Bits `s..e` (`s <= e <= 64`).
#[inline]
fn span(s: u32, e: u32) -> u64 {
    below(e) & !below(s)
}

/// Case shape of the ASCII letters `letters` (bits) of a window.
#[inline]
fn shape(m: &Masks, letters: u64) -> u8 {
    let upper = (m.upper & letters).count_ones();
    let lower = (m.lower & letters).count_ones();
    if upper == 0 {
        case::LOWER
    } else if lower == 0 {
        case::UPPER
    } else if upper == 1 && m.upper & letters & letters.wrapping_neg() != 0 {
        case::CAPITALIZED
    } else {
        case::MIXED
    }
}

/// A classified window and its piece starts.
pub struct Window<'a> {
    /// The window's bytes (past the end of the text: `0x80`).
    w: &'a [u8; WIDTH],
    /// The whole text (for the byte scanner's features of pieces with non-ASCII letters).
    text: &'a [u8],
    m: Masks,
    letter: u64,
    /// Punctuation, without the `/` that o200k appends to a punctuation piece.
    punct: u64,
    /// Newlines (o200k: also `/`) that a punctuation piece swallows.
    tail: u64,
}

impl Window<'_> {
    /// Whether the piece starting at bit `start` is a digit run.
    #[inline]
    pub(crate) fn digits_at(&self, start: u32) -> bool {
        self.m.digit & (1u64 << start) != 0
    }

    /// The window's digits, one bit per byte.
    #[inline]
    pub(crate) fn digit_bits(&self) -> u64 {
        self.m.digit
    }

    /// The piece `s..e` of the window at text offset `base`.
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    pub(crate) fn piece(&self, base: usize, start: u32, end: u32, dialect: Dialect) -> Piece {
        let (masks, bytes) = (&self.m, self.w);
        let (s, e) = (start, end);
        let first = bytes[s as usize];
        let next = 1u64 << (s + 1).min(63);
        let long = e > s + 1;
        let make = |kind, prefix, class, shape, chars: u32| Piece {
            start: base + s as usize,
            end: base + e as usize,
            kind,
            prefix,
            class,
            shape,
            chars,
        };
        let bit = 1u64 << s;
        if masks.wide != 0 && masks.wide & span(s, e) != 0 {
            return scanned(self.text, base + s as usize, base + e as usize, dialect);
        }
        if self.letter & bit != 0 {
            return self.word(base, s, e, prefix::NONE);
        }
        if masks.digit & bit != 0 {
            return make(Kind::Digits, 0, 0, 0, e - s);
        }
        if dialect == Dialect::Cl100k
            && masks.apos & bit != 0
            && contraction_len(bytes, s as usize) > 0
        {
            return make(Kind::Contraction, 0, 0, 0, e - s);
        }
        if long && self.letter & next != 0 {
            let lead = if first == b' ' {
                prefix::SPACE
            } else {
                prefix::ASCII
            };
            return self.word(base, s, e, lead);
        }
        let all = span(s, e);
        if self.punct & bit != 0 || (long && first == b' ' && self.punct & next != 0) {
            let from = s + u32::from(first == b' ');
            let run_end = (!self.punct & !below(from)).trailing_zeros().min(e);
            let run = &bytes[from as usize..run_end as usize];
            let same = run.iter().all(|&b| b == run[0]);
            let chars = e - from;
            let flags = u8::from(self.tail & all != 0) | (u8::from(same && chars > 1) << 1);
            return make(
                Kind::Punct,
                u8::from(first == b' '),
                content::ASCII,
                flags,
                chars,
            );
        }
        let (kind, class) = if masks.nl & all != 0 {
            let class = if all & !masks.lf == 0 {
                0
            } else if all & masks.ws == 0 {
                1
            } else {
                2
            };
            (Kind::Newline, class)
        } else {
            let class = if all & !masks.space == 0 {
                0
            } else if all & !(masks.space | masks.tab) == 0 {
                1
            } else {
                2
            };
            (Kind::Space, class)
        };
        make(kind, 0, class, 0, e - s)
    }

    /// The word piece `s..e` (its letters start after the prefix character, if any).
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn word(&self, base: usize, s: u32, e: u32, prefix: u8) -> Piece {
        let from = s + u32::from(prefix != prefix::NONE);
        // o200k appends a contraction: the case shape counts the letters before it.
        let letters =
            span(from, e) & self.letter & below((self.m.apos & span(from, e)).trailing_zeros());
        Piece {
            start: base + s as usize,
            end: base + e as usize,
            kind: Kind::Word,
            prefix,
            class: 0,
            shape: shape(&self.m, letters),
            chars: e - from,
        }
    }
}

/// Each bit of `seeds` (a subset of `runs`) and every bit of `runs` above it in the same run
/// of consecutive bits. Adding the seeds to the runs carries through each run from its lowest
/// seed to its end, which flips those bits (the bit past the run is not in `runs`); a higher
/// seed of the same run lands on a bit the carry cleared and flips back, so the seeds are
/// put back by hand.
#[allow(clippy::inline_always)] // hot path
#[inline(always)]
fn fill_up(runs: u64, seeds: u64) -> u64 {
    debug_assert_eq!(seeds & !runs, 0);
    ((runs.wrapping_add(seeds) ^ runs) | seeds) & runs
}

/// The piece starts of a classified window that begins at a piece start (bit 0), up to the
/// last position where they are certain.
#[allow(clippy::inline_always)] // hot path; keeps the window in registers (no struct copies)
#[inline(always)]
fn starts(win: &mut Window<'_>, t: &[u8], base: usize, dialect: Dialect) -> u64 {
    let m = win.m;
    let hard = m.high;
    let lim = hard.trailing_zeros();
    let valid = below(lim);
    let sh = |x: u64| x << 1;
    let letter = (m.lower | m.upper) & valid;
    let wsn = (m.ws | m.nl) & valid;
    let raw_punct = valid & !(letter | m.digit | wsn);
    // Newlines right after a punctuation run belong to its piece; o200k goes on through
    // newlines and `/`. Fill each run of such characters upward from its first newline that
    // follows punctuation (the `/` before it are the punctuation run's own).
    let chain = if dialect == Dialect::O200k {
        m.nl | m.slash
    } else {
        m.nl
    } & valid;
    let tail = fill_up(chain, m.nl & sh(raw_punct) & valid);
    let punct = raw_punct & !tail;
    let p_start = punct & !sh(punct) & !sh(m.space);
    let mut s = 1u64;
    // Letter runs, or their prefix character.
    s |= letter & !sh(letter) & !sh(m.ws) & !sh(p_start);
    if dialect == Dialect::O200k {
        s |= m.upper & sh(m.lower);
    }
    s |= m.digit & !sh(m.digit) & valid;
    s |= p_start;
    // Whitespace: run starts, the part after the last newline of a run, its last character.
    let wsn = wsn & !tail;
    s |= wsn & !sh(wsn);
    let ws = m.ws & valid;
    let mut after_nl = ws & sh(m.nl & wsn);
    let ends = ws.wrapping_add(after_nl) & !ws;
    let mut inner = ends & m.nl;
    while inner != 0 {
        // This whitespace is followed by another newline: inside a newline piece.
        let b = inner.trailing_zeros();
        if let Some(start) = (after_nl & below(b)).checked_ilog2() {
            after_nl &= !(1u64 << start);
        }
        inner &= inner - 1;
    }
    s |= after_nl;
    s |= ws & !((ws | m.nl) >> 1);
    // Certain up to the start of the last run of one class before `lim`.
    let group = [letter, m.digit & valid, (m.ws | m.nl) & valid, raw_punct]
        .into_iter()
        .find(|g| lim > 0 && g & (1u64 << (lim - 1)) != 0)
        .unwrap_or(0);
    let outside = !group & valid;
    let certain = if outside == 0 {
        0
    } else {
        64 - outside.leading_zeros()
    };
    // Contractions need the two characters after the apostrophe: read from the text itself.
    let mut apos = m.apos & valid & below(certain + 1);
    let mut attached_end = 0;
    while apos != 0 {
        let q = apos.trailing_zeros();
        apos &= apos - 1;
        let len = contraction_len(t, base + q as usize) as u32;
        if len == 0 {
            continue;
        }
        let after = if q + len < 64 { 1u64 << (q + len) } else { 0 };
        match dialect {
            Dialect::Cl100k if p_start & (1u64 << q) != 0 => s |= after,
            Dialect::O200k if q > attached_end && letter & (1u64 << (q - 1)) != 0 => {
                s = (s & !span(q, q + len)) | after;
                attached_end = q + len;
            }
            _ => {}
        }
    }
    win.letter = letter;
    win.punct = punct;
    win.tail = tail;
    s & below(certain + 1)
}

/// The pieces one window settles: they start at the set bits of `starts` (bit 0, the window's
/// first byte, included) and each ends where the next starts; the last set bit starts the
/// first piece the window leaves to the next.
pub struct Settled<'a> {
    /// The classified window (for the features of its pieces).
    pub win: Window<'a>,
    /// Text offset of the window's first byte.
    pub at: usize,
    /// Piece starts, relative to `at`: at least two bits.
    pub starts: u64,
}

impl Settled<'_> {
    /// Where the first piece this window leaves starts, relative to `at`.
    #[inline]
    #[must_use]
    pub fn end(&self) -> u32 {
        self.starts.checked_ilog2().unwrap_or(0)
    }

    /// The settled pieces as `(start, end)` bits, in order.
    #[inline]
    pub fn pieces(&self) -> impl Iterator<Item = (u32, u32)> {
        let mut rest = self.starts & !1;
        let mut start = 0;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let end = rest.trailing_zeros();
            rest &= rest - 1;
            Some((std::mem::replace(&mut start, end), end))
        })
    }

    /// The piece `start..end` (bits) as the scanner reports it.
    #[inline]
    #[must_use]
    pub fn found(&self, start: u32, end: u32, dialect: Dialect) -> Found<'_> {
        Found::in_window(&self.win, self.at, start, end, dialect)
    }
}

/// A window classified into its character-class masks, before any dialect's rules.
pub struct Classified<'a> {
    w: &'a [u8; WIDTH],
    text: &'a [u8],
    m: Masks,
    at: usize,
}

/// Classifies the window of `text` that starts at `at` (a piece start); `None` when fewer
/// than `MIN_TAKEN` bytes it can take (ASCII, two-byte letters with case) lead it. `pad` holds
/// the window when the text ends inside it.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub fn classify<'a>(text: &'a [u8], at: usize, pad: &'a mut [u8; WIDTH]) -> Option<Classified<'a>> {
    let full = text
        .get(at..at + WIDTH)
        .and_then(|s| <&[u8; WIDTH]>::try_from(s).ok());
    let (bytes, avail): (&[u8; WIDTH], usize) = if let Some(full) = full {
        (full, WIDTH)
    } else {
        let rest = text.get(at..).unwrap_or_default();
        pad.fill(0x80);
        pad[..rest.len()].copy_from_slice(rest);
        (pad, rest.len())
    };
    let first_high = high_bytes(bytes).trailing_zeros();
    // Only a two-byte lead can be taken as a letter (CJK and other text stop here).
    if first_high < MIN_TAKEN && !(0xC2..=0xDF).contains(&bytes[first_high as usize]) {
        return None;
    }
    let mut m = masks(bytes);
    if first_high < 64 {
        take_cased(bytes, avail, &mut m);
        if m.high.trailing_zeros() < MIN_TAKEN {
            return None;
        }
    }
    Some(Classified {
        w: bytes,
        text,
        m,
        at,
    })
}

impl<'a> Classified<'a> {
    /// The pieces the window settles by `dialect`'s rules; `None` when it settles none (one
    /// run of a class longer than the window).
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    #[must_use]
    pub fn settle(&self, text: &[u8], dialect: Dialect) -> Option<Settled<'a>> {
        let mut win = Window {
            w: self.w,
            text: self.text,
            m: self.m,
            letter: 0,
            punct: 0,
            tail: 0,
        };
        let starts = starts(&mut win, text, self.at, dialect);
        (starts & !1 != 0).then_some(Settled {
            win,
            at: self.at,
            starts,
        })
    }
}

/// [`classify`] and [`Classified::settle`]: the pieces the window of `text` at `at` settles
/// by `dialect`'s rules, `None` when it settles none (non-ASCII text ahead, or one run of a
/// class longer than the window).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub fn settle<'a>(
    text: &'a [u8],
    at: usize,
    dialect: Dialect,
    pad: &'a mut [u8; WIDTH],
) -> Option<Settled<'a>> {
    classify(text, at, pad)?.settle(text, dialect)
}

#[cfg(test)]
mod tests {
    use crate::scan::{scan, scan_bytes, Dialect, Piece};
    use crate::testing::XorShift;

    #[test]
    fn fill_up_fills_each_run_from_its_lowest_seed() {
        let mut rng = XorShift(0xF111_0500);
        for _ in 0..200_000 {
            // Runs of every density, seeds a sparse or dense part of them.
            let runs = rng.next() | rng.next() & rng.next();
            let seeds = runs & rng.next() & rng.next() & (rng.next() | rng.next());
            // Bit by bit: a bit of a run is filled when some seed at or below it starts an
            // unbroken stretch of the run up to it.
            let want = (0..64).fold(0u64, |acc, bit| {
                let filled = (0..=bit)
                    .rev()
                    .take_while(|&b| runs >> b & 1 == 1)
                    .any(|b| seeds >> b & 1 == 1);
                acc | u64::from(filled) << bit
            });
            assert_eq!(super::fill_up(runs, seeds), want, "{runs:#x} {seeds:#x}");
        }
    }

    #[test]
    fn every_path_classifies_each_byte_alike() {
        crate::testing::vector_paths_as_required();
        let mut rng = XorShift(0xB10C_5EED);
        for _ in 0..20_000 {
            let mut w = [0u8; super::WIDTH];
            // All 256 byte values, the ASCII classes' edges more often.
            let edges = b"`az{@AZ[/09:\x09\x0a\x0b\x0c\x0d\x0e\x1f '\x7f\x80\xff";
            for b in &mut w {
                *b = if rng.below(2) == 0 {
                    edges[rng.index(edges.len())]
                } else {
                    rng.below(256) as u8
                };
            }
            let want = super::masks_bytes(&w);
            assert_eq!(super::masks(&w), want, "{w:?}");
            #[cfg(target_arch = "x86_64")]
            assert_eq!(super::masks_sse2(&w), want, "{w:?}");
            #[cfg(target_arch = "x86_64")]
            if crate::avx2::available() {
                // SAFETY: the processor has the features.
                assert_eq!(unsafe { super::masks_avx2(&w) }, want, "{w:?}");
            }
        }
    }

    fn both(text: &[u8], d: Dialect) -> (Vec<Piece>, Vec<Piece>) {
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        scan(text, d, |p| fast.push(p));
        scan_bytes(text, d, |p| slow.push(p));
        (fast, slow)
    }

    fn assert_same(text: &[u8]) {
        for d in [Dialect::Cl100k, Dialect::O200k] {
            let (fast, slow) = both(text, d);
            if fast != slow {
                let k = fast.iter().zip(&slow).position(|(a, b)| a != b);
                panic!(
                    "{d:?} on {:?}: first difference at piece {k:?}: {:?} vs {:?}",
                    String::from_utf8_lossy(text),
                    k.and_then(|k| fast.get(k)),
                    k.and_then(|k| slow.get(k)),
                );
            }
        }
    }

    /// Random texts over the characters the rules treat differently, 1-300 bytes, with runs.
    #[test]
    fn same_pieces_as_the_byte_scanner_on_random_text() {
        const ATOMS: &[&str] = &[
            "a",
            "b",
            "s",
            "t",
            "l",
            "e",
            "r",
            "v",
            "m",
            "d",
            "A",
            "B",
            "S",
            "L",
            "E",
            "Z",
            "0",
            "7",
            " ",
            " ",
            "  ",
            "\t",
            "\n",
            "\r",
            "\r\n",
            "\x0b",
            "\x0c",
            ".",
            ",",
            "/",
            "//",
            "'",
            "'s",
            "'ll",
            "'RE",
            "'Ve",
            "\"",
            "(",
            ")",
            "{",
            "}",
            "-",
            "=",
            "_",
            "\x00",
            "é",
            "中",
            "😀",
            "\u{300}",
            // Two-byte letters with case, which windows take, and two-byte characters that
            // stop them: symbols, spaces, letters without case, marks.
            "É",
            "ü",
            "ß",
            "Ñ",
            "ı",
            "İ",
            "ſ",
            "ŉ",
            "ǅ",
            "Ω",
            "έ",
            "Я",
            "ж",
            "Ճ",
            "café",
            "Ärger",
            "ПРИВЕТ",
            "×",
            "÷",
            "\u{a0}",
            "\u{85}",
            "ª",
            "ʰ",
            "א",
            "\u{301}",
            "word",
            "Word",
            "WORD",
            "camelCase",
            "HTTPServer",
        ];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let len = 1 + (rng.next() % 300) as usize;
            let mut text = Vec::with_capacity(len + 8);
            while text.len() < len {
                let atom = ATOMS[(rng.next() % ATOMS.len() as u64) as usize].as_bytes();
                let repeat = if rng.next().is_multiple_of(8) {
                    1 + rng.next() % 70
                } else {
                    1
                };
                for _ in 0..repeat {
                    text.extend_from_slice(atom);
                }
            }
            assert_same(&text);
        }
    }

    #[test]
    fn same_pieces_on_edge_cases() {
        let cases: &[&str] = &[
            "Hello world",
            "a  b",
            "x\n\n  y",
            "x  \n",
            "x   ",
            "a 1",
            "\tfoo",
            "f(x);\n}",
            "a .foo",
            "a.b",
            "don't",
            "a//\nb",
            "}\n// comment\n/x",
            ";\n  \n x",
            "\n \n x",
            "a \t(",
            "it's's it'sx's we'rE 'llama '\t's",
            "fooBAR's HTTPServer aBCd",
            "1a a1 1.5 1,000,000",
            "L'été dernier, nous sommes allés à la plage. Ärger über Öl; ÆØÅ æøå",
            "aÉ Éa ÉÉa aÉÉ éÉ Éé l'Été ÇA'S ça's",
            "Διεθνής ΟΡΓΑΝΙΣΜΟΣ Москва МОСКВА москвА",
            "5×3÷2 ª º µ ǅungla ʰa a\u{301}b",
        ];
        for c in cases {
            assert_same(c.as_bytes());
            // Shifted across window boundaries.
            for pad in [1, 30, 55, 60, 62, 63, 64, 65] {
                let mut t = "x".repeat(pad);
                t.push(' ');
                t.push_str(c);
                t.push_str(&" end".repeat(20));
                assert_same(t.as_bytes());
            }
        }
    }

    #[test]
    fn long_runs_and_invalid_bytes() {
        for run in [b' ', b'a', b'=', b'\n', b'7', b'A'] {
            for n in [63, 64, 65, 130, 1000] {
                let mut t = vec![run; n];
                t.extend_from_slice(b" tail");
                assert_same(&t);
                t.insert(0, b'x');
                assert_same(&t);
            }
        }
        assert_same(b"abc\xff def \xe4\xbd ghi\x00 jkl");
    }

    #[test]
    fn two_byte_letters_at_window_edges_and_cut_ones() {
        // A two-byte letter across the window's end, a lead byte cut off by the text's end or
        // by another character, a continuation byte alone.
        for pad in 40..70 {
            let base = "x".repeat(pad);
            for tail in [
                &b" \xc3\xa9t\xc3\xa9 end of it"[..],
                b" caf\xc3",
                b" caf\xc3 and more text after it",
                b" caf\xc3\xc3\xa9 x",
                b" \xa9t\xc3\xa9 x",
                b" \xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1 and",
                b"\xc3\x97\xc3\x97 words words words words",
            ] {
                let mut t = base.clone().into_bytes();
                t.extend_from_slice(tail);
                assert_same(&t);
            }
        }
    }
}
