//! The emission log: one record per finished generation request. Its token times are taken at
//! the socket (when the write carrying the frame returned; see [`crate::wire`]), with the older
//! frame times (when the frame was handed to hyper) kept next to them.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::SimError;
use serde::{Deserialize, Serialize};

/// One finished request, as the simulator emitted it. Times are ns on the simulator's
/// monotonic clock (0 = when the [`crate::SimServer`] started; see `SimServer::epoch`).
///
/// A client's TTFT should match `first_token_ns − received_ns` and its TPOT
/// `(last_token_ns − first_token_ns) / (completion_tokens − 1)` up to loopback latency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmissionRecord {
    /// The `id` field of every response chunk (`cmpl-…` / `chatcmpl-…`).
    pub id: String,
    /// When the kernel received the request's first bytes (Linux `SO_TIMESTAMPNS` on the
    /// read below; CLOCK_REALTIME mapped onto the epoch when the connection was accepted), ns.
    /// `request_read_ns − request_arrived_ns` is how long they waited for the simulator to read
    /// them. `None` when the kernel gave no stamp.
    #[serde(default)]
    pub request_arrived_ns: Option<u64>,
    /// When the first socket read returning this request's bytes returned, ns. `None` when
    /// unknown.
    #[serde(default)]
    pub request_read_ns: Option<u64>,
    /// When the request's headers had been parsed (handler entry), ns.
    pub received_ns: u64,
    /// When the socket write that emptied hyper's buffer holding the first chunk with
    /// non-empty text returned — the chunk is then in the kernel's send buffer — ns
    /// (non-streaming: the whole body). `None` if none reached the socket.
    pub first_token_ns: Option<u64>,
    /// The same for the chunk with the last non-empty text, ns.
    pub last_token_ns: Option<u64>,
    /// When the first chunk with non-empty text was handed to hyper (its body frame
    /// returned), ns — what `first_token_ns` meant before it was stamped at the socket. The
    /// gap to `first_token_ns` is hyper's encoding plus any wait for a full socket.
    #[serde(default)]
    pub first_token_frame_ns: Option<u64>,
    /// When the chunk with the last non-empty text was handed to hyper, ns.
    #[serde(default)]
    pub last_token_frame_ns: Option<u64>,
    /// Prompt tokens charged (`usage.prompt_tokens`).
    pub prompt_tokens: u32,
    /// Tokens sent (`usage.completion_tokens`; fewer if the client went away).
    pub completion_tokens: u32,
    /// Chunks with non-empty text sent (streaming: token events; non-streaming: 1).
    pub chunks: u32,
    /// "stop", "length", or "abort" (client disconnected or server stopped).
    pub finish_reason: String,
    /// The latest the engine loop published one of this request's steps after its wall-clock
    /// target, ns: a loaded host's oversleep (× the speedup in modelled time). `None` in
    /// zero-delay mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_late_ns: Option<u64>,
}

/// Collects records in memory (up to a cap) and appends them as JSON lines to a file.
///
/// The file is written by its own thread: `push` serializes the record and appends the line to
/// a shared buffer (a short lock, no system call), so the simulator's async workers never block
/// on a file write (before, each record took a file lock and a write + flush on the worker that
/// finished it; a channel with a wake-up per record cost about as much). The writer writes the
/// buffer every [`WRITE_EVERY`], or at once when it passes [`WRITE_AT`] bytes or a flush is
/// asked for, so the file trails by at most ~20 ms.
pub(crate) struct EmissionSink {
    records: Mutex<Vec<EmissionRecord>>,
    file: Option<Arc<Pipe>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    cap: usize,
}

/// Records kept in memory (the file keeps everything).
pub(crate) const IN_MEMORY_CAP: usize = 1_000_000;
/// The writer's period.
const WRITE_EVERY: Duration = Duration::from_millis(20);
/// Buffered bytes that wake the writer before its period is up.
const WRITE_AT: usize = 1 << 16;

/// The buffer between `push` and the writer thread.
struct Pipe {
    s: Mutex<PipeState>,
    /// Wakes the writer (buffer past [`WRITE_AT`], a flush asked for, or closing).
    work: Condvar,
    /// Wakes `flush` callers once their request is written.
    done: Condvar,
}

#[derive(Default)]
struct PipeState {
    buf: Vec<u8>,
    /// Flushes asked for so far, and the last one completed.
    asked: u64,
    flushed: u64,
    closed: bool,
}

