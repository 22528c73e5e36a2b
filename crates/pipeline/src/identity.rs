//! The identity every agg row of a sweep carries: the plan's flags, with defaults that say
//! what was measured (`sim-<gpu>`, `servebench-sim`, `sim`, `bf16` on the simulator;
//! `unknown` or the engine profile otherwise).

use servebench_metrics::Identity;

use crate::error::{flag, Result};
use crate::plan::SweepPlan;
use crate::target::Target;

/// The identity of `plan`'s points against `target` serving `model`; fails when `--gpus`
/// disagrees with TP × PP × PCP.
pub fn identity(plan: &SweepPlan, target: &Target, model: &str) -> Result<Identity> {
    let c = &plan.identity;
    let is_sim = target.is_sim();
    let or = |v: &Option<String>, sim: &str, real: &str| {
        v.clone()
            .unwrap_or_else(|| if is_sim { sim.into() } else { real.into() })
    };
    let identity = Identity {
        hw: or(&c.hw, &format!("sim-{}", plan.sim.gpu), "unknown"),
        image: or(&c.image, "servebench-sim", "unknown"),
        model: model.to_string(),
        infmax_model_prefix: c.model_prefix.clone().unwrap_or_else(|| model.to_string()),
        framework: or(&c.framework, "sim", plan.engine.name()),
        precision: or(&c.precision, "bf16", "unknown"),
        spec_decoding: c.spec_decoding.clone(),
        disagg: false,
        recipe_fingerprint: c.config_key.clone(),
        isl: Some(plan.isl),
        osl: Some(plan.osl),
        tp: plan.tp(),
        pp: c.pp,
        dcp_size: c.dcp,
        pcp_size: c.pcp,
        ep: c.ep,
        dp_attention: c.dp_attn,
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
