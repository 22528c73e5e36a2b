//! The runner's error type: one line naming the file, job, point or flag that is wrong.

/// Errors of the runner.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// A matrix row the runner cannot use (a missing field, its recipe fingerprint).
    #[error("{0}")]
    Catalog(String),
    /// The catalog's matrix expansion failed (an unknown key, a glob matching nothing): the
    /// catalog's own error, typed, said as it says itself (it has no `source`).
    #[error(transparent)]
    Matrix(#[from] servebench_catalog::CatalogError),
    /// No recipe found for a point (the paths tried are listed).
    #[error("{0}")]
    Recipe(String),
    /// A file, directory or socket could not be read, written or opened.
    #[error("{path}: {cause}")]
    Io {
        /// The path (or what stands for it: `127.0.0.1:0`, `engine`, `stdout`).
        path: String,
        /// What went wrong, typed: the OS error (branch on its `kind()`), a JSON error, or a
        /// message. Said in the line itself, so it is not also a `source` (the `{:#}` chain
        /// prints it once).
        cause: IoCause,
    },
    /// A Slurm command failed (`sbatch`, `squeue`, `scontrol`, `scancel`).
    #[error("{0}")]
    Slurm(String),
    /// The results store holds something other than the runner expected (a measurement that
    /// stored no run).
    #[error("store {0}")]
    Store(String),
    /// The results store failed, its error typed. Said in the line with its whole chain (`{:#}`,
    /// as before), so it is not also a `source`.
    #[error("store {0:#}")]
    StoreDb(servebench_store::StoreError),
    /// Bad input (a flag, a state file).
    #[error("{0}")]
    Invalid(String),
}

/// Why a [`RunnerError::Io`] path could not be used.
#[derive(Debug, thiserror::Error)]
pub enum IoCause {
    /// The OS refused (open, read, write, rename, spawn, bind).
    #[error("{0}")]
    Os(std::io::Error),
    /// A document did not (de)serialise.
    #[error("{0}")]
    Json(serde_json::Error),
    /// A check of the runner's own (`--traces: no such file or folder`).
    #[error("{0}")]
    Message(String),
}

impl From<std::io::Error> for IoCause {
    fn from(e: std::io::Error) -> Self {
        IoCause::Os(e)
    }
}

impl From<serde_json::Error> for IoCause {
    fn from(e: serde_json::Error) -> Self {
        IoCause::Json(e)
    }
}

impl From<String> for IoCause {
    fn from(m: String) -> Self {
        IoCause::Message(m)
    }
}

impl From<&str> for IoCause {
    fn from(m: &str) -> Self {
        IoCause::Message(m.to_string())
    }
}

impl RunnerError {
    /// An I/O error on `path`: `cause` is an [`std::io::Error`], a [`serde_json::Error`] or a
    /// message ([`IoCause`]); the line reads `PATH: CAUSE`.
    pub fn io(path: impl AsRef<std::path::Path>, cause: impl Into<IoCause>) -> RunnerError {
        RunnerError::Io {
            path: path.as_ref().display().to_string(),
            cause: cause.into(),
        }
    }

    /// The OS error of an [`RunnerError::Io`], if that is its cause.
    pub fn os_error(&self) -> Option<&std::io::Error> {
        match self {
            RunnerError::Io {
                cause: IoCause::Os(e),
                ..
            } => Some(e),
            _ => None,
        }
    }
}

/// Result with [`RunnerError`].
pub type Result<T> = std::result::Result<T, RunnerError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The line is `PATH: CAUSE` whatever the cause, the OS error stays typed, and the chain
    /// (`{:#}` through anyhow, as the binary prints errors) says the cause once (no `source`);
    /// a catalog error reads as the catalog wrote it.
    #[test]
    fn typed_causes_keep_their_lines() {
        let os = std::fs::read("/nonexistent/state.json").unwrap_err();
        let e = RunnerError::io("/nonexistent/state.json", os);
        assert_eq!(
            e.to_string(),
            "/nonexistent/state.json: No such file or directory (os error 2)"
        );
        assert_eq!(
            e.os_error().map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
        // not a source: a `{:#}` chain would say the OS error twice
        assert!(std::error::Error::source(&e).is_none());
        let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let e = RunnerError::io("s.json", json);
        assert_eq!(
            e.to_string(),
            "s.json: EOF while parsing an object at line 1 column 1"
        );
        assert!(e.os_error().is_none());
        // the catalog's own error: its line as it says it, typed, no chain added
        let e = RunnerError::from(servebench_catalog::CatalogError::msg(
            "no config key matches `x*`",
        ));
        assert_eq!(e.to_string(), "no config key matches `x*`");
        assert!(matches!(e, RunnerError::Matrix(_)));
        assert!(std::error::Error::source(&e).is_none());
        // a store error: `store ` and its whole chain, once
        let inner = std::io::Error::other("disk I/O error");
        let e = RunnerError::StoreDb(servebench_store::StoreError::context(
            inner,
            "r.db: recording the run".into(),
        ));
        assert_eq!(
            e.to_string(),
            "store r.db: recording the run: disk I/O error"
        );
        assert!(std::error::Error::source(&e).is_none());
        let e = RunnerError::io("t", "--traces: no such file or folder");
        assert_eq!(e.to_string(), "t: --traces: no such file or folder");
        assert!(matches!(
            e,
            RunnerError::Io {
                cause: IoCause::Message(_),
                ..
            }
        ));
    }
}
