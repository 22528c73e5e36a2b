//! One AgentX concurrency point end to end: traces → plans → replay (with the engine's
//! `/metrics` scraped during the profiling window) → records file → aggregate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use servebench_client::{Cancel, ClientCtx};
pub use servebench_contracts::result::CONTEXT_OVERFLOW_RATE_LIMIT;
use servebench_contracts::{OverflowRequests, ReportedCache};

use crate::aggregate::{
    aggregate, error_gate, to_json_text, AgentxAggregate, AggIdentity, AggInputs, Gate, RecordPhase,
};
use crate::chains::SplitOptions;
use crate::plan::{build_with, TracePlan};
use crate::prom::{scrape_until, ServerMetrics};
use crate::replay::{run, ReplayConfig, ReplayRecord};
use crate::synth::{Corpus, TokenCodec};
use crate::trace::TraceSource;

/// File stem of AIPerf's server-metrics export a point writes with
/// [`PointConfig::aiperf_export`] (`server_metrics_export.json`, `.csv`, AIPerf's names).
pub const AIPERF_EXPORT: &str = "server_metrics_export";

/// InferenceX's floor for a valid window (`--unsafe-override` below it), s.
pub const MIN_VALID_DURATION_S: u64 = 900;

/// Settings of one point.
pub struct PointConfig {
    /// Replay settings (lanes, window, caps, model, …).
    pub replay: ReplayConfig,
    /// Identity written into the aggregate (tp/ep/… and `conc`).
    pub identity: AggIdentity,
    /// Scrape `<endpoint>/metrics` every second during the window.
    pub scrape_metrics: bool,
    /// Also write AIPerf's server-metrics export of those scrapes into `out_dir`
    /// ([`AIPERF_EXPORT`]`.json`/`.csv`): what a recipe's `aiperf` step leaves when the engine
    /// is this process's simulator (`run --simulate` of a real recipe on the virtual clock),
    /// timed in modelled time.
    pub aiperf_export: bool,
    /// Where `agentx_records.jsonl` and `agentx.json` go (created).
    pub out_dir: PathBuf,
}

/// What a point produced.
#[derive(Debug)]
pub struct PointResult {
    /// The aggregate (InferenceX key sets).
    pub aggregate: AgentxAggregate,
    /// Every request.
    pub records: Vec<ReplayRecord>,
    /// The client's own records of the same requests (phase warmup / measured).
    pub raw: Vec<servebench_client::RequestRecord>,
    /// Profiling window (first dispatch allowed, last dispatch allowed), ns of the run clock.
    pub window_ns: (u64, u64),
    /// The 10 % error gate.
    pub gate: Gate,
    /// Context-overflow terminations.
    pub context_overflows: u64,
    /// `agentx_records.jsonl` path.
    pub records_path: PathBuf,
    /// `agentx.json` path (the AgentX aggregate).
    pub agg_path: PathBuf,
    /// Whether the window was shorter than [`MIN_VALID_DURATION_S`] (marked invalid).
    pub short_window: bool,
    /// Context-overflow rejections by phase, and the profiling responses they are a share of.
    pub overflow: OverflowRequests,
    /// Prefix-cache reuse the server reported per request over the served profiling requests.
    pub reported_cache: ReportedCache,
    /// Why the point is not a valid InferenceX submission, with the harness's reason codes
    /// (`unsafe_override`: window < [`MIN_VALID_DURATION_S`]; `context_overflow_rate_exceeded`:
    /// [`OverflowRequests::rate_exceeded`]; `run_cancelled`: Ctrl-C). Empty = valid as far as
    /// the harness judges (servebench's 10 % error gate is [`PointResult::gate`]).
    pub submission_invalid_reasons: Vec<String>,
}

/// Context-overflow rejections of `records` (every phase;
/// [`crate::replay::is_context_overflow`]).
pub fn overflow_requests(records: &[ReplayRecord]) -> OverflowRequests {
    let mut c = OverflowRequests::default();
    for r in records {
        match r.rec.phase {
            RecordPhase::Warmup => c.warmup += u64::from(r.context_overflow),
            RecordPhase::Profiling => {
                c.profiling += u64::from(r.context_overflow);
                c.profiling_responses += 1;
            }
        }
    }
    c
}

/// Errors of a point (one line each).
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    /// Bad trace input.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    /// A trace cannot be reconstructed.
    #[error("{0}")]
    Plan(String),
    /// The replay stopped.
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
    /// Output files.
    #[error("{path}: {err}")]
    Io {
        /// File.
        path: String,
        /// Error.
        err: std::io::Error,
    },
    /// Metrics of an unknown engine.
    #[error(transparent)]
    Metrics(#[from] crate::prom::UnknownBackend),
}

