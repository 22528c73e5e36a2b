//! The workload seam's one home: [`Workload`] (the closed set, in the plan) gives every
//! workload's labels, summary fragment and run metadata, and [`AnyExecutor`] dispatches to its
//! workload ([`FixedSequence`], [`AgentxReplay`], [`MultiturnReplay`]), each measured by the
//! session's one point lifecycle ([`Measured`]). Adding a workload:
//! one variant in [`Workload`] with its flags struct, one arm in each match here, its executor
//! module, and its CLI flags (docs/ARCHITECTURE.md "to add").

use serde_json::{json, Value};

use crate::agentx::AgentxReplay;
use crate::console::Console;
use crate::error::Result;
use crate::executor::{Executor, PointOutput, PointSpec, SweepCtx};
use crate::fixed::FixedSequence;
use crate::lifecycle::Measured;
use crate::measure::RequestWorkload;
use crate::multiturn::MultiturnReplay;
use crate::plan::{SweepPlan, Workload};
use crate::target::Target;

/// The workload's part of `summary.json` (fixed-sequence keys are `null` for a replay).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryFields {
    /// API the requests used (`completions`/`chat`; an AgentX replay always sends chat).
    pub api: String,
    /// Nominal ISL.
    pub isl: Option<u32>,
    /// Nominal OSL.
    pub osl: Option<u32>,
    /// Range ratio.
    pub range_ratio: Option<f64>,
    /// Dataset seed.
    pub seed: Option<u64>,
    /// Open-loop request rate, req/s.
    pub request_rate: Option<f64>,
    /// Open-loop burstiness.
    pub burstiness: Option<f64>,
}

impl Workload {
    /// `--scenario` value: `fixed`, `agentx` or `multiturn`.
    pub fn scenario(&self) -> &'static str {
        match self {
            Workload::FixedSequence(_) => "fixed",
            Workload::Agentx(_) => "agentx",
            Workload::Multiturn(_) => "multiturn",
        }
    }

    /// The kind of benchmark its points are (the identity's `benchmark_type`).
    pub fn benchmark_type(&self) -> servebench_contracts::BenchmarkType {
        use servebench_contracts::BenchmarkType;
        match self {
            Workload::FixedSequence(_) => BenchmarkType::SingleTurn,
            Workload::Agentx(_) => BenchmarkType::AgenticTraces,
            Workload::Multiturn(_) => BenchmarkType::MultiTurn,
        }
    }

    /// The store's workload label (`1k/1k`, `AgentX`, `multi-turn`).
    pub fn label(&self) -> String {
        match self {
            Workload::FixedSequence(f) => {
                servebench_contracts::labels::workload_label(Some(f.isl), Some(f.osl), false)
            }
            Workload::Agentx(_) => servebench_contracts::labels::workload_label(None, None, true),
            Workload::Multiturn(_) => "multi-turn".into(),
        }
    }

    /// The nominal (ISL, OSL) the identity carries. AgentX: the fixed-sequence defaults, as the
    /// rows written before the workload was a type (its agg rows clear them; a `--eval` row
    /// keeps them).
    pub fn identity_lengths(&self) -> (u32, u32) {
        match self {
            Workload::FixedSequence(f) => (f.isl, f.osl),
            Workload::Agentx(_) | Workload::Multiturn(_) => {
                let d = crate::plan::FixedPlan::default();
                (d.isl, d.osl)
            }
        }
    }

    /// The workload's part of `summary.json`; `api` is the plan's `--api`.
    pub fn summary_fields(&self, api: servebench_client::Api) -> SummaryFields {
        match self {
            Workload::FixedSequence(f) => SummaryFields {
                api: api.as_str().into(),
                isl: Some(f.isl),
                osl: Some(f.osl),
                range_ratio: Some(f.range_ratio),
                seed: Some(u64::from(f.seed)),
                request_rate: f.request_rate,
                burstiness: Some(f.burstiness()),
            },
            // a replay sends chat requests whose lengths come from the traces/conversations
            Workload::Agentx(_) | Workload::Multiturn(_) => SummaryFields {
                api: "chat".into(),
                isl: None,
                osl: None,
                range_ratio: None,
                seed: None,
                request_rate: None,
                burstiness: None,
            },
        }
    }

    /// The workload's keys of the stored run's metadata, in their order: `isl`, `osl`,
    /// `range_ratio`, `seed`, `num_prompts`, `agentx`, then (after the plan's concurrencies and
    /// repeats) `request_rate`, `burstiness` — returned as the two groups.
    pub fn run_meta(&self) -> (Vec<(&'static str, Value)>, Vec<(&'static str, Value)>) {
        match self {
            Workload::FixedSequence(f) => (
                vec![
                    ("isl", json!(f.isl)),
                    ("osl", json!(f.osl)),
                    ("range_ratio", json!(f.range_ratio)),
                    ("seed", json!(f.seed)),
                    ("num_prompts", json!(f.num_prompts)),
                    ("agentx", Value::Null),
                ],
                vec![
                    ("request_rate", json!(f.request_rate)),
                    ("burstiness", json!(f.burstiness())),
                ],
            ),
            // the fixed-sequence keys as the runs stored before the workload was a type
            Workload::Agentx(a) => (
                vec![
                    ("isl", Value::Null),
                    ("osl", Value::Null),
                    ("range_ratio", Value::Null),
                    ("seed", json!(0)),
                    ("num_prompts", Value::Null),
                    (
                        "agentx",
                        json!({"traces": a.traces, "duration_s": a.duration_s}),
                    ),
                ],
                vec![("request_rate", Value::Null), ("burstiness", json!(1.0))],
            ),
            Workload::Multiturn(m) => (
                vec![
                    ("isl", Value::Null),
                    ("osl", Value::Null),
                    ("range_ratio", Value::Null),
                    ("seed", json!(0)),
                    ("num_prompts", Value::Null),
                    ("agentx", Value::Null),
                    (
                        "multiturn",
                        json!({"conversations": m.conversations,
                               "think_time_scale": m.think_time_scale,
                               "max_think_time_s": m.max_think_time_s}),
                    ),
                ],
                vec![("request_rate", Value::Null), ("burstiness", json!(1.0))],
            ),
        }
    }

    /// The workload's flags for `sweep-flags.json` (`--resume` refuses other values).
    pub fn flags(&self, api: servebench_client::Api) -> Vec<(&'static str, String)> {
        let d = |v: &dyn std::fmt::Debug| format!("{v:?}");
        match self {
            Workload::Agentx(ax) => vec![
                ("--traces", ax.traces.display().to_string()),
                ("--duration", ax.duration_s.to_string()),
            ],
            Workload::Multiturn(m) => vec![
                ("--conversations", m.conversations.display().to_string()),
                ("--think-time-scale", m.think_time_scale.to_string()),
                ("--max-think-time", d(&m.max_think_time_s)),
            ],
            Workload::FixedSequence(f) => vec![
                ("--isl", f.isl.to_string()),
                ("--osl", f.osl.to_string()),
                ("--range-ratio", f.range_ratio.to_string()),
                ("--num-prompts", d(&f.num_prompts)),
                ("--warmups", d(&f.warmups)),
                ("--seed", f.seed.to_string()),
                ("--api", d(&api)),
                ("--request-rate", d(&f.request_rate)),
                ("--burstiness", d(&f.burstiness)),
            ],
        }
    }
}

