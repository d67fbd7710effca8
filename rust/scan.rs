//! One-pass pre-tokenization scanner.
//!
//! Emulates the regex pre-tokenizers of the BPE encodings we estimate (cl100k/llama3/qwen3 and
//! o200k) with a byte-class scan over UTF-8: an ASCII lookup table on the fast path, a compact
//! code-point range classification for everything else, no regex and no vocabulary. Each piece is
//! reported with small-integer features (kind, prefix, script or content class, case shape, length)
//! that the estimator turns into a table index. Invalid UTF-8 bytes become one-byte pieces of kind
//! [`Kind::Invalid`]; nothing here can panic on any input.
//!
//! The rules, per position (first that applies), mirror the alternatives of the patterns:
//! cl100k `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|`
//! `\s*[\r\n]+|\s+(?!\S)|\s+`, and o200k, which splits letter runs at lower→upper case changes,
//! counts combining marks as letters, attaches contractions to the word and lets a punctuation run
//! swallow trailing `/` as well as newlines. Digit runs are reported whole; the caller splits them
//! into groups (3 for cl100k/o200k/llama3, 1 for qwen3).

use crate::blocks;

/// Which pre-tokenizer's rules to emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `cl100k_base`, also llama3 and qwen3 (they differ only in digit grouping).
    Cl100k,
    /// `o200k_base`.
    O200k,
}

/// What a piece is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A letter run, possibly with one leading non-letter character (`prefix`).
    Word = 0,
    /// A whole run of `\p{N}` characters (split into groups by the caller).
    Digits = 1,
    /// A run of punctuation/symbols, maybe with a leading space and trailing newlines.
    Punct = 2,
    /// Whitespace without a newline.
    Space = 3,
    /// Whitespace ending in a newline.
    Newline = 4,
    /// cl100k's stand-alone `'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`.
    Contraction = 5,
    /// One byte that is not valid UTF-8.
    Invalid = 6,
}

/// Script classes of letters (the `class` of a [`Kind::Word`] piece).
pub mod script {
    /// ASCII letters.
    pub const ASCII: u8 = 0;
    /// Non-ASCII Latin letters (accented, extended, IPA, fullwidth).
    pub const LATIN_EXT: u8 = 1;
    /// Cyrillic.
    pub const CYRILLIC: u8 = 2;
    /// Greek and Coptic.
    pub const GREEK: u8 = 3;
    /// Arabic, Syriac, Thaana and related right-to-left scripts (Hebrew excepted).
    pub const ARABIC: u8 = 4;
    /// Hebrew.
    pub const HEBREW: u8 = 5;
    /// Indic scripts other than Devanagari (Bengali … Sinhala, extensions).
    pub const INDIC: u8 = 6;
    /// Thai and Lao.
    pub const SE_ASIAN: u8 = 7;
    /// Han ideographs and Bopomofo.
    pub const HAN: u8 = 8;
    /// Hiragana and Katakana.
    pub const KANA: u8 = 9;
    /// Hangul.
    pub const HANGUL: u8 = 10;
    /// Every other script.
    pub const OTHER: u8 = 11;
    /// Devanagari (Hindi, Marathi, Nepali, …): vocabularies cover it much better than other
    /// Indic scripts.
    pub const DEVANAGARI: u8 = 12;
    /// Tibetan. It, Myanmar and Khmer each have a class of their own: costed as Thai, Khmer
    /// came out 9-13% over in cl100k and llama3, Tibetan 12% over in o200k.
    pub const TIBETAN: u8 = 13;
    /// Myanmar.
    pub const MYANMAR: u8 = 14;
    /// Khmer.
    pub const KHMER: u8 = 15;
    /// Number of script classes (at most 16: the table `BMP` packs a class in four bits).
    pub const COUNT: u8 = 16;
}

/// Content classes of a [`Kind::Punct`] piece, the widest character wins.
pub mod content {
    /// ASCII only.
    pub const ASCII: u8 = 0;
    /// Contains a 2-byte character (Latin-1 punctuation, …).
    pub const TWO_BYTE: u8 = 1;
    /// Contains a 3-byte character (general/CJK punctuation, BMP symbols).
    pub const THREE_BYTE: u8 = 2;
    /// Contains a combining mark (cl100k splits words at marks).
    pub const MARK: u8 = 3;
    /// Contains a 4-byte character (emoji, supplementary symbols).
    pub const FOUR_BYTE: u8 = 4;
    /// Number of content classes.
    pub const COUNT: u8 = 5;
}

/// Case shapes of a [`Kind::Word`] piece.
pub mod case {
    /// Lower case, or a script without case.
    pub const LOWER: u8 = 0;
    /// One upper-case letter followed by lower case.
    pub const CAPITALIZED: u8 = 1;
    /// Upper case only.
    pub const UPPER: u8 = 2;
    /// Anything else (camelCase, …).
    pub const MIXED: u8 = 3;
    /// Number of case shapes.
    pub const COUNT: u8 = 4;
}

/// Kinds of leading character of a [`Kind::Word`] piece.
pub mod prefix {
    /// The piece starts with a letter.
    pub const NONE: u8 = 0;
    /// A literal space.
    pub const SPACE: u8 = 1;
    /// Another ASCII character (punctuation, tab).
    pub const ASCII: u8 = 2;
    /// A non-ASCII character (symbol, mark, other whitespace).
    pub const NON_ASCII: u8 = 3;
    /// Number of prefix kinds.
    pub const COUNT: u8 = 4;
}

