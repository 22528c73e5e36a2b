//! `servebench run KEY|GLOB …`: catalog matrix points from recipes to results — each point's
//! engine started from its recipe (or the embedded simulator with `--simulate`), measured with
//! servebench's own sweep/eval, torn down; on this machine or one Slurm job per point; failures
//! triaged, transient ones retried (AUTOMATION.md §5.3). The logic is in `servebench-runner`;
//! this file parses, wires and prints. Docs: docs/run.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use servebench_catalog::matrix::{seq_len_from_str, ScenarioType};
use servebench_catalog::{Catalog, Runners};
use servebench_runner::job::MeasureSpec;
use servebench_runner::{
    build_plan, EvalSelection, JobBackend, LocalBackend, PlanOptions, RunOptions, Runner,
    SlurmBackend,
};

mod out;

/// Arguments of `servebench run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Catalog config key(s) or fnmatch globs (as `matrix test-config --config-keys`).
    #[arg(value_name = "KEY|GLOB", required_unless_present_any = ["status", "cancel", "exec_point"])]
    pub keys: Vec<String>,
    /// Master config file(s) (InferenceX schema), merged in order.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub catalog: Vec<String>,
    /// Runner config (labels → runner names); default: runners.yaml next to the first catalog file.
    #[arg(long, value_name = "FILE")]
    pub runners: Option<String>,
    /// Recipes: a flat folder (the scenario's recipes/), InferenceX's repository root or its
    /// benchmarks/single_node. With --simulate, recipes get $SERVEBENCH_SIM_CMD.
    #[arg(long, value_name = "DIR")]
    pub recipes: Option<PathBuf>,
    /// Keep only these concurrencies: `--conc 1,4` (comma separated, as `sweep`) or `--conc 1 4`.
    #[arg(long, num_args = 1.., value_delimiter = ',', value_name = "N")]
    pub conc: Option<Vec<i64>>,
    /// Sequence lengths to include (fixed-seq-len): 1k1k, 8k1k.
    #[arg(long = "seq-lens", num_args = 1.., value_parser = ["1k1k", "8k1k"])]
    pub seq_lens: Option<Vec<String>>,
    /// Scenario type(s): fixed-seq-len, agentic-coding.
    #[arg(long, num_args = 1.., value_parser = ["fixed-seq-len", "agentic-coding"])]
    pub scenario: Option<Vec<String>>,
    /// No eval jobs (throughput points only).
    #[arg(long, conflicts_with = "evals_only")]
    pub no_evals: bool,
    /// Only the eval jobs.
    #[arg(long)]
    pub evals_only: bool,
    /// Where points run: local (this machine, one at a time; --jobs N with --simulate) or slurm
    /// (one job per point).
    #[arg(long, value_parser = ["local", "slurm"], default_value = "local")]
    pub executor: String,
    /// Local executor with --simulate: up to N points at once (each job picks its own port;
    /// simulated engines hold no GPU). Default 1.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "simulate",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,
    /// Slurm partition.
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// Slurm time limit per job, minutes.
    #[arg(long, value_name = "MIN")]
    pub time_limit: Option<u32>,
    /// Each point's engine is the embedded simulator (GPU from the runner, model, TP).
    #[arg(long)]
    pub simulate: bool,
    /// Simulator model preset (default: matched from the catalog model, else qwen3-8b).
    #[arg(long, value_name = "PRESET", requires = "simulate")]
    pub sim_model: Option<String>,
    /// Simulated engines run S times faster than real time (wall time = modelled time / S);
    /// each point's sweep scales its numbers back to modelled time. Default: real time.
    #[arg(
        long,
        value_name = "S",
        requires = "simulate",
        conflicts_with = "recipes"
    )]
    pub sim_speedup: Option<f64>,
    /// A planted regression: each simulated engine's modelled steps take F times longer
    /// (`servebench sim --sim-slowdown F`), so a comparison can be checked to find it.
    #[arg(
        long,
        value_name = "F",
        requires = "simulate",
        conflicts_with = "recipes"
    )]
    pub sim_slowdown: Option<f64>,
    /// Simulated points: `virtual` (default without --sim-speedup) measures each point in one
    /// process on the discrete-event clock (the sweep embeds the simulator, with a real
    /// recipe's launch limits; the started `servebench sim` or the recipe's shimmed engine
    /// answers readiness), so a 3,600 s window takes seconds and the numbers do not depend on
    /// the host; `wall` measures over TCP. A recipe that runs `$SERVEBENCH_SIM_CMD` itself is
    /// measured on the wall clock unless `virtual` is given. --sim-speedup is a wall-clock
    /// setting (refused with virtual, exit 64).
    #[arg(long, value_enum, value_name = "CLOCK", requires = "simulate")]
    pub sim_clock: Option<super::measure_enums::SimClockArg>,
    /// Print the plan (points, engine commands, job scripts, GPUs, evals) and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Run directory (default servebench-out/run-<UTC time>); an existing one is resumed
    /// (with the same flags only: a resume with other measurement flags is refused).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Start over in an existing --out: its jobs are stopped and what the earlier run wrote
    /// there is deleted (its store run stays in the store) instead of resuming it.
    #[arg(long)]
    pub overwrite: bool,
    /// Infrastructure retries per point for transient failures (0..=2, AUTOMATION.md §5.3).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_retries: u32,
    /// Measured prompts per point (default 10 × conc).
    #[arg(long, value_name = "N")]
    pub num_prompts: Option<u32>,
    /// Warmup requests per point (default 2 × conc).
    #[arg(long, value_name = "N")]
    pub warmups: Option<u32>,
    /// AgentX traces (folder of trace_*.json or traces.jsonl): agentic points are replayed
    /// (`sweep --scenario agentx`); without it they get a fixed-sequence stand-in.
    #[arg(long, value_name = "PATH")]
    pub traces: Option<PathBuf>,
    /// AgentX profiling window per agentic point, seconds (sweep's default 3600).
    #[arg(long, value_name = "S", requires = "traces")]
    pub duration: Option<f64>,
    /// Measured ISL override, tokens (agentic points without --traces: stand-in, default 1024).
    #[arg(long, value_name = "TOKENS")]
    pub isl: Option<u32>,
    /// Measured OSL override, tokens.
    #[arg(long, value_name = "TOKENS")]
    pub osl: Option<u32>,
    /// Eval jobs: only the first N GSM8K documents.
    #[arg(long, value_name = "N")]
    pub eval_limit: Option<u32>,
    /// Readiness bound per engine, seconds.
    #[arg(long, value_name = "S", default_value_t = 600.0)]
    pub ready_timeout: f64,
    /// Measurement bound per point, seconds.
    #[arg(long, value_name = "S", default_value_t = 7200.0)]
    pub measure_timeout: f64,
    /// Write the attempt comment (AUTOMATION.md §5.6) against this baseline (file or run id).
    #[arg(long, value_name = "FILE|RUN")]
    pub baseline: Option<String>,
    /// Image provenance for the attempt comment's Change line (images.json shape).
    #[arg(long, value_name = "FILE", requires = "baseline")]
    pub change: Option<PathBuf>,
    /// The bump's provenance (`provenance.json` written by `servebench bump`): the Change
    /// line's images, digests and the recipe flag migrations it applied. Instead of --change.
    #[arg(
        long,
        value_name = "FILE",
        requires = "baseline",
        conflicts_with = "change"
    )]
    pub provenance: Option<PathBuf>,
    /// Results store.
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
    /// Show a run's jobs, their state and their logs.
    #[arg(long, value_name = "RUN", conflicts_with = "cancel")]
    pub status: Option<PathBuf>,
    /// Cancel a run's jobs (scancel / process-group teardown).
    #[arg(long, value_name = "RUN")]
    pub cancel: Option<PathBuf>,
    /// Internal: run one job (the body of a job script).
    #[arg(long, value_name = "FILE", hide = true)]
    pub exec_point: Option<PathBuf>,
}

