//! Plausibility of a measurement (issue 22 item 5): where the simulator has presets for a
//! run's identity (model, precision, GPU, TP/EP/DP attention, ISL/OSL, concurrency), the
//! prediction set beside the measured value, and a flag when the measurement is further off
//! than the validation's p90 |error| for that GPU and metric ([`P90_ABS_PCT_ERROR`]).
//!
//! The prediction is [`crate::validate::predict`], the same engine model the server plays back.

use serde::Serialize;

use crate::validate::{modelable, predict, Metric, Prediction, RealRow};

/// p90 |error| (percent) of `servebench sim validate` on ../shared/data/real-results/rows.csv,
/// per GPU and metric, with the presets' calibration of 2026-12-03 (H200: the fitted rows;
/// the others: test sets). `tests/validate.rs` fails when these drift more than 1 point from
/// what the validation gives now.
pub const P90_ABS_PCT_ERROR: &[(&str, [f64; 3])] = &[
    // (gpu, [output tok/s/GPU, median TPOT, median TTFT])
    ("b200", [35.8, 31.3, 72.5]),
    ("b300", [88.9, 53.0, 84.9]),
    ("h200", [17.1, 17.3, 33.0]),
    ("mi300x", [114.9, 53.2, 41.8]),
    ("mi325x", [117.4, 52.6, 35.5]),
    ("mi355x", [71.5, 43.0, 61.7]),
];

/// The GPU of a hardware label as stores and runners write it: `b200` → `b200`,
/// `cluster:b200-nscale` → `b200`, `H200-DGXC_03` → `h200` (lower case, `cluster:` dropped,
/// the part before the first `-` or `_`), the rule `servebench run` uses for a runner's SKU.
pub fn gpu_of(label: &str) -> String {
    let l = label.trim().to_ascii_lowercase();
    let l = l.strip_prefix("cluster:").unwrap_or(&l);
    l.split(['-', '_']).next().unwrap_or("").to_string()
}

/// What a run is, as far as the model needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunIdentity {
    /// GPU, e.g. `b200`.
    pub hardware: String,
    /// InferenceX model prefix, e.g. `dsr1`.
    pub model_prefix: String,
    /// `fp8`, `fp4`, …
    pub precision: String,
    /// Serving framework as InferenceX names it (`sglang`, `trt`, `vllm`, …); it selects the
    /// recipe's scheduler settings ([`crate::validate::recipe_recv_interval`]).
    pub framework: String,
    /// `none` or the speculative decoding method.
    pub spec_decoding: String,
    /// Prefill/decode disaggregation.
    pub disagg: bool,
    /// TP, EP, DP attention.
    pub tp: u32,
    /// EP.
    pub ep: u32,
    /// DP attention.
    pub dp_attention: bool,
    /// Input/output tokens per request.
    pub isl: u32,
    /// Output tokens per request.
    pub osl: u32,
    /// Concurrency.
    pub conc: u32,
}

/// One metric's check.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MetricCheck {
    /// Which metric.
    pub metric: Metric,
    /// Predicted (tok/s/GPU or ms).
    pub predicted: f64,
    /// Measured (same unit).
    pub measured: f64,
    /// (predicted − measured) / measured × 100.
    pub error_pct: f64,
    /// The validation's p90 |error| for this GPU and metric.
    pub p90_abs_pct_error: f64,
    /// |error| > p90.
    pub implausible: bool,
}

/// The checks of one point (only metrics that were measured).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plausibility {
    /// The GPU.
    pub hardware: String,
    /// Per metric.
    pub checks: Vec<MetricCheck>,
}

fn label(m: Metric) -> &'static str {
    match m {
        Metric::OutputTputPerGpu => "output tok/s/GPU",
        Metric::MedianTpot => "median TPOT",
        Metric::MedianTtft => "median TTFT",
    }
}

impl Plausibility {
    /// Whether any metric is off by more than its p90.
    pub fn implausible(&self) -> bool {
        self.checks.iter().any(|c| c.implausible)
    }

    /// One line: `simulator (b200 preset) predicts output 455.0 tok/s/GPU (measured 470.0),
    /// median TPOT 16.2 ms (measured 16.4), …; implausible: 3.1× the predicted median TPOT (p90
    /// error 29 %) — check the engine config`.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        for c in &self.checks {
            parts.push(match c.metric {
                Metric::OutputTputPerGpu => format!(
                    "output {:.1} tok/s/GPU (measured {:.1})",
                    c.predicted, c.measured
                ),
                m => format!(
                    "{} {:.1} ms (measured {:.1})",
                    label(m),
                    c.predicted,
                    c.measured
                ),
            });
        }
        let mut s = format!(
            "simulator ({} preset) predicts {}",
            self.hardware,
            parts.join(", ")
        );
        let bad: Vec<String> = self
            .checks
            .iter()
            .filter(|c| c.implausible)
            .map(|c| {
                format!(
                    "{:.1}× the predicted {} (p90 error {:.0} %)",
                    c.measured / c.predicted,
                    label(c.metric),
                    c.p90_abs_pct_error
                )
            })
            .collect();
        if bad.is_empty() {
            s.push_str("; within the validation's p90 error");
        } else {
            s.push_str(&format!(
                "; implausible: {} — check the engine config",
                bad.join(", ")
            ));
        }
        s
    }
}

