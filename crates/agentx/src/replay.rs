//! The AgentX replay: lanes of live session trees against an OpenAI-compatible endpoint
//! (MEASUREMENT.md Part 2 §5.4), with requests sent by the measuring client
//! (`servebench_client::http::execute_body`).
//!
//! * `conc` lanes; lane i takes the next trace of the sequential sampler (sorted trace ids,
//!   wrapping), draws its start instant t* ([`TracePlan::t_star`]) and warms up: one snapshot
//!   primer per live stream (its last turn before t*, full prefix, 1 output token), then
//!   `warmup_per_lane` more 1-token turns with no idle delay (a tree that drains meanwhile
//!   recycles at once and its fresh play takes the rest of the lane's quota); warmup records
//!   are phase `warmup`.
//! * Profiling: every stream resumes on its tree's recorded clock (next turn's time − the
//!   play's origin t*, one phase-wide minimum subtracted, as the harness's warmup handoff); a
//!   turn waits `t_k − (t_{k−1} + api_{k−1})` after the previous one completes. Branches
//!   (agentx-harness 1.0.12 `timing/branch_orchestrator.py`): a branch whose recorded start lies
//!   inside its spawning root turn (`start < t + api_time`) starts when that turn is *sent*,
//!   each child's first turn `t0 − t(spawning turn)` later (`on_credit_issued`); any other
//!   starts when the turn completes, each child `t0 − branch start` later. A root turn gated on
//!   a branch starts at the later of its replay deadline (its recorded delay, counted from the
//!   completion of the turn before it; a timer like any other) and its last child's completion
//!   (`PendingBranchJoin.can_release`). Barriers (`timing/replay_dependencies.py`): a due turn
//!   is held until its recorded predecessors on the other streams of its replay scope completed
//!   ([`crate::plan::Turn::after`]). Idle caps: a tree's watchdog fires `tree_idle_cap` after
//!   its last request completed with nothing of it in flight and shifts all its timers (turns,
//!   child starts, join deadlines) by one amount so the earliest fires at once; it re-arms only
//!   on the next completion (or at once when a due turn is held while the tree idles past its
//!   cap); with nothing in flight anywhere, every timer shifts so the earliest fires within
//!   `system_idle_cap` of the moment the system went idle. A drained tree recycles its lane
//!   from turn 0 of the next trace with a new cache-bust marker. No request starts after the
//!   window; in-flight ones finish (up to `grace`) and count.
//! * Cache bust: `[rid:<sha256(benchmark_id:pass:lane:trace)[:12]>]\n\n` before the first user
//!   message of every request of a tree play (pass counts plays per trace).
//! * Time scale ([`ReplayConfig::time_scale`], the simulator's speedup S): recorded think
//!   times, subagent offsets, the idle caps, the window and the grace are modelled time and are
//!   waited ÷ S of wall time; [`crate::point`] reports records and the aggregate in modelled
//!   time (× S), so a sped-up simulator run models the recorded pacing.
//! * Context overflow (an error body matching [`CONTEXT_OVERFLOW_SUBSTRINGS`], any status) ends
//!   that tree; the record is flagged ([`ReplayRecord::context_overflow`], client failure
//!   `context_overflow`) and counted apart, as the harness skips it (docs/measurement.md §13.1).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use servebench_client::http::{execute_chunks, Conn};
use servebench_client::{Cancel, ClientCtx, RequestRecord};
use servebench_workload::{Prompt, RequestSpec};
use tokio::time::Instant;

use crate::aggregate::{category_of_message, AgentxRecord, RecordPhase};
use crate::plan::{StreamState, TracePlan};
use crate::synth::Role;

/// Replay settings (defaults = InferenceX's `agentx` scenario).
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Lanes (live session trees).
    pub conc: usize,
    /// Profiling window.
    pub duration: Duration,
    /// Extra 1-token warmup requests per lane after the primers (InferenceX 10).
    pub warmup_per_lane: u32,
    /// Start point range, fraction of the trace's wall-clock span (0.25–0.75).
    pub start_min: f64,
    /// See `start_min`.
    pub start_max: f64,
    /// Seed of the start-point draws (42).
    pub seed: u64,
    /// Per-tree idle cap (300 s).
    pub tree_idle_cap: Duration,
    /// System-wide idle cap (10 s).
    pub system_idle_cap: Duration,
    /// 12 hex chars mixed into every marker.
    pub benchmark_id: String,
    /// Served model name put in every body.
    pub model: String,
    /// How long in-flight requests may run after the window (30 s).
    pub grace: Duration,
    /// Modelled seconds per wall-clock second (1 against an engine; the simulator's speedup).
    /// Every time above (window, idle caps, grace) and every recorded think time and subagent
    /// offset is modelled time; the replay waits `modelled / time_scale` of wall time, so a
    /// sped-up simulator sees the recorded pacing on its own clock.
    pub time_scale: f64,
    /// Notified once when the profiling window opens (warmup drained); the engine's
    /// `/metrics` scraper waits for it so server counters cover the window only.
    pub profiling_started: Option<Arc<tokio::sync::Notify>>,
    /// Which optional body fields the engine accepts (InferenceX's by default).
    pub body: BodyFields,
}

/// The engine-dependent part of an AgentX request body. InferenceX sends
/// `max_completion_tokens` and `ignore_eos: true` (MEASUREMENT.md Part 2 §5.4); an engine that
/// rejects unknown fields (Hugging Face `transformers serve` answers HTTP 422 to `ignore_eos`)
/// gets the output cap as `max_tokens` and no `ignore_eos`, and its outputs may then end early at
/// EOS (the records keep the server's `completion_tokens`, so the aggregate still counts what was
/// produced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyFields {
    /// Name of the output-cap field: `"max_completion_tokens"` or `"max_tokens"`.
    pub cap_field: &'static str,
    /// Send `"ignore_eos": true`.
    pub ignore_eos: bool,
}

impl Default for BodyFields {
    fn default() -> Self {
        Self {
            cap_field: "max_completion_tokens",
            ignore_eos: true,
        }
    }
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            conc: 1,
            duration: Duration::from_secs(3600),
            warmup_per_lane: 10,
            start_min: 0.25,
            start_max: 0.75,
            seed: 42,
            tree_idle_cap: Duration::from_secs(300),
            system_idle_cap: Duration::from_secs(10),
            benchmark_id: "000000000000".into(),
            model: String::new(),
            grace: Duration::from_secs(30),
            profiling_started: None,
            time_scale: 1.0,
            body: BodyFields::default(),
        }
    }
}

/// One replayed request: the aggregate's record plus what was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// What the aggregate reads.
    #[serde(flatten)]
    pub rec: AgentxRecord,
    /// Lane.
    pub lane: usize,
    /// `[rid:…]` digest of the play.
    pub marker: String,
    /// `max_completion_tokens` sent.
    pub max_tokens: u32,
    /// Roles sent, one letter each (`s`, `u`, `a`).
    pub roles: String,
    /// Synthesized tokens per message (before the marker).
    pub message_tokens: Vec<u32>,
    /// Theoretical prefix-cache hit blocks of this turn.
    pub hit_blocks: u32,
    /// Hash blocks of this turn.
    pub total_blocks: u32,
    /// `usage.prompt_tokens`.
    pub prompt_tokens_server: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens the server served from its
    /// prefix cache (absent when it did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_cached: Option<u64>,
    /// HTTP status.
    pub http_status: Option<u16>,
    /// Scheduled time, ns (run clock): when the replay decided to send.
    pub scheduled_ns: u64,
    /// The server rejected the prompt as longer than its context ([`is_context_overflow`]):
    /// the session ended, and the request is left out of the aggregate, the error gate and
    /// the latency statistics (the harness skips such records; they are counted apart).
    #[serde(default)]
    pub context_overflow: bool,
    /// The client cancelled the request: still in flight when the grace after the profiling
    /// window ran out, or Ctrl-C. Kept on disk, left out of the aggregate, the error gate and
    /// the statistics: the harness cancels such a request and returns no record for it
    /// (agentx-harness 1.0.12 `workers/worker.py`: a cancelled credit "needs no record"; its
    /// `--benchmark-grace-period` is 30 s). Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

