//! `servebench compare` (placeholder until its stage lands).

use std::process::ExitCode;

/// Arguments of `servebench compare`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `servebench compare`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench compare is not built yet")
}
