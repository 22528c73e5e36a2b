//! [`RequestRecord`]: one request as measured, one JSON line of `records.jsonl` (written by the
//! client as each request completes, read by `metrics`, `slo`, `agentx` and the preflight).
//!
//! The field order is the on-disk key order; optional fields marked "absent otherwise" are
//! left out of the line when empty, so plain records keep their bytes.

use serde::{Deserialize, Serialize};

use crate::failure::FailureKind;

/// Benchmark phase of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Discarded warmup request.
    Warmup,
    /// Measured request.
    Measured,
}

/// Where `output_tokens` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputSource {
    /// `usage.completion_tokens`.
    Usage,
    /// Counted token events (no usage in the stream).
    Chunks,
    /// InferenceX compat without usage: 0.
    None,
}

/// Output phases of a stream that carried reasoning or tool-call deltas (servebench rules
/// only; `None` otherwise, so plain streams' records are unchanged). Times are ms after t0, at
/// event arrival.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputPhases {
    /// First reasoning (`reasoning_content` / `reasoning`) token event, ms.
    pub first_reasoning_ms: Option<f64>,
    /// Last reasoning token event, ms.
    pub last_reasoning_ms: Option<f64>,
    /// Token events that carried reasoning.
    pub reasoning_events: u32,
    /// `usage.completion_tokens_details.reasoning_tokens`, when the engine reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// First answer-content token event, ms.
    pub first_content_ms: Option<f64>,
    /// First tool-call delta, ms.
    pub first_tool_call_ms: Option<f64>,
    /// Token events that carried tool-call deltas.
    pub tool_call_events: u32,
}

impl OutputPhases {
    /// Reasoning span = last − first reasoning token event, ms (0 for a single event; `None`
    /// without reasoning).
    pub fn reasoning_span_ms(&self) -> Option<f64> {
        Some(self.last_reasoning_ms? - self.first_reasoning_ms?)
    }
}

/// One request as measured. Times `*_ns` are ns since the run's clock origin (monotonic);
/// `*_ms` are milliseconds relative to `t0_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Index in the dataset (or the workload's turn id).
    pub id: u64,
    /// `warmup` or `measured`.
    pub phase: Phase,
    /// `(session, turn)` for multi-turn workloads; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<(u64, u32)>,
    /// `id` field of the response chunks.
    pub response_id: Option<String>,
    /// When the request was due: the arrival time (open loop) or the moment its lane became
    /// free (closed loop), ns.
    pub scheduled_ns: u64,
    /// When the request bytes were handed to the connection (servebench) or, under InferenceX
    /// compat, before the connection was opened (InferenceX `st`), ns.
    pub t0_ns: u64,
    /// When the response ended (last byte or error), ns.
    pub end_ns: u64,
    /// `t0 − scheduled`, ms: time spent queued in the client.
    pub queue_ms: f64,
    /// TCP connect time when this request dialled a connection, ms.
    pub connect_ms: Option<f64>,
    /// Keep-alive connections found closed by the server and re-dialled (never a failure).
    pub redials: u32,
    /// Time to first token event, ms.
    pub ttft_ms: Option<f64>,
    /// Time to first visible output (content or tool call, reasoning excluded), ms; null if
    /// none.
    pub ttfo_ms: Option<f64>,
    /// Time to the last token event, ms.
    pub e2el_ms: Option<f64>,
    /// `(e2el − ttft)/(output_tokens − 1)`, only when output_tokens > 1, ms (MEASUREMENT.md
    /// Part 1).
    pub tpot_ms: Option<f64>,
    /// Gaps between consecutive token events (per chunk), ms.
    pub itl_ms: Vec<f32>,
    /// Tokens per token event when some event carried more than one (from per-chunk usage);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_chunk: Option<Vec<u32>>,
    /// Number of token events.
    pub token_events: u32,
    /// Output tokens (`usage.completion_tokens`, or the token-event count).
    pub output_tokens: u64,
    /// `usage`, `chunks` or (InferenceX compat without usage) `none`.
    pub output_tokens_source: OutputSource,
    /// Prompt tokens as counted by the workload, tokens.
    pub prompt_tokens_client: Option<u32>,
    /// `usage.prompt_tokens`, tokens.
    pub prompt_tokens_server: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens the server served from its
    /// prefix cache, tokens; absent when the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_cached: Option<u64>,
    /// `max_tokens` sent, tokens.
    pub requested_output_tokens: u32,
    /// HTTP status, when a response came.
    pub http_status: Option<u16>,
    /// Success per MEASUREMENT.md Part 1 (or the InferenceX rule under compat).
    pub success: bool,
    /// Failure category, written as its string (`no_token`, `stream_error:<code>`,
    /// `stream_error_after_tokens`, `http_<status>`, `timeout`, `connect`, `disconnected`,
    /// `disconnected_after_tokens`, `bad_event`, `cancelled`, `context_overflow`, (compat) `exception`).
    pub failure: Option<FailureKind>,
    /// Error text (server message, transport error) kept for triage.
    pub error: Option<String>,
    /// Per-request warnings: `usage_missing`, `output_tokens_mismatch` (≠ cap under
    /// `ignore_eos`), `output_tokens_below_request`, `output_tokens_exceed_cap`, `isl_mismatch`
    /// (server prompt count differs from the client's by more than 5 %); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Reasoning / tool-call phase times, only for streams that carried such deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<OutputPhases>,
    /// Generated text, only when the workload asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl RequestRecord {
    /// Whether Ctrl-C cancelled the request ([`FailureKind::Cancelled`]): such requests are
    /// left out of a point's counts.
    pub fn is_cancelled(&self) -> bool {
        self.failure.as_ref().is_some_and(FailureKind::is_cancelled)
    }

    /// Whether the request counts in its point's statistics: not cancelled by Ctrl-C and not
    /// rejected as longer than the server's context ([`FailureKind::ContextOverflow`], AgentX:
    /// counted apart, as InferenceX's harness does).
    pub fn counts_in_point(&self) -> bool {
        !self
            .failure
            .as_ref()
            .is_some_and(|f| f.is_cancelled() || f.is_context_overflow())
    }
}