/// What a replay produced.
#[derive(Debug, Default)]
pub struct ReplayOutcome {
    /// Every request, warmup included, in completion order.
    pub records: Vec<ReplayRecord>,
    /// The same requests as the measuring client recorded them (phase `warmup`/`measured`),
    /// for servebench's own point statistics.
    pub raw: Vec<RequestRecord>,
    /// Sessions ended by a context-overflow rejection.
    pub context_overflows: u64,
    /// Plays started (initial lanes + recycles).
    pub plays: u64,
    /// Profiling window start, ns (run clock).
    pub profiling_start_ns: u64,
    /// Profiling window end (last dispatch allowed), ns.
    pub profiling_end_ns: u64,
}

/// Errors that stop a replay.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No trace could start a lane.
    #[error("no trace has a live stream at its start point; nothing to replay")]
    NoSpawnableTrace,
    /// A warmup request of a root stream failed (the harness aborts too).
    #[error("warmup request failed for trace {trace} (turn {turn}): {error}")]
    WarmupFailed {
        /// Trace id.
        trace: String,
        /// Turn index.
        turn: usize,
        /// Failure text.
        error: String,
    },
}

/// The request body for `messages` as chunks whose concatenation is the JSON body (sent back to
/// back by `servebench_client::http::execute_chunks`): `{"messages":[`, each message's shared
/// JSON bytes ([`crate::synth::Segment`], escaped once when the trace was reconstructed; the
/// cache-bust marker goes as its own chunk at the start of the first user message's content),
/// and a small tail (`],"model":…,"stream":true,…}`, made per request). Key order as the harness
/// sends (MEASUREMENT.md Part 2 §5.4). No history byte is copied: every message chunk is a
/// reference-counted view of its segment. `marker_json` is the marker JSON-escaped without
/// quotes ([`marker_json`]).
pub fn body_chunks(
    model: &str,
    messages: &[Arc<crate::synth::Segment>],
    marker_json: &Bytes,
    max_tokens: u32,
    fields: BodyFields,
) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(messages.len() + 4);
    out.push(Bytes::from_static(b"{\"messages\":["));
    let mut marked = false;
    for (i, m) in messages.iter().enumerate() {
        let skip = usize::from(i == 0); // the first element has no leading comma
        if !marked && m.role == Role::User {
            marked = true;
            let (head, rest) = m.json_split_at_content();
            out.push(head.slice(skip..));
            out.push(marker_json.clone());
            out.push(rest);
        } else {
            out.push(m.json_with_comma().slice(skip..));
        }
    }
    let mut tail = Vec::with_capacity(128 + model.len());
    tail.extend_from_slice(b"],\"model\":");
    serde_json::to_writer(&mut tail, model).expect("string serialises");
    tail.extend_from_slice(b",\"stream\":true,\"");
    tail.extend_from_slice(fields.cap_field.as_bytes());
    tail.extend_from_slice(b"\":");
    tail.extend_from_slice(max_tokens.to_string().as_bytes());
    if fields.ignore_eos {
        tail.extend_from_slice(b",\"ignore_eos\":true");
    }
    tail.extend_from_slice(b",\"stream_options\":{\"include_usage\":true}}");
    out.push(tail.into());
    out
}

/// A marker ([`marker`]) JSON-escaped without its quotes: the bytes it adds inside the first
/// user message's content string.
pub fn marker_json(marker: &str) -> Bytes {
    let s = serde_json::to_vec(marker).expect("string serialises");
    Bytes::copy_from_slice(&s[1..s.len() - 1])
}

/// Writes the request body for `messages` into `out`: the concatenation of [`body_chunks`]
/// (the bytes the replay sends; kept for tests and tools that want one buffer).
pub fn write_body(
    out: &mut Vec<u8>,
    model: &str,
    messages: &[Arc<crate::synth::Segment>],
    marker: &str,
    max_tokens: u32,
    fields: BodyFields,
) {
    out.clear();
    for c in body_chunks(model, messages, &marker_json(marker), max_tokens, fields) {
        out.extend_from_slice(&c);
    }
}

/// `[rid:<digest>]\n\n`.
pub fn marker(benchmark_id: &str, pass: u64, lane: usize, trace: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(format!("{benchmark_id}:{pass}:{lane}:{trace}").as_bytes());
    format!("[rid:{}]\n\n", &hex::encode(d)[..12])
}

/// Substrings (lowercase) that mark an error response as a context-length rejection: the
/// harness's allowlist (`AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS` default, aiperf
/// `common/environment.py`) plus llama.cpp's wording, which the harness list misses
/// (`exceed_context_size_error`: "the request exceeds the available context size").
pub const CONTEXT_OVERFLOW_SUBSTRINGS: [&str; 6] = [
    "context length",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
    "exceed_context_size",
    "exceeds the available context size",
];

/// Whether a failed request's error text (the server's error body or message) is a
/// context-length rejection: a case-insensitive match of [`CONTEXT_OVERFLOW_SUBSTRINGS`], on
/// any status, as the harness classifies (aiperf `is_context_overflow_response`, no status
/// gate). Such a request ends its session; it is counted apart, not as a failed request.
pub fn is_context_overflow(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    CONTEXT_OVERFLOW_SUBSTRINGS.iter().any(|s| e.contains(s))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum St {
    /// Due at the instant.
    Wait(Instant),
    /// Waiting for its join gate, then its delay.
    Blocked,
    /// Due, held until its recorded predecessors on other streams completed ([`crate::plan::Turn::after`]).
    Held,
    InFlight,
    Done,
}

struct Stream {
    conv: usize,
    next: usize,
    st: St,
    /// A root turn blocked on its join gate: when its recorded delay runs out (harness
    /// `PendingBranchJoin` replay deadline, armed when the turn before it completes and shifted
    /// by the idle caps like every timer of the tree); the turn starts at the later of this and
    /// its last child's completion. `None` once elapsed or when the delay is 0.
    deadline: Option<Instant>,
}

impl Stream {
    fn new(conv: usize, next: usize, st: St) -> Self {
        Stream {
            conv,
            next,
            st,
            deadline: None,
        }
    }
}

struct Lane {
    plan: Arc<TracePlan>,
    marker: Arc<str>,
    /// `marker` JSON-escaped, the one body chunk of the play's own ([`body_chunks`]).
    marker_json: Bytes,
    streams: Vec<Stream>,
    /// Outstanding children per branch (spawned, not finished).
    outstanding: HashMap<usize, usize>,
    in_flight: usize,
    play: u64,
    /// The play's replay clock origin, ms of the recorded timeline: t* for a lane's first play,
    /// turn 0's time for a play recycled during warmup (harness `_replay_origin_ms_by_root`);
    /// `None` once profiling recycles it.
    origin_ms: Option<f64>,
    /// Per-tree idle watchdog (harness `ReplayBarrierCoordinator._arm_root_idle_watchdog`):
    /// armed `tree_idle_cap` after the tree's last request completes with nothing else of the
    /// tree in flight, cleared when one is sent; when it fires with the tree still idle, every
    /// timer of the tree shifts so the earliest fires at once. It is not re-armed until the
    /// next completion.
    watchdog: Option<Instant>,
    /// The watchdog fired while the tree was idle and no request has been sent since (harness
    /// `_RootBarrierState.idle_cap_expired`): a turn held by its predecessors then re-arms it at
    /// once.
    idle_cap_expired: bool,
    /// Turns completed in this play, (conversation, turn).
    done: HashSet<(usize, usize)>,
    /// Per conversation, the turns before the play's start instant t* (completed history of a
    /// lane's first play, harness `seed_completed_prefixes`); empty for a recycled play.
    seeded: Vec<usize>,
}

impl Lane {
    /// Whether `turn` of `conv` has completed in this play (or lies before its start instant).
    fn completed(&self, conv: usize, turn: usize) -> bool {
        self.seeded.get(conv).is_some_and(|&n| turn < n) || self.done.contains(&(conv, turn))
    }
    /// Whether every recorded predecessor of `turn` of `conv` on other streams has completed.
    fn ready(&self, conv: usize, turn: usize) -> bool {
        self.plan.convs[conv].turns[turn]
            .after
            .iter()
            .all(|&(c, k)| self.completed(c, k))
    }
    fn stream_mut(&mut self, conv: usize) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.conv == conv)
    }
    fn drained(&self) -> bool {
        self.in_flight == 0 && self.streams.iter().all(|s| s.st == St::Done)
    }
    fn gate_open(&self, conv: usize, turn: usize) -> bool {
        conv != 0
            || self.plan.convs[0].turns[turn]
                .joins
                .iter()
                .all(|b| self.outstanding.get(b).copied().unwrap_or(0) == 0)
    }
}

