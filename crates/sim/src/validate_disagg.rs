//! Disaggregated rows in the validation (issue 32): a real prefill/decode row of rows.csv is run
//! through the simulated fleet ([`crate::fleet`], closed loop) with its workers, TP/EP and the
//! calibration fitted on the H200 single-node rows (the disaggregated rows never enter the
//! fit: they are all test rows), and set beside the measurement under the hardware key
//! `<gpu>-disagg`, so the single-node groups stay as they were.
//!
//! Output tokens/s per GPU is computed as InferenceX's `process_result.py` computes it for a
//! multinode row — output throughput / decode GPUs — which is how the published rows were
//! normalised (their `input_tput_per_gpu` is (total − output) / prefill GPUs).

use std::sync::Arc;

use crate::closed_loop::simulate_fleet_closed_loop;
use crate::disagg::{FleetConfig, RouterPolicy, WorkerShape};
use crate::presets::Calibration;
use crate::validate::{model_key, sampled_lengths, Prediction, RealRow, REQUESTS_PER_CLIENT};

/// A row's prefill/decode shape (the rows.csv columns of that name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DisaggShape {
    /// `prefill_workers`.
    pub prefill_workers: u32,
    /// `prefill_tp`.
    pub prefill_tp: u32,
    /// `prefill_ep`.
    pub prefill_ep: u32,
    /// `decode_workers`.
    pub decode_workers: u32,
    /// `decode_tp`.
    pub decode_tp: u32,
    /// `decode_ep`.
    pub decode_ep: u32,
    /// `num_prefill_gpu`.
    pub num_prefill_gpu: u32,
    /// `num_decode_gpu`.
    pub num_decode_gpu: u32,
}

/// The rows.csv columns of [`DisaggShape`], in field order.
pub const SHAPE_COLUMNS: [&str; 8] = [
    "prefill_workers",
    "prefill_tp",
    "prefill_ep",
    "decode_workers",
    "decode_tp",
    "decode_ep",
    "num_prefill_gpu",
    "num_decode_gpu",
];

impl DisaggShape {
    /// From the [`SHAPE_COLUMNS`] values in order (0 = empty).
    pub fn from_values(v: [u32; 8]) -> DisaggShape {
        DisaggShape {
            prefill_workers: v[0],
            prefill_tp: v[1],
            prefill_ep: v[2],
            decode_workers: v[3],
            decode_tp: v[4],
            decode_ep: v[5],
            num_prefill_gpu: v[6],
            num_decode_gpu: v[7],
        }
    }
}

/// Whether a disaggregated row's shape can be run: workers on both sides, and GPU counts that
/// agree with workers × TP (the dashboard API's rows with 0 workers or TP36 sides do not).
pub fn check_shape(row: &RealRow) -> Result<(), String> {
    let Some(s) = row.shape else {
        return Err("disaggregated row without its prefill/decode columns".into());
    };
    if s.prefill_workers == 0 || s.decode_workers == 0 {
        return Err("disaggregated row without worker counts".into());
    }
    if s.prefill_workers * s.prefill_tp != s.num_prefill_gpu
        || s.decode_workers * s.decode_tp != s.num_decode_gpu
    {
        return Err("disaggregated row whose GPU counts are not workers × TP".into());
    }
    if (s.prefill_tp > 8 && s.prefill_tp % 8 != 0) || (s.decode_tp > 8 && s.decode_tp % 8 != 0) {
        return Err("disaggregated worker wider than 8 GPUs and not whole TP8 replicas".into());
    }
    Ok(())
}

