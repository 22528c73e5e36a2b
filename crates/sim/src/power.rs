//! The power model of one GPU during an engine step (docs/simulator.md "Energy"), and a run's
//! [`PowerProfile`]: the time sums from which the energy of any power parameters follows
//! without re-running the engine (the power model never feeds back into scheduling), which is
//! what `power_fit::fit_power` fits on.
//!
//! Per GPU, `P = idle_w + (tdp_w − idle_w) · u` with
//! `u = min(1, (max(compute_s, MEMORY_BOUND_POWER_SHARE · memory_s)
//!              + overhead_power_share · (comm_s + overhead_s)) / total_s)`:
//! tensor cores busy for the whole roofline part draw the whole dynamic range, a part that
//! only streams HBM draws [`MEMORY_BOUND_POWER_SHARE`] of it, and the rest of the step — the
//! all-reduce and the fitted per-step overheads (launch gaps, small kernels, sampling) —
//! draws `overhead_power_share` of it (a per-GPU fitted value in `presets.json`; absent = 0,
//! the datasheet-only model); an idle wait (all-zero cost), and the part of a step a host→GPU
//! KV load outlasts the forward pass by (`host_load_s`), draw `idle_w`.

use serde::Serialize;

use crate::model::StepCost;

/// Share of a GPU's dynamic power range (TDP − idle) a step that only streams HBM draws
/// (decode of a small batch): an assumption, not a datasheet figure and not fitted.
pub const MEMORY_BOUND_POWER_SHARE: f64 = 0.6;

/// Power parameters of one GPU, W and shares of the dynamic range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PowerParams {
    /// Board power limit, W.
    pub tdp_w: f64,
    /// Board power with the model loaded and no work, W.
    pub idle_w: f64,
    /// Share of (TDP − idle) drawn during a step's all-reduce and overhead time (0..1).
    pub overhead_power_share: f64,
}

/// Time sums of a run per GPU, s: what the energy of any [`PowerParams`] is linear in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PowerProfile {
    /// Σ step and idle-wait durations (modelled s).
    pub duration_s: f64,
    /// Σ duration · max(compute, [`MEMORY_BOUND_POWER_SHARE`] · memory) / total.
    pub roofline_s: f64,
    /// Σ duration · (comm + overhead) / total.
    pub overhead_s: f64,
}

impl PowerProfile {
    /// Adds a step from `start_s` to `end_s` of cost `cost`.
    pub fn add(&mut self, start_s: f64, end_s: f64, cost: &StepCost) {
        let d = (end_s - start_s).max(0.0);
        self.duration_s += d;
        if cost.total_s > 0.0 {
            let w = d / cost.total_s;
            self.roofline_s += w * cost.compute_s.max(MEMORY_BOUND_POWER_SHARE * cost.memory_s);
            self.overhead_s += w * (cost.comm_s + cost.overhead_s);
        }
    }

    /// Energy of one GPU over the profile, J:
    /// `idle·duration + (tdp − idle)·(roofline + share·overhead)` (equal to Σ
    /// [`step_power_w`] × step duration, since `u ≤ 1` whenever `share ≤ 1`).
    pub fn energy_per_gpu_j(&self, p: &PowerParams) -> f64 {
        p.idle_w * self.duration_s
            + (p.tdp_w - p.idle_w) * (self.roofline_s + p.overhead_power_share * self.overhead_s)
    }
}

/// Modelled board power of one GPU during a step of cost `cost`, W (module docs).
pub fn step_power_w(p: &PowerParams, cost: &StepCost) -> f64 {
    let u = if cost.total_s > 0.0 {
        ((cost.compute_s.max(MEMORY_BOUND_POWER_SHARE * cost.memory_s)
            + p.overhead_power_share * (cost.comm_s + cost.overhead_s))
            / cost.total_s)
            .clamp(0.0, 1.0)
    } else {
        0.0
    };
    p.idle_w + (p.tdp_w - p.idle_w) * u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_gives_the_energy_of_summed_step_powers() {
        let p = PowerParams {
            tdp_w: 1400.0,
            idle_w: 400.0,
            overhead_power_share: 0.5,
        };
        let steps = [
            (
                0.0,
                0.010,
                StepCost {
                    compute_s: 0.001,
                    memory_s: 0.004,
                    comm_s: 0.001,
                    overhead_s: 0.004,
                    total_s: 0.009,
                    ..StepCost::default()
                },
            ),
            (0.010, 0.050, StepCost::default()),
            (
                0.050,
                0.250,
                StepCost {
                    compute_s: 0.15,
                    memory_s: 0.01,
                    comm_s: 0.01,
                    overhead_s: 0.04,
                    total_s: 0.2,
                    ..StepCost::default()
                },
            ),
        ];
        let mut prof = PowerProfile::default();
        let mut direct = 0.0;
        for (a, b, c) in &steps {
            prof.add(*a, *b, c);
            direct += step_power_w(&p, c) * (b - a);
        }
        assert!(
            (prof.energy_per_gpu_j(&p) - direct).abs() < 1e-9,
            "{prof:?}"
        );
        // an idle wait draws idle power; overhead time draws its share of the dynamic range
        assert_eq!(step_power_w(&p, &StepCost::default()), 400.0);
        let only_overhead = StepCost {
            overhead_s: 0.01,
            total_s: 0.01,
            ..StepCost::default()
        };
        assert!((step_power_w(&p, &only_overhead) - 900.0).abs() < 1e-9);
        // with share 0 overhead time draws idle power (the datasheet-only model)
        let p0 = PowerParams {
            overhead_power_share: 0.0,
            ..p
        };
        assert_eq!(step_power_w(&p0, &only_overhead), 400.0);
    }
}
