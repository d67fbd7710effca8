//! Text as Qwen's tokenizer reads it: in Unicode NFC.
//!
//! Qwen's tokenizer normalizes its input to NFC before it splits it: a letter and a combining
//! accent after it (`e` U+0301, the decomposed text macOS file names and some copy-paste
//! give) are one character to it, two to the other tokenizers. Estimated as given, decomposed
//! Vietnamese came out 2.3x its true qwen3 count. [`normalized`] gives the text qwen3 is
//! estimated from, or `None` when NFC leaves it as it is: one pass finds the spans NFC
//! changes (it skips ASCII and the characters below U+0300 a vector at a time, and decodes
//! other letters with a bit each of a table of the BMP), and only those are normalized.

use std::sync::OnceLock;

use unicode_normalization::char::{canonical_combining_class, compose, decompose_canonical};
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// The first byte of U+0300, the first character NFC may change or join to the one before:
/// every byte below it is ASCII, a continuation byte or the first of a character below it.
const FIRST_WATCHED_LEAD: u8 = 0xCC;

/// Bytes looked at together when skipping ASCII and the characters below U+0300.
const LANES: usize = 32;

/// What NFC does with a character: its combining class, its quick check, whether it takes
/// it apart.
#[derive(Debug, Clone, Copy)]
struct Traits {
    class: u8,
    quick: Quick,
    decomposes: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quick {
    Yes,
    Maybe,
    No,
}

impl Traits {
    fn of(c: char) -> Self {
        let quick = match is_nfc_quick(std::iter::once(c)) {
            IsNormalized::Yes => Quick::Yes,
            IsNormalized::Maybe => Quick::Maybe,
            IsNormalized::No => Quick::No,
        };
        let mut decomposes = false;
        decompose_canonical(c, |d| decomposes |= d != c);
        Self {
            class: canonical_combining_class(c),
            quick,
            decomposes,
        }
    }

    /// Whether NFC may change the character or join it to the one before.
    fn watched(self) -> bool {
        self.class != 0 || self.quick != Quick::Yes
    }

    fn packed(self) -> u16 {
        u16::from(self.class) | (self.quick as u16) << 8 | u16::from(self.decomposes) << 10
    }

    fn unpacked(bits: u16) -> Self {
        Self {
            class: (bits & 0xFF) as u8,
            quick: match bits >> 8 & 3 {
                0 => Quick::Yes,
                1 => Quick::Maybe,
                _ => Quick::No,
            },
            decomposes: bits >> 10 & 1 == 1,
        }
    }
}

/// The traits of every character of the BMP, packed, and a bit per character set where it
/// is watched ([`Traits::watched`]): built on first use by a text that reaches U+0300 (about
/// a millisecond), from the tables of `unicode-normalization`, whose lookups cost tens of
/// nanoseconds a character.
struct Tables {
    traits: Box<[u16]>,
    watched: Box<[u64]>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut traits = vec![0u16; 0x1_0000].into_boxed_slice();
        let mut watched = vec![0u64; 0x1_0000 / 64].into_boxed_slice();
        for cp in 0..0x1_0000u32 {
            if let Some(c) = char::from_u32(cp) {
                let t = Traits::of(c);
                traits[cp as usize] = t.packed();
                if t.watched() {
                    watched[cp as usize / 64] |= 1 << (cp % 64);
                }
            }
        }
        Tables { traits, watched }
    })
}

impl Tables {
    fn watched(&self, c: char) -> bool {
        let cp = c as usize;
        match self.watched.get(cp / 64) {
            Some(bits) => bits >> (cp % 64) & 1 == 1,
            None => Traits::of(c).watched(),
        }
    }

    fn traits(&self, c: char) -> Traits {
        match self.traits.get(c as usize) {
            Some(&bits) => Traits::unpacked(bits),
            None => Traits::of(c),
        }
    }
}

