//! The AgentX aggregate (MEASUREMENT.md Part 2 §5.7–5.8): per-request records → the InferenceX
//! `agg_*.json` body of `utils/agentic/aggregation/process_agentic_result.py` (single node), with
//! its key sets and key order, 5-decimal rounding and the 10 % error gate of
//! `validate_agentic_result.py`.
//!
//! Input is [`AgentxRecord`], the neutral per-request record both servebench's replay and
//! agentx-harness's `profile_export.jsonl` convert to ([`AgentxRecord::from_aiperf_line`]), so
//! the two aggregates can be computed from the same records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::prom::{ServerCache, ServerKv, ServerMetrics, ServerOffload};

/// Phase of a record (AIPerf `metadata.benchmark_phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordPhase {
    /// Warmup (snapshot primer or cache-pressure request): dropped from every statistic.
    Warmup,
    /// Profiling window.
    Profiling,
}

/// One replayed request, as the aggregate needs it. Latencies in ms, times in ns of one clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentxRecord {
    /// Conversation id: `<trace id>` for the root, `<trace id>::sa:<agent id>` for subagents.
    pub conversation_id: String,
    /// Index of the request within its conversation.
    pub turn_index: u32,
    /// Warmup or profiling.
    pub phase: RecordPhase,
    /// Request start (t0), ns.
    pub start_ns: u64,
    /// Response end, ns.
    pub end_ns: u64,
    /// Time to first token, ms (AIPerf `time_to_first_token`).
    pub ttft_ms: Option<f64>,
    /// Time to the last content token, ms (AIPerf `request_latency`).
    pub request_latency_ms: Option<f64>,
    /// `(request_latency − ttft)/(OSL − 1)`, ms, OSL ≥ 2 (AIPerf `inter_token_latency`).
    pub itl_ms: Option<f64>,
    /// `(response end − t0 − ttft)/(OSL − 1)`, ms (AIPerf `full_response_inter_token_latency`).
    pub full_response_itl_ms: Option<f64>,
    /// Input tokens (server usage), tokens.
    pub isl: Option<u64>,
    /// Output tokens (server usage), tokens.
    pub osl: Option<u64>,
    /// Error text; `Some` = failed request.
    pub error: Option<String>,
}

impl AgentxRecord {
    /// Reads one line of AIPerf's `profile_export.jsonl`. Errors say which field is missing.
    pub fn from_aiperf_line(line: &str) -> Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
        let md = &v["metadata"];
        let m = &v["metrics"];
        let val = |k: &str| {
            m.get(k)
                .and_then(|x| x.get("value"))
                .and_then(|x| x.as_f64())
        };
        let phase = match md.get("benchmark_phase").and_then(|p| p.as_str()) {
            Some("profiling") | None => RecordPhase::Profiling,
            Some(_) => RecordPhase::Warmup,
        };
        let error = match v.get("error") {
            None | Some(serde_json::Value::Null) => None,
            Some(e) => Some(error_category(e)),
        };
        Ok(Self {
            conversation_id: md["conversation_id"]
                .as_str()
                .ok_or("metadata.conversation_id missing")?
                .to_string(),
            turn_index: md["turn_index"]
                .as_u64()
                .ok_or("metadata.turn_index missing")? as u32,
            phase,
            start_ns: md["request_start_ns"].as_u64().unwrap_or(0),
            end_ns: md["request_end_ns"].as_u64().unwrap_or(0),
            ttft_ms: val("time_to_first_token"),
            request_latency_ms: val("request_latency"),
            itl_ms: val("inter_token_latency"),
            full_response_itl_ms: val("full_response_inter_token_latency"),
            isl: val("input_sequence_length").map(|x| x as u64),
            osl: val("output_sequence_length").map(|x| x as u64),
            error,
        })
    }
}

/// InferenceX's error category: `type|error_type|code|class|status`, else the first line of
/// the message up to `:` (at most 120 chars).
pub(crate) fn error_category(e: &serde_json::Value) -> String {
    let message = if let Some(o) = e.as_object() {
        for k in ["type", "error_type", "code", "class", "status"] {
            match o.get(k) {
                None | Some(serde_json::Value::Null) => {}
                Some(serde_json::Value::String(s)) if s.is_empty() => {}
                Some(serde_json::Value::String(s)) => return s.clone(),
                Some(x) => return x.to_string(),
            }
        }
        o.get("message").or_else(|| o.get("error")).map(|m| {
            m.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| m.to_string())
        })
    } else {
        Some(
            e.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string()),
        )
    };
    category_of_message(message.as_deref().unwrap_or(""))
}

/// The category of a plain error message (first line up to `:`, ≤ 120 chars; `unknown`).
pub fn category_of_message(msg: &str) -> String {
    let first = msg.trim().lines().next().unwrap_or("");
    if first.is_empty() {
        return "unknown".into();
    }
    let head = first.split(':').next().unwrap_or("");
    let head = if head.is_empty() { "unknown" } else { head };
    head.chars().take(120).collect()
}

/// numpy-linear percentile of sorted data (`aggregation_common.percentile`); 0 for empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = (sorted.len() - 1) as f64 * (p / 100.0);
    let f = k as usize;
    let c = f + 1;
    if c >= sorted.len() {
        return sorted[f];
    }
    sorted[f] + (k - f as f64) * (sorted[c] - sorted[f])
}

fn mean(v: &[f64]) -> f64 {
    // Python statistics.mean is exact (fractions); a compensated sum is within an ulp or two
    let mut s = 0.0f64;
    let mut c = 0.0f64;
    for &x in v {
        let y = x - c;
        let t = s + y;
        c = (t - s) - y;
        s = t;
    }
    s / v.len() as f64
}

fn pstdev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    let ss: Vec<f64> = v.iter().map(|x| (x - m) * (x - m)).collect();
    mean(&ss).sqrt()
}

/// `{mean, p50, p75, p90, p95, std}` (population std; linear percentiles; no p99).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats6 {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Population standard deviation (0 for one value).
    pub std: f64,
}

