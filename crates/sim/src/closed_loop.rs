//! Closed-loop runs in pure modelled time (no threads, no sleeping, no I/O): `concurrency`
//! clients, each sending its next request the moment its previous one's last token is emitted,
//! until `num_requests` have been sent. One driver ([`run_closed_loop`]) runs either [`Sched`]:
//! a single [`Engine`] ([`simulate_closed_loop`], used by `sim validate` and the model tests) or
//! a disaggregated [`Fleet`] ([`simulate_fleet_closed_loop`], `validate_disagg`), and summarises
//! the timings as MEASUREMENT.md Part 1 defines the metrics ([`SimSummary`]). The HTTP server's
//! loop (`runtime`) drives the same [`Sched`] in wall or virtual time.

use std::sync::Arc;

use crate::disagg::FleetConfig;
use crate::engine::{Engine, EngineCounters, SeqSpec};
use crate::fleet::Fleet;
use crate::model::EngineConfig;
use crate::power::PowerProfile;
use crate::sched::Sched;

/// A closed-loop fixed-length workload: `concurrency` clients, each sending its next request the
/// moment the previous one finishes, until `num_requests` have been sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// Requests in flight (clients).
    pub concurrency: u32,
    /// Requests in total.
    pub num_requests: u32,
    /// Prompt tokens per request.
    pub input_tokens: u32,
    /// Generated tokens per request (ignore_eos).
    pub output_tokens: u32,
    /// Charge the front-end latency (`request_overhead_ms`) to every request, as an HTTP server
    /// does; false models an offline engine (vLLM `LLM` class, `benchmark_latency`).
    pub request_overhead: bool,
}

/// Modelled timing of one request (seconds of modelled time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestTiming {
    /// When the client sent it.
    pub sent_s: f64,
    /// When its first token was emitted.
    pub first_token_s: f64,
    /// When its last token was emitted.
    pub last_token_s: f64,
    /// Tokens generated.
    pub output_tokens: u32,
}

/// Result of [`simulate_closed_loop`]; the statistics follow MEASUREMENT.md Part 1
/// (TPOT = (E2EL − TTFT)/(out − 1), only for out > 1; duration from the first send to the last
/// token).
#[derive(Debug, Clone, PartialEq)]
pub struct SimSummary {
    /// Per request, in send order.
    pub requests: Vec<RequestTiming>,
    /// First send to last token, s.
    pub duration_s: f64,
    /// Mean time to first token, ms.
    pub mean_ttft_ms: f64,
    /// Mean time per output token, ms.
    pub mean_tpot_ms: f64,
    /// Mean end-to-end latency, ms.
    pub mean_e2el_ms: f64,
    /// Output tokens / duration, tok/s (whole engine, not per GPU).
    pub output_throughput: f64,
    /// (Input + output tokens) / duration, tok/s.
    pub total_throughput: f64,
    /// Most requests seen queued for admission (past their front-end latency) at a step.
    pub max_waiting: usize,
    /// Most sequences in one step.
    pub max_running: usize,
    /// Engine counters at the end.
    pub counters: EngineCounters,
    /// Modelled GPU energy of every step and idle wait, all GPUs, J
    /// ([`EngineConfig::step_energy_j`]); `None` when the GPU preset has no power figures or
    /// the run did not track it.
    pub energy_j: Option<f64>,
    /// Per-GPU time sums of every step and idle wait ([`crate::power::PowerProfile`]): the
    /// energy under other power parameters without re-running.
    pub power_profile: crate::power::PowerProfile,
}

/// Runs `w` through a fresh engine in pure modelled time (no threads, no sleeping; a 1k/1k
/// conc-64 point takes milliseconds). Deterministic.
pub fn simulate_closed_loop(cfg: Arc<EngineConfig>, w: &Workload) -> SimSummary {
    simulate_closed_loop_with(cfg, w, |_| (w.input_tokens, w.output_tokens))
}

/// [`simulate_closed_loop`] with per-request lengths: request `i` (0-based, in send order) has
/// `lengths(i)` = (prompt tokens, output tokens); `w.input_tokens`/`w.output_tokens` are not
/// used. Deterministic when `lengths` is.
pub fn simulate_closed_loop_with(
    cfg: Arc<EngineConfig>,
    w: &Workload,
    lengths: impl Fn(usize) -> (u32, u32),
) -> SimSummary {
    run_closed_loop(Sched::Single(Engine::new(cfg)), w, lengths)
}

/// [`simulate_closed_loop_with`] on a fleet of prefill and decode engines (front-end latency:
/// the prefill workers'). No energy ([`SimSummary::energy_j`] is `None`). Deterministic.
pub fn simulate_fleet_closed_loop(
    cfg: Arc<FleetConfig>,
    w: &Workload,
    lengths: impl Fn(usize) -> (u32, u32),
) -> SimSummary {
    run_closed_loop(Sched::Fleet(Fleet::new(cfg)), w, lengths)
}

