//! [`ReviewError`]: why loading runs for `compare`/`report`/`attempt` stopped; one line naming
//! the flag, file, run or URL to fix.
//!
//! `Display` prints the outermost line and the alternate form `{:#}` the whole chain,
//! `line: cause: cause…`, exactly as `anyhow` printed these errors (the binary converts them to
//! `anyhow` with `?` and prints `{:#}`: the same text). The lines are the ones these functions
//! gave while they lived in `servebench-pipeline`.

use std::fmt;
use std::path::{Path, PathBuf};

use servebench_compare::CompareError;
use servebench_metrics::goodput::SloParseError;
use servebench_store::StoreError;

/// What an input/output error was doing; it decides the line (`cannot write FILE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Reading a file the user named: `FILE: cannot read`.
    Read,
    /// Writing a file: `cannot write FILE`.
    Write,
}

/// An error of the review side. Match on [`ReviewError::root`] to see the kind under the
/// context lines (`--baseline 12: run 12 does not exist …` is a [`ReviewError::NotFound`]
/// under a [`ReviewError::Context`]).
#[derive(Debug)]
pub enum ReviewError {
    /// A flag's value is invalid (`--gate -1: must be a non-negative percentage`,
    /// `--runs "a": "a" is not a run id`): one line naming the flag.
    Flag(String),
    /// The results store could not be opened or read.
    Store(StoreError),
    /// A stored or imported row is not a comparable point (`run 3, point 7: …`, a baseline file).
    Compare(CompareError),
    /// A bad `--slo` spec (the goodput chart of `report`).
    Slo(SloParseError),
    /// `--provenance FILE` (records of `servebench bump`) could not be read.
    Bump(servebench_bump::BumpError),
    /// The job logs could not be triaged.
    Triage(servebench_triage::TriageError),
    /// A run, store, file or record the command names does not exist (`run 12 does not exist
    /// in ./servebench.db (see `servebench runs`)`, `12x: neither a run id nor an existing file`).
    NotFound(String),
    /// An input (file, stored row, job log) is not what it should be; the line names it.
    Invalid(String),
    /// A file could not be read or written.
    Io {
        /// What was being done (decides the line).
        op: IoOp,
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A value is not the JSON it should be.
    Json(serde_json::Error),
    /// A line saying where (`--baseline 12`, `run 3, point 7`) over the error it wraps.
    Context {
        /// Where.
        context: String,
        /// What went wrong there.
        source: Box<ReviewError>,
    },
}

impl ReviewError {
    /// The error under every [`ReviewError::Context`] line: the kind to match on.
    pub fn root(&self) -> &ReviewError {
        match self {
            ReviewError::Context { source, .. } => source.root(),
            e => e,
        }
    }

    /// Wraps `self` under the line `context`.
    pub fn context(self, context: impl Into<String>) -> ReviewError {
        ReviewError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// An input/output error of `op` on `path`.
    pub fn io(op: IoOp, path: &Path, source: std::io::Error) -> ReviewError {
        ReviewError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for ReviewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ReviewError as E;
        // the outermost line; wrapped errors print their own line (never their chain here)
        match self {
            E::Store(e) => write!(f, "{e}")?,
            E::Compare(e) => write!(f, "{e}")?,
            E::Slo(e) => write!(f, "{e}")?,
            E::Bump(e) => write!(f, "{e}")?,
            E::Triage(e) => write!(f, "{e}")?,
            E::Flag(m) | E::NotFound(m) | E::Invalid(m) => f.write_str(m)?,
            E::Io { op, path, .. } => {
                let p = path.display();
                match op {
                    IoOp::Read => write!(f, "{p}: cannot read")?,
                    IoOp::Write => write!(f, "cannot write {p}")?,
                }
            }
            E::Json(e) => write!(f, "{e}")?,
            E::Context { context, .. } => f.write_str(context)?,
        }
        // the rest of the chain, each link as anyhow's `{:#}` prints it
        servebench_contracts::chain::write_source_chain(f, self)
    }
}

impl std::error::Error for ReviewError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use ReviewError as E;
        match self {
            // transparent: the wrapped error's own causes
            E::Store(e) => e.source(),
            E::Compare(e) => e.source(),
            E::Slo(e) => e.source(),
            E::Bump(e) => e.source(),
            E::Triage(e) => e.source(),
            E::Json(e) => e.source(),
            // a line over a cause
            E::Io { source, .. } => Some(source),
            E::Context { source, .. } => Some(&**source),
            E::Flag(_) | E::NotFound(_) | E::Invalid(_) => None,
        }
    }
}