impl Stats6 {
    /// Statistics of `values`; `None` when empty (the block is then `{}`).
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut s = values.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        Some(Self {
            mean: mean(values),
            p50: percentile(&s, 50.0),
            p75: percentile(&s, 75.0),
            p90: percentile(&s, 90.0),
            p95: percentile(&s, 95.0),
            std: pstdev(values),
        })
    }
    /// Interactivity from an ITL-like block: `k = 1/k_itl` for mean…p95 and
    /// `std = pstdev({1/x_i})` (`_interactivity_stats`).
    pub fn reciprocal(itl: &Stats6, raw: &[f64]) -> Self {
        let inv: Vec<f64> = raw.iter().filter(|x| **x > 0.0).map(|x| 1.0 / x).collect();
        Self {
            mean: 1.0 / itl.mean,
            p50: 1.0 / itl.p50,
            p75: 1.0 / itl.p75,
            p90: 1.0 / itl.p90,
            p95: 1.0 / itl.p95,
            std: pstdev(&inv),
        }
    }
}

/// A stats block that is `{}` when there were no values.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Block {
    /// The statistics, absent when empty.
    #[serde(flatten)]
    pub stats: Option<Stats6>,
}

/// `request_metrics.qps`: completions per full 1 s window from the first to the last completion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QpsBlock {
    /// Window length, s (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<f64>,
    /// Number of full windows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Mean requests/s (or n/(last − first) when no full window fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Median of the windows, req/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    /// p75, req/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p75: Option<f64>,
    /// p90, req/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    /// p95, req/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95: Option<f64>,
    /// Population std, req/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
}

/// `request_metrics.latency` (seconds; interactivity in tokens/s/user).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyBlock {
    /// Time to first token, s.
    pub ttft: Block,
    /// End-to-end latency (last content token), s.
    pub e2el: Block,
    /// Inter-token latency (= TPOT definition), s.
    pub itl: Block,
    /// Identical to `itl` (InferenceX writes both).
    pub tpot: Block,
    /// 1/ITL statistics, tok/s/user.
    pub intvty: Block,
    /// 1/stat(E2EL/OSL), tok/s/user.
    pub e2e_norm_intvty: Block,
    /// ITL up to the end of the HTTP response, s.
    pub full_response_itl: Block,
    /// 1/full-response ITL, tok/s/user.
    pub full_response_intvty: Block,
}

/// `request_metrics.tokens` (tokens).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TokensBlock {
    /// ISL (server usage).
    pub input: Block,
    /// OSL (server usage).
    pub output_actual: Block,
    /// Trace-recorded `out` of the same (trace, turn index).
    pub output_expected: Block,
}

/// `{tokens_per_second}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tps {
    /// Tokens per second.
    pub tokens_per_second: f64,
}

/// `throughput.per_gpu` (each ÷ total GPUs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerGpu {
    /// (ΣISL + ΣOSL)/duration/GPUs, tok/s/GPU.
    pub total_tput_tps: f64,
    /// ΣOSL/duration/GPUs, tok/s/GPU.
    pub output_tput_tps: f64,
    /// ΣISL/duration/GPUs, tok/s/GPU.
    pub input_tput_tps: f64,
}

/// `request_metrics.throughput` over `max(end) − min(start)` of kept records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputBlock {
    /// ΣISL/duration.
    pub input: Tps,
    /// ΣOSL/duration.
    pub output: Tps,
    /// (ΣISL+ΣOSL)/duration.
    pub total: Tps,
    /// max(end) − min(start), s.
    pub duration_seconds: f64,
    /// Per GPU (empty object when the GPU count is 0).
    pub per_gpu: Option<PerGpu>,
}

/// `request_metrics.cache`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CacheBlock {
    /// Hit blocks / total blocks under an infinite perfect prefix cache (profiling turns).
    pub theoretical_cache_hit_rate: Option<f64>,
}

/// `request_metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestMetrics {
    /// Completions per second.
    pub qps: QpsBlock,
    /// Latency blocks.
    pub latency: LatencyBlock,
    /// Token distributions.
    pub tokens: TokensBlock,
    /// Throughput (`{}` when no kept record).
    pub throughput: Option<ThroughputBlock>,
    /// Cache.
    pub cache: CacheBlock,
}

/// `request_accounting`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Accounting {
    /// Every record.
    pub records_total: u64,
    /// Profiled successes (kept).
    pub records_profiled: u64,
    /// total − kept.
    pub records_dropped_total: u64,
    /// Warmup records.
    pub records_warmup_dropped: u64,
    /// Records with an error (warmup or not).
    pub records_error_dropped: u64,
    /// Error category → count.
    pub error_categories: BTreeMap<String, u64>,
}

/// Identity fields of a single-node point (InferenceX env: RUNNER_TYPE, CONC, IMAGE, …).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AggIdentity {
    /// Runner / hardware label.
    pub hw: String,
    /// Lanes.
    pub conc: u32,
    /// Engine image.
    pub image: String,
    /// Recipe fingerprint.
    pub recipe_fingerprint: String,
    /// Model.
    pub model: String,
    /// InferenceX model prefix.
    pub infmax_model_prefix: String,
    /// Framework (`vllm`, `sglang`, …).
    pub framework: String,
    /// Precision.
    pub precision: String,
    /// Speculative decoding (`none`, `mtp`).
    pub spec_decoding: String,
    /// Tensor parallel.
    pub tp: u32,
    /// Expert parallel.
    pub ep: u32,
    /// `"true"`/`"false"`.
    pub dp_attention: String,
    /// `none` or `dram`.
    pub kv_offloading: String,
    /// Pipeline parallel.
    pub pp: u32,
    /// Decode context parallel.
    pub dcp_size: u32,
    /// Prefill context parallel.
    pub pcp_size: u32,
    /// CPU DRAM GB allocated.
    pub allocated_cpu_dram_gb: u64,
    /// KV-offload backend (`None` without offload).
    #[serde(default)]
    pub kv_offload_backend: Option<KvOffloadBackend>,
}

impl AggIdentity {
    /// The aggregate's identity of a point of `id` at `conc` lanes: the one
    /// [`servebench_contracts::Identity`] in the harness's spelling (`dp_attention` as
    /// `"true"`/`"false"`, no recipe fingerprint as `""`).
    pub fn of(id: &servebench_contracts::Identity, conc: u32) -> AggIdentity {
        AggIdentity {
            hw: id.hw.clone(),
            conc,
            image: id.image.clone(),
            recipe_fingerprint: id.recipe_fingerprint.clone().unwrap_or_default(),
            model: id.model.clone(),
            infmax_model_prefix: id.infmax_model_prefix.clone(),
            framework: id.framework.clone(),
            precision: id.precision.clone(),
            spec_decoding: id.spec_decoding.clone(),
            tp: id.tp,
            ep: id.ep,
            dp_attention: id.dp_attention.to_string(),
            kv_offloading: id.kv_offloading.as_str().to_string(),
            pp: id.pp,
            dcp_size: id.dcp_size,
            pcp_size: id.pcp_size,
            allocated_cpu_dram_gb: id.allocated_cpu_dram_gb,
            kv_offload_backend: id.kv_offload_backend.clone(),
        }
    }

