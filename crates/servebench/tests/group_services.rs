//! Tests that need a real service started by scripts/services/*.sh: the real engine (llama.cpp), lm-eval, the OCI registry, Slurm, headless Chromium. With SERVEBENCH_REQUIRE_SERVICES=1 (scripts/test.sh) a missing service fails the test.
//!
//! One test binary for several test files (fewer binaries link faster): each file stays
//! where it was and becomes a module here, so `cargo test -p servebench --test group_services <file>::`
//! runs one file's tests.

/// Helpers the files share, compiled once for the binary (each file: `use crate::common;`).
mod common;

#[path = "cache_real_engine.rs"]
mod cache_real_engine;
#[path = "eval_cli.rs"]
mod eval_cli;
#[path = "registry_real.rs"]
mod registry_real;
#[path = "report_charts.rs"]
mod report_charts;
#[path = "run_inferencex.rs"]
mod run_inferencex;
#[path = "run_real_engine.rs"]
mod run_real_engine;
#[path = "run_slurm.rs"]
mod run_slurm;
#[path = "run_slurm_multinode.rs"]
mod run_slurm_multinode;
#[path = "search_real_engine.rs"]
mod search_real_engine;
#[path = "store_pg.rs"]
mod store_pg;
#[path = "sweep_agentx_real_engine.rs"]
mod sweep_agentx_real_engine;
#[path = "sweep_real_engine.rs"]
mod sweep_real_engine;
#[path = "validity.rs"]
mod validity;
#[path = "wiring_store.rs"]
mod wiring_store;
