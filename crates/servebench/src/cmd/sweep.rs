//! `servebench sweep` (and the shared engine of `servebench bench`): a concurrency sweep of the
//! fixed-sequence random workload against an OpenAI-compatible endpoint, or against the embedded
//! simulator when no endpoint is given.
//!
//! Per point: build the dataset (seed 0, 10 × conc prompts), warm up (2 × conc copies of prompt
//! 0), run the measured phase, compute the metrics and write `DIR/conc<C>/{records.jsonl,
//! result.json, agg.json}`; per sweep `DIR/summary.{json,csv}` and the table.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use servebench_client::{
    run_phase, wait_ready, Api, BodyBuilder, Cancel, ClientCtx, Clock, Compat, Endpoint, Engine,
    Load, Phase, RecordWriterThread, RequestRecord,
};
use servebench_metrics::{
    agg_row, compute, result_json, AggExtra, Identity, ItlMode, PointMetrics, PointOptions,
    PointStatus, RunInfo, SCHEMA_VERSION,
};
use servebench_store::{RunId, RunKind, RunMeta, RunStatus, Store};
use servebench_workload::{
    build_calibrated, build_with_tokenizer, ChatTemplate, Dataset, DatasetSource, LocalTokenizer,
    RandomDatasetConfig,
};

/// Default simulator speedup when `servebench sweep` runs without `--endpoint`.
pub const DEFAULT_SIM_SPEEDUP: f64 = 10.0;

/// Options shared by `sweep` and `bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// Base URL of an OpenAI-compatible engine (http://HOST:PORT). Without it, the embedded
    /// simulator is started on 127.0.0.1 (random port).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Model name sent in requests (default: the first id of GET /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// The model's tokenizer.json (or its directory) for exact client-side prompt lengths.
    /// Without it, prompt lengths are calibrated against the server's /tokenize (or usage).
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// Apply the chat template of tokenizer_config.json (next to --tokenizer) client-side and
    /// send the text to /v1/completions (InferenceX --use-chat-template).
    #[arg(long)]
    pub chat_template: bool,
    /// GPUs serving the endpoint, for per-GPU throughput (default TP × PP × PCP; sets --tp when
    /// --tp is not given).
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Nominal input length (tokens).
    #[arg(long, default_value_t = 1024)]
    pub isl: u32,
    /// Nominal output length (tokens).
    #[arg(long, default_value_t = 1024)]
    pub osl: u32,
    /// Lengths are uniform in [floor(L·r), L] (InferenceX RANDOM_RANGE_RATIO); 0 < r ≤ 1.
    #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
    pub range_ratio: f64,
    /// Measured prompts per point (default 10 × concurrency, with or without --endpoint).
    #[arg(long)]
    pub num_prompts: Option<usize>,
    /// Warmup requests per point, discarded (default 2 × concurrency).
    #[arg(long)]
    pub warmups: Option<usize>,
    /// Dataset seed (numpy-compatible MT19937).
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// API: completions or chat.
    #[arg(long, value_enum, default_value = "completions")]
    pub api: ApiArg,
    /// Engine profile deciding optional request fields: sglang, vllm, trtllm, llama.cpp,
    /// transformers, openai.
    #[arg(long, default_value = "vllm", value_parser = parse_engine)]
    pub engine: Engine,
    /// Counting rules: servebench (MEASUREMENT.md Part 1) or inferencex (its client, exactly;
    /// implies --new-connection-per-request).
    #[arg(long, value_enum, default_value = "servebench")]
    pub compat: CompatArg,
    /// ITL samples: per chunk (default, InferenceX/vLLM) or per token (gap/k for k-token chunks).
    #[arg(long, value_enum, default_value = "chunk")]
    pub itl: ItlArg,
    /// Statistic shown in the table.
    #[arg(long, value_enum, default_value = "mean")]
    pub stat: StatArg,
    /// When the server rejects an optional body field (HTTP 4xx naming it), retry without it
    /// instead of stopping.
    #[arg(long)]
    pub lenient: bool,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 600.0, allow_negative_numbers = true)]
    pub timeout: f64,
    /// How long to wait for the endpoint to answer /health or /v1/models, seconds.
    #[arg(long, default_value_t = 30.0, allow_negative_numbers = true)]
    pub ready_timeout: f64,
    /// Open a new connection for every request (InferenceX transport; TTFT then includes the
    /// connect under --compat inferencex).
    #[arg(long)]
    pub new_connection_per_request: bool,
    /// Open loop: mean request rate (req/s; default: closed loop at the concurrency).
    #[arg(long, allow_negative_numbers = true)]
    pub request_rate: Option<f64>,
    /// Open loop: gamma shape of inter-arrival times (> 0; default 1 = Poisson); needs
    /// --request-rate.
    #[arg(long, allow_negative_numbers = true)]
    pub burstiness: Option<f64>,
    /// Output directory (default servebench-out/<UTC timestamp>). A directory that already
    /// holds a sweep's results (summary.json or conc*/ records) is refused unless --overwrite.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write into an --out directory that already holds a sweep's results, replacing them
    /// (a stored run that pointed there then points at the new files).
    #[arg(long)]
    pub overwrite: bool,
    /// API key sent as `Authorization: Bearer …` (default: $SERVEBENCH_API_KEY, else
    /// $OPENAI_API_KEY; the same for `servebench eval`).
    #[arg(long, env = "SERVEBENCH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Hardware name for the agg row (`hw`; default sim-<gpu> or unknown).
    #[arg(long)]
    pub hw: Option<String>,
    /// Framework for the agg row (default: the engine profile, or `sim`).
    #[arg(long)]
    pub framework: Option<String>,
    /// Precision (fp4, fp8, bf16, …).
    #[arg(long)]
    pub precision: Option<String>,
    /// InferenceX model prefix (`infmax_model_prefix`; default the model name).
    #[arg(long)]
    pub model_prefix: Option<String>,
    /// Tensor-parallel size.
    #[arg(long)]
    pub tp: Option<u32>,
    /// Pipeline-parallel size.
    #[arg(long, default_value_t = 1)]
    pub pp: u32,
    /// Prefill context-parallel size.
    #[arg(long, default_value_t = 1)]
    pub pcp: u32,
    /// Decode context-parallel size (does not multiply GPUs).
    #[arg(long, default_value_t = 1)]
    pub dcp: u32,
    /// Expert-parallel size (does not multiply GPUs).
    #[arg(long, default_value_t = 1)]
    pub ep: u32,
    /// DP attention enabled.
    #[arg(long)]
    pub dp_attn: bool,
    /// Speculative decoding (none, mtp, …).
    #[arg(long, default_value = "none")]
    pub spec_decoding: String,
    /// Engine image for the agg row.
    #[arg(long)]
    pub image: Option<String>,
    /// Catalog config key (recorded as `recipe_fingerprint`).
    #[arg(long)]
    pub config_key: Option<String>,
    /// Simulator only: wall time = modelled time / SPEEDUP; reported times are scaled back to
    /// modelled time (default 10 without --endpoint).
    #[arg(long, allow_negative_numbers = true)]
    pub sim_speedup: Option<f64>,
    /// Simulator only: GPU preset.
    #[arg(long, default_value = "h200")]
    pub sim_gpu: String,
    /// Simulator only: model preset.
    #[arg(long, default_value = "qwen3-8b")]
    pub sim_model: String,
    /// OCI index (multi-arch) digest of --image (`sha256:…`), recorded with the run. Default:
    /// the newest provenance `servebench bump` recorded for --image in the store, if any.
    #[arg(long, value_name = "DIGEST", requires = "image")]
    pub index_digest: Option<String>,
    /// Per-platform (linux/amd64) manifest digest of --image (`sha256:…`), recorded with the run.
    #[arg(long, value_name = "DIGEST", requires = "image")]
    pub platform_digest: Option<String>,
    /// Results store (SQLite) the run and each point are recorded in, as each point finishes.
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
    /// Measure every concurrency N times (stored as N points with the same identity: compare
    /// treats them as repeats and uses their spread); the table shows mean ± sd.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeats: u32,
    /// Write the report of the run at the end (Markdown; HTML when FILE ends in .html; default
    /// DIR/report.md), read back from the store.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub report: Option<Option<PathBuf>>,
    /// Compare with this baseline in the report: a run id, `latest-baseline`, or a baseline
    /// file (docs/compare.md).
    #[arg(long, value_name = "RUN|FILE", requires = "report")]
    pub baseline: Option<String>,
    /// Run an accuracy eval after the throughput points, against the same endpoint or
    /// simulator (the simulator then replays recorded GSM8K solutions: --sim-answers).
    #[arg(long, value_enum, value_name = "TASK")]
    pub eval: Option<EvalTask>,
    /// Eval: requests in flight.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "eval")]
    pub eval_conc: usize,
    /// Eval: only the first N test documents.
    #[arg(long, value_name = "N", alias = "limit", requires = "eval")]
    pub eval_limit: Option<usize>,
    /// Eval: task profile, `inferencex` or `lm-eval` (docs/eval.md).
    #[arg(
        long,
        value_name = "PROFILE",
        default_value = "inferencex",
        requires = "eval"
    )]
    pub eval_profile: servebench_eval::Profile,
    /// Eval: max_tokens per request (default: the profile's).
    #[arg(long, value_name = "N", requires = "eval")]
    pub eval_max_tokens: Option<u32>,
    /// Eval: minimum score for em_strict and em_flexible (default 0.85, or --eval-thresholds).
    #[arg(
        long,
        value_name = "FRACTION",
        requires = "eval",
        allow_negative_numbers = true
    )]
    pub eval_threshold: Option<f64>,
    /// Eval: thresholds.yaml (InferenceX format), looked up by --model-prefix.
    #[arg(long, value_name = "FILE", requires = "eval")]
    pub eval_thresholds: Option<PathBuf>,
    /// Eval: folder with GSM8K test.jsonl, train.jsonl, example_model_solutions.jsonl
    /// (default: $SERVEBENCH_SHARED/data/gsm8k, else ../shared/data/gsm8k).
    #[arg(long, value_name = "DIR", env = "SERVEBENCH_GSM8K_DIR")]
    pub gsm8k_dir: Option<PathBuf>,
    /// Simulator + eval: recorded model whose GSM8K solutions the simulator replays.
    #[arg(long, value_name = "NAME", default_value = servebench_eval::sim_answers::DEFAULT_MODEL)]
    pub sim_answers: String,
}

