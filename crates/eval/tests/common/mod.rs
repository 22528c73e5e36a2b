//! Test support: shared data paths, the external-service rule of `notes/common.md`, and a
//! mock OpenAI chat-completions server (fault injection; answers from the GSM8K answer book).
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use serde_json::{json, Value};
use servebench_eval::sim_answers::Gsm8kAnswers;

/// `../shared/data/gsm8k` from this crate.
pub fn gsm8k_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/gsm8k"
    ))
}

/// A service env var, or `None` after printing `skipped: …` (fails instead when
/// `SERVEBENCH_REQUIRE_SERVICES=1`).
pub fn service(var: &str, why: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            servebench_testkit::skip_or_fail(&format!(
                "{var} not set ({why}); run `eval \"$(bash scripts/services/lm-eval.sh)\"`"
            ));
            None
        }
    }
}

/// `python3` from PATH, or `None` after `skipped:` (fails when services are required).
pub fn python3() -> Option<String> {
    let ok = std::process::Command::new("python3")
        .arg("-c")
        .arg("import random")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    servebench_testkit::require(ok.then(|| "python3".into()), "python3 not found")
}

/// What the mock does for request number `i` (0-based, in arrival order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// Answer normally.
    None,
    /// Close the connection without a response.
    Drop,
    /// Reply with this HTTP status and an error body.
    Status(u16),
    /// Answer with empty `content` and the text in `reasoning_content`.
    Reasoning,
}

/// Mock behaviour.
pub struct MockConfig {
    /// Answers for GSM8K prompts (else "I do not know.").
    pub book: Option<Arc<Gsm8kAnswers>>,
    /// Per-request delay before answering.
    pub delay: Duration,
    /// Fault by arrival index.
    pub fault: Box<dyn Fn(usize) -> Fault + Send + Sync>,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            book: None,
            delay: Duration::ZERO,
            fault: Box::new(|_| Fault::None),
        }
    }
}

/// A running mock.
pub struct Mock {
    pub addr: SocketAddr,
    /// Request bodies received on /v1/chat/completions, in arrival order.
    pub bodies: Arc<Mutex<Vec<Value>>>,
    /// Most requests open at once.
    pub max_open: Arc<AtomicUsize>,
    /// TCP connections accepted.
    pub connections: Arc<AtomicUsize>,
    /// `GET /v1/models` requests (model discovery, or the check of a given model); each comes
    /// on a connection of its own, outside the eval's pool.
    pub model_lists: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Mock {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub fn stop(self) {
        self.task.abort();
    }
}

/// Starts the mock on 127.0.0.1 (random port).
pub async fn start_mock(cfg: MockConfig) -> Mock {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let max_open = Arc::new(AtomicUsize::new(0));
    let connections = Arc::new(AtomicUsize::new(0));
    let model_lists = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(AtomicUsize::new(0));
    let arrivals = Arc::new(AtomicUsize::new(0));
    let cfg = Arc::new(cfg);
    let (b2, m2, c2, l2) = (
        bodies.clone(),
        max_open.clone(),
        connections.clone(),
        model_lists.clone(),
    );
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                break;
            };
            c2.fetch_add(1, Ordering::SeqCst);
            let (bodies, max_open, open, arrivals, cfg, lists) = (
                b2.clone(),
                m2.clone(),
                open.clone(),
                arrivals.clone(),
                cfg.clone(),
                l2.clone(),
            );
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (bodies, max_open, open, arrivals, cfg, lists) = (
                        bodies.clone(),
                        max_open.clone(),
                        open.clone(),
                        arrivals.clone(),
                        cfg.clone(),
                        lists.clone(),
                    );
                    async move {
                        let path = req.uri().path().to_string();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        if path == "/v1/models" {
                            lists.fetch_add(1, Ordering::SeqCst);
                            return Ok::<_, Infallible>(json_response(
                                200,
                                json!({"object":"list","data":[{"id":"mock-model","object":"model"}]}),
                            ));
                        }
                        let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                        max_open.fetch_max(now, Ordering::SeqCst);
                        let i = arrivals.fetch_add(1, Ordering::SeqCst);
                        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        bodies.lock().unwrap().push(v.clone());
                        tokio::time::sleep(cfg.delay).await;
                        let fault = (cfg.fault)(i);
                        open.fetch_sub(1, Ordering::SeqCst);
                        match fault {
                            Fault::Drop => Ok(drop_marker()),
                            Fault::Status(s) => Ok(json_response(
                                s,
                                json!({"error": {"message": format!("injected {s}")}}),
                            )),
                            f => {
                                let prompt = v
                                    .pointer("/messages")
                                    .and_then(|m| m.as_array())
                                    .and_then(|m| m.iter().rev().find(|x| x["role"] == "user"))
                                    .and_then(|m| m["content"].as_str())
                                    .unwrap_or("")
                                    .to_string();
                                let text = cfg
                                    .book
                                    .as_ref()
                                    .and_then(|b| b.lookup(&prompt).map(str::to_string))
                                    .unwrap_or_else(|| "I do not know.".into());
                                let message = if f == Fault::Reasoning {
                                    json!({"role":"assistant","content":"","reasoning_content":text})
                                } else {
                                    json!({"role":"assistant","content":text})
                                };
                                Ok(json_response(
                                    200,
                                    json!({
                                        "id": format!("chatcmpl-{i}"), "object": "chat.completion",
                                        "model": v["model"],
                                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                                    }),
                                ))
                            }
                        }
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                // A `Drop` response is signalled by status 599: close without answering.
                let conn =
                    hyper::server::conn::http1::Builder::new().serve_connection(io, DropOn599(svc));
                let _ = conn.await;
            });
        }
    });
    Mock {
        addr,
        bodies,
        max_open,
        connections,
        model_lists,
        task,
    }
}

