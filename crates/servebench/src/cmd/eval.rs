//! `servebench eval gsm8k`: GSM8K with lm-evaluation-harness prompts and scoring
//! (`servebench_eval::run_gsm8k`), printed as em_strict / em_flexible ± stderr, n_eff, the
//! threshold verdict and where the files are. Exit code 0 = gate passed, 2 = gate failed,
//! 1 = error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use servebench_eval::{EvalMeta, EvalOptions, Profile, SimChoice};

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
    /// Bearer token for the endpoint.
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
    #[arg(long, default_value_t = 1800.0)]
    pub timeout: f64,
    /// Retries on connection errors, HTTP 429 and 5xx (backoff 1, 2, 4, 8, 10 s).
    #[arg(long, default_value_t = 5)]
    pub max_retries: u32,
    /// Minimum score for both em_strict and em_flexible (validate_scores.py --min-score);
    /// with --thresholds, used only when the file has no entry. Default 0.85.
    #[arg(long)]
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
    #[arg(long, default_value_t = 1.0)]
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
}

impl Gsm8kArgs {
    /// The library options these flags describe.
    pub fn to_options(&self) -> anyhow::Result<EvalOptions> {
        anyhow::ensure!(
            self.timeout.is_finite() && self.timeout > 0.0,
            "--timeout must be a positive number of seconds"
        );
        if let Some(t) = self.threshold {
            anyhow::ensure!(
                (0.0..=1.0).contains(&t),
                "--threshold {t} is outside [0, 1]"
            );
        }
        Ok(EvalOptions {
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            api_key: self.api_key.clone(),
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
    if opts.endpoint.is_none() {
        eprintln!(
            "no --endpoint: starting the embedded simulator, replaying {}'s recorded GSM8K solutions",
            opts.sim.answers
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let r = rt.block_on(servebench_eval::run_gsm8k(opts))?;
    print!("{}", servebench_eval::render_summary(&r));
    Ok(if r.gate.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
