//! Statistics both sides of a comparison must compute the same way: the 95 % Student t
//! quantile behind the intervals `--repeats N` prints (metrics) and behind compare's noise rule.

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
