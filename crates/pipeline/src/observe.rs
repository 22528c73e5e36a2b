//! Observers: where a finished point and the finished sweep go. Built in: [`FileOutput`]
//! (`DIR/conc*/{result,agg}.json`, `DIR/summary.{json,csv}`), the store recorder
//! ([`crate::record::StoreRecorder`]), [`ConsoleOutput`] (the point lines and the final table)
//! and progress inside a point ([`crate::progress`]). A new output format is one more `impl Observer`, passed to
//! [`crate::sweep::run_sweep`] in its `extra` list.
//!
//! `summary.json` has one writer, [`FileOutput`]. An observer that adds to it (the slo extras)
//! contributes a typed [`SummaryExtras`] through [`Observer::summary_extras`]; the session
//! collects the contributions into the [`SweepSummary`] first and then hands that one document
//! to every observer's [`Observer::sweep_done`] (hyperfine's export manager: the results are
//! assembled once, each exporter only writes). Per-request data reaches observers in memory
//! ([`PointOutput::records`]), never by re-reading another observer's files.

use std::path::{Path, PathBuf};

use serde_json::Value;
use servebench_contracts::{ResultFile, SimulatorInfo, StoreRef, SummaryDoc, SummaryExtras};
use servebench_metrics::{PointStatus, SCHEMA_VERSION};

use crate::console::Console;
use crate::error::{io, IoOp, Result};
use crate::executor::{point_label, PointOutput};
use crate::plan::SweepPlan;

/// What the observers get when the sweep ends (also after Ctrl-C).
pub struct SweepSummary<'a> {
    /// The plan.
    pub plan: &'a SweepPlan,
    /// Endpoint base URL measured.
    pub endpoint: &'a str,
    /// The embedded simulator, `None` against an endpoint.
    pub simulator: Option<SimulatorInfo>,
    /// Model name.
    pub model: &'a str,
    /// When the sweep started.
    pub started: chrono::DateTime<chrono::Utc>,
    /// One workload description per concurrency.
    pub datasets: &'a [String],
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
    /// The store's database and run id, when recorded.
    pub store: Option<(PathBuf, i64)>,
    /// Every finished point, in order.
    pub points: &'a [PointOutput],
    /// `summary.json` `extras`: what an observer contributed through
    /// [`Observer::summary_extras`] (the session fills it before any `sweep_done`), else `None`.
    pub extras: Option<SummaryExtras>,
}

/// The error of an [`Observer`]: any error (`?` converts one). A
/// [`crate::PipelineError`] in it (the built-in observers') comes back out of the sweep as
/// itself, any other as [`crate::PipelineError::Observer`].
pub type ObserverError = crate::error::BoxError;

/// Receives finished points and the finished sweep.
pub trait Observer {
    /// A point finished (its files are the observer's business). An error stops the sweep.
    fn point_done(&mut self, _point: &PointOutput) -> Result<(), ObserverError> {
        Ok(())
    }
    /// This observer's part of `summary.json`: its typed `extras`, or `None` (the default) when
    /// it adds nothing. Asked once when the sweep ends, before any observer's
    /// [`Observer::sweep_done`] and before [`FileOutput`] writes `summary.json` (the one writer).
    /// At most one observer of a sweep may contribute. An error marks the run failed.
    fn summary_extras(
        &mut self,
        _summary: &SweepSummary<'_>,
    ) -> Result<Option<SummaryExtras>, ObserverError> {
        Ok(None)
    }
    /// The sweep finished (points and eval); `summary.extras` holds the contributions. An
    /// error marks the run failed.
    fn sweep_done(&mut self, _summary: &SweepSummary<'_>) -> Result<(), ObserverError> {
        Ok(())
    }
}

/// The sweep's files under its output directory; the one writer of `summary.json` (with the
/// `extras` the session collected into the [`SweepSummary`]).
pub struct FileOutput {
    /// The output directory.
    pub dir: PathBuf,
}

impl Observer for FileOutput {
    fn point_done(&mut self, p: &PointOutput) -> Result<(), ObserverError> {
        write_text(&p.spec.dir.join("result.json"), p.result.file_text())?;
        Ok(write_json(&p.spec.dir.join("agg.json"), &p.agg.to_value())?)
    }

    fn sweep_done(&mut self, s: &SweepSummary<'_>) -> Result<(), ObserverError> {
        let c = s.plan;
        let w = c.workload.summary_fields(c.api);
        let summary = SummaryDoc {
            schema_version: SCHEMA_VERSION,
            tool: format!("servebench {}", env!("CARGO_PKG_VERSION")),
            started: s.started.to_rfc3339(),
            finished: chrono::Utc::now().to_rfc3339(),
            endpoint: s.endpoint.to_string(),
            model: s.model.to_string(),
            api: w.api,
            engine: c.engine.name().into(),
            compat: c.compat.as_str().into(),
            itl_mode: c.itl_mode.as_str().into(),
            isl: w.isl,
            osl: w.osl,
            range_ratio: w.range_ratio,
            seed: w.seed,
            concurrencies: c.concurrencies.clone(),
            request_rate: w.request_rate,
            burstiness: w.burstiness,
            datasets: s.datasets.to_vec(),
            simulator: s.simulator.clone(),
            interrupted: s.interrupted,
            repeats: c.repeats,
            store: s.store.as_ref().map(|(db, run)| StoreRef {
                db: db.display().to_string(),
                run_id: *run,
            }),
            points: s.points.iter().map(|p| p.agg.clone()).collect(),
            notes: table_notes(s.points, c.repeats),
            extras: s.extras.clone(),
        };
        write_text(&self.dir.join("summary.json"), summary.file_text())?;
        Ok(write_csv(&self.dir.join("summary.csv"), s.points)?)
    }
}

