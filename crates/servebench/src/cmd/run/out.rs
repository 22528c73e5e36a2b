//! What `servebench run` prints and writes at the end: the attempt comment (built in-process
//! exactly as `servebench attempt` builds it, so the comparison's verdict folds into the run
//! status), the points table, the one status line, `summary.json` and the exit code. The
//! table, `run --status`, `runs` and `attempt.md` all read the one
//! [`servebench_runner::RunStatus`].

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use servebench_compare::{Stat, Verdict};
use servebench_report::attempt::{build_attempt, FailedJob};
use servebench_report::model::{AttemptKind, AttemptStatus};
use servebench_report::{Format, Lang};
use servebench_review::attempt::{input, AttemptRequest};
use servebench_runner::{PointState, RunStatus, RunSummary, VerdictOutcome};

use super::Args;

/// A table with the runner's preset.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header.to_vec());
    t
}

/// The request `servebench attempt` would get for this run: the stored run compared with the
/// baseline when a point was stored (`candidate`), else the failed jobs' `logs`.
pub fn attempt_request(
    args: &Args,
    run_name: &str,
    db: &Path,
    candidate: Option<String>,
    logs: Vec<std::path::PathBuf>,
    image: &str,
) -> AttemptRequest {
    AttemptRequest {
        baseline: args.baseline.clone().unwrap_or_default(),
        candidate,
        logs,
        kind: AttemptKind::Initial,
        status: None,
        change: args.change.clone(),
        provenance: args.provenance.clone(),
        recipe_edits: vec![],
        edit_evidence: None,
        image: Some(image.to_string()),
        run_id: Some(run_name.to_string()),
        run_attempt: None,
        run_url: None,
        head: None,
        time: None,
        workload: None,
        topology: None,
        stat: Stat::Mean,
        // the runner never edits a recipe
        repairs_used: Some(0),
        title_prefix: None,
        db: db.to_path_buf(),
    }
}

/// The run status as the attempt comment's header says it.
fn attempt_status(st: RunStatus) -> AttemptStatus {
    match st {
        RunStatus::Passed => AttemptStatus::Passed,
        RunStatus::NotComparable => AttemptStatus::NotComparable,
        RunStatus::Cancelled => AttemptStatus::Cancelled,
        RunStatus::Regression | RunStatus::Invalid | RunStatus::EvalFailed | RunStatus::Failed => {
            AttemptStatus::Failed
        }
    }
}

/// The comparison's overall verdict as the run status needs it.
pub fn verdict_outcome(v: Verdict) -> VerdictOutcome {
    match v {
        Verdict::Regression => VerdictOutcome::Regression,
        Verdict::CandidateInvalid => VerdictOutcome::CandidateInvalid,
        Verdict::NotComparable => VerdictOutcome::NotComparable,
        Verdict::NoChange | Verdict::Improvement | Verdict::Observation | Verdict::Inconclusive => {
            VerdictOutcome::NoRegression
        }
    }
}

/// The run's failed jobs as the attempt names them: label, concurrency, the eval task of an
/// eval job (its point id ends `_eval-<task>`), the first error line triage found in its log
/// (else the failure's one-line summary) and the log.
fn failed_jobs(s: &RunSummary) -> Vec<FailedJob> {
    s.results
        .iter()
        .filter(|r| r.state == PointState::Failed)
        .map(|r| FailedJob {
            label: r.label.clone(),
            conc: r.conc,
            eval_task: r
                .eval_only
                .then(|| r.id.rsplit_once("_eval-").map(|(_, t)| t.to_string()))
                .flatten(),
            error: r
                .failure
                .as_ref()
                .map(|f| f.first_error.clone().unwrap_or_else(|| f.summary.clone()))
                .unwrap_or_else(|| "no error line found in its log".into()),
            log: r.logs.last().map(|l| l.display().to_string()),
            node_logs: r
                .node_logs
                .iter()
                .map(|l| l.display().to_string())
                .collect(),
        })
        .collect()
}

