//! Goodput under service-level objectives (`--slo ttft=500ms,tpot=50ms[,e2el=…][@p90]`).
//!
//! Definitions (docs/measurement.md "Goodput and SLOs"):
//!
//! * A measured request is **good** when it succeeded and every SLO it is subject to holds:
//!   `ttft_ms ≤ ttft`, `ttfo_ms ≤ ttfo` (a request without visible output misses it),
//!   `tpot_ms ≤ tpot` (only requests with more than one output token have a TPOT; for the others
//!   the TPOT objective does not apply), `e2el_ms ≤ e2el`. A failed request is never good, so
//!   failures count against goodput.
//! * **goodput** (req/s) = good requests / duration; **goodput tok/s/GPU** = Σ(input + output
//!   tokens of good requests) / duration / G and the output-only variant, with the same duration
//!   and per-GPU divisor G as the point's throughput (MEASUREMENT.md Part 1). This is vLLM
//!   bench's `request_goodput` made per GPU, with failures in the denominator.
//! * **attainment** = good / measured requests (failed included); the point **meets the SLO**
//!   when attainment ≥ the target (`@p90` → 90 %, the default; DistServe's "90 % SLO
//!   attainment"). The per-metric `pX` of the successful requests is reported next to each
//!   threshold as evidence (the joint per-request rule is what decides, not the marginals).

use std::fmt;

use serde::{Deserialize, Serialize};
use servebench_client::{Phase, RequestRecord};

use crate::stats::percentile;

/// Default attainment target when the spec has no `@pX`: 90 %.
pub const DEFAULT_ATTAINMENT_PCT: f64 = 90.0;

/// A bad `--slo` spec; the message names the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--slo {spec:?}: {part:?}: {why}")]
pub struct SloParseError {
    /// The whole spec as given.
    pub spec: String,
    /// The part that is wrong.
    pub part: String,
    /// What is wrong with it and what was expected.
    pub why: String,
}

/// Service-level objectives, thresholds in ms (each optional, at least one set).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Time to first token ≤ this, ms.
    pub ttft_ms: Option<f64>,
    /// Time to first visible (non-reasoning) output ≤ this, ms.
    pub ttfo_ms: Option<f64>,
    /// Time per output token ≤ this, ms.
    pub tpot_ms: Option<f64>,
    /// End-to-end latency ≤ this, ms.
    pub e2el_ms: Option<f64>,
    /// Fraction of requests (percent, 0 < x ≤ 100) that must be good for the point to meet the
    /// SLO (`@p90` → 90).
    pub attainment_pct: f64,
}

impl Slo {
    /// Parses `ttft=500ms,tpot=50ms[,ttfo=…][,e2el=…][@p90]`. Durations: `<number>ms`,
    /// `<number>s`, `<number>us`, or a bare number (ms). Errors name the bad part.
    pub fn parse(spec: &str) -> Result<Slo, SloParseError> {
        let err = |part: &str, why: String| SloParseError {
            spec: spec.to_string(),
            part: part.to_string(),
            why,
        };
        let s = spec.trim();
        if s.is_empty() {
            return Err(err(
                "",
                "empty; expected e.g. ttft=500ms,tpot=50ms@p90".into(),
            ));
        }
        let (body, at) = match s.split_once('@') {
            Some((b, a)) => (b, Some(a)),
            None => (s, None),
        };
        let attainment_pct = match at {
            None => DEFAULT_ATTAINMENT_PCT,
            Some(a) => {
                let a = a.trim();
                let num = a.strip_prefix('p').or_else(|| a.strip_prefix('P'));
                match num.and_then(|n| n.parse::<f64>().ok()) {
                    Some(x) if x > 0.0 && x <= 100.0 => x,
                    _ => {
                        return Err(err(
                            &format!("@{a}"),
                            "expected @pX with 0 < X ≤ 100, e.g. @p90 or @p99.9".into(),
                        ))
                    }
                }
            }
        };
        let mut slo = Slo {
            ttft_ms: None,
            ttfo_ms: None,
            tpot_ms: None,
            e2el_ms: None,
            attainment_pct,
        };
        for part in body.split(',') {
            let p = part.trim();
            if p.is_empty() {
                return Err(err(part, "empty objective (stray comma?)".into()));
            }
            let Some((k, v)) = p.split_once('=') else {
                return Err(err(p, "expected METRIC=DURATION, e.g. tpot=50ms".into()));
            };
            let ms = parse_duration_ms(v.trim()).ok_or_else(|| {
                err(
                    p,
                    "not a positive duration (expected e.g. 50ms, 0.5s)".into(),
                )
            })?;
            let slot = match k.trim().to_ascii_lowercase().as_str() {
                "ttft" => &mut slo.ttft_ms,
                "ttfo" => &mut slo.ttfo_ms,
                "tpot" => &mut slo.tpot_ms,
                "e2el" => &mut slo.e2el_ms,
                other => {
                    return Err(err(
                        p,
                        format!("unknown metric {other:?} (expected ttft, ttfo, tpot or e2el)"),
                    ))
                }
            };
            if slot.is_some() {
                return Err(err(p, "given twice".into()));
            }
            *slot = Some(ms);
        }
        Ok(slo)
    }

