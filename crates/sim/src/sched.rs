//! What the engine loop drives: one [`Engine`] or a disaggregated [`Fleet`], behind one set of
//! methods (`runtime` and the closed-loop drivers call only these), and the fleet's closed-loop
//! run in pure modelled time ([`simulate_fleet_closed_loop`], used by `sim validate`).

use std::sync::Arc;

use crate::disagg::FleetConfig;
use crate::engine::{
    summarize, Emit, Engine, EngineCounters, RequestTiming, SeqSpec, SimSummary, StepInfo, Workload,
};
use crate::fleet::Fleet;
use crate::model::EngineConfig;

/// One engine, or a fleet of prefill and decode engines.
pub enum Sched<P> {
    /// A single aggregated engine.
    Single(Engine<P>),
    /// A disaggregated (or aggregated multinode) fleet.
    Fleet(Fleet<P>),
}

impl<P: Clone> Sched<P> {
    /// A fleet when `fleet` is given, else one engine of `cfg`.
    pub fn new(cfg: Arc<EngineConfig>, fleet: Option<Arc<FleetConfig>>) -> Self {
        match fleet {
            Some(f) => Sched::Fleet(Fleet::new(f)),
            None => Sched::Single(Engine::new(cfg)),
        }
    }

    /// The configuration requests are checked against (a fleet: its prefill workers').
    pub fn config(&self) -> &Arc<EngineConfig> {
        match self {
            Sched::Single(e) => e.config(),
            Sched::Fleet(f) => &f.fleet_config().prefill,
        }
    }

    /// Current modelled time, s.
    pub fn now_s(&self) -> f64 {
        match self {
            Sched::Single(e) => e.now_s(),
            Sched::Fleet(f) => f.now_s(),
        }
    }

    /// Queues a request ([`Engine::submit_with_prefix`]; a fleet routes it).
    pub fn submit_with_prefix(&mut self, payload: P, spec: SeqSpec, hashes: Vec<u64>) {
        match self {
            Sched::Single(e) => e.submit_with_prefix(payload, spec, hashes),
            Sched::Fleet(f) => f.submit_with_prefix(payload, spec, hashes),
        }
    }

    /// One step (an engine's, or a fleet's next released event).
    pub fn step(&mut self, out: &mut Vec<Emit<P>>) -> Option<StepInfo> {
        match self {
            Sched::Single(e) => e.step(out),
            Sched::Fleet(f) => f.step(out),
        }
    }

    /// Modelled GPU energy of `info` (one engine) or of the fleet's engine steps since the
    /// last call, J.
    pub fn energy_j(&mut self, info: &StepInfo) -> Option<f64> {
        match self {
            Sched::Single(e) => e
                .config()
                .step_energy_j(info.start_s, info.end_s, &info.cost),
            Sched::Fleet(f) => f.take_energy_j(),
        }
    }

    /// [`Engine::retain`].
    pub fn retain(&mut self, keep: impl FnMut(&P) -> bool) -> usize {
        match self {
            Sched::Single(e) => e.retain(keep),
            Sched::Fleet(f) => f.retain(keep),
        }
    }

    /// [`Engine::drain`].
    pub fn drain(&mut self) -> Vec<P> {
        match self {
            Sched::Single(e) => e.drain(),
            Sched::Fleet(f) => f.drain(),
        }
    }

    /// [`Engine::is_idle`].
    pub fn is_idle(&self) -> bool {
        match self {
            Sched::Single(e) => e.is_idle(),
            Sched::Fleet(f) => f.is_idle(),
        }
    }

    /// [`Engine::num_running`].
    pub fn num_running(&self) -> usize {
        match self {
            Sched::Single(e) => e.num_running(),
            Sched::Fleet(f) => f.num_running(),
        }
    }

    /// [`Engine::num_waiting`].
    pub fn num_waiting(&self) -> usize {
        match self {
            Sched::Single(e) => e.num_waiting(),
            Sched::Fleet(f) => f.num_waiting(),
        }
    }

    /// [`Engine::kv_used_blocks`].
    pub fn kv_used_blocks(&self) -> u32 {
        match self {
            Sched::Single(e) => e.kv_used_blocks(),
            Sched::Fleet(f) => f.kv_used_blocks(),
        }
    }

    /// [`Engine::counters`].
    pub fn counters(&self) -> EngineCounters {
        match self {
            Sched::Single(e) => e.counters(),
            Sched::Fleet(f) => f.counters(),
        }
    }

    /// [`Engine::reset_prefix_cache`].
    pub fn reset_prefix_cache(&mut self) -> Result<usize, usize> {
        match self {
            Sched::Single(e) => e.reset_prefix_cache(),
            Sched::Fleet(f) => f.reset_prefix_cache(),
        }
    }
}

