//! `servebench attempt`: the attempt comment of an image bump (AUTOMATION.md §5.6: one per
//! Initial attempt, Repair N/5, Infrastructure retry N and the Final full sweep), bilingual
//! Markdown by default, HTML or JSON on request.
//!
//! Inputs, all files or store runs:
//! * `--baseline`: the frozen baseline — a baseline table (`baseline.json` shape), InferenceX
//!   rows, or a store run id;
//! * `--candidate RUN|FILE`: the attempt's results (store run or agg rows), **or**
//!   `--logs LOG…`: the attempt's job logs when it produced no results. The logs are triaged
//!   (first error, layer, class, transient/deterministic, next step, outcome); each log's
//!   `Job: …` line names its point (`conc<N>`, `eval-only <task>`), so every job becomes a row;
//!   a job without a result row has no identity to match, so its delta is
//!   `N/A: no matched baseline`;
//! * `--change FILE`: provenance of the old and new image (`images.json` shape: `ref`,
//!   `index_digest`, `platform_digests`, `kind`, `labels`), plus `--recipe-edit FILE:OLD=NEW`
//!   for each recipe flag the bump renamed (the value is read from the recipe).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use servebench_compare::Stat;
use servebench_report::attempt::build_attempt;
use servebench_report::model::{AttemptKind, AttemptStatus};
use servebench_report::{Format, Lang};
use servebench_review::attempt::{input, AttemptRequest};

/// Arguments of `servebench attempt`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The frozen baseline: a baseline table file (`baseline.json` shape), an InferenceX
    /// `agg_bmk.json`/`agg_eval_all.json` file, InferenceX dashboard API rows
    /// (`benchmarks.json`, `benchmarks-history.json`), or a run id in the store
    /// (`latest-baseline`: the newest baseline run with a point matching the candidate).
    #[arg(long, value_name = "FILE|RUN")]
    pub baseline: String,
    /// The attempt's results: a run id in the store (`latest` = newest non-baseline run) or a
    /// file of agg rows / a sweep `summary.json`.
    #[arg(
        long,
        value_name = "RUN|FILE",
        conflicts_with = "logs",
        required_unless_present = "logs"
    )]
    pub candidate: Option<String>,
    /// The attempt's job logs (when it produced no results): triaged for the failure paragraph;
    /// each log's `Job: …` line gives its row.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub logs: Vec<PathBuf>,
    /// Which attempt: `initial`, `repair N` (or `repair-N`), `retry N`, `final`.
    #[arg(long, value_name = "KIND", default_value = "initial", value_parser = parse_kind)]
    pub kind: AttemptKind,
    /// Override the status. Default: `failed` when a point failed, is invalid or is not a
    /// valid InferenceX submission, an eval failed or is under its threshold, or the
    /// comparison's verdict is a regression; else `not comparable` when no candidate point was
    /// compared with the baseline; else `passed`. Values: passed, failed, running, queued,
    /// cancelled, not-dispatched, blocked.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<AttemptStatus>,
    /// Image provenance of the change (`images.json` shape: `{"old": {...}, "new": {...}}`).
    #[arg(long, value_name = "FILE")]
    pub change: Option<PathBuf>,
    /// The bump's provenance file (`provenance.json` written by `servebench bump`): the Change
    /// line's images, digests, labels and applied recipe migrations (the record whose new image
    /// is `--image`, else the last one). Alternative to `--change`.
    #[arg(long, value_name = "FILE", conflicts_with = "change")]
    pub provenance: Option<PathBuf>,
    /// A recipe flag the bump renamed: `RECIPE:OLD=NEW` (`RECIPE:OLD=` for a removal); the value
    /// is read from the recipe file, from OLD (before the bump) or NEW (already renamed).
    /// Repeatable.
    #[arg(long = "recipe-edit", value_name = "RECIPE:OLD=NEW")]
    pub recipe_edits: Vec<String>,
    /// Evidence link for the recipe edits (upstream PR).
    #[arg(long, value_name = "URL")]
    pub edit_evidence: Option<String>,
    /// Candidate image (default: the change's new image, else the `IMAGE=` line of the logs,
    /// else the candidate run's image).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// CI run id shown in the header.
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// CI run attempt.
    #[arg(long, value_name = "N")]
    pub run_attempt: Option<u32>,
    /// Link of the run.
    #[arg(long, value_name = "URL")]
    pub run_url: Option<String>,
    /// Head commit of the candidate branch (first 12 hex shown).
    #[arg(long, value_name = "SHA")]
    pub head: Option<String>,
    /// Time shown (default: the logs' first timestamp, or the candidate run's time), RFC 3339
    /// or `YYYY-MM-DD HH:MM`.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub time: Option<String>,
    /// Workload label (default: the candidate's, from its results; else the baseline's).
    #[arg(long, value_name = "LABEL")]
    pub workload: Option<String>,
    /// Topology label (default: the candidate's, from its results; else the baseline's).
    #[arg(long, value_name = "LABEL")]
    pub topology: Option<String>,
    /// Latency statistic.
    #[arg(long, value_name = "STAT", default_value = "mean")]
    pub stat: String,
    /// Repairs already used, 0 to 5 (AUTOMATION.md: at most 5 repairs per bump; default: the
    /// attempt kind's, 0 for the initial attempt).
    #[arg(long, value_name = "N", value_parser = parse_repairs_used)]
    pub repairs_used: Option<u32>,
    /// Title prefix / bot name (HTML title).
    #[arg(long, value_name = "NAME")]
    pub title_prefix: Option<String>,
    /// Output format: md, html, json.
    #[arg(long, value_name = "FORMAT", default_value = "md")]
    pub format: Format,
    /// Languages: en, en+zh.
    #[arg(long, value_name = "LANG", default_value = "en+zh")]
    pub lang: Lang,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Results store (for run ids).
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
}

