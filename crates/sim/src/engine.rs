//! The continuous-batching scheduler, in modelled (virtual) time.
//!
//! vLLM V1-like: every sequence has `prompt + generated` tokens of which `computed` are in the
//! KV cache; a step schedules `prompt + generated − computed` tokens per sequence (a decode is
//! a 1-token chunk), running sequences first in admission order, then waiting ones (FCFS),
//! within a token budget (`max_num_batched_tokens`, so prefill is chunked and mixed with
//! decodes) and a sequence cap (`max_num_seqs`). KV is allocated in blocks; when a running
//! sequence needs a block and none is free, the most recently admitted sequence is preempted
//! (its KV is dropped and it is recomputed later, vLLM's recompute preemption). A sequence
//! samples one token when its computed tokens reach `prompt + generated`.
//!
//! Prefix caching (vLLM automatic prefix caching, simplified): a sequence may carry the chain
//! hashes of its prompt's full KV blocks ([`Engine::submit_with_prefix`]). On admission the
//! leading blocks found in the cache are not prefilled again (at least the last prompt token
//! is always computed, so the first token is still sampled). When its prefill completes, its
//! blocks enter the cache. The cache lives in the KV budget: it may hold at most
//! `kv_blocks − blocks held by running sequences + running sequences' own cached blocks`
//! blocks, and evicts least-recently-used blocks beyond that, so hits fall under KV pressure.
//! Counters: prefix-cache queries and hits in tokens (vLLM `prefix_cache_{queries,hits}`).
//!
//! KV offload ([`EngineConfig::host_kv`], [`crate::host_kv`]): a second LRU set of block hashes
//! in host DRAM, written through when a prefill completes; on admission the blocks after the
//! GPU hits that are found there are hits too, loaded host→GPU at the link's bandwidth (the
//! step's cost includes the load, overlapped with its forward pass) and counted apart
//! (`host_cache_hits`: SGLang `cached_tokens{cache_source="host"}`, vLLM
//! `external_prefix_cache_hits`).
//!
//! The engine knows nothing about wall time, HTTP or text: [`crate::runtime`] drives it in
//! real time and [`crate::closed_loop`] drives it in pure virtual time.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::model::{Chunk, EngineConfig, StepCost};
use crate::prefix_cache::{PrefixCache, Probe};

/// What the caller asks of one sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeqSpec {
    /// Prompt tokens (prefilled).
    pub prompt_tokens: u32,
    /// Tokens to generate before the sequence finishes (≥ 1).
    pub output_tokens: u32,
    /// Modelled time (s) before which the scheduler may not admit it (front-end latency).
    pub ready_at_s: f64,
}

struct Seq<P> {
    payload: P,
    spec: SeqSpec,
    generated: u32,
    computed: u32,
    blocks: u32,
    /// Prompt tokens found in the prefix cache when it was first admitted.
    cached: u32,
    /// Chain hashes of the prompt's full KV blocks (empty: no prefix caching).
    hashes: Vec<u64>,
    /// Its last prefix lookup while waiting (replayed while exact).
    probe: Probe,
}

