//! `servebench engine-shim TOOL ARGS…` (hidden): the body of every shim a real recipe finds on
//! its `PATH` under `servebench run --simulate` (the shims and what each does:
//! `servebench_runner::shim`, docs/run.md). An engine launch becomes the embedded simulator
//! with the recipe's host, port, model, served name, TP, context length and max running
//! requests, after its argv passed the image's flag table; a client step waits for
//! servebench's measurement of the point; the rest is said and done here.

use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use servebench_runner::shim::{self, Invocation, SAY};
use servebench_sim::{EngineConfig, EngineOverrides, SimOptions, SimServer};

/// Arguments of `servebench engine-shim`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shimmed command (`python3`, `hf`, `nvidia-smi`, …).
    pub tool: String,
    /// Its arguments, as the recipe passed them.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

fn code(c: i32) -> ExitCode {
    ExitCode::from(c.clamp(0, 255) as u8)
}

fn say(lines: &[String]) {
    for l in lines {
        eprintln!("{l}");
    }
}

/// Runs one shim call.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let state = std::env::var_os(shim::ENV_STATE)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    match shim::classify(&a.tool, &a.args) {
        Invocation::Engine(l) => serve(l, state),
        Invocation::Client(step) if step.kind == "aiperf" => aiperf(&state, &step),
        Invocation::Client(step) => {
            let (c, lines) = shim::client_handover(&state, &step, Duration::from_secs(7 * 86400));
            say(&lines);
            Ok(code(c))
        }
        Invocation::Download {
            repo,
            local_dir,
            repo_type,
        } => match shim::download(&repo, local_dir.as_deref(), &repo_type) {
            Ok(d) => {
                eprintln!(
                    "{SAY} {} download {repo}: simulated (no weights fetched)",
                    a.tool
                );
                println!("{}", d.display());
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("{SAY} {e}");
                Ok(code(1))
            }
        },
        Invocation::Smi { tool, args } => {
            // the runner's real SKU (its tools name it), else the simulator's GPU preset
            let sku = std::env::var(shim::ENV_SKU)
                .or_else(|_| std::env::var(shim::ENV_GPU))
                .unwrap_or_else(|_| "h200".into());
            let gpu = servebench_runner::smi::gpu_sku(&sku);
            let n = std::env::var(shim::ENV_GPUS)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            loop {
                let (text, status, every) = servebench_runner::smi::smi(&tool, &args, &gpu, n);
                print!("{text}");
                use std::io::Write;
                let _ = std::io::stdout().flush();
                match every {
                    Some(d) if !d.is_zero() && status == 0 => std::thread::sleep(d),
                    _ => return Ok(code(status)),
                }
            }
        }
        Invocation::UvVenv(dir) => {
            let exe = std::env::current_exe()?;
            shim::uv_venv(&dir, &exe)?;
            eprintln!(
                "{SAY} uv venv {}: simulated (its bin/ holds the shims)",
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Invocation::Skip { say: s, status } => {
            eprintln!("{s}");
            Ok(code(status))
        }
        Invocation::AgentxPower(args) => {
            // InferenceX's power adapter, for real: servebench's port with the same flags.
            eprintln!("{SAY} power_adapter -> servebench metrics agentx-power");
            let exe = std::env::current_exe()?;
            let err = std::process::Command::new(&exe)
                .arg0("servebench")
                .args(["metrics", "agentx-power"])
                .args(&args)
                .exec();
            anyhow::bail!("{}: {err}", exe.display())
        }
        Invocation::AgentxAggregate => {
            let (c, lines) = shim::agentx_aggregate(&state);
            say(&lines);
            Ok(code(c))
        }
        Invocation::Real(tool) => match shim::real_tool(&tool) {
            Some(p) => {
                let err = std::process::Command::new(&p).args(&a.args).exec();
                anyhow::bail!("{}: {err}", p.display())
            }
            None => {
                eprintln!("{tool}: command not found");
                Ok(code(127))
            }
        },
        Invocation::Exec { argv, say: s } => {
            eprintln!("{s}");
            let err = std::process::Command::new(&argv[0]).args(&argv[1..]).exec();
            eprintln!("{}: {err}", argv[0]);
            Ok(code(if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }))
        }
        Invocation::Fail { say: s, status } => {
            eprintln!("{s}");
            Ok(code(status))
        }
    }
}

