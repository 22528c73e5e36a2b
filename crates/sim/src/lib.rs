//! Simulator: an OpenAI-compatible server whose timing comes from a model of a named GPU
//! serving a named model with continuous batching.
//!
//! Owns: the hardware/model presets, the step-cost model, the continuous-batching scheduler in
//! modelled time, and the HTTP server that plays it back in wall time.
//! Must not know about: the client, metrics, the store, GSM8K or any other dataset. Content for
//! known prompts comes from an [`AnswerBook`] supplied by the caller (the pipeline hands it the
//! GSM8K one from `eval`). Who starts it is the caller's: `servebench-endpoint` for sweep, replay
//! and eval, the binary's `servebench sim` command for a standalone server.
//!
//! Layers, bottom up: [`presets`] (GPU/model/engine numbers from `presets.json`) →
//! [`model`] (the cost of one engine step) → [`engine`] (continuous-batching scheduler in
//! modelled time; [`closed_loop::simulate_closed_loop`] runs a workload without any I/O) →
//! `runtime` (one OS thread maps modelled time to wall time; on the virtual clock a tokio task
//! sleeps each step's modelled duration on the paused clock) → `server` (hyper HTTP/1.1:
//! `/v1/completions`, `/v1/chat/completions`, `/v1/models`, `/health`, `/metrics`, `/tokenize`,
//! `/detokenize`, `/reset_prefix_cache`). Formulas and the published numbers they are checked against:
//! docs/simulator.md.
//! [`validate`] holds the presets against real InferenceX results (`servebench sim validate`),
//! [`plausibility`] sets a prediction beside a measured point for the reports.
//!
//! Clocks ([`SimClock`], `--sim-clock`): on the wall clock the server listens on TCP and the
//! engine thread plays modelled time back ÷ speedup. On the virtual clock nothing touches the OS
//! clock or a socket: the caller runs it on a current-thread tokio runtime whose clock is paused
//! (`start_paused`), connects with [`SimServer::connect_memory`] (an in-memory pipe served by the
//! same hyper code), and the engine is a task sleeping each step's modelled end on that clock,
//! which runs [`VIRTUAL_SPEEDUP`] × modelled speed (tokio's timer ticks are 1 ms: 1 µs modelled).
//! Time then advances only when every task waits, so a run costs only the CPU of its events, and
//! the same inputs give the same bytes (response ids and `created` are fixed too).
//!
//! Errors: configuring and starting return [`SimError`] (one variant per failure kind, one line
//! naming the preset, flag, file or address); request errors are HTTP answers (`api`).
#![warn(missing_docs)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub use servebench_contracts::SimClock;

pub mod api;
pub mod closed_loop;
pub mod disagg;
pub mod emission;
pub mod engine;
pub mod error;
pub mod fleet;
pub mod fleet_spec;
pub mod host_kv;
pub mod model;
mod overrides;
pub mod plan;
pub mod plausibility;
pub mod power;
pub mod power_fit;
mod prefix_cache;
pub mod presets;
mod runtime;
pub mod sched;
mod server;
pub mod text;
pub mod validate;
pub mod validate_disagg;
pub mod validate_energy;
pub mod validate_plot;
mod wire;

pub use closed_loop::{simulate_closed_loop, SimSummary, Workload};
pub use emission::EmissionRecord;
pub use error::SimError;
pub use model::{EngineConfig, MetricsDialect};
pub use overrides::EngineOverrides;
pub use presets::Presets;

/// Supplies the text the simulator streams for a prompt it recognises.
///
/// `prompt` is the completions prompt, or for chat the content of the last user message.
/// Returns `None` for unknown prompts (the simulator then streams generic text).
pub trait AnswerBook: Send + Sync + 'static {
    /// The full response text for this prompt, if known.
    fn answer(&self, prompt: &str) -> Option<String>;
}

