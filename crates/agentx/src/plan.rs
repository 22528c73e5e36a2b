//! One trace → its conversations (root + one child per subagent), their turns with messages,
//! recorded timing, join gates, and the theoretical prefix-cache values; plus the wall-clock
//! snapshot at a lane's start instant t* (MEASUREMENT.md Part 2 §5.4 "Lanes", "Warmup").
//!
//! Rules (agentx-harness 1.0.12 `weka_trace.py`, `trajectory_source.py`, read and re-stated):
//! * inter-turn delay = recorded end-to-start gap `t_k − (t_{k−1} + api_{k−1})`, ≥ 0;
//! * a subagent's inner `t` before its spawn `t` is relative to the spawn;
//! * a subagent spawns on completion of the last root turn before it (none → dropped) and joins
//!   the first later root turn whose `t` ≥ its recorded end (`t + duration_ms`, else the end of
//!   its last request); none → background. Subagents with the same (spawning, join) turns
//!   form one branch, whose start is the earliest spawn time;
//! * `max_completion_tokens` = recorded `out` (0 → 1);
//! * theoretical hits: one seen-set of hash ids per trace, requests in (t, outer index,
//!   chain, k) order; hits = leading ids already seen.
//!
//! Not implemented (documented gap): the harness's hash-chain detection that splits flat
//! top-level fan-outs into `::fa:` conversations and a subagent's inner chains into
//! `:fa:`/`:aux:` siblings; servebench replays what the harness replays with
//! `AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=0` (one root, one child per subagent).

use std::collections::HashSet;
use std::sync::Arc;

use crate::synth::{reconstruct, BlockSource, Corpus, Segment, TokenCodec, TurnShape};
use crate::trace::{Trace, TraceEntry, TraceRequest};

/// One turn of a conversation.
#[derive(Debug)]
pub struct Turn {
    /// Recorded start, ms in root-trace coordinates.
    pub t_ms: f64,
    /// End-to-start gap after the previous turn, ms (`None` for turn 0).
    pub delay_ms: Option<f64>,
    /// Recorded API time, ms.
    pub api_ms: f64,
    /// `max_completion_tokens` (recorded `out`, at least 1).
    pub max_tokens: u32,
    /// Recorded `in`, tokens.
    pub input_tokens: u32,
    /// The full message array (shared segments).
    pub messages: Vec<Arc<Segment>>,
    /// Theoretical prefix-cache hit blocks.
    pub hit_blocks: u32,
    /// Hash blocks of the request.
    pub total_blocks: u32,
    /// Branches spawned when this turn completes.
    pub spawns: Vec<usize>,
    /// Branches that must complete before this turn starts.
    pub joins: Vec<usize>,
}

/// A conversation (root or subagent child).
#[derive(Debug)]
pub struct Conversation {
    /// `trace` or `trace::sa:<agent id>`.
    pub id: String,
    /// Turns.
    pub turns: Vec<Turn>,
    /// Branch this child belongs to (`None` for the root).
    pub branch: Option<usize>,
}

/// A group of subagents spawned by one root turn and joined by one later root turn.
#[derive(Debug, Clone)]
pub struct Branch {
    /// Child conversation indices.
    pub children: Vec<usize>,
    /// Root turn whose completion spawns the branch.
    pub spawning_turn: usize,
    /// Root turn gated on the branch (`None` = background).
    pub join_turn: Option<usize>,
    /// Earliest spawn time, ms.
    pub start_ms: f64,
}

/// Everything replayed for one trace; conversation 0 is the root.
#[derive(Debug)]
pub struct TracePlan {
    /// Trace id.
    pub trace_id: String,
    /// Conversations.
    pub convs: Vec<Conversation>,
    /// Branches.
    pub branches: Vec<Branch>,
    /// Recorded `out` of the trace's own `n`/`s` requests by index (aggregate lookup).
    pub expected_out: Vec<u32>,
}

const JOIN_EPS: f64 = 1e-6;

fn end_to_start(t: f64, prev: &TraceRequest) -> f64 {
    ((t - prev.t) * 1000.0 - prev.api_time * 1000.0).max(0.0)
}