impl CommonArgs {
    /// `--burstiness`, 1 (Poisson) when not given.
    pub fn burstiness(&self) -> f64 {
        self.burstiness.unwrap_or(1.0)
    }

    /// Validates the numeric and file flags before the simulator or any I/O starts: one line
    /// naming the flag.
    pub fn validate(&self, concs: &[u64]) -> Result<()> {
        if concs.is_empty() || concs.contains(&0) {
            bail!("--conc: concurrencies must be positive integers");
        }
        for (flag, v) in [("--gpus", self.gpus), ("--tp", self.tp)] {
            if v == Some(0) {
                bail!("{flag} must be at least 1");
            }
        }
        for (flag, v) in [
            ("--pp", self.pp),
            ("--pcp", self.pcp),
            ("--dcp", self.dcp),
            ("--ep", self.ep),
        ] {
            if v == 0 {
                bail!("{flag} must be at least 1");
            }
        }
        if self.num_prompts == Some(0) {
            bail!("--num-prompts must be at least 1");
        }
        if self.isl == 0 {
            bail!("--isl must be at least 1 token");
        }
        if self.osl == 0 {
            bail!("--osl must be at least 1 token");
        }
        if !(self.range_ratio > 0.0 && self.range_ratio <= 1.0) {
            bail!("--range-ratio {} is outside (0, 1]", self.range_ratio);
        }
        if let Some(b) = self.burstiness {
            if self.request_rate.is_none() {
                bail!("--burstiness {b} shapes open-loop arrivals: it needs --request-rate");
            }
            if !(b.is_finite() && b > 0.0) {
                bail!("--burstiness {b} must be > 0 (1 = Poisson)");
            }
        }
        if !(self.ready_timeout.is_finite() && self.ready_timeout >= 0.0) {
            bail!("--ready-timeout must be a number of seconds ≥ 0");
        }
        if let Some(s) = self.sim_speedup {
            if !(s.is_finite() && s > 0.0) {
                bail!("--sim-speedup must be > 0");
            }
        }
        if self.eval_limit == Some(0) {
            bail!("--eval-limit must be at least 1");
        }
        if let Some(f) = &self.eval_thresholds {
            if !f.is_file() {
                bail!(
                    "cannot read thresholds file {} (--eval-thresholds): no such file",
                    f.display()
                );
            }
        }
        if self.eval.is_some()
            && self.endpoint.is_none()
            && !servebench_eval::sim_answers::MODELS.contains(&self.sim_answers.as_str())
        {
            bail!(
                "unknown --sim-answers model {:?} (recorded models: {})",
                self.sim_answers,
                servebench_eval::sim_answers::MODELS.join(", ")
            );
        }
        Ok(())
    }
}

/// `--eval`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalTask {
    /// GSM8K, scored as lm-evaluation-harness does (docs/eval.md).
    Gsm8k,
}

fn parse_engine(s: &str) -> std::result::Result<Engine, String> {
    Engine::parse(s)
}

/// `--api`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiArg {
    /// /v1/completions
    Completions,
    /// /v1/chat/completions
    Chat,
}

/// `--compat`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompatArg {
    /// MEASUREMENT.md Part 1.
    Servebench,
    /// InferenceX benchmark_serving.py counting.
    Inferencex,
}

/// `--itl`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItlArg {
    /// One sample per chunk gap.
    Chunk,
    /// k samples of gap/k for a k-token chunk.
    PerToken,
}

/// `--stat`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatArg {
    /// Mean.
    Mean,
    /// Median.
    Median,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
}

impl StatArg {
    fn key(self) -> &'static str {
        match self {
            StatArg::Mean => "mean",
            StatArg::Median => "median",
            StatArg::P90 => "p90",
            StatArg::P99 => "p99",
        }
    }
}

/// Arguments of `servebench sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Concurrencies to sweep, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8,16")]
    pub conc: Vec<u64>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `servebench sweep`.
pub fn run(args: Args) -> Result<ExitCode> {
    run_points(args.common, args.conc, RunKind::Sweep)
}

/// One finished point.
struct PointDone {
    conc: u64,
    metrics: PointMetrics,
    agg: Value,
}

/// Runs the given concurrencies (shared by `sweep` and `bench`, recorded as a run of `kind`).
pub fn run_points(common: CommonArgs, concs: Vec<u64>, kind: RunKind) -> Result<ExitCode> {
    common.validate(&concs)?;
    let mut common = common;
    common.api_key = api_key_or_env(common.api_key.take());
    if let Some(url) = &common.endpoint {
        let base = normalise_base_url(url);
        if &base != url {
            println!("--endpoint {url}: using the base URL {base} (servebench adds /v1/… itself)");
            common.endpoint = Some(base);
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(common, concs, kind))
}

/// `--api-key`, else `$SERVEBENCH_API_KEY` (clap reads it), else `$OPENAI_API_KEY`; empty
/// values count as unset.
pub(crate) fn api_key_or_env(flag: Option<String>) -> Option<String> {
    flag.filter(|k| !k.is_empty()).or_else(|| {
        std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())
    })
}

