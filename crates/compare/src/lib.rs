//! Compare: match candidate points to baseline points on the InferenceX identity, run the
//! comparability gates, compute deltas, decide verdicts (with reasons for every N/A).
//!
//! Must not know about: HTTP, SQLite, rendering.
//!
//! Data in: the typed rows servebench writes (`servebench_contracts::AggRow`, `EvalRow`:
//! [`Point::from_agg`], [`EvalPoint::from_eval`]) and foreign rows (InferenceX `agg_bmk.json`
//! rows incl. AgentX aggregates, `agg_eval_all.json` rows, baseline tables), which only the
//! `import` module reads ([`parse_baseline`] → `servebench_contracts::ForeignRow`,
//! [`Point::from_foreign`], [`EvalPoint::from_foreign`]); all are turned into [`Point`] /
//! [`EvalPoint`]. Data out: a [`Comparison`] that renderers (the report crate, the terminal
//! table) read. The rules are documented in `docs/compare.md`.
#![warn(missing_docs)]

mod types;

pub use types::*;

impl Metric {
    /// Every metric, in the default comparison order.
    pub const ALL: [Metric; 11] = [
        Metric::TotalTputPerGpu,
        Metric::OutputTputPerGpu,
        Metric::InputTputPerGpu,
        Metric::Ttft,
        Metric::Tpot,
        Metric::Itl,
        Metric::E2el,
        Metric::Intvty,
        Metric::JoulesPerOutputToken,
        Metric::JoulesPerToken,
        Metric::PowerPerGpu,
    ];

    /// The energy metrics, compared whenever a point of either side carries energy
    /// ([`with_energy`]).
    pub const ENERGY: [Metric; 3] = [
        Metric::JoulesPerOutputToken,
        Metric::JoulesPerToken,
        Metric::PowerPerGpu,
    ];

    /// Whether this is one of [`Metric::ENERGY`].
    pub fn is_energy(self) -> bool {
        Metric::ENERGY.contains(&self)
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        match self {
            Metric::TotalTputPerGpu
            | Metric::OutputTputPerGpu
            | Metric::InputTputPerGpu
            | Metric::Intvty => Direction::HigherIsBetter,
            Metric::Ttft
            | Metric::Tpot
            | Metric::Itl
            | Metric::E2el
            | Metric::JoulesPerOutputToken
            | Metric::JoulesPerToken
            | Metric::PowerPerGpu => Direction::LowerIsBetter,
        }
    }

    /// Whether the metric is read at a latency statistic (`false` for throughputs).
    pub fn has_stat(self) -> bool {
        !matches!(
            self,
            Metric::TotalTputPerGpu
                | Metric::OutputTputPerGpu
                | Metric::InputTputPerGpu
                | Metric::JoulesPerOutputToken
                | Metric::JoulesPerToken
                | Metric::PowerPerGpu
        )
    }

    /// The agg-row key for this metric at `stat`, e.g. `(Ttft, Median)` → `"median_ttft"`,
    /// `(TotalTputPerGpu, _)` → `"tput_per_gpu"`.
    pub fn agg_key(self, stat: Stat) -> String {
        let base = match self {
            Metric::TotalTputPerGpu => return "tput_per_gpu".into(),
            Metric::OutputTputPerGpu => return "output_tput_per_gpu".into(),
            Metric::InputTputPerGpu => return "input_tput_per_gpu".into(),
            Metric::JoulesPerOutputToken => return "joules_per_output_token".into(),
            Metric::JoulesPerToken => return "joules_per_total_token".into(),
            Metric::PowerPerGpu => return "avg_power_w".into(),
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::Itl => "itl",
            Metric::E2el => "e2el",
            Metric::Intvty => "intvty",
        };
        format!("{stat}_{base}")
    }

    /// Factor from agg-row units to display units: 1000 for latencies (s → ms), 1 otherwise.
    pub fn display_factor(self) -> f64 {
        match self {
            Metric::Ttft | Metric::Tpot | Metric::Itl | Metric::E2el => 1000.0,
            _ => 1.0,
        }
    }

