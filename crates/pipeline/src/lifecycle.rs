//! The Session's one point lifecycle ([`Measured`]): for every workload ([`RequestWorkload`])
//! the record writer (`records.jsonl`), the warmup of a stream, the prefix-cache flush and
//! counters around the measured phase (before a replay's own warmup), the energy sampling,
//! progress, the statistics ([`servebench_metrics::compute`]) with the workload's
//! [`crate::measure::StatRules`], the validity rules, the rescaling to modelled time on the
//! simulator, the agg row ([`point_row`]) and the raw result (InferenceX's document for a
//! stream, the replay's own for a [`crate::measure::Replay`]). The workload says only what a
//! point sends and what it is ([`crate::measure`]).

use std::sync::Arc;

use servebench_client::{
    run_phase, Api, ClientCtx, Load, Phase, RecordWriterThread, RequestRecord,
};
use servebench_metrics::{
    compute, result_doc, PointMetrics, PointOptions, ResultFile, ResultSetup, RunInfo,
};

use crate::cache::CacheControl;
use crate::error::{PipelineError, Result};
use crate::executor::{Executor, PointOutput, PointSpec, SweepCtx};
use crate::measure::{
    point_row, profiling_window, PointRequests, PointRun, Replay, RequestWorkload, StreamFacts,
};
use crate::power::{NvmlSampler, PointPower, PointSampling, PowerSampler};
use crate::progress::{PointProgress, ProgressCounter};

/// A [`RequestWorkload`] measured by the session's one point lifecycle.
pub struct Measured<W> {
    /// The workload.
    pub workload: W,
    /// `--flush-cache` and the prompts sent so far (warm-cache warnings).
    cache: CacheControl,
    /// How each point's GPU energy is measured: decided at the first point
    /// ([`PointPower::resolve`]).
    power: Option<PointPower>,
}

/// What a point's run left for the statistics, the row and the result.
struct Sent {
    /// Records of the stream's warmup (kept for the point's records; not measured).
    warmup: Vec<RequestRecord>,
    /// The records the statistics are computed over.
    measured: Vec<RequestRecord>,
    /// The phase window the statistics use, ns of the client clock.
    window_ns: (u64, u64),
    /// Ctrl-C stopped the run.
    cancelled: bool,
    /// The energy sampling started before the run.
    sampling: PointSampling,
    /// How the run is placed in Unix time.
    clock: RunClock,
}

/// A stream's measured phase in the host's time, its `prefix_cache` block and result facts.
struct StreamClock {
    /// The measured phase, ns of the client clock.
    phase_ns: (u64, u64),
    start: chrono::DateTime<chrono::Utc>,
    end: chrono::DateTime<chrono::Utc>,
    prefix_cache: Option<serde_json::Value>,
    facts: StreamFacts,
}

/// How a run is placed in Unix time (the energy window, the raw result's times, `wall_s`).
enum RunClock {
    /// A stream's measured phase.
    Stream(StreamClock),
    /// A replay: (Unix s, client clock ns) taken together before it, when the lifecycle began,
    /// and what the replay handed back besides its records.
    Replay {
        anchor: (f64, u64),
        began: std::time::Instant,
        notes: Vec<String>,
        row_keys: Vec<(String, serde_json::Value)>,
        result: ResultFile,
    },
}

impl<W: RequestWorkload> Measured<W> {
    /// `workload` with the plan's prefix-cache control (`--flush-cache`, the engine profile).
    pub fn new(plan: &crate::plan::SweepPlan, workload: W) -> Measured<W> {
        Measured {
            workload,
            cache: CacheControl::new(plan.flush_cache.clone(), plan.engine),
            power: None,
        }
    }

    /// The sweep's energy measurement (resolved at the first point) and a sampling started now.
    async fn start_power(&mut self, ctx: &SweepCtx<'_>) -> Result<PointSampling> {
        if self.power.is_none() {
            self.power = Some(resolve_power(ctx)?);
        }
        let power = self.power.as_ref().expect("resolved above");
        Ok(power.start(&ctx.target.endpoint).await)
    }

