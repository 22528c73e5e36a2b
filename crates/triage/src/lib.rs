//! Triage: stream job logs, find the first real error, classify it with a signature table kept
//! as data (layer, class, transient/deterministic, fix), and derive the outcome.
//!
//! Must not know about: HTTP, metrics, the store.