    /// Display unit: `"tok/s/GPU"`, `"ms"`, `"tok/s/user"`, `"J/tok"`, `"W/GPU"`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TotalTputPerGpu | Metric::OutputTputPerGpu | Metric::InputTputPerGpu => {
                "tok/s/GPU"
            }
            Metric::Ttft | Metric::Tpot | Metric::Itl | Metric::E2el => "ms",
            Metric::Intvty => "tok/s/user",
            Metric::JoulesPerOutputToken | Metric::JoulesPerToken => "J/tok",
            Metric::PowerPerGpu => "W/GPU",
        }
    }

    /// Column label as in the PR comment: `"Total tok/s/GPU"`, `"Output tok/s/GPU"`,
    /// `"Input tok/s/GPU"`, `"TTFT ms"`, `"TPOT ms"`, `"ITL ms"`, `"E2EL ms"`,
    /// `"Interactivity tok/s/user"`, `"J/output tok"`, `"J/tok"`, `"W/GPU"`.
    pub fn label(self) -> &'static str {
        match self {
            Metric::TotalTputPerGpu => "Total tok/s/GPU",
            Metric::OutputTputPerGpu => "Output tok/s/GPU",
            Metric::InputTputPerGpu => "Input tok/s/GPU",
            Metric::Ttft => "TTFT ms",
            Metric::Tpot => "TPOT ms",
            Metric::Itl => "ITL ms",
            Metric::E2el => "E2EL ms",
            Metric::Intvty => "Interactivity tok/s/user",
            Metric::JoulesPerOutputToken => "J/output tok",
            Metric::JoulesPerToken => "J/tok",
            Metric::PowerPerGpu => "W/GPU",
        }
    }
}

impl NaReason {
    /// English phrase used after `Δ N/A: ` in notes, e.g. `"no matched baseline"`,
    /// `"baseline missing"`, `"baseline zero"`, `"failed"`, `"dataset/workload mismatch"`,
    /// `"statistic mismatch"`, `"eval not passed"`, `"sample counts differ"`.
    pub fn text(&self) -> String {
        match self {
            NaReason::NoMatchedBaseline => "no matched baseline".into(),
            NaReason::BaselineMissing => "baseline missing".into(),
            NaReason::BaselineZero => "baseline zero".into(),
            NaReason::CandidateMissing => "candidate missing".into(),
            NaReason::PointFailed {
                side: Side::Candidate,
            } => "failed".into(),
            NaReason::PointFailed {
                side: Side::Baseline,
            } => "baseline failed".into(),
            NaReason::PointInvalid {
                side: Side::Candidate,
                reason,
            } => format!("invalid: {reason}"),
            NaReason::PointInvalid {
                side: Side::Baseline,
                reason,
            } => format!("baseline invalid: {reason}"),
            NaReason::WorkloadMismatch {
                baseline,
                candidate,
            } => {
                format!("workload/dataset mismatch ({baseline} vs {candidate})")
            }
            NaReason::StatisticMismatch {
                baseline,
                requested,
            } => format!("statistic mismatch (baseline {baseline}, requested {requested})"),
            NaReason::EnergySourceMismatch {
                baseline,
                candidate,
            } => format!("energy {baseline} vs {candidate}"),
            NaReason::EvalNotPassed {
                side: Side::Candidate,
            } => "eval not passed".into(),
            NaReason::EvalNotPassed {
                side: Side::Baseline,
            } => "baseline eval not passed".into(),
            NaReason::SampleCountsDiffer {
                baseline,
                candidate,
            } => {
                let f = |v: &Option<u64>| v.map_or("N/A".to_string(), |n| n.to_string());
                format!(
                    "sample counts differ ({}/{} old/new)",
                    f(baseline),
                    f(candidate)
                )
            }
        }
    }
}

impl Delta {
    /// A delta that could not be computed.
    pub fn na(reason: NaReason) -> Delta {
        Delta {
            value: None,
            pct: None,
            na: Some(reason),
        }
    }

