//! Token estimation: pre-tokenization pieces → fitted per-encoding tables → token count.
//!
//! [`scan`](crate::scan) splits the text the way each encoding's pre-tokenizer would; every piece
//! maps to a cell of a small table (piece kind × prefix × script/content × case/flags × length
//! 1..=16) holding the mean number of tokens such a piece costs in that encoding, in 1/256 token
//! units. Pieces longer than 16 characters scale the length-16 cell linearly. The tables are
//! fitted offline against the real tokenizers by `benches/fit_estimator.py` and live in
//! [`profiles`](crate::profiles).

use crate::profiles;
use crate::scan::{self, content, prefix, script, Dialect, Kind, Piece};

/// An encoding whose token counts we estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `OpenAI` `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// `OpenAI` `o200k_base` (GPT-4o, o-series, GPT-4.1, GPT-5).
    O200k,
    /// Llama 3 (128k vocabulary, cl100k-like pre-tokenizer).
    Llama3,
    /// Qwen 3 (single-digit pre-tokenization).
    Qwen3,
    /// Never below any of the four others: for unknown models.
    Conservative,
}

impl Encoding {
    /// Every encoding, in a fixed order.
    pub const ALL: [Encoding; 5] = [
        Encoding::Cl100k,
        Encoding::O200k,
        Encoding::Llama3,
        Encoding::Qwen3,
        Encoding::Conservative,
    ];

    /// Parses a canonical short name (`"cl100k"`, `"o200k"`, `"llama3"`, `"qwen3"`,
    /// `"conservative"`) or the tiktoken names `"cl100k_base"` / `"o200k_base"`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Encoding> {
        match name {
            "cl100k" | "cl100k_base" => Some(Encoding::Cl100k),
            "o200k" | "o200k_base" => Some(Encoding::O200k),
            "llama3" => Some(Encoding::Llama3),
            "qwen3" => Some(Encoding::Qwen3),
            "conservative" => Some(Encoding::Conservative),
            _ => None,
        }
    }

    /// The canonical short name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Cl100k => "cl100k",
            Encoding::O200k => "o200k",
            Encoding::Llama3 => "llama3",
            Encoding::Qwen3 => "qwen3",
            Encoding::Conservative => "conservative",
        }
    }
}

/// Lengths 1..=`LEN_BUCKETS` have their own cell; longer pieces scale the last one.
pub const LEN_BUCKETS: usize = 16;

/// Word classes: the scripts, with ASCII split by how many rare letter bigrams the word has
/// (0, 1, 2-3, 4+): natural words and identifiers are few tokens, random strings (base64, ids)
/// many.
const WORD_CLASSES: usize = script::COUNT as usize + 3;
const WORD_GROUPS: usize = prefix::COUNT as usize * WORD_CLASSES * scan::case::COUNT as usize;
const DIGIT_BASE: usize = WORD_GROUPS;
const PUNCT_BASE: usize = DIGIT_BASE + 2;
const PUNCT_GROUPS: usize = 2 * content::COUNT as usize * 4;
const SPACE_BASE: usize = PUNCT_BASE + PUNCT_GROUPS;
const NEWLINE_BASE: usize = SPACE_BASE + 3;
const CONTRACTION_GROUP: usize = NEWLINE_BASE + 3;

/// Number of feature groups; a table has `N_GROUPS * LEN_BUCKETS` cells.
pub const N_GROUPS: usize = CONTRACTION_GROUP + 1;
/// Number of cells of a profile table.
pub const N_CELLS: usize = N_GROUPS * LEN_BUCKETS;

/// One token in table units.
const ONE: u64 = 256;

/// Number of rare letter bigrams (per [`profiles::RARE_BIGRAMS`]) in the ASCII word `w`.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn rare_bigrams(w: &[u8]) -> u32 {
    let rare = profiles::RARE_BIGRAMS;
    let mut n = 0;
    let mut prev = usize::MAX;
    for &b in w {
        if b.is_ascii_alphabetic() {
            let cur = usize::from((b | 0x20) - b'a');
            n += rare.get(prev).map_or(0, |row| (row >> cur) & 1);
            prev = cur;
        } else {
            prev = usize::MAX;
        }
    }
    n
}

