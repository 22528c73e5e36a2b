//! [`TriageError`]: why logs could not be triaged or a signature table could not be compiled;
//! one line naming the log, or the table file and the signature.

/// An error of triage. Every variant prints one line, the same text the binary printed when
/// this crate returned `anyhow` errors; none carries a `source` chain (the cause is already in
/// the line), so `{}` and `{:#}` print the same, and so does `anyhow`'s `{:#}` after `?`.
#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    /// [`crate::triage_logs_with`] was given no path.
    #[error("no log given")]
    NoLog,
    /// A log could not be opened or read (`cannot read log <path>: <reason>`).
    #[error("cannot read log {path}: {error}")]
    ReadLog {
        /// The log path as given.
        path: String,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// A signature table is not valid TOML or has unknown/missing fields
    /// (`<file>: <TOML parser message>`).
    #[error("{file}: {message}")]
    TableSyntax {
        /// The table file name (the `source` given to [`crate::SignatureTable::from_toml`]).
        file: String,
        /// The TOML parser's message, trimmed.
        message: String,
    },
    /// One row of a signature table is invalid: duplicate id, no patterns, an unknown
    /// layer/persistence/action/outcome/phase word, a pattern that does not compile, a bad
    /// `source` (`<file>: signature `<id>`: <problem>`).
    #[error("{file}: signature `{id}`: {problem}")]
    Signature {
        /// The table file name.
        file: String,
        /// The signature's `id`.
        id: String,
        /// What is wrong with the row (names the pattern when one does not compile).
        problem: String,
    },
    /// Every pattern compiled alone but the combined `RegexSet` did not (e.g. too large).
    #[error("{file}: compiling the pattern set: {error}")]
    PatternSet {
        /// The table file name.
        file: String,
        /// The regex crate's error.
        error: regex::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::TriageError;
    use crate::SignatureTable;

    /// Each kind: its variant, its exact line, and the same line through `anyhow`'s `{:#}`
    /// (how the binary prints it) — no cause printed twice.
    #[test]
    fn variants_and_their_exact_lines() {
        let e = crate::triage_logs::<&str>(&[]).unwrap_err();
        assert!(matches!(e, TriageError::NoLog));
        assert_eq!(e.to_string(), "no log given");

        let e = crate::triage_logs(&["/nonexistent/x.log"]).unwrap_err();
        let TriageError::ReadLog { path, error } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(path, "/nonexistent/x.log");
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
        let line = format!("cannot read log /nonexistent/x.log: {error}");
        assert_eq!(e.to_string(), line);
        assert_eq!(format!("{:#}", anyhow::Error::new(e)), line);

        let e = SignatureTable::from_toml("[[signature]]\nid = 3\n", "t.toml").unwrap_err();
        assert!(matches!(&e, TriageError::TableSyntax { file, .. } if file == "t.toml"));
        // the TOML parser's own message, as before (it quotes the line, over several lines)
        let m = e.to_string();
        assert!(
            m.starts_with("t.toml: TOML parse error at line 2, column 6"),
            "{m}"
        );
        assert!(
            m.ends_with("invalid type: integer `3`, expected a string"),
            "{m}"
        );

        let row = "[[signature]]\nid='x'\ngroup='extra'\ncategory='x'\nclass='x'\nlayer='engine'\npersistence='mixed'\naction='inspect'\npatterns=['a']\nfix=''\nnext=''\nexample='a'\nsource='spec: x'\n";
        let e = SignatureTable::from_toml(&format!("{row}{row}"), "t.toml").unwrap_err();
        assert!(
            matches!(&e, TriageError::Signature { id, problem, .. } if id == "x" && problem == "duplicate id")
        );
        assert_eq!(e.to_string(), "t.toml: signature `x`: duplicate id");
        assert_eq!(
            format!("{:#}", anyhow::Error::new(e)),
            "t.toml: signature `x`: duplicate id"
        );

        let e = SignatureTable::from_toml(&row.replace("['a']", "['(']"), "t.toml").unwrap_err();
        assert!(matches!(&e, TriageError::Signature { .. }));
        // The invalid pattern is the point: its error text is what the message must quote.
        #[allow(clippy::invalid_regex)]
        let regex_msg = regex::Regex::new("(").unwrap_err().to_string();
        assert_eq!(
            e.to_string(),
            format!("t.toml: signature `x`: pattern `(`: {regex_msg}")
        );

        let e = SignatureTable::from_toml(&row.replace("'mixed'", "'sometimes'"), "t.toml")
            .unwrap_err();
        assert!(e.to_string().starts_with(
            "t.toml: signature `x`: unknown Persistence `sometimes` (expected one of: "
        ));
    }
}
