//! AVX-512 building blocks of the vocabulary probes: eight piece hashes at once, and eight
//! filter probes with one gather.
//!
//! Only on `x86_64`, and only where [`available`] says the processor has the features (checked
//! once, at run time): callers keep a one-by-one path beside each use and tests check that
//! both agree. `CTXBUDGET_NO_AVX512` in the environment, set to any value (even `0`), turns the
//! vector paths off for the process (to compare or to rule them out); it is read once.

#[allow(clippy::wildcard_imports)]
use std::arch::x86_64::*;
use std::sync::OnceLock;

use crate::vocab::{BLOCKS, K, K2};

// `slots` takes a block index from the hash's top bits.
const _: () = assert!(BLOCKS == 1 << 16);

/// Whether this processor has the features every function here and its callers are compiled
/// for (checked once), and the vector paths are not turned off.
#[must_use]
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vbmi")
            && is_x86_feature_detected!("avx512vbmi2")
            && is_x86_feature_detected!("avx512bitalg")
            && is_x86_feature_detected!("bmi1")
            && is_x86_feature_detected!("bmi2")
            && is_x86_feature_detected!("popcnt")
            && std::env::var_os("CTXBUDGET_NO_AVX512").is_none()
    })
}

/// [`vocab::hash_words`](crate::vocab::hash_words) of eight pieces: their first eight bytes
/// `lo`, the next eight `hi` (both zero past each piece's end) and `k_len`, which is
/// `K ^ len * K2` of each piece's length. The 64 × 64 → 128-bit multiply of the fold is built
/// from four 32-bit ones.
#[inline]
#[target_feature(
    enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,bmi1,bmi2,popcnt"
)]
pub(crate) fn hash8(lo: __m512i, hi: __m512i, k_len: __m512i) -> __m512i {
    let a = _mm512_xor_si512(lo, k_len);
    let b = _mm512_xor_si512(hi, _mm512_set1_epi64(K2 as i64));
    let low = _mm512_set1_epi64(0xFFFF_FFFF);
    let (a1, b1) = (_mm512_srli_epi64::<32>(a), _mm512_srli_epi64::<32>(b));
    let p00 = _mm512_mul_epu32(a, b);
    let p01 = _mm512_mul_epu32(a, b1);
    let p10 = _mm512_mul_epu32(a1, b);
    let p11 = _mm512_mul_epu32(a1, b1);
    let mid = _mm512_add_epi64(
        _mm512_srli_epi64::<32>(p00),
        _mm512_add_epi64(_mm512_and_si512(p01, low), _mm512_and_si512(p10, low)),
    );
    let lo = _mm512_or_si512(_mm512_and_si512(p00, low), _mm512_slli_epi64::<32>(mid));
    let hi = _mm512_add_epi64(
        _mm512_add_epi64(p11, _mm512_srli_epi64::<32>(mid)),
        _mm512_add_epi64(_mm512_srli_epi64::<32>(p01), _mm512_srli_epi64::<32>(p10)),
    );
    _mm512_xor_si512(lo, hi)
}

/// `K ^ len * K2` of each lane's `len`, for [`hash8`], when `len` is 1 to 16 (the lengths
/// [`hash8`] takes; any other gives some other lane of the table). A table lookup: the 64-bit
/// multiply it replaces is three micro-ops with a long latency.
#[inline]
#[target_feature(
    enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,bmi1,bmi2,popcnt"
)]
pub(crate) fn k_len(len: __m512i) -> __m512i {
    // SAFETY: `K_LEN` holds 16 words: two loads of 8.
    let (low, high) = unsafe {
        (
            _mm512_loadu_si512(K_LEN.as_ptr().cast()),
            _mm512_loadu_si512(K_LEN.as_ptr().add(8).cast()),
        )
    };
    _mm512_permutex2var_epi64(low, len, high)
}

/// `K ^ len * K2` by `len % 16`, for lengths 1 to 16 (16 at index 0).
const K_LEN: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut i = 0;
    while i < 16 {
        let len = if i == 0 { 16 } else { i as u64 };
        t[i] = K ^ len.wrapping_mul(K2);
        i += 1;
    }
    t
};

/// Bit offsets in a hash of the six 6-bit fields that pick a filter block's bits
/// ([`vocab`](crate::vocab)'s `slot`), one per byte for a multishift; the last two repeat the
/// first.
const FIELDS: i64 = i64::from_le_bytes([0, 6, 12, 18, 24, 30, 0, 0]);

/// A hashed lane's place in a filter: its block and the six bits it wants there.
#[derive(Clone, Copy)]
pub(crate) struct Slots {
    block: __m512i,
    fields: __m512i,
}

/// The [`Slots`] of eight hashes.
#[inline]
#[target_feature(
    enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,bmi1,bmi2,popcnt"
)]
pub(crate) fn slots(h: __m512i) -> Slots {
    Slots {
        // The block index is the hash's top 16 bits.
        block: _mm512_srli_epi64::<48>(h),
        fields: _mm512_multishift_epi64_epi8(_mm512_set1_epi64(FIELDS), h),
    }
}

/// Which of the `valid` lanes the filter at `words` may hold.
///
/// # Safety
/// The processor must have the features ([`available`]), and `words` must come from
/// [`Filter::words`](crate::vocab::Filter::words) (a whole filter).
#[inline]
#[target_feature(
    enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,bmi1,bmi2,popcnt"
)]
pub(crate) unsafe fn probe(slots: Slots, valid: __mmask8, words: *const i64) -> __mmask8 {
    // SAFETY: block indices are below BLOCKS (16 bits), and a whole filter has BLOCKS words.
    let got = unsafe {
        _mm512_mask_i64gather_epi64::<8>(_mm512_setzero_si512(), valid, slots.block, words)
    };
    // All eight picked bits set: the block has every bit of the lane's hash.
    let set = _mm512_movm_epi8(_mm512_bitshuffle_epi64_mask(got, slots.fields));
    _mm512_mask_cmpeq_epi64_mask(valid, set, _mm512_set1_epi64(-1))
}
