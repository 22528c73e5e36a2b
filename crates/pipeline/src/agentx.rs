//! [`AgentxReplay`]: AgentX trace replay (`servebench-agentx`, MEASUREMENT.md Part 2 §5) as a
//! [`RequestWorkload`] whose points are a [`Replay`], measured by the session's one point
//! lifecycle ([`crate::lifecycle::Measured`], dispatched by [`crate::workload::AnyExecutor`] for
//! `--scenario agentx`): the lifecycle flushes the prefix cache before the replay's warmup,
//! samples energy over the profiling window, shows progress, writes `records.jsonl`, computes
//! the statistics and builds the agg row; this module says only what a point sends (the replay,
//! its notes, its agg-row keys and its `result.json`) and what it is.
//!
//! Per point: `conc` lanes replay the traces for the profiling window (warmup excluded by
//! phase), the engine's `/metrics` is scraped during it, and the point writes
//! `agentx_records.jsonl` (one line per request: conversation, turn, phase, marker, roles,
//! timings), `records.jsonl` (the measuring client's records), `agentx.json` (the AgentX
//! aggregate with InferenceX's key sets) and the usual agg row with `benchmark_type
//! agentic_traces` (the AgentX aggregate is kept under its `agentx` key).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use servebench_agentx::aggregate::{to_rounded_value, AggIdentity};
use servebench_agentx::plan::TracePlan;
use servebench_agentx::point::{load_plans, run_point, PointConfig, PointResult};
use servebench_agentx::synth::{FastTokenizer, TokenCodec, WordCodec};
use servebench_agentx::ReplayConfig;
use servebench_client::{Api, BodyBuilder, ClientCtx, Clock, Compat};
use servebench_contracts::{AgentxResultDoc, AgentxServebench};
use servebench_metrics::{ItlMode, PromptCount, ResultFile};
use servebench_workload::LocalTokenizer;

use crate::console::Console;
use crate::error::{flag, PipelineError, Result};
use crate::executor::{PointSpec, SweepCtx};
use crate::measure::{PointMeta, PointRun, Replay, ReplayRun, RequestWorkload, StatRules};
use crate::plan::{AgentxPlan, SweepPlan};
use crate::target::Target;

/// The AgentX replay against one target.
pub struct AgentxReplay {
    base_ctx: ClientCtx,
    plans: Arc<Vec<Arc<TracePlan>>>,
    cfg: AgentxPlan,
    counting: String,
}

impl AgentxReplay {
    /// Loads and reconstructs the traces with the served model's tokenizer (`--tokenizer`;
    /// without it one token = 4 characters, said on the console).
    pub async fn new(
        plan: &SweepPlan,
        ax: &AgentxPlan,
        target: &Target,
        model: &str,
        console: &dyn Console,
    ) -> Result<AgentxReplay> {
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
        Ok(AgentxReplay {
            base_ctx,
            plans: Arc::new(plans),
            cfg: ax.clone(),
            counting,
        })
    }
}

impl RequestWorkload for AgentxReplay {
    type Prepared = Arc<Vec<Arc<TracePlan>>>;

    fn client(&self) -> &ClientCtx {
        &self.base_ctx
    }

    async fn prepare(&mut self, _ctx: &SweepCtx<'_>, _conc: u64) -> Result<Self::Prepared> {
        Ok(self.plans.clone())
    }

    fn describe(&self, w: &Self::Prepared) -> String {
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

    /// `conc` lanes replay the traces (the agentx crate's replay engine: warmup primers, then
    /// the profiling window, the engine's `/metrics` scraped during it).
    fn requests(&self, ctx: &SweepCtx<'_>, plans: &Self::Prepared, point: &PointSpec) -> PointRun {
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
            identity: AggIdentity::of(ctx.identity, point.conc as u32),
            scrape_metrics: true,
            // on the virtual clock the engine is this process's simulator: AIPerf's
            // server-metrics export comes from these scrapes (a recipe's aiperf step copies it)
            aiperf_export: ctx.target.is_virtual(),
            out_dir: point.dir.clone(),
        };
        let replay = run_point(
            self.base_ctx.clone(),
            plans.to_vec(),
            cfg,
            ctx.cancel.clone(),
        );
        let (label, said) = (point.label(), self.said(ctx, point));
        PointRun::Replay(Replay {
            window_s: self.cfg.duration_s,
            run: Box::pin(async move {
                let res = replay.await.map_err(|source| PipelineError::Agentx {
                    point: label,
                    source,
                })?;
                Ok(said.of(res))
            }),
        })
    }

    fn meta(&self, _ctx: &SweepCtx<'_>, _plans: &Self::Prepared, _point: &PointSpec) -> PointMeta {
        PointMeta {
            api: Api::Chat,
            prompt_count: PromptCount::Server,
            lengths_in_row: false,
        }
    }

