//! `servebench bench`: one benchmark point (one concurrency), same options and files as
//! `servebench sweep` (`DIR/conc<C>/…` plus `DIR/summary.{json,csv}`).

use std::process::ExitCode;

use super::measure_args::CommonArgs;

/// Arguments of `servebench bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Concurrency of the point.
    #[arg(long, default_value_t = 1)]
    pub conc: u64,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `servebench bench`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let plan = args
        .common
        .into_plan(vec![args.conc], servebench_store::RunKind::Bench)?;
    let outcome = servebench_pipeline::run_sweep(plan, Vec::new())?;
    Ok(ExitCode::from(outcome.exit))
}
