//! The Session's one point skeleton for every workload that is a stream of requests
//! ([`RequestWorkload`]: the fixed-sequence dataset, the multi-turn conversation replay). A
//! workload says only what a point sends ([`PointRequests`]: its warmup and measured sources,
//! the load, the prompts the prefix-cache bookkeeping fingerprints) and what the point is
//! ([`PointMeta`]: benchmark type, API, how prompt tokens are counted, the raw result's run
//! facts); [`Measured`] does the rest, once for all of them: the record writer
//! (`records.jsonl`), warmup, the prefix-cache flush and counters before and after the measured
//! phase, progress, the statistics ([`servebench_metrics::compute`]), the validity rules, the
//! rescaling to modelled time on the simulator, and the agg row and raw result.
//!
//! The AgentX replay runs its own phases (the agentx crate's replay engine) and shares the
//! tail: [`point_row`] (agg row) and [`statistics`] (metrics rescaled to modelled time).

use std::future::Future;
use std::sync::Arc;

use servebench_client::{
    run_phase, Api, ClientCtx, Load, Phase, RecordWriterThread, RequestRecord,
};
use servebench_metrics::{
    agg_row, compute, result_doc, AggExtra, AggRow, PointMetrics, PointOptions, PromptCount,
    ResultFile, ResultSetup, RunInfo, ValidityOptions,
};
use servebench_workload::RequestSource;

use crate::cache::CacheControl;
use crate::error::{PipelineError, Result};
use crate::executor::{Executor, PointOutput, PointSpec, SweepCtx};
use crate::power::{NvmlSampler, PointPower, PowerSampler};
use crate::progress::{PointProgress, ProgressCounter};

/// The warmup of a point: requests sent before the measured phase (closed loop at the point's
/// concurrency), written to `records.jsonl` as `warmup` and left out of the statistics. A
/// workload with a warmup phase (even of 0 requests) stops the point there on Ctrl-C
/// ([`PipelineError::Interrupted`]) instead of measuring a cancelled phase.
pub struct Warmup {
    /// The requests.
    pub source: Box<dyn RequestSource>,
    /// How many (the progress bar's total).
    pub requests: u64,
}

/// What one point sends.
pub struct PointRequests {
    /// Sent first, when the workload has a warmup phase.
    pub warmup: Option<Warmup>,
    /// The measured phase's requests.
    pub measured: Box<dyn RequestSource>,
    /// How many measured requests (the progress bar's total).
    pub requests: u64,
    /// How the measured requests are paced (wall time: rates already × the simulator speedup).
    pub load: Load,
    /// Dataset seed the prefix-cache warnings name (`--flush-cache`; 0 when there is none).
    pub cache_seed: u32,
    /// Fingerprints ([`crate::cache::fingerprint`]) of the prompts the measured phase sends,
    /// for the warm-cache warning of a later point that repeats them.
    pub cache_prompts: Vec<u64>,
}

/// What a point is: the agg row's and the raw result's facts that only the workload knows.
pub struct PointMeta {
    /// The API the requests used.
    pub api: Api,
    /// Where prompt token counts come from.
    pub prompt_count: PromptCount,
    /// Whether the agg row keeps the identity's nominal ISL/OSL (`false`: `null`, the lengths
    /// come from the workload's own data).
    pub lengths_in_row: bool,
    /// `backend` of the raw result (`openai-chat`, `vllm`, …).
    pub backend: String,
    /// `tokenizer_id` of the raw result.
    pub tokenizer_id: String,
    /// `num_prompts` of the raw result (measured requests).
    pub num_prompts: u64,
    /// Open-loop request rate, req/s (modelled time); `None`: closed loop.
    pub request_rate: Option<f64>,
    /// Open-loop burstiness (1 for a closed loop).
    pub burstiness: f64,
    /// Warmup requests sent.
    pub num_warmups: u64,
    /// The workload's one-line description (`dataset` of the raw result).
    pub dataset: String,
}

/// A workload that is a stream of requests: it builds its requests and says what a point is;
/// the session's [`Measured`] skeleton measures it.
pub trait RequestWorkload {
    /// What is built once per concurrency and reused by its repeats.
    type Prepared;

    /// The client context requests are sent with (endpoint, body shape, timeouts).
    fn client(&self) -> &ClientCtx;

