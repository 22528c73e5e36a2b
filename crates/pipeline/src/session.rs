//! [`Session`]: one measuring session against one target. `open` brings up the target, checks
//! the model, settles the identity, builds the workload's executor and records the run;
//! [`Session::run_point`] measures one point and hands it to every observer (files, completion
//! marker, store, console, extras); [`Session::run_eval`] runs the eval on the same target;
//! [`Session::finish`] writes the summary, settles the run's status and returns the
//! [`SweepOutcome`] with its points. `sweep`/`bench` ([`crate::sweep::run_sweep`]) and `search`
//! (`servebench-slo`, one [`Session::probe`] per load, without restarting the target) drive it;
//! so does `servebench eval` ([`crate::standalone_eval`]: a session of [`NoPoints`] that runs
//! only its eval). Both evals run through [`Session::eval_with`] and store their row through
//! one [`EvalIdentity::row`] and the session's [`StoreRecorder`], so the row of an eval alone
//! and of `sweep --eval` is written by the same code.
//!
//! Every line for the user goes through the session's [`Console`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use servebench_eval::{EvalMeta, EvalOptions, EvalResult, EvalRow};
use servebench_metrics::{Identity, PointStatus};
use servebench_store::{RunId, RunStatus, Store};

use crate::console::Console;
use crate::error::{io, IoOp, PipelineError, Result};
use crate::executor::{point_dir_name, Executor, PointOutput, PointSpec, SweepCtx};
use crate::observe::{ConsoleOutput, FileOutput, Observer, SweepSummary};
use crate::plan::{EvalTask, SweepPlan};
use crate::record::{eval_store_row, run_meta, run_status, StoreRecorder};
use crate::resume::{self, Finished};
use crate::target::Target;

/// The executor's view of the session's parts (field by field, so the executor itself stays
/// borrowable mutably).
macro_rules! ctx {
    ($p:expr) => {
        SweepCtx {
            plan: &$p.plan,
            target: &$p.target,
            model: &$p.model,
            identity: &$p.identity,
            cancel: &$p.cancel,
            tty: $p.tty,
            console: &$p.console,
        }
    };
}

/// Exit status of a sweep whose eval ran but missed its threshold (as `servebench eval`).
pub const EXIT_EVAL_GATE: u8 = 2;
/// Exit status after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// How a sweep ended (errors before or during measuring are the `Err` of
/// [`crate::sweep::run_sweep`]).
#[derive(Debug)]
pub struct SweepOutcome {
    /// Process exit status: 0 ok, 1 a point failed / eval error / report or store error,
    /// [`EXIT_EVAL_GATE`], [`EXIT_INTERRUPTED`].
    pub exit: u8,
    /// The output directory.
    pub out_dir: PathBuf,
    /// The stored run, if recorded.
    pub run: Option<RunId>,
    /// Every finished point, in the order measured (points kept by `--resume` included).
    pub points: Vec<PointOutput>,
}

/// What a session is built from: a started target, the model it serves, the identity of the
/// rows, the workload's executor, and where the output goes.
pub struct SessionParts<E: Executor> {
    /// The plan (load fields may change between probes, [`Session::probe`]).
    pub plan: SweepPlan,
    /// The target (started; shut down by [`Session::finish`]/[`Session::close`]).
    pub target: Target,
    /// Model name sent in requests.
    pub model: String,
    /// Identity of every row.
    pub identity: Identity,
    /// The workload's executor.
    pub executor: E,
    /// The run in the store, if recorded.
    pub recorder: Option<StoreRecorder>,
    /// The output directory (exists).
    pub out_dir: PathBuf,
    /// Observers after the built-in ones (the slo extras, search captures, tests).
    pub extra: Vec<Box<dyn Observer>>,
    /// Ctrl-C: the point in flight (or the eval) stops.
    pub cancel: servebench_endpoint::CancelToken,
    /// Where lines for the user go.
    pub console: Arc<dyn Console>,
    /// Progress bars on stderr (a terminal); else plain progress lines.
    pub tty: bool,
    /// The identity of the eval row; `None`: the session's [`Identity`]
    /// ([`EvalIdentity::of_sweep`]).
    pub eval_identity: Option<EvalIdentity>,
}

/// The identity an eval row is stored with: what the eval row is told (`meta`), the image,
/// and the session's one [`Identity`] its unknown keys are filled from
/// ([`EvalRow::fill_identity`]: [`crate::identity::IdentityDefaults`] for what no flag named —
/// the simulator's preset, or the engine against an endpoint). `sweep --eval` tells the row
/// every field of the session's identity; `servebench eval` its flags, the rest filled and
/// named under `identity_defaults`. One [`EvalIdentity::row`] writes both rows.
#[derive(Debug, Clone)]
pub struct EvalIdentity {
    /// The identity fields the eval writes into its row (`None`: filled from `identity`).
    pub meta: EvalMeta,
    /// `--image`, stored with the row.
    pub image: Option<String>,
    /// The session's identity ([`crate::identity::identity`]).
    pub identity: Identity,
}

impl EvalIdentity {
    /// A sweep's eval identity: every field from the rows' `identity` (nothing is filled
    /// again).
    pub fn of_sweep(identity: &Identity) -> EvalIdentity {
        EvalIdentity {
            meta: EvalMeta::from(identity),
            image: Some(identity.image.clone()),
            identity: identity.clone(),
        }
    }

