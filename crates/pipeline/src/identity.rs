//! The identity every row of a run carries: the plan's flags, with defaults that say what was
//! measured (`sim-<gpu>`, `servebench-sim`, `sim`, `bf16` on the simulator; `unknown` or the
//! engine profile otherwise; model prefix = the model, spec decoding `none`, TP/EP 1, no
//! DP-attention). [`IdentityDefaults`] is the one table of those defaults and [`identity`] the
//! one builder: the sweep's agg rows, its `--eval` row and the standalone `servebench eval`
//! row (its null keys filled from it, `EvalRow::fill_identity`) all take them from here, so the
//! rows of one engine get one compare identity.

use servebench_client::Engine;
use servebench_metrics::Identity;

use crate::error::{flag, Result};
use crate::plan::SweepPlan;
use crate::target::Target;

/// The identity values used when a flag (`--hw`, `--image`, `--framework`, `--precision`) is
/// not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityDefaults {
    /// `sim-<gpu>` on the simulator, else `unknown`.
    pub hw: String,
    /// `servebench-sim` on the simulator, else `unknown`.
    pub image: String,
    /// `sim` on the simulator, else the engine profile's name (`vllm`, `sglang`, …).
    pub framework: String,
    /// `bf16` on the simulator, else `unknown`.
    pub precision: String,
}

impl IdentityDefaults {
    /// The defaults for a run against the simulator of preset `sim_gpu` (`Some`) or against an
    /// endpoint served by `engine` (`None`).
    pub fn new(sim_gpu: Option<&str>, engine: Engine) -> IdentityDefaults {
        match sim_gpu {
            Some(gpu) => IdentityDefaults {
                hw: format!("sim-{gpu}"),
                image: "servebench-sim".into(),
                framework: "sim".into(),
                precision: "bf16".into(),
            },
            None => IdentityDefaults {
                hw: "unknown".into(),
                image: "unknown".into(),
                framework: engine.name().into(),
                precision: "unknown".into(),
            },
        }
    }
}

/// The identity of `plan`'s points against `target` serving `model`; fails when `--gpus`
/// disagrees with TP × PP × PCP.
pub fn identity(plan: &SweepPlan, target: &Target, model: &str) -> Result<Identity> {
    let c = &plan.identity;
    let d = IdentityDefaults::new(
        target.is_sim().then_some(plan.sim.gpu.as_str()),
        plan.engine,
    );
    let (isl, osl) = plan.workload.identity_lengths();
    let identity = Identity {
        hw: c.hw.clone().unwrap_or(d.hw),
        image: c.image.clone().unwrap_or(d.image),
        model: model.to_string(),
        infmax_model_prefix: c.model_prefix.clone().unwrap_or_else(|| model.to_string()),
        framework: c.framework.clone().unwrap_or(d.framework),
        precision: c.precision.clone().unwrap_or(d.precision),
        spec_decoding: c.spec_decoding.clone(),
        disagg: false,
        recipe_fingerprint: c.config_key.clone(),
        isl: Some(isl),
        osl: Some(osl),
        tp: plan.tp(),
        pp: c.pp,
        dcp_size: c.dcp,
        pcp_size: c.pcp,
        is_multinode: false,
        ep: c.ep,
        dp_attention: c.dp_attn,
        benchmark_type: plan.workload.benchmark_type(),
        kv_offloading: c.kv_offload.mode.clone(),
        kv_offload_backend: c.kv_offload.backend.clone(),
        allocated_cpu_dram_gb: c.kv_offload.dram_gb,
    };
    if let Some(g) = plan.gpus {
        if c.tp.is_some() && g != identity.num_gpus() {
            return Err(flag!(
                "--gpus {g} disagrees with TP×PP×PCP = {} (InferenceX per-GPU divisor); drop one of them",
                identity.num_gpus()
            ));
        }
    }
    Ok(identity)
}

/// The branch a run is stored under when `--branch` is not given: the current git branch of
/// the working directory's checkout (`git rev-parse --abbrev-ref HEAD`), else `local` (no git,
/// not a checkout, or a detached HEAD).
pub fn default_branch() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--abbrev-ref", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "HEAD")
        .unwrap_or_else(|| "local".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One table: the simulator's defaults name the preset; an endpoint's framework is the
    /// engine profile (the sweep's agg rows and every eval row alike).
    #[test]
    fn defaults_for_simulator_and_endpoint() {
        let s = IdentityDefaults::new(Some("h200"), Engine::Vllm);
        assert_eq!(
            (
                s.hw.as_str(),
                s.image.as_str(),
                s.framework.as_str(),
                s.precision.as_str()
            ),
            ("sim-h200", "servebench-sim", "sim", "bf16")
        );
        let e = IdentityDefaults::new(None, Engine::Sglang);
        assert_eq!(
            (
                e.hw.as_str(),
                e.image.as_str(),
                e.framework.as_str(),
                e.precision.as_str()
            ),
            ("unknown", "unknown", "sglang", "unknown")
        );
    }
}
