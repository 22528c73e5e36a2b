//! HTTP/1.1 transport (our own, over `tokio::net::TcpStream`, or TLS over it with
//! `tokio-rustls` for `https://`; heads parsed with `httparse`) and one measured request.
//!
//! TLS wraps the same transport: a connection's socket is a [`Stream`], plain TCP or a TLS
//! session over TCP, and every read, write and stamp below is the same for both (the per-chunk
//! path adds one `match` per read, no allocation). The TLS handshake happens in [`dial`], so
//! `connect_ms` includes it; the root store and `--ca-cert` are the caller's
//! (`servebench-endpoint` builds the `rustls::ClientConfig`; this module only uses it).
//!
//! One request in flight per connection, which is all the driver needs: the request head and
//! JSON body are serialised into one reusable per-connection buffer and written (a body given as
//! shared chunks, [`execute_chunks`], is written after the head with vectored writes and never
//! copied into that buffer); t0 is read just before the write syscall that accepts the first
//! bytes; every read is stamped right after it returns and its bytes go (after
//! `Content-Length`/chunked decoding) to the [`SseFramer`] with that stamp. One fixed 8 KiB read
//! buffer per connection ([`READ_BUF_SIZE`]).
//!
//! Each lane owns at most one connection ([`Conn`]). A keep-alive connection the server closed
//! while idle (llama.cpp closes after every streamed response although it answers with
//! keep-alive headers) is re-dialled: before sending, a closed sender is replaced; and when a
//! request on a *reused* connection fails before any response arrived, it is re-sent on a fresh
//! connection (at most twice), with `t0` taken again — counted in `redials`, never as a failure.
//!
//! Virtual clock (issue 29): an endpoint may carry a [`MemoryDial`] instead of an address; its
//! connections are in-memory pipes ([`Stream::Memory`], `tokio::io::duplex`) to a server in the
//! same process (the embedded simulator), and every clock read goes through
//! `tokio::time::Instant`, which is the OS monotonic clock except on a runtime whose clock is
//! paused. Everything else (heads, bodies, chunked decoding, SSE framing, stamps) is the same
//! code for all three transports.

use std::time::{Duration, Instant};

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::error::{ClientError, UrlProblem};
use crate::profile::BodyBuilder;
use crate::record::{Phase, RequestRecord};
use crate::sse::SseFramer;
use crate::stream::{Compat, StreamState};
use servebench_contracts::FailureKind;
use servebench_workload::RequestSpec;

pub use http::Method;
/// Now on the run's clock: `tokio::time::Instant::now()` as a `std` instant — the OS monotonic
/// clock, or the paused (virtual) clock of the runtime this is called on (tokio's `test-util`
/// clock; it reads the OS clock directly until some runtime of the process paused its clock).
#[inline]
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Monotonic run clock: ns since its origin. Reads [`now`], so on a runtime with a paused
/// clock (`--sim-clock virtual`) it is that virtual clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self { origin: now() }
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
        now().saturating_duration_since(self.origin).as_nanos() as u64
    }
    /// ns since the origin of `t`.
    pub fn ns_of(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }
}

/// URL scheme of an [`Endpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP/1.1 over TCP (default port 80).
    Http,
    /// HTTP/1.1 over TLS over TCP (default port 443).
    Https,
}

/// TLS client settings for `https://` endpoints: a shared `rustls` client configuration (root
/// certificates, protocol versions). Built by `servebench-endpoint`; cloning shares it.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<rustls::ClientConfig>,
}

impl TlsClient {
    /// Wraps a `rustls` client configuration.
    pub fn new(config: Arc<rustls::ClientConfig>) -> Self {
        Self { config }
    }
    /// The `rustls` client configuration.
    pub fn config(&self) -> &Arc<rustls::ClientConfig> {
        &self.config
    }
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsClient")
    }
}

impl PartialEq for TlsClient {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config)
    }
}

impl Eq for TlsClient {}

/// A parsed `http://host:port[/prefix]` or `https://host:port[/prefix]` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Normalised base URL without trailing slash, as given (for messages).
    pub base_url: String,
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or IP.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// `host:port` for the Host header.
    pub authority: String,
    /// Path prefix before `/v1/...` (empty, or e.g. `/proxy`); a trailing `/v1` is dropped.
    pub prefix: String,
    /// TLS settings, needed to dial an `https` endpoint (see [`Endpoint::with_tls`]).
    pub tls: Option<TlsClient>,
    /// API key sent as `Authorization: Bearer …` on every request made through this endpoint
    /// ([`simple_request`]: readiness, model discovery, `/tokenize` calibration, preflight
    /// helpers; and measured requests unless [`ClientCtx::api_key`] is set).
    pub api_key: Option<String>,
    /// In-memory transport (the embedded simulator on the virtual clock): connections are
    /// opened with it instead of dialling `host:port` ([`Endpoint::with_memory`]).
    pub memory: Option<MemoryDial>,
}

/// Opens an in-memory connection to a server in this process: the client's end of a
/// `tokio::io::duplex` pipe whose other end the server serves (the simulator's
/// `SimServer::connect_memory`). Cloning shares it; two are equal when they are the same one.
#[derive(Clone)]
pub struct MemoryDial(Arc<dyn Fn() -> std::io::Result<tokio::io::DuplexStream> + Send + Sync>);

impl MemoryDial {
    /// Wraps the function that opens one connection.
    pub fn new(
        open: impl Fn() -> std::io::Result<tokio::io::DuplexStream> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(open))
    }
    /// Opens one connection. Errors: the server's (e.g. it is shutting down).
    pub fn open(&self) -> std::io::Result<tokio::io::DuplexStream> {
        (self.0)()
    }
}

impl std::fmt::Debug for MemoryDial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryDial")
    }
}

