//! The real-time engine loop: one OS thread runs the [`Engine`] step by step, sleeping until
//! each step's modelled end maps to wall time (`wall = anchor + (t_model − t_anchor) / speedup`),
//! then publishes the step's tokens to the requests' shared cells and wakes their response
//! bodies.
//!
//! A dedicated thread rather than a tokio task because tokio's timer has 1 ms granularity and
//! steps at a speedup of 10–50 last 0.1–1 ms of wall time; `thread::sleep` is accurate to tens
//! of µs. When the loop falls behind the wall clock by less than [`MAX_CATCH_UP`] (a hiccup of a
//! loaded machine) it runs the next steps without sleeping until it has caught up, so the
//! modelled timeline keeps its anchor; further behind (an overloaded machine) it re-anchors,
//! i.e. modelled time dilates; the dilation is exported as `servebench_sim_lag_seconds_total`.
//!
//! On the virtual clock ([`run_engine_virtual`]) the same loop is a tokio task on a runtime
//! whose clock is paused: it sleeps until each step's modelled end (÷ the virtual speedup) with
//! `tokio::time::sleep_until`, which completes exactly there once every other task waits, so it
//! is never late and nothing depends on the host.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use tokio::sync::mpsc::{error::TryRecvError, UnboundedReceiver};

use crate::engine::{Emit, SeqSpec};
use crate::model::EngineConfig;
use crate::sched::Sched;

/// Request still generating.
pub(crate) const RUNNING: u8 = 0;
/// All tokens published.
pub(crate) const FINISHED: u8 = 1;
/// The engine stopped (server shutdown) before the request finished.
pub(crate) const ABORTED: u8 = 2;

/// State shared between the engine thread and one request's response body.
pub(crate) struct ReqShared {
    /// Tokens generated so far (published at each step's wall-clock end).
    pub ready: AtomicU32,
    /// [`RUNNING`], [`FINISHED`] or [`ABORTED`].
    pub state: AtomicU8,
    /// Set by the HTTP side when the client went away; the engine then drops the sequence.
    pub cancelled: AtomicBool,
    /// Prompt tokens its admission found in the prefix cache (published with the tokens;
    /// `u32::MAX` = unknown: zero-delay mode has no cache).
    pub cached: AtomicU32,
    /// Wakes the response body.
    pub waker: AtomicWaker,
    /// The latest the engine loop published any of this request's steps after their
    /// wall-clock target, ns (a loaded host wakes the loop late: the client then sees the
    /// step late, × the speedup in modelled time). Written to the emission log.
    pub late_ns: AtomicU64,
}

impl ReqShared {
    pub(crate) fn new() -> Self {
        ReqShared {
            ready: AtomicU32::new(0),
            state: AtomicU8::new(RUNNING),
            cancelled: AtomicBool::new(false),
            cached: AtomicU32::new(0),
            waker: AtomicWaker::new(),
            late_ns: AtomicU64::new(0),
        }
    }

    /// A request whose tokens are all available at once (zero-delay mode).
    pub(crate) fn completed(n: u32) -> Self {
        let s = Self::new();
        s.ready.store(n, Ordering::Relaxed);
        s.state.store(FINISHED, Ordering::Relaxed);
        s.cached.store(u32::MAX, Ordering::Relaxed);
        s
    }

    /// `usage.prompt_tokens_details` as JSON text (`,"prompt_tokens_details":{…}`, vLLM's
    /// shape), empty when unknown. Read after the last token was published.
    pub(crate) fn usage_details(&self) -> String {
        match self.cached.load(Ordering::Acquire) {
            u32::MAX => String::new(),
            c => format!(",\"prompt_tokens_details\":{{\"cached_tokens\":{c}}}"),
        }
    }
}

/// A request handed to the engine thread.
pub(crate) struct Submission {
    pub shared: Arc<ReqShared>,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// When the HTTP layer received it.
    pub arrival: Instant,
    /// Chain hashes of the prompt's full KV blocks (prefix caching).
    pub prefix_hashes: Vec<u64>,
}

/// Messages to the engine thread.
pub(crate) enum Msg {
    Submit(Submission),
    /// `POST /reset_prefix_cache`: answered with [`crate::engine::Engine::reset_prefix_cache`]'s result.
    ResetPrefixCache(tokio::sync::oneshot::Sender<Result<usize, usize>>),
    Stop,
}

