//! Statistical evidence for a verdict (issue 28, docs/compare.md §4a): when both sides of a
//! matched pair carry their per-request samples ([`Point::samples`], attached by the loader
//! from each point's `records.jsonl`), a metric's verdict comes from a seeded bootstrap of the
//! **relative difference** `c/b − 1` instead of the single-number gate:
//!
//! * Each side's requests are resampled with replacement (B = [`RESAMPLES`] times, a cluster
//!   bootstrap: a request's ITL gaps stay together), the statistic (`--stat`: mean, median,
//!   p90, p99, p99.9) is taken on each resample, and `w_k = ±(c_k/b_k − 1)·100` (sign: positive =
//!   worse) gives the 95 % percentile interval `[lo, hi]` of the change and its bootstrap
//!   standard error `se`. Generator: SplitMix64 seeded from the point's concurrency and the
//!   metric (`servebench_contracts::stats`): same records → same verdict.
//! * Throughputs have no per-request value: by Little's law a closed loop's throughput is
//!   `conc · Σtokens / Σe2el`, so the resampled ratio `Σtokens/Σe2el` (output tokens for output
//!   tok/s/GPU, prompt + output for total) carries the change's interval; interactivity is
//!   `1000 / stat(TPOT)`, as InferenceX computes it.
//! * Against the effective gate `g` (`--gate`, or the config's stored noise floor when larger,
//!   [`Point::noise_floor`]): `lo > g` → regression, `hi < −g` → improvement, `[lo, hi]` inside
//!   `[−g, g]` → no change, otherwise **inconclusive** (the interval cannot exclude the gate),
//!   with the requests per side that would settle it: `n · (h / d)²` for half-width `h` and
//!   distance `d` of the estimate from the gate (the interval narrows as `1/√n`).
//! * Multiple comparisons: every metric of every point tested is one hypothesis; a regression
//!   or improvement must also survive Benjamini–Hochberg at [`FDR_Q`] over all of them
//!   (one-sided p-value of "the change is within the gate", from the normal approximation of
//!   the bootstrap distribution: `p = Φ(−(|w| − g)/se)`), else it is inconclusive.
//! * Power: the minimum detectable effect at 80 % power, `mde = g + (z₀.₉₇₅ + z₀.₈)·se`.
//! * A percentile from fewer samples than it needs (`⌈100/(100 − p)⌉`: 100 for p99, 1,000
//!   for p99.9) is inconclusive, never a regression.

use serde::{Deserialize, Serialize};
use servebench_contracts::stats::{named_stat, SplitMix64};

use crate::{Direction, Metric, Stat};

/// Bootstrap resamples per side and metric.
pub const RESAMPLES: usize = 1000;

/// False-discovery rate the run's verdict controls (Benjamini–Hochberg).
pub const FDR_Q: f64 = 0.05;

/// One request's values, in modelled display units (ms; tokens).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestSample {
    /// TTFT, ms.
    pub ttft: Option<f64>,
    /// TPOT, ms.
    pub tpot: Option<f64>,
    /// E2EL, ms.
    pub e2el: Option<f64>,
    /// Gaps between token events, ms.
    pub itl: Vec<f64>,
    /// Output tokens.
    pub output_tokens: f64,
    /// Prompt tokens (server count, else client).
    pub input_tokens: f64,
}

/// A point's successful measured requests (pooled over its repeats) and its client lag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// One entry per successful measured request.
    pub requests: Vec<RequestSample>,
    /// Client/host lag per request: `t0 − scheduled` (`queue_ms`, wall ms), how late the
    /// client sent a request after it was due: a loaded host shows here.
    pub lag_ms: Vec<f64>,
    /// The simulator's lag per request (embedded simulator only, from its emission log): its
    /// read lag `received − request_arrived` (the request's bytes waiting before the simulator
    /// parsed them) plus its engine loop's lateness (the latest one of the request's steps was
    /// published after its wall-clock target), wall ms. On a starved host this is where the
    /// time goes.
    #[serde(default)]
    pub server_lag_ms: Vec<f64>,
    /// Modelled time per wall time (the simulator's speedup; 1 for an engine): a wall lag of
    /// L ms counts as `L × time_scale` modelled ms in the latencies.
    #[serde(default)]
    pub time_scale: f64,
}

/// Client/host lag of one side: `t0 − scheduled` over its requests, wall ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Lag {
    /// Requests.
    pub n: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

