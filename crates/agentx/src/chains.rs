//! Hash-chain splitting of flattened agents (agentx-harness 1.0.12 `weka_agent_chains.py` and
//! the split paths of `weka_trace.py`, read and re-stated; the harness default
//! `AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=1`).
//!
//! Captures record untagged agent fan-outs as interleaved flat requests. Detection partitions a
//! list of requests into per-agent chains by hash-id LCP evidence:
//! * phase 1, in (t, index) order: a request extends the chain whose tail is a complete prefix
//!   of its hash ids, has ended by its start and ran on the same model (deepest tail wins, then
//!   the lowest chain); otherwise it founds a new chain forked from the chain tail with the
//!   deepest LCP (a request with no hash ids rides chain 0 and is no evidence);
//! * phase 2 (join seams): for each fork-source request T still the last hash-bearing request
//!   of its chain, the deepest same-model fork that starts after T ended (ties: earliest, then
//!   lowest index) is the same agent after a context edit and is spliced on, unless it starts
//!   more than `seam_max_gap_s` after T and keeps less than `seam_min_overlap` of T's blocks;
//!   the other forks of T are re-keyed against the merged chain's new tail.
//!
//! Surviving non-main chains become child conversations: at the top level `<trace>::fa:NNN`
//! (agent), `::aux:NNN` (one-shot sidecar: at most `aux_max_requests` requests and either a
//! different model or a first input below max(`aux_isl_floor`, `aux_isl_ratio` × main peak
//! input); or a same-model reduction: one request, output in (0, `reduction_osl_max`), input
//! ≥ floor and > `reduction_ratio` × output) or `::wg:GGG_MMM` (member of a parallel fan-out:
//! ≥ `worker_group_min` workers forked from one parent request whose intervals overlap); inside
//! a subagent the same at `::sa:<id>:fa:NNN` etc. A leading prefix-disjoint throwaway request
//! (title generation) is set aside before detection and re-attached to the main chain.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use crate::trace::TraceRequest;

const EPS: f64 = 1e-6;
/// A leading request with at most this many output tokens may be a title-generation preamble.
const TITLE_GEN_MAX_OUTPUT: u32 = 64;

/// Splitting settings (defaults = the harness's `WEKA_*` environment defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SplitOptions {
    /// `WEKA_SPLIT_FLATTENED_AGENTS` (true). False: one root, one child per subagent.
    pub enabled: bool,
    /// `WEKA_SEAM_MAX_GAP_SECONDS` (3600 s).
    pub seam_max_gap_s: f64,
    /// `WEKA_SEAM_MIN_OVERLAP_RATIO` (0.5).
    pub seam_min_overlap: f64,
    /// `WEKA_AUX_MAX_REQUESTS` (1; 0 = no sidecars).
    pub aux_max_requests: usize,
    /// `WEKA_AUX_ISL_RATIO` (0.10).
    pub aux_isl_ratio: f64,
    /// `WEKA_AUX_ISL_FLOOR` (16,384 tokens).
    pub aux_isl_floor: u32,
    /// `WEKA_AUX_CROSS_MODEL` (true).
    pub aux_cross_model: bool,
    /// `WEKA_AUX_REDUCTION_OSL_MAX` (4,000 tokens; 0 = off).
    pub reduction_osl_max: u32,
    /// `WEKA_AUX_REDUCTION_RATIO` (20).
    pub reduction_ratio: f64,
    /// `WEKA_WORKER_GROUP_MIN` (3; 0 = off).
    pub worker_group_min: usize,
}

impl Default for SplitOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            seam_max_gap_s: 3600.0,
            seam_min_overlap: 0.5,
            aux_max_requests: 1,
            aux_isl_ratio: 0.10,
            aux_isl_floor: 16_384,
            aux_cross_model: true,
            reduction_osl_max: 4_000,
            reduction_ratio: 20.0,
            worker_group_min: 3,
        }
    }
}

impl SplitOptions {
    /// Splitting off (`WEKA_SPLIT_FLATTENED_AGENTS=0`).
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }
}

