//! [`WorkloadError`]: why a tokenizer, a chat template or the random dataset could not be
//! loaded or built; one line naming the file, flag or value.
//!
//! `Display` is the line `anyhow` printed before this crate had its own type. Where a cause was
//! part of that line (`x.json: cannot load tokenizer: …`) it is a field printed in it, not a
//! `source()`, so a chain printer (`anyhow`'s `{:#}`) does not repeat it; where it was a
//! context over a cause (`cannot read FILE` over the I/O error) the cause is the `source()`, and
//! `{:#}` once converted to `anyhow` prints `cannot read FILE: No such file or directory (os
//! error 2)` exactly as before.

use std::path::PathBuf;

/// An error of the workload crate: loading the tokenizer or chat template, or building the
/// random dataset.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The tokenizer file (`tokenizer.json`, or the one inside a given directory) is not there.
    #[error("tokenizer file {} does not exist", file.display())]
    TokenizerMissing {
        /// The `tokenizer.json` looked for.
        file: PathBuf,
    },
    /// The `tokenizers` crate cannot load the tokenizer file.
    #[error("{}: cannot load tokenizer: {error}", file.display())]
    TokenizerLoad {
        /// The `tokenizer.json`.
        file: PathBuf,
        /// Why (`tokenizers`' own error, printed in the line).
        error: tokenizers::Error,
    },
    /// The tokenizer failed to encode a text.
    #[error("{}: encode failed: {error}", file.display())]
    Encode {
        /// The `tokenizer.json`.
        file: PathBuf,
        /// Why (printed in the line).
        error: tokenizers::Error,
    },
    /// The tokenizer failed to decode token ids.
    #[error("{}: decode failed: {error}", file.display())]
    Decode {
        /// The `tokenizer.json`.
        file: PathBuf,
        /// Why (printed in the line).
        error: tokenizers::Error,
    },
    /// `tokenizer_config.json` cannot be read.
    #[error("cannot read {}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error (the chain's next link).
        #[source]
        source: std::io::Error,
    },
    /// `tokenizer_config.json` is not JSON.
    #[error("{}: invalid JSON", file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// The parse error, with line and column (the chain's next link).
        #[source]
        source: serde_json::Error,
    },
    /// `tokenizer_config.json` has no `chat_template` field (or it is neither a string nor a
    /// list).
    #[error("{}: no `chat_template` field", file.display())]
    NoChatTemplate {
        /// The file.
        file: PathBuf,
    },
    /// `chat_template` is a list in which no entry has a `template` string.
    #[error("{}: chat_template list has no template", file.display())]
    EmptyChatTemplateList {
        /// The file.
        file: PathBuf,
    },
    /// minijinja cannot compile the chat template.
    #[error("{}: chat template does not compile: {error}", origin.display())]
    TemplateCompile {
        /// Where the template came from (`tokenizer_config.json`, or a name given by a test).
        origin: PathBuf,
        /// minijinja's error (printed in the line).
        error: minijinja::Error,
    },
    /// The chat template failed to render a conversation (e.g. it called `raise_exception`).
    #[error("{}: chat template failed to render: {error}", origin.display())]
    TemplateRender {
        /// Where the template came from.
        origin: PathBuf,
        /// minijinja's error (printed in the line).
        error: minijinja::Error,
    },
    /// The range ratio (`--range-ratio`) is outside `[0, 1]`.
    #[error("--range-ratio must be in [0, 1], got {range_ratio}")]
    RangeRatio {
        /// The value given.
        range_ratio: f64,
    },
    /// An input or output length (ISL/OSL, tokens) is 0.
    #[error("input and output lengths must be > 0 (got ISL {input_len}, OSL {output_len})")]
    ZeroLength {
        /// Input length ISL after the chat-template overhead is subtracted, tokens.
        input_len: u32,
        /// Output length OSL, tokens.
        output_len: u32,
    },
    /// The tokenizer's vocabulary is empty, so there are no token ids to draw.
    #[error("tokenizer vocabulary is empty")]
    EmptyVocabulary,
    /// The numpy-compatible generator refused a draw (`randint: low (A) >= high (B)`, numpy's
    /// `ValueError`).
    #[error("{0}")]
    Draw(String),
    /// A [`crate::TokenCounter`] implementation outside this crate failed (e.g. the client's
    /// server-side counter could not reach `/tokenize`): its error, printed as it is.
    #[error(transparent)]
    Counter(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// `Result` of this crate: [`WorkloadError`] unless said otherwise.
pub type Result<T, E = WorkloadError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::WorkloadError;
    use crate::tokenizer::{ChatTemplate, LocalTokenizer};

    /// Old text: `anyhow!("tokenizer file {} does not exist")` etc.; the same line now, plain
    /// and through `anyhow` with `{:#}`.
    #[test]
    fn tokenizer_errors_keep_their_line() {
        let e = LocalTokenizer::from_path(Path::new("/nonexistent/tok.json")).unwrap_err();
        assert!(
            matches!(&e, WorkloadError::TokenizerMissing { file } if file == Path::new("/nonexistent/tok.json"))
        );
        assert_eq!(
            e.to_string(),
            "tokenizer file /nonexistent/tok.json does not exist"
        );
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "tokenizer file /nonexistent/tok.json does not exist"
        );

        let dir = std::env::temp_dir().join(format!("wl-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("tokenizer.json");
        std::fs::write(&bad, "{not json").unwrap();
        let e = LocalTokenizer::from_path(&dir).unwrap_err();
        assert!(matches!(&e, WorkloadError::TokenizerLoad { file, .. } if *file == bad));
        let line = e.to_string();
        assert!(
            line.starts_with(&format!("{}: cannot load tokenizer: ", bad.display())),
            "{line}"
        );
        assert_eq!(format!("{:#}", anyhow::Error::from(e)), line, "no chain");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// `cannot read FILE` and `FILE: invalid JSON` were `anyhow` contexts over the cause: the
    /// cause is the `source()` and `{:#}` through `anyhow` prints the same chain as before.
    #[test]
    fn chat_template_config_errors_chain_their_cause() {
        let missing = Path::new("/nonexistent/tokenizer_config.json");
        let e = ChatTemplate::from_tokenizer_config(missing).unwrap_err();
        assert!(matches!(&e, WorkloadError::Read { file, .. } if file == missing));
        assert_eq!(
            e.to_string(),
            "cannot read /nonexistent/tokenizer_config.json"
        );
        let old = anyhow::Context::with_context(std::fs::read_to_string(missing), || {
            format!("cannot read {}", missing.display())
        })
        .unwrap_err();
        assert_eq!(format!("{:#}", anyhow::Error::from(e)), format!("{old:#}"));
        assert_eq!(
            format!("{old:#}"),
            "cannot read /nonexistent/tokenizer_config.json: No such file or directory (os error 2)"
        );

        let dir = std::env::temp_dir().join(format!("wl-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("tokenizer_config.json");
        std::fs::write(&cfg, "{\"bos_token\": ").unwrap();
        let e = ChatTemplate::from_tokenizer_config(&dir).unwrap_err();
        assert!(matches!(&e, WorkloadError::Json { file, .. } if *file == cfg));
        assert_eq!(e.to_string(), format!("{}: invalid JSON", cfg.display()));
        let old = anyhow::Context::with_context(
            serde_json::from_str::<serde_json::Value>("{\"bos_token\": "),
            || format!("{}: invalid JSON", cfg.display()),
        )
        .unwrap_err();
        let chain = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(chain, format!("{old:#}"));
        assert!(
            chain.starts_with(&format!(
                "{}: invalid JSON: EOF while parsing",
                cfg.display()
            )),
            "{chain}"
        );

        std::fs::write(&cfg, "{\"bos_token\": \"<s>\"}").unwrap();
        let e = ChatTemplate::from_tokenizer_config(&cfg).unwrap_err();
        assert!(matches!(e, WorkloadError::NoChatTemplate { .. }));
        assert_eq!(
            e.to_string(),
            format!("{}: no `chat_template` field", cfg.display())
        );
        std::fs::write(&cfg, "{\"chat_template\": [{\"name\": \"x\"}]}").unwrap();
        let e = ChatTemplate::from_tokenizer_config(&cfg).unwrap_err();
        assert!(matches!(e, WorkloadError::EmptyChatTemplateList { .. }));
        assert_eq!(
            e.to_string(),
            format!("{}: chat_template list has no template", cfg.display())
        );
        std::fs::remove_dir_all(&dir).ok();

        let e = ChatTemplate::from_source("{% if %}", "", "", Path::new("t.json")).unwrap_err();
        assert!(matches!(e, WorkloadError::TemplateCompile { .. }));
        assert!(
            e.to_string()
                .starts_with("t.json: chat template does not compile: "),
            "{e}"
        );
    }

    #[test]
    fn dataset_parameter_errors_name_the_value() {
        let mut rng = crate::numpy_rng::NumpyLegacyRng::new(0);
        let e = crate::random::draw_lengths(&mut rng, 10, 10, 1.5, 1, 100).unwrap_err();
        assert!(matches!(e, WorkloadError::RangeRatio { range_ratio } if range_ratio == 1.5));
        assert_eq!(e.to_string(), "--range-ratio must be in [0, 1], got 1.5");
        let e = crate::random::draw_lengths(&mut rng, 0, 7, 0.8, 1, 100).unwrap_err();
        assert!(matches!(
            e,
            WorkloadError::ZeroLength {
                input_len: 0,
                output_len: 7
            }
        ));
        assert_eq!(
            e.to_string(),
            "input and output lengths must be > 0 (got ISL 0, OSL 7)"
        );
        let e = crate::random::draw_lengths(&mut rng, 10, 10, 0.8, 1, 0).unwrap_err();
        assert!(matches!(e, WorkloadError::EmptyVocabulary));
        assert_eq!(e.to_string(), "tokenizer vocabulary is empty");
    }

    /// A counter's own error passes through unchanged: same line, same chain.
    #[test]
    fn counter_errors_are_transparent() {
        let inner = anyhow::anyhow!("cause").context("http://h:1/tokenize stopped");
        let e = WorkloadError::Counter(inner.into());
        assert_eq!(e.to_string(), "http://h:1/tokenize stopped");
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "http://h:1/tokenize stopped: cause"
        );
    }
}