/// Gauges and counters shared with `/metrics`.
#[derive(Default)]
pub(crate) struct Stats {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub kv_used_blocks: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub preemptions: AtomicU64,
    pub prefix_cache_queries: AtomicU64,
    pub prefix_cache_hits: AtomicU64,
    /// Prompt tokens hit in the host-DRAM tier (KV offload), loaded not prefilled.
    pub host_cache_hits: AtomicU64,
    /// Successful prefix-cache resets.
    pub prefix_cache_resets: AtomicU64,
    pub steps: AtomicU64,
    /// Modelled time, ns.
    pub modelled_ns: AtomicU64,
    /// Modelled GPU energy of every step so far (all GPUs), µJ
    /// ([`EngineConfig::step_energy_j`]); stays 0 without GPU power figures.
    pub energy_uj: AtomicU64,
    /// Wall time lost to re-anchoring, ns.
    pub lag_ns: AtomicU64,
    pub finished_stop: AtomicU64,
    pub finished_length: AtomicU64,
    pub finished_abort: AtomicU64,
    pub http_in_flight: AtomicU64,
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
}

/// How far (wall time) the loop may fall behind its anchor and still catch up by running the
/// next steps without sleeping. Beyond it, it re-anchors (modelled time dilates). Small
/// scheduling hiccups (tens of ms on a loaded machine) used to re-anchor at 20 ms, which
/// shifted every later token by the hiccup: × speedup in modelled time, so results depended
/// on the speedup (issue 18 item 8).
const MAX_CATCH_UP: Duration = Duration::from_millis(500);

/// Sleeps until `target`, in slices so that `stop` is noticed within 50 ms.
fn sleep_until(target: Instant, stop: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= target || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((target - now).min(Duration::from_millis(50)));
    }
}

/// Answers a reset request (the counter is published before the reply, so a client that sees
/// its answer also sees the reset in `/metrics`).
fn reset(
    engine: &mut Sched<Arc<ReqShared>>,
    stats: &Stats,
    reply: tokio::sync::oneshot::Sender<Result<usize, usize>>,
) {
    let r = engine.reset_prefix_cache();
    stats
        .prefix_cache_resets
        .store(engine.counters().prefix_cache_resets, Ordering::Relaxed);
    let _ = reply.send(r);
}

/// Runs the engine loop until [`Msg::Stop`] (or `stop`), then aborts what is left.
pub(crate) fn run_engine(
    cfg: Arc<EngineConfig>,
    fleet: Option<Arc<crate::disagg::FleetConfig>>,
    speedup: f64,
    stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    mut rx: UnboundedReceiver<Msg>,
) {
    let overhead_s = cfg.consts.request_overhead_ms * 1e-3;
    let mut engine: Sched<Arc<ReqShared>> = Sched::new(cfg, fleet);
    let mut anchor_wall = Instant::now();
    let mut anchor_vt = 0.0f64;
    let mut out: Vec<Emit<Arc<ReqShared>>> = Vec::new();
    let max_lag = MAX_CATCH_UP;
    let mut energy_j = 0.0f64;

    let submit = |engine: &mut Sched<Arc<ReqShared>>, s: Submission, aw: Instant, av: f64| {
        submit_at(engine, s, (aw, av), speedup, overhead_s)
    };

    'outer: loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if engine.is_idle() {
            stats.running.store(0, Ordering::Relaxed);
            stats.waiting.store(0, Ordering::Relaxed);
            stats.kv_used_blocks.store(0, Ordering::Relaxed);
            match rx.blocking_recv() {
                None | Some(Msg::Stop) => break,
                Some(Msg::ResetPrefixCache(reply)) => {
                    reset(&mut engine, &stats, reply);
                    continue;
                }
                Some(Msg::Submit(s)) => {
                    anchor_wall = s.arrival;
                    anchor_vt = engine.now_s();
                    submit(&mut engine, s, anchor_wall, anchor_vt);
                }
            }
        }
        loop {
            match rx.try_recv() {
                Ok(Msg::Submit(s)) => submit(&mut engine, s, anchor_wall, anchor_vt),
                Ok(Msg::ResetPrefixCache(reply)) => reset(&mut engine, &stats, reply),
                Ok(Msg::Stop) | Err(TryRecvError::Disconnected) => break 'outer,
                Err(TryRecvError::Empty) => break,
            }
        }
        engine.retain(|p| !p.cancelled.load(Ordering::Relaxed));
        out.clear();
        let Some(info) = engine.step(&mut out) else {
            continue;
        };
        if let Some(e) = engine.energy_j(&info) {
            energy_j += e;
        }
        gauges(&engine, &stats, info.num_seqs);
        let target =
            anchor_wall + Duration::from_secs_f64(((info.end_s - anchor_vt) / speedup).max(0.0));
        let now = Instant::now();
        if target > now {
            sleep_until(target, &stop);
        } else if now - target > max_lag {
            // Too far behind to catch up: re-anchor (modelled time dilates; the client sees
            // the gap, scaled by the speedup, so it is counted).
            stats
                .lag_ns
                .fetch_add((now - target).as_nanos() as u64, Ordering::Relaxed);
            anchor_wall = now;
            anchor_vt = info.end_s;
        }
        // How late this step is published (the oversleep of a loaded host, or how far behind
        // the loop is): each request of the step keeps its largest.
        let late = Instant::now().saturating_duration_since(target).as_nanos() as u64;
        // Behind by less than `max_lag`: no sleep, so the next steps catch up and the
        // modelled timeline keeps its wall-clock anchor (a hiccup of the machine delays a few
        // tokens instead of shifting every later token and arrival by the hiccup × speedup).
        stats
            .energy_uj
            .store((energy_j * 1e6) as u64, Ordering::Relaxed);
        publish(&engine, &stats, &mut out, late);
    }
    abort_rest(engine, rx, Vec::new());
}

