//! Per-request stream interpretation: SSE events + arrival times → the measured quantities.
//!
//! Two rule sets:
//! * [`Compat::Servebench`] — MEASUREMENT.md Part 1: a token event is a chunk with non-empty
//!   `text` / `delta.content` / `delta.reasoning_content` / `delta.reasoning` / `delta.tool_calls`;
//!   TTFT and E2EL are the arrival of the first and last token events; usage (on any chunk,
//!   including one that also has choices) gives output tokens; error objects fail the request.
//! * [`Compat::InferenceX`] — Part 2 §1.5 (InferenceX `backend_request_func.py`): a chunk with
//!   non-empty `choices` is a content chunk (even with empty text or a role-only delta); usage is
//!   read only from chunks without choices; comments and `data:` without the space raise a JSON
//!   error (request failed); chat E2EL runs to the last data line (the usage chunk included) and a
//!   chat request with zero chunks is a success with TTFT 0; error objects are ignored; no usage →
//!   0 output tokens.
//!
//! Times are ns on the run clock, taken when the network read that completed the event returned
//! (before JSON parsing).

use crate::chunk::{scan_chunk_templated, Capture, ChunkTemplate, StreamErrorInfo};
use crate::sse::SseItem;
use servebench_contracts::FailureKind;

/// Which API the request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/completions` (`prompt`, `choices[].text`).
    Completions,
    /// `/v1/chat/completions` (`messages`, `choices[].delta`).
    Chat,
}

impl Api {
    /// Request path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        }
    }
    /// `"completions"` / `"chat"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat",
        }
    }
}

/// Counting rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compat {
    /// MEASUREMENT.md Part 1 (default).
    Servebench,
    /// InferenceX `benchmark_serving.py` counting (Part 2 §1.5–1.6).
    InferenceX,
}

impl Compat {
    /// `"servebench"` / `"inferencex"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Compat::Servebench => "servebench",
            Compat::InferenceX => "inferencex",
        }
    }
}

/// Incremental state of one response stream.
#[derive(Debug)]
pub struct StreamState {
    api: Api,
    compat: Compat,
    /// Arrival times (ns) of token events (servebench rules) or content chunks (InferenceX).
    pub token_times: Vec<u64>,
    /// Tokens carried by each token event, from the growth of per-chunk `usage.completion_tokens`
    /// (`continuous_usage_stats`) or llama.cpp `timings.predicted_n`; valid only when
    /// `per_chunk_usage`.
    pub chunk_tokens: Vec<u32>,
    per_chunk_usage: bool,
    last_completion: u64,
    /// Arrival of the first content (answer) token event.
    pub first_content_ns: Option<u64>,
    /// Arrival of the first reasoning token event.
    pub first_reasoning_ns: Option<u64>,
    /// Arrival of the last reasoning token event.
    pub last_reasoning_ns: Option<u64>,
    /// Arrival of the first tool-call token event.
    pub first_tool_call_ns: Option<u64>,
    /// Token events carrying reasoning.
    pub reasoning_events: u32,
    /// Token events carrying tool-call deltas.
    pub tool_call_events: u32,
    /// Latest `usage.completion_tokens_details.reasoning_tokens`.
    pub usage_reasoning: Option<u64>,
    /// Latest `usage.prompt_tokens_details.cached_tokens`.
    pub usage_cached: Option<u64>,
    /// Latest `usage.prompt_tokens`.
    pub usage_prompt: Option<u64>,
    /// Latest `usage.completion_tokens`.
    pub usage_completion: Option<u64>,
    /// First error object seen, and whether token events preceded it.
    pub error: Option<(StreamErrorInfo, bool)>,
    /// `[DONE]` seen.
    pub done: bool,
    /// Events whose data was not a JSON object (servebench rules; `[DONE]` excluded).
    pub parse_errors: u32,
    /// Text of the first parse error.
    pub first_parse_error: Option<String>,
    /// Number of events and comments.
    pub events: u32,
    /// Number of comment lines.
    pub comments: u32,
    /// Concatenated content text (only when capture was requested).
    pub text: Option<String>,
    /// `id` of the first chunk that had one.
    pub response_id: Option<String>,
    // InferenceX compat state
    ix_gaps: Vec<u64>,
    ix_last_line: Option<u64>,
    ix_exception: Option<String>,
    /// This stream's chunk template (issue 21: most chunks are answered from it).
    template: ChunkTemplate,
}

