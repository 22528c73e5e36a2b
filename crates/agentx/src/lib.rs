//! AgentX: agentic-coding trace replay comparable with InferenceX's own harness
//! (MEASUREMENT.md Part 2 §5; agentx-harness 1.0.12 is the reference).
//!
//! Owns: the Weka trace loader ([`trace`]), token-exact prompt synthesis and the harness's
//! role reconstruction ([`synth`]), the harness's flattened-agent chain splitting
//! ([`chains`]), per-trace conversation plans and lane snapshots ([`plan`]),
//! numpy-compatible start-point draws ([`rng`]), the lane scheduler that drives the measuring
//! client ([`replay`]), Prometheus scraping of the engine ([`prom`]) and the AgentX aggregate
//! with InferenceX's key sets ([`aggregate`]). [`point`] ties them together for one
//! concurrency point.
//!
//! Must not know about: the store, reports, the CLI, engines' launch. HTTP goes through
//! `servebench_client` (request sending, SSE parsing, per-request records); nothing here opens
//! sockets of its own.
#![warn(missing_docs)]

pub mod aggregate;
pub mod aiperf_export;
pub mod chains;
pub mod plan;
pub mod point;
pub mod prom;
pub mod replay;
pub mod rng;
pub mod synth;
pub mod trace;

pub use aggregate::{
    aggregate, error_gate, AgentxAggregate, AgentxRecord, AggIdentity, AggInputs, RecordPhase,
};
pub use point::{run_point, PointConfig, PointResult};
pub use replay::{BodyFields, ReplayConfig, ReplayRecord};
pub use trace::{Trace, TraceError, TraceSource};
