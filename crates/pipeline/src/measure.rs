//! What a workload says for itself ([`RequestWorkload`]: the fixed-sequence dataset, the
//! multi-turn conversation replay, the AgentX trace replay): what a point sends ([`PointRun`]: a
//! stream of requests the session sends, [`PointRequests`], or a replay that runs its own warmup
//! and profiling window, [`Replay`]) and what the point is ([`PointMeta`], [`StatRules`]). The
//! session's one point lifecycle ([`crate::lifecycle::Measured`]) does the rest, once for all of
//! them: the record writer (`records.jsonl`), warmup, the prefix-cache flush and counters, the
//! energy sampling, progress, the statistics ([`servebench_metrics::compute`]), the validity
//! rules, the rescaling to modelled time on the simulator, and the agg row ([`point_row`]) and
//! raw result.

use std::future::Future;
use std::pin::Pin;

use servebench_client::{Api, ClientCtx, Compat, Load, RequestRecord};
use servebench_metrics::{
    agg_row, AggExtra, AggRow, ItlMode, PointMetrics, PromptCount, ResultFile, ValidityOptions,
};
use servebench_workload::RequestSource;

use crate::error::Result;
use crate::executor::{PointSpec, SweepCtx};

/// The warmup of a point: requests sent before the measured phase (closed loop at the point's
/// concurrency), written to `records.jsonl` as `warmup` and left out of the statistics. A
/// workload with a warmup phase (even of 0 requests) stops the point there on Ctrl-C
/// ([`PipelineError::Interrupted`]) instead of measuring a cancelled phase.
pub struct Warmup {
    /// The requests.
    pub source: Box<dyn RequestSource>,
    /// How many (the progress bar's total).
    pub requests: u64,
}

/// How one point's requests are sent.
pub enum PointRun {
    /// A stream of requests the session sends: an optional warmup, then the measured phase.
    Stream(PointRequests),
    /// A replay that runs its own phases (the AgentX replay engine: warmup primers, then a
    /// profiling window).
    Replay(Replay),
}

/// What one point of a request stream sends.
pub struct PointRequests {
    /// Sent first, when the workload has a warmup phase.
    pub warmup: Option<Warmup>,
    /// The measured phase's requests.
    pub measured: Box<dyn RequestSource>,
    /// How many measured requests (the progress bar's total).
    pub requests: u64,
    /// How the measured requests are paced (wall time: rates already × the simulator speedup).
    pub load: Load,
    /// Dataset seed the prefix-cache warnings name (`--flush-cache`; 0 when there is none).
    pub cache_seed: u32,
    /// Fingerprints ([`crate::cache::fingerprint`]) of the prompts the measured phase sends,
    /// for the warm-cache warning of a later point that repeats them.
    pub cache_prompts: Vec<u64>,
    /// The raw result's facts of these requests (InferenceX's result document).
    pub facts: StreamFacts,
}

/// The facts of a request stream that its raw result (`result.json`) carries.
pub struct StreamFacts {
    /// `backend` of the raw result (`openai-chat`, `vllm`, …).
    pub backend: String,
    /// `tokenizer_id` of the raw result.
    pub tokenizer_id: String,
    /// `num_prompts` of the raw result (measured requests).
    pub num_prompts: u64,
    /// Open-loop request rate, req/s (modelled time); `None`: closed loop.
    pub request_rate: Option<f64>,
    /// Open-loop burstiness (1 for a closed loop).
    pub burstiness: f64,
    /// Warmup requests sent.
    pub num_warmups: u64,
    /// The workload's one-line description (`dataset` of the raw result).
    pub dataset: String,
}

/// A replay that runs its own phases. The session flushes the prefix cache (`--flush-cache`)
/// before it — before its warmup, so every point starts cold as on the fresh server InferenceX
/// launches per point — starts the energy sampling, shows the window's progress, runs it, writes
/// its client records and measures them over its profiling window.
pub struct Replay {
    /// The profiling window, s of modelled time (the progress bar's length).
    pub window_s: u64,
    /// The replay, started by the session when the point's cache and energy are ready.
    pub run: Pin<Box<dyn Future<Output = Result<ReplayRun>>>>,
}

/// What a [`Replay`] hands back.
pub struct ReplayRun {
    /// The measuring client's records of every request, warmup included (phase
    /// `warmup`/`measured`), in completion order: `records.jsonl` and the statistics' input.
    pub records: Vec<RequestRecord>,
    /// The profiling window `(start, end)`, ns of the client's clock: the statistics' phase
    /// window and the energy window.
    pub window_ns: (u64, u64),
    /// Lines said under the table, after the statistics' own.
    pub notes: Vec<String>,
    /// Workload keys of the agg row, in order, after the known ones (`AggRow::extra`).
    pub row_keys: Vec<(String, serde_json::Value)>,
    /// The raw result (`result.json`).
    pub result: ResultFile,
}

