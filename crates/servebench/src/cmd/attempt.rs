//! `servebench attempt` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench attempt`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench attempt`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench attempt is not built yet")
}
