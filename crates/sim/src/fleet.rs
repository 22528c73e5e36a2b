//! A disaggregated fleet in modelled time: prefill engines and decode engines (each an
//! [`Engine`] with its own clock), a router, and KV transfers between them (issue 32).
//!
//! A request goes to a prefill engine (chosen by [`RouterPolicy`]) with one output token: its
//! prefill plus the first sample. When that step ends at `t`, its KV moves to a decode engine
//! over the fabric, arriving at `t + transfer` ([`FleetConfig::transfer_s`]); only then is the
//! first token streamed (the decode worker streams every token, as in Dynamo and SGLang PD), so
//! TTFT = queueing + prefill + transfer. The decode engine admits it with its prompt already
//! computed ([`Engine::submit_preloaded`]) and generates the rest. Aggregated fleets (no decode
//! workers) run whole requests on the prefill engines.
//!
//! Engines advance independently; [`Fleet::step`] runs the engine whose clock is earliest and
//! releases buffered events (tokens, KV arrivals) in time order once no engine can still produce
//! an earlier one (conservative discrete-event simulation), so the caller sees one monotone
//! timeline, exactly like a single [`Engine`]'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::disagg::{FleetConfig, RouterPolicy};
use crate::engine::{Emit, Engine, EngineCounters, SeqSpec, StepInfo};

/// A request on a prefill engine: the caller's handle and its lengths.
#[derive(Clone)]
pub struct Handoff<P> {
    payload: P,
    prompt: u32,
    output: u32,
}

enum Event<P> {
    Tokens(Emit<P>),
    Arrive {
        payload: P,
        prompt: u32,
        output: u32,
        cached: u32,
    },
}

impl<P> Event<P> {
    fn payload(&self) -> &P {
        match self {
            Event::Tokens(e) => &e.payload,
            Event::Arrive { payload, .. } => payload,
        }
    }
}

/// The fleet's scheduler state. `P` is the caller's per-request handle.
pub struct Fleet<P> {
    cfg: Arc<FleetConfig>,
    prefill: Vec<Engine<Handoff<P>>>,
    decode: Vec<Engine<P>>,
    /// Buffered events by (time bits, sequence): non-negative f64 bits sort as the values.
    events: BTreeMap<(u64, u64), Event<P>>,
    seq: u64,
    rr: (usize, usize),
    now_s: f64,
    energy_j: f64,
}

impl<P: Clone> Fleet<P> {
    /// An idle fleet at modelled time 0.
    pub fn new(cfg: Arc<FleetConfig>) -> Self {
        let prefill = (0..cfg.prefill_engines)
            .map(|_| Engine::new(cfg.prefill.clone()))
            .collect();
        let decode = match &cfg.decode {
            Some(d) => (0..cfg.decode_engines)
                .map(|_| Engine::new(d.clone()))
                .collect(),
            None => Vec::new(),
        };
        Fleet {
            cfg,
            prefill,
            decode,
            events: BTreeMap::new(),
            seq: 0,
            rr: (0, 0),
            now_s: 0.0,
            energy_j: 0.0,
        }
    }

    /// The fleet's configuration.
    pub fn fleet_config(&self) -> &Arc<FleetConfig> {
        &self.cfg
    }

    /// Modelled time of the last released event, s.
    pub fn now_s(&self) -> f64 {
        self.now_s
    }

    fn push(&mut self, t: f64, ev: Event<P>) {
        self.seq += 1;
        self.events.insert((t.max(0.0).to_bits(), self.seq), ev);
    }

    /// Routes a request to a prefill engine (KV-aware: the longest cached prefix, then the
    /// least loaded; round-robin: in turn).
    pub fn submit_with_prefix(&mut self, payload: P, spec: SeqSpec, hashes: Vec<u64>) {
        let n = self.prefill.len();
        let i = match self.cfg.router {
            RouterPolicy::RoundRobin => {
                self.rr.0 = (self.rr.0 + 1) % n;
                self.rr.0
            }
            RouterPolicy::KvAware => (0..n)
                .min_by_key(|&i| {
                    let e = &self.prefill[i];
                    (
                        usize::MAX - e.prefix_overlap(&hashes),
                        e.num_running() + e.num_waiting() + e.num_in_frontend(),
                        i,
                    )
                })
                .unwrap_or(0),
        };
        let h = Handoff {
            payload,
            prompt: spec.prompt_tokens,
            output: spec.output_tokens.max(1),
        };
        let spec = if self.decode.is_empty() {
            spec
        } else {
            SeqSpec {
                output_tokens: 1,
                ..spec
            }
        };
        self.prefill[i].submit_with_prefix(h, spec, hashes);
    }

