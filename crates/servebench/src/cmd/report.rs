//! `servebench report` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench report`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench report`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench report is not built yet")
}
