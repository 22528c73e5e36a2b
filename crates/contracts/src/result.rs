//! [`ResultDoc`]: a fixed-sequence point's raw result (`DIR/conc*/result.json`): InferenceX
//! `benchmark_serving.py` keys in its order (MEASUREMENT.md Part 2 §1.7; latencies in ms),
//! then the `servebench` block ([`ResultServebench`]). Its schema
//! (`docs/schema/result.schema.json`) is generated from these fields
//! ([`crate::schema::result_schema`]).
//!
//! An AgentX replay point writes another `result.json` ([`AgentxResultDoc`]: the AgentX
//! aggregate with a `servebench` block of its own, [`AgentxServebench`]): [`ResultFile`] holds
//! either.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};

use crate::doc::FieldSchema;
use crate::json_doc;
use crate::PointStatus;

/// InferenceX `request_rate`: requests per second, or `"inf"` (all requests at once, the
/// concurrency being the only limit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestRate {
    /// Poisson (or gamma, see `burstiness`) arrivals at this many req/s.
    PerSecond(f64),
    /// No rate limit: written as the string `"inf"`.
    Infinite,
}

impl RequestRate {
    /// `None` (or a non-finite rate) is [`RequestRate::Infinite`].
    pub fn from_option(rate: Option<f64>) -> RequestRate {
        match rate {
            Some(r) if r.is_finite() => RequestRate::PerSecond(r),
            _ => RequestRate::Infinite,
        }
    }

    /// The rate in req/s, `None` when infinite.
    pub fn per_second(self) -> Option<f64> {
        match self {
            RequestRate::PerSecond(r) => Some(r),
            RequestRate::Infinite => None,
        }
    }
}

impl Serialize for RequestRate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestRate::PerSecond(r) => s.serialize_f64(*r),
            RequestRate::Infinite => s.serialize_str("inf"),
        }
    }
}

impl<'de> Deserialize<'de> for RequestRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "inf" => Ok(RequestRate::Infinite),
            Value::Number(n) => n
                .as_f64()
                .map(RequestRate::PerSecond)
                .ok_or_else(|| serde::de::Error::custom("request_rate: not a number")),
            other => Err(serde::de::Error::custom(format!(
                "request_rate: expected a number or \"inf\", found {other}"
            ))),
        }
    }
}

impl FieldSchema for RequestRate {
    fn field_schema() -> Value {
        json!({"oneOf": [{"type": "number"}, {"const": "inf"}]})
    }
}

/// Which clock the embedded simulator and the client ran on (`--sim-clock`, issue 29).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimClock {
    /// Wall clock: the simulator's engine thread sleeps modelled time ÷ speedup of real time
    /// and the client stamps with the OS clock; numbers move with host load.
    #[default]
    Wall,
    /// Discrete-event clock: client and simulator in one process on a paused tokio clock that
    /// advances only when every task waits; numbers are host-independent and reproducible.
    Virtual,
}

impl SimClock {
    /// `wall` or `virtual` (the `--sim-clock` value and the JSON string).
    pub fn as_str(self) -> &'static str {
        match self {
            SimClock::Wall => "wall",
            SimClock::Virtual => "virtual",
        }
    }
}

impl FieldSchema for SimClock {
    fn field_schema() -> Value {
        json!({"type": "string", "enum": ["wall", "virtual"]})
    }
}

json_doc! {
    /// The embedded simulator a run measured: `{"describe", "speedup", "clock"}` (`null`
    /// against a real endpoint).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct SimulatorInfo {
        /// One line describing the simulated engine (GPU, model, profile).
        #[key("describe", required)]
        pub describe: String,
        /// Time compression of the simulator: modelled s per client-clock s (results are
        /// scaled back to modelled time). On the virtual clock 0.001: its clock runs 1,000×
        /// slower than modelled time (1 ms tick of tokio's timer = 1 µs modelled).
        #[key("speedup", required)]
        pub speedup: f64,
        /// The clock the run was measured on (`wall` or `virtual`); absent in files written
        /// before `--sim-clock` existed (wall).
        #[key("clock", optional)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub clock: Option<SimClock>,
    }
}