/// Builds the attempt comment, folds its comparison's verdict into `s`, sets the header to the
/// run's status and writes `path`.
fn write_attempt(args: &Args, s: &mut RunSummary, image: &str, path: &Path) -> Result<()> {
    let (candidate, logs) = match s.store_run {
        Some(id) => (Some(id.to_string()), vec![]),
        None => (
            None,
            s.results
                .iter()
                .filter_map(|r| r.logs.last().cloned())
                .collect(),
        ),
    };
    // the simulator's prediction beside each measured point, as `servebench attempt` shows it
    crate::cmd::sim::plausible::install();
    let req = attempt_request(args, &s.name, &s.db, candidate, logs, image);
    let mut inp = input(&req)?;
    if s.store_run.is_some() {
        // jobs that failed beside the stored ones (a crashed eval job): named with their
        // first error, not left as a row with a missing value
        inp.failed_jobs = failed_jobs(s);
    } else {
        // nothing stored: the comment is triaged from the job logs; a failed multinode job
        // is named too, with its per-node, per-role logs beside its job log
        inp.failed_jobs = failed_jobs(s)
            .into_iter()
            .filter(|j| !j.node_logs.is_empty())
            .collect();
    }
    if let Some(c) = &inp.comparison {
        s.apply_verdict(verdict_outcome(c.verdict));
    }
    inp.status = attempt_status(s.status);
    let doc = build_attempt(&inp);
    let text = servebench_report::render(&doc, Format::Md, Lang::EnZh, false);
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

/// Prints the end of a run (attempt comment, table, status line), writes `summary.json` and
/// returns the exit code of the run's status.
pub fn finish(args: &Args, mut s: RunSummary, image: &str) -> Result<ExitCode> {
    let attempt = match (&args.baseline, s.interrupted) {
        (Some(_), false) => {
            let path = s.dir.join("attempt.md");
            Some(write_attempt(args, &mut s, image, &path).map(|_| path))
        }
        _ => None,
    };
    s.save()?;
    let mut t = table(&[
        "Point", "State", "Attempts", "Retries", "Ready s", "Rows", "Reason",
    ]);
    for r in &s.results {
        let why: String = r.reason().unwrap_or_default().chars().take(100).collect();
        t.add_row(vec![
            r.label.clone(),
            r.state_text(),
            r.attempts.to_string(),
            r.retries.to_string(),
            r.ready_after_s
                .map(|x| format!("{x:.1}"))
                .unwrap_or_else(|| "-".into()),
            (r.points_stored + r.evals_stored).to_string(),
            why,
        ]);
    }
    println!("{t}");
    for (label, state, why) in s.problems() {
        if !why.is_empty() && state != "not started" {
            println!("{label}: {state}: {why}");
        }
    }
    println!("{}", status_line(&s));
    match s.store_run {
        Some(id) => println!("store run: {id} ({})", s.db.display()),
        None => println!("store run: none (no point was stored)"),
    }
    match attempt {
        Some(Ok(p)) => println!("attempt comment: {}", p.display()),
        Some(Err(e)) => eprintln!("error: attempt comment not written: {e:#}"),
        None => {}
    }
    println!(
        "results: {} (run.json, summary.json, points/<point>/attempt-<n>/job.log)",
        s.dir.display()
    );
    Ok(ExitCode::from(s.status.exit_code()))
}

/// `status eval failed · verdict regression · phase targeted · outcome - · repairs 0 ·
/// infrastructure retries 0`.
pub fn status_line(s: &RunSummary) -> String {
    format!(
        "status {}{} · phase {} · outcome {} · repairs {} · infrastructure retries {}",
        s.status,
        s.verdict
            .map(|v| format!(" · verdict {}", verdict_words(v)))
            .unwrap_or_default(),
        s.phase,
        s.outcome.as_deref().unwrap_or("-"),
        s.repairs_used,
        s.infra_retries
    )
}

fn verdict_words(v: VerdictOutcome) -> &'static str {
    match v {
        VerdictOutcome::NoRegression => "no regression",
        VerdictOutcome::NotComparable => "not comparable",
        VerdictOutcome::CandidateInvalid => "candidate invalid",
        VerdictOutcome::Regression => "regression",
    }
}

/// `servebench run --status RUN_DIR`: each point's newest job, state and log, then the run's
/// status line from `summary.json` (the same words as the run's own table). Exits with the
/// code the run itself exited with (its status's, docs/run.md); [`STILL_RUNNING`] while its
/// process is alive; 1 when it ended without a summary (killed).
pub fn print_status(dir: &Path) -> Result<ExitCode> {
    let mut t = table(&["Point", "Job", "State", "Log"]);
    for (id, job, st, log) in servebench_runner::run::status_lines(dir)? {
        t.add_row(vec![id, job, st, log.display().to_string()]);
    }
    println!("{t}");
    if let Some(pid) = servebench_runner::run::running_pid(dir) {
        println!("status running (servebench run pid {pid})");
        return Ok(ExitCode::from(STILL_RUNNING));
    }
    match servebench_runner::run::load_summary(dir) {
        Some(s) => {
            println!("{}", status_line(&s));
            Ok(ExitCode::from(s.status.exit_code()))
        }
        None => {
            println!(
                "status incomplete: its servebench run ended without a summary.json (killed?); run the same command again to resume it"
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `run --status`'s exit code while the run's process still works on it (sysexits
/// `EX_TEMPFAIL`: ask again later); a finished run exits with its status's code.
pub const STILL_RUNNING: u8 = 75;