/// A token produced by a step.
#[derive(Debug, Clone)]
pub struct Emit<P> {
    /// The caller's handle for the sequence.
    pub payload: P,
    /// Tokens generated so far, this one included (1 = first token).
    pub generated: u32,
    /// The sequence is done (`generated == output_tokens`); its KV has been freed.
    pub finished: bool,
    /// Prompt tokens its first admission found in the prefix cache (vLLM
    /// `usage.prompt_tokens_details.cached_tokens`).
    pub cached_tokens: u32,
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepInfo {
    /// Modelled start time, s.
    pub start_s: f64,
    /// Modelled end time, s (tokens are emitted at this time).
    pub end_s: f64,
    /// Cost breakdown (all zero for an idle wait).
    pub cost: StepCost,
    /// Sequences in the step (0 for an idle wait until a request becomes ready).
    pub num_seqs: u32,
    /// Tokens processed in the step.
    pub tokens: u32,
}

/// Counters since the engine started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineCounters {
    /// Steps executed (idle waits excluded).
    pub steps: u64,
    /// Prompt tokens prefilled (counted once per request, when its prefill completes).
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub generation_tokens: u64,
    /// Sequences finished.
    pub finished: u64,
    /// Recompute preemptions.
    pub preemptions: u64,
    /// Prompt tokens looked up in the prefix cache (sequences submitted with block hashes).
    pub prefix_cache_queries: u64,
    /// Prompt tokens found in the prefix cache (not prefilled).
    pub prefix_cache_hits: u64,
    /// Cached blocks evicted (LRU).
    pub prefix_cache_evictions: u64,
    /// Successful [`Engine::reset_prefix_cache`] calls (vLLM `POST /reset_prefix_cache`).
    pub prefix_cache_resets: u64,
    /// Prompt tokens found in the host-DRAM tier after the GPU hits (loaded, not prefilled;
    /// 0 without KV offload).
    pub host_cache_hits: u64,
}

/// The scheduler state. `P` is the caller's per-sequence handle (cloned into [`Emit`]).
pub struct Engine<P> {
    cfg: Arc<EngineConfig>,
    now_s: f64,
    waiting: VecDeque<Seq<P>>,
    running: Vec<Seq<P>>,
    free_blocks: u32,
    counters: EngineCounters,
    sched: Vec<(usize, u32)>,
    chunks: Vec<Chunk>,
    cache: PrefixCache,
    /// The host-DRAM tier's blocks (empty without KV offload).
    host: PrefixCache,
    /// Tokens the step being scheduled loads from the DRAM tier.
    step_load_tokens: u64,
    /// Requests ready (front end done) at or before this time have reached the scheduler
    /// (see [`EngineConfig::scheduler_recv_interval`]).
    recv_horizon_s: f64,
    /// SGLang's recv-skipper counter: +1 per decode step, +interval after a prefill step.
    recv_counter: u32,
    /// Whether the previous step prefilled (a chunk of more than one token).
    last_prefilled: bool,
}

