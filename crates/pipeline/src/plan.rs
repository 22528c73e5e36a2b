//! [`SweepPlan`]: everything a sweep (or one `bench` point) needs to know, parsed once — from the
//! command line by the binary, or from one catalog matrix row ([`SweepPlan::from_matrix_row`]).
//!
//! The plan is plain data: no clap, no I/O. [`SweepPlan::validate`] checks it before the simulator
//! or any I/O starts; its messages name the command-line flag a value comes from, since that is
//! how a user (or the matrix row's owner) fixes it.

use std::path::PathBuf;

/// Why a plan is invalid: one line naming the flag (or the matrix row key) to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A flag's value is out of range, or contradicts another flag.
    #[error("{0}")]
    Flag(String),
    /// A catalog matrix row lacks a key, has the wrong type, or is not a fixed-sequence row.
    #[error("{0}")]
    MatrixRow(String),
}

type Result<T> = std::result::Result<T, PlanError>;

/// `return Err(PlanError::Flag(format!(…)))`.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err(PlanError::Flag(format!($($t)*)))
    };
}
use servebench_client::{Api, Compat, Engine};
use servebench_contracts::{SimClock, Stat};
use servebench_metrics::ItlMode;
use servebench_store::RunKind;

/// Default simulator speedup when a sweep runs without an endpoint.
pub const DEFAULT_SIM_SPEEDUP: f64 = 10.0;

/// The accuracy eval a sweep runs after its throughput points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalTask {
    /// GSM8K, scored as lm-evaluation-harness does (docs/eval.md).
    Gsm8k,
}

/// One sweep: the points (concurrencies × repeats), the target, the workload shape, the identity
/// written into every agg row, and where results go. Field meanings and defaults are those of the
/// `servebench sweep` flags of the same name (`--num-prompts` → `num_prompts`, …).
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// How the run is recorded in the store (`sweep` or `bench`).
    pub kind: RunKind,
    /// Concurrencies, in the order measured.
    pub concurrencies: Vec<u64>,
    /// Engine base URL; `None` = the embedded simulator.
    pub endpoint: Option<String>,
    /// Model name sent in requests (`None`: the first id of `GET /v1/models`).
    pub model: Option<String>,
    /// tokenizer.json (or its directory) for client-side prompt lengths.
    pub tokenizer: Option<PathBuf>,
    /// Apply tokenizer_config.json's chat template client-side.
    pub chat_template: bool,
    /// GPUs serving the endpoint (per-GPU divisor; default TP × PP × PCP).
    pub gpus: Option<u32>,
    /// What each point sends: the fixed-sequence random dataset or an AgentX trace replay, each
    /// with its own flags.
    pub workload: Workload,
    /// Completions or chat.
    pub api: Api,
    /// Engine profile deciding optional request fields.
    pub engine: Engine,
    /// Counting rules.
    pub compat: Compat,
    /// ITL samples per chunk or per token.
    pub itl_mode: ItlMode,
    /// Statistic shown in the final table.
    pub stat: Stat,
    /// Retry without an optional body field the server rejects.
    pub lenient: bool,
    /// Per-request timeout, s.
    pub timeout_s: f64,
    /// Readiness wait, s.
    pub ready_timeout_s: f64,
    /// A new connection for every request.
    pub new_connection_per_request: bool,
    /// Output directory (default `servebench-out/<UTC timestamp>`).
    pub out: Option<PathBuf>,
    /// Replace the results of an earlier sweep in `out`.
    pub overwrite: bool,
    /// Continue the sweep that was interrupted in `out`: finished points kept, the rest
    /// measured, the same stored run continued ([`crate::resume`]).
    pub resume: bool,
    /// API key sent as `Authorization: Bearer …` (already resolved from the environment).
    pub api_key: Option<String>,
    /// Extra CA certificates (PEM) trusted for an `https://` endpoint.
    pub ca_cert: Option<PathBuf>,
    /// Identity overrides and topology (agg-row keys of the same names).
    pub identity: IdentityPlan,
    /// Embedded simulator settings (used when `endpoint` is `None`).
    pub sim: SimPlan,
    /// Results store, or `None` for files only.
    pub db: Option<PathBuf>,
    /// Git branch the run is stored under (`--branch`; `compare --baseline main`).
    pub branch: Option<String>,
    /// OCI index digest of the image.
    pub index_digest: Option<String>,
    /// Per-platform manifest digest of the image.
    pub platform_digest: Option<String>,
    /// Measure every concurrency this many times.
    pub repeats: u32,
    /// Write the run's report at the end: `Some(None)` = `DIR/report.md`.
    pub report: Option<Option<PathBuf>>,
    /// Baseline the report compares with.
    pub baseline: Option<String>,
    /// Accuracy eval after the throughput points.
    pub eval: Option<EvalTask>,
    /// Eval settings (read when `eval` is set).
    pub eval_plan: EvalPlan,
    /// `--flush-cache`: flush the server's prefix cache before each measured phase and report
    /// its hit rate (`None`: flag not given; nothing flushed or reported).
    pub flush_cache: Option<crate::cache::FlushCache>,
    /// `--power`, `--power-gpus`, `--power-telemetry`: how each point's GPU energy is measured
    /// ([`crate::power`]).
    pub power: crate::power::PowerPlan,
}

