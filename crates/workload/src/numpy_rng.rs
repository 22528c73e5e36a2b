//! numpy-compatible legacy random integers (`np.random.seed(s)`; `np.random.randint(lo, hi, n)`).
//!
//! InferenceX seeds numpy's global `RandomState` with `--seed` (0) and draws dataset lengths with
//! `np.random.randint` (MEASUREMENT.md Part 2 §1.2). To reproduce those lengths bit for bit we need
//! the same generator and the same bounded-integer algorithm:
//!
//! * generator: MT19937 seeded with `init_genrand(seed)` (numpy `_legacy_seeding` for an integer
//!   seed) — [`rand_mt::Mt19937GenRand32::new`] does exactly that;
//! * bounded integers: numpy `random_bounded_uint64_fill` with `use_masked = true` (the legacy
//!   `RandomState.randint` path): `rng = high - 1 - low`; for `rng == 0` no draw; for
//!   `rng < 2^32 - 1` draw 32-bit words, mask them with the smallest `2^k - 1 >= rng`, and reject
//!   values above `rng`; for `rng == 2^32 - 1` take the word as is; wider ranges draw 64-bit
//!   values (two words, high first) with the same masked rejection.
//!
//! The unit tests compare against values printed by numpy 2.4 (`np.random.seed(0)`), so the
//! lengths and offsets of the random dataset are bit-identical to InferenceX's for the same seed,
//! ISL/OSL, range ratio, prompt count and vocabulary size.

use rand_mt::Mt19937GenRand32;

/// numpy legacy `RandomState` subset: seeding and `randint`.
#[derive(Clone)]
pub struct NumpyLegacyRng {
    mt: Mt19937GenRand32,
}

impl std::fmt::Debug for NumpyLegacyRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NumpyLegacyRng")
    }
}

impl NumpyLegacyRng {
    /// `np.random.seed(seed)` for an integer seed (`init_genrand`).
    pub fn new(seed: u32) -> Self {
        Self {
            mt: Mt19937GenRand32::new(seed),
        }
    }

    /// `np.random.RandomState(key_array)` (`init_by_array`).
    pub fn with_key(key: &[u32]) -> Self {
        Self {
            mt: Mt19937GenRand32::new_with_key(key.iter().copied()),
        }
    }

    /// Next raw 32-bit word of the generator (numpy `next_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `np.random.randint(low, high, size=n)` (high exclusive, default int64 dtype).
    ///
    /// Errors (as numpy's `ValueError: low >= high`) when `low >= high`.
    pub fn randint(&mut self, low: i64, high: i64, n: usize) -> Result<Vec<i64>, String> {
        if low >= high {
            return Err(format!("randint: low ({low}) >= high ({high})"));
        }
        let rng = (high - 1 - low) as u64;
        let mut out = Vec::with_capacity(n);
        if rng == 0 {
            out.resize(n, low);
            return Ok(out);
        }
        if rng == 0xFFFF_FFFF {
            for _ in 0..n {
                out.push(low + i64::from(self.mt.next_u32()));
            }
        } else if rng < 0xFFFF_FFFF {
            let mask = gen_mask(rng) as u32;
            let rng32 = rng as u32;
            for _ in 0..n {
                let v = loop {
                    let v = self.mt.next_u32() & mask;
                    if v <= rng32 {
                        break v;
                    }
                };
                out.push(low + i64::from(v));
            }
        } else {
            let mask = gen_mask(rng);
            for _ in 0..n {
                let v = loop {
                    let hi = u64::from(self.mt.next_u32());
                    let lo = u64::from(self.mt.next_u32());
                    let v = ((hi << 32) | lo) & mask;
                    if v <= rng {
                        break v;
                    }
                };
                out.push(low.wrapping_add(v as i64));
            }
        }
        Ok(out)
    }
}

/// Smallest `2^k - 1 >= max` (numpy `gen_mask`).
fn gen_mask(max: u64) -> u64 {
    let mut mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values printed by numpy 2.4.6 (legacy RandomState):
    //   np.random.seed(0)
    //   np.random.randint(819, 1025, size=40)   # a: 1k input lengths
    //   np.random.randint(819, 1025, size=40)   # b: 1k output lengths (same stream, continued)
    //   np.random.randint(0, 151643, size=40)   # c: offsets, Qwen vocab size
    const A: [i64; 40] = [
        991, 866, 936, 1011, 886, 1014, 922, 828, 840, 855, 906, 889, 907, 959, 877, 1012, 858,
        906, 993, 907, 900, 984, 844, 896, 891, 828, 967, 934, 1016, 898, 994, 1011, 901, 918, 996,
        848, 966, 966, 961, 986,
    ];
    const B: [i64; 40] = [
        851, 1012, 828, 1004, 946, 851, 850, 1021, 970, 982, 1022, 933, 1002, 847, 853, 947, 947,
        983, 872, 952, 857, 836, 898, 951, 924, 861, 1005, 850, 939, 820, 884, 988, 876, 854, 921,
        938, 830, 993, 901, 910,
    ];
    const C: [i64; 40] = [
        63360, 9781, 150412, 27257, 147370, 12372, 135492, 111366, 82991, 62079, 138084, 9396,
        3918, 9359, 116372, 146199, 101261, 37237, 79701, 8752, 108101, 50624, 40133, 93790, 62756,
        124834, 90928, 81757, 84355, 99938, 66509, 24777, 125311, 13824, 133490, 143915, 78778,
        36223, 61570, 6521,
    ];

    #[test]
    fn matches_numpy_legacy_randint_stream() {
        let mut r = NumpyLegacyRng::new(0);
        assert_eq!(r.randint(819, 1025, 40).unwrap(), A);
        assert_eq!(r.randint(819, 1025, 40).unwrap(), B);
        assert_eq!(r.randint(0, 151643, 40).unwrap(), C);
    }

    #[test]
    fn matches_numpy_8k_and_small_vocab() {
        // np.random.seed(0); randint(6553, 8193, 10); randint(0, 32000, 10)
        let mut r = NumpyLegacyRng::new(0);
        assert_eq!(
            r.randint(6553, 8193, 10).unwrap(),
            [7237, 7112, 7769, 7388, 7316, 7936, 7586, 6830, 7152, 7647]
        );
        assert_eq!(
            r.randint(0, 32000, 10).unwrap(),
            [15832, 6744, 19852, 14650, 17089, 18983, 10327, 18606, 24152, 2897]
        );
    }

    #[test]
    fn degenerate_range_draws_nothing() {
        let mut a = NumpyLegacyRng::new(0);
        assert_eq!(a.randint(5, 6, 3).unwrap(), [5, 5, 5]);
        // no draw consumed: the next call equals a fresh generator's first call
        let mut b = NumpyLegacyRng::new(0);
        assert_eq!(
            a.randint(0, 1000, 5).unwrap(),
            b.randint(0, 1000, 5).unwrap()
        );
        assert!(a.randint(3, 3, 1).is_err());
    }

    #[test]
    fn mask() {
        assert_eq!(gen_mask(205), 255);
        assert_eq!(gen_mask(256), 511);
        assert_eq!(gen_mask(1), 1);
    }
}
