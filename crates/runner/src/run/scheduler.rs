//! The state of one [`Runner::run`] invocation ([`Scheduler`]): the queue of (point, attempt)
//! still to start, the jobs in flight, the results so far, and one method per event — start
//! jobs, a job finished (stored, retried, failed or cancelled from outside), Ctrl-C — plus the
//! closing summary. Progress lines go to stdout, `[i/n] <point label>: …`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use servebench_store::{RunId, RunStatus as StoreStatus, Store};

use super::{
    new_result, roll_up, stop_stale, store_err, Active, FailureInfo, PointResult, PointState,
    RunSummary, Runner,
};
use crate::backend::{kill_engine_of, JobState};
use crate::error::{Result, RunnerError};
use crate::failure::{one_line, should_retry, triage_attempt, MAX_INFRA_RETRIES_PER_ATTEMPT};
use crate::job::{read_status, JobStatus};
use crate::plan::Point;
use crate::signal;
use crate::state::{self, RunState};
use crate::status::{EvalGate, RunStatus};

/// Poll interval while jobs are in flight.
const POLL: Duration = Duration::from_millis(200);

/// One run invocation in progress.
pub(super) struct Scheduler<'r> {
    /// The runner (options and executor).
    runner: &'r mut Runner,
    /// The plan, in order.
    plan: Vec<Point>,
    /// The run directory (absolute).
    out: PathBuf,
    /// The run's name: the out directory's name (jobs are named after it).
    name: String,
    /// `run.json`'s state (the store run id is written back once created).
    rs: RunState,
    /// The results store.
    store: Store,
    /// Final result per plan index, once known.
    results: Vec<Option<PointResult>>,
    /// Results of points between attempts (retried), by plan index.
    partial: HashMap<usize, PointResult>,
    /// Jobs in flight.
    active: Vec<Active>,
    /// (plan index, attempt) still to start; popped from the end (plan order, retries first).
    queue: Vec<(usize, u32)>,
    /// The simulator's description, from the first job status that carries one.
    sim_describe: Option<String>,
    /// Ctrl-C / SIGTERM stopped the run.
    interrupted: bool,
}

impl<'r> Scheduler<'r> {
    /// Opens the run in `runner`'s out directory (created; resumed when it holds `run.json`
    /// of the same points, executor and `--simulate`) and its store, with nothing queued yet.
    pub(super) fn open(runner: &'r mut Runner, plan: Vec<Point>) -> Result<Self> {
        let (out, name) = runner.open_out_dir()?;
        let mut rs = runner.resume_or_start(&out, &name, &plan)?;
        rs.pid = std::process::id();
        state::save(&out, &rs)?;
        let store = Store::open(&rs.db).map_err(store_err)?;
        let n = plan.len();
        Ok(Scheduler {
            runner,
            plan,
            out,
            name,
            rs,
            store,
            results: vec![None; n],
            partial: HashMap::new(),
            active: Vec::new(),
            queue: Vec::new(),
            sim_describe: None,
            interrupted: false,
        })
    }

    /// `[i/n] <label>` of plan index `idx`.
    fn tag(&self, idx: usize) -> String {
        format!(
            "[{}/{}] {}",
            idx + 1,
            self.plan.len(),
            self.plan[idx].label()
        )
    }

    /// Queues every point not stored by an earlier invocation (resume), at the attempt after
    /// its last one; a job an earlier, killed invocation left running is stopped first.
    pub(super) fn queue_unstored(&mut self) {
        for i in 0..self.plan.len() {
            let id = &self.plan[i].id;
            let rp = state::point_dir(&self.out, id).join("result.json");
            match state::read_json::<PointResult>(&rp) {
                Some(mut r)
                    if matches!(r.state, PointState::Stored | PointState::AlreadyStored) =>
                {
                    say!(self.runner, "{}: already stored, skipped", self.tag(i));
                    r.state = PointState::AlreadyStored;
                    self.results[i] = Some(r);
                }
                _ => {
                    let prev = state::attempts(&self.out, id);
                    if let Some(last) = prev.last() {
                        // a job of an earlier invocation that was killed may still run
                        if stop_stale(last) {
                            say!(
                                self.runner,
                                "{}: stopped a job left over from the earlier invocation ({})",
                                self.tag(i),
                                last.display()
                            );
                        }
                    }
                    self.queue.push((i, prev.len() as u32 + 1));
                }
            }
        }
        self.queue.reverse(); // pop from the end = plan order
    }

