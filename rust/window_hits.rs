//! Which pieces of one window the vocabulary filters hold: the hit path of
//! [`window_units`](crate::window_cost::window_units).
//!
//! Each piece a window settles is hashed (`vocab::hash_words` of its bytes zero-padded to 16)
//! and probed in each model's filter. One piece at a time that is some 50 instructions a piece.
//! Where the processor has the AVX-512 features of `rust/avx512.rs` (detected at run time),
//! eight pieces go through at once: their start and end offsets are compressed out of the
//! window's start bits, their bytes gathered from the window by a byte permutation masked to
//! each piece's length, the 64 × 64 → 128-bit multiply of the hash built from four 32-bit ones,
//! and the filters' words fetched with one gather per model. With AVX2 only (`rust/avx2.rs`),
//! four pieces go through at once: their offsets taken one by one from the start bits, their
//! bytes loaded as two words and masked to their length by variable shifts, then the same
//! multiply and one gather per model. Every path gives the same bits; a test checks it.

use crate::estimate::Model;
use crate::window_cost::{load16, short_hash, SHORT, SPAN};

/// Bit `start` set for each settled piece (`start` a set bit of `starts` below its last one) of
/// at most [`SHORT`] bytes that the filter of each model in `models` holds. `starts` is a
/// settled window's ([`Settled`](crate::blocks::Settled)): bit 0 and at least one more set.
/// `span` holds the window's bytes ([`SPAN`] of them, zero past the text's end).
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn window_hits<const N: usize>(
    starts: u64,
    span: &[u8; SPAN],
    models: &[Model; N],
) -> [u64; N] {
    debug_assert!(starts & 1 != 0 && starts.count_ones() >= 2, "{starts:#x}");
    #[cfg(target_arch = "x86_64")]
    if let Some(filters) = filters(crate::avx512::available(), models) {
        // SAFETY: `filters` is only `Some` where the processor has the features.
        return unsafe { avx512::hits(starts, span, filters) };
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(filters) = filters(crate::avx2::available(), models) {
        // SAFETY: `filters` is only `Some` where the processor has the features.
        return unsafe { avx2::hits(starts, span, filters) };
    }
    scalar_hits(starts, span, models)
}

/// The models' filters' words, when a vector path can run on them: `available` (the
/// processor has its features) and every filter is whole.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
fn filters<const N: usize>(available: bool, models: &[Model; N]) -> Option<[*const i64; N]> {
    if !available {
        return None;
    }
    let mut all = [std::ptr::null(); N];
    for (w, m) in all.iter_mut().zip(models) {
        *w = m.vocab.filter.words()?;
    }
    Some(all)
}

/// [`window_hits`] one piece at a time: the reference, and the path without AVX2.
#[allow(clippy::inline_always)] // hot path; measurably faster inlined
#[inline(always)]
pub(crate) fn scalar_hits<const N: usize>(
    starts: u64,
    span: &[u8; SPAN],
    models: &[Model; N],
) -> [u64; N] {
    let mut hits = [0u64; N];
    let mut rest = starts & !1;
    let mut start = 0;
    // No branch but the loop's: the probes of successive pieces overlap.
    while rest != 0 {
        let end = rest.trailing_zeros();
        rest &= rest - 1;
        let len = end - start;
        let h = short_hash(load16(span, start), len);
        let short = u64::from(len <= SHORT);
        for (hit, m) in hits.iter_mut().zip(models) {
            *hit |= (u64::from(m.vocab.contains(h)) & short) << start;
        }
        start = end;
    }
    hits
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    #[allow(clippy::wildcard_imports)]
    use std::arch::x86_64::*;

    use crate::avx512::{hash8, k_len, probe, slots};
    use crate::window_cost::{SHORT, SPAN};

    /// Byte `i` is `i`.
    const IOTA: [u8; 64] = {
        let mut iota = [0u8; 64];
        let mut i = 0;
        while i < 64 {
            iota[i] = i as u8;
            i += 1;
        }
        iota
    };

    /// [`window_hits`](super::window_hits), eight pieces at a time.
    ///
    /// # Safety
    /// The processor must have the features ([`crate::avx512::available`]), and `filters`
    /// must come from [`filters`](super::filters).
    #[target_feature(
        enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,bmi1,bmi2,popcnt"
    )]
    pub(super) unsafe fn hits<const N: usize>(
        starts: u64,
        span: &[u8; SPAN],
        filters: [*const i64; N],
    ) -> [u64; N] {
        // SAFETY (loads): `span` has 64 bytes from 0 and 16 from 64.
        let t0 = unsafe { _mm512_loadu_si512(span.as_ptr().cast()) };
        let t1 = _mm512_zextsi128_si512(unsafe { _mm_loadu_si128(span.as_ptr().add(64).cast()) });
        let iota = unsafe { _mm512_loadu_si512(IOTA.as_ptr().cast()) };
        let last = starts.checked_ilog2().unwrap_or(0);
        let piece_starts = starts & !(1u64 << last);
        let count = piece_starts.count_ones();
        // The pieces' starts and ends, in order, one byte each.
        let start_list = _mm512_maskz_compress_epi8(piece_starts, iota);
        let end_list = _mm512_maskz_compress_epi8(starts & !1, iota);
        // Lane q of group g reads piece 8g + q: its start and end in each of the lane's bytes.
        let mut pick = _mm512_set_epi64(
            0x0707_0707_0707_0707,
            0x0606_0606_0606_0606,
            0x0505_0505_0505_0505,
            0x0404_0404_0404_0404,
            0x0303_0303_0303_0303,
            0x0202_0202_0202_0202,
            0x0101_0101_0101_0101,
            0,
        );
        let lane_bytes = _mm512_set1_epi64(0x0706_0504_0302_0100);
        let (eight, byte) = (_mm512_set1_epi8(8), _mm512_set1_epi64(0xFF));
        let short = _mm512_set1_epi64(i64::from(SHORT));
        let mut lane_hits = [0u64; N];
        let mut group = 0;
        // At least two groups whatever the count: the loop's exit then depends on the count
        // only past 16 pieces (a count that varies from window to window made the exit after
        // the first group a frequent misprediction). Lanes past the count are masked off.
        while group < count.max(16) {
            let start = _mm512_permutexvar_epi8(pick, start_list);
            let end = _mm512_permutexvar_epi8(pick, end_list);
            pick = _mm512_add_epi8(pick, eight);
            // Bytes 0..8 and 8..16 of each piece, zero past its end.
            let at_lo = _mm512_add_epi8(start, lane_bytes);
            let at_hi = _mm512_add_epi8(at_lo, eight);
            let lo =
                _mm512_maskz_permutex2var_epi8(_mm512_cmplt_epu8_mask(at_lo, end), t0, at_lo, t1);
            let hi =
                _mm512_maskz_permutex2var_epi8(_mm512_cmplt_epu8_mask(at_hi, end), t0, at_hi, t1);
            let len = _mm512_and_si512(_mm512_sub_epi8(end, start), byte);
            let left = count.saturating_sub(group);
            let lanes = if left >= 8 { 0xFF } else { (1u8 << left) - 1 };
            let valid = _mm512_mask_cmple_epu64_mask(lanes, len, short);
            let slots = slots(hash8(lo, hi, k_len(len)));
            for (lane_hit, &filter) in lane_hits.iter_mut().zip(&filters) {
                // SAFETY: `filter` comes from `filters`.
                let hit = unsafe { probe(slots, valid, filter) };
                *lane_hit |= u64::from(hit) << group;
            }
            group += 8;
        }
        // Lane i is the piece at the i-th set bit of `piece_starts`.
        lane_hits.map(|l| _pdep_u64(l, piece_starts))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[allow(clippy::wildcard_imports)]
    use std::arch::x86_64::*;

    use crate::avx2::{hash4, probe, slots};
    use crate::window_cost::{load16, SHORT, SPAN};

    /// [`window_hits`](super::window_hits), four pieces at a time.
    ///
    /// # Safety
    /// The processor must have the features ([`crate::avx2::available`]), and `filters`
    /// must come from [`filters`](super::filters).
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
    pub(super) unsafe fn hits<const N: usize>(
        starts: u64,
        span: &[u8; SPAN],
        filters: [*const i64; N],
    ) -> [u64; N] {
        let ones = _mm256_set1_epi64x(-1);
        let (zero, above) = (
            _mm256_setzero_si256(),
            _mm256_set1_epi64x(i64::from(SHORT) + 1),
        );
        let (eight, one_two_eight) = (_mm256_set1_epi64x(8), _mm256_set1_epi64x(128));
        // Per model, each lane's hits as bits at the pieces' starts (no `pdep`: microcoded and
        // slow on AMD before Zen 3).
        let mut lane_hits = [_mm256_setzero_si256(); N];
        let mut rest = starts & !1;
        let mut start = 0;
        while rest != 0 {
            // Four pieces in order; lanes past the last one are empty (start = end).
            let (mut lo, mut hi, mut len, mut at) = ([0i64; 4], [0i64; 4], [0i64; 4], [0i64; 4]);
            for q in 0..4 {
                let end = if rest == 0 {
                    start
                } else {
                    rest.trailing_zeros()
                };
                rest &= rest.wrapping_sub(1);
                let bytes = load16(span, start);
                (lo[q], hi[q]) = (bytes as i64, (bytes >> 64) as i64);
                len[q] = i64::from(end - start);
                at[q] = 1 << start;
                start = end;
            }
            // SAFETY (loads): four words each.
            let (lo, hi, len, at) = unsafe {
                (
                    _mm256_loadu_si256(lo.as_ptr().cast()),
                    _mm256_loadu_si256(hi.as_ptr().cast()),
                    _mm256_loadu_si256(len.as_ptr().cast()),
                    _mm256_loadu_si256(at.as_ptr().cast()),
                )
            };
            // Zero past each piece's end: keep its first 8 * len bits.
            let bits = _mm256_mul_epu32(len, eight);
            let lo = _mm256_andnot_si256(_mm256_sllv_epi64(ones, bits), lo);
            let hi = _mm256_and_si256(
                _mm256_srlv_epi64(ones, _mm256_sub_epi64(one_two_eight, bits)),
                hi,
            );
            // 1 to SHORT bytes.
            let valid = _mm256_and_si256(
                _mm256_cmpgt_epi64(above, len),
                _mm256_cmpgt_epi64(len, zero),
            );
            let slots = slots(hash4(lo, hi, len));
            for (lane_hit, &filter) in lane_hits.iter_mut().zip(&filters) {
                // SAFETY: `filter` comes from `filters`.
                let hit = unsafe { probe(slots, valid, filter) };
                *lane_hit = _mm256_or_si256(*lane_hit, _mm256_and_si256(hit, at));
            }
        }
        // The four lanes' bits together.
        lane_hits.map(|l| {
            let x = _mm_or_si128(_mm256_castsi256_si128(l), _mm256_extracti128_si256::<1>(l));
            _mm_cvtsi128_si64(_mm_or_si128(x, _mm_unpackhi_epi64(x, x))) as u64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{model, Encoding};
    use crate::testing::XorShift;
    use crate::vocab;

    /// Random piece starts (bit 0 always set, at least two bits) over random window bytes
    /// drawn from `alphabet`.
    fn random_window(rng: &mut XorShift, alphabet: &[u8]) -> (u64, [u8; SPAN]) {
        let mut span = [0u8; SPAN];
        let used = 1 + rng.index(SPAN);
        for b in &mut span[..used] {
            *b = alphabet[rng.index(alphabet.len())];
        }
        let density = 1 + rng.below(12);
        let mut starts = 1u64;
        for bit in 1..64 {
            if rng.below(density) == 0 {
                starts |= 1 << bit;
            }
        }
        if starts == 1 {
            starts |= 1 << (1 + rng.below(63));
        }
        (starts, span)
    }

    #[test]
    fn every_path_finds_the_pieces_one_probe_each_finds() {
        crate::testing::vector_paths_as_required();
        let models = [
            Encoding::Cl100k,
            Encoding::O200k,
            Encoding::Llama3,
            Encoding::Qwen3,
        ]
        .map(|e| model(e).expect("fitted"));
        let mut rng = XorShift(0x5EED_F00D);
        let alphabets: [&[u8]; 3] = [
            b" etaoinshrdlu",
            b" the and of to in is",
            b"\n\t ,.(){}:;'\"ab",
        ];
        let mut found = 0;
        for round in 0..20_000 {
            let alphabet = alphabets[round % alphabets.len()];
            let (starts, span) = random_window(&mut rng, alphabet);
            // The reference: each piece hashed from its own bytes and probed on its own.
            let mut want = [0u64; 4];
            let last = starts.checked_ilog2().unwrap_or(0);
            let mut rest = starts & !1;
            let mut start = 0;
            while rest != 0 {
                let end = rest.trailing_zeros();
                rest &= rest - 1;
                let piece = &span[start as usize..end as usize];
                for (w, m) in want.iter_mut().zip(&models) {
                    if piece.len() <= SHORT as usize && m.vocab.contains(vocab::hash(piece)) {
                        *w |= 1 << start;
                    }
                }
                start = end;
            }
            assert_eq!(want.iter().fold(0, |a, w| a | w) >> last, 0);
            found += want.iter().map(|w| w.count_ones()).sum::<u32>();
            assert_eq!(scalar_hits(starts, &span, &models), want, "{starts:#x}");
            assert_eq!(window_hits(starts, &span, &models), want, "{starts:#x}");
            // The AVX2 path too where the AVX-512 one runs above it.
            #[cfg(target_arch = "x86_64")]
            if let Some(filters) = filters(crate::avx2::available(), &models) {
                // SAFETY: `filters` is only `Some` where the processor has the features.
                assert_eq!(unsafe { avx2::hits(starts, &span, filters) }, want);
            }
            let [a, _, _, d] = models;
            assert_eq!(window_hits(starts, &span, &[a, d]), [want[0], want[3]]);
        }
        // The windows hold whole tokens, not only misses.
        assert!(found > 20_000, "{found}");
    }
}