    /// GPUs of a single-node point: TP × PP × PCP.
    pub fn num_gpus(&self) -> u32 {
        self.tp.max(1) * self.pp.max(1) * self.pcp_size.max(1)
    }
}

/// `dataset`: the replayed dataset as the harness describes it (aiperf
/// `profile_export_aiperf.json` `metadata.dataset`, copied by InferenceX's
/// `process_agentic_result.py`). Every key is written; `null` where servebench does not know
/// the value (today the replay fills none of them: `num_dataset_entries` = traces loaded,
/// `source_type`/`loader`/`hf_dataset_name`/`hf_split` = where they came from).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AggDataset {
    /// `public_dataset`, `local_files`, ….
    pub source_type: Option<String>,
    /// The harness's loader name, e.g. `semianalysis_cc_traces_weka_062126_256k`.
    pub loader: Option<String>,
    /// Hugging Face dataset id, e.g. `semianalysisai/cc-traces-weka-062126-256k`.
    pub hf_dataset_name: Option<String>,
    /// Hugging Face split, e.g. `train`.
    pub hf_split: Option<String>,
    /// Traces (conversations) in the dataset.
    pub num_dataset_entries: Option<u64>,
}

/// `kv_offload_backend` when KV offloading is on: `{"name": "lmcache", "version": "aaf7c0d3"}`
/// (InferenceX CI aggregates, e.g. run 29337493492); `null` when off. One type with the agg
/// row's (`servebench_contracts::KvOffloadBackend`).
pub use servebench_contracts::KvOffloadBackend;

/// `server_metrics.tokens.prompt_by_source.raw`: the engine's prompt-token counters by
/// source over the window, tokens. vLLM's `vllm:prompt_tokens_by_source{source=…}` sources are
/// always written (`null` when the engine has no such counter, e.g. SGLang); any other
/// source label (SGLang `sglang:cached_tokens{cache_source=device|host|…}`) follows under its
/// own name, as InferenceX writes it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptSourceRaw {
    /// Prompt tokens received from another engine / the offload connector (vLLM).
    pub external_kv_transfer: Option<f64>,
    /// Prompt tokens served from the local prefix cache (vLLM).
    pub local_cache_hit: Option<f64>,
    /// Prompt tokens computed (prefilled) locally (vLLM).
    pub local_compute: Option<f64>,
    /// Other sources (SGLang cache sources), tokens.
    #[serde(flatten)]
    pub other: BTreeMap<String, f64>,
}

impl PromptSourceRaw {
    /// Sorts a by-source map into the typed fields.
    pub fn from_map(raw: &BTreeMap<String, f64>) -> Self {
        let mut other = raw.clone();
        Self {
            external_kv_transfer: other.remove("external_kv_transfer"),
            local_cache_hit: other.remove("local_cache_hit"),
            local_compute: other.remove("local_compute"),
            other,
        }
    }
}

/// `server_metrics.tokens.prompt_by_source`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AggPromptBySource {
    /// Prompt tokens served from the GPU cache.
    pub gpu_cache_hit: Option<f64>,
    /// From CPU / external cache.
    pub cpu_or_external_cache_hit: Option<f64>,
    /// Computed.
    pub computed: Option<f64>,
    /// Raw per-source counters.
    pub raw: PromptSourceRaw,
}

/// `server_metrics.tokens`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AggServerTokens {
    /// Prompt tokens (server counter, else Σ ISL of kept records).
    pub prompt_total: Option<u64>,
    /// Generation tokens (server counter, else Σ OSL).
    pub generation_total: Option<u64>,
    /// Kept records.
    pub requests_completed: Option<u64>,
    /// By source.
    pub prompt_by_source: AggPromptBySource,
}

/// One entry of `server_metrics.sources`: one scraped engine endpoint (InferenceX:
/// `{"id": "combined|http://localhost:8889/metrics|engine=0", "role": "combined", …}`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerSource {
    /// `<role>|<metrics URL>|engine=<n>`.
    pub id: Option<String>,
    /// `combined`, `prefill` or `decode`.
    pub role: Option<String>,
    /// Prompt tokens counted by this source.
    pub prompt_tokens: Option<u64>,
    /// Generation tokens counted by this source.
    pub generation_tokens: Option<u64>,
    /// Its prefix-cache hit rate (0–1).
    pub prefix_cache_hit_rate: Option<f64>,
    /// Its peak GPU KV usage (0–1).
    pub gpu_kv_cache_usage_pct: Option<f64>,
}

impl ServerSource {
    fn from_map(m: &serde_json::Map<String, serde_json::Value>) -> Self {
        let f = |k: &str| m.get(k).and_then(serde_json::Value::as_f64);
        Self {
            id: m.get("id").and_then(|v| v.as_str()).map(str::to_string),
            role: m.get("role").and_then(|v| v.as_str()).map(str::to_string),
            prompt_tokens: f("prompt_tokens").map(|x| x.round() as u64),
            generation_tokens: f("generation_tokens").map(|x| x.round() as u64),
            prefix_cache_hit_rate: f("prefix_cache_hit_rate"),
            gpu_kv_cache_usage_pct: f("gpu_kv_cache_usage_pct"),
        }
    }
}

/// `server_metrics` as the aggregate writes it: the scraped [`ServerMetrics`] with the
/// by-source counters and the per-source entries as typed fields (InferenceX key sets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggServerMetrics {
    /// Whether any metric was scraped.
    pub present: bool,
    /// `vllm`, `sglang`, `llamacpp` or `none`.
    pub adapter: String,
    /// Metric families seen.
    pub metric_count: u64,
    /// Cache block.
    pub cache: ServerCache,
    /// KV block.
    pub kv_cache: ServerKv,
    /// Offload block.
    pub kv_offload: ServerOffload,
    /// Tokens block.
    pub tokens: AggServerTokens,
    /// Per-engine sources (one per scraped endpoint; empty when the scrape kept none).
    pub sources: Vec<ServerSource>,
}

