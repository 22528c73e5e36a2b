//! [`MultiturnReplay`]: multi-turn chat replay (`--scenario multiturn`), the conversation
//! replay InferenceX runs in `experimental/multiturn` (vLLM's
//! `benchmarks/multi_turn/benchmark_serving_multi_turn.py`; its S8b results).
//!
//! Input: ShareGPT-style conversations, a JSON array or JSONL of
//! `{"conversations": [{"from": "human", "value": …}, {"from": "gpt", "value": …}, …]}`
//! (`system` first is kept as the system message; `user`/`assistant` spell the roles too). A
//! human message may carry `"think_time_s"`: the recorded seconds the user waited after the
//! previous answer before sending it. Each gpt message's length is the turn's output target
//! (`max_tokens`): tokens of the `--tokenizer`, else 4 characters per token.
//!
//! Per point: `conc` lanes (concurrent conversations) take conversations in file order; a lane
//! replays its conversation turn by turn, each turn sending the whole real history — every
//! earlier user turn and the model's actual earlier answers — as chat messages, so a later turn
//! re-sends the earlier turns as a prefix the server can reuse from its prefix cache. Between
//! turns the lane waits the recorded think time × `--think-time-scale`, capped at
//! `--max-think-time` (modelled time: divided by the simulator's speedup). A failed turn ends its
//! conversation (the history cannot go on without the answer). One record per turn
//! (`session: [conversation, turn]` in `records.jsonl`), no warmup; the point's metrics are the
//! usual TTFT/TPOT/ITL/E2EL statistics over all turns, and the server-reported prefix-cache
//! reuse (`usage.prompt_tokens_details.cached_tokens` over `usage.prompt_tokens`, S8b's
//! `gpu_hit_rate`) is said under the table.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use servebench_client::{Api, BodyBuilder, ClientCtx, Clock, Load, RequestRecord};
use servebench_metrics::PromptCount;
use servebench_workload::source::{ChatMessage, Prompt, RequestSpec, TurnOutcome};
use servebench_workload::{LocalTokenizer, RequestSource};

use crate::console::Console;
use crate::error::{flag, PipelineError, Result};
use crate::executor::{PointSpec, SweepCtx};
use crate::measure::{PointMeta, PointRequests, PointRun, RequestWorkload, StreamFacts};
pub use crate::plan::MultiturnPlan;
use crate::plan::SweepPlan;
use crate::target::Target;

/// One turn of a conversation: the user's message and what it asks of the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The user's message.
    pub user: String,
    /// Recorded think time before this turn, s (0 for the first turn or when not recorded).
    pub think_s: f64,
    /// Output target: the recorded answer's length, tokens (≥ 1).
    pub osl: u32,
}

/// One conversation to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Index in the file (the record's `session[0]`).
    pub id: u64,
    /// System message, if the conversation has one.
    pub system: Option<String>,
    /// Complete turns (a trailing human message without an answer is dropped).
    pub turns: Vec<Turn>,
}

/// One message as read: `(from, value, think_time_s)`.
type RawMsg = (String, String, Option<f64>);

/// The messages of one conversation object (`{"conversations": [{"from", "value"}, …]}`).
fn raw_conversation(v: &Value) -> std::result::Result<Vec<RawMsg>, String> {
    let msgs = v
        .get("conversations")
        .and_then(Value::as_array)
        .ok_or("no \"conversations\" array")?;
    msgs.iter()
        .enumerate()
        .map(|(i, m)| {
            let s = |k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or(format!("message {i}: no string \"{k}\""))
            };
            let think = match m.get("think_time_s") {
                None | Some(Value::Null) => None,
                Some(t) => Some(
                    t.as_f64()
                        .ok_or(format!("message {i}: think_time_s is not a number"))?,
                ),
            };
            Ok((s("from")?, s("value")?, think))
        })
        .collect()
}

