//! `servebench eval gsm8k`: GSM8K with lm-evaluation-harness prompts and scoring
//! (`servebench_eval::run_gsm8k`), printed as em_strict / em_flexible ± stderr, n_eff, the
//! threshold verdict and where the files are. Exit code 0 = gate passed, 2 = gate failed,
//! 1 = error, 130 = interrupted (Ctrl-C: result.json of the samples so far, marked partial).

use std::process::ExitCode;

use anyhow::Context;
use servebench_eval::EvalOptions;
use servebench_pipeline::standalone_eval::{run_standalone_eval, EvalRecording, EvalTarget};
use servebench_pipeline::StdConsole;
use servebench_store::{RunKind, RunMeta, Store};

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
use args::{endpoint, sim_options};

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
    let data = servebench_eval::task::resolve_data_dir(opts.data_dir.as_deref())?;
    for f in ["test.jsonl", "train.jsonl"] {
        servebench_eval::task::load_docs(&data.join(f))?;
    }
    let store = if args.no_store {
        None
    } else {
        Some(Store::open(&args.db).with_context(|| {
            format!(
                "results store {} (choose another with --db PATH, or skip it with --no-store)",
                args.db.display()
            )
        })?)
    };
    match (&ep, args.sim_gsm8k_accuracy) {
        (Some(_), _) => {}
        (None, Some(a)) => eprintln!(
            "no --endpoint: starting the embedded simulator, answering with a SIMULATED accuracy of {a} (reference solutions and recorded wrong ones; not a measurement)"
        ),
        (None, None) => eprintln!(
            "no --endpoint: starting the embedded simulator, replaying {}'s recorded GSM8K solutions",
            args.sim_answers
        ),
    }
    let rec = store.map(|store| EvalRecording {
        store,
        db: args.db.clone(),
        meta: run_meta(&args, &opts), // creates the output folder
        image: args.image.clone(),
        engine: args.engine,
    });
    let target = EvalTarget {
        endpoint: ep,
        sim: sim_options(&args),
        sim_answers: args.sim_answers.clone(),
        sim_accuracy: args.sim_gsm8k_accuracy,
        gsm8k_dir: args.gsm8k_dir.clone(),
    };
    let exit = run_standalone_eval(opts, target, rec, std::sync::Arc::new(StdConsole))?;
    Ok(ExitCode::from(exit))
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
    m.branch = Some(
        args.branch
            .clone()
            .unwrap_or_else(servebench_pipeline::identity::default_branch),
    );
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
            "simulated_accuracy": args.sim_gsm8k_accuracy,
            "speedup": args.sim_speedup, "zero_delay": args.sim_zero_delay,
        })),
        "command": servebench_contracts::redact::command_line(std::env::args()),
    });
    m
}