/// One request with its index in the list detection runs on (outer index at the top level,
/// inner index inside a subagent).
pub type Item<'a> = (usize, &'a TraceRequest);

fn req_end(r: &TraceRequest) -> f64 {
    let d = if r.api_time.is_finite() {
        r.api_time
    } else {
        0.0
    };
    r.t + d.max(0.0)
}

fn lcp(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[derive(Debug, Clone)]
struct Fork {
    parent: Option<usize>,
    fork_outer: Option<usize>,
    depth: usize,
    fork_time: f64,
}

#[derive(Debug, Clone, Default)]
struct Chain<'a> {
    requests: Vec<Item<'a>>,
    fork: Option<Fork>,
    spliced_into: Option<usize>,
    tail_outer: Option<usize>,
    tail_hash: &'a [u64],
    tail_end: f64,
    tail_model: &'a str,
}

/// Result of [`detect`]: live chains as request lists.
#[derive(Debug, Clone)]
pub struct Detection<'a> {
    chains: Vec<Chain<'a>>,
    /// Index of the main chain (the one holding the earliest request).
    pub main: usize,
    /// Live non-main chains, by first request (t, index).
    pub workers: Vec<usize>,
    /// Join seams spliced in phase 2.
    pub seams: usize,
}

impl<'a> Detection<'a> {
    /// Requests of chain `c`, in chain order.
    pub fn requests(&self, c: usize) -> &[Item<'a>] {
        &self.chains[c].requests
    }

    /// `{worker chain: (group, member)}` for members of parallel fan-out groups.
    pub fn worker_groups(&self, group_min: usize) -> HashMap<usize, (usize, usize)> {
        let mut out = HashMap::new();
        if group_min == 0 {
            return out;
        }
        // (t0, t1, first index, chain), bucketed by fork point in first-seen order
        type Cand = (f64, f64, usize, usize);
        let mut keys: Vec<(usize, usize)> = Vec::new();
        let mut buckets: HashMap<(usize, usize), Vec<Cand>> = HashMap::new();
        for &ci in &self.workers {
            let c = &self.chains[ci];
            let Some(f) = &c.fork else { continue };
            let (Some(p), Some(fo)) = (f.parent, f.fork_outer) else {
                continue;
            };
            if f.depth == 0 || c.requests.is_empty() {
                continue;
            }
            let t0 = c.requests[0].1.t;
            let t1 = c
                .requests
                .iter()
                .map(|(_, r)| req_end(r))
                .fold(f64::NEG_INFINITY, f64::max);
            let key = (p, fo);
            if !buckets.contains_key(&key) {
                keys.push(key);
            }
            buckets
                .entry(key)
                .or_default()
                .push((t0, t1, c.requests[0].0, ci));
        }
        let mut groups: Vec<Vec<Cand>> = Vec::new();
        for k in keys {
            let mut cands = buckets.remove(&k).unwrap_or_default();
            cands.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
            // connected components of [t0, t1) overlap (touching does not overlap)
            let mut comp: Vec<Cand> = Vec::new();
            let mut max_end = f64::NEG_INFINITY;
            for c in cands {
                if !comp.is_empty() && max_end <= c.0 {
                    groups.push(std::mem::take(&mut comp));
                    max_end = f64::NEG_INFINITY;
                }
                max_end = max_end.max(c.1);
                comp.push(c);
            }
            if !comp.is_empty() {
                groups.push(comp);
            }
        }
        groups.retain(|g| g.len() >= group_min);
        groups.sort_by(|a, b| {
            let ka = (a[0].0, a[0].2);
            let kb = (b[0].0, b[0].2);
            ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
        });
        for (g, comp) in groups.iter().enumerate() {
            for (m, c) in comp.iter().enumerate() {
                out.insert(c.3, (g, m));
            }
        }
        out
    }
}

struct Phase1<'a> {
    chains: Vec<Chain<'a>>,
    chain_of: HashMap<usize, usize>,
    forks_by_tail: BTreeMap<usize, Vec<usize>>,
    req_by: HashMap<usize, &'a TraceRequest>,
}

