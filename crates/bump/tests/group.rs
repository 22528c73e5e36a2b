//! This crate's integration tests in one test binary (fewer binaries link faster): each file
//! stays where it was and becomes a module here, so `cargo test -p servebench-bump --test
//! bump_tests <file>::` runs one file's tests. A new test file must be listed here.

#[path = "fuzz_reference.rs"]
mod fuzz_reference;
#[path = "registry_mock.rs"]
mod registry_mock;
#[path = "rules_rows.rs"]
mod rules_rows;
#[path = "scenario_bump.rs"]
mod scenario_bump;
#[path = "srt_recipes.rs"]
mod srt_recipes;
