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
//!   form one branch, whose start is the earliest spawn time; a branch whose start lies inside
//!   its spawning turn's recorded interval (`start < t + api_time`, `api_time` > 0) starts when
//!   that turn is sent ([`Branch::at_send`], harness `BranchOrchestrator.on_credit_issued`);
//! * replay barriers (harness `weka_trace._install_replay_dependencies`,
//!   `replay_dependencies.infer_cross_stream_predecessors`): within a replay scope (the root
//!   with its top-level split-off chains; each subagent with its own chains) every request
//!   waits for the latest request of each other stream that ended by its recorded start
//!   ([`Turn::after`], [`replay_predecessors`]);
//! * `max_completion_tokens` = recorded `out` (0 → 1);
//! * theoretical hits: one seen-set of hash ids per trace, requests in (t, outer index,
//!   chain, k) order; hits = leading ids already seen.
//!
//! * flattened agents (harness default `WEKA_SPLIT_FLATTENED_AGENTS=1`, [`crate::chains`]):
//!   the top-level requests split into the main chain (the root) and `::fa:`/`::aux:`/`::wg:`
//!   children, spawned by the last root turn before their first request (turn 0 when none)
//!   and joined by the first later root turn at/after their end, grouped by (spawn, join)
//!   apart from subagents; a subagent's inner requests split into `::sa:<id>` plus
//!   `:fa:`/`:aux:`/`:wg:` siblings in the subagent's branch. [`build_with`] with
//!   [`SplitOptions::off`] replays one root and one child per subagent.

use std::collections::HashSet;
use std::sync::Arc;

use crate::chains::{self, Item, Split, SplitOptions};
use crate::synth::{reconstruct, BlockSource, Corpus, Segment, TokenCodec, TurnShape, BLOCK};
use crate::trace::{Subagent, Trace, TraceEntry, TraceRequest};

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
    /// Recorded completion frontier on the other streams of its replay scope, as (conversation,
    /// turn): the turn is held, once due, until these have completed (harness
    /// `replay_dependencies.infer_cross_stream_predecessors`; see [`replay_predecessors`]).
    pub after: Vec<(usize, usize)>,
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
    /// The branch starts while its spawning turn still runs in the recording (`start_ms` <
    /// the turn's `t + api_time`, with `api_time` > 0): the harness starts it when that turn is
    /// *sent*, each child's first turn `t0 − t(spawning turn)` later
    /// (`BranchOrchestrator.on_credit_issued`); otherwise it starts when the turn completes, each
    /// child `t0 − start_ms` later.
    pub at_send: bool,
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

/// Builds the plan of one trace with the harness's default chain splitting.
pub fn build(trace: &Trace, corpus: &Corpus, codec: &dyn TokenCodec) -> Result<TracePlan, String> {
    build_with(trace, corpus, codec, &SplitOptions::default())
}

/// Turns of one conversation (messages reconstructed from `reqs` in order).
fn make_turns(
    src: &mut BlockSource<'_>,
    conv_id: &str,
    reqs: &[(usize, &TraceRequest)],
    tool: u32,
    system: u32,
) -> Result<Vec<Turn>, String> {
    let shapes: Vec<TurnShape<'_>> = reqs
        .iter()
        .map(|(_, r)| TurnShape {
            hash_ids: &r.hash_ids,
            input: r.input_tokens as usize,
            output: r.output_tokens as usize,
        })
        .collect();
    let msgs = reconstruct(src, conv_id, &shapes, tool as usize, system as usize)?;
    Ok(reqs
        .iter()
        .zip(msgs)
        .enumerate()
        .map(|(k, ((_, r), m))| Turn {
            t_ms: r.t * 1000.0,
            delay_ms: (k > 0).then(|| end_to_start(r.t, reqs[k - 1].1)),
            api_ms: r.api_time * 1000.0,
            max_tokens: r.output_tokens.max(1),
            input_tokens: r.input_tokens,
            messages: m,
            hit_blocks: 0,
            total_blocks: r.hash_ids.len() as u32,
            spawns: Vec::new(),
            joins: Vec::new(),
            after: Vec::new(),
        })
        .collect())
}

