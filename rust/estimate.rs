//! Token estimation: pre-tokenization pieces → vocabulary filter → fitted tables → token count.
//!
//! [`scan`] splits the text the way each encoding's pre-tokenizer would. A piece
//! that the encoding's vocabulary has whole (a blocked Bloom filter over the vocabulary, see
//! [`vocab`]) costs one token: that settles two thirds of all pieces exactly. A piece that is
//! one character of two bytes or more, alone or after a space, costs what the oracle gave that
//! very string ([`Vocab::lone_char`]). Any other piece is split greedily into the longest
//! entries the filter knows ([`greedy_tokens`]),
//! and the count of that split, with the piece's kind, prefix, script/content and case, picks a
//! cell of a small table (1..=16, longer counts scale the last cell) holding the mean number of
//! tokens such pieces really cost in that encoding, in 1/256 token units. Digit runs are split
//! into the encoding's digit groups. The filters and tables are generated offline from the real
//! tokenizers by `benches/fit_estimator.py` and live in [`profiles`].
//!
//! The pieces of a 64-byte window are hashed and probed together
//! (`rust/window_cost.rs`); `Conservative` takes its three encodings from one pass
//! over the text (`rust/conservative.rs`). Both give exactly what costing each
//! piece in turn gives.

use crate::conservative;
use crate::greedy::merged_entry;
pub use crate::greedy::{greedy_tokens, merged_start_tokens, run_tokens};
use crate::nfc;
use crate::profiles;
use crate::scan::{self, content, prefix, script, Dialect, Found, Kind, Piece, Step};
use crate::vocab::{self, CharCosts, Filter, PrefixFilter, Vocab};
use crate::window_cost::window_units;

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
    /// Above the four others on the fitting corpus, by a fitted margin: for unknown models.
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
pub(crate) const ONE: u64 = 256;

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

/// Longest word piece looked up in the filter, in bytes (vocabularies have no longer words;
/// long letter runs such as base64 lines skip the hash).
const WORD_MAX_LEN: usize = 64;

/// The vocabulary hash of a piece, or `None` for pieces never looked up (digit runs, invalid
/// bytes, very long pieces).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
#[must_use]
pub fn piece_hash(p: &Piece, text: &[u8]) -> Option<u64> {
    let max = match p.kind {
        Kind::Digits | Kind::Invalid => return None,
        Kind::Word => WORD_MAX_LEN,
        _ => vocab::MAX_LEN,
    };
    if p.end - p.start > max {
        return None;
    }
    text.get(p.start..p.end).map(vocab::hash)
}

/// Tokens of a camelCase word split into its humps (a new hump at each lower → upper case
/// change, as o200k's pre-tokenizer splits), each hump one token when the vocabulary has it
/// whole, else its [`greedy_tokens`] count: BPE rarely merges across humps. A word of one hump
/// is its [`greedy_tokens`] count (callers have looked it up whole already).
#[must_use]
pub fn hump_tokens(b: &[u8], vocab: &Vocab<'_>) -> u32 {
    let hump = |s: &[u8]| {
        if vocab.contains(vocab::hash(s)) {
            1
        } else {
            greedy_tokens(s, vocab)
        }
    };
    let mut n = 0;
    let mut start = 0;
    for i in 1..b.len() {
        if b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase() {
            n += hump(&b[start..i]);
            start = i;
        }
    }
    if start == 0 {
        // One hump: the caller has already looked the whole word up.
        return greedy_tokens(b, vocab);
    }
    n + hump(&b[start..])
}

/// Byte length of the letters of word piece `p` (`b` is its text): all but the prefix character.
fn word_bytes(p: &Piece, b: &[u8]) -> usize {
    if p.prefix == prefix::NONE {
        return b.len();
    }
    let mut i = 1;
    while b.get(i).is_some_and(|&c| c & 0xC0 == 0x80) {
        i += 1;
    }
    b.len() - i.min(b.len())
}

/// Tokens of the letters `b` of word piece `p`: camelCase ASCII words by [`hump_tokens`], other
/// words by [`greedy_tokens`].
fn word_tokens(p: &Piece, b: &[u8], vocab: &Vocab<'_>) -> u32 {
    if p.class == script::ASCII && p.shape == scan::case::MIXED {
        hump_tokens(b, vocab)
    } else {
        greedy_tokens(b, vocab)
    }
}

