//! One module per subcommand: `Args` (clap) and `run(args) -> anyhow::Result<ExitCode>`; a
//! command builds its request for the pipeline and prints, and never imports another command.
//! `measure_args` holds the measuring flags `sweep` and `bench` share (not a command).

pub mod attempt;
pub mod baseline;
pub mod bench;
pub mod bump;
pub mod catalog;
pub mod changelog;
pub mod compare;
pub mod coverage;
pub mod engine_shim;
pub mod eval;
pub mod extras_args;
pub mod image;
pub mod matrix;
pub mod measure_args;
pub mod measure_enums;
pub mod metrics;
pub mod report;
pub mod review_wiring;
pub mod run;
pub mod runs;
pub mod search;
pub mod sim;
pub mod store;
pub mod sweep;
pub mod triage;
