//! Errors that name the file, line:column, config key and field.

use std::fmt;

use crate::yaml::Mark;

/// One problem found in a catalog file.
///
/// Renders as `FILE:LINE:COL: KEY: PATH: MESSAGE`, leaving out the parts that do not apply, e.g.
/// `nvidia-master.yaml:131:9: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[2]:
/// conc-start and conc-list are mutually exclusive`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, as given by the user.
    pub file: String,
    /// Position of the offending node.
    pub mark: Mark,
    /// The config key (master configs) or entry label (change log), if any.
    pub key: Option<String>,
    /// The field path inside the entry (`scenarios.fixed-seq-len[0].search-space[2].pp`), may be empty.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.mark.line, self.mark.col)?;
        if let Some(k) = &self.key {
            write!(f, "{k}: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// Errors of the catalog crate.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A file could not be read.
    ///
    /// The OS error is part of the message and deliberately not a `source()`: error chains
    /// printed with `{:#}` (anyhow) would otherwise repeat it (`f.yaml: No such file or
    /// directory (os error 2): No such file or directory (os error 2)`).
    #[error("{path}: {err}")]
    Io {
        /// The path as given.
        path: String,
        /// The OS error.
        err: std::io::Error,
    },
    /// One or more validation problems (each names file:line:col, key and field).
    #[error("{}", .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Diagnostic>),
    /// A processing error with the reference tool's exact wording (e.g. change-log deletions).
    #[error("{0}")]
    Message(String),
}

impl CatalogError {
    /// Shorthand for [`CatalogError::Message`].
    pub fn msg(s: impl Into<String>) -> Self {
        CatalogError::Message(s.into())
    }
}

/// Reads a file to a string, naming the path on failure.
pub fn read_file(path: &str) -> Result<String, CatalogError> {
    std::fs::read_to_string(path).map_err(|err| CatalogError::Io {
        path: path.to_string(),
        err,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn io_error_is_said_once_in_an_error_chain() {
        let e =
            anyhow::Error::from(super::read_file("/nonexistent/nvidia-master.yaml").unwrap_err());
        assert_eq!(
            format!("{e:#}"),
            "/nonexistent/nvidia-master.yaml: No such file or directory (os error 2)"
        );
    }
}