/// The length feature of a piece that is not one token: its greedy token count (digit runs
/// and invalid bytes: their character count; runs of one punctuation character and of spaces:
/// [`run_tokens`]; camelCase ASCII words: [`hump_tokens`]; an ASCII word after one ASCII
/// punctuation character: that character plus the word's count, or [`merged_start_tokens`]
/// when fewer).
#[must_use]
pub fn piece_length(p: &Piece, text: &[u8], m: &Model) -> u32 {
    let b = text.get(p.start..p.end).unwrap_or_default();
    match p.kind {
        Kind::Digits | Kind::Invalid => p.chars,
        Kind::Punct if p.shape & 2 != 0 => run_tokens(b, &m.vocab),
        Kind::Space if p.class == 0 => run_tokens(b, &m.vocab),
        Kind::Word if p.prefix == prefix::ASCII && p.class == script::ASCII => {
            // An ASCII punctuation prefix of an ASCII word (`{visibility`, `"DataLake`): one
            // token plus the bare word's, unless the vocabulary merges the prefix with the
            // word's start into fewer (`/distro` is `/d` + `istro` in cl100k).
            let rest = text
                .get(p.end - word_bytes(p, b)..p.end)
                .unwrap_or_default();
            if m.vocab.contains(vocab::hash(rest)) {
                // The whole piece is not one token (its caller looked it up), so two.
                2
            } else {
                let apart = 1 + word_tokens(p, rest, &m.vocab);
                merged_start_tokens(b, &m.vocab).map_or(apart, |merged| merged.min(apart))
            }
        }
        Kind::Word => word_tokens(p, b, &m.vocab),
        _ => greedy_tokens(b, &m.vocab),
    }
}

/// [`piece_hash`] of a found piece, without building its features when a window found it
/// (such pieces are shorter than [`WORD_MAX_LEN`]: a window is 64 bytes).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn found_hash(f: &Found<'_>, text: &[u8]) -> Option<u64> {
    match f.ready_piece() {
        Some(p) => piece_hash(p, text),
        None if f.window_digits() => None,
        None => text.get(f.start..f.end).map(vocab::hash),
    }
}

/// Cost of one piece in table units: one token when the vocabulary has it whole, else its
/// [`split_cost`].
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn piece_cost(
    piece: &mut impl FnMut() -> Piece,
    text: &[u8],
    span: (usize, usize),
    hash: Option<u64>,
    model: &Model,
    memo: Option<&mut Memo>,
) -> u64 {
    match hash {
        Some(h) if is_whole(h, text, span, model) => ONE,
        _ => split_cost(piece, text, hash, model, memo),
    }
}

/// Whether the piece at `span` of `text`, of vocabulary hash `h`, counts as one token: the
/// filter has it, and a long piece also a cut of it (`greedy::merged_entry`).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
#[must_use]
pub fn is_whole(h: u64, text: &[u8], span: (usize, usize), model: &Model) -> bool {
    let piece = &text[span.0..span.1];
    model.vocab.has(piece, h) && (piece.len() <= LONG_PIECE || merged_entry(piece, &model.vocab))
}

/// Cost of a piece that is not one token: [`table_cost`] of its features (`piece` builds
/// them), looked up in `memo` first when there is one and the piece has a `hash`.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn split_cost(
    piece: &mut impl FnMut() -> Piece,
    text: &[u8],
    hash: Option<u64>,
    model: &Model,
    memo: Option<&mut Memo>,
) -> u64 {
    match (hash, memo) {
        (Some(h), Some(memo)) => memo.get_or(h, || table_cost(&piece(), text, model)),
        _ => table_cost(&piece(), text, model),
    }
}

/// A found piece's features, built on the first call only.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn lazy<'f>(f: &'f Found<'_>) -> impl FnMut() -> Piece + 'f {
    let mut built: Option<Piece> = None;
    move || *built.get_or_insert_with(|| f.piece())
}

/// Cost of a piece that is not one token: a lone character's exact count ([`lone_char`]), else
/// its table cell by greedy token count; digit runs are split into groups of the model's digit
/// group.
fn table_cost(p: &Piece, text: &[u8], model: &Model) -> u64 {
    let Some(g) = group(p, text) else {
        return ONE;
    };
    if let Some(tokens) = lone_char(p, text, model) {
        return u64::from(tokens) * ONE;
    }
    if p.kind == Kind::Digits {
        digit_run_units(model, g, digit_chars(p, text))
    } else {
        run_cost(model.table, g, piece_length(p, text, model))
    }
}

/// Exact tokens of a piece that is one character of two bytes or more, alone or after a
/// space ([`Vocab::lone_char`]): such pieces are costed by the character tables, not by a cell.
#[must_use]
#[inline]
pub fn lone_char(p: &Piece, text: &[u8], model: &Model) -> Option<u32> {
    if p.end - p.start > 5 {
        return None;
    }
    text.get(p.start..p.end)
        .and_then(|b| model.vocab.lone_char(b))
}

/// Characters of the digit run `p` of `text`: its `chars`, recounted from its bytes when the
/// run is too long for them (`u32::MAX` bytes or more: 4 GiB of digits counted as a few).
fn digit_chars(p: &Piece, text: &[u8]) -> u64 {
    match text.get(p.start..p.end) {
        Some(b) if b.len() >= u32::MAX as usize => {
            b.iter().filter(|&&c| c & 0xC0 != 0x80).count() as u64
        }
        _ => u64::from(p.chars),
    }
}

