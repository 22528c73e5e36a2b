//! Fitting a GPU's power parameters on measured power, honest by construction (issue 30;
//! docs/simulator.md "Energy"): only the rows of the training split
//! ([`crate::validate_energy::is_held_out`] false) enter, the held-out rows are only scored.
//!
//! Fitted per GPU: `idle_w` (board power with the model loaded and no work in flight, W) and
//! `overhead_power_share` (share of TDP − idle drawn during a step's all-reduce and overhead
//! time); `tdp_w` stays the datasheet figure and [`crate::power::MEMORY_BOUND_POWER_SHARE`]
//! the fixed assumption. The objective is the mean |error| of modelled W/GPU against measured
//! (`avg_power_w`) over the training rows; J/output token is not fitted (it carries the latency
//! model's throughput error). Grid: `idle_w` 0 … TDP in [`IDLE_STEP_W`] steps, the share
//! 0 … 1 in [`SHARE_STEP`] steps; the first minimum in that order wins (deterministic). The
//! energy of each grid point comes from the rows' [`crate::power::PowerProfile`]s, so no
//! row is simulated again.

use serde::Serialize;

use crate::power::PowerParams;
use crate::validate_energy::EnergyRow;

/// Grid step of `idle_w`, W.
pub const IDLE_STEP_W: f64 = 5.0;
/// Grid step of `overhead_power_share`.
pub const SHARE_STEP: f64 = 0.01;

/// A fit's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PowerFit {
    /// The fitted parameters (`tdp_w` as given).
    pub params: PowerParams,
    /// Training rows used.
    pub n_train: usize,
    /// Mean |error| of W/GPU on the training rows at the fit, %.
    pub train_mean_abs_pct_error: f64,
}

/// Mean |error| (%) of modelled W/GPU under `p` over `rows` with measured W.
pub fn mean_abs_w_error(rows: &[&EnergyRow], p: &PowerParams) -> f64 {
    let errs: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            let m = r.measured_w?;
            Some(((r.watts_with(p) - m) / m * 100.0).abs())
        })
        .collect();
    errs.iter().sum::<f64>() / errs.len().max(1) as f64
}

/// Fits `idle_w` and `overhead_power_share` of `hardware` (TDP `tdp_w`) on its training rows
/// (module docs). `None` when it has no training row with measured W.
pub fn fit_power(rows: &[EnergyRow], hardware: &str, tdp_w: f64) -> Option<PowerFit> {
    let train: Vec<&EnergyRow> = rows
        .iter()
        .filter(|r| r.hardware == hardware && r.split == "train" && r.measured_w.is_some())
        .collect();
    if train.is_empty() {
        return None;
    }
    let mut best: Option<(f64, PowerParams)> = None;
    let idle_steps = (tdp_w / IDLE_STEP_W).floor() as u32;
    let share_steps = (1.0 / SHARE_STEP).round() as u32;
    for i in 0..=idle_steps {
        for j in 0..=share_steps {
            let p = PowerParams {
                tdp_w,
                idle_w: f64::from(i) * IDLE_STEP_W,
                overhead_power_share: f64::from(j) * SHARE_STEP,
            };
            let e = mean_abs_w_error(&train, &p);
            if best.is_none_or(|(b, _)| e < b - 1e-12) {
                best = Some((e, p));
            }
        }
    }
    let (e, params) = best?;
    Some(PowerFit {
        params,
        n_train: train.len(),
        train_mean_abs_pct_error: e,
    })
}