/// One pre-tokenization piece: a byte range of the input and its features.
///
/// `class` and `shape` mean different things per kind:
/// - `Word`: `class` is a [`script`] class, `shape` a [`case`] shape, `prefix` a [`prefix`] kind,
///   `chars` counts the letters (and an attached contraction), not the prefix.
/// - `Digits`: `class` is 0 for ASCII digits only, 1 otherwise; `chars` counts the digits.
/// - `Punct`: `class` is a [`content`] class; `shape` bit 0: trailing newline (or `/`) run,
///   bit 1: all punctuation characters identical; `prefix` 1 if it starts with a space;
///   `chars` counts everything but the leading space.
/// - `Space`: `class` 0 spaces only, 1 contains a tab, 2 other whitespace.
/// - `Newline`: `class` 0 `\n` only, 1 contains `\r`, 2 contains other whitespace.
/// - `Contraction`, `Invalid`: no features beyond `chars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Start byte offset.
    pub start: usize,
    /// End byte offset (exclusive); always greater than `start`.
    pub end: usize,
    /// What the piece is.
    pub kind: Kind,
    /// Leading-character kind (see the type docs).
    pub prefix: u8,
    /// Script or content class (see the type docs).
    pub class: u8,
    /// Case shape or flags (see the type docs).
    pub shape: u8,
    /// Length in characters (see the type docs); saturates at `u32::MAX` (a piece of 4 GiB:
    /// the estimate recounts a digit run that long from its bytes).
    pub chars: u32,
}

/// Character categories, as the pre-tokenizer patterns see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Cat {
    Lower = 0,
    Upper = 1,
    /// Letters without case (`Lo`, `Lm`): members of both o200k case classes.
    Caseless = 2,
    /// Combining marks: letters for o200k, punctuation for cl100k.
    Mark = 3,
    Digit = 4,
    /// Whitespace other than `\r` and `\n`.
    Space = 5,
    Newline = 6,
    Punct = 7,
    Invalid = 8,
    End = 9,
}

/// A set of categories, one bit per [`Cat`].
const fn cats(list: &[Cat]) -> u16 {
    let mut set = 0;
    let mut k = 0;
    while k < list.len() {
        set |= 1 << list[k] as u16;
        k += 1;
    }
    set
}

/// cl100k's letters (`\p{L}`).
const CL100K_LETTERS: u16 = cats(&[Cat::Lower, Cat::Upper, Cat::Caseless]);
/// o200k's first case class of a word, `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
const O200K_UPPER_PART: u16 = cats(&[Cat::Upper, Cat::Caseless, Cat::Mark]);
/// o200k's second case class of a word, `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
const O200K_LOWER_PART: u16 = cats(&[Cat::Lower, Cat::Caseless, Cat::Mark]);

/// A decoded character: category, script (letters/marks), byte length.
#[derive(Debug, Clone, Copy)]
struct Ch {
    cat: Cat,
    script: u8,
    len: u8,
}

const END: Ch = Ch {
    cat: Cat::End,
    script: 0,
    len: 0,
};

const fn ascii_ch(b: u8) -> Ch {
    let cat = match b {
        b'a'..=b'z' => Cat::Lower,
        b'A'..=b'Z' => Cat::Upper,
        b'0'..=b'9' => Cat::Digit,
        b'\n' | b'\r' => Cat::Newline,
        b' ' | b'\t' | 0x0b | 0x0c => Cat::Space,
        _ => Cat::Punct,
    };
    Ch {
        cat,
        script: 0,
        len: 1,
    }
}

static ASCII: [Ch; 128] = {
    let mut t = [END; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = ascii_ch(b as u8);
        b += 1;
    }
    t
};

/// The character starting at byte `i` (or [`END`] past the end).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn char_at(t: &[u8], i: usize) -> Ch {
    match t.get(i) {
        None => END,
        Some(&b) if b < 0x80 => ASCII[b as usize],
        Some(&b) => decode(t, i, b),
    }
}

#[inline]
fn cont(t: &[u8], i: usize) -> Option<u32> {
    match t.get(i) {
        Some(&b) if b & 0xC0 == 0x80 => Some(u32::from(b & 0x3F)),
        _ => None,
    }
}