/// Word class of a word piece of `text`: its script, ASCII refined by rare bigrams.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn word_class(p: &Piece, text: &[u8]) -> usize {
    if p.class != script::ASCII {
        return usize::from(p.class.min(script::COUNT - 1));
    }
    match rare_bigrams(text.get(p.start..p.end).unwrap_or_default()) {
        0 => script::ASCII as usize,
        1 => script::COUNT as usize,
        2..=3 => script::COUNT as usize + 1,
        _ => script::COUNT as usize + 2,
    }
}

/// The feature group of a piece of `text` (`None` for invalid bytes, which cost one token each).
///
/// Digit pieces map to their digit group; their length bucket is the digit-group length.
#[must_use]
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub fn group(p: &Piece, text: &[u8]) -> Option<usize> {
    let f = |v: u8, n: u8| (v.min(n - 1)) as usize;
    Some(match p.kind {
        Kind::Word => {
            (f(p.prefix, prefix::COUNT) * WORD_CLASSES + word_class(p, text))
                * scan::case::COUNT as usize
                + f(p.shape, scan::case::COUNT)
        }
        Kind::Digits => DIGIT_BASE + f(p.class, 2),
        Kind::Punct => {
            PUNCT_BASE
                + (f(p.prefix, 2) * content::COUNT as usize + f(p.class, content::COUNT)) * 4
                + f(p.shape, 4)
        }
        Kind::Space => SPACE_BASE + f(p.class, 3),
        Kind::Newline => NEWLINE_BASE + f(p.class, 3),
        Kind::Contraction => CONTRACTION_GROUP,
        Kind::Invalid => return None,
    })
}

/// A human-readable description of group `g` (for the fitting script): kind and features.
#[must_use]
pub fn describe_group(g: usize) -> Option<(&'static str, usize, usize, usize)> {
    let (sc, cs, cc) = (
        WORD_CLASSES,
        scan::case::COUNT as usize,
        content::COUNT as usize,
    );
    Some(match g {
        _ if g < WORD_GROUPS => ("word", g / (sc * cs), (g / cs) % sc, g % cs),
        _ if g < PUNCT_BASE => ("digits", 0, g - DIGIT_BASE, 0),
        _ if g < SPACE_BASE => {
            let r = g - PUNCT_BASE;
            ("punct", r / (cc * 4), (r / 4) % cc, r % 4)
        }
        _ if g < NEWLINE_BASE => ("space", 0, g - SPACE_BASE, 0),
        _ if g < CONTRACTION_GROUP => ("newline", 0, g - NEWLINE_BASE, 0),
        _ if g == CONTRACTION_GROUP => ("contraction", 0, 0, 0),
        _ => return None,
    })
}

/// Table value of `cell`, falling back to one token per character for a short table.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn cell_value(table: &[u16], cell: usize, chars: u64) -> u64 {
    table.get(cell).map_or(chars * ONE, |&v| u64::from(v))
}

/// Cost of `chars` characters in group `g`, in table units.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn run_cost(table: &[u16], g: usize, chars: u32) -> u64 {
    let n = chars.max(1) as usize;
    let base = g * LEN_BUCKETS;
    if n <= LEN_BUCKETS {
        cell_value(table, base + n - 1, n as u64)
    } else {
        cell_value(table, base + LEN_BUCKETS - 1, LEN_BUCKETS as u64) * n as u64
            / LEN_BUCKETS as u64
    }
}

/// Cost of one piece in table units; digit runs are split into groups of `digit_group`.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn piece_cost(p: &Piece, text: &[u8], table: &[u16], digit_group: u32) -> u64 {
    match group(p, text) {
        None => ONE,
        Some(g) if p.kind == Kind::Digits => {
            let dg = digit_group.max(1);
            let (full, rem) = (p.chars / dg, p.chars % dg);
            let mut c = u64::from(full) * run_cost(table, g, dg);
            if rem > 0 {
                c += run_cost(table, g, rem);
            }
            c
        }
        Some(g) => run_cost(table, g, p.chars),
    }
}