json_doc! {
    /// Distribution of one per-request quantity (units of the quantity, here ms): what
    /// `servebench_metrics::Stats` writes.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    pub struct DistStats {
        /// Number of samples.
        #[key("n", required)]
        pub n: u64,
        /// Arithmetic mean.
        #[key("mean", required)]
        pub mean: Option<f64>,
        /// Median (linear percentile 50).
        #[key("median", required)]
        pub median: Option<f64>,
        /// Population standard deviation.
        #[key("std", required)]
        pub std: Option<f64>,
        /// 90th percentile (linear).
        #[key("p90", required)]
        pub p90: Option<f64>,
        /// 99th percentile (linear).
        #[key("p99", required)]
        pub p99: Option<f64>,
        /// 99.9th percentile (linear).
        #[key("p999", required)]
        pub p999: Option<f64>,
        /// Minimum.
        #[key("min", required)]
        pub min: Option<f64>,
        /// Maximum.
        #[key("max", required)]
        pub max: Option<f64>,
    }
}

json_doc! {
    /// The `servebench` block of a fixed-sequence point's `result.json`: what servebench adds
    /// to InferenceX's result (not in InferenceX), in file order.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ResultServebench {
        /// Schema version ([`crate::SCHEMA_VERSION`]).
        #[key("schema_version", required, r#"{"const": 1}"#)]
        pub schema_version: u32,
        /// `servebench` or `inferencex` (`--compat`).
        #[key("compat", required, r#"{"enum": ["servebench", "inferencex"]}"#)]
        pub compat: String,
        /// `chunk` or `token` (`--itl`).
        #[key("itl_mode", required, r#"{"enum": ["chunk", "token"]}"#)]
        pub itl_mode: String,
        /// `completions` or `chat`.
        #[key("api", required, r#"{"enum": ["completions", "chat"]}"#)]
        pub api: String,
        /// Engine profile name.
        #[key("engine", required)]
        pub engine: String,
        /// Endpoint base URL.
        #[key("endpoint", required)]
        pub endpoint: String,
        /// Optional request body fields the engine profile sent (`ignore_eos`, `min_tokens`, …).
        #[key("request_fields", required)]
        pub request_fields: Vec<String>,
        /// Whether every request opened a new connection (`--new-connection-per-request`).
        #[key("new_connection_per_request", required)]
        pub new_connection_per_request: bool,
        /// The point's outcome.
        #[key("point_status", required)]
        pub point_status: PointStatus,
        /// Failed measured requests.
        #[key("num_requests_failed", required)]
        pub num_requests_failed: u64,
        /// Failure category ([`crate::FailureKind`] string) → count.
        #[key("failure_reasons", required)]
        pub failure_reasons: BTreeMap<String, u64>,
        /// Requests cancelled by Ctrl-C (not counted as measured).
        #[key("cancelled_requests", required)]
        pub cancelled_requests: u64,
        /// Warmup requests sent before the measured phase.
        #[key("num_warmups", required)]
        pub num_warmups: u64,
        /// One line describing the dataset.
        #[key("dataset", required)]
        pub dataset: String,
        /// Mean client-side prompt tokens of successful requests, tokens.
        #[key("mean_isl", required)]
        pub mean_isl: Option<f64>,
        /// Mean `usage.prompt_tokens`, tokens (null without usage).
        #[key("mean_isl_server", required)]
        pub mean_isl_server: Option<f64>,
        /// Mean output tokens, tokens.
        #[key("mean_osl", required)]
        pub mean_osl: Option<f64>,
        /// Time to the first output event of any kind (content, reasoning, tool call), ms.
        #[key("ttfo_ms", required)]
        pub ttfo_ms: DistStats,
        /// Client-side queueing (t0 − scheduled), ms.
        #[key("queue_ms", required)]
        pub queue_ms: DistStats,
        /// Most requests in flight at once.
        #[key("peak_concurrency", required)]
        pub peak_concurrency: u64,
        /// Idle keep-alive connections found closed and re-dialled.
        #[key("redials", required)]
        pub redials: u64,
        /// Multi-token events whose per-token split is unknown (`--itl token`).
        #[key("itl_token_split_unknown", required)]
        pub itl_token_split_unknown: u64,
        /// Warning lines of the point.
        #[key("warnings", required)]
        pub warnings: Vec<String>,
        /// The violated validity rules (empty for a valid point).
        #[key("invalid_reasons", optional)]
        #[serde(default)]
        pub invalid_reasons: Vec<String>,
        /// Validity rules that could not be applied, one line each.
        #[key("validity_not_checked", optional)]
        #[serde(default)]
        pub validity_not_checked: Vec<String>,
        /// The embedded simulator, or null against an endpoint.
        #[key("simulator", required)]
        pub simulator: Option<SimulatorInfo>,
        /// Factor from wall to modelled time (the simulator's speedup; 1 against an endpoint).
        #[key("time_scale", required)]
        pub time_scale: f64,
        /// Per-request records, relative to the point directory.
        #[key("records_file", required)]
        pub records_file: String,
        /// Repeat of this point (1-based).
        #[key("repeat", optional)]
        #[serde(default = "one")]
        pub repeat: u32,
        /// Repeats per concurrency.
        #[key("repeats", optional)]
        #[serde(default = "one")]
        pub repeats: u32,
        /// Prefix-cache check of the point (only with `--flush-cache`): open-ended, written by
        /// the pipeline's cache module.
        #[key("prefix_cache", optional, r#"{"type": "object", "description": "only with --flush-cache: flushed, repeated_prompts, hit_tokens, query_tokens, hit rate"}"#)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub prefix_cache: Option<Value>,
    }
}

