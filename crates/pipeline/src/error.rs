//! [`PipelineError`]: why a sweep stopped; one line naming the flag, file, run or URL to fix.
//! (The loading of runs for `compare`/`report`/`attempt` has its own error, in
//! `servebench-review`.)
//!
//! `Display` prints the outermost line and the alternate form `{:#}` the whole chain,
//! `line: cause: cause…`, exactly as `anyhow` printed these errors before this type existed
//! (the binary converts them to `anyhow` with `?` and prints `{:#}`: the same text).

use std::fmt;
use std::path::{Path, PathBuf};

use servebench_agentx::point::PointError;
use servebench_contracts::AggRowError;
use servebench_endpoint::EndpointError;
use servebench_metrics::goodput::SloParseError;
use servebench_store::StoreError;

use crate::plan::PlanError;

/// The error of an extra [`crate::Observer`] (any error type); its text and cause chain are
/// kept as they are.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What an input/output error was doing; it decides the line (`cannot write DIR/agg.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Reading a file the user named: `FILE: cannot read`.
    Read,
    /// Reading a point's completion marker (`--resume`): `cannot read FILE`.
    ReadMarker,
    /// Writing a file: `cannot write FILE`.
    Write,
    /// Creating a point directory: `cannot create DIR`.
    Create,
    /// Creating the output directory: `cannot create output directory DIR`.
    CreateOutDir,
    /// Emptying a point directory that is measured again: `cannot empty DIR`.
    Empty,
}

/// An error of the pipeline. Match on [`PipelineError::root`] to see the kind under the
/// context lines (`--baseline 12: run 12 does not exist …` is a [`PipelineError::NotFound`]
/// under a [`PipelineError::Context`]).
///
/// `Error` and `Display` are written by hand rather than derived: the wrapped errors are
/// transparent (their own line, then their own `source` chain) while the alternate form walks
/// the chain, so every message reads exactly as it did under `anyhow`.
#[derive(Debug)]
pub enum PipelineError {
    /// The plan or a flag is invalid (`--conc: …`, `--gpus 4 disagrees with TP×PP×PCP = 8`,
    /// `--runs "a": "a" is not a run id`): one line naming the flag.
    Plan(PlanError),
    /// The endpoint layer: bad URL or `--ca-cert`, the endpoint never became ready, no model
    /// listed, the simulator did not start.
    Endpoint(EndpointError),
    /// The results store could not be opened, read or written.
    Store(StoreError),
    /// A stored point marker's agg row is not an agg row.
    AggRow(AggRowError),
    /// A bad `--slo` spec.
    Slo(SloParseError),
    /// `--traces PATH` could not be loaded or reconstructed (AgentX).
    Traces {
        /// The path given.
        path: PathBuf,
        /// Why.
        source: PointError,
    },
    /// An AgentX replay point stopped: one line, `conc 4: <why>` (the cause is part of the
    /// line, as it always was; its own causes follow in the chain).
    Agentx {
        /// The point's label (`conc 4`, `conc 4 repeat 2/3`).
        point: String,
        /// Why.
        source: PointError,
    },
    /// The measuring client failed (its records file could not be written).
    Client(servebench_client::ClientError),
    /// The workload could not be built: tokenizer, chat template, dataset.
    Workload(servebench_workload::WorkloadError),
    /// The eval failed (GSM8K run, the simulator's recorded answers).
    Eval(servebench_eval::EvalError),
    /// An extra [`crate::Observer`] failed.
    Observer(BoxError),
    /// The review side failed to load a sweep's `--baseline` ([`crate::review_hook`]).
    Review(BoxError),
    /// The server rejected the preflight request (`URL rejected request field `ignore_eos` …`).
    Preflight(String),
    /// Ctrl-C came before the measured phase of a point started: the scheduler stops without
    /// the point (never printed: the sweep ends with [`crate::EXIT_INTERRUPTED`]).
    Interrupted,
    /// A run, store, file or record the command names does not exist (`run 12 does not exist
    /// in ./servebench.db (see `servebench runs`)`, `12x: neither a run id nor an existing file`).
    NotFound(String),
    /// An input (file, stored row, job log, point marker) is not what it should be; the line
    /// names it (`summary.json: not valid JSON (line 3, column 1): …`).
    Invalid(String),
    /// `--out DIR` already holds a sweep's results and `--overwrite` was not given.
    OutDirTaken {
        /// The directory.
        dir: PathBuf,
    },
    /// A file or directory could not be read, written or created.
    Io {
        /// What was being done (decides the line).
        op: IoOp,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A value could not be written as JSON.
    Json(serde_json::Error),
    /// A blocking task (dataset building, trace loading) panicked or was cancelled.
    Join(tokio::task::JoinError),
    /// The async runtime could not be started.
    Runtime(std::io::Error),
    /// A line saying where (`--baseline 12`, `run 3, point 7`) over the error it wraps.
    Context {
        /// Where.
        context: String,
        /// What went wrong there.
        source: Box<PipelineError>,
    },
    /// A one-off message (`servebench-out: 999 output directories for … already exist`).
    Msg(String),
}

impl PipelineError {
    /// The error under every [`PipelineError::Context`] line: the kind to match on.
    pub fn root(&self) -> &PipelineError {
        match self {
            PipelineError::Context { source, .. } => source.root(),
            e => e,
        }
    }

