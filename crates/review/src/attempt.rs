//! The attempt comment's input (AUTOMATION.md §5.6): the frozen baseline, the candidate's
//! results (compared exactly as `servebench compare` does) or its triaged job logs, and the
//! change (image provenance, recipe edits). The triage → report adapter is
//! [`crate::attempt_logs`].

use std::path::{Path, PathBuf};

use servebench_compare::{CompareOptions, Metric, PointStatus, Stat};
use servebench_report::attempt::{
    AttemptEval, AttemptInput, AttemptPoint, BaselineEval, BaselinePoint, BaselineTable,
    ChangeInput, TopologySpec,
};
use servebench_report::model::{AttemptKind, AttemptStatus, RowStatus, RunRef};
use servebench_triage::{Persistence, TriageOptions};

use crate::attempt_logs::{
    change_from_record, failure_summary, image_from_logs, job_point, job_topology,
    launcher_from_logs, next_step, recipe_edit,
};
use crate::error::{flag, io, Context, IoOp, Result, ReviewError};
use crate::sides::load_side;

/// What the attempt comment is built from (the `attempt` flags).
#[derive(Debug, Clone)]
pub struct AttemptRequest {
    /// The frozen baseline: a baseline table file, InferenceX rows, or a run id.
    pub baseline: String,
    /// The attempt's results (run id, `latest`, or a file); `None` = triage `logs`.
    pub candidate: Option<String>,
    /// The attempt's job logs.
    pub logs: Vec<PathBuf>,
    /// Which attempt.
    pub kind: AttemptKind,
    /// Status override.
    pub status: Option<AttemptStatus>,
    /// Image provenance file (`images.json` shape).
    pub change: Option<PathBuf>,
    /// `provenance.json` written by `servebench bump`.
    pub provenance: Option<PathBuf>,
    /// `RECIPE:OLD=NEW` renamed flags.
    pub recipe_edits: Vec<String>,
    /// Evidence link for the recipe edits.
    pub edit_evidence: Option<String>,
    /// Candidate image.
    pub image: Option<String>,
    /// CI run id.
    pub run_id: Option<String>,
    /// CI run attempt.
    pub run_attempt: Option<u32>,
    /// Link of the run.
    pub run_url: Option<String>,
    /// Head commit of the candidate branch.
    pub head: Option<String>,
    /// Time shown (validated RFC 3339 or `YYYY-MM-DD HH:MM`).
    pub time: Option<String>,
    /// Workload label override.
    pub workload: Option<String>,
    /// Topology label override.
    pub topology: Option<String>,
    /// Latency statistic.
    pub stat: Stat,
    /// Repairs already used (default: the kind's).
    pub repairs_used: Option<u32>,
    /// Title prefix / bot name.
    pub title_prefix: Option<String>,
    /// Results store (for run ids).
    pub db: PathBuf,
}

/// `2026-09-21T01:15:02.114Z` → `2026-09-21 01:15 UTC`; `2026-09-21 01:15` → with ` UTC`.
pub fn fmt_utc(s: &str) -> String {
    let s = s.trim();
    if s.ends_with("UTC") {
        return s.to_string();
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M UTC")
            .to_string();
    }
    let b = s.as_bytes();
    if s.len() >= 16 && (b[10] == b'T' || b[10] == b' ') {
        format!("{} {} UTC", &s[..10], &s[11..16])
    } else {
        s.to_string()
    }
}

/// Loads the baseline: a baseline table file as written, or anything `compare` can load
/// (InferenceX rows, store run) converted to a table at `stat`.
fn load_baseline(db: &Path, arg: &str, stat: Stat) -> Result<BaselineTable> {
    Ok(load_baseline_as(db, arg, stat)?.0)
}

