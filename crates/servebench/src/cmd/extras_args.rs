//! The `sweep` flags beyond InferenceX (not a command): `--slo`, `--window steady`, `--ci`.
//! Without them no observer is added and the output is the default one, byte for byte
//! (docs/measurement.md §12).

use anyhow::Result;
use servebench_metrics::goodput::Slo;
use servebench_pipeline::{Observer, SweepPlan};
use servebench_slo::{ExtrasObserver, ExtrasOptions};

/// Statistics window.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowArg {
    /// The whole measured phase, ramp-up and drain included (InferenceX).
    Full,
    /// Only while the target concurrency is held (ramp-up and drain excluded), reported next
    /// to the full-window numbers.
    Steady,
}

/// Goodput, steady-state and confidence flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ExtrasArgs {
    /// Goodput under service-level objectives, per point: `ttft=500ms,tpot=50ms[,ttfo=…]
    /// [,e2el=…][@p90]`; a request is good when it succeeded and meets every objective, the
    /// point meets the SLO when at least pX % of its requests are good (default p90).
    #[arg(long, value_name = "SPEC")]
    pub slo: Option<String>,
    /// Also report the statistics over the steady-state window (the interval in which the
    /// target concurrency is held), with its bounds and how many requests fell outside.
    #[arg(long, value_enum, default_value = "full")]
    pub window: WindowArg,
    /// Confidence intervals (95 %): per point a seeded bootstrap over requests, and with
    /// --repeats N ≥ 2 a t-interval across the repeats; tail percentiles from too few samples
    /// are marked.
    #[arg(long)]
    pub ci: bool,
}

impl ExtrasArgs {
    /// The observers to add to the sweep (none when no flag is given). `--slo` is checked here,
    /// before anything runs.
    pub fn observers(&self, plan: &SweepPlan) -> Result<Vec<Box<dyn Observer>>> {
        let opts = ExtrasOptions {
            slo: self.slo.as_deref().map(Slo::parse).transpose()?,
            steady: self.window == WindowArg::Steady,
            confidence: self.ci,
            seed: plan.workload.fixed().map_or(0, |f| u64::from(f.seed)),
            ..ExtrasOptions::off()
        };
        if !opts.any() {
            return Ok(Vec::new());
        }
        Ok(vec![Box::new(ExtrasObserver::new(
            opts,
            plan.workload
                .fixed()
                .is_some_and(|f| f.request_rate.is_some()),
        ))])
    }
}
