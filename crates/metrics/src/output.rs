//! The InferenceX raw result JSON (Part 2 §1.7) and the aggregated row (Part 2 §2.2–2.6 plus the
//! servebench keys of contract.md).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use servebench_contracts::{AggRow, StatRow};

use crate::point::PointMetrics;
use crate::stats::{Stats, STAT_KEYS};

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

fn num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.is_finite() => json!(v),
        _ => Value::Null,
    }
}

/// The raw result JSON, InferenceX key names and order (`"request_goodput:"` with its trailing
/// colon, `p99.9_*_ms`), followed by a `servebench` block (`extra`).
pub fn result_json(info: &RunInfo, m: &PointMetrics, extra: Value) -> Value {
    let mut o = Map::new();
    o.insert("date".into(), json!(info.date));
    o.insert("backend".into(), json!(info.backend));
    o.insert("model_id".into(), json!(info.model_id));
    o.insert("tokenizer_id".into(), json!(info.tokenizer_id));
    o.insert("best_of".into(), json!(1));
    o.insert("num_prompts".into(), json!(info.num_prompts));
    o.insert(
        "request_rate".into(),
        match info.request_rate {
            Some(r) if r.is_finite() => json!(r),
            _ => json!("inf"),
        },
    );
    o.insert("burstiness".into(), json!(info.burstiness));
    o.insert("max_concurrency".into(), json!(info.max_concurrency));
    o.insert("duration".into(), json!(m.duration_s));
    o.insert(
        "benchmark_start_time_unix".into(),
        json!(info.benchmark_start_time_unix),
    );
    o.insert(
        "benchmark_end_time_unix".into(),
        json!(info.benchmark_end_time_unix),
    );
    o.insert("completed".into(), json!(m.completed));
    o.insert("total_input_tokens".into(), json!(m.total_input_tokens));
    o.insert("total_output_tokens".into(), json!(m.total_output_tokens));
    o.insert("request_throughput".into(), json!(m.request_throughput));
    // inherited upstream typo, kept for compatibility (MEASUREMENT.md Part 2 §1.7)
    o.insert("request_goodput:".into(), Value::Null);
    o.insert("output_throughput".into(), json!(m.output_throughput));
    o.insert(
        "total_token_throughput".into(),
        json!(m.total_token_throughput),
    );
    o.insert("input_lens".into(), json!(m.input_lens));
    o.insert("output_lens".into(), json!(m.output_lens));
    for (name, s) in [
        ("ttft", &m.ttft),
        ("tpot", &m.tpot),
        ("itl", &m.itl),
        ("e2el", &m.e2el),
    ] {
        for (stat, prefix) in STAT_KEYS {
            o.insert(format!("{prefix}_{name}_ms"), num(s.get(stat)));
        }
    }
    o.insert("servebench".into(), extra);
    Value::Object(o)
}

/// Identity and topology of a point: the one definition lives in `servebench-contracts`.
pub use servebench_contracts::Identity;

/// The servebench keys that follow the InferenceX agg keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AggExtra {
    /// `single_turn` or `agentic_traces`.
    pub benchmark_type: String,
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
    let mut row = AggRow {
        hw: id.hw.clone(),
        conc,
        image: id.image.clone(),
        model: id.model.clone(),
        infmax_model_prefix: id.infmax_model_prefix.clone(),
        framework: id.framework.clone(),
        precision: id.precision.clone(),
        spec_decoding: id.spec_decoding.clone(),
        disagg: id.disagg,
        recipe_fingerprint: id.recipe_fingerprint.clone(),
        isl: id.isl,
        osl: id.osl,
        is_multinode: false,
        tp: id.tp,
        pp: id.pp,
        dcp_size: id.dcp_size,
        pcp_size: id.pcp_size,
        ep: id.ep,
        dp_attention: id.dp_attention,
        tput_per_gpu: m.total_token_throughput / g,
        output_tput_per_gpu: m.output_throughput / g,
        input_tput_per_gpu: (m.total_token_throughput - m.output_throughput) / g,
        ttft: fam(&m.ttft, &secs),
        tpot: fam(&m.tpot, &secs),
        itl: fam(&m.itl, &secs),
        e2el: fam(&m.e2el, &secs),
        intvty: fam(&m.tpot, &intvty),
        schema_version: SCHEMA_VERSION,
        benchmark_type: extra.benchmark_type.clone(),
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
        extra: Default::default(),
    };
    // an invalid point's reasons ([`crate::validity`]); a valid point's row keeps its keys
    if !m.invalid_reasons.is_empty() {
        row.extra.insert(
            servebench_contracts::status::INVALID_REASONS_KEY.to_string(),
            Value::from(m.invalid_reasons.clone()),
        );
    }
    row
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