/// [`load_baseline`], also saying whether the argument was a baseline table file as written
/// (`true`): its date, image and sources are the table's own, not derived from points.
fn load_baseline_as(db: &Path, arg: &str, stat: Stat) -> Result<(BaselineTable, bool)> {
    let path = Path::new(arg);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(io(IoOp::Read, path))?;
        if let Ok(t) = serde_json::from_str::<BaselineTable>(&text) {
            return Ok((t, true));
        }
    }
    let side = load_side(db, arg).context("--baseline")?;
    let first = side.points.first().ok_or_else(|| {
        ReviewError::Invalid(format!("--baseline {arg}: has no benchmark points"))
    })?;
    let mut points: Vec<BaselinePoint> = side
        .points
        .iter()
        .map(|p| BaselinePoint {
            conc: p.identity.conc,
            total_tput_per_gpu: p.value(Metric::TotalTputPerGpu, stat),
            output_tput_per_gpu: p.value(Metric::OutputTputPerGpu, stat),
            ttft_ms: p.value(Metric::Ttft, stat),
            tpot_ms: p.value(Metric::Tpot, stat),
            e2el_ms: p.value(Metric::E2el, stat),
            interactivity: p.value(Metric::Intvty, stat),
        })
        .collect();
    points.sort_by_key(|p| p.conc);
    Ok((
        BaselineTable {
            config_key: side.info.config_key.clone(),
            date: side
                .info
                .created_at
                .as_deref()
                .map(|d| d.chars().take(10).collect())
                .unwrap_or_else(|| "unknown date".into()),
            image: side
                .info
                .image
                .clone()
                .unwrap_or_else(|| "unknown image".into()),
            workload: first.identity.workload_label(),
            topology: TopologySpec::Label(first.identity.topology_label()),
            statistic: stat.to_string(),
            points,
            evals: side
                .evals
                .iter()
                .map(|e| BaselineEval {
                    task: e.task.clone(),
                    metric: e.metric.clone(),
                    conc: e.identity.conc,
                    score: e.score,
                    samples: e.samples,
                    stderr: e.score_se,
                })
                .collect(),
            // the run links of dashboard API rows: `Sources: API 1, API 2, …` as in the PR
            sources: side
                .info
                .sources
                .iter()
                .map(|s| servebench_report::attempt::Source {
                    name: s.name.clone(),
                    url: s.url.clone(),
                })
                .collect(),
            framework: Some(first.identity.framework.clone()),
        },
        false,
    ))
}

