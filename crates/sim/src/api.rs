//! Parsing and validation of OpenAI-style request bodies.
//!
//! Every rejection is an [`ApiError`] whose message starts with the offending field
//! (`max_tokens: …`) and whose `param` names it, rendered as
//! `{"error": {"message", "type", "param", "code"}}`. Unknown fields are ignored, as vLLM does.

use serde_json::{Map, Value};

use crate::model::EngineConfig;
use crate::plan::GenParams;
use crate::text;

/// An HTTP error with an OpenAI-style body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status (400, 404, 405, 413).
    pub status: u16,
    /// One line, starting with the field name when there is one.
    pub message: String,
    /// The offending field (`"max_tokens"`, `"messages[0].role"`), if any.
    pub param: Option<String>,
}

impl ApiError {
    /// A 400 naming `param`.
    pub fn bad(param: &str, message: impl std::fmt::Display) -> ApiError {
        ApiError {
            status: 400,
            message: format!("{param}: {message}"),
            param: Some(param.to_string()),
        }
    }

    /// The OpenAI `type` for the status.
    pub fn kind(&self) -> &'static str {
        match self.status {
            400 => "BadRequestError",
            404 => "NotFoundError",
            405 => "MethodNotAllowedError",
            413 => "RequestTooLargeError",
            _ => "InternalServerError",
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::json!({"error": {
            "message": self.message,
            "type": self.kind(),
            "param": self.param,
            "code": self.status,
        }})
    }
}

/// Which endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// A validated generation request.
#[derive(Debug, Clone, PartialEq)]
pub struct GenRequest {
    /// Endpoint.
    pub api: Api,
    /// SSE streaming.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// Prompt tokens (words; chat: words of the rendered template).
    pub prompt_tokens: u32,
    /// Completions prompt, or the last user message of a chat: the answer-book key and the
    /// seed of the generic text.
    pub prompt_text: String,
    /// The whole prompt as the engine sees it (completions prompt, or the rendered chat): what
    /// `--tokenizer` counts and what the prefix cache hashes.
    pub full_text: String,
    /// The word count and block hashes of `full_text` (`cfg.kv_block_size` words per block),
    /// made while counting it: `None` for token-id prompts (hashed later from `full_text`).
    pub word_blocks: Option<text::WordBlocks>,
    /// Sampling knobs.
    pub params: GenParams,
}

fn describe(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(40).map(|(i, _)| i).unwrap_or(s.len())]
        )
    } else {
        s
    }
}

fn opt_bool(m: &Map<String, Value>, k: &str) -> Result<Option<bool>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(ApiError::bad(
            k,
            format!("expected true or false, got {}", describe(v)),
        )),
    }
}

fn opt_int(m: &Map<String, Value>, k: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            Some(n) if n < min => Err(ApiError::bad(k, format!("must be at least {min}, got {n}"))),
            Some(n) => Err(ApiError::bad(k, format!("must be at most {max}, got {n}"))),
            None => Err(ApiError::bad(
                k,
                format!("expected an integer, got {}", describe(v)),
            )),
        },
    }
}

fn opt_num(m: &Map<String, Value>, k: &str, min: f64, max: f64) -> Result<Option<f64>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x >= min && x <= max => Ok(Some(x)),
            Some(x) => Err(ApiError::bad(
                k,
                format!("must be between {min} and {max}, got {x}"),
            )),
            None => Err(ApiError::bad(
                k,
                format!("expected a number, got {}", describe(v)),
            )),
        },
    }
}

/// Checks the optional `model` field against the served model (its served name, preset key or
/// aliases, case-insensitively). Unknown → 404 like vLLM.
pub fn check_model(m: &Map<String, Value>, cfg: &EngineConfig) -> Result<(), ApiError> {
    match m.get("model") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) => {
            let want = s.to_ascii_lowercase();
            let mm = &cfg.model;
            if want == mm.served_name.to_ascii_lowercase()
                || want == cfg.model_key
                || mm.aliases.contains(&want)
            {
                Ok(())
            } else {
                Err(ApiError {
                    status: 404,
                    message: format!(
                        "model: the model `{s}` does not exist (this simulator serves `{}`)",
                        mm.served_name
                    ),
                    param: Some("model".into()),
                })
            }
        }
        Some(v) => Err(ApiError::bad(
            "model",
            format!("expected a string, got {}", describe(v)),
        )),
    }
}