fn req_end(r: &TraceRequest) -> f64 {
    r.t + if r.api_time.is_finite() {
        r.api_time.max(0.0)
    } else {
        0.0
    }
}

fn first_hash<'a>(reqs: &[(usize, &'a TraceRequest)]) -> &'a [u64] {
    reqs.iter()
        .find(|(_, r)| !r.hash_ids.is_empty())
        .map(|(_, r)| r.hash_ids.as_slice())
        .unwrap_or(&[])
}

/// Builds the plan of one trace; `split` = the harness's flattened-agent chain splitting
/// ([`crate::chains`]; [`SplitOptions::off`] = one root, one child per subagent).
///
/// Phases (module docs give the rules): the root conversation from the top-level requests
/// (their main chain when split), one branch child per subagent chain, one child per
/// split-off top-level chain, spawn/join links on the root turns, the theoretical prefix-cache
/// hits, then the replay barriers ([`replay_predecessors`]). Errors: a reconstruction failure
/// or a duplicate subagent `agent_id`, as one line naming the trace.
pub fn build_with(
    trace: &Trace,
    corpus: &Corpus,
    codec: &dyn TokenCodec,
    split: &SplitOptions,
) -> Result<TracePlan, String> {
    // root requests with outer indices
    let all_normals: Vec<Item<'_>> = trace
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            TraceEntry::Request(r) => Some((i, r)),
            _ => None,
        })
        .collect();
    // flattened agents at the top level: the main chain stays the root, workers are children
    let (normals, flat) = if split.enabled && all_normals.len() > 1 {
        let s = chains::split(&all_normals, split);
        if s.workers.is_empty() {
            (all_normals.clone(), None)
        } else {
            (s.main.clone(), Some(s))
        }
    } else {
        (all_normals.clone(), None)
    };
    let mut b = PlanBuilder::new(trace, corpus, codec, split, normals)?;
    b.add_subagents()?;
    if let Some(s) = &flat {
        b.add_flat_workers(s)?;
    }
    b.link_branches();
    b.theoretical_hits();
    let PlanBuilder {
        mut convs,
        branches,
        ..
    } = b;
    replay_predecessors(&trace.id, &mut convs);
    Ok(TracePlan {
        trace_id: trace.id.clone(),
        convs,
        branches,
        expected_out: all_normals.iter().map(|(_, r)| r.output_tokens).collect(),
    })
}

/// One request's place in the theoretical-hit order: requests are visited by
/// `(t, outer, chain, k)` and credited to `convs[conv].turns[turn]`.
struct HashRow {
    /// Recorded start, s (absolute for subagent requests).
    t: f64,
    /// Outer index in the trace's entries (the subagent's, for its requests).
    outer: usize,
    /// Chain index within a subagent (0 elsewhere).
    chain: usize,
    /// Request index within that chain (0 outside subagents).
    k: usize,
    /// Conversation index.
    conv: usize,
    /// Turn index in the conversation.
    turn: usize,
    /// The request's hash block ids.
    ids: Vec<u64>,
}

/// One context chain replayed as one conversation.
struct Chain<'r> {
    /// Conversation id (`<trace>::sa:<id>` or a split-off sibling `…:<kind suffix>`).
    id: String,
    /// Its requests with their indices, in replay order.
    requests: Vec<Item<'r>>,
    /// Tool tokens of the chain's first request.
    tool_tokens: u32,
    /// System tokens of the chain's first request.
    system_tokens: u32,
}

/// Branches keyed by (spawning root turn, join root turn): children with equal keys share one
/// branch. Subagents and split-off top-level chains group apart (one `BranchGroups` each).
#[derive(Default)]
struct BranchGroups {
    /// (key, branch index) in creation order.
    keys: Vec<((usize, Option<usize>), usize)>,
}