struct Done {
    lane: usize,
    conv: usize,
    turn: usize,
    rec: RequestRecord,
}

impl Done {
    /// Classified at completion ([`is_context_overflow`]).
    fn overflow(&self) -> bool {
        self.rec
            .failure
            .as_ref()
            .is_some_and(servebench_contracts::FailureKind::is_context_overflow)
    }
}

struct Ctx {
    client: Arc<ClientCtx>,
    cfg: ReplayConfig,
    pool: Arc<Mutex<Vec<Conn>>>,
    cancel: Cancel,
    tx: tokio::sync::mpsc::UnboundedSender<Done>,
    seq: Arc<AtomicU64>,
}

/// Recorded (modelled) think time before `turn`, in modelled time; [`Wall::of`] makes it wall.
fn delay_of(plan: &TracePlan, conv: usize, turn: usize) -> Duration {
    Duration::from_secs_f64(
        plan.convs[conv].turns[turn]
            .delay_ms
            .unwrap_or(0.0)
            .max(0.0)
            / 1000.0,
    )
}

/// Modelled time → wall time (÷ `time_scale`).
#[derive(Debug, Clone, Copy)]
struct Wall(f64);

impl Wall {
    fn new(time_scale: f64) -> Self {
        Wall(if time_scale.is_finite() && time_scale > 0.0 {
            time_scale
        } else {
            1.0
        })
    }
    fn of(self, d: Duration) -> Duration {
        if self.0 == 1.0 {
            d
        } else {
            d.div_f64(self.0)
        }
    }
}

impl Ctx {
    /// [`Ctx::send`], then (root turns) start the branches that overlapped this turn in the
    /// recording (`Branch::at_send`); `now` = `None` in warmup (no delays: children are ready).
    #[allow(clippy::too_many_arguments)]
    fn send_and_spawn(
        &self,
        lanes: &mut [Lane],
        li: usize,
        conv: usize,
        turn: usize,
        one_token: bool,
        now: Option<Instant>,
        wall: Wall,
    ) {
        self.send(lanes, li, conv, turn, one_token);
        if conv == 0 {
            let lane = &mut lanes[li];
            let plan = lane.plan.clone();
            let origin = plan.convs[0].turns[turn].t_ms;
            for &b in &plan.convs[0].turns[turn].spawns {
                if plan.branches[b].at_send {
                    spawn_branch(lane, &plan, b, origin, now, wall);
                }
            }
        }
    }

    fn send(&self, lanes: &mut [Lane], li: usize, conv: usize, turn: usize, one_token: bool) {
        let lane = &mut lanes[li];
        lane.in_flight += 1;
        lane.watchdog = None;
        lane.idle_cap_expired = false;
        if let Some(s) = lane.stream_mut(conv) {
            s.st = St::InFlight;
        }
        let plan = lane.plan.clone();
        let marker = lane.marker_json.clone();
        let client = self.client.clone();
        let pool = self.pool.clone();
        let tx = self.tx.clone();
        let model = self.cfg.model.clone();
        let fields = self.cfg.body;
        let mut cancel = self.cancel.clone();
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let corr = format!("{}-{}-{}", lane.play, li, conv);
        let scheduled = client.clock.now_ns();
        tokio::spawn(async move {
            let t = &plan.convs[conv].turns[turn];
            let max_tokens = if one_token { 1 } else { t.max_tokens };
            // shared segment bytes, no per-request copy of the history
            let body = body_chunks(&model, &t.messages, &marker, max_tokens, fields);
            let spec = RequestSpec {
                id: n,
                session: Some((conv as u64, turn as u32)),
                prompt: Prompt::Text(Arc::from("")),
                prompt_tokens: Some(t.input_tokens),
                max_tokens,
                delay: Duration::ZERO,
            };
            let rid = format!("sb-{n:08}");
            let tag = format!(
                "{}|{}|{}",
                plan.convs[conv].id,
                turn,
                if one_token { "warmup" } else { "profiling" }
            );
            let headers = [
                ("x-request-id", rid.as_str()),
                ("x-correlation-id", corr.as_str()),
                ("x-servebench-turn", tag.as_str()),
            ];
            let mut slot = pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut rec = execute_chunks(
                &client,
                &mut slot,
                &spec,
                &body,
                &headers,
                servebench_client::Phase::Measured,
                scheduled,
                &mut cancel,
            )
            .await;
            if let Some(c) = slot {
                pool.lock().unwrap_or_else(|p| p.into_inner()).push(c);
            }
            if !rec.success && is_context_overflow(rec.error.as_deref().unwrap_or("")) {
                rec.failure = Some(servebench_contracts::FailureKind::ContextOverflow);
            }
            let _ = tx.send(Done {
                lane: li,
                conv,
                turn,
                rec,
            });
        });
    }
}

/// Sequential trace sampler over sorted trace ids (wraps), with per-trace play counters.
struct Sampler {
    plans: Vec<Arc<TracePlan>>,
    next: usize,
    passes: HashMap<String, u64>,
}

impl Sampler {
    fn draw(&mut self) -> Arc<TracePlan> {
        let p = self.plans[self.next % self.plans.len()].clone();
        self.next += 1;
        p
    }
    fn pass(&mut self, trace: &str) -> u64 {
        let e = self.passes.entry(trace.to_string()).or_insert(0);
        let p = *e;
        *e += 1;
        p
    }
}