/// Reads conversations from `path` (JSON array, or JSONL with one conversation a line),
/// sizing each answer with `count` (tokens of a text).
///
/// # Errors
/// One line naming the file and the conversation (JSONL: the line) that is wrong: unreadable
/// file, bad JSON, a role other than system/human/user/gpt/assistant, turns that do not
/// alternate human → gpt, a negative think time; or no complete turn in the whole file.
pub fn load_conversations(
    path: &Path,
    count: &dyn Fn(&str) -> u32,
) -> std::result::Result<Vec<Conversation>, String> {
    let p = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--conversations {p}: {e}"))?;
    let docs: Vec<(String, Value)> = if text.trim_start().starts_with('[') {
        let v: Vec<Value> =
            serde_json::from_str(&text).map_err(|e| format!("--conversations {p}: {e}"))?;
        v.into_iter()
            .enumerate()
            .map(|(i, c)| (format!("conversation {i}"), c))
            .collect()
    } else {
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let c: Value = serde_json::from_str(line)
                .map_err(|e| format!("--conversations {p}: line {}: {e}", i + 1))?;
            v.push((format!("line {}", i + 1), c));
        }
        v
    };
    let mut out = Vec::new();
    for (id, (at, doc)) in docs.into_iter().enumerate() {
        let c = raw_conversation(&doc)
            .and_then(|raw| to_conversation(id as u64, raw, count))
            .map_err(|e| format!("--conversations {p}: {at}: {e}"))?;
        if !c.turns.is_empty() {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "--conversations {p}: no conversation with a human turn followed by a gpt answer"
        ));
    }
    Ok(out)
}

fn to_conversation(
    id: u64,
    raw: Vec<RawMsg>,
    count: &dyn Fn(&str) -> u32,
) -> std::result::Result<Conversation, String> {
    let mut system = None;
    let mut turns = Vec::new();
    let mut pending: Option<(String, f64)> = None;
    for (i, (from, value, think)) in raw.into_iter().enumerate() {
        let think = think.unwrap_or(0.0);
        if !(think.is_finite() && think >= 0.0) {
            return Err(format!("message {i}: think_time_s {think} must be ≥ 0"));
        }
        match from.as_str() {
            "system" if i == 0 => system = Some(value),
            "human" | "user" => {
                if pending.is_some() {
                    return Err(format!("message {i}: two human messages in a row"));
                }
                pending = Some((value, think));
            }
            "gpt" | "assistant" | "chatgpt" | "model" => {
                let Some((user, think_s)) = pending.take() else {
                    return Err(format!(
                        "message {i}: a gpt answer without a human turn before it"
                    ));
                };
                turns.push(Turn {
                    user,
                    think_s: if turns.is_empty() { 0.0 } else { think_s },
                    osl: count(&value).max(1),
                });
            }
            other => {
                return Err(format!(
                    "message {i}: from {other:?} (expected system first, then human/gpt)"
                ))
            }
        }
    }
    Ok(Conversation { id, system, turns })
}

/// The request stream of one point: lanes take conversations in order and replay them turn
/// by turn with the real history.
struct ConversationSource {
    queue: VecDeque<Arc<Conversation>>,
    lanes: Vec<Option<LaneState>>,
    next_id: u64,
    total: usize,
    plan: MultiturnPlan,
    /// Wall seconds per modelled second (1 / simulator speedup).
    time_scale: f64,
}

struct LaneState {
    conv: Arc<Conversation>,
    turn: usize,
    history: Vec<ChatMessage>,
}

impl ConversationSource {
    fn new(convs: &[Arc<Conversation>], plan: &MultiturnPlan, speedup: f64) -> Self {
        ConversationSource {
            queue: convs.iter().cloned().collect(),
            lanes: Vec::new(),
            next_id: 0,
            total: convs.iter().map(|c| c.turns.len()).sum(),
            plan: plan.clone(),
            time_scale: 1.0 / speedup.max(f64::MIN_POSITIVE),
        }
    }

    fn request(&mut self, st: &mut LaneState, delay: Duration) -> RequestSpec {
        let t = &st.conv.turns[st.turn];
        st.history.push(ChatMessage {
            role: "user".into(),
            content: t.user.clone(),
        });
        let id = self.next_id;
        self.next_id += 1;
        RequestSpec {
            id,
            session: Some((st.conv.id, st.turn as u32)),
            prompt: Prompt::Messages(Arc::new(st.history.clone())),
            prompt_tokens: None,
            max_tokens: t.osl,
            delay,
        }
    }
}

