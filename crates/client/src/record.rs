//! The per-request record (one JSON line per request in `records.jsonl`; contract.md).

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::stream::{OutputPhases, OutputSource};

/// Benchmark phase of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Discarded warmup request.
    Warmup,
    /// Measured request.
    Measured,
}

/// One request as measured. Times `*_ns` are ns since the run's clock origin (monotonic);
/// `*_ms` are milliseconds relative to `t0_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Index in the dataset (or the workload's turn id).
    pub id: u64,
    /// `warmup` or `measured`.
    pub phase: Phase,
    /// `(session, turn)` for multi-turn workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<(u64, u32)>,
    /// `id` field of the response chunks.
    pub response_id: Option<String>,
    /// When the request was due: the arrival time (open loop) or the moment its lane became
    /// free (closed loop).
    pub scheduled_ns: u64,
    /// When the request bytes were handed to the connection (servebench) or, under InferenceX
    /// compat, before the connection was opened (InferenceX `st`).
    pub t0_ns: u64,
    /// When the response ended (last byte or error).
    pub end_ns: u64,
    /// `t0 − scheduled`, ms: time spent queued in the client.
    pub queue_ms: f64,
    /// TCP connect time when this request dialled a connection, ms.
    pub connect_ms: Option<f64>,
    /// Keep-alive connections found closed by the server and re-dialled (never a failure).
    pub redials: u32,
    /// Time to first token event, ms.
    pub ttft_ms: Option<f64>,
    /// Time to first visible output (content or tool call, reasoning excluded), ms; null if
    /// none.
    pub ttfo_ms: Option<f64>,
    /// Time to the last token event, ms.
    pub e2el_ms: Option<f64>,
    /// `(e2el − ttft)/(output_tokens − 1)`, only when output_tokens > 1, ms.
    pub tpot_ms: Option<f64>,
    /// Gaps between consecutive token events (per chunk), ms.
    pub itl_ms: Vec<f32>,
    /// Tokens per token event when some event carried more than one (from per-chunk usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_chunk: Option<Vec<u32>>,
    /// Number of token events.
    pub token_events: u32,
    /// Output tokens (`usage.completion_tokens`, or the token-event count).
    pub output_tokens: u64,
    /// `usage`, `chunks` or (InferenceX compat without usage) `none`.
    pub output_tokens_source: OutputSource,
    /// Prompt tokens as counted by the workload.
    pub prompt_tokens_client: Option<u32>,
    /// `usage.prompt_tokens`.
    pub prompt_tokens_server: Option<u64>,
    /// `max_tokens` sent.
    pub requested_output_tokens: u32,
    /// HTTP status, when a response came.
    pub http_status: Option<u16>,
    /// Success per MEASUREMENT.md Part 1 (or the InferenceX rule under compat).
    pub success: bool,
    /// Failure category: `no_token`, `stream_error:<code>`, `stream_error_after_tokens`,
    /// `http_<status>`, `timeout`, `connect`, `disconnected`, `disconnected_after_tokens`,
    /// `bad_event`, `cancelled`, (compat) `exception`.
    pub failure: Option<String>,
    /// Error text (server message, transport error) kept for triage.
    pub error: Option<String>,
    /// Per-request warnings: `usage_missing`, `output_tokens_mismatch` (≠ cap under
    /// `ignore_eos`), `output_tokens_below_request`, `output_tokens_exceed_cap`, `isl_mismatch`
    /// (server prompt count differs from the client's by more than 5 %).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Reasoning / tool-call phase times, only for streams that carried such deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<OutputPhases>,
    /// Generated text, only when the workload asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Appends records to a JSONL file, one line per record, flushed per line so a killed run
/// keeps everything already measured.
pub struct JsonlWriter {
    file: Mutex<std::fs::File>,
}

impl JsonlWriter {
    /// Creates (truncates) `path`. Errors name the path.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file = std::fs::File::create(path)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    /// Writes one record as a line (a single `write` of the whole line).
    pub fn write(&self, rec: &RequestRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(rec).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(&line)?;
        f.flush()
    }
}

/// Reads a `records.jsonl` file. Errors name the file and line.
pub fn read_records(path: &Path) -> anyhow::Result<Vec<RequestRecord>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(line).map_err(|e| {
                anyhow::anyhow!("{}:{}: invalid record: {e}", path.display(), i + 1)
            })?,
        );
    }
    Ok(out)
}

/// Writes records to a JSONL file from a dedicated thread, so serialising and writing (which
/// can block on a busy disk) never stall the async workers that timestamp responses. Each record
/// is written as one line and flushed as soon as the thread receives it.
pub struct RecordWriterThread {
    tx: Option<std::sync::mpsc::Sender<RequestRecord>>,
    handle: Option<std::thread::JoinHandle<std::io::Result<u64>>>,
    path: std::path::PathBuf,
}

impl RecordWriterThread {
    /// Creates (truncates) `path` and starts the writer thread. Errors name the path.
    pub fn spawn(path: &Path) -> anyhow::Result<Self> {
        let w = JsonlWriter::create(path)?;
        let (tx, rx) = std::sync::mpsc::channel::<RequestRecord>();
        let handle = std::thread::Builder::new()
            .name("records-writer".into())
            .spawn(move || {
                let mut n = 0;
                for rec in rx {
                    w.write(&rec)?;
                    n += 1;
                }
                Ok(n)
            })?;
        Ok(Self {
            tx: Some(tx),
            handle: Some(handle),
            path: path.to_path_buf(),
        })
    }

    /// A handle to queue records (cheap to clone, usable from any thread).
    pub fn sender(&self) -> std::sync::mpsc::Sender<RequestRecord> {
        self.tx.clone().expect("writer not finished")
    }

    /// Waits until every queued record is written (all senders must be dropped). Returns the
    /// number of records written; errors name the file.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        drop(self.tx.take());
        let h = self.handle.take().expect("joined once");
        match h.join() {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(anyhow::anyhow!("cannot write {}: {e}", self.path.display())),
            Err(_) => Err(anyhow::anyhow!(
                "records writer for {} panicked",
                self.path.display()
            )),
        }
    }
}

impl Drop for RecordWriterThread {
    /// Flushes what was queued even when the run stops early (Ctrl-C, errors).
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