impl PartialEq for MemoryDial {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MemoryDial {}

impl Endpoint {
    /// Parses a base URL (`http://` or `https://`). An `https` endpoint also needs
    /// [`Endpoint::with_tls`] before it can be dialled.
    ///
    /// Errors: [`ClientError::Url`] naming the URL and what is wrong with it.
    pub fn parse(url: &str) -> Result<Self, ClientError> {
        let bad = |problem| ClientError::Url {
            url: url.to_string(),
            problem,
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(UrlProblem::Invalid(e.to_string())))?;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => Scheme::Http,
            Some(s) if s.eq_ignore_ascii_case("https") => Scheme::Https,
            Some(other) => return Err(bad(UrlProblem::Scheme(other.to_string()))),
            None => return Err(bad(UrlProblem::NoScheme)),
        };
        let host = uri
            .host()
            .ok_or_else(|| bad(UrlProblem::NoHost))?
            .to_string();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
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
            scheme,
            host,
            port,
            authority,
            prefix,
            tls: None,
            api_key: None,
            memory: None,
        })
    }

    /// The same endpoint reached over an in-memory transport: every connection is
    /// `dial.open()` instead of a TCP connect (the URL still names the Host header and paths).
    pub fn with_memory(mut self, dial: MemoryDial) -> Self {
        self.memory = Some(dial);
        self
    }

    /// The same endpoint with TLS settings (used when the scheme is `https`).
    pub fn with_tls(mut self, tls: TlsClient) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The same endpoint sending `api_key` (`None` or empty: no `Authorization` header).
    pub fn with_api_key(mut self, api_key: Option<String>) -> Self {
        self.api_key = api_key.filter(|k| !k.is_empty());
        self
    }

    /// Full path for an API path such as `/v1/completions`.
    pub fn path(&self, p: &str) -> String {
        format!("{}{}", self.prefix, p)
    }
}

/// A connection's socket: plain TCP, a TLS session over TCP (boxed: the session state is a
/// few KB, and the plain variant should stay one pointer wide), or an in-memory pipe to a
/// server in this process ([`MemoryDial`]). Reads and writes go straight to the inner stream.
pub enum Stream {
    /// `http://`.
    Tcp(TcpStream),
    /// `https://`.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// An endpoint with [`Endpoint::memory`] (the embedded simulator on the virtual clock).
    Memory(tokio::io::DuplexStream),
}

