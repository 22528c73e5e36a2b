//! [`BumpError`]: why a bump could not be planned or written, one line naming the file (and
//! line, config key, rule or URL) where there is one.
//!
//! Every message reads exactly as it did when this crate returned `anyhow` errors: `Display`
//! is the whole line, and the alternate form `{:#}` (what the binary prints once `?` has turned
//! the error into `anyhow`) is the same line. An OS, JSON or catalog error that a message
//! quotes (`cannot read f.yaml: No such file or directory (os error 2)`) is kept in a field
//! named `err` and is deliberately *not* the `source()`: a chain printed with `{:#}` would
//! otherwise say it twice. The wrapped typed errors ([`RefError`], [`RegistryError`]) are
//! transparent: their own text, their own source.

use std::path::PathBuf;

use crate::reference::RefError;
use crate::registry::RegistryError;
use crate::rules::RuleKind;

/// What was being done to a file when the OS refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Reading the file (`cannot read PATH`).
    Read,
    /// Creating the temporary file next to the target, in its directory (`cannot write in
    /// DIR`; the path is the directory).
    WriteIn,
    /// Writing the temporary file that will replace the target (`cannot write PATH`).
    Write,
    /// Renaming the temporary file over the target (`cannot replace PATH`).
    Replace,
}

impl std::fmt::Display for IoOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoOp::Read => "read",
            IoOp::WriteIn => "write in",
            IoOp::Write => "write",
            IoOp::Replace => "replace",
        })
    }
}

/// Why an entry's `image:` value cannot be edited in place (the catalog is left alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotEditable {
    /// The value carries a YAML anchor (`&a`) or tag (`!t`).
    AnchorOrTag,
    /// The value is a block scalar (`|` or `>`).
    BlockScalar,
    /// The value is an alias (`*a`) of a value defined elsewhere.
    Alias,
    /// The value is written over several lines.
    MultiLine,
}

impl std::fmt::Display for NotEditable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotEditable::AnchorOrTag => "carries a YAML anchor or tag",
            NotEditable::BlockScalar => "is a block scalar",
            NotEditable::Alias => "is a YAML alias",
            NotEditable::MultiLine => "spans several lines",
        })
    }
}

/// What is wrong with one rule of a rules file (`flag-rules.toml` or `--rules FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleProblem {
    /// Another rule of the file has the same `id`.
    DuplicateId,
    /// `since` is not a release version (the text given).
    BadSince(String),
    /// `until` is not a release version (the text given).
    BadUntil(String),
    /// The rule's kind needs this field and it is missing or empty.
    MissingField {
        /// The rule's kind.
        kind: RuleKind,
        /// The field (`old`, `new`, `new_text`, `old_value`, `new_value`).
        field: &'static str,
    },
    /// `evidence` is empty.
    NoEvidence,
}

impl std::fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleProblem::DuplicateId => f.write_str("duplicate id"),
            RuleProblem::BadSince(s) => write!(f, "since `{s}` is not a version"),
            RuleProblem::BadUntil(u) => write!(f, "until `{u}` is not a version"),
            RuleProblem::MissingField { kind, field } => write!(f, "kind {kind:?} needs `{field}`"),
            RuleProblem::NoEvidence => f.write_str("no evidence link"),
        }
    }
}

