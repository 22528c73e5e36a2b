//! [`AgentxExecutor`]: AgentX trace replay (`servebench-agentx`, MEASUREMENT.md Part 2 §5) as an
//! [`Executor`] (dispatched by [`crate::workload::AnyExecutor`] for `--scenario agentx`).
//!
//! Per point: `conc` lanes replay the traces for the profiling window (warmup excluded by
//! phase), the engine's `/metrics` is scraped during it, and the point writes
//! `agentx_records.jsonl` (one line per request: conversation, turn, phase, marker, roles,
//! timings), `records.jsonl` (the measuring client's records), `agentx.json` (the AgentX
//! aggregate with InferenceX's key sets) and the usual agg row with `benchmark_type
//! agentic_traces` (the AgentX aggregate is kept under its `agentx` key).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use servebench_agentx::aggregate::{to_rounded_value, AggIdentity};
use servebench_agentx::plan::TracePlan;
use servebench_agentx::point::{load_plans, run_point, PointConfig};
use servebench_agentx::synth::{FastTokenizer, TokenCodec, WordCodec};
use servebench_agentx::ReplayConfig;
use servebench_client::{Api, BodyBuilder, ClientCtx, Clock, Compat, JsonlWriter};
use servebench_contracts::{AgentxResultDoc, AgentxServebench};
use servebench_metrics::{ItlMode, PointOptions, ResultFile};
use servebench_workload::LocalTokenizer;

use crate::console::Console;
use crate::error::{flag, io, IoOp, PipelineError, Result};
use crate::executor::{Executor, PointOutput, PointSpec, SweepCtx};
use crate::measure::{point_row, statistics};
use crate::plan::{AgentxPlan, SweepPlan};
use crate::target::Target;

/// The AgentX replay against one target.
pub struct AgentxExecutor {
    /// `--flush-cache`: flushed before each point's warmup, so every point starts cold as on
    /// the fresh server InferenceX launches per point (the warmup then primes it).
    cache: crate::cache::CacheControl,
    base_ctx: ClientCtx,
    plans: Arc<Vec<Arc<TracePlan>>>,
    cfg: AgentxPlan,
    counting: String,
    /// How each point's GPU energy is measured, decided at the first point as for fixed-seq
    /// points (`crate::measure::resolve_power`): NVML, a telemetry file, the simulator's model,
    /// or `telemetry_missing` with the reason.
    power: Option<crate::power::PointPower>,
}

impl AgentxExecutor {
    /// Loads and reconstructs the traces with the served model's tokenizer (`--tokenizer`;
    /// without it one token = 4 characters, said on the console).
    pub async fn new(
        plan: &SweepPlan,
        ax: &AgentxPlan,
        target: &Target,
        model: &str,
        console: &dyn Console,
    ) -> Result<AgentxExecutor> {
        if ax.traces.as_os_str().is_empty() {
            return Err(flag!("--scenario agentx needs --traces PATH (a folder of Weka trace_*.json files or a traces.jsonl)"));
        }
        let codec: Arc<dyn TokenCodec> = match &plan.tokenizer {
            Some(p) => Arc::new(FastTokenizer::new(
                LocalTokenizer::from_path(p).map_err(PipelineError::Workload)?,
            )),
            None => {
                console.line("no --tokenizer: AgentX prompts are sized in 4-character words, not the served model's tokens (pass --tokenizer DIR for token-exact prompts)");
                Arc::new(WordCodec)
            }
        };
        let counting = codec.describe();
        let traces = ax.traces.clone();
        let c2 = codec.clone();
        let plans = tokio::task::spawn_blocking(move || load_plans(&traces, &*c2))
            .await?
            .map_err(|source| PipelineError::Traces {
                path: ax.traces.clone(),
                source,
            })?;
        let base_ctx = ClientCtx {
            endpoint: target.endpoint.clone(),
            builder: BodyBuilder::new(model, Api::Chat, plan.engine, Compat::Servebench, false),
            compat: Compat::Servebench,
            new_connection_per_request: plan.new_connection_per_request,
            timeout: target.client_wait(plan.timeout_s),
            clock: Clock::start(),
            capture_text: false,
            api_key: plan.api_key.clone(),
        };
        Ok(AgentxExecutor {
            cache: crate::cache::CacheControl::new(plan.flush_cache.clone(), plan.engine),
            base_ctx,
            plans: Arc::new(plans),
            cfg: ax.clone(),
            counting,
            power: None,
        })
    }
}

