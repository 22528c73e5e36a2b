//! `servebench sim` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench sim`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench sim`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench sim is not built yet")
}