/// The base URL of an endpoint: trailing slashes and a trailing `/v1` removed
/// (`http://h:8000/v1/` → `http://h:8000`), since every path servebench calls (`/v1/…`,
/// `/tokenize`, `/health`) is relative to the server root.
pub(crate) fn normalise_base_url(url: &str) -> String {
    let t = url.trim_end_matches('/');
    t.strip_suffix("/v1")
        .unwrap_or(t)
        .trim_end_matches('/')
        .to_string()
}

/// Table numbers: thousands separators, fixed decimals (the report crate's formatter), `-` for
/// a missing value.
fn fmt_num(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    servebench_report::format::fmt_fixed_dp(x, decimals)
}

struct Target {
    endpoint: Endpoint,
    sim: Option<servebench_sim::SimServer>,
    sim_speedup: f64,
    sim_describe: Option<String>,
}

async fn served_model(ep: &Endpoint) -> Option<String> {
    let r = servebench_client::http::simple_request(
        ep,
        http_method_get(),
        "/v1/models",
        None,
        Duration::from_secs(10),
    )
    .await
    .ok()?;
    let v: Value = serde_json::from_slice(&r.body).ok()?;
    v.pointer("/data/0/id")
        .and_then(|x| x.as_str())
        .map(str::to_string)
}

fn http_method_get() -> servebench_client::http::Method {
    servebench_client::http::Method::GET
}

async fn run_async(c: CommonArgs, concs: Vec<u64>, kind: RunKind) -> Result<ExitCode> {
    if c.timeout <= 0.0 || !c.timeout.is_finite() {
        bail!("--timeout must be a positive number of seconds");
    }
    if let Some(r) = c.request_rate {
        if !(r.is_finite() && r > 0.0) {
            bail!("--request-rate must be > 0 (omit it for a closed loop)");
        }
    }
    if c.chat_template && c.api == ApiArg::Chat {
        bail!("--chat-template applies the template client-side for --api completions; with --api chat the server applies its own");
    }
    if c.chat_template && c.tokenizer.is_none() {
        bail!("--chat-template needs --tokenizer (the template comes from tokenizer_config.json next to it)");
    }
    let (compat, _, itl_mode) = modes(&c);
    if compat == Compat::InferenceX && itl_mode == ItlMode::Token {
        bail!("--itl per-token is not an InferenceX statistic; use --compat servebench");
    }
    check_store_args(&c)?;
    // The store is opened (and created) before anything runs: a bad --db fails here, in one line.
    let store = if c.no_store {
        None
    } else {
        Some(servebench_store::Store::open(&c.db).with_context(|| {
            format!(
                "results store {} (choose another with --db PATH, or skip it with --no-store)",
                c.db.display()
            )
        })?)
    };
    if let (Some(b), true) = (&c.baseline, store.is_some()) {
        check_baseline(b, &c.db)?;
    }
    if let Some(d) = &c.out {
        check_out_dir(d, c.overwrite)?;
    }
    let (out_dir, created) = match &c.out {
        Some(d) => {
            let existed = d.exists();
            std::fs::create_dir_all(d)
                .with_context(|| format!("cannot create output directory {}", d.display()))?;
            (d.clone(), !existed)
        }
        None => (new_default_out_dir()?, true),
    };
    let c_out_is_default = c.out.is_none();
    let result = measure(c, concs, kind, store, out_dir.clone()).await;
    if result.is_err() && created && !holds_results(&out_dir) {
        // failed before the first point: leave no empty output directory behind
        let _ = std::fs::remove_dir_all(&out_dir);
        if c_out_is_default {
            // and no empty servebench-out/ either (remove_dir fails when it holds anything)
            let _ = std::fs::remove_dir(out_dir.parent().unwrap_or(Path::new("servebench-out")));
        }
    }
    result
}

/// The counting rules, API and ITL mode the flags choose.
fn modes(c: &CommonArgs) -> (Compat, Api, ItlMode) {
    let compat = match c.compat {
        CompatArg::Servebench => Compat::Servebench,
        CompatArg::Inferencex => Compat::InferenceX,
    };
    let api = match c.api {
        ApiArg::Completions => Api::Completions,
        ApiArg::Chat => Api::Chat,
    };
    let itl_mode = match c.itl {
        ItlArg::Chunk => ItlMode::Chunk,
        ItlArg::PerToken => ItlMode::Token,
    };
    (compat, api, itl_mode)
}

/// Whether `dir` holds a sweep's results: `summary.json`, or a `conc*` directory with files.
fn holds_results(dir: &Path) -> bool {
    if dir.join("summary.json").exists() {
        return true;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("conc")
            && e.path().is_dir()
            && std::fs::read_dir(e.path()).is_ok_and(|mut r| r.next().is_some())
    })
}

/// Refuses an `--out` directory that already holds a sweep's results (the store's earlier run
/// still points there), unless `--overwrite`, which is said once.
fn check_out_dir(dir: &Path, overwrite: bool) -> Result<()> {
    if !holds_results(dir) {
        return Ok(());
    }
    if !overwrite {
        bail!(
            "--out {}: already holds a sweep's results (summary.json or conc*/records.jsonl); choose another directory, omit --out for a new timestamped one, or pass --overwrite to replace them",
            dir.display()
        );
    }
    eprintln!(
        "warning: --overwrite: replacing the earlier results in {}",
        dir.display()
    );
    Ok(())
}

