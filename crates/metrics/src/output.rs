//! The InferenceX raw result JSON (Part 2 §1.7) and the aggregated row (Part 2 §2.2–2.6 plus the
//! servebench keys of contract.md).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::point::PointMetrics;
use crate::stats::{Stats, STAT_KEYS};

/// Version of the agg/summary/result schema (`docs/schema/`).
pub const SCHEMA_VERSION: u32 = 1;

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

/// Identity and topology of a point (InferenceX `process_result.py` env inputs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Identity {
    /// Runner/hardware name (`hw`).
    pub hw: String,
    /// Engine container image.
    pub image: String,
    /// Model name as served.
    pub model: String,
    /// `infmax_model_prefix` (e.g. `dsr1`, `qwen3.5`).
    pub infmax_model_prefix: String,
    /// Framework (`sglang`, `vllm`, …).
    pub framework: String,
    /// Precision (`fp8`, `fp4`, `bf16`).
    pub precision: String,
    /// Speculative decoding (`none`, `mtp`, …).
    pub spec_decoding: String,
    /// Disaggregated prefill/decode.
    pub disagg: bool,
    /// Recipe fingerprint (config key), if any.
    pub recipe_fingerprint: Option<String>,
    /// Nominal ISL.
    pub isl: Option<u32>,
    /// Nominal OSL.
    pub osl: Option<u32>,
    /// Tensor parallel size.
    pub tp: u32,
    /// Pipeline parallel size.
    pub pp: u32,
    /// Decode context parallel size.
    pub dcp_size: u32,
    /// Prefill context parallel size.
    pub pcp_size: u32,
    /// Expert parallel size.
    pub ep: u32,
    /// DP attention.
    pub dp_attention: bool,
}

impl Identity {
    /// GPUs of a single-node point: TP × PP × PCP (EP, DP-attention and DCP do not multiply;
    /// InferenceX `process_result.py`, MEASUREMENT.md Part 2 §2.2).
    pub fn num_gpus(&self) -> u32 {
        self.tp.max(1) * self.pp.max(1) * self.pcp_size.max(1)
    }
}

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
pub fn agg_row(id: &Identity, conc: Option<u64>, m: &PointMetrics, extra: &AggExtra) -> Value {
    let g = f64::from(id.num_gpus());
    let mut o = Map::new();
    o.insert("hw".into(), json!(id.hw));
    o.insert("conc".into(), json!(conc));
    o.insert("image".into(), json!(id.image));
    o.insert("model".into(), json!(id.model));
    o.insert("infmax_model_prefix".into(), json!(id.infmax_model_prefix));
    o.insert("framework".into(), json!(id.framework));
    o.insert("precision".into(), json!(id.precision));
    o.insert("spec_decoding".into(), json!(id.spec_decoding));
    o.insert("disagg".into(), json!(id.disagg));
    o.insert("recipe_fingerprint".into(), json!(id.recipe_fingerprint));
    o.insert("isl".into(), json!(id.isl));
    o.insert("osl".into(), json!(id.osl));
    o.insert("is_multinode".into(), json!(false));
    o.insert("tp".into(), json!(id.tp));
    o.insert("pp".into(), json!(id.pp));
    o.insert("dcp_size".into(), json!(id.dcp_size));
    o.insert("pcp_size".into(), json!(id.pcp_size));
    o.insert("ep".into(), json!(id.ep));
    o.insert("dp_attention".into(), json!(id.dp_attention));
    o.insert("tput_per_gpu".into(), json!(m.total_token_throughput / g));
    o.insert("output_tput_per_gpu".into(), json!(m.output_throughput / g));
    o.insert(
        "input_tput_per_gpu".into(),
        json!((m.total_token_throughput - m.output_throughput) / g),
    );
    for (name, s) in [
        ("ttft", &m.ttft),
        ("tpot", &m.tpot),
        ("itl", &m.itl),
        ("e2el", &m.e2el),
    ] {
        for (stat, prefix) in STAT_KEYS {
            let v = s.get(stat);
            o.insert(format!("{prefix}_{name}"), num(v.map(|x| x / 1000.0)));
            if name == "tpot" {
                o.insert(format!("{prefix}_intvty"), num(intvty(v)));
            }
        }
    }
    o.insert("schema_version".into(), json!(SCHEMA_VERSION));
    o.insert("benchmark_type".into(), json!(extra.benchmark_type));
    o.insert("api".into(), json!(extra.api));
    o.insert("engine".into(), json!(extra.engine));
    o.insert("endpoint".into(), json!(extra.endpoint));
    o.insert("itl_mode".into(), json!(m.itl_mode.as_str()));
    o.insert("compat".into(), json!(m.compat.as_str()));
    o.insert("num_gpus".into(), json!(id.num_gpus()));
    o.insert("num_requests_total".into(), json!(m.num_requests_total));
    o.insert("num_requests_successful".into(), json!(m.completed));
    o.insert("num_requests_failed".into(), json!(m.failed));
    o.insert("failure_reasons".into(), json!(m.failure_reasons));
    o.insert("point_status".into(), json!(m.point_status.as_str()));
    o.insert("duration".into(), json!(m.duration_s));
    o.insert("request_throughput".into(), json!(m.request_throughput));
    o.insert("output_throughput".into(), json!(m.output_throughput));
    o.insert(
        "total_token_throughput".into(),
        json!(m.total_token_throughput),
    );
    o.insert("input_throughput".into(), json!(m.input_throughput));
    o.insert("mean_isl".into(), num(m.mean_isl));
    o.insert("mean_isl_server".into(), num(m.mean_isl_server));
    o.insert("mean_osl".into(), num(m.mean_osl));
    o.insert("records_file".into(), json!(extra.records_file));
    Value::Object(o)
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
