//! `servebench eval` (placeholder until its stage lands).

use std::process::ExitCode;

/// Subcommands of `servebench eval`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Placeholder.
    Placeholder,
}

/// Runs `servebench eval`.
pub fn run(_cmd: Command) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench eval is not built yet")
}
