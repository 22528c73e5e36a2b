//! [`CompareError`]: why a row or a baseline file cannot be read, one line naming the file, row
//! and field (`baseline.json: points[2]: missing field `conc``).

use std::fmt;

/// An error of this crate. `Display` prints the outermost line (as `anyhow` does); the
/// alternate form `{:#}` prints the whole chain, `context: cause`.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// One line.
    Msg(String),
    /// A line saying where (`baseline.json: row 3`) over the error it wraps.
    Context {
        /// Where.
        context: String,
        /// What went wrong there.
        #[source]
        source: Box<CompareError>,
    },
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::Msg(m) => f.write_str(m),
            CompareError::Context { context, source } if f.alternate() => {
                write!(f, "{context}: {source:#}")
            }
            CompareError::Context { context, .. } => f.write_str(context),
        }
    }
}

/// `Result` of this crate: [`CompareError`] unless said otherwise.
pub type Result<T, E = CompareError> = std::result::Result<T, E>;

/// Adds a context line to an error of this crate.
pub(crate) trait Context<T> {
    /// Wraps the error under the line `f` gives.
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T> {
        self.map_err(|e| CompareError::Context {
            context: f(),
            source: Box::new(e),
        })
    }
}

/// A [`CompareError`] with a formatted message.
macro_rules! err {
    ($($t:tt)*) => { $crate::error::CompareError::Msg(format!($($t)*)) };
}

/// Returns a [`CompareError`] with a formatted message.
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::error::err!($($t)*)) };
}

pub(crate) use {err, fail};
