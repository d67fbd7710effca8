//! Costing the pieces of one ASCII window together.
//!
//! Most pieces are one token, and finding that out is a hash and one probe of the
//! vocabulary filter. Taken one piece at a time, with a branch on the piece's length inside the
//! hash and another on the filter's answer, the processor mispredicts about once a piece and
//! then waits for each probe in turn. Here the pieces one window settles are hashed from
//! 16-byte loads masked to their length ([`vocab::hash_words`]) and probed with no branch but
//! the loop's, the answers gathered in a bit mask per encoding: independent probes overlap.
//! Only the pieces a filter lacks (and digit runs, and pieces over 16 bytes) go on, one by one,
//! to the full costing of [`estimate`](crate::estimate). The result is exactly what costing
//! each piece in turn gives.

use crate::blocks::Settled;
use crate::estimate::{ascii_digit_units, lazy, piece_cost, split_cost, Memo, Model, ONE};
use crate::scan::Dialect;
use crate::vocab;

/// Longest piece whose hash [`window_units`] takes from one masked load.
const SHORT: u32 = 16;

/// The 16 bytes of `text` from `at` as a little-endian number, zero past the end of the text.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn load16(text: &[u8], at: usize) -> u128 {
    if let Some(bytes) = text
        .get(at..at + 16)
        .and_then(|s| <[u8; 16]>::try_from(s).ok())
    {
        return u128::from_le_bytes(bytes);
    }
    let mut bytes = [0u8; 16];
    let rest = text.get(at..).unwrap_or_default();
    bytes[..rest.len().min(16)].copy_from_slice(&rest[..rest.len().min(16)]);
    u128::from_le_bytes(bytes)
}

/// The hash of the piece of `len` bytes (at most [`SHORT`]) whose first 16 bytes are `v`.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn short_hash(v: u128, len: u32) -> u64 {
    let keep = if len >= SHORT {
        u128::MAX
    } else {
        (1u128 << (8 * len)) - 1
    };
    let v = v & keep;
    vocab::hash_words(v as u64, (v >> 64) as u64, len as usize)
}

/// Table units of the pieces `settled` holds, in each of `models` (which share its dialect),
/// with their `memos`: the same as adding up [`piece_cost`] of each piece. Not inlined: the
/// byte scanner's pieces, costed one by one beside it, run faster in a small loop.
#[inline(never)]
pub(crate) fn window_units<const N: usize>(
    settled: &Settled<'_>,
    text: &[u8],
    dialect: Dialect,
    models: &[Model; N],
    memos: &mut [Option<&mut Memo>; N],
) -> [u64; N] {
    let mut hits = [0u64; N];
    // Every settled piece's hash and, per model, whether its filter has it: no branch
    // but the loop's.
    for (start, end) in settled.pieces() {
        let len = end - start;
        let h = short_hash(load16(text, settled.at + start as usize), len);
        let short = u64::from(len <= SHORT);
        for (hit, m) in hits.iter_mut().zip(models) {
            *hit |= (u64::from(m.vocab.contains(h)) & short) << start;
        }
    }
    let digits = settled.win.digit_bits();
    let mut acc = [0u64; N];
    for (a, hit) in acc.iter_mut().zip(&mut hits) {
        *hit &= !digits;
        *a = u64::from(hit.count_ones()) * ONE;
    }
    // The rest, one by one, through the full costing.
    let last = settled.end();
    let mut rest = settled.starts & !(1u64 << last) & !hits.iter().fold(u64::MAX, |all, h| all & h);
    while rest != 0 {
        let start = rest.trailing_zeros();
        rest &= rest - 1;
        let end = (settled.starts & !(u64::MAX >> (63 - start))).trailing_zeros();
        if digits & (1u64 << start) != 0 {
            for (a, m) in acc.iter_mut().zip(models) {
                *a += ascii_digit_units(m, end - start);
            }
            continue;
        }
        let found = settled.found(start, end, dialect);
        let mut piece = lazy(&found);
        let short = end - start <= SHORT;
        let span = (settled.at + start as usize, settled.at + end as usize);
        let hash = if short {
            short_hash(load16(text, span.0), end - start)
        } else {
            text.get(span.0..span.1).map_or(0, vocab::hash)
        };
        for (k, m) in models.iter().enumerate() {
            if hits[k] & (1u64 << start) != 0 {
                continue;
            }
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
        for start in 0..text.len() {
            for end in start + 1..=text.len().min(start + SHORT as usize) {
                let v = load16(text, start);
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