/// An error of the bump crate. Paths are printed as given; line numbers are 1-based lines of
/// the named file; columns 1-based characters.
#[derive(Debug, thiserror::Error)]
pub enum BumpError {
    /// An image reference (the new one, `--image`) is malformed.
    #[error(transparent)]
    Reference(#[from] RefError),
    /// A registry failed for the new image (unreachable, 404, token, auth, protocol).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The `pr-link` of the change-log entry is neither the canonical PR URL nor an `XXX`
    /// placeholder; the message says which forms are accepted.
    #[error("{0}")]
    PrLink(String),
    /// No master-config file was given.
    #[error("no catalog file given (--catalog)")]
    NoCatalog,
    /// A file could not be read or written; `err` is the OS error, quoted in the message.
    #[error("cannot {op} {}: {err}", path.display())]
    Io {
        /// What was being done.
        op: IoOp,
        /// The file (the directory for [`IoOp::WriteIn`]).
        path: PathBuf,
        /// The OS error.
        err: std::io::Error,
    },
    /// A master-config file is not valid YAML.
    #[error("{file}:{line}:{col}: YAML error: {info}")]
    Yaml {
        /// The file, as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// The parser's description.
        info: String,
    },
    /// The config key is defined twice in one file.
    #[error("{file}:{line}: config key `{key}` is defined twice (also at line {first_line})")]
    KeyDefinedTwice {
        /// The file.
        file: String,
        /// Line of the second definition.
        line: usize,
        /// The config key.
        key: String,
        /// Line of the first definition.
        first_line: usize,
    },
    /// The config entry is a scalar or a sequence, not a mapping.
    #[error("{file}:{line}: config entry `{key}` is not a mapping")]
    EntryNotMapping {
        /// The file.
        file: String,
        /// Line of the entry (or of its value).
        line: usize,
        /// The config key.
        key: String,
    },
    /// The config entry is an alias of another node.
    #[error("{file}:{line}: config entry `{key}` is an alias; edit its anchor instead")]
    EntryIsAlias {
        /// The file.
        file: String,
        /// Line of the alias.
        line: usize,
        /// The config key.
        key: String,
    },
    /// The entry has two `image` keys.
    #[error("{file}:{line}: entry `{key}` has two `image` keys")]
    ImageTwice {
        /// The file.
        file: String,
        /// Line of the second `image`.
        line: usize,
        /// The config key.
        key: String,
    },
    /// The entry has no `image` key.
    #[error("{file}:{line}: entry `{key}` has no `image` key")]
    NoImage {
        /// The file.
        file: String,
        /// Line of the entry's key.
        line: usize,
        /// The config key.
        key: String,
    },
    /// The entry's image is written in a way an in-place edit cannot keep.
    #[error("{file}:{line}: the image of `{key}` {why}; refusing to edit it in place")]
    ImageNotEditable {
        /// The file.
        file: String,
        /// Line of the value.
        line: usize,
        /// The config key.
        key: String,
        /// How it is written.
        why: NotEditable,
    },
    /// The config key is not in the file being edited.
    #[error("{file}: config key `{key}` not found")]
    KeyNotInFile {
        /// The file.
        file: String,
        /// The config key.
        key: String,
    },
    /// The edited file did not read back as expected: the edit is refused (a bug, not bad
    /// input).
    #[error(
        "{file}{}: internal error: {detail}",
        line.map(|l| format!(":{l}")).unwrap_or_default()
    )]
    EditCheck {
        /// The file.
        file: String,
        /// Line of the image value, when known.
        line: Option<usize>,
        /// What did not read back.
        detail: String,
    },
    /// The config key is in none of the master-config files.
    #[error(
        "config key `{key}` not found in {}",
        files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    KeyNotFound {
        /// The config key.
        key: String,
        /// The files searched.
        files: Vec<PathBuf>,
    },
    /// The config key is defined in more than one master-config file.
    #[error(
        "config key `{key}` is defined in {} files: {}",
        files.len(),
        files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    KeyInSeveralFiles {
        /// The config key.
        key: String,
        /// The files defining it.
        files: Vec<PathBuf>,
    },
    /// The catalog does not load (validation); `err` names file:line:col, key and field.
    #[error("catalog invalid: {err}")]
    CatalogInvalid {
        /// The catalog's error.
        err: servebench_catalog::CatalogError,
    },
    /// The key was found by the text scan but is not in the loaded catalog.
    #[error("config key `{key}` not in the loaded catalog")]
    KeyNotLoaded {
        /// The config key.
        key: String,
    },
    /// A provenance file (`--provenance`, the shape of `images.json`) is not JSON.
    #[error("{}: not JSON: {err}", path.display())]
    ProvenanceNotJson {
        /// The file.
        path: PathBuf,
        /// The parser's error (line and column).
        err: serde_json::Error,
    },
    /// The provenance file has no record for the new image.
    #[error("{}: no record for `{image}`", path.display())]
    NoProvenanceRecord {
        /// The file.
        path: PathBuf,
        /// The image reference looked for.
        image: String,
    },
    /// `--pin-digest` without a resolved digest (`--no-resolve`).
    #[error("--pin-digest needs the digest: drop --no-resolve")]
    PinWithoutDigest,
    /// A rules file is not valid TOML or does not have the rules' shape.
    #[error("{file}: {detail}")]
    RulesSyntax {
        /// The rules file (`flag-rules.toml` for the embedded one).
        file: String,
        /// The TOML parser's message, trimmed.
        detail: String,
    },
    /// One rule of a rules file is invalid.
    #[error("{file}: rule `{id}`: {problem}")]
    Rule {
        /// The rules file.
        file: String,
        /// The rule's id.
        id: String,
        /// What is wrong.
        problem: RuleProblem,
    },
    /// Two edits of a recipe overlap (a rule conflict).
    #[error("{}: {detail}", path.display())]
    RecipeEdit {
        /// The recipe.
        path: PathBuf,
        /// Where (byte ranges).
        detail: String,
    },
    /// The change log refuses the new entry (append-only rules); `err` says why.
    #[error("{}: {err}", path.display())]
    ChangelogAppend {
        /// The change log.
        path: PathBuf,
        /// The catalog crate's error.
        err: servebench_catalog::CatalogError,
    },
    /// The change log is not UTF-8 once the entry is appended.
    #[error("{}: not UTF-8 after append", path.display())]
    ChangelogNotUtf8 {
        /// The change log.
        path: PathBuf,
    },
    /// A file to be written changed on disk after the bump read it; nothing more is written.
    #[error("{} changed while the bump was computed; nothing more written", path.display())]
    ChangedMeanwhile {
        /// The file.
        path: PathBuf,
    },
    /// The provenance file the bump appends to (`provenance.json`) does not parse.
    #[error("{}: {err}", path.display())]
    ProvenanceFile {
        /// The file.
        path: PathBuf,
        /// The parser's error (line and column).
        err: serde_json::Error,
    },
    /// Serialising the provenance records failed.
    #[error(transparent)]
    Serialize(#[from] serde_json::Error),
}

