//! Triage: what went wrong in a failed job, from its logs alone.
//!
//! Owns: streaming job logs, finding the first real error, classifying it with a signature
//! table kept as data (layer, class, transient/deterministic, fix), and deriving the outcome.
//! Must not know about: HTTP, metrics, the store, reports (the pipeline adapts a
//! [`TriageReport`] for the report crate), how jobs are started or retried (the runner's).
//!
//! * The table is `signatures.toml` (embedded): every class of AUTOMATION.md §5.4 (A1–F6, 43)
//!   plus the categories of the triage cases (cases/README.md B22, B23, B25) and the generic
//!   wrappers. See [`SignatureTable`].
//! * [`scan_reader`] reads one log line by line (one buffer, never the whole file) and applies
//!   the first-error rule; [`build_report`] combines several logs of one attempt into a
//!   [`TriageReport`] with evidence ("same first error on 2 runners").
//! * Multi-node jobs (one log per node and role): [`multinode::place`] reports the first
//!   error across nodes by time, with the clock skew between nodes in mind, and its node and
//!   role ([`clock`] reads the log timestamps).
//! * Outcomes and phases of the lifecycle (§5.3) are the types [`Outcome`] and [`Phase`].
//!
//! ```no_run
//! let report = servebench_triage::triage_logs(&["logs/agentic-c1.log", "logs/eval-c16.log"])?;
//! println!("{}", report.render_text());
//! # Ok::<(), servebench_triage::TriageError>(())
//! ```
//!
//! Errors are [`TriageError`] (one line naming the log, or the table file and signature).
#![warn(missing_docs)]

pub mod clock;
pub mod error;
pub mod multinode;
pub mod normalise;
pub mod prefix;
pub mod preflight;
pub mod report;
pub mod scan;
pub mod shell;
pub mod signatures;
pub mod types;

#[cfg(test)]
mod alloc_guard;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

pub use error::TriageError;
pub use normalise::{group_key, normalise_ephemeral};
pub use preflight::{preflight_env, required_env, PreflightFinding};
pub use report::{build_report, TriageOptions, TriageReport};
pub use scan::{
    scan_reader, FirstError, LogMark, LogTriage, SecondaryError, StageMarks, Tier,
    MARK_QUOTE_CHARS, SET_E_SIGNATURE,
};
pub use shell::{attribute, Attribution, ShellContext};
pub use signatures::{LayerSpec, Signature, SignatureTable, BUILTIN_SIGNATURES_TOML};
pub use types::{
    Action, CandidateOutcome, Layer, Outcome, Persistence, Phase, MAX_INFRA_RETRIES_PER_ATTEMPT,
    MAX_REPAIRS,
};

/// Read buffer per log (bytes).
const READ_BUFFER: usize = 256 * 1024;

/// Triage of the logs of one attempt with default options (phase `targeted`, 0 repairs used).
///
/// Errors: a log that cannot be opened or read ([`TriageError::ReadLog`],
/// `cannot read log <path>: <reason>`).
pub fn triage_logs<P: AsRef<Path>>(paths: &[P]) -> Result<TriageReport, TriageError> {
    triage_logs_with(paths, &TriageOptions::default())
}

/// Triage of the logs of one attempt (see [`TriageReport`] for what is returned).
///
/// Each log is streamed once through a 256 KiB buffer; memory does not grow with file size.
/// Errors: a log that cannot be opened or read ([`TriageError::ReadLog`]), or no path given
/// ([`TriageError::NoLog`]).
pub fn triage_logs_with<P: AsRef<Path>>(
    paths: &[P],
    opts: &TriageOptions,
) -> Result<TriageReport, TriageError> {
    if paths.is_empty() {
        return Err(TriageError::NoLog);
    }
    let table = SignatureTable::builtin();
    let mut logs = Vec::with_capacity(paths.len());
    for p in paths {
        let p = p.as_ref();
        let name = p.display().to_string();
        let read_err = |error| TriageError::ReadLog {
            path: name.clone(),
            error,
        };
        let f = File::open(p).map_err(read_err)?;
        let log = scan_reader(BufReader::with_capacity(READ_BUFFER, f), &name, table)
            .map_err(read_err)?;
        logs.push(log);
    }
    Ok(build_report(logs, table, opts))
}

/// Triage of in-memory logs `(name, text)` (tests, API callers that already hold the text).
pub fn triage_texts(logs: &[(&str, &str)], opts: &TriageOptions) -> TriageReport {
    let table = SignatureTable::builtin();
    let scanned = logs
        .iter()
        .map(|(name, text)| {
            scan_reader(text.as_bytes(), name, table).expect("reading memory cannot fail")
        })
        .collect();
    build_report(scanned, table, opts)
}
