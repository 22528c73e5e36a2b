//! One attempt of one point, run where its GPUs are (`servebench run --exec-point FILE`, the
//! body of every job script): start the engine as its own process group, wait for readiness
//! with a bound and a clear line, measure with servebench's own `sweep` (or `eval gsm8k` for an
//! eval job) as a child process, then tear the engine's whole process group down — always,
//! also on SIGINT/SIGTERM (`scancel` sends SIGTERM).
//!
//! Everything goes to the job's stdout (the executor points it at `job.log`): the engine's
//! output as it runs, the job's own lines (prefixed `servebench-job:`), then the measurement's
//! output. Results: `point.db` (the sweep's/eval's own results store) and `status.json`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunnerError};
use crate::plan::{Point, Workload};
use crate::recipe::{recipe_env, shell_quote, sim_argv, SimSetup};
use crate::shim;
use crate::signal;
use crate::workspace;
use servebench_engines::Engine;
use servebench_sim::SimClock;

/// What starts the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EngineSpec {
    /// A recipe script, run with `bash` and the InferenceX environment. With `sim`, the
    /// simulator's command line is exported as `SERVEBENCH_SIM_CMD` (a recipe written for
    /// `--simulate` runs `exec $SERVEBENCH_SIM_CMD`).
    Recipe {
        /// The script.
        path: PathBuf,
        /// The simulator, when the run is simulated.
        sim: Option<SimSetup>,
    },
    /// The embedded simulator (`servebench sim`) set up from the point.
    Simulator(SimSetup),
}

impl EngineSpec {
    /// The simulator the point's sweep embeds when it is measured on the virtual clock, and
    /// the recipe's shimmed engine launch (`engine.json` in `dir`) whose limits it takes:
    /// `run --simulate` without `--recipes` (virtual unless `--sim-clock wall`/`--sim-speedup`);
    /// a real recipe whose engine launch the shims replaced (virtual unless `--sim-clock
    /// wall`); a recipe that runs `$SERVEBENCH_SIM_CMD` itself only with `--sim-clock virtual`
    /// (that process is what such a recipe delays or kills, so by default it is measured over
    /// TCP on the wall clock). `None`: the wall clock. Eval jobs are always wall (their client
    /// is reqwest over TCP).
    pub fn virtual_clock(&self, dir: &Path) -> Option<(&SimSetup, Option<shim::EngineLaunch>)> {
        match self {
            EngineSpec::Simulator(s) if s.clock == Some(SimClock::Virtual) => Some((s, None)),
            EngineSpec::Recipe { sim: Some(s), .. } if s.speedup.is_none() => {
                let launched = shim::read_state::<shim::EngineLaunch>(dir, shim::ENGINE_FILE);
                match (s.clock, launched) {
                    (Some(SimClock::Wall), _) => None,
                    (Some(SimClock::Virtual), l) => Some((s, l)),
                    (None, Some(l)) => Some((s, Some(l))),
                    (None, None) => None,
                }
            }
            _ => None,
        }
    }
}

/// How the point is measured (flags passed to `servebench sweep` / `eval gsm8k`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasureSpec {
    /// Measured prompts (default: sweep's 10 × conc).
    pub num_prompts: Option<u32>,
    /// Warmup requests (default: sweep's 2 × conc).
    pub warmups: Option<u32>,
    /// ISL override, tokens (agentic points: the fixed-sequence stand-in, default 1024).
    pub isl: Option<u32>,
    /// OSL override, tokens.
    pub osl: Option<u32>,
    /// Eval jobs: only the first N GSM8K documents.
    pub eval_limit: Option<u32>,
    /// Eval jobs: max_tokens per request.
    pub eval_max_tokens: Option<u32>,
    /// Folder with the GSM8K files (exported as `SERVEBENCH_GSM8K_DIR`).
    pub gsm8k_dir: Option<PathBuf>,
    /// The shared data folder the run resolved (`servebench_eval::shared::shared_dir`),
    /// absolute; exported as `SERVEBENCH_SHARED` to the engine and the measurement, which run
    /// in the job's own folder where `../shared` is not the data.
    #[serde(default)]
    pub shared_dir: Option<PathBuf>,
    /// AgentX traces (a folder of Weka `trace_*.json` files or a `traces.jsonl`): agentic points
    /// are measured with `sweep --scenario agentx --traces PATH` (MEASUREMENT.md Part 2 §5).
    /// Without it they get the fixed-sequence stand-in at `isl`/`osl`.
    #[serde(default)]
    pub traces: Option<PathBuf>,
    /// AgentX profiling window per point, s (sweep's `--duration`; default: the catalog point's
    /// duration, InferenceX 3600).
    #[serde(default)]
    pub duration_s: Option<f64>,
}

impl MeasureSpec {
    /// The data folders a job's engine and measurement get in their environment:
    /// `SERVEBENCH_GSM8K_DIR` ([`MeasureSpec::gsm8k_dir`]) and `SERVEBENCH_SHARED`
    /// ([`MeasureSpec::shared_dir`]), each when known.
    pub fn data_env(&self) -> Vec<(&'static str, &Path)> {
        let mut e = Vec::new();
        if let Some(g) = &self.gsm8k_dir {
            e.push(("SERVEBENCH_GSM8K_DIR", g.as_path()));
        }
        if let Some(s) = &self.shared_dir {
            e.push(("SERVEBENCH_SHARED", s.as_path()));
        }
        e
    }

    /// The measured AgentX window, s, when agentic points are replayed with `--duration`: the
    /// recipe's `DURATION`.
    pub fn window_s(&self) -> Option<f64> {
        self.traces.as_ref().and(self.duration_s)
    }

    /// Whether an agentic point is replayed from traces (AgentX) rather than measured with the
    /// fixed-sequence stand-in.
    pub fn agentx(&self) -> bool {
        self.traces.is_some()
    }

    /// One line saying how an agentic point is measured (None for fixed-sequence points and
    /// eval jobs): the AgentX replay, or the fixed-sequence stand-in and why it will not match
    /// an AgentX baseline.
    pub fn agentic_note(&self, point: &Point) -> Option<String> {
        let Workload::Agentic { duration_s, .. } = &point.workload else {
            return None;
        };
        if point.eval_only {
            return None;
        }
        Some(match &self.traces {
            Some(t) => format!(
                "agentic point: AgentX trace replay of {} for {} s per point (benchmark_type agentic_traces)",
                t.display(),
                self.duration_s.unwrap_or(*duration_s as f64)
            ),
            None => format!(
                "agentic point: fixed-sequence stand-in at {}/{} (no --traces; rows are fixed-sequence and an AgentX baseline has no match for them)",
                self.isl.unwrap_or(1024),
                self.osl.unwrap_or(1024)
            ),
        })
    }
}

