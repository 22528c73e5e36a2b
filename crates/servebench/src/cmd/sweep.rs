//! `servebench sweep` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench sweep`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench sweep is not built yet")
}