impl Samples {
    /// The lag summary, `None` without requests.
    pub fn lag(&self) -> Option<Lag> {
        let mut v: Vec<f64> = self
            .host_lag_wall()
            .into_iter()
            .filter(|x| x.is_finite())
            .collect();
        if v.is_empty() {
            return None;
        }
        let n = v.len();
        Some(Lag {
            n,
            p50_ms: named_stat("median", &mut v)?,
            p99_ms: named_stat("p99", &mut v)?,
            max_ms: v.iter().copied().fold(f64::MIN, f64::max),
        })
    }

    /// Appends another repeat's requests.
    pub fn extend(&mut self, other: &Samples) {
        self.requests.extend(other.requests.iter().cloned());
        self.lag_ms.extend(other.lag_ms.iter().copied());
        self.server_lag_ms
            .extend(other.server_lag_ms.iter().copied());
        if self.time_scale == 0.0 {
            self.time_scale = other.time_scale;
        }
    }

    /// Each request's host lag, wall ms: the client's `queue_ms` plus the simulator's read lag
    /// when known (the two are different moments of the request, so they add).
    pub fn host_lag_wall(&self) -> Vec<f64> {
        self.lag_ms
            .iter()
            .enumerate()
            .map(|(i, q)| q + self.server_lag_ms.get(i).copied().unwrap_or(0.0))
            .collect()
    }

    /// The host lag in modelled ms (`host_lag_wall × time_scale`) at a statistic: its mean
    /// bounds how much a loaded host could have moved a mean (each request is lengthened by at
    /// most its own lag), its p99 how much it could have moved a percentile; 0 without
    /// requests.
    pub fn host_lag_modelled(&self, stat: Stat) -> f64 {
        let mut v = self.host_lag_wall();
        let ts = if self.time_scale > 0.0 {
            self.time_scale
        } else {
            1.0
        };
        let name = if stat == Stat::Mean { "mean" } else { "p99" };
        named_stat(name, &mut v).map_or(0.0, |x| x * ts)
    }
}

/// The bootstrap evidence behind one metric's verdict (percent of the baseline; positive =
/// worse for the metric's direction).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Observed change, % (worse positive).
    pub change_pct: f64,
    /// 95 % interval of the change, lower bound, %.
    pub lo_pct: f64,
    /// Upper bound, %.
    pub hi_pct: f64,
    /// Bootstrap standard error of the change, %.
    pub se_pct: f64,
    /// The gate the interval was held against, % (`--gate` or the noise floor, the larger).
    pub gate_pct: f64,
    /// The config's stored noise floor, % (earlier A/A runs), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor_pct: Option<f64>,
    /// One-sided p-value that the change is within the gate (in the direction observed).
    pub p_value: f64,
    /// Minimum detectable effect at 80 % power, %.
    pub mde_pct: f64,
    /// Baseline requests (samples behind the statistic).
    pub n_baseline: usize,
    /// Candidate requests.
    pub n_candidate: usize,
    /// Requests per side that would settle an inconclusive metric (`None` when settled, or
    /// when the estimate sits on the gate and no sample size would).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_needed: Option<u64>,
    /// The percentile needs more samples than a side has.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub small_sample: bool,
    /// A regression/improvement the interval showed but Benjamini–Hochberg did not keep.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fdr_dropped: bool,
    /// Hypotheses in the family the FDR was controlled over.
    pub family: usize,
    /// How much of the metric the host lag could account for, % of the baseline (the larger
    /// host lag × time scale of the two sides — mean for a mean, p99 for a percentile — over
    /// the baseline's mean TTFT, E2EL or decode time). A change is a regression only when it
    /// clears the gate by more than this (said in the line).
    #[serde(default)]
    pub host_lag_pct: f64,
}

/// The interval's own decision before the FDR step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Whole interval beyond +gate.
    Worse,
    /// Whole interval beyond −gate.
    Better,
    /// Interval inside ±gate.
    Same,
    /// Neither.
    Unsure,
}

impl Evidence {
    /// The interval's decision.
    pub fn call(&self) -> Call {
        let lag = self.host_lag_pct;
        if self.small_sample {
            Call::Unsure
        } else if self.lo_pct - lag > self.gate_pct {
            Call::Worse
        } else if self.hi_pct + lag < -self.gate_pct {
            Call::Better
        } else if self.lo_pct >= -self.gate_pct && self.hi_pct <= self.gate_pct {
            Call::Same
        } else {
            Call::Unsure
        }
    }