/// What a point is: the agg row's facts that only the workload knows.
pub struct PointMeta {
    /// The API the requests used.
    pub api: Api,
    /// Where prompt token counts come from.
    pub prompt_count: PromptCount,
    /// Whether the agg row keeps the identity's nominal ISL/OSL (`false`: `null`, the lengths
    /// come from the workload's own data).
    pub lengths_in_row: bool,
}

/// The rules a point's statistics are computed with.
#[derive(Debug, Clone, Copy)]
pub struct StatRules {
    /// Counting rules (`--compat`).
    pub compat: Compat,
    /// ITL sampling (`--itl`).
    pub itl_mode: ItlMode,
    /// Failed share of the measured requests above which the point fails (MEASUREMENT.md:
    /// InferenceX's 0.05; the AgentX harness's error gate 0.10).
    pub max_failed_fraction: f64,
}

/// A workload: it builds its requests and says what a point is; the session's
/// [`crate::lifecycle::Measured`] lifecycle measures it.
pub trait RequestWorkload {
    /// What is built once per concurrency and reused by its repeats.
    type Prepared;

    /// The client context requests are sent with (endpoint, body shape, timeouts, clock).
    fn client(&self) -> &ClientCtx;

    /// Builds what concurrency `conc` sends.
    fn prepare(
        &mut self,
        ctx: &SweepCtx<'_>,
        conc: u64,
    ) -> impl Future<Output = Result<Self::Prepared>>;

    /// One line describing the workload (`summary.json` `datasets`; the raw result's `dataset`).
    fn describe(&self, prepared: &Self::Prepared) -> String;

    /// A line saying what a point of concurrency `conc` sends, printed before its first point.
    fn requests_line(&self, _ctx: &SweepCtx<'_>, _conc: u64) -> Option<String> {
        None
    }

    /// The requests of one point.
    fn requests(
        &self,
        ctx: &SweepCtx<'_>,
        prepared: &Self::Prepared,
        point: &PointSpec,
    ) -> PointRun;

    /// What the point is.
    fn meta(&self, ctx: &SweepCtx<'_>, prepared: &Self::Prepared, point: &PointSpec) -> PointMeta;

    /// The statistics' rules: by default the plan's `--compat` and `--itl` and InferenceX's
    /// 5 % failure gate.
    fn rules(&self, ctx: &SweepCtx<'_>) -> StatRules {
        StatRules {
            compat: ctx.plan.compat,
            itl_mode: ctx.plan.itl_mode,
            max_failed_fraction: 0.05,
        }
    }

    /// The validity rules the requests promise (fixed output length, prompt lengths); `None`:
    /// none checked.
    fn validity(&self) -> Option<&ValidityOptions> {
        None
    }

    /// Lines said under the table about the measured records (after rescaling).
    fn notes(&self, _measured: &[RequestRecord]) -> Vec<String> {
        Vec::new()
    }
}

/// The agg row of a point: the session's identity (its `benchmark_type` the workload's) at
/// the point's concurrency, its statistics and the workload's API; `lengths_in_row` false
/// clears the nominal ISL/OSL (a replay's lengths are its data's).
pub fn point_row(
    ctx: &SweepCtx<'_>,
    point: &PointSpec,
    m: &PointMetrics,
    api: Api,
    lengths_in_row: bool,
) -> AggRow {
    let extra = AggExtra {
        api: api.as_str().into(),
        engine: ctx.plan.engine.name().into(),
        endpoint: ctx.target.endpoint.base_url.clone(),
        records_file: "records.jsonl".into(),
    };
    let mut agg = agg_row(ctx.identity, Some(point.conc), m, &extra);
    if !lengths_in_row {
        agg.identity.isl = None;
        agg.identity.osl = None;
    }
    agg
}

/// The power window of a replay point, as InferenceX's `power_adapter.py` builds it for
/// AgentX: the profiling window (Unix s: the client clock's `window_ns` through `anchor` =
/// (Unix s, clock ns) taken together before the point) and the successful profiling requests
/// with their input and output tokens.
pub fn profiling_window(
    anchor: (f64, u64),
    window_ns: (u64, u64),
    m: &PointMetrics,
) -> servebench_metrics::power::aggregate::BenchmarkData {
    window_of(
        anchor,
        window_ns,
        (m.completed, m.total_input_tokens, m.total_output_tokens),
    )
}

/// [`profiling_window`] of `(completed, input tokens, output tokens)`.
pub fn window_of(
    anchor: (f64, u64),
    window_ns: (u64, u64),
    (completed, total_input_tokens, total_output_tokens): (u64, u64, u64),
) -> servebench_metrics::power::aggregate::BenchmarkData {
    let unix = |ns: u64| anchor.0 + (ns as f64 - anchor.1 as f64) / 1e9;
    let (start, end) = (unix(window_ns.0), unix(window_ns.1));
    servebench_metrics::power::aggregate::BenchmarkData {
        start,
        end,
        duration: end - start,
        completed,
        total_input_tokens,
        total_output_tokens,
    }
}
