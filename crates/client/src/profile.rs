//! Request bodies: which optional fields each engine gets ([`BodyQuirks`] of its profile in
//! `servebench-engines`).
//!
//! Every body has `model`, the prompt (`prompt` or `messages`), `temperature: 0`, the output cap,
//! `stream: true` and `stream_options: {include_usage: true}` (MEASUREMENT.md Part 1 "Request
//! body"). The profile decides the rest:
//!
//! | profile | chat output cap | completions cap | `ignore_eos` | `min_tokens` | `continuous_usage_stats` (only with `--itl per-token`) |
//! |---|---|---|---|---|---|
//! | sglang, vllm, trtllm, atom | `max_tokens` + `max_completion_tokens` (B12) | `max_tokens` | yes | yes (= cap) | vllm, sglang |
//! | llama.cpp | `max_tokens` | `max_tokens` | yes (honoured) | no (ignored by the server) | no |
//! | transformers | `max_tokens` | `max_tokens` | no (HTTP 422) | no (HTTP 422) | no |
//! | openai | `max_completion_tokens` only (reasoning models reject `max_tokens`) | `max_tokens` | no | no | no |
//!
//! Under `--compat inferencex` the body is InferenceX's exactly (Part 2 §1.3): completions
//! `{model, prompt, temperature 0.0, best_of 1, max_tokens, logprobs null, stream, stream_options,
//! ignore_eos}`, chat `{model, messages, temperature 0.0, max_completion_tokens, stream,
//! stream_options, ignore_eos}`.

use std::collections::BTreeSet;

use bytes::Bytes;
use serde_json::{json, Map, Value};

use crate::stream::{Api, Compat};
use servebench_workload::{Prompt, RequestSpec};

/// The serving engine (`--engine`) and its profile: defined once, in `servebench-engines`
/// ([`Engine::profile`]: display name, body quirks, flush route, metric families, …).
pub use servebench_engines::{BodyQuirks, ChatCap, Engine, EngineProfile, FlushRoute};

/// Optional body fields (the ones `--lenient` may drop).
pub const OPTIONAL_FIELDS: [&str; 7] = [
    "ignore_eos",
    "min_tokens",
    "max_completion_tokens",
    "max_tokens",
    "continuous_usage_stats",
    "best_of",
    "logprobs",
];

/// Builds request bodies for one run.
#[derive(Debug, Clone)]
pub struct BodyBuilder {
    /// `model` field.
    pub model: String,
    /// API used.
    pub api: Api,
    /// Fields sent (a subset of [`OPTIONAL_FIELDS`]).
    pub fields: BTreeSet<&'static str>,
    /// Ask for per-chunk usage (`stream_options.continuous_usage_stats`).
    pub continuous_usage: bool,
}

impl BodyBuilder {
    /// The body shape of `engine` for `api`; `per_token_itl` asks for per-chunk usage where the
    /// engine supports it; `compat` = InferenceX body.
    pub fn new(model: &str, api: Api, engine: Engine, compat: Compat, per_token_itl: bool) -> Self {
        let mut f = BTreeSet::new();
        if compat == Compat::InferenceX {
            f.insert("ignore_eos");
            match api {
                Api::Completions => {
                    f.insert("max_tokens");
                    f.insert("best_of");
                    f.insert("logprobs");
                }
                Api::Chat => {
                    f.insert("max_completion_tokens");
                }
            }
            return Self {
                model: model.to_string(),
                api,
                fields: f,
                continuous_usage: false,
            };
        }
        let q = engine.profile().body;
        match (api, q.chat_cap) {
            (Api::Chat, ChatCap::MaxCompletionTokens) => {
                f.insert("max_completion_tokens");
            }
            (Api::Chat, ChatCap::Both) => {
                f.insert("max_tokens");
                f.insert("max_completion_tokens");
            }
            _ => {
                f.insert("max_tokens");
            }
        }
        if q.ignore_eos {
            f.insert("ignore_eos");
        }
        if q.min_tokens {
            f.insert("min_tokens");
        }
        let continuous = per_token_itl && q.continuous_usage;
        if continuous {
            f.insert("continuous_usage_stats");
        }
        Self {
            model: model.to_string(),
            api,
            fields: f,
            continuous_usage: continuous,
        }
    }

    /// Whether `ignore_eos` is sent (then completion_tokens must equal the cap).
    pub fn sends_ignore_eos(&self) -> bool {
        self.fields.contains("ignore_eos")
    }