    /// Wraps `self` under the line `context`.
    pub fn context(self, context: impl Into<String>) -> PipelineError {
        PipelineError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error an [`crate::Observer`] returned: a [`PipelineError`] (a built-in observer's)
    /// as itself, anything else as [`PipelineError::Observer`].
    pub fn from_observer(e: BoxError) -> PipelineError {
        match e.downcast::<PipelineError>() {
            Ok(p) => *p,
            Err(e) => PipelineError::Observer(e),
        }
    }

    /// An input/output error of `op` on `path`.
    pub fn io(op: IoOp, path: &Path, source: std::io::Error) -> PipelineError {
        PipelineError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PipelineError as E;
        // the outermost line; wrapped errors print their own line (never their chain here)
        match self {
            E::Plan(e) => write!(f, "{e}")?,
            E::Endpoint(e) => write!(f, "{e}")?,
            E::Store(e) => write!(f, "{e}")?,
            E::AggRow(e) => write!(f, "{e}")?,
            E::Slo(e) => write!(f, "{e}")?,
            E::Traces { path, .. } => write!(f, "--traces {}", path.display())?,
            E::Agentx { point, source } => write!(f, "{point}: {source}")?,
            E::Client(e) => write!(f, "{e}")?,
            E::Workload(e) => write!(f, "{e}")?,
            E::Eval(e) => write!(f, "{e}")?,
            E::Observer(e) | E::Review(e) => write!(f, "{e}")?,
            E::Preflight(m) | E::NotFound(m) | E::Invalid(m) | E::Msg(m) => f.write_str(m)?,
            E::Interrupted => f.write_str("interrupted before the measured phase")?,
            E::OutDirTaken { dir } => write!(
                f,
                "--out {}: already holds a sweep's results (summary.json or files under conc*/); pass --resume to continue that sweep, --overwrite to replace it, or choose another directory (omit --out for a new timestamped one)",
                dir.display()
            )?,
            E::Io { op, path, .. } => {
                let p = path.display();
                match op {
                    IoOp::Read => write!(f, "{p}: cannot read")?,
                    IoOp::ReadMarker => write!(f, "cannot read {p}")?,
                    IoOp::Write => write!(f, "cannot write {p}")?,
                    IoOp::Create => write!(f, "cannot create {p}")?,
                    IoOp::CreateOutDir => write!(f, "cannot create output directory {p}")?,
                    IoOp::Empty => write!(f, "cannot empty {p}")?,
                }
            }
            E::Json(e) => write!(f, "{e}")?,
            E::Join(e) => write!(f, "{e}")?,
            E::Runtime(e) => write!(f, "{e}")?,
            E::Context { context, .. } => f.write_str(context)?,
        }
        // the rest of the chain, each link as anyhow's `{:#}` prints it
        servebench_contracts::chain::write_source_chain(f, self)
    }
}

impl std::error::Error for PipelineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use PipelineError as E;
        match self {
            // transparent: the wrapped error's own causes
            E::Plan(e) => e.source(),
            E::Endpoint(e) => e.source(),
            E::Store(e) => e.source(),
            E::AggRow(e) => e.source(),
            E::Slo(e) => e.source(),
            E::Client(e) => e.source(),
            E::Workload(e) => e.source(),
            E::Eval(e) => e.source(),
            E::Observer(e) | E::Review(e) => e.source(),
            E::Json(e) => e.source(),
            E::Join(e) => e.source(),
            E::Runtime(e) => e.source(),
            // a line over a cause
            E::Agentx { source, .. } => source.source(),
            E::Traces { source, .. } => Some(source),
            E::Io { source, .. } => Some(source),
            E::Context { source, .. } => Some(&**source),
            E::Preflight(_)
            | E::NotFound(_)
            | E::Invalid(_)
            | E::Msg(_)
            | E::Interrupted
            | E::OutDirTaken { .. } => None,
        }
    }
}

impl From<PlanError> for PipelineError {
    fn from(e: PlanError) -> PipelineError {
        PipelineError::Plan(e)
    }
}

impl From<EndpointError> for PipelineError {
    fn from(e: EndpointError) -> PipelineError {
        PipelineError::Endpoint(e)
    }
}

impl From<StoreError> for PipelineError {
    fn from(e: StoreError) -> PipelineError {
        PipelineError::Store(e)
    }
}

impl From<AggRowError> for PipelineError {
    fn from(e: AggRowError) -> PipelineError {
        PipelineError::AggRow(e)
    }
}

impl From<SloParseError> for PipelineError {
    fn from(e: SloParseError) -> PipelineError {
        PipelineError::Slo(e)
    }
}

impl From<serde_json::Error> for PipelineError {
    fn from(e: serde_json::Error) -> PipelineError {
        PipelineError::Json(e)
    }
}

impl From<tokio::task::JoinError> for PipelineError {
    fn from(e: tokio::task::JoinError) -> PipelineError {
        PipelineError::Join(e)
    }
}

/// `Result` of this crate: [`PipelineError`] unless said otherwise.
pub type Result<T, E = PipelineError> = std::result::Result<T, E>;

/// Adds a context line to an error that converts into a [`PipelineError`].
pub(crate) trait Context<T> {
    /// Wraps the error under the line `f` gives.
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T>;
    /// Wraps the error under `line`.
    fn context(self, line: &str) -> Result<T>;
}

impl<T, E: Into<PipelineError>> Context<T> for std::result::Result<T, E> {
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
    fn context(self, line: &str) -> Result<T> {
        self.map_err(|e| e.into().context(line))
    }
}

/// Maps an input/output error to [`PipelineError::Io`] of `op` on `path`.
pub(crate) fn io<'a>(
    op: IoOp,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> PipelineError + 'a {
    move |e| PipelineError::io(op, path, e)
}