/// Builds the plan of one trace.
pub fn build(trace: &Trace, corpus: &Corpus, codec: &dyn TokenCodec) -> Result<TracePlan, String> {
    let mut src = BlockSource::new(corpus, codec, &trace.id);
    // root requests with outer indices
    let normals: Vec<(usize, &TraceRequest)> = trace
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            TraceEntry::Request(r) => Some((i, r)),
            _ => None,
        })
        .collect();
    let shapes: Vec<TurnShape<'_>> = normals
        .iter()
        .map(|(_, r)| TurnShape {
            hash_ids: &r.hash_ids,
            input: r.input_tokens as usize,
            output: r.output_tokens as usize,
        })
        .collect();
    let msgs = reconstruct(
        &mut src,
        &trace.id,
        &shapes,
        trace.tool_tokens as usize,
        trace.system_tokens as usize,
    )
    .map_err(|e| format!("trace {}: {e}", trace.id))?;
    let mut root_turns: Vec<Turn> = Vec::with_capacity(normals.len());
    for (k, ((_, r), m)) in normals.iter().zip(msgs).enumerate() {
        root_turns.push(Turn {
            t_ms: r.t * 1000.0,
            delay_ms: (k > 0).then(|| end_to_start(r.t, normals[k - 1].1)),
            api_ms: r.api_time * 1000.0,
            max_tokens: r.output_tokens.max(1),
            input_tokens: r.input_tokens,
            messages: m,
            hit_blocks: 0,
            total_blocks: r.hash_ids.len() as u32,
            spawns: Vec::new(),
            joins: Vec::new(),
        });
    }
    let mut convs = vec![Conversation {
        id: trace.id.clone(),
        turns: root_turns,
        branch: None,
    }];
    // metric records: (t, outer, chain, k, conv, turn)
    type MetricRow = (f64, usize, usize, usize, usize, usize, Vec<u64>);
    let mut metric: Vec<MetricRow> = normals
        .iter()
        .enumerate()
        .map(|(k, (oi, r))| (r.t, *oi, 0, 0, 0, k, r.hash_ids.clone()))
        .collect();

    let mut branches: Vec<Branch> = Vec::new();
    let mut keys: Vec<(usize, Option<usize>)> = Vec::new();
    let mut seen_agents = HashSet::new();
    for (oi, e) in trace.entries.iter().enumerate() {
        let TraceEntry::Subagent(sa) = e else {
            continue;
        };
        let Some(preceding) = normals.iter().rposition(|(o, _)| *o < oi) else {
            continue; // no spawning parent turn: dropped (as the harness does)
        };
        if !seen_agents.insert(sa.agent_id.clone()) {
            return Err(format!(
                "trace {}: duplicate subagent agent_id `{}`",
                trace.id, sa.agent_id
            ));
        }
        let abs = |r: &TraceRequest| {
            if r.t + JOIN_EPS < sa.t {
                sa.t + r.t
            } else {
                r.t
            }
        };
        let mut reqs: Vec<(usize, TraceRequest)> = sa
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut r = r.clone();
                r.t = abs(&r);
                (i, r)
            })
            .collect();
        reqs.sort_by(|a, b| a.1.t.total_cmp(&b.1.t).then(a.0.cmp(&b.0)));
        let sa_end = match sa.duration_ms {
            Some(d) => sa.t + (d / 1000.0).max(0.0),
            None => reqs
                .iter()
                .map(|(_, r)| r.t + r.api_time)
                .fold(sa.t, f64::max),
        };
        let join = normals
            .iter()
            .enumerate()
            .find(|(_, (o, r))| *o > oi && r.t + JOIN_EPS >= sa_end)
            .map(|(pos, _)| pos);
        let conv_id = format!("{}::sa:{}", trace.id, sa.agent_id);
        let shapes: Vec<TurnShape<'_>> = reqs
            .iter()
            .map(|(_, r)| TurnShape {
                hash_ids: &r.hash_ids,
                input: r.input_tokens as usize,
                output: r.output_tokens as usize,
            })
            .collect();
        let msgs = reconstruct(
            &mut src,
            &conv_id,
            &shapes,
            sa.tool_tokens as usize,
            sa.system_tokens as usize,
        )
        .map_err(|e| format!("trace {}: subagent {}: {e}", trace.id, sa.agent_id))?;
        let ci = convs.len();
        let mut turns = Vec::with_capacity(reqs.len());
        for (k, ((_, r), m)) in reqs.iter().zip(msgs).enumerate() {
            turns.push(Turn {
                t_ms: r.t * 1000.0,
                delay_ms: (k > 0).then(|| end_to_start(r.t, &reqs[k - 1].1)),
                api_ms: r.api_time * 1000.0,
                max_tokens: r.output_tokens.max(1),
                input_tokens: r.input_tokens,
                messages: m,
                hit_blocks: 0,
                total_blocks: r.hash_ids.len() as u32,
                spawns: Vec::new(),
                joins: Vec::new(),
            });
        }
        for (k, (_, r)) in reqs.iter().enumerate() {
            metric.push((r.t, oi, 0, k, ci, k, r.hash_ids.clone()));
        }
        let key = (preceding, join);
        let bi = match keys.iter().position(|k| *k == key) {
            Some(b) => b,
            None => {
                keys.push(key);
                branches.push(Branch {
                    children: Vec::new(),
                    spawning_turn: preceding,
                    join_turn: join,
                    start_ms: f64::INFINITY,
                });
                branches.len() - 1
            }
        };
        branches[bi].children.push(ci);
        branches[bi].start_ms = branches[bi].start_ms.min(sa.t * 1000.0);
        convs.push(Conversation {
            id: conv_id,
            turns,
            branch: Some(bi),
        });
    }
    for (bi, b) in branches.iter().enumerate() {
        convs[0].turns[b.spawning_turn].spawns.push(bi);
        if let Some(j) = b.join_turn {
            convs[0].turns[j].joins.push(bi);
        }
    }
    metric.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    let mut seen: HashSet<u64> = HashSet::new();
    for (_, _, _, _, c, k, ids) in &metric {
        let hits = ids.iter().take_while(|h| seen.contains(h)).count();
        convs[*c].turns[*k].hit_blocks = hits as u32;
        seen.extend(ids.iter().copied());
    }
    Ok(TracePlan {
        trace_id: trace.id.clone(),
        convs,
        branches,
        expected_out: normals.iter().map(|(_, r)| r.output_tokens).collect(),
    })
}

