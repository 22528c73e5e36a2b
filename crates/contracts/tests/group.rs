//! Every integration test of this crate in one test binary (fewer binaries link faster):
//! each file stays where it was and becomes a module here, so `cargo test -p servebench-contracts
//! --test contracts_tests <file>::` runs one file's tests. A new test file must be listed here.

#[path = "eval.rs"]
mod eval;
#[path = "record.rs"]
mod record;
#[path = "schema.rs"]
mod schema;