/// Checks `measured` (tok/s/GPU, TPOT ms, TTFT ms; `None` = not measured) against the
/// prediction for `id`. `None` when the simulator has no preset or model for the identity
/// (other model, disaggregation, speculative decoding, a GPU without a validated p90) or
/// nothing was measured.
pub fn check(
    id: &RunIdentity,
    output_tput_per_gpu: Option<f64>,
    median_tpot_ms: Option<f64>,
    median_ttft_ms: Option<f64>,
) -> Option<Plausibility> {
    let hardware = gpu_of(&id.hardware);
    let p90 = P90_ABS_PCT_ERROR.iter().find(|(h, _)| *h == hardware)?.1;
    let row = RealRow {
        row_id: String::new(),
        source_id: String::new(),
        scenario: "fixed_seq".into(),
        hardware,
        model_prefix: id.model_prefix.clone(),
        precision: id.precision.to_ascii_lowercase(),
        framework: id.framework.to_ascii_lowercase(),
        spec_decoding: id.spec_decoding.clone(),
        disagg: id.disagg,
        tp: id.tp,
        ep: id.ep,
        dp_attention: id.dp_attention,
        isl: id.isl,
        osl: id.osl,
        conc: id.conc,
        output_tput_per_gpu: None,
        median_tpot_s: None,
        median_ttft_s: None,
        date: String::new(),
        image: String::new(),
        shape: None,
    };
    modelable(&row).ok()?;
    let pred: Prediction = predict(&row, None).ok()?;
    let mut checks = Vec::new();
    for (i, (m, measured, predicted)) in [
        (
            Metric::OutputTputPerGpu,
            output_tput_per_gpu,
            pred.output_tput_per_gpu,
        ),
        (Metric::MedianTpot, median_tpot_ms, pred.median_tpot_s * 1e3),
        (Metric::MedianTtft, median_ttft_ms, pred.median_ttft_s * 1e3),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(v) = measured.filter(|v| v.is_finite() && *v > 0.0) else {
            continue;
        };
        let error_pct = (predicted / v - 1.0) * 100.0;
        checks.push(MetricCheck {
            metric: m,
            predicted,
            measured: v,
            error_pct,
            p90_abs_pct_error: p90[i],
            implausible: error_pct.abs() > p90[i],
        });
    }
    (!checks.is_empty()).then_some(Plausibility {
        hardware: row.hardware,
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> RunIdentity {
        RunIdentity {
            hardware: "b200".into(),
            model_prefix: "dsr1".into(),
            precision: "fp8".into(),
            framework: "trt".into(),
            spec_decoding: "none".into(),
            disagg: false,
            tp: 8,
            ep: 1,
            dp_attention: false,
            isl: 1024,
            osl: 1024,
            conc: 4,
        }
    }

    #[test]
    fn a_measurement_near_the_prediction_passes_and_one_three_times_off_is_flagged() {
        let p = check(&id(), None, Some(1.0), None).unwrap();
        let predicted = p.checks[0].predicted;
        let ok = check(&id(), None, Some(predicted * 1.1), None).unwrap();
        assert!(!ok.implausible(), "{}", ok.line());
        let bad = check(&id(), None, Some(predicted * 3.1), None).unwrap();
        assert!(bad.implausible());
        let line = bad.line();
        assert!(
            line.contains("implausible: 3.1× the predicted median TPOT")
                && line.contains("check the engine config"),
            "{line}"
        );
    }

    #[test]
    fn identities_without_a_model_get_no_check() {
        let mut other = id();
        other.model_prefix = "llama70b".into();
        assert!(check(&other, Some(100.0), None, None).is_none());
        let mut mtp = id();
        mtp.spec_decoding = "mtp".into();
        assert!(check(&mtp, Some(100.0), None, None).is_none());
        let mut h100 = id();
        h100.hardware = "h100".into();
        assert!(check(&h100, Some(100.0), None, None).is_none());
        assert!(check(&id(), None, None, None).is_none());
    }

    #[test]
    fn runner_labels_name_their_gpu() {
        assert_eq!(gpu_of("cluster:b200-nscale"), "b200");
        assert_eq!(gpu_of("H200-DGXC_03"), "h200");
        assert_eq!(gpu_of("mi355x"), "mi355x");
        let mut label = id();
        label.hardware = "cluster:b200-nscale".into();
        let a = check(&label, None, Some(20.0), None).unwrap();
        let b = check(&id(), None, Some(20.0), None).unwrap();
        assert_eq!((a.hardware.as_str(), a.checks), ("b200", b.checks));
    }
}