impl From<ServerMetrics> for AggServerMetrics {
    fn from(m: ServerMetrics) -> Self {
        let p = &m.tokens.prompt_by_source;
        Self {
            present: m.present,
            adapter: m.adapter.clone(),
            metric_count: m.metric_count,
            tokens: AggServerTokens {
                prompt_total: m.tokens.prompt_total,
                generation_total: m.tokens.generation_total,
                requests_completed: m.tokens.requests_completed,
                prompt_by_source: AggPromptBySource {
                    gpu_cache_hit: p.gpu_cache_hit,
                    cpu_or_external_cache_hit: p.cpu_or_external_cache_hit,
                    computed: p.computed,
                    raw: PromptSourceRaw::from_map(&p.raw),
                },
            },
            sources: m.sources.iter().map(ServerSource::from_map).collect(),
            cache: m.cache,
            kv_cache: m.kv_cache,
            kv_offload: m.kv_offload,
        }
    }
}

/// The aggregate (single node), fields in InferenceX order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentxAggregate {
    /// Hardware label.
    pub hw: String,
    /// Lanes.
    pub conc: u32,
    /// Image.
    pub image: String,
    /// Recipe fingerprint.
    pub recipe_fingerprint: String,
    /// Model.
    pub model: String,
    /// Model prefix.
    pub infmax_model_prefix: String,
    /// Framework.
    pub framework: String,
    /// Precision.
    pub precision: String,
    /// Spec decoding.
    pub spec_decoding: String,
    /// Always false here (single node).
    pub disagg: bool,
    /// `agentic-coding`.
    pub scenario_type: String,
    /// Always false here.
    pub is_multinode: bool,
    /// TP.
    pub tp: u32,
    /// EP.
    pub ep: u32,
    /// DP attention.
    pub dp_attention: String,
    /// KV offloading.
    pub kv_offloading: String,
    /// KV offload backend (null when none).
    pub kv_offload_backend: Option<KvOffloadBackend>,
    /// CPU DRAM GB.
    pub allocated_cpu_dram_gb: u64,
    /// All records.
    pub num_requests_total: u64,
    /// Kept records.
    pub num_requests_successful: u64,
    /// Accounting.
    pub request_accounting: Accounting,
    /// PP.
    pub pp: u32,
    /// DCP.
    pub dcp_size: u32,
    /// PCP.
    pub pcp_size: u32,
    /// The replayed dataset (every key written, `null` where unknown; [`AggDataset`]).
    pub dataset: AggDataset,
    /// Request metrics.
    pub request_metrics: RequestMetrics,
    /// Server metrics.
    pub server_metrics: AggServerMetrics,
    /// = `server_metrics.kv_cache.gpu_total_tokens`.
    pub kv_cache_pool_tokens: Option<u64>,
    /// Warnings (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
}

/// Result of the post-run validity gate (`validate_agentic_result.py`).
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// Profiling errors.
    pub errors: u64,
    /// Profiling successes + errors.
    pub completed: u64,
    /// `completed > 0 && errors/completed ≤ 0.10`.
    pub passed: bool,
}

/// The gate: fail when nothing completed or more than 10 % of profiled requests failed.
pub fn error_gate(records: &[AgentxRecord]) -> Gate {
    let prof = records.iter().filter(|r| r.phase == RecordPhase::Profiling);
    let (mut errors, mut ok) = (0u64, 0u64);
    for r in prof {
        if r.error.is_some() {
            errors += 1
        } else {
            ok += 1
        }
    }
    let completed = ok + errors;
    Gate {
        errors,
        completed,
        passed: completed > 0 && (errors as f64 / completed as f64) <= 0.10,
    }
}

/// Inputs besides the records.
#[derive(Debug, Clone, Default)]
pub struct AggInputs {
    /// Identity of the point.
    pub identity: AggIdentity,
    /// `(hit blocks, total blocks)` of the theoretical prefix cache over profiling turns.
    pub theoretical_cache: Option<(u64, u64)>,
    /// Recorded `out` per trace id and top-level request index (`trace_metadata.py`).
    pub expected_out: BTreeMap<String, Vec<u32>>,
    /// Scraped server metrics (already reduced).
    pub server: ServerMetrics,
    /// Extra warnings (short window, …).
    pub warnings: Vec<String>,
}

fn ms_to_s(v: impl Iterator<Item = Option<f64>>) -> Vec<f64> {
    v.flatten()
        .filter(|x| x.is_finite() && *x > 0.0)
        .map(|x| x / 1000.0)
        .collect()
}

/// Computes the aggregate from all records (warmup and errors included; they are dropped and
/// counted here). InferenceX `process_agentic_result.py`: [`Accounting::count`] keeps the
/// profiling records without error; `request_metrics` comes from the kept records one block at
/// a time ([`QpsBlock::of`], [`LatencyBlock::of`], [`TokensBlock::of`],
/// [`ThroughputBlock::of`], [`CacheBlock::of`]); the identity columns from
/// [`AggInputs::identity`].
pub fn aggregate(records: &[AgentxRecord], inp: &AggInputs) -> AgentxAggregate {
    let (acc, kept) = Accounting::count(records);
    let request_metrics = RequestMetrics {
        qps: QpsBlock::of(&kept),
        latency: LatencyBlock::of(&kept),
        tokens: TokensBlock::of(&kept, &inp.expected_out),
        throughput: ThroughputBlock::of(&kept, inp.identity.num_gpus()),
        cache: CacheBlock::of(inp.theoretical_cache),
    };
    let mut server = inp.server.clone();
    crate::prom::fill_totals(&mut server, &kept);
    let mut warnings = inp.warnings.clone();
    if !server.present {
        warnings.insert(0, "server_metrics_export.json missing or empty".into());
    }
    let id = &inp.identity;
    AgentxAggregate {
        hw: id.hw.clone(),
        conc: id.conc,
        image: id.image.clone(),
        recipe_fingerprint: id.recipe_fingerprint.clone(),
        model: id.model.clone(),
        infmax_model_prefix: id.infmax_model_prefix.clone(),
        framework: id.framework.clone(),
        precision: id.precision.clone(),
        spec_decoding: or_default(&id.spec_decoding, "none"),
        disagg: false,
        scenario_type: "agentic-coding".into(),
        is_multinode: false,
        tp: id.tp,
        ep: id.ep,
        dp_attention: or_default(&id.dp_attention, "false"),
        kv_offloading: or_default(&id.kv_offloading, "none"),
        kv_offload_backend: id.kv_offload_backend.clone(),
        allocated_cpu_dram_gb: id.allocated_cpu_dram_gb,
        num_requests_total: acc.records_total,
        num_requests_successful: acc.records_profiled,
        request_accounting: acc,
        pp: id.pp.max(1),
        dcp_size: id.dcp_size.max(1),
        pcp_size: id.pcp_size.max(1),
        // the replay does not pass the dataset's description yet: every key null
        dataset: AggDataset::default(),
        request_metrics,
        kv_cache_pool_tokens: server.kv_cache.gpu_total_tokens,
        server_metrics: server.into(),
        warnings,
    }
}

