//! Client: drives an OpenAI-compatible engine and produces one record per request.
//!
//! Owns: the SSE parser, the request body per engine profile, the connection pool, the
//! closed/open-loop driver, the per-request record (`records.jsonl`).
//! Must not know about: how prompts were made, statistics, the store, reports.
