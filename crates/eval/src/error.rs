//! [`EvalError`]: why a GSM8K run, a data file, a thresholds file or the answer book failed;
//! one line naming the file (and line), the URL, or the document.
//!
//! The text is the text this crate printed when it returned `anyhow` errors, plain and with
//! `{:#}` (which the binary prints after converting with `?`): a variant whose message ends in
//! its cause prints it inline and has no `source`; a variant that is a context line over a
//! cause (`cannot write FILE`, `FILE:LINE: not JSON`) prints only its own line, and its cause
//! is the [`std::error::Error::source`], so `anyhow`'s `{:#}` prints `line: cause`.

use std::fmt;
use std::path::PathBuf;

use servebench_endpoint::EndpointError;

/// An error of the eval crate.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// `--conc` (`EvalOptions::conc`) was 0.
    #[error("--conc must be at least 1")]
    ZeroConcurrency,
    /// A `--profile` word that is neither `inferencex` nor `lm-eval`.
    #[error("unknown GSM8K profile {0:?} (expected inferencex or lm-eval)")]
    UnknownProfile(String),
    /// A `--sim-answers` name that is not one of [`crate::sim_answers::MODELS`].
    #[error(
        "unknown --sim-answers model {0:?} (recorded models: {models})",
        models = crate::sim_answers::MODELS.join(", ")
    )]
    UnknownSimModel(String),
    /// `--sim-gsm8k-accuracy` cannot be simulated (out of range, below what the recorded
    /// wrong answers allow, or a reference that does not score): one line saying which.
    #[error("{0}")]
    SimAccuracy(String),
    /// An input file could not be read (`cannot read <what> <path>: <reason><hint>`).
    #[error("cannot read {file}{}: {error}{}", path.display(), file.hint())]
    Read {
        /// Which input.
        file: InputFile,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// No shared data folder was found ([`crate::shared::shared_dir`]): each place tried, in
    /// order, on one line.
    #[error(
        "no shared data folder (it holds data/gsm8k): {}; set SERVEBENCH_SHARED to it, or SERVEBENCH_GSM8K_DIR to the GSM8K folder",
        tried.join("; ")
    )]
    NoSharedDir {
        /// What was looked at and why it did not do (`SERVEBENCH_SHARED is not set`,
        /// `/x/../shared: no such folder`, …).
        tried: Vec<String>,
    },
    /// A line of a JSONL data file (GSM8K documents or recorded solutions) is not what it
    /// should be (`<path>:<line>: <problem>`; the JSON parser's message, when there is one, is
    /// the `source`).
    #[error("{}:{line}: {problem}", path.display())]
    Record {
        /// The data file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong (`not JSON`, ``no `question` ``, `not a GSM8K record`, …).
        problem: String,
        /// The JSON parser's error, if the line did not parse or deserialise.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// A thresholds file is not valid YAML or holds something other than thresholds in
    /// [0, 1] (`<file>[:<line>]: <problem>`).
    #[error("{file}{}: {problem}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Thresholds {
        /// The file as displayed.
        file: String,
        /// The line (as the YAML parser counts), when known.
        line: Option<usize>,
        /// What is wrong.
        problem: String,
    },
    /// Few-shot sampling asked for more examples than the training pool holds (CPython's
    /// "Sample larger than population").
    #[error("sample larger than population ({k} > {n})")]
    SampleLargerThanPopulation {
        /// Examples asked for.
        k: usize,
        /// Examples in the pool.
        n: usize,
    },
    /// A Python-syntax regex does not compile after translation (the parser's error is the
    /// `source`).
    #[error("regex {pattern:?} (as {translated:?})")]
    Regex {
        /// The pattern as written (Python syntax).
        pattern: String,
        /// The translation that was compiled.
        translated: String,
        /// The regex parser's error.
        #[source]
        source: Box<fancy_regex::Error>,
    },
    /// An output file or folder could not be written (`cannot <op> <path>`; the operating
    /// system's error is the `source`).
    #[error("cannot {op} {}", path.display())]
    Write {
        /// What was being done.
        op: WriteOp,
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// An I/O error without a path (writing `samples.jsonl` while resuming).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A JSON (de)serialisation error without a path (writing `samples.jsonl` or `result.json`).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The HTTP client could not be built (the client library's error is the `source`).
    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),
    /// The endpoint layer said no: not ready in time, no model listed, bad URL or TLS setting.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// A document could not be completed (its request failed after its retries or with a
    /// status that is not retried, or its sample could not be saved); the run stopped, the
    /// samples finished so far are saved and a rerun with the same output folder resumes.
    #[error(
        "doc {doc}: {failure}; {saved} of {total} samples are saved in {} — rerun with the same --out to resume",
        samples_file.display()
    )]
    Doc {
        /// GSM8K test document id (0-based), the lowest that failed.
        doc: usize,
        /// Why.
        failure: DocFailure,
        /// Samples completed and saved.
        saved: usize,
        /// Documents in the run.
        total: usize,
        /// `samples.jsonl`.
        samples_file: PathBuf,
    },
}