fn one() -> u32 {
    1
}

json_doc! {
    /// A fixed-sequence point's raw result (`result.json`): InferenceX `benchmark_serving.py`
    /// keys and order (MEASUREMENT.md Part 2 §1.7; `"request_goodput:"` with its colon,
    /// `p99.9_*_ms`), then [`ResultServebench`]. Formulas: MEASUREMENT.md Part 2 §1.6
    /// (`calculate_metrics`), computed by `servebench_metrics::compute`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ResultDoc {
        /// Run start, UTC `%Y%m%d-%H%M%S` (InferenceX `date`).
        #[key("date", required, r#"{"pattern": "^[0-9]{8}-[0-9]{6}$"}"#)]
        pub date: String,
        /// InferenceX `backend`: `vllm`/`openai` (completions) or `openai-chat`.
        #[key("backend", required, r#"{"description": "vllm/openai (completions) or openai-chat"}"#)]
        pub backend: String,
        /// Model id sent in requests (InferenceX `model_id`).
        #[key("model_id", required)]
        pub model_id: String,
        /// Tokenizer of the prompt counts: a path, or `server: …` (InferenceX `tokenizer_id`).
        #[key("tokenizer_id", required)]
        pub tokenizer_id: String,
        /// Always 1 (InferenceX `best_of`).
        #[key("best_of", required, r#"{"const": 1}"#)]
        pub best_of: u32,
        /// Measured prompts (InferenceX `num_prompts`).
        #[key("num_prompts", required)]
        pub num_prompts: u64,
        /// req/s or `"inf"` (InferenceX `request_rate`).
        #[key("request_rate", required)]
        pub request_rate: RequestRate,
        /// Gamma shape of the inter-arrival times; 1 = Poisson (InferenceX `burstiness`).
        #[key("burstiness", required)]
        pub burstiness: f64,
        /// Maximum requests in flight (InferenceX `max_concurrency`).
        #[key("max_concurrency", required)]
        pub max_concurrency: Option<u64>,
        /// Measured phase, s: first measured t0 → last response end (InferenceX `duration`;
        /// modelled s against the simulator).
        #[key("duration", required)]
        pub duration: f64,
        /// Wall-clock start of the measured phase, Unix s (InferenceX
        /// `benchmark_start_time_unix`).
        #[key("benchmark_start_time_unix", required)]
        pub benchmark_start_time_unix: f64,
        /// Wall-clock end of the measured phase, Unix s (InferenceX `benchmark_end_time_unix`).
        #[key("benchmark_end_time_unix", required)]
        pub benchmark_end_time_unix: f64,
        /// Successful requests (InferenceX `completed`).
        #[key("completed", required)]
        pub completed: u64,
        /// Σ client-side prompt tokens of successful requests, tokens (InferenceX
        /// `total_input_tokens`).
        #[key("total_input_tokens", required)]
        pub total_input_tokens: u64,
        /// Σ output tokens of successful requests, tokens (InferenceX `total_output_tokens`).
        #[key("total_output_tokens", required)]
        pub total_output_tokens: u64,
        /// completed / duration, req/s (InferenceX `request_throughput`).
        #[key("request_throughput", required)]
        pub request_throughput: f64,
        /// Always null: no goodput SLOs (InferenceX `"request_goodput:"`, key with the
        /// inherited trailing colon).
        #[key("request_goodput:", required, r#"{"type": "null", "description": "key with the trailing colon inherited from InferenceX; always null (no goodput SLOs)"}"#)]
        pub request_goodput: (),
        /// total output tokens / duration, tok/s (InferenceX `output_throughput`).
        #[key("output_throughput", required)]
        pub output_throughput: f64,
        /// (total input + output tokens) / duration, tok/s (InferenceX
        /// `total_token_throughput`).
        #[key("total_token_throughput", required)]
        pub total_token_throughput: f64,
        /// Prompt tokens of every measured request, dataset order (InferenceX `input_lens`).
        #[key("input_lens", required, r#"{"description": "every measured request, dataset order"}"#)]
        pub input_lens: Vec<u64>,
        /// Output tokens of every measured request, 0 for failed ones (InferenceX
        /// `output_lens`).
        #[key("output_lens", required, r#"{"description": "0 for failed requests"}"#)]
        pub output_lens: Vec<u64>,
            /// mean of TTFT, ms (InferenceX `mean_ttft_ms`); null without samples (0 under compat inferencex).
            #[key("mean_ttft_ms", required)]
            pub mean_ttft_ms: Option<f64>,
            /// median (numpy `percentile` 50, linear) of TTFT, ms (InferenceX `median_ttft_ms`); null without samples (0 under compat inferencex).
            #[key("median_ttft_ms", required)]
            pub median_ttft_ms: Option<f64>,
            /// population standard deviation of TTFT, ms (InferenceX `std_ttft_ms`); null without samples (0 under compat inferencex).
            #[key("std_ttft_ms", required)]
            pub std_ttft_ms: Option<f64>,
            /// 90th percentile (linear) of TTFT, ms (InferenceX `p90_ttft_ms`); null without samples (0 under compat inferencex).
            #[key("p90_ttft_ms", required)]
            pub p90_ttft_ms: Option<f64>,
            /// 99th percentile (linear) of TTFT, ms (InferenceX `p99_ttft_ms`); null without samples (0 under compat inferencex).
            #[key("p99_ttft_ms", required)]
            pub p99_ttft_ms: Option<f64>,
            /// 99.9th percentile (linear) of TTFT, ms (InferenceX `p99.9_ttft_ms`); null without samples (0 under compat inferencex).
            #[key("p99.9_ttft_ms", required)]
            pub p99_9_ttft_ms: Option<f64>,
            /// mean of TPOT, ms (InferenceX `mean_tpot_ms`); null without samples (0 under compat inferencex).
            #[key("mean_tpot_ms", required)]
            pub mean_tpot_ms: Option<f64>,
            /// median (numpy `percentile` 50, linear) of TPOT, ms (InferenceX `median_tpot_ms`); null without samples (0 under compat inferencex).
            #[key("median_tpot_ms", required)]
            pub median_tpot_ms: Option<f64>,
            /// population standard deviation of TPOT, ms (InferenceX `std_tpot_ms`); null without samples (0 under compat inferencex).
            #[key("std_tpot_ms", required)]
            pub std_tpot_ms: Option<f64>,
            /// 90th percentile (linear) of TPOT, ms (InferenceX `p90_tpot_ms`); null without samples (0 under compat inferencex).
            #[key("p90_tpot_ms", required)]
            pub p90_tpot_ms: Option<f64>,
            /// 99th percentile (linear) of TPOT, ms (InferenceX `p99_tpot_ms`); null without samples (0 under compat inferencex).
            #[key("p99_tpot_ms", required)]
            pub p99_tpot_ms: Option<f64>,
            /// 99.9th percentile (linear) of TPOT, ms (InferenceX `p99.9_tpot_ms`); null without samples (0 under compat inferencex).
            #[key("p99.9_tpot_ms", required)]
            pub p99_9_tpot_ms: Option<f64>,
            /// mean of ITL, ms (InferenceX `mean_itl_ms`); null without samples (0 under compat inferencex).
            #[key("mean_itl_ms", required)]
            pub mean_itl_ms: Option<f64>,
            /// median (numpy `percentile` 50, linear) of ITL, ms (InferenceX `median_itl_ms`); null without samples (0 under compat inferencex).
            #[key("median_itl_ms", required)]
            pub median_itl_ms: Option<f64>,
            /// population standard deviation of ITL, ms (InferenceX `std_itl_ms`); null without samples (0 under compat inferencex).
            #[key("std_itl_ms", required)]
            pub std_itl_ms: Option<f64>,
            /// 90th percentile (linear) of ITL, ms (InferenceX `p90_itl_ms`); null without samples (0 under compat inferencex).
            #[key("p90_itl_ms", required)]
            pub p90_itl_ms: Option<f64>,
            /// 99th percentile (linear) of ITL, ms (InferenceX `p99_itl_ms`); null without samples (0 under compat inferencex).
            #[key("p99_itl_ms", required)]
            pub p99_itl_ms: Option<f64>,
            /// 99.9th percentile (linear) of ITL, ms (InferenceX `p99.9_itl_ms`); null without samples (0 under compat inferencex).
            #[key("p99.9_itl_ms", required)]
            pub p99_9_itl_ms: Option<f64>,
            /// mean of E2EL, ms (InferenceX `mean_e2el_ms`); null without samples (0 under compat inferencex).
            #[key("mean_e2el_ms", required)]
            pub mean_e2el_ms: Option<f64>,
            /// median (numpy `percentile` 50, linear) of E2EL, ms (InferenceX `median_e2el_ms`); null without samples (0 under compat inferencex).
            #[key("median_e2el_ms", required)]
            pub median_e2el_ms: Option<f64>,
            /// population standard deviation of E2EL, ms (InferenceX `std_e2el_ms`); null without samples (0 under compat inferencex).
            #[key("std_e2el_ms", required)]
            pub std_e2el_ms: Option<f64>,
            /// 90th percentile (linear) of E2EL, ms (InferenceX `p90_e2el_ms`); null without samples (0 under compat inferencex).
            #[key("p90_e2el_ms", required)]
            pub p90_e2el_ms: Option<f64>,
            /// 99th percentile (linear) of E2EL, ms (InferenceX `p99_e2el_ms`); null without samples (0 under compat inferencex).
            #[key("p99_e2el_ms", required)]
            pub p99_e2el_ms: Option<f64>,
            /// 99.9th percentile (linear) of E2EL, ms (InferenceX `p99.9_e2el_ms`); null without samples (0 under compat inferencex).
            #[key("p99.9_e2el_ms", required)]
            pub p99_9_e2el_ms: Option<f64>,
        /// servebench's additions.
        #[key("servebench", required, r#"{"description": "servebench additions (not in InferenceX's result.json)"}"#)]
        pub servebench: ResultServebench,
    }
}