/// `aiperf profile`: handed over to servebench's measurement like the other client steps; once
/// the point was measured, AIPerf's server-metrics export the engine shim wrote from its
/// `/metrics` scrapes over the measurement (`serve`, [`SERVER_METRICS`]) is copied into
/// `--output-artifact-dir` as `server_metrics_export.json` and `.csv` (docs/run.md).
fn aiperf(state: &std::path::Path, step: &shim::ClientStep) -> anyhow::Result<ExitCode> {
    let (mut c, mut lines) = shim::client_handover(state, step, Duration::from_secs(7 * 86400));
    if let (0, Some(dir)) = (c, step.result_dir.as_deref()) {
        let dir = PathBuf::from(dir);
        if std::env::var(shim::ENV_CLOCK).as_deref() == Ok("virtual") {
            let (c, l) = virtual_export(state, &dir);
            lines.push(l);
            say(&lines);
            return Ok(code(c));
        }
        let src = |ext: &str| state.join(format!("{SERVER_METRICS}.{ext}"));
        // the engine shim writes the export within a scrape interval of the measurement's end
        for _ in 0..100 {
            if src("csv").is_file() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let copied = std::fs::create_dir_all(&dir).and_then(|_| {
            std::fs::copy(src("json"), dir.join("server_metrics_export.json"))?;
            std::fs::copy(src("csv"), dir.join("server_metrics_export.csv"))
        });
        match copied {
            Ok(_) => lines.push(format!(
                "{SAY} AIPerf server-metrics export: {}/server_metrics_export.{{json,csv}} (the engine's /metrics scraped over the measurement)",
                dir.display()
            )),
            Err(e) => {
                lines.push(format!(
                    "{SAY} AIPerf server-metrics export: {}: {e}",
                    src("json").display()
                ));
                c = 1;
            }
        }
    }
    say(&lines);
    Ok(code(c))
}

/// On the virtual clock the point's sweep scraped its own simulator's `/metrics` (every
/// modelled second of the profiling window) and wrote AIPerf's export beside `agentx.json`:
/// copied into `dir` with `benchmark_id` = `$RESULT_FILENAME`, as AIPerf names it.
fn virtual_export(state: &std::path::Path, dir: &std::path::Path) -> (i32, String) {
    let done = shim::read_state::<shim::MeasureDone>(state, shim::DONE_FILE);
    let stem = servebench_agentx::point::AIPERF_EXPORT;
    let found = done
        .as_ref()
        .and_then(|d| shim::find_file(&d.out_dir, &format!("{stem}.json")));
    let Some(json_src) = found else {
        return (
            1,
            format!(
                "{SAY} AIPerf server-metrics export: the measurement wrote no {stem}.json under {}",
                done.map(|d| d.out_dir.display().to_string())
                    .unwrap_or_else(|| state.display().to_string())
            ),
        );
    };
    let id = std::env::var("RESULT_FILENAME").unwrap_or_else(|_| "servebench".into());
    let res = (|| -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json_src)?)?;
        j["benchmark_id"] = serde_json::Value::String(id.clone());
        std::fs::write(
            dir.join("server_metrics_export.json"),
            serde_json::to_string_pretty(&j)?,
        )?;
        let csv = std::fs::read_to_string(json_src.with_extension("csv"))?;
        let csv: Vec<String> = csv
            .lines()
            .map(|l| match l.starts_with("# benchmark_id: ") {
                true => format!("# benchmark_id: {id}"),
                false => l.to_string(),
            })
            .collect();
        std::fs::write(dir.join("server_metrics_export.csv"), csv.join("\n") + "\n")?;
        Ok(())
    })();
    match res {
        Ok(()) => (0, format!(
            "{SAY} AIPerf server-metrics export: {}/server_metrics_export.{{json,csv}} (the simulated engine's /metrics scraped every modelled second of the window, virtual clock)",
            dir.display()
        )),
        Err(e) => (1, format!("{SAY} AIPerf server-metrics export: {}: {e:#}", json_src.display())),
    }
}

/// The AIPerf server-metrics export the engine shim writes in the attempt folder
/// (`<name>.json`, `<name>.csv`).
const SERVER_METRICS: &str = "aiperf-server-metrics-export";

/// Scrapes the simulated engine's own `/metrics` about three times a second (AIPerf's cadence)
/// over the job's measurement — from `measure.log` appearing to `measure-done.json` — and writes
/// AIPerf's server-metrics export into the attempt folder ([`SERVER_METRICS`]).
fn scrape_for_aiperf(state: PathBuf, port: u16) {
    use servebench_agentx::aiperf_export::ServerMetricsScrapes;
    std::thread::spawn(move || {
        let url = format!("http://127.0.0.1:{port}/metrics");
        let s = ServerMetricsScrapes::scrape_window(&url, Duration::from_millis(333), || {
            if state.join(shim::DONE_FILE).is_file() {
                None
            } else {
                Some(state.join("measure.log").is_file())
            }
        });
        let id = std::env::var("RESULT_FILENAME").unwrap_or_else(|_| "servebench".into());
        let json = serde_json::to_string_pretty(&s.to_json(&id)).unwrap_or_default();
        let _ = std::fs::write(state.join(format!("{SERVER_METRICS}.json")), json);
        let _ = std::fs::write(state.join(format!("{SERVER_METRICS}.csv")), s.to_csv(&id));
    });
}

