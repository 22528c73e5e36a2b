//! The HTTP/1.1 side: routing, request handling, SSE bodies with pre-serialized chunk
//! prefixes, `/metrics`, `/tokenize`, and the accept loop.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc::UnboundedSender, watch};
use tokio::task::JoinSet;

use crate::api::{self, Api, ApiError};
use crate::emission::{EmissionRecord, EmissionSink};
use crate::model::EngineConfig;
use crate::model::MetricsDialect;
use crate::plan::OutputPlan;
use crate::runtime::{Msg, ReqShared, Stats, Submission, ABORTED, FINISHED};
use crate::text;
use crate::wire::{Wire, WireIo};
use crate::AnswerBook;

/// Largest request body accepted, bytes.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// SSE events per frame in zero-delay mode (bounds frame size to ~5 KB).
const ZERO_DELAY_EVENTS_PER_FRAME: u32 = 32;
/// Per-connection read/write buffer cap, bytes.
const MAX_CONN_BUF: usize = 16 * 1024;

/// Everything a request handler needs.
pub(crate) struct AppState {
    pub cfg: Arc<EngineConfig>,
    /// `--tokenizer`: counts prompt tokens (and hashes their KV blocks) with the model's own
    /// tokenizer instead of whitespace-separated words.
    pub tokenizer: Option<Arc<servebench_workload::LocalTokenizer>>,
    pub zero_delay: bool,
    pub speedup: f64,
    /// On the virtual clock: no blocking-pool work (its completion order is the OS's), fixed
    /// `created`.
    pub virtual_clock: bool,
    pub answers: Option<Arc<dyn AnswerBook>>,
    pub engine_tx: Option<UnboundedSender<Msg>>,
    pub stats: Arc<Stats>,
    pub emission: Arc<EmissionSink>,
    pub epoch: Instant,
    pub id_seq: AtomicU64,
    pub id_salt: u64,
    pub created: u64,
    /// Turns true when the server shuts down (in-memory connections close then).
    pub shutdown: watch::Receiver<bool>,
    /// Virtual clock: one permit, held while a generation request's body is read and parsed.
    pub body_gate: Option<tokio::sync::Semaphore>,
}

/// Now on the serving clock: tokio's, which is the OS monotonic clock unless the runtime's
/// clock is paused (the virtual clock).
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Buffer of each direction of an in-memory connection, bytes (a write beyond it waits for
/// the reader, as a socket's send buffer does).
const MEMORY_PIPE_BUF: usize = 16 * 1024;

/// [`crate::SimServer::connect_memory`]: a pipe whose server end is served by its own task.
pub(crate) fn connect_memory(st: &Arc<AppState>) -> std::io::Result<tokio::io::DuplexStream> {
    if *st.shutdown.borrow() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "the simulator is shutting down",
        ));
    }
    let (client, server) = tokio::io::duplex(MEMORY_PIPE_BUF);
    tokio::spawn(serve_connection(st.clone(), server, st.shutdown.clone()));
    Ok(client)
}

impl AppState {
    pub(crate) fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    fn next_id(&self, api: Api) -> String {
        let n = self.id_seq.fetch_add(1, Ordering::Relaxed);
        let p = match api {
            Api::Completions => "cmpl",
            Api::Chat => "chatcmpl",
        };
        format!("{p}-{:016x}", text::mix64(self.id_salt ^ n))
    }
}

/// Response body: a whole buffer, or an SSE stream.
pub(crate) enum SimBody {
    Full(Option<Bytes>),
    Sse(Box<SseBody>),
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Sse(s) => s.poll_next(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SimBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Sse(_) => SizeHint::default(),
        }
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<SimBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(SimBody::Full(Some(body.into())))
        .expect("valid response")
}

fn json_response(status: StatusCode, v: &Value) -> Response<SimBody> {
    full(
        status,
        "application/json",
        serde_json::to_vec(v).expect("json serializes"),
    )
}

fn error_response(e: &ApiError) -> Response<SimBody> {
    json_response(
        StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST),
        &e.body(),
    )
}

/// What is known of a request for its emission record (times: ns since the epoch).
pub(crate) struct RecordState {
    pub(crate) id: String,
    /// The kernel's receive time of the request's first bytes.
    pub(crate) arrived: Option<u64>,
    /// The first socket read of them.
    pub(crate) read: Option<u64>,
    pub(crate) received_ns: u64,
    /// On the socket (stamped by [`crate::wire`]).
    pub(crate) first: Option<u64>,
    pub(crate) last: Option<u64>,
    /// Handed to hyper.
    pub(crate) first_frame: Option<u64>,
    pub(crate) last_frame: Option<u64>,
    pub(crate) prompt: u32,
    pub(crate) completion: u32,
    pub(crate) chunks: u32,
    /// The engine's view of the request (its step lateness), `None` in zero-delay mode.
    pub(crate) engine: Option<Arc<ReqShared>>,
}