    /// Whether one successful request meets every objective (see the module docs).
    pub fn request_is_good(&self, r: &RequestRecord) -> bool {
        if !r.success {
            return false;
        }
        let within = |limit: Option<f64>, v: Option<f64>| match limit {
            None => true,
            Some(l) => v.is_some_and(|x| x <= l),
        };
        let tpot = if r.output_tokens > 1 {
            match (r.e2el_ms, r.ttft_ms) {
                (Some(e), Some(t)) => Some((e - t) / (r.output_tokens - 1) as f64),
                _ => None,
            }
        } else {
            None
        };
        within(self.ttft_ms, r.ttft_ms)
            && within(self.ttfo_ms, r.ttfo_ms)
            && within(self.e2el_ms, r.e2el_ms)
            && (r.output_tokens <= 1 || within(self.tpot_ms, tpot))
    }

    /// The objectives as `(name, threshold ms)`, in spec order ttft, ttfo, tpot, e2el.
    pub fn objectives(&self) -> Vec<(&'static str, f64)> {
        [
            ("ttft", self.ttft_ms),
            ("ttfo", self.ttfo_ms),
            ("tpot", self.tpot_ms),
            ("e2el", self.e2el_ms),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|x| (n, x)))
        .collect()
    }
}

impl fmt::Display for Slo {
    /// Canonical form, e.g. `ttft=500ms,tpot=50ms@p90`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .objectives()
            .into_iter()
            .map(|(n, v)| format!("{n}={v}ms"))
            .collect();
        write!(f, "{}@p{}", parts.join(","), self.attainment_pct)
    }
}

fn parse_duration_ms(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e3)
    } else {
        (v, 1.0)
    };
    let x: f64 = num.trim().parse().ok()?;
    (x.is_finite() && x > 0.0).then_some(x * scale)
}

/// One objective's evidence: the percentile of the successful requests next to its threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveEvidence {
    /// `ttft`, `ttfo`, `tpot` or `e2el`.
    pub metric: String,
    /// Threshold, ms.
    pub threshold_ms: f64,
    /// The attainment percentile (`@pX`) of this metric over successful requests, ms (null when
    /// none has the metric).
    pub observed_ms: Option<f64>,
    /// Requests (failed included) that miss this objective.
    pub missed: u64,
}

/// Goodput of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    /// The objectives in canonical form (`ttft=500ms,tpot=50ms@p90`).
    pub slo: String,
    /// Measured requests (warmup and cancelled excluded; failed included).
    pub requests: u64,
    /// Requests that succeeded and met every objective.
    pub good: u64,
    /// Failed requests (each counts as not good).
    pub failed: u64,
    /// good / requests, percent (null when there are no requests).
    pub attainment_pct: Option<f64>,
    /// Attainment target, percent.
    pub target_pct: f64,
    /// attainment ≥ target.
    pub meets_slo: bool,
    /// good / duration, req/s.
    pub goodput_rps: f64,
    /// Σ(input + output tokens of good requests) / duration / G, tok/s/GPU.
    pub goodput_tput_per_gpu: f64,
    /// Σ(output tokens of good requests) / duration / G, tok/s/GPU.
    pub goodput_output_tput_per_gpu: f64,
    /// Per objective: threshold, observed percentile, misses.
    pub evidence: Vec<ObjectiveEvidence>,
}

