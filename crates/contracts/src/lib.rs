//! Typed contracts between servebench's stages: what `metrics` produces and `store`, `compare`,
//! `report` and the pipeline read.
//!
//! Owns: [`PointStatus`] (one meaning, documented; on-disk strings unchanged), the one point
//! [`Identity`] every row is built from (InferenceX `process_result.py` env inputs, with the
//! [`BenchmarkType`] and [`KvOffload`]), the aggregated point row
//! [`AggRow`] (`agg.json`: known keys typed, unknown keys kept in order so files stay byte
//! for byte what they were) with its JSON schema generated from the same key table
//! ([`agg::agg_row_schema`], checked in as `docs/schema/agg-row.schema.json`), and
//! [`FailureKind`] (the request failure categories of `records.jsonl`), the per-request record
//! [`RequestRecord`] (one line of `records.jsonl`), the eval result row [`EvalRow`], an
//! imported foreign row [`ForeignRow`] (InferenceX rows a baseline import stores), and the
//! generated schemas of `records.jsonl`, `result.json` and `summary.json` ([`schema`]), and the
//! `{:#}` cause-chain text the libraries' error types share ([`chain`]), the secret
//! redaction every recorded command line and URL goes through ([`redact`]), and the stage of a
//! job at its first error ([`JobStage`], one wording for triage's evidence and the attempt
//! comment).
//!
//! The sweep's own files are typed too: a point's raw result [`ResultDoc`] (`result.json`)
//! and the sweep summary [`SummaryDoc`] (`summary.json`) are serde structs whose field order
//! is the files' key order (read and written back byte for byte) and whose schemas are
//! generated from their fields ([`doc`], [`json_doc!`]).
//!
//! Must not know about: HTTP, SQLite, statistics, rendering. It is a leaf: only serde.
#![warn(missing_docs)]

pub mod agg;
pub mod chain;
pub mod doc;
pub mod eval;
pub mod failure;
pub mod foreign;
pub mod identity;
pub mod job_stage;
pub mod labels;
pub mod multinode;
pub mod power;
pub mod record;
pub mod redact;
pub mod result;
pub mod schema;
pub mod stat;
pub mod stats;
pub mod status;
pub mod summary;

pub use agg::{AggRow, AggRowError, StatRow};
pub use eval::EvalRow;
pub use failure::FailureKind;
pub use foreign::ForeignRow;
pub use identity::{BenchmarkType, Identity, KvOffload, KvOffloadBackend};
pub use job_stage::JobStage;
pub use multinode::{MultinodeFields, WorkerFields};
pub use power::{PowerFields, PowerMetrics, PowerSource};
pub use record::{OutputPhases, OutputSource, Phase, RequestRecord};
pub use result::{
    AgentxResultDoc, AgentxServebench, DistStats, OverflowRequests, ReportedCache, RequestRate,
    ResultDoc, ResultFile, ResultServebench, SimClock, SimulatorInfo,
};
pub use stat::Stat;
pub use status::PointStatus;
pub use summary::{ConfidenceSettings, ExtrasPoint, StoreRef, SummaryDoc, SummaryExtras};

/// Version of the agg/summary/result schema (`docs/schema/`).
pub const SCHEMA_VERSION: u32 = 1;
