//! `servebench bench`: one benchmark point (one concurrency), same options and files as
//! `servebench sweep` (`DIR/conc<C>/…` plus `DIR/summary.{json,csv}`).

use std::process::ExitCode;

use super::sweep::{run_points, CommonArgs};

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
    run_points(
        args.common,
        vec![args.conc],
        servebench_store::RunKind::Bench,
    )
}
