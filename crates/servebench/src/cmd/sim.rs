//! `servebench sim`: run the embedded engine simulator alone (an OpenAI-compatible server whose
//! timing models a named GPU serving a named model; docs/simulator.md).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use servebench_sim::{EngineConfig, Presets, SimOptions, SimServer};

pub mod plausible;
mod validate;

/// Subcommands of `servebench sim` (without one it serves).
#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Predicted beside measured: run the presets against real results (InferenceX rows.csv)
    /// and print per-row predictions and per hardware × metric median/p90 |error|.
    Validate(validate::Args),
}

/// Arguments of `servebench sim`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// `validate`: compare the presets with real results instead of serving.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// GPU preset: h100, h200, b200, b300, a100, a100-40gb, mi300x, mi325x, mi355x (see --list).
    #[arg(long, default_value = "h200")]
    pub gpu: String,
    /// Model preset: qwen3-8b, llama-3.1-8b, llama-3.1-70b, qwen3-30b-a3b, deepseek-r1-fp8,
    /// deepseek-r1-fp4 (key or served name; DeepSeek-R1 needs --tp 8 or 4).
    #[arg(long, default_value = "qwen3-8b")]
    pub model: String,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to listen on (0 = any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Tensor-parallel degree (GPUs per engine, 1–8).
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// Run faster than real time: wall time = modelled time / SPEEDUP.
    #[arg(long, default_value_t = 1.0)]
    pub speedup: f64,
    /// The server's clock: only `wall` serves clients in other processes (over TCP, modelled
    /// time ÷ --speedup). `virtual` (the discrete-event clock) needs client and simulator in one
    /// process: it is `sweep`/`bench`/`search`'s default and `run --simulate --sim-clock
    /// virtual`'s, and is refused here (exit 64).
    #[arg(long, value_enum, value_name = "CLOCK", default_value = "wall")]
    pub sim_clock: super::measure_enums::SimClockArg,
    /// Emit every token at once, without the engine model (client ceiling benchmarks).
    #[arg(long)]
    pub zero_delay: bool,
    /// Planted regression: every modelled step takes F times longer (1.1 = 10 % slower), so a
    /// comparison can be checked to find it (docs/compare.md).
    #[arg(long, alias = "slowdown", value_name = "F", default_value_t = 1.0)]
    pub sim_slowdown: f64,
    /// Write one JSON line per finished request (an existing FILE is replaced): id, the
    /// request's kernel arrival / socket read / parsed times, first and last token on the socket
    /// and handed to the HTTP layer (ns), tokens, chunks, finish reason (docs/simulator.md).
    #[arg(long, value_name = "FILE")]
    pub emission_log: Option<PathBuf>,
    /// Replay a recorded model's GSM8K solutions for GSM8K prompts: 6b_finetuning,
    /// 6b_verification, 175b_finetuning or 175b_verification (data from $SERVEBENCH_GSM8K_DIR,
    /// else data/gsm8k of the shared data folder: $SERVEBENCH_SHARED, ../shared, or shared/
    /// beside the checkout).
    #[arg(long, value_name = "NAME")]
    pub sim_answers: Option<String>,
    /// The served model's tokenizer (`tokenizer.json` or its directory): prompt tokens in
    /// usage, the context limit and the prefix cache are counted with it. Without it a prompt
    /// token is a whitespace-separated word.
    #[arg(long, value_name = "DIR")]
    pub tokenizer: Option<PathBuf>,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long, value_name = "SECS")]
    pub exit_after: Option<f64>,
    /// Accept prompt + completion up to this many tokens instead of the model's own context
    /// (at most the KV budget), e.g. 1048576 to replay AgentX's 700k-token histories.
    #[arg(long, value_name = "TOKENS")]
    pub max_model_len: Option<u32>,
    /// List the GPU and model presets and exit.
    #[arg(long)]
    pub list: bool,
    /// Serve a disaggregated fleet (issue 32): the prefill workers as `WxTP[/epN][/dpa]`
    /// (`1x4/ep4/dpa`); needs --decode (`0x…` decode: aggregated multinode). --tp is not used.
    #[arg(long, value_name = "WxTP", requires = "decode")]
    pub prefill: Option<String>,
    /// The decode workers of the fleet (`4x8/ep8`); workers wider than 8 GPUs are TP8 replicas.
    #[arg(long, value_name = "WxTP", requires = "prefill")]
    pub decode: Option<String>,
    /// The fleet's router: `kv` (KV-aware: cached prefix, then least loaded) or `round-robin`.
    #[arg(
        long,
        value_name = "POLICY",
        default_value = "kv",
        requires = "prefill"
    )]
    pub router: String,
    /// KV transfer fabric: `nvlink` (NVL72 domain, the GPU preset's link bandwidth) or `rdma`
    /// (50 GB/s per GPU); default: NVLink for GB200/GB300, RDMA otherwise.
    #[arg(long, value_name = "FABRIC", requires = "prefill")]
    pub fabric: Option<String>,
}

