//! This crate's integration tests in one test binary (fewer binaries link faster): each file
//! stays where it was and becomes a module here, so `cargo test -p servebench-client --test
//! client_tests <file>::` runs one file's tests. A new test file must be listed here, or, if it
//! asserts wall-clock timing, get its own `[[test]]` in Cargo.toml as cases_live.rs, faults.rs do
//! (alone in their binaries, no other test's load runs beside them).

#[path = "cases_stream.rs"]
mod cases_stream;
#[path = "engine_formats.rs"]
mod engine_formats;
#[path = "fuzz_http.rs"]
mod fuzz_http;
#[path = "fuzz_sse.rs"]
mod fuzz_sse;