/// Table units of a run of `chars` digits of group `g`, split into the model's digit groups.
#[inline]
fn digit_run_units(model: &Model, g: usize, chars: u64) -> u64 {
    let dg = model.digit_group.max(1);
    // The encodings' groups as constants: a division by a variable is the dearest step of a
    // digit run, and hex text has one every few bytes.
    let (full, rem) = match dg {
        1 => (chars, 0),
        3 => (chars / 3, chars % 3),
        _ => (chars / u64::from(dg), chars % u64::from(dg)),
    };
    let mut c = full.saturating_mul(run_cost(model.table, g, dg));
    if rem > 0 {
        // Below `dg`, a `u32`.
        c += run_cost(model.table, g, rem as u32);
    }
    c
}

/// [`digit_run_units`] of a run of `chars` ASCII digits.
#[inline]
pub(crate) fn ascii_digit_units(model: &Model, chars: u32) -> u64 {
    digit_run_units(model, DIGIT_BASE, u64::from(chars))
}

/// Pieces longer than this (bytes) count as one token only when a cut of them is known too
/// ([`merged_entry`]): a false positive of the filter would make a long piece one token.
const LONG_PIECE: usize = 16;

/// Estimates of this many bytes or more (in one text, in all the chunks one [`Estimator`] is
/// fed, or announced to [`Estimator::for_bytes`]) first read the vocabulary filters through,
/// in order. After a pause the processor's caches hold little of them, and the probes ask for
/// their lines in no order. The read takes about 6.5 us a filter when it is cached and 30 us
/// from memory: 3.5% of estimating this many bytes back-to-back in o200k, 6% in
/// `Conservative` (three filters), less for more bytes; after 20 ms idle the core of the
/// 600-message cold estimate went from 3.17 to 2.97 ms.
const WARM_MIN_LEN: usize = 128 * 1024;

/// Most slots of a [`Memo`].
const MEMO_SLOTS: usize = 1 << 12;
/// Fewest slots of a [`Memo`].
const MEMO_MIN_SLOTS: usize = 1 << 8;
/// Texts shorter than this are estimated without a [`Memo`]: setting one up would cost more
/// than it saves. A tool output of a few KB repeats its words too (test names, paths, keys):
/// with a memo sized to it, the eval split's classes cut into texts of 1,100 and 6,000
/// characters were estimated 0.94-1.29x and 0.99-1.84x as fast as without one (most classes
/// 1.1-1.3x; hex and repetitive text, whose pieces seldom repeat or are one token, as fast;
/// `benches/ab_builds.py --pieces N`, against the limit of 16 KB it replaced), texts of 600
/// bytes 0.95-1.27x: not worth it there.
const MEMO_MIN_LEN: usize = 1024;
/// Bytes of text a [`Memo`] has a slot for, between [`MEMO_MIN_SLOTS`] and [`MEMO_SLOTS`]
/// (which texts of 16 KB and more have).
const MEMO_BYTES_PER_SLOT: usize = 4;

/// Costs of the pieces of one text that are not one token, by piece hash. A long text repeats
/// its words, and splitting such a piece is the dearest step of an estimate; the cost is a
/// function of the piece's bytes alone, so a hit gives exactly what [`table_cost`] would:
/// estimates never depend on what the memo saw before. Direct-mapped, keyed by the whole
/// 64-bit hash; it lives as long as one call or one [`Estimator`] (a text fed in parts, such
/// as a `str` transcoded a buffer at a time).
#[derive(Clone)]
pub(crate) struct Memo {
    slots: Vec<(u64, u64)>,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Memo({} slots)", self.slots.len())
    }
}

impl Memo {
    /// Slots of a memo for a text of `len` bytes: a small text's is smaller (it has fewer
    /// pieces to remember, and zeroing the slots is part of its cost).
    fn slots_for(len: usize) -> usize {
        (len / MEMO_BYTES_PER_SLOT)
            .next_power_of_two()
            .clamp(MEMO_MIN_SLOTS, MEMO_SLOTS)
    }

    /// A memo for a text of `len` bytes, if it is long enough to pay off.
    fn for_text(len: usize) -> Option<Memo> {
        (len >= MEMO_MIN_LEN).then(|| Memo {
            slots: vec![(0, 0); Memo::slots_for(len)],
        })
    }

    /// `memo`, set up first when there is none, or a larger one when it has fewer slots than
    /// a text of `len` bytes would have, if that text pays for one.
    fn keep(memo: &mut Option<Memo>, len: usize) -> Option<&mut Memo> {
        if len >= MEMO_MIN_LEN
            && memo
                .as_ref()
                .is_none_or(|m| m.slots.len() < Memo::slots_for(len))
        {
            *memo = Memo::for_text(len);
        }
        memo.as_mut()
    }