    /// The stored eval row of `r`: the gate outcome and image ([`eval_store_row`]), the empty
    /// identity fields filled from the identity ([`EvalRow::fill_identity`]) and named under
    /// `identity_defaults`.
    pub fn row(&self, r: &EvalResult) -> EvalRow {
        let mut row = eval_store_row(r, self.image.as_deref());
        let filled = row.fill_identity(&self.identity);
        if !filled.is_empty() {
            row.identity_defaults = Some(filled.iter().map(|f| f.to_string()).collect());
        }
        row
    }
}

/// The executor of an eval-only session (`servebench eval`): it measures no points; asking it
/// to is [`PipelineError::Invalid`].
pub struct NoPoints;

impl Executor for NoPoints {
    type Workload = ();

    async fn prepare(&mut self, _ctx: &SweepCtx<'_>, _conc: u64) -> Result<()> {
        Err(PipelineError::Invalid(
            "an eval-only session measures no points".into(),
        ))
    }

    fn describe(&self, _workload: &()) -> String {
        String::new()
    }

    async fn run_point(
        &mut self,
        _ctx: &SweepCtx<'_>,
        _workload: &(),
        _point: &PointSpec,
    ) -> Result<PointOutput> {
        Err(PipelineError::Invalid(
            "an eval-only session measures no points".into(),
        ))
    }
}

/// One measuring session (see the module docs).
pub struct Session<E: Executor> {
    p: SessionParts<E>,
    eval_identity: EvalIdentity,
    finished: BTreeMap<(u64, u32), Finished>,
    files: FileOutput,
    points: Vec<PointOutput>,
    datasets: Vec<String>,
    workload: Option<(u64, E::Workload)>,
    started: chrono::DateTime<chrono::Utc>,
    eval_done: Option<servebench_eval::EvalResult>,
    eval_error: Option<String>,
}

impl Session<crate::workload::AnyExecutor> {
    /// Opens a session for `plan`: starts the target (the simulator's emission log and
    /// `answers` for GSM8K replay in `out_dir`), checks the model, warns on an engine-profile
    /// mismatch, settles the identity, builds the workload's executor and, with `store`, records
    /// the run (`--resume`: reopens the run that wrote into `out_dir` and reads the finished
    /// points back).
    pub async fn open(
        plan: SweepPlan,
        endpoint: Option<servebench_endpoint::Endpoint>,
        store: Option<Store>,
        out_dir: PathBuf,
        extra: Vec<Box<dyn Observer>>,
        cancel: servebench_endpoint::CancelToken,
        console: Arc<dyn Console>,
    ) -> Result<Self> {
        let c = &plan;
        // The simulator replays recorded GSM8K solutions when the sweep runs the eval against it.
        let answers = match (c.eval, endpoint.is_none()) {
            (Some(EvalTask::Gsm8k), true) => {
                let dir = c.eval_plan.gsm8k_dir.as_deref();
                Some(
                    match c.eval_plan.sim_accuracy {
                        Some(a) => servebench_eval::sim_answers::with_accuracy(a, dir),
                        None => {
                            servebench_eval::sim_answers::load_from(&c.eval_plan.sim_answers, dir)
                        }
                    }
                    .map_err(PipelineError::Eval)?,
                )
            }
            _ => None,
        };
        let target = Target::start(c, endpoint, &out_dir, answers, &cancel, &*console).await?;
        let (model, model_warning) =
            servebench_endpoint::run_model(&target.inner, c.model.as_deref(), true).await?;
        let engine_warning = if target.inner.is_simulator() {
            None
        } else {
            let ep = target.inner.endpoint().client();
            crate::cache::profile_mismatch_warning(ep, c.engine).await
        };
        for w in [model_warning, engine_warning].into_iter().flatten() {
            console.warn(&w);
        }
        let identity = crate::identity::identity(c, &target, &model)?;
        let executor = crate::workload::AnyExecutor::new(c, &target, &model, &*console).await?;
        // the run in the store (status `running` until the end)
        // (--resume: the run that wrote into the output directory, reopened)
        let recorder = match (store, &c.db) {
            (Some(st), Some(db)) => Some(match resume::previous_run(&st, &out_dir, c)? {
                Some(run) => StoreRecorder::reopen(st, db, run, console.clone())?,
                None => StoreRecorder::start(
                    st,
                    db,
                    run_meta(c, &target, &model, &identity, &out_dir),
                    c,
                    console.clone(),
                )?,
            }),
            _ => None,
        };
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Session::from_parts(SessionParts {
            plan,
            target,
            model,
            identity,
            executor,
            recorder,
            out_dir,
            extra,
            cancel,
            console,
            tty,
            eval_identity: None,
        })
    }
}

impl<E: Executor> Session<E> {
    /// A session over started parts; with `--resume` the finished points under the output
    /// directory are read back (and the store's run reconciled with them).
    pub fn from_parts(mut p: SessionParts<E>) -> Result<Self> {
        let finished =
            resume::finished_points(&p.plan, &p.out_dir, p.recorder.as_mut(), &*p.console)?;
        let eval_identity = match p.eval_identity.take() {
            Some(e) => e,
            None => EvalIdentity::of_sweep(&p.identity),
        };
        Ok(Session {
            eval_identity,
            files: FileOutput {
                dir: p.out_dir.clone(),
            },
            p,
            finished,
            points: Vec::new(),
            datasets: Vec::new(),
            workload: None,
            started: chrono::Utc::now(),
            eval_done: None,
            eval_error: None,
        })
    }

