//! Runner: executes catalog matrix points — starts each point's engine from its recipe (or the
//! embedded simulator), waits until it is ready, measures it with servebench's own `sweep` /
//! `eval gsm8k`, tears the engine's whole process group down, keeps every log, triages every
//! failure and retries only transient ones (AUTOMATION.md §4.2–4.6, §5.3–5.4); on this machine
//! ([`LocalBackend`]) or one Slurm job per point ([`SlurmBackend`]).
//!
//! Owns: the plan (matrix rows of `servebench-catalog` turned into typed [`Point`]s), recipe
//! resolution and the InferenceX environment contract ([`recipe`]), the job script, the
//! job backends, the per-point job (`servebench run --exec-point`, [`job`]), the failure loop
//! ([`failure`]), the run directory with its resumable state ([`state`]) and copying each
//! point's stored rows into the results store.
//!
//! Must not know about: HTTP clients or metrics (the measurement is the `servebench` binary
//! itself, run as a child process), comparisons and report rendering (the binary renders the
//! attempt comment from what this crate returns), the matrix expansion rules (catalog's).
//!
//! Data flow: [`plan::build_plan`] → [`Runner::run`] (per point: prepare attempt → executor
//! submit/poll → read back `point.db` into the store, or triage `job.log` → retry or stop) →
//! [`RunSummary`].

#![warn(missing_docs)]

pub mod backend;
pub mod coverage;
pub mod dryrun;
pub mod error;
pub mod failure;
pub mod fleet_launch;
pub mod job;
pub mod multinode;
pub mod multinode_plan;
pub mod plan;
pub mod recipe;
pub mod run;
pub mod shim;
pub mod signal;
pub mod smi;
pub mod state;
pub mod status;
pub mod workspace;

pub use backend::{JobBackend, JobHandle, JobState, LocalBackend, SlurmBackend};
pub use error::RunnerError;
pub use plan::{build_plan, EvalSelection, PlanOptions, Point, Workload};
pub use run::{PointResult, PointState, RunOptions, RunSummary, Runner};
pub use status::{EvalGate, RunStatus, VerdictOutcome};
