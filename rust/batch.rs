//! Estimating many texts at once, in parallel across cores when the batch is large.

use rayon::prelude::*;

use crate::estimate::Encoding;
use crate::units::{Surrogate, Text};

/// Batches with fewer bytes than this run on the calling thread: spreading them costs more
/// than it saves.
pub const PARALLEL_THRESHOLD: usize = 256 * 1024;

/// The estimate of every text, in order; in parallel (rayon's global pool) when the batch holds
/// at least [`PARALLEL_THRESHOLD`] bytes and more than one text.
///
/// # Errors
///
/// The index of the first text (in order) that has no UTF-8 form, with the unit position.
pub fn estimate_batch(
    texts: &[Text<'_>],
    encoding: Encoding,
) -> Result<Vec<u64>, (usize, Surrogate)> {
    let total: usize = texts.iter().map(Text::size).sum();
    let one = |(i, t): (usize, &Text<'_>)| t.estimate(encoding).map_err(|e| (i, e));
    if texts.len() > 1 && total >= PARALLEL_THRESHOLD {
        // Small items in runs so the scheduler's overhead stays below the scanning work.
        texts
            .par_iter()
            .enumerate()
            .with_min_len(16)
            .map(one)
            .collect()
    } else {
        texts.iter().enumerate().map(one).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_matches_single_in_order() {
        let owned: Vec<String> = (0..200)
            .map(|i| format!("item {i}: some text, 日本語 {} ", "x".repeat(i * 37)))
            .collect();
        let big = "lorem ipsum dolor sit amet ".repeat(20_000);
        let mut texts: Vec<Text<'_>> = owned.iter().map(|s| Text::Utf8(s.as_bytes())).collect();
        texts.push(Text::Utf8(big.as_bytes()));
        for e in Encoding::ALL {
            let want: Vec<u64> = texts.iter().map(|t| t.estimate(e).unwrap_or(0)).collect();
            assert_eq!(estimate_batch(&texts, e), Ok(want));
            assert_eq!(estimate_batch(&texts[..3], e).map(|v| v.len()), Ok(3));
        }
        assert_eq!(estimate_batch(&[], Encoding::O200k), Ok(vec![]));
    }

    #[test]
    fn first_bad_text_is_reported() {
        let bad = [0xD800u16];
        let texts = [Text::Utf8(b"ok"), Text::Ucs2(&bad)];
        assert_eq!(
            estimate_batch(&texts, Encoding::Cl100k),
            Err((1, Surrogate(0)))
        );
    }
}