    /// A stream: warmup, prefix cache before, energy, the measured phase, prefix cache after.
    async fn stream(
        &mut self,
        ctx: &SweepCtx<'_>,
        point: &PointSpec,
        req: PointRequests,
        writer: &RecordWriterThread,
    ) -> Result<Sent> {
        let label = point.label();
        let client = self.workload.client();
        let has_warmup = req.warmup.is_some();
        // the warmup's records, kept for the point's in-memory records (as in records.jsonl)
        let mut warmup = Vec::new();
        if let Some(w) = req.warmup.filter(|w| w.requests > 0) {
            let bar = PointProgress::requests(ctx, w.requests, &format!("{label} warmup"));
            let r = run_phase(
                client.clone(),
                Phase::Warmup,
                w.source,
                Load::Closed {
                    concurrency: point.conc as usize,
                },
                sink(writer.sender(), bar.counter()),
                ctx.cancel.clone(),
            )
            .await;
            bar.finish();
            let failed = r.records.iter().filter(|r| !r.success).count();
            if failed > 0 && !ctx.tty {
                ctx.console.warn(&format!(
                    "{label}: warmup: {failed} of {} requests failed",
                    r.records.len()
                ));
            }
            warmup = r.records;
        }
        if has_warmup && ctx.cancel.is_cancelled() {
            return Err(PipelineError::Interrupted);
        }
        // after the warmup (it may repeat a prompt), right before the measured phase
        let ep = &ctx.target.endpoint;
        let before = self
            .cache
            .before_measured(
                ep,
                &label,
                req.cache_seed,
                &req.cache_prompts,
                &**ctx.console,
            )
            .await;
        let sampling = self.start_power(ctx).await?;
        let client = self.workload.client();
        let bar = PointProgress::requests(ctx, req.requests, &label);
        let start = chrono::Utc::now();
        let res = run_phase(
            client.clone(),
            Phase::Measured,
            req.measured,
            req.load,
            sink(writer.sender(), bar.counter()),
            ctx.cancel.clone(),
        )
        .await;
        bar.finish();
        let end = chrono::Utc::now();
        let prefix_cache = self
            .cache
            .after_measured(ep, &label, before, &**ctx.console)
            .await;
        self.cache.sent(&req.cache_prompts);
        Ok(Sent {
            warmup,
            measured: res.records,
            window_ns: (res.start_ns, res.end_ns),
            cancelled: res.cancelled,
            sampling,
            clock: RunClock::Stream(StreamClock {
                phase_ns: (res.start_ns, res.end_ns),
                start,
                end,
                prefix_cache,
                facts: req.facts,
            }),
        })
    }

    /// A replay: prefix cache flushed before its warmup, energy, the replay over its window;
    /// its client records go to the writer.
    async fn replay(
        &mut self,
        ctx: &SweepCtx<'_>,
        point: &PointSpec,
        replay: Replay,
        writer: &RecordWriterThread,
        began: std::time::Instant,
    ) -> Result<Sent> {
        let label = point.label();
        let ep = &ctx.target.endpoint;
        if let Some(b) = self
            .cache
            .before_measured(ep, &label, 0, &[], &**ctx.console)
            .await
        {
            if let (true, how) = b.flush() {
                ctx.console.warn(&format!(
                    "{label}: prefix cache flushed before the warmup ({how})"
                ));
            }
        }
        let anchor = (
            crate::power::unix_now(),
            self.workload.client().clock.now_ns(),
        );
        let sampling = self.start_power(ctx).await?;
        let progress = PointProgress::window(ctx, replay.window_s, &label);
        let run = replay.run.await;
        progress.finish();
        let run = run?;
        let tx = writer.sender();
        for r in &run.records {
            let _ = tx.send(r.clone());
        }
        Ok(Sent {
            warmup: Vec::new(),
            measured: run.records,
            window_ns: run.window_ns,
            cancelled: ctx.cancel.is_cancelled(),
            sampling,
            clock: RunClock::Replay {
                anchor,
                began,
                notes: run.notes,
                row_keys: run.row_keys,
                result: run.result,
            },
        })
    }

