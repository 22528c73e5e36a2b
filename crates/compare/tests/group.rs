//! Every integration test of this crate in one test binary (fewer binaries link faster):
//! each file stays where it was and becomes a module here, so `cargo test -p servebench-compare
//! --test compare_tests <file>::` runs one file's tests. A new test file must be listed here.

#[path = "cases.rs"]
mod cases;
#[path = "ci_noise.rs"]
mod ci_noise;
#[path = "evidence.rs"]
mod evidence;
#[path = "identical.rs"]
mod identical;
#[path = "import.rs"]
mod import;
#[path = "typed_rows.rs"]
mod typed_rows;