impl RecordState {
    /// Counts the request as finished and pushes its emission record.
    pub(crate) fn finalize(self, st: &AppState, reason: &str) {
        let s = &st.stats;
        s.http_in_flight.fetch_sub(1, Ordering::Relaxed);
        match reason {
            "stop" => &s.finished_stop,
            "length" => &s.finished_length,
            _ => &s.finished_abort,
        }
        .fetch_add(1, Ordering::Relaxed);
        if st.zero_delay {
            s.prompt_tokens
                .fetch_add(self.prompt as u64, Ordering::Relaxed);
            s.generation_tokens
                .fetch_add(self.completion as u64, Ordering::Relaxed);
        }
        st.emission.push(EmissionRecord {
            id: self.id,
            request_arrived_ns: self.arrived,
            request_read_ns: self.read,
            received_ns: self.received_ns,
            first_token_ns: self.first,
            last_token_ns: self.last,
            first_token_frame_ns: self.first_frame,
            last_token_frame_ns: self.last_frame,
            prompt_tokens: self.prompt,
            completion_tokens: self.completion,
            chunks: self.chunks,
            finish_reason: reason.to_string(),
            engine_late_ns: self
                .engine
                .as_ref()
                .map(|e| e.late_ns.load(Ordering::Relaxed)),
        });
    }
}

/// An SSE response: pulls published tokens from its [`ReqShared`] and formats one event per
/// token from pre-serialized prefix/suffix bytes.
pub(crate) struct SseBody {
    shared: Arc<ReqShared>,
    plan: OutputPlan,
    prefix: Vec<u8>,
    mid: &'static [u8],
    fin: Vec<u8>,
    role: Option<Vec<u8>>,
    /// The usage event's start (`data: {…"choices":[],"usage":{` up to `completion_tokens`),
    /// completed with `prompt_tokens_details` once the last token is out; `None` without
    /// `include_usage`.
    usage: Option<String>,
    sent: u32,
    n: u32,
    events_per_frame: u32,
    done: bool,
    /// The connection's cell holding this response's record.
    wire: Arc<Wire>,
    /// The record in `wire` is still this body's (not finished or aborted).
    open: bool,
    scratch: String,
}

impl SseBody {
    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let mut registered = false;
        loop {
            let ready = self.shared.ready.load(Ordering::Acquire).min(self.n);
            if ready > self.sent {
                return Poll::Ready(Some(Ok(Frame::data(self.build_frame(ready)))));
            }
            let state = self.shared.state.load(Ordering::Acquire);
            if state == ABORTED
                || (state == FINISHED && self.shared.ready.load(Ordering::Acquire) <= self.sent)
            {
                // Engine stopped (or finished without tokens for us): end without [DONE].
                self.done = true;
                if std::mem::take(&mut self.open) {
                    self.wire.finish("abort");
                }
                return Poll::Ready(None);
            }
            if registered {
                return Poll::Pending;
            }
            self.shared.waker.register(cx.waker());
            registered = true;
        }
    }

    fn build_frame(&mut self, ready: u32) -> Bytes {
        let upto = ready.min(self.sent.saturating_add(self.events_per_frame));
        let per = self.prefix.len() + self.mid.len() + 16;
        let mut buf: Vec<u8> = Vec::with_capacity(per * (upto - self.sent) as usize + 64);
        if let Some(r) = self.role.take() {
            buf.extend_from_slice(&r);
        }
        let mut texts = 0;
        for i in self.sent..upto {
            self.scratch.clear();
            self.plan.push_token_text(i, &mut self.scratch);
            let last = i + 1 == self.n;
            if self.scratch.is_empty() && !last {
                continue;
            }
            buf.extend_from_slice(&self.prefix);
            text::push_json_escaped(&mut buf, &self.scratch);
            if last {
                buf.extend_from_slice(&self.fin);
            } else {
                buf.extend_from_slice(self.mid);
            }
            if !self.scratch.is_empty() {
                texts += 1;
            }
        }
        self.sent = upto;
        if self.open {
            self.wire.handed(texts, self.sent);
        }
        if self.sent == self.n {
            if let Some(u) = &self.usage {
                buf.extend_from_slice(u.as_bytes());
                buf.extend_from_slice(self.shared.usage_details().as_bytes());
                buf.extend_from_slice(b"}}\n\n");
            }
            buf.extend_from_slice(b"data: [DONE]\n\n");
            self.done = true;
            if std::mem::take(&mut self.open) {
                self.wire.finish(self.plan.finish_reason.as_str());
            }
        }
        Bytes::from(buf)
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        if self.open {
            self.shared.cancelled.store(true, Ordering::Relaxed);
            self.wire.abort();
        }
    }
}

/// Cancels a non-streaming request whose client went away while it was generating.
struct PendingGuard {
    st: Arc<AppState>,
    shared: Arc<ReqShared>,
    rec: Option<RecordState>,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if let Some(r) = self.rec.take() {
            self.shared.cancelled.store(true, Ordering::Relaxed);
            r.finalize(&self.st, "abort");
        }
    }
}

