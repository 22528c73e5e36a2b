//! `servebench search --slo … --metric conc|rate`: the highest load whose point meets the SLO,
//! by bracketing and bisection over real measured points (against the embedded simulator
//! unless `--endpoint` is given). Parses the flags, hands the request to
//! `servebench_slo::run_search` and prints the knee with its evidence points.

use std::process::ExitCode;

use anyhow::{bail, Result};
use servebench_metrics::goodput::Slo;
use servebench_metrics::search::{Axis, Outcome, SearchConfig};
use servebench_slo::{run_search, SearchRequest};
use servebench_store::RunKind;

use super::measure_args::CommonArgs;

/// Load axis searched.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum MetricArg {
    /// Closed-loop concurrency.
    Conc,
    /// Open-loop request rate (req/s; modelled time against the simulator).
    Rate,
}

/// Arguments of `servebench search`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Service-level objectives every good request meets, and the share of requests that must
    /// be good: `ttft=500ms,tpot=50ms[,ttfo=…][,e2el=…][@p90]` (default @p90). Failed requests
    /// count as not good.
    #[arg(long, value_name = "SPEC")]
    pub slo: String,
    /// Load axis: conc (closed loop) or rate (open loop, req/s).
    #[arg(long, value_enum, default_value = "conc")]
    pub metric: MetricArg,
    /// First load measured (default: conc 1, rate 1 req/s); doubled while the SLO is met.
    #[arg(long)]
    pub start: Option<f64>,
    /// Highest load measured (default: conc 1024, rate 1000 req/s).
    #[arg(long)]
    pub max: Option<f64>,
    /// Bisection stops when the bracket is within this fraction of the passing load (for
    /// concurrency at least 1).
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// Most points measured.
    #[arg(long, default_value_t = 16)]
    pub max_probes: u32,
    /// Measured requests per lane: num_prompts = N × concurrency (default: --num-prompts, else
    /// 10 × concurrency).
    #[arg(long, value_name = "N")]
    pub prompts_per_lane: Option<usize>,
    /// Lanes (concurrency cap) of the open loop in a rate search.
    #[arg(long, default_value_t = 256)]
    pub max_conc: u64,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `servebench search`.
pub fn run(args: Args) -> Result<ExitCode> {
    let slo = Slo::parse(&args.slo)?;
    let axis = match args.metric {
        MetricArg::Conc => Axis::Conc,
        MetricArg::Rate => Axis::Rate,
    };
    let (start, max) = match axis {
        Axis::Conc => (args.start.unwrap_or(1.0), args.max.unwrap_or(1024.0)),
        Axis::Rate => (args.start.unwrap_or(1.0), args.max.unwrap_or(1000.0)),
    };
    if !(start > 0.0 && start.is_finite()) || (axis == Axis::Conc && start < 1.0) {
        bail!("--start must be a positive load (concurrency ≥ 1)");
    }
    if !(max >= start && max.is_finite()) {
        bail!("--max must be at least --start");
    }
    if !(args.tolerance > 0.0 && args.tolerance < 1.0) {
        bail!("--tolerance must be between 0 and 1 (e.g. 0.05 = 5 %)");
    }
    if args.max_probes == 0 {
        bail!("--max-probes must be at least 1");
    }
    if args.prompts_per_lane == Some(0) {
        bail!("--prompts-per-lane must be at least 1");
    }
    if args.common.request_rate.is_some() {
        bail!("--request-rate is set per probe by the search; use --metric rate instead");
    }
    let out = match &args.common.out {
        Some(d) => {
            servebench_pipeline::outdir::check_out_dir(d, args.common.overwrite)?;
            d.clone()
        }
        None => servebench_pipeline::outdir::new_default_out_dir()?,
    };
    let plan = args.common.into_plan(Vec::new(), RunKind::Sweep)?;
    let r = run_search(SearchRequest {
        plan,
        slo,
        config: SearchConfig {
            axis,
            start,
            max,
            tolerance: args.tolerance,
            max_probes: args.max_probes,
        },
        prompts_per_lane: args.prompts_per_lane,
        rate_max_concurrency: args.max_conc,
        out: out.clone(),
    })?;
    println!();
    print!("{}", r.render());
    println!(
        "results: {} (search.json, one directory per probe)",
        out.display()
    );
    Ok(match r.outcome {
        Outcome::Converged | Outcome::AboveMax => ExitCode::SUCCESS,
        Outcome::NoneMeets | Outcome::ProbeLimit => ExitCode::from(1),
    })
}