/// A [`PipelineError::Plan`] flag error with a formatted message.
macro_rules! flag {
    ($($t:tt)*) => {
        $crate::error::PipelineError::Plan($crate::plan::PlanError::Flag(format!($($t)*)))
    };
}

pub(crate) use flag;

#[cfg(test)]
mod tests {
    use super::{io, Context, IoOp, PipelineError, Result};

    /// Plain, `{:#}`, and once converted to `anyhow` at the binary: the three texts a user
    /// can see.
    fn texts(e: PipelineError) -> (String, String, String) {
        let plain = e.to_string();
        let alt = format!("{e:#}");
        let any = format!("{:#}", anyhow::Error::new(e));
        (plain, alt, any)
    }

    /// The same failures, through this type and through `anyhow` (as the crate returned them
    /// before): the same text, plain, `{:#}`, and once converted to `anyhow`.
    #[test]
    fn messages_read_as_anyhow_printed_them() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("nope.json");
        let raw = || std::fs::read_to_string(&missing);

        // an I/O error under its line, then a context line over it
        let ours: Result<String> = raw()
            .map_err(io(IoOp::Read, &missing))
            .context("--baseline");
        let theirs: anyhow::Result<String> =
            anyhow::Context::with_context(raw(), || format!("{}: cannot read", missing.display()))
                .map_err(|e| e.context("--baseline"));
        let (o, t) = (ours.unwrap_err(), theirs.unwrap_err());
        assert!(matches!(
            o.root(),
            PipelineError::Io { op: IoOp::Read, path, .. } if path == &missing
        ));
        let want = format!(
            "--baseline: {}: cannot read: No such file or directory (os error 2)",
            missing.display()
        );
        let (plain, alt, any) = texts(o);
        assert_eq!(plain, "--baseline");
        assert_eq!(plain, t.to_string());
        assert_eq!(alt, want);
        assert_eq!(alt, format!("{t:#}"));
        assert_eq!(any, want);

