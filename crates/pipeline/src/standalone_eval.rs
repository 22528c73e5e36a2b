//! `servebench eval gsm8k` as a pipeline entry ([`run_standalone_eval`]): the run in the store
//! (continued for the same `--out`, so its samples resume), the target (an endpoint, or the
//! simulator replaying recorded solutions), Ctrl-C, the eval, and the stored eval row with the
//! identity defaults of [`crate::identity::IdentityDefaults`] (the same as a `sweep --eval`
//! row's). The binary only parses the flags, builds the run's metadata and prints the exit code.

use std::path::PathBuf;

use servebench_client::Engine;
use servebench_endpoint::{answer_book, Endpoint, SimOptions, Target};
use servebench_eval::{EvalOptions, EvalResult};
use servebench_store::{RunId, RunKind, RunMeta, RunStatus, Store};

use crate::error::{PipelineError, Result};
use crate::observe::Console;
use crate::record::eval_store_row;

/// Where a standalone eval runs.
pub struct EvalTarget {
    /// The endpoint; `None` starts the embedded simulator.
    pub endpoint: Option<Endpoint>,
    /// The simulator's settings (answers are added from `sim_answers`).
    pub sim: SimOptions,
    /// The recorded model whose GSM8K solutions the simulator replays.
    pub sim_answers: String,
    /// GSM8K data folder (`None`: the default).
    pub gsm8k_dir: Option<PathBuf>,
}

/// The stored run of a standalone eval.
pub struct EvalRecording {
    /// The open store.
    pub store: Store,
    /// Its file (messages).
    pub db: PathBuf,
    /// The run's metadata (kind `eval`; creates nothing).
    pub meta: RunMeta,
    /// `--image`, stored with the row.
    pub image: Option<String>,
    /// `--engine`: the row's default framework against an endpoint.
    pub engine: Engine,
}

/// Runs the eval of `opts` on `target`, recorded in `rec` when given; the summary and the run
/// line go to `console`. Returns the exit status: 0 gate passed, 2 gate failed, 130 interrupted,
/// 1 the eval row could not be stored. An error before or during the eval marks the stored run
/// failed (its samples stay in `samples.jsonl`; the same `--out` resumes them).
pub fn run_standalone_eval(
    opts: EvalOptions,
    target: EvalTarget,
    mut rec: Option<EvalRecording>,
    console: &dyn Console,
) -> Result<u8> {
    let run = match rec.as_mut() {
        Some(r) => Some(continue_or_record(r, &opts, console)?),
        None => None,
    };
    let sim_gpu = target.endpoint.is_none().then(|| target.sim.gpu.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(PipelineError::Runtime)?;
    let outcome = rt.block_on(async {
        // Ctrl-C: stop sending, keep the samples finished so far (result.json marked partial)
        let watcher = servebench_endpoint::cancel_on_ctrl_c(&opts.cancel, || {
            eprintln!("\ninterrupted: stopping eval gsm8k; writing result.json from the samples finished so far (marked partial)");
        });
        let mut opts = opts;
        let target = start_target(target).await?;
        if let Some(sim) = target.simulator() {
            opts.model = opts.model.or_else(|| Some(sim.model().to_string()));
        }
        let r = servebench_eval::run_gsm8k(&target, opts)
            .await
            .map_err(PipelineError::Eval);
        watcher.abort();
        target.shutdown().await;
        r
    });
    let summary = |r: &EvalResult| {
        console.line(servebench_eval::render_summary(r).trim_end_matches('\n'));
    };
    let (Some(mut rec), Some(run)) = (rec, run) else {
        let r = outcome?;
        summary(&r);
        return Ok(exit(&r));
    };
    let db = rec.db.display().to_string();
    let r = match outcome {
        Ok(r) => r,
        Err(e) => {
            // the samples finished so far stay in samples.jsonl; a rerun with --out resumes
            if let Err(se) = rec.store.finish_run(run, RunStatus::Failed) {
                console.warn(&format!("warning: {db}: run {run}: {se:#}"));
            }
            return Err(e);
        }
    };
    summary(&r);
    if r.interrupted {
        // a partial score is not a gate result: no eval row, the run is `interrupted`
        if let Err(e) = rec.store.finish_run(run, RunStatus::Interrupted) {
            console.warn(&format!("warning: {db}: run {run}: {e:#}"));
        }
        console.line(&format!(
            "run         {run} (store {db}, status interrupted)"
        ));
        return Ok(exit(&r));
    }
    let mut row = eval_store_row(&r, rec.image.as_deref());
    let filled = crate::identity::fill_eval_defaults(&mut row, sim_gpu.as_deref(), rec.engine);
    if !filled.is_empty() {
        row.identity_defaults = Some(filled.iter().map(|f| f.to_string()).collect());
    }
    let stored = rec
        .store
        .add_eval(run, &row)
        .and_then(|_| rec.store.finish_run(run, RunStatus::Ok));
    match stored {
        Ok(()) => console.line(&format!("run         {run} (store {db})")),
        Err(e) => {
            console.warn(&format!("error: {db}: run {run}: {e:#}"));
            return Ok(1);
        }
    }
    Ok(exit(&r))
}

/// The run to record into: the newest eval run of the same `--out` (killed, interrupted, failed,
/// or finished and run again), reopened with its eval rows removed: its samples resume from
/// samples.jsonl, so the run ends with one eval row and one output folder never has two runs.
/// `--fresh` (start over) or no earlier run: a new run.
fn continue_or_record(
    rec: &mut EvalRecording,
    opts: &EvalOptions,
    console: &dyn Console,
) -> Result<RunId> {
    let st = &mut rec.store;
    let earlier = match opts.fresh {
        true => None,
        false => st
            .runs_in_out_dir(&opts.out_dir, RunKind::Eval)?
            .into_iter()
            .next(),
    };
    let Some(r) = earlier else {
        return Ok(st.record_run(&rec.meta)?);
    };
    st.reopen_run(r.id)?;
    let removed = st.delete_evals(r.id)?;
    console.warn(&format!(
        "continuing run {} (store {}, was {}){}",
        r.id,
        rec.db.display(),
        r.status.as_str(),
        if removed > 0 {
            format!(", its {removed} eval row(s) replaced when this run ends")
        } else {
            String::new()
        }
    ));
    Ok(r.id)
}

/// 130 when interrupted (as a shell reports SIGINT), else 0 = gate passed, 2 = gate failed.
fn exit(r: &EvalResult) -> u8 {
    if r.interrupted {
        130
    } else if r.gate.pass {
        0
    } else {
        2
    }
}

/// Starts the target: the endpoint as given, or the simulator replaying `sim_answers`.
async fn start_target(t: EvalTarget) -> Result<Target> {
    if let Some(ep) = t.endpoint {
        return Ok(Target::remote(ep));
    }
    let book = servebench_eval::sim_answers::load_from(&t.sim_answers, t.gsm8k_dir.as_deref())
        .map_err(PipelineError::Eval)?;
    let opts = SimOptions {
        answers: Some(answer_book(move |p| book.lookup(p).map(str::to_string))),
        ..t.sim
    };
    Ok(Target::start_simulator(opts).await?)
}