    /// Removes a field (after the server rejected it, with `--lenient`). Refuses to remove the
    /// last output cap. Returns whether it was removed.
    pub fn drop_field(&mut self, name: &str) -> bool {
        if (name == "max_tokens" && !self.fields.contains("max_completion_tokens"))
            || (name == "max_completion_tokens" && !self.fields.contains("max_tokens"))
        {
            return false;
        }
        let Some(&key) = OPTIONAL_FIELDS.iter().find(|f| **f == name) else {
            return false;
        };
        if key == "continuous_usage_stats" {
            self.continuous_usage = false;
        }
        self.fields.remove(key)
    }

    /// The JSON body for `spec`.
    pub fn body(&self, spec: &RequestSpec) -> Bytes {
        let mut m = Map::with_capacity(10);
        m.insert("model".into(), Value::String(self.model.clone()));
        match (&spec.prompt, self.api) {
            (Prompt::Text(t), Api::Completions) => {
                m.insert("prompt".into(), Value::String(t.to_string()));
            }
            (Prompt::Text(t), Api::Chat) => {
                m.insert(
                    "messages".into(),
                    json!([{"role": "user", "content": &**t}]),
                );
            }
            (Prompt::Messages(msgs), Api::Chat) => {
                m.insert(
                    "messages".into(),
                    serde_json::to_value(&**msgs).unwrap_or(Value::Null),
                );
            }
            (Prompt::Messages(msgs), Api::Completions) => {
                // message lists need the chat API; join contents so the request is still valid
                let joined: Vec<&str> = msgs.iter().map(|m| m.content.as_str()).collect();
                m.insert("prompt".into(), Value::String(joined.join("\n")));
            }
        }
        m.insert("temperature".into(), json!(0.0));
        if self.fields.contains("best_of") {
            m.insert("best_of".into(), json!(1));
        }
        if self.fields.contains("max_tokens") {
            m.insert("max_tokens".into(), json!(spec.max_tokens));
        }
        if self.fields.contains("max_completion_tokens") {
            m.insert("max_completion_tokens".into(), json!(spec.max_tokens));
        }
        if self.fields.contains("logprobs") {
            m.insert("logprobs".into(), Value::Null);
        }
        m.insert("stream".into(), Value::Bool(true));
        let mut so = Map::new();
        so.insert("include_usage".into(), Value::Bool(true));
        if self.continuous_usage {
            so.insert("continuous_usage_stats".into(), Value::Bool(true));
        }
        m.insert("stream_options".into(), Value::Object(so));
        if self.fields.contains("ignore_eos") {
            m.insert("ignore_eos".into(), Value::Bool(true));
        }
        if self.fields.contains("min_tokens") {
            m.insert("min_tokens".into(), json!(spec.max_tokens));
        }
        Bytes::from(serde_json::to_vec(&Value::Object(m)).expect("JSON body serialises"))
    }

    /// Optional fields this builder sends, for matching server complaints.
    pub fn sent_optional(&self) -> Vec<&'static str> {
        self.fields.iter().copied().collect()
    }
}