/// Prompt token count and the chain hashes of its full KV blocks (`kv_block_size` tokens).
/// Tokens are the model tokenizer's ids with `--tokenizer` (then `gr.prompt_tokens` becomes
/// that count and the context limit is checked again), else whitespace-separated words (the
/// simulator's own count).
async fn prompt_blocks(st: &AppState, gr: &mut api::GenRequest) -> Result<Vec<u64>, ApiError> {
    let bs = st.cfg.kv_block_size.max(1) as usize;
    let text = std::mem::take(&mut gr.full_text);
    let (n, hashes) = match st.tokenizer.clone() {
        Some(tok) => {
            let count = move || {
                let ids = tok.encode(&text).unwrap_or_default();
                let h = chain_hashes(ids.chunks_exact(bs).map(|c| {
                    let mut x = 0xcbf2_9ce4_8422_2325u64;
                    for &id in c {
                        x = (x ^ u64::from(id)).wrapping_mul(0x100_0000_01b3);
                    }
                    x
                }));
                (ids.len() as u32, h)
            };
            if st.virtual_clock {
                // inline: the blocking pool's completion order would reorder submissions
                count()
            } else {
                tokio::task::spawn_blocking(count)
                    .await
                    .unwrap_or((gr.prompt_tokens, Vec::new()))
            }
        }
        None => {
            // counted and hashed in the same pass when the body was parsed (chat and text
            // prompts); token-id prompts are hashed here
            let wb = gr
                .word_blocks
                .take()
                .unwrap_or_else(|| text::word_blocks(&text, bs));
            let blocks = wb.blocks;
            (gr.prompt_tokens, chain_hashes(blocks.into_iter()))
        }
    };
    if st.tokenizer.is_some() {
        gr.prompt_tokens = n;
        let limit = st.cfg.max_model_len;
        if n as u64 + u64::from(gr.params.max_tokens) > u64::from(limit) {
            return Err(ApiError {
                status: 400,
                message: format!(
                    "This model's maximum context length is {limit} tokens. However, you requested {} tokens ({n} in the messages, {} in the completion).",
                    n as u64 + u64::from(gr.params.max_tokens),
                    gr.params.max_tokens
                ),
                param: Some("messages".into()),
            });
        }
    }
    Ok(hashes)
}

/// h_i = mix(h_{i−1}, block_i): a block's hash identifies its whole prefix.
fn chain_hashes(blocks: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut prev = 0x9e37_79b9_7f4a_7c15u64;
    blocks
        .map(|b| {
            prev = (prev ^ b)
                .wrapping_mul(0xff51_afd7_ed55_8ccd)
                .rotate_left(29)
                ^ b;
            prev
        })
        .collect()
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("string serializes")
}

async fn read_json(req: Request<Incoming>) -> Result<Value, ApiError> {
    let body = Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                ApiError {
                    status: 413,
                    message: format!("body: larger than {MAX_BODY} bytes"),
                    param: None,
                }
            } else {
                ApiError {
                    status: 400,
                    message: format!("body: could not be read: {e}"),
                    param: None,
                }
            }
        })?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| ApiError {
        status: 400,
        message: format!("body: invalid JSON: {e}"),
        param: None,
    })
}

/// The error answer to a generation request. On the virtual clock it comes after the modelled
/// front-end latency (`request_overhead_ms`: HTTP, template, tokenize), as from an engine that
/// parses the request before refusing it: answered in zero time, a client that retries at once
/// (an AgentX lane whose every play overflows the context) would loop without the clock ever
/// advancing. On the wall clock the real parsing time stands in for it, as before.
async fn rejected(st: &AppState, e: &ApiError) -> Response<SimBody> {
    if st.virtual_clock {
        let s = st.cfg.consts.request_overhead_ms * 1e-3 / st.speedup;
        tokio::time::sleep(Duration::from_secs_f64(s.max(0.0))).await;
    }
    error_response(e)
}

