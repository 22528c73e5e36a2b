//! The InferenceX raw result JSON (Part 2 §1.7) and the aggregated row (Part 2 §2.2–2.6 plus the
//! servebench keys of contract.md).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use servebench_contracts::{
    AggRow, DistStats, RequestRate, ResultDoc, ResultServebench, SimulatorInfo, StatRow,
};

use crate::point::PointMetrics;
use crate::stats::Stats;

/// Version of the agg/summary/result schema (`docs/schema/`).
pub use servebench_contracts::SCHEMA_VERSION;

/// Run-level facts for the raw result JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// `"%Y%m%d-%H%M%S"` (UTC) of the run.
    pub date: String,
    /// InferenceX `backend` (`vllm`/`openai` for completions, `openai-chat` for chat).
    pub backend: String,
    /// Model id sent in requests.
    pub model_id: String,
    /// Tokenizer used for prompt counts (path, or the server calibration description).
    pub tokenizer_id: String,
    /// Measured prompts.
    pub num_prompts: u64,
    /// Request rate, req/s (`None` = infinite, written as `"inf"`).
    pub request_rate: Option<f64>,
    /// Gamma shape of inter-arrivals.
    pub burstiness: f64,
    /// Maximum concurrency.
    pub max_concurrency: Option<u64>,
    /// Wall-clock start of the measured phase, Unix s.
    pub benchmark_start_time_unix: f64,
    /// Wall-clock end, Unix s.
    pub benchmark_end_time_unix: f64,
}

/// What the `servebench` block of a point's result records besides the metrics: the
/// pipeline's facts about the point (all passed through as given).
#[derive(Debug, Clone, Default)]
pub struct ResultSetup {
    /// `completions` or `chat`.
    pub api: String,
    /// Engine profile name.
    pub engine: String,
    /// Endpoint base URL.
    pub endpoint: String,
    /// Optional request body fields the engine profile sent.
    pub request_fields: Vec<String>,
    /// Whether every request opened a new connection.
    pub new_connection_per_request: bool,
    /// Warmup requests sent before the measured phase.
    pub num_warmups: u64,
    /// One line describing the dataset.
    pub dataset: String,
    /// Validity rules that could not be applied ([`crate::validity`]).
    pub validity_not_checked: Vec<String>,
    /// The embedded simulator, `None` against an endpoint.
    pub simulator: Option<SimulatorInfo>,
    /// Factor from wall to modelled time (1 against an endpoint).
    pub time_scale: f64,
    /// Records file relative to the point dir.
    pub records_file: String,
    /// Repeat of the point (1-based).
    pub repeat: u32,
    /// Repeats per concurrency.
    pub repeats: u32,
    /// The prefix-cache check (`--flush-cache`), as the pipeline's cache module writes it.
    pub prefix_cache: Option<Value>,
}

/// A distribution as the result file writes it.
pub fn dist_stats(s: &Stats) -> DistStats {
    DistStats {
        n: s.n as u64,
        mean: s.mean,
        median: s.median,
        std: s.std,
        p90: s.p90,
        p99: s.p99,
        p999: s.p999,
        min: s.min,
        max: s.max,
    }
}

/// The raw result (`result.json`): InferenceX key names and order (`"request_goodput:"` with
/// its trailing colon, `p99.9_*_ms`; MEASUREMENT.md Part 2 §1.7), latencies in ms, followed by
/// the `servebench` block (metrics of the point and `setup`).
pub fn result_doc(info: &RunInfo, m: &PointMetrics, setup: ResultSetup) -> ResultDoc {
    let servebench = ResultServebench {
        schema_version: SCHEMA_VERSION,
        compat: m.compat.as_str().into(),
        itl_mode: m.itl_mode.as_str().into(),
        api: setup.api,
        engine: setup.engine,
        endpoint: setup.endpoint,
        request_fields: setup.request_fields,
        new_connection_per_request: setup.new_connection_per_request,
        point_status: m.point_status,
        num_requests_failed: m.failed,
        failure_reasons: m.failure_reasons.clone(),
        cancelled_requests: m.cancelled,
        num_warmups: setup.num_warmups,
        dataset: setup.dataset,
        mean_isl: m.mean_isl,
        mean_isl_server: m.mean_isl_server,
        mean_osl: m.mean_osl,
        ttfo_ms: dist_stats(&m.ttfo),
        queue_ms: dist_stats(&m.queue),
        peak_concurrency: m.peak_concurrency,
        redials: m.redials,
        itl_token_split_unknown: m.itl_token_split_unknown,
        warnings: m.warnings.clone(),
        invalid_reasons: m.invalid_reasons.clone(),
        validity_not_checked: setup.validity_not_checked,
        simulator: setup.simulator,
        time_scale: setup.time_scale,
        records_file: setup.records_file,
        repeat: setup.repeat,
        repeats: setup.repeats,
        prefix_cache: setup.prefix_cache,
    };
    let (ttft, tpot, itl, e2el) = (&m.ttft, &m.tpot, &m.itl, &m.e2el);
    ResultDoc {
        date: info.date.clone(),
        backend: info.backend.clone(),
        model_id: info.model_id.clone(),
        tokenizer_id: info.tokenizer_id.clone(),
        best_of: 1,
        num_prompts: info.num_prompts,
        request_rate: RequestRate::from_option(info.request_rate),
        burstiness: info.burstiness,
        max_concurrency: info.max_concurrency,
        duration: m.duration_s,
        benchmark_start_time_unix: info.benchmark_start_time_unix,
        benchmark_end_time_unix: info.benchmark_end_time_unix,
        completed: m.completed,
        total_input_tokens: m.total_input_tokens,
        total_output_tokens: m.total_output_tokens,
        request_throughput: m.request_throughput,
        // inherited upstream typo, kept for compatibility (MEASUREMENT.md Part 2 §1.7)
        request_goodput: (),
        output_throughput: m.output_throughput,
        total_token_throughput: m.total_token_throughput,
        input_lens: m.input_lens.clone(),
        output_lens: m.output_lens.clone(),
        mean_ttft_ms: ttft.mean,
        median_ttft_ms: ttft.median,
        std_ttft_ms: ttft.std,
        p90_ttft_ms: ttft.p90,
        p99_ttft_ms: ttft.p99,
        p99_9_ttft_ms: ttft.p999,
        mean_tpot_ms: tpot.mean,
        median_tpot_ms: tpot.median,
        std_tpot_ms: tpot.std,
        p90_tpot_ms: tpot.p90,
        p99_tpot_ms: tpot.p99,
        p99_9_tpot_ms: tpot.p999,
        mean_itl_ms: itl.mean,
        median_itl_ms: itl.median,
        std_itl_ms: itl.std,
        p90_itl_ms: itl.p90,
        p99_itl_ms: itl.p99,
        p99_9_itl_ms: itl.p999,
        mean_e2el_ms: e2el.mean,
        median_e2el_ms: e2el.median,
        std_e2el_ms: e2el.std,
        p90_e2el_ms: e2el.p90,
        p99_e2el_ms: e2el.p99,
        p99_9_e2el_ms: e2el.p999,
        servebench,
    }
}