/// A record in modelled time: the run clock's ns (start, end, scheduled) and the latencies ×
/// `time_scale` (wall = modelled / time_scale against a sped-up simulator; 1 = unchanged).
pub fn to_modelled(mut r: ReplayRecord, time_scale: f64) -> ReplayRecord {
    if !(time_scale.is_finite() && time_scale > 0.0) || time_scale == 1.0 {
        return r;
    }
    let ns = |x: u64| (x as f64 * time_scale).round() as u64;
    r.rec.start_ns = ns(r.rec.start_ns);
    r.rec.end_ns = ns(r.rec.end_ns);
    r.scheduled_ns = ns(r.scheduled_ns);
    for v in [
        &mut r.rec.ttft_ms,
        &mut r.rec.request_latency_ms,
        &mut r.rec.itl_ms,
        &mut r.rec.full_response_itl_ms,
    ]
    .into_iter()
    .flatten()
    {
        *v *= time_scale;
    }
    r
}

/// Loads every trace of `path` and builds its plan (sorted by trace id = sampler order), with
/// the harness's default chain splitting.
pub fn load_plans(path: &Path, codec: &dyn TokenCodec) -> Result<Vec<Arc<TracePlan>>, PointError> {
    load_plans_with(path, codec, &SplitOptions::default())
}

/// [`load_plans`] with explicit chain-splitting settings ([`SplitOptions::off`] = the harness
/// with `AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=0`).
///
/// # Errors
/// A trace that does not read or reconstruct, a trace id twice, or no trace at all
/// ([`TraceSource::no_traces`]).
pub fn load_plans_with(
    path: &Path,
    codec: &dyn TokenCodec,
    split: &SplitOptions,
) -> Result<Vec<Arc<TracePlan>>, PointError> {
    let corpus = Corpus::build(codec);
    let mut plans = Vec::new();
    let src = TraceSource::open(path)?;
    for t in src.iter() {
        let t = t?;
        let p = build_with(&t, &corpus, codec, split)
            .map_err(|e| PointError::Plan(format!("{}: {e}", t.origin)))?;
        plans.push((t.origin, Arc::new(p)));
    }
    if plans.is_empty() {
        return Err(src.no_traces(path).into());
    }
    plans.sort_by(|a, b| a.1.trace_id.cmp(&b.1.trace_id));
    if let Some(w) = plans
        .windows(2)
        .find(|w| w[0].1.trace_id == w[1].1.trace_id)
    {
        // two lanes would replay one session as two, sharing every prefix block
        return Err(PointError::Plan(format!(
            "trace {} appears twice ({} and {}); each trace id must be unique",
            w[0].1.trace_id, w[0].0, w[1].0
        )));
    }
    Ok(plans.into_iter().map(|(_, p)| p).collect())
}