impl AsyncRead for Stream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
            Stream::Memory(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
            Stream::Memory(s) => Pin::new(s).poll_write(cx, buf),
        }
    }
    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write_vectored(cx, bufs),
            Stream::Memory(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
            Stream::Memory(s) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
            Stream::Memory(s) => Pin::new(s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
            Stream::Memory(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Bytes read from the socket at a time, per connection (one fixed buffer, never grown).
///
/// The response head must fit in it (8 KiB; engines send a few hundred bytes). SSE events and
/// lines longer than this are still whole: the [`SseFramer`] accumulates partial lines across
/// reads (case B07, 200 KB lines). hyper's adaptive buffer grew to ~400 KB per connection on fast
/// streams (docs/benchmarks-client.md, Findings 1), which is why it is fixed here.
pub const READ_BUF_SIZE: usize = 8 * 1024;

/// Most header lines accepted in a response head.
const MAX_HEADERS: usize = 64;

/// Most slices per vectored write of a chunked body ([`execute_chunks`]); Linux's `IOV_MAX`
/// is 1,024.
const MAX_IOV: usize = 64;

/// A request body: one buffer, or shared chunks sent back to back ([`execute_chunks`]).
#[derive(Clone, Copy)]
enum BodyRef<'a> {
    One(&'a [u8]),
    Chunks(&'a [Bytes]),
}

/// One HTTP/1.1 connection with at most one request in flight (all the driver needs).
///
/// Per connection: the socket, one [`READ_BUF_SIZE`] read buffer and one write buffer that is
/// reused for every request (sized to the largest request head + body sent on it). No task and
/// no channel per connection: the request's own future reads and writes the socket, so a
/// connection costs ~10 KB instead of hyper's ~30 KB (docs/benchmarks-client.md, Update 2).
pub struct Conn {
    io: Stream,
    rbuf: Box<[u8]>,
    wbuf: Vec<u8>,
    uses: u32,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Conn(uses={})", self.uses)
    }
}

impl Conn {
    /// Whether the connection is known closed (or unusable): the server closed it (EOF or a
    /// reset is pending on the idle socket), or it sent bytes nobody asked for. (A connection
    /// whose exchange did not end cleanly is never put back in the first place.) A close that has not reached us yet is found when
    /// the next request on it fails before any response byte, and that request is re-sent on
    /// a fresh connection.
    ///
    /// Plain TCP: a non-blocking `try_read` of one byte. TLS: one poll of the TLS reader with a
    /// no-op waker (TLS 1.3 session tickets that arrived while idle are consumed there and are
    /// not "bytes nobody asked for"; a `close_notify` reads as EOF).
    pub fn is_closed(&mut self) -> bool {
        let mut probe = [0u8; 1];
        match &mut self.io {
            Stream::Tcp(s) => match s.try_read(&mut probe) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
                // EOF, unsolicited bytes, or a socket error
                _ => true,
            },
            Stream::Tls(s) => {
                let mut buf = ReadBuf::new(&mut probe);
                let mut cx = Context::from_waker(std::task::Waker::noop());
                // Pending = nothing to read: open. EOF, unsolicited bytes, or an error: closed.
                !matches!(
                    Pin::new(&mut **s).poll_read(&mut cx, &mut buf),
                    Poll::Pending
                )
            }
            Stream::Memory(s) => {
                let mut buf = ReadBuf::new(&mut probe);
                let mut cx = Context::from_waker(std::task::Waker::noop());
                !matches!(Pin::new(s).poll_read(&mut cx, &mut buf), Poll::Pending)
            }
        }
    }

    /// Writes `self.wbuf` whole. Returns the run-clock time read just before the write syscall
    /// that accepted the first bytes (MEASUREMENT.md Part 1 t0): the clock is read *before* the
    /// syscall so a preemption between the syscall and the clock read can never move t0 later
    /// than the bytes really left (which would shorten TTFT).
    async fn write_request(&mut self, clock: Clock) -> std::io::Result<u64> {
        let mut off = 0;
        let mut t0 = None;
        while off < self.wbuf.len() {
            let (io, buf) = (&mut self.io, &self.wbuf[off..]);
            let n = std::future::poll_fn(|cx| {
                let t = clock.now_ns().max(1);
                match std::pin::Pin::new(&mut *io).poll_write(cx, buf) {
                    std::task::Poll::Ready(Ok(n)) => std::task::Poll::Ready(Ok((n, t))),
                    std::task::Poll::Ready(Err(e)) => std::task::Poll::Ready(Err(e)),
                    std::task::Poll::Pending => std::task::Poll::Pending,
                }
            })
            .await
            .map(|(n, t)| {
                if n > 0 && t0.is_none() {
                    t0 = Some(t);
                }
                n
            })?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            off += n;
        }
        if let Stream::Tls(_) = self.io {
            // TLS may hold the last record in its buffer until flushed (no-op for plain TCP)
            self.io.flush().await?;
        }
        Ok(t0.unwrap_or_else(|| clock.now_ns().max(1)))
    }

    /// Writes `self.wbuf` (the request head) and then `chunks` back to back, with vectored
    /// writes (up to [`MAX_IOV`] slices per syscall), without joining them into one buffer: a
    /// body of shared chunks (the AgentX replay's history segments) is never copied here. The
    /// returned t0 is stamped as in [`Conn::write_request`] (before the syscall that accepted the
    /// first bytes).
    async fn write_request_chunks(
        &mut self,
        clock: Clock,
        chunks: &[Bytes],
    ) -> std::io::Result<u64> {
        let parts = 1 + chunks.len();
        let (io, head) = (&mut self.io, &self.wbuf);
        let part = |i: usize| -> &[u8] {
            if i == 0 {
                head
            } else {
                &chunks[i - 1]
            }
        };
        let (mut idx, mut off) = (0usize, 0usize);
        let mut t0 = None;
        let mut slices: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(MAX_IOV.min(parts));
        loop {
            while idx < parts && off >= part(idx).len() {
                idx += 1;
                off = 0;
            }
            if idx == parts {
                break;
            }
            slices.clear();
            slices.push(std::io::IoSlice::new(&part(idx)[off..]));
            slices.extend(
                (idx + 1..parts)
                    .map(part)
                    .filter(|p| !p.is_empty())
                    .take(MAX_IOV - 1)
                    .map(std::io::IoSlice::new),
            );
            let n = std::future::poll_fn(|cx| {
                let t = clock.now_ns().max(1);
                match Pin::new(&mut *io).poll_write_vectored(cx, &slices) {
                    Poll::Ready(Ok(n)) => Poll::Ready(Ok((n, t))),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await
            .map(|(n, t)| {
                if n > 0 && t0.is_none() {
                    t0 = Some(t);
                }
                n
            })?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            // advance (idx, off) by n bytes over the non-empty parts
            let mut left = n;
            while left > 0 && idx < parts {
                let room = part(idx).len() - off;
                if left < room {
                    off += left;
                    left = 0;
                } else {
                    left -= room;
                    idx += 1;
                    off = 0;
                }
            }
        }
        if let Stream::Tls(_) = self.io {
            self.io.flush().await?;
        }
        Ok(t0.unwrap_or_else(|| clock.now_ns().max(1)))
    }

    /// One read into `rbuf[from..]`; returns the byte count (0 = EOF) and the run-clock time
    /// taken right after the read returned (the arrival time of these bytes).
    async fn read_at(&mut self, from: usize, clock: Clock) -> std::io::Result<(usize, u64)> {
        let n = self.io.read(&mut self.rbuf[from..]).await?;
        Ok((n, clock.now_ns().max(1)))
    }

    /// Reads and parses the response head (skipping interim 1xx answers). Returns the head, and
    /// the body bytes already read as `rbuf[start..end]` with their arrival time.
    /// `Err(RecvError::Closed)` = the connection ended before any response byte.
    async fn read_head(&mut self, clock: Clock) -> Result<(Head, usize, usize, u64), RecvError> {
        let mut len = 0;
        let mut any = false;
        loop {
            if len == self.rbuf.len() {
                return Err(RecvError::Other(format!(
                    "response head larger than {READ_BUF_SIZE} bytes"
                )));
            }
            let (n, t) = match self.read_at(len, clock).await {
                Ok(x) => x,
                Err(e) if !any => return Err(RecvError::Closed(e.to_string())),
                Err(e) => return Err(RecvError::Other(format!("reading the response head: {e}"))),
            };
            if n == 0 {
                return Err(if any {
                    RecvError::Other("connection closed inside the response head".into())
                } else {
                    RecvError::Closed("connection closed before any response byte".into())
                });
            }
            any = true;
            len += n;
            loop {
                match parse_head(&self.rbuf[..len]).map_err(RecvError::Other)? {
                    None => break,
                    Some((head, used))
                        if (100..200).contains(&head.status) && head.status != 101 =>
                    {
                        self.rbuf.copy_within(used..len, 0);
                        len -= used;
                    }
                    Some((head, used)) => return Ok((head, used, len, t)),
                }
            }
        }
    }

    /// Reads the body after [`Conn::read_head`], calling `on(bytes, arrival_ns)` for every piece
    /// of decoded body, in order. Returns whether the connection may carry another request.
    async fn read_body<F: FnMut(&[u8], u64)>(
        &mut self,
        head: &Head,
        (start, end, t): (usize, usize, u64),
        clock: Clock,
        on: &mut F,
    ) -> Result<bool, String> {
        let mut dec = BodyDecoder::new(head.framing);
        let (mut start, mut end, mut t) = (start, end, t);
        loop {
            let used = dec
                .feed(&self.rbuf[start..end], &mut |d| on(d, t))
                .map_err(|e| format!("invalid response body: {e}"))?;
            if dec.is_done() {
                // bytes after the end of the body: nothing was asked for, do not reuse
                return Ok(head.keep_alive && start + used == end);
            }
            let (n, tr) = self
                .read_at(0, clock)
                .await
                .map_err(|e| format!("connection error: {e}"))?;
            if n == 0 {
                return if dec.finish_at_eof() {
                    Ok(false)
                } else {
                    Err("connection closed before the response body ended".into())
                };
            }
            (start, end, t) = (0, n, tr);
        }
    }
}

/// How a [`Conn::read_head`] failed.
#[derive(Debug)]
enum RecvError {
    /// Nothing at all was received: on a reused connection this is the server's idle close.
    Closed(String),
    /// Anything else.
    Other(String),
}

/// How the response body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    UntilEof,
}

/// The parts of a response head the client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// HTTP status code.
    pub status: u16,
    /// Body framing.
    pub framing: Framing,
    /// Whether the server lets the connection carry another request (HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`; never when the body
    /// ends at EOF).
    pub keep_alive: bool,
}

/// Parses a response head with `httparse`. `Ok(None)` = incomplete; `Ok(Some((head, n)))` = the
/// head is the first `n` bytes. Errors are one line naming what is wrong.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let n = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("invalid HTTP response head: {e}")),
    };
    let status = resp.code.unwrap_or(0);
    let http11 = resp.version == Some(1);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut has_te = false;
    let mut close = !http11;
    for h in resp.headers.iter() {
        let v = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let l: u64 = v
                .parse()
                .map_err(|_| format!("invalid Content-Length `{v}` in the response"))?;
            if length.is_some_and(|o| o != l) {
                return Err("conflicting Content-Length headers in the response".into());
            }
            length = Some(l);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            has_te = true;
            // chunked must be the last coding; an earlier header's value is overridden
            chunked = v
                .rsplit(',')
                .next()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for tok in v.split(',').map(str::trim) {
                if tok.eq_ignore_ascii_case("close") {
                    close = true;
                } else if tok.eq_ignore_ascii_case("keep-alive") && !http11 {
                    close = false;
                }
            }
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if has_te {
        // Transfer-Encoding overrides Content-Length; not chunked = delimited by close
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilEof
        }
    } else if let Some(l) = length {
        Framing::Length(l)
    } else {
        Framing::UntilEof
    };
    let keep_alive = !close && framing != Framing::UntilEof;
    Ok(Some((
        Head {
            status,
            framing,
            keep_alive,
        },
        n,
    )))
}

/// Incremental body decoder: bytes in (split anywhere), decoded body bytes out.
#[derive(Debug, Clone)]
pub(crate) struct BodyDecoder {
    state: DecState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecState {
    /// `Content-Length` bytes left.
    Length(u64),
    /// Until EOF.
    UntilEof,
    /// Chunk-size line: the value so far and the hex digits seen.
    Size(u64, u8),
    /// Chunk extension (or whitespace) after the size: skipped up to LF.
    Ext(u64),
    /// CR seen at the end of the size line.
    SizeLf(u64),
    /// Chunk data bytes left.
    Data(u64),
    /// After chunk data: expecting CRLF (or a bare LF).
    DataEnd,
    /// After chunk data and CR: expecting LF.
    DataEndLf,
    /// Trailer section, at the start of a line.
    TrailerLineStart,
    /// Inside a trailer field line: skipped up to LF.
    TrailerLine,
    /// CR at the start of a trailer line: expecting the final LF.
    TrailerEndLf,
    /// The body is complete.
    Done,
}

impl BodyDecoder {
    /// A decoder for `framing`.
    pub(crate) fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => DecState::Done,
            Framing::Length(n) => DecState::Length(n),
            Framing::Chunked => DecState::Size(0, 0),
            Framing::UntilEof => DecState::UntilEof,
        };
        Self { state }
    }

    /// Whether the body is complete (bytes after it are not part of it).
    pub(crate) fn is_done(&self) -> bool {
        self.state == DecState::Done
    }

    /// At EOF: whether the body ended correctly (true only for a body delimited by the close,
    /// or one that was already complete).
    pub(crate) fn finish_at_eof(&mut self) -> bool {
        match self.state {
            DecState::UntilEof | DecState::Done => {
                self.state = DecState::Done;
                true
            }
            _ => false,
        }
    }

    /// Decodes `input`, calling `out` with every run of body bytes. Returns how many input
    /// bytes were used (less than `input.len()` only when the body ended inside it).
    /// Errors name the malformed part (chunk size, missing CRLF).
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        out: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, String> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                DecState::Done => return Ok(i),
                DecState::UntilEof => {
                    out(&input[i..]);
                    return Ok(input.len());
                }
                DecState::Length(left) | DecState::Data(left) => {
                    let take = (input.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                    if take > 0 {
                        out(&input[i..i + take]);
                    }
                    i += take;
                    let left = left - take as u64;
                    self.state = match (self.state, left) {
                        (DecState::Length(_), 0) => DecState::Done,
                        (DecState::Length(_), l) => DecState::Length(l),
                        (_, 0) => DecState::DataEnd,
                        (_, l) => DecState::Data(l),
                    };
                }
                DecState::Size(v, digits) => {
                    let b = input[i];
                    i += 1;
                    self.state = match b {
                        b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                            let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                            if digits >= 15 {
                                return Err("chunk size too large".into());
                            }
                            DecState::Size(v * 16 + d, digits + 1)
                        }
                        _ if digits == 0 => {
                            return Err(format!("chunk size expected, got byte 0x{b:02x}"))
                        }
                        b';' | b' ' | b'\t' => DecState::Ext(v),
                        b'\r' => DecState::SizeLf(v),
                        b'\n' => Self::after_size(v),
                        _ => return Err(format!("invalid byte 0x{b:02x} in a chunk size")),
                    };
                }
                DecState::Ext(v) => match memchr::memchr(b'\n', &input[i..]) {
                    Some(p) => {
                        i += p + 1;
                        self.state = Self::after_size(v);
                    }
                    None => i = input.len(),
                },
                DecState::SizeLf(v) => {
                    if input[i] != b'\n' {
                        return Err("chunk size line: CR not followed by LF".into());
                    }
                    i += 1;
                    self.state = Self::after_size(v);
                }
                DecState::DataEnd => {
                    self.state = match input[i] {
                        b'\r' => DecState::DataEndLf,
                        b'\n' => DecState::Size(0, 0),
                        b => return Err(format!("CRLF expected after chunk data, got 0x{b:02x}")),
                    };
                    i += 1;
                }
                DecState::DataEndLf => {
                    if input[i] != b'\n' {
                        return Err("chunk data: CR not followed by LF".into());
                    }
                    i += 1;
                    self.state = DecState::Size(0, 0);
                }
                DecState::TrailerLineStart => {
                    self.state = match input[i] {
                        b'\r' => DecState::TrailerEndLf,
                        b'\n' => DecState::Done,
                        _ => DecState::TrailerLine,
                    };
                    i += 1;
                }
                DecState::TrailerLine => match memchr::memchr(b'\n', &input[i..]) {
                    Some(p) => {
                        i += p + 1;
                        self.state = DecState::TrailerLineStart;
                    }
                    None => i = input.len(),
                },
                DecState::TrailerEndLf => {
                    if input[i] != b'\n' {
                        return Err("end of trailers: CR not followed by LF".into());
                    }
                    i += 1;
                    self.state = DecState::Done;
                }
            }
        }
        Ok(i)
    }

    fn after_size(v: u64) -> DecState {
        if v == 0 {
            DecState::TrailerLineStart
        } else {
            DecState::Data(v)
        }
    }
}