/// Runs `servebench run`.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(spec) = &args.exec_point {
        let spec = servebench_runner::job::read_spec(spec)?;
        let log = std::env::var_os("SERVEBENCH_JOB_LOG")
            .map(PathBuf::from)
            .unwrap_or_else(|| spec.dir.join("job.log"));
        let st = servebench_runner::job::run_job(&spec, Some(&log))?;
        return Ok(ExitCode::from(if st.ok {
            0
        } else if st.interrupted {
            130
        } else {
            1
        }));
    }
    if let Some(dir) = &args.status {
        return out::print_status(dir);
    }
    if let Some(dir) = &args.cancel {
        for l in servebench_runner::run::cancel_run(dir)? {
            println!("{l}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.max_retries > servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT {
        bail!(
            "--max-retries {}: at most {} infrastructure retries per attempt (AUTOMATION.md §5.3)",
            args.max_retries,
            servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT
        );
    }
    if args.catalog.is_empty() {
        bail!(
            "--catalog FILE… is needed (the master config files holding {})",
            args.keys.join(" ")
        );
    }
    let catalog = Catalog::load(&args.catalog)?;
    let runners_file = args.runners.clone().unwrap_or_else(|| {
        Path::new(&args.catalog[0])
            .with_file_name("runners.yaml")
            .display()
            .to_string()
    });
    let runners = Runners::load(&runners_file).with_context(|| "--runners")?;
    let plan = build_plan(
        &catalog,
        &runners,
        &PlanOptions {
            keys: args.keys.clone(),
            conc: args.conc.clone(),
            seq_lens: args
                .seq_lens
                .as_ref()
                .map(|v| v.iter().filter_map(|s| seq_len_from_str(s)).collect()),
            scenario: args
                .scenario
                .as_ref()
                .map(|v| v.iter().filter_map(|s| ScenarioType::parse(s)).collect()),
            evals: if args.no_evals {
                EvalSelection::None
            } else if args.evals_only {
                EvalSelection::Only
            } else {
                EvalSelection::Default
            },
            runner_node_filter: None,
            checkout: multinode_checkout(&args),
        },
    )?;
    // The data folders, resolved here once and handed to every job (which runs in its own
    // folder); preflight checks the GSM8K files when a point is an eval job.
    let shared = servebench_eval::shared::shared_dir()
        .ok()
        .map(|p| std::path::absolute(&p).unwrap_or(p));
    let (gsm8k, gsm8k_unresolved) = match servebench_eval::task::resolve_data_dir(None) {
        Ok(p) => (Some(std::path::absolute(&p).unwrap_or(p)), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("servebench-out").join(format!(
            "run-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    let out = std::path::absolute(&out).with_context(|| format!("--out {}", out.display()))?;
    if let (Some(super::measure_enums::SimClockArg::Virtual), Some(x)) =
        (args.sim_clock, args.sim_speedup)
    {
        return Err(super::measure_enums::UsageError(format!("--sim-speedup {x} has no meaning with --sim-clock virtual (modelled time is simulated, not waited); drop one of them")).into());
    }
    let opts = RunOptions {
        out,
        db: args.db.clone(),
        exe: std::env::current_exe().context("cannot locate the servebench binary")?,
        recipes: args.recipes.clone(),
        simulate: args.simulate,
        sim_model: args.sim_model.clone(),
        sim_speedup: args.sim_speedup,
        sim_slowdown: args.sim_slowdown,
        sim_clock: args.sim_clock.map(Into::into),
        runner_nodes: runners
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<HashMap<_, _>>(),
        partition: args.partition.clone(),
        time_limit_min: args.time_limit,
        max_retries: args.max_retries,
        measure: MeasureSpec {
            num_prompts: args.num_prompts,
            warmups: args.warmups,
            isl: args.isl,
            osl: args.osl,
            eval_limit: args.eval_limit,
            eval_max_tokens: None,
            gsm8k_dir: gsm8k,
            shared_dir: shared,
            traces: args.traces.as_ref().map(std::path::absolute).transpose()?,
            duration_s: args.duration,
        },
        gsm8k_unresolved,
        ready_timeout_s: args.ready_timeout,
        teardown_grace_s: 10.0,
        measure_timeout_s: args.measure_timeout,
        selection: selection(&args),
        overwrite: args.overwrite,
        progress_stderr: false,
    };
    let exec: Box<dyn JobBackend> = match args.executor.as_str() {
        "slurm" => Box::new(SlurmBackend::default()),
        _ => Box::new(LocalBackend::with_parallel(args.jobs as usize)),
    };
    let runner = Runner::new(opts.clone(), exec);
    // Everything the run needs, checked before the first job: recipes, traces, GSM8K data for
    // eval jobs, the binary, sbatch; the attempt comment's baseline, change and provenance files.
    // a dry run of multinode points only prints their Slurm jobs: nothing needs checking
    if !(args.dry_run && plan.iter().all(|p| p.disagg.is_some())) {
        runner.preflight(&plan)?;
    }
    if args.baseline.is_some() {
        servebench_review::attempt::check_inputs(&out::attempt_request(
            &args,
            "run",
            &opts.db,
            None,
            vec![],
            &plan[0].image,
        ))?;
    }
    let mut runner = runner;
    if args.dry_run {
        print!("{}", servebench_runner::dryrun::plan_text(&runner, &plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "servebench run: {} point(s) of {} · executor {}{} · out {}",
        plan.len(),
        args.keys.join(" "),
        args.executor,
        if args.simulate {
            " · simulated engines"
        } else {
            ""
        },
        opts.out.display()
    );
    if let Some(n) = plan.iter().find_map(|p| opts.measure.agentic_note(p)) {
        println!("{n}");
    }
    let s = runner.run(plan.clone())?;
    out::finish(&args, s, &plan[0].image)
}

/// The flags that chose the plan, as `run.json` records them (only those given).
fn selection(args: &Args) -> std::collections::BTreeMap<String, String> {
    let mut m = std::collections::BTreeMap::new();
    let list = |v: &[String]| v.join(",");
    m.insert("KEY|GLOB".to_string(), args.keys.join(" "));
    if let Some(c) = &args.conc {
        let c: Vec<String> = c.iter().map(|x| x.to_string()).collect();
        m.insert("--conc".into(), list(&c));
    }
    if let Some(v) = &args.seq_lens {
        m.insert("--seq-lens".into(), list(v));
    }
    if let Some(v) = &args.scenario {
        m.insert("--scenario".into(), list(v));
    }
    if args.no_evals {
        m.insert("--no-evals".into(), "on".into());
    }
    if args.evals_only {
        m.insert("--evals-only".into(), "on".into());
    }
    m
}

/// Where multinode points look for their srt-slurm recipe or launcher script: `--recipes`, else
/// the InferenceX checkout the first catalog file is in (`<checkout>/configs/*.yaml`), when it
/// has `benchmarks/multi_node`.
fn multinode_checkout(args: &Args) -> Option<PathBuf> {
    if let Some(r) = &args.recipes {
        return Some(r.clone());
    }
    let cat = std::path::absolute(args.catalog.first()?).ok()?;
    let root = cat.parent()?.parent()?;
    root.join("benchmarks/multi_node")
        .is_dir()
        .then(|| root.to_path_buf())
}