    /// The point's energy over its window (the row's power block; `None` with `--power off`):
    /// a stream's measured phase in host time, a replay's profiling window through its anchor.
    /// The sidecar is written and the console told.
    async fn finish_power(
        &self,
        ctx: &SweepCtx<'_>,
        point: &PointSpec,
        sent: &mut Sent,
        m: &PointMetrics,
    ) -> Result<Option<servebench_contracts::PowerFields>> {
        let Some(power) = &self.power else {
            return Ok(None);
        };
        let (ep, gpus) = (&ctx.target.endpoint, i64::from(ctx.identity.num_gpus()));
        let sampling = std::mem::replace(&mut sent.sampling, PointSampling::Idle);
        let energy = match &sent.clock {
            RunClock::Stream(StreamClock { start, end, .. }) => {
                let window = servebench_metrics::power::aggregate::BenchmarkData {
                    start: start.timestamp_micros() as f64 / 1e6,
                    end: end.timestamp_micros() as f64 / 1e6,
                    duration: (*end - *start).num_microseconds().unwrap_or(0) as f64 / 1e6,
                    completed: m.completed,
                    total_input_tokens: m.total_input_tokens,
                    total_output_tokens: m.total_output_tokens,
                };
                power.finish(ep, sampling, &window, gpus).await
            }
            RunClock::Replay { anchor, .. } => {
                let window = profiling_window(*anchor, sent.window_ns, m);
                let scale = ctx.target.sim_speedup;
                power
                    .finish_window(ep, sampling, &window, scale, gpus)
                    .await
            }
        };
        let Some(e) = energy else {
            return Ok(None);
        };
        if !e.sidecar.is_null() {
            write_sidecar(&point.dir, &e.sidecar)?;
        }
        ctx.console.line(&format!("{}: {}", point.label(), e.line));
        Ok(Some(e.fields))
    }
}

impl<W: RequestWorkload> Executor for Measured<W> {
    type Workload = W::Prepared;

    async fn prepare(&mut self, ctx: &SweepCtx<'_>, conc: u64) -> Result<W::Prepared> {
        self.workload.prepare(ctx, conc).await
    }

    fn describe(&self, prepared: &W::Prepared) -> String {
        self.workload.describe(prepared)
    }

    fn requests_line(&self, ctx: &SweepCtx<'_>, conc: u64) -> Option<String> {
        self.workload.requests_line(ctx, conc)
    }

    async fn run_point(
        &mut self,
        ctx: &SweepCtx<'_>,
        prepared: &W::Prepared,
        point: &PointSpec,
    ) -> Result<PointOutput> {
        let began = std::time::Instant::now();
        let run = self.workload.requests(ctx, prepared, point);
        let writer = RecordWriterThread::spawn(&point.dir.join("records.jsonl"))
            .map_err(PipelineError::Client)?;
        let sent = match run {
            PointRun::Stream(req) => self.stream(ctx, point, req, &writer).await,
            PointRun::Replay(r) => self.replay(ctx, point, r, &writer, began).await,
        };
        writer.finish().map_err(PipelineError::Client)?;
        let mut sent = sent?;

        let meta = self.workload.meta(ctx, prepared, point);
        let rules = self.workload.rules(ctx);
        let opts = PointOptions {
            compat: rules.compat,
            itl_mode: rules.itl_mode,
            phase_window_ns: sent.window_ns,
            max_failed_fraction: rules.max_failed_fraction,
            cancelled: sent.cancelled,
            prompt_count: meta.prompt_count,
        };
        let mut m = compute(&sent.measured, &opts);
        let mut validity_not_checked = Vec::new();
        if let Some(rules) = self.workload.validity() {
            let v = servebench_metrics::validity::check(&sent.measured, rules);
            m.apply_validity(&v, rules);
            validity_not_checked = v.unchecked;
        }
        m.rescale_time(ctx.target.sim_speedup);
        m.notes.extend(self.workload.notes(&sent.measured));
        if let RunClock::Replay { notes, .. } = &mut sent.clock {
            m.notes.append(notes);
        }
        let mut agg = point_row(ctx, point, &m, meta.api, meta.lengths_in_row);
        agg.power = self.finish_power(ctx, point, &mut sent, &m).await?;
        let records = std::mem::take(&mut sent.measured);
        let (result, wall_s) = match sent.clock {
            RunClock::Stream(s) => {
                let client = self.workload.client();
                stream_result(ctx, point, &m, meta.api, client, s, validity_not_checked)
            }
            RunClock::Replay {
                began,
                row_keys,
                result,
                ..
            } => {
                agg.extra.extend(row_keys);
                (result, began.elapsed().as_secs_f64())
            }
        };
        Ok(PointOutput {
            spec: point.clone(),
            result,
            metrics: m,
            agg,
            wall_s,
            records: sent.warmup.into_iter().chain(records).collect(),
        })
    }
}