/// Decodes a non-ASCII character with full UTF-8 validation; invalid sequences yield one
/// `Invalid` byte.
#[inline(never)]
fn decode(t: &[u8], i: usize, b: u8) -> Ch {
    const INVALID: Ch = Ch {
        cat: Cat::Invalid,
        script: 0,
        len: 1,
    };
    let decoded = match b {
        0xC2..=0xDF => cont(t, i + 1).map(|c1| ((u32::from(b & 0x1F) << 6) | c1, 2)),
        0xE0..=0xEF => match (cont(t, i + 1), cont(t, i + 2)) {
            (Some(c1), Some(c2)) => {
                let cp = (u32::from(b & 0x0F) << 12) | (c1 << 6) | c2;
                // Overlong forms and surrogates are invalid.
                (cp >= 0x800 && !(0xD800..=0xDFFF).contains(&cp)).then_some((cp, 3))
            }
            _ => None,
        },
        0xF0..=0xF4 => match (cont(t, i + 1), cont(t, i + 2), cont(t, i + 3)) {
            (Some(c1), Some(c2), Some(c3)) => {
                let cp = (u32::from(b & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3;
                (0x1_0000..=0x10_FFFF).contains(&cp).then_some((cp, 4))
            }
            _ => None,
        },
        _ => None,
    };
    match decoded {
        Some((cp, len)) => {
            let (cat, script) = classify_fast(cp);
            Ch { cat, script, len }
        }
        None => INVALID,
    }
}

/// [`classify`] of every BMP code point, packed `cat << 4 | script`, computed at compile time
/// (built on first use it cost 2-3 ms, paid by the first non-ASCII text of every process).
static BMP: [u8; 0x1_0000] = {
    let mut table = [0u8; 0x1_0000];
    let mut c = 0;
    while c < table.len() {
        let (cat, script) = classify(c as u32);
        table[c] = ((cat as u8) << 4) | script;
        c += 1;
    }
    table
};

const CATS: [Cat; 10] = [
    Cat::Lower,
    Cat::Upper,
    Cat::Caseless,
    Cat::Mark,
    Cat::Digit,
    Cat::Space,
    Cat::Newline,
    Cat::Punct,
    Cat::Invalid,
    Cat::End,
];

/// [`classify`] through a 64 KB table for the BMP (where nearly all text lives).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn classify_fast(cp: u32) -> (Cat, u8) {
    match BMP.get(cp as usize) {
        Some(&v) => (CATS[usize::from(v >> 4).min(CATS.len() - 1)], v & 0x0F),
        None => classify(cp),
    }
}

/// Whether the two-byte character `lead, cont` is a letter with case, as the byte scanner
/// classifies it: `Some(true)` upper case, `Some(false)` lower case, `None` for anything else
/// (letters without case, marks, symbols, spaces, an invalid pair).
#[inline]
pub(crate) fn cased_pair(lead: u8, cont: u8) -> Option<bool> {
    if !(0xC2..=0xDF).contains(&lead) || cont & 0xC0 != 0x80 {
        return None;
    }
    let cp = (u32::from(lead & 0x1F) << 6) | u32::from(cont & 0x3F);
    match classify_fast(cp).0 {
        Cat::Upper => Some(true),
        Cat::Lower => Some(false),
        _ => None,
    }
}

/// Alternating case blocks: even code points upper case, odd lower case.
#[inline]
const fn alternating(cp: u32) -> Cat {
    if cp & 1 == 0 {
        Cat::Upper
    } else {
        Cat::Lower
    }
}

/// Indic blocks share one layout per 128 code points; classify by offset in the block.
const fn indic(cp: u32) -> Cat {
    match cp & 0x7F {
        0x00..=0x03 | 0x3A..=0x3C | 0x3E..=0x4F | 0x51..=0x57 | 0x62..=0x63 => Cat::Mark,
        0x64..=0x65 | 0x70 => Cat::Punct,
        0x66..=0x6F => Cat::Digit,
        _ => Cat::Caseless,
    }
}

/// A compact classification of non-ASCII code points by range: the general category as the
/// pre-tokenizer patterns see it (letter case, mark, number, whitespace, other) and a script class.
/// Approximate for rare blocks; exact for the common ones. Arms are ordered: exceptions first,
/// then the block they carve out of (hence the overlapping ranges).
#[allow(
    clippy::too_many_lines,
    clippy::match_same_arms,
    clippy::match_overlapping_arm
)]
const fn classify(cp: u32) -> (Cat, u8) {
    use script as s;
    use Cat::{Caseless, Digit, Lower, Mark, Punct, Space, Upper};
    match cp {
        0x85 | 0xA0 => (Space, 0),
        0x80..=0xA9 | 0xAB..=0xB1 | 0xB4 | 0xB6..=0xB8 | 0xBB | 0xBF | 0xD7 | 0xF7 => (Punct, 0),
        0xAA | 0xBA => (Caseless, s::LATIN_EXT),
        0xB5 => (Lower, s::LATIN_EXT),
        0xB2 | 0xB3 | 0xB9 | 0xBC..=0xBE => (Digit, 0),
        0xC0..=0xDE => (Upper, s::LATIN_EXT),
        0xDF..=0xFF => (Lower, s::LATIN_EXT),
        0x138 | 0x149 | 0x17F => (Lower, s::LATIN_EXT),
        0x139..=0x148 | 0x179..=0x17E => (if cp & 1 == 1 { Upper } else { Lower }, s::LATIN_EXT),
        0x178 => (Upper, s::LATIN_EXT),
        0x100..=0x17F => (alternating(cp), s::LATIN_EXT),
        0x180..=0x2AF => (Lower, s::LATIN_EXT),
        0x2B0..=0x2C1 | 0x2C6..=0x2D1 | 0x2E0..=0x2E4 | 0x2EC | 0x2EE => (Caseless, s::LATIN_EXT),
        0x2B0..=0x2FF => (Punct, 0),
        0x300..=0x36F => (Mark, s::LATIN_EXT),
        // Greek.
        0x375 | 0x37E | 0x384 | 0x385 | 0x387 => (Punct, 0),
        0x386 | 0x388..=0x38F | 0x391..=0x3AB => (Upper, s::GREEK),
        0x370..=0x3FF => (Lower, s::GREEK),
        // Cyrillic.
        0x400..=0x42F => (Upper, s::CYRILLIC),
        0x430..=0x45F => (Lower, s::CYRILLIC),
        0x482 => (Punct, 0),
        0x483..=0x489 => (Mark, s::CYRILLIC),
        0x4C0 => (Upper, s::CYRILLIC),
        0x4C1..=0x4CE => (if cp & 1 == 1 { Upper } else { Lower }, s::CYRILLIC),
        0x4CF => (Lower, s::CYRILLIC),
        0x460..=0x52F => (alternating(cp), s::CYRILLIC),
        // Armenian.
        0x531..=0x556 => (Upper, s::OTHER),
        0x559..=0x55F | 0x589..=0x58F => (Punct, 0),
        0x560..=0x588 => (Lower, s::OTHER),
        // Hebrew.
        0x591..=0x5BD | 0x5BF | 0x5C1 | 0x5C2 | 0x5C4 | 0x5C5 | 0x5C7 => (Mark, s::HEBREW),
        0x5D0..=0x5EA | 0x5EF..=0x5F2 => (Caseless, s::HEBREW),
        0x590..=0x5FF => (Punct, 0),
        // Arabic.
        0x610..=0x61A | 0x64B..=0x65F | 0x670 | 0x6D6..=0x6DC | 0x6DF..=0x6E4 | 0x6E7 | 0x6E8 => {
            (Mark, s::ARABIC)
        }
        0x6EA..=0x6ED => (Mark, s::ARABIC),
        0x660..=0x669 | 0x6F0..=0x6F9 => (Digit, 0),
        0x600..=0x60F | 0x61B..=0x61F | 0x66A..=0x66D | 0x6D4 | 0x6DD | 0x6DE | 0x6E9 => (Punct, 0),
        0x6FD | 0x6FE => (Punct, 0),
        0x620..=0x6FF => (Caseless, s::ARABIC),
        0x700..=0x8FF => (Caseless, s::ARABIC),
        // Indic blocks, Devanagari through Sinhala.
        0x900..=0x97F => (indic(cp), s::DEVANAGARI),
        0x980..=0xDFF => (indic(cp), s::INDIC),
        // Thai and Lao.
        0xE31 | 0xE34..=0xE3A | 0xE47..=0xE4E | 0xEB1 | 0xEB4..=0xEBC | 0xEC8..=0xECE => {
            (Mark, s::SE_ASIAN)
        }
        0xE50..=0xE59 | 0xED0..=0xED9 => (Digit, 0),
        0xE3F | 0xE4F | 0xE5A | 0xE5B => (Punct, 0),
        0xE00..=0xEFF => (Caseless, s::SE_ASIAN),
        // Tibetan, Myanmar.
        0xF00..=0xF17 => (Punct, 0),
        0xF20..=0xF33 | 0x1040..=0x1049 => (Digit, 0),
        0xF71..=0xF84 | 0xF8D..=0xFBC => (Mark, s::TIBETAN),
        0x102B..=0x103E | 0x1056..=0x1059 => (Mark, s::MYANMAR),
        0xF00..=0xFFF => (Caseless, s::TIBETAN),
        0x1000..=0x109F => (Caseless, s::MYANMAR),
        // Georgian.
        0x10A0..=0x10CF => (Upper, s::OTHER),
        0x10FB => (Punct, 0),
        0x10D0..=0x10FF => (Lower, s::OTHER),
        // Hangul Jamo.
        0x1100..=0x11FF => (Caseless, s::HANGUL),
        // Ethiopic, Cherokee, Canadian syllabics, Ogham, Runic, …
        0x1360..=0x1368 | 0x1400 | 0x166D | 0x166E | 0x169B | 0x169C | 0x16EB..=0x16ED => {
            (Punct, 0)
        }
        0x1369..=0x137C | 0x16EE..=0x16F0 => (Digit, 0),
        0x1680 => (Space, 0),
        0x13A0..=0x13F5 => (Upper, s::OTHER),
        0x1200..=0x177F => (Caseless, s::OTHER),
        // Khmer.
        0x17B4..=0x17D3 | 0x17DD => (Mark, s::KHMER),
        0x17D4..=0x17DA => (Punct, 0),
        0x17E0..=0x17E9 => (Digit, 0),
        0x1780..=0x17FF => (Caseless, s::KHMER),
        0x1800..=0x1AAF => (Caseless, s::OTHER),
        0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF => (Mark, s::LATIN_EXT),
        0x1B00..=0x1CFF => (Caseless, s::OTHER),
        0x1D00..=0x1DBF => (Lower, s::LATIN_EXT),
        // Latin Extended Additional (Vietnamese).
        0x1E96..=0x1E9D | 0x1E9F => (Lower, s::LATIN_EXT),
        0x1E00..=0x1EFF => (alternating(cp), s::LATIN_EXT),
        // Greek Extended.
        0x1F00..=0x1F6F => (if cp & 0x8 == 0 { Lower } else { Upper }, s::GREEK),
        0x1F70..=0x1FFF => (Lower, s::GREEK),
        // General punctuation and friends.
        0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000 => (Space, 0),
        0x2070 | 0x2074..=0x2079 | 0x2080..=0x2089 => (Digit, 0),
        0x2071 | 0x207F | 0x2090..=0x209C => (Caseless, s::LATIN_EXT),
        0x20D0..=0x20FF => (Mark, 0),
        0x2150..=0x2182 | 0x2185..=0x2189 | 0x2460..=0x249B | 0x24EA..=0x24FF => (Digit, 0),
        0x2776..=0x2793 => (Digit, 0),
        0x2C00..=0x2C7F => (Lower, s::LATIN_EXT),
        0x2C80..=0x2CFF => (Lower, s::GREEK),
        0x2D00..=0x2D2F => (Lower, s::OTHER),
        0x2D30..=0x2D7F => (Caseless, s::OTHER),
        0x2DE0..=0x2DFF => (Mark, s::CYRILLIC),
        0x2000..=0x2FFF => (Punct, 0),
        // CJK symbols, kana, Hangul compatibility, Bopomofo.
        0x3005 | 0x3006 | 0x3031..=0x3035 | 0x303B | 0x303C => (Caseless, s::HAN),
        0x3007 | 0x3021..=0x3029 | 0x3038..=0x303A => (Digit, 0),
        0x302A..=0x302F | 0x3099 | 0x309A => (Mark, s::KANA),
        0x3041..=0x3096 | 0x309D..=0x309F | 0x30A1..=0x30FA | 0x30FC..=0x30FF => {
            (Caseless, s::KANA)
        }
        0x31F0..=0x31FF => (Caseless, s::KANA),
        0x3105..=0x312F | 0x31A0..=0x31BF => (Caseless, s::HAN),
        0x3131..=0x318E => (Caseless, s::HANGUL),
        0x3192..=0x3195 | 0x3220..=0x3229 | 0x3248..=0x324F | 0x3251..=0x325F => (Digit, 0),
        0x3280..=0x3289 | 0x32B1..=0x32BF => (Digit, 0),
        0x3000..=0x33FF => (Punct, 0),
        0x3400..=0x4DBF | 0x4E00..=0x9FFF => (Caseless, s::HAN),
        0x4DC0..=0x4DFF => (Punct, 0),
        0xA000..=0xA63F => (Caseless, s::OTHER),
        0xA640..=0xA66D | 0xA680..=0xA69B => (alternating(cp), s::CYRILLIC),
        0xA66F..=0xA67D | 0xA69E | 0xA69F => (Mark, s::CYRILLIC),
        0xA640..=0xA6FF => (Caseless, s::OTHER),
        0xA700..=0xA721 => (Punct, 0),
        0xA722..=0xA7FF => (alternating(cp), s::LATIN_EXT),
        0xA800..=0xABFF => (Caseless, s::INDIC),
        0xAC00..=0xD7FF => (Caseless, s::HANGUL),
        0xE000..=0xF8FF => (Punct, 0),
        0xF900..=0xFAFF => (Caseless, s::HAN),
        0xFB00..=0xFB06 => (Lower, s::LATIN_EXT),
        0xFB13..=0xFB17 => (Lower, s::OTHER),
        0xFB1E => (Mark, s::HEBREW),
        0xFB29 => (Punct, 0),
        0xFB1D..=0xFB4F => (Caseless, s::HEBREW),
        0xFD3E | 0xFD3F | 0xFDFC..=0xFDFF => (Punct, 0),
        0xFB50..=0xFDFF | 0xFE70..=0xFEFC => (Caseless, s::ARABIC),
        0xFE00..=0xFE0F | 0xFE20..=0xFE2F => (Mark, 0),
        0xFF10..=0xFF19 => (Digit, 0),
        0xFF21..=0xFF3A => (Upper, s::LATIN_EXT),
        0xFF41..=0xFF5A => (Lower, s::LATIN_EXT),
        0xFF66..=0xFF9F => (Caseless, s::KANA),
        0xFFA0..=0xFFDC => (Caseless, s::HANGUL),
        0xFE10..=0xFFFF => (Punct, 0),
        // Supplementary planes.
        0x1D7CE..=0x1D7FF | 0x1F100..=0x1F10C => (Digit, 0),
        0x1D400..=0x1D7CD => (Lower, s::LATIN_EXT),
        0x1D000..=0x1D3FF | 0x1EC70..=0x1ECBF | 0x1F000..=0x1FFFF => (Punct, 0),
        0x1E900..=0x1E943 => (alternating(cp), s::OTHER),
        0x10000..=0x1FFFF => (Caseless, s::OTHER),
        0x20000..=0x3FFFF => (Caseless, s::HAN),
        0xE0100..=0xE01EF => (Mark, 0),
        _ => (Punct, 0),
    }
}

