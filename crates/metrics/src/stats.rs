//! Summary statistics exactly as numpy computes them (MEASUREMENT.md Part 1 "Percentiles").

/// numpy `percentile(x, p)` default (`linear`) on ascending `sorted`: rank `r = (n−1)·p/100`,
/// `x[⌊r⌋] + (r−⌊r⌋)·(x[⌊r⌋+1] − x[⌊r⌋])`. `None` for an empty slice.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let r = (n - 1) as f64 * p / 100.0;
    let lo = r.floor() as usize;
    if lo + 1 >= n {
        return Some(sorted[n - 1]);
    }
    let frac = r - lo as f64;
    Some(sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]))
}

/// mean, median, population std, p90, p99, p99.9 of one metric (units as given, here ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: Option<f64>,
    /// 50th percentile (linear).
    pub median: Option<f64>,
    /// Population standard deviation (divisor n, numpy `np.std`).
    pub std: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
    /// Minimum.
    pub min: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
}

impl Stats {
    /// Statistics of `values` (sorted in place). Empty → every field `None`.
    pub fn of(values: &mut [f64]) -> Self {
        let n = values.len();
        if n == 0 {
            return Self::default();
        }
        values.sort_by(|a, b| a.total_cmp(b));
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        Self {
            n,
            mean: Some(mean),
            median: percentile(values, 50.0),
            std: Some(var.sqrt()),
            p90: percentile(values, 90.0),
            p99: percentile(values, 99.0),
            p999: percentile(values, 99.9),
            min: values.first().copied(),
            max: values.last().copied(),
        }
    }

    /// The statistic named `mean|median|std|p90|p99|p99.9`.
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "mean" => self.mean,
            "median" | "p50" => self.median,
            "std" => self.std,
            "p90" => self.p90,
            "p99" => self.p99,
            "p99.9" => self.p999,
            _ => None,
        }
    }

    /// InferenceX's rule for empty lists: every statistic 0 instead of null.
    pub fn zero_if_empty(mut self) -> Self {
        if self.n == 0 {
            for f in [
                &mut self.mean,
                &mut self.median,
                &mut self.std,
                &mut self.p90,
                &mut self.p99,
                &mut self.p999,
            ] {
                *f = Some(0.0);
            }
        }
        self
    }
}

/// The statistic names in InferenceX key order, with their key prefix.
pub const STAT_KEYS: [(&str, &str); 6] = [
    ("mean", "mean"),
    ("median", "median"),
    ("std", "std"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p99.9", "p99.9"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_linear_percentiles() {
        // np.percentile([1,2,3,4], [50, 90, 99, 99.9]) = 2.5, 3.7, 3.97, 3.997
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert!((percentile(&v, 90.0).unwrap() - 3.7).abs() < 1e-12);
        assert!((percentile(&v, 99.0).unwrap() - 3.97).abs() < 1e-12);
        assert!((percentile(&v, 99.9).unwrap() - 3.997).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn population_std_and_empty() {
        let mut v = vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Stats::of(&mut v);
        assert_eq!(s.mean, Some(5.0));
        assert_eq!(s.std, Some(2.0));
        let e = Stats::of(&mut []);
        assert_eq!((e.mean, e.p99, e.std), (None, None, None));
        assert_eq!(e.zero_if_empty().p99, Some(0.0));
    }
}
