//! This crate's integration tests in one test binary (fewer binaries link faster): each file
//! stays where it was and becomes a module here, so `cargo test -p servebench-agentx --test
//! agentx_tests <file>::` runs one file's tests. A new test file must be listed here, or, if it
//! asserts wall-clock timing, get its own `[[test]]` in Cargo.toml as grace.rs, time_scale.rs do
//! (alone in their binaries, no other test's load runs beside them).

#[path = "chain_split_parity.rs"]
mod chain_split_parity;
#[path = "fuzz_trace.rs"]
mod fuzz_trace;
#[path = "join_schedule.rs"]
mod join_schedule;
#[path = "oracle_parity.rs"]
mod oracle_parity;
