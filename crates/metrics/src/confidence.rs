//! Confidence intervals and the small-sample rule (`--repeats N`; docs/measurement.md
//! "Confidence").
//!
//! * **Within one run**: a seeded percentile bootstrap over *requests* (a cluster bootstrap: a
//!   resample draws n requests with replacement and pools their samples, so per-chunk ITL keeps
//!   its within-request correlation). B resamples (default 1,000), the statistic of each, and the
//!   2.5th/97.5th linear percentiles of those B values are the 95 % interval (Efron & Tibshirani,
//!   *An Introduction to the Bootstrap*, 1993, §13.3). The generator is SplitMix64 (Steele, Lea &
//!   Flood 2014) seeded with the run's seed; an index is `⌊u·n / 2⁶⁴⌋` for a 64-bit output u
//!   (Lemire's multiply-shift, bias ≤ n/2⁶⁴). Same records + same seed → same interval.
//! * **Across repeats**: Student's t-interval of the per-repeat values, `mean ± t(0.975, N−1) ·
//!   s/√N` with the sample standard deviation s (divisor N − 1); t from a table for N − 1 ≤ 30,
//!   else the Cornish–Fisher expansion (error < 1e-4).
//! * Shown as `value ± half-width`; a bootstrap interval can be asymmetric, so its `lo`/`hi`
//!   are kept and the half-width is `(hi − lo)/2`.
//! * **Small samples**: a percentile pX estimated from n samples is marked (`*`, and listed in
//!   `small_sample`) unless at least one sample is expected beyond it, i.e. `n·(1 − X/100) ≥ 1`:
//!   n ≥ 2 for the median, 10 for p90, 20 for p95, 100 for p99, 1,000 for p99.9. Below that the
//!   linear percentile only interpolates between the largest values and is not a tail estimate.

use serde::{Deserialize, Serialize};

use crate::stats::percentile;

/// Confidence level of every interval here (95 %).
pub const LEVEL: f64 = 0.95;

/// Default bootstrap resamples.
pub const DEFAULT_RESAMPLES: u32 = 1000;

/// Marker appended to a percentile estimated from too few samples.
pub const SMALL_SAMPLE_MARK: &str = "*";

/// SplitMix64, the bootstrap's generator: one definition in `servebench-contracts`, shared with
/// compare's bootstrap of differences.
pub use servebench_contracts::stats::SplitMix64;

/// How an interval was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Percentile bootstrap over requests within one run.
    Bootstrap,
    /// Student's t across repeats.
    TInterval,
}

/// A 95 % confidence interval around a point estimate (same unit as the statistic).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ci {
    /// The point estimate (the statistic on the original data, or the mean of the repeats).
    pub value: f64,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// `(hi − lo)/2`.
    pub half_width: f64,
    /// Requests (bootstrap) or repeats (t-interval) behind it.
    pub n: usize,
    /// Bootstrap or t-interval.
    pub method: CiMethod,
}

impl Ci {
    /// `value ± half-width` with `decimals` decimals, e.g. `106.60 ± 11.43`.
    pub fn fmt(&self, decimals: usize) -> String {
        fmt_pm(self.value, self.half_width, decimals)
    }
}

/// `value ± half-width` with `decimals` decimals.
pub fn fmt_pm(value: f64, half_width: f64, decimals: usize) -> String {
    format!("{value:.decimals$} ± {half_width:.decimals$}")
}

/// Percentile bootstrap over requests: `groups[i]` are request i's samples (one value for TTFT,
/// its gaps for ITL); `stat` computes the statistic from a pooled sample (it may sort it).
/// `None` when there are no requests or the statistic is undefined on the original data.
pub fn bootstrap_ci<F>(groups: &[&[f64]], stat: F, resamples: u32, seed: u64) -> Option<Ci>
where
    F: Fn(&mut Vec<f64>) -> Option<f64>,
{
    let n = groups.len();
    if n == 0 || resamples == 0 {
        return None;
    }
    let mut pooled: Vec<f64> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let value = stat(&mut pooled)?;
    let mut rng = SplitMix64::new(seed);
    let mut stats = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        pooled.clear();
        for _ in 0..n {
            pooled.extend_from_slice(groups[rng.index(n)]);
        }
        if let Some(s) = stat(&mut pooled) {
            stats.push(s);
        }
    }
    stats.sort_by(|a, b| a.total_cmp(b));
    let tail = (1.0 - LEVEL) / 2.0 * 100.0;
    let lo = percentile(&stats, tail)?;
    let hi = percentile(&stats, 100.0 - tail)?;
    Some(Ci {
        value,
        lo,
        hi,
        half_width: (hi - lo) / 2.0,
        n,
        method: CiMethod::Bootstrap,
    })
}

/// [`named_stat`] and [`percentile_of`]: one definition in `servebench-contracts`, shared with
/// compare's bootstrap of differences.
pub use servebench_contracts::stats::{named_stat, percentile_of};