/// How to start a [`SimServer`].
#[derive(Clone)]
pub struct SimOptions {
    /// GPU preset (key or alias, e.g. "h200"; see `presets.json`).
    pub gpu: String,
    /// Model preset (key, alias or served name, e.g. "qwen3-8b").
    pub model: String,
    /// Address to bind.
    pub host: IpAddr,
    /// Port to bind; 0 = a free port chosen by the OS.
    pub port: u16,
    /// Tensor-parallel degree (1–8).
    pub tp: u32,
    /// Wall-clock time = modelled time / speedup (> 0).
    pub speedup: f64,
    /// Emit every token as fast as possible, with no engine model (client ceiling benchmarks).
    pub zero_delay: bool,
    /// Planted regression: every modelled step takes this many times longer
    /// ([`EngineConfig::slowdown`]; `--sim-slowdown F`, > 0; 1.0 = none).
    pub slowdown: f64,
    /// Wall clock (TCP listener, engine thread, OS time) or virtual clock (in-memory
    /// connections, engine task on the runtime's paused clock; `speedup` is then
    /// [`VIRTUAL_SPEEDUP`] whatever is given, and `host`/`port` are not used).
    pub clock: SimClock,
    /// Text for prompts it knows.
    pub answers: Option<Arc<dyn AnswerBook>>,
    /// JSONL file, one [`EmissionRecord`] per finished request (created or truncated).
    pub emission_log: Option<PathBuf>,
    /// The served model's tokenizer (`tokenizer.json` or its directory): prompt tokens (usage,
    /// context limit, prefix-cache blocks) are counted with it. Without it a prompt token is a
    /// whitespace-separated word (about 4 characters of English/code text; the chat prompt is
    /// rendered with a ChatML-style template first).
    pub tokenizer: Option<PathBuf>,
    /// An engine's own launch limits on top of the presets (max running requests, context
    /// length, served name, `/metrics` dialect), applied by [`SimServer::start`].
    pub overrides: EngineOverrides,
    /// KV offload: a host-DRAM tier of this many GB ([`host_kv`]; `--kv-offloading dram
    /// --total-cpu-dram-gb GB`); `None`: GPU memory only. Used by [`SimServer::start`].
    pub host_kv_dram_gb: Option<f64>,
    /// A disaggregated fleet instead of one engine of `tp` (issue 32; `sweep --sim-prefill …`):
    /// [`SimServer::start`] builds it from `gpu`/`model` with `overrides` on every engine and
    /// serves it as [`SimServer::start_fleet`] does, on either clock. `None`: one engine.
    pub fleet: Option<fleet_spec::FleetSpec>,
}

impl Default for SimOptions {
    /// gpu "h200", model "qwen3-8b", 127.0.0.1, port 0, TP 1, speedup 1.0, timed, no answers,
    /// no log file.
    fn default() -> Self {
        SimOptions {
            gpu: "h200".into(),
            model: "qwen3-8b".into(),
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            tp: 1,
            speedup: 1.0,
            zero_delay: false,
            slowdown: 1.0,
            clock: SimClock::Wall,
            answers: None,
            emission_log: None,
            tokenizer: None,
            overrides: EngineOverrides::default(),
            host_kv_dram_gb: None,
            fleet: None,
        }
    }
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("gpu", &self.gpu)
            .field("model", &self.model)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tp", &self.tp)
            .field("speedup", &self.speedup)
            .field("zero_delay", &self.zero_delay)
            .field("slowdown", &self.slowdown)
            .field("clock", &self.clock)
            .field("answers", &self.answers.as_ref().map(|_| "AnswerBook"))
            .field("emission_log", &self.emission_log)
            .field("overrides", &self.overrides)
            .field("host_kv_dram_gb", &self.host_kv_dram_gb)
            .field("fleet", &self.fleet)
            .finish()
    }
}