/// Narrows the baseline line's facts to the baseline points the candidate matched (a
/// dashboard capture holds many configurations and dates; the attempt compares a few of
/// them): the date (`2026-05-17`, or `2025-11-18 – 2026-05-22` when they differ), the
/// image(s) (`unknown image` when none names one), workload, topology, framework and the
/// run links (`API n`, numbered over the matched points as `servebench compare` does).
/// Nothing changes when no baseline point matched: the report then says nothing matched
/// rather than describing the file.
fn narrow_to_matched(table: &mut BaselineTable, c: &servebench_compare::Comparison) {
    let mut matched: Vec<&servebench_compare::Point> = c
        .points
        .iter()
        .filter_map(|p| p.baseline.as_ref())
        .collect();
    if matched.is_empty() {
        return;
    }
    matched.sort_by_key(|p| p.identity.conc);
    fn distinct(v: impl Iterator<Item = String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in v {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
    let mut dates = distinct(matched.iter().filter_map(|p| p.date.clone()));
    dates.sort();
    table.date = match (dates.first(), dates.last()) {
        (Some(a), Some(b)) if a == b => a.clone(),
        (Some(a), Some(b)) => format!("{a} – {b}"),
        _ => "unknown date".into(),
    };
    let images = distinct(matched.iter().filter_map(|p| p.image.clone()));
    table.image = if images.is_empty() {
        "unknown image".into()
    } else {
        images.join(", ")
    };
    table.workload = distinct(matched.iter().map(|p| p.identity.workload_label())).join(", ");
    table.topology = TopologySpec::Label(
        distinct(matched.iter().map(|p| p.identity.topology_label())).join(", "),
    );
    table.framework =
        Some(distinct(matched.iter().map(|p| p.identity.framework.clone())).join(", "));
    let links = servebench_compare::source_links(matched.iter().copied());
    if !links.is_empty() {
        table.sources = links
            .into_iter()
            .map(|s| servebench_report::attempt::Source {
                name: s.name,
                url: s.url,
            })
            .collect();
    } else {
        table.sources.clear();
    }
}

/// Reads `--change` and applies `--recipe-edit`s.
fn load_change(args: &AttemptRequest) -> Result<Option<ChangeInput>> {
    let mut change = match &args.change {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(io(IoOp::Read, p))?;
            let c: ChangeInput = serde_json::from_str(&text).map_err(|e| {
                ReviewError::Invalid(format!(
                    "{}: line {}, column {}: {e} (expected {{\"old\": {{\"ref\": …}}, \"new\": {{\"ref\": …}}}})",
                    p.display(),
                    e.line(),
                    e.column()
                ))
            })?;
            Some(c)
        }
        None => None,
    };
    if let Some(p) = &args.provenance {
        let records = servebench_bump::load_change_records(p).map_err(ReviewError::Bump)?;
        let rec = records
            .iter()
            .rev()
            .find(|r| args.image.as_deref().is_none_or(|i| r.new_image == i))
            .ok_or_else(|| match &args.image {
                Some(i) => {
                    ReviewError::NotFound(format!("{}: no bump record for image {i}", p.display()))
                }
                None => ReviewError::NotFound(format!("{}: no bump record", p.display())),
            })?;
        change = Some(change_from_record(rec));
    }
    for spec in &args.recipe_edits {
        let edit = recipe_edit(spec, args.edit_evidence.as_deref())?;
        match &mut change {
            Some(c) => c.recipe_edits.push(edit),
            None => {
                return Err(flag!(
                    "--recipe-edit {spec}: needs --change FILE (the image provenance)"
                ))
            }
        }
    }
    Ok(change)
}

fn repairs_of(kind: AttemptKind) -> u32 {
    match kind {
        AttemptKind::Repair { n, .. } => n,
        _ => 0,
    }
}

/// Checks the attempt's own inputs before anything runs (`servebench run --baseline` calls it
/// before the first job): the baseline loads (a baseline table, InferenceX rows or a store
/// run), `--change` is an `images.json` (`{"old": …, "new": …}`), `--provenance` is a bump's
/// `provenance.json` holding a record for the image. The candidate and logs are not read.
///
/// Errors: the first input that does not load, naming its file, line and field.
pub fn check_inputs(args: &AttemptRequest) -> Result<()> {
    load_baseline(&args.db, &args.baseline, args.stat)?;
    load_change(args)?;
    Ok(())
}

/// Builds the attempt input from the request (the files and the store).
pub fn input(args: &AttemptRequest) -> Result<AttemptInput> {
    // `latest-baseline` with a candidate: the newest baseline run matching it (as compare)
    let resolved;
    let args = match &args.candidate {
        Some(c) if args.baseline == "latest-baseline" => {
            let cand = load_side(&args.db, c).context("--candidate")?;
            let (id, _, line) =
                crate::sides::latest_baseline_for(&args.db, &cand.points).context("--baseline")?;
            eprintln!("{line}");
            resolved = AttemptRequest {
                baseline: id.to_string(),
                ..args.clone()
            };
            &resolved
        }
        _ => args,
    };
    let stat = args.stat;
    let (mut baseline, baseline_is_table) = load_baseline_as(&args.db, &args.baseline, stat)?;
    let change = load_change(args)?;
    let repairs_used = args.repairs_used.unwrap_or(repairs_of(args.kind));
    let mut points = Vec::new();
    let mut evals = Vec::new();
    let mut failure = None;
    let mut next = None;
    let mut time = args.time.as_deref().map(fmt_utc);
    let mut image = args
        .image
        .clone()
        .or_else(|| change.as_ref().map(|c| c.new.reference.clone()));
    let mut run = args.run_id.as_ref().map(|id| RunRef {
        id: id.clone(),
        attempt: args.run_attempt,
        url: args.run_url.clone(),
    });
    let mut comparison = None;
    // the topologies the run's jobs name (job lines `tp8 ep1 conc4`), in order
    let mut log_topologies: Vec<String> = Vec::new();
    if let Some(c) = &args.candidate {
        comparison = from_candidate(
            args,
            c,
            &mut baseline,
            baseline_is_table,
            &mut points,
            &mut evals,
            (&mut image, &mut time, &mut run),
        )?;
    } else {
        let opts = TriageOptions {
            repairs_used,
            ..TriageOptions::default()
        };
        let report =
            servebench_triage::triage_logs_with(&args.logs, &opts).map_err(ReviewError::Triage)?;
        let main_error = report.first_error.as_ref().map(|f| f.line.clone());
        for log in &report.logs {
            let job = log.job.as_deref().ok_or_else(|| {
                ReviewError::Invalid(format!(
                    "{}: no `Job: …` line naming the point (conc<N>); cannot tell which row it is",
                    log.file
                ))
            })?;
            let (conc, eval) = job_point(job).ok_or_else(|| {
                ReviewError::Invalid(format!(
                    "{}: job line {job:?} names no concurrency (conc<N>)",
                    log.file
                ))
            })?;
            let topology = job_topology(job);
            if let Some(t) = &topology {
                if !log_topologies.contains(t) {
                    log_topologies.push(t.clone());
                }
            }
            let failed = log.first_error.is_some();
            let own_error = log
                .first_error
                .as_ref()
                .map(|f| f.line.clone())
                .filter(|l| Some(l) != main_error.as_ref());
            match eval {
                Some(task) => {
                    let metric = baseline
                        .evals
                        .iter()
                        .find(|e| e.task == task && e.conc == conc)
                        .or_else(|| baseline.evals.iter().find(|e| e.task == task))
                        .map(|e| e.metric.clone())
                        .unwrap_or_else(|| "em_strict".into());
                    evals.push(AttemptEval {
                        task,
                        metric,
                        conc,
                        score: None,
                        samples: None,
                        stderr: None,
                        passed: false,
                    });
                }
                None => points.push(AttemptPoint {
                    conc,
                    status: if failed {
                        RowStatus::Failed
                    } else {
                        RowStatus::Unavailable
                    },
                    has_result: false,
                    request_errors: None,
                    first_error: own_error,
                    values: BaselinePoint {
                        conc,
                        ..Default::default()
                    },
                    topology,
                }),
            }
        }
        failure = failure_summary(&report, repairs_used);
        if report.first_error.is_some() {
            next = Some(next_step(
                &report,
                launcher_from_logs(&args.logs).as_deref(),
            ));
        }
        if time.is_none() {
            time = report
                .logs
                .iter()
                .filter_map(|l| l.first_timestamp.clone())
                .min()
                .map(|t| fmt_utc(&t));
        }
        image = image.or_else(|| image_from_logs(&args.logs));
        if report.persistence == Persistence::Symptom && failure.is_some() {
            eprintln!("note: the first error found is only a symptom; read the server log too");
        }
    }
    let status = decide_status(args, comparison.as_ref(), &points, &evals);
    // The candidate's own workload and topology: every distinct one of its points, in order
    // (`TP4/EP1, TP8/EP1`); never the baseline's, which may be another configuration.
    let distinct = |f: &dyn Fn(&servebench_compare::PointKey) -> String| -> Option<String> {
        let c = comparison.as_ref()?;
        let mut labels: Vec<String> = Vec::new();
        for l in c.points.iter().map(|p| f(&p.identity)) {
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
        (!labels.is_empty()).then(|| labels.join(", "))
    };
    let cand_workload = distinct(&|i| i.workload_label());
    let cand_topology = distinct(&|i| i.topology_label())
        .or_else(|| (!log_topologies.is_empty()).then(|| log_topologies.join(", ")));
    Ok(AttemptInput {
        title_prefix: args.title_prefix.clone(),
        kind: args.kind,
        status,
        run,
        time,
        image: image.ok_or_else(|| {
            flag!("the candidate image is unknown: pass --image REF or --change FILE")
        })?,
        head: args.head.clone(),
        workload: args
            .workload
            .clone()
            .or(cand_workload)
            .unwrap_or_else(|| baseline.workload.clone()),
        // unknown (no point, no job line names one): said by nothing rather than the
        // baseline's topology
        topology: args.topology.clone().or(cand_topology).unwrap_or_default(),
        statistic: stat.to_string(),
        change,
        baseline: Some(baseline),
        points,
        evals,
        failure,
        next,
        columns: vec![],
        comparison,
        failed_jobs: vec![],
    })
}

/// The candidate's side of an attempt (`--candidate`, a store run or result file): its points
/// and evals, its comparison with the baseline exactly as `servebench compare` makes it (the
/// baseline narrowed to the matched rows unless it is a table), and the image, time and run
/// it names where the request did not. `meta`: (image, time, run).
fn from_candidate(
    args: &AttemptRequest,
    c: &str,
    baseline: &mut BaselineTable,
    baseline_is_table: bool,
    points: &mut Vec<AttemptPoint>,
    evals: &mut Vec<AttemptEval>,
    meta: (
        &mut Option<String>,
        &mut Option<String>,
        &mut Option<RunRef>,
    ),
) -> Result<Option<servebench_compare::Comparison>> {
    let stat = args.stat;
    let (image, time, run) = meta;
    let side = load_side(&args.db, c).context("--candidate")?;
    for p in &side.points {
        points.push(AttemptPoint {
            conc: p.identity.conc,
            status: match p.status {
                PointStatus::Ok => RowStatus::Passed,
                PointStatus::Interrupted => RowStatus::Partial,
                PointStatus::Failed => RowStatus::Failed,
                PointStatus::Invalid => RowStatus::Invalid,
            },
            has_result: true,
            request_errors: p.num_requests_failed,
            // an invalid point's violated rules, quoted in the comment (no delta is drawn)
            first_error: (p.status == PointStatus::Invalid).then(|| p.invalid_reasons().join("; ")),
            values: BaselinePoint {
                conc: p.identity.conc,
                total_tput_per_gpu: p.value(Metric::TotalTputPerGpu, stat),
                output_tput_per_gpu: p.value(Metric::OutputTputPerGpu, stat),
                ttft_ms: p.value(Metric::Ttft, stat),
                tpot_ms: p.value(Metric::Tpot, stat),
                e2el_ms: p.value(Metric::E2el, stat),
                interactivity: p.value(Metric::Intvty, stat),
            },
            topology: Some(p.identity.topology_label()),
        });
    }
    for e in &side.evals {
        evals.push(AttemptEval {
            task: e.task.clone(),
            metric: e.metric.clone(),
            conc: e.identity.conc,
            score: e.score,
            samples: e.samples,
            stderr: e.score_se,
            passed: e.passed.unwrap_or(e.score.is_some()),
        });
    }
    // Match, gate and decide exactly as `servebench compare` does (docs/compare.md).
    let base_side = load_side(&args.db, &args.baseline).context("--baseline")?;
    let opts = CompareOptions {
        stat,
        ..CompareOptions::default()
    };
    let comparison = Some(servebench_compare::compare(
        base_side.info,
        base_side.points,
        base_side.evals,
        side.info.clone(),
        side.points.clone(),
        side.evals.clone(),
        &opts,
    ));
    if !baseline_is_table {
        if let Some(c) = &comparison {
            narrow_to_matched(baseline, c);
        }
    }
    *image = image.take().or(side.info.image.clone());
    *time = time.take().or(side.info.created_at.as_deref().map(fmt_utc));
    if run.is_none() {
        *run = side.info.run_id.map(|id| RunRef {
            id: id.to_string(),
            attempt: None,
            url: None,
        });
    }
    Ok(comparison)
}

/// The attempt's status (unless `--status` names it): never `Passed` with a failed point, an
/// eval under its gate, a point that is not a valid submission, or a regression; `NotComparable`
/// when no candidate point had a comparable baseline point.
fn decide_status(
    args: &AttemptRequest,
    comparison: Option<&servebench_compare::Comparison>,
    points: &[AttemptPoint],
    evals: &[AttemptEval],
) -> AttemptStatus {
    // Never `Passed` with a failed point, an eval under its gate, a point that is not a valid
    // submission (its rules or AgentX's), or a regression `compare` would report.
    let invalid = comparison.is_some_and(|c| {
        c.points
            .iter()
            .any(|p| !p.candidate.submission_invalid.is_empty())
    }) || points.iter().any(|p| p.status == RowStatus::Invalid);
    let regressed = comparison
        .as_ref()
        .is_some_and(|c| c.verdict == servebench_compare::Verdict::Regression);
    let failed = points
        .iter()
        .any(|p| matches!(p.status, RowStatus::Failed | RowStatus::Unavailable))
        || evals.iter().any(|e| !e.passed)
        || invalid
        || regressed;
    // Nothing checked against the baseline: no candidate point has a comparable baseline
    // point (none matched its identity, or every matched pair failed a gate).
    let nothing_compared = comparison.is_some_and(|c| {
        c.points
            .iter()
            .all(|p| p.verdict == servebench_compare::Verdict::NotComparable)
    });
    args.status.unwrap_or(if failed {
        AttemptStatus::Failed
    } else if nothing_compared {
        AttemptStatus::NotComparable
    } else {
        AttemptStatus::Passed
    })
}

#[cfg(test)]
mod tests {
    use super::fmt_utc;

    #[test]
    fn times_are_shown_in_utc_minutes() {
        assert_eq!(fmt_utc("2026-09-21T01:15:02.114Z"), "2026-09-21 01:15 UTC");
        assert_eq!(
            fmt_utc("2026-09-21T03:15:02.114+02:00"),
            "2026-09-21 01:15 UTC"
        );
        assert_eq!(fmt_utc("2026-09-21 01:15"), "2026-09-21 01:15 UTC");
        assert_eq!(fmt_utc("2026-09-21 01:15 UTC"), "2026-09-21 01:15 UTC");
    }
}