fn to_record(d: &Done, lane: &Lane, phase: RecordPhase, max_tokens: u32) -> ReplayRecord {
    let plan = &lane.plan;
    let conv = &plan.convs[d.conv];
    let t = &conv.turns[d.turn];
    let r = &d.rec;
    let osl = (r.output_tokens_source == servebench_client::OutputSource::Usage)
        .then_some(r.output_tokens);
    let full_itl = match (r.ttft_ms, osl) {
        (Some(tt), Some(o)) if o >= 2 => {
            Some(((r.end_ns.saturating_sub(r.t0_ns)) as f64 / 1e6 - tt) / (o - 1) as f64)
        }
        _ => None,
    };
    let error = if r.success {
        None
    } else {
        Some(match (&r.failure, &r.error) {
            (Some(f), _) if f.is_context_overflow() => f.to_string(),
            // `to_string` reads the failure category whether it is typed or a string
            (Some(f), _) if f.to_string().starts_with("http_") => f.to_string(),
            // a JSON error body (a stream error event, an error answer): its type/code/message,
            // as InferenceX reads the harness's error object, not its text cut at the first `:`
            (_, Some(e)) => match serde_json::from_str::<serde_json::Value>(e) {
                Ok(v) if v.is_object() => {
                    crate::aggregate::error_category(v.get("error").unwrap_or(&v))
                }
                _ => category_of_message(e),
            },
            (Some(f), None) => f.to_string(),
            (None, None) => "unknown".into(),
        })
    };
    let roles: String = t
        .messages
        .iter()
        .map(|m| match m.role {
            Role::System => 's',
            Role::User => 'u',
            Role::Assistant => 'a',
        })
        .collect();
    ReplayRecord {
        rec: AgentxRecord {
            conversation_id: conv.id.clone(),
            turn_index: d.turn as u32,
            phase,
            start_ns: r.t0_ns,
            end_ns: r.end_ns,
            ttft_ms: r.ttft_ms,
            request_latency_ms: r.e2el_ms,
            itl_ms: r.tpot_ms,
            full_response_itl_ms: full_itl,
            isl: r.prompt_tokens_server,
            osl,
            error,
        },
        lane: d.lane,
        marker: lane.marker.trim().to_string(),
        max_tokens,
        roles,
        message_tokens: t.messages.iter().map(|m| m.tokens).collect(),
        hit_blocks: t.hit_blocks,
        total_blocks: t.total_blocks,
        prompt_tokens_server: r.prompt_tokens_server,
        prompt_tokens_cached: r.prompt_tokens_cached,
        http_status: r.http_status,
        scheduled_ns: r.scheduled_ns,
        context_overflow: d.overflow(),
        cancelled: d.rec.is_cancelled(),
    }
}

/// Aborts the task when dropped (the Ctrl-C forwarder of [`run`] ends with the replay).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs the replay. `plans` in sampler order (sorted by trace id). `cancel` is the caller's
/// Ctrl-C token: it is only read here, never cancelled (requests still in flight when the grace
/// after the window ends are stopped through a token of the replay's own).
pub async fn run(
    client: ClientCtx,
    plans: Vec<Arc<TracePlan>>,
    cfg: ReplayConfig,
    cancel: Cancel,
    mut on_record: impl FnMut(&ReplayRecord),
) -> Result<ReplayOutcome, ReplayError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Done>();
    // In-flight requests stop on `stop`: on the user's Ctrl-C (`cancel`, forwarded below) or
    // when the grace after the window runs out. The grace must not cancel the caller's token:
    // that one means "the user interrupted", and the point would be reported as interrupted.
    let stop = Cancel::new();
    let forward = tokio::spawn({
        let (user, stop) = (cancel.clone(), stop.clone());
        async move {
            user.cancelled().await;
            stop.cancel();
        }
    });
    let _forward = AbortOnDrop(forward);
    let user_cancel = cancel;
    let cancel = stop;
    let ctx = Ctx {
        client: Arc::new(client),
        cfg: cfg.clone(),
        pool: Arc::new(Mutex::new(Vec::new())),
        cancel: cancel.clone(),
        tx,
        seq: Arc::new(AtomicU64::new(0)),
    };
    let mut out = ReplayOutcome::default();
    let mut sampler = Sampler {
        plans,
        next: 0,
        passes: HashMap::new(),
    };
    if sampler.plans.is_empty() {
        return Err(ReplayError::NoSpawnableTrace);
    }

    // ---- lanes and their snapshots
    let (mut lanes, snaps) = start_lanes(&cfg, &mut sampler, &mut out)?;

    // ---- warmup 1: snapshot primers
    warmup_primers(
        &ctx,
        &mut rx,
        &mut lanes,
        &snaps,
        &mut out,
        &user_cancel,
        &mut on_record,
    )
    .await?;

    if user_cancel.is_cancelled() {
        return Ok(interrupted(out, &ctx));
    }

    // ---- warmup 2: cache pressure
    warmup_pressure(
        &ctx,
        &mut rx,
        &mut lanes,
        &mut sampler,
        &cfg,
        &mut out,
        &user_cancel,
        &mut on_record,
    )
    .await;
    if user_cancel.is_cancelled() {
        return Ok(interrupted(out, &ctx));
    }

    // ---- profiling
    profile(
        &ctx,
        &mut rx,
        &mut lanes,
        &mut sampler,
        &cfg,
        &mut out,
        &user_cancel,
        &cancel,
        &mut on_record,
    )
    .await;
    Ok(out)
}

/// Starts up to `cfg.conc` lanes, each on a trace drawn from the sampler at its snapshot
/// time t* (draws whose snapshot is empty are skipped, at most conc + 2 × traces draws):
/// the lanes and their snapshots. Errors: no lane could start.
fn start_lanes(
    cfg: &ReplayConfig,
    sampler: &mut Sampler,
    out: &mut ReplayOutcome,
) -> Result<(Vec<Lane>, Vec<Vec<StreamState>>), ReplayError> {
    let mut lanes: Vec<Lane> = Vec::new();
    let mut snaps: Vec<Vec<StreamState>> = Vec::new();
    let max_attempts = cfg.conc + 2 * sampler.plans.len();
    let mut attempts = 0;
    while lanes.len() < cfg.conc && attempts < max_attempts {
        attempts += 1;
        let plan = sampler.draw();
        let li = lanes.len();
        let t_star = plan.t_star(cfg.seed, li, cfg.start_min, cfg.start_max);
        let Some(states) = plan.snapshot(t_star) else {
            continue;
        };
        let pass = sampler.pass(&plan.trace_id);
        let mk = marker(&cfg.benchmark_id, pass, li, &plan.trace_id);
        tracing::info!(lane = li, trace = %plan.trace_id, t_star_ms = t_star, "lane start");
        let streams = states
            .iter()
            .map(|s| Stream::new(s.conv, s.next_turn, St::Blocked))
            .collect();
        // branches already running at t*: their children are live
        let mut outstanding = HashMap::new();
        for s in &states {
            if let Some(b) = plan.convs[s.conv].branch {
                *outstanding.entry(b).or_insert(0) += 1;
            }
        }
        let seeded = plan
            .convs
            .iter()
            .map(|c| {
                c.turns
                    .iter()
                    .position(|t| t.t_ms >= t_star)
                    .unwrap_or(c.turns.len())
            })
            .collect();
        lanes.push(Lane {
            plan,
            marker_json: marker_json(&mk),
            marker: mk.into(),
            streams,
            outstanding,
            in_flight: 0,
            play: out.plays,
            origin_ms: Some(t_star),
            watchdog: None,
            idle_cap_expired: false,
            done: HashSet::new(),
            seeded,
        });
        out.plays += 1;
        snaps.push(states);
    }
    if lanes.is_empty() {
        return Err(ReplayError::NoSpawnableTrace);
    }
    Ok((lanes, snaps))
}