/// The virtual clock's time scale: modelled seconds per second of the runtime's (paused)
/// clock. tokio's timer rounds every deadline up to a whole millisecond, so the virtual clock
/// runs 1,000× slower than modelled time and a tick is 1 µs modelled; results are scaled back
/// by it like a wall-clock speedup.
pub const VIRTUAL_SPEEDUP: f64 = 1e-3;

/// Base URL of a simulator on the virtual clock (`.invalid` never resolves: there is no socket;
/// clients reach it with [`SimServer::connect_memory`]).
pub const VIRTUAL_BASE_URL: &str = "http://virtual-clock.simulator.invalid";

/// Where the engine loop runs.
enum EngineLoop {
    Thread(std::thread::JoinHandle<()>),
    Task(tokio::task::JoinHandle<()>),
}

/// A running simulator: bound and serving from the moment [`SimServer::start`] returns until
/// [`SimServer::shutdown`] (or drop, which stops it without waiting).
pub struct SimServer {
    addr: SocketAddr,
    clock: SimClock,
    speedup: f64,
    describe: String,
    state: Arc<server::AppState>,
    shutdown_tx: tokio::sync::watch::Sender<bool>,
    accept: Option<tokio::task::JoinHandle<()>>,
    engine: Option<EngineLoop>,
    engine_stop: Arc<AtomicBool>,
}

impl SimServer {
    /// Resolves the presets and starts serving on `opts.host:opts.port` (wall clock), or in
    /// memory ([`SimServer::connect_memory`], virtual clock). Must be called inside a tokio
    /// runtime (it spawns the accept loop there; the engine loop gets its own thread on the wall
    /// clock, a task on the virtual one, which needs a current-thread runtime with a paused
    /// clock for its results to be reproducible).
    ///
    /// Errors (one line each, [`SimError`]): unknown GPU/model, bad TP, model not fitting,
    /// speedup not a positive number, emission log not creatable, address not bindable,
    /// tokenizer not loadable.
    pub async fn start(opts: SimOptions) -> Result<SimServer, SimError> {
        if let Some(spec) = &opts.fleet {
            let f = spec.build(&opts.gpu, &opts.model, |c| opts.overrides.apply(c))?;
            return Self::start_fleet(opts, f).await;
        }
        let mut cfg = EngineConfig::from_presets(&opts.gpu, &opts.model, opts.tp)?;
        opts.overrides.apply(&mut cfg);
        if let Some(gb) = opts.host_kv_dram_gb {
            cfg.set_host_kv(gb)?;
        }
        Self::start_with_config(opts, cfg).await
    }

    /// Like [`SimServer::start`] but with an explicit (possibly modified) engine configuration;
    /// `opts.gpu`, `opts.model` and `opts.tp` are ignored; `opts.slowdown` multiplies the
    /// configuration's own [`EngineConfig::slowdown`].
    pub async fn start_with_config(
        opts: SimOptions,
        cfg: EngineConfig,
    ) -> Result<SimServer, SimError> {
        Self::start_inner(opts, cfg, None).await
    }

    /// Like [`SimServer::start`] but serving a disaggregated fleet (issue 32): prefill and
    /// decode workers as separate engines with KV transfer between them
    /// ([`disagg::FleetConfig`], [`fleet::Fleet`]); `opts.gpu`/`model`/`tp` are not used.
    /// Requests are checked against (and `/metrics` describe) the prefill workers'
    /// configuration; `opts.slowdown` applies to every engine.
    pub async fn start_fleet(
        opts: SimOptions,
        mut fleet: disagg::FleetConfig,
    ) -> Result<SimServer, SimError> {
        if !(opts.slowdown.is_finite() && opts.slowdown > 0.0) {
            return Err(SimError::Slowdown {
                slowdown: opts.slowdown,
            });
        }
        let slow = |c: &mut Arc<EngineConfig>| Arc::make_mut(c).slowdown *= opts.slowdown;
        slow(&mut fleet.prefill);
        if let Some(d) = &mut fleet.decode {
            slow(d);
        }
        let cfg = (*fleet.prefill).clone();
        // already applied to every engine of the fleet
        let opts = SimOptions {
            slowdown: 1.0,
            ..opts
        };
        Self::start_inner(opts, cfg, Some(Arc::new(fleet))).await
    }