/// Letters that can start or continue a word in `dialect`.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn is_letter(cat: Cat, dialect: Dialect) -> bool {
    match cat {
        Cat::Lower | Cat::Upper | Cat::Caseless => true,
        Cat::Mark => dialect == Dialect::O200k,
        _ => false,
    }
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, controls.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn is_punct(cat: Cat) -> bool {
    matches!(cat, Cat::Punct | Cat::Mark)
}

/// Length of a contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, any case) at `i`, or 0.
#[inline]
pub(crate) fn contraction_len(t: &[u8], i: usize) -> usize {
    if t.get(i) != Some(&b'\'') {
        return 0;
    }
    let a = t.get(i + 1).map_or(0, u8::to_ascii_lowercase);
    let b = t.get(i + 2).map_or(0, u8::to_ascii_lowercase);
    match (a, b) {
        (b's' | b't' | b'm' | b'd', _) => 2,
        (b'r' | b'v', b'e') | (b'l', b'l') => 3,
        _ => 0,
    }
}

/// Case-shape accumulator for word pieces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Shape {
    chars: u32,
    upper: u32,
    lower: u32,
    first_upper: bool,
    script: u8,
}

impl Shape {
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn add(&mut self, c: Ch) {
        if self.chars == 0 {
            self.first_upper = c.cat == Cat::Upper;
        }
        self.chars += 1;
        self.upper += u32::from(c.cat == Cat::Upper);
        self.lower += u32::from(c.cat == Cat::Lower);
        if self.script == 0 {
            self.script = c.script;
        }
    }