impl ResultDoc {
    /// Factor from wall to modelled time (`servebench.time_scale`).
    pub fn time_scale(&self) -> f64 {
        self.servebench.time_scale
    }
}

json_doc! {
    /// Context-overflow rejections of an AgentX point (the harness's skip path: counted
    /// apart, not failed requests; docs/measurement.md §13.1).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct OverflowRequests {
        /// Rejected warmup requests.
        #[key("warmup", required)]
        pub warmup: u64,
        /// Rejected profiling requests.
        #[key("profiling", required)]
        pub profiling: u64,
        /// Every profiling response, rejections included (the harness's `total_responses`).
        #[key("profiling_responses", required)]
        pub profiling_responses: u64,
    }
}

/// The harness's limit on context-overflow rejections: more than this share of the profiling
/// responses makes the submission invalid (aiperf `CONTEXT_OVERFLOW_RATE_LIMIT` = 0.01,
/// strictly greater than; `context_overflow_rate_exceeded`).
pub const CONTEXT_OVERFLOW_RATE_LIMIT: f64 = 0.01;

impl OverflowRequests {
    /// `profiling / profiling_responses` (0 without responses, as the harness treats it).
    pub fn rate(&self) -> f64 {
        if self.profiling_responses == 0 {
            0.0
        } else {
            self.profiling as f64 / self.profiling_responses as f64
        }
    }