impl From<StoreError> for ReviewError {
    fn from(e: StoreError) -> ReviewError {
        ReviewError::Store(e)
    }
}

impl From<CompareError> for ReviewError {
    fn from(e: CompareError) -> ReviewError {
        ReviewError::Compare(e)
    }
}

impl From<SloParseError> for ReviewError {
    fn from(e: SloParseError) -> ReviewError {
        ReviewError::Slo(e)
    }
}

impl From<serde_json::Error> for ReviewError {
    fn from(e: serde_json::Error) -> ReviewError {
        ReviewError::Json(e)
    }
}

/// `Result` of this crate: [`ReviewError`] unless said otherwise.
pub type Result<T, E = ReviewError> = std::result::Result<T, E>;

/// Adds a context line to an error that converts into a [`ReviewError`].
pub(crate) trait Context<T> {
    /// Wraps the error under the line `f` gives.
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T>;
    /// Wraps the error under `line`.
    fn context(self, line: &str) -> Result<T>;
}

impl<T, E: Into<ReviewError>> Context<T> for std::result::Result<T, E> {
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
    fn context(self, line: &str) -> Result<T> {
        self.map_err(|e| e.into().context(line))
    }
}

/// Maps an input/output error to [`ReviewError::Io`] of `op` on `path`.
pub(crate) fn io<'a>(op: IoOp, path: &'a Path) -> impl FnOnce(std::io::Error) -> ReviewError + 'a {
    move |e| ReviewError::io(op, path, e)
}

/// A [`ReviewError::Flag`] with a formatted message.
macro_rules! flag {
    ($($t:tt)*) => {
        $crate::error::ReviewError::Flag(format!($($t)*))
    };
}

pub(crate) use flag;

#[cfg(test)]
mod tests {
    use super::ReviewError;

    /// Moved from `servebench-pipeline`'s error tests with the loading functions: the same
    /// lines, the kinds now [`ReviewError`]'s.
    #[test]
    fn the_kind_is_the_variant_and_the_line_is_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("servebench.db");

        // no store file: a reading command never creates one
        let e = crate::sides::open_store(&db).err().unwrap();
        assert!(matches!(e, ReviewError::NotFound(_)));
        assert_eq!(
            e.to_string(),
            format!(
                "{}: no results store here (run `servebench sweep` or `servebench baseline \
                 import` first, or pass --db PATH)",
                db.display()
            )
        );

        // neither a run id nor a file, under the flag that named it
        let mut req = crate::sides::CompareRequest::new(&db, "12x", "latest");
        let e = crate::sides::build_comparison(&req).err().unwrap();
        assert!(matches!(e.root(), ReviewError::NotFound(_)));
        assert_eq!(
            format!("{e:#}"),
            "--baseline: 12x: neither a run id nor an existing file"
        );

        // a bad flag is a flag error
        req.gate = -1.0;
        let e = crate::sides::build_comparison(&req).err().unwrap();
        assert!(matches!(e, ReviewError::Flag(_)));
        assert_eq!(
            e.to_string(),
            "--gate -1: must be a non-negative percentage"
        );
        let e = crate::report_charts::parse_runs("3,x").unwrap_err();
        assert!(matches!(e, ReviewError::Flag(_)));
        assert_eq!(format!("{e:#}"), r#"--runs "3,x": "x" is not a run id"#);
    }
}