/// Everything after the output directory exists: target, preflight, points, eval, summary.
async fn measure(
    c: CommonArgs,
    concs: Vec<u64>,
    kind: RunKind,
    mut store: Option<Store>,
    out_dir: PathBuf,
) -> Result<ExitCode> {
    let (compat, api, itl_mode) = modes(&c);
    // The simulator replays recorded GSM8K solutions when the sweep runs the eval against it.
    let answers: Option<Arc<dyn servebench_sim::AnswerBook>> =
        match (c.eval, c.endpoint.is_none()) {
            (Some(EvalTask::Gsm8k), true) => Some(Arc::new(
                servebench_eval::sim_answers::load_from(&c.sim_answers, c.gsm8k_dir.as_deref())?,
            )),
            _ => None,
        };

    // ---- target: endpoint or simulator ----
    let target = match &c.endpoint {
        Some(url) => {
            if c.sim_speedup.is_some() {
                bail!("--sim-speedup applies only to the embedded simulator (no --endpoint)");
            }
            if url.to_ascii_lowercase().starts_with("https://") {
                bail!("--endpoint {url}: https is not supported: the measuring client speaks plain http:// only (no TLS yet); reach the engine over http:// (e.g. an SSH tunnel or its plain port)");
            }
            let ep = Endpoint::parse(url)?;
            wait_ready(&ep, Duration::from_secs_f64(c.ready_timeout.max(0.0))).await?;
            Target {
                endpoint: ep,
                sim: None,
                sim_speedup: 1.0,
                sim_describe: None,
            }
        }
        None => {
            let speedup = c.sim_speedup.unwrap_or(DEFAULT_SIM_SPEEDUP);
            let opts = servebench_sim::SimOptions {
                gpu: c.sim_gpu.clone(),
                model: c.sim_model.clone(),
                tp: c.tp.or(c.gpus).unwrap_or(1),
                speedup,
                emission_log: Some(out_dir.join("sim-emission.jsonl")),
                answers: answers.clone(),
                ..Default::default()
            };
            let sim = servebench_sim::SimServer::start(opts).await?;
            let ep = Endpoint::parse(&sim.base_url())?;
            let d = sim.describe();
            println!(
                "no --endpoint: started the embedded simulator at {}",
                sim.base_url()
            );
            println!("  {d}");
            println!(
                "  wall time = modelled time / {speedup}; the numbers below are scaled back to modelled time (latency ×{speedup}, throughput ÷{speedup})"
            );
            Target {
                endpoint: ep,
                sim: Some(sim),
                sim_speedup: speedup,
                sim_describe: Some(d),
            }
        }
    };
    let is_sim = target.sim.is_some();
    let model = match &c.model {
        Some(m) => m.clone(),
        None => served_model(&target.endpoint).await.ok_or_else(|| {
            anyhow::anyhow!(
                "{}/v1/models lists no model; pass --model NAME",
                target.endpoint.base_url
            )
        })?,
    };

    // ---- tokenizer ----
    let tokenizer: Option<Arc<LocalTokenizer>> = match &c.tokenizer {
        Some(p) => Some(Arc::new(LocalTokenizer::from_path(p)?)),
        None => None,
    };
    let template: Option<Arc<ChatTemplate>> = if c.chat_template {
        let tp = c.tokenizer.as_ref().expect("checked above");
        let dir = if tp.is_dir() {
            tp.clone()
        } else {
            tp.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        Some(Arc::new(ChatTemplate::from_tokenizer_config(
            &dir.join("tokenizer_config.json"),
        )?))
    } else {
        None
    };
    if tokenizer.is_none() {
        println!(
            "no --tokenizer: prompt lengths are calibrated against the server's tokenizer ({}/tokenize, else usage.prompt_tokens)",
            target.endpoint.base_url
        );
    }

    // ---- identity ----
    let tp = c.tp.or(c.gpus).unwrap_or(1);
    let identity = Identity {
        hw: c.hw.clone().unwrap_or_else(|| {
            if is_sim {
                format!("sim-{}", c.sim_gpu)
            } else {
                "unknown".into()
            }
        }),
        image: c.image.clone().unwrap_or_else(|| {
            if is_sim {
                "servebench-sim".into()
            } else {
                "unknown".into()
            }
        }),
        model: model.clone(),
        infmax_model_prefix: c.model_prefix.clone().unwrap_or_else(|| model.clone()),
        framework: c.framework.clone().unwrap_or_else(|| {
            if is_sim {
                "sim".into()
            } else {
                c.engine.name().into()
            }
        }),
        precision: c.precision.clone().unwrap_or_else(|| {
            if is_sim {
                "bf16".into()
            } else {
                "unknown".into()
            }
        }),
        spec_decoding: c.spec_decoding.clone(),
        disagg: false,
        recipe_fingerprint: c.config_key.clone(),
        isl: Some(c.isl),
        osl: Some(c.osl),
        tp,
        pp: c.pp,
        dcp_size: c.dcp,
        pcp_size: c.pcp,
        ep: c.ep,
        dp_attention: c.dp_attn,
    };
    if let Some(g) = c.gpus {
        if c.tp.is_some() && g != identity.num_gpus() {
            bail!(
                "--gpus {g} disagrees with TP×PP×PCP = {} (InferenceX per-GPU divisor); drop one of them",
                identity.num_gpus()
            );
        }
    }

    let mut builder = BodyBuilder::new(&model, api, c.engine, compat, itl_mode == ItlMode::Token);
    let clock = Clock::start();
    let base_ctx = ClientCtx {
        endpoint: target.endpoint.clone(),
        builder: builder.clone(),
        compat,
        new_connection_per_request: c.new_connection_per_request || compat == Compat::InferenceX,
        timeout: Duration::from_secs_f64(c.timeout),
        clock,
        capture_text: false,
        api_key: c.api_key.clone(),
    };

    // ---- preflight: body accepted? ----
    preflight(&base_ctx, &mut builder, c.lenient).await?;
    let base_ctx = ClientCtx {
        builder,
        ..base_ctx
    };

    // ---- the run in the store (status `running` until the end) ----
    let mut recorder = match store.take() {
        Some(st) => Some(Recorder::start(
            st,
            &c.db,
            run_meta(kind, &c, &target, &model, &identity, &concs, &out_dir),
            &c,
        )?),
        None => None,
    };

    // ---- Ctrl-C ----
    let (cancel_handle, cancel) = servebench_client::cancel_pair();
    let cancel_handle = Arc::new(cancel_handle);
    // Ctrl-C during the points cancels the point; during `--eval` it stops the eval instead
    let eval_interrupt = servebench_eval::Interrupt::new();
    let in_eval = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let h = cancel_handle.clone();
        let ei = eval_interrupt.clone();
        let in_eval = in_eval.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                if in_eval.load(std::sync::atomic::Ordering::SeqCst) {
                    eprintln!("\ninterrupted: stopping eval gsm8k; its result.json covers the samples finished so far (marked partial); the throughput points are complete");
                    ei.trigger();
                } else {
                    eprintln!("\ninterrupted: finishing the files for what was measured (point marked partial)");
                }
                h.cancel();
            }
        });
    }

    let tty = std::io::stderr().is_terminal();
    let started = chrono::Utc::now();
    let repeats = c.repeats;
    let mut done: Vec<PointDone> = Vec::new();
    let mut dataset_lines: Vec<String> = Vec::new();
    let mut eval_done: Option<servebench_eval::EvalResult> = None;
    let mut eval_error: Option<String> = None;
    // Everything from here on belongs to the stored run: an error marks it failed.
    let measured: Result<()> = async {
    for &conc in &concs {
        if cancel.is_cancelled() {
            break;
        }
        let num_prompts = c.num_prompts.unwrap_or(10 * conc as usize);
        let num_warmups = c.warmups.unwrap_or(2 * conc as usize);
        let cfg = RandomDatasetConfig {
            input_len: c.isl,
            output_len: c.osl,
            range_ratio: c.range_ratio,
            num_prompts,
            seed: c.seed,
        };
        let dataset = build_dataset(
            &cfg,
            tokenizer.clone(),
            template.clone(),
            &target.endpoint,
            &model,
        )
        .await?;
        dataset_lines.push(format!("conc {conc}: {}", dataset.describe()));
        if done.is_empty() {
            println!("{}", dataset.describe());
        }
        for repeat in 1..=repeats {
        if cancel.is_cancelled() {
            break;
        }
        let point_dir = out_dir.join(point_dir_name(conc, repeat, repeats));
        let label = point_label(conc, repeat, repeats);
        std::fs::create_dir_all(&point_dir)
            .with_context(|| format!("cannot create {}", point_dir.display()))?;
        let writer = RecordWriterThread::spawn(&point_dir.join("records.jsonl"))?;
        let load = match c.request_rate {
            // against the simulator the rate is in modelled time: wall rate = rate × speedup
            Some(rate) => Load::Open {
                rate: rate * target.sim_speedup,
                burstiness: c.burstiness(),
                max_concurrency: Some(conc as usize),
                seed: u64::from(c.seed),
            },
            None => Load::Closed {
                concurrency: conc as usize,
            },
        };

        // warmup
        if num_warmups > 0 {
            let bar = progress(tty, num_warmups as u64, &format!("{label} warmup"));
            let sink = sink(writer.sender(), bar.clone());
            let r = run_phase(
                base_ctx.clone(),
                Phase::Warmup,
                Box::new(DatasetSource::new(dataset.warmup_requests(num_warmups))),
                Load::Closed {
                    concurrency: conc as usize,
                },
                sink,
                cancel.clone(),
            )
            .await;
            bar.finish_and_clear();
            let failed = r.records.iter().filter(|r| !r.success).count();
            if failed > 0 && !tty {
                eprintln!(
                    "{label}: warmup: {failed} of {} requests failed",
                    r.records.len()
                );
            }
        }
        if cancel.is_cancelled() {
            break;
        }

        // measured
        let bar = progress(tty, num_prompts as u64, &label);
        let wall_start = chrono::Utc::now();
        let res = run_phase(
            base_ctx.clone(),
            Phase::Measured,
            Box::new(DatasetSource::new(dataset.requests())),
            load,
            sink(writer.sender(), bar.clone()),
            cancel.clone(),
        )
        .await;
        bar.finish_and_clear();
        let wall_end = chrono::Utc::now();
        writer.finish()?;
        let mut m = compute(
            &res.records,
            &PointOptions {
                compat,
                itl_mode,
                phase_window_ns: (res.start_ns, res.end_ns),
                max_failed_fraction: 0.05,
                cancelled: res.cancelled,
            },
        );
        m.rescale_time(target.sim_speedup);
        let extra = AggExtra {
            benchmark_type: "single_turn".into(),
            api: api.as_str().into(),
            engine: c.engine.name().into(),
            endpoint: target.endpoint.base_url.clone(),
            records_file: "records.jsonl".into(),
        };
        let agg = agg_row(&identity, Some(conc), &m, &extra);
        let info = RunInfo {
            date: wall_start.format("%Y%m%d-%H%M%S").to_string(),
            backend: match (api, c.engine) {
                (Api::Chat, _) => "openai-chat".into(),
                (Api::Completions, Engine::Vllm) => "vllm".into(),
                _ => "openai".into(),
            },
            model_id: model.clone(),
            tokenizer_id: match &dataset.token_source {
                servebench_workload::TokenCountSource::LocalTokenizer(p) => p.clone(),
                servebench_workload::TokenCountSource::Server(d) => format!("server: {d}"),
            },
            num_prompts: num_prompts as u64,
            request_rate: c.request_rate,
            burstiness: c.burstiness(),
            max_concurrency: Some(conc),
            benchmark_start_time_unix: wall_start.timestamp_micros() as f64 / 1e6,
            benchmark_end_time_unix: wall_end.timestamp_micros() as f64 / 1e6,
        };
        let block = json!({
            "schema_version": SCHEMA_VERSION,
            "compat": compat.as_str(),
            "itl_mode": itl_mode.as_str(),
            "api": api.as_str(),
            "engine": c.engine.name(),
            "endpoint": target.endpoint.base_url,
            "request_fields": base_ctx.builder.sent_optional(),
            "new_connection_per_request": base_ctx.new_connection_per_request,
            "point_status": m.point_status.as_str(),
            "num_requests_failed": m.failed,
            "failure_reasons": m.failure_reasons,
            "cancelled_requests": m.cancelled,
            "num_warmups": num_warmups,
            "dataset": dataset.describe(),
            "mean_isl": m.mean_isl,
            "mean_isl_server": m.mean_isl_server,
            "mean_osl": m.mean_osl,
            "ttfo_ms": m.ttfo,
            "queue_ms": m.queue,
            "peak_concurrency": m.peak_concurrency,
            "redials": m.redials,
            "itl_token_split_unknown": m.itl_token_split_unknown,
            "warnings": m.warnings,
            "simulator": target.sim_describe.as_ref().map(|d| json!({"describe": d, "speedup": target.sim_speedup})),
            "time_scale": target.sim_speedup,
            "records_file": "records.jsonl",
            "repeat": repeat,
            "repeats": repeats,
        });
        let raw = result_json(&info, &m, block);
        write_json(&point_dir.join("result.json"), &raw)?;
        write_json(&point_dir.join("agg.json"), &agg)?;
        // stored as soon as it is measured: a crash later keeps it
        if let Some(r) = recorder.as_mut() {
            r.add_point(&label, &agg);
        }
        let status = m.point_status;
        println!(
            "{label}: {} ok, {} failed{} in {:.1} s wall, peak {} in flight{}",
            m.completed,
            m.failed,
            if m.failure_reasons.is_empty() {
                String::new()
            } else {
                format!(" {:?}", m.failure_reasons)
            },
            (res.end_ns.saturating_sub(res.start_ns)) as f64 / 1e9,
            m.peak_concurrency,
            match status {
                PointStatus::Ok => String::new(),
                PointStatus::Failed => "  → POINT FAILED (more than 5 % of requests failed)".into(),
                PointStatus::Partial => "  → partial (interrupted)".into(),
            }
        );
        for w in &m.warnings {
            println!("  warning: {w}");
        }
        done.push(PointDone {
            conc,
            metrics: m,
            agg,
        });
        }
    }

    // ---- eval: same endpoint or simulator, after the throughput points ----
    if let (Some(EvalTask::Gsm8k), false) = (c.eval, cancel.is_cancelled()) {
        let mut opts = eval_options(&c, &target, &model, &identity, &out_dir, tty);
        opts.interrupt = eval_interrupt.clone();
        in_eval.store(true, std::sync::atomic::Ordering::SeqCst);
        println!(
            "eval gsm8k: {} documents at concurrency {} against {}",
            opts.limit.map_or("1,319".to_string(), |l| l.to_string()),
            opts.conc,
            if is_sim { "the same simulator" } else { "the same endpoint" }
        );
        match servebench_eval::run_gsm8k(opts).await {
            Ok(r) => {
                // a partial (interrupted) score is not a gate result: not stored
                if let (Some(rec), false) = (recorder.as_mut(), r.interrupted) {
                    rec.add_eval(&eval_store_row(&r, Some(&identity.image)));
                }
                eval_done = Some(r);
            }
            Err(e) => {
                eprintln!("error: eval gsm8k: {e:#}");
                eval_error = Some(format!("{e:#}"));
            }
        }
    }

    // ---- summary ----
    let summary = json!({
        "schema_version": SCHEMA_VERSION,
        "tool": format!("servebench {}", env!("CARGO_PKG_VERSION")),
        "started": started.to_rfc3339(),
        "finished": chrono::Utc::now().to_rfc3339(),
        "endpoint": target.endpoint.base_url,
        "model": model,
        "api": api.as_str(),
        "engine": c.engine.name(),
        "compat": compat.as_str(),
        "itl_mode": itl_mode.as_str(),
        "isl": c.isl,
        "osl": c.osl,
        "range_ratio": c.range_ratio,
        "seed": c.seed,
        "concurrencies": concs,
        "request_rate": c.request_rate,
        "burstiness": c.burstiness(),
        "datasets": dataset_lines,
        "simulator": target.sim_describe.as_ref().map(|d| json!({"describe": d, "speedup": target.sim_speedup})),
        "interrupted": cancel.is_cancelled(),
        "repeats": repeats,
        "store": recorder.as_ref().map(|r| json!({"db": r.db.display().to_string(), "run_id": r.run.0})),
        "points": done.iter().map(|p| p.agg.clone()).collect::<Vec<_>>(),
        "notes": table_notes(&done, repeats),
    });
    write_json(&out_dir.join("summary.json"), &summary)?;
    write_csv(&out_dir.join("summary.csv"), &done)?;
    Ok(())
    }
    .await;

    // ---- the run's status in the store ----
    let status = run_status(
        &done,
        cancel.is_cancelled(),
        measured.is_err(),
        eval_error.is_some(),
    );
    if let Some(r) = recorder.as_mut() {
        r.finish(status);
    }
    if let Err(e) = measured {
        if let Some(sim) = target.sim {
            sim.shutdown().await;
        }
        return Err(e);
    }

    print_table(&done, c.stat, itl_mode, compat, repeats);
    if let Some(r) = &eval_done {
        println!();
        print!("{}", servebench_eval::render_summary(r));
        if is_sim {
            println!(
                "note: the simulator replayed the recorded GSM8K solutions of {}: the score is that model's, not a measurement of the simulated engine",
                c.sim_answers
            );
        }
    }
    if let Some(sim) = target.sim {
        sim.shutdown().await;
    }

    // ---- report, read back from the store ----
    let mut report_failed = false;
    if let (Some(file), Some(r)) = (&c.report, recorder.as_ref()) {
        let path = file.clone().unwrap_or_else(|| out_dir.join("report.md"));
        match write_report(&path, &r.db, r.run, c.baseline.as_deref(), c.stat) {
            Ok(()) => println!("report: {}", path.display()),
            Err(e) => {
                eprintln!("error: report: {e:#}");
                report_failed = true;
            }
        }
    }
    println!("results: {}", out_dir.display());
    if let Some(r) = &recorder {
        println!(
            "run: {} (store {}, status {})",
            r.run,
            r.db.display(),
            status.as_str()
        );
    }
    let store_failed = recorder.as_ref().is_some_and(|r| r.errors > 0);
    if cancel.is_cancelled() {
        return Ok(ExitCode::from(130));
    }
    if done
        .iter()
        .any(|p| p.metrics.point_status != PointStatus::Ok)
        || eval_error.is_some()
        || report_failed
        || store_failed
    {
        return Ok(ExitCode::from(1));
    }
    if eval_done.as_ref().is_some_and(|r| !r.gate.pass) {
        return Ok(ExitCode::from(EXIT_EVAL_GATE));
    }
    Ok(ExitCode::SUCCESS)
}

