//! The endpoint layer's errors: each one line naming the URL, file or flag.

use std::path::PathBuf;

/// What can go wrong finding, reaching or trusting an endpoint.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The URL does not parse, or its scheme is neither `http` nor `https`.
    #[error("{0}")]
    Url(String),
    /// `--ca-cert FILE` cannot be read or holds no usable certificate.
    #[error("--ca-cert {}: {reason}", path.display())]
    CaCert {
        /// The file given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The TLS client configuration could not be built.
    #[error("TLS settings: {0}")]
    Tls(String),
    /// The endpoint never answered `/health` or `/v1/models` with HTTP 200 in time.
    #[error("endpoint {base_url} is not ready after {waited_s:.0} s (checked /health and /v1/models): {last}")]
    NotReady {
        /// The endpoint's base URL.
        base_url: String,
        /// The readiness timeout, seconds.
        waited_s: f64,
        /// The last problem seen.
        last: String,
    },
    /// `GET /v1/models` failed or listed no model.
    #[error("{url} {reason}; pass --model NAME")]
    NoModel {
        /// The `/v1/models` URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The embedded simulator did not start.
    #[error("cannot start the embedded simulator: {0}")]
    Simulator(String),
}