/// Two-sided 95 % Student t quantile (the one definition, shared with compare's noise rule).
pub use servebench_contracts::stats::t_975;

/// Student's t-interval of per-repeat values (`mean ± t(0.975, N−1)·s/√N`, s with divisor
/// N − 1). `None` with fewer than 2 finite values.
pub fn t_interval(values: &[f64]) -> Option<Ci> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < 2 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let s = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
    let hw = t_975(n - 1) * s / (n as f64).sqrt();
    Some(Ci {
        value: mean,
        lo: mean - hw,
        hi: mean + hw,
        half_width: hw,
        n,
        method: CiMethod::TInterval,
    })
}

/// Fewest samples for which percentile `p` (0 < p < 100) is shown as precise:
/// `⌈100 / (100 − p)⌉` (at least one sample expected beyond it).
pub fn min_samples(p: f64) -> usize {
    if p <= 0.0 {
        return 1;
    }
    if p >= 100.0 {
        return usize::MAX;
    }
    // the small epsilon keeps 100/(100−99) = 100.00000000000001 at 100
    (100.0 / (100.0 - p) - 1e-9).ceil().max(1.0) as usize
}

/// Whether the statistic `name` (`median`, `p90`, `p99`, `p99.9`, …) from `n` samples is a
/// small-sample estimate. Means and stds are never marked (their CI says how uncertain they
/// are).
pub fn is_small_sample(name: &str, n: usize) -> bool {
    percentile_of(name).is_some_and(|p| n < min_samples(p))
}

/// `value` with [`SMALL_SAMPLE_MARK`] appended when [`is_small_sample`].
pub fn mark_small(text: String, name: &str, n: usize) -> String {
    if is_small_sample(name, n) {
        text + SMALL_SAMPLE_MARK
    } else {
        text
    }
}

/// The percentile statistics among `names` that are small-sample estimates at `n` samples.
pub fn small_sample_stats<'a>(names: &[&'a str], n: usize) -> Vec<&'a str> {
    names
        .iter()
        .copied()
        .filter(|s| is_small_sample(s, n))
        .collect()
}

/// Statistics given an interval per metric by [`point_bootstrap`].
pub const CI_STATS: [&str; 4] = ["mean", "median", "p90", "p99"];

/// One statistic of a point with its interval, keyed like the raw result (`median_ttft_ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedCi {
    /// Raw-result key, e.g. `p99_itl_ms`.
    pub key: String,
    /// The interval, ms.
    pub ci: Ci,
    /// Samples behind the statistic (requests for TTFT/TPOT/E2EL, gaps for ITL).
    pub samples: usize,
    /// The statistic is a percentile from fewer samples than [`min_samples`] requires.
    pub small_sample: bool,
}

/// Bootstrap intervals over the successful measured requests of one run for `mean`, `median`,
/// `p90`, `p99` of TTFT, TPOT, ITL (per chunk, pooled) and E2EL, in ms × `time_scale` (the
/// simulator's speedup; 1.0 otherwise). Each statistic uses its own sub-seed
/// `seed + index` so adding a statistic never shifts another's interval.
pub fn point_bootstrap(
    records: &[servebench_client::RequestRecord],
    time_scale: f64,
    resamples: u32,
    seed: u64,
) -> Vec<NamedCi> {
    let ok: Vec<&servebench_client::RequestRecord> = records
        .iter()
        .filter(|r| r.phase == servebench_client::Phase::Measured && r.success)
        .collect();
    let one = |f: &dyn Fn(&servebench_client::RequestRecord) -> Option<f64>| -> Vec<Vec<f64>> {
        ok.iter()
            .filter_map(|r| f(r).map(|x| vec![x * time_scale]))
            .collect()
    };
    let metrics: [(&str, Vec<Vec<f64>>); 4] = [
        ("ttft", one(&|r| r.ttft_ms)),
        (
            "tpot",
            one(&|r| {
                (r.output_tokens > 1)
                    .then(|| Some((r.e2el_ms? - r.ttft_ms?) / (r.output_tokens - 1) as f64))
                    .flatten()
            }),
        ),
        (
            "itl",
            ok.iter()
                .map(|r| {
                    r.itl_ms
                        .iter()
                        .map(|&g| f64::from(g) * time_scale)
                        .collect()
                })
                .collect(),
        ),
        ("e2el", one(&|r| r.e2el_ms)),
    ];
    let mut out = Vec::new();
    let mut k = 0u64;
    for (metric, groups) in &metrics {
        let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let samples: usize = groups.iter().map(Vec::len).sum();
        for stat in CI_STATS {
            let sub = seed.wrapping_add(k);
            k += 1;
            if let Some(ci) = bootstrap_ci(&refs, |v| named_stat(stat, v), resamples, sub) {
                out.push(NamedCi {
                    key: format!("{stat}_{metric}_ms"),
                    ci,
                    samples,
                    small_sample: is_small_sample(stat, samples),
                });
            }
        }
    }
    out
}