/// One live stream at t*.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamState {
    /// Conversation index.
    pub conv: usize,
    /// Next turn to dispatch.
    pub next_turn: usize,
    /// `max(0, t(next turn) − t*)`, ms.
    pub offset_ms: f64,
}

impl TracePlan {
    /// (min, max) of every turn timestamp of the trace, ms.
    pub fn time_bounds(&self) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for c in &self.convs {
            for t in &c.turns {
                lo = lo.min(t.t_ms);
                hi = hi.max(t.t_ms);
            }
        }
        (lo, hi)
    }

    fn next_at_or_after(&self, conv: usize, t_star: f64) -> Option<usize> {
        self.convs[conv].turns.iter().position(|t| t.t_ms >= t_star)
    }

    /// The live streams at `t_star` (harness `_snapshot_for`): the root's next turn at/after
    /// t*, and the children of branches already spawned whose next turn is at/after t*.
    /// `None` = nothing live (the lane is unspawnable at this t*).
    pub fn snapshot(&self, t_star: f64) -> Option<Vec<StreamState>> {
        let root_next = self.next_at_or_after(0, t_star);
        let mut children = Vec::new();
        for b in &self.branches {
            if t_star < b.start_ms {
                let spawn_ts = self.convs[0].turns[b.spawning_turn].t_ms;
                let not_done = t_star < spawn_ts || root_next.is_some_and(|n| n <= b.spawning_turn);
                if not_done {
                    continue;
                }
            }
            for &c in &b.children {
                if let Some(n) = self.next_at_or_after(c, t_star) {
                    children.push(StreamState {
                        conv: c,
                        next_turn: n,
                        offset_ms: (self.convs[c].turns[n].t_ms - t_star).max(0.0),
                    });
                }
            }
        }
        let mut states = Vec::new();
        if let Some(n) = root_next {
            states.push(StreamState {
                conv: 0,
                next_turn: n,
                offset_ms: (self.convs[0].turns[n].t_ms - t_star).max(0.0),
            });
        }
        states.extend(children);
        (!states.is_empty()).then_some(states)
    }

    /// Lane start instant: `default_rng(sha256("{seed}:{trace}:{lane}")[:8]).uniform(lo, hi)`
    /// over [min + r_min·d, min + r_max·d] of the trace's time bounds, ms.
    pub fn t_star(&self, seed: u64, lane: usize, r_min: f64, r_max: f64) -> f64 {
        let (a, b) = self.time_bounds();
        let d = b - a;
        let lo = a + r_min * d;
        let mut hi = a + r_max * d;
        if hi < lo {
            hi = lo;
        }
        if hi == lo {
            return lo;
        }
        let s = crate::rng::sha256_prefix_u64(&format!("{seed}:{}:{lane}", self.trace_id));
        crate::rng::Pcg64::default_rng(u128::from(s)).uniform(lo, hi)
    }
}