/// Where the run of bytes below [`FIRST_WATCHED_LEAD`] that starts at `from` ends.
fn skip_low(text: &[u8], mut from: usize) -> usize {
    while let Some(lanes) = text.get(from..from + LANES) {
        if lanes
            .iter()
            .fold(0u8, |any, &b| any | u8::from(b >= FIRST_WATCHED_LEAD))
            != 0
        {
            break;
        }
        from += LANES;
    }
    text[from..]
        .iter()
        .position(|&b| b >= FIRST_WATCHED_LEAD)
        .map_or(text.len(), |at| from + at)
}

/// The run of two- and three-byte characters NFC leaves alone that starts at `at` (Greek,
/// Cyrillic, Hebrew and Arabic letters, CJK, kana, Hangul, most Indic and South-East Asian
/// letters: a decode and a bit each): where its last character starts and where it ends, or
/// `None` when the character at `at` is not one of them.
#[inline]
fn skip_starters(text: &[u8], mut at: usize, tables: &Tables) -> Option<(usize, usize)> {
    let start = at;
    let mut last = at;
    loop {
        let cont = |i: usize| {
            text.get(at + i)
                .filter(|&&b| b & 0xC0 == 0x80)
                .map(|&b| usize::from(b & 0x3F))
        };
        let (cp, len) = match text.get(at) {
            Some(&lead @ 0xCC..=0xDF) => match cont(1) {
                Some(b1) => (usize::from(lead & 0x1F) << 6 | b1, 2),
                None => break,
            },
            Some(&lead @ 0xE0..=0xEF) => match (cont(1), cont(2)) {
                (Some(b1), Some(b2)) => (usize::from(lead & 0x0F) << 12 | b1 << 6 | b2, 3),
                _ => break,
            },
            _ => break,
        };
        if (len == 3 && cp < 0x800)
            || (0xD800..=0xDFFF).contains(&cp)
            || tables.watched[cp / 64] >> (cp % 64) & 1 == 1
        {
            break;
        }
        last = at;
        at += len;
    }
    (at > start).then_some((last, at))
}

/// The character starting at `at` and its length, if the bytes there are valid UTF-8.
#[inline]
fn char_at(text: &[u8], at: usize) -> Option<(char, usize)> {
    let lead = *text.get(at)?;
    let cont = |i: usize| {
        text.get(at + i)
            .filter(|&&b| b & 0xC0 == 0x80)
            .map(|&b| u32::from(b & 0x3F))
    };
    let (cp, len, least) = match lead {
        0x00..=0x7F => return Some((char::from(lead), 1)),
        0xC2..=0xDF => (u32::from(lead & 0x1F) << 6 | cont(1)?, 2, 0x80),
        0xE0..=0xEF => (
            u32::from(lead & 0x0F) << 12 | cont(1)? << 6 | cont(2)?,
            3,
            0x800,
        ),
        0xF0..=0xF4 => (
            u32::from(lead & 0x07) << 18 | cont(1)? << 12 | cont(2)? << 6 | cont(3)?,
            4,
            0x1_0000,
        ),
        _ => return None,
    };
    // (no overlong forms; `from_u32` refuses surrogates and what is past U+10FFFF)
    char::from_u32(cp).filter(|_| cp >= least).map(|c| (c, len))
}

/// The start of the character that ends at `end` (the last lead byte before it).
fn char_start_before(text: &[u8], end: usize) -> usize {
    let mut at = end - 1;
    while at > 0 && end - at < 4 && text[at] & 0xC0 == 0x80 {
        at -= 1;
    }
    at
}

/// Whether NFC changes `text` (invalid bytes are left alone and end what comes before them).
#[cfg(test)]
fn changes(text: &[u8]) -> bool {
    next_change(text, 0).is_some()
}