    #[allow(clippy::inline_always)] // hot path; measurably faster inlined
    #[inline(always)]
    fn get_or(&mut self, hash: u64, cost: impl FnOnce() -> u64) -> u64 {
        // Bits the vocabulary filter does not use for its block or bit choice.
        let index = (hash >> 36) as usize & (self.slots.len() - 1);
        // A slot holds the cost plus one: zero is an empty slot, whatever the hash.
        match self.slots.get_mut(index) {
            Some(slot) if slot.0 == hash && slot.1 != 0 => slot.1 - 1,
            Some(slot) => {
                let c = cost();
                *slot = (hash, c.saturating_add(1));
                c
            }
            None => cost(),
        }
    }
}

/// Table units → whole tokens, rounded to nearest.
#[inline]
fn to_tokens(units: u64) -> u64 {
    (units + ONE / 2) / ONE
}

/// How one of the four fitted encodings is estimated.
#[derive(Clone, Copy)]
pub struct Model {
    /// The pre-tokenizer to emulate.
    pub dialect: Dialect,
    table: &'static [u16],
    digit_group: u32,
    /// Which pieces the vocabulary has whole, and what the characters it lacks cost.
    pub vocab: Vocab<'static>,
}

/// The vocabulary of the fitted encoding at `index` in [`Encoding::ALL`].
fn vocab_of(index: usize) -> Vocab<'static> {
    // The character costs alone come first, then the same tables after a space.
    let (alone, after_space) = profiles::CHAR_COSTS.split_at(profiles::CHAR_COSTS.len() / 2);
    let part = |bytes: &'static [u8], size: usize| {
        bytes
            .get(index * size..(index + 1) * size)
            .unwrap_or_default()
    };
    Vocab {
        filter: Filter(part(profiles::VOCAB_FILTERS, vocab::FILTER_BYTES)),
        prefixes: PrefixFilter(part(profiles::PREFIX_FILTERS, vocab::PREFIX_BYTES)),
        chars: CharCosts(part(alone, vocab::CHAR_COST_BYTES)),
        spaced: CharCosts(part(after_space, vocab::CHAR_COST_BYTES)),
    }
}

/// The model of one of the four fitted encodings (`None` for `Conservative`).
#[must_use]
pub fn model(encoding: Encoding) -> Option<Model> {
    let (dialect, table, digit_group, index) = match encoding {
        Encoding::Cl100k => (Dialect::Cl100k, profiles::CL100K, 3, 0),
        Encoding::O200k => (Dialect::O200k, profiles::O200K, 3, 1),
        Encoding::Llama3 => (Dialect::Cl100k, profiles::LLAMA3, 3, 2),
        Encoding::Qwen3 => (Dialect::Cl100k, profiles::QWEN3, 1, 3),
        Encoding::Conservative => return None,
    };
    Some(Model {
        dialect,
        table,
        digit_group,
        vocab: vocab_of(index),
    })
}

/// Table units of `text` in the one encoding `m` (one scan in its dialect).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn units(text: &[u8], m: &Model, memo: Option<&mut Memo>) -> u64 {
    let [u] = units_in(text, m.dialect, std::array::from_ref(m), [memo]);
    u
}

/// A running estimate over text fed in pieces that end at pre-token boundaries (see
/// [`units`](crate::units) for how such boundaries are found); one chunk is one text.
#[derive(Debug, Clone)]
pub struct Estimator {
    encoding: Encoding,
    /// Table units: of the encoding; for `Conservative`, of cl100k, qwen3 and o200k (see
    /// [`units_conservative`]).
    acc: [u64; 3],
    /// Split costs seen in the chunks so far, in the order of `acc` (set up on the first
    /// chunk long enough to pay for one).
    memos: [Option<Memo>; 3],
    /// Bytes still to be fed before the vocabulary filters are read through
    /// ([`WARM_MIN_LEN`]); `None` once they were.
    until_warm: Option<usize>,
}

