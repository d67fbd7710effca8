//! Choosing what to stub: the fewest items, largest first, that free a requested amount.
//!
//! Used to replace the largest tool outputs with stubs until a request fits its budget.
//! Nothing sorts the whole input: when few items are chosen, one pass through a small
//! min-heap finds them; when many are, bisecting partial selections (expected O(n)) does.
//! Only the chosen items are sorted.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::error::Error;
use std::fmt;

/// The items chosen by [`select_largest`] and what they free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Chosen indices, largest size first; equal sizes oldest (lowest index) first.
    pub indices: Vec<usize>,
    /// Sum of the chosen sizes.
    pub freed: i64,
    /// `max(0, need - freed)`: above zero only when all allowed items together fall short.
    pub shortfall: i64,
}

/// Why [`select_largest`] rejected its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectError {
    /// A size was negative; sizes are token counts.
    NegativeSize {
        /// Lowest index holding a negative size.
        index: usize,
        /// The negative size found there.
        size: i64,
    },
    /// A protected index does not name an item.
    ProtectedOutOfRange {
        /// The offending protected index.
        index: usize,
        /// Number of items (`sizes.len()`).
        len: usize,
    },
    /// The chosen sizes sum to more than `i64::MAX`.
    Overflow,
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NegativeSize { index, size } => {
                write!(
                    f,
                    "size at index {index} is negative ({size}); sizes must be >= 0"
                )
            }
            Self::ProtectedOutOfRange { index, len } => {
                write!(f, "protected index {index} is out of range for {len} items")
            }
            Self::Overflow => f.write_str("the selected sizes sum to more than i64::MAX"),
        }
    }
}

impl Error for SelectError {}

/// An item that may be chosen: allowed and with a positive size.
///
/// Ordered by preference: a larger size is better, and between equal sizes the lower (older)
/// index is better. This is a strict total order, so the chosen set and its order are fully
/// determined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    size: i64,
    index: usize,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.size
            .cmp(&other.size)
            .then(other.index.cmp(&self.index))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Output order: best first.
fn best_first(a: &Candidate, b: &Candidate) -> Ordering {
    b.cmp(a)
}

fn wide_sum(items: &[Candidate]) -> i128 {
    items.iter().map(|c| i128::from(c.size)).sum()
}

/// Picks the fewest indices, largest size first, whose sizes sum to at least `need`.
///
/// Ties between equal sizes go to the lowest index. Protected indices (duplicates allowed)
/// and zero sizes are never chosen. When every allowed item together is not enough, all
/// allowed items with a positive size are chosen and `shortfall` reports the rest.
/// `need <= 0` chooses nothing. Input is validated whatever `need` is.
///
/// # Errors
///
/// Checked in this order: [`SelectError::NegativeSize`] for the lowest index with a negative
/// size; [`SelectError::ProtectedOutOfRange`] for the first protected index `>= sizes.len()`;
/// [`SelectError::Overflow`] when the chosen sizes sum past `i64::MAX`.
pub fn select_largest(
    sizes: &[i64],
    need: i64,
    protected: &[usize],
) -> Result<Selection, SelectError> {
    select_with_limits(sizes, need, protected, StreamLimits::for_len(sizes.len()))
}

/// When streaming gives way to partial selection: past `max_kept` chosen items the heap
/// costs more than partitioning, and `max_pushes` bounds the heap work on unlucky orders
/// (sizes ascending).
#[derive(Clone, Copy)]
struct StreamLimits {
    max_kept: usize,
    max_pushes: usize,
}

impl StreamLimits {
    fn for_len(len: usize) -> Self {
        Self {
            max_kept: len / 16 + 1024,
            max_pushes: len / 4 + 1024,
        }
    }
}

