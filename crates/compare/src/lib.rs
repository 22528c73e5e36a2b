//! Compare: match candidate points to baseline points on the InferenceX identity, run the
//! comparability gates, compute deltas, decide verdicts (with reasons for every N/A).
//!
//! Must not know about: HTTP, SQLite, rendering.
