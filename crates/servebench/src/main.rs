//! `servebench`: the binary only wires the stage crates together with clap.
//!
//! Each subcommand lives in `cmd/<name>.rs` with its own `Args` and `run`; the stage logic lives in
//! the library crates (`servebench-client`, `-metrics`, `-sim`, `-eval`, `-store`, `-compare`,
//! `-report`, `-bump`, `-triage`, `-catalog`, `-workload`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// Measure OpenAI-compatible LLM serving engines the way InferenceX does, score them on GSM8K,
/// compare a candidate image with its baseline, report, bump catalog images and triage failures.
///
/// Quick start (no GPU needed): `servebench sweep` runs a concurrency sweep against the embedded
/// simulator and prints the table.
#[derive(Parser, Debug)]
#[command(name = "servebench", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Concurrency sweep against an endpoint (or the embedded simulator when none is given).
    Sweep(cmd::sweep::Args),
    /// One benchmark point (one concurrency).
    Bench(cmd::bench::Args),
    /// Run the embedded engine simulator alone.
    Sim(cmd::sim::Args),
    /// Accuracy evals (GSM8K) with lm-evaluation-harness prompts and scoring.
    #[command(subcommand)]
    Eval(cmd::eval::Command),
    /// List the runs in the results store.
    Runs(cmd::runs::Args),
    /// Manage baselines in the store (import InferenceX artifacts or a baseline table).
    #[command(subcommand)]
    Baseline(cmd::baseline::Command),
    /// Compare a candidate run with its baseline, point by point.
    Compare(cmd::compare::Args),
    /// Write the report (Markdown comment, HTML with charts, JSON).
    Report(cmd::report::Args),
    /// Move a catalog config to a new engine image, with provenance and flag migrations.
    Bump(cmd::bump::Args),
    /// Container image tools (resolve digests and labels through the OCI distribution API).
    #[command(subcommand)]
    Image(cmd::image::Command),
    /// Find the first real error in job logs and classify it.
    Triage(cmd::triage::Args),
    /// Render the attempt comment for an image bump (bilingual Markdown).
    Attempt(cmd::attempt::Args),
    /// Validate and show benchmark catalog entries (InferenceX master configs).
    #[command(subcommand)]
    Catalog(cmd::catalog::Command),
    /// Expand the catalog into the benchmark matrix (InferenceX generator parity).
    Matrix(cmd::matrix::Args),
    /// Validate or append the perf change log.
    #[command(subcommand)]
    Changelog(cmd::changelog::Command),
    /// InferenceX result tools (process-result: raw result → agg row, byte-identical).
    #[command(subcommand)]
    Metrics(cmd::metrics::Command),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SERVEBENCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Eval(c) => cmd::eval::run(c),
        Command::Runs(a) => cmd::runs::run(a),
        Command::Baseline(c) => cmd::baseline::run(c),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Bump(a) => cmd::bump::run(a),
        Command::Image(c) => cmd::image::run(c),
        Command::Triage(a) => cmd::triage::run(a),
        Command::Attempt(a) => cmd::attempt::run(a),
        Command::Catalog(c) => cmd::catalog::run(c),
        Command::Matrix(a) => cmd::matrix::run(a),
        Command::Changelog(c) => cmd::changelog::run(c),
        Command::Metrics(c) => cmd::metrics::run(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line, naming the thing that is wrong; causes joined with ": ".
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
