//! CPython's `random.Random`, bit for bit, for the parts lm-evaluation-harness uses to pick
//! few-shot examples: integer seeding, `getrandbits(k)` for k ≤ 32, `_randbelow` and `sample`.
//!
//! Source of every step: CPython 3.11 `Modules/_randommodule.c` (`random_seed` →
//! `init_by_array` over the 32-bit little-endian words of `abs(seed)`, `genrand_uint32`,
//! `getrandbits`) and `Lib/random.py` (`_randbelow_with_getrandbits`, `sample`). The generator
//! itself is the reference MT19937 (`rand_mt`, whose `new_with_key` is `init_by_array`).
//! Verified against `python3` in this crate's tests.

use rand_mt::Mt19937GenRand32;

use crate::error::EvalError;

/// `random.Random(seed)` with an integer seed.
#[derive(Clone)]
pub struct PyRandom {
    mt: Mt19937GenRand32,
}

impl PyRandom {
    /// `random.Random(seed)`: CPython seeds MT19937 with `init_by_array(key)`, where `key` is
    /// `abs(seed)` split into 32-bit words, least significant first (`[0]` for seed 0).
    pub fn new(seed: i64) -> PyRandom {
        let mut n = seed.unsigned_abs();
        let mut key = Vec::new();
        while n > 0 {
            key.push((n & 0xffff_ffff) as u32);
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        PyRandom {
            mt: Mt19937GenRand32::new_with_key(key),
        }
    }

    /// `getrandbits(k)` for `1 ≤ k ≤ 32`: the top `k` bits of one 32-bit output.
    pub fn getrandbits(&mut self, k: u32) -> u32 {
        assert!(
            (1..=32).contains(&k),
            "getrandbits supports 1..=32 bits here"
        );
        self.mt.next_u32() >> (32 - k)
    }

    /// `_randbelow_with_getrandbits(n)`: rejection sampling on `n.bit_length()` bits.
    /// `n` must be ≥ 1 and < 2³².
    pub fn randbelow(&mut self, n: usize) -> usize {
        assert!(
            n >= 1 && n <= u32::MAX as usize,
            "randbelow: n out of range"
        );
        let k = usize::BITS - n.leading_zeros();
        let mut r = self.getrandbits(k) as usize;
        while r >= n {
            r = self.getrandbits(k) as usize;
        }
        r
    }

    /// `random.sample(range(n), k)`: the indices `sample(population, k)` would pick from a
    /// population of `n` items, in the order it returns them.
    ///
    /// CPython uses a pool (partial Fisher–Yates) when `n ≤ setsize` and a rejection set
    /// otherwise, with `setsize = 21 (+ 4**ceil(log(3k, 4)) when k > 5)`; both are reproduced.
    ///
    /// # Errors
    /// `k > n` ("Sample larger than population", as CPython's `ValueError`).
    pub fn sample_indices(&mut self, n: usize, k: usize) -> Result<Vec<usize>, EvalError> {
        if k > n {
            return Err(EvalError::SampleLargerThanPopulation { k, n });
        }
        let mut setsize: usize = 21;
        if k > 5 {
            // math.log(k*3, 4) is log(x)/log(4) in CPython.
            let e = ((k as f64 * 3.0).ln() / 4f64.ln()).ceil() as u32;
            setsize += 4usize.pow(e);
        }
        let mut result = Vec::with_capacity(k);
        if n <= setsize {
            let mut pool: Vec<usize> = (0..n).collect();
            for i in 0..k {
                let j = self.randbelow(n - i);
                result.push(pool[j]);
                pool[j] = pool[n - i - 1];
            }
        } else {
            let mut selected = std::collections::HashSet::with_capacity(k);
            for _ in 0..k {
                let mut j = self.randbelow(n);
                while selected.contains(&j) {
                    j = self.randbelow(n);
                }
                selected.insert(j);
                result.push(j);
            }
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randbelow_stays_in_range() {
        let mut r = PyRandom::new(1234);
        for n in 1..200 {
            assert!(r.randbelow(n) < n);
        }
    }

    #[test]
    fn sample_has_no_repeats_on_both_paths() {
        let mut r = PyRandom::new(7);
        for (n, k) in [(10, 10), (7473, 5), (30, 6), (100, 90)] {
            let s = r.sample_indices(n, k).unwrap();
            let set: std::collections::HashSet<_> = s.iter().collect();
            assert_eq!(set.len(), k);
            assert!(s.iter().all(|&i| i < n));
        }
        assert!(r.sample_indices(3, 4).is_err());
    }
}