/// The simulated engine: flags checked against the image's table (refused like the engine's
/// argparse: usage and error on stderr, exit 2), then the simulator serves until SIGTERM/SIGINT.
fn serve(mut l: shim::EngineLaunch, state: PathBuf) -> anyhow::Result<ExitCode> {
    let image = std::env::var("IMAGE").unwrap_or_default();
    match shim::check_engine_flags(&l, &image) {
        Ok(line) => eprintln!("{line}"),
        Err(text) => {
            eprintln!("{text}");
            return Ok(code(2));
        }
    }
    let gpu = std::env::var(shim::ENV_GPU).unwrap_or_else(|_| "h200".into());
    let model = std::env::var(shim::ENV_MODEL).unwrap_or_else(|_| "qwen3-8b".into());
    let mut cfg = EngineConfig::from_presets(&gpu, &model, l.args.tp)?;
    EngineOverrides {
        max_num_seqs: l.args.max_running_requests,
        max_model_len: l.args.context_length,
        served_name: l
            .args
            .served_model_name
            .clone()
            .or_else(|| l.args.model.clone()),
        // the simulator stands in for this engine: its /metrics names are the engine's own
        metrics_dialect: Some(match l.engine {
            servebench_client::Engine::Sglang => servebench_sim::MetricsDialect::Sglang,
            // ATOM's series are vLLM's under its own `atom:` prefix
            servebench_client::Engine::Atom => servebench_sim::MetricsDialect::Atom,
            _ => servebench_sim::MetricsDialect::Vllm,
        }),
    }
    .apply(&mut cfg);
    // a KV-offload arm (the recipe's KV_OFFLOADING=dram, TOTAL_CPU_DRAM_GB as InferenceX passes
    // them): the simulator gets a DRAM tier of that budget, whatever the backend's own flags
    let offload = std::env::var("KV_OFFLOADING").unwrap_or_default();
    if servebench_contracts::KvOffload::parse(Some(&offload))
        == servebench_contracts::KvOffload::Dram
    {
        let gb: f64 = std::env::var("TOTAL_CPU_DRAM_GB")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0);
        if gb > 0.0 {
            cfg.set_host_kv(gb)?;
        } else {
            eprintln!("{SAY} KV_OFFLOADING=dram without TOTAL_CPU_DRAM_GB: no DRAM tier simulated");
        }
    }
    // on the virtual clock the point's sweep embeds this engine and measures it in its own
    // process (run.md): this server answers readiness and the recipe's own requests
    let virtual_clock = std::env::var(shim::ENV_CLOCK).as_deref() == Ok("virtual");
    let host: IpAddr = match l.args.host.as_str() {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => h.parse().map_err(|e| anyhow::anyhow!("--host {h}: {e}"))?,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let answers = match std::env::var(shim::ENV_ANSWERS) {
            Ok(name) => {
                let book = servebench_eval::sim_answers::load_from(&name, None)?;
                Some(servebench_endpoint::answer_book(move |p| {
                    book.lookup(p).map(str::to_string)
                }))
            }
            Err(_) => None,
        };
        let server = SimServer::start_with_config(
            SimOptions {
                host,
                port: l.args.port,
                answers,
                ..SimOptions::default()
            },
            cfg,
        )
        .await?;
        println!("{}", server.describe());
        println!(
            "{SAY} {} launch simulated: serving {} at {}/v1 (TP{} EP{} DP{}; EP and DP recorded, not modelled)",
            l.engine.name(),
            server.config().model.served_name,
            server.base_url(),
            l.args.tp,
            l.args.ep,
            l.args.dp
        );
        l.args.port = server.addr().port();
        l.describe = Some(server.describe());
        shim::write_state(&state, shim::ENGINE_FILE, &l)?;
        if virtual_clock {
            println!(
                "{SAY} the point is measured on the virtual clock: servebench's sweep runs this engine ({} × {model}, max running requests {}, context {} tokens) in its own process; this server answers readiness",
                gpu,
                server.config().max_num_seqs,
                server.config().max_model_len
            );
        } else {
            scrape_for_aiperf(state.clone(), l.args.port);
        }
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}