/// Everything one attempt needs; written as `point.json` in the attempt directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The point.
    pub point: Point,
    /// Attempt number (1 = first).
    pub attempt: u32,
    /// The attempt directory (results, logs).
    pub dir: PathBuf,
    /// Runner name (`RUNNER_NAME`).
    pub runner: String,
    /// The servebench binary (measures the point, and is the simulator).
    pub exe: PathBuf,
    /// The engine.
    pub engine: EngineSpec,
    /// The measurement.
    pub measure: MeasureSpec,
    /// Readiness bound, s.
    pub ready_timeout_s: f64,
    /// How long the engine gets between SIGTERM and SIGKILL, s.
    pub teardown_grace_s: f64,
    /// Overall bound on the measurement, s (then it is stopped and the point fails).
    pub measure_timeout_s: f64,
    /// A multinode point submitted to Slurm: the nodes of its allocation. The engine is then
    /// one `srun` step per role on those nodes ([`crate::fleet_launch`]); `None`: one engine
    /// process here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_nodes: Option<u32>,
}

/// How far an attempt got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// The engine was being started (launcher/recipe).
    Launch,
    /// Waiting for readiness.
    Readiness,
    /// Measuring.
    Measure,
    /// Measured.
    Done,
}

/// The result of one attempt (`status.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStatus {
    /// True when the point was measured and its results are in `point.db`.
    pub ok: bool,
    /// Where it stopped.
    pub stage: Stage,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// The port the engine listened on.
    pub port: u16,
    /// The engine's process group id.
    pub engine_pgid: Option<i32>,
    /// Seconds from start to readiness.
    pub ready_after_s: Option<f64>,
    /// Exit code of the measurement (`sweep`: 0 ok; `eval`: 0 passed, 2 below threshold).
    pub measure_exit: Option<i32>,
    /// The engine process group was gone after teardown.
    pub engine_gone: bool,
    /// One line: what happened.
    pub message: String,
    /// The simulator's description (first line `servebench sim` prints), when simulated.
    pub sim_describe: Option<String>,
}

/// How long a real recipe gets, after the measurement, to finish its remaining steps
/// (result files, metrics snapshots), s.
pub const RECIPE_TAIL_S: f64 = 120.0;

/// Lines the job writes into its log carry this prefix.
pub const LINE_PREFIX: &str = "servebench-job:";

struct Log {
    file: File,
}

impl Log {
    fn line(&mut self, s: &str) {
        let t = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let _ = writeln!(self.file, "{t} {LINE_PREFIX} {s}");
        let _ = self.file.flush();
    }
}

/// A TCP port free on every interface for the engine a job starts, chosen BELOW the kernel's
/// ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`, default 32768–60999), at a
/// random place in 10000..low: the port is released before the engine binds it, and a port
/// from the ephemeral range (what binding port 0 hands out) can meanwhile become another job's
/// outgoing connection or another job's port-0 pick: at `coverage --jobs 14` an engine died with
/// "cannot listen on 0.0.0.0:P: Address already in use". Falls back to binding port 0 when no
/// port below the range is free.
///
/// # Errors
/// Not even port 0 can be bound on 127.0.0.1.
pub fn free_port() -> Result<u16> {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let below = free_port_below(low, rand::random::<u32>());
    if let Some(p) = below {
        return Ok(p);
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| RunnerError::io("127.0.0.1:0", e))?;
    Ok(l.local_addr()
        .map_err(|e| RunnerError::io("127.0.0.1:0", e))?
        .port())
}

/// The first port of `10000..low`, starting at `seed` (mod the span) and wrapping, that both
/// `0.0.0.0:P` and `127.0.0.1:P` bind (at most 512 tries); `None` when the span is empty or none
/// binds.
fn free_port_below(low: u16, seed: u32) -> Option<u16> {
    const FLOOR: u16 = 10_000;
    let span = u32::from(low.checked_sub(FLOOR).filter(|s| *s > 0)?);
    (0..span.min(512)).find_map(|i| {
        let p = FLOOR + ((seed.wrapping_add(i)) % span) as u16;
        let any = std::net::TcpListener::bind(("0.0.0.0", p)).ok()?;
        drop(any);
        std::net::TcpListener::bind(("127.0.0.1", p))
            .ok()
            .map(|_| p)
    })
}

/// `GET /health` answered 200 (a raw HTTP/1.0 request; 503 while an engine loads is not ready).
pub fn health_ok(port: u16) -> bool {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let head = String::from_utf8_lossy(&buf[..n]);
    head.starts_with("HTTP/1.") && head.get(9..12) == Some("200")
}

/// `exit status 1`, `killed by signal 9 (SIGKILL)`.
pub fn describe_exit(st: &ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
        _ => "ended".into(),
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => "signal",
    }
}

/// True for signals another process sends (kill, OOM killer, preemption) as opposed to a crash
/// of the engine itself (SIGSEGV, SIGABRT, …).
pub fn external_signal(s: i32) -> bool {
    matches!(
        s,
        libc::SIGKILL | libc::SIGTERM | libc::SIGINT | libc::SIGHUP
    )
}