/// The workload of a sweep: a closed set, each variant with the flags only it uses (a flag of
/// another workload cannot be expressed; the command line refuses it, [`AgentxPlan::from_flags`]).
/// Labels, the summary fragment and the run metadata come from here
/// ([`crate::workload`]), so observers do not branch on the workload.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `--scenario fixed` (default): InferenceX's random dataset at fixed ISL/OSL.
    FixedSequence(FixedPlan),
    /// `--scenario agentx`: AgentX trace replay (MEASUREMENT.md Part 2 §5).
    Agentx(AgentxPlan),
    /// `--scenario multiturn`: multi-turn chat replay of ShareGPT-style conversations
    /// ([`crate::multiturn`]).
    Multiturn(MultiturnPlan),
}

impl Workload {
    /// The fixed-sequence flags, `None` for another workload.
    pub fn fixed(&self) -> Option<&FixedPlan> {
        match self {
            Workload::FixedSequence(f) => Some(f),
            _ => None,
        }
    }

    /// The fixed-sequence flags, mutable (a search probe sets the load).
    pub fn fixed_mut(&mut self) -> Option<&mut FixedPlan> {
        match self {
            Workload::FixedSequence(f) => Some(f),
            _ => None,
        }
    }

    /// The AgentX settings, `None` for another workload.
    pub fn agentx(&self) -> Option<&AgentxPlan> {
        match self {
            Workload::Agentx(a) => Some(a),
            _ => None,
        }
    }
}

/// The fixed-sequence workload's flags (`--isl`, `--osl`, `--range-ratio`, `--num-prompts`,
/// `--warmups`, `--seed`, `--request-rate`, `--burstiness`).
#[derive(Debug, Clone)]
pub struct FixedPlan {
    /// Nominal input length, tokens.
    pub isl: u32,
    /// Nominal output length, tokens.
    pub osl: u32,
    /// Lengths uniform in [floor(L·r), L], 0 < r ≤ 1.
    pub range_ratio: f64,
    /// Measured prompts per point (default 10 × concurrency).
    pub num_prompts: Option<usize>,
    /// Warmup requests per point (default 2 × concurrency).
    pub warmups: Option<usize>,
    /// Dataset seed (numpy-compatible MT19937).
    pub seed: u32,
    /// Open loop: mean request rate, req/s (modelled time against the simulator).
    pub request_rate: Option<f64>,
    /// Open loop: gamma shape of inter-arrival times (default 1 = Poisson).
    pub burstiness: Option<f64>,
}

impl Default for FixedPlan {
    /// 1k/1k, range ratio 0.8, seed 0, closed loop (the `servebench sweep` defaults).
    fn default() -> Self {
        FixedPlan {
            isl: 1024,
            osl: 1024,
            range_ratio: 0.8,
            num_prompts: None,
            warmups: None,
            seed: 0,
            request_rate: None,
            burstiness: None,
        }
    }
}

impl FixedPlan {
    /// `burstiness`, 1 (Poisson) when not given.
    pub fn burstiness(&self) -> f64 {
        self.burstiness.unwrap_or(1.0)
    }

    /// Measured prompts at concurrency `conc`: `num_prompts`, else 10 × conc.
    pub fn prompts_at(&self, conc: u64) -> usize {
        self.num_prompts.unwrap_or(10 * conc as usize)
    }

    /// Warmup requests at concurrency `conc`: `warmups`, else 2 × conc.
    pub fn warmups_at(&self, conc: u64) -> usize {
        self.warmups.unwrap_or(2 * conc as usize)
    }

    /// The fixed-sequence flags' checks: one line naming the flag.
    fn validate(&self) -> Result<()> {
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
        Ok(())
    }
}

/// `--duration` default: InferenceX's AgentX profiling window, s.
pub const DEFAULT_AGENTX_DURATION_S: u64 = 3600;

/// `--scenario agentx` settings (MEASUREMENT.md Part 2 §5).
#[derive(Debug, Clone)]
pub struct AgentxPlan {
    /// Folder of Weka `*.json` traces or a `traces.jsonl` (or its folder).
    pub traces: PathBuf,
    /// Profiling window per point, s (InferenceX 3600; below 900 the point is marked invalid).
    pub duration_s: u64,
}