/// Parses `messages` into `(role, content)` pairs.
pub fn parse_messages(v: Option<&Value>) -> Result<Vec<(String, String)>, ApiError> {
    let arr = match v {
        None | Some(Value::Null) => return Err(ApiError::bad("messages", "required")),
        Some(Value::Array(a)) => a,
        Some(v) => {
            return Err(ApiError::bad(
                "messages",
                format!("expected an array of messages, got {}", describe(v)),
            ))
        }
    };
    if arr.is_empty() {
        return Err(ApiError::bad(
            "messages",
            "must contain at least one message",
        ));
    }
    let mut out = Vec::with_capacity(arr.len());
    for (i, msg) in arr.iter().enumerate() {
        let obj = msg.as_object().ok_or_else(|| {
            ApiError::bad(
                &format!("messages[{i}]"),
                format!("expected an object, got {}", describe(msg)),
            )
        })?;
        let role = match obj.get("role") {
            Some(Value::String(r))
                if [
                    "system",
                    "user",
                    "assistant",
                    "tool",
                    "developer",
                    "function",
                ]
                .contains(&r.as_str()) =>
            {
                r.clone()
            }
            Some(v) => {
                return Err(ApiError::bad(
                    &format!("messages[{i}].role"),
                    format!(
                        "expected one of system, user, assistant, tool, developer; got {}",
                        describe(v)
                    ),
                ))
            }
            None => return Err(ApiError::bad(&format!("messages[{i}].role"), "required")),
        };
        let content = match obj.get("content") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) if role == "assistant" || role == "tool" => String::new(),
            None | Some(Value::Null) => {
                return Err(ApiError::bad(&format!("messages[{i}].content"), "required"))
            }
            Some(Value::Array(parts)) => {
                let mut s = String::new();
                for (j, p) in parts.iter().enumerate() {
                    let ty = p.get("type").and_then(Value::as_str);
                    match (ty, p.get("text").and_then(Value::as_str)) {
                        (Some("text"), Some(t)) => {
                            if !s.is_empty() {
                                s.push('\n');
                            }
                            s.push_str(t);
                        }
                        _ => {
                            return Err(ApiError::bad(
                                &format!("messages[{i}].content[{j}]"),
                                format!(
                                    "only {{\"type\": \"text\", \"text\": …}} parts are supported, got {}",
                                    describe(p)
                                ),
                            ))
                        }
                    }
                }
                s
            }
            Some(v) => {
                return Err(ApiError::bad(
                    &format!("messages[{i}].content"),
                    format!(
                        "expected a string or an array of text parts, got {}",
                        describe(v)
                    ),
                ))
            }
        };
        out.push((role, content));
    }
    Ok(out)
}

