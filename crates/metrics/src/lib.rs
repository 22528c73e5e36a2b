//! Metrics: per-request records → point statistics (MEASUREMENT.md Part 1), the InferenceX
//! `bench_serving` result JSON (Part 2 §1.7) and the aggregated row (Part 2 §2.2–2.6).
//!
//! Must not know about: HTTP, engines, the store, reports.
