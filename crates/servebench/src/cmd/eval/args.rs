//! The flags of `servebench eval gsm8k`, their checks, and the target they name (the
//! endpoint through the endpoint layer, or the simulator replaying `--sim-answers`).

use std::path::PathBuf;
use std::time::Duration;

use servebench_endpoint::{api_key_or_env, Endpoint, SimOptions, TlsConfig};
use servebench_eval::{EvalMeta, EvalOptions, Profile};

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
    /// Extra trusted certificate(s) for an https:// endpoint (PEM: a private CA or the
    /// server's self-signed certificate), besides the built-in Mozilla roots.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
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
    /// (default: data/gsm8k of $SERVEBENCH_SHARED, else of ../shared, else of shared/ beside the
    /// checkout the binary was built in).
    #[arg(long, env = "SERVEBENCH_GSM8K_DIR")]
    pub gsm8k_dir: Option<PathBuf>,
    /// Simulator only: recorded model to replay (6b_finetuning, 6b_verification,
    /// 175b_finetuning, 175b_verification).
    #[arg(long, default_value = servebench_eval::sim_answers::DEFAULT_MODEL)]
    pub sim_answers: String,
    /// Simulator only: answer with this chosen accuracy (0–1] instead of a recorded model's:
    /// the dataset's reference solutions for ⌊n·A⌋ of the first n questions, recorded wrong
    /// solutions for the rest. For testing the accuracy gate; the row says
    /// `simulated_accuracy` and the summary SIMULATED.
    #[arg(long, value_name = "A")]
    pub sim_gsm8k_accuracy: Option<f64>,
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
    /// Row metadata: framework (default: the --engine profile, or `sim` on the simulator, as
    /// `servebench sweep`).
    #[arg(long)]
    pub framework: Option<String>,
    /// Engine profile of the endpoint (sglang, vllm, trtllm, llama.cpp, transformers, openai):
    /// the row's default framework, as `servebench sweep --engine`.
    #[arg(long, default_value = servebench_client::Engine::DEFAULT_NAME, value_parser = servebench_client::Engine::parse)]
    pub engine: servebench_client::Engine,
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
    /// Results store (a SQLite file, or `postgres://…`; also `DATABASE_URL`) the run and its eval row are recorded in.
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
    /// Git branch the run is stored under; default: the checkout's branch, else `local`.
    #[arg(long, value_name = "NAME", env = "SERVEBENCH_BRANCH")]
    pub branch: Option<String>,
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
        if let Some(a) = self.sim_gsm8k_accuracy {
            anyhow::ensure!(
                self.endpoint.is_none(),
                "--sim-gsm8k-accuracy is for the embedded simulator; it cannot go with --endpoint"
            );
            anyhow::ensure!(
                a > 0.0 && a <= 1.0,
                "--sim-gsm8k-accuracy {a}: must be in (0, 1]"
            );
        }
        if let Some(t) = self.threshold {
            anyhow::ensure!(
                (0.0..=1.0).contains(&t),
                "--threshold {t} is outside [0, 1]"
            );
        }
        Ok(EvalOptions {
            model: self.model.clone(),
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
            replay_note: self
                .endpoint
                .is_none()
                .then(|| match self.sim_gsm8k_accuracy {
                    Some(a) => servebench_eval::sim_answers::accuracy_note(a),
                    None => servebench_eval::sim_answers::replay_note(&self.sim_answers),
                }),
            simulated_accuracy: self
                .endpoint
                .is_none()
                .then_some(self.sim_gsm8k_accuracy)
                .flatten(),
            progress: !self.no_progress,
            ready_timeout: Some(Duration::from_secs_f64(self.ready_timeout)),
            ..Default::default()
        })
    }
}

/// The endpoint (`--endpoint`, `--api-key`, `--ca-cert`; checked before any I/O), or `None`
/// for the embedded simulator.
pub(super) fn endpoint(args: &Gsm8kArgs) -> anyhow::Result<Option<Endpoint>> {
    let Some(url) = &args.endpoint else {
        return Ok(None);
    };
    let base = servebench_eval::chat_base(url);
    let tls = TlsConfig::with_ca_cert(args.ca_cert.clone());
    let ep = Endpoint::new(base, api_key_or_env(args.api_key.clone()), &tls)?;
    if let Some(note) = ep.normalisation_note() {
        println!("{}", note.replacen(base, url, 1));
    }
    Ok(Some(ep))
}

/// The simulator's settings of these flags (the recorded answers are added by the pipeline).
pub(super) fn sim_options(args: &Gsm8kArgs) -> SimOptions {
    SimOptions {
        gpu: args.sim_gpu.clone(),
        model: args.sim_model.clone(),
        speedup: args.sim_speedup,
        zero_delay: args.sim_zero_delay,
        ..Default::default()
    }
}