    /// Consumes two- and three-byte characters whose category is in `accept` (bits by
    /// [`Cat`]) from `j`; returns the new position and where the last of them that is not
    /// upper case ends. The same as adding each through [`char_at`], without decoding each in a
    /// call: words of Cyrillic, Greek, Arabic, Hebrew, CJK, kana, Hangul, Thai, ...
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn letter_run(&mut self, t: &[u8], mut j: usize, accept: u16) -> (usize, Option<usize>) {
        let mut not_upper_end = None;
        loop {
            let (cp, len) = match t.get(j..) {
                Some(&[b0, b1, ..]) if (0xC2..=0xDF).contains(&b0) && b1 & 0xC0 == 0x80 => {
                    ((u32::from(b0 & 0x1F) << 6) | u32::from(b1 & 0x3F), 2)
                }
                Some(&[b0, b1, b2, ..])
                    if b0 & 0xF0 == 0xE0 && b1 & 0xC0 == 0x80 && b2 & 0xC0 == 0x80 =>
                {
                    let cp = (u32::from(b0 & 0x0F) << 12)
                        | (u32::from(b1 & 0x3F) << 6)
                        | u32::from(b2 & 0x3F);
                    // Overlong forms and surrogates are no characters (see `decode`).
                    if cp < 0x800 || (0xD800..=0xDFFF).contains(&cp) {
                        break;
                    }
                    (cp, 3)
                }
                _ => break,
            };
            let v = BMP[cp as usize];
            let cat = v >> 4;
            if accept & (1 << cat) == 0 {
                break;
            }
            let upper = cat == Cat::Upper as u8;
            if self.chars == 0 {
                self.first_upper = upper;
            }
            self.chars += 1;
            self.upper += u32::from(upper);
            self.lower += u32::from(cat == Cat::Lower as u8);
            if self.script == 0 {
                self.script = v & 0x0F;
            }
            j += len;
            if !upper {
                not_upper_end = Some(j);
            }
        }
        (j, not_upper_end)
    }

    /// Consumes ASCII letters accepted by `accept` from `j`; returns the new position.
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn ascii_run(&mut self, t: &[u8], mut j: usize, accept: fn(&u8) -> bool) -> usize {
        while let Some(b) = t.get(j) {
            if !accept(b) {
                break;
            }
            let upper = b.is_ascii_uppercase();
            if self.chars == 0 {
                self.first_upper = upper;
            }
            self.chars += 1;
            self.upper += u32::from(upper);
            self.lower += u32::from(!upper);
            j += 1;
        }
        j
    }

    fn case(self) -> u8 {
        if self.upper == 0 {
            case::LOWER
        } else if self.lower == 0 {
            case::UPPER
        } else if self.first_upper && self.upper == 1 {
            case::CAPITALIZED
        } else {
            case::MIXED
        }
    }
}

/// The scanner state: the input and the dialect.
struct Scanner<'a> {
    t: &'a [u8],
    dialect: Dialect,
}

