//! `servebench triage LOG… [--json]`: the first real error of a failed attempt's job logs, its
//! layer and class, transient or deterministic (with evidence across logs), the fix or the next
//! step, and the outcome it implies (AUTOMATION.md §5.3–5.4, cases/README.md triage rule).

use std::path::PathBuf;
use std::process::ExitCode;

use servebench_triage::{
    triage_logs_with, Phase, TriageOptions, MAX_INFRA_RETRIES_PER_ATTEMPT, MAX_REPAIRS,
};

/// Arguments of `servebench triage`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Job logs of one attempt (e.g. one per runner); streamed, any size.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// Print the whole report as JSON (first_error, category, layer, deterministic, evidence,
    /// next_step, outcome, phase, secondary, per-log results).
    #[arg(long)]
    pub json: bool,
    /// Lifecycle phase that produced the logs: resolve, baseline, targeted, final-sweep.
    #[arg(long, default_value = "targeted", value_parser = parse_phase)]
    pub phase: Phase,
    /// Repairs already used (0..=5, AUTOMATION.md §5.3); at 5 a repairable failure becomes `failed`.
    #[arg(long, default_value_t = 0)]
    pub repairs: u32,
    /// Infrastructure retries already used for this attempt (0..=2).
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Multi-node logs: how far two nodes' clocks may disagree, in seconds; first errors on
    /// different nodes closer than this are not ordered by their timestamps.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub clock_skew: f64,
}

fn parse_phase(s: &str) -> Result<Phase, String> {
    s.parse()
}

/// Runs `servebench triage`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.repairs > MAX_REPAIRS {
        anyhow::bail!(
            "--repairs {}: at most {MAX_REPAIRS} repairs are allowed per candidate (AUTOMATION.md §5.3)",
            args.repairs
        );
    }
    if args.retries > MAX_INFRA_RETRIES_PER_ATTEMPT {
        anyhow::bail!(
            "--retries {}: at most {MAX_INFRA_RETRIES_PER_ATTEMPT} infrastructure retries are allowed per attempt (AUTOMATION.md §5.3)",
            args.retries
        );
    }
    if !(args.clock_skew.is_finite() && args.clock_skew >= 0.0) {
        anyhow::bail!(
            "--clock-skew {}: must be a number of seconds >= 0",
            args.clock_skew
        );
    }
    let opts = TriageOptions {
        phase: args.phase,
        repairs_used: args.repairs,
        infra_retries_used: args.retries,
        clock_skew_ms: (args.clock_skew * 1000.0).round() as u64,
    };
    let report = triage_logs_with(&args.logs, &opts)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_text());
    }
    Ok(ExitCode::SUCCESS)
}
