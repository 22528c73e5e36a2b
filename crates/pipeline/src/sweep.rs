//! The scheduler: [`run_sweep`] takes a [`SweepPlan`], brings up the [`Target`], walks
//! concurrencies × repeats through an [`Executor`], hands each point to the observers, runs the
//! eval on the same target, and settles the run's status, report and exit status.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use servebench_metrics::PointStatus;
use servebench_store::{RunId, Store};

use crate::error::{io, Context, IoOp, PipelineError, Result};
use crate::executor::{point_dir_name, Executor, PointOutput, PointSpec, SweepCtx};
use crate::observe::{ConsoleOutput, FileOutput, Observer, StdConsole, SweepSummary};
use crate::outdir;
use crate::plan::{EvalTask, SweepPlan};
use crate::record::{eval_store_row, run_meta, run_status, StoreRecorder};
use crate::resume;
use crate::target::{plan_endpoint, Target};

/// Exit status of a sweep whose eval ran but missed its threshold (as `servebench eval`).
pub const EXIT_EVAL_GATE: u8 = 2;
/// Exit status after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// How a sweep ended (errors before or during measuring are the `Err` of [`run_sweep`]).
#[derive(Debug)]
pub struct SweepOutcome {
    /// Process exit status: 0 ok, 1 a point failed / eval error / report or store error,
    /// [`EXIT_EVAL_GATE`], [`EXIT_INTERRUPTED`].
    pub exit: u8,
    /// The output directory.
    pub out_dir: PathBuf,
    /// The stored run, if recorded.
    pub run: Option<RunId>,
}