    /// Whether [`OverflowRequests::rate`] is above [`CONTEXT_OVERFLOW_RATE_LIMIT`] (strictly:
    /// exactly 1 % is accepted, as in aiperf `compute_submission_outcome`).
    pub fn rate_exceeded(&self) -> bool {
        self.rate() > CONTEXT_OVERFLOW_RATE_LIMIT
    }
}

json_doc! {
    /// Prefix-cache reuse as the server reported it per request
    /// (`usage.prompt_tokens_details.cached_tokens`) over the profiling requests it served: the
    /// point's own requests only, unlike the server-wide `/metrics` counters.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    pub struct ReportedCache {
        /// Served profiling requests with `usage.prompt_tokens`.
        #[key("requests", required)]
        pub requests: u64,
        /// Of those, the requests whose usage carried `cached_tokens`.
        #[key("requests_reporting", required)]
        pub requests_reporting: u64,
        /// Σ `cached_tokens` of the reporting requests, tokens.
        #[key("cached_tokens", required)]
        pub cached_tokens: u64,
        /// Σ `prompt_tokens` of the reporting requests, tokens.
        #[key("prompt_tokens", required)]
        pub prompt_tokens: u64,
        /// `cached_tokens / prompt_tokens`; null when no request reported.
        #[key("hit_rate", required)]
        pub hit_rate: Option<f64>,
    }
}