impl StreamState {
    /// New state. `capture_text` keeps the content text (tests, agentic history).
    pub fn new(api: Api, compat: Compat, capture_text: bool) -> Self {
        Self {
            api,
            compat,
            token_times: Vec::new(),
            chunk_tokens: Vec::new(),
            per_chunk_usage: true,
            last_completion: 0,
            first_content_ns: None,
            first_reasoning_ns: None,
            last_reasoning_ns: None,
            first_tool_call_ns: None,
            reasoning_events: 0,
            tool_call_events: 0,
            usage_reasoning: None,
            usage_cached: None,
            usage_prompt: None,
            usage_completion: None,
            error: None,
            done: false,
            parse_errors: 0,
            first_parse_error: None,
            events: 0,
            comments: 0,
            text: capture_text.then(String::new),
            response_id: None,
            ix_gaps: Vec::new(),
            ix_last_line: None,
            ix_exception: None,
            template: ChunkTemplate::default(),
        }
    }

    /// Handles one framer item that arrived at `t_ns`.
    #[inline]
    pub fn on_item(&mut self, item: SseItem<'_>, t_ns: u64) {
        match item {
            SseItem::Comment => {
                self.comments += 1;
                if self.compat == Compat::InferenceX && self.ix_exception.is_none() {
                    self.ix_exception = Some("JSONDecodeError: SSE comment line".into());
                }
            }
            SseItem::Event { data, no_space } => {
                self.events += 1;
                let data = trim_ascii(data);
                match self.compat {
                    Compat::Servebench => self.on_event(data, t_ns),
                    Compat::InferenceX => self.on_event_ix(data, no_space, t_ns),
                }
            }
        }
    }

    #[inline]
    fn on_event(&mut self, data: &[u8], t: u64) {
        if data == b"[DONE]" {
            self.done = true;
            return;
        }
        let info = match scan_chunk_templated(
            data,
            Capture {
                text: self.text.as_mut(),
                id: Some(&mut self.response_id),
            },
            &mut self.template,
        ) {
            Ok(i) => i,
            Err(e) => {
                self.parse_errors += 1;
                if self.first_parse_error.is_none() {
                    let head = String::from_utf8_lossy(&data[..data.len().min(120)]).into_owned();
                    self.first_parse_error = Some(format!("invalid event data ({e}): {head}"));
                }
                return;
            }
        };
        if let Some(err) = info.error {
            if self.error.is_none() {
                self.error = Some((err, !self.token_times.is_empty()));
            }
        }
        // tokens so far: per-chunk usage (vLLM/SGLang `continuous_usage_stats`), else
        // llama.cpp's per-chunk `timings.predicted_n`
        let chunk_completion = info
            .usage
            .and_then(|u| u.completion_tokens)
            .or(info.predicted_n);
        if let Some(u) = info.usage {
            if u.prompt_tokens.is_some() {
                self.usage_prompt = u.prompt_tokens;
            }
            if u.completion_tokens.is_some() {
                self.usage_completion = u.completion_tokens;
            }
            if u.reasoning_tokens.is_some() {
                self.usage_reasoning = u.reasoning_tokens;
            }
            if u.cached_tokens.is_some() {
                self.usage_cached = u.cached_tokens;
            }
        }
        if info.token_event {
            if info.content && self.first_content_ns.is_none() {
                self.first_content_ns = Some(t);
            }
            if info.reasoning {
                if self.first_reasoning_ns.is_none() {
                    self.first_reasoning_ns = Some(t);
                }
                self.last_reasoning_ns = Some(t);
                self.reasoning_events += 1;
            }
            if info.tool_calls {
                if self.first_tool_call_ns.is_none() {
                    self.first_tool_call_ns = Some(t);
                }
                self.tool_call_events += 1;
            }
            self.token_times.push(t);
            match chunk_completion {
                Some(c) if self.per_chunk_usage => {
                    self.chunk_tokens
                        .push(c.saturating_sub(self.last_completion) as u32);
                    self.last_completion = c;
                }
                _ => self.per_chunk_usage = false,
            }
        } else if let Some(c) = chunk_completion {
            self.last_completion = self.last_completion.max(c);
        }
    }

    fn on_event_ix(&mut self, data: &[u8], no_space: bool, t: u64) {
        if self.ix_exception.is_some() {
            return; // the InferenceX client stops at the first exception
        }
        if no_space {
            // `removeprefix("data: ")` leaves `data:…`, which json.loads rejects.
            self.ix_exception = Some("JSONDecodeError: `data:` without a space".into());
            return;
        }
        if data == b"[DONE]" {
            self.done = true;
            return;
        }
        let info = match scan_chunk_templated(
            data,
            Capture {
                text: self.text.as_mut(),
                id: Some(&mut self.response_id),
            },
            &mut self.template,
        ) {
            Ok(i) => i,
            Err(e) => {
                self.ix_exception = Some(format!("JSONDecodeError: {e}"));
                return;
            }
        };
        if info.choices > 0 {
            match self.api {
                Api::Completions => {
                    if let Some(&prev) = self.token_times.last() {
                        self.ix_gaps.push(t.saturating_sub(prev));
                    }
                }
                Api::Chat => {
                    if !self.token_times.is_empty() {
                        let prev = self.ix_last_line.unwrap_or(t);
                        self.ix_gaps.push(t.saturating_sub(prev));
                    }
                }
            }
            self.token_times.push(t);
            if info.content && self.first_content_ns.is_none() {
                self.first_content_ns = Some(t);
            }
        } else if let Some(u) = info.usage {
            self.usage_completion = u.completion_tokens;
            if u.prompt_tokens.is_some() {
                self.usage_prompt = u.prompt_tokens;
            }
            if u.cached_tokens.is_some() {
                self.usage_cached = u.cached_tokens;
            }
        }
        self.ix_last_line = Some(t);
    }