    fn decode_engine(&mut self) -> usize {
        let n = self.decode.len();
        match self.cfg.router {
            RouterPolicy::RoundRobin => {
                self.rr.1 = (self.rr.1 + 1) % n;
                self.rr.1
            }
            RouterPolicy::KvAware => (0..n)
                .min_by_key(|&i| {
                    let e = &self.decode[i];
                    (e.num_running() + e.num_waiting() + e.num_in_frontend(), i)
                })
                .unwrap_or(0),
        }
    }

    /// The earliest clock among engines with work (`INFINITY`: none).
    fn horizon(&self) -> (f64, Option<(bool, usize)>) {
        let mut best = (f64::INFINITY, None);
        for (i, e) in self.prefill.iter().enumerate() {
            if !e.is_idle() && e.now_s() < best.0 {
                best = (e.now_s(), Some((true, i)));
            }
        }
        for (i, e) in self.decode.iter().enumerate() {
            if !e.is_idle() && e.now_s() < best.0 {
                best = (e.now_s(), Some((false, i)));
            }
        }
        best
    }

    /// Releases every buffered event at the earliest time `t` into `out`.
    fn release(&mut self, out: &mut Vec<Emit<P>>) -> StepInfo {
        let (&(bits, _), _) = self.events.first_key_value().expect("an event");
        let t = f64::from_bits(bits);
        let start_s = self.now_s;
        self.now_s = self.now_s.max(t);
        let mut n = 0;
        while let Some(e) = self.events.first_entry() {
            if e.key().0 != bits {
                break;
            }
            n += 1;
            match e.remove() {
                Event::Tokens(emit) => out.push(emit),
                Event::Arrive {
                    payload,
                    prompt,
                    output,
                    cached,
                } => {
                    out.push(Emit {
                        payload: payload.clone(),
                        generated: 1,
                        finished: output <= 1,
                        cached_tokens: cached,
                    });
                    if output > 1 {
                        let d = self.decode_engine();
                        let spec = SeqSpec {
                            prompt_tokens: prompt,
                            output_tokens: output,
                            ready_at_s: t,
                        };
                        self.decode[d].submit_preloaded(payload, spec, 1);
                    }
                }
            }
        }
        StepInfo {
            start_s,
            end_s: self.now_s,
            cost: Default::default(),
            num_seqs: n,
            tokens: 0,
        }
    }

    /// Runs until the next event is released (tokens into `out`, which is not cleared) and
    /// returns its time as a [`StepInfo`] (zero cost: the engines' steps are charged in
    /// [`Fleet::take_energy_j`]); `None` when the fleet is idle.
    pub fn step(&mut self, out: &mut Vec<Emit<P>>) -> Option<StepInfo> {
        let mut local_p: Vec<Emit<Handoff<P>>> = Vec::new();
        let mut local_d: Vec<Emit<P>> = Vec::new();
        loop {
            let (horizon, next) = self.horizon();
            if let Some((&(bits, _), _)) = self.events.first_key_value() {
                if f64::from_bits(bits) <= horizon {
                    return Some(self.release(out));
                }
            }
            let (is_prefill, i) = next?;
            let info = if is_prefill {
                self.prefill[i].step(&mut local_p)
            } else {
                self.decode[i].step(&mut local_d)
            };
            let Some(info) = info else { continue };
            let cfg = if is_prefill {
                &self.cfg.prefill
            } else {
                self.cfg
                    .decode
                    .as_ref()
                    .expect("decode engines have a config")
            };
            self.energy_j += cfg
                .step_energy_j(info.start_s, info.end_s, &info.cost)
                .unwrap_or(0.0);
            for e in std::mem::take(&mut local_p) {
                let h = e.payload;
                let ev = if self.decode.is_empty() {
                    (
                        info.end_s,
                        Event::Tokens(Emit {
                            payload: h.payload,
                            generated: e.generated,
                            finished: e.finished,
                            cached_tokens: e.cached_tokens,
                        }),
                    )
                } else {
                    (
                        info.end_s + self.cfg.transfer_s(h.prompt),
                        Event::Arrive {
                            payload: h.payload,
                            prompt: h.prompt,
                            output: h.output,
                            cached: e.cached_tokens,
                        },
                    )
                };
                self.push(ev.0, ev.1);
            }
            for e in std::mem::take(&mut local_d) {
                self.push(info.end_s, Event::Tokens(e));
            }
        }
    }