    async fn start_inner(
        opts: SimOptions,
        mut cfg: EngineConfig,
        fleet: Option<Arc<disagg::FleetConfig>>,
    ) -> Result<SimServer, SimError> {
        let virt = opts.clock == SimClock::Virtual;
        let speedup = if virt { VIRTUAL_SPEEDUP } else { opts.speedup };
        if !(speedup.is_finite() && speedup > 0.0) {
            return Err(SimError::Speedup { speedup });
        }
        if !(opts.slowdown.is_finite() && opts.slowdown > 0.0) {
            return Err(SimError::Slowdown {
                slowdown: opts.slowdown,
            });
        }
        cfg.slowdown *= opts.slowdown;
        let cfg = Arc::new(cfg);
        let emission = Arc::new(emission::EmissionSink::new(opts.emission_log.as_deref())?);
        let (listener, addr) = if virt {
            (None, SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0))
        } else {
            let bind = SocketAddr::new(opts.host, opts.port);
            let listener = listen(bind).map_err(|error| SimError::Listen { addr: bind, error })?;
            let addr = listener.local_addr().map_err(SimError::LocalAddr)?;
            (Some(listener), addr)
        };
        let stats = Arc::new(runtime::Stats::default());
        let engine_stop = Arc::new(AtomicBool::new(false));
        let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
        let (engine_tx, engine) = if opts.zero_delay {
            (None, None)
        } else {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let (c, s, stop) = (cfg.clone(), stats.clone(), engine_stop.clone());
            let f = fleet.clone();
            let h = if virt {
                EngineLoop::Task(tokio::spawn(runtime::run_engine_virtual(
                    c,
                    f,
                    speedup,
                    s,
                    shutdown_rx.clone(),
                    rx,
                )))
            } else {
                EngineLoop::Thread(
                    std::thread::Builder::new()
                        .name("sim-engine".into())
                        .spawn(move || runtime::run_engine(c, f, speedup, s, stop, rx))
                        .map_err(SimError::EngineThread)?,
                )
            };
            (Some(tx), Some(h))
        };
        // response ids: unique per server on the wall clock, the same every run on the virtual
        let salt = if virt {
            0x5eed_0000_0000_0029
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
                ^ ((addr.port() as u64) << 48)
        };
        let tokenizer = match &opts.tokenizer {
            Some(p) => Some(Arc::new(servebench_workload::LocalTokenizer::from_path(p)?)),
            None => None,
        };
        let state = Arc::new(server::AppState {
            cfg: cfg.clone(),
            tokenizer,
            zero_delay: opts.zero_delay,
            speedup,
            virtual_clock: virt,
            answers: opts.answers.clone(),
            engine_tx,
            stats,
            emission,
            epoch: server::now(),
            id_seq: AtomicU64::new(0),
            id_salt: salt,
            created: if virt { 0 } else { server::unix_now() },
            shutdown: shutdown_rx.clone(),
            body_gate: virt.then(|| tokio::sync::Semaphore::new(1)),
        });
        let accept = listener.map(|l| tokio::spawn(server::serve(l, state.clone(), shutdown_rx)));
        let mode = if opts.zero_delay {
            "zero-delay (no engine model: every token at once)".to_string()
        } else if virt {
            "virtual clock (discrete-event: modelled time, independent of the host)".to_string()
        } else {
            format!("speedup ×{}", opts.speedup)
        };
        // A planted regression is said wherever the simulator is described (run metadata,
        // the sweep's header), so a slowed run is never mistaken for the preset's engine.
        let mode = if cfg.slowdown != 1.0 {
            format!("{mode}, planted slowdown ×{} (every step)", cfg.slowdown)
        } else {
            mode
        };
        let describe = match &fleet {
            Some(f) => format!("{}; {}, {mode}", f.describe(), cfg.describe()),
            None => format!("{}, {mode}", cfg.describe()),
        };
        Ok(SimServer {
            addr,
            clock: opts.clock,
            speedup,
            describe,
            state,
            shutdown_tx,
            accept,
            engine,
            engine_stop,
        })
    }

    /// The bound address (`0.0.0.0:0` on the virtual clock: nothing is bound).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// "http://HOST:PORT" ([`VIRTUAL_BASE_URL`] on the virtual clock).
    pub fn base_url(&self) -> String {
        match self.clock {
            SimClock::Wall => format!("http://{}", self.addr),
            SimClock::Virtual => VIRTUAL_BASE_URL.to_string(),
        }
    }

    /// The clock it runs on.
    pub fn clock(&self) -> SimClock {
        self.clock
    }

    /// Modelled seconds per second of the serving clock: the given speedup on the wall clock,
    /// [`VIRTUAL_SPEEDUP`] on the virtual one.
    pub fn speedup(&self) -> f64 {
        self.speedup
    }

    /// Opens an in-memory connection: the client's end of a `tokio::io::duplex` pipe (16 KiB
    /// each way) whose other end is served by a task running the same HTTP/1.1 code as a TCP
    /// connection (the virtual clock's transport; it works on the wall clock too). Must be
    /// called inside the server's runtime.
    ///
    /// Errors: the server is shutting down (`ConnectionRefused`).
    pub fn connect_memory(&self) -> std::io::Result<tokio::io::DuplexStream> {
        server::connect_memory(&self.state)
    }

    /// A function opening [`SimServer::connect_memory`] connections that stays valid as long as
    /// the server (it holds the server's state, not the server).
    pub fn memory_dialer(
        &self,
    ) -> impl Fn() -> std::io::Result<tokio::io::DuplexStream> + Send + Sync + 'static {
        let st = self.state.clone();
        move || server::connect_memory(&st)
    }

    /// One line: "simulated 1× H200 SXM 141GB (TP1; …) serving Qwen3-8B (…); KV budget …,
    /// speedup ×N".
    pub fn describe(&self) -> String {
        self.describe.clone()
    }

    /// How prompt tokens are counted: `tokenizer <path>` or whitespace-separated words; and
    /// that KV prefix caching is on.
    pub fn token_counting(&self) -> String {
        match &self.state.tokenizer {
            Some(t) => format!(
                "prompt tokens counted with tokenizer {}; KV prefix caching on",
                t.path().display()
            ),
            None => "prompt tokens counted as whitespace-separated words (no --tokenizer); KV prefix caching on".to_string(),
        }
    }

    /// The resolved engine configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.state.cfg
    }

    /// The instant that `*_ns` fields of [`EmissionRecord`] count from.
    /// (On the virtual clock, an instant of the paused clock.)
    pub fn epoch(&self) -> Instant {
        self.state.epoch
    }

    /// In-memory copy of the emission log (first 1,000,000 records; the file keeps all).
    pub fn emission_log(&self) -> Vec<EmissionRecord> {
        self.state.emission.snapshot()
    }

    fn signal_stop(&self) {
        let _ = self.shutdown_tx.send(true);
        self.engine_stop.store(true, Ordering::Relaxed);
        if let Some(tx) = &self.state.engine_tx {
            let _ = tx.send(runtime::Msg::Stop);
        }
    }

    /// Stops accepting, aborts requests still generating (their streams end without
    /// `[DONE]`), closes connections (waiting 2 s at most), stops the engine thread and flushes
    /// the emission log.
    pub async fn shutdown(mut self) {
        self.signal_stop();
        if let Some(a) = self.accept.take() {
            let _ = a.await;
        }
        match self.engine.take() {
            Some(EngineLoop::Thread(h)) => {
                let _ = tokio::task::spawn_blocking(move || h.join()).await;
            }
            Some(EngineLoop::Task(h)) => {
                let _ = h.await;
            }
            None => {}
        }
        self.state.emission.flush();
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

/// Accept-queue length asked of the kernel. Linux clamps it to `net.core.somaxconn` (4096 on
/// recent kernels), so this means "the largest the kernel allows".
const LISTEN_BACKLOG: u32 = 65_535;

/// Binds `bind` with `SO_REUSEADDR` and listens with [`LISTEN_BACKLOG`] instead of the 128 that
/// `tokio::net::TcpListener::bind` (mio) uses: a client opening 10,000 connections at once would
/// otherwise overflow the accept queue and wait for SYN retransmits (1 s, 3 s, 7 s …), which shows
/// up as connect time and TTFT that belong to the simulator, not to the engine it models.
///
/// Errors: the socket cannot be created, bound or put in listening state (the OS error).
fn listen(bind: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let sock = if bind.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    sock.bind(bind)?;
    let listener = sock.listen(LISTEN_BACKLOG)?;
    // Kernel receive timestamps on the listener too: accepted sockets inherit the flag from
    // birth, and the kernel keeps its global timestamping switch on for as long as one socket
    // asks for it. With the flag only on accepted sockets, the switch went off whenever the last
    // of them closed and came back only after a deferred re-enable, so requests on the next
    // fresh connections arrived unstamped (no `request_arrived_ns`: 0–7 % of a run's requests,
    // in one ~10 ms window, in docs/benchmarks-client.md Update 7).
    #[cfg(target_os = "linux")]
    if let Err(e) = crate::wire::rx::enable(std::os::fd::AsRawFd::as_raw_fd(&listener)) {
        tracing::debug!("SO_TIMESTAMPNS on the listener: {e}");
    }
    Ok(listener)
}

#[cfg(test)]
mod listen_tests {
    use super::*;
    use std::time::Duration;

    /// 1,000 connects at once to a listener that accepts nothing must all complete at once: with
    /// the default backlog of 128 the ones past the accept queue wait for a SYN retransmit (≥ 1 s).
    #[tokio::test]
    async fn backlog_holds_1000_simultaneous_connects() {
        const N: usize = 1_000;
        let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(usize::MAX);
        if somaxconn < N {
            // skipped, or a failure under SERVEBENCH_REQUIRE_SERVICES=1
            servebench_testkit::skip_or_fail(&format!(
                "net.core.somaxconn is {somaxconn} < {N} (sysctl -w net.core.somaxconn=4096)"
            ));
            return;
        }
        // 1,000 client sockets: raise this process's open-file limit (up to its hard limit)
        let want = (N + 100) as libc::rlim_t;
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit write/read the one rlimit struct passed
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < want {
                lim.rlim_cur = want.min(lim.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            }
        }
        if lim.rlim_cur < want {
            servebench_testkit::skip_or_fail(&format!(
                "open-file limit {} (hard {}) below {want}",
                lim.rlim_cur, lim.rlim_max
            ));
            return;
        }
        let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..N {
            set.spawn(async move {
                tokio::time::timeout(
                    Duration::from_millis(800),
                    tokio::net::TcpStream::connect(addr),
                )
                .await
            });
        }
        let (mut ok, mut timed_out, mut failed) = (0, 0, 0);
        let mut held = Vec::with_capacity(N);
        while let Some(r) = set.join_next().await {
            match r.unwrap() {
                Ok(Ok(s)) => {
                    ok += 1;
                    held.push(s);
                }
                Ok(Err(_)) => failed += 1,
                Err(_) => timed_out += 1,
            }
        }
        assert_eq!(
            (ok, timed_out, failed),
            (N, 0, 0),
            "connects (ok, timed out after 800 ms, failed) to a listener that accepts nothing"
        );
        drop(listener);
    }
}
