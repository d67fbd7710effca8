//! Helpers shared by the unit tests.

/// xorshift64: deterministic pseudo-random numbers for fuzzing without a dependency.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next number below `bound` (`bound > 0`).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// The next index below `len` (`len > 0`).
    pub fn index(&mut self, len: usize) -> usize {
        (self.next() % len as u64) as usize
    }
}

/// Fails where `CTXBUDGET_REQUIRE_AVX512` (or `CTXBUDGET_REQUIRE_AVX2`) is set and the
/// AVX-512 (or AVX2) paths would not run: tests comparing those paths with the one-by-one ones
/// would otherwise pass without running them.
pub fn vector_paths_as_required() {
    #[cfg(target_arch = "x86_64")]
    let available = [crate::avx512::available(), crate::avx2::available()];
    #[cfg(not(target_arch = "x86_64"))]
    let available = [false, false];
    for (variable, on) in ["CTXBUDGET_REQUIRE_AVX512", "CTXBUDGET_REQUIRE_AVX2"]
        .into_iter()
        .zip(available)
    {
        if std::env::var_os(variable).is_some() {
            assert!(on, "{variable} is set, but those paths are off");
        }
    }
}

/// A [`CharCosts`](crate::vocab::CharCosts) table where each `(code point, tokens)` is set and
/// every other character costs one token.
pub fn char_cost_table(costs: &[(usize, u8)]) -> Vec<u8> {
    let mut table = vec![0u8; crate::vocab::CHAR_COST_BYTES];
    for &(cp, tokens) in costs {
        table[cp / 4] |= (tokens - 1) << (cp % 4 * 2);
    }
    table
}