/// Identity and topology of a point: the one definition lives in `servebench-contracts`.
pub use servebench_contracts::Identity;

/// The servebench keys that follow the InferenceX agg keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AggExtra {
    /// `completions` or `chat`.
    pub api: String,
    /// Engine profile name.
    pub engine: String,
    /// Endpoint base URL.
    pub endpoint: String,
    /// Records file relative to the point dir.
    pub records_file: String,
}

/// The aggregated point row (`agg.json`): InferenceX single-node keys (latencies in seconds,
/// interactivity in tok/s/user), then the servebench keys (contract.md).
///
/// Per GPU: `tput_per_gpu = total_token_throughput / G`, `output_tput_per_gpu =
/// output_throughput / G`, `input_tput_per_gpu = (total − output) / G`, G = TP × PP × PCP.
/// Latency: each raw `*_ms` value / 1000. Interactivity: for each TPOT statistic s,
/// `s_intvty = 1000 / s_tpot_ms` (so `std_intvty = 1000/std_tpot_ms`, as InferenceX emits it);
/// null when the TPOT statistic is null or 0. Missing statistics are null, never 0.
pub fn agg_row(id: &Identity, conc: Option<u64>, m: &PointMetrics, extra: &AggExtra) -> AggRow {
    let g = f64::from(id.num_gpus());
    let fam = |s: &Stats, f: &dyn Fn(Option<f64>) -> Option<f64>| {
        let v = |stat: &str| f(s.get(stat));
        StatRow {
            mean: v("mean"),
            median: v("median"),
            std: v("std"),
            p90: v("p90"),
            p99: v("p99"),
            p99_9: v("p99.9"),
        }
    };
    let secs = |v: Option<f64>| v.map(|x| x / 1000.0);
    AggRow {
        identity: id.clone(),
        conc,
        tput_per_gpu: m.total_token_throughput / g,
        output_tput_per_gpu: m.output_throughput / g,
        input_tput_per_gpu: (m.total_token_throughput - m.output_throughput) / g,
        ttft: fam(&m.ttft, &secs),
        tpot: fam(&m.tpot, &secs),
        itl: fam(&m.itl, &secs),
        e2el: fam(&m.e2el, &secs),
        intvty: fam(&m.tpot, &intvty),
        schema_version: SCHEMA_VERSION,
        api: extra.api.clone(),
        engine: extra.engine.clone(),
        endpoint: extra.endpoint.clone(),
        itl_mode: m.itl_mode.as_str().into(),
        compat: m.compat.as_str().into(),
        num_gpus: id.num_gpus(),
        num_requests_total: m.num_requests_total,
        num_requests_successful: m.completed,
        num_requests_failed: m.failed,
        failure_reasons: m.failure_reasons.clone(),
        point_status: m.point_status,
        duration: m.duration_s,
        request_throughput: m.request_throughput,
        output_throughput: m.output_throughput,
        total_token_throughput: m.total_token_throughput,
        input_throughput: m.input_throughput,
        mean_isl: m.mean_isl,
        mean_isl_server: m.mean_isl_server,
        mean_osl: m.mean_osl,
        records_file: extra.records_file.clone(),
        // an invalid point's reasons ([`crate::validity`]); empty (no key) on a valid point
        invalid_reasons: m.invalid_reasons.clone(),
        power: None,
        multinode: None,
        extra: Default::default(),
    }
}

/// Interactivity (tok/s/user) of a TPOT statistic in ms: `1000 / tpot_ms`; null for null/0.
pub fn intvty(tpot_ms: Option<f64>) -> Option<f64> {
    match tpot_ms {
        Some(t) if t > 0.0 && t.is_finite() => Some(1000.0 / t),
        _ => None,
    }
}

/// Convenience: statistic `stat` of `s` in ms (table columns).
pub fn stat_ms(s: &Stats, stat: &str) -> Option<f64> {
    s.get(stat)
}