    /// Summarises the stream. `t0` = request start (ns); `transport_error` = the body ended
    /// abnormally (reset, truncated chunked encoding); `unterminated` = the framer had to flush
    /// an event without its blank line at EOF (tolerated, not a failure).
    pub fn outcome(&self, t0: u64, transport_error: Option<&str>) -> StreamOutcome {
        match self.compat {
            Compat::Servebench => self.outcome_servebench(t0, transport_error),
            Compat::InferenceX => self.outcome_ix(t0, transport_error),
        }
    }

    fn outcome_servebench(&self, t0: u64, transport_error: Option<&str>) -> StreamOutcome {
        let ms = |t: u64| (t.saturating_sub(t0)) as f64 / 1e6;
        let n = self.token_times.len();
        let first = self.token_times.first().copied();
        let last = self.token_times.last().copied();
        let (output_tokens, source) = match self.usage_completion {
            Some(c) => (c, OutputSource::Usage),
            None => (n as u64, OutputSource::Chunks),
        };
        let gaps_ns: Vec<u64> = self.token_times.windows(2).map(|w| w[1] - w[0]).collect();
        // Only stored when some event carried more than one token; `None` means one token per
        // event when `output_tokens == token_events`, unknown otherwise.
        let tokens_per_chunk = if self.per_chunk_usage
            && n > 0
            && self.chunk_tokens.len() == n
            && self.chunk_tokens.iter().any(|&k| k != 1)
        {
            Some(self.chunk_tokens.clone())
        } else {
            None
        };
        let (failure, error) = if let Some((e, after)) = &self.error {
            let cat = if *after {
                FailureKind::StreamErrorAfterTokens
            } else {
                FailureKind::StreamError(e.code.clone())
            };
            (Some(cat), Some(e.message.clone()))
        } else if let Some(te) = transport_error {
            let cat = if n > 0 {
                FailureKind::DisconnectedAfterTokens
            } else {
                FailureKind::Disconnected
            };
            (Some(cat), Some(te.to_string()))
        } else if self.parse_errors > 0 {
            (Some(FailureKind::BadEvent), self.first_parse_error.clone())
        } else if n == 0 {
            (
                Some(FailureKind::NoToken),
                Some("stream ended without a token event".to_string()),
            )
        } else {
            (None, None)
        };
        let mut warnings = Vec::new();
        if self.usage_completion.is_none() && n > 0 {
            warnings.push("usage_missing".to_string());
        }
        // first visible output: answer content or a tool call, whichever came first
        let first_output = match (self.first_content_ns, self.first_tool_call_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let phases =
            (self.reasoning_events > 0 || self.tool_call_events > 0).then(|| OutputPhases {
                first_reasoning_ms: self.first_reasoning_ns.map(ms),
                last_reasoning_ms: self.last_reasoning_ns.map(ms),
                reasoning_events: self.reasoning_events,
                reasoning_tokens: self.usage_reasoning,
                first_content_ms: self.first_content_ns.map(ms),
                first_tool_call_ms: self.first_tool_call_ns.map(ms),
                tool_call_events: self.tool_call_events,
            });
        StreamOutcome {
            success: failure.is_none(),
            failure,
            error,
            ttft_ms: first.map(ms),
            ttfo_ms: first_output.map(ms),
            e2el_ms: last.map(ms),
            itl_ns: gaps_ns,
            tokens_per_chunk,
            token_events: n as u32,
            output_tokens,
            output_source: source,
            prompt_tokens_server: self.usage_prompt,
            prompt_tokens_cached: self.usage_cached,
            warnings,
            phases,
        }
    }

    fn outcome_ix(&self, t0: u64, transport_error: Option<&str>) -> StreamOutcome {
        let ms = |t: u64| (t.saturating_sub(t0)) as f64 / 1e6;
        let n = self.token_times.len();
        let exception = self
            .ix_exception
            .clone()
            .or_else(|| transport_error.map(str::to_string));
        let (ttft, e2el, failure) = match self.api {
            Api::Completions => {
                let fail = if exception.is_some() {
                    Some(FailureKind::Exception)
                } else if n == 0 {
                    Some(FailureKind::NoToken)
                } else {
                    None
                };
                (
                    self.token_times.first().map(|&t| ms(t)),
                    self.token_times.last().map(|&t| ms(t)),
                    fail,
                )
            }
            Api::Chat => {
                let fail = exception.as_ref().map(|_| FailureKind::Exception);
                // ttft stays 0.0 when no chunk came; latency = last data line − st
                let ttft = Some(self.token_times.first().map(|&t| ms(t)).unwrap_or(0.0));
                let e2el = Some(self.ix_last_line.map(ms).unwrap_or(0.0));
                (ttft, e2el, fail)
            }
        };
        let error = match (&failure, &exception) {
            (_, Some(e)) => Some(e.clone()),
            (Some(_), None) => Some("Never received a valid chunk to calculate TTFT.".to_string()),
            _ => None,
        };
        let mut warnings = Vec::new();
        if self.usage_completion.is_none() && n > 0 {
            warnings.push("usage_missing".to_string());
        }
        StreamOutcome {
            success: failure.is_none(),
            failure,
            error,
            ttft_ms: ttft,
            ttfo_ms: self.first_content_ns.map(ms),
            e2el_ms: e2el,
            itl_ns: self.ix_gaps.clone(),
            tokens_per_chunk: None,
            token_events: n as u32,
            output_tokens: self.usage_completion.unwrap_or(0),
            output_source: if self.usage_completion.is_some() {
                OutputSource::Usage
            } else {
                OutputSource::None
            },
            prompt_tokens_server: self.usage_prompt,
            prompt_tokens_cached: self.usage_cached,
            warnings,
            phases: None,
        }
    }
}

/// Where `output_tokens` came from, and the reasoning / tool-call phase times: defined with the
/// record in `servebench-contracts`.
pub use servebench_contracts::record::{OutputPhases, OutputSource};

/// The measured result of one stream (times in ms after t0).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamOutcome {
    /// Success per the active rule set.
    pub success: bool,
    /// Failure category (`no_token`, `stream_error:400`, `stream_error_after_tokens`,
    /// `disconnected`, `bad_event`, InferenceX compat: `exception`).
    pub failure: Option<FailureKind>,
    /// Error text kept for triage.
    pub error: Option<String>,
    /// Time to first token event, ms.
    pub ttft_ms: Option<f64>,
    /// Time to first visible output (answer content or tool call; reasoning excluded), ms.
    pub ttfo_ms: Option<f64>,
    /// Time to the last token event, ms.
    pub e2el_ms: Option<f64>,
    /// Gaps between consecutive token events, ns.
    pub itl_ns: Vec<u64>,
    /// Tokens per token event, from per-chunk usage, only when some event carried more than one
    /// token (`None`: one per event if `output_tokens == token_events`, else unknown).
    pub tokens_per_chunk: Option<Vec<u32>>,
    /// Number of token events.
    pub token_events: u32,
    /// Output tokens (see `output_source`).
    pub output_tokens: u64,
    /// Where `output_tokens` came from.
    pub output_source: OutputSource,
    /// `usage.prompt_tokens`, when the server sent it.
    pub prompt_tokens_server: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, when the server sent it.
    pub prompt_tokens_cached: Option<u64>,
    /// Warnings such as `usage_missing`.
    pub warnings: Vec<String>,
    /// Reasoning / tool-call phase times (servebench rules, only when such deltas came).
    pub phases: Option<OutputPhases>,
}

#[inline]
fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Parses a whole response body delivered as `(bytes, arrival_ns)` reads — the public entry
/// point of the hot path (benchmarks, tests, offline re-analysis of captured streams).
///
/// Equivalent to what the live client does per network read: feed the framer, hand each
/// complete event with the read's arrival time to the [`StreamState`], flush at the end.
pub fn parse_stream<'a, I>(reads: I, api: Api, compat: Compat, capture_text: bool) -> StreamState
where
    I: IntoIterator<Item = (&'a [u8], u64)>,
{
    let mut framer = crate::sse::SseFramer::new();
    let mut st = StreamState::new(api, compat, capture_text);
    let mut last_t = 0;
    for (bytes, t) in reads {
        last_t = t;
        framer.feed(bytes, &mut |item| st.on_item(item, t));
    }
    framer.finish(&mut |item| st.on_item(item, last_t));
    st
}

// The counted allocation guard of this path (a test-only global allocator).
#[cfg(test)]
#[path = "alloc_guard.rs"]
mod alloc_guard;