impl Estimator {
    /// A fresh estimate for `encoding`.
    #[must_use]
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            acc: [0; 3],
            memos: [None, None, None],
            until_warm: Some(WARM_MIN_LEN),
        }
    }

    /// A fresh estimate for `encoding` that will be given about `len` bytes in all, in
    /// chunks or texts of any size: its memo of split costs is set up at once when that pays
    /// (see [`Estimator::take_tokens`] for estimating many texts with one).
    #[must_use]
    pub fn for_bytes(encoding: Encoding, len: usize) -> Self {
        let mut est = Self::new(encoding);
        let fitted = if encoding == Encoding::Conservative {
            3
        } else {
            1
        };
        for memo in &mut est.memos[..fitted] {
            *memo = Memo::for_text(len);
        }
        if len >= WARM_MIN_LEN {
            // What is announced is then fed: counted once, here.
            est.warm_for(len);
        }
        est
    }

    /// Counts `len` bytes toward [`WARM_MIN_LEN`], and once there reads the vocabulary
    /// filters of the encoding (of the three `Conservative` takes) through, in order.
    fn warm_for(&mut self, len: usize) {
        let Some(left) = self.until_warm else {
            return;
        };
        if len < left {
            self.until_warm = Some(left - len);
            return;
        }
        self.until_warm = None;
        let encodings: &[Encoding] = match self.encoding {
            Encoding::Conservative => &[Encoding::Cl100k, Encoding::Qwen3, Encoding::O200k],
            _ => std::slice::from_ref(&self.encoding),
        };
        for m in encodings.iter().filter_map(|&e| model(e)) {
            vocab::warm(m.vocab.filter.0);
        }
    }

    /// The estimate so far, in whole tokens, and a fresh start for the next text (its memo
    /// of split costs kept: many small texts share one).
    pub fn take_tokens(&mut self) -> u64 {
        let tokens = self.tokens();
        self.acc = [0; 3];
        tokens
    }

    /// Adds the estimate of `chunk` (UTF-8 expected; invalid bytes cost one token each).
    /// Qwen3 estimates the chunk in NFC, as its tokenizer reads it (`rust/nfc.rs`). `Conservative`
    /// takes qwen3's estimate of the chunk as it is: checking and normalizing it there made
    /// `Conservative` 0.82x as fast on the eval split's other scripts, whose Indic catalogs
    /// hold decomposed letters, and the text as it is never costs qwen3 fewer tokens on the
    /// corpora measured (decomposed, each mark is a piece of its own).
    pub fn feed(&mut self, chunk: &[u8]) {
        self.warm_for(chunk.len());
        match self.encoding {
            Encoding::Qwen3 => match nfc::normalized(chunk) {
                Some(normal) => self.feed_fitted(&normal),
                None => self.feed_fitted(chunk),
            },
            Encoding::Conservative => self.feed_conservative(chunk),
            _ => self.feed_fitted(chunk),
        }
    }

    fn feed_fitted(&mut self, chunk: &[u8]) {
        if let Some(m) = model(self.encoding) {
            let memo = Memo::keep(&mut self.memos[0], chunk.len());
            self.acc[0] += units(chunk, &m, memo);
        }
    }

    fn feed_conservative(&mut self, chunk: &[u8]) {
        let all = units_conservative(chunk, &mut self.memos);
        for (a, u) in self.acc.iter_mut().zip(all) {
            *a += u;
        }
    }

    /// Adds another estimate of the same encoding (of text that follows this one at a
    /// pre-token boundary).
    pub fn merge(&mut self, other: &Estimator) {
        for (a, b) in self.acc.iter_mut().zip(other.acc) {
            *a += b;
        }
    }

    /// The estimate so far, in whole tokens.
    #[must_use]
    pub fn tokens(&self) -> u64 {
        match self.encoding {
            Encoding::Conservative => conservative(self.acc.map(to_tokens)),
            _ => to_tokens(self.acc[0]),
        }
    }
}

/// Tokens added to every non-empty `Conservative` estimate: small texts round coarsely.
pub const CONSERVATIVE_EXTRA: u64 = 4;

/// `Conservative` from the estimates of [`units_conservative`]: the largest, raised by the
/// fitted safety margin plus [`CONSERVATIVE_EXTRA`]. The margin is fitted against the largest
/// of all four true counts, so it covers llama3 too; `benches/accuracy.py` checks it on the
/// eval split, `benches/conservative_sweep.py` on other files.
fn conservative(all: [u64; 3]) -> u64 {
    let top = all.into_iter().max().unwrap_or(0);
    if top == 0 {
        return 0;
    }
    (top * u64::from(profiles::CONSERVATIVE_MARGIN)).div_ceil(ONE) + CONSERVATIVE_EXTRA
}

/// Estimated token count of `text` (UTF-8 expected) in `encoding`.
///
/// One pass over the bytes; invalid UTF-8 bytes and other oddities never panic (an invalid byte
/// counts as one token). `Conservative` is the largest of the cl100k, qwen3 and o200k estimates
/// (`units_conservative`), raised by a margin fitted to keep it above all four tokenizers.
#[must_use]
pub fn estimate_tokens(text: &[u8], encoding: Encoding) -> u64 {
    let mut e = Estimator::new(encoding);
    e.feed(text);
    e.tokens()
}

/// Table units for `Conservative`: cl100k, qwen3 and o200k, from one pass over the text
/// (`rust/conservative.rs`; o200k needs pieces of its own: it splits words where a lower-case
/// letter meets an upper-case one, and its vocabulary is not a superset of cl100k's: ` ├──` is
/// one cl100k token, three o200k tokens). llama3, whose vocabulary extends cl100k's under the
/// same pre-tokenizer, is left to the margin: on the fitting corpus it never counts more tokens
/// than all three others. `memos` are cl100k's, qwen3's and o200k's.
fn units_conservative(text: &[u8], memos: &mut [Option<Memo>; 3]) -> [u64; 3] {
    let (Some(cl), Some(qw), Some(o2)) = (
        model(Encoding::Cl100k),
        model(Encoding::Qwen3),
        model(Encoding::O200k),
    ) else {
        return [0; 3];
    };
    let mut memos = memos.each_mut().map(|m| Memo::keep(m, text.len()));
    conservative::units_conservative(text, &[cl, qw, o2], &mut memos)
}

