//! The measuring flags shared by `servebench sweep` and `servebench bench` (not a command):
//! clap parses them, [`CommonArgs::into_plan`] turns them into the pipeline's
//! [`SweepPlan`], which validates and runs them.

use std::path::PathBuf;

use servebench_client::Engine;
use servebench_pipeline::plan::{FixedPlan, IdentityPlan, SimPlan, Workload};
use servebench_pipeline::{EvalTask as PlanEval, SweepPlan};
use servebench_store::RunKind;

use super::measure_enums::parse_engine;
pub use super::measure_enums::{ApiArg, CompatArg, EvalTask, ItlArg, StatArg};

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
    /// Nominal input length, tokens [default: 1024]. Fixed-sequence only, like --osl,
    /// --range-ratio, --num-prompts, --warmups, --seed, --api, --request-rate, --burstiness,
    /// --compat, --itl and --chat-template: refused with --scenario agentx.
    #[arg(long)]
    pub isl: Option<u32>,
    /// Nominal output length, tokens [default: 1024].
    #[arg(long)]
    pub osl: Option<u32>,
    /// Lengths are uniform in [floor(L·r), L] (InferenceX RANDOM_RANGE_RATIO); 0 < r ≤ 1
    /// [default: 0.8].
    #[arg(long, allow_negative_numbers = true)]
    pub range_ratio: Option<f64>,
    /// Measured prompts per point (default 10 × concurrency, with or without --endpoint).
    #[arg(long)]
    pub num_prompts: Option<usize>,
    /// Warmup requests per point, discarded (default 2 × concurrency).
    #[arg(long)]
    pub warmups: Option<usize>,
    /// Dataset seed (numpy-compatible MT19937) [default: 0].
    #[arg(long)]
    pub seed: Option<u32>,
    /// API: completions or chat [default: completions].
    #[arg(long, value_enum)]
    pub api: Option<ApiArg>,
    /// Engine profile deciding optional request fields: sglang, vllm, trtllm, llama.cpp,
    /// transformers, openai.
    #[arg(long, default_value = Engine::DEFAULT_NAME, value_parser = parse_engine)]
    pub engine: Engine,
    /// Counting rules: servebench (MEASUREMENT.md Part 1) or inferencex (its client, exactly;
    /// implies --new-connection-per-request) [default: servebench]. Fixed-sequence only.
    #[arg(long, value_enum)]
    pub compat: Option<CompatArg>,
    /// ITL samples: per chunk (default, InferenceX/vLLM) or per token (gap/k for k-token
    /// chunks). Fixed-sequence only.
    #[arg(long, value_enum)]
    pub itl: Option<ItlArg>,
    /// Statistic shown in the table.
    #[arg(long, value_enum, default_value = "mean")]
    pub stat: StatArg,
    /// When the server rejects an optional body field (HTTP 4xx naming it), retry without it
    /// instead of stopping.
    #[arg(long)]
    pub lenient: bool,
    /// Per-request timeout, seconds of wall-clock time (on the simulator, records show modelled
    /// time, --sim-speedup × longer).
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
    /// Continue a sweep that was interrupted (killed, Ctrl-C) in --out DIR: finished points are
    /// kept, unfinished ones measured again from scratch, the same stored run continued.
    #[arg(long)]
    pub resume: bool,
    /// API key sent as `Authorization: Bearer …` (default: $SERVEBENCH_API_KEY, else
    /// $OPENAI_API_KEY; the same for `servebench eval`).
    #[arg(long, env = "SERVEBENCH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra CA certificates (PEM file) trusted for an `https://` endpoint, besides the
    /// built-in roots (a self-signed or private CA).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
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
    /// modelled time (default 10 without --endpoint). With --endpoint: that endpoint is a
    /// servebench simulator started with --speedup SPEEDUP (as `run --simulate --sim-speedup`).
    #[arg(long, allow_negative_numbers = true)]
    pub sim_speedup: Option<f64>,
    /// Embedded simulator only: `virtual` (default) runs client and simulator in one process
    /// on a discrete-event clock — modelled time, host-independent, byte-reproducible, a 900 s
    /// window in seconds; `wall` plays it back over TCP ÷ --sim-speedup. --sim-speedup has no
    /// meaning on the virtual clock (refused); given alone, or with --eval, it means wall.
    #[arg(long, value_enum, value_name = "CLOCK")]
    pub sim_clock: Option<super::measure_enums::SimClockArg>,
    /// Simulator only: GPU preset.
    #[arg(long, default_value = "h200")]
    pub sim_gpu: String,
    /// Embedded simulator only: a planted regression, every modelled step F times longer.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub sim_slowdown: f64,
    /// Simulator only: model preset.
    #[arg(long, default_value = "qwen3-8b")]
    pub sim_model: String,
    /// Embedded simulator only: max running requests (SGLang --max-running-requests, vLLM
    /// --max-num-seqs) instead of the preset's.
    #[arg(long, value_name = "N")]
    pub sim_max_running_requests: Option<u32>,
    /// Embedded simulator only: context length, tokens (SGLang --context-length, vLLM
    /// --max-model-len) instead of the preset's.
    #[arg(long, value_name = "TOKENS")]
    pub sim_context_length: Option<u32>,
    /// Embedded simulator only: the model name it serves (--served-model-name).
    #[arg(long, value_name = "NAME")]
    pub sim_served_name: Option<String>,
    /// Embedded simulator only: serve a disaggregated fleet (issue 32) instead of one engine
    /// of --tp, as `servebench sim --prefill` does: the prefill workers `WxTP[/epN][/dpa]`.
    #[arg(long, value_name = "WxTP", requires = "sim_decode")]
    pub sim_prefill: Option<String>,
    /// The fleet's decode workers `WxTP[/epN][/dpa]` (`0x…`: aggregated).
    #[arg(long, value_name = "WxTP", requires = "sim_prefill")]
    pub sim_decode: Option<String>,
    /// The fleet's router: `kv` (KV-aware) or `round-robin`.
    #[arg(long, value_name = "POLICY", default_value = "kv")]
    pub sim_router: String,
    /// The fleet's KV transfer fabric: `nvlink` or `rdma` [default: NVLink on GB200/GB300,
    /// else RDMA].
    #[arg(long, value_name = "FABRIC", requires = "sim_prefill")]
    pub sim_fabric: Option<String>,
    /// OCI index (multi-arch) digest of --image (`sha256:…`), recorded with the run. Default:
    /// the newest provenance `servebench bump` recorded for --image in the store, if any.
    #[arg(long, value_name = "DIGEST", requires = "image")]
    pub index_digest: Option<String>,
    /// Per-platform (linux/amd64) manifest digest of --image (`sha256:…`), recorded with the run.
    #[arg(long, value_name = "DIGEST", requires = "image")]
    pub platform_digest: Option<String>,
    /// Results store (a SQLite file, or `postgres://…`; also `DATABASE_URL`) the run and each point are recorded in, as each point finishes.
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
    /// Git branch the run is stored under (`compare --baseline main` takes rows of `main`);
    /// default: the checkout's branch, else `local`.
    #[arg(long, value_name = "NAME", env = "SERVEBENCH_BRANCH")]
    pub branch: Option<String>,
    /// Workload: `fixed` (InferenceX random fixed-sequence; the default), `agentx` (agentic
    /// trace replay of --traces, MEASUREMENT.md Part 2 §5; --conc is then the number of live
    /// sessions) or `multiturn` (chat replay of --conversations). --traces alone implies agentx.
    #[arg(long, value_name = "NAME", value_parser = ["fixed", "agentx", "multiturn"])]
    pub scenario: Option<String>,
    #[command(flatten)]
    pub multiturn: super::measure_enums::MultiturnArgs,
    #[command(flatten)]
    pub power: super::measure_enums::PowerArgs,
    #[command(flatten)]
    pub kv_offload: super::measure_enums::KvOffloadArgs,
    /// AgentX traces: a folder of Weka trace_*.json files or a traces.jsonl (--scenario agentx).
    #[arg(long, value_name = "PATH")]
    pub traces: Option<PathBuf>,
    /// AgentX profiling window per point, seconds [default: 3600, InferenceX's]; under 900 the
    /// point is not a valid InferenceX submission, as InferenceX's harness marks it with
    /// --unsafe-override. AgentX only.
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    pub duration: Option<u64>,
    /// Flush the server's prefix cache before each measured phase (auto: the engine's endpoint;
    /// off; or a path to POST) and report its hit rate per point (docs/measurement.md §12.7).
    /// With --scenario agentx: before each point's warmup, which then primes it.
    #[arg(long, value_name = "auto|off|PATH", value_parser = servebench_pipeline::cache::FlushCache::parse)]
    pub flush_cache: Option<servebench_pipeline::cache::FlushCache>,
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
    /// `--eval` and its flags.
    #[command(flatten)]
    pub eval_args: super::measure_enums::SweepEvalArgs,
}