/// `value`, or `default` when it is empty (the identity columns InferenceX always fills).
fn or_default(value: &str, default: &str) -> String {
    if value.is_empty() {
        default.into()
    } else {
        value.into()
    }
}

impl Accounting {
    /// Counts every record and returns the kept ones (profiling phase, no error): warmup
    /// records and errored records are dropped (an errored warmup record counts in both drop
    /// counters once each, and in `error_categories` under its category).
    fn count(records: &[AgentxRecord]) -> (Accounting, Vec<&AgentxRecord>) {
        let mut acc = Accounting::default();
        let mut kept: Vec<&AgentxRecord> = Vec::new();
        for r in records {
            acc.records_total += 1;
            let warm = r.phase == RecordPhase::Warmup;
            if warm {
                acc.records_warmup_dropped += 1;
            }
            if let Some(e) = &r.error {
                acc.records_error_dropped += 1;
                *acc.error_categories.entry(e.clone()).or_default() += 1;
            }
            if r.error.is_none() && !warm {
                kept.push(r);
            }
        }
        acc.records_profiled = kept.len() as u64;
        acc.records_dropped_total = acc.records_total - acc.records_profiled;
        (acc, kept)
    }
}

impl QpsBlock {
    /// Completions per full 1 s window `[first + i, first + i + 1)` from the first to the last
    /// completion (`end_ns` > 0), s; with no full window the mean is n / (last − first), and
    /// with fewer than two distinct completion instants the block is empty.
    fn of(kept: &[&AgentxRecord]) -> QpsBlock {
        let mut qps = QpsBlock::default();
        let mut ends: Vec<f64> = kept
            .iter()
            .filter(|r| r.end_ns > 0)
            .map(|r| r.end_ns as f64 / 1e9)
            .collect();
        ends.sort_by(|a, b| a.total_cmp(b));
        if !(ends.len() >= 2 && ends[ends.len() - 1] - ends[0] > 0.0) {
            return qps;
        }
        let last = ends[ends.len() - 1];
        let mut vals = Vec::new();
        let mut cur = ends[0];
        while cur + 1.0 <= last {
            let n = ends.iter().filter(|&&e| cur <= e && e < cur + 1.0).count();
            vals.push(n as f64);
            cur += 1.0;
        }
        qps.window_seconds = Some(1.0);
        qps.samples = Some(vals.len() as u64);
        if let Some(s) = Stats6::of(&vals) {
            qps.mean = Some(s.mean);
            qps.p50 = Some(s.p50);
            qps.p75 = Some(s.p75);
            qps.p90 = Some(s.p90);
            qps.p95 = Some(s.p95);
            qps.std = Some(s.std);
        } else {
            qps.mean = Some(ends.len() as f64 / (last - ends[0]));
        }
        qps
    }
}

impl LatencyBlock {
    /// Latency statistics of the kept records, s (finite positive values only); TPOT = ITL;
    /// interactivity blocks are [`Stats6::reciprocal`] of their latency samples, and
    /// `e2e_norm_intvty` of E2EL/OSL per request (E2EL > 0, OSL > 0).
    fn of(kept: &[&AgentxRecord]) -> LatencyBlock {
        let ttft = ms_to_s(kept.iter().map(|r| r.ttft_ms));
        let e2el = ms_to_s(kept.iter().map(|r| r.request_latency_ms));
        let itl = ms_to_s(kept.iter().map(|r| r.itl_ms));
        let fritl = ms_to_s(kept.iter().map(|r| r.full_response_itl_ms));
        let norm: Vec<f64> = kept
            .iter()
            .filter_map(|r| match (r.request_latency_ms, r.osl) {
                (Some(e), Some(o)) if e.is_finite() && e > 0.0 && o > 0 => {
                    Some(e / 1000.0 / o as f64)
                }
                _ => None,
            })
            .collect();
        let itl_s = Stats6::of(&itl);
        let fr_s = Stats6::of(&fritl);
        let norm_s = Stats6::of(&norm);
        LatencyBlock {
            ttft: Block {
                stats: Stats6::of(&ttft),
            },
            e2el: Block {
                stats: Stats6::of(&e2el),
            },
            itl: Block { stats: itl_s },
            tpot: Block { stats: itl_s },
            intvty: Block {
                stats: itl_s.map(|s| Stats6::reciprocal(&s, &itl)),
            },
            e2e_norm_intvty: Block {
                stats: norm_s.map(|s| Stats6::reciprocal(&s, &norm)),
            },
            full_response_itl: Block { stats: fr_s },
            full_response_intvty: Block {
                stats: fr_s.map(|s| Stats6::reciprocal(&s, &fritl)),
            },
        }
    }
}

impl TokensBlock {
    /// ISL / OSL statistics of the kept records (server usage), tokens; `output_expected` looks
    /// each record's (trace = conversation id before `::`, turn index) up in `expected_out`.
    fn of(kept: &[&AgentxRecord], expected_out: &BTreeMap<String, Vec<u32>>) -> TokensBlock {
        let isl: Vec<f64> = kept
            .iter()
            .filter_map(|r| r.isl)
            .map(|x| x as f64)
            .collect();
        let osl: Vec<f64> = kept
            .iter()
            .filter_map(|r| r.osl)
            .map(|x| x as f64)
            .collect();
        let expected: Vec<f64> = kept
            .iter()
            .filter_map(|r| {
                let trace = r.conversation_id.split("::").next()?;
                expected_out
                    .get(trace)?
                    .get(r.turn_index as usize)
                    .map(|&o| o as f64)
            })
            .collect();
        TokensBlock {
            input: Block {
                stats: Stats6::of(&isl),
            },
            output_actual: Block {
                stats: Stats6::of(&osl),
            },
            output_expected: Block {
                stats: Stats6::of(&expected),
            },
        }
    }
}

