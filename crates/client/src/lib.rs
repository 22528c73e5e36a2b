//! Client: drives an OpenAI-compatible engine and produces one record per request.
//!
//! Owns: the SSE parser, the request body per engine profile, the connection pool, the
//! closed/open-loop driver, the per-request record (`records.jsonl`).
//! Must not know about: how prompts were made, statistics, the store, reports, which roots a
//! TLS connection trusts or where the API key comes from (`servebench-endpoint` decides and
//! hands them over in [`Endpoint`]).
//!
//! Layers, bottom up: [`sse`] (bytes → events, no line-length limit) → [`chunk`] (one event's
//! JSON → token-event facts, allocation-free) → [`stream`] (events + arrival times → TTFT, E2EL,
//! ITL gaps, usage, success; servebench rules or InferenceX compat) → [`http`] (our own lean
//! HTTP/1.1 over `TcpStream`, or over TLS (`tokio-rustls`) for `https://`, heads parsed by
//! `httparse`: one measured request, re-dial of closed keep-alive connections, timeouts; the
//! one [`CancelToken`]) → [`driver`]
//! (closed/open loop over a [`servebench_workload::RequestSource`]). [`profile`] builds the body
//! per engine; [`tokenize`] counts prompt tokens with the server when no tokenizer is local.
//! The hot path for benchmarks is [`stream::parse_stream`] (or [`sse::SseFramer`] +
//! [`stream::StreamState`] directly).
//!
//! Errors: a measured request never fails, its failure is a typed
//! [`servebench_contracts::FailureKind`] in its record; the cold paths (URL parsing, one-off
//! requests, server-side token counting, record files) return [`ClientError`].
#![warn(missing_docs)]

pub mod chunk;
mod chunk_fast;
pub mod driver;
pub mod error;
pub mod http;
pub mod mock;
pub mod profile;
pub mod record;
pub mod sse;
pub mod stream;
pub mod tokenize;

pub use driver::{run_phase, Load, PhaseResult, RecordSink};
pub use error::{ClientError, UrlProblem};
pub use http::{Cancel, CancelToken, ClientCtx, Clock, Endpoint, MemoryDial};
pub use profile::{unknown_fields_in, BodyBuilder, Engine};
pub use record::{read_records, JsonlWriter, Phase, RecordWriterThread, RequestRecord};
pub use stream::{
    parse_stream, Api, Compat, OutputPhases, OutputSource, StreamOutcome, StreamState,
};
