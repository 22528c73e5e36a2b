//! `servebench eval gsm8k`: GSM8K with lm-evaluation-harness prompts and scoring
//! (`servebench_eval::run_gsm8k`), printed as em_strict / em_flexible ± stderr, n_eff, the
//! threshold verdict and where the files are. Exit code 0 = gate passed, 2 = gate failed,
//! 1 = error, 130 = interrupted (Ctrl-C: result.json of the samples so far, marked partial).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use servebench_eval::{EvalMeta, EvalOptions, Profile, SimChoice};
use servebench_store::{RunKind, RunMeta, RunStatus, Store};

/// Subcommands of `servebench eval`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// GSM8K (1,319 test problems, 5-shot chat) scored exactly as lm-evaluation-harness does.
    ///
    /// Without --endpoint it runs against the embedded simulator, which replays a recorded
    /// model's real solutions: the score is that model's score, not an engine measurement.
    Gsm8k(Gsm8kArgs),
}

/// Arguments of `servebench eval gsm8k`.
#[derive(clap::Args, Debug)]
pub struct Gsm8kArgs {
    /// OpenAI-compatible server (`http://host:port`, `…/v1` or `…/v1/chat/completions`).
    /// Omitted: start the embedded simulator.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name sent in requests (default: the first of GET /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// Bearer token for the endpoint (default: $SERVEBENCH_API_KEY, else $OPENAI_API_KEY;
    /// the same for `servebench sweep`).
    #[arg(long, env = "SERVEBENCH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Requests in flight (lm-eval num_concurrent).
    #[arg(long, default_value_t = 16)]
    pub conc: usize,
    /// Only the first N test documents (lm-eval --limit).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Task definition: `inferencex` (InferenceX's utils/evals/gsm8k.yaml) or `lm-eval`
    /// (upstream lm_eval/tasks/gsm8k/gsm8k.yaml).
    #[arg(long, default_value = "inferencex")]
    pub profile: Profile,
    /// max_tokens per request (default: 5376 for inferencex — InferenceX's MAX_OUT for 8k1k
    /// evals — and 256 for lm-eval, its max_gen_toks default).
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Per-request timeout in seconds (each attempt).
    #[arg(long, default_value_t = 1800.0, allow_negative_numbers = true)]
    pub timeout: f64,
    /// How long to wait for the endpoint to answer /health or /v1/models, seconds (before any
    /// request is sent).
    #[arg(long, default_value_t = 30.0, allow_negative_numbers = true)]
    pub ready_timeout: f64,
    /// Retries on connection errors, HTTP 429 and 5xx (backoff 1, 2, 4, 8, 10 s).
    #[arg(long, default_value_t = 5)]
    pub max_retries: u32,
    /// Minimum score for both em_strict and em_flexible (validate_scores.py --min-score);
    /// with --thresholds, used only when the file has no entry. Default 0.85.
    #[arg(long, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// thresholds.yaml (InferenceX format): models.<prefix>.gsm8k, else default.gsm8k.
    #[arg(long)]
    pub thresholds: Option<PathBuf>,
    /// Model prefix for the thresholds lookup and the result row (e.g. qwen3.5).
    #[arg(long)]
    pub model_prefix: Option<String>,
    /// Output folder for result.json and samples.jsonl (default
    /// servebench-out/eval-gsm8k-<UTC time>). Reuse it to resume an interrupted run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Start over instead of resuming from an existing samples.jsonl in --out.
    #[arg(long)]
    pub fresh: bool,
    /// Folder with test.jsonl, train.jsonl, example_model_solutions.jsonl
    /// (default: $SERVEBENCH_SHARED/data/gsm8k, else ../shared/data/gsm8k).
    #[arg(long, env = "SERVEBENCH_GSM8K_DIR")]
    pub gsm8k_dir: Option<PathBuf>,
    /// Simulator only: recorded model to replay (6b_finetuning, 6b_verification,
    /// 175b_finetuning, 175b_verification).
    #[arg(long, default_value = servebench_eval::sim_answers::DEFAULT_MODEL)]
    pub sim_answers: String,
    /// Simulator only: GPU preset.
    #[arg(long, default_value = "h200")]
    pub sim_gpu: String,
    /// Simulator only: model preset.
    #[arg(long, default_value = "qwen3-8b")]
    pub sim_model: String,
    /// Simulator only: wall time = modelled time / speedup.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub sim_speedup: f64,
    /// Simulator only: answer as fast as possible (no timing model).
    #[arg(long)]
    pub sim_zero_delay: bool,
    /// Row metadata: hardware.
    #[arg(long)]
    pub hw: Option<String>,
    /// Row metadata: framework.
    #[arg(long)]
    pub framework: Option<String>,
    /// Row metadata: precision.
    #[arg(long)]
    pub precision: Option<String>,
    /// Row metadata: speculative decoding.
    #[arg(long)]
    pub spec_decoding: Option<String>,
    /// Row metadata: nominal ISL of the point (tokens).
    #[arg(long)]
    pub isl: Option<u32>,
    /// Row metadata: nominal OSL of the point (tokens).
    #[arg(long)]
    pub osl: Option<u32>,
    /// Row metadata: tensor parallelism.
    #[arg(long)]
    pub tp: Option<u32>,
    /// Row metadata: expert parallelism.
    #[arg(long)]
    pub ep: Option<u32>,
    /// Row metadata: DP-attention.
    #[arg(long)]
    pub dp_attn: Option<bool>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Engine image evaluated (recorded with the run and the stored eval row).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Catalog config key (recorded with the run).
    #[arg(long, value_name = "KEY")]
    pub config_key: Option<String>,
    /// Results store (SQLite) the run and its eval row are recorded in.
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = servebench_store::DEFAULT_DB
    )]
    pub db: PathBuf,
    /// Do not record the run in the results store (files only).
    #[arg(long)]
    pub no_store: bool,
}

