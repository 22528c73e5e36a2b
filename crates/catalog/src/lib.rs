//! Catalog: InferenceX master configs, runners, matrix expansion, change log.
//!
//! Owns: reading and validating `*-master.yaml` / `runners.yaml` / `perf-changelog.yaml`,
//! expanding entries into matrix points, eval marking, the recipe fingerprint (canonical JSON).
//! Must not know about: HTTP, engines, measuring, the store or reports.
//!
//! Modules, in data-flow order:
//! * [`yaml`] — YAML → positioned node tree, typed like PyYAML's `safe_load`;
//! * [`de`] — serde over that tree (errors carry line:column and the field path);
//! * [`schema`] — the typed master-config schema and rules V1–V15;
//! * [`catalog`] — loading/merging master files (V16) and `runners.yaml`;
//! * [`matrix`] — `full-sweep` / `test-config` expansion and eval marking (generator parity);
//! * [`changelog`] — `perf-changelog.yaml`: processing a diff into the sweep matrix,
//!   append-only validation, appending entries byte-safely;
//! * [`pyjson`] — Python-identical JSON text and the SHA-256 recipe fingerprint.
#![warn(missing_docs)]

pub mod catalog;
pub mod changelog;
pub mod de;
pub mod error;
pub mod matrix;
pub mod pyjson;
pub mod schema;
pub mod yaml;

pub use catalog::{Catalog, Hardware, Runners};
pub use error::{CatalogError, Diagnostic};
pub use matrix::{Common, FullSweep, Mode, Row, TestConfig};
pub use pyjson::recipe_fingerprint;
#[cfg(test)]
mod alloc_guard;
