//! `servebench baseline` (placeholder until its stage lands).

use std::process::ExitCode;

/// Subcommands of `servebench baseline`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Placeholder.
    Placeholder,
}

/// Runs `servebench baseline`.
pub fn run(_cmd: Command) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench baseline is not built yet")
}
