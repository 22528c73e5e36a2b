//! Catalog: InferenceX master configs, runners, matrix expansion, change log.
//!
//! Owns: reading and validating `*-master.yaml` / `runners.yaml` / `perf-changelog.yaml`,
//! expanding entries into matrix points, eval marking, the recipe fingerprint (canonical JSON).
//! Must not know about: HTTP, engines, measuring, the store or reports.
