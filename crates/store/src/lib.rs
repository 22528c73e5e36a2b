//! Store: every run in SQLite (WAL, migrations): run metadata, points as InferenceX agg rows,
//! eval rows, provenance. Per-request records stay in files referenced by the run.
//!
//! Must not know about: HTTP, how metrics are computed, comparisons, reports.
