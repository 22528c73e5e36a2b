//! `servebench runs`: the runs in the results store, newest first.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use servebench_store::RunKind;

/// Arguments of `servebench runs`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Results store.
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
    /// Only runs of this kind: sweep, bench, eval, baseline.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print the runs as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// The status of a `servebench run` run from its directory's `summary.json` (`None` for other
/// runs, or when the directory is gone).
fn runner_status(m: &servebench_store::RunMeta) -> Option<String> {
    m.meta.get("servebench_run")?;
    let s = servebench_runner::run::load_summary(m.out_dir.as_deref()?)?;
    Some(s.status.as_str().to_string())
}

/// Every topology of a `servebench run` run's stored points (`TP8/EP1, TP4/EP1`), from its run
/// directory; `None` for other runs, or when the directory is gone.
fn runner_topologies(m: &servebench_store::RunMeta) -> Option<String> {
    m.meta.get("servebench_run")?;
    let t = servebench_runner::run::stored_topologies(m.out_dir.as_deref()?);
    (!t.is_empty()).then(|| {
        t.iter()
            .map(|&(tp, ep)| servebench_contracts::labels::topology_label(tp, ep))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Runs `servebench runs`.
pub fn run(args: Args) -> Result<ExitCode> {
    let kind = match args.kind.as_deref() {
        None => None,
        Some(k) => match RunKind::parse(k) {
            Some(k) => Some(k),
            None => bail!("--kind {k}: expected sweep, bench, eval or baseline"),
        },
    };
    let store = servebench_review::sides::open_store(&args.db)?;
    let runs = store.list_runs(kind, args.limit)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        println!("no runs in {}", args.db.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "Run",
        "Created (UTC)",
        "Kind",
        "Status",
        "Points",
        "Evals",
        "Image",
        "Config / label",
        "Workload",
        "Topology",
        "Endpoint",
    ]);
    for r in &runs {
        let m = &r.meta;
        let created = if r.created_at.len() >= 16 && r.created_at.as_bytes()[10] == b'T' {
            format!("{} {}", &r.created_at[..10], &r.created_at[11..16])
        } else {
            r.created_at.clone()
        };
        t.add_row(vec![
            r.id.to_string(),
            created,
            r.kind.as_str().to_string(),
            // a `servebench run` run says its one status (summary.json: points, eval gates,
            // validity, verdict), as its table and `run --status` do; a run with an invalid
            // point says so (the reasons: `runs --json`, `compare`)
            // (still running: summary.json is the previous invocation's)
            match (
                runner_status(m).filter(|_| r.status != servebench_store::RunStatus::Running),
                &r.invalid_reason,
            ) {
                (Some(s), _) => s,
                (None, Some(_)) => format!("{} (INVALID)", r.status.as_str()),
                (None, None) => r.status.as_str().to_string(),
            },
            r.n_points.to_string(),
            r.n_evals.to_string(),
            m.image.clone().unwrap_or_default(),
            m.config_key.clone().or(m.label.clone()).unwrap_or_default(),
            m.workload.clone().unwrap_or_default(),
            runner_topologies(m)
                .or(m.topology.clone())
                .unwrap_or_default(),
            // The simulator's ~230-character description in short (`sim: H200/Qwen3-8B`);
            // `--json` keeps the full text.
            m.endpoint
                .as_deref()
                .map(servebench_report::words::endpoint_short)
                .unwrap_or_default(),
        ]);
    }
    println!("{t}");
    Ok(ExitCode::SUCCESS)
}