async fn generate(
    st: Arc<AppState>,
    req: Request<Incoming>,
    api: Api,
    received: Instant,
    wire: Arc<Wire>,
) -> Response<SimBody> {
    let (read, arrived) = wire.take_read();
    let parsed = {
        // On the virtual clock one request body at a time is read and parsed (FIFO): reading
        // takes no modelled time there, and 4,096 AgentX lanes sending their primers at once
        // would otherwise hold 4,096 half-read bodies (up to 3.6 MB each) in this process.
        let _one = match &st.body_gate {
            Some(g) => g.acquire().await.ok(),
            None => None,
        };
        async {
            let body = read_json(req).await?;
            let mut gr = api::parse_generation(&body, api, &st.cfg)?;
            drop(body);
            let hashes = prompt_blocks(&st, &mut gr).await?;
            Ok::<_, ApiError>((gr, hashes))
        }
        .await
    };
    let (gr, prefix_hashes) = match parsed {
        Ok(p) => p,
        Err(e) => return rejected(&st, &e).await,
    };
    let answer = st.answers.as_ref().and_then(|a| a.answer(&gr.prompt_text));
    let plan = OutputPlan::build(&gr.prompt_text, answer, &gr.params);
    let n = plan.n_tokens;
    let id = st.next_id(api);
    let shared = if st.zero_delay {
        Arc::new(ReqShared::completed(n))
    } else {
        let s = Arc::new(ReqShared::new());
        let msg = Msg::Submit(Submission {
            shared: s.clone(),
            prompt_tokens: gr.prompt_tokens,
            output_tokens: n,
            arrival: received,
            prefix_hashes,
        });
        let sent = st.engine_tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok());
        if !sent {
            return error_response(&ApiError {
                status: 503,
                message: "server: the simulator is shutting down".into(),
                param: None,
            });
        }
        s
    };
    st.stats.http_in_flight.fetch_add(1, Ordering::Relaxed);
    let rec = RecordState {
        id: id.clone(),
        arrived,
        read,
        received_ns: st.ns(received),
        first: None,
        last: None,
        first_frame: None,
        last_frame: None,
        prompt: gr.prompt_tokens,
        completion: 0,
        chunks: 0,
        engine: (!st.zero_delay).then(|| shared.clone()),
    };
    let model = json_string(&st.cfg.model.served_name);
    let created = if st.virtual_clock {
        st.created
    } else {
        unix_now()
    };
    if gr.stream {
        let object = match api {
            Api::Completions => "text_completion",
            Api::Chat => "chat.completion.chunk",
        };
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":{model},\"choices\":["
        );
        let (prefix, mid, fin, role): (String, &'static [u8], String, Option<Vec<u8>>) = match api {
            Api::Completions => (
                format!("{head}{{\"index\":0,\"text\":\""),
                b"\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}\n\n",
                format!(
                    "\",\"logprobs\":null,\"finish_reason\":\"{}\",\"stop_reason\":null}}]}}\n\n",
                    plan.finish_reason.as_str()
                ),
                None,
            ),
            Api::Chat => (
                format!("{head}{{\"index\":0,\"delta\":{{\"content\":\""),
                b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
                format!(
                    "\"}},\"logprobs\":null,\"finish_reason\":\"{}\"}}]}}\n\n",
                    plan.finish_reason.as_str()
                ),
                Some(
                    format!(
                        "{head}{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
                    )
                    .into_bytes(),
                ),
            ),
        };
        let usage = gr.include_usage.then(|| {
            format!(
                "{head}],\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{n}",
                gr.prompt_tokens,
                gr.prompt_tokens as u64 + n as u64
            )
        });
        wire.begin(rec);
        let body = SseBody {
            shared,
            plan,
            prefix: prefix.into_bytes(),
            mid,
            fin: fin.into_bytes(),
            role,
            usage,
            sent: 0,
            n,
            events_per_frame: if st.zero_delay {
                ZERO_DELAY_EVENTS_PER_FRAME
            } else {
                u32::MAX
            },
            done: false,
            wire,
            open: true,
            scratch: String::new(),
        };
        return Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(SimBody::Sse(Box::new(body)))
            .expect("valid response");
    }
    let mut guard = PendingGuard {
        st: st.clone(),
        shared: shared.clone(),
        rec: Some(rec),
    };
    let state = poll_fn(|cx| {
        let s = shared.state.load(Ordering::Acquire);
        if s != crate::runtime::RUNNING {
            return Poll::Ready(s);
        }
        shared.waker.register(cx.waker());
        match shared.state.load(Ordering::Acquire) {
            crate::runtime::RUNNING => Poll::Pending,
            s => Poll::Ready(s),
        }
    })
    .await;
    let rec = guard.rec.take().expect("record present");
    if state == ABORTED {
        rec.finalize(&st, "abort");
        return error_response(&ApiError {
            status: 503,
            message: "server: the simulator stopped before the request finished".into(),
            param: None,
        });
    }
    let text_out = plan.full_text();
    let mut usage = json!({"prompt_tokens": gr.prompt_tokens, "total_tokens": gr.prompt_tokens as u64 + n as u64, "completion_tokens": n});
    match shared.cached.load(Ordering::Acquire) {
        u32::MAX => {}
        c => usage["prompt_tokens_details"] = json!({ "cached_tokens": c }),
    }
    let v = match api {
        Api::Completions => json!({
            "id": id, "object": "text_completion", "created": created, "model": st.cfg.model.served_name,
            "choices": [{"index": 0, "text": text_out, "logprobs": null,
                         "finish_reason": plan.finish_reason.as_str(), "stop_reason": null}],
            "usage": usage,
        }),
        Api::Chat => json!({
            "id": id, "object": "chat.completion", "created": created, "model": st.cfg.model.served_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text_out},
                         "logprobs": null, "finish_reason": plan.finish_reason.as_str()}],
            "usage": usage,
        }),
    };
    let resp = json_response(StatusCode::OK, &v);
    // The whole body is handed to hyper when this handler returns; its record waits in the
    // connection's cell for the socket write.
    wire.begin(rec);
    wire.handed(u32::from(!text_out.is_empty()), n);
    wire.finish(plan.finish_reason.as_str());
    drop(guard);
    resp
}