/// Runs the fixed-sequence sweep of `plan` (the `sweep` and `bench` commands). `extra`
/// observers receive every point and the summary after the built-in ones.
pub fn run_sweep(mut plan: SweepPlan, extra: Vec<Box<dyn Observer>>) -> Result<SweepOutcome> {
    plan.validate()?;
    let endpoint = plan_endpoint(&plan, &StdConsole)?;
    if let Some(ep) = &endpoint {
        plan.endpoint = Some(ep.base_url().to_string());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(PipelineError::Runtime)?;
    rt.block_on(run_async(plan, endpoint, extra))
}

async fn run_async(
    c: SweepPlan,
    endpoint: Option<servebench_endpoint::Endpoint>,
    extra: Vec<Box<dyn Observer>>,
) -> Result<SweepOutcome> {
    c.check_modes()?;
    c.check_store_args()?;
    // The store is opened (and created) before anything runs: a bad --db fails here, in one line.
    let store = match &c.db {
        None => None,
        Some(db) => Some(Store::open(db).with_context(|| {
            format!(
                "results store {} (choose another with --db PATH, or skip it with --no-store)",
                db.display()
            )
        })?),
    };
    if let (Some(b), Some(db)) = (&c.baseline, &c.db) {
        // loaded once before measuring, so a missing run or a bad file fails in seconds
        crate::sides::load_side(db, b)
            .map(|_| ())
            .with_context(|| format!("--baseline {b}"))?;
    }
    if let (Some(d), false) = (&c.out, c.resume) {
        outdir::check_out_dir(d, c.overwrite)?;
    }
    let (out_dir, created) = match &c.out {
        Some(d) => {
            let existed = d.exists();
            std::fs::create_dir_all(d).map_err(io(IoOp::CreateOutDir, d))?;
            (d.clone(), !existed)
        }
        None => (outdir::new_default_out_dir()?, true),
    };
    let result = match resume::check_or_write_flags(&c, &out_dir) {
        Ok(()) => measure(&c, endpoint, store, out_dir.clone(), extra).await,
        Err(e) => Err(e),
    };
    if result.is_err() && created && !outdir::holds_results(&out_dir) {
        // failed before the first point: leave no empty output directory behind
        let _ = std::fs::remove_dir_all(&out_dir);
        if c.out.is_none() {
            // and no empty servebench-out/ either (remove_dir fails when it holds anything)
            let _ = std::fs::remove_dir(out_dir.parent().unwrap_or(Path::new("servebench-out")));
        }
    }
    result
}

/// Everything after the output directory exists: target, preflight, points, eval, summary.
async fn measure(
    c: &SweepPlan,
    endpoint: Option<servebench_endpoint::Endpoint>,
    store: Option<Store>,
    out_dir: PathBuf,
    extra: Vec<Box<dyn Observer>>,
) -> Result<SweepOutcome> {
    let console = StdConsole;
    // The simulator replays recorded GSM8K solutions when the sweep runs the eval against it.
    let answers = match (c.eval, endpoint.is_none()) {
        (Some(EvalTask::Gsm8k), true) => Some(
            servebench_eval::sim_answers::load_from(
                &c.eval_plan.sim_answers,
                c.eval_plan.gsm8k_dir.as_deref(),
            )
            .map_err(PipelineError::Eval)?,
        ),
        _ => None,
    };
    // the one cancel token of the run: Ctrl-C stops the point in flight, or the eval
    let cancel = servebench_endpoint::CancelToken::new();
    let target = Target::start(c, endpoint, &out_dir, answers, &cancel, &console).await?;
    let (model, model_warning) =
        servebench_endpoint::run_model(&target.inner, c.model.as_deref(), true).await?;
    let engine_warning = if target.inner.is_simulator() {
        None
    } else {
        let ep = target.inner.endpoint().client();
        crate::cache::profile_mismatch_warning(ep, c.engine).await
    };
    for w in [model_warning, engine_warning].into_iter().flatten() {
        eprintln!("{w}");
    }
    let identity = crate::identity::identity(c, &target, &model)?;
    let mut executor = crate::agentx::AnyExecutor::new(c, &target, &model, &console).await?;

    // the run in the store (status `running` until the end)
    // (--resume: the run that wrote into the output directory, reopened)
    let mut recorder = match (store, &c.db) {
        (Some(st), Some(db)) => Some(match resume::previous_run(&st, &out_dir, c)? {
            Some(run) => StoreRecorder::reopen(st, db, run)?,
            None => {
                StoreRecorder::start(st, db, run_meta(c, &target, &model, &identity, &out_dir), c)?
            }
        }),
        _ => None,
    };
    let mut finished = resume::finished_points(c, &out_dir, recorder.as_mut())?;

    // Ctrl-C during the points cancels the point; during the eval it stops the eval instead
    let in_eval = Arc::new(AtomicBool::new(false));
    let watcher = {
        let in_eval = in_eval.clone();
        servebench_endpoint::cancel_on_ctrl_c(&cancel, move || {
            if in_eval.load(Ordering::SeqCst) {
                eprintln!("\ninterrupted: stopping eval gsm8k; its result.json covers the samples finished so far (marked partial); the throughput points are complete");
            } else {
                eprintln!("\ninterrupted: finishing the files for what was measured (point marked partial)");
            }
        })
    };

    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let started = chrono::Utc::now();
    let ctx = SweepCtx {
        plan: c,
        target: &target,
        model: &model,
        identity: &identity,
        cancel: &cancel,
        tty,
    };
    let mut files = FileOutput {
        dir: out_dir.clone(),
    };
    let mut console_out = ConsoleOutput;
    let mut extra = extra;
    let mut done: Vec<PointOutput> = Vec::new();
    let mut datasets: Vec<String> = Vec::new();
    let mut eval_done: Option<servebench_eval::EvalResult> = None;
    let mut eval_error: Option<String> = None;
    // Everything from here on belongs to the stored run: an error marks it failed.
    let measured: Result<()> = async {
        'points: for &conc in &c.concurrencies {
            if cancel.is_cancelled() {
                break;
            }
            let workload = executor.prepare(&ctx, conc).await?;
            let line = executor.describe(&workload);
            if done.is_empty() {
                println!("{line}");
            }
            datasets.push(format!("conc {conc}: {line}"));
            for repeat in 1..=c.repeats {
                if cancel.is_cancelled() {
                    break 'points;
                }
                let dir = out_dir.join(point_dir_name(conc, repeat, c.repeats));
                if let Some(f) = finished.remove(&(conc, repeat)) {
                    // --resume: finished before the interruption, kept as it is
                    println!("{}: finished earlier, kept", f.point.spec.label());
                    for o in extra.iter_mut() {
                        o.point_done(&f.point)
                            .map_err(PipelineError::from_observer)?;
                    }
                    done.push(f.point);
                    continue;
                } else if c.resume {
                    resume::clear_point_dir(&dir)?;
                }
                std::fs::create_dir_all(&dir).map_err(io(IoOp::Create, &dir))?;
                let spec = PointSpec {
                    conc,
                    repeat,
                    repeats: c.repeats,
                    dir,
                };
                let p = match executor.run_point(&ctx, &workload, &spec).await {
                    Ok(p) => p,
                    Err(PipelineError::Interrupted) => break 'points,
                    Err(e) => return Err(e),
                };
                files.point_done(&p).map_err(PipelineError::from_observer)?;
                // the point's completion marker (--resume keeps the points that have one)
                resume::mark_finished(&p)?;
                // stored as soon as it is measured: a crash later keeps it
                if let Some(r) = recorder.as_mut() {
                    r.point_done(&p).map_err(PipelineError::from_observer)?;
                }
                console_out
                    .point_done(&p)
                    .map_err(PipelineError::from_observer)?;
                for o in extra.iter_mut() {
                    o.point_done(&p).map_err(PipelineError::from_observer)?;
                }
                done.push(p);
            }
        }
        if let (Some(EvalTask::Gsm8k), false) = (c.eval, cancel.is_cancelled()) {
            in_eval.store(true, Ordering::SeqCst);
            match crate::eval::run_eval(c, &target, &model, &identity, &out_dir, tty, &cancel).await
            {
                Ok(r) => {
                    // a partial (interrupted) score is not a gate result: not stored
                    if let (Some(rec), false) = (recorder.as_mut(), r.interrupted) {
                        rec.add_eval(&eval_store_row(&r, Some(&identity.image)));
                    }
                    eval_done = Some(r);
                }
                Err(e) => {
                    eprintln!("error: eval gsm8k: {e:#}");
                    eval_error = Some(format!("{e:#}"));
                }
            }
        }
        let summary = SweepSummary {
            plan: c,
            endpoint: &target.endpoint.base_url,
            simulator: target.simulator_info(),
            model: &model,
            started,
            datasets: &datasets,
            interrupted: cancel.is_cancelled(),
            store: recorder.as_ref().map(|r| (r.db.clone(), r.run.0)),
            points: &done,
        };
        files
            .sweep_done(&summary)
            .map_err(PipelineError::from_observer)?;
        for o in extra.iter_mut() {
            o.sweep_done(&summary)
                .map_err(PipelineError::from_observer)?;
        }
        Ok(())
    }
    .await;

    let status = run_status(
        &done,
        cancel.is_cancelled(),
        measured.is_err(),
        eval_error.is_some(),
    );
    if let Some(r) = recorder.as_mut() {
        r.finish(status);
    }
    let is_sim = target.is_sim();
    if let Err(e) = measured {
        target.shutdown().await;
        watcher.abort();
        return Err(e);
    }
    crate::table::print_table(&done, c);
    crate::cache::print_table(&done);
    if let Some(r) = &eval_done {
        println!();
        print!("{}", servebench_eval::render_summary(r));
        if is_sim {
            println!(
                "note: the simulator replayed the recorded GSM8K solutions of {}: the score is that model's, not a measurement of the simulated engine",
                c.eval_plan.sim_answers
            );
        }
    }
    target.shutdown().await;
    watcher.abort();

    // the report, read back from the store
    let mut report_failed = false;
    if let (Some(file), Some(r)) = (&c.report, recorder.as_ref()) {
        let path = file.clone().unwrap_or_else(|| out_dir.join("report.md"));
        match crate::report::write_run_report(&path, &r.db, r.run, c.baseline.as_deref(), c.stat) {
            Ok(()) => println!("report: {}", path.display()),
            Err(e) => {
                eprintln!("error: report: {e:#}");
                report_failed = true;
            }
        }
    }
    println!("results: {}", out_dir.display());
    if let Some(r) = &recorder {
        println!(
            "run: {} (store {}, status {})",
            r.run,
            r.db.display(),
            status.as_str()
        );
    }
    let store_failed = recorder.as_ref().is_some_and(|r| r.errors > 0);
    if cancel.is_cancelled() {
        eprintln!(
            "interrupted: the same command with --resume --out {} keeps the finished points and measures the rest",
            out_dir.display()
        );
    }
    let exit = if cancel.is_cancelled() {
        EXIT_INTERRUPTED
    } else if done
        .iter()
        .any(|p| p.metrics.point_status != PointStatus::Ok)
        || eval_error.is_some()
        || report_failed
        || store_failed
    {
        1
    } else if eval_done.as_ref().is_some_and(|r| !r.gate.pass) {
        EXIT_EVAL_GATE
    } else {
        0
    };
    Ok(SweepOutcome {
        exit,
        out_dir,
        run: recorder.map(|r| r.run),
    })
}