/// Table units → whole tokens, rounded to nearest.
#[inline]
fn to_tokens(units: u64) -> u64 {
    (units + ONE / 2) / ONE
}

/// How one of the four fitted encodings is estimated.
struct Model {
    dialect: Dialect,
    table: &'static [u16],
    digit_group: u32,
}

fn model(encoding: Encoding) -> Option<Model> {
    let (dialect, table, digit_group) = match encoding {
        Encoding::Cl100k => (Dialect::Cl100k, profiles::CL100K, 3),
        Encoding::O200k => (Dialect::O200k, profiles::O200K, 3),
        Encoding::Llama3 => (Dialect::Cl100k, profiles::LLAMA3, 3),
        Encoding::Qwen3 => (Dialect::Cl100k, profiles::QWEN3, 1),
        Encoding::Conservative => return None,
    };
    Some(Model {
        dialect,
        table,
        digit_group,
    })
}

/// Estimated token count of `text` (UTF-8 expected) in `encoding`.
///
/// One pass over the bytes; invalid UTF-8 bytes and other oddities never panic (an invalid byte
/// counts as one token). `Conservative` is the maximum of the four fitted estimates.
#[must_use]
pub fn estimate_tokens(text: &[u8], encoding: Encoding) -> u64 {
    match model(encoding) {
        Some(m) => {
            let mut acc = 0u64;
            scan::scan(text, m.dialect, |p| {
                acc += piece_cost(&p, text, m.table, m.digit_group);
            });
            to_tokens(acc)
        }
        None => estimate_all(text).into_iter().max().unwrap_or(0),
    }
}

