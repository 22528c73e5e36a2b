//! `servebench sweep`: a concurrency sweep of the fixed-sequence random workload against an
//! OpenAI-compatible endpoint, or against the embedded simulator when no endpoint is given.
//! Parse the flags, build the [`servebench_pipeline::SweepPlan`], run it, exit with its status.

use std::process::ExitCode;

use anyhow::Result;
use servebench_store::RunKind;

use super::measure_args::CommonArgs;

/// Arguments of `servebench sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Concurrencies to sweep, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8,16")]
    pub conc: Vec<u64>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub extras: super::extras_args::ExtrasArgs,
}

/// Runs `servebench sweep`.
pub fn run(args: Args) -> Result<ExitCode> {
    let plan = args.common.into_plan(args.conc, RunKind::Sweep)?;
    let extras = args.extras.observers(&plan)?;
    let outcome = servebench_pipeline::run_sweep(plan, extras)?;
    Ok(ExitCode::from(outcome.exit))
}