impl RequestSource for ConversationSource {
    fn next(&mut self, lane: Option<usize>, prev: Option<&TurnOutcome>) -> Option<RequestSpec> {
        let lane = lane.unwrap_or(0);
        if self.lanes.len() <= lane {
            self.lanes.resize_with(lane + 1, || None);
        }
        if let (Some(mut st), Some(p)) = (self.lanes[lane].take(), prev) {
            st.turn += 1;
            if p.success && st.turn < st.conv.turns.len() {
                st.history.push(ChatMessage {
                    role: "assistant".into(),
                    content: p.text.clone().unwrap_or_default(),
                });
                let think = self.plan.think_s(st.conv.turns[st.turn].think_s);
                let delay = Duration::from_secs_f64(think * self.time_scale);
                let spec = self.request(&mut st, delay);
                self.lanes[lane] = Some(st);
                return Some(spec);
            }
        }
        let conv = self.queue.pop_front()?;
        let mut st = LaneState {
            history: conv
                .system
                .iter()
                .map(|s| ChatMessage {
                    role: "system".into(),
                    content: s.clone(),
                })
                .collect(),
            conv,
            turn: 0,
        };
        let spec = self.request(&mut st, Duration::ZERO);
        self.lanes[lane] = Some(st);
        Some(spec)
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.total)
    }

    fn wants_response_text(&self) -> bool {
        true
    }
}

/// The multi-turn replay against one target.
pub struct MultiturnReplay {
    base_ctx: ClientCtx,
    convs: Arc<Vec<Arc<Conversation>>>,
    cfg: MultiturnPlan,
    counting: String,
}

impl MultiturnReplay {
    /// Loads the conversations (answers sized with `--tokenizer`, else 4 characters a token,
    /// said on the console) and builds the chat request body for `model`.
    pub async fn new(
        plan: &SweepPlan,
        mt: &MultiturnPlan,
        target: &Target,
        model: &str,
        console: &dyn Console,
    ) -> Result<MultiturnReplay> {
        let tok = match &plan.tokenizer {
            Some(p) => Some(LocalTokenizer::from_path(p).map_err(PipelineError::Workload)?),
            None => {
                console.line("no --tokenizer: multi-turn output targets are the recorded answers' length in 4-character tokens");
                None
            }
        };
        let counting = match &tok {
            Some(_) => "answer lengths in the --tokenizer's tokens".to_string(),
            None => "answer lengths in 4-character tokens".to_string(),
        };
        let count = |s: &str| -> u32 {
            match &tok {
                Some(t) => t.encode(s).map(|v| v.len() as u32).unwrap_or(0),
                None => s.chars().count().div_ceil(4) as u32,
            }
        };
        let convs = load_conversations(&mt.conversations, &count).map_err(|e| flag!("{e}"))?;
        let base_ctx = ClientCtx {
            endpoint: target.endpoint.clone(),
            builder: BodyBuilder::new(
                model,
                Api::Chat,
                plan.engine,
                plan.compat,
                plan.itl_mode == servebench_metrics::ItlMode::Token,
            ),
            compat: plan.compat,
            new_connection_per_request: plan.new_connection_per_request,
            timeout: target.client_wait(plan.timeout_s),
            clock: Clock::start(),
            capture_text: true,
            api_key: plan.api_key.clone(),
        };
        Ok(MultiturnReplay {
            base_ctx,
            convs: Arc::new(convs.into_iter().map(Arc::new).collect()),
            cfg: mt.clone(),
            counting,
        })
    }
}

impl RequestWorkload for MultiturnReplay {
    type Prepared = Arc<Vec<Arc<Conversation>>>;

    fn client(&self) -> &ClientCtx {
        &self.base_ctx
    }

    async fn prepare(&mut self, _ctx: &SweepCtx<'_>, _conc: u64) -> Result<Self::Prepared> {
        Ok(self.convs.clone())
    }

    fn describe(&self, w: &Self::Prepared) -> String {
        let turns: usize = w.iter().map(|c| c.turns.len()).sum();
        let cap = match self.cfg.max_think_time_s {
            Some(c) => format!(", capped at {c} s"),
            None => String::new(),
        };
        format!(
            "multi-turn chat replay: {} conversations, {turns} turns from {}; history resent each turn; think times × {}{cap}; {}; no warmup",
            w.len(),
            self.cfg.conversations.display(),
            self.cfg.think_time_scale,
            self.counting
        )
    }