/// Drives `sched` through `w`: `w.concurrency` requests sent at 0, then one more each time a
/// request's last token is emitted (at that step's end), until `w.num_requests` were sent;
/// request `i` has `lengths(i)` = (prompt, output) tokens and, when `w.request_overhead`, is
/// ready the front-end latency (`request_overhead_ms` of [`Sched::config`]) after its send.
/// Records each request's first/last token times (s of modelled time); a single engine also
/// the energy (J) and power profile of every step and idle wait (a fleet's released events
/// carry no step cost: no energy).
pub fn run_closed_loop(
    mut sched: Sched<usize>,
    w: &Workload,
    lengths: impl Fn(usize) -> (u32, u32),
) -> SimSummary {
    let overhead = if w.request_overhead {
        sched.config().consts.request_overhead_ms * 1e-3
    } else {
        0.0
    };
    let n = w.num_requests as usize;
    let mut timings: Vec<RequestTiming> = Vec::with_capacity(n);
    let mut sent_in = 0u64;
    let mut send = |sched: &mut Sched<usize>, timings: &mut Vec<RequestTiming>, now: f64| {
        let idx = timings.len();
        timings.push(RequestTiming {
            sent_s: now,
            first_token_s: f64::NAN,
            last_token_s: f64::NAN,
            output_tokens: 0,
        });
        let (prompt_tokens, output_tokens) = lengths(idx);
        sent_in += u64::from(prompt_tokens);
        let spec = SeqSpec {
            prompt_tokens,
            output_tokens,
            ready_at_s: now + overhead,
        };
        sched.submit_with_prefix(idx, spec, Vec::new());
    };
    while timings.len() < n.min(w.concurrency as usize) {
        send(&mut sched, &mut timings, 0.0);
    }
    let (mut out, mut max_waiting, mut max_running) = (Vec::new(), 0, 0);
    let (mut energy_j, mut profile) = (Some(0.0), PowerProfile::default());
    while let Some(info) = sched.step(&mut out) {
        if let Sched::Single(e) = &sched {
            let (cfg, (t0, t1)) = (e.config(), (info.start_s, info.end_s));
            profile.add(t0, t1, &info.cost);
            energy_j = energy_j.and_then(|j| Some(j + cfg.step_energy_j(t0, t1, &info.cost)?));
        }
        // an engine: its batch, and its queue after a real step (as its metrics see it)
        let (waiting, running) = match &sched {
            Sched::Single(_) if info.num_seqs == 0 => (0, 0),
            Sched::Single(e) => (e.num_waiting(), info.num_seqs as usize),
            Sched::Fleet(f) => (f.num_waiting(), f.num_running()),
        };
        max_waiting = max_waiting.max(waiting);
        max_running = max_running.max(running);
        for e in out.drain(..) {
            let t = &mut timings[e.payload];
            if e.generated == 1 {
                t.first_token_s = info.end_s;
            }
            t.last_token_s = info.end_s;
            t.output_tokens = e.generated;
            if e.finished && timings.len() < n {
                send(&mut sched, &mut timings, info.end_s);
            }
        }
    }
    let mut s = summarize(timings, sent_in, max_waiting, max_running, sched.counters());
    if let Sched::Single(_) = sched {
        s.energy_j = energy_j;
        s.power_profile = profile;
    }
    s
}

/// The statistics of a closed-loop run ([`SimSummary`]) from its requests' timings; `sent_input_tokens`
/// is the prompt tokens of every sent request.
pub(crate) fn summarize(
    requests: Vec<RequestTiming>,
    sent_input_tokens: u64,
    max_waiting: usize,
    max_running: usize,
    counters: EngineCounters,
) -> SimSummary {
    let done: Vec<&RequestTiming> = requests.iter().filter(|r| r.output_tokens > 0).collect();
    let first = requests
        .iter()
        .map(|r| r.sent_s)
        .fold(f64::INFINITY, f64::min);
    let last = done.iter().map(|r| r.last_token_s).fold(0.0, f64::max);
    let duration_s = (last - first).max(0.0);
    let mean = |v: Vec<f64>| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let mean_ttft_ms = mean(
        done.iter()
            .map(|r| (r.first_token_s - r.sent_s) * 1e3)
            .collect(),
    );
    let mean_e2el_ms = mean(
        done.iter()
            .map(|r| (r.last_token_s - r.sent_s) * 1e3)
            .collect(),
    );
    let mean_tpot_ms = mean(
        done.iter()
            .filter(|r| r.output_tokens > 1)
            .map(|r| (r.last_token_s - r.first_token_s) * 1e3 / (r.output_tokens - 1) as f64)
            .collect(),
    );
    let out_tokens: u64 = done.iter().map(|r| r.output_tokens as u64).sum();
    // every sent request completes in a closed loop (the HTTP layer rejects what cannot fit)
    let in_tokens = if requests.is_empty() {
        0
    } else {
        sent_input_tokens * done.len() as u64 / requests.len() as u64
    };
    SimSummary {
        requests,
        duration_s,
        mean_ttft_ms,
        mean_tpot_ms,
        mean_e2el_ms,
        output_throughput: out_tokens as f64 / duration_s,
        total_throughput: (in_tokens + out_tokens) as f64 / duration_s,
        max_waiting,
        max_running,
        counters,
        energy_j: None,
        power_profile: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_counts_every_request() {
        let s = simulate_closed_loop(
            Arc::new(EngineConfig::from_presets("h200", "qwen3-8b", 1).unwrap()),
            &Workload {
                concurrency: 4,
                num_requests: 12,
                input_tokens: 512,
                output_tokens: 64,
                request_overhead: true,
            },
        );
        assert_eq!(s.requests.len(), 12);
        assert!(s.requests.iter().all(|r| r.output_tokens == 64));
        assert!(
            s.mean_ttft_ms > 25.0,
            "front-end latency is charged: {}",
            s.mean_ttft_ms
        );
        assert!(s.max_running <= 4);
        assert_eq!(s.counters.finished, 12);
    }
}
