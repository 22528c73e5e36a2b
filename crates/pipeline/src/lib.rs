//! The servebench pipeline: everything between a parsed command line and the stage crates.
//!
//! Owns: the [`SweepPlan`] (parsed once, from the CLI or a catalog matrix row), the [`Target`]
//! (an endpoint, or the embedded simulator started here and shared with the eval), the
//! scheduler over concurrencies × repeats ([`sweep::run_sweep`]), the workload seam
//! ([`Executor`]; the fixed-sequence workload is [`FixedSequence`]), and the observers that
//! turn finished points into outputs ([`Observer`]: files, store, console, table).
//!
//! Must not know about: reading runs back (sides, comparisons, reports, the attempt comment,
//! bump and triage: `servebench-review`, which a sweep's `--baseline`/`--report` reach through
//! [`review_hook`]), clap or any command-line parsing (the binary builds the requests), how
//! a stage computes (metrics, compare, rendering live in their crates), SQL (the store crate).
//! Errors are [`PipelineError`] (one variant per kind of failure, the called crates' errors as
//! sources); the binary turns them into `anyhow` at its edge.
#![warn(missing_docs)]

pub mod agentx;
pub mod cache;
pub mod error;
pub mod eval;
pub mod executor;
pub mod fixed;
pub mod identity;
pub mod multiturn;
pub mod observe;
pub mod outdir;
pub mod plan;
pub mod preflight;
pub mod progress;
pub mod record;
pub mod resume;
pub mod review_hook;
pub mod session;
pub mod standalone_eval;
pub mod sweep;
pub mod table;
pub mod target;
pub mod workload;

pub use error::{BoxError, IoOp, PipelineError};
pub use executor::{Executor, PointOutput, PointSpec, SweepCtx};
pub use fixed::FixedSequence;
pub use observe::{Console, Observer, ObserverError, StdConsole, SweepSummary};
pub use plan::{
    AgentxPlan, EvalPlan, EvalTask, FixedPlan, IdentityPlan, SimPlan, SweepPlan, Workload,
    DEFAULT_SIM_SPEEDUP,
};
pub use session::{
    ProbeLoad, Session, SessionParts, SweepOutcome, EXIT_EVAL_GATE, EXIT_INTERRUPTED,
};
pub use sweep::run_sweep;
pub use target::Target;
