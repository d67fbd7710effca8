//! AVX2 building blocks of the vocabulary probes: four piece hashes at once, and four filter
//! probes with one gather. The tier below [`avx512`](crate::avx512), for processors without
//! AVX-512 (AMD before Zen 4, Intel desktop and laptop parts of most generations).
//!
//! Only on `x86_64`, and only where [`available`] says the processor has the features (checked
//! once, at run time): callers keep a one-by-one path beside each use and tests check that
//! all agree. `CTXBUDGET_NO_AVX2` in the environment, set to any value (even `0`), turns the
//! estimator's AVX2 paths off for the process; it is read once. (`CTXBUDGET_NO_AVX512` turns
//! off the tier above only: with both set, the one-by-one paths run. Text validation,
//! `rust/text.rs`, checks for AVX2 on its own and ignores both.)

#[allow(clippy::wildcard_imports)]
use std::arch::x86_64::*;
use std::sync::OnceLock;

use crate::vocab::{BLOCKS, K, K2};

// `probe` takes a block index from the hash's top bits.
const _: () = assert!(BLOCKS == 1 << 16);

/// Whether this processor has the features every function here and its callers are compiled
/// for (checked once), and the paths are not turned off.
#[must_use]
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("bmi1")
            && is_x86_feature_detected!("bmi2")
            && is_x86_feature_detected!("popcnt")
            && std::env::var_os("CTXBUDGET_NO_AVX2").is_none()
    })
}

/// [`vocab::hash_words`](crate::vocab::hash_words) of four pieces: their first eight bytes
/// `lo`, the next eight `hi` (both zero past each piece's end) and their lengths `len`. The
/// 64 × 64 → 128-bit multiply of the fold is built from four 32-bit ones, and so is
/// `len * K2`.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(crate) fn hash4(lo: __m256i, hi: __m256i, len: __m256i) -> __m256i {
    // `len * K2` (len < 2^32): the low and the high half of K2, each times len.
    let k2 = _mm256_set1_epi64x(K2 as i64);
    let len_k2 = _mm256_add_epi64(
        _mm256_mul_epu32(len, k2),
        _mm256_slli_epi64::<32>(_mm256_mul_epu32(len, _mm256_srli_epi64::<32>(k2))),
    );
    let a = _mm256_xor_si256(lo, _mm256_xor_si256(len_k2, _mm256_set1_epi64x(K as i64)));
    let b = _mm256_xor_si256(hi, k2);
    let low = _mm256_set1_epi64x(0xFFFF_FFFF);
    let (a1, b1) = (_mm256_srli_epi64::<32>(a), _mm256_srli_epi64::<32>(b));
    let p00 = _mm256_mul_epu32(a, b);
    let p01 = _mm256_mul_epu32(a, b1);
    let p10 = _mm256_mul_epu32(a1, b);
    let p11 = _mm256_mul_epu32(a1, b1);
    let mid = _mm256_add_epi64(
        _mm256_srli_epi64::<32>(p00),
        _mm256_add_epi64(_mm256_and_si256(p01, low), _mm256_and_si256(p10, low)),
    );
    let lo = _mm256_or_si256(_mm256_and_si256(p00, low), _mm256_slli_epi64::<32>(mid));
    let hi = _mm256_add_epi64(
        _mm256_add_epi64(p11, _mm256_srli_epi64::<32>(mid)),
        _mm256_add_epi64(_mm256_srli_epi64::<32>(p01), _mm256_srli_epi64::<32>(p10)),
    );
    _mm256_xor_si256(lo, hi)
}

/// A hashed lane's place in a filter: its block and the six bits it wants there.
#[derive(Clone, Copy)]
pub(crate) struct Slots {
    block: __m256i,
    bits: __m256i,
}

/// The [`Slots`] of four hashes ([`vocab`](crate::vocab)'s `slot`, four at once).
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(crate) fn slots(h: __m256i) -> Slots {
    let (one, low6) = (_mm256_set1_epi64x(1), _mm256_set1_epi64x(63));
    let bit = |field: __m256i| _mm256_sllv_epi64(one, _mm256_and_si256(field, low6));
    let bits = _mm256_or_si256(
        _mm256_or_si256(bit(h), bit(_mm256_srli_epi64::<6>(h))),
        _mm256_or_si256(
            _mm256_or_si256(
                bit(_mm256_srli_epi64::<12>(h)),
                bit(_mm256_srli_epi64::<18>(h)),
            ),
            _mm256_or_si256(
                bit(_mm256_srli_epi64::<24>(h)),
                bit(_mm256_srli_epi64::<30>(h)),
            ),
        ),
    );
    Slots {
        // The block index is the hash's top 16 bits.
        block: _mm256_srli_epi64::<48>(h),
        bits,
    }
}

/// Which of the `valid` lanes (all bits of a lane set, or none) the filter at `words` may
/// hold, as all bits set in the lane.
///
/// # Safety
/// The processor must have the features ([`available`]), and `words` must come from
/// [`Filter::words`](crate::vocab::Filter::words) (a whole filter).
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(crate) unsafe fn probe(slots: Slots, valid: __m256i, words: *const i64) -> __m256i {
    // SAFETY: block indices are below BLOCKS (16 bits), and a whole filter has BLOCKS words;
    // lanes off in `valid` are not read.
    let got = unsafe {
        _mm256_mask_i64gather_epi64::<8>(_mm256_setzero_si256(), words.cast(), slots.block, valid)
    };
    // Every bit the lane wants is set (an invalid lane got 0, and wants at least one bit).
    _mm256_cmpeq_epi64(_mm256_and_si256(got, slots.bits), slots.bits)
}
