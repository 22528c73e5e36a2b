//! The sweep's `--eval gsm8k` options: the eval runs against the sweep's own target (the same
//! endpoint, or the same simulator replaying recorded solutions), files under
//! `DIR/eval-gsm8k/`, identity from the sweep. The session runs it
//! ([`crate::session::Session::run_eval`]).

use std::path::Path;
use std::time::Duration;

use crate::plan::SweepPlan;
use crate::target::Target;

/// The options of the sweep's GSM8K run against `target` (always a fresh run; row identity
/// `meta`); Ctrl-C is the run's `cancel` token; the opening line goes to `console`.
#[allow(clippy::too_many_arguments)]
pub fn sweep_eval_options(
    c: &SweepPlan,
    target: &Target,
    model: &str,
    meta: servebench_eval::EvalMeta,
    out_dir: &Path,
    tty: bool,
    cancel: &servebench_endpoint::CancelToken,
    console: &dyn crate::console::Console,
) -> servebench_eval::EvalOptions {
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
        meta,
        progress: tty,
        ready_timeout: Some(Duration::from_secs_f64(c.ready_timeout_s.max(0.0))),
        cancel: cancel.clone(),
        // the sweep checked the model against the endpoint's list already
        check_model: false,
        // a chosen simulated accuracy is said in the row (`simulated_accuracy`)
        simulated_accuracy: e.sim_accuracy.filter(|_| target.is_sim()),
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
    opts
}
