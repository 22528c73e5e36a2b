//! The socket side of each connection: the emission log's on-the-wire times.
//!
//! Every accepted `TcpStream` is wrapped in a [`WireIo`] that shares one [`Wire`] cell with the
//! connection's request handler. HTTP/1.1 keep-alive serves one request at a time per
//! connection, so the cell holds at most one response's [`RecordState`]:
//!
//! - `poll_read` notes the time of the first read that returned bytes since the last request
//!   claimed it ([`Wire::take_read`] at handler entry): the request's `request_read_ns`. On
//!   Linux that read is a `recvmsg` on a socket with `SO_TIMESTAMPNS`, and the kernel's receive
//!   timestamp of those bytes (CLOCK_REALTIME, mapped onto the simulator's epoch) becomes
//!   `request_arrived_ns`: the time the request waited before the simulator read it.
//! - The response body *marks* each frame it hands to hyper ([`Wire::handed`]): the number of
//!   successful socket writes so far.
//! - hyper writes its buffer in order and calls the IO's `poll_flush` only once that buffer is
//!   empty (hyper 1.x `proto/h1/io.rs`, `Buffered::poll_flush`); there a mark with a write
//!   after it is stamped with the end of the latest successful write — the write that put the
//!   frame's last bytes into the kernel's socket buffer (or a later one of the same flush).
//! - The record is pushed to the emission log once the response is finished and its marks are
//!   stamped, or when the connection closes (whatever was stamped by then).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::server::{AppState, RecordState};

/// One connection's shared cell (see the module docs).
pub(crate) struct Wire {
    st: Arc<AppState>,
    /// CLOCK_REALTIME ns minus epoch ns, read back to back when the connection was accepted.
    realtime_offset: i128,
    s: Mutex<WireState>,
}

#[derive(Default)]
struct WireState {
    /// Successful writes (`Ready(Ok(n > 0))`) on the socket so far.
    writes: u64,
    /// When the latest successful write returned, ns since the simulator's epoch.
    last_write_ns: u64,
    /// The first read with bytes not yet claimed by a request, ns.
    read_ns: Option<u64>,
    /// The kernel's receive time of that read's bytes, ns since the epoch.
    arrived_ns: Option<u64>,
    /// The response being written, if any.
    pending: Option<Pending>,
}

struct Pending {
    rec: RecordState,
    /// `writes` when the first frame with text was handed to hyper; `None` once stamped.
    first_mark: Option<u64>,
    /// `writes` when the latest frame with text was handed to hyper; `None` once stamped.
    last_mark: Option<u64>,
    /// Set once the body is complete: the record is pushed when no mark is left.
    finish: Option<String>,
}

