//! A scripted HTTP/1.1 mock server for tests: writes scripted bytes at scripted times.
//!
//! Fault injection and timing fixtures only (cases B01–B12); real behaviour is tested against the
//! simulator and a real engine. Each request is answered by a handler returning a [`Reply`]; a
//! streamed reply is sent with chunked transfer encoding, one chunk per [`Step`], each written at
//! `at_ms` after the request was fully read (absolute schedule, no drift). The server counts
//! requests open at once (`peak_open`), keeps every request it received, and can close the
//! connection after each response (llama.cpp behaviour). Besides TCP it serves in-memory
//! connections ([`MockServer::memory_dial`]): a client on tokio's paused clock then sees every
//! scripted write at exactly its `at_ms` (timing fixtures asserted exactly, no retries).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::http::MemoryDial;

/// One scripted write.
#[derive(Debug, Clone)]
pub struct Step {
    /// Time after the request was read, ms.
    pub at_ms: u64,
    /// Bytes to write (one chunk of the chunked body).
    pub bytes: Vec<u8>,
}

/// `@t data: <json>\n\n` helper.
pub fn event(at_ms: u64, json: &str) -> Step {
    Step {
        at_ms,
        bytes: format!("data: {json}\n\n").into_bytes(),
    }
}

/// How to answer one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A streamed (chunked) response.
    Stream {
        /// HTTP status.
        status: u16,
        /// Scripted writes.
        steps: Vec<Step>,
    },
    /// A plain response with `Content-Length`.
    Body {
        /// HTTP status.
        status: u16,
        /// Body bytes.
        body: Vec<u8>,
        /// `Content-Type`.
        content_type: &'static str,
    },
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Raw header block.
    pub headers: String,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Captured {
    /// Body parsed as JSON (`Null` if not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Handler: request → reply.
pub type Handler = Arc<dyn Fn(&Captured) -> Reply + Send + Sync>;

/// The running mock server (stops when dropped).
pub struct MockServer {
    addr: std::net::SocketAddr,
    /// Every request received, in order.
    pub requests: Arc<Mutex<Vec<Captured>>>,
    open: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    conns: Arc<AtomicUsize>,
    handler: Handler,
    close_after_response: bool,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts on 127.0.0.1 (random port). `close_after_response` closes every connection after
    /// its first response.
    pub async fn start(handler: Handler, close_after_response: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let open = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let conns = Arc::new(AtomicUsize::new(0));
        let (r2, o2, p2, c2) = (requests.clone(), open.clone(), peak.clone(), conns.clone());
        let h2 = handler.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    break;
                };
                c2.fetch_add(1, Ordering::SeqCst);
                let _ = sock.set_nodelay(true);
                let (h, r, o, p) = (h2.clone(), r2.clone(), o2.clone(), p2.clone());
                tokio::spawn(async move {
                    let _ = serve_conn(sock, h, r, o, p, close_after_response).await;
                });
            }
        });
        Ok(Self {
            addr,
            requests,
            open,
            peak,
            conns,
            handler,
            close_after_response,
            task,
        })
    }

    /// Opens in-memory connections to this server (`Endpoint::with_memory`): each is one end of
    /// a `tokio::io::duplex` pipe whose other end the server serves as it serves a TCP
    /// connection (counted in [`MockServer::connections`]). Must be used inside a runtime.
    pub fn memory_dial(&self) -> MemoryDial {
        let (h, r, o, p, c) = (
            self.handler.clone(),
            self.requests.clone(),
            self.open.clone(),
            self.peak.clone(),
            self.conns.clone(),
        );
        let close_after = self.close_after_response;
        MemoryDial::new(move || {
            let (client, server) = tokio::io::duplex(64 * 1024);
            c.fetch_add(1, Ordering::SeqCst);
            let (h, r, o, p) = (h.clone(), r.clone(), o.clone(), p.clone());
            tokio::spawn(async move {
                let _ = serve_conn(server, h, r, o, p, close_after).await;
            });
            Ok(client)
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Most requests that were open at the same time (server-side count).
    pub fn peak_open(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Requests open now.
    pub fn open_now(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// TCP connections accepted.
    pub fn connections(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }

    /// Captured requests (clone).
    pub fn captured(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_request<S: AsyncRead + Unpin>(
    sock: &mut S,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<Captured>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let mut tmp = [0u8; 8192];
                let n = sock.read(&mut tmp).await?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            let body = buf[end + 4..end + 4 + len].to_vec();
            buf.drain(..end + 4 + len);
            let first = head.lines().next().unwrap_or_default().to_string();
            let mut parts = first.split_whitespace();
            let method = parts.next().unwrap_or_default().to_string();
            let path = parts.next().unwrap_or_default().to_string();
            return Ok(Some(Captured {
                method,
                path,
                headers: head,
                body,
            }));
        }
        let mut tmp = [0u8; 8192];
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(
    mut sock: S,
    handler: Handler,
    requests: Arc<Mutex<Vec<Captured>>>,
    open: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    close_after: bool,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut sock, &mut buf).await? {
        let start = tokio::time::Instant::now();
        let n = open.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(n, Ordering::SeqCst);
        let reply = handler(&req);
        requests.lock().unwrap().push(req);
        let conn_hdr = if close_after { "close" } else { "keep-alive" };
        let res = async {
            match reply {
                Reply::Body { status, body, content_type } => {
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    sock.write_all(head.as_bytes()).await?;
                    sock.write_all(&body).await?;
                }
                Reply::Stream { status, steps } => {
                    // like llama.cpp: announce keep-alive even when closing afterwards
                    let _ = conn_hdr;
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
                    );
                    sock.write_all(head.as_bytes()).await?;
                    sock.flush().await?;
                    for s in steps {
                        tokio::time::sleep_until(start + Duration::from_millis(s.at_ms)).await;
                        if s.bytes.is_empty() {
                            continue;
                        }
                        let mut chunk = format!("{:x}\r\n", s.bytes.len()).into_bytes();
                        chunk.extend_from_slice(&s.bytes);
                        chunk.extend_from_slice(b"\r\n");
                        sock.write_all(&chunk).await?;
                        sock.flush().await?;
                    }
                    sock.write_all(b"0\r\n\r\n").await?;
                }
            }
            sock.flush().await
        }
        .await;
        open.fetch_sub(1, Ordering::SeqCst);
        res?;
        if close_after {
            let _ = sock.shutdown().await;
            return Ok(());
        }
    }
    Ok(())
}