impl ReportedCache {
    /// Adds one served request: `prompt` = `usage.prompt_tokens`, `cached` =
    /// `usage.prompt_tokens_details.cached_tokens` (requests without `prompt` are not counted).
    pub fn add(&mut self, prompt: Option<u64>, cached: Option<u64>) {
        let Some(p) = prompt else { return };
        self.requests += 1;
        if let Some(c) = cached {
            self.requests_reporting += 1;
            self.cached_tokens += c;
            self.prompt_tokens += p;
        }
        self.hit_rate =
            (self.prompt_tokens > 0).then(|| self.cached_tokens as f64 / self.prompt_tokens as f64);
    }
}

json_doc! {
    /// The `servebench` block of an AgentX point's `result.json`: what servebench adds to the
    /// AgentX aggregate (not in InferenceX), in file order.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct AgentxServebench {
        /// The replay's per-request file (`agentx_records.jsonl`: conversation, turn, phase,
        /// marker, roles, timings).
        #[key("records_file", required)]
        pub records_file: String,
        /// The measuring client's per-request file (`records.jsonl`).
        #[key("client_records_file", required)]
        pub client_records_file: String,
        /// Whether at most 10 % of the profiling requests failed (InferenceX
        /// `--failed-request-threshold 0.10`; context-overflow rejections not counted).
        #[key("error_gate_passed", required)]
        pub error_gate_passed: bool,
        /// Sessions ended by a context-overflow rejection, warmup included.
        #[key("context_overflows", required)]
        pub context_overflows: u64,
        /// The rejected requests by phase.
        #[key("context_overflow_requests", optional)]
        #[serde(default)]
        pub context_overflow_requests: OverflowRequests,
        /// Why the point is not a valid InferenceX submission, with the harness's codes
        /// (`unsafe_override`, `context_overflow_rate_exceeded`, `run_cancelled`); empty: valid.
        #[key("submission_invalid_reasons", optional)]
        #[serde(default)]
        pub submission_invalid_reasons: Vec<String>,
        /// Per-request prefix-cache reuse the server reported over the served profiling
        /// requests.
        #[key("server_reported_cache", optional)]
        #[serde(default)]
        pub server_reported_cache: ReportedCache,
        /// Whether the profiling window was under 900 s (like `--unsafe-override`).
        #[key("short_window", required)]
        pub short_window: bool,
        /// How prompt tokens were counted (the tokenizer, or 4 characters a token).
        #[key("token_counting", required)]
        pub token_counting: String,
        /// The embedded simulator, or null against an endpoint.
        #[key("simulator", required)]
        pub simulator: Option<SimulatorInfo>,
        /// Factor from wall to modelled time (the simulator's speedup; 1 against an endpoint).
        #[key("time_scale", required)]
        pub time_scale: f64,
        /// This measurement's index (1-based) among the point's repeats.
        #[key("repeat", required)]
        pub repeat: u32,
        /// Measurements per concurrency (`--repeats`).
        #[key("repeats", required)]
        pub repeats: u32,
    }
}