/// Gauges as of this step's batch (sequences that just finished still count); an idle step
/// (`num_seqs == 0`) leaves them.
fn gauges(engine: &Sched<Arc<ReqShared>>, stats: &Stats, num_seqs: u32) {
    if num_seqs > 0 {
        stats.running.store(
            (num_seqs as usize).max(engine.num_running()) as u64,
            Ordering::Relaxed,
        );
        stats
            .waiting
            .store(engine.num_waiting() as u64, Ordering::Relaxed);
        stats
            .kv_used_blocks
            .store(engine.kv_used_blocks() as u64, Ordering::Relaxed);
    }
}

/// Publishes a step at its end: counters first, so a client that sees its last token also
/// sees them in /metrics; then each request's tokens (`late` ns after the step's target).
fn publish(
    engine: &Sched<Arc<ReqShared>>,
    stats: &Stats,
    out: &mut Vec<Emit<Arc<ReqShared>>>,
    late: u64,
) {
    let c = engine.counters();
    stats
        .prompt_tokens
        .store(c.prompt_tokens, Ordering::Relaxed);
    stats
        .generation_tokens
        .store(c.generation_tokens, Ordering::Relaxed);
    stats.preemptions.store(c.preemptions, Ordering::Relaxed);
    stats
        .prefix_cache_queries
        .store(c.prefix_cache_queries, Ordering::Relaxed);
    stats
        .prefix_cache_hits
        .store(c.prefix_cache_hits, Ordering::Relaxed);
    stats
        .host_cache_hits
        .store(c.host_cache_hits, Ordering::Relaxed);
    stats.steps.store(c.steps, Ordering::Relaxed);
    stats
        .modelled_ns
        .store((engine.now_s() * 1e9) as u64, Ordering::Relaxed);
    for e in out.drain(..) {
        e.payload.cached.store(e.cached_tokens, Ordering::Relaxed);
        e.payload.late_ns.fetch_max(late, Ordering::Relaxed);
        e.payload.ready.store(e.generated, Ordering::Release);
        if e.finished {
            e.payload.state.store(FINISHED, Ordering::Release);
        }
        e.payload.waker.wake();
    }
}

/// After the loop: every request still queued or running ends aborted (its stream ends without
/// `[DONE]`).
fn abort_rest(
    mut engine: Sched<Arc<ReqShared>>,
    mut rx: UnboundedReceiver<Msg>,
    mut pending_abort: Vec<Arc<ReqShared>>,
) {
    pending_abort.extend(engine.drain());
    rx.close();
    while let Ok(m) = rx.try_recv() {
        if let Msg::Submit(s) = m {
            pending_abort.push(s.shared);
        }
    }
    for p in pending_abort {
        p.state.store(ABORTED, Ordering::Release);
        p.waker.wake();
    }
}