/// A stream point's raw result (InferenceX's document with the `servebench` block) and its
/// `wall_s`.
fn stream_result(
    ctx: &SweepCtx<'_>,
    point: &PointSpec,
    m: &PointMetrics,
    api: Api,
    client: &ClientCtx,
    s: StreamClock,
    validity_not_checked: Vec<String>,
) -> (ResultFile, f64) {
    let StreamClock {
        phase_ns,
        start: wall_start,
        end: wall_end,
        prefix_cache,
        facts,
    } = s;
    // On the virtual clock the run's times are modelled seconds from the Unix epoch at the
    // client clock's origin, not the host's date: two runs of the same inputs write the
    // same bytes (the real start is in summary.json and the store; docs/simulator.md).
    let real_s = (wall_end - wall_start).num_microseconds().unwrap_or(0) as f64 / 1e6;
    let (wall_start, wall_end) = if ctx.target.is_virtual() {
        let at = |ns: u64| {
            let us = (ns as f64 * ctx.target.sim_speedup / 1e3).round() as i64;
            chrono::DateTime::from_timestamp_micros(us).unwrap_or_default()
        };
        (at(phase_ns.0), at(phase_ns.1))
    } else {
        (wall_start, wall_end)
    };
    let info = RunInfo {
        date: wall_start.format("%Y%m%d-%H%M%S").to_string(),
        backend: facts.backend,
        model_id: ctx.model.to_string(),
        tokenizer_id: facts.tokenizer_id,
        num_prompts: facts.num_prompts,
        request_rate: facts.request_rate,
        burstiness: facts.burstiness,
        max_concurrency: Some(point.conc),
        benchmark_start_time_unix: wall_start.timestamp_micros() as f64 / 1e6,
        benchmark_end_time_unix: wall_end.timestamp_micros() as f64 / 1e6,
    };
    let setup = ResultSetup {
        api: api.as_str().into(),
        engine: ctx.plan.engine.name().into(),
        endpoint: ctx.target.endpoint.base_url.clone(),
        request_fields: client
            .builder
            .sent_optional()
            .into_iter()
            .map(String::from)
            .collect(),
        new_connection_per_request: client.new_connection_per_request,
        num_warmups: facts.num_warmups,
        dataset: facts.dataset,
        validity_not_checked,
        simulator: ctx.target.simulator_info(),
        time_scale: ctx.target.sim_speedup,
        records_file: "records.jsonl".into(),
        repeat: point.repeat,
        repeats: point.repeats,
        prefix_cache,
    };
    let result = ResultFile::Single(Box::new(result_doc(&info, m, setup)));
    // the host's seconds (on the virtual clock the phase's own clock says modelled ÷ 0.001,
    // not how long the machine took)
    let wall_s = if ctx.target.is_virtual() {
        real_s
    } else {
        (phase_ns.1.saturating_sub(phase_ns.0)) as f64 / 1e9
    };
    (result, wall_s)
}

/// The sweep's energy measurement, decided at its first point: `Err` only for `--power nvml`
/// without a readable NVML. The choice is said once.
pub(crate) fn resolve_power(ctx: &SweepCtx<'_>) -> Result<PointPower> {
    let mut said = String::new();
    let p = PointPower::resolve(
        &ctx.plan.power,
        // the embedded simulator, or a servebench simulator behind --endpoint (--sim-speedup)
        ctx.target.is_sim() || ctx.plan.sim.speedup.is_some(),
        &ctx.target.endpoint.host,
        |gpus| {
            NvmlSampler::open(gpus).map(|s| {
                said = format!("energy: NVML board power at 10 Hz on GPU {}", s.describe());
                Box::new(s) as Box<dyn PowerSampler>
            })
        },
    )
    .map_err(PipelineError::Msg)?;
    if let PointPower::Telemetry(f) = &p {
        said = format!(
            "energy: integrating {} over each point's window",
            f.display()
        );
    }
    if !said.is_empty() {
        ctx.console.line(&said);
    }
    Ok(p)
}

/// Writes a point's `power_validation.json` (InferenceX's sidecar, pretty JSON).
pub(crate) fn write_sidecar(dir: &std::path::Path, sidecar: &serde_json::Value) -> Result<()> {
    let path = dir.join("power_validation.json");
    let text = servebench_metrics::inferencex::pyjson::dumps_indent2(sidecar);
    std::fs::write(&path, text).map_err(|e| PipelineError::Io {
        op: crate::error::IoOp::Write,
        path: path.clone(),
        source: e,
    })
}

/// The record sink of a phase: each record to the writer thread, and one step of the bar.
fn sink(
    tx: std::sync::mpsc::Sender<RequestRecord>,
    bar: ProgressCounter,
) -> servebench_client::RecordSink {
    // records go to the writer thread; nothing here blocks the async workers
    let tx = std::sync::Mutex::new(tx);
    Arc::new(move |r: &RequestRecord| {
        let _ = tx.lock().unwrap_or_else(|p| p.into_inner()).send(r.clone());
        bar.inc();
    })
}