/// Table units in each of `models` from one scan in the cl100k dialect, which they all share
/// (cl100k, llama3 and qwen3 pre-tokenize alike but for digit runs, which each table costs in
/// its own digit groups). `memos` are theirs, in the same order.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn units_shared<const N: usize>(
    text: &[u8],
    models: &[Model; N],
    memos: [&mut Option<Memo>; N],
) -> [u64; N] {
    let memos = memos.map(|m| Memo::keep(m, text.len()));
    units_in(text, Dialect::Cl100k, models, memos)
}

/// Table units in each of `models`, which pre-tokenize alike in `dialect`, from one scan:
/// the pieces of each window costed together ([`window_units`]), the rest one by one.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn units_in<const N: usize>(
    text: &[u8],
    dialect: Dialect,
    models: &[Model; N],
    mut memos: [Option<&mut Memo>; N],
) -> [u64; N] {
    let mut acc = [0u64; N];
    scan::scan_steps(text, dialect, |step| match step {
        Step::Window(settled) => {
            let units = window_units([(settled, dialect); N], text, models, &mut memos);
            for (a, u) in acc.iter_mut().zip(units) {
                *a += u;
            }
        }
        Step::Piece(f) => {
            for (a, u) in acc.iter_mut().zip(piece_units(f, text, models, &mut memos)) {
                *a += u;
            }
        }
    });
    acc
}

/// Table units of one piece the byte scanner found, in each of `models` (its features built
/// once for all of them).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn piece_units<const N: usize>(
    f: &Found<'_>,
    text: &[u8],
    models: &[Model; N],
    memos: &mut [Option<&mut Memo>; N],
) -> [u64; N] {
    let h = found_hash(f, text);
    let mut piece = lazy(f);
    let span = (f.start, f.end);
    let mut units = [0u64; N];
    for ((u, m), memo) in units.iter_mut().zip(models).zip(memos) {
        *u = piece_cost(&mut piece, text, span, h, m, memo.as_deref_mut());
    }
    units
}