    fn requests_line(&self, _ctx: &SweepCtx<'_>, conc: u64) -> Option<String> {
        let n = self.convs.len() as u64;
        let idle = if conc > n {
            format!(
                " ({} lanes idle: fewer conversations than --conc)",
                conc - n
            )
        } else {
            String::new()
        };
        Some(format!(
            "conc {conc}: {n} conversations on {} lanes{idle}",
            conc.min(n)
        ))
    }

    /// No warmup; `conc` lanes replay the conversations; the first turns are the prompts the
    /// prefix-cache bookkeeping fingerprints.
    fn requests(&self, ctx: &SweepCtx<'_>, convs: &Self::Prepared, point: &PointSpec) -> PointRun {
        PointRun::Stream(PointRequests {
            warmup: None,
            measured: Box::new(ConversationSource::new(
                convs,
                &self.cfg,
                ctx.target.sim_speedup,
            )),
            requests: turns(convs),
            load: Load::Closed {
                concurrency: point.conc as usize,
            },
            cache_seed: 0,
            cache_prompts: convs
                .iter()
                .map(|c| crate::cache::fingerprint(&c.turns[0].user))
                .collect(),
            facts: StreamFacts {
                backend: "openai-chat".into(),
                tokenizer_id: self.counting.clone(),
                num_prompts: turns(convs),
                request_rate: None,
                burstiness: 1.0,
                num_warmups: 0,
                dataset: self.describe(convs),
            },
        })
    }

    fn meta(&self, _ctx: &SweepCtx<'_>, _convs: &Self::Prepared, _point: &PointSpec) -> PointMeta {
        PointMeta {
            api: Api::Chat,
            prompt_count: PromptCount::Server,
            lengths_in_row: false,
        }
    }

    fn notes(&self, measured: &[RequestRecord]) -> Vec<String> {
        reuse_note(measured).into_iter().collect()
    }
}

/// Turns of all conversations (one request each).
fn turns(convs: &[Arc<Conversation>]) -> u64 {
    convs.iter().map(|c| c.turns.len() as u64).sum()
}