impl Executor for AgentxExecutor {
    type Workload = Arc<Vec<Arc<TracePlan>>>;

    async fn prepare(&mut self, _ctx: &SweepCtx<'_>, _conc: u64) -> Result<Self::Workload> {
        Ok(self.plans.clone())
    }

    fn describe(&self, w: &Self::Workload) -> String {
        let short = if self.cfg.duration_s < servebench_agentx::point::MIN_VALID_DURATION_S {
            " (short window: marked invalid, like --unsafe-override)"
        } else {
            ""
        };
        format!(
            "AgentX trace replay: {} traces from {}, {} s profiling window{short}, {}",
            w.len(),
            self.cfg.traces.display(),
            self.cfg.duration_s,
            self.counting
        )
    }

    async fn run_point(
        &mut self,
        ctx: &SweepCtx<'_>,
        plans: &Self::Workload,
        point: &PointSpec,
    ) -> Result<PointOutput> {
        let id = ctx.identity;
        let wall_start = std::time::Instant::now();
        if let Some(b) = self
            .cache
            .before_measured(&ctx.target.endpoint, &point.label(), 0, &[], &**ctx.console)
            .await
        {
            if let (true, how) = b.flush() {
                ctx.console.warn(&format!(
                    "{}: prefix cache flushed before the warmup ({how})",
                    point.label()
                ));
            }
        }
        let cfg = PointConfig {
            replay: ReplayConfig {
                conc: point.conc as usize,
                duration: Duration::from_secs(self.cfg.duration_s),
                model: ctx.model.to_string(),
                benchmark_id: if ctx.target.is_virtual() {
                    // the same markers every run: a virtual run is reproducible byte for byte
                    fixed_benchmark_id(point.conc, point.repeat)
                } else {
                    benchmark_id()
                },
                // recorded think times, caps and the window are modelled time
                time_scale: ctx.target.sim_speedup,
                body: agentx_body_fields(ctx.plan.engine),
                ..Default::default()
            },
            identity: AggIdentity::of(id, point.conc as u32),
            scrape_metrics: true,
            // on the virtual clock the engine is this process's simulator: AIPerf's
            // server-metrics export comes from these scrapes (a recipe's aiperf step copies it)
            aiperf_export: ctx.target.is_virtual(),
            out_dir: point.dir.clone(),
        };
        let (anchor, sampling) = self.start_power(ctx).await?;
        let progress =
            crate::progress::PointProgress::window(ctx, self.cfg.duration_s, &point.label());
        let res = run_point(
            self.base_ctx.clone(),
            plans.to_vec(),
            cfg,
            ctx.cancel.clone(),
        )
        .await;
        progress.finish();
        let res = res.map_err(|source| PipelineError::Agentx {
            point: point.label(),
            source,
        })?;
        write_client_records(&point.dir.join("records.jsonl"), &res.raw)?;
        let mut m = statistics(
            ctx,
            &res.raw,
            &PointOptions {
                compat: Compat::Servebench,
                itl_mode: ItlMode::Chunk,
                phase_window_ns: res.window_ns,
                max_failed_fraction: 0.10,
                cancelled: ctx.cancel.is_cancelled(),
                prompt_count: servebench_metrics::PromptCount::Server,
            },
        );
        let ov = res.overflow;
        if res.context_overflows > 0 {
            // said under the table, not only in agentx.json: the rejections are the server's
            // context limit, not a broken engine (MEASUREMENT.md Part 2 §5: overflow ends the
            // session); like the harness, the rejected requests are left out of the statistics
            m.notes.push(format!(
                "context overflow: {} session(s) ended because the server rejected the prompt as \
                 longer than its context ({} warmup and {} of {} profiling requests; left out of \
                 the statistics and the error gate, as InferenceX's harness does)",
                res.context_overflows, ov.warmup, ov.profiling, ov.profiling_responses
            ));
        }
        if res.short_window {
            m.notes.push(format!(
                "not a valid InferenceX submission: a {} s profiling window is under the {} s \
                 InferenceX requires (unsafe_override); fine for trying things out",
                self.cfg.duration_s,
                servebench_agentx::point::MIN_VALID_DURATION_S
            ));
        }
        if ov.rate_exceeded() {
            // InferenceX's verdict, said like the short window's: the numbers stand, but the
            // point is not a valid submission (agentx_submission_valid = false)
            m.notes.push(format!(
                "not a valid InferenceX submission: {} of {} profiling requests ({:.1} %) were \
                 rejected as longer than the server's context, more than {} % \
                 (context_overflow_rate_exceeded)",
                ov.profiling,
                ov.profiling_responses,
                ov.rate() * 100.0,
                servebench_contracts::result::CONTEXT_OVERFLOW_RATE_LIMIT * 100.0
            ));
        }
        let rc = res.reported_cache;
        match rc.hit_rate {
            Some(h) => m.notes.push(format!(
                "server-reported prefix-cache reuse {h:.3}: {} of {} prompt tokens over {} of {} \
                 profiling requests (usage.prompt_tokens_details.cached_tokens; these requests \
                 only, unlike the /metrics counters)",
                rc.cached_tokens, rc.prompt_tokens, rc.requests_reporting, rc.requests
            )),
            // the harness warns the same way (aiperf cache_reporting_hint)
            None if rc.requests > 0 => m.notes.push(
                "the server reported no per-request cached_tokens (vLLM: \
                 --enable-prompt-tokens-details, SGLang: --enable-cache-report); prefix-cache \
                 hits come from its /metrics counters only"
                    .into(),
            ),
            None => {}
        }
        let mut agg = point_row(ctx, point, &m, Api::Chat, false);
        let window = profiling_window(anchor, res.window_ns, &m);
        agg.power = self.finish_power(ctx, point, sampling, &window).await?;
        let ax = to_rounded_value(&res.aggregate);
        agg.extra
            .insert("scenario_type".into(), json!("agentic-coding"));
        agg.extra.insert(
            "agentx_submission_valid".into(),
            json!(res.submission_invalid_reasons.is_empty() && res.gate.passed),
        );
        agg.extra.insert(
            "agentx_submission_invalid_reasons".into(),
            json!(res.submission_invalid_reasons),
        );
        agg.extra.insert("agentx".into(), ax.clone());
        let aggregate = match ax {
            serde_json::Value::Object(o) => o,
            _ => unreachable!("the AgentX aggregate serializes to an object"),
        };
        let result = AgentxResultDoc {
            aggregate,
            servebench: AgentxServebench {
                records_file: "agentx_records.jsonl".into(),
                client_records_file: "records.jsonl".into(),
                error_gate_passed: res.gate.passed,
                context_overflows: res.context_overflows,
                context_overflow_requests: ov,
                server_reported_cache: res.reported_cache,
                submission_invalid_reasons: res.submission_invalid_reasons,
                short_window: res.short_window,
                token_counting: self.counting.clone(),
                simulator: ctx.target.simulator_info(),
                time_scale: ctx.target.sim_speedup,
                repeat: point.repeat,
                repeats: point.repeats,
            },
        };
        Ok(PointOutput {
            spec: point.clone(),
            metrics: m,
            agg,
            result: ResultFile::Agentx(Box::new(result)),
            wall_s: wall_start.elapsed().as_secs_f64(),
            records: res.raw.into(),
        })
    }
}