fn models(st: &AppState) -> Response<SimBody> {
    let name = &st.cfg.model.served_name;
    json_response(
        StatusCode::OK,
        &json!({"object": "list", "data": [{
            "id": name, "object": "model", "created": st.created, "owned_by": "servebench-sim",
            "root": name, "parent": null, "max_model_len": st.cfg.max_model_len,
        }]}),
    )
}

async fn tokenize(st: Arc<AppState>, req: Request<Incoming>) -> Response<SimBody> {
    let v = match read_json(req).await {
        Ok(v) => v,
        Err(e) => return error_response(&e),
    };
    let Some(m) = v.as_object() else {
        return error_response(&ApiError {
            status: 400,
            message: "body: expected a JSON object".into(),
            param: None,
        });
    };
    if let Err(e) = api::check_model(m, &st.cfg) {
        return error_response(&e);
    }
    let vocab = st.cfg.model.vocab;
    if let Some(Value::String(content)) = m.get("content") {
        // llama.cpp shape.
        return json_response(
            StatusCode::OK,
            &json!({"tokens": text::tokenize(content, vocab)}),
        );
    }
    let rendered = if m.contains_key("messages") {
        let msgs = match api::parse_messages(m.get("messages")) {
            Ok(x) => x,
            Err(e) => return error_response(&e),
        };
        let add = m
            .get("add_generation_prompt")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        text::render_chat(&msgs, add)
    } else {
        match m.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return error_response(&ApiError::bad(
                    "prompt",
                    format!("expected a string, got {other}"),
                ))
            }
            None => {
                return error_response(&ApiError::bad(
                    "prompt",
                    "required (or `messages`, or llama.cpp's `content`)",
                ))
            }
        }
    };
    let tokens = text::tokenize(&rendered, vocab);
    json_response(
        StatusCode::OK,
        &json!({"count": tokens.len(), "max_model_len": st.cfg.max_model_len, "tokens": tokens, "token_strs": null}),
    )
}

async fn detokenize(st: Arc<AppState>, req: Request<Incoming>) -> Response<SimBody> {
    let v = match read_json(req).await {
        Ok(v) => v,
        Err(e) => return error_response(&e),
    };
    if let Some(m) = v.as_object() {
        if let Err(e) = api::check_model(m, &st.cfg) {
            return error_response(&e);
        }
    }
    let Some(arr) = v.get("tokens").and_then(Value::as_array) else {
        return error_response(&ApiError::bad("tokens", "required: an array of token ids"));
    };
    let mut ids = Vec::with_capacity(arr.len());
    for (i, x) in arr.iter().enumerate() {
        match x.as_u64() {
            Some(id) => ids.push(id),
            None => {
                return error_response(&ApiError::bad(
                    &format!("tokens[{i}]"),
                    format!("expected a non-negative integer, got {x}"),
                ))
            }
        }
    }
    match text::detokenize(&ids, st.cfg.model.vocab) {
        Ok(s) => json_response(StatusCode::OK, &json!({"prompt": s, "content": s})),
        Err((i, id)) => error_response(&ApiError::bad(
            &format!("tokens[{i}]"),
            format!("token id {id} is out of range [0, {})", st.cfg.model.vocab),
        )),
    }
}

