//! The cause chain of an error as the binary prints it: the alternate form (`{:#}`) of the
//! libraries' error types appends each `source()` as `: cause`, the text `anyhow`'s `{:#}`
//! printed before the libraries had their own error types.

use std::error::Error;
use std::fmt;

/// Writes `: cause` for every link of `err`'s source chain (not `err` itself) when `f` is the
/// alternate form (`{:#}`); writes nothing otherwise.
///
/// # Errors
/// Only the formatter's own.
pub fn write_source_chain(f: &mut fmt::Formatter<'_>, err: &dyn Error) -> fmt::Result {
    if f.alternate() {
        let mut next = err.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
    }
    Ok(())
}