/// Queues a submission at its modelled arrival: the anchor's modelled time plus the serving
/// clock's time since the anchor × `speedup`, plus the per-request overhead.
fn submit_at(
    engine: &mut Sched<Arc<ReqShared>>,
    s: Submission,
    anchor: (Instant, f64),
    speedup: f64,
    overhead_s: f64,
) {
    let vt = anchor.1 + s.arrival.saturating_duration_since(anchor.0).as_secs_f64() * speedup;
    engine.submit_with_prefix(
        s.shared,
        SeqSpec {
            prompt_tokens: s.prompt_tokens,
            output_tokens: s.output_tokens,
            ready_at_s: vt + overhead_s,
        },
        s.prefix_hashes,
    );
}

/// The engine loop on the virtual clock: a task on a current-thread runtime with a paused
/// clock. Each step is published at `anchor + (t_model − t_anchor) / speedup` on that clock
/// (`speedup` = [`crate::VIRTUAL_SPEEDUP`]), reached by `tokio::time::sleep_until`; the clock
/// only gets there once every client task waits, so steps are never late and no wall-clock time
/// enters the numbers. Ends on [`Msg::Stop`], a closed channel or `shutdown` turning true, then
/// aborts what is left.
pub(crate) async fn run_engine_virtual(
    cfg: Arc<EngineConfig>,
    fleet: Option<Arc<crate::disagg::FleetConfig>>,
    speedup: f64,
    stats: Arc<Stats>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    mut rx: UnboundedReceiver<Msg>,
) {
    let overhead_s = cfg.consts.request_overhead_ms * 1e-3;
    let mut engine: Sched<Arc<ReqShared>> = Sched::new(cfg, fleet);
    let mut anchor = (crate::server::now(), 0.0f64);
    let mut out: Vec<Emit<Arc<ReqShared>>> = Vec::new();
    let mut energy_j = 0.0f64;
    'outer: loop {
        if engine.is_idle() {
            stats.running.store(0, Ordering::Relaxed);
            stats.waiting.store(0, Ordering::Relaxed);
            stats.kv_used_blocks.store(0, Ordering::Relaxed);
            let msg = tokio::select! {
                biased;
                m = rx.recv() => m,
                _ = shutdown.wait_for(|v| *v) => None,
            };
            match msg {
                None | Some(Msg::Stop) => break,
                Some(Msg::ResetPrefixCache(reply)) => {
                    reset(&mut engine, &stats, reply);
                    continue;
                }
                Some(Msg::Submit(s)) => {
                    anchor = (s.arrival, engine.now_s());
                    submit_at(&mut engine, s, anchor, speedup, overhead_s);
                }
            }
        }
        loop {
            match rx.try_recv() {
                Ok(Msg::Submit(s)) => submit_at(&mut engine, s, anchor, speedup, overhead_s),
                Ok(Msg::ResetPrefixCache(reply)) => reset(&mut engine, &stats, reply),
                Ok(Msg::Stop) | Err(TryRecvError::Disconnected) => break 'outer,
                Err(TryRecvError::Empty) => break,
            }
        }
        engine.retain(|p| !p.cancelled.load(Ordering::Relaxed));
        out.clear();
        let Some(info) = engine.step(&mut out) else {
            continue;
        };
        if let Some(e) = engine.energy_j(&info) {
            energy_j += e;
        }
        gauges(&engine, &stats, info.num_seqs);
        let target =
            anchor.0 + Duration::from_secs_f64(((info.end_s - anchor.1) / speedup).max(0.0));
        let stop = tokio::select! {
            biased;
            _ = shutdown.wait_for(|v| *v) => true,
            () = tokio::time::sleep_until(target.into()) => false,
        };
        if stop {
            break;
        }
        // the timer rounds up to its 1 ms tick (1 µs modelled): that is all the lateness
        let late = crate::server::now()
            .saturating_duration_since(target)
            .as_nanos() as u64;
        stats
            .energy_uj
            .store((energy_j * 1e6) as u64, Ordering::Relaxed);
        publish(&engine, &stats, &mut out, late);
    }
    abort_rest(engine, rx, Vec::new());
}