    /// Words for the verdict lines: `+12.0% (95% CI +8.1…+15.9% vs gate ±5%, 160/160
    /// requests)`; an inconclusive one adds what would settle it.
    pub fn text(&self) -> String {
        let f = |x: f64| format!("{}{:.1}%", if x < 0.0 { "−" } else { "+" }, x.abs());
        let mut s = format!(
            "worse by {} (95% CI {}…{}, gate ±{:.1}%{}; {}/{} requests; p {:.2e}, MDE {:.1}%)",
            f(self.change_pct),
            f(self.lo_pct),
            f(self.hi_pct),
            self.gate_pct,
            self.noise_floor_pct
                .map(|x| format!(" incl. noise floor {x:.1}%"))
                .unwrap_or_default(),
            self.n_baseline,
            self.n_candidate,
            self.p_value,
            self.mde_pct
        );
        if self.small_sample {
            s.push_str("; too few samples for this percentile");
        }
        if self.host_lag_pct >= 0.05 {
            s.push_str(&format!(
                "; host lag could account for {:.1}% of it{}",
                self.host_lag_pct,
                if self.call() == Call::Unsure && self.lo_pct > self.gate_pct {
                    " (so it is not called a regression)"
                } else if self.call() == Call::Unsure && self.hi_pct < -self.gate_pct {
                    " (so it is not called an improvement)"
                } else {
                    ""
                }
            ));
        }
        if self.fdr_dropped {
            s.push_str(&format!(
                "; not significant after the false-discovery-rate correction over {} comparisons",
                self.family
            ));
        }
        match (self.call(), self.requests_needed) {
            (Call::Unsure, Some(n)) => {
                s.push_str(&format!("; about {n} requests per side would settle it"))
            }
            (Call::Unsure, None) if !self.small_sample => {
                s.push_str("; the change sits on the gate: more requests will not settle it")
            }
            _ => {}
        }
        s
    }
}

/// Standard normal upper tail `P(Z > z)` (Abramowitz & Stegun 7.1.26 on erfc, |error| <
/// 1.5·10⁻⁷).
pub fn normal_sf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))))
        * (-x * x).exp();
    let upper = 0.5 * y;
    if z >= 0.0 {
        upper
    } else {
        1.0 - upper
    }
}

/// The statistic name [`named_stat`] understands for `stat`.
fn stat_name(stat: Stat) -> String {
    stat.to_string()
}

/// Per-request groups of `metric`: one value per request; ITL percentiles: its gaps; ratio
/// statistics ([`is_ratio`]): a `[numerator, denominator]` pair per request.
fn groups(s: &Samples, metric: Metric, stat: Stat) -> Vec<Vec<f64>> {
    let one = |f: &dyn Fn(&RequestSample) -> Option<f64>| -> Vec<Vec<f64>> {
        s.requests
            .iter()
            .filter_map(|r| f(r).filter(|x| x.is_finite()).map(|x| vec![x]))
            .collect()
    };
    match metric {
        Metric::Ttft => one(&|r| r.ttft),
        Metric::Tpot => one(&|r| r.tpot),
        Metric::E2el => one(&|r| r.e2el),
        // interactivity is `1000 / stat(TPOT)` (InferenceX), so TPOT is resampled
        Metric::Intvty => one(&|r| r.tpot),
        // the pooled mean of the gaps is Σgaps/Σcount: a ratio over requests (cheaper than
        // pooling 1,000 gaps per request in every resample, the same value)
        Metric::Itl if stat == Stat::Mean => s
            .requests
            .iter()
            .filter(|r| !r.itl.is_empty())
            .map(|r| vec![r.itl.iter().sum::<f64>(), r.itl.len() as f64])
            .collect(),
        Metric::Itl => s
            .requests
            .iter()
            .filter(|r| !r.itl.is_empty())
            .map(|r| r.itl.clone())
            .collect(),
        Metric::TotalTputPerGpu | Metric::OutputTputPerGpu | Metric::InputTputPerGpu => s
            .requests
            .iter()
            .filter_map(|r| {
                let e = r.e2el.filter(|e| *e > 0.0)?;
                let tokens = match metric {
                    Metric::TotalTputPerGpu => r.input_tokens + r.output_tokens,
                    Metric::OutputTputPerGpu => r.output_tokens,
                    _ => r.input_tokens,
                };
                Some(vec![tokens, e])
            })
            .collect(),
        Metric::JoulesPerOutputToken | Metric::JoulesPerToken | Metric::PowerPerGpu => Vec::new(),
    }
}

