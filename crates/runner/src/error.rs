//! The runner's error type: one line naming the file, job, point or flag that is wrong.

/// Errors of the runner.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The catalog, runners file or matrix expansion failed.
    #[error("{0}")]
    Catalog(String),
    /// No recipe found for a point (the paths tried are listed).
    #[error("{0}")]
    Recipe(String),
    /// A file or directory could not be read or written.
    #[error("{path}: {msg}")]
    Io {
        /// The path.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// A Slurm command failed (`sbatch`, `squeue`, `scontrol`, `scancel`).
    #[error("{0}")]
    Slurm(String),
    /// The results store failed.
    #[error("store {0}")]
    Store(String),
    /// Bad input (a flag, a state file).
    #[error("{0}")]
    Invalid(String),
}

impl RunnerError {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, e: impl std::fmt::Display) -> RunnerError {
        RunnerError::Io {
            path: path.as_ref().display().to_string(),
            msg: e.to_string(),
        }
    }
}

/// Result with [`RunnerError`].
pub type Result<T> = std::result::Result<T, RunnerError>;