    /// Builds what concurrency `conc` sends.
    fn prepare(
        &mut self,
        ctx: &SweepCtx<'_>,
        conc: u64,
    ) -> impl Future<Output = Result<Self::Prepared>>;

    /// One line describing the workload (`summary.json` `datasets`; the raw result's `dataset`).
    fn describe(&self, prepared: &Self::Prepared) -> String;

    /// A line saying what a point of concurrency `conc` sends, printed before its first point.
    fn requests_line(&self, _ctx: &SweepCtx<'_>, _conc: u64) -> Option<String> {
        None
    }

    /// The requests of one point.
    fn requests(
        &self,
        ctx: &SweepCtx<'_>,
        prepared: &Self::Prepared,
        point: &PointSpec,
    ) -> PointRequests;

    /// What the point is.
    fn meta(&self, ctx: &SweepCtx<'_>, prepared: &Self::Prepared, point: &PointSpec) -> PointMeta;

    /// The validity rules the requests promise (fixed output length, prompt lengths); `None`:
    /// none checked.
    fn validity(&self) -> Option<&ValidityOptions> {
        None
    }

    /// Lines said under the table about the measured records (after rescaling).
    fn notes(&self, _measured: &[RequestRecord]) -> Vec<String> {
        Vec::new()
    }
}

/// A [`RequestWorkload`] measured by the session's one point skeleton.
pub struct Measured<W> {
    /// The workload.
    pub workload: W,
    /// `--flush-cache` and the prompts sent so far (warm-cache warnings).
    cache: CacheControl,
    /// How each point's GPU energy is measured: decided at the first point
    /// ([`PointPower::resolve`]).
    power: Option<PointPower>,
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
        let label = point.label();
        let req = self.workload.requests(ctx, prepared, point);
        let client = self.workload.client();
        let has_warmup = req.warmup.is_some();
        let writer = RecordWriterThread::spawn(&point.dir.join("records.jsonl"))
            .map_err(PipelineError::Client)?;
        // the warmup's records, kept for the point's in-memory records (as in records.jsonl)
        let mut warmup_records = Vec::new();
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
            warmup_records = r.records;
        }
        if has_warmup && ctx.cancel.is_cancelled() {
            writer.finish().map_err(PipelineError::Client)?;
            return Err(PipelineError::Interrupted);
        }
        // after the warmup (it may repeat a prompt), right before the measured phase
        let cache_before = self
            .cache
            .before_measured(
                &ctx.target.endpoint,
                &label,
                req.cache_seed,
                &req.cache_prompts,
                &**ctx.console,
            )
            .await;
        if self.power.is_none() {
            self.power = Some(resolve_power(ctx)?);
        }
        let power = self.power.as_ref().expect("resolved above");
        let sampling = power.start(&ctx.target.endpoint).await;
        let bar = PointProgress::requests(ctx, req.requests, &label);
        let wall_start = chrono::Utc::now();
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
        let wall_end = chrono::Utc::now();
        writer.finish().map_err(PipelineError::Client)?;
        let prefix_cache = self
            .cache
            .after_measured(&ctx.target.endpoint, &label, cache_before, &**ctx.console)
            .await;
        self.cache.sent(&req.cache_prompts);

