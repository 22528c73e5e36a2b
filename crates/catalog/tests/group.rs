//! This crate's integration tests in one test binary (fewer binaries link faster): each file
//! stays where it was and becomes a module here, so `cargo test -p servebench-catalog --test
//! catalog_tests <file>::` runs one file's tests. A new test file must be listed here.

/// Helpers the files share, compiled once for the binary (each file: `use crate::common;`).
mod common;

#[path = "canonical_json_python.rs"]
mod canonical_json_python;
#[path = "changelog_append_only.rs"]
mod changelog_append_only;
#[path = "changelog_append_property.rs"]
mod changelog_append_property;
#[path = "changelog_history.rs"]
mod changelog_history;
#[path = "fuzz_yaml.rs"]
mod fuzz_yaml;
#[path = "golden_changelog.rs"]
mod golden_changelog;
#[path = "golden_matrix.rs"]
mod golden_matrix;
#[path = "mutations.rs"]
mod mutations;