/// The sweep's workload: AgentX replay, multi-turn chat replay or the fixed-sequence dataset,
/// each measured by the session's one point lifecycle, [`Measured`].
pub enum AnyExecutor {
    /// `--scenario fixed`.
    Fixed(Measured<FixedSequence>),
    /// `--scenario agentx`.
    Agentx(Measured<AgentxReplay>),
    /// `--scenario multiturn`.
    Multiturn(Measured<MultiturnReplay>),
}

/// The workload of [`AnyExecutor`].
pub enum AnyWorkload {
    /// The fixed-sequence dataset.
    Fixed(<FixedSequence as RequestWorkload>::Prepared),
    /// The AgentX plans.
    Agentx(<AgentxReplay as RequestWorkload>::Prepared),
    /// The conversations.
    Multiturn(<MultiturnReplay as RequestWorkload>::Prepared),
}

impl AnyExecutor {
    /// The executor the plan asks for.
    pub async fn new(
        plan: &SweepPlan,
        target: &Target,
        model: &str,
        console: &dyn Console,
    ) -> Result<AnyExecutor> {
        Ok(match &plan.workload {
            Workload::Agentx(ax) => AnyExecutor::Agentx(Measured::new(
                plan,
                AgentxReplay::new(plan, ax, target, model, console).await?,
            )),
            Workload::FixedSequence(_) => AnyExecutor::Fixed(Measured::new(
                plan,
                FixedSequence::new(plan, target, model, console).await?,
            )),
            Workload::Multiturn(mt) => AnyExecutor::Multiturn(Measured::new(
                plan,
                MultiturnReplay::new(plan, mt, target, model, console).await?,
            )),
        })
    }
}

impl Executor for AnyExecutor {
    type Workload = AnyWorkload;

    async fn prepare(&mut self, ctx: &SweepCtx<'_>, conc: u64) -> Result<AnyWorkload> {
        Ok(match self {
            AnyExecutor::Fixed(e) => AnyWorkload::Fixed(e.prepare(ctx, conc).await?),
            AnyExecutor::Agentx(e) => AnyWorkload::Agentx(e.prepare(ctx, conc).await?),
            AnyExecutor::Multiturn(e) => AnyWorkload::Multiturn(e.prepare(ctx, conc).await?),
        })
    }

    fn describe(&self, w: &AnyWorkload) -> String {
        match (self, w) {
            (AnyExecutor::Fixed(e), AnyWorkload::Fixed(w)) => e.describe(w),
            (AnyExecutor::Agentx(e), AnyWorkload::Agentx(w)) => e.describe(w),
            (AnyExecutor::Multiturn(e), AnyWorkload::Multiturn(w)) => e.describe(w),
            _ => unreachable!("workload built by the same executor"),
        }
    }

    fn requests_line(&self, ctx: &SweepCtx<'_>, conc: u64) -> Option<String> {
        match self {
            AnyExecutor::Fixed(e) => e.requests_line(ctx, conc),
            AnyExecutor::Agentx(e) => e.requests_line(ctx, conc),
            AnyExecutor::Multiturn(e) => e.requests_line(ctx, conc),
        }
    }

    async fn run_point(
        &mut self,
        ctx: &SweepCtx<'_>,
        w: &AnyWorkload,
        point: &PointSpec,
    ) -> Result<PointOutput> {
        match (self, w) {
            (AnyExecutor::Fixed(e), AnyWorkload::Fixed(w)) => e.run_point(ctx, w, point).await,
            (AnyExecutor::Agentx(e), AnyWorkload::Agentx(w)) => e.run_point(ctx, w, point).await,
            (AnyExecutor::Multiturn(e), AnyWorkload::Multiturn(w)) => {
                e.run_point(ctx, w, point).await
            }
            _ => unreachable!("workload built by the same executor"),
        }
    }
}