impl CommonArgs {
    /// The plan for concurrencies `concs`, recorded as a run of `kind`; the API key falls back
    /// to `$OPENAI_API_KEY`.
    ///
    /// # Errors
    /// `--traces` with `--scenario fixed` (one line: the traces would be ignored).
    pub fn into_plan(self, concs: Vec<u64>, kind: RunKind) -> anyhow::Result<SweepPlan> {
        let c = self;
        let fixed_only = [
            ("--isl", c.isl.is_some()),
            ("--osl", c.osl.is_some()),
            ("--range-ratio", c.range_ratio.is_some()),
            ("--num-prompts", c.num_prompts.is_some()),
            ("--warmups", c.warmups.is_some()),
            ("--seed", c.seed.is_some()),
            ("--api", c.api.is_some()),
            ("--request-rate", c.request_rate.is_some()),
            ("--burstiness", c.burstiness.is_some()),
            ("--compat", c.compat.is_some()),
            ("--itl", c.itl.is_some()),
            ("--chat-template", c.chat_template),
        ];
        let given: Vec<&str> = fixed_only.iter().filter(|f| f.1).map(|f| f.0).collect();
        let ax = [
            ("--traces", c.traces.is_some()),
            ("--duration", c.duration.is_some()),
        ];
        let others: Vec<&str> =
            (fixed_only.iter().chain(&ax).filter(|f| f.1).map(|f| f.0)).collect();
        let multiturn = c.multiturn.plan(c.scenario.as_deref(), &others)?;
        let agentx = servebench_pipeline::plan::AgentxPlan::from_flags(
            c.scenario.as_deref(),
            c.traces,
            c.duration,
            &given,
        )
        .map_err(anyhow::Error::msg)?;
        // the defaults of the flags that are optional only to tell "given" from "defaulted"
        let d = SweepPlan::default();
        let f = FixedPlan::default();
        let plan = SweepPlan {
            kind,
            concurrencies: concs,
            endpoint: c.endpoint,
            model: c.model,
            tokenizer: c.tokenizer,
            chat_template: c.chat_template,
            gpus: c.gpus,
            workload: match (multiturn, agentx) {
                (Some(m), _) => Workload::Multiturn(m),
                (None, Some(ax)) => Workload::Agentx(ax),
                (None, None) => Workload::FixedSequence(FixedPlan {
                    isl: c.isl.unwrap_or(f.isl),
                    osl: c.osl.unwrap_or(f.osl),
                    range_ratio: c.range_ratio.unwrap_or(f.range_ratio),
                    num_prompts: c.num_prompts,
                    warmups: c.warmups,
                    seed: c.seed.unwrap_or(f.seed),
                    request_rate: c.request_rate,
                    burstiness: c.burstiness,
                }),
            },
            api: c.api.map_or(d.api, Into::into),
            engine: c.engine,
            compat: c.compat.map_or(d.compat, Into::into),
            itl_mode: c.itl.map_or(d.itl_mode, Into::into),
            stat: c.stat.into(),
            lenient: c.lenient,
            timeout_s: c.timeout,
            ready_timeout_s: c.ready_timeout,
            new_connection_per_request: c.new_connection_per_request,
            out: c.out,
            overwrite: c.overwrite,
            resume: c.resume,
            api_key: servebench_endpoint::api_key_or_env(c.api_key),
            ca_cert: c.ca_cert,
            identity: IdentityPlan {
                hw: c.hw,
                framework: c.framework,
                precision: c.precision,
                model_prefix: c.model_prefix,
                tp: c.tp,
                pp: c.pp,
                pcp: c.pcp,
                dcp: c.dcp,
                ep: c.ep,
                dp_attn: c.dp_attn,
                spec_decoding: c.spec_decoding,
                image: c.image,
                config_key: c.config_key,
                kv_offload: c.kv_offload.plan(),
            },
            sim: SimPlan {
                speedup: c.sim_speedup,
                gpu: c.sim_gpu,
                model: c.sim_model,
                slowdown: c.sim_slowdown,
                clock: c.sim_clock.map(Into::into),
                max_running_requests: c.sim_max_running_requests,
                context_length: c.sim_context_length,
                served_name: c.sim_served_name,
                fleet: c.sim_prefill.zip(c.sim_decode).map(|(prefill, decode)| {
                    servebench_endpoint::FleetSpec {
                        prefill,
                        decode,
                        router: c.sim_router,
                        fabric: c.sim_fabric,
                    }
                }),
            },
            db: (!c.no_store).then_some(c.db),
            branch: Some(
                c.branch
                    .unwrap_or_else(servebench_pipeline::identity::default_branch),
            ),
            index_digest: c.index_digest,
            platform_digest: c.platform_digest,
            repeats: c.repeats,
            report: c.report,
            baseline: c.baseline,
            flush_cache: c.flush_cache,
            power: c.power.plan(),
            eval: c.eval_args.eval.map(|EvalTask::Gsm8k| PlanEval::Gsm8k),
            eval_plan: c.eval_args.plan(),
        };
        if let Some(e) = plan.sim_clock_conflict() {
            return Err(super::measure_enums::UsageError(e).into());
        }
        Ok(plan)
    }
}
