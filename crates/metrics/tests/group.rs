//! Every integration test of this crate in one test binary (fewer binaries link faster):
//! each file stays where it was and becomes a module here, so `cargo test -p servebench-metrics
//! --test metrics_tests <file>::` runs one file's tests. A new test file must be listed here.

/// Helpers the files share, compiled once for the binary (each file: `use crate::support;`).
mod support;

#[path = "aggregate_power_golden.rs"]
mod aggregate_power_golden;
#[path = "cases.rs"]
mod cases;
#[path = "confidence.rs"]
mod confidence;
#[path = "goodput.rs"]
mod goodput;
#[path = "process_result_golden.rs"]
mod process_result_golden;
#[path = "reasoning.rs"]
mod reasoning;
#[path = "search.rs"]
mod search;
#[path = "window.rs"]
mod window;
