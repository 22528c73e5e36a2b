//! HTTP/1.1 transport (hyper 1.x low-level `client::conn::http1`) and one measured request.
//!
//! Each lane owns at most one connection ([`Conn`]). A keep-alive connection the server closed
//! while idle (llama.cpp closes after every streamed response although it answers with
//! keep-alive headers) is re-dialled: before sending, a closed sender is replaced; and when a
//! request on a *reused* connection fails before any response arrived, it is re-sent on a fresh
//! connection (at most twice), with `t0` taken again — counted in `redials`, never as a failure.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONNECTION, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::profile::BodyBuilder;
use crate::record::{Phase, RequestRecord};
use crate::sse::SseFramer;
use crate::stream::{Compat, StreamState};
use servebench_workload::RequestSpec;

pub use http::Method;

/// Monotonic run clock: ns since its origin.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
    /// A clock with the given origin.
    pub fn with_origin(origin: Instant) -> Self {
        Self { origin }
    }
    /// The origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }
    /// ns since the origin.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
    /// ns since the origin of `t`.
    pub fn ns_of(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }
}

/// A parsed `http://host:port[/prefix]` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Normalised base URL without trailing slash, as given (for messages).
    pub base_url: String,
    /// Host name or IP.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// `host:port` for the Host header.
    pub authority: String,
    /// Path prefix before `/v1/...` (empty, or e.g. `/proxy`); a trailing `/v1` is dropped.
    pub prefix: String,
}

impl Endpoint {
    /// Parses a base URL. Errors name the URL (`https` is refused: plain HTTP only).
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid endpoint URL `{url}`: {e}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => anyhow::bail!(
                "endpoint `{url}`: scheme `{other}` is not supported (plain http:// only)"
            ),
            None => anyhow::bail!("endpoint `{url}` has no scheme (expected http://HOST:PORT)"),
        }
        let host = uri
            .host()
            .ok_or_else(|| anyhow::anyhow!("endpoint `{url}` has no host"))?
            .to_string();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(80);
        let mut prefix = uri.path().trim_end_matches('/').to_string();
        if prefix.ends_with("/v1") {
            prefix.truncate(prefix.len() - 3);
        }
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_else(|| format!("{host}:{port}"));
        Ok(Self {
            base_url: url.trim_end_matches('/').to_string(),
            host,
            port,
            authority,
            prefix,
        })
    }

    /// Full path for an API path such as `/v1/completions`.
    pub fn path(&self, p: &str) -> String {
        format!("{}{}", self.prefix, p)
    }
}

/// Socket-level timestamps of one connection (ns on the run clock), taken inside the
/// connection's I/O: `write_ns` = when the first bytes of the armed request were accepted by the
/// socket (MEASUREMENT.md Part 1 t0), `read_ns` = when the latest read returned data (event
/// arrival). Reading them avoids counting the client's own task scheduling as server latency.
#[derive(Debug)]
pub struct IoStamps {
    clock: Clock,
    armed: std::sync::atomic::AtomicBool,
    write_ns: std::sync::atomic::AtomicU64,
    read_ns: std::sync::atomic::AtomicU64,
}

impl IoStamps {
    fn new(clock: Clock) -> Self {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        Self {
            clock,
            armed: AtomicBool::new(false),
            write_ns: AtomicU64::new(0),
            read_ns: AtomicU64::new(0),
        }
    }
    fn arm(&self) {
        self.write_ns.store(0, std::sync::atomic::Ordering::Relaxed);
        self.armed.store(true, std::sync::atomic::Ordering::Release);
    }
    /// Time the armed request's first bytes were written, if they were.
    fn written(&self) -> Option<u64> {
        match self.write_ns.load(std::sync::atomic::Ordering::Acquire) {
            0 => None,
            t => Some(t),
        }
    }
    /// Time of the latest read that returned data (0 = none yet).
    #[inline]
    fn last_read(&self) -> u64 {
        self.read_ns.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// `TcpStream` wrapper that stamps [`IoStamps`].
struct TimedIo {
    inner: TcpStream,
    stamps: Arc<IoStamps>,
}

impl tokio::io::AsyncRead for TimedIo {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, std::task::Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let t = self.stamps.clock.now_ns().max(1);
            self.stamps
                .read_ns
                .store(t, std::sync::atomic::Ordering::Release);
        }
        r
    }
}