/// Runs one point against `client`'s endpoint.
pub async fn run_point(
    client: ClientCtx,
    plans: Vec<Arc<TracePlan>>,
    cfg: PointConfig,
    cancel: Cancel,
) -> Result<PointResult, PointError> {
    std::fs::create_dir_all(&cfg.out_dir).map_err(|err| PointError::Io {
        path: cfg.out_dir.display().to_string(),
        err,
    })?;
    let records_path = cfg.out_dir.join("agentx_records.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&records_path).map_err(|err| {
        PointError::Io {
            path: records_path.display().to_string(),
            err,
        }
    })?);
    let expected_out = plans
        .iter()
        .map(|p| (p.trace_id.clone(), p.expected_out.clone()))
        .collect();
    let ep = client.endpoint.clone();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // server counters cover the profiling window: the first scrape waits for it to open
    let started = Arc::new(tokio::sync::Notify::new());
    let scraper = cfg.scrape_metrics.then(|| {
        tokio::spawn(scrape_until(
            ep,
            // every 1 s of the client's clock; on a clock slower than modelled time (the
            // virtual clock, time_scale < 1) every modelled second instead
            Duration::from_secs(1).div_f64(cfg.replay.time_scale.min(1.0)),
            Some(started.clone()),
            stop_rx,
            cfg.aiperf_export.then(|| crate::prom::ExportClock {
                origin: client.clock.origin(),
                time_scale: cfg.replay.time_scale,
            }),
        ))
    });
    let mut replay_cfg = cfg.replay.clone();
    replay_cfg.profiling_started = Some(started);
    let mut write_err = None;
    let scale = cfg.replay.time_scale;
    let cancel_probe = cancel.clone();
    let mut out = run(client, plans, replay_cfg, cancel, |r| {
        if write_err.is_none() {
            if let Err(e) = serde_json::to_writer(&mut f, &to_modelled(r.clone(), scale))
                .map_err(std::io::Error::other)
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.flush())
            {
                write_err = Some(e);
            }
        }
    })
    .await?;
    let _ = stop_tx.send(true);
    let cancelled = cancel_probe.is_cancelled();
    if let Some(e) = write_err.or_else(|| f.flush().err()) {
        return Err(PointError::Io {
            path: records_path.display().to_string(),
            err: e,
        });
    }
    let mut warnings = Vec::new();
    let server = match scraper {
        Some(h) => {
            let (set, export) = h.await.unwrap_or_default();
            if let Some(e) = export {
                let id = cfg.replay.benchmark_id.as_str();
                for (ext, text) in [
                    (
                        "json",
                        serde_json::to_string_pretty(&e.to_json(id)).unwrap_or_default(),
                    ),
                    ("csv", e.to_csv(id)),
                ] {
                    let p = cfg.out_dir.join(format!("{AIPERF_EXPORT}.{ext}"));
                    std::fs::write(&p, text).map_err(|err| PointError::Io {
                        path: p.display().to_string(),
                        err,
                    })?;
                }
            }
            // InferenceX stops on metrics of an unknown engine; servebench keeps the point and
            // says why the server block is empty
            ServerMetrics::from_scrapes(&set).unwrap_or_else(|e| {
                warnings.push(e.to_string());
                ServerMetrics::default()
            })
        }
        None => ServerMetrics::default(),
    };
    // the records file, the aggregate and the result all speak modelled time
    out.records = out
        .records
        .into_iter()
        .map(|r| to_modelled(r, scale))
        .collect();
    // context-overflow rejections are left out, as the harness leaves them out of its
    // per-record export and metrics (aiperf records_manager: the AGENTIC_REPLAY skip path);
    // so are requests the client cancelled (grace end, Ctrl-C): the harness records none
    let served = || {
        out.records
            .iter()
            .filter(|r| !r.context_overflow && !r.cancelled)
    };
    let recs: Vec<_> = served().map(|r| r.rec.clone()).collect();
    let prof = served().filter(|r| r.rec.phase == RecordPhase::Profiling);
    let (mut hit, mut total) = (0u64, 0u64);
    let mut reported_cache = ReportedCache::default();
    for r in prof {
        hit += u64::from(r.hit_blocks);
        total += u64::from(r.total_blocks);
        if r.rec.error.is_none() {
            reported_cache.add(r.prompt_tokens_server, r.prompt_tokens_cached);
        }
    }
    let short_window = cfg.replay.duration.as_secs() < MIN_VALID_DURATION_S;
    let mut submission_invalid_reasons = Vec::new();
    if short_window {
        submission_invalid_reasons.push("unsafe_override".to_string());
        warnings.push(format!(
            "unsafe_override: profiling window {} s < {MIN_VALID_DURATION_S} s (submission_valid=false)",
            cfg.replay.duration.as_secs()
        ));
    }
    let overflow = overflow_requests(&out.records);
    if out.context_overflows > 0 {
        warnings.push(format!(
            "context_overflow: {} sessions ended ({} warmup, {} of {} profiling requests rejected, left out of the metrics)",
            out.context_overflows, overflow.warmup, overflow.profiling, overflow.profiling_responses
        ));
    }
    let cut = out
        .records
        .iter()
        .filter(|r| r.cancelled && r.rec.phase == RecordPhase::Profiling)
        .count();
    if cut > 0 && !cancelled {
        warnings.push(format!(
            "grace: {cut} profiling requests still in flight {} s after the window were cancelled and left out of the metrics (the harness records none)",
            cfg.replay.grace.as_secs_f64()
        ));
    }
    if overflow.rate_exceeded() {
        submission_invalid_reasons.push("context_overflow_rate_exceeded".to_string());
    }
    if cancelled {
        submission_invalid_reasons.push("run_cancelled".to_string());
    }
    let inputs = AggInputs {
        identity: cfg.identity,
        theoretical_cache: Some((hit, total)),
        expected_out,
        server,
        warnings,
    };
    let agg = aggregate(&recs, &inputs);
    let gate = error_gate(&recs);
    let agg_path = cfg.out_dir.join("agentx.json");
    std::fs::write(&agg_path, to_json_text(&agg)).map_err(|err| PointError::Io {
        path: agg_path.display().to_string(),
        err,
    })?;
    Ok(PointResult {
        aggregate: agg,
        records: out.records,
        raw: out.raw,
        window_ns: (out.profiling_start_ns, out.profiling_end_ns),
        gate,
        context_overflows: out.context_overflows,
        records_path,
        agg_path,
        short_window,
        overflow,
        reported_cache,
        submission_invalid_reasons,
    })
}