/// Exit status of a sweep whose eval ran but missed its threshold (as `servebench eval`).
pub const EXIT_EVAL_GATE: u8 = 2;

/// `servebench-out/<UTC timestamp>`, created atomically: a second sweep started in the same
/// second (two processes writing one store) gets `<timestamp>-2`, `-3`, … instead of sharing it.
fn new_default_out_dir() -> Result<PathBuf> {
    let base = PathBuf::from("servebench-out");
    std::fs::create_dir_all(&base)
        .with_context(|| format!("cannot create output directory {}", base.display()))?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    for k in 1..1000 {
        let d = if k == 1 {
            base.join(&stamp)
        } else {
            base.join(format!("{stamp}-{k}"))
        };
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create output directory {}", d.display()))
            }
        }
    }
    bail!(
        "{}: 999 output directories for {stamp} already exist; pass --out DIR",
        base.display()
    )
}

/// Point directory under the output directory: `conc<C>`, or `conc<C>-r<k>` with `--repeats`.
fn point_dir_name(conc: u64, repeat: u32, repeats: u32) -> String {
    if repeats <= 1 {
        format!("conc{conc}")
    } else {
        format!("conc{conc}-r{repeat}")
    }
}

/// How a point is named in progress lines: `conc 4`, or `conc 4 repeat 2/3`.
fn point_label(conc: u64, repeat: u32, repeats: u32) -> String {
    if repeats <= 1 {
        format!("conc {conc}")
    } else {
        format!("conc {conc} repeat {repeat}/{repeats}")
    }
}