impl<'a> Phase1<'a> {
    fn append(&mut self, c: usize, oi: usize, r: &'a TraceRequest) {
        let ch = &mut self.chains[c];
        ch.requests.push((oi, r));
        self.chain_of.insert(oi, c);
        if !r.hash_ids.is_empty() {
            ch.tail_outer = Some(oi);
            ch.tail_hash = &r.hash_ids;
            ch.tail_end = req_end(r);
            ch.tail_model = &r.model;
        }
    }

    fn classify(&mut self, oi: usize, r: &'a TraceRequest) {
        self.req_by.insert(oi, r);
        if r.hash_ids.is_empty() {
            if self.chains.is_empty() {
                self.chains.push(Chain::default());
            }
            self.chains[0].requests.push((oi, r));
            self.chain_of.insert(oi, 0);
            return;
        }
        if self.chains.is_empty() {
            self.chains.push(Chain::default());
            self.append(0, oi, r);
            return;
        }
        if let Some(t) = self.extension_target(r) {
            self.append(t, oi, r);
            return;
        }
        let (parent, depth) = self.max_lcp_chain(&r.hash_ids);
        if parent.is_none() && self.chains.iter().all(|c| c.tail_hash.is_empty()) {
            self.append(0, oi, r);
            return;
        }
        let fork = Fork {
            parent,
            fork_outer: parent.and_then(|p| self.chains[p].tail_outer),
            depth,
            fork_time: r.t,
        };
        let idx = self.chains.len();
        let fo = fork.fork_outer;
        self.chains.push(Chain {
            fork: Some(fork),
            ..Chain::default()
        });
        self.append(idx, oi, r);
        if let Some(fo) = fo {
            if depth > 0 {
                self.forks_by_tail.entry(fo).or_default().push(idx);
            }
        }
    }

    fn extension_target(&self, r: &TraceRequest) -> Option<usize> {
        let h = &r.hash_ids;
        let mut best = None;
        let mut best_len: i64 = -1;
        for (i, c) in self.chains.iter().enumerate() {
            let tl = c.tail_hash.len();
            if tl == 0 || tl > h.len() || tl as i64 <= best_len {
                continue;
            }
            if c.tail_model != r.model || c.tail_end > r.t + EPS {
                continue;
            }
            if c.tail_hash == &h[..tl] {
                best = Some(i);
                best_len = tl as i64;
            }
        }
        best
    }

    fn max_lcp_chain(&self, h: &[u64]) -> (Option<usize>, usize) {
        let mut best = None;
        let mut key = (0usize, 0usize);
        for (i, c) in self.chains.iter().enumerate() {
            if c.tail_hash.is_empty() {
                continue;
            }
            let d = lcp(c.tail_hash, h);
            if d == 0 {
                continue;
            }
            let k = (d, c.tail_hash.len());
            if k > key {
                best = Some(i);
                key = k;
            }
        }
        (best, key.0)
    }
}

fn last_hash_outer(c: &Chain<'_>) -> Option<usize> {
    c.requests
        .iter()
        .rev()
        .find(|(_, r)| !r.hash_ids.is_empty())
        .map(|(o, _)| *o)
}

