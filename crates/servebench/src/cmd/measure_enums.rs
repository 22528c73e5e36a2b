//! The value enums of the measuring flags (`--api`, `--compat`, `--itl`, `--stat`, `--eval`,
//! `--sim-clock`) and the `--engine` parser, for [`super::measure_args::CommonArgs`]; the
//! usage error a command returns for a flag combination clap cannot express.

use std::path::PathBuf;

use servebench_client::Engine;

/// `--sim-clock` (sweep, bench, search, sim, run --simulate).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimClockArg {
    /// Discrete-event clock: client and simulator in one process, time advances only when
    /// every task waits; host-independent, reproducible, fast (the default without
    /// --sim-speedup or --eval).
    Virtual,
    /// Wall clock: the simulator plays modelled time back ÷ --sim-speedup over TCP; for
    /// testing the network path (numbers move with host load).
    Wall,
}

impl From<SimClockArg> for servebench_contracts::SimClock {
    fn from(c: SimClockArg) -> Self {
        match c {
            SimClockArg::Virtual => servebench_contracts::SimClock::Virtual,
            SimClockArg::Wall => servebench_contracts::SimClock::Wall,
        }
    }
}

/// A command line the parser accepted but whose flags cannot go together (`--sim-clock
/// virtual --sim-speedup 10`): `main` prints it in one line and exits 64 (EX_USAGE), like a
/// clap error.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `--eval`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalTask {
    /// GSM8K, scored as lm-evaluation-harness does (docs/eval.md).
    Gsm8k,
}

pub(crate) fn parse_engine(s: &str) -> std::result::Result<Engine, String> {
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

/// The flags of `--scenario multiturn` (multi-turn chat replay, docs/measurement.md).
#[derive(clap::Args, Debug, Clone)]
pub struct MultiturnArgs {
    /// ShareGPT-style conversations to replay turn by turn, JSON array or JSONL of
    /// {"conversations": [{"from": "human", "value": …}, {"from": "gpt", "value": …}, …]}
    /// (--scenario multiturn; given alone it implies it). --conc is then the number of
    /// concurrent conversations.
    #[arg(long, value_name = "FILE")]
    pub conversations: Option<std::path::PathBuf>,
    /// Multi-turn: factor on the recorded think times between turns (human messages'
    /// think_time_s) [default: 1; 0 = no waiting].
    #[arg(long, value_name = "F")]
    pub think_time_scale: Option<f64>,
    /// Multi-turn: cap on one (scaled) think time, seconds [default: none].
    #[arg(long, value_name = "S")]
    pub max_think_time: Option<f64>,
}

impl MultiturnArgs {
    /// The multi-turn plan of these flags and `--scenario`, `None` for another workload;
    /// `others` names the other workloads' flags given (refused with multiturn).
    ///
    /// # Errors
    /// One line naming the flag ([`servebench_pipeline::multiturn::MultiturnPlan::from_flags`]).
    pub(crate) fn plan(
        &self,
        scenario: Option<&str>,
        others: &[&str],
    ) -> anyhow::Result<Option<servebench_pipeline::multiturn::MultiturnPlan>> {
        servebench_pipeline::multiturn::MultiturnPlan::from_flags(
            scenario,
            self.conversations.clone(),
            self.think_time_scale,
            self.max_think_time,
            others,
        )
        .map_err(anyhow::Error::msg)
    }
}

/// KV-cache offload of the served engine (InferenceX `kv-offloading`, `kv-offload-backend`,
/// `total-cpu-dram-gb`): recorded in every row; on the embedded simulator, modelled as a
/// host-DRAM prefix tier (docs/simulator.md, "KV offload").
#[derive(clap::Args, Debug, Clone)]
pub struct KvOffloadArgs {
    /// KV-cache offload mode: none or dram (InferenceX `kv_offloading`; rows with dram never
    /// match rows without in compare).
    #[arg(
        long = "kv-offloading",
        value_name = "none|dram",
        default_value = "none"
    )]
    pub mode: String,
    /// The offload backend, a name (hicache) or InferenceX's JSON ({"name": "lmcache",
    /// "version": "…"}); recorded as `kv_offload_backend`. Needs --kv-offloading dram.
    #[arg(long = "kv-offload-backend", value_name = "NAME|JSON", value_parser = |s: &str| servebench_contracts::KvOffloadBackend::parse(s))]
    pub backend: Option<servebench_contracts::KvOffloadBackend>,
    /// Host DRAM budget for the offloaded KV cache, GB (InferenceX TOTAL_CPU_DRAM_GB; recorded
    /// as `allocated_cpu_dram_gb`; the simulator's DRAM tier capacity).
    #[arg(long = "total-cpu-dram-gb", value_name = "GB", default_value_t = 0)]
    pub dram_gb: u64,
}