/// The completions `prompt`: returns `(text used as key, token count, its words' blocks)` —
/// the blocks ([`text::word_blocks`], `block` words each) when the count is the text's words.
fn parse_prompt(
    v: Option<&Value>,
    vocab: u32,
    block: usize,
) -> Result<(String, u32, Option<text::WordBlocks>), ApiError> {
    let words = |s: String| {
        let wb = text::word_blocks(&s, block);
        (s, wb.words, Some(wb))
    };
    let ids = |a: &Vec<Value>, path: &str| -> Result<(String, u32, Option<text::WordBlocks>), ApiError> {
        let mut key = String::new();
        for (i, x) in a.iter().enumerate() {
            match x.as_u64() {
                Some(id) if id < vocab as u64 => {
                    if i > 0 {
                        key.push(' ');
                    }
                    key.push_str(&id.to_string());
                }
                _ => {
                    return Err(ApiError::bad(
                        &format!("{path}[{i}]"),
                        format!("expected a token id in [0, {vocab}), got {}", describe(x)),
                    ))
                }
            }
        }
        Ok((key, a.len() as u32, None))
    };
    let (key, n, wb) = match v {
        None | Some(Value::Null) => return Err(ApiError::bad("prompt", "required")),
        Some(Value::String(s)) => words(s.clone()),
        Some(Value::Array(a)) if a.is_empty() => {
            return Err(ApiError::bad("prompt", "must not be empty"))
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
            if a.len() > 1 {
                return Err(ApiError::bad(
                    "prompt",
                    format!(
                        "{} prompts in one request are not supported by the simulator; send one prompt per request",
                        a.len()
                    ),
                ));
            }
            words(a[0].as_str().unwrap_or_default().to_string())
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_array) => {
            if a.len() > 1 {
                return Err(ApiError::bad(
                    "prompt",
                    format!(
                        "{} prompts in one request are not supported by the simulator; send one prompt per request",
                        a.len()
                    ),
                ));
            }
            ids(a[0].as_array().expect("is array"), "prompt[0]")?
        }
        Some(Value::Array(a)) => ids(a, "prompt")?,
        Some(v) => {
            return Err(ApiError::bad(
                "prompt",
                format!(
                    "expected a string, a list of token ids or a one-element list of them, got {}",
                    describe(v)
                ),
            ))
        }
    };
    if n == 0 {
        return Err(ApiError::bad("prompt", "must contain at least one token"));
    }
    Ok((key, n, wb))
}

fn parse_stop(m: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    match m.get("stop") {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => {
            if a.len() > 16 {
                return Err(ApiError::bad(
                    "stop",
                    format!("at most 16 stop strings, got {}", a.len()),
                ));
            }
            a.iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_str().map(str::to_string).ok_or_else(|| {
                        ApiError::bad(
                            &format!("stop[{i}]"),
                            format!("expected a string, got {}", describe(x)),
                        )
                    })
                })
                .collect()
        }
        Some(v) => Err(ApiError::bad(
            "stop",
            format!(
                "expected a string or an array of strings, got {}",
                describe(v)
            ),
        )),
    }
}

