//! [`Endpoint`]: a normalised base URL, its API key and (for `https`) its TLS settings.

use std::sync::Arc;

use crate::{EndpointError, TlsConfig};

/// The base URL of an endpoint: trailing slashes and a trailing `/v1` removed
/// (`http://h:8000/v1/` → `http://h:8000`), since every path servebench calls (`/v1/…`,
/// `/tokenize`, `/health`) is relative to the server root.
pub fn normalise_base_url(url: &str) -> String {
    let t = url.trim_end_matches('/');
    t.strip_suffix("/v1")
        .unwrap_or(t)
        .trim_end_matches('/')
        .to_string()
}

/// The API key: `flag` (`--api-key`), else `$SERVEBENCH_API_KEY`, else `$OPENAI_API_KEY`;
/// empty values count as unset. (The CLIs let clap read `$SERVEBENCH_API_KEY` into the flag;
/// reading it here again keeps library callers on the same rule.)
pub fn api_key_or_env(flag: Option<String>) -> Option<String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    flag.filter(|k| !k.is_empty())
        .or_else(|| env("SERVEBENCH_API_KEY"))
        .or_else(|| env("OPENAI_API_KEY"))
}

/// An endpoint as every stage uses it: the normalised base URL, the transport address the
/// measuring client dials (with TLS settings for `https://`), and the API key sent as
/// `Authorization: Bearer …` on every request, readiness checks included.
#[derive(Debug, Clone)]
pub struct Endpoint {
    given: String,
    http: servebench_client::Endpoint,
}

impl Endpoint {
    /// Parses and normalises `url` (`http://` or `https://`; see [`normalise_base_url`]).
    /// `--ca-cert` is checked whenever it is given; the TLS configuration is attached for an
    /// `https` URL.
    ///
    /// # Errors
    /// [`EndpointError::Url`] naming the URL (also for a URL with user-info, which would be
    /// recorded and never sent; its password is redacted in the message);
    /// [`EndpointError::CaCert`] naming the file.
    pub fn new(
        url: &str,
        api_key: Option<String>,
        tls: &TlsConfig,
    ) -> Result<Endpoint, EndpointError> {
        let base = normalise_base_url(url.trim());
        // User-info would be recorded with the URL (result.json, the store) and is never sent:
        // the client authenticates with the API key only. Refuse it rather than leak it.
        let authority = base
            .split("://")
            .nth(1)
            .unwrap_or("")
            .split('/')
            .next()
            .unwrap_or("");
        if authority.contains('@') {
            return Err(EndpointError::Url(format!(
                "--endpoint {}: a user name or password in the URL is not supported \
                 (servebench authenticates with --api-key, sent as `Authorization: Bearer`); remove it",
                servebench_contracts::redact::url(url)
            )));
        }
        let mut http = servebench_client::Endpoint::parse(&base)
            .map_err(|e| EndpointError::Url(e.to_string()))?;
        if http.host.is_empty() {
            return Err(EndpointError::Url(format!(
                "--endpoint {url:?} is not a URL (no host)"
            )));
        }
        let config = tls.client_config()?;
        if http.scheme == servebench_client::http::Scheme::Https {
            http = http.with_tls(servebench_client::http::TlsClient::new(config));
        }
        Ok(Endpoint {
            given: url.to_string(),
            http: http.with_api_key(api_key),
        })
    }

    /// The normalised base URL (`https://h:8443`, no trailing `/v1`).
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    /// The URL as given.
    pub fn given_url(&self) -> &str {
        &self.given
    }

    /// When the given URL was changed by normalisation, the one line to say so (once):
    /// `--endpoint URL: using the base URL BASE (servebench adds /v1/… itself)`.
    pub fn normalisation_note(&self) -> Option<String> {
        (self.given != self.base_url()).then(|| {
            format!(
                "--endpoint {}: using the base URL {} (servebench adds /v1/… itself)",
                self.given,
                self.base_url()
            )
        })
    }

    /// The measuring client's view (host, port, path prefix, TLS settings, API key): put it
    /// in `ClientCtx::endpoint`, and every request through it sends the key.
    pub fn client(&self) -> &servebench_client::Endpoint {
        &self.http
    }

    /// The API key, if any.
    pub fn api_key(&self) -> Option<&str> {
        self.http.api_key.as_deref()
    }

    /// Whether requests go over TLS.
    pub fn is_https(&self) -> bool {
        self.http.scheme == servebench_client::http::Scheme::Https
    }

    /// The full URL of an API path such as `/v1/chat/completions`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url(), path)
    }

    /// The same endpoint reached in memory (the embedded simulator on the virtual clock): the
    /// measuring client and every helper request open `dial` connections instead of sockets.
    pub fn with_memory(mut self, dial: servebench_client::MemoryDial) -> Endpoint {
        self.http = self.http.with_memory(dial);
        self
    }

    /// The TLS client configuration of an `https` endpoint, for clients other than the
    /// measuring one (eval's `reqwest::ClientBuilder::use_preconfigured_tls`).
    pub fn tls_config(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.http.tls.as_ref().map(|t| t.config().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_loses_trailing_v1_and_slashes() {
        assert_eq!(normalise_base_url("http://h:8/v1"), "http://h:8");
        assert_eq!(normalise_base_url("http://h:8/v1/"), "http://h:8");
        assert_eq!(normalise_base_url("http://h:8/"), "http://h:8");
        assert_eq!(normalise_base_url("http://h:8"), "http://h:8");
        assert_eq!(
            normalise_base_url("http://h:8/proxy/v1"),
            "http://h:8/proxy"
        );
        assert_eq!(normalise_base_url("https://h/v1//"), "https://h");
    }

    #[test]
    fn endpoint_is_normalised_and_says_so_once() {
        let t = TlsConfig::default();
        let e = Endpoint::new("https://api.example.com/v1/", Some("k".into()), &t).unwrap();
        assert_eq!(e.base_url(), "https://api.example.com");
        assert!(e.is_https());
        assert_eq!(e.client().port, 443);
        assert!(e.tls_config().is_some());
        assert_eq!(e.api_key(), Some("k"));
        assert_eq!(
            e.normalisation_note().unwrap(),
            "--endpoint https://api.example.com/v1/: using the base URL https://api.example.com (servebench adds /v1/… itself)"
        );
        assert_eq!(e.url("/v1/models"), "https://api.example.com/v1/models");
        let e = Endpoint::new("http://127.0.0.1:8000", Some(String::new()), &t).unwrap();
        assert_eq!(e.normalisation_note(), None);
        assert_eq!(e.api_key(), None, "an empty key is no key");
        assert!(!e.is_https());
        assert!(e.tls_config().is_none());
        assert_eq!(e.client().prefix, "");
    }

    #[test]
    fn bad_urls_are_one_line_naming_the_url() {
        let t = TlsConfig::default();
        for (url, want) in [
            ("not a url", "--endpoint \"not a url\" is not a URL"),
            ("ftp://h:1", "scheme `ftp` is not supported"),
            ("h:8000", "--endpoint \"h:8000\""),
        ] {
            let e = Endpoint::new(url, None, &t).unwrap_err().to_string();
            assert!(e.contains(want), "{url}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn user_info_in_the_url_is_refused_without_echoing_the_password() {
        let t = TlsConfig::default();
        let e = Endpoint::new("https://bench:hunter2@api.example.com/v1", None, &t)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("user name or password in the URL is not supported"),
            "{e}"
        );
        assert!(e.contains("https://bench:***@api.example.com/v1"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        // An '@' later in the path is not user-info.
        assert!(Endpoint::new("http://h:8/proxy@x", None, &t).is_ok());
    }
}