/// Whether the statistic is a ratio of sums over requests: throughputs (`Σtokens/Σe2el`) and
/// the mean ITL (`Σgaps/Σcount`).
fn is_ratio(metric: Metric, stat: Stat) -> bool {
    !metric.has_stat() || (metric == Metric::Itl && stat == Stat::Mean)
}

/// How a resample's statistic is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `named_stat` of the pooled values.
    Plain,
    /// A ratio of sums of `[numerator, denominator]` pairs ([`is_ratio`]).
    Ratio,
    /// `1000 / named_stat` (interactivity from TPOT).
    Inverse,
}

/// The statistic on a pooled resample: a ratio of sums for [`is_ratio`] (pairs), else
/// `named_stat(stat)`.
fn statistic(kind: Kind, stat: &str, pooled: &mut Vec<f64>) -> Option<f64> {
    if kind == Kind::Inverse {
        return named_stat(stat, pooled)
            .filter(|t| *t > 0.0)
            .map(|t| 1000.0 / t);
    }
    if kind == Kind::Ratio {
        let (mut t, mut e) = (0.0, 0.0);
        for pair in pooled.chunks_exact(2) {
            t += pair[0];
            e += pair[1];
        }
        (e > 0.0).then(|| t / e)
    } else {
        named_stat(stat, pooled)
    }
}

/// The statistic on the original data and on [`RESAMPLES`] resamples of the requests.
fn side_stats(g: &[Vec<f64>], kind: Kind, stat: &str, seed: u64) -> Option<(f64, Vec<f64>)> {
    let n = g.len();
    if n == 0 {
        return None;
    }
    let mut pooled: Vec<f64> = g.iter().flatten().copied().collect();
    let value = statistic(kind, stat, &mut pooled)?;
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        pooled.clear();
        for _ in 0..n {
            pooled.extend_from_slice(&g[rng.index(n)]);
        }
        if let Some(v) = statistic(kind, stat, &mut pooled) {
            out.push(v);
        }
    }
    Some((value, out))
}

/// Seed of one (point, metric, side): a fixed mix of the concurrency and the metric, so the
/// same records always give the same interval.
fn seed_of(conc: u32, metric: Metric, side: u64) -> u64 {
    let m = Metric::ALL.iter().position(|x| *x == metric).unwrap_or(0) as u64;
    0x5EED_0028_u64
        .wrapping_mul(1_000_003)
        .wrapping_add(u64::from(conc) << 16)
        .wrapping_add(m << 4)
        .wrapping_add(side)
}

/// The bootstrap evidence of one metric of a matched pair, `None` when either side lacks
/// samples for it. `gate_pct` is `--gate`; `noise_floor_pct` the config's stored floor.
pub fn evidence(
    base: &Samples,
    cand: &Samples,
    metric: Metric,
    stat: Stat,
    conc: u32,
    gate_pct: f64,
    noise_floor_pct: Option<f64>,
) -> Option<Evidence> {
    // energy is one number per point (the window's integral): no per-request samples to
    // resample; the noise rule over repeats decides (docs/compare.md)
    if metric.is_energy() {
        return None;
    }
    let name = stat_name(stat);
    let (gb, gc) = (groups(base, metric, stat), groups(cand, metric, stat));
    let ratio = is_ratio(metric, stat);
    let samples = |g: &[Vec<f64>]| -> usize {
        if ratio {
            g.len()
        } else {
            g.iter().map(Vec::len).sum()
        }
    };
    let (nb, nc) = (samples(&gb), samples(&gc));
    let kind = if ratio {
        Kind::Ratio
    } else if metric == Metric::Intvty {
        Kind::Inverse
    } else {
        Kind::Plain
    };
    let (b, bs) = side_stats(&gb, kind, &name, seed_of(conc, metric, 1))?;
    let (c, cs) = side_stats(&gc, kind, &name, seed_of(conc, metric, 2))?;
    if b == 0.0 || !b.is_finite() || !c.is_finite() {
        return None;
    }
    let sign = match metric.direction() {
        Direction::LowerIsBetter => 1.0,
        Direction::HigherIsBetter => -1.0,
    };
    let change = sign * (c / b - 1.0) * 100.0;
    let mut w: Vec<f64> = bs
        .iter()
        .zip(&cs)
        .filter(|(x, _)| **x != 0.0)
        .map(|(x, y)| sign * (y / x - 1.0) * 100.0)
        .filter(|x| x.is_finite())
        .collect();
    if w.len() < 2 {
        return None;
    }
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let se = (w.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (w.len() - 1) as f64).sqrt();
    let lo = named_stat("p2.5", &mut w)?;
    let hi = named_stat("p97.5", &mut w)?;
    let gate = noise_floor_pct.map_or(gate_pct, |f| f.max(gate_pct));
    let p_value = if se > 0.0 {
        normal_sf((change.abs() - gate) / se)
    } else if change.abs() > gate {
        0.0
    } else {
        1.0
    };
    let small = !ratio
        && servebench_contracts::stats::percentile_of(&name)
            .is_some_and(|p| nb.min(nc) < min_samples(p));
    let mut e = Evidence {
        change_pct: change,
        lo_pct: lo,
        hi_pct: hi,
        se_pct: se,
        gate_pct: gate,
        noise_floor_pct,
        p_value,
        mde_pct: gate + (1.959_964 + 0.841_621) * se,
        n_baseline: gb.len(),
        n_candidate: gc.len(),
        requests_needed: None,
        small_sample: small,
        fdr_dropped: false,
        family: 1,
        host_lag_pct: host_lag_share(base, cand, metric, stat),
    };
    if e.call() == Call::Unsure && !small {
        let h = (hi - lo) / 2.0;
        let d = (change.abs() - gate).abs();
        let n = gb.len().min(gc.len()) as f64;
        if d > 1e-9 && h > 0.0 {
            let need = (n * (h / d).powi(2)).ceil();
            // beyond 1000× the requests there is no practical answer: say the change is at the
            // gate instead
            if need.is_finite() && need <= n * 1000.0 {
                e.requests_needed = Some(need as u64);
            }
        }
    }
    Some(e)
}

