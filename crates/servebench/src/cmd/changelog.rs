//! `servebench changelog` (placeholder until its stage lands).

use std::process::ExitCode;

/// Subcommands of `servebench changelog`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Placeholder.
    Placeholder,
}

/// Runs `servebench changelog`.
pub fn run(_cmd: Command) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench changelog is not built yet")
}
