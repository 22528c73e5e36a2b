//! `servebench coverage --catalog … --recipes CHECKOUT`: the smallest point of every selected
//! config run under `--simulate` with short windows (single-node from its real recipe,
//! multinode as the simulated prefill/decode fleet of `run --simulate`); one row
//! per config (kind, vendor, stored/failed, first error and its triage class) and the totals,
//! or `--json`. The logic is `servebench_runner::coverage`; this file parses, wires and prints.
//! Docs: docs/run.md ("Coverage").

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use servebench_catalog::matrix::ScenarioType;
use servebench_catalog::{Catalog, Runners};
use servebench_runner::coverage::{self, CoverageRequest};

/// Arguments of `servebench coverage`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Config keys or fnmatch globs (default: every config of the catalog).
    #[arg(value_name = "KEY|GLOB")]
    pub keys: Vec<String>,
    /// Master config file(s) (InferenceX schema), merged in order.
    #[arg(long, num_args = 1.., value_name = "FILE", required = true)]
    pub catalog: Vec<String>,
    /// Runner config; default: runners.yaml next to the first catalog file.
    #[arg(long, value_name = "FILE")]
    pub runners: Option<String>,
    /// The InferenceX checkout whose recipes run (unmodified; each point gets its own copy
    /// mounted at /workspace).
    #[arg(long, value_name = "DIR")]
    pub recipes: PathBuf,
    /// Only configs of these scenario types: fixed-seq-len, agentic-coding.
    #[arg(long, num_args = 1.., value_delimiter = ',', value_parser = ["fixed-seq-len", "agentic-coding"])]
    pub scenario: Option<Vec<String>>,
    /// AgentX traces for the agentic points (default: the shared data's agentx-traces).
    #[arg(long, value_name = "PATH")]
    pub traces: Option<PathBuf>,
    /// Profiling window of an agentic point, s (the recipe's DURATION).
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub duration: f64,
    /// Measured prompts of a fixed-seq point.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub num_prompts: u32,
    /// Measured ISL of a fixed-seq point, tokens.
    #[arg(long, value_name = "TOKENS", default_value_t = 256)]
    pub isl: u32,
    /// Measured OSL of a fixed-seq point, tokens.
    #[arg(long, value_name = "TOKENS", default_value_t = 32)]
    pub osl: u32,
    /// Points run at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Readiness bound per point, s.
    #[arg(long, value_name = "S", default_value_t = 600.0)]
    pub ready_timeout: f64,
    /// Measurement bound per point, s.
    #[arg(long, value_name = "S", default_value_t = 600.0)]
    pub measure_timeout: f64,
    /// Run directory (default servebench-out/coverage-<UTC time>); an existing one is resumed.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Start over in an existing --out.
    #[arg(long)]
    pub overwrite: bool,
    /// Results store.
    #[arg(long, value_name = "PATH", default_value = "servebench-coverage.db")]
    pub db: PathBuf,
    /// Print the report as JSON (progress lines go to stderr).
    #[arg(long)]
    pub json: bool,
}

/// Runs `servebench coverage`.
pub fn run(args: Args) -> Result<ExitCode> {
    let catalog = Catalog::load(&args.catalog)?;
    let runners_file = args.runners.clone().unwrap_or_else(|| {
        Path::new(&args.catalog[0])
            .with_file_name("runners.yaml")
            .display()
            .to_string()
    });
    let runners = Runners::load(&runners_file).with_context(|| "--runners")?;
    if !args.recipes.is_dir() {
        bail!("--recipes {}: no such folder", args.recipes.display());
    }
    let scenario: Option<Vec<ScenarioType>> = args
        .scenario
        .as_ref()
        .map(|v| v.iter().filter_map(|s| ScenarioType::parse(s)).collect());
    let cases = coverage::select(
        &catalog,
        &runners,
        &args.keys,
        scenario.as_deref(),
        Some(&std::path::absolute(&args.recipes)?),
    )?;
    let shared = servebench_eval::shared::shared_dir()
        .ok()
        .map(|p| std::path::absolute(&p).unwrap_or(p));
    let traces = match &args.traces {
        Some(t) => Some(std::path::absolute(t)?),
        None => shared
            .as_ref()
            .map(|s| s.join("data/agentx-traces"))
            .filter(|t| t.is_dir()),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("servebench-out").join(format!(
            "coverage-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    let req = CoverageRequest {
        out: std::path::absolute(&out)?,
        db: args.db.clone(),
        exe: std::env::current_exe().context("cannot locate the servebench binary")?,
        recipes: std::path::absolute(&args.recipes)?,
        runner_nodes: runners
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        traces,
        duration_s: args.duration,
        num_prompts: args.num_prompts,
        isl: args.isl,
        osl: args.osl,
        jobs: args.jobs,
        shared_dir: shared,
        ready_timeout_s: args.ready_timeout,
        measure_timeout_s: args.measure_timeout,
        overwrite: args.overwrite,
        progress_stderr: args.json,
    };
    let report = coverage::run(&req, &cases)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
        println!("report: {}", req.out.join("coverage.json").display());
    }
    Ok(if report.stored == report.run {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