impl AgentxPlan {
    /// The AgentX settings of `--scenario`, `--traces` and `--duration`: `agentx`, or no
    /// scenario with `--traces` (which implies it), give a plan; `fixed` or none give `None`.
    ///
    /// `fixed_given` names the fixed-sequence flags given on the command line (`--isl`,
    /// `--num-prompts`, …), which an AgentX replay does not use: its traces set turn lengths,
    /// counts and pacing.
    ///
    /// # Errors
    /// One line: `--traces` with `--scenario fixed` (the traces would be ignored), AgentX with
    /// any `fixed_given` flag, or a `--duration` without AgentX (either would be ignored).
    pub fn from_flags(
        scenario: Option<&str>,
        traces: Option<PathBuf>,
        duration_s: Option<u64>,
        fixed_given: &[&str],
    ) -> std::result::Result<Option<AgentxPlan>, String> {
        let agentx = scenario == Some("agentx") || (scenario.is_none() && traces.is_some());
        if let (false, Some(d)) = (agentx, duration_s) {
            return Err(format!(
                "--duration {d}: the AgentX profiling window (--scenario agentx); a fixed-sequence point lasts as long as its prompts take (--num-prompts)"
            ));
        }
        let duration_s = duration_s.unwrap_or(DEFAULT_AGENTX_DURATION_S);
        if agentx && !fixed_given.is_empty() {
            return Err(format!(
                "{}: fixed-sequence {} not used by --scenario agentx, whose traces set turn lengths, counts and pacing; drop {}",
                fixed_given.join(", "),
                if fixed_given.len() == 1 { "flag" } else { "flags" },
                if fixed_given.len() == 1 { "it" } else { "them" },
            ));
        }
        match (scenario, traces) {
            (Some("fixed"), Some(t)) => Err(format!(
                "--traces {}: traces are replayed only with --scenario agentx (this is --scenario fixed)",
                t.display()
            )),
            (Some("agentx"), t) | (None, t @ Some(_)) => Ok(Some(AgentxPlan {
                traces: t.unwrap_or_default(),
                duration_s,
            })),
            _ => Ok(None),
        }
    }
}

/// The identity flags of a sweep (`--hw`, `--image`, `--tp`, …).
#[derive(Debug, Clone)]
pub struct IdentityPlan {
    /// Hardware name (default `sim-<gpu>` or `unknown`).
    pub hw: Option<String>,
    /// Framework (default the engine profile, or `sim`).
    pub framework: Option<String>,
    /// Precision.
    pub precision: Option<String>,
    /// InferenceX model prefix (default the model name).
    pub model_prefix: Option<String>,
    /// Tensor-parallel size.
    pub tp: Option<u32>,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Prefill context-parallel size.
    pub pcp: u32,
    /// Decode context-parallel size.
    pub dcp: u32,
    /// Expert-parallel size.
    pub ep: u32,
    /// DP attention.
    pub dp_attn: bool,
    /// Speculative decoding.
    pub spec_decoding: String,
    /// Engine image.
    pub image: Option<String>,
    /// Catalog config key (`recipe_fingerprint`).
    pub config_key: Option<String>,
    /// KV-cache offload (`--kv-offloading`, `--kv-offload-backend`, `--total-cpu-dram-gb`).
    pub kv_offload: KvOffloadPlan,
}

/// KV-cache offload of the served engine: recorded in every row (InferenceX
/// `kv_offloading`, `kv_offload_backend`, `allocated_cpu_dram_gb`) and, on the embedded
/// simulator, modelled as a host-DRAM prefix tier of `dram_gb` (docs/simulator.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KvOffloadPlan {
    /// `none` (default) or `dram`.
    pub mode: servebench_contracts::KvOffload,
    /// The backend (`hicache`, `lmcache`, …), when named.
    pub backend: Option<servebench_contracts::KvOffloadBackend>,
    /// Host DRAM budget for the offloaded KV cache, GB (InferenceX `TOTAL_CPU_DRAM_GB`).
    pub dram_gb: u64,
}

impl KvOffloadPlan {
    /// Checks the flags together: a backend or a DRAM budget needs an offload mode, and
    /// `dram` needs a budget (InferenceX's `benchmark_lib.sh` requires `TOTAL_CPU_DRAM_GB`
    /// with `KV_OFFLOADING=dram`).
    pub fn validate(&self) -> Result<()> {
        use servebench_contracts::KvOffload;
        if self.mode.is_none() {
            if self.backend.is_some() {
                bail!("--kv-offload-backend needs --kv-offloading dram (InferenceX: the backend must be empty when KV_OFFLOADING=none)");
            }
            if self.dram_gb > 0 {
                bail!("--total-cpu-dram-gb needs --kv-offloading dram");
            }
        }
        if self.mode == KvOffload::Dram && self.dram_gb == 0 {
            bail!("--kv-offloading dram needs --total-cpu-dram-gb GB (the host DRAM budget, InferenceX TOTAL_CPU_DRAM_GB)");
        }
        Ok(())
    }
}

