//! [`StoreError`]: why the store could not be opened, read or written; one line naming the
//! database file (and run or row where there is one).

use std::fmt;

/// An error of the store. `Display` prints the outermost line, as `anyhow` did; the alternate
/// form `{:#}` prints the whole chain, `line: cause: cause…`, the same text `anyhow` printed.
///
/// `Error` and `Display` are written by hand rather than derived with `thiserror`: SQLite and
/// JSON errors must be transparent (their own `source` chain, not themselves again) while the
/// alternate form walks the chain, so every message reads exactly as it did under `anyhow`.
#[derive(Debug)]
pub enum StoreError {
    /// One line.
    Msg(String),
    /// SQLite said no.
    Sqlite(rusqlite::Error),
    /// A stored row is not the JSON it should be.
    Json(serde_json::Error),
    /// A line saying where (`store.db: recording the run`) over the error it wraps.
    Context {
        /// Where.
        context: String,
        /// What went wrong there.
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Msg(m) => f.write_str(m)?,
            StoreError::Sqlite(e) => fmt::Display::fmt(e, f)?,
            StoreError::Json(e) => fmt::Display::fmt(e, f)?,
            StoreError::Context { context, .. } => f.write_str(context)?,
        }
        // the rest of the chain, each link as anyhow's `{:#}` prints it
        servebench_contracts::chain::write_source_chain(f, self)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Msg(_) => None,
            StoreError::Sqlite(e) => e.source(),
            StoreError::Json(e) => e.source(),
            StoreError::Context { source, .. } => Some(&**source),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sqlite(e)
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> StoreError {
        StoreError::Json(e)
    }
}

impl StoreError {
    /// Wraps `source` under the line `context`.
    pub fn context(
        source: impl std::error::Error + Send + Sync + 'static,
        context: String,
    ) -> StoreError {
        StoreError::Context {
            context,
            source: Box::new(source),
        }
    }
}

/// `Result` of the store: [`StoreError`] unless said otherwise.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Adds a context line to an error.
pub(crate) trait Context<T> {
    /// Wraps the error under the line `f` gives.
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Context<T> for std::result::Result<T, E> {
    fn with_context<F: FnOnce() -> String>(self, f: F) -> Result<T> {
        self.map_err(|e| StoreError::context(e, f()))
    }
}

/// A [`StoreError`] with a formatted message.
macro_rules! err {
    ($($t:tt)*) => { $crate::error::StoreError::Msg(format!($($t)*)) };
}

/// Returns a [`StoreError`] with a formatted message.
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::error::err!($($t)*)) };
}

pub(crate) use {err, fail};

#[cfg(test)]
mod tests {
    use super::{Context, Result, StoreError};

    /// The same failures, through this type and through `anyhow` (as the store returned them
    /// before): the same text, plain, `{:#}`, and once converted to `anyhow` at the binary.
    #[test]
    fn messages_read_as_anyhow_printed_them() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let raw = || conn.execute("SELECT * FROM nope", []).map(|_| ());
        let ours: Result<()> = raw().with_context(|| "db: reading".to_string());
        let theirs: anyhow::Result<()> =
            anyhow::Context::with_context(raw(), || "db: reading".to_string());
        let (o, t) = (ours.unwrap_err(), theirs.unwrap_err());
        assert_eq!(o.to_string(), "db: reading");
        assert_eq!(o.to_string(), t.to_string());
        assert!(format!("{o:#}").starts_with("db: reading: no such table: nope"));
        assert_eq!(format!("{o:#}"), format!("{t:#}"));
        assert_eq!(format!("{:#}", anyhow::Error::new(o)), format!("{t:#}"));
        // a bare SQLite error converted by `?`, then a context over it
        let bare: Result<()> = raw().map_err(StoreError::from);
        let bare_any: anyhow::Result<()> = raw().map_err(anyhow::Error::new);
        let (b, ba) = (bare.unwrap_err(), bare_any.unwrap_err());
        assert_eq!(format!("{b:#}"), format!("{ba:#}"));
        let wrapped = Err::<(), _>(b).with_context(|| "outer".to_string());
        let wrapped_any = anyhow::Context::with_context(Err::<(), _>(ba), || "outer".to_string());
        assert_eq!(
            format!("{:#}", wrapped.unwrap_err()),
            format!("{:#}", wrapped_any.unwrap_err())
        );
        let m = super::err!("{}: run {} does not exist", "db", 3);
        assert_eq!(format!("{m:#}"), "db: run 3 does not exist");
    }
}
