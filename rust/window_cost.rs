//! Costing the pieces of one window together.
//!
//! Most pieces are one token, and finding that out is a hash and one probe of the
//! vocabulary filter. Taken one piece at a time, with a branch on the piece's length inside the
//! hash and another on the filter's answer, the processor mispredicts about once a piece and
//! then waits for each probe in turn. Here the pieces one window settles are hashed from
//! 16-byte loads masked to their length ([`vocab::hash_words`]) and probed with no branch, the
//! answers gathered in a bit mask per encoding ([`window_hits`], eight pieces at a time where
//! the processor has AVX-512, four with AVX2). Only the pieces a filter lacks (and digit runs,
//! and pieces over 16 bytes) go on, one by one, to the full costing of
//! [`estimate`](crate::estimate). The result is exactly what costing each piece in turn gives.

use crate::blocks::Settled;
use crate::estimate::{ascii_digit_units, piece_cost, split_cost, Memo, Model, ONE};
use crate::scan::{Dialect, Piece};
use crate::vocab;
use crate::window_hits::window_hits;

/// Longest piece whose hash [`window_units`] takes from one masked load.
pub(crate) const SHORT: u32 = 16;

/// Bytes of text [`window_units`] reads from a window's start: its 64 and 16 more, so that a
/// piece starting anywhere in it can be read with one 16-byte load.
pub(crate) const SPAN: usize = 64 + 16;

/// The [`SPAN`] bytes of `text` from `at`: in place where the text has them all, else copied
/// into `pad`, zero past the end of the text. (Reading them in place also spares the vector
/// loads of [`window_hits`] a wait on the stores of a copy.)
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn span_at<'a>(text: &'a [u8], at: usize, pad: &'a mut [u8; SPAN]) -> &'a [u8; SPAN] {
    if let Some(bytes) = text
        .get(at..at + SPAN)
        .and_then(|s| <&[u8; SPAN]>::try_from(s).ok())
    {
        return bytes;
    }
    let rest = text.get(at..).unwrap_or_default();
    let n = rest.len().min(SPAN);
    pad[..n].copy_from_slice(&rest[..n]);
    pad[n..].fill(0);
    pad
}

/// The 16 bytes of `span` from `start` (below 64) as a little-endian number.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn load16(span: &[u8; SPAN], start: u32) -> u128 {
    let start = (start & 63) as usize;
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&span[start..start + 16]);
    u128::from_le_bytes(bytes)
}

/// Masks keeping the first `n` bytes of a 16-byte number, by `n` (0..=16).
const KEEP: [u128; SHORT as usize + 1] = {
    let mut keep = [u128::MAX; SHORT as usize + 1];
    let mut n = 0;
    while n < SHORT as usize {
        keep[n] = (1u128 << (8 * n)) - 1;
        n += 1;
    }
    keep
};

/// The hash of the piece of `len` bytes (at most [`SHORT`]) whose first 16 bytes are `v`.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn short_hash(v: u128, len: u32) -> u64 {
    let v = v & KEEP[len.min(SHORT) as usize];
    vocab::hash_words(v as u64, (v >> 64) as u64, len as usize)
}

/// Table units of the pieces a window settles, in each of `models`, with their `memos`: the
/// same as adding up [`piece_cost`] of each piece. Each model reads its own settled window
/// and dialect in `windows`; they must all settle the same pieces (the same starts), which
/// are then hashed once. Not inlined: the byte scanner's pieces, costed one by one beside
/// it, run faster in a small loop.
#[inline(never)]
pub(crate) fn window_units<const N: usize>(
    windows: [(&Settled<'_>, Dialect); N],
    text: &[u8],
    models: &[Model; N],
    memos: &mut [Option<&mut Memo>; N],
) -> [u64; N] {
    let Some(&(settled, _)) = windows.first() else {
        return [0; N];
    };
    debug_assert!(windows.iter().all(|(w, _)| w.starts == settled.starts));
    let mut pad = [0u8; SPAN];
    let bytes = span_at(text, settled.at, &mut pad);
    let mut hits = window_hits(settled.starts, bytes, models);
    let digits = settled.win.digit_bits();
    let mut acc = [0u64; N];
    for (a, hit) in acc.iter_mut().zip(&mut hits) {
        *hit &= !digits;
        *a = u64::from(hit.count_ones()) * ONE;
    }
    let last = settled.end();
    let pieces = settled.starts & !(1u64 << last);
    // Digit runs cost by their length alone (hex text has one every few bytes): in a loop of
    // their own, without the branches of the full costing.
    let mut runs = pieces & digits;
    while runs != 0 {
        let start = runs.trailing_zeros();
        runs &= runs - 1;
        let end = (settled.starts & !(u64::MAX >> (63 - start))).trailing_zeros();
        for (a, m) in acc.iter_mut().zip(models) {
            *a += ascii_digit_units(m, end - start);
        }
    }
    // The rest, one by one, through the full costing.
    let mut rest = pieces & !digits & !hits.iter().fold(u64::MAX, |all, h| all & h);
    while rest != 0 {
        let start = rest.trailing_zeros();
        rest &= rest - 1;
        let end = (settled.starts & !(u64::MAX >> (63 - start))).trailing_zeros();
        let short = end - start <= SHORT;
        let span = (settled.at + start as usize, settled.at + end as usize);
        let hash = if short {
            short_hash(load16(bytes, start), end - start)
        } else {
            text.get(span.0..span.1).map_or(0, vocab::hash)
        };
        let mut built: [Option<Piece>; N] = [None; N];
        for (k, m) in models.iter().enumerate() {
            if hits[k] & (1u64 << start) != 0 {
                continue;
            }
            // Models that read the same window share the piece's features.
            let src = (0..k)
                .find(|&q| std::ptr::eq(windows[q].0, windows[k].0) && windows[q].1 == windows[k].1)
                .unwrap_or(k);
            let (win, dialect) = windows[src];
            let mut piece =
                || *built[src].get_or_insert_with(|| win.found(start, end, dialect).piece());
            let memo = memos[k].as_deref_mut();
            // A short piece the filter lacks is known not to be one token.
            acc[k] += if short {
                split_cost(&mut piece, text, Some(hash), m, memo)
            } else {
                piece_cost(&mut piece, text, span, Some(hash), m, memo)
            };
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hash_is_the_hash_of_the_piece() {
        let text = b"The quick brown fox, 0123456789 jumps!";
        let mut pad = [0u8; SPAN];
        let bytes = span_at(text, 0, &mut pad);
        for start in 0..text.len() {
            for end in start + 1..=text.len().min(start + SHORT as usize) {
                let v = load16(bytes, u32::try_from(start).unwrap());
                let len = u32::try_from(end - start).unwrap();
                assert_eq!(
                    short_hash(v, len),
                    vocab::hash(&text[start..end]),
                    "{start}..{end}"
                );
            }
        }
    }
}
