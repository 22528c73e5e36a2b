//! `servebench`: the binary only wires the stage crates together with clap.
//!
//! Each subcommand lives in `cmd/<name>.rs` with its own `Args` and `run` (parse, build the
//! request, call, print); the sweep engine, run loading and the attempt adapter live in
//! `servebench-pipeline`, the stages in the library crates (`servebench-client`, `-metrics`,
//! `-sim`, `-eval`, `-store`, `-compare`, `-report`, `-bump`, `-triage`, `-catalog`,
//! `-workload`). docs/ARCHITECTURE.md has the crate graph.
//!
//! A new subcommand: one variant in [`Command`], one arm in `main`'s match, one `cmd/<name>.rs`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// Measure OpenAI-compatible LLM serving engines the way InferenceX does, score them on GSM8K,
/// compare a candidate image with its baseline, report, bump catalog images and triage failures.
///
/// Quick start (no GPU needed): `servebench sweep` runs a concurrency sweep against the embedded
/// simulator and prints the table.
#[derive(Parser, Debug)]
#[command(
    name = "servebench",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Quick start (no GPU, no endpoint): `servebench sweep` runs conc 1,4,8,16 at 1k/1k against the \
embedded simulator and prints the table.\nAgainst an engine: `servebench sweep --endpoint http://127.0.0.1:8000 \
--tokenizer tokenizer.json --gpus 1`.\nEvery run is stored in ./servebench.db (`servebench runs`); \
docs: README.md and docs/."
)]
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
    /// The highest load (concurrency or request rate) meeting an SLO, by bisection over runs.
    Search(cmd::search::Args),
    /// Run the embedded engine simulator alone.
    Sim(cmd::sim::Args),
    /// The shims of real recipes under `run --simulate` (internal).
    #[command(hide = true)]
    EngineShim(cmd::engine_shim::Args),
    /// Accuracy evals (GSM8K) with lm-evaluation-harness prompts and scoring.
    #[command(subcommand)]
    Eval(cmd::eval::Command),
    /// List the runs in the results store.
    Runs(cmd::runs::Args),
    /// Manage baselines in the store (import InferenceX artifacts or a baseline table).
    #[command(subcommand)]
    Baseline(cmd::baseline::Command),
    /// Results store tools (migrate a store between SQLite and PostgreSQL).
    #[command(subcommand)]
    Store(cmd::store::Command),
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
    /// Run catalog points from their recipes (local engines or Slurm jobs; --simulate).
    Run(cmd::run::Args),
    /// Coverage of a catalog under --simulate: the smallest point of every single-node config
    /// from its real recipe, stored or failed with the first error's class.
    Coverage(cmd::coverage::Args),
}

/// Exit status when the reader of stdout or stderr went away (`servebench runs --json | head`):
/// 128 + SIGPIPE (13), what a shell reports for a process that SIGPIPE ended.
pub const BROKEN_PIPE_EXIT: i32 = 141;

/// Writes `text` to stdout; a closed pipe (`| head`) ends the process quietly with status 141
/// ([`BROKEN_PIPE_EXIT`]), like any other print.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        // The reader went away (`| head`): end quietly, like every other print (main.rs).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(BROKEN_PIPE_EXIT)
        }
        other => Ok(other?),
    }
}

/// InferenceX's `DATABASE_URL` (a `postgres://` URL) is the store of every command that has
/// `--db` when `SERVEBENCH_DB` is not set: `--db` > `SERVEBENCH_DB` > `DATABASE_URL` >
/// `./servebench.db`. Runs first, before any thread exists.
fn database_url_as_store() {
    if std::env::var_os("SERVEBENCH_DB").is_some() {
        return;
    }
    if let Ok(url) = std::env::var("DATABASE_URL") {
        if servebench_store::is_postgres_url(std::path::Path::new(&url)) {
            std::env::set_var("SERVEBENCH_DB", url);
        }
    }
}

/// Makes a print to a closed pipe end the process quietly with [`BROKEN_PIPE_EXIT`] instead of
/// panicking (`failed printing to stdout: Broken pipe`, status 101), for every command at once.
///
/// Why not reset SIGPIPE to SIG_DFL: Rust ignores SIGPIPE so that writing to a socket whose peer
/// has gone is an error. `sweep` runs HTTP clients and the embedded simulator in this process, and
/// hyper writes with `writev`, which has no `MSG_NOSIGNAL`: with SIG_DFL, an engine that resets a
/// connection would kill a sweep without a word. So only prints to stdout/stderr are concerned:
/// `print!`/`println!`/`eprintln!` panic with "failed printing to stdout: <io error>" and this
/// hook turns exactly that panic (EPIPE, os error 32) into the exit; any other panic is reported
/// by the default hook as before.
fn exit_quietly_on_closed_pipe() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe_print(msg) {
            std::process::exit(BROKEN_PIPE_EXIT);
        }
        default_hook(info)
    }));
}

/// True for std's print panic on a closed pipe: "failed printing to stdout: Broken pipe (os error 32)".
fn is_closed_pipe_print(panic_message: &str) -> bool {
    (panic_message.starts_with("failed printing to stdout")
        || panic_message.starts_with("failed printing to stderr"))
        && (panic_message.contains("os error 32") || panic_message.contains("Broken pipe"))
}

/// Exit code of a command line clap refuses (sysexits `EX_USAGE`; clap's own default, 2, is
/// `compare`'s and `run`'s "regression"). The table of every code: README.md, "Exit codes".
const EX_USAGE: u8 = 64;

fn main() -> ExitCode {
    exit_quietly_on_closed_pipe();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SERVEBENCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    database_url_as_store();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `--help`/`--version` print to stdout and exit 0; every other parse error is a
            // usage error, EX_USAGE (64), never 2: 2 means "regression" (README, exit codes).
            // `matrix` keeps argparse's 2: it stands in for the reference's
            // generate_sweep_configs.py, whose callers test for it, and reports no verdict.
            let _ = e.print();
            let matrix = std::env::args_os().nth(1).is_some_and(|a| a == "matrix");
            return ExitCode::from(match (e.use_stderr(), matrix) {
                (false, _) => 0,
                (true, true) => 2,
                (true, false) => EX_USAGE,
            });
        }
    };
    cmd::review_wiring::install();
    let result = match cli.command {
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Search(a) => cmd::search::run(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::EngineShim(a) => cmd::engine_shim::run(a),
        Command::Eval(c) => cmd::eval::run(c),
        Command::Runs(a) => cmd::runs::run(a),
        Command::Baseline(c) => cmd::baseline::run(c),
        Command::Store(c) => cmd::store::run(c),
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
        Command::Run(a) => cmd::run::run(a),
        Command::Coverage(a) => cmd::coverage::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line, naming the thing that is wrong; causes joined with ": ".
            eprintln!("error: {e:#}");
            // flags that cannot go together: a usage error like clap's
            if e.downcast_ref::<cmd::measure_enums::UsageError>().is_some() {
                ExitCode::from(EX_USAGE)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_print_panics_on_a_closed_pipe_count() {
        assert!(super::is_closed_pipe_print(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(super::is_closed_pipe_print(
            "failed printing to stderr: Broken pipe (os error 32)"
        ));
        assert!(!super::is_closed_pipe_print(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!super::is_closed_pipe_print("Broken pipe (os error 32)"));
    }
}