/// Partitions `items` into per-agent chains (phase 1 + join-seam phase 2).
pub fn detect<'a>(items: &[Item<'a>], opts: &SplitOptions) -> Detection<'a> {
    if items.is_empty() {
        return Detection {
            chains: Vec::new(),
            main: 0,
            workers: Vec::new(),
            seams: 0,
        };
    }
    let mut ordered: Vec<Item<'a>> = items.to_vec();
    ordered.sort_by(|a, b| a.1.t.total_cmp(&b.1.t).then(a.0.cmp(&b.0)));
    let mut p1 = Phase1 {
        chains: Vec::new(),
        chain_of: HashMap::new(),
        forks_by_tail: BTreeMap::new(),
        req_by: HashMap::new(),
    };
    for (oi, r) in &ordered {
        p1.classify(*oi, r);
    }
    let seams = resolve_seams(&mut p1, opts);
    let Phase1 {
        mut chains,
        chain_of,
        ..
    } = p1;
    let resolve = |chains: &[Chain<'_>], mut i: usize| {
        while let Some(j) = chains[i].spliced_into {
            i = j;
        }
        i
    };
    for i in 0..chains.len() {
        if chains[i].spliced_into.is_some() {
            continue;
        }
        if let Some(p) = chains[i].fork.as_ref().and_then(|f| f.parent) {
            let r = resolve(&chains, p);
            if let Some(f) = chains[i].fork.as_mut() {
                f.parent = Some(r);
            }
        }
    }
    let main = resolve(&chains, chain_of[&ordered[0].0]);
    let mut workers: Vec<usize> = (0..chains.len())
        .filter(|&i| chains[i].spliced_into.is_none() && i != main)
        .collect();
    workers.sort_by(|&a, &b| {
        let (ra, rb) = (&chains[a].requests[0], &chains[b].requests[0]);
        ra.1.t.total_cmp(&rb.1.t).then(ra.0.cmp(&rb.0))
    });
    Detection {
        chains,
        main,
        workers,
        seams,
    }
}

fn resolve_seams(p1: &mut Phase1<'_>, opts: &SplitOptions) -> usize {
    let mut seams = 0;
    let mut heap: BinaryHeap<Reverse<usize>> =
        p1.forks_by_tail.keys().map(|k| Reverse(*k)).collect();
    let mut processed: HashSet<usize> = HashSet::new();
    let resolve = |chains: &[Chain<'_>], mut i: usize| {
        while let Some(j) = chains[i].spliced_into {
            i = j;
        }
        i
    };
    while let Some(Reverse(fo)) = heap.pop() {
        if !processed.insert(fo) {
            continue;
        }
        let owner = resolve(&p1.chains, p1.chain_of[&fo]);
        if last_hash_outer(&p1.chains[owner]) != Some(fo) {
            continue;
        }
        let registered: Vec<usize> = p1.forks_by_tail[&fo]
            .iter()
            .copied()
            .filter(|&c| p1.chains[c].spliced_into.is_none())
            .collect();
        let t_req = p1.req_by[&fo];
        let Some(elected) = elect(&p1.chains, &registered, t_req, opts) else {
            continue;
        };
        let moved = std::mem::take(&mut p1.chains[elected].requests);
        for (oi, _) in &moved {
            p1.chain_of.insert(*oi, owner);
        }
        p1.chains[owner].requests.extend(moved.iter().copied());
        p1.chains[elected].requests = moved;
        p1.chains[elected].spliced_into = Some(owner);
        seams += 1;
        let Some(new_tail) = last_hash_outer(&p1.chains[owner]) else {
            continue;
        };
        // re-key the other forks of the consumed tail against the merged chain's new tail
        let new_hash = &p1.req_by[&new_tail].hash_ids;
        let mut rekeyed = false;
        for &ci in &registered {
            let c = &p1.chains[ci];
            if ci == elected || c.spliced_into.is_some() || c.fork.is_none() {
                continue;
            }
            let d = lcp(new_hash, &c.requests[0].1.hash_ids);
            if d == 0 {
                continue;
            }
            if let Some(f) = p1.chains[ci].fork.as_mut() {
                f.fork_outer = Some(new_tail);
                f.depth = d;
                f.parent = Some(owner);
            }
            p1.forks_by_tail.entry(new_tail).or_default().push(ci);
            rekeyed = true;
        }
        if rekeyed {
            processed.remove(&new_tail);
            heap.push(Reverse(new_tail));
        }
    }
    seams
}