/// `Result` of this crate: [`BumpError`] unless said otherwise.
pub type Result<T, E = BumpError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain, `{:#}` and through `anyhow` (as the binary prints it): the same one line.
    fn one_line(e: BumpError) -> String {
        let plain = e.to_string();
        assert_eq!(format!("{e:#}"), plain);
        assert_eq!(format!("{:#}", anyhow::Error::new(e)), plain);
        assert!(!plain.contains('\n'), "{plain}");
        plain
    }

    #[test]
    fn io_error_is_said_once() {
        let err = std::fs::read_to_string("/nonexistent/m.yaml").unwrap_err();
        let e = BumpError::Io {
            op: IoOp::Read,
            path: "/nonexistent/m.yaml".into(),
            err,
        };
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(
            one_line(e),
            "cannot read /nonexistent/m.yaml: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn wrapped_errors_are_transparent() {
        let r = crate::ImageRef::parse("A/b").unwrap_err();
        let e = BumpError::from(r.clone());
        assert!(matches!(&e, BumpError::Reference(x) if *x == r));
        assert_eq!(one_line(e), r.to_string());
        let e = BumpError::from(RegistryError::PlainHttpRefused {
            host: "example.com".into(),
        });
        assert!(matches!(
            &e,
            BumpError::Registry(RegistryError::PlainHttpRefused { .. })
        ));
        assert_eq!(
            one_line(e),
            "--plain-http is only allowed for loopback registries (127.0.0.1, localhost, ::1), not `example.com`"
        );
    }

    #[test]
    fn edit_check_line_is_optional() {
        let e = BumpError::EditCheck {
            file: "m.yaml".into(),
            line: None,
            detail: "`a` lost after the edit".into(),
        };
        assert_eq!(
            one_line(e),
            "m.yaml: internal error: `a` lost after the edit"
        );
        let e = BumpError::EditCheck {
            file: "m.yaml".into(),
            line: Some(4),
            detail: "the edit changed more than the image value".into(),
        };
        assert_eq!(
            one_line(e),
            "m.yaml:4: internal error: the edit changed more than the image value"
        );
    }
}
