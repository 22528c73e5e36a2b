//! `servebench bench` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench bench`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench bench`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench bench is not built yet")
}