fn select_with_limits(
    sizes: &[i64],
    need: i64,
    protected: &[usize],
    limits: StreamLimits,
) -> Result<Selection, SelectError> {
    if let Some((index, &size)) = sizes.iter().enumerate().find(|&(_, &size)| size < 0) {
        return Err(SelectError::NegativeSize { index, size });
    }
    let mut blocked = vec![false; sizes.len()];
    for &index in protected {
        match blocked.get_mut(index) {
            Some(slot) => *slot = true,
            None => {
                return Err(SelectError::ProtectedOutOfRange {
                    index,
                    len: sizes.len(),
                })
            }
        }
    }
    if need <= 0 {
        return Ok(Selection {
            indices: Vec::new(),
            freed: 0,
            shortfall: 0,
        });
    }

    let candidates = || {
        sizes
            .iter()
            .zip(&blocked)
            .enumerate()
            .filter(|&(_, (&size, &no))| !no && size > 0)
            .map(|(index, (&size, _))| Candidate { size, index })
    };
    let wide_need = i128::from(need);
    let mut chosen = match stream_best(candidates(), wide_need, limits) {
        Some(kept) => kept,
        None => partition_best(candidates().collect(), wide_need),
    };
    chosen.sort_unstable_by(best_first);

    let freed = i64::try_from(wide_sum(&chosen)).map_err(|_| SelectError::Overflow)?;
    Ok(Selection {
        indices: chosen.iter().map(|c| c.index).collect(),
        freed,
        shortfall: need.saturating_sub(freed).max(0),
    })
}

/// One pass with a min-heap of the best items seen so far, trimmed to the fewest whose sum
/// reaches `need` (all of them while the sum falls short). Once the sum reaches `need`, an
/// item no larger than the worst kept one is skipped with a single comparison (it comes
/// later, so it loses the tie too), which is the common case when few items are chosen.
///
/// Returns the chosen items unsorted, or `None` when `limits` are exceeded.
fn stream_best(
    candidates: impl Iterator<Item = Candidate>,
    need: i128,
    limits: StreamLimits,
) -> Option<Vec<Candidate>> {
    let mut heap = BinaryHeap::new();
    let mut kept: i128 = 0;
    // Sizes at or below `floor` cannot enter; -1 admits everything while `kept < need`.
    let mut floor: i64 = -1;
    let mut pushes = 0;
    for candidate in candidates {
        if candidate.size <= floor {
            continue;
        }
        pushes += 1;
        if pushes > limits.max_pushes {
            return None;
        }
        kept += i128::from(candidate.size);
        heap.push(Reverse(candidate));
        while let Some(&Reverse(worst)) = heap.peek() {
            if kept - i128::from(worst.size) < need {
                break;
            }
            kept -= i128::from(worst.size);
            heap.pop();
        }
        if heap.len() > limits.max_kept {
            return None;
        }
        if kept >= need {
            floor = heap.peek().map_or(-1, |worst| worst.0.size);
        }
    }
    Some(heap.into_iter().map(|Reverse(c)| c).collect())
}

/// Keeps the fewest best items of `items` whose sum reaches `need`, or all of them when
/// their total falls short; unsorted.
fn partition_best(mut items: Vec<Candidate>, need: i128) -> Vec<Candidate> {
    if wide_sum(&items) >= need {
        let chosen = best_prefix_len(&mut items, need);
        items.truncate(chosen);
    }
    items
}