/// SGLang's names for the simulator's engine series (`sglang/srt/metrics/collector.py`, the
/// names InferenceX's `backends/sglang.py` and servebench's SGLang profile read), same values as
/// the vLLM series: running/queued requests, KV usage (`token_usage`, 0–1) and capacity
/// (`max_total_num_tokens`), prompt/generation token counters, prefix-cache hits as
/// `cached_tokens_total{cache_source="device"}` (tokens) and their ratio to the looked-up prompt
/// tokens as `cache_hit_rate` (0–1, 0 before any lookup), finished requests. Preemptions have
/// no SGLang counter: `servebench_sim_preemptions_total`.
fn sglang_series(
    metric: &mut impl FnMut(&str, &str, &str, &[(&str, String)]),
    st: &AppState,
    running: u64,
    waiting: u64,
    kv: f64,
) {
    let s = &st.stats;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let (hits, queries) = (g(&s.prefix_cache_hits), g(&s.prefix_cache_queries));
    let hit_rate = if queries == 0 {
        0.0
    } else {
        hits as f64 / queries as f64
    };
    let finished = g(&s.finished_stop) + g(&s.finished_length) + g(&s.finished_abort);
    let host = g(&s.host_cache_hits);
    let cached_by_source = [
        ("cache_source=\"device\"", hits.to_string()),
        ("cache_source=\"host\"", host.to_string()),
    ];
    // the host series only with a DRAM tier (SGLang without HiCache has no host source)
    let cached: &[(&str, String)] = if st.cfg.host_kv.is_some() {
        &cached_by_source
    } else {
        &cached_by_source[..1]
    };
    let series: [(&str, &str, &str, &[(&str, String)]); 10] = [
        (
            "sglang:num_running_reqs",
            "gauge",
            "The number of running requests.",
            &[("", running.to_string())],
        ),
        (
            "sglang:num_queue_reqs",
            "gauge",
            "The number of requests in the waiting queue.",
            &[("", waiting.to_string())],
        ),
        (
            "sglang:token_usage",
            "gauge",
            "The token usage.",
            &[("", kv.to_string())],
        ),
        (
            "sglang:max_total_num_tokens",
            "gauge",
            "Maximum total number of tokens in the KV cache pool.",
            &[("", st.cfg.kv_capacity_tokens().to_string())],
        ),
        (
            "sglang:cache_hit_rate",
            "gauge",
            "The prefix cache hit rate.",
            &[("", hit_rate.to_string())],
        ),
        (
            "sglang:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            &[("", g(&s.prompt_tokens).to_string())],
        ),
        (
            "sglang:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            &[("", g(&s.generation_tokens).to_string())],
        ),
        (
            "sglang:cached_tokens_total",
            "counter",
            "Number of cached prompt tokens.",
            cached,
        ),
        (
            "sglang:num_requests_total",
            "counter",
            "Number of requests processed.",
            &[("", finished.to_string())],
        ),
        (
            "servebench_sim_preemptions_total",
            "counter",
            "Cumulative number of preemptions (recompute).",
            &[("", g(&s.preemptions).to_string())],
        ),
    ];
    for (name, kind, help, samples) in series {
        metric(name, kind, help, samples);
    }
}

/// vLLM's (and ATOM's, renamed `atom:` by the caller) series of the simulated engine: queue
/// gauges, KV usage (fraction 0–1), token/request counters and prefix-cache counters in prompt
/// tokens (vLLM's metric names and help texts).
fn vllm_series(
    metric: &mut impl FnMut(&str, &str, &str, &[(&str, String)]),
    st: &AppState,
    running: u64,
    waiting: u64,
    kv: f64,
) {
    let s = &st.stats;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    metric(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        &[("", running.to_string())],
    );
    metric(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        &[("", waiting.to_string())],
    );
    metric(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        &[("", kv.to_string())],
    );
    metric(
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "GPU KV-cache usage (older name). 1 means 100 percent usage.",
        &[("", kv.to_string())],
    );
    metric(
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        &[("", g(&s.prompt_tokens).to_string())],
    );
    metric(
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        &[("", g(&s.generation_tokens).to_string())],
    );
    metric(
        "vllm:request_success_total",
        "counter",
        "Count of finished requests by finish reason.",
        &[
            ("finished_reason=\"stop\"", g(&s.finished_stop).to_string()),
            (
                "finished_reason=\"length\"",
                g(&s.finished_length).to_string(),
            ),
            (
                "finished_reason=\"abort\"",
                g(&s.finished_abort).to_string(),
            ),
        ],
    );
    metric(
        "vllm:prefix_cache_queries_total",
        "counter",
        "Prefix-cache queries, in prompt tokens.",
        &[("", g(&s.prefix_cache_queries).to_string())],
    );
    metric(
        "vllm:prefix_cache_hits_total",
        "counter",
        "Prefix-cache hits, in prompt tokens.",
        &[("", g(&s.prefix_cache_hits).to_string())],
    );
    if st.cfg.host_kv.is_some() {
        // vLLM's KV-connector (offload) prefix-cache counters, in prompt tokens
        metric(
            "vllm:external_prefix_cache_queries_total",
            "counter",
            "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.",
            &[("", g(&s.prefix_cache_queries).to_string())],
        );
        metric(
            "vllm:external_prefix_cache_hits_total",
            "counter",
            "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.",
            &[("", g(&s.host_cache_hits).to_string())],
        );
    }
    metric(
        "vllm:num_preemptions_total",
        "counter",
        "Cumulative number of preemptions (recompute).",
        &[("", g(&s.preemptions).to_string())],
    );
}

