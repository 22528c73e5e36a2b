//! The bounded readiness wait, model discovery and Ctrl-C → [`CancelToken`].

use std::time::{Duration, Instant};

use servebench_client::http::{simple_request, Method};

use crate::{CancelToken, Endpoint, EndpointError};

/// Time allowed for one readiness probe or the model list (s).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Time between readiness rounds (ms).
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The readiness wait: the endpoint must answer `GET /health` or `GET /v1/models` with HTTP
/// 200 (API key sent) within `timeout`; probed every 0.5 s, each probe at most 5 s. Errors
/// with one line naming the URL and the last problem seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readiness {
    /// Longest wait (`--ready-timeout`, s); 0 = one round of probes.
    pub timeout: Duration,
}

impl Readiness {
    /// A wait of at most `seconds` (negative or non-finite = 0).
    pub fn seconds(seconds: f64) -> Self {
        let s = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
        Self {
            timeout: Duration::from_secs_f64(s),
        }
    }

    /// Waits until `ep` is ready, `cancel` fires (then the same not-ready error), or the
    /// timeout passes.
    ///
    /// # Errors
    /// [`EndpointError::NotReady`]: `endpoint URL is not ready after N s (checked /health and
    /// /v1/models): LAST`.
    pub async fn wait(&self, ep: &Endpoint, cancel: &CancelToken) -> Result<(), EndpointError> {
        let start = Instant::now();
        let mut last = String::from("no answer");
        loop {
            for p in ["/health", "/v1/models"] {
                let probe = simple_request(ep.client(), Method::GET, p, None, PROBE_TIMEOUT);
                let r = tokio::select! {
                    r = probe => r,
                    () = cancel.cancelled() => break,
                };
                match r {
                    Ok(r) if r.status == 200 => return Ok(()),
                    Ok(r) => last = format!("{p} answered HTTP {}", r.status),
                    Err(e) => last = format!("{e:#}"),
                }
            }
            if start.elapsed() >= self.timeout || cancel.is_cancelled() {
                return Err(EndpointError::NotReady {
                    base_url: ep.base_url().to_string(),
                    waited_s: self.timeout.as_secs_f64(),
                    last,
                });
            }
            tokio::select! {
                () = tokio::time::sleep(POLL_INTERVAL) => {}
                () = cancel.cancelled() => {}
            }
        }
    }
}

/// The model ids of `GET /v1/models` (API key sent), in the server's order; never empty.
///
/// # Errors
/// [`EndpointError::NoModel`]: `URL/v1/models REASON; pass --model NAME` when the request
/// fails, the answer is not HTTP 200 or not a model list, or the list is empty.
pub async fn served_models(ep: &Endpoint) -> Result<Vec<String>, EndpointError> {
    let url = ep.url("/v1/models");
    let no = |reason: String| EndpointError::NoModel {
        url: url.clone(),
        reason,
    };
    let r = simple_request(
        ep.client(),
        Method::GET,
        "/v1/models",
        None,
        Duration::from_secs(10),
    )
    .await
    .map_err(|e| no(format!("cannot be read: {e:#}")))?;
    if r.status != 200 {
        return Err(no(format!("answered HTTP {}", r.status)));
    }
    let v: serde_json::Value = serde_json::from_slice(&r.body)
        .map_err(|e| no(format!("did not return a model list: {e}")))?;
    let ids: Vec<String> = v
        .get("data")
        .and_then(|d| d.as_array())
        .map(|d| {
            d.iter()
                .filter_map(|m| m.get("id").and_then(|x| x.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() {
        return Err(no("lists no model".into()));
    }
    Ok(ids)
}

/// The first model id of `GET /v1/models` (API key sent), the model a run uses when no
/// `--model` is given.
///
/// # Errors
/// As [`served_models`].
pub async fn discover_model(ep: &Endpoint) -> Result<String, EndpointError> {
    Ok(served_models(ep).await?.swap_remove(0))
}

/// A one-line warning when `model` (a `--model` given by the user) is not among the ids of
/// `GET /v1/models`: some servers reject such requests (vLLM: HTTP 404), others ignore the name
/// and answer with their own model (llama.cpp), so the run would be labelled with a model it
/// did not measure. `None` when it is listed, or when the list cannot be read (the requests
/// will say why).
pub async fn model_not_served_warning(ep: &Endpoint, model: &str) -> Option<String> {
    let ids = served_models(ep).await.ok()?;
    (!ids.iter().any(|i| i == model)).then(|| {
        format!(
            "warning: --model {model} is not among the models {} serves ({}): the server may reject the requests, or ignore the name and answer with its own model",
            ep.url("/v1/models"),
            ids.join(", ")
        )
    })
}

/// The model a run sends in its requests, and a warning to print: `given` (`--model`) as is,
/// checked against `GET /v1/models` of an endpoint when `check` ([`model_not_served_warning`];
/// never against the simulator, which serves any name); without `given`, the first listed id
/// ([`discover_model`]).
///
/// # Errors
/// As [`discover_model`], only when no model is given.
pub async fn run_model(
    target: &crate::Target,
    given: Option<&str>,
    check: bool,
) -> Result<(String, Option<String>), EndpointError> {
    let ep = target.endpoint();
    match given {
        Some(m) if check && !target.is_simulator() => {
            Ok((m.to_string(), model_not_served_warning(ep, m).await))
        }
        Some(m) => Ok((m.to_string(), None)),
        None => Ok((discover_model(ep).await?, None)),
    }
}

/// Wires Ctrl-C to `cancel`: on the first Ctrl-C, `on_signal` runs (to say what stops), then
/// the token is cancelled. Returns the watcher task (abort it when the run is over). Call it
/// inside a tokio runtime.
pub fn cancel_on_ctrl_c<F>(cancel: &CancelToken, on_signal: F) -> tokio::task::JoinHandle<()>
where
    F: FnOnce() + Send + 'static,
{
    let cancel = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal();
            cancel.cancel();
        }
    })
}
