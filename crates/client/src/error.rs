//! [`ClientError`]: why an endpoint URL, a one-off request ([`crate::http::simple_request`]),
//! server-side token counting or `records.jsonl` failed; one line naming the URL or file.
//!
//! Measured requests never return an error: their failures are a
//! [`servebench_contracts::FailureKind`] in the record, built on the per-request path without
//! this type. `ClientError` is only made on cold paths (parsing a URL, readiness and discovery
//! requests, opening and reading record files).
//!
//! `Display` is the line `anyhow` printed before this crate had its own type, cause included
//! (`cannot connect to http://h:1: Connection refused (os error 111)`). Because the cause is
//! part of the line, no variant has a `source()`: a chain printer (`anyhow`'s `{:#}`) prints the
//! same line once, as before.

use std::path::PathBuf;
use std::time::Duration;

/// What is wrong with an endpoint URL ([`ClientError::Url`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlProblem {
    /// `http::Uri` does not parse it; the parser's reason.
    Invalid(String),
    /// No `scheme://`.
    NoScheme,
    /// A scheme other than `http` or `https`.
    Scheme(String),
    /// No host.
    NoHost,
}

/// An error of the client crate (cold paths only; see the module docs).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The endpoint URL (`--endpoint`) is not an `http://` or `https://` URL with a host.
    #[error("{}", url_line(url, problem))]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        problem: UrlProblem,
    },
    /// The TCP connection could not be opened (refused, unreachable, DNS).
    #[error("cannot connect to {url}: {error}")]
    Connect {
        /// The endpoint's base URL.
        url: String,
        /// The socket error (printed in the line).
        error: std::io::Error,
    },
    /// An `https://` endpoint was given no TLS settings ([`crate::Endpoint::with_tls`]).
    #[error("cannot connect to {url}: https endpoint without TLS settings (Endpoint::with_tls)")]
    TlsNotConfigured {
        /// The endpoint's base URL.
        url: String,
    },
    /// The host of an `https://` endpoint is not a valid TLS server name.
    #[error("cannot connect to {url}: `{host}` is not a TLS server name: {error}")]
    TlsServerName {
        /// The endpoint's base URL.
        url: String,
        /// The host.
        host: String,
        /// rustls' reason (printed in the line).
        error: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed (untrusted certificate, wrong name, not a TLS server, ...).
    #[error("cannot connect to {url}: TLS handshake failed: {error}")]
    TlsHandshake {
        /// The endpoint's base URL.
        url: String,
        /// The handshake error (printed in the line).
        error: std::io::Error,
    },
    /// Writing the request failed.
    #[error("sending {method} {path}: {error}")]
    Send {
        /// HTTP method.
        method: http::Method,
        /// Full request path (with the endpoint's prefix).
        path: String,
        /// The socket error (printed in the line).
        error: std::io::Error,
    },
    /// The response could not be read: the connection closed or failed, or the head or body is
    /// not valid HTTP/1.1.
    #[error("reading response of {path}: {reason}")]
    Response {
        /// API path asked for (`/health`).
        path: String,
        /// What went wrong (one line).
        reason: String,
    },
    /// The response body is larger than the one-off request limit.
    #[error("reading response of {path}: body larger than {limit} bytes")]
    BodyTooLarge {
        /// API path asked for.
        path: String,
        /// The limit, bytes.
        limit: usize,
    },
    /// No complete response within the request's timeout.
    #[error("{url}: no response within {timeout:?}")]
    Timeout {
        /// Base URL and path (`http://h:1/health`).
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// A token-counting request (`usage.prompt_tokens` of a 1-token completion) was answered
    /// with an HTTP status other than 200.
    #[error("{url} answered HTTP {status} while counting prompt tokens: {body}")]
    Http {
        /// The URL asked (`http://h:1/v1/completions`).
        url: String,
        /// HTTP status.
        status: u16,
        /// The body as compact JSON (`null` when it is not JSON).
        body: String,
    },
    /// The server offers neither `/tokenize` nor `usage.prompt_tokens`, so prompt tokens cannot
    /// be counted without a local tokenizer.
    #[error("{base_url} offers no /tokenize and no usage.prompt_tokens: cannot count prompt tokens; pass --tokenizer PATH/tokenizer.json")]
    NoTokenCounting {
        /// The endpoint's base URL.
        base_url: String,
    },
    /// A completion used for counting carried no `usage.prompt_tokens`.
    #[error("{base_url}: usage.prompt_tokens missing")]
    UsageMissing {
        /// The endpoint's base URL.
        base_url: String,
    },
    /// `/tokenize` answered with a token count before and no longer does.
    #[error("{base_url}/tokenize stopped answering with a token count")]
    CountStopped {
        /// The endpoint's base URL.
        base_url: String,
    },
    /// A records file cannot be created.
    #[error("cannot create {}: {error}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The I/O error (printed in the line).
        error: std::io::Error,
    },
    /// A records file cannot be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error (printed in the line).
        error: std::io::Error,
    },
    /// A line of `records.jsonl` is not a record.
    #[error("{}:{line}: invalid record: {error}", path.display())]
    InvalidRecord {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: usize,
        /// The JSON error (printed in the line).
        error: serde_json::Error,
    },
    /// Writing a record to the file failed.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error (printed in the line).
        error: std::io::Error,
    },
    /// The records writer thread could not be started (the OS error, as it is).
    #[error(transparent)]
    WriterThread(std::io::Error),
    /// The records writer thread panicked.
    #[error("records writer for {} panicked", path.display())]
    WriterPanicked {
        /// The file it was writing.
        path: PathBuf,
    },
}