fn elect(
    chains: &[Chain<'_>],
    registered: &[usize],
    t_req: &TraceRequest,
    opts: &SplitOptions,
) -> Option<usize> {
    let t_end = req_end(t_req);
    let tail_blocks = t_req.hash_ids.len();
    registered
        .iter()
        .copied()
        .filter(|&ci| {
            let c = &chains[ci];
            let Some(f) = &c.fork else { return false };
            let first = c.requests[0].1;
            let blocked = tail_blocks > 0 && {
                let gap = first.t - t_end;
                let overlap = f.depth as f64 / tail_blocks as f64;
                gap > opts.seam_max_gap_s && overlap < opts.seam_min_overlap
            };
            f.depth > 0 && t_end <= first.t + EPS && first.model == t_req.model && !blocked
        })
        .min_by(|&a, &b| {
            let (fa, fb) = (
                chains[a].fork.as_ref().expect("fork"),
                chains[b].fork.as_ref().expect("fork"),
            );
            fb.depth
                .cmp(&fa.depth)
                .then(fa.fork_time.total_cmp(&fb.fork_time))
                .then(a.cmp(&b))
        })
}

/// Sets aside a leading throwaway request (harness `_split_off_preamble`): the earliest
/// request, when it shares no hash prefix with any other and is small (≤ 64 output tokens)
/// or fully block-disjoint. Returns (preamble, rest by index).
pub fn split_off_preamble<'a>(items: &[Item<'a>]) -> (Vec<Item<'a>>, Vec<Item<'a>>) {
    if items.len() < 2 {
        return (Vec::new(), items.to_vec());
    }
    let mut ordered = items.to_vec();
    ordered.sort_by(|a, b| a.1.t.total_cmp(&b.1.t).then(a.0.cmp(&b.0)));
    let first = ordered[0];
    if first.1.hash_ids.is_empty() {
        return (Vec::new(), items.to_vec());
    }
    let rest = &ordered[1..];
    if rest
        .iter()
        .any(|(_, o)| !o.hash_ids.is_empty() && lcp(&first.1.hash_ids, &o.hash_ids) > 0)
    {
        return (Vec::new(), items.to_vec());
    }
    if first.1.output_tokens > TITLE_GEN_MAX_OUTPUT {
        let others: HashSet<u64> = rest
            .iter()
            .flat_map(|(_, o)| o.hash_ids.iter().copied())
            .collect();
        if first.1.hash_ids.iter().any(|h| others.contains(h)) {
            return (Vec::new(), items.to_vec());
        }
    }
    let mut rest = rest.to_vec();
    rest.sort_by_key(|(o, _)| *o);
    (vec![first], rest)
}

/// Kind of a split-off chain, which names its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerKind {
    /// `fa:NNN`: an agent.
    Agent,
    /// `aux:NNN`: a one-shot sidecar (or a reduction).
    Aux,
    /// `wg:GGG_MMM`: a member of a parallel fan-out group.
    Group(usize, usize),
}

impl WorkerKind {
    /// The id suffix for dense worker index `n`.
    pub fn suffix(self, n: usize) -> String {
        match self {
            WorkerKind::Agent => format!("fa:{n:03}"),
            WorkerKind::Aux => format!("aux:{n:03}"),
            WorkerKind::Group(g, m) => format!("wg:{g:03}_{m:03}"),
        }
    }
}

/// A split-off chain: its requests (chain order) and kind.
#[derive(Debug, Clone)]
pub struct Worker<'a> {
    /// Requests with their indices.
    pub requests: Vec<Item<'a>>,
    /// Agent, sidecar or group member.
    pub kind: WorkerKind,
    /// Dense worker index (`NNN`).
    pub n: usize,
}

/// The main chain's requests and the split-off workers of one request list.
#[derive(Debug, Clone)]
pub struct Split<'a> {
    /// Main chain (the preamble re-attached), or the whole list unchanged when nothing split.
    pub main: Vec<Item<'a>>,
    /// Workers by first request.
    pub workers: Vec<Worker<'a>>,
    /// First hash ids of the detected main chain (turn-0 prefix proof of workers).
    pub main_first_hash: Vec<u64>,
}

