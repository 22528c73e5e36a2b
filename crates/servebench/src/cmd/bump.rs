//! `servebench bump` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench bump`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench bump`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench bump is not built yet")
}