impl KvOffloadArgs {
    /// The pipeline's offload plan (checked with the rest of the plan).
    pub(crate) fn plan(&self) -> servebench_pipeline::plan::KvOffloadPlan {
        servebench_pipeline::plan::KvOffloadPlan {
            mode: servebench_contracts::KvOffload::parse(Some(&self.mode)),
            backend: self.backend.clone(),
            dram_gb: self.dram_gb,
        }
    }
}

/// How each point's GPU energy is measured (docs/measurement.md, "Energy").
#[derive(clap::Args, Debug, Clone)]
pub struct PowerArgs {
    /// GPU energy per point: auto (NVML when the endpoint is on this machine and
    /// libnvidia-ml loads; otherwise each row says why not), nvml (required: stop if NVML
    /// cannot be read), off (no power keys). The simulator models energy instead.
    #[arg(long = "power", value_name = "auto|nvml|off", value_parser = ["auto", "nvml", "off"], default_value = "auto")]
    pub power: String,
    /// NVML device indices to sample, e.g. 0,1 [default: CUDA_VISIBLE_DEVICES when it lists
    /// indices, else every GPU]; their count must equal the point's GPU count (TP × PP × PCP).
    #[arg(long = "power-gpus", value_name = "LIST", value_delimiter = ',')]
    pub power_gpus: Option<Vec<u32>>,
    /// Integrate this telemetry CSV over each point's window instead of sampling NVML: the
    /// gpu_metrics.csv an nvidia-smi / amd-smi monitor writes as InferenceX records it
    /// (aggregate_power.py's method and validation).
    #[arg(
        long = "power-telemetry",
        value_name = "FILE",
        conflicts_with = "power_gpus"
    )]
    pub power_telemetry: Option<std::path::PathBuf>,
}

impl PowerArgs {
    /// The pipeline's power plan.
    pub(crate) fn plan(&self) -> servebench_pipeline::power::PowerPlan {
        use servebench_pipeline::power::{PowerMode, PowerPlan};
        let mode = match (&self.power_telemetry, self.power.as_str()) {
            (_, "off") => PowerMode::Off,
            (Some(p), _) => PowerMode::Telemetry(p.clone()),
            (None, "nvml") => PowerMode::Nvml,
            _ => PowerMode::Auto,
        };
        PowerPlan {
            mode,
            gpus: self.power_gpus.clone(),
        }
    }
}

impl From<ApiArg> for servebench_client::Api {
    fn from(a: ApiArg) -> Self {
        match a {
            ApiArg::Completions => Self::Completions,
            ApiArg::Chat => Self::Chat,
        }
    }
}

impl From<CompatArg> for servebench_client::Compat {
    fn from(c: CompatArg) -> Self {
        match c {
            CompatArg::Servebench => Self::Servebench,
            CompatArg::Inferencex => Self::InferenceX,
        }
    }
}

impl From<ItlArg> for servebench_metrics::ItlMode {
    fn from(i: ItlArg) -> Self {
        match i {
            ItlArg::Chunk => Self::Chunk,
            ItlArg::PerToken => Self::Token,
        }
    }
}

impl From<StatArg> for servebench_compare::Stat {
    fn from(s: StatArg) -> Self {
        match s {
            StatArg::Mean => Self::Mean,
            StatArg::Median => Self::Median,
            StatArg::P90 => Self::P90,
            StatArg::P99 => Self::P99,
        }
    }
}

/// The `--eval` flags of `sweep`/`bench` (flattened into `CommonArgs`).
#[derive(clap::Args, Debug, Clone)]
pub struct SweepEvalArgs {
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
    /// (default: data/gsm8k of $SERVEBENCH_SHARED, else of ../shared, else of shared/ beside the
    /// checkout the binary was built in).
    #[arg(long, value_name = "DIR", env = "SERVEBENCH_GSM8K_DIR")]
    pub gsm8k_dir: Option<PathBuf>,
    /// Simulator + eval: recorded model whose GSM8K solutions the simulator replays.
    #[arg(long, value_name = "NAME", default_value = servebench_eval::sim_answers::DEFAULT_MODEL)]
    pub sim_answers: String,
    /// Simulator + eval: answer GSM8K with a chosen SIMULATED accuracy A in (0, 1] instead of
    /// replaying a recorded model (⌊n·A⌋ of the first n questions right), to test the accuracy
    /// gate; the row says `simulated_accuracy`. Not with --endpoint.
    #[arg(long, value_name = "FRACTION", requires = "eval")]
    pub sim_gsm8k_accuracy: Option<f64>,
}

impl SweepEvalArgs {
    /// The eval stage's plan (used only when `--eval` is given).
    pub fn plan(self) -> servebench_pipeline::plan::EvalPlan {
        servebench_pipeline::plan::EvalPlan {
            conc: self.eval_conc,
            limit: self.eval_limit,
            profile: self.eval_profile,
            max_tokens: self.eval_max_tokens,
            threshold: self.eval_threshold,
            thresholds: self.eval_thresholds,
            gsm8k_dir: self.gsm8k_dir,
            sim_answers: self.sim_answers,
            sim_accuracy: self.sim_gsm8k_accuracy,
        }
    }
}