fn check_digest(flag: &str, d: &str) -> Result<()> {
    let ok = d
        .strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !ok {
        bail!("{flag} {d:?}: expected sha256:<64 hex digits>");
    }
    Ok(())
}

/// Validates the store / report / eval / repeats flags before anything starts.
fn check_store_args(c: &CommonArgs) -> Result<()> {
    if c.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    if let Some(d) = &c.index_digest {
        check_digest("--index-digest", d)?;
    }
    if let Some(d) = &c.platform_digest {
        check_digest("--platform-digest", d)?;
    }
    if c.no_store && c.report.is_some() {
        bail!("--report reads the run back from the results store; drop --no-store (or run `servebench report DIR/summary.json` afterwards)");
    }
    if let Some(Some(p)) = &c.report {
        if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !parent.is_dir() {
                bail!(
                    "--report {}: directory {} does not exist",
                    p.display(),
                    parent.display()
                );
            }
        }
    }
    if c.eval_conc == 0 {
        bail!("--eval-conc must be at least 1");
    }
    if let Some(t) = c.eval_threshold {
        if !(0.0..=1.0).contains(&t) {
            bail!("--eval-threshold {t} is outside [0, 1]");
        }
    }
    Ok(())
}

/// Loads `--baseline` once before measuring, so a missing run or a bad file fails in seconds,
/// not after the sweep.
fn check_baseline(baseline: &str, db: &Path) -> Result<()> {
    super::compare::load_side(db, baseline)
        .map(|_| ())
        .with_context(|| format!("--baseline {baseline}"))
}

/// The run's metadata for the store.
#[allow(clippy::too_many_arguments)]
fn run_meta(
    kind: RunKind,
    c: &CommonArgs,
    target: &Target,
    model: &str,
    identity: &Identity,
    concs: &[u64],
    out_dir: &Path,
) -> RunMeta {
    let mut m = RunMeta::new(kind);
    m.endpoint = Some(match &target.sim_describe {
        Some(d) => format!("embedded simulator: {d}"),
        None => target.endpoint.base_url.clone(),
    });
    m.image = Some(identity.image.clone());
    m.index_digest = c.index_digest.clone();
    m.platform_digest = c.platform_digest.clone();
    m.config_key = c.config_key.clone();
    m.topology = Some(servebench_report::words::topology_label(
        identity.tp,
        identity.ep,
    ));
    m.workload = Some(servebench_report::words::workload_label(
        Some(c.isl),
        Some(c.osl),
        false,
    ));
    m.out_dir = Some(std::fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.to_path_buf()));
    m.meta = json!({
        "model": model,
        "model_prefix": identity.infmax_model_prefix,
        "hw": identity.hw,
        "framework": identity.framework,
        "precision": identity.precision,
        "spec_decoding": identity.spec_decoding,
        "tp": identity.tp,
        "ep": identity.ep,
        "pp": identity.pp,
        "dp_attention": identity.dp_attention,
        "num_gpus": identity.num_gpus(),
        "api": match c.api { ApiArg::Completions => "completions", ApiArg::Chat => "chat" },
        "engine": c.engine.name(),
        "compat": match c.compat { CompatArg::Servebench => "servebench", CompatArg::Inferencex => "inferencex" },
        "isl": c.isl,
        "osl": c.osl,
        "range_ratio": c.range_ratio,
        "seed": c.seed,
        "num_prompts": c.num_prompts,
        "concurrencies": concs,
        "repeats": c.repeats,
        "request_rate": c.request_rate,
        "burstiness": c.burstiness(),
        "endpoint_url": target.endpoint.base_url,
        "simulator": target.sim_describe.as_ref().map(|d| json!({"describe": d, "speedup": target.sim_speedup})),
        "eval": c.eval.map(|_| json!({"task": "gsm8k", "conc": c.eval_conc, "limit": c.eval_limit})),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
    });
    m
}

/// The run being recorded in the results store: points and eval rows are added as they
/// finish; store errors are reported (and make the exit status 1) but never stop measuring.
struct Recorder {
    store: Store,
    run: RunId,
    db: PathBuf,
    errors: u32,
}