/// Reorders `items` so that its first `k` entries are the best `k` (unsorted), and returns
/// the smallest such `k` whose sizes sum to at least `need`.
///
/// Requires `0 < need <= sum(items)`. Bisects on `k` with `select_nth_unstable_by`, keeping
/// `items[..lo]` as the best `lo` items (sum below `need`) and the answer in `(lo, hi]`;
/// each step partitions only `items[lo..hi]`, which halves, so the work is expected O(n).
fn best_prefix_len(items: &mut [Candidate], need: i128) -> usize {
    let (mut lo, mut hi, mut remaining) = (0, items.len(), need);
    while hi - lo > 1 {
        let split = (hi - lo) / 2;
        let Some(window) = items.get_mut(lo..hi) else {
            break;
        };
        window.select_nth_unstable_by(split, best_first);
        let upper = window.get(..split).map_or(0, wide_sum);
        if upper >= remaining {
            hi = lo + split;
        } else {
            remaining -= upper;
            lo += split;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::XorShift;

    fn ok(sizes: &[i64], need: i64, protected: &[usize]) -> Selection {
        match select_largest(sizes, need, protected) {
            Ok(selection) => selection,
            Err(error) => panic!("unexpected error: {error}"),
        }
    }

    fn sel(indices: &[usize], freed: i64, shortfall: i64) -> Selection {
        Selection {
            indices: indices.to_vec(),
            freed,
            shortfall,
        }
    }

    #[test]
    fn example_from_the_spec() {
        assert_eq!(ok(&[5, 1, 9, 3], 10, &[]), sel(&[2, 0], 14, 0));
    }

    #[test]
    fn empty_input() {
        assert_eq!(ok(&[], 0, &[]), sel(&[], 0, 0));
        assert_eq!(ok(&[], 5, &[]), sel(&[], 0, 5));
    }

    #[test]
    fn non_positive_need_chooses_nothing() {
        assert_eq!(ok(&[5, 1], 0, &[]), sel(&[], 0, 0));
        assert_eq!(ok(&[5, 1], -7, &[]), sel(&[], 0, 0));
        assert_eq!(ok(&[5, 1], i64::MIN, &[]), sel(&[], 0, 0));
    }

    #[test]
    fn exact_fit_stops() {
        assert_eq!(ok(&[4, 6, 2], 6, &[]), sel(&[1], 6, 0));
        assert_eq!(ok(&[4, 6, 2], 7, &[]), sel(&[1, 0], 10, 0));
    }

    #[test]
    fn ties_go_to_the_oldest() {
        assert_eq!(ok(&[3, 7, 3, 7, 3], 7, &[]), sel(&[1], 7, 0));
        assert_eq!(ok(&[3, 7, 3, 7, 3], 15, &[]), sel(&[1, 3, 0], 17, 0));
        assert_eq!(ok(&[2, 2, 2, 2], 5, &[]), sel(&[0, 1, 2], 6, 0));
    }

    #[test]
    fn protected_are_skipped_duplicates_fine() {
        assert_eq!(ok(&[5, 1, 9, 3], 10, &[2, 2]), sel(&[0, 3, 1], 9, 1));
        assert_eq!(ok(&[5, 1, 9, 3], 4, &[2, 0, 2]), sel(&[3, 1], 4, 0));
    }

    #[test]
    fn shortfall_chooses_every_allowed_positive_item() {
        assert_eq!(ok(&[0, 4, 0, 4, 1], 100, &[]), sel(&[1, 3, 4], 9, 91));
        assert_eq!(ok(&[0, 0], 1, &[]), sel(&[], 0, 1));
        assert_eq!(ok(&[8, 4], 100, &[0, 1]), sel(&[], 0, 100));
    }

    #[test]
    fn zero_sizes_never_chosen() {
        assert_eq!(ok(&[0, 3, 0], 3, &[]), sel(&[1], 3, 0));
    }

    #[test]
    fn negative_size_is_rejected_at_lowest_index() {
        assert_eq!(
            select_largest(&[1, -2, 3, -4], 1, &[]),
            Err(SelectError::NegativeSize { index: 1, size: -2 })
        );
        // Validated even when nothing is needed, and before protected indices.
        assert_eq!(
            select_largest(&[-1], 0, &[9]),
            Err(SelectError::NegativeSize { index: 0, size: -1 })
        );
    }

    #[test]
    fn protected_out_of_range_is_rejected() {
        assert_eq!(
            select_largest(&[1, 2], 1, &[1, 2, 5]),
            Err(SelectError::ProtectedOutOfRange { index: 2, len: 2 })
        );
        assert_eq!(
            select_largest(&[], -1, &[0]),
            Err(SelectError::ProtectedOutOfRange { index: 0, len: 0 })
        );
    }

    #[test]
    fn overflow_only_when_the_chosen_sum_overflows() {
        assert_eq!(
            select_largest(&[i64::MAX - 1, i64::MAX - 1], i64::MAX, &[]),
            Err(SelectError::Overflow)
        );
        // Everything allowed sums past i64::MAX, but the chosen item alone suffices.
        assert_eq!(
            ok(&[i64::MAX, i64::MAX, 1], i64::MAX, &[]),
            sel(&[0], i64::MAX, 0)
        );
        assert_eq!(
            ok(&[i64::MAX - 1, 1, i64::MAX], i64::MAX, &[2]),
            sel(&[0, 1], i64::MAX, 0)
        );
    }

    #[test]
    fn error_messages_name_the_values() {
        let negative = SelectError::NegativeSize { index: 3, size: -5 };
        assert_eq!(
            negative.to_string(),
            "size at index 3 is negative (-5); sizes must be >= 0"
        );
        let range = SelectError::ProtectedOutOfRange { index: 7, len: 4 };
        assert_eq!(
            range.to_string(),
            "protected index 7 is out of range for 4 items"
        );
        assert!(SelectError::Overflow.to_string().contains("i64::MAX"));
    }

    const STREAM_ONLY: StreamLimits = StreamLimits {
        max_kept: usize::MAX,
        max_pushes: usize::MAX,
    };
    const PARTITION_ONLY: StreamLimits = StreamLimits {
        max_kept: 0,
        max_pushes: 0,
    };

    /// Obviously correct and slow: sort everything allowed, take greedily.
    fn naive(sizes: &[i64], need: i64, protected: &[usize]) -> Result<Selection, SelectError> {
        for (index, &size) in sizes.iter().enumerate() {
            if size < 0 {
                return Err(SelectError::NegativeSize { index, size });
            }
        }
        for &index in protected {
            if index >= sizes.len() {
                return Err(SelectError::ProtectedOutOfRange {
                    index,
                    len: sizes.len(),
                });
            }
        }
        let mut order: Vec<usize> = (0..sizes.len())
            .filter(|i| !protected.contains(i) && sizes[*i] > 0)
            .collect();
        order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
        let mut indices = Vec::new();
        let mut freed: i128 = 0;
        for i in order {
            if freed >= i128::from(need) {
                break;
            }
            indices.push(i);
            freed += i128::from(sizes[i]);
        }
        let freed = i64::try_from(freed).map_err(|_| SelectError::Overflow)?;
        Ok(Selection {
            indices,
            freed,
            shortfall: (i128::from(need) - i128::from(freed)).max(0) as i64,
        })
    }

    #[test]
    fn random_inputs_match_the_naive_reference() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut seen = [0_u32; 5];
        for round in 0..20_000 {
            let len = rng.below(40) as usize;
            let huge = round % 10 == 0;
            let mut sizes: Vec<i64> = (0..len)
                .map(|_| {
                    if huge {
                        i64::MAX - rng.below(3) as i64
                    } else {
                        rng.below(12) as i64
                    }
                })
                .collect();
            if round % 97 == 0 && len > 0 {
                let at = rng.below(len as u64) as usize;
                sizes[at] = -(rng.below(5) as i64) - 1;
            }
            // Now and then allow one index past the end, to exercise the range error.
            let bound = len as u64 + u64::from(round % 53 == 0);
            let protected: Vec<usize> = if bound == 0 {
                Vec::new()
            } else {
                (0..rng.below(6))
                    .map(|_| rng.below(bound) as usize)
                    .collect()
            };
            let total: i64 = sizes.iter().fold(0, |acc, &s| acc.saturating_add(s.max(0)));
            let need = if huge {
                i64::MAX - rng.below(3) as i64
            } else {
                rng.below(total as u64 + 8) as i64 - 3
            };
            let got = select_largest(&sizes, need, &protected);
            let expected = naive(&sizes, need, &protected);
            assert_eq!(
                got, expected,
                "sizes={sizes:?} need={need} protected={protected:?}"
            );
            for limits in [STREAM_ONLY, PARTITION_ONLY] {
                assert_eq!(
                    select_with_limits(&sizes, need, &protected, limits),
                    expected,
                    "sizes={sizes:?} need={need} protected={protected:?}"
                );
            }
            let outcome = match got {
                Ok(selection) if selection.shortfall > 0 => 0,
                Ok(_) => 1,
                Err(SelectError::NegativeSize { .. }) => 2,
                Err(SelectError::ProtectedOutOfRange { .. }) => 3,
                Err(SelectError::Overflow) => 4,
            };
            seen[outcome] += 1;
        }
        assert!(
            seen.iter().all(|&count| count > 0),
            "outcomes seen: {seen:?}"
        );
    }

    #[test]
    fn large_random_inputs_match_the_naive_reference() {
        let mut rng = XorShift(0xD1B5_4A32_D192_ED03);
        for _ in 0..40 {
            let len = 1 + rng.below(5_000) as usize;
            let spread = 1 + rng.below(1_000);
            let sizes: Vec<i64> = (0..len).map(|_| rng.below(spread) as i64).collect();
            let protected: Vec<usize> = (0..rng.below(50))
                .map(|_| rng.below(len as u64) as usize)
                .collect();
            let total: i64 = sizes.iter().sum();
            let need = rng.below(total as u64 + total as u64 / 10 + 2) as i64;
            let expected = naive(&sizes, need, &protected);
            assert_eq!(select_largest(&sizes, need, &protected), expected);
            for limits in [STREAM_ONLY, PARTITION_ONLY] {
                assert_eq!(
                    select_with_limits(&sizes, need, &protected, limits),
                    expected
                );
            }
        }
    }
}
