//! SLO, steady-state and confidence reporting over sweep points, and the SLO search.
//!
//! Owns: [`ExtrasObserver`] — an extra [`servebench_pipeline::Observer`] of a sweep that, per
//! point, takes the point's records (in memory, [`servebench_pipeline::PointOutput::records`])
//! and computes goodput under `--slo`, the steady-state window (`--window steady`),
//! request-bootstrap confidence intervals and small-sample marks, and across `--repeats` the
//! t-intervals; it contributes them as `summary.json`'s typed `extras`
//! ([`servebench_contracts::SummaryExtras`], written once by the pipeline's file output) and
//! says its lines and its own table through its `Console` (stdout by default).
//! [`search::run_search`] — `servebench search`: bisection over real sweep points (one
//! [`servebench_pipeline::Session::probe`] per load on one session) for the highest load
//! meeting an SLO.
//!
//! Must not know about: command-line parsing, HTTP, engines. The statistics themselves live in
//! `servebench-metrics` (`goodput`, `window`, `confidence`, `search`); this crate only feeds
//! them records and writes what they return. Without any of these flags nothing here runs, so
//! the default sweep output stays byte-identical. Errors are [`SloError`] (one variant per way
//! the search or the observer stops); the observers return the pipeline's `ObserverError`, which keeps an [`SloError`] as it is.
#![warn(missing_docs)]

pub mod error;
pub mod extras;
pub mod search;

pub use error::{IoOp, SloError};
pub use extras::{ExtrasObserver, ExtrasOptions, PointExtras};
pub use search::{run_search, SearchRequest};