    /// Starts and reaps jobs until the queue is empty and nothing runs, or a signal stops the
    /// run (its jobs are then cancelled and their engines torn down).
    pub(super) fn drive(&mut self) -> Result<()> {
        while !self.queue.is_empty() || !self.active.is_empty() {
            if signal::interrupted() {
                self.cancel_active()?;
                break;
            }
            self.start_jobs()?;
            self.reap_done()?;
            if !self.active.is_empty() {
                std::thread::sleep(POLL);
            }
        }
        Ok(())
    }

    /// Writes `points/<id>/result.json`, then says `line` (only once it is on disk: a kill
    /// right after the line loses nothing), then keeps `r` as the point's result.
    fn save_result(&mut self, idx: usize, r: PointResult, line: Option<String>) -> Result<()> {
        let dir = state::point_dir(&self.out, &self.plan[idx].id);
        state::write_json(&dir.join("result.json"), &r)?;
        if let Some(l) = line {
            say!(self.runner, "{l}");
        }
        self.results[idx] = Some(r);
        Ok(())
    }

    /// The point's result carried over from earlier attempts (or a fresh one) with this
    /// attempt's number, job, log and wall time added.
    fn attempt_result(&mut self, a: &Active) -> PointResult {
        let mut r = self
            .partial
            .remove(&a.idx)
            .unwrap_or_else(|| new_result(&self.plan[a.idx]));
        r.attempts = a.spec.attempt;
        r.jobs.push(a.handle.clone());
        r.logs.push(a.handle.log.clone());
        r.node_logs = crate::failure::node_logs(&a.spec.dir);
        r.wall_s += a.started.elapsed().as_secs_f64();
        r
    }

    /// Ctrl-C / SIGTERM: cancels every job in flight, tears its engine down and marks its
    /// point interrupted.
    fn cancel_active(&mut self) -> Result<()> {
        self.interrupted = true;
        say!(
            self.runner,
            "interrupted (signal {}): cancelling {} job(s) and tearing their engines down",
            signal::signal_number(),
            self.active.len()
        );
        for a in std::mem::take(&mut self.active) {
            let _ = self.runner.exec.cancel(&a.handle);
            kill_engine_of(&a.spec.dir);
            let mut r = self.attempt_result(&a);
            r.state = PointState::Interrupted;
            say!(
                self.runner,
                "{}: interrupted; log {}",
                self.tag(a.idx),
                a.handle.log.display()
            );
            self.save_result(a.idx, r, None)?;
        }
        Ok(())
    }

    /// Submits queued attempts while the executor has room.
    fn start_jobs(&mut self) -> Result<()> {
        while self.active.len() < self.runner.exec.max_parallel() {
            let Some((i, attempt)) = self.queue.pop() else {
                break;
            };
            match self.runner.submit(&self.name, i, &self.plan[i], attempt) {
                Ok(a) => {
                    let p = &self.plan[i];
                    let what = if a.handle.executor == "slurm" {
                        format!("slurm job {}", a.handle.id)
                    } else {
                        format!("local process group {}", a.handle.id)
                    };
                    say!(
                        self.runner,
                        "{}: attempt {attempt} started ({what}, {} GPU{}; log {})",
                        self.tag(i),
                        p.gpus(),
                        if p.gpus() == 1 { "" } else { "s" },
                        a.handle.log.display()
                    );
                    self.active.push(a);
                }
                Err(e) => self.submit_failed(i, attempt, &e)?,
            }
        }
        Ok(())
    }