/// [`crate::engine::simulate_closed_loop_with`] on a fleet: `w.concurrency` clients, each
/// sending its next request when the previous one's last token arrives, request `i` with
/// `lengths(i)` (prompt, output) tokens and the prefill workers' front-end latency.
/// Deterministic.
pub fn simulate_fleet_closed_loop(
    cfg: Arc<FleetConfig>,
    w: &Workload,
    lengths: impl Fn(usize) -> (u32, u32),
) -> SimSummary {
    let overhead = if w.request_overhead {
        cfg.prefill.consts.request_overhead_ms * 1e-3
    } else {
        0.0
    };
    let mut fleet: Fleet<usize> = Fleet::new(cfg);
    let n = w.num_requests as usize;
    let mut timings: Vec<RequestTiming> = Vec::with_capacity(n);
    let mut sent_in = 0u64;
    let mut send = |fleet: &mut Fleet<usize>, timings: &mut Vec<RequestTiming>, now: f64| {
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
        fleet.submit_with_prefix(idx, spec, Vec::new());
    };
    let mut sent = 0;
    while sent < n.min(w.concurrency as usize) {
        send(&mut fleet, &mut timings, 0.0);
        sent += 1;
    }
    let (mut out, mut max_waiting, mut max_running) = (Vec::new(), 0, 0);
    while let Some(info) = fleet.step(&mut out) {
        max_waiting = max_waiting.max(fleet.num_waiting());
        max_running = max_running.max(fleet.num_running());
        for e in out.drain(..) {
            let t = &mut timings[e.payload];
            if e.generated == 1 {
                t.first_token_s = info.end_s;
            }
            t.last_token_s = info.end_s;
            t.output_tokens = e.generated;
            if e.finished && sent < n {
                send(&mut fleet, &mut timings, info.end_s);
                sent += 1;
            }
        }
    }
    let counters = fleet.counters();
    summarize(timings, sent_in, max_waiting, max_running, counters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disagg::{Fabric, RouterPolicy, WorkerShape};
    use crate::engine::simulate_closed_loop_with;

    fn shape(workers: u32, tp: u32) -> WorkerShape {
        WorkerShape {
            workers,
            tp,
            ep: tp,
            dp_attention: false,
        }
    }

    fn fleet(fabric: Option<Fabric>, decode: u32) -> Arc<FleetConfig> {
        Arc::new(
            FleetConfig::from_presets(
                "b200",
                "deepseek-r1-fp8",
                shape(1, 8),
                shape(decode, 8),
                fabric,
                RouterPolicy::RoundRobin,
                |_| {},
            )
            .unwrap(),
        )
    }

    fn w(conc: u32) -> Workload {
        Workload {
            concurrency: conc,
            num_requests: conc * 4,
            input_tokens: 8192,
            output_tokens: 256,
            request_overhead: true,
        }
    }

    /// One request alone: TTFT on the fleet = TTFT of the same prefill engine alone + the
    /// modelled KV transfer (exactly), and every token is generated.
    #[test]
    fn ttft_is_the_prefill_plus_the_kv_transfer() {
        let f = fleet(None, 1);
        let alone = simulate_closed_loop_with(
            f.prefill.clone(),
            &Workload {
                num_requests: 1,
                ..w(1)
            },
            |_| (8192, 1),
        );
        let s = simulate_fleet_closed_loop(
            f.clone(),
            &Workload {
                num_requests: 1,
                ..w(1)
            },
            |_| (8192, 256),
        );
        let r = s.requests[0];
        let want = alone.requests[0].first_token_s + f.transfer_s(8192);
        assert!(
            (r.first_token_s - want).abs() < 1e-9,
            "{} vs {want}",
            r.first_token_s
        );
        assert_eq!(r.output_tokens, 256);
        assert!(
            f.transfer_s(8192) > 0.009,
            "RDMA 8k tokens: {}",
            f.transfer_s(8192)
        );
        // a slower fabric adds exactly the difference in transfer time
        let slow = fleet(Some(Fabric::Rdma { gb_s: 5.0 }), 1);
        let s2 = simulate_fleet_closed_loop(
            slow.clone(),
            &Workload {
                num_requests: 1,
                ..w(1)
            },
            |_| (8192, 256),
        );
        let d = s2.requests[0].first_token_s - r.first_token_s;
        assert!((d - (slow.transfer_s(8192) - f.transfer_s(8192))).abs() < 1e-9);
    }

    /// Under load, a second decode worker halves each decode batch: the time per output token
    /// falls and throughput does not; every request finishes with all its tokens; the clock
    /// the caller sees never goes back.
    #[test]
    fn decode_workers_split_the_batch_and_time_is_monotone() {
        let one = simulate_fleet_closed_loop(fleet(None, 1), &w(128), |_| (256, 512));
        let two = simulate_fleet_closed_loop(fleet(None, 2), &w(128), |_| (256, 512));
        assert!(one.requests.iter().all(|r| r.output_tokens == 512));
        assert!(two.requests.iter().all(|r| r.output_tokens == 512));
        assert!(
            two.mean_tpot_ms < one.mean_tpot_ms * 0.95,
            "{} vs {}",
            two.mean_tpot_ms,
            one.mean_tpot_ms
        );
        assert!(
            two.output_throughput > one.output_throughput,
            "{} vs {}",
            two.output_throughput,
            one.output_throughput
        );
        let mut f: Fleet<usize> = Fleet::new(fleet(None, 2));
        for i in 0..16 {
            let spec = SeqSpec {
                prompt_tokens: 512 + 64 * i as u32,
                output_tokens: 8,
                ready_at_s: 0.001 * i as f64,
            };
            f.submit_with_prefix(i, spec, Vec::new());
        }
        let (mut out, mut last, mut tokens) = (Vec::new(), 0.0, 0);
        while let Some(info) = f.step(&mut out) {
            assert!(info.end_s >= last, "{} < {last}", info.end_s);
            last = info.end_s;
            tokens += out.len();
            out.clear();
        }
        assert_eq!(tokens, 16 * 8);
        assert!(f.is_idle());
        assert_eq!(f.counters().finished, 16);
    }

    /// Aggregated (no decode workers): the prefill engines serve whole requests, no transfer.
    #[test]
    fn an_aggregated_fleet_has_no_transfer() {
        let f = fleet(None, 0);
        let s = simulate_fleet_closed_loop(f.clone(), &w(1), |_| (1024, 16));
        let alone = simulate_closed_loop_with(f.prefill.clone(), &w(1), |_| (1024, 16));
        assert_eq!(s.requests, alone.requests);
    }
}