/// `"; INVALID: <reasons>"` for a failed point that also broke a validity rule.
fn invalid_suffix(m: &servebench_metrics::PointMetrics) -> String {
    if m.invalid_reasons.is_empty() {
        String::new()
    } else {
        format!("; INVALID: {}", m.invalid_reasons.join("; "))
    }
}

/// The point lines on the console (the final table is [`crate::table::render_table`], printed
/// once the run's status is settled).
pub struct ConsoleOutput {
    /// Where the lines go.
    pub console: std::sync::Arc<dyn Console>,
}

impl Observer for ConsoleOutput {
    fn point_done(&mut self, p: &PointOutput) -> Result<(), ObserverError> {
        let m = &p.metrics;
        self.console.line(&format!(
            "{}: {} ok, {} failed{} in {:.1} s wall, peak {} in flight{}",
            p.spec.label(),
            m.completed,
            m.failed,
            if m.failure_reasons.is_empty() {
                String::new()
            } else {
                format!(" {:?}", m.failure_reasons)
            },
            p.wall_s,
            m.peak_concurrency,
            match m.point_status {
                PointStatus::Ok => String::new(),
                PointStatus::Failed if m.completed + m.failed == 0 => format!(
                    "  → POINT FAILED (no request was measured){}",
                    invalid_suffix(m)
                ),
                PointStatus::Failed => format!(
                    "  → POINT FAILED (more than {} of requests failed){}",
                    // the error gate: fixed-sequence 5 % (fixed.rs), AgentX 10 % (agentx.rs,
                    // MEASUREMENT.md Part 2 §5.8)
                    match p.result {
                        ResultFile::Single(_) => "5 %",
                        ResultFile::Agentx(_) | ResultFile::Other(_) => "10 %",
                    },
                    invalid_suffix(m)
                ),
                PointStatus::Interrupted => "  → partial (interrupted)".into(),
                PointStatus::Invalid =>
                    format!("  → POINT INVALID: {}", m.invalid_reasons.join("; ")),
            }
        ));
        if m.failed > 0 {
            if let Some(e) = first_error(&p.records) {
                self.console.line(&format!("  first error: {e}"));
            }
        }
        for w in &m.warnings {
            self.console.line(&format!("  warning: {w}"));
        }
        Ok(())
    }
}

/// The first failed request's error text (the server's message or the transport error), on one
/// line and cut to 300 characters, so a failed point says why without opening records.jsonl.
fn first_error(records: &[servebench_contracts::RequestRecord]) -> Option<String> {
    let e = records.iter().find(|r| !r.success)?.error.as_deref()?;
    let one_line = e.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match one_line.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    })
}

/// Note lines under the table for points whose numbers would otherwise mislead silently
/// ([`servebench_metrics::PointMetrics::notes`]: 0 output tokens under InferenceX counting,
/// TPOT 0 from one read).
pub fn table_notes(points: &[PointOutput], repeats: u32) -> Vec<String> {
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let repeat = if repeats > 1 {
            i as u32 % repeats + 1
        } else {
            1
        };
        for n in &p.metrics.notes {
            out.push(format!(
                "note: {}: {n}",
                point_label(p.spec.conc, repeat, repeats)
            ));
        }
    }
    out
}

/// Pretty JSON and a final newline.
pub fn write_json(path: &Path, v: &Value) -> Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    write_text(path, s)
}

/// A file's text (a typed document's [`file_text`](servebench_contracts::SummaryDoc::file_text)).
fn write_text(path: &Path, text: String) -> Result<()> {
    std::fs::write(path, text).map_err(io(IoOp::Write, path))
}

fn write_csv(path: &Path, points: &[PointOutput]) -> Result<()> {
    let mut w = String::new();
    if points.is_empty() {
        std::fs::write(path, "").map_err(io(IoOp::Write, path))?;
        return Ok(());
    };
    let rows: Vec<Value> = points.iter().map(|p| p.agg.to_value()).collect();
    let keys: Vec<String> = rows[0]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    let esc = |s: &str| {
        if s.contains(',') || s.contains('"') || s.contains('\n') {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    w.push_str(&keys.iter().map(|k| esc(k)).collect::<Vec<_>>().join(","));
    w.push('\n');
    for agg in &rows {
        let row: Vec<String> = keys
            .iter()
            .map(|k| match agg.get(k) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => esc(s),
                Some(v) => esc(&v.to_string()),
            })
            .collect();
        w.push_str(&row.join(","));
        w.push('\n');
    }
    std::fs::write(path, w).map_err(io(IoOp::Write, path))
}