/// The server-reported prefix-cache reuse over the successful turns (S8b's `gpu_hit_rate`):
/// Σ cached_tokens / Σ prompt_tokens over the turns that reported both; `None` when none did.
fn reuse_note(recs: &[RequestRecord]) -> Option<String> {
    let (mut cached, mut prompt, mut n, mut later) = (0u64, 0u64, 0usize, 0usize);
    for r in recs.iter().filter(|r| r.success) {
        if let (Some(c), Some(p)) = (r.prompt_tokens_cached, r.prompt_tokens_server) {
            cached += c;
            prompt += p;
            n += 1;
            if r.session.is_some_and(|(_, t)| t > 0) {
                later += 1;
            }
        }
    }
    (n > 0 && prompt > 0).then(|| {
        format!(
            "server-reported prefix-cache reuse {:.3}: {cached} of {prompt} prompt tokens over {n} turns ({later} of them turns ≥ 2, whose history the server may reuse)",
            cached as f64 / prompt as f64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn words(s: &str) -> u32 {
        s.split_whitespace().count() as u32
    }

    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn jsonl_conversations_give_turns_with_answer_lengths_and_think_times() {
        let (_d, p) = write(
            "c.jsonl",
            concat!(
                r#"{"conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "hi"}, {"from": "gpt", "value": "a b c"}, {"from": "human", "value": "more", "think_time_s": 4.5}, {"from": "gpt", "value": "d e"}, {"from": "human", "value": "unanswered"}]}"#,
                "\n\n",
                r#"{"conversations": [{"from": "human", "value": "only a question"}]}"#,
                "\n"
            ),
        );
        let c = load_conversations(&p, &words).unwrap();
        assert_eq!(c.len(), 1, "a conversation without an answer is skipped");
        assert_eq!(c[0].system.as_deref(), Some("be brief"));
        assert_eq!(
            c[0].turns,
            vec![
                Turn {
                    user: "hi".into(),
                    think_s: 0.0,
                    osl: 3
                },
                Turn {
                    user: "more".into(),
                    think_s: 4.5,
                    osl: 2
                },
            ]
        );
    }

    #[test]
    fn bad_conversations_are_one_line_naming_file_and_place() {
        let (_d, p) = write(
            "c.json",
            r#"[{"conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "y"}]},
               {"conversations": [{"from": "gpt", "value": "y"}]}]"#,
        );
        let e = load_conversations(&p, &words).unwrap_err();
        assert!(
            e.ends_with(
                "c.json: conversation 1: message 0: a gpt answer without a human turn before it"
            ),
            "{e}"
        );
        let (_d, p) = write(
            "c.jsonl",
            "{\"conversations\": [{\"from\": \"bot\", \"value\": \"y\"}]}\n",
        );
        let e = load_conversations(&p, &words).unwrap_err();
        assert!(
            e.contains("c.jsonl: line 1: message 0: from \"bot\""),
            "{e}"
        );
    }

    #[test]
    fn flags_imply_refuse_and_cap() {
        let c = || Some(PathBuf::from("c.json"));
        let p = MultiturnPlan::from_flags(None, c(), Some(0.5), Some(3.0), &[])
            .unwrap()
            .unwrap();
        assert_eq!((p.think_s(4.0), p.think_s(10.0)), (2.0, 3.0));
        assert!(
            MultiturnPlan::from_flags(Some("fixed"), None, None, None, &[])
                .unwrap()
                .is_none()
        );
        assert_eq!(
            MultiturnPlan::from_flags(Some("multiturn"), c(), None, None, &["--isl"]).unwrap_err(),
            "--isl: not used by --scenario multiturn, whose conversations set turn lengths, counts and pacing; drop it"
        );
        assert!(MultiturnPlan::from_flags(Some("agentx"), c(), None, None, &[]).is_err());
        assert!(MultiturnPlan::from_flags(Some("multiturn"), None, None, None, &[]).is_err());
        assert!(MultiturnPlan::from_flags(None, c(), Some(-1.0), None, &[]).is_err());
    }

    fn outcome(id: u64, success: bool, text: &str) -> TurnOutcome {
        TurnOutcome {
            id,
            success,
            output_tokens: 1,
            text: Some(text.into()),
        }
    }

    #[test]
    fn lanes_resend_the_real_history_wait_the_think_time_and_drop_a_failed_conversation() {
        let conv = |id, n: usize| {
            Arc::new(Conversation {
                id,
                system: None,
                turns: (0..n)
                    .map(|t| Turn {
                        user: format!("u{id}.{t}"),
                        think_s: 2.0,
                        osl: 5,
                    })
                    .collect(),
            })
        };
        let plan = MultiturnPlan {
            conversations: PathBuf::new(),
            think_time_scale: 1.0,
            max_think_time_s: None,
        };
        let mut s = ConversationSource::new(&[conv(0, 3), conv(1, 2)], &plan, 10.0);
        let a = s.next(Some(0), None).unwrap();
        assert_eq!((a.session, a.delay), (Some((0, 0)), Duration::ZERO));
        let b = s
            .next(Some(0), Some(&outcome(a.id, true, "served answer")))
            .unwrap();
        assert_eq!(b.session, Some((0, 1)));
        assert_eq!(
            b.delay,
            Duration::from_millis(200),
            "2 s modelled at speedup 10"
        );
        let Prompt::Messages(m) = &b.prompt else {
            panic!("chat messages")
        };
        let m: Vec<(&str, &str)> = m
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            m,
            [
                ("user", "u0.0"),
                ("assistant", "served answer"),
                ("user", "u0.1")
            ]
        );
        // a failed turn ends its conversation: the lane takes the next one
        let c = s.next(Some(0), Some(&outcome(b.id, false, ""))).unwrap();
        assert_eq!((c.session, c.delay), (Some((1, 0)), Duration::ZERO));
        let d = s.next(Some(0), Some(&outcome(c.id, true, "x"))).unwrap();
        assert_eq!(d.session, Some((1, 1)));
        assert!(s.next(Some(0), Some(&outcome(d.id, true, "y"))).is_none());
        assert_eq!(s.len_hint(), Some(5));
    }
}