impl<P: Clone> Engine<P> {
    /// An empty engine at modelled time 0.
    pub fn new(cfg: Arc<EngineConfig>) -> Self {
        let free_blocks = cfg.kv_blocks;
        Engine {
            cfg,
            now_s: 0.0,
            waiting: VecDeque::new(),
            running: Vec::new(),
            free_blocks,
            counters: EngineCounters::default(),
            sched: Vec::new(),
            chunks: Vec::new(),
            cache: PrefixCache::default(),
            host: PrefixCache::default(),
            step_load_tokens: 0,
            recv_horizon_s: 0.0,
            recv_counter: 0,
            last_prefilled: false,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Arc<EngineConfig> {
        &self.cfg
    }

    /// Current modelled time, s.
    pub fn now_s(&self) -> f64 {
        self.now_s
    }

    /// Queues a sequence (FCFS). `spec.output_tokens` is clamped to ≥ 1.
    pub fn submit(&mut self, payload: P, spec: SeqSpec) {
        self.submit_with_prefix(payload, spec, Vec::new());
    }

    /// Queues a sequence whose prompt's full KV blocks have the chain hashes `hashes`
    /// (`hashes[i]` identifies tokens `0..(i+1)·kv_block_size`), so cached blocks skip prefill.
    ///
    /// The queue stays in arrival order (`ready_at_s`, ties in submission order): a submission
    /// with an earlier ready time than sequences already queued goes before them. On the wall
    /// clock requests are submitted when their body is parsed, and a large body that arrived
    /// first is parsed after a small one that arrived later; queued in submission order, a burst
    /// (an AgentX window's start, every lane at once) was admitted shortest-body-first, which
    /// the virtual clock (bodies read in arrival order) does not do (docs/benchmarks.md §9.3).
    pub fn submit_with_prefix(&mut self, payload: P, mut spec: SeqSpec, mut hashes: Vec<u64>) {
        spec.output_tokens = spec.output_tokens.max(1);
        hashes.truncate((spec.prompt_tokens / self.cfg.kv_block_size.max(1)) as usize);
        let at = self
            .waiting
            .iter()
            .rposition(|s| s.spec.ready_at_s <= spec.ready_at_s)
            .map_or(0, |i| i + 1);
        self.waiting.insert(
            at,
            Seq {
                payload,
                spec,
                generated: 0,
                computed: 0,
                blocks: 0,
                cached: 0,
                hashes,
                probe: Probe::default(),
            },
        );
    }

    /// Queues a sequence whose prompt KV arrived from a prefill worker and whose first
    /// `generated` tokens were sampled there (disaggregated decode, [`crate::fleet`]): it is
    /// admitted with its whole prompt computed, so its first step is a decode. If it is
    /// preempted later, it recomputes the prompt here (the KV was dropped).
    pub fn submit_preloaded(&mut self, payload: P, mut spec: SeqSpec, generated: u32) {
        spec.output_tokens = spec.output_tokens.max(generated + 1);
        self.waiting.push_back(Seq {
            payload,
            spec,
            generated,
            computed: spec.prompt_tokens + generated - 1,
            blocks: 0,
            cached: 0,
            hashes: Vec::new(),
            probe: Probe::default(),
        });
    }

    /// Leading blocks of `hashes` in the prefix cache, without touching them (a router's
    /// question, Dynamo's KV-aware routing).
    pub fn prefix_overlap(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|&&h| self.cache.contains(h))
            .count()
    }

    /// Blocks currently in the prefix cache.
    pub fn cached_blocks(&self) -> usize {
        self.cache.len()
    }

    /// Drops every cached prefix block (vLLM `reset_prefix_cache`). Like vLLM, which refuses
    /// while blocks are still in use, it only resets an idle engine: `Ok(blocks dropped)`, or
    /// `Err(sequences queued or running)` with the cache untouched.
    pub fn reset_prefix_cache(&mut self) -> Result<usize, usize> {
        if !self.is_idle() {
            return Err(self.running.len() + self.waiting.len());
        }
        let n = self.cache.len();
        self.cache.clear();
        // a flush empties the DRAM tier too (SGLang /flush_cache: a cold cache)
        self.host.clear();
        self.counters.prefix_cache_resets += 1;
        Ok(n)
    }

    /// Drops every sequence for which `keep` returns false (cancelled by the client), freeing
    /// its KV blocks. Returns how many were dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(&P) -> bool) -> usize {
        let before = self.running.len() + self.waiting.len();
        let mut freed = 0;
        self.running.retain(|s| {
            let k = keep(&s.payload);
            if !k {
                freed += s.blocks;
            }
            k
        });
        self.waiting.retain(|s| {
            let k = keep(&s.payload);
            if !k {
                freed += s.blocks;
            }
            k
        });
        self.free_blocks += freed;
        before - self.running.len() - self.waiting.len()
    }

    /// Removes every sequence (running and waiting), freeing the KV cache; returns their
    /// payloads (used to abort them at shutdown).
    pub fn drain(&mut self) -> Vec<P> {
        self.free_blocks = self.cfg.kv_blocks;
        let mut v: Vec<P> = self.running.drain(..).map(|s| s.payload).collect();
        v.extend(self.waiting.drain(..).map(|s| s.payload));
        v
    }

