//! The identity every row of a run carries: the plan's flags, with defaults that say what was
//! measured (`sim-<gpu>`, `servebench-sim`, `sim`, `bf16` on the simulator; `unknown` or the
//! engine profile otherwise). [`IdentityDefaults`] is the one table of those defaults: the sweep's
//! agg rows, its `--eval` row and the standalone `servebench eval` row all take them from here, so
//! the rows of one engine get one compare identity.

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
        ep: c.ep,
        dp_attention: c.dp_attn,
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

/// Fills the identity fields of a standalone eval row that its flags left empty with the
/// sweep's defaults ([`IdentityDefaults`]; model prefix = the model; spec decoding `none`, TP
/// 1, EP 1, no DP-attention: what a sweep's `--eval` row carries from the sweep's identity, so
/// both rows store the same identity) and returns the names
/// of the fields filled (stored under `identity_defaults`). `sim_gpu`: the simulator's preset,
/// `None` against an endpoint served by `engine`.
pub fn fill_eval_defaults(
    row: &mut servebench_eval::EvalRow,
    sim_gpu: Option<&str>,
    engine: Engine,
) -> Vec<&'static str> {
    let d = IdentityDefaults::new(sim_gpu, engine);
    let mut filled = Vec::new();
    if row.hw.is_none() {
        // InferenceX's eval rows carry `hw` in upper case (MEASUREMENT.md §4.4), as
        // `servebench_eval` writes a given `--hw`; the default follows the same rule, so
        // `eval` alone and `sweep --eval` store the same identity.
        row.hw = Some(d.hw.to_uppercase());
        filled.push("hw");
    }
    if row.framework.is_none() {
        row.framework = Some(d.framework);
        filled.push("framework");
    }
    if row.precision.is_none() {
        row.precision = Some(d.precision);
        filled.push("precision");
    }
    if row.model_prefix.is_none() {
        row.model_prefix = Some(row.model.clone());
        filled.push("model_prefix");
    }
    if row.spec_decoding.is_none() {
        row.spec_decoding = Some("none".into());
        filled.push("spec_decoding");
    }
    if row.tp.is_none() {
        row.tp = Some(1);
        filled.push("tp");
    }
    if row.ep.is_none() {
        row.ep = Some(1);
        filled.push("ep");
    }
    if row.dp_attention.is_none() {
        row.dp_attention = Some(false);
        filled.push("dp_attention");
    }
    filled
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