/// The first span of `text` from `from` on that NFC changes: from the last starter before
/// the first character it changes (or where its run of marks begins) to the next character
/// it leaves alone and nothing joins (NFC of the text is NFC of such spans, the rest as it
/// is).
fn next_change(text: &[u8], from: usize) -> Option<(usize, usize)> {
    let first = skip_low(text, from);
    if first == text.len() {
        return None; // ASCII and characters below U+0300: no tables to build (a millisecond)
    }
    let tables = tables();
    // Where the last starter (a character of combining class 0) begins, or where the run of
    // marks since the start or an invalid byte begins (then no starter); the class of the
    // character before this one.
    let (mut anchor, mut starter, mut last_class, mut at) = (from, false, 0u8, first);
    if first > from {
        anchor = char_start_before(text, first);
        starter = char_at(text, anchor).is_some();
    }
    while at < text.len() {
        if text[at] < FIRST_WATCHED_LEAD {
            let run_end = skip_low(text, at);
            anchor = char_start_before(text, run_end);
            starter = char_at(text, anchor).is_some();
            last_class = 0;
            at = run_end;
            if at == text.len() {
                break;
            }
        }
        if let Some((last, end)) = skip_starters(text, at, tables) {
            (anchor, starter, last_class) = (last, true, 0);
            at = end;
            continue;
        }
        let Some((c, len)) = char_at(text, at) else {
            (anchor, starter, last_class) = (at + 1, false, 0);
            at += 1;
            continue;
        };
        if !tables.watched(c) {
            (anchor, starter, last_class) = (at, true, 0);
            at += len;
            continue;
        }
        let t = tables.traits(c);
        let span = || (anchor, stable_after(text, at + len));
        let out_of_order = t.class != 0 && last_class > t.class;
        let starter_char = || char_at(text, anchor).filter(|_| starter).map(|(s, _)| s);
        let joins = t.quick == Quick::Maybe
            && (last_class == 0 || (t.class != 0 && last_class < t.class))
            && starter_char().is_some_and(|s| compose(s, c).is_some());
        if out_of_order || t.quick == Quick::No || joins {
            return Some(span());
        }
        // A mark after a letter NFC takes apart (`é` then a dot below): the marks may go in
        // another order and join another way. Its whole span decides.
        if t.class != 0 && starter_char().is_some_and(|s| tables.traits(s).decomposes) {
            let (start, end) = span();
            if !is_nfc(&text[start..end]) {
                return Some((start, end));
            }
            (anchor, starter, last_class) = (end, false, 0);
            at = end;
            continue;
        }
        if t.class == 0 {
            (anchor, starter) = (at, true);
        }
        last_class = t.class;
        at += len;
    }
    None
}

/// The first position from `at` on where a character NFC leaves alone and joins to nothing
/// before it starts (or an invalid byte, or the end of `text`).
fn stable_after(text: &[u8], mut at: usize) -> usize {
    let tables = tables();
    while let Some((c, len)) = char_at(text, at) {
        if !tables.watched(c) {
            break;
        }
        at += len;
    }
    at
}

/// Whether valid UTF-8 `text` is in NFC.
fn is_nfc(text: &[u8]) -> bool {
    std::str::from_utf8(text).is_ok_and(|s| s.nfc().eq(s.chars()))
}