impl Pipe {
    fn lock(&self) -> MutexGuard<'_, PipeState> {
        self.s.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl EmissionSink {
    /// A sink writing to `path` (created or truncated) when given.
    ///
    /// Errors: the path that could not be created, or the writer thread not starting.
    pub(crate) fn new(path: Option<&Path>) -> Result<EmissionSink, SimError> {
        let (file, writer) = match path {
            Some(p) => {
                let err = |error| SimError::EmissionLog {
                    path: p.to_path_buf(),
                    error,
                };
                let f = File::create(p).map_err(err)?;
                let pipe = Arc::new(Pipe {
                    s: Mutex::new(PipeState::default()),
                    work: Condvar::new(),
                    done: Condvar::new(),
                });
                let (pp, path) = (pipe.clone(), p.to_path_buf());
                let h = std::thread::Builder::new()
                    .name("sim-emission".into())
                    .spawn(move || write_lines(f, &path, &pp))
                    .map_err(err)?;
                (Some(pipe), Some(h))
            }
            None => (None, None),
        };
        Ok(EmissionSink {
            records: Mutex::new(Vec::new()),
            file,
            writer: Mutex::new(writer),
            cap: IN_MEMORY_CAP,
        })
    }

    pub(crate) fn push(&self, rec: EmissionRecord) {
        if let Some(pipe) = &self.file {
            let mut line = serde_json::to_vec(&rec).expect("record serializes");
            line.push(b'\n');
            let mut s = pipe.lock();
            s.buf.extend_from_slice(&line);
            if s.buf.len() >= WRITE_AT {
                pipe.work.notify_one();
            }
        }
        let mut v = self.records.lock().expect("emission lock");
        if v.len() < self.cap {
            v.push(rec);
        }
    }

    /// The records so far (the file is flushed first, so it holds at least these).
    pub(crate) fn snapshot(&self) -> Vec<EmissionRecord> {
        self.flush();
        self.records.lock().expect("emission lock").clone()
    }

    /// Waits until every record pushed so far is written to the file.
    pub(crate) fn flush(&self) {
        if let Some(pipe) = &self.file {
            let mut s = pipe.lock();
            if s.closed {
                return;
            }
            s.asked += 1;
            let want = s.asked;
            pipe.work.notify_one();
            while s.flushed < want && !s.closed {
                s = pipe.done.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

impl Drop for EmissionSink {
    /// Closes the buffer and waits for the writer to write what is left.
    fn drop(&mut self) {
        if let Some(pipe) = &self.file {
            pipe.lock().closed = true;
            pipe.work.notify_one();
        }
        if let Some(h) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            let _ = h.join();
        }
    }
}

/// The writer thread: takes the buffer every [`WRITE_EVERY`] (sooner when woken) and writes it
/// with one `write_all`; answers flush requests; writes the rest when closed.
fn write_lines(mut file: File, path: &Path, pipe: &Pipe) {
    let mut failed = false;
    let mut batch = Vec::new();
    loop {
        let (asked, closed) = {
            let mut s = pipe.lock();
            if s.buf.len() < WRITE_AT && s.asked == s.flushed && !s.closed {
                s = pipe
                    .work
                    .wait_timeout(s, WRITE_EVERY)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            std::mem::swap(&mut s.buf, &mut batch);
            (s.asked, s.closed)
        };
        if !batch.is_empty() {
            if let Err(e) = file.write_all(&batch) {
                if !failed {
                    tracing::warn!("emission log {}: write failed: {e}", path.display());
                }
                failed = true;
            }
            batch.clear();
        }
        let mut s = pipe.lock();
        s.flushed = asked;
        pipe.done.notify_all();
        if closed {
            s.closed = true;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u32) -> EmissionRecord {
        EmissionRecord {
            id: format!("cmpl-{i}"),
            request_arrived_ns: None,
            request_read_ns: Some(i as u64),
            received_ns: i as u64,
            first_token_ns: Some(i as u64 + 1),
            last_token_ns: Some(i as u64 + 2),
            first_token_frame_ns: None,
            last_token_frame_ns: None,
            prompt_tokens: 1,
            completion_tokens: 2,
            chunks: 2,
            finish_reason: "length".into(),
            engine_late_ns: None,
        }
    }

    /// Records pushed from several threads all reach the file, once each: by `snapshot` (which
    /// flushes), by the writer's period, and when the sink is dropped.
    #[test]
    fn writer_thread_writes_every_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        let sink = std::sync::Arc::new(EmissionSink::new(Some(&path)).unwrap());
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let s = sink.clone();
                std::thread::spawn(move || (0..500).for_each(|i| s.push(rec(t * 1000 + i))))
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        let read = || -> Vec<EmissionRecord> {
            std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        let mut mem = sink.snapshot();
        let mut file = read();
        assert_eq!(file.len(), 2000);
        mem.sort_by(|a, b| a.id.cmp(&b.id));
        file.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(mem, file);
        // Without a flush: the writer's period writes it.
        sink.push(rec(9999));
        let t = std::time::Instant::now();
        while read().len() < 2001 {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "not written by the period"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Dropping the sink writes the rest.
        sink.push(rec(9998));
        drop(sink);
        assert_eq!(read().len(), 2002);
    }
}
