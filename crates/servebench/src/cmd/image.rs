//! `servebench image` (placeholder until its stage lands).

use std::process::ExitCode;

/// Subcommands of `servebench image`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Placeholder.
    Placeholder,
}

/// Runs `servebench image`.
pub fn run(_cmd: Command) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench image is not built yet")
}
