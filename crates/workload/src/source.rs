//! The request-source abstraction between a workload and the client's driver.
//!
//! The driver owns *lanes*: a closed-loop run at concurrency C has C lanes, each sending one
//! request at a time on its own connection; an open-loop run asks for the next request at each
//! scheduled arrival (lane `None`). Before every request a lane calls
//! [`RequestSource::next`] with the outcome of its previous request, so a source can make the
//! next request depend on the last one.
//!
//! * The fixed-sequence random dataset ([`DatasetSource`]) ignores lanes and outcomes and hands
//!   out its prompts in dataset order — exactly InferenceX's FIFO semaphore over a request list.
//! * The planned agentic workload maps a lane to a live session: `next(Some(lane), prev)` returns
//!   the session's next turn (messages = history + new user turn, growing with every turn) with
//!   `delay` = the recorded think time, or starts a new session when one ends; the number of lanes
//!   is the number of live sessions. It needs no change in the client: prompts can already be
//!   chat message lists, requests can carry a think-time delay, and [`TurnOutcome::text`] carries
//!   the response back when [`RequestSource::wants_response_text`] says so.

use std::sync::Arc;
use std::time::Duration;

/// One chat message (`{"role": …, "content": …}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, …
    pub role: String,
    /// Message text.
    pub content: String,
}

/// What a request sends as its prompt.
#[derive(Debug, Clone)]
pub enum Prompt {
    /// A plain text prompt: `prompt` on `/v1/completions`, or a single user message on chat.
    Text(Arc<str>),
    /// A message list (chat API only).
    Messages(Arc<Vec<ChatMessage>>),
}

impl Prompt {
    /// The text of a `Text` prompt or the last message's content.
    pub fn last_text(&self) -> &str {
        match self {
            Prompt::Text(t) => t,
            Prompt::Messages(m) => m.last().map(|m| m.content.as_str()).unwrap_or(""),
        }
    }
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// Index in the dataset (fixed-sequence) or a unique turn number (agentic); the record `id`.
    pub id: u64,
    /// `(session id, turn index)` for multi-turn workloads; `None` for single-turn requests.
    pub session: Option<(u64, u32)>,
    /// The prompt.
    pub prompt: Prompt,
    /// Prompt length in tokens as counted by the workload (client-side count, InferenceX
    /// `prompt_len`), or `None` when the workload could not count it.
    pub prompt_tokens: Option<u32>,
    /// Requested output length in tokens (`max_tokens`; with `ignore_eos` the expected length).
    pub max_tokens: u32,
    /// Time to wait on the lane before sending (agentic think time); zero for fixed-sequence.
    pub delay: Duration,
}

/// What the driver reports back to the source after a request finished.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// `RequestSpec::id` of the finished request.
    pub id: u64,
    /// Whether it succeeded (MEASUREMENT.md Part 1 success rule).
    pub success: bool,
    /// Output tokens (usage or counted).
    pub output_tokens: u64,
    /// Generated text, only when the source asked for it.
    pub text: Option<String>,
}

/// A stream of requests (see the module docs for the lane model).
pub trait RequestSource: Send {
    /// The next request for `lane` (`None` in open-loop mode), given the outcome of the lane's
    /// previous request. `None` = this source is exhausted (the lane stops).
    fn next(&mut self, lane: Option<usize>, prev: Option<&TurnOutcome>) -> Option<RequestSpec>;
    /// Total requests this source will produce, when known (progress bars).
    fn len_hint(&self) -> Option<usize>;
    /// Whether the driver must collect response text into [`TurnOutcome::text`].
    fn wants_response_text(&self) -> bool {
        false
    }
}

/// Hands out a fixed list of requests in order (the fixed-sequence dataset or its warmup).
#[derive(Debug)]
pub struct DatasetSource {
    items: Vec<RequestSpec>,
    next: usize,
}

impl DatasetSource {
    /// A source over `items`, in order.
    pub fn new(items: Vec<RequestSpec>) -> Self {
        Self { items, next: 0 }
    }
}

impl RequestSource for DatasetSource {
    fn next(&mut self, _lane: Option<usize>, _prev: Option<&TurnOutcome>) -> Option<RequestSpec> {
        let item = self.items.get(self.next).cloned();
        self.next += 1;
        item
    }
    fn len_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}