impl Scanner<'_> {
    /// A word starting at `s` (letters begin at `s + plen`).
    #[inline]
    fn word(&self, start: usize, plen: usize, prefix: u8) -> Piece {
        let t = self.t;
        let mut j = start + plen;
        let mut sh = Shape::default();
        match self.dialect {
            Dialect::Cl100k => loop {
                j = sh.ascii_run(t, j, u8::is_ascii_alphabetic);
                j = sh.letter_run(t, j, CL100K_LETTERS).0;
                let c = char_at(t, j);
                if !is_letter(c.cat, Dialect::Cl100k) {
                    break;
                }
                sh.add(c);
                j += c.len as usize;
            },
            Dialect::O200k => {
                // `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` with backtracking,
                // else `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*`.
                let mut last_caseless_end = None;
                let mut c;
                loop {
                    j = sh.ascii_run(t, j, u8::is_ascii_uppercase);
                    let run;
                    (j, run) = sh.letter_run(t, j, O200K_UPPER_PART);
                    last_caseless_end = run.or(last_caseless_end);
                    c = char_at(t, j);
                    if !matches!(c.cat, Cat::Upper | Cat::Caseless | Cat::Mark) {
                        break;
                    }
                    sh.add(c);
                    j += c.len as usize;
                    if c.cat != Cat::Upper {
                        last_caseless_end = Some(j);
                    }
                }
                if c.cat == Cat::Lower {
                    loop {
                        j = sh.ascii_run(t, j, u8::is_ascii_lowercase);
                        j = sh.letter_run(t, j, O200K_LOWER_PART).0;
                        c = char_at(t, j);
                        if !matches!(c.cat, Cat::Lower | Cat::Caseless | Cat::Mark) {
                            break;
                        }
                        sh.add(c);
                        j += c.len as usize;
                    }
                } else if let Some(e) = last_caseless_end {
                    if e < j {
                        // Backtracked: the trailing upper-case letters start the next piece.
                        j = e;
                        sh = Shape::default();
                        let mut k = start + plen;
                        while k < j {
                            let c = char_at(t, k);
                            sh.add(c);
                            k += (c.len as usize).max(1);
                        }
                    }
                }
                let clen = contraction_len(t, j);
                j += clen;
                sh.chars += clen as u32;
            }
        }
        Piece {
            start,
            end: j.max(start + 1),
            kind: Kind::Word,
            prefix,
            class: sh.script,
            shape: sh.case(),
            chars: sh.chars,
        }
    }

    /// A whole run of digits at `s`.
    #[inline]
    fn digits(&self, s: usize) -> Piece {
        let mut j = s;
        let mut ascii = true;
        while self.t.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        let mut chars = u32::try_from(j - s).unwrap_or(u32::MAX);
        loop {
            let c = char_at(self.t, j);
            if c.cat != Cat::Digit {
                break;
            }
            ascii &= c.len == 1;
            chars = chars.saturating_add(1);
            j += c.len as usize;
        }
        Piece {
            start: s,
            end: j.max(s + 1),
            kind: Kind::Digits,
            prefix: 0,
            class: u8::from(!ascii),
            shape: 0,
            chars,
        }
    }

    /// ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`) at `s`; `space` if it starts with a space.
    #[inline]
    fn punct(&self, s: usize, space: bool) -> Piece {
        let t = self.t;
        let first = s + usize::from(space);
        let mut j = first;
        let mut chars = 0;
        let mut class = content::ASCII;
        let mut first_len = 0;
        let mut same = true;
        loop {
            let c = char_at(t, j);
            if !is_punct(c.cat) {
                break;
            }
            let len = c.len as usize;
            if chars == 0 {
                first_len = len;
            } else if same {
                same = len == first_len && t.get(j..j + len) == t.get(first..first + len);
            }
            let cc = if c.cat == Cat::Mark {
                content::MARK
            } else {
                match c.len {
                    1 => content::ASCII,
                    2 => content::TWO_BYTE,
                    3 => content::THREE_BYTE,
                    _ => content::FOUR_BYTE,
                }
            };
            class = class.max(cc);
            chars += 1;
            j += len;
        }
        let mut tail = false;
        while let Some(&b) = t.get(j) {
            let ok = b == b'\n' || b == b'\r' || (b == b'/' && self.dialect == Dialect::O200k);
            if !ok {
                break;
            }
            tail = true;
            chars += 1;
            j += 1;
        }
        Piece {
            start: s,
            end: j.max(s + 1),
            kind: Kind::Punct,
            prefix: u8::from(space),
            class,
            shape: u8::from(tail) | (u8::from(same && chars > 1) << 1),
            chars,
        }
    }

    /// Whitespace at `s`: through the last newline of the run, or the run minus its last
    /// character when a non-space follows, or the whole run at the end of the text.
    #[inline]
    fn whitespace(&self, s: usize) -> Piece {
        let t = self.t;
        let mut j = s;
        let mut chars = 0u32;
        let mut last_start = s;
        let mut nl: Option<(usize, u32)> = None;
        loop {
            let c = char_at(t, j);
            if !matches!(c.cat, Cat::Space | Cat::Newline) {
                break;
            }
            last_start = j;
            chars += 1;
            j += c.len as usize;
            if c.cat == Cat::Newline {
                nl = Some((j, chars));
            }
        }
        let (end, chars, kind) = if let Some((e, n)) = nl {
            (e, n, Kind::Newline)
        } else if j >= t.len() || chars <= 1 {
            (j, chars, Kind::Space)
        } else {
            (last_start, chars - 1, Kind::Space)
        };
        let end = end.max(s + 1);
        let w = t.get(s..end).unwrap_or_default();
        let class = if kind == Kind::Newline {
            if w.iter().all(|&b| b == b'\n') {
                0
            } else if w.iter().all(|&b| b == b'\n' || b == b'\r') {
                1
            } else {
                2
            }
        } else if w.iter().all(|&b| b == b' ') {
            0
        } else if w.iter().all(|&b| b == b' ' || b == b'\t') {
            1
        } else {
            2
        };
        Piece {
            start: s,
            end,
            kind,
            prefix: 0,
            class,
            shape: 0,
            chars,
        }
    }

    /// The piece starting at `i`.
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn piece(&self, i: usize) -> Piece {
        let t = self.t;
        let c = char_at(t, i);
        match c.cat {
            Cat::Lower | Cat::Upper | Cat::Caseless => self.word(i, 0, prefix::NONE),
            Cat::Digit => self.digits(i),
            Cat::Newline => self.whitespace(i),
            Cat::Mark if self.dialect == Dialect::O200k => self.word(i, 0, prefix::NONE),
            Cat::Space | Cat::Punct | Cat::Mark => {
                if self.dialect == Dialect::Cl100k {
                    let n = contraction_len(t, i);
                    if n > 0 {
                        return Piece {
                            start: i,
                            end: i + n,
                            kind: Kind::Contraction,
                            prefix: 0,
                            class: 0,
                            shape: 0,
                            chars: n as u32,
                        };
                    }
                }
                let len = c.len as usize;
                let next = char_at(t, i + len);
                if is_letter(next.cat, self.dialect) {
                    let p = match t.get(i) {
                        Some(b' ') => prefix::SPACE,
                        Some(&b) if b < 0x80 => prefix::ASCII,
                        _ => prefix::NON_ASCII,
                    };
                    return self.word(i, len, p);
                }
                if c.cat == Cat::Space {
                    if t.get(i) == Some(&b' ') && is_punct(next.cat) {
                        self.punct(i, true)
                    } else {
                        self.whitespace(i)
                    }
                } else {
                    self.punct(i, false)
                }
            }
            Cat::Invalid | Cat::End => Piece {
                start: i,
                end: i + 1,
                kind: Kind::Invalid,
                prefix: 0,
                class: 0,
                shape: 0,
                chars: 1,
            },
        }
    }
}

