//! The emission log: one record per finished generation request. Its token times are taken at
//! the socket (when the write carrying the frame returned; see [`crate::wire`]), with the older
//! frame times (when the frame was handed to hyper) kept next to them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
}

/// Collects records in memory (up to a cap) and appends them as JSON lines to a file.
pub(crate) struct EmissionSink {
    records: Mutex<Vec<EmissionRecord>>,
    file: Mutex<Option<BufWriter<File>>>,
    cap: usize,
    path: Option<PathBuf>,
}

/// Records kept in memory (the file keeps everything).
pub(crate) const IN_MEMORY_CAP: usize = 1_000_000;

impl EmissionSink {
    /// A sink writing to `path` (created or truncated) when given.
    ///
    /// Errors: the path that could not be created.
    pub(crate) fn new(path: Option<&Path>) -> Result<EmissionSink, SimError> {
        let file = match path {
            Some(p) => Some(BufWriter::new(File::create(p).map_err(|error| {
                SimError::EmissionLog {
                    path: p.to_path_buf(),
                    error,
                }
            })?)),
            None => None,
        };
        Ok(EmissionSink {
            records: Mutex::new(Vec::new()),
            file: Mutex::new(file),
            cap: IN_MEMORY_CAP,
            path: path.map(Path::to_path_buf),
        })
    }

    pub(crate) fn push(&self, rec: EmissionRecord) {
        if let Some(f) = self.file.lock().expect("emission file lock").as_mut() {
            let mut line = serde_json::to_vec(&rec).expect("record serializes");
            line.push(b'\n');
            if let Err(e) = f.write_all(&line).and_then(|_| f.flush()) {
                tracing::warn!(
                    "emission log {}: write failed: {e}",
                    self.path.as_deref().unwrap_or(Path::new("?")).display()
                );
            }
        }
        let mut v = self.records.lock().expect("emission lock");
        if v.len() < self.cap {
            v.push(rec);
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<EmissionRecord> {
        self.records.lock().expect("emission lock").clone()
    }

    pub(crate) fn flush(&self) {
        if let Some(f) = self.file.lock().expect("emission file lock").as_mut() {
            let _ = f.flush();
        }
    }
}