        // a store error (its own chain) under a context line
        let store = || {
            Err::<(), _>(servebench_store::StoreError::context(
                std::io::Error::other("disk full"),
                "store.db: recording the run".into(),
            ))
        };
        let ours = store().with_context(|| "results store store.db".to_string());
        let theirs = anyhow::Context::with_context(store(), || "results store store.db");
        let (o, t) = (ours.unwrap_err(), theirs.unwrap_err());
        assert!(matches!(o.root(), PipelineError::Store(_)));
        let (plain, alt, any) = texts(o);
        assert_eq!(plain, t.to_string());
        assert_eq!(alt, format!("{t:#}"));
        assert_eq!(
            any,
            "results store store.db: store.db: recording the run: disk full"
        );

        // an extra observer's anyhow error keeps its whole chain
        let inner = anyhow::anyhow!("summary.json: not JSON").context("extras");
        let want = format!("{inner:#}");
        let e = PipelineError::from_observer(inner.into());
        assert!(matches!(e, PipelineError::Observer(_)));
        let (plain, alt, any) = texts(e);
        assert_eq!(plain, "extras");
        assert_eq!(alt, want);
        assert_eq!(any, want);
    }

    #[test]
    fn the_kind_is_the_variant_and_the_line_is_unchanged() {
        let d = tempfile::tempdir().unwrap();

        // --out with results, no --overwrite
        std::fs::write(d.path().join("summary.json"), "{}").unwrap();
        let e = crate::outdir::check_out_dir(d.path(), false).unwrap_err();
        assert!(matches!(&e, PipelineError::OutDirTaken { dir } if dir == d.path()));
        assert!(
            e.to_string().starts_with(&format!(
                "--out {}: already holds a sweep's results",
                d.path().display()
            )),
            "{e}"
        );
    }

    #[test]
    fn a_broken_point_marker_names_the_file_over_the_parser_error() {
        let d = tempfile::tempdir().unwrap();
        let spec = crate::executor::PointSpec {
            conc: 4,
            repeat: 1,
            repeats: 1,
            dir: d.path().to_path_buf(),
        };
        let marker = d.path().join(crate::resume::POINT_MARKER);
        std::fs::write(&marker, "{not json").unwrap();
        let e = crate::resume::load_finished(&spec).err().unwrap();
        assert!(matches!(e.root(), PipelineError::Json(_)), "{e:?}");
        let (plain, alt, any) = texts(e);
        assert_eq!(plain, format!("{}: not a point marker", marker.display()));
        assert_eq!(
            alt,
            format!(
                "{}: not a point marker: key must be a string at line 1 column 2",
                marker.display()
            )
        );
        assert_eq!(any, alt);

        // a marker of another point: the resume was started with other flags
        std::fs::write(&marker, r#"{"conc": 8, "repeat": 1, "repeats": 1}"#).unwrap();
        let e = crate::resume::load_finished(&spec).err().unwrap();
        assert!(matches!(e, PipelineError::Invalid(_)));
        assert!(
            e.to_string()
                .contains("written for another point (conc 8, repeat 1/1) than conc 4"),
            "{e}"
        );
    }

    #[test]
    fn an_observers_error_comes_back_as_itself() {
        let ours: super::BoxError = Box::new(PipelineError::Interrupted);
        let e = PipelineError::from_observer(ours);
        assert!(matches!(e, PipelineError::Interrupted));
        assert_eq!(e.to_string(), "interrupted before the measured phase");

        let io = std::io::Error::other("summary.json: disk full");
        let e = PipelineError::from_observer(Box::new(io));
        assert!(matches!(e, PipelineError::Observer(_)));
        assert_eq!(format!("{e:#}"), "summary.json: disk full");

        // an AgentX point: one line, as before
        let e = PipelineError::Agentx {
            point: "conc 4".into(),
            source: servebench_agentx::point::PointError::Plan("trace 7: no requests".into()),
        };
        let (plain, alt, any) = texts(e);
        assert_eq!(plain, "conc 4: trace 7: no requests");
        assert_eq!(alt, plain);
        assert_eq!(any, plain);
    }
}