    /// Nothing queued or running.
    pub fn is_idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty()
    }

    /// Sequences in the running batch.
    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    /// Sequences queued for admission: past their front-end latency (`ready_at_s <= now`) but
    /// not running (vLLM's `num_requests_waiting`). The queue is FIFO with non-decreasing
    /// ready times (preempted sequences go back to the front), so this counts from the front.
    pub fn num_waiting(&self) -> usize {
        self.waiting
            .iter()
            .take_while(|s| s.spec.ready_at_s <= self.now_s)
            .count()
    }

    /// Sequences submitted but still in their front-end latency.
    pub fn num_in_frontend(&self) -> usize {
        self.waiting.len() - self.num_waiting()
    }

    /// KV blocks in use.
    pub fn kv_used_blocks(&self) -> u32 {
        self.cfg.kv_blocks - self.free_blocks
    }

    /// Counters since start.
    pub fn counters(&self) -> EngineCounters {
        self.counters
    }

    /// Keeps the cache within the KV budget left by running sequences (their own cached
    /// blocks are the same physical blocks, so they do not count twice).
    fn evict_cache(&mut self) {
        if self.cache.len() == 0 {
            return;
        }
        let prefilled_cached: usize = self
            .running
            .iter()
            .filter(|s| s.generated > 0)
            .map(|s| s.hashes.len())
            .sum();
        let cap = (self.free_blocks as usize + prefilled_cached).min(self.cfg.kv_blocks as usize);
        self.counters.prefix_cache_evictions += self.cache.evict_to(cap);
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.cfg.kv_block_size)
    }

    fn preempt_last(&mut self) {
        let mut s = self.running.pop().expect("preempt with a running sequence");
        self.free_blocks += s.blocks;
        s.blocks = 0;
        s.computed = 0;
        self.counters.preemptions += 1;
        self.waiting.push_front(s);
    }

    /// Whether new requests reach the scheduler before this step (SGLang's recv skipper,
    /// [`EngineConfig::scheduler_recv_interval`]): always at interval 1 or with nothing
    /// running (an idle loop polls every iteration); else after `interval` decode steps or
    /// right after a prefill step. Moves the horizon of admissible ready times to now.
    fn recv(&mut self) {
        let interval = self.cfg.scheduler_recv_interval.max(1);
        if interval == 1 || self.running.is_empty() {
            self.recv_horizon_s = self.now_s;
            self.recv_counter = 0;
            return;
        }
        self.recv_counter += if self.last_prefilled { interval } else { 1 };
        if self.recv_counter >= interval {
            self.recv_counter = 0;
            self.recv_horizon_s = self.now_s;
        }
    }

    /// Runs one step: schedules, charges its modelled duration, advances the clock and pushes
    /// the tokens it produced into `out` (which is not cleared). When nothing can run yet but a
    /// request is waiting for its ready time, the clock jumps there and an idle [`StepInfo`]
    /// (`num_seqs == 0`) is returned. Returns `None` when the engine is idle.
    pub fn step(&mut self, out: &mut Vec<Emit<P>>) -> Option<StepInfo> {
        if self.is_idle() {
            return None;
        }
        self.recv();
        self.step_load_tokens = 0;
        let mut budget = self.cfg.max_num_batched_tokens;
        self.sched.clear();
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let s = &self.running[i];
            let want = (s.spec.prompt_tokens + s.generated - s.computed).min(budget);
            let need = self.blocks_for(s.computed + want).saturating_sub(s.blocks);
            let mut self_preempted = false;
            while need > self.free_blocks {
                preempted = true;
                if self.running.len() - 1 == i {
                    self.preempt_last();
                    self_preempted = true;
                    break;
                }
                self.preempt_last();
            }
            if self_preempted {
                break;
            }
            self.free_blocks -= need;
            self.running[i].blocks += need;
            self.sched.push((i, want));
            budget -= want;
            i += 1;
        }
        if !preempted {
            while budget > 0 && self.running.len() < self.cfg.max_num_seqs as usize {
                let Some(front) = self.waiting.front_mut() else {
                    break;
                };
                if front.spec.ready_at_s > self.now_s.min(self.recv_horizon_s) {
                    break;
                }
                let fresh = front.computed == 0 && front.generated == 0 && !front.hashes.is_empty();
                // (tokens hit in GPU memory, tokens hit in the DRAM tier after them)
                let (gpu_tokens, host_tokens) = if fresh {
                    let bs = self.cfg.kv_block_size;
                    // a head that did not fit last step is looked up again: replayed while exact
                    let host = self.cfg.host_kv.is_some().then_some(&mut self.host);
                    let (g, h) = front.probe.lookup(&mut self.cache, host, &front.hashes);
                    let cap = front.spec.prompt_tokens.saturating_sub(1);
                    let all = ((g + h) as u32 * bs).min(cap);
                    let gpu = (g as u32 * bs).min(all);
                    (gpu, all - gpu)
                } else {
                    (0, 0)
                };
                let hit_tokens = gpu_tokens + host_tokens;
                if fresh {
                    self.counters.prefix_cache_queries += u64::from(front.spec.prompt_tokens);
                    self.counters.prefix_cache_hits += u64::from(gpu_tokens);
                    self.counters.host_cache_hits += u64::from(host_tokens);
                }
                let bs = self.cfg.kv_block_size;
                let front = self.waiting.front_mut().expect("front exists");
                // A sequence that is not fresh keeps its computed tokens: 0 for one submitted
                // without hashes or re-admitted after a preemption (`preempt_last` zeroes
                // them, so a single engine recomputes from scratch as before), the prompt for
                // one preloaded from a prefill worker (`submit_preloaded`).
                if fresh {
                    front.computed = hit_tokens;
                    front.cached = hit_tokens;
                }
                let want =
                    (front.spec.prompt_tokens + front.generated - front.computed).min(budget);
                let need = (front.computed + want).div_ceil(bs);
                if need > self.free_blocks {
                    // not admitted: undo the hit so the next attempt looks the cache up again
                    let front = self.waiting.front_mut().expect("front exists");
                    if fresh {
                        self.counters.prefix_cache_queries -= u64::from(front.spec.prompt_tokens);
                        self.counters.prefix_cache_hits -= u64::from(gpu_tokens);
                        self.counters.host_cache_hits -= u64::from(host_tokens);
                        front.computed = 0;
                        front.cached = 0;
                    }
                    break;
                }
                self.step_load_tokens += u64::from(host_tokens);
                let mut s = self.waiting.pop_front().expect("front exists");
                self.free_blocks -= need;
                s.blocks = need;
                self.running.push(s);
                self.sched.push((self.running.len() - 1, want));
                budget -= want;
            }
        }
        let start_s = self.now_s;
        if self.sched.is_empty() {
            // Nothing runnable: the queue head is still in its front-end latency.
            let next = self.waiting.front().map(|s| s.spec.ready_at_s)?;
            if next <= self.now_s {
                // Cannot make progress (a request larger than the whole KV budget); the HTTP
                // layer rejects those, so drop it rather than spin.
                self.waiting.pop_front();
                return Some(StepInfo {
                    start_s,
                    end_s: start_s,
                    cost: StepCost::default(),
                    num_seqs: 0,
                    tokens: 0,
                });
            }
            self.now_s = next;
            // an idle SGLang scheduler loop polls its input every iteration
            self.recv_horizon_s = next;
            self.recv_counter = 0;
            return Some(StepInfo {
                start_s,
                end_s: next,
                cost: StepCost::default(),
                num_seqs: 0,
                tokens: 0,
            });
        }
        self.chunks.clear();
        let mut tokens = 0;
        for &(idx, n) in &self.sched {
            let s = &self.running[idx];
            tokens += n;
            self.chunks.push(Chunk {
                context: s.computed,
                tokens: n,
                samples: s.computed + n == s.spec.prompt_tokens + s.generated,
            });
        }
        // DRAM-tier hits admitted in this step are loaded during it (× the planted slowdown,
        // like every other part of the step)
        let load_s = self.cfg.host_load_s(self.step_load_tokens) * self.cfg.slowdown;
        let cost = self.cfg.step_cost(&self.chunks).with_host_load(load_s);
        self.last_prefilled = self.chunks.iter().any(|c| c.tokens > 1);
        self.now_s += cost.total_s;
        self.counters.steps += 1;
        let mut any_finished = false;
        for &(idx, n) in &self.sched {
            let s = &mut self.running[idx];
            s.computed += n;
            if s.computed == s.spec.prompt_tokens + s.generated {
                if s.generated == 0 {
                    self.counters.prompt_tokens += s.spec.prompt_tokens as u64;
                    for &h in &s.hashes {
                        self.cache.touch(h);
                    }
                    if let Some(t) = &self.cfg.host_kv {
                        // write-through to the DRAM tier, LRU within its capacity
                        for &h in &s.hashes {
                            self.host.touch(h);
                        }
                        self.host.evict_to(t.blocks as usize);
                    }
                }
                s.generated += 1;
                self.counters.generation_tokens += 1;
                let finished = s.generated >= s.spec.output_tokens;
                any_finished |= finished;
                out.push(Emit {
                    payload: s.payload.clone(),
                    generated: s.generated,
                    finished,
                    cached_tokens: s.cached,
                });
            }
        }
        if any_finished {
            let mut freed = 0;
            let mut done = 0;
            self.running.retain(|s| {
                let keep = s.generated < s.spec.output_tokens;
                if !keep {
                    freed += s.blocks;
                    done += 1;
                }
                keep
            });
            self.free_blocks += freed;
            self.counters.finished += done;
        }
        self.evict_cache();
        Some(StepInfo {
            start_s,
            end_s: self.now_s,
            cost,
            num_seqs: self.sched.len() as u32,
            tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(g: &str, m: &str) -> Arc<EngineConfig> {
        Arc::new(EngineConfig::from_presets(g, m, 1).unwrap())
    }

    fn run_one(e: &mut Engine<u32>, id: u32, prompt: u32, hashes: Vec<u64>) -> f64 {
        let t0 = e.now_s();
        e.submit_with_prefix(
            id,
            SeqSpec {
                prompt_tokens: prompt,
                output_tokens: 1,
                ready_at_s: t0,
            },
            hashes,
        );
        let mut out = Vec::new();
        while e.step(&mut out).is_some() {}
        e.now_s() - t0
    }

    #[test]
    fn prefix_cache_hits_skip_prefill_and_evict_under_pressure() {
        let mut c = (*cfg("h200", "qwen3-8b")).clone();
        c.kv_blocks = 64;
        let bs = c.kv_block_size;
        let mut e: Engine<u32> = Engine::new(Arc::new(c));
        let a: Vec<u64> = (1..=40).collect();
        let cold = run_one(&mut e, 1, 40 * bs, a.clone());
        let warm = run_one(&mut e, 2, 40 * bs, a.clone());
        let k = e.counters();
        assert_eq!(k.prefix_cache_queries, 2 * u64::from(40 * bs));
        assert_eq!(k.prefix_cache_hits, u64::from(40 * bs - 1));
        assert!(
            warm < cold / 2.0,
            "a cached prompt prefills faster: {warm} vs {cold}"
        );
        // a different 60-block prompt needs the budget: most of the cached blocks go (LRU)
        let b: Vec<u64> = (100..160).collect();
        run_one(&mut e, 3, 60 * bs, b);
        assert!(
            e.counters().prefix_cache_evictions >= 36,
            "{:?}",
            e.counters()
        );
        let again = run_one(&mut e, 4, 40 * bs, a);
        assert!(
            again > warm * 2.0,
            "after eviction the prompt is prefilled again: {again} vs {warm}"
        );
        assert!(e.cached_blocks() <= 64);
    }

    #[test]
    fn reset_prefix_cache_makes_a_repeated_prompt_miss_and_is_refused_while_busy() {
        let mut c = (*cfg("h200", "qwen3-8b")).clone();
        c.kv_blocks = 64;
        let bs = c.kv_block_size;
        let mut e: Engine<u32> = Engine::new(Arc::new(c));
        let a: Vec<u64> = (1..=10).collect();
        let cold = run_one(&mut e, 1, 10 * bs, a.clone());
        assert_eq!(e.cached_blocks(), 10);
        assert_eq!(e.reset_prefix_cache(), Ok(10));
        assert_eq!(e.cached_blocks(), 0);
        let again = run_one(&mut e, 2, 10 * bs, a.clone());
        let k = e.counters();
        assert_eq!(
            k.prefix_cache_hits, 0,
            "after the reset the same prompt misses"
        );
        assert_eq!(k.prefix_cache_resets, 1);
        assert!((again - cold).abs() < 1e-9, "cold again: {again} vs {cold}");
        // a queued sequence blocks the reset (vLLM refuses while blocks are in use)
        e.submit_with_prefix(
            3,
            SeqSpec {
                prompt_tokens: 10 * bs,
                output_tokens: 4,
                ready_at_s: e.now_s(),
            },
            a,
        );
        assert_eq!(e.reset_prefix_cache(), Err(1));
        assert_eq!(e.cached_blocks(), 10, "untouched");
        assert_eq!(e.counters().prefix_cache_resets, 1);
    }

    #[test]
    fn a_lone_request_prefills_then_decodes_one_token_per_step() {
        let c = cfg("h100", "qwen3-8b");
        let mut e: Engine<u32> = Engine::new(c.clone());
        e.submit(
            7,
            SeqSpec {
                prompt_tokens: 100,
                output_tokens: 3,
                ready_at_s: 0.0,
            },
        );
        let mut out = Vec::new();
        let s1 = e.step(&mut out).unwrap();
        assert_eq!((s1.num_seqs, s1.tokens), (1, 100));
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].payload, out[0].generated, out[0].finished),
            (7, 1, false)
        );
        assert_eq!(e.kv_used_blocks(), 100u32.div_ceil(16));
        out.clear();
        let s2 = e.step(&mut out).unwrap();
        assert_eq!(s2.tokens, 1);
        assert!(s2.start_s == s1.end_s && s2.end_s > s2.start_s);
        out.clear();
        e.step(&mut out).unwrap();
        assert!(out[0].finished && out[0].generated == 3);
        assert!(e.is_idle());
        assert_eq!(e.kv_used_blocks(), 0);
        assert_eq!(e.counters().prompt_tokens, 100);
        assert_eq!(e.counters().generation_tokens, 3);
        assert!(e.step(&mut out).is_none());
    }

    #[test]
    fn the_queue_admits_in_arrival_order_not_submission_order() {
        // B arrives after A but is submitted first (A's larger body was parsed later, wall
        // clock): A is admitted first, and nothing waits behind B's later ready time
        let c = cfg("h100", "qwen3-8b");
        let mut e: Engine<u32> = Engine::new(c.clone());
        let spec = |ready_at_s| SeqSpec {
            prompt_tokens: 20_000,
            output_tokens: 2,
            ready_at_s,
        };
        e.submit(2, spec(0.002));
        e.submit(1, spec(0.001));
        e.submit(3, spec(0.002));
        let mut out = Vec::new();
        let mut first = vec![];
        while first.len() < 3 {
            out.clear();
            e.step(&mut out).unwrap();
            first.extend(out.iter().filter(|o| o.generated == 1).map(|o| o.payload));
        }
        assert_eq!(first, vec![1, 2, 3], "arrival order, ties as submitted");
    }

    #[test]
    fn long_prompts_are_chunked_to_the_token_budget() {
        let c = cfg("h100", "qwen3-8b");
        let mut e: Engine<u32> = Engine::new(c.clone());
        e.submit(
            1,
            SeqSpec {
                prompt_tokens: 20_000,
                output_tokens: 2,
                ready_at_s: 0.0,
            },
        );
        let mut out = Vec::new();
        let mut tokens = vec![];
        while out.is_empty() {
            tokens.push(e.step(&mut out).unwrap().tokens);
        }
        assert_eq!(tokens, vec![8192, 8192, 3616]);
    }

    #[test]
    fn requests_wait_for_their_ready_time() {
        let c = cfg("h100", "qwen3-8b");
        let mut e: Engine<u32> = Engine::new(c);
        e.submit(
            1,
            SeqSpec {
                prompt_tokens: 10,
                output_tokens: 1,
                ready_at_s: 0.025,
            },
        );
        let mut out = Vec::new();
        let idle = e.step(&mut out).unwrap();
        assert_eq!((idle.num_seqs, idle.end_s), (0, 0.025));
        let s = e.step(&mut out).unwrap();
        assert_eq!(s.start_s, 0.025);
        assert!(out[0].finished);
    }

    /// SGLang `--scheduler-recv-interval 10`: a request that arrives while another decodes
    /// is admitted only at the next poll, 10 decode steps after the last one (a prefill step
    /// makes the very next step poll); at interval 1 it is admitted at the next step.
    #[test]
    fn a_recv_interval_delays_admission_to_the_next_poll() {
        let steps_until_admitted = |interval: u32| {
            let mut c = EngineConfig::from_presets("h100", "qwen3-8b", 1).unwrap();
            c.scheduler_recv_interval = interval;
            let mut e: Engine<u32> = Engine::new(Arc::new(c));
            let spec = |ready_at_s| SeqSpec {
                prompt_tokens: 100,
                output_tokens: 100,
                ready_at_s,
            };
            e.submit(1, spec(0.0));
            let mut out = Vec::new();
            // the prefill, the poll right after it, then two decode steps
            for _ in 0..4 {
                e.step(&mut out).unwrap();
            }
            e.submit(2, spec(e.now_s()));
            let mut n = 0;
            loop {
                out.clear();
                n += 1;
                let s = e.step(&mut out).unwrap();
                if s.tokens > 1 {
                    return n;
                }
            }
        };
        assert_eq!(steps_until_admitted(1), 1);
        // polled after step 2 (the one after the prefill); 3 decode steps since then, so the
        // poll comes 7 decode steps later and admits on the 8th
        assert_eq!(steps_until_admitted(10), 8);
    }

    #[test]
    fn max_num_seqs_caps_the_batch_and_the_rest_wait() {
        let mut c = EngineConfig::from_presets("h100", "qwen3-8b", 1).unwrap();
        c.max_num_seqs = 4;
        let mut e: Engine<u32> = Engine::new(Arc::new(c));
        for i in 0..10 {
            e.submit(
                i,
                SeqSpec {
                    prompt_tokens: 10,
                    output_tokens: 50,
                    ready_at_s: 0.0,
                },
            );
        }
        let mut out = Vec::new();
        e.step(&mut out).unwrap();
        assert_eq!((e.num_running(), e.num_waiting()), (4, 6));
        let mut e2: Engine<u32> = Engine::new(cfg("h100", "qwen3-8b"));
        e2.submit(
            0,
            SeqSpec {
                prompt_tokens: 10,
                output_tokens: 5,
                ready_at_s: 1.0,
            },
        );
        assert_eq!((e2.num_waiting(), e2.num_in_frontend()), (0, 1));
    }

    #[test]
    fn a_full_kv_cache_preempts_the_newest_and_recomputes_it() {
        let mut c = EngineConfig::from_presets("h100", "qwen3-8b", 1).unwrap();
        c.kv_blocks = 20; // 320 tokens
        let mut e: Engine<u32> = Engine::new(Arc::new(c));
        for i in 0..3 {
            e.submit(
                i,
                SeqSpec {
                    prompt_tokens: 90,
                    output_tokens: 60,
                    ready_at_s: 0.0,
                },
            );
        }
        let mut out = Vec::new();
        let mut finished = vec![];
        let mut steps = 0;
        while e.step(&mut out).is_some() {
            for o in out.drain(..) {
                if o.finished {
                    finished.push(o.payload);
                }
            }
            steps += 1;
            assert!(steps < 10_000);
            assert!(e.kv_used_blocks() <= 20);
        }
        finished.sort();
        assert_eq!(finished, vec![0, 1, 2]);
        assert!(e.counters().preemptions > 0);
        // Each request generated exactly its 60 tokens despite recomputation.
        assert_eq!(e.counters().generation_tokens, 180);
    }
}