/// Warmup 1: the snapshot primers (the last turn before t* of every live stream), all sent
/// at once and awaited. Errors: a root conversation's primer failed (not after Ctrl-C).
async fn warmup_primers(
    ctx: &Ctx,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Done>,
    lanes: &mut [Lane],
    snaps: &[Vec<StreamState>],
    out: &mut ReplayOutcome,
    user_cancel: &Cancel,
    on_record: &mut impl FnMut(&ReplayRecord),
) -> Result<(), ReplayError> {
    let mut pending = 0usize;
    for (li, states) in snaps.iter().enumerate() {
        for s in states {
            if s.next_turn >= 1 {
                ctx.send(lanes, li, s.conv, s.next_turn - 1, true);
                pending += 1;
            }
        }
    }
    while pending > 0 {
        let Some(d) = rx.recv().await else { break };
        pending -= 1;
        let lane = &mut lanes[d.lane];
        lane.in_flight -= 1;
        if let Some(s) = lane.stream_mut(d.conv) {
            s.st = St::Blocked;
        }
        let r = to_record(&d, lane, RecordPhase::Warmup, 1);
        out.raw
            .push(with_phase(&d.rec, servebench_client::Phase::Warmup));
        if d.overflow() {
            // the session does not fit the server's context: it ends (counted); the lane
            // starts a fresh play at the start of profiling
            out.context_overflows += 1;
            end_tree(lane, d.conv);
            on_record(&r);
            out.records.push(r);
            continue;
        }
        if d.conv == 0 && r.rec.error.is_some() && !user_cancel.is_cancelled() {
            return Err(ReplayError::WarmupFailed {
                trace: lane.plan.trace_id.clone(),
                turn: d.turn,
                error: d.rec.error.clone().unwrap_or_default(),
            });
        }
        on_record(&r);
        out.records.push(r);
    }
    Ok(())
}

/// Warmup 2: cache pressure, `warmup_per_lane` more 1-token turns per lane, no delays; a
/// tree that drains is recycled at once.
#[allow(clippy::too_many_arguments)]
async fn warmup_pressure(
    ctx: &Ctx,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Done>,
    lanes: &mut [Lane],
    sampler: &mut Sampler,
    cfg: &ReplayConfig,
    out: &mut ReplayOutcome,
    user_cancel: &Cancel,
    on_record: &mut impl FnMut(&ReplayRecord),
) {
    let mut left: Vec<u32> = vec![cfg.warmup_per_lane; lanes.len()];
    let mut busy = 0usize;
    let pick = |lane: &Lane| -> Option<(usize, usize)> {
        lane.streams
            .iter()
            .filter(|s| s.st == St::Blocked && s.next < lane.plan.convs[s.conv].turns.len())
            .filter(|s| lane.gate_open(s.conv, s.next) && lane.ready(s.conv, s.next))
            .min_by(|a, b| {
                let ta = lane.plan.convs[a.conv].turns[a.next].t_ms;
                let tb = lane.plan.convs[b.conv].turns[b.next].t_ms;
                ta.total_cmp(&tb)
            })
            .map(|s| (s.conv, s.next))
    };
    for li in 0..lanes.len() {
        if left[li] > 0 {
            if let Some((c, t)) = pick(&lanes[li]) {
                ctx.send_and_spawn(lanes, li, c, t, true, None, Wall(1.0));
                left[li] -= 1;
                busy += 1;
            }
        }
    }
    while busy > 0 {
        let Some(d) = rx.recv().await else { break };
        busy -= 1;
        let li = d.lane;
        let r = to_record(&d, &lanes[li], RecordPhase::Warmup, 1);
        out.raw
            .push(with_phase(&d.rec, servebench_client::Phase::Warmup));
        on_record(&r);
        out.records.push(r);
        if d.overflow() {
            out.context_overflows += 1;
            lanes[li].in_flight -= 1;
            end_tree(&mut lanes[li], d.conv);
            continue;
        }
        advance_after(&mut lanes[li], d.conv, d.turn, None, Wall(1.0));
        if lanes[li].drained() {
            // the harness recycles a tree that drains during warmup at once; the fresh play
            // takes the lane's remaining warmup quota from its turn 0 (with none left, its turn 0
            // waits for profiling) and resumes on its own recorded clock
            recycle(&mut lanes[li], sampler, cfg, li, out, Instant::now());
            for s in lanes[li].streams.iter_mut() {
                s.st = St::Blocked;
            }
            let origin = lanes[li].plan.convs[0].turns.first().map(|t| t.t_ms);
            lanes[li].origin_ms = origin;
        }
        if left[li] > 0 && !user_cancel.is_cancelled() {
            if let Some((c, t)) = pick(&lanes[li]) {
                ctx.send_and_spawn(lanes, li, c, t, true, None, Wall(1.0));
                left[li] -= 1;
                busy += 1;
            }
        }
    }
}

