//! The review side of servebench: reading finished runs back and saying what they show.
//!
//! Owns: loading a side of a comparison (a stored run id, `latest`, `latest-baseline`, or a
//! baseline file; [`sides`]) with its bootstrap intervals ([`confidence`]), the `compare`
//! request → [`servebench_compare::Comparison`] ([`sides::build_comparison`]), the run and
//! comparison reports → [`servebench_report::Document`] with their charts ([`report`],
//! [`report_charts`]), and the attempt comment's inputs ([`attempt`]: bump's change records,
//! and the triage → report adapter [`attempt_logs`]).
//!
//! Must not know about: measuring (plan, target, executors, observers, resume, cache control:
//! `servebench-pipeline`, which does not depend on this crate; a sweep's `--report` and
//! `--baseline` reach it through `servebench_pipeline::review_hook`, wired by the binary),
//! clap or any command-line parsing, how a stage computes (compare, rendering and triage live
//! in their crates), SQL (the store crate). Errors are [`ReviewError`].
#![warn(missing_docs)]

pub mod attempt;
pub mod attempt_logs;
pub mod branch_baseline;
pub mod confidence;
pub mod error;
pub mod noise_floor;
pub mod report;
pub mod report_charts;
pub mod sides;

pub use error::{IoOp, ReviewError};