/// An AgentX point's `result.json`: the AgentX aggregate with InferenceX's key sets (rounded as
/// InferenceX writes it; built and owned by `servebench-agentx`, kept here as an open map
/// because its shape is the reference's) followed by [`AgentxServebench`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentxResultDoc {
    /// The aggregate's keys, in order.
    #[serde(flatten)]
    pub aggregate: serde_json::Map<String, Value>,
    /// servebench's additions.
    pub servebench: AgentxServebench,
}

/// What a point's `result.json` holds: a fixed-sequence point's [`ResultDoc`], an AgentX
/// point's [`AgentxResultDoc`], or (read back from a file of another writer) any other JSON,
/// kept as written. Reading tries them in that order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResultFile {
    /// A fixed-sequence point.
    Single(Box<ResultDoc>),
    /// An AgentX replay point.
    Agentx(Box<AgentxResultDoc>),
    /// Another writer's result, as written.
    Other(Value),
}

impl ResultFile {
    /// `servebench.time_scale` (factor from wall to modelled time); 1 when absent.
    pub fn time_scale(&self) -> f64 {
        match self {
            ResultFile::Single(d) => d.time_scale(),
            ResultFile::Agentx(d) => d.servebench.time_scale,
            ResultFile::Other(v) => v
                .get("servebench")
                .and_then(|b| b.get("time_scale"))
                .and_then(Value::as_f64)
                .unwrap_or(1.0),
        }
    }

    /// The file's text: pretty JSON and a final newline ([`crate::doc::file_text`]).
    pub fn file_text(&self) -> String {
        crate::doc::file_text(self)
    }

    /// The fixed-sequence result, if this is one.
    pub fn single(&self) -> Option<&ResultDoc> {
        match self {
            ResultFile::Single(d) => Some(d),
            ResultFile::Agentx(_) | ResultFile::Other(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_cache_counts_only_requests_that_said() {
        let mut c = ReportedCache::default();
        c.add(None, Some(5)); // no usage: not a served request with a prompt count
        c.add(Some(100), None); // usage without cached_tokens
        assert_eq!((c.requests, c.requests_reporting, c.hit_rate), (1, 0, None));
        c.add(Some(100), Some(80));
        c.add(Some(300), Some(0));
        assert_eq!((c.requests, c.requests_reporting), (3, 2));
        assert_eq!((c.cached_tokens, c.prompt_tokens), (80, 400));
        assert_eq!(c.hit_rate, Some(0.2));
    }

    #[test]
    fn overflow_rate_limit_is_strictly_greater_than_one_percent() {
        let c = |profiling, profiling_responses| OverflowRequests {
            warmup: 0,
            profiling,
            profiling_responses,
        };
        // exactly 1 % is accepted (aiperf pins the boundary the same way)
        assert!(!c(1, 100).rate_exceeded());
        assert!(c(2, 100).rate_exceeded());
        assert!(c(1, 99).rate_exceeded());
        // no responses: rate 0, the rule does not apply
        assert_eq!(c(0, 0).rate(), 0.0);
        assert!(!c(0, 0).rate_exceeded());
    }
}