fn is_aux(reqs: &[Item<'_>], peak: u32, main_model: Option<&str>, o: &SplitOptions) -> bool {
    if reqs.is_empty() || reqs.len() > o.aux_max_requests {
        return false;
    }
    let first = reqs[0].1;
    if o.aux_cross_model && main_model.is_some_and(|m| first.model != m) {
        return true;
    }
    let threshold = (o.aux_isl_floor as i64).max((o.aux_isl_ratio * peak as f64) as i64);
    (first.input_tokens as i64) < threshold
}

fn is_reduction(reqs: &[Item<'_>], o: &SplitOptions) -> bool {
    if o.reduction_osl_max == 0 || reqs.len() != 1 {
        return false;
    }
    let r = reqs[0].1;
    let osl = r.output_tokens;
    if osl == 0 || osl >= o.reduction_osl_max || r.input_tokens < o.aux_isl_floor {
        return false;
    }
    r.input_tokens as f64 > o.reduction_ratio * osl as f64
}

/// Detects and classifies the chains of one request list (top level or one subagent). The main
/// chain keeps chain order (the harness re-sorts it by (t, index) only when a preamble is
/// re-attached); at the top level the caller keeps the original list when no worker is found,
/// as the harness does.
pub fn split<'a>(items: &[Item<'a>], opts: &SplitOptions) -> Split<'a> {
    let (preamble, rest) = split_off_preamble(items);
    let det = detect(&rest, opts);
    let detected_main: Vec<Item<'a>> = if det.chains.is_empty() {
        Vec::new()
    } else {
        det.requests(det.main).to_vec()
    };
    let main_first_hash = detected_main
        .iter()
        .find(|(_, r)| !r.hash_ids.is_empty())
        .map(|(_, r)| r.hash_ids.clone())
        .unwrap_or_default();
    let peak = detected_main
        .iter()
        .map(|(_, r)| r.input_tokens)
        .max()
        .unwrap_or(0);
    let main_model = detected_main.first().map(|(_, r)| r.model.as_str());
    let groups = det.worker_groups(opts.worker_group_min);
    let mut workers = Vec::new();
    for (n, &ci) in det.workers.iter().enumerate() {
        let reqs = det.requests(ci).to_vec();
        let aux = is_aux(&reqs, peak, main_model, opts);
        let red = !aux && is_reduction(&reqs, opts);
        let kind = if aux || red {
            WorkerKind::Aux
        } else if let Some(&(g, m)) = groups.get(&ci) {
            WorkerKind::Group(g, m)
        } else {
            WorkerKind::Agent
        };
        workers.push(Worker {
            requests: reqs,
            kind,
            n,
        });
    }
    let mut main = detected_main;
    if !preamble.is_empty() {
        main.extend(preamble);
        main.sort_by(|a, b| a.1.t.total_cmp(&b.1.t).then(a.0.cmp(&b.0)));
    }
    Split {
        main,
        workers,
        main_first_hash,
    }
}

