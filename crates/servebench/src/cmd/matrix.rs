//! `servebench matrix` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench matrix`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench matrix`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench matrix is not built yet")
}