fn engine_command(spec: &JobSpec, port: u16) -> Result<Command> {
    let p = &spec.point;
    let sim_answers = p.eval_only;
    let mut cmd = match &spec.engine {
        EngineSpec::Simulator(s) if spec.slurm_nodes.is_some() && p.disagg.is_some() => {
            let script = fleet_script(spec, s, port)?;
            let mut c = Command::new("bash");
            c.arg(script);
            c
        }
        EngineSpec::Simulator(s) => {
            let argv = sim_argv(&spec.exe, s, port, sim_answers);
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
        EngineSpec::Recipe { path, sim } => {
            // a recipe of an InferenceX checkout: its own /workspace (a copy of the checkout)
            // in a private mount namespace, as the launcher's container mount gives it
            let mut c = match workspace::checkout_root(path) {
                Some(root) => {
                    let bwrap = workspace::find_bwrap()?;
                    let ws = spec.dir.join(workspace::DIR);
                    let _ = std::fs::remove_dir_all(&ws);
                    workspace::copy_checkout(&root, &ws)?;
                    let text = std::fs::read_to_string(path).unwrap_or_default();
                    let image = workspace::image_stand_ins(&spec.dir.join("image"), &text)?;
                    let argv = workspace::bwrap_argv(&bwrap, &ws, &image);
                    let mut c = Command::new(&argv[0]);
                    c.args(&argv[1..])
                        .arg("bash")
                        .arg(workspace::recipe_inside(&root, path).unwrap_or_else(|| path.clone()));
                    c.env("INFMAX_CONTAINER_WORKSPACE", workspace::MOUNT);
                    c
                }
                None => {
                    let mut c = Command::new("bash");
                    c.arg(path);
                    c
                }
            };
            if let Some(s) = sim {
                let argv = sim_argv(&spec.exe, s, port, sim_answers);
                let line: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
                c.env("SERVEBENCH_SIM_CMD", line.join(" "));
                for (k, v) in shim_env(spec, path, s) {
                    c.env(k, v);
                }
            }
            c
        }
    };
    let result_dir = spec.dir.join("results");
    for (k, v) in recipe_env(p, &spec.runner, port, &result_dir, spec.measure.window_s()) {
        cmd.env(k, v);
    }
    for (k, v) in spec.measure.data_env() {
        cmd.env(k, v);
    }
    cmd.current_dir(&spec.dir);
    Ok(cmd)
}

/// Writes the launcher of a multinode point in its Slurm allocation ([`crate::fleet_launch`]):
/// every worker on its node(s) on a port of its own, the frontend (the point's simulated
/// engine, `sim_argv`) on `port` of the first node. The workers get the readiness bound to
/// register.
fn fleet_script(spec: &JobSpec, s: &SimSetup, port: u16) -> Result<PathBuf> {
    let p = &spec.point;
    let d = p.disagg.as_deref().expect("a multinode point");
    let job = crate::multinode_plan::job_plan(p, d)?;
    let steps = crate::fleet_launch::role_steps(
        &spec.exe,
        d,
        &job.layout,
        s,
        sim_argv(&spec.exe, s, port, p.eval_only),
        port,
        free_port,
    )?;
    let nodes = spec.slurm_nodes.unwrap_or(job.sbatch_nodes);
    let text = crate::fleet_launch::launcher_script(&p.id, &steps, nodes, spec.ready_timeout_s);
    crate::fleet_launch::write(&spec.dir, &text)
}

/// The environment a real recipe gets under `--simulate` (docs/run.md §Real recipes): the
/// attempt's shim folder first on `PATH` ([`shim::install`] writes it before the recipe
/// starts), the simulator's GPU/model presets and GPU count, the recorded GSM8K answers for
/// eval jobs, a private `HF_HOME`, and — for a recipe inside an InferenceX checkout — the
/// workspace the launcher mounts (`INFMAX_CONTAINER_WORKSPACE` = `/workspace`, the attempt's
/// copy of the checkout in the recipe's mount namespace, [`crate::workspace`]) with the
/// AgentX aggregate directed into the attempt's `results/` (`AGENTIC_OUTPUT_DIR`) instead of
/// the checkout.
pub fn shim_env(spec: &JobSpec, recipe: &Path, sim: &SimSetup) -> Vec<(String, String)> {
    let shims = spec.dir.join("shims");
    let path = std::env::var("PATH").unwrap_or_default();
    let mut e = vec![
        ("PATH".to_string(), format!("{}:{path}", shims.display())),
        (shim::ENV_DIR.into(), shims.display().to_string()),
        (shim::ENV_STATE.into(), spec.dir.display().to_string()),
        (shim::ENV_GPU.into(), sim.gpu.clone()),
        (shim::ENV_SKU.into(), crate::recipe::sku(&spec.point.runner)),
        (shim::ENV_MODEL.into(), sim.model.clone()),
        (
            shim::ENV_CLOCK.into(),
            match (sim.clock, sim.speedup) {
                (Some(SimClock::Wall), _) | (_, Some(_)) => SimClock::Wall,
                _ => SimClock::Virtual,
            }
            .as_str()
            .into(),
        ),
        (shim::ENV_GPUS.into(), spec.point.gpus().to_string()),
        (
            "HF_HOME".into(),
            spec.dir.join("hf-home").display().to_string(),
        ),
        (
            "HF_HUB_CACHE".into(),
            spec.dir.join("hf-home/hub").display().to_string(),
        ),
        (
            "AGENTIC_OUTPUT_DIR".into(),
            spec.dir.join("results").display().to_string(),
        ),
    ];
    if spec.point.eval_only {
        e.push((shim::ENV_ANSWERS.into(), "175b_verification".into()));
    }
    if workspace::checkout_root(recipe).is_some() {
        e.push((
            "INFMAX_CONTAINER_WORKSPACE".into(),
            workspace::MOUNT.to_string(),
        ));
    }
    e
}

/// The measurement's argv (after the binary): `sweep …` or `eval gsm8k …`, storing into
/// Whether the sweep's store `db` holds a finished (`ok`) run with stored points that is flagged
/// invalid: an AgentX point that is not a valid InferenceX submission, for which the sweep
/// exits 1 although it measured and stored the point (measurement.md §13.1).
fn stored_but_invalid(db: &Path) -> bool {
    if !db.is_file() {
        return false;
    }
    let Ok(store) = servebench_store::Store::open(db) else {
        return false;
    };
    matches!(
        store.latest_run(None),
        Ok(Some(r)) if r.status == servebench_store::RunStatus::Ok
            && r.n_points > 0
            && r.invalid_reason.is_some()
    )
}

/// `point.db` of the attempt directory.
pub fn measure_args(spec: &JobSpec, port: u16) -> Vec<String> {
    let p = &spec.point;
    let m = &spec.measure;
    let endpoint = format!("http://127.0.0.1:{port}");
    let db = spec.dir.join("point.db").display().to_string();
    let (isl, osl) = match &p.workload {
        Workload::Fixed { isl, osl } => (m.isl.unwrap_or(*isl), m.osl.unwrap_or(*osl)),
        Workload::Agentic { .. } => (m.isl.unwrap_or(1024), m.osl.unwrap_or(1024)),
    };
    let mut a: Vec<String> = Vec::new();
    let push = |a: &mut Vec<String>, k: &str, v: String| {
        a.push(k.to_string());
        a.push(v);
    };
    if p.eval_only {
        a.extend(["eval".into(), "gsm8k".into()]);
        push(&mut a, "--endpoint", endpoint);
        push(&mut a, "--conc", p.conc.to_string());
        push(&mut a, "--out", spec.dir.join("eval").display().to_string());
        if let Some(l) = m.eval_limit {
            push(&mut a, "--limit", l.to_string());
        }
        if let Some(t) = m.eval_max_tokens {
            push(&mut a, "--max-tokens", t.to_string());
        }
        a.push("--no-progress".into());
        push(&mut a, "--dp-attn", p.dp_attn.to_string());
    } else {
        a.push("sweep".into());
        match spec.engine.virtual_clock(&spec.dir) {
            Some((s, launched)) => {
                // the whole point in one process on the virtual clock: the sweep's own
                // simulator, set up as the one the runner or the recipe's shimmed launch
                // started (which answers readiness), with that launch's own limits
                push(&mut a, "--sim-clock", "virtual".into());
                push(&mut a, "--sim-gpu", s.gpu.clone());
                push(&mut a, "--sim-model", s.model.clone());
                // a multinode point: the sweep's simulator is the prefill/decode fleet
                if let Some(f) = &s.fleet {
                    push(&mut a, "--sim-prefill", f.prefill.clone());
                    push(&mut a, "--sim-decode", f.decode.clone());
                    push(&mut a, "--sim-router", f.router.clone());
                }
                if let Some(f) = s.slowdown {
                    push(&mut a, "--sim-slowdown", f.to_string());
                }
                if let Some(l) = launched {
                    let l = l.args;
                    if let Some(n) = l.max_running_requests {
                        push(&mut a, "--sim-max-running-requests", n.to_string());
                    }
                    if let Some(c) = l.context_length {
                        push(&mut a, "--sim-context-length", c.to_string());
                    }
                    if let Some(m) = l.served_model_name.or(l.model) {
                        push(&mut a, "--sim-served-name", m);
                    }
                }
            }
            None => push(&mut a, "--endpoint", endpoint),
        }
        push(&mut a, "--conc", p.conc.to_string());
        push(
            &mut a,
            "--out",
            spec.dir.join("sweep").display().to_string(),
        );
        a.push("--overwrite".into());
        // a multinode point's sweep sees its main side's TP; the runner writes the stored row
        // in process_result.py's multinode shape with the fleet's GPUs (multinode_row)
        let gpus = match p.disagg {
            Some(_) => p.tp * p.pp * p.pcp,
            None => p.gpus(),
        };
        push(&mut a, "--gpus", gpus.to_string());
        push(&mut a, "--pp", p.pp.to_string());
        push(&mut a, "--pcp", p.pcp.to_string());
        push(&mut a, "--dcp", p.dcp.to_string());
        if p.dp_attn {
            a.push("--dp-attn".into());
        }
        // the embedded simulator is the engine the runner started: it speaks vLLM's /metrics
        // and request fields (the rows keep the catalog's framework through --framework), so
        // the sweep gets no --engine mismatch warning a `run` user could not act on
        // a real recipe under --simulate: the engine its shimmed launch started (engine.json),
        // whose /metrics names the simulator serves
        let launched = shim::read_state::<shim::EngineLaunch>(&spec.dir, shim::ENGINE_FILE);
        let profile = match (&spec.engine, launched) {
            (EngineSpec::Simulator(_), _) => Some(Engine::Vllm.name()),
            (EngineSpec::Recipe { sim: Some(_), .. }, Some(e)) => Some(e.engine.name()),
            _ => Engine::from_framework(&p.framework).map(Engine::name),
        };
        if let Some(e) = profile {
            push(&mut a, "--engine", e.into());
        }
        if let EngineSpec::Simulator(SimSetup {
            speedup: Some(x), ..
        }) = &spec.engine
        {
            // the simulator runs x times faster than real time: the sweep scales back
            push(&mut a, "--sim-speedup", x.to_string());
        }
        if let (Workload::Agentic { duration_s, .. }, Some(t)) = (&p.workload, &m.traces) {
            // an AgentX replay takes its lengths, counts and pacing from the traces: the
            // fixed-sequence flags are refused with it
            push(&mut a, "--scenario", "agentx".into());
            push(&mut a, "--traces", t.display().to_string());
            let d = m.duration_s.unwrap_or(*duration_s as f64);
            push(&mut a, "--duration", d.to_string());
        } else {
            if let Some(n) = m.num_prompts {
                push(&mut a, "--num-prompts", n.to_string());
            }
            if let Some(n) = m.warmups {
                push(&mut a, "--warmups", n.to_string());
            }
            push(&mut a, "--isl", isl.to_string());
            push(&mut a, "--osl", osl.to_string());
        }
    }
    if p.eval_only {
        push(&mut a, "--isl", isl.to_string());
        push(&mut a, "--osl", osl.to_string());
    }
    push(&mut a, "--tp", p.tp.to_string());
    push(&mut a, "--ep", p.ep.to_string());
    push(&mut a, "--hw", p.runner.clone());
    push(&mut a, "--framework", p.framework.clone());
    push(&mut a, "--precision", p.precision.clone());
    push(&mut a, "--model-prefix", p.model_prefix.clone());
    push(&mut a, "--spec-decoding", p.spec_decoding.clone());
    push(&mut a, "--image", p.image.clone());
    push(&mut a, "--config-key", p.config_key.clone());
    if let Workload::Agentic {
        kv_offloading,
        total_cpu_dram_gb,
        kv_offload_backend,
        ..
    } = &p.workload
    {
        // recorded as InferenceX's aggregate records them (kv_offloading,
        // kv_offload_backend, allocated_cpu_dram_gb); the sweep's own simulator models the
        // DRAM tier from them
        if kv_offloading != "none" && !p.eval_only {
            push(&mut a, "--kv-offloading", kv_offloading.clone());
            if let Some(b) = kv_offload_backend {
                push(&mut a, "--kv-offload-backend", b.clone());
            }
            push(&mut a, "--total-cpu-dram-gb", total_cpu_dram_gb.to_string());
        }
    }
    push(&mut a, "--db", db);
    a
}

fn write_status(dir: &Path, st: &JobStatus) -> Result<()> {
    let p = dir.join("status.json");
    let text = serde_json::to_string_pretty(st).map_err(|e| RunnerError::io(&p, e))?;
    std::fs::write(&p, text).map_err(|e| RunnerError::io(&p, e))
}

/// Reads `status.json` of an attempt directory.
pub fn read_status(dir: &Path) -> Option<JobStatus> {
    let text = std::fs::read_to_string(dir.join("status.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Reads `point.json`.
pub fn read_spec(path: &Path) -> Result<JobSpec> {
    let text = std::fs::read_to_string(path).map_err(|e| RunnerError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| {
        RunnerError::Invalid(format!(
            "{}: line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

fn first_sim_line(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .find(|l| l.starts_with("simulated "))
        .map(str::to_string)
}

/// The description of the simulator this attempt's engine is: the one a shimmed engine launch
/// wrote to the attempt's `engine.json` (a real recipe, whose job log can hold any text it
/// prints, e.g. a stale server log it `cat`s), else the first `simulated …` line of the job log
/// (`exec $SERVEBENCH_SIM_CMD` recipes) or, for a multinode point run as one `srun` step per
/// role, of the frontend's log (`logs/workers/<node>_frontend_0.out`).
fn sim_description(dir: &Path, log: Option<&Path>) -> Option<String> {
    if let Ok(rd) = std::fs::read_dir(dir.join(crate::fleet_launch::LOG_DIR)) {
        let front = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.to_string_lossy().ends_with("_frontend_0.out"));
        if let Some(d) = front.as_deref().and_then(first_sim_line) {
            return Some(d);
        }
    }
    // the shim writes engine.json just after its server listens: give it a moment
    let shimmed = dir.join("shims").is_dir();
    for _ in 0..if shimmed { 20 } else { 1 } {
        if let Some(d) =
            shim::read_state::<shim::EngineLaunch>(dir, shim::ENGINE_FILE).and_then(|e| e.describe)
        {
            return Some(d);
        }
        if shimmed {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    log.and_then(first_sim_line)
}

/// Runs one attempt here (the job body). Returns the status (also written to `status.json`).
/// The process's stdout/stderr are the job log; `log_path` is that file (read back for the
/// simulator's description).
pub fn run_job(spec: &JobSpec, log_path: Option<&Path>) -> Result<JobStatus> {
    signal::install();
    let stdout = std::io::stdout();
    // one handle onto the job's stdout (the log): the children inherit it too
    let file = {
        use std::os::fd::AsFd;
        let fd = stdout
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| RunnerError::io("stdout", e))?;
        File::from(fd)
    };
    let mut log = Log { file };
    std::fs::create_dir_all(spec.dir.join("results")).map_err(|e| RunnerError::io(&spec.dir, e))?;
    let mut port = free_port()?;
    let mut st = JobStatus {
        ok: false,
        stage: Stage::Launch,
        interrupted: false,
        port,
        engine_pgid: None,
        ready_after_s: None,
        measure_exit: None,
        engine_gone: true,
        message: String::new(),
        sim_describe: None,
    };
    log_engine(spec, &mut log);
    if let EngineSpec::Recipe { sim: Some(_), .. } = &spec.engine {
        shim::install(
            &spec.dir.join("shims"),
            &spec.exe,
            &crate::recipe::sku(&spec.point.runner),
        )?;
        let _ = std::fs::remove_file(spec.dir.join(shim::ENGINE_FILE));
        let _ = std::fs::remove_file(spec.dir.join(shim::DONE_FILE));
    }
    let mut cmd = match engine_command(spec, port) {
        Ok(c) => c,
        Err(e) => {
            st.message = format!("the engine could not be started: {e}");
            log.line(&format!("ERROR: {}", st.message));
            write_status(&spec.dir, &st)?;
            return Ok(st);
        }
    };
    cmd.process_group(0).stdin(Stdio::null());
    let t0 = Instant::now();
    let mut engine: Child = cmd.spawn().map_err(|e| RunnerError::io("engine", e))?;
    let pgid = engine.id() as i32;
    st.engine_pgid = Some(pgid);
    let _ = std::fs::write(spec.dir.join("engine.pgid"), pgid.to_string());
    write_status(&spec.dir, &st)?;
    log.line(&format!(
        "engine started (pid {pgid}, process group {pgid}); waiting for http://127.0.0.1:{port}/health (up to {:.0} s)",
        spec.ready_timeout_s
    ));

    // ---- readiness ----
    st.stage = Stage::Readiness;
    let (ready, engine_exit) = wait_ready(spec, &mut engine, pgid, t0, &mut st, &mut log);
    port = st.port;
    let mut measured = false;
    if signal::interrupted() {
        st.interrupted = true;
        st.message = format!(
            "interrupted (signal {}) while waiting for the engine",
            signal::signal_number()
        );
        log.line(&st.message.clone());
    } else if !ready {
        st.message = match engine_exit {
            Some(s) => format!(
                "Process died before http://127.0.0.1:{port}/health became ready ({})",
                describe_exit(&s)
            ),
            None => format!(
                "Endpoint readiness timed out after {:.0} s: http://127.0.0.1:{port}/health never answered 200",
                spec.ready_timeout_s
            ),
        };
        log.line(&format!("ERROR: {}", st.message));
    } else {
        let secs = t0.elapsed().as_secs_f64();
        st.ready_after_s = Some(secs);
        log.line(&format!(
            "engine ready after {secs:.1} s on http://127.0.0.1:{port}"
        ));
        st.sim_describe = sim_description(&spec.dir, log_path);
        measured = measure(spec, &mut engine, pgid, port, &mut st, &mut log)?;
    }

    // ---- a real recipe under --simulate: its client step gets the outcome, its remaining
    // steps run (result files where it expects them) ----
    measured = recipe_tail(spec, &mut engine, measured, &mut st, &mut log);

    // ---- teardown, always ----
    let grace = Duration::from_secs_f64(spec.teardown_grace_s.max(0.0));
    let gone = signal::teardown_group(pgid, grace, || {
        let _ = engine.try_wait();
    });
    let _ = engine.try_wait();
    st.engine_gone = gone;
    if let EngineSpec::Recipe { path, .. } = &spec.engine {
        if let Some(root) = workspace::checkout_root(path) {
            let ws = spec.dir.join(workspace::DIR);
            let kept = workspace::prune(&root, &ws);
            log.line(&format!(
                "/workspace was {} ({kept} file(s) the recipe wrote kept; the checkout's copy removed)",
                ws.display()
            ));
        }
    }
    log.line(&format!(
        "engine process group {pgid} {}",
        if gone {
            "torn down"
        } else {
            "STILL ALIVE after SIGKILL"
        }
    ));
    if measured {
        st.ok = true;
        st.stage = Stage::Done;
    }
    write_status(&spec.dir, &st)?;
    Ok(st)
}

/// The job log's first lines: the GPUs given (`CUDA_VISIBLE_DEVICES`) and the engine run.
fn log_engine(spec: &JobSpec, log: &mut Log) {
    let p = &spec.point;
    if let Ok(g) = std::env::var("CUDA_VISIBLE_DEVICES") {
        log.line(&format!(
            "GPUs: CUDA_VISIBLE_DEVICES={g} ({} requested)",
            p.gpus()
        ));
    }
    match &spec.engine {
        EngineSpec::Recipe { path, .. } => log.line(&format!("Run bash {}", path.display())),
        EngineSpec::Simulator(s) => {
            let shape = match &s.fleet {
                Some(f) => format!(
                    "fleet: prefill {}, decode {}, router {}",
                    f.prefill, f.decode, f.router
                ),
                None => format!("TP{}", s.tp),
            };
            log.line(&format!(
                "engine: embedded simulator ({} × {}, {shape}){}",
                s.gpu,
                s.model,
                if s.notes.is_empty() {
                    String::new()
                } else {
                    format!("; {}", s.notes.join("; "))
                }
            ));
        }
    }
}

/// Waits until the engine answers `/health` on its port (the recipe's own port when its
/// shimmed launch names another: `st.port` follows it), dies, the timeout passes or a signal
/// arrives: (ready, the engine's exit status when it exited).
fn wait_ready(
    spec: &JobSpec,
    engine: &mut Child,
    pgid: i32,
    t0: Instant,
    st: &mut JobStatus,
    log: &mut Log,
) -> (bool, Option<ExitStatus>) {
    let mut port = st.port;
    let mut engine_exit: Option<ExitStatus> = None;
    let ready = loop {
        if signal::interrupted() {
            break false;
        }
        if engine_exit.is_none() {
            if let Ok(Some(s)) = engine.try_wait() {
                engine_exit = Some(s);
                if !s.success() {
                    break false;
                }
            }
        }
        if let Some(e) = shim::read_state::<shim::EngineLaunch>(&spec.dir, shim::ENGINE_FILE) {
            if e.args.port != port {
                log.line(&format!(
                    "the recipe's engine listens on port {} (not $PORT {port}): measuring it there",
                    e.args.port
                ));
                port = e.args.port;
                st.port = port;
            }
        }
        if health_ok(port) {
            break true;
        }
        if engine_exit.is_some() && !signal::group_alive(pgid) {
            break false;
        }
        if t0.elapsed().as_secs_f64() > spec.ready_timeout_s {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    (ready, engine_exit)
}

/// Runs the measurement (`servebench sweep`/`eval` against the ready engine, output in
/// measure.log, copied into the job log after): stopped on a signal, on the engine's death or
/// after the timeout; `st.message` says the outcome. Returns whether it measured.
fn measure(
    spec: &JobSpec,
    engine: &mut Child,
    pgid: i32,
    port: u16,
    st: &mut JobStatus,
    log: &mut Log,
) -> Result<bool> {
    let p = &spec.point;
    let mut measured = false;
    // ---- measure ----
    st.stage = Stage::Measure;
    write_status(&spec.dir, st)?;
    let args = measure_args(spec, port);
    let mlog_path = spec.dir.join("measure.log");
    log.line(&format!(
        "measuring: {} {} (output: {})",
        spec.exe.display(),
        args.iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" "),
        mlog_path.display()
    ));
    let mlog = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&mlog_path)
        .map_err(|e| RunnerError::io(&mlog_path, e))?;
    let mlog2 = mlog
        .try_clone()
        .map_err(|e| RunnerError::io(&mlog_path, e))?;
    let mut m = Command::new(&spec.exe)
        .args(&args)
        .current_dir(&spec.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(mlog))
        .stderr(Stdio::from(mlog2))
        .env("NO_COLOR", "1")
        .envs(spec.measure.data_env())
        .spawn()
        .map_err(|e| RunnerError::io(&spec.exe, e))?;
    let tm = Instant::now();
    let mut engine_died: Option<ExitStatus> = None;
    let mexit = loop {
        if let Ok(Some(s)) = m.try_wait() {
            break Some(s);
        }
        if signal::interrupted() {
            st.interrupted = true;
            break None;
        }
        if let Ok(Some(s)) = engine.try_wait() {
            if !s.success() || !signal::group_alive(pgid) {
                engine_died = Some(s);
                break None;
            }
        }
        if tm.elapsed().as_secs_f64() > spec.measure_timeout_s {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if mexit.is_none() {
        // stop the measurement (SIGINT: sweep keeps what it finished), then make sure
        unsafe {
            libc::kill(m.id() as i32, libc::SIGINT);
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = m.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = m.kill();
        let _ = m.wait();
    }
    st.measure_exit = mexit.and_then(|s| s.code());
    if engine_died.is_none() && !mexit.is_some_and(|s| s.success()) {
        // the measurement may have failed because the engine went away: look (briefly)
        for _ in 0..20 {
            if let Ok(Some(s)) = engine.try_wait() {
                if !s.success() || !signal::group_alive(pgid) {
                    engine_died = Some(s);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    if let Some(s) = engine_died {
        let what = describe_exit(&s);
        st.message = match s.signal() {
            Some(sig) if external_signal(sig) => format!(
                "the engine (pid {pgid}) was {what} from outside while the point was measured"
            ),
            _ => format!("Server process {pgid} died during benchmark ({what})"),
        };
        log.line(&format!("ERROR: {}", st.message));
    } else if st.interrupted {
        st.message = format!(
            "interrupted (signal {}) while measuring",
            signal::signal_number()
        );
        log.line(&st.message.clone());
    } else if mexit.is_none() {
        st.message = format!(
            "measurement timed out after {:.0} s (stopped)",
            spec.measure_timeout_s
        );
        log.line(&format!("ERROR: {}", st.message));
    } else {
        let code = st.measure_exit.unwrap_or(-1);
        // eval: 2 = below the threshold, a result all the same; sweep: 1 for a point that was
        // measured and stored but is not a valid InferenceX submission (the run rolls it up
        // as `invalid`)
        measured = code == 0
            || (p.eval_only && code == 2)
            || (!p.eval_only && code == 1 && stored_but_invalid(&spec.dir.join("point.db")));
        st.message = if measured {
            format!(
                "measured ({} exit {code})",
                if p.eval_only { "eval" } else { "sweep" }
            )
        } else {
            format!(
                "measurement failed: {} exited with {}",
                if p.eval_only { "eval gsm8k" } else { "sweep" },
                describe_exit(&mexit.unwrap())
            )
        };
        log.line(&st.message.clone());
    }
    // the measurement's own output, after the job's lines
    let _ = writeln!(
        log.file,
        "---- measurement output ({}) ----",
        mlog_path.display()
    );
    if let Ok(text) = std::fs::read_to_string(&mlog_path) {
        let _ = log.file.write_all(text.as_bytes());
    }
    let _ = writeln!(log.file, "---- end of measurement output ----");
    Ok(measured)
}

/// A real recipe under `--simulate`: its client step gets the measurement's outcome and its
/// remaining steps run (up to [`RECIPE_TAIL_S`]). Returns false when the recipe then failed or
/// never reached its client step (the point is not measured; `st.message` says why).
fn recipe_tail(
    spec: &JobSpec,
    engine: &mut Child,
    measured: bool,
    st: &mut JobStatus,
    log: &mut Log,
) -> bool {
    let p = &spec.point;
    let mut measured = measured;
    if let EngineSpec::Recipe { sim: Some(_), .. } = &spec.engine {
        let out_dir = spec.dir.join(if p.eval_only { "eval" } else { "sweep" });
        let done = shim::MeasureDone {
            ok: measured,
            message: st.message.clone(),
            out_dir,
        };
        if let Err(e) = shim::write_state(&spec.dir, shim::DONE_FILE, &done) {
            log.line(&format!("ERROR: {e}"));
        }
        let shimmed_engine = spec.dir.join(shim::ENGINE_FILE).is_file();
        if measured && shimmed_engine && !signal::interrupted() {
            log.line(&format!(
                "the recipe's client step gets the measurement's outcome; waiting up to {RECIPE_TAIL_S:.0} s for the recipe's remaining steps"
            ));
            let t = Instant::now();
            let exit = loop {
                if let Ok(Some(s)) = engine.try_wait() {
                    break Some(s);
                }
                if signal::interrupted() || t.elapsed().as_secs_f64() > RECIPE_TAIL_S {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            let reached_client = spec.dir.join(shim::CLIENT_FILE).is_file();
            match exit {
                // a recipe without `set -e` ends 0 after its client step failed to run
                // (`run_benchmark_serving: command not found`): InferenceX would find no result
                Some(s) if !reached_client => {
                    measured = false;
                    st.message = format!(
                        "the recipe ended ({}) without reaching its client step (benchmark_serving.py, aiperf or lm_eval): no result file where InferenceX expects one; its first error is in the job log",
                        describe_exit(&s)
                    );
                    log.line(&format!("ERROR: {}", st.message));
                }
                Some(s) if s.success() => {
                    log.line("the recipe finished its remaining steps (exit status 0)")
                }
                Some(s) => {
                    measured = false;
                    st.message = format!(
                        "the recipe failed after the measurement ({}); its first error is in the job log",
                        describe_exit(&s)
                    );
                    log.line(&format!("ERROR: {}", st.message));
                }
                None => log.line(&format!(
                    "the recipe was still running {RECIPE_TAIL_S:.0} s after the measurement: stopped with the engine"
                )),
            }
        }
    }
    measured
}

#[cfg(test)]
mod tests {
    /// Ports come from below the ephemeral range, skip one already bound, and none is found
    /// in an empty span.
    #[test]
    fn engine_ports_are_below_the_ephemeral_range_and_free() {
        let p = free_port().unwrap();
        let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
            .unwrap_or(32768);
        if low > 10_000 {
            assert!((10_000..low).contains(&p), "{p} not below {low}");
        }
        // a held port is skipped: the search moves on to the next one
        let held = std::net::TcpListener::bind(("0.0.0.0", p)).unwrap();
        let seed = u32::from(p - 10_000);
        let next = free_port_below(low.max(10_002), seed).unwrap();
        assert_ne!(next, p);
        drop(held);
        assert_eq!(free_port_below(10_000, 7), None);
        assert_eq!(free_port_below(9_000, 7), None);
    }

    use super::*;
    use crate::recipe::SimSetup;

    #[test]
    fn the_simulator_described_is_the_engine_the_recipe_started_not_a_stale_log_line() {
        // A real recipe cats /workspace/server.log, left by an earlier job's DeepSeek-R1
        // engine; this job's vllm shim serves Qwen3-8B (dsv4-fp8-mi300x-vllm was stored as
        // "serving DeepSeek-R1-0528").
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("shims")).unwrap();
        let log = dir.path().join("job.log");
        std::fs::write(
            &log,
            "+ cat /workspace/server.log\nsimulated 8× MI300X serving DeepSeek-R1-0528 FP8\n",
        )
        .unwrap();
        let mut l = shim::engine_launch(Engine::Vllm, &["m".to_string()]);
        l.describe = Some("simulated 8× MI300X serving Qwen3-8B".into());
        shim::write_state(dir.path(), shim::ENGINE_FILE, &l).unwrap();
        assert_eq!(
            sim_description(dir.path(), Some(&log)).as_deref(),
            Some("simulated 8× MI300X serving Qwen3-8B")
        );
        // a recipe that execs $SERVEBENCH_SIM_CMD: no engine.json, the log's line
        std::fs::remove_file(dir.path().join(shim::ENGINE_FILE)).unwrap();
        std::fs::remove_dir(dir.path().join("shims")).unwrap();
        assert_eq!(
            sim_description(dir.path(), Some(&log)).as_deref(),
            Some("simulated 8× MI300X serving DeepSeek-R1-0528 FP8")
        );
    }

    fn spec(traces: Option<&str>, duration_s: Option<f64>) -> JobSpec {
        let point = Point {
            id: "k_agentic_conc4".into(),
            image: "img".into(),
            conc: 4,
            exp_name: "x".into(),
            recipe_fingerprint: "f".into(),
            ..crate::plan::scenario_point()
        };
        JobSpec {
            point,
            attempt: 1,
            dir: PathBuf::from("/r/p/attempt-1"),
            runner: "b200-nscale-slurm_00".into(),
            exe: PathBuf::from("/bin/servebench"),
            engine: EngineSpec::Recipe {
                path: PathBuf::from("/r/recipe.sh"),
                sim: None::<SimSetup>,
            },
            measure: MeasureSpec {
                traces: traces.map(PathBuf::from),
                duration_s,
                ..MeasureSpec::default()
            },
            ready_timeout_s: 1.0,
            teardown_grace_s: 1.0,
            measure_timeout_s: 1.0,
            slurm_nodes: None,
        }
    }

    fn flag<'a>(a: &'a [String], k: &str) -> Option<&'a str> {
        a.iter().position(|x| x == k).map(|i| a[i + 1].as_str())
    }

    #[test]
    fn a_simulated_recipe_is_measured_with_the_engine_it_launched() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(None, None);
        s.dir = dir.path().to_path_buf();
        s.point.framework = "vllm".into();
        s.engine = EngineSpec::Recipe {
            path: PathBuf::from("/r/recipe.sh"),
            sim: Some(SimSetup {
                gpu: "h200".into(),
                model: "qwen3-8b".into(),
                tp: 1,
                notes: vec![],
                speedup: None,
                slowdown: None,
                fleet: None,
                clock: None,
            }),
        };
        // before the launch: the catalog framework's profile
        assert_eq!(flag(&measure_args(&s, 1), "--engine"), Some("vllm"));
        // the recipe launched SGLang (the simulator then serves sglang: series)
        let l = shim::engine_launch(Engine::Sglang, &["--model-path".into(), "/m".into()]);
        shim::write_state(dir.path(), shim::ENGINE_FILE, &l).unwrap();
        assert_eq!(flag(&measure_args(&s, 1), "--engine"), Some("sglang"));
    }

    #[test]
    fn a_shimmed_recipe_launch_is_measured_on_the_virtual_clock_with_its_limits() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(Some("/t/traces"), Some(900.0));
        s.dir = dir.path().to_path_buf();
        let sim = SimSetup {
            gpu: "b200".into(),
            model: "qwen3-8b".into(),
            tp: 8,
            notes: vec![],
            speedup: None,
            slowdown: None,
            clock: None,
            fleet: None,
        };
        s.engine = EngineSpec::Recipe {
            path: PathBuf::from("/r/recipe.sh"),
            sim: Some(sim.clone()),
        };
        // no shimmed launch (a recipe running $SERVEBENCH_SIM_CMD): its own process, over TCP
        let a = measure_args(&s, 4321);
        assert_eq!(flag(&a, "--endpoint"), Some("http://127.0.0.1:4321"));
        assert_eq!(flag(&a, "--sim-clock"), None);
        // the recipe's SGLang launch, shimmed: the sweep embeds that engine
        let mut l = shim::engine_launch(
            Engine::Sglang,
            &[
                "--model-path".into(),
                "Qwen/Qwen3.5-397B-A17B-FP8".into(),
                "--context-length".into(),
                "262144".into(),
                "--max-running-requests".into(),
                "128".into(),
            ],
        );
        l.describe = Some("simulated".into());
        shim::write_state(dir.path(), shim::ENGINE_FILE, &l).unwrap();
        let a = measure_args(&s, 4321);
        assert_eq!(flag(&a, "--endpoint"), None, "{a:?}");
        assert_eq!(flag(&a, "--sim-clock"), Some("virtual"));
        assert_eq!(flag(&a, "--sim-gpu"), Some("b200"));
        assert_eq!(flag(&a, "--sim-max-running-requests"), Some("128"));
        assert_eq!(flag(&a, "--sim-context-length"), Some("262144"));
        assert_eq!(
            flag(&a, "--sim-served-name"),
            Some("Qwen/Qwen3.5-397B-A17B-FP8")
        );
        assert_eq!(flag(&a, "--engine"), Some("sglang"));
        assert_eq!(flag(&a, "--duration"), Some("900"));
        // --sim-clock wall keeps the TCP path
        s.engine = EngineSpec::Recipe {
            path: PathBuf::from("/r/recipe.sh"),
            sim: Some(SimSetup {
                clock: Some(SimClock::Wall),
                ..sim.clone()
            }),
        };
        assert_eq!(flag(&measure_args(&s, 4321), "--sim-clock"), None);
        assert_eq!(
            shim_env(
                &s,
                Path::new("/r/recipe.sh"),
                &SimSetup {
                    clock: Some(SimClock::Wall),
                    ..sim.clone()
                }
            )
            .iter()
            .find(|(k, _)| k == shim::ENV_CLOCK)
            .map(|(_, v)| v.as_str()),
            Some("wall")
        );
        assert_eq!(
            shim_env(&s, Path::new("/r/recipe.sh"), &sim)
                .iter()
                .find(|(k, _)| k == shim::ENV_CLOCK)
                .map(|(_, v)| v.as_str()),
            Some("virtual")
        );
        // an eval job is never virtual (its client is reqwest over TCP)
        s.engine = EngineSpec::Recipe {
            path: PathBuf::from("/r/recipe.sh"),
            sim: Some(sim),
        };
        s.point.eval_only = true;
        assert_eq!(flag(&measure_args(&s, 4321), "--sim-clock"), None);
    }

    #[test]
    fn agentic_point_with_traces_is_an_agentx_sweep() {
        let a = measure_args(&spec(Some("/t/traces"), Some(20.0)), 8000);
        assert_eq!(a[0], "sweep");
        assert_eq!(flag(&a, "--scenario"), Some("agentx"));
        assert_eq!(flag(&a, "--traces"), Some("/t/traces"));
        assert_eq!(flag(&a, "--duration"), Some("20"));
        assert_eq!(flag(&a, "--conc"), Some("4"));
        for f in ["--isl", "--osl", "--num-prompts", "--warmups"] {
            assert_eq!(flag(&a, f), None, "{f} with an AgentX replay: {a:?}");
        }
        // without --duration: the catalog point's window
        let a = measure_args(&spec(Some("/t/traces"), None), 8000);
        assert_eq!(flag(&a, "--duration"), Some("3600"));
        let s = spec(Some("/t/traces"), None);
        let note = s.measure.agentic_note(&s.point).unwrap();
        assert!(
            note.contains("AgentX trace replay of /t/traces for 3600 s"),
            "{note}"
        );
        // no offload: no KV-offload flags (rows keep their bytes)
        assert_eq!(flag(&a, "--kv-offloading"), None);
        // a DRAM arm: the sweep records the mode, the backend and the budget (issue 27)
        let mut s = spec(Some("/t/traces"), None);
        if let Workload::Agentic {
            kv_offloading,
            total_cpu_dram_gb,
            kv_offload_backend,
            ..
        } = &mut s.point.workload
        {
            *kv_offloading = "dram".into();
            *total_cpu_dram_gb = 2399;
            *kv_offload_backend = Some(r#"{"name":"hicache"}"#.into());
        }
        let a = measure_args(&s, 8000);
        assert_eq!(flag(&a, "--kv-offloading"), Some("dram"));
        assert_eq!(
            flag(&a, "--kv-offload-backend"),
            Some(r#"{"name":"hicache"}"#)
        );
        assert_eq!(flag(&a, "--total-cpu-dram-gb"), Some("2399"));
    }

    #[test]
    fn agentic_point_without_traces_is_the_fixed_sequence_stand_in() {
        let s = spec(None, None);
        let a = measure_args(&s, 8000);
        assert_eq!(flag(&a, "--scenario"), None);
        assert_eq!(flag(&a, "--traces"), None);
        assert_eq!(flag(&a, "--isl"), Some("1024"));
        let note = s.measure.agentic_note(&s.point).unwrap();
        assert!(
            note.contains("fixed-sequence stand-in at 1024/1024"),
            "{note}"
        );
        // eval jobs and fixed-sequence points have no note and no agentx flags
        let mut e = spec(Some("/t"), None);
        e.point.eval_only = true;
        assert!(e.measure.agentic_note(&e.point).is_none());
        assert_eq!(flag(&measure_args(&e, 1), "--scenario"), None);
        let mut f = spec(Some("/t"), None);
        f.point.workload = Workload::Fixed {
            isl: 8192,
            osl: 1024,
        };
        assert!(f.measure.agentic_note(&f.point).is_none());
        assert_eq!(flag(&measure_args(&f, 1), "--scenario"), None);
    }
}