impl TimedIo {
    /// The clock is read *before* the write syscall, so a preemption between the syscall and
    /// the clock read can never move t0 later than the bytes really left (which would shorten
    /// TTFT); it is committed only when the write accepted bytes.
    #[inline]
    fn pre_write(&self) -> Option<u64> {
        if self.stamps.armed.load(std::sync::atomic::Ordering::Acquire) {
            Some(self.stamps.clock.now_ns().max(1))
        } else {
            None
        }
    }

    #[inline]
    fn commit_write(&self, t: Option<u64>, r: &std::task::Poll<std::io::Result<usize>>) {
        if let (Some(t), std::task::Poll::Ready(Ok(n))) = (t, r) {
            if *n > 0
                && self
                    .stamps
                    .armed
                    .swap(false, std::sync::atomic::Ordering::AcqRel)
            {
                self.stamps
                    .write_ns
                    .store(t, std::sync::atomic::Ordering::Release);
            }
        }
    }
}

impl tokio::io::AsyncWrite for TimedIo {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let t = self.pre_write();
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.commit_write(t, &r);
        r
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let t = self.pre_write();
        let r = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.commit_write(t, &r);
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One HTTP/1.1 connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    stamps: Arc<IoStamps>,
    uses: u32,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Conn(uses={})", self.uses)
    }
}

impl Conn {
    /// Whether the connection is known closed.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

/// Bytes hyper reads from the socket at a time, per connection (exact, never grown).
///
/// hyper's default read strategy is adaptive: it doubles the buffer after every read that fills
/// it, up to ~400 KB, and a fast stream (a zero-delay simulator, or a real engine's burst after a
/// prefill stall) fills every read, so 10,000 streams cost gigabytes (docs/benchmarks-client.md,
/// Findings 1). SSE events and lines longer than this are still whole: the [`SseFramer`]
/// accumulates partial lines across reads (case B07, 200 KB lines).
pub const READ_BUF_SIZE: usize = 8 * 1024;

/// Opens a connection (TCP_NODELAY) and spawns its hyper driver task; `clock` stamps the
/// socket reads and writes.
pub async fn dial(ep: &Endpoint, clock: Clock) -> std::io::Result<Conn> {
    let stream = TcpStream::connect((ep.host.as_str(), ep.port)).await?;
    stream.set_nodelay(true)?;
    let stamps = Arc::new(IoStamps::new(clock));
    let io = TimedIo {
        inner: stream,
        stamps: stamps.clone(),
    };
    let (sender, conn) = hyper::client::conn::http1::Builder::new()
        .read_buf_exact_size(Some(READ_BUF_SIZE))
        .handshake(TokioIo::new(io))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Conn {
        sender,
        stamps,
        uses: 0,
    })
}

/// Cancellation signal shared by the driver (Ctrl-C).
#[derive(Clone, Debug)]
pub struct Cancel {
    rx: tokio::sync::watch::Receiver<bool>,
}

/// The sending side of [`Cancel`].
#[derive(Debug)]
pub struct CancelHandle {
    tx: tokio::sync::watch::Sender<bool>,
}

/// A connected cancel pair.
pub fn cancel_pair() -> (CancelHandle, Cancel) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (CancelHandle { tx }, Cancel { rx })
}

impl CancelHandle {
    /// Signals cancellation.
    pub fn cancel(&self) {
        let _ = self.tx.send(true);
    }
}