impl Recorder {
    /// Records the run (status `running`) and its image provenance: `--index-digest` /
    /// `--platform-digest`, else the newest resolved provenance `servebench bump` stored for
    /// `--image`.
    fn start(mut store: Store, db: &Path, mut meta: RunMeta, c: &CommonArgs) -> Result<Recorder> {
        let mut facts: Vec<(String, String)> = Vec::new();
        if let Some(image) = &c.image {
            if c.index_digest.is_some() || c.platform_digest.is_some() {
                facts.push(("image.provenance".into(), "command-line flags".into()));
            } else if let Some(p) = store.resolved_image_provenance(image)? {
                let pv = &p.provenance;
                meta.index_digest = pv.index_digest.clone();
                meta.platform_digest = pv.amd64_digest().map(str::to_string);
                facts.push((
                    "image.provenance".into(),
                    format!(
                        "store image_provenance {} recorded {} ({})",
                        p.id, p.recorded_at, pv.source
                    ),
                ));
                for (plat, d) in &pv.platform_digests {
                    facts.push((format!("image.platform_digest.{plat}"), d.clone()));
                }
                for (k, v) in &pv.labels {
                    facts.push((format!("image.label.{k}"), v.clone()));
                }
                if let Some(t) = &pv.image_created {
                    facts.push(("image.created".into(), t.clone()));
                }
                println!(
                    "image {image}: digests from the store (recorded by `servebench bump` {})",
                    p.recorded_at
                );
            }
        }
        if let Some(d) = &meta.index_digest {
            facts.push(("image.index_digest".into(), d.clone()));
        }
        if let Some(d) = &meta.platform_digest {
            facts.push(("image.platform_digest".into(), d.clone()));
        }
        let run = store.record_run(&meta)?;
        for (k, v) in &facts {
            store.set_provenance(run, k, v)?;
        }
        Ok(Recorder {
            store,
            run,
            db: db.to_path_buf(),
            errors: 0,
        })
    }

    fn add_point(&mut self, label: &str, row: &Value) {
        if let Err(e) = self.store.add_point(self.run, row) {
            eprintln!(
                "warning: {}: {label} was not stored: {e:#}",
                self.db.display()
            );
            self.errors += 1;
        }
    }

    fn add_eval(&mut self, row: &Value) {
        if let Err(e) = self.store.add_eval(self.run, row) {
            eprintln!(
                "warning: {}: the eval row was not stored: {e:#}",
                self.db.display()
            );
            self.errors += 1;
        }
    }

    fn finish(&mut self, status: RunStatus) {
        if let Err(e) = self.store.finish_run(self.run, status) {
            eprintln!(
                "warning: {}: run {} could not be marked {}: {e:#}",
                self.db.display(),
                self.run,
                status.as_str()
            );
            self.errors += 1;
        }
    }
}

/// The run's final status: `interrupted` (Ctrl-C), `failed` (an error stopped it, or no
/// point is ok), `ok` (every point ok and the eval, if any, ran), else `partial`.
fn run_status(done: &[PointDone], cancelled: bool, errored: bool, eval_error: bool) -> RunStatus {
    let ok = done
        .iter()
        .filter(|p| p.metrics.point_status == PointStatus::Ok)
        .count();
    if cancelled {
        RunStatus::Interrupted
    } else if errored || ok == 0 {
        RunStatus::Failed
    } else if ok == done.len() && !eval_error {
        RunStatus::Ok
    } else {
        RunStatus::Partial
    }
}

/// Eval options for `--eval gsm8k`: the sweep's endpoint (or its simulator, started with the
/// answer book), model and identity; files under `DIR/eval-gsm8k/`; always a fresh run.
fn eval_options(
    c: &CommonArgs,
    target: &Target,
    model: &str,
    identity: &Identity,
    out_dir: &Path,
    tty: bool,
) -> servebench_eval::EvalOptions {
    servebench_eval::EvalOptions {
        endpoint: Some(target.endpoint.base_url.clone()),
        model: Some(model.to_string()),
        api_key: c.api_key.clone(),
        conc: c.eval_conc,
        limit: c.eval_limit,
        profile: c.eval_profile,
        max_tokens: c.eval_max_tokens,
        request_timeout: Duration::from_secs_f64(c.timeout),
        out_dir: out_dir.join("eval-gsm8k"),
        fresh: true,
        data_dir: c.gsm8k_dir.clone(),
        threshold: c.eval_threshold,
        thresholds_file: c.eval_thresholds.clone(),
        meta: servebench_eval::EvalMeta {
            model_prefix: Some(identity.infmax_model_prefix.clone()),
            hw: Some(identity.hw.clone()),
            framework: Some(identity.framework.clone()),
            precision: Some(identity.precision.clone()),
            spec_decoding: Some(identity.spec_decoding.clone()),
            isl: identity.isl,
            osl: identity.osl,
            tp: Some(identity.tp),
            ep: Some(identity.ep),
            dp_attention: Some(identity.dp_attention),
        },
        progress: tty,
        ready_timeout: Some(Duration::from_secs_f64(c.ready_timeout.max(0.0))),
        ..Default::default()
    }
}

/// The stored eval row: InferenceX's eval aggregate row (§4.4) plus the gate outcome
/// (`threshold`, `threshold_source`, `passed`, read by compare) and the image.
pub(crate) fn eval_store_row(r: &servebench_eval::EvalResult, image: Option<&str>) -> Value {
    let mut v = serde_json::to_value(&r.row).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("threshold".into(), json!(r.gate.threshold.value));
        o.insert("threshold_source".into(), json!(r.gate.threshold.source));
        o.insert("passed".into(), json!(r.gate.pass));
        if let Some(i) = image {
            o.insert("image".into(), json!(i));
        }
        o.insert("target".into(), json!(r.target));
    }
    v
}

/// Writes the run's report (Markdown; HTML for `.html`, JSON for `.json`) through
/// `servebench report`'s document builder, optionally against `baseline`.
fn write_report(
    path: &Path,
    db: &Path,
    run: RunId,
    baseline: Option<&str>,
    stat: StatArg,
) -> Result<()> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let format = match ext.as_deref() {
        Some("html") | Some("htm") => servebench_report::Format::Html,
        Some("json") => servebench_report::Format::Json,
        _ => servebench_report::Format::Md,
    };
    let args = super::report::Args {
        run: run.to_string(),
        db: db.to_path_buf(),
        baseline: baseline.map(str::to_string),
        format,
        lang: servebench_report::Lang::EnZh,
        output: Some(path.to_path_buf()),
        stat: servebench_compare::Stat::parse(stat.key())
            .ok_or_else(|| anyhow::anyhow!("statistic {} unknown to compare", stat.key()))?,
        gate: 5.0,
        title_prefix: None,
        target_image: None,
    };
    let doc = super::report::document(&args)?;
    let text = servebench_report::render(&doc, format, args.lang, false);
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Mean and sample standard deviation (n − 1; `None` for one value) of the finite values.
fn mean_sd(xs: &[f64]) -> Option<(f64, Option<f64>)> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.len() > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    Some((mean, sd))
}

async fn build_dataset(
    cfg: &RandomDatasetConfig,
    tokenizer: Option<Arc<LocalTokenizer>>,
    template: Option<Arc<ChatTemplate>>,
    ep: &Endpoint,
    model: &str,
) -> Result<Dataset> {
    let cfg = cfg.clone();
    let ep = ep.clone();
    let model = model.to_string();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || match tokenizer {
        Some(t) => build_with_tokenizer(&cfg, &t, template.as_deref()),
        None => {
            let mut counter =
                servebench_client::tokenize::ServerTokenCounter::new(ep, &model, handle);
            build_calibrated(&cfg, &mut counter)
        }
    })
    .await
    .context("dataset builder panicked")?
}