/// Finds which of the optional fields `sent` an HTTP 4xx error body names as unknown/unsupported
/// (e.g. `transformers serve`: `Unexpected fields in the request: {'ignore_eos', 'min_tokens'}`,
/// OpenAI: `Unrecognized request argument supplied: ignore_eos`, pydantic: `extra_forbidden` /
/// `Extra inputs are not permitted` with `loc: ["body", "ignore_eos"]`).
///
/// Requires an "unknown field" phrase in the body, so a value error that merely mentions
/// `max_tokens` is not mistaken for it.
pub fn unknown_fields_in(body: &str, sent: &[&'static str]) -> Vec<&'static str> {
    let lower = body.to_ascii_lowercase();
    const PHRASES: [&str; 10] = [
        "unexpected",
        "unrecognized",
        "unrecognised",
        "unknown",
        "extra",
        "not permitted",
        "not allowed",
        "additional properties",
        "unsupported",
        "not supported",
    ];
    if !PHRASES.iter().any(|p| lower.contains(p)) {
        return Vec::new();
    }
    sent.iter()
        .copied()
        .filter(|f| {
            lower.match_indices(f).any(|(i, _)| {
                let before = lower[..i].chars().next_back();
                let after = lower[i + f.len()..].chars().next();
                let ident =
                    |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {

    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn spec() -> RequestSpec {
        RequestSpec {
            id: 0,
            session: None,
            prompt: Prompt::Text(Arc::from("hello")),
            prompt_tokens: Some(1),
            max_tokens: 64,
            delay: Duration::ZERO,
        }
    }

    fn body(engine: Engine, api: Api) -> Value {
        serde_json::from_slice(
            &BodyBuilder::new("m", api, engine, Compat::Servebench, false).body(&spec()),
        )
        .unwrap()
    }

    #[test]
    fn b12_chat_caps_per_profile() {
        for e in [Engine::Vllm, Engine::Sglang, Engine::Trtllm] {
            let b = body(e, Api::Chat);
            assert_eq!(b["max_tokens"], 64, "{e:?}");
            assert_eq!(b["max_completion_tokens"], 64, "{e:?}");
        }
        let o = body(Engine::Openai, Api::Chat);
        assert_eq!(o["max_completion_tokens"], 64);
        assert!(o.get("max_tokens").is_none());
        assert!(o.get("ignore_eos").is_none());
    }

    #[test]
    fn b04_always_include_usage_and_stream() {
        for e in Engine::ALL.iter().copied() {
            for api in [Api::Chat, Api::Completions] {
                let b = body(e, api);
                assert_eq!(b["stream"], true);
                assert_eq!(b["stream_options"]["include_usage"], true);
                assert_eq!(b["temperature"], 0.0);
            }
        }
    }

    #[test]
    fn transformers_and_llamacpp_fields() {
        let t = body(Engine::Transformers, Api::Chat);
        assert!(t.get("ignore_eos").is_none() && t.get("min_tokens").is_none());
        assert_eq!(t["max_tokens"], 64);
        let l = body(Engine::LlamaCpp, Api::Completions);
        assert_eq!(l["ignore_eos"], true);
        assert!(l.get("min_tokens").is_none());
        assert_eq!(l["prompt"], "hello");
        let v = body(Engine::Vllm, Api::Completions);
        assert_eq!(v["min_tokens"], 64);
        assert!(v.get("max_completion_tokens").is_none());
    }

    #[test]
    fn inferencex_body_is_exact() {
        let b = BodyBuilder::new(
            "m",
            Api::Completions,
            Engine::Sglang,
            Compat::InferenceX,
            false,
        );
        let s = String::from_utf8(b.body(&spec()).to_vec()).unwrap();
        assert_eq!(
            s,
            r#"{"model":"m","prompt":"hello","temperature":0.0,"best_of":1,"max_tokens":64,"logprobs":null,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}"#
        );
        let c = BodyBuilder::new("m", Api::Chat, Engine::Vllm, Compat::InferenceX, false);
        let s = String::from_utf8(c.body(&spec()).to_vec()).unwrap();
        assert_eq!(
            s,
            r#"{"model":"m","messages":[{"role":"user","content":"hello"}],"temperature":0.0,"max_completion_tokens":64,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}"#
        );
    }

    #[test]
    fn unknown_field_detection() {
        let sent = ["ignore_eos", "max_tokens", "min_tokens"];
        let tf = r#"{"detail":"Unexpected fields in the request: {'ignore_eos', 'min_tokens'}"}"#;
        assert_eq!(
            unknown_fields_in(tf, &sent),
            vec!["ignore_eos", "min_tokens"]
        );
        let oa = "Unrecognized request argument supplied: ignore_eos";
        assert_eq!(unknown_fields_in(oa, &sent), vec!["ignore_eos"]);
        let val = r#"{"error":{"message":"max_tokens must be at least 1, got 0"}}"#;
        assert!(unknown_fields_in(val, &sent).is_empty());
        let pyd = r#"{"detail":[{"type":"extra_forbidden","loc":["body","min_tokens"],"msg":"Extra inputs are not permitted"}]}"#;
        assert_eq!(unknown_fields_in(pyd, &sent), vec!["min_tokens"]);
        // `max_tokens` inside `max_completion_tokens` is not a match
        assert!(
            unknown_fields_in("unknown field max_completion_tokens", &["max_tokens"]).is_empty()
        );
    }

    #[test]
    fn lenient_drop_keeps_one_cap() {
        let mut b = BodyBuilder::new("m", Api::Chat, Engine::Vllm, Compat::Servebench, false);
        assert!(b.drop_field("max_completion_tokens"));
        assert!(!b.drop_field("max_tokens"));
        assert!(b.drop_field("ignore_eos"));
        let v: Value = serde_json::from_slice(&b.body(&spec())).unwrap();
        assert!(v.get("ignore_eos").is_none() && v["max_tokens"] == 64);
    }
}
