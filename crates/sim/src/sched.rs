//! What the engine loops drive: one [`Engine`] or a disaggregated [`Fleet`], behind one set of
//! methods — `runtime` (the HTTP server, wall or virtual time) and
//! [`crate::closed_loop::run_closed_loop`] (pure modelled time, for `sim validate`).

use std::sync::Arc;

use crate::disagg::FleetConfig;
use crate::engine::{Emit, Engine, EngineCounters, SeqSpec, StepInfo};
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