/// Estimates for cl100k, o200k, llama3 and qwen3 (in that order) in two scans: the three
/// cl100k-like encodings share one.
#[must_use]
pub fn estimate_all(text: &[u8]) -> [u64; 4] {
    let [Some(cl), Some(o2), Some(ll), Some(qw)] = [
        Encoding::Cl100k,
        Encoding::O200k,
        Encoding::Llama3,
        Encoding::Qwen3,
    ]
    .map(model) else {
        return [0; 4];
    };
    let [cl_units, ll_units, qw_units] =
        units_shared(text, &[cl, ll, qw], [&mut None, &mut None, &mut None]);
    [cl_units, units(text, &o2, None), ll_units, qw_units].map(to_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::XorShift;

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
    fn the_filters_are_read_through_once_enough_text_was_fed() {
        let chunk = vec![b'a'; WARM_MIN_LEN / 4];
        let mut est = Estimator::new(Encoding::O200k);
        for left in [3, 2, 1] {
            est.feed(&chunk);
            assert_eq!(est.until_warm, Some(left * WARM_MIN_LEN / 4));
        }
        est.feed(&chunk);
        assert_eq!(est.until_warm, None);
        est.feed(&chunk);
        assert_eq!(est.until_warm, None);
        // Told the size up front (a batch of many small texts): counted once, not again as
        // the texts are fed.
        assert_eq!(
            Estimator::for_bytes(Encoding::O200k, WARM_MIN_LEN).until_warm,
            None
        );
        let mut small = Estimator::for_bytes(Encoding::Conservative, WARM_MIN_LEN - 1);
        assert_eq!(small.until_warm, Some(WARM_MIN_LEN));
        for _ in 0..(WARM_MIN_LEN - 1) / 1024 {
            small.feed(&[b'a'; 1024]);
            small.take_tokens();
        }
        assert!(small.until_warm.is_some());
    }

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

    /// The four fitted encodings (`Conservative` adds a margin on top).
    const FITTED: [Encoding; 4] = [
        Encoding::Cl100k,
        Encoding::O200k,
        Encoding::Llama3,
        Encoding::Qwen3,
    ];

    #[test]
    fn ascii_words() {
        for e in FITTED {
            let n = estimate_tokens(b"hello world this is a test", e);
            assert_eq!(n, 6, "{e:?}");
        }
        let c = estimate_tokens(b"hello world this is a test", Encoding::Conservative);
        assert!((6..=14).contains(&c), "{c}");
    }

    /// The length feature of the one piece `text` is, in `e`.
    fn one_piece_length(text: &[u8], e: Encoding) -> u32 {
        let m = model(e).expect("fitted");
        let mut pieces = Vec::new();
        scan::scan(text, m.dialect, |p| pieces.push(p));
        assert_eq!(pieces.len(), 1, "{text:?}");
        piece_length(&pieces[0], text, &m)
    }

    #[test]
    fn a_prefix_merged_with_the_word_is_not_costed_apart() {
        // cl100k: `/distro` is `/d` + `istro` and `.shields` is `.sh` + `ields`, where `distro`
        // and `shields` alone are two tokens each: costed apart, the prefix would make three.
        assert_eq!(one_piece_length(b"/distro", Encoding::Cl100k), 2);
        assert_eq!(one_piece_length(b".shields", Encoding::Cl100k), 2);
        // A prefix before a word the vocabulary has whole stays apart: `{` + `visibility`.
        assert_eq!(one_piece_length(b"{visibility", Encoding::Cl100k), 2);
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
        for e in FITTED {
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
                assert!(n <= t.len() as u64 * 3 + CONSERVATIVE_EXTRA);
            }
        }
        assert_eq!(estimate_tokens(b"\xff\xff\xff\xff", Encoding::Cl100k), 4);
    }

    /// Units of `text` in `m`, each piece costed in turn as the byte scanner alone finds it
    /// (no windows anywhere).
    fn units_piece_by_piece(text: &[u8], m: &Model, mut memo: Option<&mut Memo>) -> u64 {
        let mut acc = 0;
        scan::scan_bytes(text, m.dialect, |p| {
            let h = piece_hash(&p, text);
            acc += piece_cost(&mut || p, text, (p.start, p.end), h, m, memo.as_deref_mut());
        });
        acc
    }

    /// Random text of `len` atoms, mostly ASCII: pieces of every kind and length, windows of
    /// ASCII between non-ASCII characters.
    fn random_text(rng: &mut XorShift, len: usize) -> Vec<u8> {
        const ATOMS: &[&str] = &[
            "the",
            " quick",
            "Brown",
            " camelCaseWord",
            " ",
            "  ",
            "\n",
            "\n\n  ",
            "\t",
            "12345",
            "3.14",
            "'s",
            "'ll",
            "{\"key\": ",
            "----",
            "========",
            "é",
            " Straße",
            "ÀÉÎ",
            " Ελλάδα",
            " Москва",
            "×",
            "日本語",
            "🎉",
            " abcdefghijklmnopqrstuvwxyz",
            "xQ9vLk2PzR7mWt4YbN8c",
            "https://example.com/a/b",
            "/",
            "***",
            " iPhone",
            "aGVsbG8gd29ybGQ=",
            "0x1F",
            ", ",
            ".",
            "\r\n",
            "ZZZZZZZZZZZZZZZZZZ",
            // Whole tokens of every length up to 16 bytes, where window pieces are hashed
            // from one load.
            " a",
            " is",
            " the",
            " that",
            " which",
            " should",
            " between",
            " function",
            " important",
            " information",
            " development",
            " organization",
            " understanding",
            " responsibility",
            " administration",
            " implementations",
            " characteristics",
            " straightforward",
        ];
        (0..len)
            .flat_map(|_| ATOMS[rng.index(ATOMS.len())].bytes())
            .collect()
    }

    /// The samples, `count` random texts of 1 to `longest` atoms and one of `long` atoms.
    fn test_texts(seed: u64, count: usize, longest: usize, long: usize) -> Vec<Vec<u8>> {
        let mut rng = XorShift(seed);
        let mut texts: Vec<Vec<u8>> = SAMPLES.iter().map(|s| s.as_bytes().to_vec()).collect();
        texts.extend((0..count).map(|k| random_text(&mut rng, 1 + k % longest)));
        texts.push(random_text(&mut rng, long));
        texts
    }

    #[test]
    fn a_memo_gives_back_what_it_was_given_for_any_hash() {
        let mut memo = Memo::for_text(1 << 20).expect("long enough");
        // Hash 0 is no empty slot, and a cost of 0 is kept like any other.
        for (hash, cost) in [
            (0u64, 7u64),
            (0, 7),
            (1 << 36, 0),
            (1 << 36, 0),
            (u64::MAX, 3),
        ] {
            assert_eq!(memo.get_or(hash, || cost), cost, "hash {hash:#x}");
        }
        // A hash seen before is not costed again; an empty slot always is.
        let mut calls = 0;
        for _ in 0..3 {
            memo.get_or(0, || {
                calls += 1;
                7
            });
        }
        assert_eq!(calls, 0);
    }

    #[test]
    fn memos_of_every_size_give_what_no_memo_does() {
        let slots = |memo: Option<&mut Memo>| memo.map(|m| m.slots.len());
        assert_eq!(slots(Memo::for_text(MEMO_MIN_LEN - 1).as_mut()), None);
        assert_eq!(
            slots(Memo::for_text(MEMO_MIN_LEN).as_mut()),
            Some(MEMO_MIN_SLOTS)
        );
        assert_eq!(slots(Memo::for_text(16 * 1024).as_mut()), Some(MEMO_SLOTS));
        assert_eq!(slots(Memo::for_text(1 << 30).as_mut()), Some(MEMO_SLOTS));
        // A kept memo grows for a longer text (an estimator fed a short chunk first), and
        // never shrinks.
        let mut memo = None;
        assert_eq!(slots(Memo::keep(&mut memo, 100)), None);
        assert_eq!(slots(Memo::keep(&mut memo, 2048)), Some(512));
        assert_eq!(slots(Memo::keep(&mut memo, 1 << 20)), Some(MEMO_SLOTS));
        assert_eq!(slots(Memo::keep(&mut memo, 100)), Some(MEMO_SLOTS));
        // The smallest memo, whose slots many pieces share, counts what no memo does.
        let texts = test_texts(0x0BAD_5EED_2026_1203, 200, 400, 5_000);
        for e in FITTED {
            let m = model(e).unwrap();
            for text in &texts {
                let mut small = Memo::for_text(MEMO_MIN_LEN);
                assert_eq!(
                    units(text, &m, small.as_mut()),
                    units(text, &m, None),
                    "{e:?}"
                );
            }
        }
    }

    #[test]
    fn windows_cost_what_each_piece_costs_in_turn() {
        let texts = test_texts(0x5851_F42D_4C95_7F2D, 300, 97, 20_000);
        for e in FITTED {
            let m = model(e).unwrap();
            for text in &texts {
                let (mut a, mut b) = (Memo::for_text(1 << 20), Memo::for_text(1 << 20));
                assert_eq!(
                    units(text, &m, a.as_mut()),
                    units_piece_by_piece(text, &m, b.as_mut()),
                    "{e:?} on {:?}",
                    String::from_utf8_lossy(text)
                );
                assert_eq!(units(text, &m, None), units_piece_by_piece(text, &m, None));
            }
        }
        // Two models from one scan: each as alone.
        let (cl, qw) = (
            model(Encoding::Cl100k).unwrap(),
            model(Encoding::Qwen3).unwrap(),
        );
        for text in &texts {
            let both = units_shared(text, &[cl, qw], [&mut None, &mut None]);
            assert_eq!(
                both,
                [
                    units_piece_by_piece(text, &cl, None),
                    units_piece_by_piece(text, &qw, None)
                ]
            );
        }
    }

    #[test]
    fn conservative_in_one_pass_costs_what_three_scans_do() {
        let mut texts = test_texts(0x1405_7B7E_F767_814F, 400, 131, 30_000);
        texts.push(b"getValue setItem 'quoted' it's you'll x/y // a/b/c ".repeat(300));
        let [cl, qw, o2] =
            [Encoding::Cl100k, Encoding::Qwen3, Encoding::O200k].map(|e| model(e).unwrap());
        for text in &texts {
            let want = [&cl, &qw, &o2].map(|m| units_piece_by_piece(text, m, None));
            assert_eq!(
                units_conservative(text, &mut [None, None, None]),
                want,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn random_bytes_do_not_panic() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let buf: Vec<u8> = (0..4096).map(|_| (rng.next() >> 24) as u8).collect();
        for e in Encoding::ALL {
            let _ = estimate_tokens(&buf, e);
        }
    }

    #[test]
    fn conservative_covers_cl100k_and_qwen3() {
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let noise: Vec<u8> = (0..2048).map(|_| (rng.next() >> 24) as u8).collect();
        for s in SAMPLES
            .iter()
            .map(|s| s.as_bytes())
            .chain([noise.as_slice()])
        {
            let c = estimate_tokens(s, Encoding::Conservative);
            for e in [Encoding::Cl100k, Encoding::Qwen3] {
                assert!(c > estimate_tokens(s, e), "{e:?} on {s:?}");
            }
        }
    }

    #[test]
    fn conservative_covers_o200k_where_it_splits_camel_case() {
        // o200k splits these words at the case change; cl100k and qwen3 have them whole.
        let words = " iPhone GitHub setTimeout isNaN XMLHttpRequest macOS toString".repeat(100);
        let o200k = estimate_tokens(words.as_bytes(), Encoding::O200k);
        let cl100k = estimate_tokens(words.as_bytes(), Encoding::Cl100k);
        assert!(o200k > cl100k * 3 / 2, "{o200k} vs {cl100k}");
        assert!(estimate_tokens(words.as_bytes(), Encoding::Conservative) >= o200k);
    }

    #[test]
    fn conservative_is_above_o200k_and_llama3_on_samples() {
        // Above o200k by construction; above llama3 because the fitted margin makes room.
        for s in SAMPLES {
            let c = estimate_tokens(s.as_bytes(), Encoding::Conservative);
            for e in [Encoding::O200k, Encoding::Llama3] {
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
                // `Conservative` adds a constant, which doubling does not double.
                assert!(
                    b >= 1.8 * a - 6.0 && b <= 2.2 * a + 2.0,
                    "{e:?} {a} {b} on {s:?}"
                );
            }
        }
    }
}