/// The share (%) of a metric the host lag could account for: the larger of the two sides' host
/// lag in modelled ms ([`Samples::host_lag_modelled`]: mean for `--stat mean`, else p99) over
/// the baseline's mean of the time it can lengthen: TTFT (TTFT), E2EL (E2EL and, by Little's
/// law, the throughputs), the decode time E2EL − TTFT (TPOT, ITL, interactivity: a step
/// published late delays the tokens after it).
fn host_lag_share(base: &Samples, cand: &Samples, metric: Metric, stat: Stat) -> f64 {
    let mean = |f: &dyn Fn(&RequestSample) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = base.requests.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let denom = match metric {
        Metric::Ttft => mean(&|r| r.ttft),
        Metric::E2el
        | Metric::TotalTputPerGpu
        | Metric::OutputTputPerGpu
        | Metric::InputTputPerGpu => mean(&|r| r.e2el),
        Metric::Tpot | Metric::Itl | Metric::Intvty => mean(&|r| Some(r.e2el? - r.ttft?)),
        Metric::JoulesPerOutputToken | Metric::JoulesPerToken | Metric::PowerPerGpu => None,
    };
    match denom.filter(|d| *d > 0.0) {
        Some(d) => {
            base.host_lag_modelled(stat)
                .max(cand.host_lag_modelled(stat))
                / d
                * 100.0
        }
        None => 0.0,
    }
}

/// Fewest samples for which percentile `p` estimates a tail: `⌈100/(100 − p)⌉`.
fn min_samples(p: f64) -> usize {
    if p >= 100.0 {
        return usize::MAX;
    }
    (100.0 / (100.0 - p) - 1e-9).ceil().max(1.0) as usize
}

