//! Wall-clock timing tests: the client's reported TTFT/TPOT against the simulator's own emission log (sub-millisecond agreement). Kept in their own binary so no other test's load runs beside them.
//!
//! One test binary for several test files (fewer binaries link faster): each file stays
//! where it was and becomes a module here, so `cargo test -p servebench --test timing <file>::`
//! runs one file's tests.

#[path = "sweep_sim.rs"]
mod sweep_sim;
