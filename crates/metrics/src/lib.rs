//! Metrics: per-request records → point statistics (MEASUREMENT.md Part 1), the InferenceX
//! `bench_serving` result JSON (Part 2 §1.7) and the aggregated row (Part 2 §2.2–2.6).
//!
//! Must not know about: HTTP, engines, the store, reports. (It reads the client's plain-data
//! [`servebench_client::RequestRecord`] and nothing else of the client.)
//!
//! * [`stats`] — numpy-linear percentiles, population std, null for empty sets.
//! * [`point`] — successes/failures, throughput, TTFT/TPOT/ITL/E2EL/TTFO, the 5 % failure gate,
//!   per-token ITL, warnings; InferenceX counting under `Compat::InferenceX` (empty → 0, duration
//!   = driver window).
//! * [`output`] — the raw result JSON and the agg row (per-GPU throughput, seconds,
//!   interactivity).
//! * [`inferencex`] — InferenceX `process_result.py` parity: raw result + its environment →
//!   `agg_<RESULT_FILENAME>.json` and the power-validation sidecar, byte for byte.
//! * [`power`] — measured GPU energy: InferenceX `aggregate_power.py` and the AgentX power
//!   adapter (telemetry CSV → per-GPU energy → agg-row patch and validation sidecar).
//! * [`goodput`] — `--slo` objectives, per-request goodness, goodput (req/s, tok/s/GPU) with
//!   failures counted against it, SLO attainment.
//! * [`reasoning`] — reasoning span, thinking time, time to first tool call.
//! * [`search`] — the SLO search state machine (bracket, bisect, knee with evidence).
//! * [`window`] — the steady-state window of a closed loop (ramp-up and drain excluded).
//! * [`confidence`] — seeded request bootstrap, t-interval across repeats, small-sample rule.
//! * [`validity`] — contract violations that invalidate a point (fixed output length, prompt
//!   length vs `usage.prompt_tokens`).
#![warn(missing_docs)]

pub mod confidence;
pub mod goodput;
pub mod inferencex;
pub mod output;
pub mod point;
pub mod power;
pub mod reasoning;
pub mod search;
pub mod stats;
pub mod validity;
pub mod window;

pub use output::{
    agg_row, dist_stats, intvty, result_doc, AggExtra, Identity, ResultSetup, RunInfo,
    SCHEMA_VERSION,
};
pub use point::{
    compute, per_token_itl, ItlMode, PointMetrics, PointOptions, PointStatus, PromptCount,
};
/// The typed files the numbers land in (`servebench-contracts`): `agg.json` rows, a point's
/// `result.json`, the sweep's `summary.json`.
pub use servebench_contracts::{
    AggRow, RequestRate, ResultDoc, ResultFile, SimulatorInfo, StatRow, SummaryDoc,
};
pub use stats::{percentile, Stats};
pub use validity::{PromptCheck, Validity, ValidityOptions};