/// Parses `initial`, `final`, `repair N`/`repair-N`/`repair:N`/`repairN`, `retry N`.
pub fn parse_kind(s: &str) -> Result<AttemptKind, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = |p: &str| -> Option<Result<u32, String>> {
        let rest = t.strip_prefix(p)?;
        let n = rest.trim_start_matches([' ', '-', ':', '=', '/']);
        let n = n.split('/').next().unwrap_or(n);
        Some(
            n.parse::<u32>()
                .map_err(|_| format!("attempt kind {s:?}: `{p}` needs a number, e.g. `{p} 1`")),
        )
    };
    match t.as_str() {
        "initial" | "initial attempt" => Ok(AttemptKind::Initial),
        "final" | "final full sweep" | "final-sweep" => Ok(AttemptKind::Final),
        _ => {
            if let Some(n) = split("repair") {
                let n = n?;
                if !(1..=servebench_triage::MAX_REPAIRS).contains(&n) {
                    return Err(format!(
                        "attempt kind {s:?}: repairs are numbered 1 to {}",
                        servebench_triage::MAX_REPAIRS
                    ));
                }
                Ok(AttemptKind::Repair {
                    n,
                    max: servebench_triage::MAX_REPAIRS,
                })
            } else if let Some(n) = split("retry") {
                let n = n?;
                if !(1..=servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT).contains(&n) {
                    return Err(format!(
                        "attempt kind {s:?}: infrastructure retries are numbered 1 to {}",
                        servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT
                    ));
                }
                Ok(AttemptKind::Retry { n })
            } else {
                Err(format!(
                    "unknown attempt kind {s:?}: expected initial, repair N, retry N or final"
                ))
            }
        }
    }
}

/// `--time`: RFC 3339 (`2026-09-21T01:15:02Z`, `2026-09-21T03:15:02+02:00`) or
/// `YYYY-MM-DD HH:MM` (UTC, an optional ` UTC` suffix). Returns the text as given.
pub fn parse_time(s: &str) -> Result<String, String> {
    let t = s.trim();
    let plain = t.strip_suffix(" UTC").unwrap_or(t);
    if chrono::DateTime::parse_from_rfc3339(t).is_ok()
        || chrono::NaiveDateTime::parse_from_str(plain, "%Y-%m-%d %H:%M").is_ok()
    {
        Ok(t.to_string())
    } else {
        Err(format!(
            "time {s:?}: expected RFC 3339 (2026-09-21T01:15:02Z) or YYYY-MM-DD HH:MM (UTC)"
        ))
    }
}

