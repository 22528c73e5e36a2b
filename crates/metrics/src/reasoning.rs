//! Reasoning- and tool-aware statistics of a point (docs/measurement.md "Reasoning and tools").
//!
//! Over successful measured requests whose stream carried reasoning or tool-call deltas (the
//! record's `phases`):
//! * TTFT (first token of any kind) is the point's own statistic; TTFO (first visible output:
//!   answer content or a tool call) likewise (`PointMetrics::ttfo`).
//! * **reasoning span** = last − first reasoning token event, ms, per request with reasoning.
//! * **thinking time** = TTFO − TTFT, ms, per request that has both (the wait a user sees
//!   between the first streamed byte of thought and the first visible output).
//! * **time to first tool call** = first tool-call delta − t0, ms.
//! * reasoning tokens: `usage.completion_tokens_details.reasoning_tokens` where the engine
//!   reports it (mean over the requests that have it); otherwise only events are counted —
//!   reasoning tokens are never re-tokenized.

use serde::{Deserialize, Serialize};
use servebench_client::{Phase, RequestRecord};

use crate::stats::Stats;

/// Reasoning / tool statistics of one point (latencies in ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningStats {
    /// Successful requests that streamed any reasoning delta.
    pub requests_with_reasoning: u64,
    /// Successful requests that streamed any tool-call delta.
    pub requests_with_tool_calls: u64,
    /// Successful requests with reasoning but no visible output (e.g. cut by `max_tokens`).
    pub reasoning_without_output: u64,
    /// Last − first reasoning token event, ms.
    pub reasoning_span: Stats,
    /// TTFO − TTFT, ms.
    pub thinking_time: Stats,
    /// First tool-call delta − t0, ms.
    pub first_tool_call: Stats,
    /// Mean reported reasoning tokens (null when the engine reports none).
    pub mean_reasoning_tokens: Option<f64>,
}

/// Reasoning / tool statistics over the successful measured records; `time_scale` multiplies
/// the latencies (the simulator's speedup; 1.0 otherwise). `None` when no request carried
/// reasoning or tool calls.
pub fn reasoning_stats(records: &[RequestRecord], time_scale: f64) -> Option<ReasoningStats> {
    let with: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measured && r.success && r.phases.is_some())
        .collect();
    if with.is_empty() {
        return None;
    }
    let ph = |r: &&RequestRecord| r.phases.clone().expect("filtered");
    let mut span: Vec<f64> = with
        .iter()
        .filter_map(|r| ph(r).reasoning_span_ms())
        .map(|x| x * time_scale)
        .collect();
    let mut think: Vec<f64> = with
        .iter()
        .filter(|r| ph(r).reasoning_events > 0)
        .filter_map(|r| Some((r.ttfo_ms? - r.ttft_ms?) * time_scale))
        .collect();
    let mut tool: Vec<f64> = with
        .iter()
        .filter_map(|r| ph(r).first_tool_call_ms)
        .map(|x| x * time_scale)
        .collect();
    let rt: Vec<u64> = with.iter().filter_map(|r| ph(r).reasoning_tokens).collect();
    Some(ReasoningStats {
        requests_with_reasoning: with.iter().filter(|r| ph(r).reasoning_events > 0).count() as u64,
        requests_with_tool_calls: with.iter().filter(|r| ph(r).tool_call_events > 0).count() as u64,
        reasoning_without_output: with
            .iter()
            .filter(|r| ph(r).reasoning_events > 0 && r.ttfo_ms.is_none())
            .count() as u64,
        reasoning_span: Stats::of(&mut span),
        thinking_time: Stats::of(&mut think),
        first_tool_call: Stats::of(&mut tool),
        mean_reasoning_tokens: (!rt.is_empty())
            .then(|| rt.iter().sum::<u64>() as f64 / rt.len() as f64),
    })
}
