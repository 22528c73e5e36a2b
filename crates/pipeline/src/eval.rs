//! The sweep's `--eval gsm8k` step: the eval runs against the sweep's own target (the same
//! endpoint, or the same simulator replaying recorded solutions), files under
//! `DIR/eval-gsm8k/`, identity from the sweep.

use std::path::Path;
use std::time::Duration;

use servebench_metrics::Identity;

use crate::error::{PipelineError, Result};
use crate::plan::SweepPlan;
use crate::target::Target;

/// Runs GSM8K against `target` (always a fresh run); Ctrl-C is the run's `cancel` token; the
/// opening line goes to `console`.
#[allow(clippy::too_many_arguments)]
pub async fn run_eval(
    c: &SweepPlan,
    target: &Target,
    model: &str,
    identity: &Identity,
    out_dir: &Path,
    tty: bool,
    cancel: &servebench_endpoint::CancelToken,
    console: &dyn crate::observe::Console,
) -> Result<servebench_eval::EvalResult> {
    let e = &c.eval_plan;
    let opts = servebench_eval::EvalOptions {
        model: Some(model.to_string()),
        conc: e.conc,
        limit: e.limit,
        profile: e.profile,
        max_tokens: e.max_tokens,
        request_timeout: Duration::from_secs_f64(c.timeout_s),
        out_dir: out_dir.join("eval-gsm8k"),
        fresh: true,
        data_dir: e.gsm8k_dir.clone(),
        threshold: e.threshold,
        thresholds_file: e.thresholds.clone(),
        meta: servebench_eval::EvalMeta {
            model_prefix: Some(identity.infmax_model_prefix.clone()),
            hw: Some(identity.hw.clone()),
            framework: Some(identity.framework.clone()),
            precision: Some(identity.precision.clone()),
            spec_decoding: Some(identity.spec_decoding.clone()),
            isl: identity.isl,
            osl: identity.osl,
            tp: Some(identity.tp),
            ep: Some(identity.ep),
            dp_attention: Some(identity.dp_attention),
        },
        progress: tty,
        ready_timeout: Some(Duration::from_secs_f64(c.ready_timeout_s.max(0.0))),
        cancel: cancel.clone(),
        // the sweep checked the model against the endpoint's list already
        check_model: false,
        // the sweep says what a replayed score means itself, under its table
        ..Default::default()
    };
    console.line(&format!(
        "eval gsm8k: {} documents at concurrency {} against {}",
        opts.limit.map_or("1,319".to_string(), |l| l.to_string()),
        opts.conc,
        if target.is_sim() {
            "the same simulator"
        } else {
            "the same endpoint"
        }
    ));
    servebench_eval::run_gsm8k(&target.inner, opts)
        .await
        .map_err(PipelineError::Eval)
}