/// The embedded simulator's settings.
#[derive(Debug, Clone)]
pub struct SimPlan {
    /// Wall time = modelled time / speedup (default [`DEFAULT_SIM_SPEEDUP`]).
    pub speedup: Option<f64>,
    /// GPU preset.
    pub gpu: String,
    /// Model preset.
    pub model: String,
    /// Planted regression: every modelled step × this factor (`--sim-slowdown F`, > 0;
    /// 1.0 = the preset's engine). Embedded simulator only.
    pub slowdown: f64,
    /// `--sim-clock`; `None` = the default ([`SweepPlan::sim_clock`]).
    pub clock: Option<SimClock>,
    /// `--sim-max-running-requests`, `--sim-context-length`, `--sim-served-name`: an engine
    /// launch's own limits on top of the presets (`run --simulate` of a real recipe on the
    /// virtual clock passes those of the recipe's shimmed launch). The `/metrics` dialect
    /// follows `--engine` ([`SweepPlan::sim_overrides`]).
    pub max_running_requests: Option<u32>,
    /// Context length, tokens (see `max_running_requests`).
    pub context_length: Option<u32>,
    /// Served model name (see `max_running_requests`).
    pub served_name: Option<String>,
    /// `--sim-prefill`/`--sim-decode`/`--sim-router`/`--sim-fabric`: the embedded simulator is
    /// a disaggregated fleet (issue 32; `run --simulate` of a multinode point), on either
    /// clock. `None`: one engine of `--tp`.
    pub fleet: Option<servebench_endpoint::FleetSpec>,
}

/// The `--eval` settings.
#[derive(Debug, Clone)]
pub struct EvalPlan {
    /// Requests in flight.
    pub conc: usize,
    /// Only the first N test documents.
    pub limit: Option<usize>,
    /// Task profile.
    pub profile: servebench_eval::Profile,
    /// max_tokens per request (default: the profile's).
    pub max_tokens: Option<u32>,
    /// Minimum score (fraction).
    pub threshold: Option<f64>,
    /// thresholds.yaml (InferenceX format).
    pub thresholds: Option<PathBuf>,
    /// GSM8K data folder.
    pub gsm8k_dir: Option<PathBuf>,
    /// Recorded model whose GSM8K solutions the simulator replays.
    pub sim_answers: String,
    /// Simulator only: answer with this SIMULATED accuracy (fraction in (0, 1]) instead of
    /// replaying [`Self::sim_answers`] (`servebench_eval::sim_answers::with_accuracy`).
    pub sim_accuracy: Option<f64>,
}

impl Default for SweepPlan {
    /// The defaults of `servebench sweep` with no flags (conc 1,4,8,16 at 1k/1k on the
    /// simulator, stored in `./servebench.db`).
    fn default() -> Self {
        SweepPlan {
            kind: RunKind::Sweep,
            concurrencies: vec![1, 4, 8, 16],
            endpoint: None,
            model: None,
            tokenizer: None,
            chat_template: false,
            gpus: None,
            workload: Workload::FixedSequence(FixedPlan::default()),
            api: Api::Completions,
            engine: Engine::Vllm,
            compat: Compat::Servebench,
            itl_mode: ItlMode::Chunk,
            stat: Stat::Mean,
            lenient: false,
            timeout_s: 600.0,
            ready_timeout_s: 30.0,
            new_connection_per_request: false,
            out: None,
            overwrite: false,
            resume: false,
            api_key: None,
            ca_cert: None,
            identity: IdentityPlan {
                hw: None,
                framework: None,
                precision: None,
                model_prefix: None,
                tp: None,
                pp: 1,
                pcp: 1,
                dcp: 1,
                ep: 1,
                dp_attn: false,
                spec_decoding: "none".into(),
                image: None,
                config_key: None,
                kv_offload: KvOffloadPlan::default(),
            },
            sim: SimPlan {
                speedup: None,
                gpu: "h200".into(),
                model: "qwen3-8b".into(),
                slowdown: 1.0,
                clock: None,
                max_running_requests: None,
                context_length: None,
                served_name: None,
                fleet: None,
            },
            db: Some(PathBuf::from(servebench_store::DEFAULT_DB)),
            branch: None,
            index_digest: None,
            platform_digest: None,
            repeats: 1,
            report: None,
            baseline: None,
            eval: None,
            flush_cache: None,
            power: crate::power::PowerPlan::default(),
            eval_plan: EvalPlan {
                conc: 16,
                limit: None,
                profile: servebench_eval::Profile::default(),
                max_tokens: None,
                threshold: None,
                thresholds: None,
                gsm8k_dir: None,
                sim_answers: servebench_eval::sim_answers::DEFAULT_MODEL.into(),
                sim_accuracy: None,
            },
        }
    }
}