impl BranchGroups {
    /// The branch of `key`, created in `branches` (start ∞, not at-send) when new.
    fn branch(&mut self, branches: &mut Vec<Branch>, key: (usize, Option<usize>)) -> usize {
        if let Some(&(_, bi)) = self.keys.iter().find(|(k, _)| *k == key) {
            return bi;
        }
        branches.push(Branch {
            children: Vec::new(),
            spawning_turn: key.0,
            join_turn: key.1,
            start_ms: f64::INFINITY,
            at_send: false,
        });
        let bi = branches.len() - 1;
        self.keys.push((key, bi));
        bi
    }
}

/// The state [`build_with`] fills in: conversations (0 = root), branches and the hash rows of
/// the theoretical-hit pass. Messages are reconstructed in one [`BlockSource`] in a fixed
/// order (root, subagent chains, split-off top-level chains), so text is deterministic.
struct PlanBuilder<'a> {
    /// The trace being planned.
    trace: &'a Trace,
    /// Chain splitting options.
    split: &'a SplitOptions,
    /// Text source of the trace.
    src: BlockSource<'a>,
    /// Root requests (the main chain when split), by root turn position.
    normals: Vec<Item<'a>>,
    /// (outer index, root turn position), sorted: the harness looks spawns and joins up in
    /// that order.
    by_outer: Vec<(usize, usize)>,
    /// Conversations so far.
    convs: Vec<Conversation>,
    /// Branches so far.
    branches: Vec<Branch>,
    /// Theoretical-hit rows so far.
    hash_rows: Vec<HashRow>,
}

impl<'a> PlanBuilder<'a> {
    /// Starts the plan with its root conversation built from `normals`.
    fn new(
        trace: &'a Trace,
        corpus: &'a Corpus,
        codec: &'a dyn TokenCodec,
        split: &'a SplitOptions,
        normals: Vec<Item<'a>>,
    ) -> Result<Self, String> {
        let mut src = BlockSource::new(corpus, codec, &trace.id);
        let root_turns = make_turns(
            &mut src,
            &trace.id,
            &normals,
            trace.tool_tokens,
            trace.system_tokens,
        )
        .map_err(|e| format!("trace {}: {e}", trace.id))?;
        let mut by_outer: Vec<(usize, usize)> = normals
            .iter()
            .enumerate()
            .map(|(pos, (o, _))| (*o, pos))
            .collect();
        by_outer.sort();
        let hash_rows = normals
            .iter()
            .enumerate()
            .map(|(k, (oi, r))| HashRow {
                t: r.t,
                outer: *oi,
                chain: 0,
                k: 0,
                conv: 0,
                turn: k,
                ids: r.hash_ids.clone(),
            })
            .collect();
        Ok(Self {
            trace,
            split,
            src,
            normals,
            by_outer,
            convs: vec![Conversation {
                id: trace.id.clone(),
                turns: root_turns,
                branch: None,
            }],
            branches: Vec::new(),
            hash_rows,
        })
    }

    /// The last root turn before outer index `outer` (the spawning turn), if any.
    fn preceding_of(&self, outer: usize) -> Option<usize> {
        self.by_outer
            .iter()
            .filter(|(o, _)| *o < outer)
            .map(|(_, p)| *p)
            .max()
    }

    /// The first root turn after outer index `outer` whose `t` ≥ `end_s` (the join turn);
    /// `None` = background.
    fn join_of(&self, outer: usize, end_s: f64) -> Option<usize> {
        self.by_outer
            .iter()
            .find(|(o, p)| *o > outer && self.normals[*p].1.t + JOIN_EPS >= end_s)
            .map(|(_, p)| *p)
    }