/// The profiling window: every live stream resumes on its tree's recorded clock; turns are
/// dispatched when due and ready, idle caps shift timers, completions advance their trees
/// ([`on_done`]); at the window's end nothing new starts and in-flight requests get the grace.
#[allow(clippy::too_many_arguments)]
async fn profile(
    ctx: &Ctx,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Done>,
    lanes: &mut [Lane],
    sampler: &mut Sampler,
    cfg: &ReplayConfig,
    out: &mut ReplayOutcome,
    user_cancel: &Cancel,
    cancel: &Cancel,
    on_record: &mut impl FnMut(&ReplayRecord),
) {
    // modelled → wall: the window, caps, grace and every think time (time_scale ≠ 1 only
    // against a sped-up simulator)
    let wall = Wall::new(cfg.time_scale);
    let (duration, tree_cap, system_cap, grace) = (
        wall.of(cfg.duration),
        wall.of(cfg.tree_idle_cap),
        wall.of(cfg.system_idle_cap),
        wall.of(cfg.grace),
    );
    let t0 = Instant::now();
    let end = t0 + duration;
    out.profiling_start_ns = ctx.client.clock.now_ns();
    if let Some(n) = &cfg.profiling_started {
        n.notify_one();
    }
    out.profiling_end_ns = out.profiling_start_ns + duration.as_nanos() as u64;
    seed_timers(lanes, t0, wall);
    // every tree starts idle: its watchdog runs from the window's start (harness
    // `observe_idle_root`), and so does the system's idle interval
    for lane in lanes.iter_mut() {
        lane.watchdog = Some(t0 + tree_cap);
    }
    let mut system_idle_since = Some(t0);
    // lanes whose tree finished during warmup start a fresh play
    for li in 0..lanes.len() {
        if lanes[li].drained() {
            recycle(&mut lanes[li], sampler, cfg, li, out, t0);
        }
    }
    let mut in_flight_total = 0usize;
    let mut closing = false;
    loop {
        let now = Instant::now();
        // the window's end, or Ctrl-C: nothing new starts; what is in flight finishes (after
        // Ctrl-C it was cancelled with the user's token and returns at once)
        if (now >= end || user_cancel.is_cancelled()) && !closing {
            closing = true;
        }
        for s in lanes.iter_mut().flat_map(|l| l.streams.iter_mut()) {
            if s.deadline.is_some_and(|d| d <= now) {
                s.deadline = None; // a join deadline that elapsed
            }
        }
        // dispatch everything due
        if !closing {
            for li in 0..lanes.len() {
                let due: Vec<(usize, usize)> = lanes[li]
                    .streams
                    .iter()
                    .filter_map(|s| match s.st {
                        St::Wait(at) if at <= now => Some((s.conv, s.next)),
                        _ => None,
                    })
                    .collect();
                for (c, t) in due {
                    if lanes[li].ready(c, t) {
                        ctx.send_and_spawn(lanes, li, c, t, false, Some(now), wall);
                        in_flight_total += 1;
                        continue;
                    }
                    // held by the replay barrier until its predecessors complete; a tree already
                    // idle past its cap advances its next timer at once
                    let lane = &mut lanes[li];
                    if let Some(s) = lane.stream_mut(c) {
                        s.st = St::Held;
                    }
                    if lane.in_flight == 0 && lane.idle_cap_expired && lane.watchdog.is_none() {
                        lane.watchdog = Some(now);
                    }
                }
            }
        }
        if closing && in_flight_total == 0 {
            break;
        }
        if in_flight_total > 0 {
            system_idle_since = None;
        }
        // idle caps: a tree whose watchdog fires while it is idle has all its timers shifted so
        // the earliest fires now; with nothing in flight anywhere, every timer shifts so the
        // earliest fires within the system cap of the moment the system went idle
        let mut shifted = false;
        if !closing {
            for lane in lanes.iter_mut() {
                if lane.watchdog.is_some_and(|w| w <= now) {
                    lane.watchdog = None;
                    if lane.in_flight == 0 {
                        lane.idle_cap_expired = true;
                        shift_to(lane.streams.iter_mut(), now, now);
                        shifted = true;
                    }
                }
            }
            if let Some(since) = system_idle_since {
                shift_to(
                    lanes.iter_mut().flat_map(|l| l.streams.iter_mut()),
                    now,
                    (since + system_cap).max(now),
                );
            }
        }
        let next_due = if closing {
            None
        } else if shifted {
            Some(now)
        } else {
            lanes
                .iter()
                .flat_map(|l| {
                    l.streams
                        .iter()
                        .flat_map(|s| {
                            let w = match s.st {
                                St::Wait(at) => Some(at),
                                _ => None,
                            };
                            w.into_iter().chain(s.deadline)
                        })
                        .chain(l.watchdog)
                })
                .min()
                .map(|t| t.min(end))
                .or(Some(end))
        };
        let deadline = next_due.unwrap_or(end + grace);
        // biased: a response and a timer due at the same instant are taken in this order
        // every run (tokio's default picks a random branch first: not reproducible on the
        // virtual clock)
        let msg = tokio::select! {
            biased;
            m = rx.recv() => m,
            // a think time may be minutes long: Ctrl-C must not wait for it
            _ = user_cancel.cancelled(), if !closing => continue,
            _ = tokio::time::sleep_until(deadline) => {
                if closing && Instant::now() >= end + grace {
                    cancel.cancel();
                }
                continue;
            }
        };
        let Some(mut d) = msg else { break };
        on_done(
            &mut d,
            lanes,
            sampler,
            cfg,
            out,
            user_cancel,
            on_record,
            (wall, tree_cap, end),
            &mut in_flight_total,
            &mut system_idle_since,
        );
    }
}

/// Every live stream's first timer at the window's start `t0`: offset = t(next turn) − the
/// play's origin (without one, the next turn's recorded delay), less one phase-wide minimum
/// over the streams not gated on children, so the earliest fires at once; a parent gated on
/// children gets the same place as its join deadline.
fn seed_timers(lanes: &mut [Lane], t0: Instant, wall: Wall) {
    // every live stream resumes on its tree's recorded clock (harness warmup handoff): offset
    // = t(next turn) − the play's origin (without one, the next turn's recorded delay); one
    // phase-wide minimum over the streams not gated on children is subtracted, so the earliest
    // fires at once and the spacing within and across trees is kept; the idle caps below then
    // bound each tree's and the system's wait
    let mut offsets: Vec<(usize, usize, Duration)> = Vec::new();
    for (li, lane) in lanes.iter().enumerate() {
        for s in &lane.streams {
            if s.st == St::Blocked && s.next < lane.plan.convs[s.conv].turns.len() {
                let d = match lane.origin_ms {
                    Some(o) => Duration::from_secs_f64(
                        ((lane.plan.convs[s.conv].turns[s.next].t_ms - o) / 1000.0).max(0.0),
                    ),
                    None => delay_of(&lane.plan, s.conv, s.next),
                };
                offsets.push((li, s.conv, wall.of(d)));
            }
        }
    }
    let min_off = offsets
        .iter()
        .filter(|(li, conv, _)| {
            let lane = &lanes[*li];
            lane.streams
                .iter()
                .find(|s| s.conv == *conv)
                .is_some_and(|s| lane.gate_open(*conv, s.next))
        })
        .map(|o| o.2)
        .min()
        .unwrap_or(Duration::ZERO);
    for (li, conv, d) in offsets {
        let lane = &mut lanes[li];
        let next = lane.stream_mut(conv).map(|s| s.next).unwrap_or(0);
        let open = lane.gate_open(conv, next);
        if let Some(s) = lane.stream_mut(conv) {
            let at = t0 + d.saturating_sub(min_off);
            if open {
                s.st = St::Wait(at);
            } else {
                // a parent gated on children (harness `seed_snapshot`): its join deadline is
                // its place on the same timeline
                s.deadline = (at > t0).then_some(at);
            }
        }
    }
}

/// One profiling completion `d`: its record (a grace cut says so), the tree advanced (or
/// ended on a context overflow), held turns now ready released, the tree's watchdog and the
/// system's idle interval restarted when idle, a drained tree recycled before the window's
/// end. `times`: (wall scale, tree idle cap, window end).
#[allow(clippy::too_many_arguments)]
fn on_done(
    d: &mut Done,
    lanes: &mut [Lane],
    sampler: &mut Sampler,
    cfg: &ReplayConfig,
    out: &mut ReplayOutcome,
    user_cancel: &Cancel,
    on_record: &mut impl FnMut(&ReplayRecord),
    times: (Wall, Duration, Instant),
    in_flight_total: &mut usize,
    system_idle_since: &mut Option<Instant>,
) {
    let (wall, tree_cap, end) = times;
    *in_flight_total -= 1;
    if d.rec.is_cancelled() && !user_cancel.is_cancelled() {
        // stopped by the grace's end, not by the user: the client's text says Ctrl-C
        d.rec.error = Some(format!(
            "cut at the end of the {} s grace after the profiling window",
            cfg.grace.as_secs_f64()
        ));
    }
    let li = d.lane;
    let max_tokens = lanes[li].plan.convs[d.conv].turns[d.turn].max_tokens;
    let r = to_record(d, &lanes[li], RecordPhase::Profiling, max_tokens);
    out.raw.push(d.rec.clone());
    let overflow = d.overflow();
    on_record(&r);
    out.records.push(r);
    let now = Instant::now();
    if overflow {
        out.context_overflows += 1;
        let lane = &mut lanes[li];
        lane.in_flight -= 1;
        end_tree(lane, d.conv);
    } else {
        advance_after(&mut lanes[li], d.conv, d.turn, Some(now), wall);
    }
    // held turns whose predecessors have now completed go at once
    let lane = &mut lanes[li];
    let ready: Vec<usize> = lane
        .streams
        .iter()
        .filter(|s| s.st == St::Held && lane.ready(s.conv, s.next))
        .map(|s| s.conv)
        .collect();
    for c in ready {
        if let Some(s) = lane.stream_mut(c) {
            s.st = St::Wait(now);
        }
    }
    if lane.in_flight == 0 {
        lane.idle_cap_expired = false;
        if lane.watchdog.is_none() {
            lane.watchdog = Some(now + tree_cap);
        }
    }
    if *in_flight_total == 0 {
        *system_idle_since = Some(now);
    }
    if lanes[li].drained() && now < end {
        recycle(&mut lanes[li], sampler, cfg, li, out, now);
    }
}