/// servebench's own `servebench_sim_*` series (every dialect): cache resets, KV budget
/// (tokens), steps, modelled seconds, modelled energy (J, only with a power model), wall lag (s),
/// speedup and the HTTP gauges.
fn sim_series(metric: &mut impl FnMut(&str, &str, &str, &[(&str, String)]), st: &AppState) {
    let s = &st.stats;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    metric(
        "servebench_sim_prefix_cache_resets_total",
        "counter",
        "Prefix-cache resets (POST /reset_prefix_cache) that dropped the cache.",
        &[("", g(&s.prefix_cache_resets).to_string())],
    );
    metric(
        "servebench_sim_kv_cache_capacity_tokens",
        "gauge",
        "KV-cache budget of the simulated engine, tokens.",
        &[("", st.cfg.kv_capacity_tokens().to_string())],
    );
    metric(
        "servebench_sim_max_num_seqs",
        "gauge",
        "Max sequences per engine step.",
        &[("", st.cfg.max_num_seqs.to_string())],
    );
    metric(
        "servebench_sim_steps_total",
        "counter",
        "Engine steps executed.",
        &[("", g(&s.steps).to_string())],
    );
    metric(
        "servebench_sim_modelled_seconds_total",
        "counter",
        "Modelled (virtual) engine time, s.",
        &[("", (g(&s.modelled_ns) as f64 / 1e9).to_string())],
    );
    if st.cfg.gpu.tdp_w.is_some() && st.cfg.gpu.idle_w.is_some() {
        metric(
            "servebench_sim_energy_joules_total",
            "counter",
            "Modelled GPU energy of all the engine's GPUs (idle + utilisation-scaled dynamic power per step; docs/simulator.md \"Energy\"), J. Modelled, not measured.",
            &[("", (g(&s.energy_uj) as f64 / 1e6).to_string())],
        );
    }
    metric(
        "servebench_sim_lag_seconds_total",
        "counter",
        "Wall time the engine loop fell behind and dropped (machine overloaded), s.",
        &[("", (g(&s.lag_ns) as f64 / 1e9).to_string())],
    );
    metric(
        "servebench_sim_speedup",
        "gauge",
        "Modelled time / wall time (0 = zero-delay mode).",
        &[(
            "",
            if st.zero_delay {
                "0".to_string()
            } else {
                st.speedup.to_string()
            },
        )],
    );
    metric(
        "servebench_sim_http_requests_in_flight",
        "gauge",
        "Generation requests being served.",
        &[("", g(&s.http_in_flight).to_string())],
    );
    metric(
        "servebench_sim_http_connections",
        "gauge",
        "Open HTTP connections.",
        &[("", g(&s.connections_open).to_string())],
    );
    metric(
        "servebench_sim_http_connections_total",
        "counter",
        "HTTP connections accepted.",
        &[("", g(&s.connections_total).to_string())],
    );
}

fn metrics(st: &AppState) -> Response<SimBody> {
    use std::fmt::Write;
    let s = &st.stats;
    let l = format!("model_name={}", json_string(&st.cfg.model.served_name));
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let (running, waiting, kv) = if st.zero_delay {
        (g(&s.http_in_flight), 0, 0.0)
    } else {
        (
            g(&s.running),
            g(&s.waiting),
            g(&s.kv_used_blocks) as f64 / st.cfg.kv_blocks.max(1) as f64,
        )
    };
    let mut o = String::with_capacity(4096);
    let atom = st.cfg.metrics_dialect == MetricsDialect::Atom;
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, String)]| {
        let renamed;
        let name = match name.strip_prefix("vllm:") {
            Some(rest) if atom => {
                renamed = format!("atom:{rest}");
                renamed.as_str()
            }
            _ => name,
        };
        // prometheus_client (SGLang) types a counter by its family, without `_total`
        let family = match kind {
            "counter" if name.starts_with("sglang:") => name.trim_end_matches("_total"),
            _ => name,
        };
        let _ = writeln!(o, "# HELP {family} {help}\n# TYPE {family} {kind}");
        for (labels, v) in samples {
            if labels.is_empty() {
                let _ = writeln!(o, "{name}{{{l}}} {v}");
            } else {
                let _ = writeln!(o, "{name}{{{l},{labels}}} {v}");
            }
        }
    };
    if st.cfg.metrics_dialect == MetricsDialect::Sglang {
        sglang_series(&mut metric, st, running, waiting, kv);
    } else {
        vllm_series(&mut metric, st, running, waiting, kv);
    }
    sim_series(&mut metric, st);
    full(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        o,
    )
}

/// `POST /reset_prefix_cache` (vLLM's route; vLLM registers it with `VLLM_SERVER_DEV_MODE=1`):
/// 200 with an empty body once the engine dropped its cached blocks; 503 while requests are
/// queued or running (vLLM refuses a reset while KV blocks are in use), the cache untouched.
/// Counted in `servebench_sim_prefix_cache_resets_total`. Zero-delay mode has no cache: 200.
async fn reset_prefix_cache(st: &AppState) -> Response<SimBody> {
    let Some(tx) = st.engine_tx.as_ref() else {
        st.stats.prefix_cache_resets.fetch_add(1, Ordering::Relaxed);
        return full(StatusCode::OK, "text/plain", Bytes::new());
    };
    let (reply, rx) = tokio::sync::oneshot::channel();
    let answer = if tx.send(Msg::ResetPrefixCache(reply)).is_ok() {
        rx.await.ok()
    } else {
        None
    };
    match answer {
        Some(Ok(_)) => full(StatusCode::OK, "text/plain", Bytes::new()),
        Some(Err(busy)) => error_response(&ApiError {
            status: 503,
            message: format!(
                "prefix cache not reset: {busy} requests are queued or running (retry when idle)"
            ),
            param: None,
        }),
        None => error_response(&ApiError {
            status: 503,
            message: "server: the simulator is shutting down".into(),
            param: None,
        }),
    }
}