/// A piece as the scanner found it: its byte range at once, its features when asked for.
///
/// The estimator looks most pieces up in the vocabulary by their bytes alone; building the
/// features of a piece found by [`blocks`] costs about as much as finding it.
#[derive(Clone, Copy)]
pub struct Found<'a> {
    /// Start byte offset.
    pub start: usize,
    /// End byte offset (exclusive).
    pub end: usize,
    how: How<'a>,
}

#[derive(Clone, Copy)]
enum How<'a> {
    Ready(Piece),
    Window(&'a blocks::Window<'a>, u32, Dialect),
}

impl<'a> Found<'a> {
    #[inline]
    fn ready(p: Piece) -> Self {
        Found {
            start: p.start,
            end: p.end,
            how: How::Ready(p),
        }
    }

    /// Bits `start..end` of a window that begins at text offset `base`.
    #[inline]
    pub(crate) fn in_window(
        win: &'a blocks::Window<'a>,
        base: usize,
        start: u32,
        end: u32,
        dialect: Dialect,
    ) -> Self {
        Found {
            start: base + start as usize,
            end: base + end as usize,
            how: How::Window(win, start, dialect),
        }
    }

    /// The piece, when the byte scanner found it (its features are built already).
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    #[must_use]
    pub fn ready_piece(&self) -> Option<&Piece> {
        match &self.how {
            How::Ready(p) => Some(p),
            How::Window(..) => None,
        }
    }

    /// For a piece found in a window (under 64 bytes): whether it is a digit run.
    #[inline]
    #[must_use]
    pub fn window_digits(&self) -> bool {
        match &self.how {
            How::Ready(_) => false,
            How::Window(win, start, _) => win.digits_at(*start),
        }
    }

    /// The piece with its features.
    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    #[must_use]
    pub fn piece(&self) -> Piece {
        match &self.how {
            How::Ready(p) => *p,
            How::Window(win, start, dialect) => {
                let base = self.start - *start as usize;
                win.piece(
                    base,
                    *start,
                    *start + (self.end - self.start) as u32,
                    *dialect,
                )
            }
        }
    }
}

/// Splits `text` into pre-tokenization pieces in order, calling `emit` for each.
///
/// Pieces are contiguous and cover the whole input; each has at least one byte. ASCII text and
/// two-byte letters with case go through [`blocks`] 64 bytes at a time; the rest, piece by
/// piece, through the byte scanner ([`scan_bytes`]), which gives the same pieces.
#[inline]
pub fn scan<F: FnMut(Piece)>(text: &[u8], dialect: Dialect, mut emit: F) {
    scan_found(text, dialect, |f| emit(f.piece()));
}

/// [`scan`], with each piece's features built only when the caller asks ([`Found::piece`]).
#[inline]
pub fn scan_found<F: FnMut(Found<'_>)>(text: &[u8], dialect: Dialect, mut emit: F) {
    scan_steps(text, dialect, |step| match step {
        Step::Window(settled) => {
            for (start, end) in settled.pieces() {
                emit(settled.found(start, end, dialect));
            }
        }
        Step::Piece(found) => emit(*found),
    });
}

/// What [`scan_steps`] hands over: the pieces of a whole window at once, or one piece of the
/// byte scanner.
pub enum Step<'s, 'a> {
    /// The pieces one 64-byte window settles.
    Window(&'s blocks::Settled<'a>),
    /// A piece the byte scanner found (by reference: copying it out of the scanner's stores
    /// stalled the caller's loads).
    Piece(&'s Found<'a>),
}

/// [`scan_found`], handing over the pieces of each window together (callers that treat a
/// window's pieces as a batch) and the byte scanner's one by one, in text order.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub fn scan_steps<F: FnMut(Step<'_, '_>)>(text: &[u8], dialect: Dialect, mut step: F) {
    let sc = Scanner { t: text, dialect };
    let mut i = 0;
    // Where windows are tried again after one settled nothing: past non-ASCII text the byte
    // scanner goes on alone until ASCII resumes.
    let mut ascii_from = 0;
    while i < text.len() {
        if i >= ascii_from && text.len() - i >= blocks::MIN_TEXT {
            let mut pad = [0u8; blocks::WIDTH];
            if let Some(settled) = blocks::settle(text, i, dialect, &mut pad) {
                i += settled.end() as usize;
                step(Step::Window(&settled));
                continue;
            }
            ascii_from = blocks::next_ascii(text, i);
        }
        let p = sc.piece(i);
        i = p.end;
        step(Step::Piece(&Found::ready(p)));
    }
}

/// The piece of `text` that the byte scanner finds at `i` (a piece start in `dialect`).
#[inline]
pub(crate) fn found_at(text: &[u8], i: usize, dialect: Dialect) -> Found<'static> {
    Found::ready(Scanner { t: text, dialect }.piece(i))
}

/// [`scan`] with the byte scanner alone: the reference for [`blocks`].
pub fn scan_bytes<F: FnMut(Piece)>(text: &[u8], dialect: Dialect, mut emit: F) {
    let sc = Scanner { t: text, dialect };
    let mut i = 0;
    while i < text.len() {
        let p = sc.piece(i);
        i = p.end;
        emit(p);
    }
}

