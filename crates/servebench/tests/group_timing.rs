//! Wall-clock timing tests: the client's reported TTFT/TPOT against the simulator's own emission log (sub-millisecond agreement), and the real engine's A/A (issue 28). Kept in their own binary, one at a time ([`SERIAL`]), so no other test's load runs beside them.
//!
//! One test binary for several test files (fewer binaries link faster): each file stays
//! where it was and becomes a module here, so `cargo test -p servebench --test timing <file>::`
//! runs one file's tests.

/// Helpers the files share (each file: `use crate::common;`).
mod common;

#[path = "aa_real_engine.rs"]
mod aa_real_engine;
#[path = "sweep_sim.rs"]
mod sweep_sim;

/// Held by every test of this binary while it measures: they run one at a time.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