impl Gsm8kArgs {
    /// The library options these flags describe.
    pub fn to_options(&self) -> anyhow::Result<EvalOptions> {
        anyhow::ensure!(
            self.timeout.is_finite() && self.timeout > 0.0,
            "--timeout must be a positive number of seconds"
        );
        anyhow::ensure!(
            self.ready_timeout.is_finite() && self.ready_timeout >= 0.0,
            "--ready-timeout must be a number of seconds ≥ 0"
        );
        anyhow::ensure!(self.conc >= 1, "--conc must be at least 1");
        anyhow::ensure!(self.limit != Some(0), "--limit must be at least 1");
        anyhow::ensure!(
            self.sim_speedup.is_finite() && self.sim_speedup > 0.0,
            "--sim-speedup must be > 0"
        );
        if let Some(f) = &self.thresholds {
            anyhow::ensure!(
                f.is_file(),
                "cannot read thresholds file {} (--thresholds): no such file",
                f.display()
            );
        }
        if self.endpoint.is_none() {
            let known = servebench_eval::sim_answers::MODELS;
            anyhow::ensure!(
                known.contains(&self.sim_answers.as_str()),
                "unknown --sim-answers model {:?} (recorded models: {})",
                self.sim_answers,
                known.join(", ")
            );
        }
        if let Some(t) = self.threshold {
            anyhow::ensure!(
                (0.0..=1.0).contains(&t),
                "--threshold {t} is outside [0, 1]"
            );
        }
        Ok(EvalOptions {
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            api_key: super::sweep::api_key_or_env(self.api_key.clone()),
            conc: self.conc,
            limit: self.limit,
            profile: self.profile,
            max_tokens: self.max_tokens,
            request_timeout: Duration::from_secs_f64(self.timeout),
            max_retries: self.max_retries,
            out_dir: self
                .out
                .clone()
                .unwrap_or_else(servebench_eval::default_out_dir),
            fresh: self.fresh,
            data_dir: self.gsm8k_dir.clone(),
            threshold: self.threshold,
            thresholds_file: self.thresholds.clone(),
            meta: EvalMeta {
                model_prefix: self.model_prefix.clone(),
                hw: self.hw.clone(),
                framework: self.framework.clone(),
                precision: self.precision.clone(),
                spec_decoding: self.spec_decoding.clone(),
                isl: self.isl,
                osl: self.osl,
                tp: self.tp,
                ep: self.ep,
                dp_attention: self.dp_attn,
            },
            sim: SimChoice {
                answers: self.sim_answers.clone(),
                gpu: self.sim_gpu.clone(),
                model: self.sim_model.clone(),
                speedup: self.sim_speedup,
                zero_delay: self.sim_zero_delay,
            },
            progress: !self.no_progress,
            ready_timeout: Some(Duration::from_secs_f64(self.ready_timeout)),
            ..Default::default()
        })
    }
}

/// Runs `servebench eval`.
pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Gsm8k(args) => gsm8k(args),
    }
}

