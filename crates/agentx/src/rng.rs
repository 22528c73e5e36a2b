//! numpy `default_rng(seed)` (SeedSequence → PCG64) and `Generator.uniform`, bit for bit, so
//! the per-lane start instant t* is the one agentx-harness draws
//! (`trajectory_source.py`: `default_rng(int(sha256(f"{seed}:{trace_id}:{lane}")[:8], big))`
//! then `uniform(lo, hi)`).
//!
//! SeedSequence: numpy `bit_generator.pyx` (`hashmix`, `mix`, pool of 4 u32 words,
//! `generate_state` as u32 words viewed as little-endian u64). PCG64: 128-bit LCG with XSL-RR
//! output (numpy `pcg64.h`); doubles are `(next_u64 >> 11) · 2⁻⁵³`.

use sha2::{Digest, Sha256};

const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
const POOL: usize = 4;

fn hashmix(value: u32, hc: &mut u32) -> u32 {
    let mut v = value ^ *hc;
    *hc = hc.wrapping_mul(MULT_A);
    v = v.wrapping_mul(*hc);
    v ^ (v >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    r ^ (r >> XSHIFT)
}

/// numpy `SeedSequence(seed).generate_state(n, uint64)` for a non-negative integer seed.
pub fn seed_sequence_u64(seed: u128, n: usize) -> Vec<u64> {
    // entropy: the integer as little-endian u32 words (at least one word)
    let mut entropy = Vec::new();
    let mut s = seed;
    loop {
        entropy.push((s & 0xffff_ffff) as u32);
        s >>= 32;
        if s == 0 {
            break;
        }
    }
    let mut pool = [0u32; POOL];
    let mut hc = INIT_A;
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hc);
    }
    for src in 0..POOL {
        for dst in 0..POOL {
            if src != dst {
                let h = hashmix(pool[src], &mut hc);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    for &e in entropy.iter().skip(POOL) {
        for p in pool.iter_mut() {
            let h = hashmix(e, &mut hc);
            *p = mix(*p, h);
        }
    }
    let mut hb = INIT_B;
    let words: Vec<u32> = (0..2 * n)
        .map(|i| {
            let mut d = pool[i % POOL];
            d ^= hb;
            hb = hb.wrapping_mul(MULT_B);
            d = d.wrapping_mul(hb);
            d ^ (d >> XSHIFT)
        })
        .collect();
    words
        .chunks(2)
        .map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32))
        .collect()
}

const PCG_MULT: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

/// numpy's PCG64 bit generator.
#[derive(Debug, Clone)]
pub struct Pcg64 {
    state: u128,
    inc: u128,
}

impl Pcg64 {
    /// `np.random.default_rng(seed)`'s bit generator.
    pub fn default_rng(seed: u128) -> Self {
        let v = seed_sequence_u64(seed, 4);
        let initstate = (u128::from(v[0]) << 64) | u128::from(v[1]);
        let initseq = (u128::from(v[2]) << 64) | u128::from(v[3]);
        let mut r = Pcg64 {
            state: 0,
            inc: (initseq << 1) | 1,
        };
        r.step();
        r.state = r.state.wrapping_add(initstate);
        r.step();
        r
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let hi = (self.state >> 64) as u64;
        let lo = self.state as u64;
        (hi ^ lo).rotate_right((self.state >> 122) as u32)
    }

    /// `Generator.random()`: a double in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `Generator.uniform(lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }
}

/// `int.from_bytes(sha256(text)[:8], "big")`.
pub fn sha256_prefix_u64(text: &str) -> u64 {
    let d = Sha256::digest(text.as_bytes());
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Values printed by numpy 2.x:
    //   np.random.default_rng(0).random(3)
    //   np.random.default_rng(12345678901234567890).uniform(10, 20)
    #[test]
    fn matches_numpy_default_rng() {
        let mut r = Pcg64::default_rng(0);
        let got: Vec<f64> = (0..3).map(|_| r.next_f64()).collect();
        assert_eq!(
            got,
            [0.6369616873214543, 0.2697867137638703, 0.04097352393619469]
        );
        let mut r = Pcg64::default_rng(12345678901234567890);
        assert_eq!(r.uniform(10.0, 20.0), 10.042248797955736);
    }
}