impl SweepPlan {
    /// A plan for one single-node fixed-sequence row of the catalog matrix (`servebench
    /// matrix` output: `image, model, model-prefix, precision, framework, isl, osl, tp, pp,
    /// dcp-size, pcp-size, conc, ep, dp-attn, spec-decoding`), against `endpoint` (`None`: the
    /// simulator). The catalog → run arrow: the remaining fields keep the sweep defaults.
    pub fn from_matrix_row(
        row: &serde_json::Map<String, serde_json::Value>,
        endpoint: Option<String>,
    ) -> Result<SweepPlan> {
        let s = |k: &str| -> Result<String> {
            row.get(k)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| {
                    PlanError::MatrixRow(format!("matrix row: `{k}` missing or not a string"))
                })
        };
        let n = |k: &str| -> Result<u64> {
            row.get(k).and_then(|v| v.as_u64()).ok_or_else(|| {
                PlanError::MatrixRow(format!(
                    "matrix row: `{k}` missing or not a positive integer"
                ))
            })
        };
        let u = |k: &str| -> Result<u32> {
            u32::try_from(n(k)?)
                .map_err(|_| PlanError::MatrixRow(format!("matrix row: `{k}` out of range")))
        };
        if row.get("prefill").is_some() || row.get("scenario-type").is_some() {
            return Err(PlanError::MatrixRow("matrix row: only single-node fixed-sequence rows run as a sweep (multinode and agentic rows need their own executor)".into()));
        }
        let mut p = SweepPlan {
            endpoint,
            concurrencies: vec![n("conc")?],
            workload: Workload::FixedSequence(FixedPlan {
                isl: u("isl")?,
                osl: u("osl")?,
                ..FixedPlan::default()
            }),
            ..SweepPlan::default()
        };
        p.identity.image = Some(s("image")?);
        p.model = Some(s("model")?);
        p.identity.model_prefix = Some(s("model-prefix")?);
        p.identity.precision = Some(s("precision")?);
        p.identity.framework = Some(s("framework")?);
        p.identity.tp = Some(u("tp")?);
        p.identity.pp = u("pp")?;
        p.identity.dcp = u("dcp-size")?;
        p.identity.pcp = u("pcp-size")?;
        p.identity.ep = u("ep")?;
        p.identity.dp_attn = row
            .get("dp-attn")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        p.identity.spec_decoding = s("spec-decoding")?;
        p.identity.kv_offload = KvOffloadPlan {
            mode: servebench_contracts::KvOffload::parse(
                row.get("kv-offloading").and_then(|v| v.as_str()),
            ),
            backend: row
                .get("kv-offload-backend")
                .filter(|v| !v.is_null())
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
            dram_gb: row
                .get("total-cpu-dram-gb")
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
        };
        Ok(p)
    }

    /// Tensor-parallel size: `tp`, else `gpus`, else 1.
    pub fn tp(&self) -> u32 {
        self.identity.tp.or(self.gpus).unwrap_or(1)
    }

    /// Validates the numeric and file flags before the simulator or any I/O starts: one line
    /// naming the flag.
    pub fn validate(&self) -> Result<()> {
        let concs = &self.concurrencies;
        if concs.is_empty() || concs.contains(&0) {
            bail!("--conc: concurrencies must be positive integers");
        }
        if let Some(c) = concs
            .iter()
            .enumerate()
            .find_map(|(i, c)| concs[..i].contains(c).then_some(c))
        {
            // each concurrency is one point directory: a second measurement overwrote the first
            bail!("--conc: {c} is given twice; to measure a concurrency again use --repeats N");
        }
        let id = &self.identity;
        for (flag, v) in [("--gpus", self.gpus), ("--tp", id.tp)] {
            if v == Some(0) {
                bail!("{flag} must be at least 1");
            }
        }
        for (flag, v) in [
            ("--pp", id.pp),
            ("--pcp", id.pcp),
            ("--dcp", id.dcp),
            ("--ep", id.ep),
        ] {
            if v == 0 {
                bail!("{flag} must be at least 1");
            }
        }
        id.kv_offload.validate()?;
        if let Some(f) = self.workload.fixed() {
            f.validate()?;
        }
        if !(self.ready_timeout_s.is_finite() && self.ready_timeout_s >= 0.0) {
            bail!("--ready-timeout must be a number of seconds ≥ 0");
        }
        if let Some(s) = self.sim.speedup {
            if !(s.is_finite() && s > 0.0) {
                bail!("--sim-speedup must be > 0");
            }
        }
        if let Some(e) = self.sim_clock_conflict() {
            return Err(PlanError::Flag(e));
        }
        let f = self.sim.slowdown;
        if !(f.is_finite() && f > 0.0) {
            bail!("--sim-slowdown must be a number > 0 (1.1 = every step 10 % slower), got {f}");
        }
        if f != 1.0 && self.endpoint.is_some() {
            bail!(
                "--sim-slowdown applies to the embedded simulator (no --endpoint); a separate \
                 simulator takes it itself: `servebench sim --sim-slowdown {f}` or `run \
                 --simulate --sim-slowdown {f}`"
            );
        }
        let e = &self.eval_plan;
        if e.limit == Some(0) {
            bail!("--eval-limit must be at least 1");
        }
        if let Some(f) = &e.thresholds {
            if !f.is_file() {
                bail!(
                    "cannot read thresholds file {} (--eval-thresholds): no such file",
                    f.display()
                );
            }
        }
        if let Some(a) = e.sim_accuracy {
            if self.endpoint.is_some() {
                bail!("--sim-gsm8k-accuracy is for the embedded simulator; it cannot go with --endpoint");
            }
            if !(a > 0.0 && a <= 1.0) {
                bail!("--sim-gsm8k-accuracy {a}: must be in (0, 1]");
            }
        }
        if self.eval.is_some()
            && self.endpoint.is_none()
            && !servebench_eval::sim_answers::MODELS.contains(&e.sim_answers.as_str())
        {
            bail!(
                "unknown --sim-answers model {:?} (recorded models: {})",
                e.sim_answers,
                servebench_eval::sim_answers::MODELS.join(", ")
            );
        }
        Ok(())
    }

    /// The clock the run measures on: `wall` against an endpoint; for the embedded simulator
    /// `--sim-clock` when given, else `wall` when `--sim-speedup` or `--eval` is given (the
    /// speedup is a wall-clock setting; the eval's client is reqwest over TCP), else `virtual`.
    pub fn sim_clock(&self) -> SimClock {
        match (self.endpoint.is_some(), self.sim.clock) {
            (true, _) => SimClock::Wall,
            (false, Some(c)) => c,
            (false, None) if self.sim.speedup.is_some() || self.eval.is_some() => SimClock::Wall,
            (false, None) => SimClock::Virtual,
        }
    }

    /// The embedded simulator's launch limits ([`SimPlan::max_running_requests`], …) and its
    /// `/metrics` dialect: the one of the engine `--engine` names (SGLang's `sglang:` series,
    /// ATOM's `atom:`, else vLLM's), so the sweep's own engine adapter reads what it serves.
    pub fn sim_overrides(&self) -> servebench_endpoint::EngineOverrides {
        use servebench_endpoint::MetricsDialect;
        servebench_endpoint::EngineOverrides {
            max_num_seqs: self.sim.max_running_requests,
            max_model_len: self.sim.context_length,
            served_name: self.sim.served_name.clone(),
            metrics_dialect: Some(match self.engine {
                Engine::Sglang => MetricsDialect::Sglang,
                Engine::Atom => MetricsDialect::Atom,
                _ => MetricsDialect::Vllm,
            }),
        }
    }

    /// Why `--sim-clock virtual` cannot be used with the other flags, if it cannot (a usage
    /// error: the binary exits 64 with it).
    pub fn sim_clock_conflict(&self) -> Option<String> {
        if self.sim.clock != Some(SimClock::Virtual) {
            return None;
        }
        if self.endpoint.is_some() {
            return Some("--sim-clock virtual applies to the embedded simulator (no --endpoint): a separate server answers in wall time".into());
        }
        if let Some(s) = self.sim.speedup {
            return Some(format!("--sim-speedup {s} has no meaning with --sim-clock virtual (modelled time is simulated, not waited); drop one of them"));
        }
        if self.eval.is_some() {
            return Some("--eval runs on the wall clock (its client talks TCP); use --sim-clock wall with --eval".into());
        }
        None
    }

    /// Checks made once the runtime is up, before the store is opened: timeout, rate, template
    /// and counting-mode combinations.
    pub fn check_modes(&self) -> Result<()> {
        if self.timeout_s <= 0.0 || !self.timeout_s.is_finite() {
            bail!("--timeout must be a positive number of seconds");
        }
        if let Some(r) = self.workload.fixed().and_then(|f| f.request_rate) {
            if !(r.is_finite() && r > 0.0) {
                bail!("--request-rate must be > 0 (omit it for a closed loop)");
            }
        }
        if self.chat_template && self.api == Api::Chat {
            bail!("--chat-template applies the template client-side for --api completions; with --api chat the server applies its own");
        }
        if self.chat_template && self.tokenizer.is_none() {
            bail!("--chat-template needs --tokenizer (the template comes from tokenizer_config.json next to it)");
        }
        if self.compat == Compat::InferenceX && self.itl_mode == ItlMode::Token {
            bail!("--itl per-token is not an InferenceX statistic; use --compat servebench");
        }
        Ok(())
    }

    /// Validates the store / report / eval / repeats flags before anything starts.
    pub(crate) fn check_store_args(&self) -> Result<()> {
        if self.resume && self.out.is_none() {
            bail!("--resume needs --out DIR: the output directory of the interrupted sweep");
        }
        if self.resume && self.overwrite {
            bail!(
                "--resume keeps the finished points of --out, --overwrite replaces them: pass one"
            );
        }
        if self.repeats == 0 {
            bail!("--repeats must be at least 1");
        }
        if let Some(d) = &self.index_digest {
            check_digest("--index-digest", d)?;
        }
        if let Some(d) = &self.platform_digest {
            check_digest("--platform-digest", d)?;
        }
        if self.db.is_none() && self.report.is_some() {
            bail!("--report reads the run back from the results store; drop --no-store (or run `servebench report DIR/summary.json` afterwards)");
        }
        if let Some(Some(p)) = &self.report {
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
        if self.eval_plan.conc == 0 {
            bail!("--eval-conc must be at least 1");
        }
        if let Some(t) = self.eval_plan.threshold {
            if !(0.0..=1.0).contains(&t) {
                bail!("--eval-threshold {t} is outside [0, 1]");
            }
        }
        Ok(())
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

/// `--scenario multiturn` settings (`--conversations`, `--think-time-scale`,
/// `--max-think-time`).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiturnPlan {
    /// ShareGPT-style conversations, JSON array or JSONL.
    pub conversations: PathBuf,
    /// Factor on the recorded think times (0 = no waiting between turns).
    pub think_time_scale: f64,
    /// Cap on one (scaled) think time, s; `None` = no cap.
    pub max_think_time_s: Option<f64>,
}

impl MultiturnPlan {
    /// The multi-turn settings of `--scenario` and the multi-turn flags: `multiturn`, or no
    /// scenario with `--conversations` (which implies it), give a plan; otherwise `None`.
    ///
    /// `others_given` names the flags of other workloads given on the command line (`--isl`,
    /// `--traces`, …), which a conversation replay does not use.
    ///
    /// # Errors
    /// One line: `--conversations` with another scenario, multi-turn flags without it, a
    /// scenario `multiturn` without `--conversations`, another workload's flag, or a negative
    /// scale or cap.
    pub fn from_flags(
        scenario: Option<&str>,
        conversations: Option<PathBuf>,
        think_time_scale: Option<f64>,
        max_think_time_s: Option<f64>,
        others_given: &[&str],
    ) -> std::result::Result<Option<MultiturnPlan>, String> {
        let on = scenario == Some("multiturn") || (scenario.is_none() && conversations.is_some());
        if !on {
            if let Some(c) = conversations {
                return Err(format!(
                    "--conversations {}: conversations are replayed only with --scenario multiturn",
                    c.display()
                ));
            }
            if think_time_scale.is_some() || max_think_time_s.is_some() {
                return Err(
                    "--think-time-scale/--max-think-time pace --scenario multiturn only".into(),
                );
            }
            return Ok(None);
        }
        if !others_given.is_empty() {
            return Err(format!(
                "{}: not used by --scenario multiturn, whose conversations set turn lengths, counts and pacing; drop {}",
                others_given.join(", "),
                if others_given.len() == 1 { "it" } else { "them" },
            ));
        }
        let Some(conversations) = conversations else {
            return Err(
                "--scenario multiturn needs --conversations FILE (ShareGPT-style JSON or JSONL)"
                    .into(),
            );
        };
        let scale = think_time_scale.unwrap_or(1.0);
        if !(scale.is_finite() && scale >= 0.0) {
            return Err(format!(
                "--think-time-scale {scale} must be ≥ 0 (0 = no waiting)"
            ));
        }
        if let Some(c) = max_think_time_s {
            if !(c.is_finite() && c >= 0.0) {
                return Err(format!("--max-think-time {c} must be ≥ 0 seconds"));
            }
        }
        Ok(Some(MultiturnPlan {
            conversations,
            think_time_scale: scale,
            max_think_time_s,
        }))
    }

    /// One think time as waited: recorded × scale, capped, in modelled seconds.
    pub fn think_s(&self, recorded_s: f64) -> f64 {
        let s = recorded_s * self.think_time_scale;
        match self.max_think_time_s {
            Some(c) => s.min(c),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_imply_agentx_and_contradict_fixed() {
        let t = || Some(PathBuf::from("tr"));
        let ax = AgentxPlan::from_flags(None, t(), Some(60), &[])
            .unwrap()
            .unwrap();
        assert_eq!((ax.traces, ax.duration_s), (PathBuf::from("tr"), 60));
        assert!(AgentxPlan::from_flags(Some("agentx"), None, None, &[])
            .unwrap()
            .is_some_and(|a| a.traces.as_os_str().is_empty() && a.duration_s == 3600));
        assert!(AgentxPlan::from_flags(None, None, None, &[])
            .unwrap()
            .is_none());
        assert!(AgentxPlan::from_flags(Some("fixed"), None, None, &[])
            .unwrap()
            .is_none());
        assert_eq!(
            AgentxPlan::from_flags(Some("fixed"), t(), None, &[]).unwrap_err(),
            "--traces tr: traces are replayed only with --scenario agentx (this is --scenario fixed)"
        );
        // fixed-sequence flags: refused with AgentX (either way of asking for it), fine without
        assert_eq!(
            AgentxPlan::from_flags(None, t(), None, &["--isl"]).unwrap_err(),
            "--isl: fixed-sequence flag not used by --scenario agentx, whose traces set turn lengths, counts and pacing; drop it"
        );
        assert_eq!(
            AgentxPlan::from_flags(Some("agentx"), None, Some(60), &["--num-prompts", "--seed"])
                .unwrap_err(),
            "--num-prompts, --seed: fixed-sequence flags not used by --scenario agentx, whose traces set turn lengths, counts and pacing; drop them"
        );
        assert!(
            AgentxPlan::from_flags(Some("fixed"), None, None, &["--isl"])
                .unwrap()
                .is_none()
        );
        assert!(AgentxPlan::from_flags(None, None, None, &["--isl"])
            .unwrap()
            .is_none());
        // --duration is the AgentX window: refused without AgentX
        for scenario in [None, Some("fixed")] {
            assert_eq!(
                AgentxPlan::from_flags(scenario, None, Some(5), &[]).unwrap_err(),
                "--duration 5: the AgentX profiling window (--scenario agentx); a fixed-sequence point lasts as long as its prompts take (--num-prompts)"
            );
        }
    }

    #[test]
    fn defaults_are_the_sweep_flags_defaults_and_valid() {
        let p = SweepPlan::default();
        assert_eq!(p.concurrencies, vec![1, 4, 8, 16]);
        assert_eq!(
            {
                let f = p.workload.fixed().unwrap();
                (f.isl, f.osl, f.prompts_at(4), f.warmups_at(4))
            },
            (1024, 1024, 40, 8)
        );
        p.validate().unwrap();
        p.check_modes().unwrap();
        p.check_store_args().unwrap();
    }

    #[test]
    fn bad_values_name_the_flag() {
        let p = SweepPlan {
            workload: Workload::FixedSequence(FixedPlan {
                range_ratio: 1.5,
                ..FixedPlan::default()
            }),
            ..SweepPlan::default()
        };
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            "--range-ratio 1.5 is outside (0, 1]"
        );
        let mut p = SweepPlan::default();
        p.identity.pcp = 0;
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            "--pcp must be at least 1"
        );
        let p = SweepPlan {
            index_digest: Some("sha256:12".into()),
            ..SweepPlan::default()
        };
        assert!(p
            .check_store_args()
            .unwrap_err()
            .to_string()
            .starts_with("--index-digest"));
    }

    #[test]
    fn a_matrix_row_becomes_a_plan() {
        let row: serde_json::Value = serde_json::json!({
            "image": "lmsysorg/sglang:v0.5.5", "model": "Qwen/Qwen3-8B", "model-prefix": "qwen3",
            "precision": "fp8", "framework": "sglang", "runner": "h200", "isl": 8192, "osl": 1024,
            "tp": 4, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 32, "max-model-len": 9472,
            "ep": 2, "dp-attn": true, "spec-decoding": "mtp", "exp-name": "qwen3_8k1k",
            "disagg": false, "run-eval": false
        });
        let p = SweepPlan::from_matrix_row(row.as_object().unwrap(), None).unwrap();
        assert_eq!(p.concurrencies, vec![32]);
        let f = p.workload.fixed().unwrap();
        assert_eq!((f.isl, f.osl, p.tp()), (8192, 1024, 4));
        assert_eq!(p.identity.ep, 2);
        assert!(p.identity.dp_attn);
        assert_eq!(p.identity.spec_decoding, "mtp");
        assert_eq!(p.identity.image.as_deref(), Some("lmsysorg/sglang:v0.5.5"));
        p.validate().unwrap();
        let mut bad = row.as_object().unwrap().clone();
        bad.remove("isl");
        assert_eq!(
            SweepPlan::from_matrix_row(&bad, None)
                .unwrap_err()
                .to_string(),
            "matrix row: `isl` missing or not a positive integer"
        );
        bad.insert("prefill".into(), serde_json::json!({}));
        bad.insert("isl".into(), serde_json::json!(1024));
        assert!(matches!(
            SweepPlan::from_matrix_row(&bad, None),
            Err(PlanError::MatrixRow(m)) if m.contains("only single-node")
        ));
    }
}