/// The outcome of a replay the user interrupted (Ctrl-C) before its profiling window: what the
/// warmup recorded, with an empty window at the moment it stopped.
fn interrupted(mut out: ReplayOutcome, ctx: &Ctx) -> ReplayOutcome {
    let now = ctx.client.clock.now_ns();
    out.profiling_start_ns = now;
    out.profiling_end_ns = now;
    out
}

/// Ends the lane's tree after a context overflow on stream `finished`: that stream (its request
/// has completed, so it no longer counts as in flight) and every stream not in flight are done.
/// Without ending `finished` itself, the lane would never drain and never recycle.
fn end_tree(lane: &mut Lane, finished: usize) {
    for s in lane.streams.iter_mut() {
        if s.conv == finished || s.st != St::InFlight {
            s.st = St::Done;
        }
    }
}

fn with_phase(r: &RequestRecord, phase: servebench_client::Phase) -> RequestRecord {
    let mut r = r.clone();
    r.phase = phase;
    r
}

/// Shifts every pending timer of `streams` (waiting turns and join deadlines still ahead of
/// `now`) by one amount so the earliest fires no later than `limit` (harness
/// `LoopScheduler.cap_pending_delay[_for_group]`: a uniform shift keeps their order and spacing).
fn shift_to<'a>(streams: impl Iterator<Item = &'a mut Stream>, now: Instant, limit: Instant) {
    let mut v: Vec<&mut Stream> = streams.collect();
    for s in v.iter_mut() {
        if s.deadline.is_some_and(|d| d <= now) {
            s.deadline = None; // elapsed
        }
    }
    let earliest = v
        .iter()
        .flat_map(|s| {
            let w = match s.st {
                St::Wait(at) => Some(at),
                _ => None,
            };
            w.into_iter().chain(s.deadline)
        })
        .min();
    if let Some(e) = earliest {
        if e > limit {
            let shift = e - limit;
            for s in v.iter_mut() {
                if let St::Wait(at) = s.st {
                    s.st = St::Wait(at - shift);
                }
                if let Some(d) = s.deadline {
                    let d = d - shift;
                    s.deadline = (d > now).then_some(d);
                }
            }
        }
    }
}