    /// The job never started: the point fails with the submission error itself (nothing to
    /// triage).
    fn submit_failed(&mut self, i: usize, attempt: u32, e: &RunnerError) -> Result<()> {
        let mut r = self
            .partial
            .remove(&i)
            .unwrap_or_else(|| new_result(&self.plan[i]));
        r.attempts = attempt;
        r.state = PointState::Failed;
        r.failure = Some(FailureInfo {
            first_error: Some(e.to_string()),
            category: "submit_failed".into(),
            layer: "scheduler".into(),
            persistence: "unknown".into(),
            deterministic: false,
            outcome: None,
            next_step: "Fix the submission error above, then run again (the run resumes).".into(),
            summary: e.to_string(),
        });
        say!(self.runner, "{}: not started: {e}", self.tag(i));
        self.save_result(i, r, None)
    }

    /// Polls every job in flight once and handles those that finished (a poll error is a
    /// warning; the job is polled again next round).
    fn reap_done(&mut self) -> Result<()> {
        let mut k = 0;
        while k < self.active.len() {
            match self.runner.exec.poll(&self.active[k].handle) {
                Ok(JobState::Done { exit_code, state }) => {
                    let a = self.active.remove(k);
                    self.job_done(a, exit_code, &state)?;
                }
                Ok(_) => k += 1,
                Err(e) => {
                    say!(self.runner, "warning: {e}");
                    k += 1;
                }
            }
        }
        Ok(())
    }

    /// A job finished: its engine is torn down, then its point is stored (job status ok) or
    /// its failure judged ([`Scheduler::attempt_failed`]).
    fn job_done(&mut self, a: Active, exit_code: Option<i32>, sched_state: &str) -> Result<()> {
        kill_engine_of(&a.spec.dir);
        let mut r = self.attempt_result(&a);
        let js = read_status(&a.spec.dir);
        r.ready_after_s = js.as_ref().and_then(|s| s.ready_after_s);
        if self.sim_describe.is_none() {
            self.sim_describe = js.as_ref().and_then(|s| s.sim_describe.clone());
        }
        if js.as_ref().is_some_and(|s| s.ok) {
            let line = self.store_attempt(&a, &mut r)?;
            return self.save_result(a.idx, r, Some(line));
        }
        match self.attempt_failed(&a, r, exit_code, sched_state, js.as_ref())? {
            Some(r) => self.save_result(a.idx, r, None),
            None => Ok(()),
        }
    }

    /// Copies the attempt's rows into the run's store run and returns the `stored N rows`
    /// line (with the eval gate's or validity's verdict when not passed).
    fn store_attempt(&mut self, a: &Active, r: &mut PointResult) -> Result<String> {
        let (np, ne, invalid, gate) = self.runner.store_point(
            &mut self.store,
            &mut self.rs,
            &a.spec,
            self.sim_describe.as_deref(),
        )?;
        r.points_stored = np;
        r.evals_stored = ne;
        r.state = PointState::Stored;
        r.failure = None;
        r.invalid = invalid;
        r.eval_gate = gate;
        let verdict = match r.status() {
            RunStatus::Passed => String::new(),
            RunStatus::EvalFailed => format!(
                "; eval failed: {}",
                r.eval_gate
                    .as_ref()
                    .map(EvalGate::describe)
                    .unwrap_or_default()
            ),
            _ => "; not a valid InferenceX submission".into(),
        };
        Ok(format!(
            "{}: stored {} row{} (ready after {:.1} s, {:.1} s in all){verdict}",
            self.tag(a.idx),
            np + ne,
            if np + ne == 1 { "" } else { "s" },
            r.ready_after_s.unwrap_or(0.0),
            r.wall_s,
        ))
    }