    /// Adds conversation `id` as a child of branch `bi`; returns its index.
    fn push_child(&mut self, bi: usize, id: String, turns: Vec<Turn>) -> usize {
        let ci = self.convs.len();
        self.branches[bi].children.push(ci);
        self.convs.push(Conversation {
            id,
            turns,
            branch: Some(bi),
        });
        ci
    }

    /// Adds every subagent with a spawning root turn (those without one are dropped, as the
    /// harness does). Errors on a duplicate `agent_id`.
    fn add_subagents(&mut self) -> Result<(), String> {
        let trace = self.trace;
        let mut groups = BranchGroups::default();
        let mut seen_agents = HashSet::new();
        for (oi, e) in trace.entries.iter().enumerate() {
            let TraceEntry::Subagent(sa) = e else {
                continue;
            };
            let Some(preceding) = self.preceding_of(oi) else {
                continue; // no spawning parent turn: dropped (as the harness does)
            };
            if !seen_agents.insert(sa.agent_id.as_str()) {
                return Err(format!(
                    "trace {}: duplicate subagent agent_id `{}`",
                    trace.id, sa.agent_id
                ));
            }
            self.add_subagent(oi, sa, preceding, &mut groups)?;
        }
        Ok(())
    }

    /// Adds subagent `sa` (outer index `oi`, spawned by root turn `preceding`): its chains
    /// become children of the branch keyed by (spawning, join) turns; the branch starts at the
    /// earliest spawn `t`. The join turn is the first root turn at/after the subagent's end
    /// (`t + duration_ms`, else the end of its last request).
    fn add_subagent(
        &mut self,
        oi: usize,
        sa: &Subagent,
        preceding: usize,
        groups: &mut BranchGroups,
    ) -> Result<(), String> {
        // a subagent's inner `t` before its spawn `t` is relative to the spawn
        let normalized: Vec<TraceRequest> = sa
            .requests
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if r.t + JOIN_EPS < sa.t {
                    r.t += sa.t;
                }
                r
            })
            .collect();
        let items: Vec<Item<'_>> = normalized.iter().enumerate().collect();
        let sa_end = match sa.duration_ms {
            Some(d) => sa.t + (d / 1000.0).max(0.0),
            None => normalized.iter().map(req_end).fold(sa.t, f64::max),
        };
        let join = self.join_of(oi, sa_end);
        let chains_of = self.subagent_chains(sa, &items);
        let bi = groups.branch(&mut self.branches, (preceding, join));
        self.branches[bi].start_ms = self.branches[bi].start_ms.min(sa.t * 1000.0);
        for (chain_index, chain) in chains_of.into_iter().enumerate() {
            let turns = make_turns(
                &mut self.src,
                &chain.id,
                &chain.requests,
                chain.tool_tokens,
                chain.system_tokens,
            )
            .map_err(|e| format!("trace {}: subagent {}: {e}", self.trace.id, sa.agent_id))?;
            let ci = self.convs.len();
            for (k, (_, r)) in chain.requests.iter().enumerate() {
                self.hash_rows.push(HashRow {
                    t: r.t,
                    outer: oi,
                    chain: chain_index,
                    k,
                    conv: ci,
                    turn: k,
                    ids: r.hash_ids.clone(),
                });
            }
            self.push_child(bi, chain.id, turns);
        }
        Ok(())
    }

    /// The context chains of a subagent's requests `items`: its main chain keeps
    /// `<trace>::sa:<id>`, split-off chains are siblings `…:<kind suffix>` with their own
    /// initial tool/system tokens ([`chains::chain_init_tokens`]). Unsplit: one chain, requests
    /// by (t, index).
    fn subagent_chains<'r>(&self, sa: &Subagent, items: &[Item<'r>]) -> Vec<Chain<'r>> {
        let base = format!("{}::sa:{}", self.trace.id, sa.agent_id);
        if !self.split.enabled || items.is_empty() {
            let mut reqs = items.to_vec();
            reqs.sort_by(|a, b| a.1.t.total_cmp(&b.1.t).then(a.0.cmp(&b.0)));
            return vec![Chain {
                id: base,
                requests: reqs,
                tool_tokens: sa.tool_tokens,
                system_tokens: sa.system_tokens,
            }];
        }
        let s = chains::split(items, self.split);
        let mut out = vec![Chain {
            id: base.clone(),
            requests: s.main.clone(),
            tool_tokens: sa.tool_tokens,
            system_tokens: sa.system_tokens,
        }];
        for w in &s.workers {
            let (tool, system) = chains::chain_init_tokens(
                sa.tool_tokens,
                sa.system_tokens,
                BLOCK,
                &s.main_first_hash,
                first_hash(&w.requests),
            );
            out.push(Chain {
                id: format!("{base}:{}", w.kind.suffix(w.n)),
                requests: w.requests.clone(),
                tool_tokens: tool,
                system_tokens: system,
            });
        }
        out
    }

    /// Adds the split-off top-level chains of `s`: each is spawned by the last root turn
    /// before its first request (turn 0 when none) and joined by the first later root turn
    /// at/after its end; the branch starts at its earliest first request.
    fn add_flat_workers(&mut self, s: &Split<'_>) -> Result<(), String> {
        let mut groups = BranchGroups::default();
        for w in &s.workers {
            let first_outer = w.requests[0].0;
            let preceding = self.preceding_of(first_outer).unwrap_or(0);
            let end = w
                .requests
                .iter()
                .map(|(_, r)| req_end(r))
                .fold(f64::NEG_INFINITY, f64::max);
            let key = (preceding, self.join_of(first_outer, end));
            let bi = groups.branch(&mut self.branches, key);
            let conv_id = format!("{}::{}", self.trace.id, w.kind.suffix(w.n));
            let (tool, system) = chains::chain_init_tokens(
                self.trace.tool_tokens,
                self.trace.system_tokens,
                BLOCK,
                &s.main_first_hash,
                &w.requests[0].1.hash_ids,
            );
            let turns = make_turns(&mut self.src, &conv_id, &w.requests, tool, system)
                .map_err(|e| format!("trace {}: {conv_id}: {e}", self.trace.id))?;
            let ci = self.convs.len();
            for (k, (o, r)) in w.requests.iter().enumerate() {
                self.hash_rows.push(HashRow {
                    t: r.t,
                    outer: *o,
                    chain: 0,
                    k: 0,
                    conv: ci,
                    turn: k,
                    ids: r.hash_ids.clone(),
                });
            }
            self.branches[bi].start_ms = self.branches[bi].start_ms.min(w.requests[0].1.t * 1000.0);
            self.push_child(bi, conv_id, turns);
        }
        Ok(())
    }

    /// Records each branch on its spawning and join root turns and sets [`Branch::at_send`]
    /// (start inside the spawning turn's recorded interval, `api_time` > 0).
    fn link_branches(&mut self) {
        let root = &mut self.convs[0].turns;
        for (bi, b) in self.branches.iter_mut().enumerate() {
            let st = &root[b.spawning_turn];
            b.at_send = st.api_ms > 0.0 && b.start_ms < st.t_ms + st.api_ms;
            root[b.spawning_turn].spawns.push(bi);
            if let Some(j) = b.join_turn {
                root[j].joins.push(bi);
            }
        }
    }

    /// Theoretical prefix-cache hits: one seen-set of hash ids per trace, requests in
    /// (t, outer index, chain, k) order; hits = leading ids already seen.
    fn theoretical_hits(&mut self) {
        self.hash_rows.sort_by(|a, b| {
            a.t.total_cmp(&b.t)
                .then(a.outer.cmp(&b.outer))
                .then(a.chain.cmp(&b.chain))
                .then(a.k.cmp(&b.k))
        });
        let mut seen: HashSet<u64> = HashSet::new();
        for row in &self.hash_rows {
            let hits = row.ids.iter().take_while(|h| seen.contains(h)).count();
            self.convs[row.conv].turns[row.turn].hit_blocks = hits as u32;
            seen.extend(row.ids.iter().copied());
        }
    }
}