/// Benjamini–Hochberg at `q` over `p` (one per hypothesis): which are rejected ("significant").
pub fn benjamini_hochberg(p: &[f64], q: f64) -> Vec<bool> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let mut k_max = 0;
    for (rank, &i) in order.iter().enumerate() {
        if p[i] <= (rank + 1) as f64 * q / m as f64 {
            k_max = rank + 1;
        }
    }
    let mut out = vec![false; m];
    for &i in &order[..k_max] {
        out[i] = true;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(ttft: &[f64]) -> Samples {
        Samples {
            requests: ttft
                .iter()
                .map(|&t| RequestSample {
                    ttft: Some(t),
                    tpot: Some(t / 10.0),
                    e2el: Some(t * 5.0),
                    itl: vec![t / 10.0; 3],
                    output_tokens: 64.0,
                    input_tokens: 512.0,
                })
                .collect(),
            lag_ms: vec![0.1; ttft.len()],
            server_lag_ms: Vec::new(),
            time_scale: 1.0,
        }
    }

    fn spread(n: usize, mean: f64, amp: f64, phase: usize) -> Vec<f64> {
        // a deterministic, symmetric spread of ±amp around mean (n a multiple of 21: every
        // residue equally often, so the mean is exact)
        (0..n)
            .map(|i| mean + amp * (((i * 5 + phase) % 21) as f64 - 10.0) / 10.0)
            .collect()
    }

    #[test]
    fn bh_matches_a_hand_computed_example() {
        // m = 5, q = 0.05: thresholds k·q/m = 0.01, 0.02, 0.03, 0.04, 0.05; sorted p 0.001
        // (≤ 0.01), 0.012 (≤ 0.02), 0.035 (> 0.03), 0.041 (> 0.04), 0.9 (> 0.05): the largest
        // k with p(k) ≤ k·q/m is 2, so the two smallest are rejected.
        let r = benjamini_hochberg(&[0.9, 0.012, 0.001, 0.041, 0.035], 0.05);
        assert_eq!(r, vec![false, true, true, false, false]);
        assert_eq!(benjamini_hochberg(&[], 0.05), Vec::<bool>::new());
    }

    #[test]
    fn normal_tail_is_right() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_sf(-1.644_854) - 0.95).abs() < 1e-6);
    }

    #[test]
    fn same_engine_is_no_change_and_a_planted_15_percent_is_a_regression() {
        let b = samples(&spread(210, 100.0, 10.0, 0));
        let a = samples(&spread(210, 100.0, 10.0, 3));
        let e = evidence(&b, &a, Metric::Ttft, Stat::Mean, 4, 5.0, None).unwrap();
        assert_eq!(e.call(), Call::Same, "{e:?}");
        let slow = samples(&spread(210, 115.0, 11.5, 3));
        let e = evidence(&b, &slow, Metric::Ttft, Stat::Mean, 4, 5.0, None).unwrap();
        assert_eq!(e.call(), Call::Worse, "{e:?}");
        assert!((e.change_pct - 15.0).abs() < 0.5, "{e:?}");
        assert!(e.p_value < 1e-6, "{e:?}");
        // throughput by Little's law: 15 % longer requests, same tokens → 13 % fewer tok/s
        let e = evidence(
            &b,
            &slow,
            Metric::OutputTputPerGpu,
            Stat::Mean,
            4,
            5.0,
            None,
        )
        .unwrap();
        assert!(
            (e.change_pct - (1.0 - 1.0 / 1.15) * 100.0).abs() < 0.5,
            "{e:?}"
        );
        assert_eq!(e.call(), Call::Worse);
        // the same seed gives the same interval
        let e2 = evidence(
            &b,
            &slow,
            Metric::OutputTputPerGpu,
            Stat::Mean,
            4,
            5.0,
            None,
        )
        .unwrap();
        assert_eq!(e, e2);
    }

    #[test]
    fn few_requests_are_inconclusive_with_the_requests_that_would_settle_it() {
        let b = samples(&spread(8, 100.0, 40.0, 0));
        let c = samples(&spread(8, 104.0, 40.0, 5));
        let e = evidence(&b, &c, Metric::Ttft, Stat::Mean, 4, 5.0, None).unwrap();
        assert_eq!(e.call(), Call::Unsure, "{e:?}");
        let n = e.requests_needed.expect("a size that settles it");
        assert!(n > 8, "{e:?}");
        assert!(
            e.text().contains("requests per side would settle it"),
            "{}",
            e.text()
        );
        // p99 of 8 requests: too few samples, whatever the interval
        let e = evidence(&b, &c, Metric::Ttft, Stat::P99, 4, 5.0, None).unwrap();
        assert!(e.small_sample && e.call() == Call::Unsure, "{e:?}");
    }

    #[test]
    fn a_noise_floor_wider_than_the_gate_is_the_gate() {
        let b = samples(&spread(420, 100.0, 5.0, 0));
        let c = samples(&spread(420, 108.0, 5.4, 3));
        let e = evidence(&b, &c, Metric::Ttft, Stat::Mean, 4, 5.0, None).unwrap();
        assert_eq!(e.call(), Call::Worse, "{e:?}");
        let e = evidence(&b, &c, Metric::Ttft, Stat::Mean, 4, 5.0, Some(12.0)).unwrap();
        assert_eq!(e.gate_pct, 12.0);
        assert_eq!(e.call(), Call::Same, "{e:?}");
        assert!(e.text().contains("noise floor 12.0%"), "{}", e.text());
    }
}