    /// The plan.
    pub fn plan(&self) -> &SweepPlan {
        &self.p.plan
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.p.target
    }

    /// The model requests are sent for.
    pub fn model(&self) -> &str {
        &self.p.model
    }

    /// The points finished so far.
    pub fn points(&self) -> &[PointOutput] {
        &self.points
    }

    /// The cancel token (Ctrl-C).
    pub fn cancel(&self) -> &servebench_endpoint::CancelToken {
        &self.p.cancel
    }

    /// The session's reporter: where every line for the user goes.
    pub fn console(&self) -> &Arc<dyn Console> {
        &self.p.console
    }

    /// Every concurrency × repeat of the plan, in order, until Ctrl-C. An error stops them.
    pub async fn run_points(&mut self) -> Result<()> {
        let (concs, repeats) = (self.p.plan.concurrencies.clone(), self.p.plan.repeats);
        for conc in concs {
            for repeat in 1..=repeats {
                if self.p.cancel.is_cancelled() {
                    return Ok(());
                }
                let dir = self.p.out_dir.join(point_dir_name(conc, repeat, repeats));
                let spec = PointSpec {
                    conc,
                    repeat,
                    repeats,
                    dir,
                };
                match self.run_point(spec).await {
                    Ok(_) => {}
                    Err(PipelineError::Interrupted) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Builds the workload of concurrency `conc` unless the last one built was for it (repeats
    /// reuse it); said once for the first, counted for every concurrency.
    async fn prepare(&mut self, conc: u64) -> Result<()> {
        if matches!(&self.workload, Some((c, _)) if *c == conc) {
            return Ok(());
        }
        self.workload = None;
        let ctx = ctx!(self.p);
        let w = self.p.executor.prepare(&ctx, conc).await?;
        let line = self.p.executor.describe(&w);
        if self.datasets.is_empty() {
            self.p.console.line(&line);
        }
        if let Some(n) = self.p.executor.requests_line(&ctx, conc) {
            self.p.console.line(&n);
        }
        self.datasets.push(format!("conc {conc}: {line}"));
        self.workload = Some((conc, w));
        Ok(())
    }

    /// Measures one point into `spec.dir` (a `--resume` point finished earlier is kept as it
    /// is) and hands it to the observers: files, completion marker, store, console, extras.
    /// Ctrl-C during the point: `Err(PipelineError::Interrupted)`.
    pub async fn run_point(&mut self, spec: PointSpec) -> Result<&PointOutput> {
        self.prepare(spec.conc).await?;
        if let Some(f) = self.finished.remove(&(spec.conc, spec.repeat)) {
            // --resume: finished before the interruption, kept as it is
            self.p
                .console
                .line(&format!("{}: finished earlier, kept", f.point.spec.label()));
            for o in self.p.extra.iter_mut() {
                o.point_done(&f.point)
                    .map_err(PipelineError::from_observer)?;
            }
            self.points.push(f.point);
            return Ok(self.points.last().expect("just pushed"));
        } else if self.p.plan.resume {
            resume::clear_point_dir(&spec.dir)?;
        }
        std::fs::create_dir_all(&spec.dir).map_err(io(IoOp::Create, &spec.dir))?;
        let p = {
            let ctx = ctx!(self.p);
            let (_, w) = self.workload.as_ref().expect("prepared above");
            self.p.executor.run_point(&ctx, w, &spec).await?
        };
        self.files
            .point_done(&p)
            .map_err(PipelineError::from_observer)?;
        // the point's completion marker (--resume keeps the points that have one)
        resume::mark_finished(&p)?;
        // stored as soon as it is measured: a crash later keeps it
        if let Some(r) = self.p.recorder.as_mut() {
            r.point_done(&p).map_err(PipelineError::from_observer)?;
        }
        ConsoleOutput {
            console: self.p.console.clone(),
        }
        .point_done(&p)
        .map_err(PipelineError::from_observer)?;
        for o in self.p.extra.iter_mut() {
            o.point_done(&p).map_err(PipelineError::from_observer)?;
        }
        self.points.push(p);
        Ok(self.points.last().expect("just pushed"))
    }

    /// One search probe: `load` applied to the plan (concurrency, request rate, measured
    /// requests), one point measured into `dir/conc<C>/` on the session's target, and `dir`
    /// given its own `sweep-flags.json` and `summary.{json,csv}` as a one-point sweep. The
    /// point goes to the extra observers but not into the session's own points or store run.
    pub async fn probe(&mut self, load: ProbeLoad, dir: PathBuf) -> Result<PointOutput> {
        self.p.plan.concurrencies = vec![load.conc];
        if let Some(f) = self.p.plan.workload.fixed_mut() {
            f.request_rate = load.request_rate;
            if load.num_prompts.is_some() {
                f.num_prompts = load.num_prompts;
            }
        }
        self.p.plan.repeats = 1;
        self.p.plan.out = Some(dir.clone());
        // a new load is a new workload, even at the same concurrency
        self.workload = None;
        let (saved_points, saved_datasets) = (
            std::mem::take(&mut self.points),
            std::mem::take(&mut self.datasets),
        );
        let started = chrono::Utc::now();
        let measured = async {
            std::fs::create_dir_all(&dir).map_err(io(IoOp::CreateOutDir, &dir))?;
            resume::check_or_write_flags(&self.p.plan, &dir, &*self.p.console)?;
            let spec = PointSpec {
                conc: load.conc,
                repeat: 1,
                repeats: 1,
                dir: dir.join(point_dir_name(load.conc, 1, 1)),
            };
            let recorder = self.p.recorder.take();
            let r = self.run_point(spec).await.cloned();
            self.p.recorder = recorder;
            let p = r?;
            let summary = SweepSummary {
                plan: &self.p.plan,
                endpoint: &self.p.target.endpoint.base_url,
                simulator: self.p.target.simulator_info(),
                model: &self.p.model,
                started,
                datasets: &self.datasets,
                interrupted: self.p.cancel.is_cancelled(),
                store: None,
                points: std::slice::from_ref(&p),
                extras: None,
            };
            FileOutput { dir: dir.clone() }
                .sweep_done(&summary)
                .map_err(PipelineError::from_observer)?;
            Ok(p)
        }
        .await;
        self.points = saved_points;
        self.datasets = saved_datasets;
        measured
    }

    /// The plan's eval (`--eval gsm8k`) on the session's target, unless Ctrl-C stopped the
    /// points: its row is stored with the session's identity ([`Session::eval_with`]); an
    /// error is said and marks the run (exit 1), it does not stop the session.
    pub async fn run_eval(&mut self) {
        if self.p.plan.eval != Some(EvalTask::Gsm8k) || self.p.cancel.is_cancelled() {
            return;
        }
        let p = &self.p;
        let opts = crate::eval::sweep_eval_options(
            &p.plan,
            &p.target,
            &p.model,
            self.eval_identity.meta.clone(),
            &p.out_dir,
            p.tty,
            &p.cancel,
            &*p.console,
        );
        match self.eval_with(opts).await {
            Ok(r) => self.eval_done = Some(r),
            Err(e) => {
                self.p.console.warn(&format!("error: eval gsm8k: {e:#}"));
                self.eval_error = Some(format!("{e:#}"));
            }
        }
    }

    /// Runs the eval of `opts` on the session's target and, unless it was interrupted (a
    /// partial score is not a gate result), stores its row ([`EvalIdentity::row`]) in the
    /// session's run. The one eval step of `sweep --eval` and `servebench eval`.
    ///
    /// Errors: [`PipelineError::Eval`] (data files, endpoint, a request failing after its
    /// retries, unwritable output); a store error is warned and counted by the recorder.
    pub async fn eval_with(&mut self, opts: EvalOptions) -> Result<EvalResult> {
        let r = servebench_eval::run_gsm8k(&self.p.target.inner, opts)
            .await
            .map_err(PipelineError::Eval)?;
        if let (Some(rec), false) = (self.p.recorder.as_mut(), r.interrupted) {
            rec.add_eval(&self.eval_identity.row(&r));
        }
        Ok(r)
    }

    /// Ends an eval-only session (`servebench eval`, [`crate::standalone_eval`]) with the
    /// eval's outcome `r`: stops the target, settles the stored run (`failed` on an error,
    /// `interrupted` after Ctrl-C, else `ok`), says the summary and the run line, and returns
    /// the exit status: 0 gate passed, [`EXIT_EVAL_GATE`] gate failed, [`EXIT_INTERRUPTED`],
    /// 1 when the row or the run's status could not be stored. An eval error is returned after
    /// the run is marked failed (its samples stay; the same `--out` resumes them).
    pub async fn finish_eval(self, r: Result<EvalResult>) -> Result<u8> {
        let Session { p, .. } = self;
        let SessionParts {
            target,
            mut recorder,
            console,
            ..
        } = p;
        target.shutdown().await;
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                if let Some(rec) = recorder.as_mut() {
                    rec.finish(RunStatus::Failed);
                }
                return Err(e);
            }
        };
        console.line(servebench_eval::render_summary(&r).trim_end_matches('\n'));
        let exit = if r.interrupted {
            EXIT_INTERRUPTED
        } else if r.gate.pass {
            0
        } else {
            EXIT_EVAL_GATE
        };
        let Some(mut rec) = recorder else {
            return Ok(exit);
        };
        let status = if r.interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Ok
        };
        rec.finish(status);
        // the row or the status not stored: exit 1 (after Ctrl-C 130 stands, as no row is due)
        if rec.errors > 0 && !r.interrupted {
            return Ok(1);
        }
        console.line(&format!(
            "run         {} (store {}{})",
            rec.run,
            rec.db.display(),
            if r.interrupted {
                ", status interrupted"
            } else {
                ""
            }
        ));
        Ok(exit)
    }

    /// Assembles the summary (the extra observers' [`Observer::summary_extras`] included), has
    /// [`FileOutput`] write `summary.{json,csv}` from it, the one writer, then hands it to the
    /// extra observers. Two observers contributing extras is an error
    /// ([`PipelineError::Invalid`]).
    pub fn write_summary(&mut self) -> Result<()> {
        let mut summary = SweepSummary {
            plan: &self.p.plan,
            endpoint: &self.p.target.endpoint.base_url,
            simulator: self.p.target.simulator_info(),
            model: &self.p.model,
            started: self.started,
            datasets: &self.datasets,
            interrupted: self.p.cancel.is_cancelled(),
            store: self.p.recorder.as_ref().map(|r| (r.db.clone(), r.run.0)),
            points: &self.points,
            extras: None,
        };
        for o in self.p.extra.iter_mut() {
            let Some(x) = o
                .summary_extras(&summary)
                .map_err(PipelineError::from_observer)?
            else {
                continue;
            };
            if summary.extras.is_some() {
                return Err(PipelineError::Invalid(
                    "two observers contributed summary.json extras; at most one may".into(),
                ));
            }
            summary.extras = Some(x);
        }
        self.files
            .sweep_done(&summary)
            .map_err(PipelineError::from_observer)?;
        for o in self.p.extra.iter_mut() {
            o.sweep_done(&summary)
                .map_err(PipelineError::from_observer)?;
        }
        Ok(())
    }

    /// Stops the target without a summary (a search, or an error before the first point).
    pub async fn close(self) {
        self.p.target.shutdown().await;
    }

    /// Ends the session: settles the run's status in the store (`measured` is the points',
    /// eval's and summary's result: an error marks the run failed and is returned), prints the
    /// tables and the eval summary, stops the target, writes the report (`--report`) and says
    /// where everything is.
    pub async fn finish(mut self, measured: Result<()>) -> Result<SweepOutcome> {
        let cancelled = self.p.cancel.is_cancelled();
        let status = run_status(
            &self.points,
            cancelled,
            measured.is_err(),
            self.eval_error.is_some(),
        );
        if let Some(r) = self.p.recorder.as_mut() {
            r.finish(status);
        }
        let is_sim = self.p.target.is_sim();
        let Session {
            p,
            points,
            eval_done,
            eval_error,
            ..
        } = self;
        let SessionParts {
            plan: c,
            target,
            recorder,
            out_dir,
            console,
            ..
        } = p;
        if let Err(e) = measured {
            target.shutdown().await;
            return Err(e);
        }
        console.line(crate::table::render_table(&points, &c).trim_end_matches('\n'));
        if let Some(t) = crate::table::render_cache_table(&points) {
            console.line(t.trim_end_matches('\n'));
        }
        if let Some(r) = &eval_done {
            console.line("");
            console.line(servebench_eval::render_summary(r).trim_end_matches('\n'));
            if is_sim {
                console.line(&match c.eval_plan.sim_accuracy {
                    Some(a) => format!(
                        "note: {}",
                        servebench_eval::sim_answers::accuracy_note(a)
                    ),
                    None => format!(
                        "note: the simulator replayed the recorded GSM8K solutions of {}: the score is that model's, not a measurement of the simulated engine",
                        c.eval_plan.sim_answers
                    ),
                });
            }
        }
        target.shutdown().await;

        // the report, read back from the store
        let mut report_failed = false;
        if let (Some(file), Some(r)) = (&c.report, recorder.as_ref()) {
            let path = file.clone().unwrap_or_else(|| out_dir.join("report.md"));
            // (by the review side: crate::review_hook)
            match crate::review_hook::get("--report").and_then(|review| {
                review.write_run_report(&path, &r.db, r.run, c.baseline.as_deref(), c.stat)
            }) {
                Ok(()) => console.line(&format!("report: {}", path.display())),
                Err(e) => {
                    console.warn(&format!("error: report: {e:#}"));
                    report_failed = true;
                }
            }
        }
        console.line(&format!("results: {}", out_dir.display()));
        if let Some(r) = &recorder {
            // as `servebench runs` shows it: `ok (INVALID)` when a point is invalid or not a
            // valid InferenceX submission (the notes above say why)
            let invalid = invalid_concs(&points);
            let flag = if invalid.is_empty() {
                String::new()
            } else {
                format!(
                    " (INVALID: conc {}; see the notes above)",
                    invalid.join(", ")
                )
            };
            console.line(&format!(
                "run: {} (store {}, status {}{flag})",
                r.run,
                r.db.display(),
                status.as_str()
            ));
        }
        let store_failed = recorder.as_ref().is_some_and(|r| r.errors > 0);
        if cancelled {
            console.warn(&format!(
                "interrupted: the same command with --resume --out {} keeps the finished points and measures the rest",
                out_dir.display()
            ));
        }
        let exit = exit_status(
            &points,
            cancelled,
            eval_error.is_some() || report_failed || store_failed,
            eval_done.as_ref().map(|r| r.gate.pass),
        );
        Ok(SweepOutcome {
            exit,
            out_dir,
            run: recorder.map(|r| r.run),
            points,
        })
    }
}

/// The concurrencies (as written, in order, repeats once) of the points that are invalid: a
/// violated validity rule (`point_status: invalid`) or an AgentX point InferenceX would not
/// accept as a submission (`agentx_submission_valid: false`, [`AggRow::submission_invalid_reasons`]).
///
/// [`AggRow::submission_invalid_reasons`]: servebench_contracts::agg::AggRow::submission_invalid_reasons
pub fn invalid_concs(points: &[PointOutput]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in points {
        let invalid = p.metrics.point_status == PointStatus::Invalid
            || !p.agg.submission_invalid_reasons().is_empty();
        let conc = p
            .agg
            .conc
            .map_or_else(|| "?".to_string(), |c| c.to_string());
        if invalid && !out.contains(&conc) {
            out.push(conc);
        }
    }
    out
}

/// The process exit status of a finished sweep: [`EXIT_INTERRUPTED`] after Ctrl-C, else 1 when
/// a point is not ok — failed, invalid, or an AgentX point that is not a valid InferenceX
/// submission (as `servebench run` calls its run invalid) — or something else failed
/// (`failed`: eval error, report, store), else [`EXIT_EVAL_GATE`] when the eval ran and missed
/// its threshold (`gate_pass` `Some(false)`), else 0.
pub fn exit_status(
    points: &[PointOutput],
    cancelled: bool,
    failed: bool,
    gate_pass: Option<bool>,
) -> u8 {
    if cancelled {
        EXIT_INTERRUPTED
    } else if failed
        || points.iter().any(|p| {
            p.metrics.point_status != PointStatus::Ok
                || !p.agg.submission_invalid_reasons().is_empty()
        })
    {
        1
    } else if gate_pass == Some(false) {
        EXIT_EVAL_GATE
    } else {
        0
    }
}

/// The load of one search probe ([`Session::probe`]).
#[derive(Debug, Clone, Copy)]
pub struct ProbeLoad {
    /// Concurrency (lanes; the open loop's cap with a request rate).
    pub conc: u64,
    /// Open-loop request rate, req/s (modelled time on the simulator); `None`: closed loop.
    pub request_rate: Option<f64>,
    /// Measured requests; `None` keeps the plan's (`--num-prompts`, else 10 × conc).
    pub num_prompts: Option<usize>,
}

/// The deterministic tier of the point loop: a fake [`Executor`] whose points take a known
/// number of seconds on tokio's paused clock, a console that keeps its lines, and an observer
/// that keeps its calls. Order, timing, resume and Ctrl-C are asserted exactly.
#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use servebench_metrics::{agg_row, compute, AggExtra, ItlMode, PointOptions, ResultFile};
    use tokio::time::Instant;

    use super::*;
    use crate::observe::ObserverError;

    /// Lines said through the session's reporter.
    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Console for Lines {
        fn line(&self, s: &str) {
            self.0.lock().unwrap().push(s.to_string());
        }
        fn warn(&self, s: &str) {
            self.0.lock().unwrap().push(format!("warn: {s}"));
        }
    }

    /// What the fake executor was asked to do, with the paused clock's time in ms since start.
    type Log = Arc<Mutex<Vec<(u64, String)>>>;

    /// Each point takes `conc` seconds (paused clock) and is ok; Ctrl-C (the cancel token) ends
    /// a point at once as `Interrupted`.
    struct Fake {
        t0: Instant,
        log: Log,
    }

    impl Fake {
        fn at(&self, what: String) {
            let ms = self.t0.elapsed().as_millis() as u64;
            self.log.lock().unwrap().push((ms, what));
        }
    }

    impl Executor for Fake {
        type Workload = u64;

        async fn prepare(&mut self, _ctx: &SweepCtx<'_>, conc: u64) -> Result<u64> {
            self.at(format!("prepare {conc}"));
            Ok(conc * 10)
        }

        fn describe(&self, w: &u64) -> String {
            format!("fake dataset: {w} prompts")
        }

        fn requests_line(&self, ctx: &SweepCtx<'_>, conc: u64) -> Option<String> {
            Some(format!(
                "conc {conc}: {} measured requests",
                ctx.plan.workload.fixed().unwrap().prompts_at(conc)
            ))
        }

        async fn run_point(
            &mut self,
            ctx: &SweepCtx<'_>,
            w: &u64,
            spec: &PointSpec,
        ) -> Result<PointOutput> {
            self.at(format!("start {} w{w}", spec.label()));
            let cancel = ctx.cancel.clone();
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(spec.conc)) => {}
                _ = cancel.cancelled() => {
                    self.at(format!("cancelled {}", spec.label()));
                    return Err(PipelineError::Interrupted);
                }
            }
            self.at(format!("end {}", spec.label()));
            // an empty records.jsonl, as a point that measured nothing writes
            std::fs::write(spec.dir.join("records.jsonl"), "").unwrap();
            let opts = PointOptions {
                compat: servebench_client::Compat::Servebench,
                itl_mode: ItlMode::Chunk,
                phase_window_ns: (0, spec.conc * 1_000_000_000),
                max_failed_fraction: 0.05,
                cancelled: false,
                prompt_count: servebench_metrics::PromptCount::Client,
            };
            let mut m = compute(&[], &opts);
            m.point_status = PointStatus::Ok;
            m.completed = *w;
            let extra = AggExtra {
                api: "completions".into(),
                engine: "vllm".into(),
                endpoint: ctx.target.endpoint.base_url.clone(),
                records_file: "records.jsonl".into(),
            };
            let agg = agg_row(ctx.identity, Some(spec.conc), &m, &extra);
            Ok(PointOutput {
                spec: spec.clone(),
                metrics: m,
                agg,
                result: ResultFile::Other(serde_json::json!({"fake": true})),
                wall_s: spec.conc as f64,
                records: Arc::from(Vec::new()),
            })
        }
    }

    /// Keeps the labels of the points and summaries it receives.
    struct Calls(Arc<Mutex<Vec<String>>>);

    impl Observer for Calls {
        fn point_done(&mut self, p: &PointOutput) -> std::result::Result<(), ObserverError> {
            self.0.lock().unwrap().push(p.spec.label());
            Ok(())
        }
        fn sweep_done(&mut self, s: &SweepSummary<'_>) -> std::result::Result<(), ObserverError> {
            self.0
                .lock()
                .unwrap()
                .push(format!("summary of {}", s.points.len()));
            Ok(())
        }
    }

    fn dead_target() -> Target {
        let tls = servebench_endpoint::TlsConfig::with_ca_cert(None);
        let ep = servebench_endpoint::Endpoint::new("http://127.0.0.1:9", None, &tls).unwrap();
        let inner = servebench_endpoint::Target::remote(ep);
        Target {
            endpoint: inner.endpoint().client().clone(),
            sim_speedup: 1.0,
            sim_describe: None,
            sim_clock: None,
            inner,
        }
    }

    struct Rig {
        session: Session<Fake>,
        log: Log,
        calls: Arc<Mutex<Vec<String>>>,
        lines: Arc<Lines>,
    }

    fn rig(plan: SweepPlan, out: &std::path::Path) -> Rig {
        rig_with(plan, out, Vec::new())
    }

    /// A rig whose extra observers are [`Calls`] and then `more`.
    fn rig_with(plan: SweepPlan, out: &std::path::Path, more: Vec<Box<dyn Observer>>) -> Rig {
        let log: Log = Arc::default();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::new(Lines::default());
        let target = dead_target();
        let identity = crate::identity::identity(&plan, &target, "m").unwrap();
        let session = Session::from_parts(SessionParts {
            plan,
            target,
            model: "m".into(),
            identity,
            executor: Fake {
                t0: Instant::now(),
                log: log.clone(),
            },
            recorder: None,
            out_dir: out.to_path_buf(),
            extra: std::iter::once(Box::new(Calls(calls.clone())) as Box<dyn Observer>)
                .chain(more)
                .collect(),
            cancel: servebench_endpoint::CancelToken::new(),
            console: lines.clone(),
            tty: false,
            eval_identity: None,
        })
        .unwrap();
        Rig {
            session,
            log,
            calls,
            lines,
        }
    }

    fn plan(concs: &[u64], repeats: u32) -> SweepPlan {
        SweepPlan {
            concurrencies: concs.to_vec(),
            repeats,
            ..SweepPlan::default()
        }
    }

    fn log(l: &Log) -> Vec<(u64, String)> {
        l.lock().unwrap().clone()
    }

    /// Concurrencies in order, repeats back to back on one prepared workload, each point
    /// starting the instant the one before ended, every observer called once per point and
    /// once for the summary, files and completion markers written, exit 0.
    #[tokio::test(start_paused = true)]
    async fn points_run_in_order_back_to_back_and_reach_every_observer() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = rig(plan(&[1, 4], 2), dir.path());
        let t0 = Instant::now();
        r.session.run_points().await.unwrap();
        r.session.write_summary().unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(1 + 1 + 4 + 4));
        let s = |ms: u64, w: &str| (ms, w.to_string());
        assert_eq!(
            log(&r.log),
            vec![
                s(0, "prepare 1"),
                s(0, "start conc 1 repeat 1/2 w10"),
                s(1000, "end conc 1 repeat 1/2"),
                s(1000, "start conc 1 repeat 2/2 w10"),
                s(2000, "end conc 1 repeat 2/2"),
                s(2000, "prepare 4"),
                s(2000, "start conc 4 repeat 1/2 w40"),
                s(6000, "end conc 4 repeat 1/2"),
                s(6000, "start conc 4 repeat 2/2 w40"),
                s(10000, "end conc 4 repeat 2/2"),
            ]
        );
        assert_eq!(
            *r.calls.lock().unwrap(),
            vec![
                "conc 1 repeat 1/2",
                "conc 1 repeat 2/2",
                "conc 4 repeat 1/2",
                "conc 4 repeat 2/2",
                "summary of 4"
            ]
        );
        let lines = r.lines.0.lock().unwrap().clone();
        // the dataset line once, the request count per concurrency, one line per point
        assert_eq!(lines[0], "fake dataset: 10 prompts");
        assert_eq!(lines[1], "conc 1: 10 measured requests");
        assert!(
            lines[2].starts_with("conc 1 repeat 1/2: 10 ok, 0 failed in 1.0 s wall"),
            "{lines:?}"
        );
        assert_eq!(lines[4], "conc 4: 40 measured requests");
        assert_eq!(lines.len(), 7, "{lines:?}");
        for d in ["conc1-r1", "conc1-r2", "conc4-r1", "conc4-r2"] {
            for f in ["result.json", "agg.json", resume::POINT_MARKER] {
                assert!(dir.path().join(d).join(f).is_file(), "{d}/{f}");
            }
        }
        assert!(dir.path().join("summary.json").is_file());
        let out = r.session.finish(Ok(())).await.unwrap();
        assert_eq!((out.exit, out.points.len()), (0, 4));
        assert_eq!(out.points[2].spec.conc, 4);
    }

    /// Ctrl-C 1.5 s in: the second point stops at that instant, no later point starts, the
    /// finished point stays, and the sweep ends with exit 130.
    #[tokio::test(start_paused = true)]
    async fn ctrl_c_stops_the_point_in_flight_and_every_later_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = rig(plan(&[1, 2], 1), dir.path());
        let cancel = r.session.cancel().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            cancel.cancel();
        });
        r.session.run_points().await.unwrap();
        let s = |ms: u64, w: &str| (ms, w.to_string());
        assert_eq!(
            log(&r.log),
            vec![
                s(0, "prepare 1"),
                s(0, "start conc 1 w10"),
                s(1000, "end conc 1"),
                s(1000, "prepare 2"),
                s(1000, "start conc 2 w20"),
                s(1500, "cancelled conc 2"),
            ]
        );
        assert_eq!(*r.calls.lock().unwrap(), vec!["conc 1"]);
        let out = r.session.finish(Ok(())).await.unwrap();
        assert_eq!((out.exit, out.points.len()), (EXIT_INTERRUPTED, 1));
    }

    /// `--resume`: the points with a completion marker are kept (read back, handed to the
    /// extra observers, not measured), the others measured; the kept ones take no time.
    #[tokio::test(start_paused = true)]
    async fn resume_measures_only_the_points_without_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = rig(plan(&[1], 1), dir.path());
        first.session.run_points().await.unwrap();
        let mut p = plan(&[1, 2], 1);
        p.resume = true;
        let mut r = rig(p, dir.path());
        let t0 = Instant::now();
        r.session.run_points().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
        let s = |ms: u64, w: &str| (ms, w.to_string());
        assert_eq!(
            log(&r.log),
            vec![
                s(0, "prepare 1"),
                s(0, "prepare 2"),
                s(0, "start conc 2 w20"),
                s(2000, "end conc 2"),
            ]
        );
        assert_eq!(*r.calls.lock().unwrap(), vec!["conc 1", "conc 2"]);
        assert!(r
            .lines
            .0
            .lock()
            .unwrap()
            .contains(&"conc 1: finished earlier, kept".to_string()));
    }

    /// Contributes `extras` to the summary and, at its `sweep_done`, notes what the summary and
    /// the `summary.json` on disk held then.
    struct Contrib {
        extras: servebench_contracts::SummaryExtras,
        seen: Arc<Mutex<Vec<String>>>,
        file: std::path::PathBuf,
    }

    impl Observer for Contrib {
        fn summary_extras(
            &mut self,
            s: &SweepSummary<'_>,
        ) -> std::result::Result<Option<servebench_contracts::SummaryExtras>, ObserverError>
        {
            self.seen.lock().unwrap().push(format!(
                "asked: {} points, extras {:?}, file exists {}",
                s.points.len(),
                s.extras,
                self.file.exists()
            ));
            Ok(Some(self.extras.clone()))
        }
        fn sweep_done(&mut self, s: &SweepSummary<'_>) -> std::result::Result<(), ObserverError> {
            let text = std::fs::read_to_string(&self.file)?;
            let doc: servebench_contracts::SummaryDoc = serde_json::from_str(&text)?;
            self.seen.lock().unwrap().push(format!(
                "done: summary has ours {}, file has ours {}, file is one write {}",
                s.extras.as_ref() == Some(&self.extras),
                doc.extras.as_ref() == Some(&self.extras),
                text == doc.file_text()
            ));
            Ok(())
        }
    }

    fn extras(conc: u64) -> servebench_contracts::SummaryExtras {
        servebench_contracts::SummaryExtras {
            slo: Some("e2el=1000ms".into()),
            window: "full".into(),
            confidence: None,
            points: vec![servebench_contracts::ExtrasPoint {
                label: format!("conc {conc}"),
                conc,
                repeat: 1,
                rest: [("goodput".to_string(), serde_json::json!({"good": 3}))]
                    .into_iter()
                    .collect(),
            }],
            repeats: Vec::new(),
        }
    }

    /// summary.json has one writer: the observer's extras are asked for before the file exists,
    /// the file output writes them with the rest in one write (pretty JSON, final newline:
    /// exactly the typed document's text), and every `sweep_done` sees the finished file.
    #[tokio::test(start_paused = true)]
    async fn summary_json_is_written_once_with_the_contributed_extras() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let file = dir.path().join("summary.json");
        let c = Contrib {
            extras: extras(1),
            seen: seen.clone(),
            file: file.clone(),
        };
        let mut r = rig_with(plan(&[1], 1), dir.path(), vec![Box::new(c)]);
        r.session.run_points().await.unwrap();
        r.session.write_summary().unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                "asked: 1 points, extras None, file exists false",
                "done: summary has ours true, file has ours true, file is one write true",
            ]
        );
        let text = std::fs::read_to_string(&file).unwrap();
        let doc: servebench_contracts::SummaryDoc = serde_json::from_str(&text).unwrap();
        assert_eq!(doc.extras, Some(extras(1)));
        assert_eq!(doc.points.len(), 1);
        assert!(text.ends_with("}\n"), "final newline");
        assert_eq!(*r.calls.lock().unwrap(), vec!["conc 1", "summary of 1"]);
    }

    /// Two observers contributing extras is refused before summary.json is written.
    #[tokio::test(start_paused = true)]
    async fn two_extras_contributions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("summary.json");
        let two: Vec<Box<dyn Observer>> = (0..2)
            .map(|_| {
                Box::new(Contrib {
                    extras: extras(1),
                    seen: Arc::default(),
                    file: file.clone(),
                }) as Box<dyn Observer>
            })
            .collect();
        let mut r = rig_with(plan(&[1], 1), dir.path(), two);
        r.session.run_points().await.unwrap();
        let e = r.session.write_summary().unwrap_err();
        assert_eq!(
            e.to_string(),
            "two observers contributed summary.json extras; at most one may"
        );
        assert!(!file.exists());
    }

    /// A failed point makes the exit 1, an eval below its threshold 2, Ctrl-C 130 over both.
    #[test]
    fn exit_status_rules() {
        assert_eq!(exit_status(&[], false, false, None), 0);
        assert_eq!(exit_status(&[], false, false, Some(false)), EXIT_EVAL_GATE);
        assert_eq!(exit_status(&[], false, true, Some(false)), 1);
        assert_eq!(exit_status(&[], true, true, Some(false)), EXIT_INTERRUPTED);
    }
}