/// Serialises a request (head + body) into `out` (cleared first).
fn write_head(
    out: &mut Vec<u8>,
    method: &str,
    path: &str,
    authority: &str,
    extra: &[(&str, &str)],
    body: Option<&[u8]>,
) {
    out.clear();
    let blen = body.map_or(0, <[u8]>::len);
    out.reserve(256 + path.len() + blen);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(if path.is_empty() {
        b"/"
    } else {
        path.as_bytes()
    });
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (k, v) in extra {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(b) = body {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(blen.to_string().as_bytes());
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(b);
    } else {
        out.extend_from_slice(b"\r\n");
    }
}

/// Opens a connection (TCP_NODELAY) with its read buffer; for an `https` endpoint also the TLS
/// handshake (server name = the URL's host; SNI is not sent for an IP address). `_clock` is
/// kept for the API (the request future stamps its own reads and writes).
///
/// Errors: the socket's `io::Error`; a TLS failure is an `io::Error` whose text says which
/// step failed (`TLS handshake failed: …`).
pub async fn dial(ep: &Endpoint, _clock: Clock) -> std::io::Result<Conn> {
    connect(ep).await.map_err(|e| e.into_io(&ep.host))
}

/// How [`connect`] failed: the TCP part or one TLS step. [`dial`] turns it into the
/// `io::Error` it always returned, [`simple_request`] into a [`ClientError`] variant.
enum DialError {
    /// Connecting the socket or setting `TCP_NODELAY`.
    Tcp(std::io::Error),
    /// `https` endpoint without [`Endpoint::with_tls`].
    TlsNotConfigured,
    /// The host is not a TLS server name.
    ServerName(rustls::pki_types::InvalidDnsNameError),
    /// The TLS handshake.
    Handshake(std::io::Error),
}

impl DialError {
    /// The error [`dial`] returns (same kind and text as before [`DialError`] existed).
    fn into_io(self, host: &str) -> std::io::Error {
        match self {
            DialError::Tcp(e) => e,
            DialError::TlsNotConfigured => {
                std::io::Error::other("https endpoint without TLS settings (Endpoint::with_tls)")
            }
            DialError::ServerName(e) => {
                std::io::Error::other(format!("`{host}` is not a TLS server name: {e}"))
            }
            DialError::Handshake(e) => {
                std::io::Error::new(e.kind(), format!("TLS handshake failed: {e}"))
            }
        }
    }

    /// The error of a one-off request to `ep` that could not connect.
    fn into_client(self, ep: &Endpoint) -> ClientError {
        let url = ep.base_url.clone();
        match self {
            DialError::Tcp(error) => ClientError::Connect { url, error },
            DialError::TlsNotConfigured => ClientError::TlsNotConfigured { url },
            DialError::ServerName(error) => ClientError::TlsServerName {
                url,
                host: ep.host.clone(),
                error,
            },
            DialError::Handshake(error) => ClientError::TlsHandshake { url, error },
        }
    }
}

/// [`dial`] with the failure kind kept.
async fn connect(ep: &Endpoint) -> Result<Conn, DialError> {
    if let Some(m) = &ep.memory {
        return Ok(Conn {
            io: Stream::Memory(m.open().map_err(DialError::Tcp)?),
            rbuf: vec![0u8; READ_BUF_SIZE].into_boxed_slice(),
            wbuf: Vec::new(),
            uses: 0,
        });
    }
    let tcp = TcpStream::connect((ep.host.as_str(), ep.port))
        .await
        .map_err(DialError::Tcp)?;
    tcp.set_nodelay(true).map_err(DialError::Tcp)?;
    let io = match ep.scheme {
        Scheme::Http => Stream::Tcp(tcp),
        Scheme::Https => {
            let tls = ep.tls.as_ref().ok_or(DialError::TlsNotConfigured)?;
            let name = rustls::pki_types::ServerName::try_from(ep.host.clone())
                .map_err(DialError::ServerName)?;
            let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
            let s = connector
                .connect(name, tcp)
                .await
                .map_err(DialError::Handshake)?;
            Stream::Tls(Box::new(s))
        }
    };
    Ok(Conn {
        io,
        rbuf: vec![0u8; READ_BUF_SIZE].into_boxed_slice(),
        wbuf: Vec::new(),
        uses: 0,
    })
}

/// The one cancellation token (Ctrl-C) of sweep, eval and replay: cloning shares it; once
/// [`CancelToken::cancel`] is called every clone reports it and every
/// [`CancelToken::cancelled`] wait completes. `servebench-endpoint` re-exports it and wires
/// Ctrl-C to it.
///
/// A flag and a [`tokio::sync::Notify`]: `notify_waiters` wakes the waiters in the order they
/// started waiting, so on the virtual clock the requests cancelled at one instant finish (and
/// write their records) in the same order every run. (A `watch` channel, used before, spreads
/// its waiters over 8 notifiers chosen at random: the records cancelled at the AgentX grace
/// deadline came out in a different order from run to run.)
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

/// The short name of [`CancelToken`] used by the driver and executors (the same type).
pub type Cancel = CancelToken;

impl CancelToken {
    /// A new token, not cancelled.
    pub fn new() -> Self {
        Self::default()
    }
    /// A token nobody cancels (a fresh one that is not shared).
    pub fn never() -> Self {
        Self::default()
    }
    /// Signals cancellation (idempotent).
    pub fn cancel(&self) {
        use std::sync::atomic::Ordering;
        if !self.inner.cancelled.swap(true, Ordering::SeqCst) {
            self.inner.notify.notify_waiters();
        }
    }
    /// Whether cancellation was signalled.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .cancelled
            .load(std::sync::atomic::Ordering::SeqCst)
    }
    /// Completes once cancelled (at once when it already was).
    pub async fn cancelled(&self) {
        let notified = self.inner.notify.notified();
        tokio::pin!(notified);
        // registered before the flag is read: a cancel between the two still wakes this wait
        notified.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        notified.await;
    }
    /// [`CancelToken::cancelled`] (the name the driver's `select!`s use).
    pub async fn wait(&mut self) {
        self.cancelled().await
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
    /// API key sent as `Authorization: Bearer …` on measured requests; `None` = the
    /// endpoint's own ([`Endpoint::api_key`]), if any.
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
    body: BodyRef<'_>,
    headers: &[(&str, &str)],
    st: &mut StreamState,
    framer: &mut SseFramer,
    meta: &mut Meta,
) -> Result<(), Fail> {
    let path = ctx.endpoint.path(ctx.builder.api.path());
    let bearer = ctx
        .api_key
        .as_ref()
        .or(ctx.endpoint.api_key.as_ref())
        .map(|k| format!("Bearer {k}"));
    let mut tries = 0;
    loop {
        tries += 1;
        let reusable = slot
            .take()
            .and_then(|mut c| (!ctx.new_connection_per_request && !c.is_closed()).then_some(c));
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
        let mut extra: Vec<(&str, &str)> = Vec::with_capacity(3 + headers.len());
        extra.push(("content-type", "application/json"));
        extra.push(("accept", "text/event-stream"));
        if let Some(b) = &bearer {
            extra.push(("authorization", b.as_str()));
        }
        extra.extend_from_slice(headers);
        let chunked_len;
        let (one, chunks) = match body {
            BodyRef::One(b) => (Some(b), None),
            BodyRef::Chunks(c) => {
                // the same `content-length` line write_head writes, last; the chunks follow
                chunked_len = c.iter().map(Bytes::len).sum::<usize>().to_string();
                extra.push(("content-length", chunked_len.as_str()));
                (None, Some(c))
            }
        };
        write_head(
            &mut conn.wbuf,
            "POST",
            &path,
            &ctx.endpoint.authority,
            &extra,
            one,
        );
        let ix_t0_before_connect = ctx.compat == Compat::InferenceX && !reused;
        if !ix_t0_before_connect {
            meta.t0 = Some(ctx.clock.now_ns());
        }
        conn.uses += 1;
        let written = match chunks {
            None => conn.write_request(ctx.clock).await,
            Some(c) => conn.write_request_chunks(ctx.clock, c).await,
        };
        let head = match written {
            Ok(w) => {
                if !ix_t0_before_connect {
                    // t0 = just before the write syscall that accepted the request's first bytes
                    meta.t0 = Some(w.max(meta.t0.unwrap_or(0)));
                }
                conn.read_head(ctx.clock).await
            }
            Err(e) => Err(RecvError::Closed(e.to_string())),
        };
        let (head, start, end, t_head) = match head {
            Ok(h) => h,
            Err(RecvError::Closed(e)) if reused && tries < 3 => {
                // the server closed this idle keep-alive connection: re-dial, not a failure
                tracing::debug!("re-dialling after error on reused connection: {e}");
                meta.redials += 1;
                continue;
            }
            Err(RecvError::Closed(e) | RecvError::Other(e)) => {
                return Err(Fail::Transport(format!("request failed: {e}")))
            }
        };
        meta.status = Some(head.status);
        let ok_status = match ctx.compat {
            Compat::Servebench => (200..300).contains(&head.status),
            Compat::InferenceX => head.status == 200,
        };
        if !ok_status {
            let mut buf = Vec::new();
            let r = conn
                .read_body(&head, (start, end, t_head), ctx.clock, &mut |d, _| {
                    let room = MAX_ERROR_BODY.saturating_sub(buf.len());
                    buf.extend_from_slice(&d[..d.len().min(room)]);
                })
                .await;
            meta.end = Some(ctx.clock.now_ns());
            if r == Ok(true) && !ctx.new_connection_per_request {
                *slot = Some(conn);
            }
            let text = String::from_utf8_lossy(&buf).trim().to_string();
            return Err(Fail::Http(head.status, text));
        }
        // arrival clock: the socket read that delivered these bytes, before any parsing
        let r = conn
            .read_body(&head, (start, end, t_head), ctx.clock, &mut |d, t| {
                framer.feed(d, &mut |item| st.on_item(item, t))
            })
            .await;
        let t_end = ctx.clock.now_ns();
        framer.finish(&mut |item| st.on_item(item, t_end));
        meta.end = Some(t_end);
        match r {
            Ok(true) if !ctx.new_connection_per_request => *slot = Some(conn),
            Ok(_) => {}
            Err(e) => meta.transport_error = Some(format!("stream interrupted: {e}")),
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
    execute_body(ctx, slot, spec, &body, &[], phase, scheduled_ns, cancel).await
}

/// [`execute`] with a body the caller built (a workload that writes its own message array
/// straight into the body, e.g. the AgentX replay) and extra request headers. `spec` supplies
/// the record's id, session, client prompt-token count and requested output tokens; its prompt
/// is not used.
#[allow(clippy::too_many_arguments)]
pub async fn execute_body(
    ctx: &ClientCtx,
    slot: &mut Option<Conn>,
    spec: &RequestSpec,
    body: &Bytes,
    headers: &[(&str, &str)],
    phase: Phase,
    scheduled_ns: u64,
    cancel: &mut Cancel,
) -> RequestRecord {
    let body = BodyRef::One(body);
    execute_with(ctx, slot, spec, body, headers, phase, scheduled_ns, cancel).await
}

/// [`execute_body`] with the body given as chunks that are written back to back (vectored
/// writes, `Content-Length` = the sum of their lengths, the same bytes on the wire as their
/// concatenation) and never joined: a workload whose bodies share large parts (the AgentX
/// replay's conversation history, one `Bytes` per message segment) sends them without a
/// per-request copy, and the connection's write buffer holds only the head.
#[allow(clippy::too_many_arguments)]
pub async fn execute_chunks(
    ctx: &ClientCtx,
    slot: &mut Option<Conn>,
    spec: &RequestSpec,
    chunks: &[Bytes],
    headers: &[(&str, &str)],
    phase: Phase,
    scheduled_ns: u64,
    cancel: &mut Cancel,
) -> RequestRecord {
    let body = BodyRef::Chunks(chunks);
    execute_with(ctx, slot, spec, body, headers, phase, scheduled_ns, cancel).await
}

#[allow(clippy::too_many_arguments)]
async fn execute_with(
    ctx: &ClientCtx,
    slot: &mut Option<Conn>,
    spec: &RequestSpec,
    body: BodyRef<'_>,
    headers: &[(&str, &str)],
    phase: Phase,
    scheduled_ns: u64,
    cancel: &mut Cancel,
) -> RequestRecord {
    let mut st = StreamState::new(ctx.builder.api, ctx.compat, ctx.capture_text);
    let mut framer = SseFramer::new();
    let mut meta = Meta::default();
    let result = {
        let fut = attempt(ctx, slot, body, headers, &mut st, &mut framer, &mut meta);
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
                Fail::Connect(m) => (FailureKind::Connect, m),
                Fail::Transport(m) => (FailureKind::Disconnected, m),
                // an error answer without a body still says what happened (fuzzing found `""`)
                Fail::Http(code, body) if body.is_empty() => (
                    FailureKind::Http(code),
                    format!("HTTP {code} with an empty body"),
                ),
                Fail::Http(code, body) => (FailureKind::Http(code), body),
                Fail::Timeout => (
                    FailureKind::Timeout,
                    format!("no complete response within {:?}", ctx.timeout),
                ),
                Fail::Cancelled => (FailureKind::Cancelled, "cancelled (Ctrl-C)".to_string()),
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
        prompt_tokens_cached: out.prompt_tokens_cached,
        requested_output_tokens: requested,
        http_status: meta.status,
        success,
        failure,
        error,
        warnings,
        phases: out.phases,
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

/// One request on a fresh connection (readiness checks, model discovery, `/tokenize`, preflight
/// helpers), sending the endpoint's API key ([`Endpoint::api_key`]) when it has one.
///
/// Errors: [`ClientError::Connect`] or a `Tls*` variant (no connection),
/// [`ClientError::Send`], [`ClientError::Response`], [`ClientError::BodyTooLarge`] (16 MiB),
/// [`ClientError::Timeout`] (no whole response within `timeout`). Any HTTP status is a response,
/// not an error.
pub async fn simple_request(
    ep: &Endpoint,
    method: http::Method,
    path: &str,
    json_body: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<SimpleResponse, ClientError> {
    const MAX_BODY: usize = 16 << 20;
    let fut = async {
        let clock = Clock::start();
        let mut c = connect(ep).await.map_err(|e| e.into_client(ep))?;
        let full = ep.path(path);
        let bearer = ep.api_key.as_ref().map(|k| format!("Bearer {k}"));
        let mut extra: Vec<(&str, &str)> = Vec::with_capacity(2);
        if json_body.is_some() {
            extra.push(("content-type", "application/json"));
        }
        if let Some(b) = &bearer {
            extra.push(("authorization", b.as_str()));
        }
        let body = match (&json_body, &method) {
            (Some(b), _) => Some(b.as_slice()),
            (None, m) if *m == http::Method::POST || *m == http::Method::PUT => Some(&[][..]),
            (None, _) => None,
        };
        write_head(
            &mut c.wbuf,
            method.as_str(),
            &full,
            &ep.authority,
            &extra,
            body,
        );
        if let Err(error) = c.write_request(clock).await {
            return Err(ClientError::Send {
                method: method.clone(),
                path: full,
                error,
            });
        }
        let response = |reason: String| ClientError::Response {
            path: path.to_string(),
            reason,
        };
        let (head, start, end, t) = c.read_head(clock).await.map_err(|e| match e {
            RecvError::Closed(m) | RecvError::Other(m) => response(m),
        })?;
        let mut buf = Vec::new();
        let mut too_big = false;
        c.read_body(&head, (start, end, t), clock, &mut |d, _| {
            if buf.len() + d.len() > MAX_BODY {
                too_big = true;
            } else {
                buf.extend_from_slice(d);
            }
        })
        .await
        .map_err(response)?;
        if too_big {
            return Err(ClientError::BodyTooLarge {
                path: path.to_string(),
                limit: MAX_BODY,
            });
        }
        Ok(SimpleResponse {
            status: head.status,
            body: Bytes::from(buf),
        })
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| ClientError::Timeout {
            url: format!("{}{path}", ep.base_url),
            timeout,
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_pieces(framing: Framing, pieces: &[&[u8]]) -> Result<(Vec<u8>, bool, usize), String> {
        let mut d = BodyDecoder::new(framing);
        let mut out = Vec::new();
        let mut rest = 0;
        for p in pieces {
            let used = d.feed(p, &mut |b| out.extend_from_slice(b))?;
            rest += p.len() - used;
        }
        Ok((out, d.is_done(), rest))
    }

    /// Every split of `wire` into two reads, and one byte per read, decode to `want`.
    fn check_all_splits(wire: &[u8], want: &[u8]) {
        for cut in 0..=wire.len() {
            let (out, done, rest) =
                decode_pieces(Framing::Chunked, &[&wire[..cut], &wire[cut..]]).unwrap();
            assert_eq!(out, want, "split at {cut}");
            assert!(done, "split at {cut}: not done");
            assert_eq!(rest, 0, "split at {cut}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        let (out, done, _) = decode_pieces(Framing::Chunked, &bytes).unwrap();
        assert_eq!(out, want);
        assert!(done);
    }

    #[test]
    fn chunked_sizes_split_at_every_byte_boundary() {
        let wire = b"5\r\ndata:\r\n1A\r\n abcdefghijklmnopqrstuvwxy\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
        check_all_splits(wire, b"data: abcdefghijklmnopqrstuvwxy0123456789abcdef");
    }

    #[test]
    fn chunked_hex_lower_and_upper_case() {
        let body: Vec<u8> = (0..0xAB).map(|i| b'a' + (i % 26) as u8).collect();
        for size in ["ab", "AB", "aB", "00ab"] {
            let mut wire = format!("{size}\r\n").into_bytes();
            wire.extend_from_slice(&body);
            wire.extend_from_slice(b"\r\n0\r\n\r\n");
            check_all_splits(&wire, &body);
        }
    }

    #[test]
    fn chunked_extensions_and_trailers() {
        let wire = b"4;name=value\r\nabcd\r\n3 ; q=\"x;y\"\r\nefg\r\n0;last\r\nX-Trailer: 1\r\nServer-Timing: a;dur=2\r\n\r\n";
        check_all_splits(wire, b"abcdefg");
        // bare LF line ends are tolerated
        check_all_splits(b"2\nhi\n0\n\n", b"hi");
    }

    #[test]
    fn chunked_stops_at_the_end_and_reports_leftover() {
        let (out, done, rest) =
            decode_pieces(Framing::Chunked, &[b"1\r\nx\r\n0\r\n\r\nHTTP/1.1"]).unwrap();
        assert_eq!(out, b"x");
        assert!(done);
        assert_eq!(rest, 8);
    }

    #[test]
    fn chunked_errors_name_the_problem() {
        let e = decode_pieces(Framing::Chunked, &[b"zz\r\n"]).unwrap_err();
        assert!(e.contains("chunk size expected"), "{e}");
        let e = decode_pieces(Framing::Chunked, &[b"2\r\nabX"]).unwrap_err();
        assert!(e.contains("CRLF expected after chunk data"), "{e}");
        let e = decode_pieces(Framing::Chunked, &[b"ffffffffffffffff0\r\n"]).unwrap_err();
        assert!(e.contains("too large"), "{e}");
        // EOF in the middle of a chunked body is an error, at the end of a close-delimited one not
        let mut d = BodyDecoder::new(Framing::Chunked);
        d.feed(b"5\r\nab", &mut |_| {}).unwrap();
        assert!(!d.finish_at_eof());
        let mut d = BodyDecoder::new(Framing::UntilEof);
        let mut got = Vec::new();
        d.feed(b"abc", &mut |b| got.extend_from_slice(b)).unwrap();
        assert!(d.finish_at_eof());
        assert_eq!(got, b"abc");
    }

    #[test]
    fn content_length_body_split_anywhere() {
        let wire = b"hello world!tail";
        for cut in 0..=wire.len() {
            let (out, done, rest) =
                decode_pieces(Framing::Length(12), &[&wire[..cut], &wire[cut..]]).unwrap();
            assert_eq!(out, b"hello world!");
            assert!(done);
            assert_eq!(rest, 4);
        }
        assert!(BodyDecoder::new(Framing::Length(0)).is_done());
        let mut d = BodyDecoder::new(Framing::Length(3));
        d.feed(b"ab", &mut |_| {}).unwrap();
        assert!(!d.finish_at_eof(), "short Content-Length body");
    }

    #[test]
    fn head_parser_framing_and_keep_alive() {
        let h = |s: &str| parse_head(s.as_bytes()).unwrap().unwrap();
        let (hd, n) = h("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n5\r\n");
        assert_eq!(
            hd,
            Head {
                status: 200,
                framing: Framing::Chunked,
                keep_alive: true
            }
        );
        assert_eq!(
            n, 104,
            "the head ends after the blank line, before the body's `5\\r\\n`"
        );
        let (hd, _) = h("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 27\r\n\r\n");
        assert_eq!(
            hd,
            Head {
                status: 503,
                framing: Framing::Length(27),
                keep_alive: true
            }
        );
        let (hd, _) = h("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\n");
        assert_eq!(
            hd,
            Head {
                status: 200,
                framing: Framing::Length(2),
                keep_alive: false
            }
        );
        // no length: body until EOF, never reused
        let (hd, _) = h("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
        assert_eq!(
            hd,
            Head {
                status: 200,
                framing: Framing::UntilEof,
                keep_alive: false
            }
        );
        // Transfer-Encoding wins over Content-Length; chunked must be the last coding
        let (hd, _) =
            h("HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n");
        assert_eq!(hd.framing, Framing::Chunked);
        let (hd, _) = h("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
        assert_eq!(hd.framing, Framing::UntilEof);
        // HTTP/1.0: close unless keep-alive
        let (hd, _) = h("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert!(!hd.keep_alive);
        let (hd, _) = h("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
        assert!(hd.keep_alive);
        // no body
        assert_eq!(
            h("HTTP/1.1 204 No Content\r\n\r\n").0.framing,
            Framing::Empty
        );
        assert_eq!(h("HTTP/1.1 100 Continue\r\n\r\n").0.framing, Framing::Empty);
    }

    #[test]
    fn head_parser_partial_and_errors() {
        let full = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        for cut in 0..full.len() {
            assert_eq!(parse_head(&full[..cut]).unwrap(), None, "cut {cut}");
        }
        assert!(parse_head(full).unwrap().is_some());
        let e = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").unwrap_err();
        assert!(e.contains("Content-Length `x`"), "{e}");
        let e = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .unwrap_err();
        assert!(e.contains("conflicting"), "{e}");
        let e = parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").unwrap_err();
        assert!(e.contains("invalid HTTP response head"), "{e}");
    }

    #[test]
    fn request_head_serialisation() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            "POST",
            "/v1/completions",
            "127.0.0.1:8091",
            &[("content-type", "application/json")],
            Some(b"{}"),
        );
        assert_eq!(
            out,
            b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1:8091\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
        );
        write_head(&mut out, "GET", "/health", "h:1", &[], None);
        assert_eq!(out, b"GET /health HTTP/1.1\r\nhost: h:1\r\n\r\n");
    }
}
