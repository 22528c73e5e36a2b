//! Tests that drive the embedded simulator (sweeps, evals, runs, resume after SIGKILL, Ctrl-C). Bounds on wall time here are only upper bounds that say 'did not hang'.
//!
//! One test binary for several test files (fewer binaries link faster): each file stays
//! where it was and becomes a module here, so `cargo test -p servebench --test group_sim <file>::`
//! runs one file's tests.

/// Helpers the files share, compiled once for the binary (each file: `use crate::common;`).
mod common;

#[path = "crash_safety.rs"]
mod crash_safety;
#[path = "eval_guards.rs"]
mod eval_guards;
#[path = "eval_interrupt.rs"]
mod eval_interrupt;
#[path = "run_fleet_virtual.rs"]
mod run_fleet_virtual;
#[path = "run_local.rs"]
mod run_local;
#[path = "search_cli.rs"]
mod search_cli;
#[path = "sweep_agentx.rs"]
mod sweep_agentx;
#[path = "sweep_cache.rs"]
mod sweep_cache;
#[path = "sweep_default.rs"]
mod sweep_default;
#[path = "sweep_errors.rs"]
mod sweep_errors;
#[path = "verdict_sim.rs"]
mod verdict_sim;
