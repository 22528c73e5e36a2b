//! One module per subcommand: `Args` (clap) and `run(args) -> anyhow::Result<ExitCode>`.

pub mod attempt;
pub mod baseline;
pub mod bench;
pub mod bump;
pub mod catalog;
pub mod changelog;
pub mod compare;
pub mod eval;
pub mod image;
pub mod matrix;
pub mod metrics;
pub mod report;
pub mod runs;
pub mod sim;
pub mod sweep;
pub mod triage;