/// Convenience: all pieces of `text` as a vector (tests and tooling).
#[must_use]
pub fn pieces(text: &[u8], dialect: Dialect) -> Vec<Piece> {
    let mut v = Vec::new();
    scan(text, dialect, |p| v.push(p));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letter_runs_are_what_each_character_adds() {
        // Letters of two and three bytes in and out of case, marks, signs and punctuation
        // among them, and what is not UTF-8: surrogates, overlong forms (of U+0000, of the
        // letters א and `A`, of `/`), a cut character, stray continuation bytes.
        let parts: [&[u8]; 28] = [
            "Д".as_bytes(),
            "д".as_bytes(),
            "Σ".as_bytes(),
            "ع".as_bytes(),
            "\u{0301}".as_bytes(),
            "×".as_bytes(),
            "ǅ".as_bytes(),
            "ʰ".as_bytes(),
            "的".as_bytes(),
            "か".as_bytes(),
            "\u{3099}".as_bytes(),
            "゛".as_bytes(),
            "・".as_bytes(),
            "ー".as_bytes(),
            "한".as_bytes(),
            "ก".as_bytes(),
            "\u{0E31}".as_bytes(),
            "𝄞".as_bytes(),
            b"a",
            b"\xed\xa0\x80",
            b"\xed\xb0\x80",
            b"\xe0\x80\x80",
            b"\xe0\x97\x90",
            b"\xc0\xaf",
            b"\xc1\x81",
            b"\xe4\xbd",
            b"\x80",
            b"\xbf",
        ];
        let sets = [CL100K_LETTERS, O200K_UPPER_PART, O200K_LOWER_PART];
        let mut rng = crate::testing::XorShift(0x0CA5_E1E5);
        for _ in 0..30_000 {
            let mut t = Vec::new();
            for _ in 0..rng.below(12) {
                t.extend_from_slice(parts[rng.index(parts.len())]);
            }
            let j = if t.is_empty() { 0 } else { rng.index(t.len()) };
            for accept in sets {
                let mut seed = Shape::default();
                if rng.below(2) == 0 {
                    seed.add(ASCII[usize::from(b'A')]);
                }
                let (mut fast, mut slow) = (seed, seed);
                let got = fast.letter_run(&t, j, accept);
                let (mut k, mut not_upper_end) = (j, None);
                loop {
                    let c = char_at(&t, k);
                    if !matches!(c.len, 2 | 3) || accept & (1 << c.cat as u16) == 0 {
                        break;
                    }
                    slow.add(c);
                    k += usize::from(c.len);
                    if c.cat != Cat::Upper {
                        not_upper_end = Some(k);
                    }
                }
                assert_eq!((got, fast), ((k, not_upper_end), slow), "{t:?} from {j}");
            }
        }
    }

    fn split(text: &str, d: Dialect) -> Vec<&str> {
        pieces(text.as_bytes(), d)
            .iter()
            .map(|p| &text[p.start..p.end])
            .collect()
    }

    #[test]
    fn empty() {
        assert!(pieces(b"", Dialect::Cl100k).is_empty());
    }

    #[test]
    fn words_and_spaces() {
        let cl = Dialect::Cl100k;
        assert_eq!(split("Hello world", cl), ["Hello", " world"]);
        assert_eq!(split("a  b", cl), ["a", " ", " b"]);
        assert_eq!(split("x\n\n  y", cl), ["x", "\n\n", " ", " y"]);
        assert_eq!(split("x  \n", cl), ["x", "  \n"]);
        assert_eq!(split("x   ", cl), ["x", "   "]);
        assert_eq!(split("a 1", cl), ["a", " ", "1"]);
        assert_eq!(split("\tfoo", cl), ["\tfoo"]);
    }

    #[test]
    fn punctuation() {
        let cl = Dialect::Cl100k;
        assert_eq!(split("f(x);\n}", cl), ["f", "(x", ");\n", "}"]);
        assert_eq!(split("a .foo", cl), ["a", " .", "foo"]);
        assert_eq!(split("a.b", cl), ["a", ".b"]);
        assert_eq!(split("don't", cl), ["don", "'t"]);
        assert_eq!(split("a//\nb", Dialect::O200k), ["a", "//\n", "b"]);
    }

    #[test]
    fn o200k_case_split() {
        let o = Dialect::O200k;
        assert_eq!(split("HelloWorld", o), ["Hello", "World"]);
        assert_eq!(split("HTTPServer", o), ["HTTPServer"]);
        assert_eq!(split("fooBAR", o), ["foo", "BAR"]);
        assert_eq!(split("don't", o), ["don't"]);
        assert_eq!(split("中文ABC", o), ["中文", "ABC"]);
        assert_eq!(split("HelloWorld", Dialect::Cl100k), ["HelloWorld"]);
    }

    #[test]
    fn digits_are_runs() {
        let p = pieces(b"abc 12345", Dialect::Cl100k);
        assert_eq!(p.len(), 3);
        assert_eq!(p[2].kind, Kind::Digits);
        assert_eq!(p[2].chars, 5);
    }

    #[test]
    fn cjk_and_emoji() {
        let cl = Dialect::Cl100k;
        assert_eq!(split("你好，世界", cl), ["你好", "，世界"]);
        let p = pieces("😀😀".as_bytes(), cl);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].class, content::FOUR_BYTE);
        assert_eq!(p[0].shape & 2, 2);
    }

    #[test]
    fn invalid_bytes_and_nul() {
        for d in [Dialect::Cl100k, Dialect::O200k] {
            let p = pieces(b"a\xffb\x00\xe4\xbd", d);
            let total: usize = p.iter().map(|p| p.end - p.start).sum();
            assert_eq!(total, 6);
            assert!(p.iter().any(|p| p.kind == Kind::Invalid));
        }
    }

    #[test]
    fn pieces_cover_input() {
        let text = "  Mixed\r\n\tText 123,456.78 — «ÉTÉ» Привет мир! नमस्ते 🎉🎉\u{2028}x\u{a0} y's";
        for d in [Dialect::Cl100k, Dialect::O200k] {
            let mut pos = 0;
            for p in pieces(text.as_bytes(), d) {
                assert_eq!(p.start, pos);
                assert!(p.end > p.start);
                pos = p.end;
            }
            assert_eq!(pos, text.len());
        }
    }
}
