//! [`FailureKind`]: why a request failed (`records.jsonl` `failure`, agg `failure_reasons`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The failure category of one request. On disk it is a string (`RequestRecord::failure`,
/// the keys of `failure_reasons`); [`FailureKind::parse`] and [`FailureKind::as_str`] convert
/// both ways without loss (`http_<status>` and `stream_error:<code>` keep their code, an
/// unknown string is kept as [`FailureKind::Other`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The stream ended without a token (`no_token`).
    NoToken,
    /// The server sent an error event before any token: `stream_error:<code>`, or
    /// `stream_error` when the event carried no code.
    StreamError(Option<String>),
    /// An error event after tokens (`stream_error_after_tokens`).
    StreamErrorAfterTokens,
    /// A non-2xx HTTP status (`http_<status>`).
    Http(u16),
    /// No complete response within the request timeout (`timeout`).
    Timeout,
    /// The connection could not be made (`connect`).
    Connect,
    /// The connection broke before any token (`disconnected`).
    Disconnected,
    /// The connection broke after tokens (`disconnected_after_tokens`).
    DisconnectedAfterTokens,
    /// An event that is not valid SSE/JSON (`bad_event`).
    BadEvent,
    /// Cancelled by Ctrl-C (`cancelled`): not counted as a failure of the point.
    Cancelled,
    /// AgentX: the server rejected the prompt as longer than its context
    /// (`context_overflow`; the HTTP status stays in the record's `http_status`). The session
    /// ends; the request is counted apart, not as a failed request, as InferenceX's harness
    /// does (more than 1 % of the profiling responses makes the point invalid).
    ContextOverflow,
    /// InferenceX compat: any exception (`exception`).
    Exception,
    /// A category this version does not know, kept verbatim.
    Other(String),
}

impl FailureKind {
    /// Parses the on-disk string.
    pub fn parse(s: &str) -> FailureKind {
        match s {
            "no_token" => FailureKind::NoToken,
            "stream_error_after_tokens" => FailureKind::StreamErrorAfterTokens,
            "timeout" => FailureKind::Timeout,
            "connect" => FailureKind::Connect,
            "disconnected" => FailureKind::Disconnected,
            "disconnected_after_tokens" => FailureKind::DisconnectedAfterTokens,
            "bad_event" => FailureKind::BadEvent,
            "cancelled" => FailureKind::Cancelled,
            "context_overflow" => FailureKind::ContextOverflow,
            "exception" => FailureKind::Exception,
            "stream_error" => FailureKind::StreamError(None),
            _ => {
                if let Some(code) = s.strip_prefix("stream_error:") {
                    FailureKind::StreamError(Some(code.to_string()))
                } else if let Some(st) = s.strip_prefix("http_").and_then(|c| c.parse().ok()) {
                    FailureKind::Http(st)
                } else {
                    FailureKind::Other(s.to_string())
                }
            }
        }
    }

    /// The on-disk string.
    pub fn as_str(&self) -> String {
        match self {
            FailureKind::NoToken => "no_token".into(),
            FailureKind::StreamError(Some(c)) => format!("stream_error:{c}"),
            FailureKind::StreamError(None) => "stream_error".into(),
            FailureKind::StreamErrorAfterTokens => "stream_error_after_tokens".into(),
            FailureKind::Http(s) => format!("http_{s}"),
            FailureKind::Timeout => "timeout".into(),
            FailureKind::Connect => "connect".into(),
            FailureKind::Disconnected => "disconnected".into(),
            FailureKind::DisconnectedAfterTokens => "disconnected_after_tokens".into(),
            FailureKind::BadEvent => "bad_event".into(),
            FailureKind::Cancelled => "cancelled".into(),
            FailureKind::ContextOverflow => "context_overflow".into(),
            FailureKind::Exception => "exception".into(),
            FailureKind::Other(s) => s.clone(),
        }
    }

    /// Whether the request was cancelled by the user rather than failed by the server
    /// (cancelled requests are left out of a point's counts).
    pub fn is_cancelled(&self) -> bool {
        *self == FailureKind::Cancelled
    }

    /// Whether the request was rejected as longer than the server's context
    /// ([`FailureKind::ContextOverflow`]).
    pub fn is_context_overflow(&self) -> bool {
        *self == FailureKind::ContextOverflow
    }
}

impl Serialize for FailureKind {
    /// Written as its on-disk string ([`FailureKind::as_str`]).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureKind {
    /// Read from its on-disk string ([`FailureKind::parse`]; never fails on a string).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(FailureKind::parse(&s))
    }
}

impl From<&str> for FailureKind {
    /// [`FailureKind::parse`].
    fn from(s: &str) -> FailureKind {
        FailureKind::parse(s)
    }
}

impl PartialEq<str> for FailureKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FailureKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::FailureKind;

    #[test]
    fn strings_round_trip() {
        for s in [
            "no_token",
            "stream_error:overloaded",
            "stream_error",
            "stream_error_after_tokens",
            "http_503",
            "timeout",
            "connect",
            "disconnected",
            "disconnected_after_tokens",
            "bad_event",
            "cancelled",
            "context_overflow",
            "exception",
            "something_new",
            "http_abc",
        ] {
            assert_eq!(FailureKind::parse(s).as_str(), s);
        }
        assert_eq!(FailureKind::parse("http_429"), FailureKind::Http(429));
        assert!(FailureKind::parse("cancelled").is_cancelled());
        assert!(FailureKind::parse("context_overflow").is_context_overflow());
        assert_eq!(
            FailureKind::parse("stream_error:400"),
            FailureKind::StreamError(Some("400".into()))
        );
        assert_eq!(
            FailureKind::parse("stream_error"),
            FailureKind::StreamError(None)
        );
        // serde writes and reads the same strings
        for s in [
            "\"http_503\"",
            "\"stream_error:x\"",
            "\"timeout\"",
            "\"new_kind\"",
        ] {
            let k: FailureKind = serde_json::from_str(s).unwrap();
            assert_eq!(serde_json::to_string(&k).unwrap(), s);
        }
        assert_eq!(
            FailureKind::parse("http_abc"),
            FailureKind::Other("http_abc".into())
        );
    }
}
