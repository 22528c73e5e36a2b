//! This crate's integration tests in one test binary (fewer binaries link faster): each file
//! stays where it was and becomes a module here, so `cargo test -p servebench-sim --test
//! sim_tests <file>::` runs one file's tests. A new test file must be listed here, or, if it
//! asserts wall-clock timing, get its own `[[test]]` in Cargo.toml as prefix.rs, speedup.rs do
//! (alone in their binaries, no other test's load runs beside them).

#[path = "fleet.rs"]
mod fleet;
#[path = "http.rs"]
mod http;
#[path = "model.rs"]
mod model;
#[path = "reset.rs"]
mod reset;
#[path = "validate.rs"]
mod validate;
