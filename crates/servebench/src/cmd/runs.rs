//! `servebench runs` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench runs`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench runs`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench runs is not built yet")
}
