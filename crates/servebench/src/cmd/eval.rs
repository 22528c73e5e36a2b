//! `servebench eval gsm8k`: GSM8K with lm-evaluation-harness prompts and scoring
//! (`servebench_eval::run_gsm8k`), printed as em_strict / em_flexible ± stderr, n_eff, the
//! threshold verdict and where the files are. Exit code 0 = gate passed, 2 = gate failed,
//! 1 = error, 130 = interrupted (Ctrl-C: result.json of the samples so far, marked partial).

use std::process::ExitCode;

use anyhow::Context;
use servebench_eval::EvalOptions;
use servebench_store::{RunKind, RunMeta, RunStatus, Store};

/// Subcommands of `servebench eval`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// GSM8K (1,319 test problems, 5-shot chat) scored exactly as lm-evaluation-harness does.
    ///
    /// Without --endpoint it runs against the embedded simulator, which replays a recorded
    /// model's real solutions: the score is that model's score, not an engine measurement.
    Gsm8k(Gsm8kArgs),
}

mod args;
pub use args::Gsm8kArgs;
use args::{endpoint, start_target};

/// Runs `servebench eval`.
pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Gsm8k(args) => gsm8k(args),
    }
}

fn gsm8k(args: Gsm8kArgs) -> anyhow::Result<ExitCode> {
    let opts = args.to_options()?;
    let ep = endpoint(&args)?;
    // Missing data is a usage error, not a failed run: check before the run is recorded.
    let data = servebench_eval::task::resolve_data_dir(opts.data_dir.as_deref());
    for f in ["test.jsonl", "train.jsonl"] {
        servebench_eval::task::load_docs(&data.join(f))?;
    }
    let mut store = if args.no_store {
        None
    } else {
        Some(Store::open(&args.db).with_context(|| {
            format!(
                "results store {} (choose another with --db PATH, or skip it with --no-store)",
                args.db.display()
            )
        })?)
    };
    if ep.is_none() {
        eprintln!(
            "no --endpoint: starting the embedded simulator, replaying {}'s recorded GSM8K solutions",
            args.sim_answers
        );
    }
    let run = match store.as_mut() {
        Some(st) => Some(continue_or_record(st, &args, &opts)?),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(async {
        // Ctrl-C: stop sending, keep the samples finished so far (result.json marked partial)
        let watcher = servebench_endpoint::cancel_on_ctrl_c(&opts.cancel, || {
            eprintln!("\ninterrupted: stopping eval gsm8k; writing result.json from the samples finished so far (marked partial)");
        });
        let mut opts = opts;
        let target = start_target(&args, ep).await?;
        if let Some(sim) = target.simulator() {
            opts.model = opts.model.or_else(|| Some(sim.model().to_string()));
        }
        let r = servebench_eval::run_gsm8k(&target, opts)
            .await
            .map_err(anyhow::Error::from);
        watcher.abort();
        target.shutdown().await;
        r
    });
    let (Some(st), Some(run)) = (store.as_mut(), run) else {
        let r = outcome?;
        print!("{}", servebench_eval::render_summary(&r));
        return Ok(exit(&r));
    };
    let r = match outcome {
        Ok(r) => r,
        Err(e) => {
            // the samples finished so far stay in samples.jsonl; a rerun with --out resumes
            if let Err(se) = st.finish_run(run, RunStatus::Failed) {
                eprintln!("warning: {}: run {run}: {se:#}", args.db.display());
            }
            return Err(e);
        }
    };
    print!("{}", servebench_eval::render_summary(&r));
    if r.interrupted {
        // a partial score is not a gate result: no eval row, the run is `interrupted`
        if let Err(e) = st.finish_run(run, RunStatus::Interrupted) {
            eprintln!("warning: {}: run {run}: {e:#}", args.db.display());
        }
        println!(
            "run         {run} (store {}, status interrupted)",
            args.db.display()
        );
        return Ok(exit(&r));
    }
    let row = store_row(&args, &r);
    let stored = st
        .add_eval(run, &row)
        .and_then(|_| st.finish_run(run, RunStatus::Ok));
    match stored {
        Ok(()) => println!("run         {run} (store {})", args.db.display()),
        Err(e) => {
            eprintln!("error: {}: run {run}: {e:#}", args.db.display());
            return Ok(ExitCode::from(1));
        }
    }
    Ok(exit(&r))
}

/// The run to record into: the newest eval run of the same `--out` (killed, interrupted, failed,
/// or finished and run again), reopened with its eval rows removed: its samples resume from
/// samples.jsonl, so the run ends with one eval row and one output folder never has two runs.
/// `--fresh` (start over) or no earlier run: a new run.
fn continue_or_record(
    st: &mut Store,
    args: &Gsm8kArgs,
    opts: &EvalOptions,
) -> anyhow::Result<servebench_store::RunId> {
    let meta = run_meta(args, opts); // creates the output folder
    let earlier = match opts.fresh {
        true => None,
        false => st
            .runs_in_out_dir(&opts.out_dir, RunKind::Eval)?
            .into_iter()
            .next(),
    };
    let Some(r) = earlier else {
        return Ok(st.record_run(&meta)?);
    };
    st.reopen_run(r.id)?;
    let removed = st.delete_evals(r.id)?;
    eprintln!(
        "continuing run {} (store {}, was {}){}",
        r.id,
        args.db.display(),
        r.status.as_str(),
        if removed > 0 {
            format!(", its {removed} eval row(s) replaced when this run ends")
        } else {
            String::new()
        }
    );
    Ok(r.id)
}

/// 130 when interrupted (as a shell reports SIGINT), else 0 = gate passed, 2 = gate failed.
fn exit(r: &servebench_eval::EvalResult) -> ExitCode {
    if r.interrupted {
        ExitCode::from(130)
    } else if r.gate.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

/// The run's metadata (kind `eval`, status `running` until the eval finishes).
fn run_meta(args: &Gsm8kArgs, opts: &EvalOptions) -> RunMeta {
    let mut m = RunMeta::new(RunKind::Eval);
    m.label = Some("gsm8k".into());
    m.endpoint = Some(match &args.endpoint {
        Some(e) => e.clone(),
        None => format!(
            "embedded simulator: {} serving {}, replaying the recorded GSM8K solutions of {}",
            args.sim_gpu, args.sim_model, args.sim_answers
        ),
    });
    m.image = args.image.clone();
    m.config_key = args.config_key.clone();
    if let (Some(tp), ep) = (args.tp, args.ep.unwrap_or(1)) {
        m.topology = Some(servebench_report::words::topology_label(tp, ep));
    }
    if args.isl.is_some() || args.osl.is_some() {
        m.workload = Some(servebench_report::words::workload_label(
            args.isl, args.osl, false,
        ));
    }
    let _ = std::fs::create_dir_all(&opts.out_dir);
    m.out_dir = Some(std::fs::canonicalize(&opts.out_dir).unwrap_or_else(|_| opts.out_dir.clone()));
    m.meta = serde_json::json!({
        "task": "gsm8k",
        "profile": opts.profile.to_string(),
        "conc": opts.conc,
        "limit": opts.limit,
        "model": opts.model,
        "simulator": args.endpoint.is_none().then(|| serde_json::json!({
            "gpu": args.sim_gpu, "model": args.sim_model, "answers": args.sim_answers,
            "speedup": args.sim_speedup, "zero_delay": args.sim_zero_delay,
        })),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
    });
    m
}

/// The stored eval row: the result row (MEASUREMENT §4.4) plus the gate outcome and image;
/// identity fields the flags left empty get the sweep's defaults
/// (`servebench_pipeline::identity::IdentityDefaults`: simulator `sim-<gpu>`, `sim`, `bf16`;
/// endpoint `unknown` and the `--engine` profile as framework; model prefix = the model; TP 1),
/// listed in `identity_defaults`, so compare and report match it with a `sweep --eval` row.
fn store_row(args: &Gsm8kArgs, r: &servebench_eval::EvalResult) -> servebench_eval::EvalRow {
    let mut row = super::sweep::eval_store_row(r, args.image.as_deref());
    let sim_gpu = args.endpoint.is_none().then_some(args.sim_gpu.as_str());
    let filled = servebench_pipeline::identity::fill_eval_defaults(&mut row, sim_gpu, args.engine);
    if !filled.is_empty() {
        row.set_extra("identity_defaults", serde_json::json!(filled));
    }
    row
}
