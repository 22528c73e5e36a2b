//! `servebench triage` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench triage`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench triage`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench triage is not built yet")
}