/// Replay scope of a conversation (harness `weka_trace._replay_scope_for_session`): the root and
/// its top-level split-off chains share the trace's scope; a subagent and its own split-off
/// chains share `<trace>::sa:<agent id>`.
fn replay_scope(conv_id: &str, trace_id: &str) -> String {
    let Some((head, agent)) = conv_id.split_once("::sa:") else {
        return trace_id.to_string();
    };
    let mut agent = agent;
    for m in [":aux:", ":fa:", ":wg:"] {
        if let Some(i) = agent.rfind(m) {
            agent = &agent[..i];
        }
    }
    format!("{head}::sa:{agent}")
}

/// A turn's recorded (end, start, turn index), ms.
type EndStartTurn = (f64, f64, usize);

/// Fills [`Turn::after`] (harness `infer_cross_stream_predecessors`, per replay scope): each
/// request's interval is `[t, t + api_time]` (no API time: zero width); for every other stream of
/// its scope, the request depends on that stream's latest request that started before it and
/// ended by its start (latest by end, then start, then conversation id and turn); a candidate
/// that ended by the start of another candidate is implied by it and dropped. Overlapping
/// requests and equal starts add no edge.
pub fn replay_predecessors(trace_id: &str, convs: &mut [Conversation]) {
    let interval = |t: &Turn| (t.t_ms, t.t_ms + t.api_ms.max(0.0));
    let mut scopes: Vec<(String, Vec<usize>)> = Vec::new();
    for (ci, c) in convs.iter().enumerate() {
        let sc = replay_scope(&c.id, trace_id);
        match scopes.iter_mut().find(|(s, _)| *s == sc) {
            Some((_, v)) => v.push(ci),
            None => scopes.push((sc, vec![ci])),
        }
    }
    for (_, members) in &scopes {
        if members.len() < 2 {
            continue;
        }
        // per stream: turns sorted by (end, start, turn)
        let sorted: Vec<(usize, Vec<EndStartTurn>)> = members
            .iter()
            .map(|&c| {
                let mut v: Vec<EndStartTurn> = convs[c]
                    .turns
                    .iter()
                    .enumerate()
                    .map(|(k, t)| {
                        let (a, b) = interval(t);
                        (b, a, k)
                    })
                    .collect();
                v.sort_by(|x, y| {
                    x.0.total_cmp(&y.0)
                        .then(x.1.total_cmp(&y.1))
                        .then(x.2.cmp(&y.2))
                });
                (c, v)
            })
            .collect();
        for &c in members {
            for k in 0..convs[c].turns.len() {
                let start = convs[c].turns[k].t_ms;
                // (start, end, conv id, conv, turn) of each other stream's latest completed
                let mut frontier: Vec<(f64, f64, &str, usize, usize)> = Vec::new();
                for (c2, v) in &sorted {
                    if *c2 == c {
                        continue;
                    }
                    let upto = v.partition_point(|x| x.0 <= start);
                    if let Some(&(e, a, k2)) = v[..upto].iter().rev().find(|x| x.1 < start) {
                        frontier.push((a, e, convs[*c2].id.as_str(), *c2, k2));
                    }
                }
                let mut after: Vec<(&str, usize, usize)> = frontier
                    .iter()
                    .filter(|cand| {
                        !frontier.iter().any(|later| {
                            !std::ptr::eq(*cand, later) && cand.0 < later.0 && cand.1 <= later.0
                        })
                    })
                    .map(|f| (f.2, f.4, f.3))
                    .collect();
                after.sort();
                let after: Vec<(usize, usize)> = after.into_iter().map(|a| (a.2, a.1)).collect();
                convs[c].turns[k].after = after;
            }
        }
    }
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
