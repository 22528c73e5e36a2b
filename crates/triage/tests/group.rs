//! This crate's integration tests in one test binary (fewer binaries link faster): each file
//! stays where it was and becomes a module here, so `cargo test -p servebench-triage --test
//! triage_tests <file>::` runs one file's tests. A new test file must be listed here.

#[path = "cases.rs"]
mod cases;
#[path = "classes.rs"]
mod classes;
#[path = "fuzz_reader.rs"]
mod fuzz_reader;
#[path = "multinode.rs"]
mod multinode;
#[path = "placeholders.rs"]
mod placeholders;
#[path = "real_logs.rs"]
mod real_logs;
#[path = "real_text.rs"]
mod real_text;
#[path = "scenario_logs.rs"]
mod scenario_logs;
