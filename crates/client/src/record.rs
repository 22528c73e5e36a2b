//! Writing and reading `records.jsonl` (one JSON line per request; the type is
//! [`servebench_contracts::RequestRecord`]).

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::error::ClientError;

/// The record type and its parts live in `servebench-contracts` (the one definition every
/// stage reads); re-exported here for the writer's users.
pub use servebench_contracts::record::{Phase, RequestRecord};

/// Appends records to a JSONL file, one line per record, flushed per line so a killed run
/// keeps everything already measured.
pub struct JsonlWriter {
    file: Mutex<std::fs::File>,
}

impl JsonlWriter {
    /// Creates (truncates) `path`.
    ///
    /// Errors: [`ClientError::Create`] naming the path.
    pub fn create(path: &Path) -> Result<Self, ClientError> {
        let file = std::fs::File::create(path).map_err(|error| ClientError::Create {
            path: path.to_path_buf(),
            error,
        })?;
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

/// Reads a `records.jsonl` file.
///
/// Errors: [`ClientError::Read`] naming the file, [`ClientError::InvalidRecord`] naming the file
/// and line.
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>, ClientError> {
    let text = std::fs::read_to_string(path).map_err(|error| ClientError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(line).map_err(|error| ClientError::InvalidRecord {
                path: path.to_path_buf(),
                line: i + 1,
                error,
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
    /// Creates (truncates) `path` and starts the writer thread.
    ///
    /// Errors: [`ClientError::Create`] naming the path; [`ClientError::WriterThread`] when the
    /// OS refuses a thread.
    pub fn spawn(path: &Path) -> Result<Self, ClientError> {
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
            })
            .map_err(ClientError::WriterThread)?;
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
    /// number of records written.
    ///
    /// Errors: [`ClientError::Write`] or [`ClientError::WriterPanicked`], naming the file.
    pub fn finish(mut self) -> Result<u64, ClientError> {
        drop(self.tx.take());
        let h = self.handle.take().expect("joined once");
        match h.join() {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(error)) => Err(ClientError::Write {
                path: self.path.clone(),
                error,
            }),
            Err(_) => Err(ClientError::WriterPanicked {
                path: self.path.clone(),
            }),
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