    /// `"+7.9%"`, `"-93.8%"`, `"+0.0%"` (one decimal, signed) or `"N/A"`.
    pub fn pct_text(&self) -> String {
        match self.pct {
            Some(p) => format!("{}{:.1}%", if p < 0.0 { "" } else { "+" }, p),
            None => "N/A".into(),
        }
    }

    /// `"+0.08 pp"` (two decimals, signed) or `"N/A"` (eval deltas).
    pub fn pp_text(&self) -> String {
        match self.pct {
            Some(p) => format!("{}{:.2} pp", if p < 0.0 { "" } else { "+" }, p),
            None => "N/A".into(),
        }
    }
}

impl PointKey {
    /// Workload label as in the PR comment: `"8k/1k"` (ISL/OSL in units of 1024 when exact,
    /// else the token counts, e.g. `"1000/200"`), `"AgentX"` for agentic points.
    pub fn workload_label(&self) -> String {
        match (self.benchmark_type, self.isl, self.osl) {
            (BenchmarkType::AgenticTraces, _, _) => "AgentX".into(),
            (_, Some(i), Some(o)) => {
                #[allow(clippy::manual_is_multiple_of)] // MSRV 1.85
                let k = |n: u32| {
                    if n >= 1024 && n % 1024 == 0 {
                        format!("{}k", n / 1024)
                    } else {
                        n.to_string()
                    }
                };
                format!("{}/{}", k(i), k(o))
            }
            _ => "unknown workload".into(),
        }
    }

    /// Topology label: `"TP8/EP1"` single-node; multinode `"PTP4x2/DTP16x1"` (TP × workers).
    pub fn topology_label(&self) -> String {
        let t = &self.topology;
        if self.is_multinode {
            format!(
                "PTP{}x{}/DTP{}x{}",
                t.prefill.tp,
                t.prefill_workers.unwrap_or(1),
                t.decode.tp,
                t.decode_workers.unwrap_or(1)
            )
        } else {
            format!("TP{}/EP{}", t.prefill.tp, t.prefill.ep)
        }
    }
}

/// InferenceX `compare_results.py` hardware normalisation: lowercase, then strip one trailing
/// `-multinode`, `-trt` or `-disagg`. `"B200-TRT"` → `"b200"`, `"gb200-multinode"` → `"gb200"`.
pub fn normalize_hw(hw: &str) -> String {
    let lower = hw.trim().to_ascii_lowercase();
    for suffix in ["-multinode", "-trt", "-disagg"] {
        if let Some(stripped) = lower.strip_suffix(suffix) {
            return stripped.to_string();
        }
    }
    lower
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            stat: Stat::Mean,
            gate_pct: 5.0,
            length_tolerance_pct: 5.0,
            max_failure_rate: None,
            noise_sd: 2.0,
            tail_min_repeats: 5,
            metrics: vec![
                Metric::TotalTputPerGpu,
                Metric::OutputTputPerGpu,
                Metric::Ttft,
                Metric::Tpot,
                Metric::Itl,
                Metric::E2el,
                Metric::Intvty,
            ],
        }
    }
}

/// `metrics` with [`Metric::ENERGY`] appended (those not already in it) when a point of
/// `points` carries a value of one of them; otherwise `metrics` unchanged (runs without
/// energy keep their tables).
pub fn with_energy<'a>(
    metrics: &[Metric],
    points: impl IntoIterator<Item = &'a Point>,
) -> Vec<Metric> {
    let mut out = metrics.to_vec();
    let any = points.into_iter().any(|p| {
        Metric::ENERGY
            .iter()
            .any(|m| p.values.contains_key(&m.agg_key(Stat::Mean)))
    });
    if any {
        for m in Metric::ENERGY {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

pub mod ci;
mod engine;
pub mod error;
pub mod evidence;
mod import;
mod point;

pub use engine::{compare, compare_eval, compare_pair, delta, gates, group_repeats, round_to};
pub use error::CompareError;
pub use import::{
    api_row, identity_from_config_key, parse_baseline, source_links, BaselineFormat,
    BaselineImport, IdentityOverrides, SUBMISSION_REASONS_KEY, SUBMISSION_VALID_KEY,
};
pub use point::eval_threshold;