/// One small request with the run's body shape, before anything is measured: a server that
/// rejects an optional field gets a one-line error naming it (or, with `--lenient`, the field
/// is dropped and the request retried).
async fn preflight(ctx: &ClientCtx, builder: &mut BodyBuilder, lenient: bool) -> Result<()> {
    let spec = servebench_workload::RequestSpec {
        id: 0,
        session: None,
        prompt: servebench_workload::Prompt::Text(Arc::from("Hello")),
        prompt_tokens: None,
        max_tokens: 4,
        delay: Duration::ZERO,
    };
    let url = format!("{}{}", ctx.endpoint.base_url, ctx.builder.api.path());
    for _ in 0..8 {
        let c = ClientCtx {
            builder: builder.clone(),
            timeout: ctx.timeout.min(Duration::from_secs(120)),
            ..ctx.clone()
        };
        let mut slot = None;
        let rec = servebench_client::http::execute(
            &c,
            &mut slot,
            &spec,
            Phase::Warmup,
            c.clock.now_ns(),
            &mut Cancel::never(),
        )
        .await;
        if rec.success {
            return Ok(());
        }
        let err = rec.error.clone().unwrap_or_default();
        let one_line: String = err.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(status) = rec.http_status.filter(|s| (400..500).contains(s)) {
            let fields = servebench_client::unknown_fields_in(&err, &builder.sent_optional());
            if !fields.is_empty() {
                let names = fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if !lenient {
                    bail!(
                        "{url} rejected request field {names} (HTTP {status}: {one_line}); choose an --engine profile without it (e.g. --engine transformers) or pass --lenient to retry without it"
                    );
                }
                eprintln!("warning: {url} rejected {names} (HTTP {status}); --lenient: retrying without it");
                let mut dropped = false;
                for f in fields {
                    dropped |= builder.drop_field(f);
                }
                if dropped {
                    continue;
                }
            }
            bail!("{url}: preflight request failed with HTTP {status}: {one_line}");
        }
        bail!(
            "{url}: preflight request failed ({}): {one_line}",
            rec.failure.unwrap_or_else(|| "unknown".into())
        );
    }
    bail!("{url}: the server kept rejecting request fields")
}

fn progress(tty: bool, len: u64, prefix: &str) -> indicatif::ProgressBar {
    if !tty {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>14} [{bar:30}] {pos}/{len} requests {elapsed_precise}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix(prefix.to_string());
    bar
}

fn sink(
    tx: std::sync::mpsc::Sender<RequestRecord>,
    bar: indicatif::ProgressBar,
) -> servebench_client::RecordSink {
    // records go to the writer thread; nothing here blocks the async workers
    let tx = std::sync::Mutex::new(tx);
    Arc::new(move |r: &RequestRecord| {
        let _ = tx.lock().unwrap_or_else(|p| p.into_inner()).send(r.clone());
        bar.inc(1);
    })
}

fn write_json(path: &Path, v: &Value) -> Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    std::fs::write(path, s).with_context(|| format!("cannot write {}", path.display()))
}

fn write_csv(path: &Path, points: &[PointDone]) -> Result<()> {
    let mut w = String::new();
    let Some(first) = points.first() else {
        std::fs::write(path, "").with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(());
    };
    let keys: Vec<String> = first
        .agg
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    let esc = |s: &str| {
        if s.contains(',') || s.contains('"') || s.contains('\n') {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    w.push_str(&keys.iter().map(|k| esc(k)).collect::<Vec<_>>().join(","));
    w.push('\n');
    for p in points {
        let row: Vec<String> = keys
            .iter()
            .map(|k| match p.agg.get(k) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => esc(s),
                Some(v) => esc(&v.to_string()),
            })
            .collect();
        w.push_str(&row.join(","));
        w.push('\n');
    }
    std::fs::write(path, w).with_context(|| format!("cannot write {}", path.display()))
}

fn print_table(points: &[PointDone], stat: StatArg, itl: ItlMode, compat: Compat, repeats: u32) {
    let key = stat.key();
    println!();
    println!(
        "statistic: {key}; ITL mode: {}; counting: {}{}",
        if itl == ItlMode::Chunk {
            "per chunk"
        } else {
            "per token"
        },
        compat.as_str(),
        if repeats > 1 {
            format!("; {repeats} repeats per concurrency: mean ± sample standard deviation (n − 1) over the repeats")
        } else {
            String::new()
        }
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    t.set_header(vec![
        "Concurrency",
        "Total tok/s/GPU",
        "Output tok/s/GPU",
        "TTFT ms",
        "TPOT ms",
    ]);
    // consecutive points of one concurrency are its repeats
    let mut groups: Vec<&[PointDone]> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let j = points[i..]
            .iter()
            .position(|p| p.conc != points[i].conc)
            .map_or(points.len(), |k| i + k);
        groups.push(&points[i..j]);
        i = j;
    }
    for g in groups {
        let gpus = |p: &PointDone| {
            p.agg
                .get("num_gpus")
                .and_then(|v| v.as_f64())
                .unwrap_or(1.0)
                .max(1.0)
        };
        let cell = |xs: Vec<f64>| match mean_sd(&xs) {
            None => "-".to_string(),
            Some((m, None)) => fmt_num(m, 2),
            Some((m, Some(sd))) if g.len() > 1 => format!("{} ± {}", fmt_num(m, 2), fmt_num(sd, 2)),
            Some((m, Some(_))) => fmt_num(m, 2),
        };
        let mut conc = g[0].conc.to_string();
        let failed = g
            .iter()
            .filter(|p| p.metrics.point_status == PointStatus::Failed)
            .count();
        let partial = g
            .iter()
            .filter(|p| p.metrics.point_status == PointStatus::Partial)
            .count();
        if g.len() == 1 {
            match g[0].metrics.point_status {
                PointStatus::Ok => {}
                PointStatus::Failed => conc.push_str(" (FAILED)"),
                PointStatus::Partial => conc.push_str(" (partial)"),
            }
        } else {
            conc.push_str(&format!(" ×{}", g.len()));
            if failed > 0 {
                conc.push_str(&format!(" ({failed} FAILED)"));
            }
            if partial > 0 {
                conc.push_str(&format!(" ({partial} partial)"));
            }
        }
        t.add_row(vec![
            conc,
            cell(
                g.iter()
                    .map(|p| p.metrics.total_token_throughput / gpus(p))
                    .collect(),
            ),
            cell(
                g.iter()
                    .map(|p| p.metrics.output_throughput / gpus(p))
                    .collect(),
            ),
            cell(g.iter().filter_map(|p| p.metrics.ttft.get(key)).collect()),
            cell(g.iter().filter_map(|p| p.metrics.tpot.get(key)).collect()),
        ]);
    }
    for i in 1..5 {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    println!("{t}");
    for line in table_notes(points, repeats) {
        println!("{line}");
    }
}

/// Note lines under the table for points whose numbers would otherwise mislead silently
/// ([`PointMetrics::notes`]: 0 output tokens under InferenceX counting, TPOT 0 from one read).
fn table_notes(points: &[PointDone], repeats: u32) -> Vec<String> {
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let repeat = if repeats > 1 {
            i as u32 % repeats + 1
        } else {
            1
        };
        for n in &p.metrics.notes {
            out.push(format!(
                "note: {}: {n}",
                point_label(p.conc, repeat, repeats)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fmt_num, normalise_base_url};

    #[test]
    fn base_url_loses_trailing_v1_and_slashes() {
        assert_eq!(normalise_base_url("http://h:8/v1"), "http://h:8");
        assert_eq!(normalise_base_url("http://h:8/v1/"), "http://h:8");
        assert_eq!(normalise_base_url("http://h:8/"), "http://h:8");
        assert_eq!(normalise_base_url("http://h:8"), "http://h:8");
        assert_eq!(
            normalise_base_url("http://h:8/proxy/v1"),
            "http://h:8/proxy"
        );
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(fmt_num(14445.123, 2), "14,445.12");
        assert_eq!(fmt_num(159.68, 2), "159.68");
        assert_eq!(fmt_num(1234567.0, 0), "1,234,567");
        assert_eq!(fmt_num(-1570.11, 2), "-1,570.11");
        assert_eq!(fmt_num(0.5, 2), "0.50");
    }
}