        let meta = self.workload.meta(ctx, prepared, point);
        let opts = PointOptions {
            compat: ctx.plan.compat,
            itl_mode: ctx.plan.itl_mode,
            phase_window_ns: (res.start_ns, res.end_ns),
            max_failed_fraction: 0.05,
            cancelled: res.cancelled,
            prompt_count: meta.prompt_count,
        };
        let mut m = compute(&res.records, &opts);
        let mut validity_not_checked = Vec::new();
        if let Some(rules) = self.workload.validity() {
            let v = servebench_metrics::validity::check(&res.records, rules);
            m.apply_validity(&v, rules);
            validity_not_checked = v.unchecked;
        }
        m.rescale_time(ctx.target.sim_speedup);
        m.notes.extend(self.workload.notes(&res.records));
        let mut agg = point_row(ctx, point, &m, meta.api, meta.lengths_in_row);
        let window = servebench_metrics::power::aggregate::BenchmarkData {
            start: wall_start.timestamp_micros() as f64 / 1e6,
            end: wall_end.timestamp_micros() as f64 / 1e6,
            duration: (wall_end - wall_start).num_microseconds().unwrap_or(0) as f64 / 1e6,
            completed: m.completed,
            total_input_tokens: m.total_input_tokens,
            total_output_tokens: m.total_output_tokens,
        };
        if let Some(e) = power
            .finish(
                &ctx.target.endpoint,
                sampling,
                &window,
                i64::from(ctx.identity.num_gpus()),
            )
            .await
        {
            if !e.sidecar.is_null() {
                write_sidecar(&point.dir, &e.sidecar)?;
            }
            ctx.console.line(&format!("{label}: {}", e.line));
            agg.power = Some(e.fields);
        }
        // On the virtual clock the run's times are modelled seconds from the Unix epoch at the
        // client clock's origin, not the host's date: two runs of the same inputs write the
        // same bytes (the real start is in summary.json and the store; docs/simulator.md).
        let real_s = (wall_end - wall_start).num_microseconds().unwrap_or(0) as f64 / 1e6;
        let (wall_start, wall_end) = if ctx.target.is_virtual() {
            let at = |ns: u64| {
                let us = (ns as f64 * ctx.target.sim_speedup / 1e3).round() as i64;
                chrono::DateTime::from_timestamp_micros(us).unwrap_or_default()
            };
            (at(res.start_ns), at(res.end_ns))
        } else {
            (wall_start, wall_end)
        };
        let info = RunInfo {
            date: wall_start.format("%Y%m%d-%H%M%S").to_string(),
            backend: meta.backend,
            model_id: ctx.model.to_string(),
            tokenizer_id: meta.tokenizer_id,
            num_prompts: meta.num_prompts,
            request_rate: meta.request_rate,
            burstiness: meta.burstiness,
            max_concurrency: Some(point.conc),
            benchmark_start_time_unix: wall_start.timestamp_micros() as f64 / 1e6,
            benchmark_end_time_unix: wall_end.timestamp_micros() as f64 / 1e6,
        };
        let setup = ResultSetup {
            api: meta.api.as_str().into(),
            engine: ctx.plan.engine.name().into(),
            endpoint: ctx.target.endpoint.base_url.clone(),
            request_fields: client
                .builder
                .sent_optional()
                .into_iter()
                .map(String::from)
                .collect(),
            new_connection_per_request: client.new_connection_per_request,
            num_warmups: meta.num_warmups,
            dataset: meta.dataset,
            validity_not_checked,
            simulator: ctx.target.simulator_info(),
            time_scale: ctx.target.sim_speedup,
            records_file: "records.jsonl".into(),
            repeat: point.repeat,
            repeats: point.repeats,
            prefix_cache,
        };
        Ok(PointOutput {
            spec: point.clone(),
            result: ResultFile::Single(Box::new(result_doc(&info, &m, setup))),
            metrics: m,
            agg,
            // the host's seconds (on the virtual clock the phase's own clock says modelled ÷
            // 0.001, not how long the machine took)
            wall_s: if ctx.target.is_virtual() {
                real_s
            } else {
                (res.end_ns.saturating_sub(res.start_ns)) as f64 / 1e9
            },
            records: warmup_records.into_iter().chain(res.records).collect(),
        })
    }
}

/// The statistics of a point's records (`opts`), rescaled to modelled time on the simulator.
pub fn statistics(
    ctx: &SweepCtx<'_>,
    records: &[RequestRecord],
    opts: &PointOptions,
) -> PointMetrics {
    let mut m = compute(records, opts);
    m.rescale_time(ctx.target.sim_speedup);
    m
}

/// The agg row of a point: the session's identity (its `benchmark_type` the workload's) at
/// the point's concurrency, its statistics and the workload's API; `lengths_in_row` false
/// clears the nominal ISL/OSL (a replay's lengths are its data's).
pub fn point_row(
    ctx: &SweepCtx<'_>,
    point: &PointSpec,
    m: &PointMetrics,
    api: Api,
    lengths_in_row: bool,
) -> AggRow {
    let extra = AggExtra {
        api: api.as_str().into(),
        engine: ctx.plan.engine.name().into(),
        endpoint: ctx.target.endpoint.base_url.clone(),
        records_file: "records.jsonl".into(),
    };
    let mut agg = agg_row(ctx.identity, Some(point.conc), m, &extra);
    if !lengths_in_row {
        agg.identity.isl = None;
        agg.identity.osl = None;
    }
    agg
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