impl ThroughputBlock {
    /// Token throughput over `max(end) − min(start)` of the kept records (ignoring zero
    /// timestamps), tok/s, and per GPU (÷ `num_gpus`); `None` when that span is not positive.
    fn of(kept: &[&AgentxRecord], num_gpus: u32) -> Option<ThroughputBlock> {
        let first_start = kept
            .iter()
            .filter(|r| r.start_ns > 0)
            .map(|r| r.start_ns)
            .min()?;
        let last_end = kept
            .iter()
            .filter(|r| r.end_ns > 0)
            .map(|r| r.end_ns)
            .max()?;
        if last_end <= first_start {
            return None;
        }
        let d = (last_end - first_start) as f64 / 1e9;
        let ti: u64 = kept.iter().filter_map(|r| r.isl).sum();
        let to: u64 = kept.iter().filter_map(|r| r.osl).sum();
        let (i, o, t) = (ti as f64 / d, to as f64 / d, (ti + to) as f64 / d);
        let g = num_gpus as f64;
        Some(ThroughputBlock {
            input: Tps {
                tokens_per_second: i,
            },
            output: Tps {
                tokens_per_second: o,
            },
            total: Tps {
                tokens_per_second: t,
            },
            duration_seconds: d,
            per_gpu: Some(PerGpu {
                total_tput_tps: t / g,
                output_tput_tps: o / g,
                input_tput_tps: i / g,
            }),
        })
    }
}

impl CacheBlock {
    /// Theoretical hit rate = hit blocks / total blocks; null when there are no blocks.
    fn of(theoretical: Option<(u64, u64)>) -> CacheBlock {
        CacheBlock {
            theoretical_cache_hit_rate: theoretical
                .filter(|(_, total)| *total > 0)
                .map(|(h, t)| h as f64 / t as f64),
        }
    }
}

/// `round_floats`: every finite float rounded to 5 decimals; a rounded value that is integral
/// with |x| ≥ 1 becomes an integer.
pub fn round_value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            if x.is_finite() {
                let r: f64 = format!("{x:.5}").parse().unwrap_or(x);
                *v = if r.abs() >= 1.0 && r.fract() == 0.0 && r.abs() < 9.0e15 {
                    serde_json::Value::from(r as i64)
                } else {
                    serde_json::Value::from(r)
                };
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(round_value),
        serde_json::Value::Object(o) => o.values_mut().for_each(round_value),
        _ => {}
    }
}

/// The aggregate as InferenceX writes it: rounded, `json.dump(indent=2)` layout.
pub fn to_json_text(agg: &AgentxAggregate) -> String {
    let mut v = serde_json::to_value(agg).expect("aggregate serialises");
    round_value(&mut v);
    let mut out = String::new();
    write_py_indent(&mut out, &v, 0);
    out
}

/// The rounded aggregate as a JSON value (what [`to_json_text`] writes), for key-by-key diffs.
pub fn to_rounded_value(agg: &AgentxAggregate) -> serde_json::Value {
    let mut v = serde_json::to_value(agg).expect("aggregate serialises");
    round_value(&mut v);
    v
}