fn gsm8k(args: Gsm8kArgs) -> anyhow::Result<ExitCode> {
    let opts = args.to_options()?;
    // Missing data is a usage error, not a failed run: check before the run is recorded.
    let data = servebench_eval::task::resolve_data_dir(opts.data_dir.as_deref());
    for f in ["test.jsonl", "train.jsonl"] {
        servebench_eval::task::load_docs(&data.join(f))?;
    }
    let mut store = if args.no_store {
        None
    } else {
        Some(Store::open(&args.db).with_context(|| {
            format!(
                "results store {} (choose another with --db PATH, or skip it with --no-store)",
                args.db.display()
            )
        })?)
    };
    if opts.endpoint.is_none() {
        eprintln!(
            "no --endpoint: starting the embedded simulator, replaying {}'s recorded GSM8K solutions",
            opts.sim.answers
        );
    }
    let run = match store.as_mut() {
        Some(st) => Some(st.record_run(&run_meta(&args, &opts))?),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let interrupt = opts.interrupt.clone();
    let outcome = rt.block_on(async move {
        // Ctrl-C: stop sending, keep the samples finished so far (result.json marked partial)
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: stopping eval gsm8k; writing result.json from the samples finished so far (marked partial)");
                interrupt.trigger();
            }
        });
        let r = servebench_eval::run_gsm8k(opts).await;
        watcher.abort();
        r
    });
    let (Some(st), Some(run)) = (store.as_mut(), run) else {
        let r = outcome?;
        print!("{}", servebench_eval::render_summary(&r));
        return Ok(exit(&r));
    };
    let r = match outcome {
        Ok(r) => r,
        Err(e) => {
            // the samples finished so far stay in samples.jsonl; a rerun with --out resumes
            if let Err(se) = st.finish_run(run, RunStatus::Failed) {
                eprintln!("warning: {}: run {run}: {se:#}", args.db.display());
            }
            return Err(e);
        }
    };
    print!("{}", servebench_eval::render_summary(&r));
    if r.interrupted {
        // a partial score is not a gate result: no eval row, the run is `interrupted`
        if let Err(e) = st.finish_run(run, RunStatus::Interrupted) {
            eprintln!("warning: {}: run {run}: {e:#}", args.db.display());
        }
        println!(
            "run         {run} (store {}, status interrupted)",
            args.db.display()
        );
        return Ok(exit(&r));
    }
    let row = store_row(&args, &r);
    let stored = st
        .add_eval(run, &row)
        .and_then(|_| st.finish_run(run, RunStatus::Ok));
    match stored {
        Ok(()) => println!("run         {run} (store {})", args.db.display()),
        Err(e) => {
            eprintln!("error: {}: run {run}: {e:#}", args.db.display());
            return Ok(ExitCode::from(1));
        }
    }
    Ok(exit(&r))
}

/// 130 when interrupted (as a shell reports SIGINT), else 0 = gate passed, 2 = gate failed.
fn exit(r: &servebench_eval::EvalResult) -> ExitCode {
    if r.interrupted {
        ExitCode::from(130)
    } else if r.gate.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

/// The run's metadata (kind `eval`, status `running` until the eval finishes).
fn run_meta(args: &Gsm8kArgs, opts: &EvalOptions) -> RunMeta {
    let mut m = RunMeta::new(RunKind::Eval);
    m.label = Some("gsm8k".into());
    m.endpoint = Some(match &opts.endpoint {
        Some(e) => e.clone(),
        None => format!(
            "embedded simulator: {} serving {}, replaying the recorded GSM8K solutions of {}",
            opts.sim.gpu, opts.sim.model, opts.sim.answers
        ),
    });
    m.image = args.image.clone();
    m.config_key = args.config_key.clone();
    if let (Some(tp), ep) = (args.tp, args.ep.unwrap_or(1)) {
        m.topology = Some(servebench_report::words::topology_label(tp, ep));
    }
    if args.isl.is_some() || args.osl.is_some() {
        m.workload = Some(servebench_report::words::workload_label(
            args.isl, args.osl, false,
        ));
    }
    let _ = std::fs::create_dir_all(&opts.out_dir);
    m.out_dir = Some(std::fs::canonicalize(&opts.out_dir).unwrap_or_else(|_| opts.out_dir.clone()));
    m.meta = serde_json::json!({
        "task": "gsm8k",
        "profile": opts.profile.to_string(),
        "conc": opts.conc,
        "limit": opts.limit,
        "model": opts.model,
        "simulator": opts.endpoint.is_none().then(|| serde_json::json!({
            "gpu": opts.sim.gpu, "model": opts.sim.model, "answers": opts.sim.answers,
            "speedup": opts.sim.speedup, "zero_delay": opts.sim.zero_delay,
        })),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
    });
    m
}

/// The stored eval row: the result row (MEASUREMENT §4.4) plus the gate outcome and image;
/// identity fields the flags left empty get the sweep's defaults (simulator: `sim-<gpu>`,
/// `sim`, `bf16`; endpoint: `unknown`; model prefix = the model; TP 1), listed in
/// `identity_defaults`, so compare and report can match the row.
fn store_row(args: &Gsm8kArgs, r: &servebench_eval::EvalResult) -> serde_json::Value {
    let mut v = super::sweep::eval_store_row(r, args.image.as_deref());
    let sim = args.endpoint.is_none();
    let defaults = [
        (
            "hw",
            serde_json::json!(if sim {
                format!("sim-{}", args.sim_gpu)
            } else {
                "unknown".into()
            }),
        ),
        (
            "framework",
            serde_json::json!(if sim { "sim" } else { "unknown" }),
        ),
        (
            "precision",
            serde_json::json!(if sim { "bf16" } else { "unknown" }),
        ),
        ("model_prefix", serde_json::json!(r.row.model)),
        ("tp", serde_json::json!(1)),
    ];
    let mut filled = Vec::new();
    if let Some(o) = v.as_object_mut() {
        for (k, d) in defaults {
            if o.get(k).is_none_or(|x| x.is_null()) {
                o.insert(k.into(), d);
                filled.push(k);
            }
        }
        if !filled.is_empty() {
            o.insert("identity_defaults".into(), serde_json::json!(filled));
        }
    }
    v
}