    /// A job that did not store its point: triage of its own log decides. Cancelled from
    /// outside (scancel / `--cancel`) → interrupted; transient within the retry budget →
    /// queued again (returns `None`, the result waits in `partial`); else failed.
    fn attempt_failed(
        &mut self,
        a: &Active,
        mut r: PointResult,
        exit_code: Option<i32>,
        sched_state: &str,
        js: Option<&JobStatus>,
    ) -> Result<Option<PointResult>> {
        let tri = triage_attempt(&a.handle.log, &a.spec.dir, r.retries)?;
        let info = FailureInfo {
            first_error: tri
                .first_error
                .as_ref()
                .map(|f| f.summary.trim().to_string()),
            category: tri.category.clone(),
            layer: tri.layer.as_str().into(),
            persistence: tri.determinism(),
            deterministic: tri.deterministic,
            outcome: tri.outcome.map(|o| o.as_str().to_string()),
            next_step: tri.next_step.clone(),
            summary: one_line(&tri),
        };
        // Slurm ended the job because a node of its allocation failed: the job's SIGTERM is
        // that, not a cancel from outside
        let node_fail = sched_state == "NODE_FAIL";
        let how = match (exit_code, js) {
            _ if node_fail => "Slurm job NODE_FAIL: a node of the allocation failed".to_string(),
            (_, Some(s)) if !s.message.is_empty() => s.message.clone(),
            (Some(c), _) => format!("job exit {c} ({sched_state})"),
            (None, _) => format!("job {sched_state}"),
        };
        let max_retries = self.runner.opts.max_retries;
        if js.is_some_and(|s| s.interrupted) && !signal::interrupted() && !node_fail {
            // cancelled from outside (scancel / --cancel)
            r.state = PointState::Interrupted;
            r.failure = Some(info);
            say!(self.runner, "{}: cancelled ({how})", self.tag(a.idx));
        } else if should_retry(&tri, r.retries, max_retries) {
            r.retries += 1;
            say!(self.runner,
                "{}: attempt {} failed: {}; transient: infrastructure retry {}/{} (no repair consumed)",
                self.tag(a.idx),
                a.spec.attempt,
                info.summary,
                r.retries,
                max_retries.min(MAX_INFRA_RETRIES_PER_ATTEMPT)
            );
            r.retried.push(info);
            self.partial.insert(a.idx, r);
            self.queue.push((a.idx, a.spec.attempt + 1));
            return Ok(None);
        } else {
            r.state = PointState::Failed;
            let why = if tri.deterministic {
                "deterministic: not retried".to_string()
            } else if tri.retry {
                format!("retry budget spent ({} of {})", r.retries, max_retries)
            } else {
                format!("{}: not retried", tri.action.as_str())
            };
            say!(
                self.runner,
                "{}: failed ({how}): {}; {why}; log {}",
                self.tag(a.idx),
                info.summary,
                a.handle.log.display()
            );
            r.failure = Some(info);
        }
        Ok(Some(r))
    }

    /// Closes the run: points never reached are interrupted, the store run gets its status
    /// (interrupted, partial, failed or ok), and `summary.json` is written.
    pub(super) fn finish(mut self) -> Result<RunSummary> {
        // points never reached (interrupted before their turn)
        let results: Vec<PointResult> = std::mem::take(&mut self.results)
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.unwrap_or_else(|| {
                    let mut r = self
                        .partial
                        .remove(&i)
                        .unwrap_or_else(|| new_result(&self.plan[i]));
                    r.state = PointState::Interrupted;
                    r
                })
            })
            .collect();
        if let Some(id) = self.rs.store_run {
            let failed = results.iter().any(|r| r.state == PointState::Failed);
            let stored = results
                .iter()
                .any(|r| matches!(r.state, PointState::Stored | PointState::AlreadyStored));
            let status = if self.interrupted {
                StoreStatus::Interrupted
            } else if failed && stored {
                StoreStatus::Partial
            } else if failed {
                StoreStatus::Failed
            } else {
                StoreStatus::Ok
            };
            self.store
                .finish_run(RunId(id), status)
                .map_err(store_err)?;
        }
        let first_failure = results
            .iter()
            .find_map(|r| r.failure.as_ref().filter(|_| r.state == PointState::Failed));
        let summary = RunSummary {
            name: self.rs.name.clone(),
            dir: self.out.clone(),
            db: self.rs.db.clone(),
            store_run: self.rs.store_run,
            interrupted: self.interrupted,
            status: roll_up(&results, self.interrupted),
            verdict: None,
            outcome: first_failure.and_then(|f| f.outcome.clone()),
            phase: "targeted".into(),
            repairs_used: 0,
            infra_retries: results.iter().map(|r| r.retries).sum(),
            sim_describe: self.sim_describe,
            results,
        };
        summary.save()?;
        Ok(summary)
    }
}