/// The fleet's prediction for a disaggregated row (closed loop, [`REQUESTS_PER_CLIENT`] ×
/// conc requests with InferenceX's length spread, round-robin router: Dynamo's default, and
/// random prompts share no prefix a KV-aware router could use). DP attention (the row's
/// `dp_attention`) applies to both sides: the rows do not record the prefill side's.
pub fn predict(row: &RealRow, calibration: Option<&Calibration>) -> Result<Prediction, String> {
    check_shape(row)?;
    let s = row.shape.expect("checked");
    let mk = model_key(row).ok_or("no model preset")?;
    let shape = |workers, tp, ep: u32| WorkerShape {
        workers,
        tp,
        ep: if ep >= tp { tp } else { 1 },
        dp_attention: row.dp_attention,
    };
    let cal = calibration.cloned();
    let fleet = FleetConfig::from_presets(
        &row.hardware,
        mk,
        shape(s.prefill_workers, s.prefill_tp, s.prefill_ep),
        shape(s.decode_workers, s.decode_tp, s.decode_ep),
        None,
        RouterPolicy::RoundRobin,
        |c| {
            if let Some(cal) = &cal {
                let p = crate::presets::Presets::embedded();
                let mut m = c.model.clone();
                m.calibration = Some(cal.clone());
                let par = crate::model::Parallelism {
                    tp: c.tp,
                    ep: c.ep,
                    dp_attention: c.dp_attention,
                };
                if let Ok(n) = crate::model::EngineConfig::with_parallelism(
                    &c.gpu_key,
                    c.gpu.clone(),
                    &c.model_key,
                    m,
                    par,
                    p.engine.clone(),
                ) {
                    *c = n;
                }
            }
        },
    )
    .map_err(|e| e.to_string())?;
    let n = row.conc * REQUESTS_PER_CLIENT;
    let lengths = sampled_lengths(row.isl, row.osl, n as usize);
    let w = crate::closed_loop::Workload {
        concurrency: row.conc,
        num_requests: n,
        input_tokens: row.isl,
        output_tokens: row.osl,
        request_overhead: true,
    };
    let sum = simulate_fleet_closed_loop(Arc::new(fleet), &w, |i| lengths[i]);
    let done: Vec<_> = sum
        .requests
        .iter()
        .filter(|r| r.output_tokens > 1)
        .collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            k if k % 2 == 1 => v[k / 2],
            k => (v[k / 2 - 1] + v[k / 2]) / 2.0,
        }
    };
    Ok(Prediction {
        output_tput_per_gpu: sum.output_throughput / s.num_decode_gpu.max(1) as f64,
        median_tpot_s: median(
            done.iter()
                .map(|r| (r.last_token_s - r.first_token_s) / (r.output_tokens - 1) as f64)
                .collect(),
        ),
        median_ttft_s: median(done.iter().map(|r| r.first_token_s - r.sent_s).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(shape: DisaggShape, conc: u32) -> RealRow {
        RealRow {
            row_id: "r".into(),
            source_id: "S1".into(),
            scenario: "fixed_seq".into(),
            hardware: "gb200".into(),
            model_prefix: "dsr1".into(),
            precision: "fp4".into(),
            framework: "dynamo-trt".into(),
            spec_decoding: "none".into(),
            disagg: true,
            tp: shape.decode_tp,
            ep: shape.decode_ep,
            dp_attention: false,
            isl: 1024,
            osl: 128,
            conc,
            output_tput_per_gpu: None,
            median_tpot_s: None,
            median_ttft_s: None,
            date: String::new(),
            image: String::new(),
            shape: Some(shape),
        }
    }

    /// The published GB200 row's shape (1 prefill TP4 + 4 decode TP8, 36 GPUs) is predicted;
    /// the dashboard's inconsistent shapes (0 workers, GPUs ≠ workers × TP) are refused with
    /// their reason; per-GPU output throughput is over the decode GPUs only.
    #[test]
    fn a_published_shape_is_predicted_and_inconsistent_ones_refused() {
        let s = DisaggShape::from_values([1, 4, 4, 4, 8, 8, 4, 32]);
        let r = row(s, 24);
        assert_eq!(check_shape(&r), Ok(()));
        let p = predict(&r, None).unwrap();
        assert!(p.output_tput_per_gpu > 0.0 && p.median_tpot_s > 0.0 && p.median_ttft_s > 0.0);
        // the same fleet with 8 decode workers over 64 GPUs: the same requests, twice the
        // decode GPUs, so per-GPU output throughput falls
        let wide = predict(
            &row(DisaggShape::from_values([1, 4, 4, 8, 8, 8, 4, 64]), 24),
            None,
        )
        .unwrap();
        assert!(wide.output_tput_per_gpu < p.output_tput_per_gpu);
        let zero = row(DisaggShape::from_values([0, 36, 1, 0, 36, 1, 36, 36]), 4);
        assert!(check_shape(&zero).unwrap_err().contains("worker counts"));
        let odd = row(DisaggShape::from_values([1, 4, 4, 4, 8, 8, 4, 36]), 4);
        assert!(check_shape(&odd).unwrap_err().contains("workers × TP"));
        assert!(check_shape(&RealRow {
            shape: None,
            ..zero
        })
        .is_err());
    }
}