/// An input file of the eval (names it in [`EvalError::Read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFile {
    /// `test.jsonl` / `train.jsonl`.
    Gsm8k,
    /// `example_model_solutions.jsonl` (the simulator's answer book).
    RecordedSolutions,
    /// `thresholds.yaml`.
    Thresholds,
    /// `samples.jsonl` of an earlier run (resume).
    Samples,
}

impl InputFile {
    /// The words before the path (with their trailing space).
    fn words(self) -> &'static str {
        match self {
            InputFile::Gsm8k => "GSM8K file ",
            InputFile::RecordedSolutions => "recorded GSM8K solutions ",
            InputFile::Thresholds => "thresholds file ",
            InputFile::Samples => "",
        }
    }

    /// What to do about a missing file (with its leading space), or "".
    fn hint(self) -> &'static str {
        match self {
            InputFile::Gsm8k => " (set --gsm8k-dir or SERVEBENCH_GSM8K_DIR to the folder with test.jsonl and train.jsonl)",
            InputFile::RecordedSolutions => " (set --gsm8k-dir or SERVEBENCH_GSM8K_DIR)",
            InputFile::Thresholds | InputFile::Samples => "",
        }
    }
}

impl fmt::Display for InputFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// What was being written in [`EvalError::Write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    /// Creating or appending to a file.
    Write,
    /// Renaming the rewritten `samples.jsonl` over the old one.
    Replace,
    /// Creating the output folder.
    CreateFolder,
}

impl fmt::Display for WriteOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WriteOp::Write => "write",
            WriteOp::Replace => "replace",
            WriteOp::CreateFolder => "create output folder",
        })
    }
}

/// Why one document could not be completed ([`EvalError::Doc`]).
#[derive(Debug, thiserror::Error)]
pub enum DocFailure {
    /// The server answered with a non-success status (`HTTP <status> from <url>: <body>`);
    /// 429 and 5xx are retried, others are not.
    #[error("HTTP {status} from {url}: {body}")]
    Http {
        /// The chat-completions URL.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The first 200 characters of the response body.
        body: String,
    },
    /// No response head within the per-request timeout (not retried).
    #[error("timed out after {timeout_s} s waiting for {url}")]
    Timeout {
        /// The chat-completions URL.
        url: String,
        /// The per-request timeout, s.
        timeout_s: f64,
    },
    /// The response body did not arrive within the per-request timeout (not retried).
    #[error("timed out after {timeout_s} s reading the response from {url}")]
    BodyTimeout {
        /// The chat-completions URL.
        url: String,
        /// The per-request timeout, s.
        timeout_s: f64,
    },
    /// The response body could not be read (retried).
    #[error("reading the response from {url}: {error}")]
    Body {
        /// The chat-completions URL.
        url: String,
        /// The client library's error.
        error: reqwest::Error,
    },
    /// The connection could not be made or the request not sent (retried); the message holds
    /// the client library's whole cause chain.
    #[error("connection to {url} failed: {}", chain(error))]
    Connect {
        /// The chat-completions URL.
        url: String,
        /// The client library's error.
        error: reqwest::Error,
    },
    /// Any other client error (not retried).
    #[error("request to {url} failed: {}", chain(error))]
    Request {
        /// The chat-completions URL.
        url: String,
        /// The client library's error.
        error: reqwest::Error,
    },
    /// A retryable failure persisted through every retry.
    #[error("{last} (gave up after {attempts} attempts)")]
    GaveUp {
        /// The last attempt's failure.
        last: Box<DocFailure>,
        /// Attempts made (first + retries).
        attempts: u32,
    },
    /// The finished sample could not be appended to `samples.jsonl`.
    #[error("cannot append to the samples file: {0}")]
    Append(std::io::Error),
}