/// Estimates for cl100k, o200k, llama3 and qwen3 (in that order) in two scans: the three
/// cl100k-like encodings share one.
#[must_use]
pub fn estimate_all(text: &[u8]) -> [u64; 4] {
    let (cl, ll, qw) = (profiles::CL100K, profiles::LLAMA3, profiles::QWEN3);
    let (mut a, mut b, mut c) = (0u64, 0u64, 0u64);
    scan::scan(text, Dialect::Cl100k, |p| {
        a += piece_cost(&p, text, cl, 3);
        b += piece_cost(&p, text, ll, 3);
        c += piece_cost(&p, text, qw, 1);
    });
    let mut o = 0u64;
    scan::scan(text, Dialect::O200k, |p| {
        o += piece_cost(&p, text, profiles::O200K, 3);
    });
    [to_tokens(a), to_tokens(o), to_tokens(b), to_tokens(c)]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: &[&str] = &[
        "The quick brown fox jumps over the lazy dog. It's a classic pangram.",
        "def main(argv):\n    for i in range(10):\n        print(f\"{i}: {argv[i]!r}\")\n",
        r#"{"id": 12345, "name": "widget", "tags": ["a", "b"], "price": 19.99}"#,
        "2024-05-01T12:00:00Z INFO [worker-3] request id=9f8e7d6c latency=123ms status=200",
        "日本語のテキストと中文文本，还有한국어 텍스트。",
        "Привет, мир! Γειά σου κόσμε! مرحبا بالعالم! नमस्ते दुनिया! สวัสดีชาวโลก",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk=",
        "deadbeef 0123456789abcdef 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "🎉🎉🎉 party 🥳 time 👨‍👩‍👧",
        "==========\n----------\n          \n\t\t\t\n",
    ];

    #[test]
    fn names_round_trip() {
        for e in Encoding::ALL {
            assert_eq!(Encoding::from_name(e.name()), Some(e));
        }
        assert_eq!(Encoding::from_name("cl100k_base"), Some(Encoding::Cl100k));
        assert_eq!(Encoding::from_name("o200k_base"), Some(Encoding::O200k));
        assert_eq!(Encoding::from_name("gpt2"), None);
    }

    #[test]
    fn tables_have_the_layout() {
        for t in [
            profiles::CL100K,
            profiles::O200K,
            profiles::LLAMA3,
            profiles::QWEN3,
        ] {
            assert_eq!(t.len(), N_CELLS);
        }
        for g in 0..N_GROUPS {
            assert!(describe_group(g).is_some());
        }
        assert!(describe_group(N_GROUPS).is_none());
    }

    #[test]
    fn empty_is_zero() {
        for e in Encoding::ALL {
            assert_eq!(estimate_tokens(b"", e), 0);
        }
    }

    #[test]
    fn ascii_words() {
        for e in Encoding::ALL {
            let n = estimate_tokens(b"hello world this is a test", e);
            assert!((5..=8).contains(&n), "{e:?}: {n}");
        }
    }

    #[test]
    fn numbers_split() {
        let long = estimate_tokens(b"123456789012", Encoding::Cl100k);
        assert!((3..=5).contains(&long), "cl100k: {long}");
        let qwen = estimate_tokens(b"123456789012", Encoding::Qwen3);
        assert!((11..=13).contains(&qwen), "qwen3: {qwen}");
    }

    #[test]
    fn whitespace_runs() {
        let spaces = [b' '; 64];
        for e in Encoding::ALL {
            let n = estimate_tokens(&spaces, e);
            assert!((1..=16).contains(&n), "{e:?}: {n}");
        }
    }

    #[test]
    fn cjk_costs_more_than_a_quarter_of_bytes_per_char() {
        let text = "日本語のテキストと中文文本".repeat(10);
        for e in Encoding::ALL {
            let n = estimate_tokens(text.as_bytes(), e);
            let chars = text.chars().count() as u64;
            assert!(
                n >= chars / 3 && n <= chars * 2,
                "{e:?}: {n} for {chars} chars"
            );
        }
    }

    #[test]
    fn emoji() {
        for e in Encoding::ALL {
            let n = estimate_tokens("🎉".as_bytes(), e);
            assert!((1..=4).contains(&n), "{e:?}: {n}");
        }
    }

    #[test]
    fn invalid_utf8_and_nul_do_not_panic() {
        let nasty: &[&[u8]] = &[
            b"\xff\xfe\xfd",
            b"\x00\x00\x00abc\x00",
            b"\xe4\xbd",
            b"\xf0\x9f\x98",
            b"\xed\xa0\x80",
            b"\xc0\xaf",
            b"a\xf4\x90\x80\x80b",
        ];
        for t in nasty {
            for e in Encoding::ALL {
                let n = estimate_tokens(t, e);
                assert!(n <= t.len() as u64 * 2);
            }
        }
        assert_eq!(estimate_tokens(b"\xff\xff\xff\xff", Encoding::Cl100k), 4);
    }

    #[test]
    fn random_bytes_do_not_panic() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let mut buf = Vec::with_capacity(4096);
        for _ in 0..4096 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf.push((x >> 24) as u8);
        }
        for e in Encoding::ALL {
            let _ = estimate_tokens(&buf, e);
        }
    }

    #[test]
    fn conservative_is_never_below() {
        for s in SAMPLES {
            let c = estimate_tokens(s.as_bytes(), Encoding::Conservative);
            for e in [
                Encoding::Cl100k,
                Encoding::O200k,
                Encoding::Llama3,
                Encoding::Qwen3,
            ] {
                assert!(c >= estimate_tokens(s.as_bytes(), e), "{e:?} on {s:?}");
            }
        }
    }

    #[test]
    fn estimate_all_matches_single() {
        for s in SAMPLES {
            let all = estimate_all(s.as_bytes());
            let one = [
                Encoding::Cl100k,
                Encoding::O200k,
                Encoding::Llama3,
                Encoding::Qwen3,
            ]
            .map(|e| estimate_tokens(s.as_bytes(), e));
            assert_eq!(all, one);
        }
    }

    #[test]
    fn doubling_roughly_doubles() {
        for s in SAMPLES {
            let once = format!("{s}\n");
            let twice = once.repeat(2);
            for e in Encoding::ALL {
                let a = estimate_tokens(once.as_bytes(), e) as f64;
                let b = estimate_tokens(twice.as_bytes(), e) as f64;
                assert!(
                    b >= 1.8 * a - 2.0 && b <= 2.2 * a + 2.0,
                    "{e:?} {a} {b} on {s:?}"
                );
            }
        }
    }
}