/// The power window of an AgentX point, as InferenceX's `power_adapter.py` builds it: the
/// profiling window (Unix s: the client clock's `window_ns` through `anchor` = (Unix s, clock
/// ns) taken together before the point) and the successful profiling requests with their input
/// and output tokens.
pub fn profiling_window(
    anchor: (f64, u64),
    window_ns: (u64, u64),
    m: &servebench_metrics::PointMetrics,
) -> servebench_metrics::power::aggregate::BenchmarkData {
    window_of(
        anchor,
        window_ns,
        (m.completed, m.total_input_tokens, m.total_output_tokens),
    )
}

/// [`profiling_window`] of `(completed, input tokens, output tokens)`.
pub fn window_of(
    anchor: (f64, u64),
    window_ns: (u64, u64),
    (completed, total_input_tokens, total_output_tokens): (u64, u64, u64),
) -> servebench_metrics::power::aggregate::BenchmarkData {
    let unix = |ns: u64| anchor.0 + (ns as f64 - anchor.1 as f64) / 1e9;
    let (start, end) = (unix(window_ns.0), unix(window_ns.1));
    servebench_metrics::power::aggregate::BenchmarkData {
        start,
        end,
        duration: end - start,
        completed,
        total_input_tokens,
        total_output_tokens,
    }
}