impl Wire {
    pub(crate) fn new(st: Arc<AppState>) -> Arc<Wire> {
        let now = st.ns(crate::server::now()) as i128;
        let rt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        Arc::new(Wire {
            st,
            realtime_offset: rt - now,
            s: Mutex::new(WireState::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, WireState> {
        // A poisoned cell only means a panic elsewhere in this connection; its data is plain.
        self.s.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> u64 {
        self.st.ns(crate::server::now())
    }

    /// The first socket read holding this request's bytes and the kernel's receive time of
    /// those bytes, ns (claimed: the next read starts the next request). `None` when unknown.
    pub(crate) fn take_read(&self) -> (Option<u64>, Option<u64>) {
        let mut s = self.lock();
        (s.read_ns.take(), s.arrived_ns.take())
    }

    /// Forgets reads of the request just handled (its body, read after the headers).
    pub(crate) fn clear_read(&self) {
        let mut s = self.lock();
        s.read_ns = None;
        s.arrived_ns = None;
    }

    /// No read is waiting to be claimed: the next read starts a request.
    fn wants_read_stamp(&self) -> bool {
        self.lock().read_ns.is_none()
    }

    /// Starts a response's record (an earlier unfinished one is pushed as it stands).
    pub(crate) fn begin(&self, rec: RecordState) {
        let old = self.lock().pending.replace(Pending {
            rec,
            first_mark: None,
            last_mark: None,
            finish: None,
        });
        if let Some(p) = old {
            let reason = p.finish.unwrap_or_else(|| "abort".to_string());
            p.rec.finalize(&self.st, &reason);
        }
    }

    /// A frame is handed to hyper: `texts` token events with non-empty text, `completion`
    /// tokens sent so far. Stamps the frame times now and marks the socket times.
    pub(crate) fn handed(&self, texts: u32, completion: u32) {
        let now = self.now();
        let mut s = self.lock();
        let writes = s.writes;
        if let Some(p) = s.pending.as_mut() {
            if texts > 0 {
                p.rec.first_frame.get_or_insert(now);
                p.rec.last_frame = Some(now);
                p.rec.chunks += texts;
                if p.rec.first.is_none() && p.first_mark.is_none() {
                    p.first_mark = Some(writes);
                }
                p.last_mark = Some(writes);
            }
            p.rec.completion = completion;
        }
    }

    /// The body is complete (its last frame handed): the record is pushed with `reason` once
    /// that frame is on the socket.
    pub(crate) fn finish(&self, reason: &str) {
        let done = {
            let mut s = self.lock();
            match s.pending.as_mut() {
                Some(p) => p.finish = Some(reason.to_string()),
                None => return,
            }
            take_if_done(&mut s)
        };
        if let Some((rec, reason)) = done {
            rec.finalize(&self.st, &reason);
        }
    }

    /// The body went away before it was complete: pushed now as "abort" with the socket
    /// times stamped so far.
    pub(crate) fn abort(&self) {
        let p = self.lock().pending.take();
        if let Some(p) = p {
            p.rec.finalize(&self.st, "abort");
        }
    }

    /// Bytes were read; `kernel_rt` is their receive time (CLOCK_REALTIME ns) when known.
    fn on_read(&self, kernel_rt: Option<u64>) {
        let now = self.now();
        let mut s = self.lock();
        if s.read_ns.is_none() {
            s.read_ns = Some(now);
            s.arrived_ns = kernel_rt.map(|t| (t as i128 - self.realtime_offset).max(0) as u64);
        }
    }

    fn on_write(&self) {
        let now = self.now();
        let mut s = self.lock();
        s.writes += 1;
        s.last_write_ns = now;
    }

    /// hyper's buffer is empty: every handed frame is on the socket.
    fn on_flush(&self) {
        let done = {
            let mut s = self.lock();
            let (writes, t) = (s.writes, s.last_write_ns);
            let Some(p) = s.pending.as_mut() else { return };
            if let Some(m) = p.first_mark {
                if writes > m {
                    p.rec.first = Some(t);
                    p.first_mark = None;
                }
            }
            if let Some(m) = p.last_mark {
                if writes > m {
                    p.rec.last = Some(t);
                    p.last_mark = None;
                }
            }
            take_if_done(&mut s)
        };
        if let Some((rec, reason)) = done {
            rec.finalize(&self.st, &reason);
        }
    }
}

/// The pending record and its reason, when it is complete and fully stamped.
fn take_if_done(s: &mut WireState) -> Option<(RecordState, String)> {
    let ready = s
        .pending
        .as_ref()
        .is_some_and(|p| p.finish.is_some() && p.first_mark.is_none() && p.last_mark.is_none());
    if !ready {
        return None;
    }
    let p = s.pending.take()?;
    Some((p.rec, p.finish.unwrap_or_default()))
}

impl Drop for Wire {
    /// The connection is gone: a record still waiting is pushed with what was stamped.
    fn drop(&mut self) {
        let p = self.lock().pending.take();
        if let Some(p) = p {
            let reason = p.finish.unwrap_or_else(|| "abort".to_string());
            p.rec.finalize(&self.st, &reason);
        }
    }
}

/// A stream whose reads can also report the kernel's receive time of the bytes.
pub(crate) trait StampedRead: AsyncRead + Unpin {
    /// Like `poll_read`; also returns the receive time (CLOCK_REALTIME ns) when known. The
    /// default knows none.
    fn poll_read_stamped(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<Option<u64>>> {
        Pin::new(self).poll_read(cx, buf).map_ok(|()| None)
    }
}

impl StampedRead for tokio::io::DuplexStream {}

#[cfg(not(target_os = "linux"))]
impl StampedRead for tokio::net::TcpStream {}

#[cfg(target_os = "linux")]
impl StampedRead for tokio::net::TcpStream {
    fn poll_read_stamped(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<Option<u64>>> {
        use std::os::fd::AsRawFd;
        loop {
            std::task::ready!(self.poll_read_ready(cx))?;
            let fd = self.as_raw_fd();
            let dst = buf.initialize_unfilled();
            match self.try_io(tokio::io::Interest::READABLE, || rx::recv_stamped(fd, dst)) {
                Ok((n, ts)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(ts));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// Kernel receive timestamps (Linux `SO_TIMESTAMPNS`, socket(7)).
#[cfg(target_os = "linux")]
pub(crate) mod rx {
    use std::io;
    use std::os::fd::RawFd;

    /// Asks the kernel to timestamp received data on `fd`.
    ///
    /// Errors: the `setsockopt` error.
    pub(crate) fn enable(fd: RawFd) -> io::Result<()> {
        let on: libc::c_int = 1;
        // SAFETY: a valid option value of the size given.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// One `recvmsg` into `dst`: bytes read and the `SCM_TIMESTAMPNS` receive time
    /// (CLOCK_REALTIME ns) when the kernel attached one.
    pub(crate) fn recv_stamped(fd: RawFd, dst: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let mut iov = libc::iovec {
            iov_base: dst.as_mut_ptr().cast(),
            iov_len: dst.len(),
        };
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; every pointer set below outlives the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: fd is an open socket; msg points at live buffers of the sizes given.
        let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ts = None;
        // SAFETY: the CMSG_* walk stays within msg_controllen as the kernel set it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let t: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    if t.tv_sec > 0 {
                        ts = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok((n as usize, ts))
    }
}

/// An accepted stream (a `TcpStream`; in tests an in-memory pipe) that reports its reads,
/// writes and flushes to its [`Wire`].
pub(crate) struct WireIo<S> {
    io: S,
    wire: Arc<Wire>,
}

impl<S> WireIo<S> {
    pub(crate) fn new(io: S, wire: Arc<Wire>) -> WireIo<S> {
        WireIo { io, wire }
    }
}

impl<S: StampedRead> AsyncRead for WireIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        // Only a request's first read needs the kernel's stamp (a `recvmsg`).
        if self.wire.wants_read_stamp() {
            let r = self.io.poll_read_stamped(cx, buf);
            return match r {
                Poll::Ready(Ok(ts)) => {
                    if buf.filled().len() > before {
                        self.wire.on_read(ts);
                    }
                    Poll::Ready(Ok(()))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WireIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.wire.on_write();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.wire.on_write();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        if matches!(r, Poll::Ready(Ok(()))) {
            self.wire.on_flush();
        }
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;
    use crate::emission::{EmissionRecord, EmissionSink};
    use crate::model::EngineConfig;

    fn state() -> Arc<AppState> {
        let o = crate::SimOptions::default();
        Arc::new(AppState {
            cfg: Arc::new(EngineConfig::from_presets(&o.gpu, &o.model, o.tp).unwrap()),
            tokenizer: None,
            zero_delay: true,
            speedup: 1.0,
            virtual_clock: false,
            answers: None,
            engine_tx: None,
            stats: Arc::new(crate::runtime::Stats::default()),
            emission: Arc::new(EmissionSink::new(None).unwrap()),
            epoch: Instant::now(),
            id_seq: AtomicU64::new(0),
            id_salt: 7,
            created: 0,
            shutdown: tokio::sync::watch::channel(false).1,
            body_gate: None,
        })
    }

    /// Sends one streaming completion request on `c`.
    async fn send(c: &mut DuplexStream) {
        let body = br#"{"prompt":"a b c","max_tokens":8,"ignore_eos":true,"stream":true}"#;
        let head = format!(
            "POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        c.write_all(head.as_bytes()).await.unwrap();
        c.write_all(body).await.unwrap();
    }

    /// Reads one chunked response up to its terminating chunk.
    async fn read_response(c: &mut DuplexStream) -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"0\r\n\r\n") {
            let n = c.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(got).unwrap()
    }

    /// Waits (2 s at most) for the emission log to hold `n` records.
    async fn records(st: &AppState, n: usize) -> Vec<EmissionRecord> {
        for _ in 0..200 {
            let v = st.emission.snapshot();
            if v.len() >= n {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("emission log: {:?}", st.emission.snapshot());
    }

    /// A client that does not read for 300 ms: the pipe (64 bytes) is full before the first
    /// token's frame is handed to hyper, so that frame reaches the "socket" only once the
    /// client reads. `first_token_ns` must be that later time, `first_token_frame_ns` the
    /// handing; on the same connection a promptly read response has both within a few ms.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn first_token_is_stamped_when_written_not_when_handed() {
        let st = state();
        let (mut c, s) = tokio::io::duplex(64);
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let conn = tokio::spawn(crate::server::serve_connection(st.clone(), s, rx));

        send(&mut c).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let read_at = st.ns(Instant::now());
        let text = read_response(&mut c).await;
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("data: [DONE]"), "{text}");
        let r = records(&st, 1).await.remove(0);
        assert_eq!(
            (r.completion_tokens, r.finish_reason.as_str()),
            (8, "length")
        );
        let (first, frame) = (r.first_token_ns.unwrap(), r.first_token_frame_ns.unwrap());
        let read = r.request_read_ns.unwrap();
        assert!(read <= r.received_ns && r.received_ns <= frame, "{r:?}");
        assert!(frame < read_at, "handed before the client read: {r:?}");
        assert!(
            first >= read_at,
            "stamped before the client read ({read_at}): {r:?}"
        );
        assert!(first - frame >= 250_000_000, "{r:?}");
        assert!(r.last_token_ns.unwrap() >= first, "{r:?}");
        assert!(r.last_token_frame_ns.unwrap() >= frame, "{r:?}");

        // The same connection, read at once: the socket time follows the frame closely.
        let t = st.ns(Instant::now());
        send(&mut c).await;
        read_response(&mut c).await;
        let r = records(&st, 2).await.remove(1);
        let (first, frame) = (r.first_token_ns.unwrap(), r.first_token_frame_ns.unwrap());
        assert!(
            r.request_read_ns.unwrap() >= t,
            "read time of the earlier request: {r:?}"
        );
        assert!(first >= frame && first - frame < 50_000_000, "{r:?}");
        drop(c);
        tokio::time::timeout(Duration::from_secs(5), conn)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(st.emission.snapshot().len(), 2);
    }
}
