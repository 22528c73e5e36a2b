//! `servebench eval gsm8k` as a pipeline entry ([`run_standalone_eval`]) on the same
//! [`Session`] that `sweep --eval` uses: an eval-only session ([`NoPoints`]) whose run is the
//! store's [`StoreRecorder`] (continued for the same `--out`, so its samples resume), whose
//! target is an endpoint or the simulator replaying recorded solutions, whose model is settled
//! as the sweep's is, and whose eval runs and stores its row through [`Session::eval_with`] and
//! the one [`EvalIdentity::row`] (identity defaults of [`crate::identity::IdentityDefaults`],
//! as a `sweep --eval` row's). The binary only parses the flags, builds the run's metadata and
//! prints the exit code.

use std::path::PathBuf;
use std::sync::Arc;

use servebench_client::Engine;
use servebench_endpoint::{answer_book, Endpoint, SimOptions};
use servebench_eval::EvalOptions;
use servebench_store::{RunKind, RunMeta, Store};

use crate::console::Console;
use crate::error::{PipelineError, Result};
use crate::plan::{EvalTask, SweepPlan};
use crate::record::StoreRecorder;
use crate::session::{EvalIdentity, NoPoints, Session, SessionParts};
use crate::target::Target;

/// Where a standalone eval runs.
pub struct EvalTarget {
    /// The endpoint; `None` starts the embedded simulator.
    pub endpoint: Option<Endpoint>,
    /// The simulator's settings (answers are added from `sim_answers`).
    pub sim: SimOptions,
    /// The recorded model whose GSM8K solutions the simulator replays.
    pub sim_answers: String,
    /// `--sim-gsm8k-accuracy`: answer with this chosen accuracy instead
    /// ([`servebench_eval::sim_answers::with_accuracy`]).
    pub sim_accuracy: Option<f64>,
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
/// 1 the eval row could not be stored ([`Session::finish_eval`]). An error before or during the
/// eval marks the stored run failed (its samples stay in `samples.jsonl`; the same `--out`
/// resumes them).
pub fn run_standalone_eval(
    opts: EvalOptions,
    target: EvalTarget,
    rec: Option<EvalRecording>,
    console: Arc<dyn Console>,
) -> Result<u8> {
    let plan = eval_plan(&target, rec.as_ref());
    let image = rec.as_ref().and_then(|r| r.image.clone());
    // the run first: an error from here on marks it failed
    let mut recorder = match rec {
        Some(r) => Some(continue_or_record(r, &opts, &plan, &console)?),
        None => None,
    };
    // Ctrl-C: stop sending, keep the samples finished so far (result.json marked partial)
    let said = console.clone();
    let cancel = opts.cancel.clone();
    crate::entry::run(
        servebench_contracts::SimClock::Wall,
        &cancel,
        move || {
            said.warn("\ninterrupted: stopping eval gsm8k; writing result.json from the samples finished so far (marked partial)");
        },
        move |_| async move {
            let (target, opts) = match open_target(target, opts, &*console).await {
                Ok(t) => t,
                Err(e) => {
                    if let Some(r) = recorder.as_mut() {
                        r.finish(servebench_store::RunStatus::Failed);
                    }
                    return Err(e);
                }
            };
            let model = opts.model.clone().unwrap_or_default();
            let identity = crate::identity::identity(&plan, &target, &model)?;
            let eval_identity = EvalIdentity {
                meta: opts.meta.clone(),
                image,
                identity: identity.clone(),
            };
            let mut session = Session::from_parts(SessionParts {
                out_dir: opts.out_dir.clone(),
                cancel: opts.cancel.clone(),
                plan,
                target,
                model,
                identity,
                executor: NoPoints,
                recorder,
                extra: Vec::new(),
                console: console.clone(),
                tty: opts.progress,
                eval_identity: Some(eval_identity),
            })?;
            let r = session.eval_with(opts).await;
            session.finish_eval(r).await
        },
    )?
}

/// The plan of an eval-only session: no points, the eval, kind `eval`; the engine, image and
/// simulator preset the run and its identity read.
fn eval_plan(target: &EvalTarget, rec: Option<&EvalRecording>) -> SweepPlan {
    let mut plan = SweepPlan {
        kind: RunKind::Eval,
        concurrencies: Vec::new(),
        eval: Some(EvalTask::Gsm8k),
        ..SweepPlan::default()
    };
    plan.sim.gpu = target.sim.gpu.clone();
    plan.sim.model = target.sim.model.clone();
    plan.sim.speedup = Some(target.sim.speedup);
    if let Some(r) = rec {
        plan.engine = r.engine;
        plan.identity.image = r.image.clone();
    }
    plan
}

/// Starts the target (the endpoint as given, or the simulator replaying `sim_answers`) and
/// settles the model as a sweep does: the readiness wait, then `--model` checked against the
/// endpoint's list (or its first id, or the simulator's model). The returned options carry the
/// model and skip the wait and the check, done here.
async fn open_target(
    t: EvalTarget,
    mut opts: EvalOptions,
    console: &dyn Console,
) -> Result<(Target, EvalOptions)> {
    let inner = match t.endpoint {
        Some(ep) => servebench_endpoint::Target::remote(ep),
        None => {
            let book = match t.sim_accuracy {
                Some(a) => servebench_eval::sim_answers::with_accuracy(a, t.gsm8k_dir.as_deref()),
                None => {
                    servebench_eval::sim_answers::load_from(&t.sim_answers, t.gsm8k_dir.as_deref())
                }
            }
            .map_err(PipelineError::Eval)?;
            let sim = SimOptions {
                answers: Some(answer_book(move |p| book.lookup(p).map(str::to_string))),
                ..t.sim
            };
            servebench_endpoint::Target::start_simulator(sim).await?
        }
    };
    let target = Target::of(inner);
    if let Some(sim) = target.inner.simulator() {
        opts.model = opts.model.or_else(|| Some(sim.model().to_string()));
    }
    if let Some(max_wait) = opts.ready_timeout.take() {
        let ready = servebench_endpoint::Readiness { timeout: max_wait };
        if let Err(e) = target.inner.wait_ready(&ready, &opts.cancel).await {
            target.shutdown().await;
            return Err(e.into());
        }
    }
    let model = match servebench_endpoint::run_model(
        &target.inner,
        opts.model.as_deref(),
        opts.check_model,
    )
    .await
    {
        Ok((m, warning)) => {
            if let Some(w) = warning {
                console.warn(&w);
            }
            m
        }
        Err(e) => {
            target.shutdown().await;
            return Err(e.into());
        }
    };
    opts.model = Some(model);
    opts.check_model = false;
    Ok((target, opts))
}

/// The run to record into: the newest eval run of the same `--out` (killed, interrupted, failed,
/// or finished and run again), reopened with its eval rows removed: its samples resume from
/// samples.jsonl, so the run ends with one eval row and one output folder never has two runs.
/// `--fresh` (start over) or no earlier run: a new run ([`StoreRecorder::start`], as a sweep's).
fn continue_or_record(
    mut rec: EvalRecording,
    opts: &EvalOptions,
    plan: &SweepPlan,
    console: &Arc<dyn Console>,
) -> Result<StoreRecorder> {
    let earlier = match opts.fresh {
        true => None,
        false => rec
            .store
            .runs_in_out_dir(&opts.out_dir, RunKind::Eval)?
            .into_iter()
            .next(),
    };
    let Some(r) = earlier else {
        return StoreRecorder::start(rec.store, &rec.db, rec.meta, plan, console.clone());
    };
    let removed = rec.store.delete_evals(r.id)?;
    let recorder = StoreRecorder::reopen(rec.store, &rec.db, r.id, console.clone())?;
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
    Ok(recorder)
}