const ROUTES: &[&str] = &[
    "/health",
    "/health_generate",
    "/ping",
    "/version",
    "/v1/models",
    "/metrics",
    "/v1/completions",
    "/v1/chat/completions",
    "/tokenize",
    "/detokenize",
    "/reset_prefix_cache",
];

/// Routes one request.
///
/// `wire` is the connection's cell: generation requests take their socket read time from it and
/// leave their record there until the response is on the socket.
pub(crate) async fn handle(
    st: Arc<AppState>,
    req: Request<Incoming>,
    wire: Arc<Wire>,
) -> Response<SimBody> {
    let received = now();
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    match path.as_str() {
        "/health" | "/health_generate" | "/ping" if get || post => {
            full(StatusCode::OK, "text/plain", Bytes::new())
        }
        "/version" if get => json_response(
            StatusCode::OK,
            &json!({"version": concat!("servebench-sim ", env!("CARGO_PKG_VERSION"))}),
        ),
        "/v1/models" if get => models(&st),
        "/metrics" if get => metrics(&st),
        "/v1/completions" if post => generate(st, req, Api::Completions, received, wire).await,
        "/v1/chat/completions" if post => generate(st, req, Api::Chat, received, wire).await,
        "/tokenize" if post => tokenize(st, req).await,
        "/detokenize" if post => detokenize(st, req).await,
        "/reset_prefix_cache" if post => reset_prefix_cache(&st).await,
        p if ROUTES.contains(&p) => error_response(&ApiError {
            status: 405,
            message: format!("method: {method} is not allowed on {p}"),
            param: None,
        }),
        p => error_response(&ApiError {
            status: 404,
            message: format!("path: {p} not found"),
            param: None,
        }),
    }
}

/// Resolves once the shutdown flag is true (the watch guard is dropped before returning, so the
/// future stays `Send`).
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

struct ConnGuard(Arc<Stats>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one accepted connection (HTTP/1.1 keep-alive) through a [`WireIo`] until the
/// client closes it or `shutdown` turns true (then closes it gracefully).
pub(crate) async fn serve_connection<S>(
    st: Arc<AppState>,
    stream: S,
    mut shutdown: watch::Receiver<bool>,
) where
    S: crate::wire::StampedRead + tokio::io::AsyncWrite + Send + 'static,
{
    st.stats.connections_open.fetch_add(1, Ordering::Relaxed);
    st.stats.connections_total.fetch_add(1, Ordering::Relaxed);
    let _guard = ConnGuard(st.stats.clone());
    let st_virtual = st.virtual_clock;
    let wire = Wire::new(st.clone());
    let io = WireIo::new(stream, wire.clone());
    let svc = service_fn(move |req| {
        let st = st.clone();
        let wire = wire.clone();
        async move {
            let resp = handle(st, req, wire.clone()).await;
            // Reads so far were this request's (its body included).
            wire.clear_read();
            Ok::<_, Infallible>(resp)
        }
    });
    let virt = st_virtual;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .keep_alive(true)
        // Caps hyper's per-connection read and write buffers (default ~400 KB) so 10,000
        // idle-ish connections stay cheap.
        .max_buf_size(MAX_CONN_BUF);
    if virt {
        // No header-read timeout on the virtual clock (30 s of it is 30 ms modelled), and no
        // `date` header (wall-clock time that would differ between two identical runs).
        builder.header_read_timeout(None).auto_date_header(false);
    }
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        biased;
        _ = conn.as_mut() => {}
        _ = stopped(&mut shutdown) => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Accepts connections until `shutdown` turns true, then closes them gracefully (2 s at most).
pub(crate) async fn serve(
    listener: TcpListener,
    st: Arc<AppState>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conns: JoinSet<()> = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    #[cfg(target_os = "linux")]
                    if let Err(e) = crate::wire::rx::enable(std::os::fd::AsRawFd::as_raw_fd(&stream)) {
                        tracing::debug!("SO_TIMESTAMPNS: {e} (no request_arrived_ns)");
                    }
                    conns.spawn(serve_connection(st.clone(), stream, shutdown.clone()));
                }
                Err(e) => {
                    tracing::warn!("simulator accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = stopped(&mut shutdown) => break,
        }
    }
    drop(listener);
    let deadline = tokio::time::sleep(Duration::from_secs(2));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            r = conns.join_next() => if r.is_none() { break },
            _ = &mut deadline => {
                conns.abort_all();
                while conns.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// Unix time, s.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
