//! Statistics both sides of a comparison must compute the same way: the 95 % Student t
//! quantile behind the intervals `--repeats N` prints (metrics) and behind compare's noise rule;
//! the seeded generator and the named statistics of the request bootstrap (metrics' `--ci`
//! intervals and compare's intervals of a difference).

/// Two-sided 95 % Student t quantile `t(0.975, df)`, df ≥ 1 (NaN for 0): a table to 30
/// degrees of freedom, the Cornish–Fisher expansion around z = Φ⁻¹(0.975) beyond
/// (Abramowitz & Stegun 26.7.5; within 2·10⁻⁴ of the exact quantile at df 31, 60, 120).
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
        2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739,
        2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => {
            let z: f64 = 1.959_963_984_540_054;
            let v = df as f64;
            z + (z.powi(3) + z) / (4.0 * v)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
                + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z)
                    / (384.0 * v.powi(3))
        }
    }
}

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose first state is `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..n` (`⌊u·n / 2⁶⁴⌋`); `n > 0`.
    pub fn index(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The statistic named `mean|median|p50|p90|p95|p99|p99.9` of a sample (reordered in place);
/// `None` for an empty sample or an unknown name.
///
/// A percentile is the linear one of [`percentile`] on the sorted sample, found by selection
/// instead of a sort: the two order statistics it interpolates between (`⌊r⌋` and `⌊r⌋ + 1`,
/// r = (n − 1)·p/100) come from `select_nth_unstable` (O(n)) and the minimum of the part
/// above — the same values, bit for bit, as sorting first (`total_cmp` order), at a fraction
/// of the cost in the bootstrap, which calls this once per resample.
pub fn named_stat(name: &str, v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    if name == "mean" {
        return Some(v.iter().sum::<f64>() / v.len() as f64);
    }
    let p = percentile_of(name)?;
    let n = v.len();
    let r = (n - 1) as f64 * p / 100.0;
    let lo = r.floor() as usize;
    if lo + 1 >= n {
        return v.iter().copied().max_by(|a, b| a.total_cmp(b));
    }
    let (_, &mut at, above) = v.select_nth_unstable_by(lo, |a, b| a.total_cmp(b));
    let next = above.iter().copied().min_by(|a, b| a.total_cmp(b))?;
    let frac = r - lo as f64;
    Some(at + frac * (next - at))
}

/// The percentile a statistic name stands for (`median`→50, `p90`→90, `p99.9`→99.9).
pub fn percentile_of(name: &str) -> Option<f64> {
    match name {
        "median" | "p50" => Some(50.0),
        _ => name
            .strip_prefix('p')
            .and_then(|x| x.parse::<f64>().ok())
            .filter(|x| *x > 0.0 && *x < 100.0),
    }
}
