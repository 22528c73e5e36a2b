//! `servebench report`: the report of a run — against a baseline when `--baseline` is given —
//! as the bilingual Markdown comment (AUTOMATION.md §5.6), one self-contained HTML file with SVG
//! charts, JSON (the report document), or the terminal table. A baseline table file given as
//! the RUN renders the frozen-baseline body (PR body).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use servebench_compare::Stat;
use servebench_report::{Format, Lang};
use servebench_review::report::{document, ReportRequest};
use servebench_review::report_charts;

/// Arguments of `servebench report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run: a run id in the store, `latest` (newest non-baseline run), several ids joined
    /// by `,` (a sweep and its eval run), or a file (agg rows, a sweep `summary.json`, or a
    /// baseline table, which renders the frozen-baseline body).
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// Results store.
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
    /// Compare with this baseline (a run id, `latest-baseline`, or a baseline file).
    #[arg(long, value_name = "RUN|FILE")]
    pub baseline: Option<String>,
    /// Output format: md, html, json, table.
    #[arg(long, value_name = "FORMAT", default_value = "md")]
    pub format: Format,
    /// Languages: en, en+zh (the Chinese block).
    #[arg(long, value_name = "LANG", default_value = "en+zh")]
    pub lang: Lang,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Latency statistic.
    #[arg(long, value_name = "STAT", default_value = "mean", value_parser = parse_stat)]
    pub stat: Stat,
    /// Regression gate in % (with --baseline).
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub gate: f64,
    /// Title prefix / bot name (HTML title; default `servebench`).
    #[arg(long, value_name = "NAME")]
    pub title_prefix: Option<String>,
    /// Target image of a planned bump, for the Goal line of a baseline body.
    #[arg(long, value_name = "REF")]
    pub target_image: Option<String>,
    /// Stored runs (`12,15,19`) drawn together on the throughput-vs-interactivity Pareto chart
    /// (HTML); without RUN the report is about the last of them.
    #[arg(long, value_name = "IDS")]
    pub runs: Option<String>,
    /// SLO for the goodput curve of the HTML report (`ttft=500ms,tpot=50ms@p90`; default: the
    /// sweep's own `--slo`).
    #[arg(long, value_name = "SPEC")]
    pub slo: Option<String>,
}

fn parse_stat(s: &str) -> Result<Stat, String> {
    Stat::parse(s).ok_or_else(|| format!("unknown statistic {s:?} (mean|median|p90|p99)"))
}

/// Runs `servebench report`.
pub fn run(args: Args) -> Result<ExitCode> {
    super::sim::plausible::install();
    let run = match &args.runs {
        // `report --runs 12,15` without RUN: the report of the last listed run.
        Some(ids) if args.run == "latest" => report_charts::parse_runs(ids)?
            .last()
            .map_or(args.run.clone(), |id| id.to_string()),
        _ => args.run.clone(),
    };
    let mut doc = document(&ReportRequest {
        run: run.clone(),
        db: args.db.clone(),
        baseline: args.baseline.clone(),
        stat: args.stat,
        gate: args.gate,
        title_prefix: args.title_prefix.clone(),
        target_image: args.target_image.clone(),
    })?;
    if args.format == Format::Html {
        report_charts::add_charts(
            &mut doc,
            &report_charts::ChartRequest {
                db: args.db.clone(),
                run,
                runs: args.runs.clone(),
                slo: args.slo.clone(),
                stat: args.stat,
            },
        )?;
    }
    let colored = args.output.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let out = servebench_report::render(&doc, args.format, args.lang, colored);
    match &args.output {
        Some(p) => {
            std::fs::write(p, out).with_context(|| format!("{}: cannot write", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}
