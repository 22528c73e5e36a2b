//! `servebench catalog` (placeholder until its stage lands).

use std::process::ExitCode;

/// Subcommands of `servebench catalog`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Placeholder.
    Placeholder,
}

/// Runs `servebench catalog`.
pub fn run(_cmd: Command) -> anyhow::Result<ExitCode> {
    anyhow::bail!("servebench catalog is not built yet")
}