/// `--repairs-used`: 0 to [`servebench_triage::MAX_REPAIRS`] (5).
fn parse_repairs_used(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("repairs used {s:?}: expected a number 0 to 5"))?;
    if n > servebench_triage::MAX_REPAIRS {
        return Err(format!(
            "repairs used {n}: at most {} repairs per bump (AUTOMATION.md)",
            servebench_triage::MAX_REPAIRS
        ));
    }
    Ok(n)
}

fn parse_status(s: &str) -> Result<AttemptStatus, String> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "passed" => AttemptStatus::Passed,
        "failed" => AttemptStatus::Failed,
        "running" => AttemptStatus::Running,
        "queued" => AttemptStatus::Queued,
        "cancelled" | "canceled" => AttemptStatus::Cancelled,
        "not-dispatched" | "stopped" => AttemptStatus::NotDispatched,
        "blocked" | "blocked-before-dispatch" => AttemptStatus::BlockedBeforeDispatch,
        _ => {
            return Err(format!(
                "unknown status {s:?}: passed, failed, running, queued, cancelled, \
                 not-dispatched, blocked"
            ))
        }
    })
}

/// Runs `servebench attempt`.
pub fn run(args: Args) -> Result<ExitCode> {
    super::sim::plausible::install();
    let (format, lang, output) = (args.format, args.lang, args.output);
    let stat = Stat::parse(&args.stat)
        .ok_or_else(|| anyhow!("--stat {}: expected mean, median, p90 or p99", args.stat))?;
    let input = input(&AttemptRequest {
        baseline: args.baseline,
        candidate: args.candidate,
        logs: args.logs,
        kind: args.kind,
        status: args.status,
        change: args.change,
        provenance: args.provenance,
        recipe_edits: args.recipe_edits,
        edit_evidence: args.edit_evidence,
        image: args.image,
        run_id: args.run_id,
        run_attempt: args.run_attempt,
        run_url: args.run_url,
        head: args.head,
        time: args.time,
        workload: args.workload,
        topology: args.topology,
        stat,
        repairs_used: args.repairs_used,
        title_prefix: args.title_prefix,
        db: args.db,
    })?;
    let doc = build_attempt(&input);
    let colored = output.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let out = servebench_report::render(&doc, format, lang, colored);
    match &output {
        Some(p) => {
            std::fs::write(p, out).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        assert_eq!(parse_kind("initial"), Ok(AttemptKind::Initial));
        assert_eq!(
            parse_kind("repair 2"),
            Ok(AttemptKind::Repair { n: 2, max: 5 })
        );
        assert_eq!(
            parse_kind("repair-3"),
            Ok(AttemptKind::Repair { n: 3, max: 5 })
        );
        assert_eq!(parse_kind("retry 1"), Ok(AttemptKind::Retry { n: 1 }));
        assert_eq!(parse_kind("final"), Ok(AttemptKind::Final));
        assert!(parse_kind("repair 6").is_err());
        assert!(parse_kind("repair").is_err());
        assert!(parse_kind("bogus").is_err());
    }

    #[test]
    fn times_and_repairs_are_validated() {
        assert!(parse_time("2026-09-21T01:15:02Z").is_ok());
        assert!(parse_time("2026-09-21T03:15:02.114+02:00").is_ok());
        assert!(parse_time("2026-09-21 01:15").is_ok());
        assert!(parse_time("2026-09-21 01:15 UTC").is_ok());
        assert!(parse_time("garbage").is_err());
        assert!(parse_time("2026-13-40 99:99").is_err());
        assert_eq!(parse_repairs_used("5"), Ok(5));
        assert!(parse_repairs_used("6").is_err());
        assert!(parse_repairs_used("x").is_err());
    }
}
