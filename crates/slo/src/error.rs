//! [`SloError`]: why the SLO search or the extras observer stopped, one line naming the file or
//! the probe.
//!
//! Every message reads exactly as it did when this crate returned `anyhow` errors. `Display`
//! prints the outermost line (`search probe 3 (conc 8)`), as `anyhow` did; the alternate form
//! `{:#}` prints the whole chain, `line: cause: cause…`, the text `anyhow`'s `{:#}` printed and
//! still prints once the binary has turned the error into `anyhow` with `?`.

use std::fmt;
use std::path::PathBuf;

use servebench_metrics::search::Axis;

/// What was being done to a file or directory when the OS refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Creating the search's output directory (`cannot create output directory DIR`).
    CreateDir,
    /// Reading a file (`cannot read PATH`).
    Read,
    /// Writing a file (`cannot write PATH`).
    Write,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::CreateDir => "create output directory",
            IoOp::Read => "read",
            IoOp::Write => "write",
        })
    }
}

/// An error of the SLO crate.
#[derive(Debug, thiserror::Error)]
pub enum SloError {
    /// A file or directory could not be created, read or written.
    Io {
        /// What was being done.
        op: IoOp,
        /// The file or directory.
        path: PathBuf,
        /// The OS error (the next link of the chain).
        #[source]
        source: std::io::Error,
    },
    /// Serialising `search.json` or the `summary.json` extras failed; the message is serde_json's own
    /// (kept as a field, not a `source`, so that it is said once).
    Serialize {
        /// serde_json's error.
        err: serde_json::Error,
    },
    /// A rate search with no lanes (`--max-conc 0`).
    RateWithoutLanes,
    /// A probe could not run at all (target unreachable, bad flags, output not writable); the
    /// sweep's error is the next link of the chain. A probe whose requests fail is a
    /// measurement, not this error.
    Probe {
        /// 1-based probe number.
        probe: usize,
        /// The load axis searched.
        axis: Axis,
        /// The load of the probe: lanes (concurrency) or req/s (rate).
        load: f64,
        /// Why the sweep failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The sweep was interrupted (Ctrl-C) during this probe.
    Interrupted {
        /// 1-based probe number.
        probe: usize,
    },
    /// The probe's sweep finished without a measured point.
    NoResult {
        /// 1-based probe number.
        probe: usize,
    },
}

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SloError::Io { op, path, .. } => write!(f, "cannot {op} {}", path.display())?,
            SloError::Serialize { err } => write!(f, "{err}")?,
            SloError::RateWithoutLanes => {
                f.write_str("--max-conc must be at least 1 for a rate search")?
            }
            SloError::Probe {
                probe, axis, load, ..
            } => write!(f, "search probe {probe} ({} {load})", axis.as_str())?,
            SloError::Interrupted { probe } => write!(f, "search interrupted at probe {probe}")?,
            SloError::NoResult { probe } => {
                write!(f, "search probe {probe}: the point produced no result")?
            }
        }
        // the rest of the chain, each link as anyhow's `{:#}` prints it
        servebench_contracts::chain::write_source_chain(f, self)
    }
}

/// `Result` of this crate: [`SloError`] unless said otherwise.
pub type Result<T, E = SloError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain and `{:#}`, directly and once converted to `anyhow` as the binary does.
    fn texts(e: SloError) -> (String, String) {
        let plain = e.to_string();
        let alt = format!("{e:#}");
        let any = anyhow::Error::new(e);
        assert_eq!(any.to_string(), plain);
        assert_eq!(format!("{any:#}"), alt);
        (plain, alt)
    }

    #[test]
    fn io_error_is_the_next_link() {
        let source = std::fs::read_to_string("/nonexistent/summary.json").unwrap_err();
        let e = SloError::Io {
            op: IoOp::Read,
            path: "/nonexistent/summary.json".into(),
            source,
        };
        assert!(matches!(e, SloError::Io { op: IoOp::Read, .. }));
        assert_eq!(
            texts(e),
            (
                "cannot read /nonexistent/summary.json".to_string(),
                "cannot read /nonexistent/summary.json: No such file or directory (os error 2)"
                    .to_string()
            )
        );
    }

    /// A probe's sweep error (an `anyhow` chain from the pipeline) keeps its whole chain.
    #[test]
    fn probe_error_keeps_the_sweep_chain() {
        let inner = anyhow::anyhow!("connection refused").context("http://127.0.0.1:9/v1/models");
        let theirs = inner.context("search probe 2 (conc 4)");
        let inner = anyhow::anyhow!("connection refused").context("http://127.0.0.1:9/v1/models");
        let ours = SloError::Probe {
            probe: 2,
            axis: Axis::Conc,
            load: 4.0,
            source: inner.into(),
        };
        assert!(matches!(ours, SloError::Probe { probe: 2, .. }));
        let (plain, alt) = texts(ours);
        assert_eq!(plain, "search probe 2 (conc 4)");
        assert_eq!(plain, theirs.to_string());
        assert_eq!(
            alt,
            "search probe 2 (conc 4): http://127.0.0.1:9/v1/models: connection refused"
        );
        assert_eq!(alt, format!("{theirs:#}"));
    }

    #[test]
    fn one_liners() {
        assert_eq!(
            texts(SloError::RateWithoutLanes).1,
            "--max-conc must be at least 1 for a rate search"
        );
        assert_eq!(
            texts(SloError::NoResult { probe: 3 }).1,
            "search probe 3: the point produced no result"
        );
        assert_eq!(
            texts(SloError::Interrupted { probe: 1 }).1,
            "search interrupted at probe 1"
        );
        let err = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let want = err.to_string();
        assert_eq!(texts(SloError::Serialize { err }).1, want);
    }
}
