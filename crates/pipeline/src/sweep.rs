//! The `sweep`/`bench` entry: [`run_sweep`] takes a [`SweepPlan`], checks it, opens the store and
//! the output directory, and drives one [`Session`] (target, concurrencies × repeats through the
//! workload's executor, observers, the eval on the same target, the run's status, report and
//! exit status) with Ctrl-C watched.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use servebench_store::Store;

use crate::console::{Console, StdConsole};
use crate::error::{io, Context, IoOp, PipelineError, Result};
use crate::observe::Observer;
use crate::outdir;
use crate::plan::SweepPlan;
use crate::resume;
pub use crate::session::{Session, SweepOutcome, EXIT_EVAL_GATE, EXIT_INTERRUPTED};
use crate::target::plan_endpoint;

/// Runs the fixed-sequence sweep of `plan` (the `sweep` and `bench` commands). `extra`
/// observers receive every point and the summary after the built-in ones.
pub fn run_sweep(mut plan: SweepPlan, extra: Vec<Box<dyn Observer>>) -> Result<SweepOutcome> {
    plan.validate()?;
    let endpoint = plan_endpoint(&plan, &StdConsole)?;
    if let Some(ep) = &endpoint {
        plan.endpoint = Some(ep.base_url().to_string());
    }
    // the one cancel token of the run: Ctrl-C stops the point in flight, or the eval
    let cancel = servebench_endpoint::CancelToken::new();
    // Ctrl-C during the points cancels the point; during the eval it stops the eval instead
    let in_eval = Arc::new(AtomicBool::new(false));
    let said = in_eval.clone();
    crate::entry::run(
        plan.sim_clock(),
        &cancel,
        move || {
            if said.load(Ordering::SeqCst) {
                StdConsole.warn("\ninterrupted: stopping eval gsm8k; its result.json covers the samples finished so far (marked partial); the throughput points are complete");
            } else {
                StdConsole.warn("\ninterrupted: finishing the files for what was measured (point marked partial)");
            }
        },
        |cancel| run_async(plan, endpoint, extra, cancel, in_eval),
    )?
}

/// The line saying how many cores the client can use (issue 21 target 3): request lanes are
/// tasks on tokio's work-stealing multi-thread runtime, one worker thread per CPU the process
/// may run on (its affinity mask: `taskset -c 0` gives 1), so one process spreads over more
/// than one core when one is not enough.
pub fn client_threads_line(workers: usize) -> String {
    format!(
        "client: {workers} worker thread{} (tokio multi-thread, work-stealing; one per CPU this process may run on)",
        if workers == 1 { "" } else { "s" }
    )
}

async fn run_async(
    c: SweepPlan,
    endpoint: Option<servebench_endpoint::Endpoint>,
    extra: Vec<Box<dyn Observer>>,
    cancel: servebench_endpoint::CancelToken,
    in_eval: Arc<AtomicBool>,
) -> Result<SweepOutcome> {
    c.check_modes()?;
    c.check_store_args()?;
    // --tokenizer and --traces exist (and the traces hold a trace; new-user F11/F16): checked
    // before the store, the output directory or the simulator exist, so a bad path leaves
    // nothing behind
    if let Some(t) = &c.tokenizer {
        servebench_workload::LocalTokenizer::file_of(t).map_err(PipelineError::Workload)?;
    }
    if let Some(ax) = c.workload.agentx() {
        servebench_agentx::trace::TraceSource::check(&ax.traces).map_err(|e| {
            PipelineError::Traces {
                path: ax.traces.clone(),
                source: e.into(),
            }
        })?;
    }
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
        // (by the review side: crate::review_hook)
        crate::review_hook::get("--baseline")
            .and_then(|r| r.check_baseline(db, b))
            .map_err(PipelineError::Review)
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
    let result = match resume::check_or_write_flags(&c, &out_dir, &StdConsole) {
        Ok(()) => {
            if c.sim_clock() == servebench_contracts::SimClock::Virtual {
                StdConsole.line("client: 1 thread (tokio current-thread, virtual clock: client and simulator share it; time advances only when every task waits)");
            } else {
                let workers = tokio::runtime::Handle::current().metrics().num_workers();
                StdConsole.line(&client_threads_line(workers));
            }
            measure(
                &c,
                endpoint,
                store,
                out_dir.clone(),
                extra,
                cancel,
                &in_eval,
            )
            .await
        }
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

/// Everything after the output directory exists: one [`Session`] (target, points, eval,
/// summary); `in_eval` is set when the eval starts (what Ctrl-C then says).
async fn measure(
    c: &SweepPlan,
    endpoint: Option<servebench_endpoint::Endpoint>,
    store: Option<Store>,
    out_dir: PathBuf,
    extra: Vec<Box<dyn Observer>>,
    cancel: servebench_endpoint::CancelToken,
    in_eval: &AtomicBool,
) -> Result<SweepOutcome> {
    let console: Arc<dyn Console> = Arc::new(StdConsole);
    let mut session = Session::open(
        c.clone(),
        endpoint,
        store,
        out_dir,
        extra,
        cancel.clone(),
        console.clone(),
    )
    .await?;
    // Everything from here on belongs to the stored run: an error marks it failed.
    let measured: Result<()> = async {
        session.run_points().await?;
        if c.eval.is_some() && !cancel.is_cancelled() {
            in_eval.store(true, Ordering::SeqCst);
        }
        session.run_eval().await;
        session.write_summary()
    }
    .await;
    session.finish(measured).await
}
