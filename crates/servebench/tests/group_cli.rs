//! Offline CLI tests: catalog, matrix, changelog, compare, report, store, triage, bump (mock registry), docs and wiring; no simulator load, no services. Fast.
//!
//! One test binary for several test files (fewer binaries link faster): each file stays
//! where it was and becomes a module here, so `cargo test -p servebench --test group_cli <file>::`
//! runs one file's tests.

#[path = "attempt_scenario.rs"]
mod attempt_scenario;
#[path = "attempt_simulated.rs"]
mod attempt_simulated;
#[path = "bump_cli.rs"]
mod bump_cli;
#[path = "bump_scenario.rs"]
mod bump_scenario;
#[path = "catalog_cli.rs"]
mod catalog_cli;
#[path = "changelog_cli.rs"]
mod changelog_cli;
#[path = "compare_cli.rs"]
mod compare_cli;
#[path = "matrix_golden_cli.rs"]
mod matrix_golden_cli;
#[path = "process_result_cli.rs"]
mod process_result_cli;
#[path = "report_cli.rs"]
mod report_cli;
#[path = "store_cli.rs"]
mod store_cli;
#[path = "sweep_guards.rs"]
mod sweep_guards;
#[path = "sweep_notes.rs"]
mod sweep_notes;
#[path = "tls_endpoint.rs"]
mod tls_endpoint;
#[path = "triage_cli.rs"]
mod triage_cli;
#[path = "typed_docs.rs"]
mod typed_docs;
#[path = "wiring_bump.rs"]
mod wiring_bump;
#[path = "wiring_endpoint.rs"]
mod wiring_endpoint;