impl DocFailure {
    /// Whether another attempt may succeed: connection and body-read errors, HTTP 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            DocFailure::Http { status, .. } => *status == 429 || (500..600).contains(status),
            DocFailure::Body { .. } | DocFailure::Connect { .. } => true,
            _ => false,
        }
    }
}

/// `e: cause: cause…` on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{DocFailure, EvalError, InputFile};
    use crate::scoring::PyRegex;
    use crate::thresholds::Thresholds;

    /// `{:#}` through `anyhow`, as the binary prints an error it got with `?`.
    fn binary_text(e: EvalError) -> String {
        format!("{:#}", anyhow::Error::new(e))
    }

    #[test]
    fn missing_data_file_is_read_with_the_hint() {
        let e = crate::task::load_docs(Path::new("/nonexistent/test.jsonl")).unwrap_err();
        let EvalError::Read { file, path, error } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*file, InputFile::Gsm8k);
        assert_eq!(path, Path::new("/nonexistent/test.jsonl"));
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
        let line = format!(
            "cannot read GSM8K file /nonexistent/test.jsonl: {error} (set --gsm8k-dir or SERVEBENCH_GSM8K_DIR to the folder with test.jsonl and train.jsonl)"
        );
        assert_eq!(e.to_string(), line);
        assert_eq!(binary_text(e), line);

        let e = Thresholds::load(Path::new("/nonexistent/t.yaml")).unwrap_err();
        assert!(matches!(
            e,
            EvalError::Read {
                file: InputFile::Thresholds,
                ..
            }
        ));
        assert!(
            e.to_string()
                .starts_with("cannot read thresholds file /nonexistent/t.yaml: "),
            "{e}"
        );
    }

    /// A malformed record: the line is `file:line: problem`, the JSON parser's message is the
    /// cause, exactly as `anyhow`'s `with_context` printed it.
    #[test]
    fn malformed_record_names_file_and_line_over_the_parser_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("test.jsonl");
        let bad_line = r#"{"question": "q", "answer": 3}"#;
        std::fs::write(
            &p,
            format!("{{\"question\": \"q\", \"answer\": \"a\"}}\n\n{bad_line}\n"),
        )
        .unwrap();
        let e = crate::task::load_docs(&p).unwrap_err();
        assert!(matches!(
            &e,
            EvalError::Record { line: 3, problem, source: Some(_), .. } if problem == "not a GSM8K record"
        ));
        let ctx = format!("{}:3: not a GSM8K record", p.display());
        assert_eq!(e.to_string(), ctx);
        let before: anyhow::Result<crate::task::Doc> = anyhow::Context::with_context(
            serde_json::from_str::<crate::task::Doc>(bad_line),
            || ctx.clone(),
        );
        let before = format!("{:#}", before.unwrap_err());
        assert!(before.starts_with(&format!("{ctx}: invalid type: integer `3`")));
        assert_eq!(
            format!("{e:#}"),
            ctx,
            "no chain in the plain alternate form"
        );
        assert_eq!(binary_text(e), before);
    }

    #[test]
    fn answer_book_errors() {
        let e = crate::sim_answers::read_solutions(Path::new("/x"), "gpt").unwrap_err();
        assert!(matches!(&e, EvalError::UnknownSimModel(m) if m == "gpt"));
        assert_eq!(
            e.to_string(),
            "unknown --sim-answers model \"gpt\" (recorded models: 6b_finetuning, 6b_verification, 175b_finetuning, 175b_verification)"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, "{\"175b_verification\": {}}\n").unwrap();
        let e = crate::sim_answers::read_solutions(&p, "175b_verification").unwrap_err();
        assert!(matches!(
            &e,
            EvalError::Record {
                line: 1,
                source: None,
                ..
            }
        ));
        let line = format!("{}:1: no `question`", p.display());
        assert_eq!(e.to_string(), line);
        assert_eq!(binary_text(e), line);
        let e = crate::sim_answers::read_solutions(&dir.path().join("none"), "6b_finetuning")
            .unwrap_err();
        assert!(matches!(
            e,
            EvalError::Read {
                file: InputFile::RecordedSolutions,
                ..
            }
        ));
        assert!(
            e.to_string()
                .ends_with(" (set --gsm8k-dir or SERVEBENCH_GSM8K_DIR)"),
            "{e}"
        );
    }

    #[test]
    fn thresholds_profile_sampling_and_regex() {
        let e = Thresholds::parse("default:\n  gsm8k: 1.5\n", Path::new("t.yaml")).unwrap_err();
        assert!(matches!(&e, EvalError::Thresholds { line: Some(2), .. }));
        assert_eq!(
            e.to_string(),
            "t.yaml:2: `default.gsm8k` = 1.5 is outside [0, 1]"
        );
        let e = Thresholds::parse("default: 3\n", Path::new("t.yaml")).unwrap_err();
        assert!(matches!(&e, EvalError::Thresholds { line: None, .. }));
        assert_eq!(
            e.to_string(),
            "t.yaml: `default` must be a mapping of task → threshold"
        );

        let e = "gsm".parse::<crate::Profile>().unwrap_err();
        assert!(matches!(&e, EvalError::UnknownProfile(p) if p == "gsm"));
        assert_eq!(
            e.to_string(),
            "unknown GSM8K profile \"gsm\" (expected inferencex or lm-eval)"
        );

        let e = crate::pyrandom::PyRandom::new(1)
            .sample_indices(3, 4)
            .unwrap_err();
        assert!(matches!(
            e,
            EvalError::SampleLargerThanPopulation { k: 4, n: 3 }
        ));
        assert_eq!(e.to_string(), "sample larger than population (4 > 3)");

        let e = PyRegex::new("(a").unwrap_err();
        assert!(matches!(&e, EvalError::Regex { pattern, .. } if pattern == "(a"));
        assert_eq!(e.to_string(), "regex \"(a\" (as \"(a\")");
        let cause = fancy_regex::Regex::new("(a").unwrap_err().to_string();
        assert_eq!(binary_text(e), format!("regex \"(a\" (as \"(a\"): {cause}"));
    }

    #[test]
    fn doc_failures_read_as_before() {
        let http = DocFailure::Http {
            url: "http://h:1/v1/chat/completions".into(),
            status: 502,
            body: "bad gateway".into(),
        };
        assert!(http.is_retryable());
        let gave_up = DocFailure::GaveUp {
            last: Box::new(http),
            attempts: 6,
        };
        assert!(!gave_up.is_retryable());
        let e = EvalError::Doc {
            doc: 3,
            failure: gave_up,
            saved: 3,
            total: 10,
            samples_file: "out/samples.jsonl".into(),
        };
        let line = "doc 3: HTTP 502 from http://h:1/v1/chat/completions: bad gateway (gave up after 6 attempts); 3 of 10 samples are saved in out/samples.jsonl — rerun with the same --out to resume";
        assert_eq!(e.to_string(), line);
        assert_eq!(binary_text(e), line);
        let t = DocFailure::Timeout {
            url: "http://h:1/v1/chat/completions".into(),
            timeout_s: 0.3,
        };
        assert!(!t.is_retryable());
        assert_eq!(
            t.to_string(),
            "timed out after 0.3 s waiting for http://h:1/v1/chat/completions"
        );
        assert!(!DocFailure::Http {
            url: String::new(),
            status: 400,
            body: String::new()
        }
        .is_retryable());
    }
}