/// Turn-0 (tool, system) tokens of a derived chain (harness `_chain_init_tokens`): the declared
/// counts only when the chain's first hash ids start with the same declared-prefix blocks as the
/// main chain's; otherwise 0/0 (all user content).
pub fn chain_init_tokens(
    tool: u32,
    system: u32,
    block: usize,
    base_first: &[u64],
    chain_first: &[u64],
) -> (u32, u32) {
    let n = (tool as usize + system as usize).div_ceil(block);
    let covered = n > 0
        && chain_first.len() >= n
        && base_first.len() >= n
        && chain_first[..n] == base_first[..n];
    if covered {
        (tool, system)
    } else {
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(t: f64, api: f64, h: &[u64], model: &str, inp: u32, out: u32) -> TraceRequest {
        TraceRequest {
            t,
            streaming: true,
            input_tokens: inp,
            output_tokens: out,
            hash_ids: h.to_vec(),
            api_time: api,
            think_time: 0.0,
            model: model.into(),
        }
    }

    #[test]
    fn an_interleaved_fan_out_splits_and_a_compaction_is_a_seam() {
        let reqs = [
            r(0.0, 1.0, &[1, 2, 3], "m", 200_000, 500),       // main
            r(2.0, 1.0, &[1, 2, 3, 4], "m", 200_000, 500),    // main extends
            r(3.0, 5.0, &[1, 2, 3, 4, 9], "m", 200_000, 500), // extends main (it ended at 3.0)
            r(3.5, 1.0, &[1, 2, 3, 4, 5], "m", 200_000, 500), // forks: main's tail diverges
            r(5.0, 1.0, &[1, 2, 3, 4, 5, 6], "m", 200_000, 500), // extends the 3.5 chain
            r(9.0, 1.0, &[1, 2, 3, 4, 9, 10], "m", 200_000, 500), // extends A
        ];
        let items: Vec<Item<'_>> = reqs.iter().enumerate().collect();
        let d = detect(&items, &SplitOptions::default());
        let idx = |c: usize| d.requests(c).iter().map(|(o, _)| *o).collect::<Vec<_>>();
        // request 2 extends the main chain (its tail [1,2,3,4] ended at 3.0); request 3 forks
        // from it while 2 runs; 4 extends the fork; 5 extends the main chain
        assert_eq!(idx(d.main), [0, 1, 2, 5]);
        assert_eq!(d.workers.len(), 1);
        assert_eq!(idx(d.workers[0]), [3, 4]);

        // a shrink whose longer state is never pulled back is the same agent (seam)
        let reqs = [
            r(0.0, 1.0, &[1, 2, 3, 4], "m", 1000, 10),
            r(2.0, 1.0, &[1, 2, 7], "m", 1000, 10), // compaction: forks at depth 2 …
            r(4.0, 1.0, &[1, 2, 7, 8], "m", 1000, 10),
        ];
        let items: Vec<Item<'_>> = reqs.iter().enumerate().collect();
        let d = detect(&items, &SplitOptions::default());
        assert!(d.workers.is_empty(), "… and is spliced back");
        assert_eq!(d.seams, 1);
        assert_eq!(d.requests(d.main).len(), 3);
    }

    #[test]
    fn classification_names_sidecars_and_agents() {
        let main: Vec<TraceRequest> = (0..4)
            .map(|k| {
                let h: Vec<u64> = (1..=(10 + k)).collect();
                r(k as f64 * 10.0, 1.0, &h, "opus", 300_000, 100)
            })
            .collect();
        let side = r(12.0, 1.0, &[500, 501], "haiku", 2_000, 50); // cross-model one-shot
        let agent = [
            r(13.0, 1.0, &[1, 2, 3, 900], "opus", 250_000, 5_000),
            r(20.0, 1.0, &[1, 2, 3, 900, 901], "opus", 250_100, 5_000),
        ];
        let mut all: Vec<&TraceRequest> = main.iter().collect();
        all.push(&side);
        all.extend(agent.iter());
        let items: Vec<Item<'_>> = all.into_iter().enumerate().collect();
        let s = split(&items, &SplitOptions::default());
        let kinds: Vec<String> = s.workers.iter().map(|w| w.kind.suffix(w.n)).collect();
        assert_eq!(kinds, ["aux:000", "fa:001"]);
        assert_eq!(s.main.len(), 4);
    }

    #[test]
    fn a_title_generation_preamble_is_set_aside() {
        let reqs = [
            r(0.0, 0.5, &[77], "haiku", 100, 20),
            r(1.0, 1.0, &[1, 2], "opus", 1000, 10),
            r(3.0, 1.0, &[1, 2, 3], "opus", 1000, 10),
        ];
        let items: Vec<Item<'_>> = reqs.iter().enumerate().collect();
        let (pre, rest) = split_off_preamble(&items);
        assert_eq!(pre.len(), 1);
        assert_eq!(pre[0].0, 0);
        assert_eq!(rest.iter().map(|i| i.0).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn init_tokens_need_the_declared_prefix_proven() {
        assert_eq!(
            chain_init_tokens(100, 28, 64, &[1, 2, 3], &[1, 2, 9]),
            (100, 28)
        );
        assert_eq!(chain_init_tokens(100, 28, 64, &[1, 2, 3], &[1, 9]), (0, 0));
        assert_eq!(chain_init_tokens(0, 0, 64, &[1], &[1]), (0, 0));
    }
}
