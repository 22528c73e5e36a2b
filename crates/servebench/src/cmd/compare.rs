//! `servebench compare`: a candidate run against its baseline (a stored run or a baseline
//! file), point by point. Loading and comparing live in [`servebench_review::sides`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use servebench_compare::Stat;
use servebench_review::sides::{build_comparison, exit_status, summary_lines, CompareRequest};

/// Arguments of `servebench compare`.
///
/// Exit status: 0 = no regression (no_change, improvement, observation, not_comparable rows are
/// all printed with their reasons); 2 = a regression beyond the gate; 3 = the candidate is
/// invalid (failed points, failure rate over the gate) and nothing regressed; 1 = error.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Baseline: a run id in the store (`12`, `latest-baseline`), or a baseline file
    /// (InferenceX `agg_bmk.json` / `agg_eval_all.json`, dashboard API rows
    /// `benchmarks.json` / `benchmarks-history.json`, or a baseline table like
    /// `baseline.json`), read without importing it; or `main` / `branch:NAME`: per candidate
    /// point the newest error-free stored row of the same config on that branch, as
    /// InferenceX's compare_results.py picks it (docs/store-postgres.md).
    #[arg(long, value_name = "RUN|FILE|main")]
    pub baseline: String,
    /// Candidate: a run id (`12`; several ids joined by `,` merge a sweep run and its eval run),
    /// `latest` (newest non-baseline run), or a file of agg rows / a sweep `summary.json`.
    #[arg(long, value_name = "RUN|FILE", default_value = "latest")]
    pub candidate: String,
    /// Latency statistic compared.
    #[arg(long, value_name = "STAT", default_value = "mean", value_parser = parse_stat)]
    pub stat: Stat,
    /// Results store.
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
    /// Regression gate in %: a change within ±PCT is `no_change`.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub gate: f64,
    /// Comparability tolerance for mean input/output length, in % (case B18).
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub length_tolerance: f64,
    /// Maximum failure fraction of a point (default 0.05 fixed-seq, 0.10 AgentX).
    #[arg(long, value_name = "FRACTION")]
    pub max_failure_rate: Option<f64>,
    /// Repeats needed before a tail percentile (p90/p99) can be a regression (case B20).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub tail_min_repeats: usize,
    /// Print the comparison as JSON (the `servebench_compare::Comparison` document).
    #[arg(long)]
    pub json: bool,
}

fn parse_stat(s: &str) -> Result<Stat, String> {
    Stat::parse(s).ok_or_else(|| format!("unknown statistic {s:?} (mean|median|p90|p99)"))
}

/// Runs `servebench compare`.
pub fn run(args: Args) -> Result<ExitCode> {
    super::sim::plausible::install();
    let c = build_comparison(&CompareRequest {
        baseline: args.baseline,
        candidate: args.candidate,
        stat: args.stat,
        db: args.db,
        gate: args.gate,
        length_tolerance: args.length_tolerance,
        max_failure_rate: args.max_failure_rate,
        tail_min_repeats: args.tail_min_repeats,
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        let colored = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let doc = servebench_report::comparison::build(
            &c,
            &servebench_report::comparison::BuildOptions::default(),
        );
        print!("{}", servebench_report::terminal::render(&doc, colored));
        for line in summary_lines(&c) {
            println!("{line}");
        }
        if let Some(line) = missing_stat_hint(&c, args.stat) {
            println!("{line}");
        }
    }
    Ok(ExitCode::from(exit_status(&c)))
}

/// `Note: the baseline has no mean latencies (N matched points): it carries median, p90, p99;
/// compare with --stat median` when matched baseline points lack the selected statistic's
/// TTFT but carry others (InferenceX dashboard history rows have no `mean_*`).
fn missing_stat_hint(c: &servebench_compare::Comparison, stat: Stat) -> Option<String> {
    use servebench_compare::Metric;
    let all = [Stat::Mean, Stat::Median, Stat::P90, Stat::P99];
    let mut n = 0;
    let mut others: Vec<Stat> = Vec::new();
    for b in c.points.iter().filter_map(|p| p.baseline.as_ref()) {
        if b.value(Metric::Ttft, stat).is_some() {
            continue;
        }
        let has: Vec<Stat> = all
            .into_iter()
            .filter(|s| *s != stat && b.value(Metric::Ttft, *s).is_some())
            .collect();
        if !has.is_empty() {
            n += 1;
            others = has;
        }
    }
    let first = others.first()?;
    Some(format!(
        "Note: the baseline has no {stat} latencies ({n} matched point{}): it carries {}; compare with --stat {first}",
        if n == 1 { "" } else { "s" },
        others.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
    ))
}