/// `text` in NFC (its valid UTF-8 runs; invalid bytes kept as they are), or `None` when NFC
/// leaves it unchanged. Only the spans NFC changes are normalized, the rest is copied.
#[must_use]
#[inline(never)]
pub fn normalized(text: &[u8]) -> Option<Vec<u8>> {
    let (mut start, mut end) = next_change(text, 0)?;
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    loop {
        out.extend_from_slice(&text[copied..start]);
        for chunk in text[start..end].utf8_chunks() {
            let valid: String = chunk.valid().nfc().collect();
            out.extend_from_slice(valid.as_bytes());
            out.extend_from_slice(chunk.invalid());
        }
        copied = end;
        match next_change(text, end) {
            Some(span) => (start, end) = span,
            None => break,
        }
    }
    out.extend_from_slice(&text[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::XorShift;

    fn nfc_of(s: &str) -> String {
        s.nfc().collect()
    }

    #[test]
    fn decomposed_text_changes_composed_does_not() {
        for s in [
            "Tie\u{0302}\u{0301}ng Vie\u{0323}\u{0302}t",
            "cafe\u{0301}",
            "a\u{0323}\u{0302}", // the second mark joins past the first
            "\u{1100}\u{1161}",  // Hangul L + V
            "\u{AC00}\u{11A8}",  // Hangul LV + T
            "\u{0958}",          // excluded from composition: decomposed
            "\u{F900}",          // a CJK compatibility ideograph
            "x\u{0301}\u{0316}", // out of canonical order
            "\u{304B}\u{3099}",  // kana + voicing mark
            "abc \u{4E2D}\u{6587} e\u{0301} \u{0BC6}\u{0BBE}", // Tamil vowel parts
        ] {
            assert!(changes(s.as_bytes()), "{s:?}");
            assert_eq!(normalized(s.as_bytes()).unwrap(), nfc_of(s).into_bytes());
        }
        for s in [
            "",
            "plain ASCII text, code and {\"json\": [1, 2]}",
            "Tiếng Việt café",
            "中文文本，日本語のテキスト、한국어",
            "q\u{0301}",         // no precomposed q with acute: NFC keeps it
            "\u{0BBE} alone",    // a vowel sign after a space joins nothing
            "e\u{0334}\u{0301}", // the acute joins past the overlay mark (class 1 < 230)
        ] {
            assert_eq!(changes(s.as_bytes()), nfc_of(s) != s, "{s:?}");
            if nfc_of(s) == s {
                assert_eq!(normalized(s.as_bytes()), None);
            }
        }
    }

    #[test]
    fn invalid_bytes_are_kept() {
        let text = b"e\xCC\x81 \xFF e\xCC\x81\xC3";
        let out = normalized(text).unwrap();
        assert_eq!(out, b"\xC3\xA9 \xFF \xC3\xA9\xC3".to_vec());
        assert!(!changes(b"\xFF\xCC\x81")); // a mark after an invalid byte joins nothing
    }

    #[test]
    fn agrees_with_a_full_normalization_on_random_text() {
        let alphabet: Vec<char> = "aeiouAEOnNcCsSzZ \u{0300}\u{0301}\u{0302}\u{0303}\u{0308}\u{0323}\u{0327}\u{0316}\u{0334}\u{1100}\u{1161}\u{11A8}\u{AC00}\u{304B}\u{3099}\u{0B95}\u{0BC6}\u{0BBE}\u{0958}\u{4E2D}\u{00E9}\u{212B}\u{05D0}\u{05B8}\u{0E01}\u{0E38}\u{0E48}\u{0915}\u{093C}\u{1EB9}\u{0344}\u{0F73}\u{1E9B}\u{0F71}\u{0F72}"
            .chars()
            .collect();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..200_000 {
            let len = rng.index(24) + 1;
            let s: String = (0..len)
                .map(|_| alphabet[rng.index(alphabet.len())])
                .collect();
            let expected = nfc_of(&s) != s;
            assert_eq!(changes(s.as_bytes()), expected, "{s:?}");
            let whole = normalized(s.as_bytes()).unwrap_or_else(|| s.as_bytes().to_vec());
            assert_eq!(whole, nfc_of(&s).into_bytes(), "{s:?}");
        }
    }

    #[test]
    fn agrees_with_a_full_normalization_across_blocks() {
        let blocks = [
            (0x41, 0x7A),
            (0xC0, 0x24F),
            (0x300, 0x36F),
            (0x591, 0x5C7),
            (0x900, 0xDFF),
            (0xE30, 0xE4E),
            (0xF40, 0xFBC),
            (0x1100, 0x11FF),
            (0x1E00, 0x1FFF),
            (0x3040, 0x30FF),
            (0xAC00, 0xAC40),
            (0xF900, 0xF90F),
            (0x1D15E, 0x1D16D),
            (0x2F800, 0x2F80F),
        ];
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        for _ in 0..100_000 {
            let len = rng.index(16) + 1;
            let s: String = (0..len)
                .filter_map(|_| {
                    let (lo, hi) = blocks[rng.index(blocks.len())];
                    char::from_u32(lo + rng.below(u64::from(hi - lo + 1)) as u32)
                })
                .collect();
            let whole = normalized(s.as_bytes()).unwrap_or_else(|| s.as_bytes().to_vec());
            assert_eq!(whole, nfc_of(&s).into_bytes(), "{s:?}");
            assert_eq!(changes(s.as_bytes()), nfc_of(&s) != s, "{s:?}");
        }
    }
}