impl AgentxExecutor {
    /// Starts the point's power sampling (the sweep's choice, resolved at the first point):
    /// the anchor (Unix s, client clock ns) taken together, and the running sampling. It runs
    /// over the whole point; [`AgentxExecutor::finish_power`] cuts the profiling window out.
    async fn start_power(
        &mut self,
        ctx: &SweepCtx<'_>,
    ) -> Result<((f64, u64), crate::power::PointSampling)> {
        if self.power.is_none() {
            self.power = Some(crate::measure::resolve_power(ctx)?);
        }
        let power = self.power.as_ref().expect("resolved above");
        let anchor = (crate::power::unix_now(), self.base_ctx.clock.now_ns());
        Ok((anchor, power.start(&ctx.target.endpoint).await))
    }

    /// The point's energy over its profiling `window` (the row's power block; `None` with
    /// `--power off`): the sidecar written, the console told.
    async fn finish_power(
        &self,
        ctx: &SweepCtx<'_>,
        point: &PointSpec,
        sampling: crate::power::PointSampling,
        window: &servebench_metrics::power::aggregate::BenchmarkData,
    ) -> Result<Option<servebench_contracts::PowerFields>> {
        let Some(power) = &self.power else {
            return Ok(None);
        };
        let Some(e) = power
            .finish_window(
                &ctx.target.endpoint,
                sampling,
                window,
                ctx.target.sim_speedup,
                i64::from(ctx.identity.num_gpus()),
            )
            .await
        else {
            return Ok(None);
        };
        if !e.sidecar.is_null() {
            crate::measure::write_sidecar(&point.dir, &e.sidecar)?;
        }
        ctx.console.line(&format!("{}: {}", point.label(), e.line));
        Ok(Some(e.fields))
    }
}

fn write_client_records(path: &Path, recs: &[servebench_client::RequestRecord]) -> Result<()> {
    let w = JsonlWriter::create(path).map_err(PipelineError::Client)?;
    for r in recs {
        w.write(r).map_err(io(IoOp::Write, path))?;
    }
    Ok(())
}

/// 12 hex chars, new per point (mixed into the cache-bust markers).
fn benchmark_id() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{:012x}",
        (ns ^ (u128::from(std::process::id()) << 40)) & 0xffff_ffff_ffff
    )
}

/// [`benchmark_id`] on the virtual clock: 12 hex chars from the point (conc, repeat) alone,
/// so two runs of the same inputs send the same bytes.
fn fixed_benchmark_id(conc: u64, repeat: u32) -> String {
    let x =
        (0x5eed_0029_u64 ^ (conc << 20) ^ u64::from(repeat)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{:012x}", x >> 16)
}

/// The AgentX body fields of an engine profile
/// ([`servebench_engines::BodyQuirks::agentx_cap_field`]/`agentx_ignore_eos`):
/// InferenceX's (`max_completion_tokens`, `ignore_eos`) for every engine that accepts them.
fn agentx_body_fields(engine: servebench_client::Engine) -> servebench_agentx::BodyFields {
    let p = engine.profile();
    servebench_agentx::BodyFields {
        cap_field: p.body.agentx_cap_field,
        ignore_eos: p.body.agentx_ignore_eos,
    }
}