    /// Modelled GPU energy of the engines' steps since the last call, J (`None` without
    /// GPU power figures).
    pub fn take_energy_j(&mut self) -> Option<f64> {
        self.cfg.prefill.gpu.tdp_w?;
        Some(std::mem::take(&mut self.energy_j))
    }

    /// Drops every request for which `keep` is false (cancelled); returns how many.
    pub fn retain(&mut self, mut keep: impl FnMut(&P) -> bool) -> usize {
        let mut n = 0;
        for e in &mut self.prefill {
            n += e.retain(|h| keep(&h.payload));
        }
        for e in &mut self.decode {
            n += e.retain(&mut keep);
        }
        let before = self.events.len();
        self.events.retain(|_, ev| keep(ev.payload()));
        n + before - self.events.len()
    }

    /// Removes every request; returns their handles.
    pub fn drain(&mut self) -> Vec<P> {
        let mut v: Vec<P> = Vec::new();
        for e in &mut self.prefill {
            v.extend(e.drain().into_iter().map(|h| h.payload));
        }
        for e in &mut self.decode {
            v.extend(e.drain());
        }
        v.extend(
            std::mem::take(&mut self.events)
                .into_values()
                .filter_map(|ev| match ev {
                    Event::Tokens(e) if !e.finished => Some(e.payload),
                    Event::Tokens(_) => None,
                    Event::Arrive { payload, .. } => Some(payload),
                }),
        );
        v
    }

    /// No request anywhere.
    pub fn is_idle(&self) -> bool {
        self.events.is_empty()
            && self.prefill.iter().all(Engine::is_idle)
            && self.decode.iter().all(Engine::is_idle)
    }

    fn sum(&self, f: impl Fn(usize, usize, u32) -> usize) -> usize {
        let p: usize = self
            .prefill
            .iter()
            .map(|e| f(e.num_running(), e.num_waiting(), e.kv_used_blocks()))
            .sum();
        let d: usize = self
            .decode
            .iter()
            .map(|e| f(e.num_running(), e.num_waiting(), e.kv_used_blocks()))
            .sum();
        p + d
    }

    /// Sequences running on every engine.
    pub fn num_running(&self) -> usize {
        self.sum(|r, _, _| r)
    }

    /// Sequences queued on every engine.
    pub fn num_waiting(&self) -> usize {
        self.sum(|_, w, _| w)
    }

    /// KV blocks in use on every engine.
    pub fn kv_used_blocks(&self) -> u32 {
        self.sum(|_, _, b| b as usize) as u32
    }

    /// Counters summed over the engines.
    pub fn counters(&self) -> EngineCounters {
        let mut c = EngineCounters::default();
        let cs = self
            .prefill
            .iter()
            .map(Engine::counters)
            .chain(self.decode.iter().map(Engine::counters));
        for x in cs {
            c.steps += x.steps;
            c.prompt_tokens += x.prompt_tokens;
            c.generation_tokens += x.generation_tokens;
            c.finished += x.finished;
            c.preemptions += x.preemptions;
            c.prefix_cache_queries += x.prefix_cache_queries;
            c.prefix_cache_hits += x.prefix_cache_hits;
            c.prefix_cache_evictions += x.prefix_cache_evictions;
            c.prefix_cache_resets += x.prefix_cache_resets;
        }
        // a disaggregated request finishes on its decode engine; the prefill side's one-token
        // sequence is not a finished request
        if !self.decode.is_empty() {
            c.finished = self.decode.iter().map(|e| e.counters().finished).sum();
        }
        c
    }

    /// Resets every engine's prefix cache when the whole fleet is idle: `Ok(blocks dropped)`,
    /// else `Err(requests in flight)`.
    pub fn reset_prefix_cache(&mut self) -> Result<usize, usize> {
        if !self.is_idle() {
            return Err(self.num_running() + self.num_waiting() + self.events.len());
        }
        let mut n = 0;
        for e in &mut self.prefill {
            n += e.reset_prefix_cache().unwrap_or(0);
        }
        for e in &mut self.decode {
            n += e.reset_prefix_cache().unwrap_or(0);
        }
        Ok(n)
    }
}
