//! `servebench baseline import FILE`: store a baseline (InferenceX artifacts or a baseline
//! table) as a run of kind `baseline`, so `servebench compare --baseline RUN` can use it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use servebench_compare::{parse_baseline, BaselineFormat, IdentityOverrides};
use servebench_store::{RunKind, RunMeta, RunStatus, Store};

/// Subcommands of `servebench baseline`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Import a baseline file into the store: an InferenceX `agg_bmk.json` (fixed-seq rows and
    /// AgentX `agentic-coding` aggregates), an `agg_eval_all.json`, or a baseline table
    /// (`docs/compare.md`, e.g. `shared/data/scenario/baseline.json`). Prints the new run id.
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
}

/// Runs `servebench baseline`.
pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Import(a) => import(a),
    }
}

fn import(a: ImportArgs) -> Result<ExitCode> {
    let name = a.file.display().to_string();
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("{name}: cannot read"))?;
    let ov = IdentityOverrides {
        hw: a.hw,
        framework: a.framework,
        model_prefix: a.model_prefix,
        precision: a.precision,
        spec_decoding: a.spec_decoding,
        model: a.model,
    };
    let imp = parse_baseline(&text, &name, &ov)?;
    for n in &imp.notes {
        eprintln!("note: {n}");
    }
    let mut store = Store::open(&a.db)?;
    let mut meta = RunMeta::new(RunKind::Baseline);
    meta.label = Some(a.label.unwrap_or_else(|| {
        a.file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone())
    }));
    meta.image = imp.image.clone();
    meta.config_key = imp.config_key.clone();
    meta.workload = imp.workload.clone();
    meta.topology = imp.topology.clone();
    // A baseline table's date is when the baseline was measured: it is the run's time.
    meta.created_at = imp.date.as_ref().map(|d| {
        if d.len() == 10 {
            format!("{d}T00:00:00Z")
        } else {
            d.clone()
        }
    });
    meta.meta = serde_json::json!({
        "source_file": std::fs::canonicalize(&a.file).unwrap_or(a.file.clone()),
        "format": imp.format,
        "statistic": imp.statistic.map(|s| s.to_string()),
        "date": imp.date,
    });
    let run = store.record_run(&meta)?;
    store.set_provenance(run, "source.file", &name)?;
    store.set_provenance(
        run,
        "source.format",
        match imp.format {
            BaselineFormat::Table => "baseline table",
            BaselineFormat::InferencexRows => "InferenceX rows",
        },
    )?;
    for p in &imp.points {
        store.add_foreign_point(run, p)?;
    }
    for e in &imp.evals {
        store.add_foreign_eval(run, e)?;
    }
    store.finish_run(run, RunStatus::Ok)?;
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
    println!(
        "imported baseline run {run} from {name} ({}) into {}: {}",
        match imp.format {
            BaselineFormat::Table => "baseline table",
            BaselineFormat::InferencexRows => "InferenceX rows",
        },
        a.db.display(),
        facts.join(" · ")
    );
    Ok(ExitCode::SUCCESS)
}