    /// servebench's own statistics, per chunk, with the harness's 10 % error gate.
    fn rules(&self, _ctx: &SweepCtx<'_>) -> StatRules {
        StatRules {
            compat: Compat::Servebench,
            itl_mode: ItlMode::Chunk,
            max_failed_fraction: 0.10,
        }
    }
}

/// What a point's replay says besides its records: the point's facts its result document
/// carries, taken when the replay is built.
struct Said {
    duration_s: u64,
    counting: String,
    simulator: Option<servebench_contracts::SimulatorInfo>,
    time_scale: f64,
    repeat: u32,
    repeats: u32,
}

impl AgentxReplay {
    fn said(&self, ctx: &SweepCtx<'_>, point: &PointSpec) -> Said {
        Said {
            duration_s: self.cfg.duration_s,
            counting: self.counting.clone(),
            simulator: ctx.target.simulator_info(),
            time_scale: ctx.target.sim_speedup,
            repeat: point.repeat,
            repeats: point.repeats,
        }
    }
}

impl Said {
    /// The replay's records, window, notes under the table, agg-row keys and `result.json`.
    fn of(self, res: PointResult) -> ReplayRun {
        let ax = to_rounded_value(&res.aggregate);
        let row_keys = vec![
            ("scenario_type".to_string(), json!("agentic-coding")),
            (
                "agentx_submission_valid".into(),
                json!(res.submission_invalid_reasons.is_empty() && res.gate.passed),
            ),
            (
                "agentx_submission_invalid_reasons".into(),
                json!(res.submission_invalid_reasons),
            ),
            ("agentx".into(), ax.clone()),
        ];
        let aggregate = match ax {
            serde_json::Value::Object(o) => o,
            _ => unreachable!("the AgentX aggregate serializes to an object"),
        };
        let notes = self.notes(&res);
        let result = AgentxResultDoc {
            aggregate,
            servebench: AgentxServebench {
                records_file: "agentx_records.jsonl".into(),
                client_records_file: "records.jsonl".into(),
                error_gate_passed: res.gate.passed,
                context_overflows: res.context_overflows,
                context_overflow_requests: res.overflow,
                server_reported_cache: res.reported_cache,
                submission_invalid_reasons: res.submission_invalid_reasons,
                short_window: res.short_window,
                token_counting: self.counting,
                simulator: self.simulator,
                time_scale: self.time_scale,
                repeat: self.repeat,
                repeats: self.repeats,
            },
        };
        ReplayRun {
            records: res.raw,
            window_ns: res.window_ns,
            notes,
            row_keys,
            result: ResultFile::Agentx(Box::new(result)),
        }
    }

    /// Lines said under the table: context overflows, the window's and the overflow rate's
    /// verdicts, the server-reported prefix-cache reuse.
    fn notes(&self, res: &PointResult) -> Vec<String> {
        let mut notes = Vec::new();
        let ov = res.overflow;
        if res.context_overflows > 0 {
            // said under the table, not only in agentx.json: the rejections are the server's
            // context limit, not a broken engine (MEASUREMENT.md Part 2 §5: overflow ends the
            // session); like the harness, the rejected requests are left out of the statistics
            notes.push(format!(
                "context overflow: {} session(s) ended because the server rejected the prompt as \
                 longer than its context ({} warmup and {} of {} profiling requests; left out of \
                 the statistics and the error gate, as InferenceX's harness does)",
                res.context_overflows, ov.warmup, ov.profiling, ov.profiling_responses
            ));
        }
        if res.short_window {
            notes.push(format!(
                "not a valid InferenceX submission: a {} s profiling window is under the {} s \
                 InferenceX requires (unsafe_override); fine for trying things out",
                self.duration_s,
                servebench_agentx::point::MIN_VALID_DURATION_S
            ));
        }
        if ov.rate_exceeded() {
            // InferenceX's verdict, said like the short window's: the numbers stand, but the
            // point is not a valid submission (agentx_submission_valid = false)
            notes.push(format!(
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
            Some(h) => notes.push(format!(
                "server-reported prefix-cache reuse {h:.3}: {} of {} prompt tokens over {} of {} \
                 profiling requests (usage.prompt_tokens_details.cached_tokens; these requests \
                 only, unlike the /metrics counters)",
                rc.cached_tokens, rc.prompt_tokens, rc.requests_reporting, rc.requests
            )),
            // the harness warns the same way (aiperf cache_reporting_hint)
            None if rc.requests > 0 => notes.push(
                "the server reported no per-request cached_tokens (vLLM: \
                 --enable-prompt-tokens-details, SGLang: --enable-cache-report); prefix-cache \
                 hits come from its /metrics counters only"
                    .into(),
            ),
            None => {}
        }
        notes
    }
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