fn json_response(status: u16, v: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&v).unwrap())))
        .unwrap()
}

fn drop_marker() -> Response<Full<Bytes>> {
    Response::builder()
        .status(599)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// Wraps a service so that a 599 response becomes an error, which makes hyper close the
/// connection without writing a response.
#[derive(Clone)]
struct DropOn599<S>(S);

impl<S> hyper::service::Service<Request<hyper::body::Incoming>> for DropOn599<S>
where
    S: hyper::service::Service<
        Request<hyper::body::Incoming>,
        Response = Response<Full<Bytes>>,
        Error = Infallible,
    >,
    S::Future: Send + 'static,
{
    type Response = Response<Full<Bytes>>;
    type Error = std::io::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn call(&self, req: Request<hyper::body::Incoming>) -> Self::Future {
        let fut = self.0.call(req);
        Box::pin(async move {
            let r = fut.await.unwrap();
            if r.status().as_u16() == 599 {
                Err(std::io::Error::other("injected connection drop"))
            } else {
                Ok(r)
            }
        })
    }
}

/// A recording reverse proxy: forwards every request to `target` (base URL) and keeps the
/// bodies of `POST /v1/chat/completions` in arrival order (what each client put on the wire).
pub struct Proxy {
    pub addr: SocketAddr,
    pub bodies: Arc<Mutex<Vec<Bytes>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// Takes the bodies recorded so far.
    pub fn take(&self) -> Vec<Bytes> {
        std::mem::take(&mut *self.bodies.lock().unwrap())
    }
    pub fn stop(self) {
        self.task.abort();
    }
}

/// Starts a [`Proxy`] on 127.0.0.1 in front of `target`.
pub async fn start_proxy(target: String) -> Proxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let client = reqwest::Client::new();
    let b2 = bodies.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                break;
            };
            let (bodies, client, target) = (b2.clone(), client.clone(), target.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (bodies, client, target) = (bodies.clone(), client.clone(), target.clone());
                    async move {
                        let method = req.method().clone();
                        let path = req
                            .uri()
                            .path_and_query()
                            .map(|p| p.to_string())
                            .unwrap_or_default();
                        let ctype = req.headers().get("content-type").cloned();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        if path.ends_with("/chat/completions") {
                            bodies.lock().unwrap().push(body.clone());
                        }
                        let mut fwd = client.request(method, format!("{target}{path}")).body(body);
                        if let Some(c) = ctype {
                            fwd = fwd.header("content-type", c);
                        }
                        let resp = match fwd.send().await {
                            Ok(r) => r,
                            Err(e) => {
                                return Ok::<_, Infallible>(json_response(
                                    502,
                                    json!({"error": e.to_string()}),
                                ))
                            }
                        };
                        let status = resp.status().as_u16();
                        let bytes = resp.bytes().await.unwrap_or_default();
                        Ok(Response::builder()
                            .status(status)
                            .header("content-type", "application/json")
                            .body(Full::new(bytes))
                            .unwrap())
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    Proxy { addr, bodies, task }
}