/// After turn `turn` of `conv` completed: spawn branches, schedule the stream's next turn
/// (`now` = `None` in warmup: nothing is timed, streams just become ready), release joins.
fn advance_after(lane: &mut Lane, conv: usize, turn: usize, now: Option<Instant>, wall: Wall) {
    lane.in_flight -= 1;
    lane.done.insert((conv, turn));
    let plan = lane.plan.clone();
    let c = &plan.convs[conv];
    // spawns (branches that overlapped this turn in the recording started when it was sent)
    if conv == 0 {
        for &b in &c.turns[turn].spawns {
            if !plan.branches[b].at_send {
                let origin = plan.branches[b].start_ms;
                spawn_branch(lane, &plan, b, origin, now, wall);
            }
        }
    }
    let next = turn + 1;
    let finished = next >= c.turns.len();
    let gate_open = finished || lane.gate_open(conv, next);
    if let Some(s) = lane.stream_mut(conv) {
        s.next = next;
        s.deadline = None;
        s.st = if finished {
            St::Done
        } else {
            match now {
                Some(n) if gate_open => St::Wait(n + wall.of(delay_of(&plan, conv, next))),
                Some(n) => {
                    // suspended on its join: the recorded delay runs from now as the replay
                    // deadline; the turn starts at the later of it and the last child's end
                    let d = wall.of(delay_of(&plan, conv, next));
                    s.deadline = (!d.is_zero()).then_some(n + d);
                    St::Blocked
                }
                None => St::Blocked,
            }
        };
    }
    if finished {
        if let Some(b) = c.branch {
            if let Some(o) = lane.outstanding.get_mut(&b) {
                *o = o.saturating_sub(1);
                if *o == 0 {
                    // release the root if it waits on this branch
                    let root_next = lane.stream_mut(0).map(|s| (s.next, s.st));
                    if let Some((rn, St::Blocked)) = root_next {
                        if rn < plan.convs[0].turns.len() && lane.gate_open(0, rn) {
                            if let (Some(n), Some(s)) = (now, lane.stream_mut(0)) {
                                // harness `PendingBranchJoin.can_release`: children done and
                                // the replay deadline elapsed
                                s.st = St::Wait(s.deadline.take().map_or(n, |d| d.max(n)));
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Starts branch `b` of the lane's play: its children become streams, each first turn
/// `t0 − origin_ms` (recorded) after `now` (`None` in warmup: ready at once).
fn spawn_branch(
    lane: &mut Lane,
    plan: &TracePlan,
    b: usize,
    origin_ms: f64,
    now: Option<Instant>,
    wall: Wall,
) {
    let br = &plan.branches[b];
    *lane.outstanding.entry(b).or_insert(0) += br.children.len();
    for &child in &br.children {
        let off = ((plan.convs[child].turns[0].t_ms - origin_ms).max(0.0)) / 1000.0;
        let st = match now {
            Some(n) => St::Wait(n + wall.of(Duration::from_secs_f64(off))),
            None => St::Blocked,
        };
        lane.streams.push(Stream::new(child, 0, st));
    }
}

fn recycle(
    lane: &mut Lane,
    sampler: &mut Sampler,
    cfg: &ReplayConfig,
    li: usize,
    out: &mut ReplayOutcome,
    now: Instant,
) {
    let plan = sampler.draw();
    let pass = sampler.pass(&plan.trace_id);
    let mk = marker(&cfg.benchmark_id, pass, li, &plan.trace_id);
    lane.marker_json = marker_json(&mk);
    lane.marker = mk.into();
    lane.streams = vec![Stream::new(0, 0, St::Wait(now))];
    lane.watchdog = None;
    lane.idle_cap_expired = false;
    lane.done.clear();
    lane.seeded.clear();
    lane.outstanding.clear();
    lane.plan = plan;
    lane.play = out.plays;
    lane.origin_ms = None;
    out.plays += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Segment;

    #[test]
    fn body_has_the_harness_key_order_and_the_marker_on_the_first_user_message() {
        let seg = |role, text: &str| Arc::new(Segment::new(role, text, 1));
        let msgs = vec![
            seg(Role::System, "sys"),
            seg(Role::User, "u1 \"q\""),
            seg(Role::Assistant, "a"),
            seg(Role::User, "u2"),
        ];
        let mut b = Vec::new();
        write_body(
            &mut b,
            "m",
            &msgs,
            "[rid:abc]\n\n",
            7,
            BodyFields::default(),
        );
        let s = String::from_utf8(b).unwrap();
        assert_eq!(
            s,
            "{\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"[rid:abc]\\n\\nu1 \\\"q\\\"\"},{\"role\":\"assistant\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"u2\"}],\"model\":\"m\",\"stream\":true,\"max_completion_tokens\":7,\"ignore_eos\":true,\"stream_options\":{\"include_usage\":true}}"
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert!(v.get("temperature").is_none());
    }

    #[test]
    fn an_engine_without_ignore_eos_gets_max_tokens_and_no_ignore_eos() {
        let msgs = vec![Arc::new(Segment::new(Role::User, "u", 1))];
        let mut b = Vec::new();
        let f = BodyFields {
            cap_field: "max_tokens",
            ignore_eos: false,
        };
        write_body(&mut b, "m", &msgs, "[rid:abc]\n\n", 9, f);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["max_tokens"], 9);
        assert!(v.get("ignore_eos").is_none(), "{v}");
        assert!(v.get("max_completion_tokens").is_none(), "{v}");
        assert_eq!(v["stream_options"]["include_usage"], true);
    }

    /// Segments of a long reconstructed history (WordCodec, one trace of 40 turns growing by
    /// 40 blocks each, ~ 400 KB of text at the last turn).
    fn long_history() -> Vec<Arc<Segment>> {
        use crate::synth::{reconstruct, BlockSource, Corpus, TurnShape, WordCodec};
        let codec = WordCodec;
        let corpus = Corpus::build(&codec);
        let mut src = BlockSource::new(&corpus, &codec, "t");
        let ids: Vec<Vec<u64>> = (1..=40u64).map(|k| (1..=k * 40).collect()).collect();
        let turns: Vec<TurnShape<'_>> = ids
            .iter()
            .map(|h| TurnShape {
                hash_ids: h,
                input: h.len() * 64 + 7,
                output: 100,
            })
            .collect();
        let mut per_turn = reconstruct(&mut src, "t", &turns, 300, 40).unwrap();
        per_turn.pop().unwrap()
    }

    /// The CI guard on the replay's memory (issue 21 target 2): a request body is the shared
    /// segments' own bytes plus a bounded per-request part. Counted, not timed: every byte of
    /// a message chunk must lie inside its segment's JSON allocation (a view, not a copy), and
    /// the bytes made per request (opening, marker, tail) stay under 200 + model name bytes
    /// whatever the history's size.
    #[test]
    fn body_chunks_share_the_segments_and_copy_only_a_bounded_part() {
        let msgs = long_history();
        assert!(msgs.len() > 60, "{} messages", msgs.len());
        let mk = marker_json("[rid:0123456789ab]\n\n");
        let chunks = body_chunks("a-model", &msgs, &mk, 77, BodyFields::default());
        let total: usize = chunks.iter().map(Bytes::len).sum();
        let held: Vec<std::ops::Range<usize>> = msgs
            .iter()
            .map(|m| {
                let p = m.json_with_comma().as_ptr() as usize;
                p..p + m.json_len()
            })
            .collect();
        let shared: usize = chunks
            .iter()
            .filter(|c| {
                let (a, b) = (c.as_ptr() as usize, c.as_ptr() as usize + c.len());
                held.iter().any(|r| r.start <= a && b <= r.end)
            })
            .map(Bytes::len)
            .sum();
        let copied = total - shared;
        assert!(total > 300_000, "history of {total} bytes");
        assert!(
            copied <= 200 + "a-model".len(),
            "{copied} of {total} body bytes made per request (the rest must be shared segments)"
        );
        // the same bytes as one buffer, and valid JSON with the marker on the first user message
        let mut one = Vec::new();
        write_body(
            &mut one,
            "a-model",
            &msgs,
            "[rid:0123456789ab]\n\n",
            77,
            BodyFields::default(),
        );
        assert_eq!(one.len(), total);
        let v: serde_json::Value = serde_json::from_slice(&one).unwrap();
        let m = v["messages"].as_array().unwrap();
        assert_eq!(m.len(), msgs.len());
        let first_user = msgs.iter().position(|s| s.role == Role::User).unwrap();
        assert_eq!(
            m[first_user]["content"].as_str().unwrap(),
            format!("[rid:0123456789ab]\n\n{}", msgs[first_user].text())
        );
        for (k, (a, b)) in m.iter().zip(&msgs).enumerate() {
            assert_eq!(a["role"], b.role.as_str(), "message {k}");
            if k != first_user {
                assert_eq!(a["content"].as_str().unwrap(), b.text(), "message {k}");
            }
        }
    }

    /// On the wire a chunked body is byte-identical to the same body sent as one buffer (head,
    /// `content-length` and body), also when the writes are partial (a 3 MB body over loopback,
    /// more chunks than one vectored write takes, empty chunks among them).
    #[tokio::test]
    async fn a_chunked_body_reaches_the_server_byte_identical() {
        use servebench_client::http::execute_body;
        use servebench_client::mock::{Captured, MockServer};
        use servebench_client::{Api, BodyBuilder, ClientCtx, Compat, Endpoint, Engine};
        let reply = |_: &Captured| servebench_client::mock::Reply::Body {
            status: 200,
            body: b"data: [DONE]\n\n".to_vec(),
            content_type: "text/event-stream",
        };
        let srv = MockServer::start(Arc::new(reply), false).await.unwrap();
        let ctx = ClientCtx {
            endpoint: Endpoint::parse(&srv.base_url()).unwrap(),
            builder: BodyBuilder::new("m", Api::Chat, Engine::Openai, Compat::Servebench, false),
            compat: Compat::Servebench,
            new_connection_per_request: false,
            timeout: Duration::from_secs(20),
            clock: servebench_client::Clock::start(),
            capture_text: false,
            api_key: None,
        };
        let mut chunks: Vec<Bytes> = Vec::new();
        for i in 0..700usize {
            let n = if i % 7 == 0 { 0 } else { (i * 7919) % 12000 };
            chunks.push(Bytes::from(vec![b'a' + (i % 26) as u8; n]));
        }
        let one: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
        assert!(one.len() > 3_000_000);
        let spec = RequestSpec {
            id: 1,
            session: None,
            prompt: Prompt::Text(Arc::from("")),
            prompt_tokens: None,
            max_tokens: 1,
            delay: Duration::ZERO,
        };
        let hdr = [("x-request-id", "r1")];
        let mut slot = None;
        let mut cancel = Cancel::new();
        let phase = servebench_client::Phase::Measured;
        let a = execute_chunks(&ctx, &mut slot, &spec, &chunks, &hdr, phase, 0, &mut cancel).await;
        let one = Bytes::from(one);
        let b = execute_body(&ctx, &mut slot, &spec, &one, &hdr, phase, 0, &mut cancel).await;
        assert_eq!(a.http_status, Some(200), "{:?}", a.error);
        assert_eq!(b.http_status, Some(200), "{:?}", b.error);
        let got = srv.captured();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].headers, got[1].headers);
        assert!(
            got[0].body == one,
            "chunked body differs from the one-buffer body"
        );
        assert!(got[1].body == one);
    }

    #[test]
    fn marker_is_the_harness_digest() {
        // sha256("0123456789ab:0:1:trace_0167")[:12], as agentx-harness sent it
        assert_eq!(
            marker("0123456789ab", 0, 1, "trace_0167"),
            "[rid:9b71c72c4d59]\n\n"
        );
    }

    #[test]
    fn overflow_detection() {
        // vLLM, SGLang, the harness's OpenAI code, Anthropic-style, llama.cpp
        for body in [
            r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens","type":"BadRequestError","code":400}"#,
            "The input (50000 tokens) is longer than the model's context length (32768 tokens).",
            r#"{"error":{"code":"context_length_exceeded"}}"#,
            "Prompt is too long",
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
        ] {
            assert!(is_context_overflow(body), "{body}");
        }
        // no status gate, as in the harness
        assert!(is_context_overflow(
            "HTTP 500: Maximum Context Length exceeded"
        ));
        for body in [
            "bad field",
            "max_tokens must be at least 1",
            "too long to wait",
            "",
        ] {
            assert!(!is_context_overflow(body), "{body}");
        }
    }
}