fn url_line(url: &str, problem: &UrlProblem) -> String {
    match problem {
        UrlProblem::Invalid(e) => format!("--endpoint {url:?} is not a URL ({e})"),
        UrlProblem::NoScheme => format!(
            "--endpoint {url:?} is not a URL (no scheme; expected http://HOST:PORT or https://HOST)"
        ),
        UrlProblem::Scheme(s) => {
            format!("--endpoint {url:?}: scheme `{s}` is not supported (http:// or https://)")
        }
        UrlProblem::NoHost => format!("--endpoint {url:?} is not a URL (no host)"),
    }
}

/// `Result` of this crate: [`ClientError`] unless said otherwise.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

impl From<ClientError> for servebench_workload::WorkloadError {
    /// A client error met while counting tokens for the workload (its text unchanged).
    fn from(e: ClientError) -> Self {
        servebench_workload::WorkloadError::Counter(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Duration;

    use super::{ClientError, UrlProblem};
    use crate::http::{simple_request, Endpoint, Method, TlsClient};

    /// The exact lines `Endpoint::parse` printed with `anyhow::bail!`.
    #[test]
    fn url_errors_name_the_url() {
        let e = Endpoint::parse("ftp://h:1").unwrap_err();
        assert!(
            matches!(&e, ClientError::Url { url, problem: UrlProblem::Scheme(s) } if url == "ftp://h:1" && s == "ftp")
        );
        assert_eq!(
            e.to_string(),
            "--endpoint \"ftp://h:1\": scheme `ftp` is not supported (http:// or https://)"
        );
        let e = Endpoint::parse("/v1/models").unwrap_err();
        assert!(matches!(
            &e,
            ClientError::Url {
                problem: UrlProblem::NoScheme,
                ..
            }
        ));
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "--endpoint \"/v1/models\" is not a URL (no scheme; expected http://HOST:PORT or https://HOST)"
        );
        let e = Endpoint::parse("not a url").unwrap_err();
        let reason = "not a url".parse::<http::Uri>().unwrap_err().to_string();
        assert!(
            matches!(&e, ClientError::Url { problem: UrlProblem::Invalid(r), .. } if *r == reason)
        );
        assert_eq!(
            e.to_string(),
            format!("--endpoint \"not a url\" is not a URL ({reason})")
        );
    }

    /// A one-off request to a port nobody listens on, to a server that never answers, and to
    /// one that does not speak HTTP.
    #[tokio::test]
    async fn one_off_request_errors_say_what_failed() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let e = simple_request(&ep, Method::GET, "/health", None, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, ClientError::Connect { url, error } if *url == ep.base_url && error.kind() == std::io::ErrorKind::ConnectionRefused)
        );
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            format!("cannot connect to http://127.0.0.1:{port}: Connection refused (os error 111)")
        );

        // accepts, reads, never answers
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = Endpoint::parse(&format!("http://{}/", silent.local_addr().unwrap())).unwrap();
        let e = simple_request(
            &ep,
            Method::GET,
            "/health",
            None,
            Duration::from_millis(150),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&e, ClientError::Timeout { timeout, .. } if *timeout == Duration::from_millis(150))
        );
        assert_eq!(
            e.to_string(),
            format!("{}/health: no response within 150ms", ep.base_url)
        );

        // answers with something that is not HTTP
        let ssh = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = ssh.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = ssh.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            s.write_all(b"SSH-2.0-OpenSSH\r\n\r\n").unwrap();
        });
        let ep = Endpoint::parse(&format!("http://{addr}")).unwrap();
        let e = simple_request(&ep, Method::GET, "/v1/models", None, Duration::from_secs(5))
            .await
            .unwrap_err();
        server.join().unwrap();
        assert!(matches!(&e, ClientError::Response { path, .. } if path == "/v1/models"));
        assert!(
            e.to_string()
                .starts_with("reading response of /v1/models: invalid HTTP response head: "),
            "{e}"
        );
    }

    /// TLS failures are their own variants; `dial` (the measured path) keeps its `io::Error`
    /// text.
    #[tokio::test]
    async fn tls_errors_are_their_own_variants() {
        let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = plain.local_addr().unwrap();
        let ep = Endpoint::parse(&format!("https://{addr}")).unwrap();
        let e = simple_request(&ep, Method::GET, "/health", None, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(&e, ClientError::TlsNotConfigured { .. }));
        assert_eq!(
            e.to_string(),
            format!("cannot connect to https://{addr}: https endpoint without TLS settings (Endpoint::with_tls)")
        );
        let io = crate::http::dial(&ep, crate::Clock::start())
            .await
            .unwrap_err();
        assert_eq!(
            io.to_string(),
            "https endpoint without TLS settings (Endpoint::with_tls)"
        );

        // a server that answers the ClientHello with plain HTTP
        let server = std::thread::spawn(move || {
            // the two connections above (queued, never TLS), then the two below
            for _ in 0..4 {
                let (mut s, _) = plain.accept().unwrap();
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
            }
        });
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let ep = ep.with_tls(TlsClient::new(std::sync::Arc::new(cfg)));
        let e = simple_request(&ep, Method::GET, "/health", None, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(&e, ClientError::TlsHandshake { .. }), "{e:?}");
        let line = e.to_string();
        assert!(
            line.starts_with(&format!(
                "cannot connect to https://{addr}: TLS handshake failed: "
            )),
            "{line}"
        );
        assert_eq!(format!("{:#}", anyhow::Error::from(e)), line);
        let io = crate::http::dial(&ep, crate::Clock::start())
            .await
            .unwrap_err();
        assert_eq!(
            format!("cannot connect to https://{addr}: {io}"),
            line,
            "the measured path's text is unchanged"
        );
        server.join().unwrap();
    }

    #[test]
    fn record_file_errors_name_the_file_and_line() {
        let missing = std::path::Path::new("/nonexistent/records.jsonl");
        let e = crate::read_records(missing).unwrap_err();
        assert!(matches!(&e, ClientError::Read { path, .. } if path == missing));
        assert_eq!(
            e.to_string(),
            "cannot read /nonexistent/records.jsonl: No such file or directory (os error 2)"
        );
        let e = crate::JsonlWriter::create(missing).err().unwrap();
        assert!(matches!(&e, ClientError::Create { .. }));
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "cannot create /nonexistent/records.jsonl: No such file or directory (os error 2)"
        );

        let dir = std::env::temp_dir().join(format!("client-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("records.jsonl");
        std::fs::write(&f, "\n{\"id\": 1\n").unwrap();
        let e = crate::read_records(&f).unwrap_err();
        assert!(matches!(&e, ClientError::InvalidRecord { line: 2, .. }));
        assert!(
            e.to_string()
                .starts_with(&format!("{}:2: invalid record: ", f.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Through the workload's `TokenCounter`, a client error keeps its text.
    #[test]
    fn into_workload_error_keeps_the_line() {
        let e = ClientError::CountStopped {
            base_url: "http://h:1".into(),
        };
        assert_eq!(
            e.to_string(),
            "http://h:1/tokenize stopped answering with a token count"
        );
        let w = servebench_workload::WorkloadError::from(e);
        assert!(
            matches!(&w, servebench_workload::WorkloadError::Counter(c) if c.downcast_ref::<ClientError>().is_some())
        );
        assert_eq!(
            format!("{:#}", anyhow::Error::from(w)),
            "http://h:1/tokenize stopped answering with a token count"
        );
    }
}