fn write_py_indent(out: &mut String, v: &serde_json::Value, depth: usize) {
    use serde_json::Value as V;
    let pad = |out: &mut String, d: usize| out.extend(std::iter::repeat_n(' ', 2 * d));
    match v {
        V::Null => out.push_str("null"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string())
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string())
            } else {
                out.push_str(&servebench_pyjson::py_float_repr(n.as_f64().unwrap_or(0.0)))
            }
        }
        V::String(s) => servebench_pyjson::write_str_ascii(out, s),
        V::Array(a) if a.is_empty() => out.push_str("[]"),
        V::Array(a) => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                pad(out, depth + 1);
                write_py_indent(out, x, depth + 1);
                out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
            }
            pad(out, depth);
            out.push(']');
        }
        V::Object(o) if o.is_empty() => out.push_str("{}"),
        V::Object(o) => {
            out.push_str("{\n");
            for (i, (k, x)) in o.iter().enumerate() {
                pad(out, depth + 1);
                servebench_pyjson::write_str_ascii(out, k);
                out.push_str(": ");
                write_py_indent(out, x, depth + 1);
                out.push_str(if i + 1 < o.len() { ",\n" } else { "\n" });
            }
            pad(out, depth);
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::manual_is_multiple_of)] // MSRV 1.85
    fn rec(i: u64, phase: RecordPhase, err: Option<&str>) -> AgentxRecord {
        AgentxRecord {
            conversation_id: if i % 2 == 0 {
                "tr".into()
            } else {
                "tr::sa:agent_001".into()
            },
            turn_index: (i % 3) as u32,
            phase,
            start_ns: 1_000_000_000 + i * 500_000_000,
            end_ns: 1_000_000_000 + i * 500_000_000 + 2_000_000_000,
            ttft_ms: Some(100.0 + i as f64),
            request_latency_ms: Some(2000.0),
            itl_ms: Some(10.0 + i as f64),
            full_response_itl_ms: Some(10.5 + i as f64),
            isl: Some(1000 + i),
            osl: Some(100),
            error: err.map(str::to_string),
        }
    }

    #[test]
    fn aggregate_matches_hand_computed_values() {
        let mut rs: Vec<AgentxRecord> = (0..6)
            .map(|i| rec(i, RecordPhase::Profiling, None))
            .collect();
        rs.push(rec(7, RecordPhase::Warmup, None));
        rs.push(rec(8, RecordPhase::Profiling, Some("http_400")));
        let mut inp = AggInputs::default();
        inp.identity.tp = 2;
        inp.identity.conc = 4;
        inp.expected_out.insert("tr".into(), vec![7, 8, 9]);
        inp.theoretical_cache = Some((3, 4));
        let a = aggregate(&rs, &inp);
        assert_eq!(a.request_accounting.records_total, 8);
        assert_eq!(a.request_accounting.records_profiled, 6);
        assert_eq!(a.request_accounting.records_warmup_dropped, 1);
        assert_eq!(a.request_accounting.error_categories["http_400"], 1);
        let rm = &a.request_metrics;
        // ttft 100..105 ms → mean 0.1025 s, p50 0.1025, p90 = 0.1045
        let t = rm.latency.ttft.stats.unwrap();
        assert!((t.mean - 0.1025).abs() < 1e-12);
        assert!((t.p90 - 0.1045).abs() < 1e-12);
        // intvty mean = 1/mean itl; std = pstdev(1/itl_i)
        let itl = rm.latency.itl.stats.unwrap();
        let iv = rm.latency.intvty.stats.unwrap();
        assert!((iv.mean - 1.0 / itl.mean).abs() < 1e-9);
        assert!((iv.p90 - 1.0 / itl.p90).abs() < 1e-9);
        assert_eq!(rm.latency.tpot, rm.latency.itl);
        // e2e norm: 2 s / 100 tokens for all → 50 tok/s, std 0
        let en = rm.latency.e2e_norm_intvty.stats.unwrap();
        assert!((en.mean - 50.0).abs() < 1e-9 && en.std.abs() < 1e-12);
        // throughput: starts 1.0..3.5 s, ends 3.0..5.5 s → duration 4.5 s
        let th = rm.throughput.as_ref().unwrap();
        assert!((th.duration_seconds - 4.5).abs() < 1e-12);
        let isl_sum = (0..6).map(|i| 1000 + i).sum::<u64>() as f64;
        assert!((th.input.tokens_per_second - isl_sum / 4.5).abs() < 1e-9);
        assert!((th.per_gpu.unwrap().total_tput_tps - (isl_sum + 600.0) / 4.5 / 2.0).abs() < 1e-9);
        // expected out looked up by trace id before "::" and turn index: turns 0,1,2,0,1,2
        let ex = rm.tokens.output_expected.stats.unwrap();
        assert!((ex.mean - 8.0).abs() < 1e-12);
        assert_eq!(rm.cache.theoretical_cache_hit_rate, Some(0.75));
        // qps: ends at 3.0,3.5,…,5.5 → windows [3,4),[4,5) → 2,2
        assert_eq!(rm.qps.samples, Some(2));
        assert_eq!(rm.qps.mean, Some(2.0));
        let g = error_gate(&rs);
        assert_eq!((g.errors, g.completed, g.passed), (1, 7, false));
    }

    #[test]
    fn key_sets_and_rounding() {
        let rs: Vec<AgentxRecord> = (0..3)
            .map(|i| rec(i, RecordPhase::Profiling, None))
            .collect();
        let a = aggregate(&rs, &AggInputs::default());
        let v = to_rounded_value(&a);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "hw",
                "conc",
                "image",
                "recipe_fingerprint",
                "model",
                "infmax_model_prefix",
                "framework",
                "precision",
                "spec_decoding",
                "disagg",
                "scenario_type",
                "is_multinode",
                "tp",
                "ep",
                "dp_attention",
                "kv_offloading",
                "kv_offload_backend",
                "allocated_cpu_dram_gb",
                "num_requests_total",
                "num_requests_successful",
                "request_accounting",
                "pp",
                "dcp_size",
                "pcp_size",
                "dataset",
                "request_metrics",
                "server_metrics",
                "kv_cache_pool_tokens",
                "warnings"
            ]
        );
        let lat = v["request_metrics"]["latency"]["ttft"].as_object().unwrap();
        assert_eq!(
            lat.keys().collect::<Vec<_>>(),
            ["mean", "p50", "p75", "p90", "p95", "std"]
        );
        assert_eq!(
            v["request_metrics"]["tokens"]["output_expected"],
            serde_json::json!({})
        );
        // 2 s request latency → e2el mean 2 → written as an int
        assert_eq!(
            v["request_metrics"]["latency"]["e2el"]["mean"],
            serde_json::json!(2)
        );
        let mut x = serde_json::json!([0.123456789, 2.0000001, 0.5]);
        round_value(&mut x);
        assert_eq!(x, serde_json::json!([0.12346, 2, 0.5]));
        let text = to_json_text(&a);
        assert!(
            text.starts_with("{\n  \"hw\": \"\",\n  \"conc\": 0,"),
            "{text}"
        );
    }

    /// Leaf key paths of a JSON value (`a.b.c`, array elements as `a[]`).
    fn paths(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    let p = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    paths(x, &p, out);
                }
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    paths(x, &format!("{at}[]"), out);
                }
            }
            _ => {
                out.insert(at.to_string());
            }
        }
    }

    #[test]
    fn every_key_of_real_ci_aggregates_is_written() {
        // The real InferenceX CI aggregates of ../shared/data/real-results/raw/S7-* (runs
        // 29003473063, 29337493492): every key they carry is in servebench's agentx.json, typed
        // (null where servebench has no value). Error categories are the run's own names.
        let Some(dir) = servebench_testkit::shared_path(
            env!("CARGO_MANIFEST_DIR"),
            "data/real-results/raw/S7-ix-kimik2.7-mi355x-agentic",
        ) else {
            return;
        };
        let mut files = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "json") {
                    files.push(p);
                }
            }
        }
        assert_eq!(files.len(), 10, "{}", dir.display());
        // an aggregate with what a vLLM scrape gives: by-source counters and one source
        let rs: Vec<AgentxRecord> = (0..3)
            .map(|i| rec(i, RecordPhase::Profiling, None))
            .collect();
        let mut inp = AggInputs::default();
        inp.expected_out.insert("tr".into(), vec![7, 8, 9]);
        inp.server.present = true;
        inp.server.adapter = "vllm".into();
        inp.server.tokens.prompt_by_source.raw = [
            ("external_kv_transfer".to_string(), 39675007.0),
            ("local_cache_hit".to_string(), 40707985.0),
            ("local_compute".to_string(), 3979786.0),
        ]
        .into_iter()
        .collect();
        let src = serde_json::json!({
            "id": "combined|http://localhost:8889/metrics|engine=0", "role": "combined",
            "prompt_tokens": 84362778, "generation_tokens": 812864,
            "prefix_cache_hit_rate": 0.28407, "gpu_kv_cache_usage_pct": 0.99459
        });
        inp.server.sources = vec![src.as_object().unwrap().clone()];
        let mut a = aggregate(&rs, &inp);
        let ours_null = to_rounded_value(&a);
        // what the replay does not pass yet is null, key present
        assert_eq!(
            ours_null["dataset"],
            serde_json::json!({"source_type": null, "loader": null, "hf_dataset_name": null,
                "hf_split": null, "num_dataset_entries": null})
        );
        assert_eq!(ours_null["kv_offload_backend"], serde_json::Value::Null);
        a.kv_offload_backend = Some(KvOffloadBackend {
            name: "lmcache".into(),
            version: Some("aaf7c0d3".into()),
        });
        a.dataset.num_dataset_entries = Some(393);
        let ours = to_rounded_value(&a);
        assert_eq!(
            ours["server_metrics"]["tokens"]["prompt_by_source"]["raw"],
            serde_json::json!({"external_kv_transfer": 39675007, "local_cache_hit": 40707985,
                "local_compute": 3979786})
        );
        assert_eq!(ours["server_metrics"]["sources"][0], src);
        let mut have = std::collections::BTreeSet::new();
        paths(&ours, "", &mut have);
        for f in &files {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            let mut theirs = std::collections::BTreeSet::new();
            paths(&v, "", &mut theirs);
            let missing: Vec<&String> = theirs
                .iter()
                .filter(|p| !p.starts_with("request_accounting.error_categories."))
                // a key older aggregates write as a string (`kv_offload_backend: "lmcache"`)
                // is an object here (`{"name", "version"}`): present either way
                .filter(|p| {
                    !have.contains(*p) && !have.iter().any(|h| h.starts_with(&format!("{p}.")))
                })
                .collect();
            assert!(missing.is_empty(), "{}: {missing:?}", f.display());
        }
        // The flat agg_bmk.json rows of S9 (CI artifacts of 06-01…06-04): each key is one of
        // ours under its nested name; `response_cache_hit_rate` (the server-reported per-request
        // reuse) is servebench's result.json `servebench.server_reported_cache.hit_rate`.
        let s9 = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/real-results/raw/S9-amd-fork-agentx/results"
        );
        let nested = |k: &str| -> Option<String> {
            let lat = ["ttft", "e2el", "itl", "tpot", "intvty"];
            let stats = ["mean", "p50", "p75", "p90", "p95", "std"];
            let stat_of = |st: &str| if st == "median" { "p50" } else { st }.to_string();
            if let Some((st, m)) = k.split_once('_') {
                let st2 = stat_of(st);
                if stats.contains(&st2.as_str()) {
                    if lat.contains(&m) {
                        return Some(format!("request_metrics.latency.{m}.{st2}"));
                    }
                    if m == "qps" {
                        return Some(format!("request_metrics.qps.{st2}"));
                    }
                    for (flat, block) in [
                        ("input_tokens", "input"),
                        ("output_tokens_actual", "output_actual"),
                        ("output_tokens_expected", "output_expected"),
                    ] {
                        if m == flat {
                            return Some(format!("request_metrics.tokens.{block}.{st2}"));
                        }
                    }
                }
            }
            let sm = |p: &str| Some(format!("server_metrics.{p}"));
            let rm = |p: &str| Some(format!("request_metrics.{p}"));
            match k {
                "offloading" => Some("kv_offloading".into()),
                "server_gpu_cache_hit_rate" => sm("cache.gpu_cache_hit_rate"),
                "server_cpu_cache_hit_rate" => sm("cache.cpu_cache_hit_rate"),
                "cpu_kv_cache_usage_pct" => sm("kv_cache.cpu_usage_pct"),
                "total_prompt_tokens" => sm("tokens.prompt_total"),
                "total_generation_tokens" => sm("tokens.generation_total"),
                "total_requests_completed" => sm("tokens.requests_completed"),
                "theoretical_cache_hit_rate" => rm("cache.theoretical_cache_hit_rate"),
                "input_tput_tps" => rm("throughput.input.tokens_per_second"),
                "output_tput_tps" => rm("throughput.output.tokens_per_second"),
                "total_tput_tps" => rm("throughput.total.tokens_per_second"),
                "duration_seconds" => rm("throughput.duration_seconds"),
                "tput_per_gpu" => rm("throughput.per_gpu.total_tput_tps"),
                "output_tput_per_gpu" => rm("throughput.per_gpu.output_tput_tps"),
                "input_tput_per_gpu" => rm("throughput.per_gpu.input_tput_tps"),
                _ => k
                    .strip_prefix("kv_offload_")
                    .map(|rest| format!("server_metrics.kv_offload.{rest}"))
                    .or_else(|| Some(k.to_string())),
            }
        };
        let mut stack = vec![std::path::PathBuf::from(s9)];
        let mut flat_rows = 0;
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                if p.file_name().is_none_or(|n| n != "agg_bmk.json") {
                    continue;
                }
                let rows: Vec<serde_json::Value> =
                    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                for r in &rows {
                    flat_rows += 1;
                    for k in r.as_object().unwrap().keys() {
                        if k == "response_cache_hit_rate" {
                            continue;
                        }
                        let n = nested(k).unwrap();
                        assert!(
                            have.contains(&n)
                                || have.iter().any(|h| h.starts_with(&format!("{n}."))),
                            "{}: `{k}` (ours: `{n}`) is not written",
                            p.display()
                        );
                    }
                }
            }
        }
        assert!(flat_rows == 0 || flat_rows >= 400, "{flat_rows} S9 rows");

        // a SGLang scrape: its cache sources follow the vLLM ones (null there)
        let raw = PromptSourceRaw::from_map(
            &[("device".to_string(), 5.0), ("host".to_string(), 2.0)]
                .into_iter()
                .collect(),
        );
        assert_eq!(
            serde_json::to_value(&raw).unwrap(),
            serde_json::json!({"external_kv_transfer": null, "local_cache_hit": null,
                "local_compute": null, "device": 5.0, "host": 2.0})
        );
    }

    #[test]
    fn error_categories_follow_inferencex() {
        assert_eq!(category_of_message("HTTP 400: too long\nmore"), "HTTP 400");
        assert_eq!(category_of_message(""), "unknown");
        let e = serde_json::json!({"code": 400, "message": "x"});
        assert_eq!(error_category(&e), "400");
        let e = serde_json::json!({"message": "Context overflow: 5 > 4"});
        assert_eq!(error_category(&e), "Context overflow");
    }
}