/// Goodput of the measured records over `duration_s` (the point's duration, s) and `num_gpus`
/// (the per-GPU divisor). `time_scale` multiplies record latencies first (the simulator's
/// speedup; 1.0 for a real engine) and must be the factor the point's duration was rescaled by.
pub fn goodput(
    records: &[RequestRecord],
    slo: &Slo,
    duration_s: f64,
    num_gpus: u32,
    time_scale: f64,
) -> Goodput {
    let scaled: Vec<RequestRecord>;
    let records: &[RequestRecord] = if time_scale != 1.0 {
        scaled = records
            .iter()
            .map(|r| {
                let mut r = r.clone();
                for v in [
                    &mut r.ttft_ms,
                    &mut r.ttfo_ms,
                    &mut r.e2el_ms,
                    &mut r.tpot_ms,
                ]
                .into_iter()
                .flatten()
                {
                    *v *= time_scale;
                }
                r
            })
            .collect();
        &scaled
    } else {
        records
    };
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measured && r.counts_in_point())
        .collect();
    let n = measured.len() as u64;
    let good: Vec<&&RequestRecord> = measured.iter().filter(|r| slo.request_is_good(r)).collect();
    let failed = measured.iter().filter(|r| !r.success).count() as u64;
    let g = f64::from(num_gpus.max(1));
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };
    let out: u64 = good.iter().map(|r| r.output_tokens).sum();
    let inp: u64 = good
        .iter()
        .map(|r| {
            r.prompt_tokens_client
                .map(u64::from)
                .or(r.prompt_tokens_server)
                .unwrap_or(0)
        })
        .sum();
    let attainment = (n > 0).then(|| good.len() as f64 / n as f64 * 100.0);
    let ok: Vec<&&RequestRecord> = measured.iter().filter(|r| r.success).collect();
    let metric = |name: &str, r: &RequestRecord| -> Option<f64> {
        match name {
            "ttft" => r.ttft_ms,
            "ttfo" => r.ttfo_ms,
            "e2el" => r.e2el_ms,
            "tpot" if r.output_tokens > 1 => {
                Some((r.e2el_ms? - r.ttft_ms?) / (r.output_tokens - 1) as f64)
            }
            _ => None,
        }
    };
    let evidence = slo
        .objectives()
        .into_iter()
        .map(|(name, thr)| {
            let mut v: Vec<f64> = ok.iter().filter_map(|r| metric(name, r)).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            let missed = measured
                .iter()
                .filter(|r| {
                    if !r.success {
                        return true;
                    }
                    if name == "tpot" && r.output_tokens <= 1 {
                        return false;
                    }
                    !metric(name, r).is_some_and(|x| x <= thr)
                })
                .count() as u64;
            ObjectiveEvidence {
                metric: name.to_string(),
                threshold_ms: thr,
                observed_ms: percentile(&v, slo.attainment_pct),
                missed,
            }
        })
        .collect();
    Goodput {
        slo: slo.to_string(),
        requests: n,
        good: good.len() as u64,
        failed,
        attainment_pct: attainment,
        target_pct: slo.attainment_pct,
        // integer-exact: good·100 ≥ target·n (no 89.999… from a division)
        meets_slo: n > 0 && good.len() as f64 * 100.0 >= slo.attainment_pct * n as f64 - 1e-9,
        goodput_rps: per_s(good.len() as f64),
        goodput_tput_per_gpu: per_s((inp + out) as f64) / g,
        goodput_output_tput_per_gpu: per_s(out as f64) / g,
        evidence,
    }
}
