//! `servebench baseline import FILE`: store a baseline (InferenceX artifacts or a baseline
//! table) as a run of kind `baseline`, so `servebench compare --baseline RUN` can use it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use servebench_compare::IdentityOverrides;
use servebench_review::sides::import_baseline;

/// Subcommands of `servebench baseline`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Import a baseline file into the store: an InferenceX `agg_bmk.json` (fixed-seq rows and
    /// AgentX `agentic-coding` aggregates), an `agg_eval_all.json`, a baseline table
    /// (`docs/compare.md`, e.g. `shared/data/scenario/baseline.json`), or InferenceX dashboard
    /// API rows (`/api/v1/benchmarks`, `/benchmarks/history` JSON: one history run per CI
    /// run). Prints the new run id(s).
    Import(ImportArgs),
}

/// Arguments of `servebench baseline import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The file to import.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Results store (created if missing).
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
    /// Hardware of a baseline table (overrides its `identity` / config key), e.g. `b200`.
    #[arg(long)]
    pub hw: Option<String>,
    /// Framework of a baseline table, e.g. `sglang`.
    #[arg(long)]
    pub framework: Option<String>,
    /// InferenceX model prefix of a baseline table, e.g. `qwen3.5`.
    #[arg(long)]
    pub model_prefix: Option<String>,
    /// Precision of a baseline table, e.g. `fp4`.
    #[arg(long)]
    pub precision: Option<String>,
    /// Speculative decoding of a baseline table: `mtp`, `draft_model`, `none`.
    #[arg(long)]
    pub spec_decoding: Option<String>,
    /// Full model id of a baseline table (shown, not matched).
    #[arg(long)]
    pub model: Option<String>,
    /// Label of the run (default: the file name).
    #[arg(long)]
    pub label: Option<String>,
    /// Git branch the imported run(s) are stored under: `--branch main` makes them rows
    /// `compare --baseline main` may pick (InferenceX's history of main). Default: none — an
    /// imported file is no branch's result, and `--baseline main` never picks it.
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
}

/// Runs `servebench baseline`.
pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Import(a) => import(a),
    }
}

fn import(a: ImportArgs) -> Result<ExitCode> {
    let name = a.file.display().to_string();
    let ov = IdentityOverrides {
        hw: a.hw,
        framework: a.framework,
        model_prefix: a.model_prefix,
        precision: a.precision,
        spec_decoding: a.spec_decoding,
        model: a.model,
    };
    let runs = import_baseline(&a.db, &a.file, &ov, a.label.as_deref(), a.branch.as_deref())?;
    for r in &runs {
        let imp = &r.import;
        let mut facts = vec![format!(
            "{} point{}, {} eval{}",
            imp.points.len(),
            if imp.points.len() == 1 { "" } else { "s" },
            imp.evals.len(),
            if imp.evals.len() == 1 { "" } else { "s" }
        )];
        facts.extend(imp.date.clone());
        facts.extend(imp.image.as_ref().map(|i| format!("`{i}`")));
        facts.extend(imp.workload.clone());
        facts.extend(imp.topology.clone());
        facts.extend(imp.statistic.map(|s| s.latency_label().to_string()));
        if let Some(b) = &a.branch {
            facts.push(format!("branch {b}"));
        }
        println!(
            "imported baseline run {} from {name} ({}) into {}: {}",
            r.run,
            imp.format.label(),
            servebench_store::redact_url(&a.db.display().to_string()),
            facts.join(" · ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