/// Validates a completions or chat body against the served model.
pub fn parse_generation(
    body: &Value,
    api: Api,
    cfg: &EngineConfig,
) -> Result<GenRequest, ApiError> {
    let m = body.as_object().ok_or_else(|| ApiError {
        status: 400,
        message: format!("body: expected a JSON object, got {}", describe(body)),
        param: None,
    })?;
    check_model(m, cfg)?;
    let block = cfg.kv_block_size.max(1) as usize;
    let (prompt_text, prompt_tokens, full_text, word_blocks) = match api {
        Api::Completions => {
            let (k, n, wb) = parse_prompt(m.get("prompt"), cfg.model.vocab, block)?;
            (k.clone(), n, k, wb)
        }
        Api::Chat => {
            let msgs = parse_messages(m.get("messages"))?;
            let add_gen = opt_bool(m, "add_generation_prompt")?.unwrap_or(true);
            let rendered = text::render_chat(&msgs, add_gen);
            let key = msgs
                .iter()
                .rev()
                .find(|(r, _)| r == "user")
                .map(|(_, c)| c.clone())
                .unwrap_or_else(|| rendered.clone());
            let wb = text::word_blocks(&rendered, block);
            (key, wb.words, rendered, Some(wb))
        }
    };
    let stream = opt_bool(m, "stream")?.unwrap_or(false);
    let include_usage = match m.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => {
            if !stream {
                return Err(ApiError::bad(
                    "stream_options",
                    "only allowed when stream is true",
                ));
            }
            match o.get("include_usage") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(v) => {
                    return Err(ApiError::bad(
                        "stream_options.include_usage",
                        format!("expected true or false, got {}", describe(v)),
                    ))
                }
            }
        }
        Some(v) => {
            return Err(ApiError::bad(
                "stream_options",
                format!("expected an object, got {}", describe(v)),
            ))
        }
    };
    let big = u32::MAX as i64;
    let max_tokens = opt_int(m, "max_tokens", 1, big)?;
    let max_completion = if api == Api::Chat {
        opt_int(m, "max_completion_tokens", 1, big)?
    } else {
        None
    };
    let min_tokens = opt_int(m, "min_tokens", 0, big)?.unwrap_or(0) as u32;
    let ignore_eos = opt_bool(m, "ignore_eos")?.unwrap_or(false);
    let include_stop = opt_bool(m, "include_stop_str_in_output")?.unwrap_or(false);
    opt_num(m, "temperature", 0.0, 2.0)?;
    if let Some(p) = opt_num(m, "top_p", 0.0, 1.0)? {
        if p <= 0.0 {
            return Err(ApiError::bad("top_p", "must be in (0, 1], got 0"));
        }
    }
    opt_int(m, "top_k", -1, big)?;
    opt_num(m, "presence_penalty", -2.0, 2.0)?;
    opt_num(m, "frequency_penalty", -2.0, 2.0)?;
    opt_num(m, "repetition_penalty", 0.0, f64::MAX)?;
    opt_int(m, "seed", i64::MIN, i64::MAX)?;
    if let Some(n) = opt_int(m, "n", 1, big)? {
        if n != 1 {
            return Err(ApiError::bad(
                "n",
                format!("only n = 1 is supported by the simulator, got {n}"),
            ));
        }
    }
    if let Some(b) = opt_int(m, "best_of", 1, big)? {
        if b != 1 {
            return Err(ApiError::bad(
                "best_of",
                format!("only best_of = 1 is supported by the simulator, got {b}"),
            ));
        }
    }
    match m.get("logprobs") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(v) => {
            return Err(ApiError::bad(
                "logprobs",
                format!("not supported by the simulator (got {})", describe(v)),
            ))
        }
    }
    if opt_bool(m, "echo")? == Some(true) {
        return Err(ApiError::bad("echo", "not supported by the simulator"));
    }
    let stop = parse_stop(m)?;
    let remaining = cfg.max_model_len.saturating_sub(prompt_tokens);
    if remaining == 0 {
        let field = if api == Api::Chat {
            "messages"
        } else {
            "prompt"
        };
        return Err(ApiError::bad(
            field,
            format!(
                "this model's maximum context length is {} tokens, but the prompt has {prompt_tokens} tokens",
                cfg.max_model_len
            ),
        ));
    }
    let (field, requested) = match (max_completion, max_tokens) {
        (Some(n), _) => ("max_completion_tokens", Some(n as u32)),
        (None, Some(n)) => ("max_tokens", Some(n as u32)),
        (None, None) => ("max_tokens", None),
    };
    // vLLM defaults: completions 16 tokens (OpenAI default), chat the rest of the context.
    let max = match (requested, api) {
        (Some(n), _) => n,
        (None, Api::Completions) => 16.min(remaining),
        (None, Api::Chat) => remaining,
    };
    if max > remaining {
        return Err(ApiError::bad(
            field,
            format!(
                "this model's maximum context length is {} tokens; you requested {} tokens ({prompt_tokens} in the prompt, {max} in the completion)",
                cfg.max_model_len,
                prompt_tokens as u64 + max as u64
            ),
        ));
    }
    if min_tokens > max {
        return Err(ApiError::bad(
            "min_tokens",
            format!("must be less than or equal to {field} ({max}), got {min_tokens}"),
        ));
    }
    Ok(GenRequest {
        api,
        stream,
        include_usage,
        prompt_tokens,
        prompt_text,
        full_text,
        word_blocks,
        params: GenParams {
            max_tokens: max,
            min_tokens,
            ignore_eos,
            stop,
            include_stop_str_in_output: include_stop,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg() -> EngineConfig {
        EngineConfig::from_presets("h200", "qwen3-8b", 1).unwrap()
    }

    fn err(body: Value, api: Api) -> ApiError {
        parse_generation(&body, api, &cfg()).unwrap_err()
    }

    #[test]
    fn a_benchmark_completion_request_parses() {
        let r = parse_generation(
            &json!({"model": "Qwen/Qwen3-8B", "prompt": "one two three", "temperature": 0.0,
                    "best_of": 1, "max_tokens": 64, "logprobs": null, "stream": true,
                    "stream_options": {"include_usage": true}, "ignore_eos": true, "min_tokens": 64}),
            Api::Completions,
            &cfg(),
        )
        .unwrap();
        assert_eq!(r.prompt_tokens, 3);
        assert!(r.stream && r.include_usage && r.params.ignore_eos);
        assert_eq!((r.params.max_tokens, r.params.min_tokens), (64, 64));
    }

    #[test]
    fn chat_counts_the_template_and_prefers_max_completion_tokens() {
        let r = parse_generation(
            &json!({"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi there"}],
                    "max_tokens": 5, "max_completion_tokens": 7}),
            Api::Chat,
            &cfg(),
        )
        .unwrap();
        assert_eq!(r.prompt_tokens, 2 + 1 + 1);
        assert_eq!(r.params.max_tokens, 7);
        assert_eq!(r.prompt_text, "hi there");
    }

    #[test]
    fn defaults_follow_vllm() {
        let c = parse_generation(&json!({"prompt": "x"}), Api::Completions, &cfg()).unwrap();
        assert_eq!(c.params.max_tokens, 16);
        let ch = parse_generation(
            &json!({"messages": [{"role": "user", "content": "x"}]}),
            Api::Chat,
            &cfg(),
        )
        .unwrap();
        assert_eq!(ch.params.max_tokens, cfg().max_model_len - ch.prompt_tokens);
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (json!({"prompt": "x", "max_tokens": 0}), "max_tokens"),
            (json!({"prompt": "x", "max_tokens": "ten"}), "max_tokens"),
            (json!({"prompt": "x", "temperature": 3}), "temperature"),
            (json!({"prompt": "x", "ignore_eos": "yes"}), "ignore_eos"),
            (json!({"prompt": "x", "stream": 1}), "stream"),
            (json!({"prompt": "x", "stop": 5}), "stop"),
            (json!({"prompt": "x", "n": 2}), "n"),
            (
                json!({"prompt": "x", "max_tokens": 4, "min_tokens": 5}),
                "min_tokens",
            ),
            (
                json!({"prompt": "x", "stream_options": {"include_usage": true}}),
                "stream_options",
            ),
            (json!({"prompt": "x", "max_tokens": 50_000}), "max_tokens"),
            (json!({"prompt": [1, 999_999]}), "prompt[1]"),
            (json!({"prompt": ""}), "prompt"),
            (json!({"max_tokens": 3}), "prompt"),
        ];
        for (body, param) in cases {
            let e = err(body.clone(), Api::Completions);
            assert_eq!(e.status, 400, "{body}");
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
            assert!(
                e.message.starts_with(&format!("{param}: ")),
                "{}",
                e.message
            );
        }
        let e = err(
            json!({"messages": [{"role": "wizard", "content": "x"}]}),
            Api::Chat,
        );
        assert_eq!(e.param.as_deref(), Some("messages[0].role"));
        let e = err(json!({"messages": []}), Api::Chat);
        assert_eq!(e.param.as_deref(), Some("messages"));
        let e = err(
            json!({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -1}),
            Api::Chat,
        );
        assert_eq!(e.param.as_deref(), Some("max_completion_tokens"));
    }

    #[test]
    fn unknown_model_is_404_and_body_is_openai_shaped() {
        let e = err(json!({"model": "gpt-4", "prompt": "x"}), Api::Completions);
        assert_eq!(e.status, 404);
        let b = e.body();
        assert_eq!(b["error"]["param"], "model");
        assert_eq!(b["error"]["type"], "NotFoundError");
        assert_eq!(b["error"]["code"], 404);
    }

    #[test]
    fn token_id_prompts_are_counted() {
        let r =
            parse_generation(&json!({"prompt": [1, 2, 3, 4]}), Api::Completions, &cfg()).unwrap();
        assert_eq!(r.prompt_tokens, 4);
        let r = parse_generation(&json!({"prompt": [[1, 2]]}), Api::Completions, &cfg()).unwrap();
        assert_eq!(r.prompt_tokens, 2);
    }
}