impl Cancel {
    /// A signal that never fires.
    pub fn never() -> Self {
        let (h, c) = cancel_pair();
        std::mem::forget(h);
        c
    }
    /// Whether cancellation was signalled.
    pub fn is_cancelled(&self) -> bool {
        *self.rx.borrow()
    }
    /// Resolves when cancelled (never, if the handle was dropped without cancelling).
    pub async fn wait(&mut self) {
        if self.rx.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Everything a request needs besides its spec.
#[derive(Debug, Clone)]
pub struct ClientCtx {
    /// Target.
    pub endpoint: Endpoint,
    /// Body shape.
    pub builder: BodyBuilder,
    /// Counting rules.
    pub compat: Compat,
    /// Open a new connection for every request (InferenceX transport).
    pub new_connection_per_request: bool,
    /// Per-request timeout (whole request, connect to last byte).
    pub timeout: Duration,
    /// Run clock.
    pub clock: Clock,
    /// Keep generated text in records.
    pub capture_text: bool,
    /// `Authorization: Bearer …` value, if any.
    pub api_key: Option<String>,
}

enum Fail {
    Connect(String),
    Transport(String),
    Http(u16, String),
    Timeout,
    Cancelled,
}

#[derive(Default)]
struct Meta {
    t0: Option<u64>,
    connect_ms: Option<f64>,
    redials: u32,
    status: Option<u16>,
    end: Option<u64>,
    transport_error: Option<String>,
}

const MAX_ERROR_BODY: usize = 64 * 1024;

async fn attempt(
    ctx: &ClientCtx,
    slot: &mut Option<Conn>,
    body: &Bytes,
    st: &mut StreamState,
    framer: &mut SseFramer,
    meta: &mut Meta,
) -> Result<(), Fail> {
    let path = ctx.endpoint.path(ctx.builder.api.path());
    let mut tries = 0;
    loop {
        tries += 1;
        let reusable = slot
            .take()
            .filter(|c| !c.is_closed() && !ctx.new_connection_per_request);
        let (mut conn, reused) = match reusable {
            Some(c) => (c, true),
            None => {
                let t = ctx.clock.now_ns();
                if ctx.compat == Compat::InferenceX {
                    // InferenceX takes `st` before the POST, so its TTFT includes the connect.
                    meta.t0 = Some(t);
                }
                let c = dial(&ctx.endpoint, ctx.clock).await.map_err(|e| {
                    Fail::Connect(format!("cannot connect to {}: {e}", ctx.endpoint.base_url))
                })?;
                meta.connect_ms = Some((ctx.clock.now_ns() - t) as f64 / 1e6);
                (c, false)
            }
        };
        if conn.sender.ready().await.is_err() {
            if reused && tries < 3 {
                meta.redials += 1;
                continue;
            }
            return Err(Fail::Transport(
                "connection closed before the request was sent".into(),
            ));
        }
        let mut req = http::Request::builder()
            .method(http::Method::POST)
            .uri(path.as_str())
            .header(HOST, ctx.endpoint.authority.as_str())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(k) = &ctx.api_key {
            req = req.header(AUTHORIZATION, format!("Bearer {k}"));
        }
        let req = req
            .body(Full::new(body.clone()))
            .expect("valid request parts");
        let ix_t0_before_connect = ctx.compat == Compat::InferenceX && !reused;
        if !ix_t0_before_connect {
            meta.t0 = Some(ctx.clock.now_ns());
        }
        conn.uses += 1;
        conn.stamps.arm();
        let resp = match conn.sender.send_request(req).await {
            Ok(r) => r,
            Err(e) if reused && tries < 3 => {
                // the server closed this idle keep-alive connection: re-dial, not a failure
                tracing::debug!("re-dialling after error on reused connection: {e}");
                meta.redials += 1;
                continue;
            }
            Err(e) => return Err(Fail::Transport(format!("request failed: {e}"))),
        };
        if !ix_t0_before_connect {
            // t0 = when the socket accepted the request's first bytes (not when our task
            // queued it for the connection task)
            if let Some(w) = conn.stamps.written() {
                meta.t0 = Some(w.max(meta.t0.unwrap_or(0)));
            }
        }
        let status = resp.status();
        meta.status = Some(status.as_u16());
        let keep = !resp
            .headers()
            .get(CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        let ok_status = match ctx.compat {
            Compat::Servebench => status.is_success(),
            Compat::InferenceX => status == http::StatusCode::OK,
        };
        let mut body = resp.into_body();
        if !ok_status {
            let mut buf = Vec::new();
            while let Some(fr) = body.frame().await {
                match fr {
                    Ok(f) => {
                        if let Ok(d) = f.into_data() {
                            let room = MAX_ERROR_BODY.saturating_sub(buf.len());
                            buf.extend_from_slice(&d[..d.len().min(room)]);
                        }
                    }
                    Err(_) => break,
                }
            }
            meta.end = Some(ctx.clock.now_ns());
            if keep && !ctx.new_connection_per_request {
                *slot = Some(conn);
            }
            let text = String::from_utf8_lossy(&buf).trim().to_string();
            return Err(Fail::Http(status.as_u16(), text));
        }
        loop {
            match body.frame().await {
                None => break,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        // arrival clock: the socket read that delivered these bytes (stamped in
                        // the connection's I/O), never later than now; before any parsing
                        let now = ctx.clock.now_ns();
                        let r = conn.stamps.last_read();
                        let t = if r == 0 { now } else { r.min(now) };
                        framer.feed(&data, &mut |item| st.on_item(item, t));
                    }
                }
                Some(Err(e)) => {
                    meta.transport_error = Some(format!("stream interrupted: {e}"));
                    break;
                }
            }
        }
        let t_end = ctx.clock.now_ns();
        framer.finish(&mut |item| st.on_item(item, t_end));
        meta.end = Some(t_end);
        if keep && !ctx.new_connection_per_request && meta.transport_error.is_none() {
            *slot = Some(conn);
        }
        return Ok(());
    }
}

/// Sends one request and measures it. Never returns an error: every failure is a record with a
/// `failure` category. `slot` is the lane's connection (taken, and put back when reusable).
pub async fn execute(
    ctx: &ClientCtx,
    slot: &mut Option<Conn>,
    spec: &RequestSpec,
    phase: Phase,
    scheduled_ns: u64,
    cancel: &mut Cancel,
) -> RequestRecord {
    let body = ctx.builder.body(spec);
    let mut st = StreamState::new(ctx.builder.api, ctx.compat, ctx.capture_text);
    let mut framer = SseFramer::new();
    let mut meta = Meta::default();
    let result = {
        let fut = attempt(ctx, slot, &body, &mut st, &mut framer, &mut meta);
        tokio::select! {
            r = tokio::time::timeout(ctx.timeout, fut) => r.unwrap_or(Err(Fail::Timeout)),
            _ = cancel.wait() => Err(Fail::Cancelled),
        }
    };
    let now = ctx.clock.now_ns();
    let t0 = meta.t0.unwrap_or(now);
    let end = meta.end.unwrap_or(now);
    let out = st.outcome(t0, meta.transport_error.as_deref());
    let (mut success, mut failure, mut error) =
        (out.success, out.failure.clone(), out.error.clone());
    match result {
        Ok(()) => {}
        Err(f) => {
            success = false;
            let (cat, msg) = match f {
                Fail::Connect(m) => ("connect".to_string(), m),
                Fail::Transport(m) => ("disconnected".to_string(), m),
                Fail::Http(code, body) => (format!("http_{code}"), body),
                Fail::Timeout => (
                    "timeout".to_string(),
                    format!("no complete response within {:?}", ctx.timeout),
                ),
                Fail::Cancelled => ("cancelled".to_string(), "cancelled (Ctrl-C)".to_string()),
            };
            failure = Some(cat);
            error = Some(truncate(&msg, 2000));
        }
    }
    let mut warnings = out.warnings;
    let requested = spec.max_tokens;
    if success && out.output_source == crate::stream::OutputSource::Usage {
        if out.output_tokens > u64::from(requested) {
            warnings.push("output_tokens_exceed_cap".into());
        } else if out.output_tokens != u64::from(requested) {
            // with ignore_eos the server must produce exactly the cap (B12); without it a
            // shorter answer may be a natural stop, or a cap field the server ignored
            warnings.push(if ctx.builder.sends_ignore_eos() {
                "output_tokens_mismatch".into()
            } else {
                "output_tokens_below_request".into()
            });
        }
    }
    if let (Some(c), Some(s)) = (spec.prompt_tokens, out.prompt_tokens_server) {
        if c > 0 && (s as f64 - f64::from(c)).abs() / f64::from(c) > 0.05 {
            warnings.push("isl_mismatch".into());
        }
    }
    let tpot_ms = match (out.ttft_ms, out.e2el_ms) {
        (Some(a), Some(b)) if out.output_tokens > 1 => {
            Some((b - a) / (out.output_tokens - 1) as f64)
        }
        _ => None,
    };
    RequestRecord {
        id: spec.id,
        phase,
        session: spec.session,
        response_id: st.response_id.take(),
        scheduled_ns,
        t0_ns: t0,
        end_ns: end,
        queue_ms: t0.saturating_sub(scheduled_ns) as f64 / 1e6,
        connect_ms: meta.connect_ms,
        redials: meta.redials,
        ttft_ms: out.ttft_ms,
        ttfo_ms: out.ttfo_ms,
        e2el_ms: out.e2el_ms,
        tpot_ms,
        itl_ms: out
            .itl_ns
            .iter()
            .map(|&g| (g as f64 / 1e6) as f32)
            .collect(),
        tokens_per_chunk: out.tokens_per_chunk,
        token_events: out.token_events,
        output_tokens: out.output_tokens,
        output_tokens_source: out.output_source,
        prompt_tokens_client: spec.prompt_tokens,
        prompt_tokens_server: out.prompt_tokens_server,
        requested_output_tokens: requested,
        http_status: meta.status,
        success,
        failure,
        error,
        warnings,
        text: st.text.take(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Result of a one-off GET/POST helper request.
#[derive(Debug)]
pub struct SimpleResponse {
    /// HTTP status.
    pub status: u16,
    /// Whole body (bounded to 16 MiB).
    pub body: Bytes,
}

/// One request on a fresh connection (readiness checks, `/tokenize`, preflight helpers).
pub async fn simple_request(
    ep: &Endpoint,
    method: http::Method,
    path: &str,
    json_body: Option<Vec<u8>>,
    timeout: Duration,
) -> anyhow::Result<SimpleResponse> {
    let fut = async {
        let mut c = dial(ep, Clock::start())
            .await
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", ep.base_url))?;
        let mut b = http::Request::builder()
            .method(method)
            .uri(ep.path(path))
            .header(HOST, ep.authority.as_str());
        if json_body.is_some() {
            b = b.header(CONTENT_TYPE, "application/json");
        }
        let req = b.body(Full::new(Bytes::from(json_body.unwrap_or_default())))?;
        c.sender.ready().await?;
        let resp = c.sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let body = http_body_util::Limited::new(resp.into_body(), 16 << 20)
            .collect()
            .await
            .map_err(|e| anyhow::anyhow!("reading response of {path}: {e}"))?
            .to_bytes();
        Ok::<_, anyhow::Error>(SimpleResponse { status, body })
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| anyhow::anyhow!("{}{path}: no response within {timeout:?}", ep.base_url))?
}

/// Waits until `GET /health` or `GET /v1/models` answers 200, polling every 500 ms, for at most
/// `max_wait`. Errors with one line naming the URL and the last problem seen.
pub async fn wait_ready(ep: &Endpoint, max_wait: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut last = String::from("no answer");
    loop {
        for p in ["/health", "/v1/models"] {
            match simple_request(ep, http::Method::GET, p, None, Duration::from_secs(5)).await {
                Ok(r) if r.status == 200 => return Ok(()),
                Ok(r) => last = format!("{p} answered HTTP {}", r.status),
                Err(e) => last = format!("{e:#}"),
            }
        }
        if start.elapsed() >= max_wait {
            anyhow::bail!(
                "endpoint {} is not ready after {:.0} s (checked /health and /v1/models): {last}",
                ep.base_url,
                max_wait.as_secs_f64()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