/// The fleet of `--prefill`/`--decode`/`--router`/`--fabric`, when asked for.
fn fleet(args: &Args) -> anyhow::Result<Option<servebench_sim::disagg::FleetConfig>> {
    let (Some(p), Some(d)) = (&args.prefill, &args.decode) else {
        return Ok(None);
    };
    let spec = servebench_sim::fleet_spec::FleetSpec {
        prefill: p.clone(),
        decode: d.clone(),
        router: args.router.clone(),
        fabric: args.fabric.clone(),
    };
    let max_len = args.max_model_len;
    let f = spec.build(&args.gpu, &args.model, |c| {
        if let Some(n) = max_len {
            c.max_model_len = n.min(c.kv_capacity_tokens() as u32);
        }
    })?;
    Ok(Some(f))
}

fn list() {
    let p = Presets::embedded();
    println!("GPUs (peak dense BF16, HBM bandwidth, HBM):");
    for (k, g) in &p.gpus {
        println!(
            "  {k:<10} {:<16} {:>7} TFLOP/s  {:>5} TB/s  {:>4} GiB",
            g.name, g.peak_bf16_tflops, g.hbm_tb_s, g.hbm_gib
        );
    }
    println!("Models:");
    for (k, m) in &p.models {
        let moe = m
            .moe
            .as_ref()
            .map(|e| format!(", MoE top-{} of {}", e.experts_per_token, e.num_experts))
            .unwrap_or_default();
        println!(
            "  {k:<14} {:<34} {:>6.2}B params{moe}, {} layers, {} heads / {} KV heads",
            m.served_name,
            m.params as f64 / 1e9,
            m.layers,
            m.heads,
            m.kv_heads
        );
    }
}

/// Runs `servebench sim`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Action::Validate(v)) = args.action {
        return validate::run(v);
    }
    if args.list {
        list();
        return Ok(ExitCode::SUCCESS);
    }
    if args.sim_clock == super::measure_enums::SimClockArg::Virtual {
        return Err(super::measure_enums::UsageError(
            "--sim-clock virtual: a standalone simulator serves clients in other processes, which only the wall clock can do; the virtual clock runs client and simulator in one process (`servebench sweep`/`bench`/`search` without --endpoint, or `run --simulate --sim-clock virtual`)".into(),
        )
        .into());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let answers = match &args.sim_answers {
            Some(name) => {
                let book = servebench_eval::sim_answers::load_from(name, None)?;
                Some(servebench_endpoint::answer_book(move |p| {
                    book.lookup(p).map(str::to_string)
                }))
            }
            None => None,
        };
        // a fleet's engines are built by the fleet (a worker wider than 8 GPUs may not be a
        // TP8 replica of the model); one engine otherwise
        let fleet = fleet(&args)?;
        let cfg = match &fleet {
            Some(_) => None,
            None => {
                let mut cfg = EngineConfig::from_presets(&args.gpu, &args.model, args.tp)?;
                if let Some(n) = args.max_model_len {
                    let kv = cfg.kv_capacity_tokens();
                    anyhow::ensure!(
                        n >= 1 && u64::from(n) <= kv,
                        "--max-model-len: must be 1..={kv} (the KV budget of this GPU/model/TP), got {n}"
                    );
                    cfg.max_model_len = n;
                }
                Some(cfg)
            }
        };
        let opts = SimOptions {
            gpu: args.gpu.clone(),
            model: args.model.clone(),
            host: args.host,
            port: args.port,
            tp: args.tp,
            speedup: args.speedup,
            zero_delay: args.zero_delay,
            slowdown: args.sim_slowdown,
            clock: servebench_sim::SimClock::Wall,
            answers,
            emission_log: args.emission_log.clone(),
            tokenizer: args.tokenizer.clone(),
            overrides: Default::default(),
            host_kv_dram_gb: None,
            fleet: None,
        };
        let server = match (fleet, cfg) {
            (Some(f), _) => SimServer::start_fleet(opts, f).await?,
            (None, Some(cfg)) => SimServer::start_with_config(opts, cfg).await?,
            (None, None) => unreachable!("one engine is built when there is no fleet"),
        };
        println!("{}", server.describe());
        println!("{}", server.token_counting());
        if let Some(n) = args.max_model_len {
            println!("context: {n} tokens (--max-model-len)");
        }
        if let Some(name) = &args.sim_answers {
            println!("answers: recorded GSM8K solutions of `{name}`");
        }
        if let Some(p) = &args.emission_log {
            println!("emission log: {}", p.display());
        }
        println!(
            "serving {} at {}/v1 (metrics: {}/metrics); Ctrl-C to stop",
            server.config().model.served_name,
            server.base_url(),
            server.base_url()
        );
        match args.exit_after {
            Some(s) if s.is_finite() && s >= 0.0 => {
                // Past what a Duration holds (~5.8e11 years) means "until Ctrl-C".
                let wait = Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Some(s) => anyhow::bail!("--exit-after: must be a non-negative number, got {s}"),
            None => {
                tokio::signal::ctrl_c().await?;
            }
        }
        server.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}
