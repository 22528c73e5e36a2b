//! Allocation-free scan of one streamed JSON chunk (OpenAI completions or chat shape).
//!
//! Only the fields the measurement needs are looked at: `id`, `choices[*].text`,
//! `choices[*].delta.{content, reasoning_content, reasoning, tool_calls}`, `usage` (with
//! `completion_tokens_details.reasoning_tokens`), llama.cpp's per-chunk `timings.predicted_n`
//! and error objects (`{"error": …}` or vLLM's older top-level `{"object": "error", "message": …}`). Strings
//! are inspected through serde visitors (borrowed or from serde_json's scratch buffer), so a
//! normal chunk costs no heap allocation unless the caller asks for the text.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Token usage of a chunk (`usage`), when present.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens` (OpenAI shape; engines that count
    /// reasoning tokens separately).
    #[serde(
        default,
        rename = "completion_tokens_details",
        deserialize_with = "reasoning_tokens_of"
    )]
    pub reasoning_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens the server took from its
    /// prefix cache (OpenAI shape; llama.cpp always, vLLM with
    /// `--enable-prompt-tokens-details`, SGLang with `--enable-cache-report`).
    #[serde(
        default,
        rename = "prompt_tokens_details",
        deserialize_with = "cached_tokens_of"
    )]
    pub cached_tokens: Option<u64>,
}

/// `prompt_tokens_details` → its `cached_tokens` (null, absent or other shapes → None).
fn cached_tokens_of<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Details {
        #[serde(default)]
        cached_tokens: Option<u64>,
    }
    Ok(Option::<Details>::deserialize(d)?.and_then(|x| x.cached_tokens))
}

/// `completion_tokens_details` → its `reasoning_tokens` (null, absent or other shapes → None).
fn reasoning_tokens_of<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Details {
        #[serde(default)]
        reasoning_tokens: Option<u64>,
    }
    Ok(Option::<Details>::deserialize(d)?.and_then(|x| x.reasoning_tokens))
}

/// llama.cpp `timings` (sent on every chunk with `timings_per_token`, and on the last one):
/// only `predicted_n`, the tokens generated so far.
#[derive(serde::Deserialize)]
struct Timings {
    #[serde(default)]
    predicted_n: Option<u64>,
}

/// An error object found in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamErrorInfo {
    /// `error.code` (number or string) or top-level `code`, as text.
    pub code: Option<String>,
    /// `error.message` (or the error string itself).
    pub message: String,
}

/// What one chunk carries (see MEASUREMENT.md Part 1 "Token event").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Number of elements of `choices` (InferenceX counts a chunk with ≥ 1 as a content chunk).
    pub choices: u32,
    /// Some choice has non-empty `text` / `delta.content` / `delta.reasoning_content` /
    /// `delta.reasoning` / non-empty `delta.tool_calls`.
    pub token_event: bool,
    /// Some choice has non-empty `text` or `delta.content` (answer content, for TTFO).
    pub content: bool,
    /// Some choice has non-empty `delta.reasoning_content` or `delta.reasoning`.
    pub reasoning: bool,
    /// Some choice has non-empty `delta.tool_calls`.
    pub tool_calls: bool,
    /// `usage` of this chunk (may ride on a chunk that also has choices).
    pub usage: Option<Usage>,
    /// llama.cpp `timings.predicted_n`: tokens generated so far (a per-chunk count where the
    /// engine sends no per-chunk usage).
    pub predicted_n: Option<u64>,
    /// An error object.
    pub error: Option<StreamErrorInfo>,
}

/// Where text goes while scanning (only when asked for).
pub struct Capture<'c> {
    /// Receives `text` / `delta.content`.
    pub text: Option<&'c mut String>,
    /// Receives the chunk `id` when `None` so far.
    pub id: Option<&'c mut Option<String>>,
}

/// Scans one event's data. Errors when it is not a JSON object.
///
/// The common shapes are read by a byte-level scan (`chunk_fast`, same answers; issue 21);
/// everything else, errors included, by the serde scan.
#[inline]
pub fn scan_chunk(data: &[u8], capture: Capture<'_>) -> Result<ChunkInfo, serde_json::Error> {
    let mut capture = capture;
    if let Some(info) = crate::chunk_fast::scan(data, &mut capture) {
        return Ok(info);
    }
    #[cfg(test)]
    counts::bump(counts::Path::Serde);
    scan_serde(data, capture)
}

/// One stream's chunk template: consecutive chunks of a stream that differ only in their text
/// string are answered from it (prefix and suffix compared, the text body checked) instead of
/// being scanned again; see `chunk_fast::Template`. One per stream ([`crate::StreamState`]
/// keeps it); one heap buffer, reused.
pub(crate) type ChunkTemplate = crate::chunk_fast::Template;

/// [`scan_chunk`] with the stream's [`ChunkTemplate`] (same answers and errors: the template
/// answers only where the byte-level scan would give the same answer).
#[inline]
pub(crate) fn scan_chunk_templated(
    data: &[u8],
    mut capture: Capture<'_>,
    tpl: &mut ChunkTemplate,
) -> Result<ChunkInfo, serde_json::Error> {
    if let Some(info) = crate::chunk_fast::scan_templated(data, &mut capture, tpl) {
        return Ok(info);
    }
    #[cfg(test)]
    counts::bump(counts::Path::Serde);
    scan_serde(data, capture)
}

/// Test-only counts of which scan answered each chunk, per thread (the counted CI guards of
/// the template path; a `#[tokio::test]` runtime runs its tasks on the test's thread).
#[cfg(test)]
pub(crate) mod counts {
    use std::cell::Cell;

    /// Which scan answered.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Path {
        /// The stream's template.
        Template = 0,
        /// The full byte-level scan.
        Fast = 1,
        /// The serde scan (an answer or an error).
        Serde = 2,
    }

    thread_local! {
        static N: Cell<[u64; 3]> = const { Cell::new([0; 3]) };
    }

    pub(crate) fn bump(p: Path) {
        N.with(|n| {
            let mut a = n.get();
            a[p as usize] += 1;
            n.set(a);
        });
    }

    /// `[template, fast, serde]` answers on this thread since the last call; resets them.
    pub(crate) fn take() -> [u64; 3] {
        N.with(|n| n.replace([0; 3]))
    }
}

/// The serde scan of one event's data (every shape; the reference the fast scan is tested
/// against). Errors when it is not a JSON object.
pub(crate) fn scan_serde(
    data: &[u8],
    capture: Capture<'_>,
) -> Result<ChunkInfo, serde_json::Error> {
    let mut info = ChunkInfo::default();
    let mut de = serde_json::Deserializer::from_slice(data);
    let mut cap = capture;
    TopSeed {
        info: &mut info,
        cap: &mut cap,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(info)
}

// ---- keys ---------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Choices,
    Usage,
    Error,
    Object,
    Message,
    Code,
    Delta,
    Text,
    Content,
    ReasoningContent,
    Reasoning,
    ToolCalls,
    Timings,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KV;
        impl<'de> Visitor<'de> for KV {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "id" => Key::Id,
                    "choices" => Key::Choices,
                    "usage" => Key::Usage,
                    "error" => Key::Error,
                    "object" => Key::Object,
                    "message" => Key::Message,
                    "code" => Key::Code,
                    "delta" => Key::Delta,
                    "text" => Key::Text,
                    "content" => Key::Content,
                    "reasoning_content" => Key::ReasoningContent,
                    "reasoning" => Key::Reasoning,
                    "tool_calls" => Key::ToolCalls,
                    "timings" => Key::Timings,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KV)
    }
}

// ---- top level ----------------------------------------------------------------------------

struct TopSeed<'a, 'c> {
    info: &'a mut ChunkInfo,
    cap: &'a mut Capture<'c>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut object_is_error = false;
        let mut top_message: Option<String> = None;
        let mut top_code: Option<String> = None;
        while let Some(k) = map.next_key::<Key>()? {
            match k {
                Key::Choices => {
                    map.next_value_seed(ChoicesSeed {
                        info: self.info,
                        cap: self.cap,
                    })?;
                }
                Key::Usage => self.info.usage = map.next_value::<Option<Usage>>()?,
                Key::Timings => {
                    self.info.predicted_n = map
                        .next_value::<Option<Timings>>()?
                        .and_then(|t| t.predicted_n)
                }
                Key::Error => {
                    let v: serde_json::Value = map.next_value()?;
                    if !v.is_null() {
                        self.info.error = Some(error_from_value(&v));
                    }
                }
                Key::Id => match self.cap.id.as_deref_mut() {
                    Some(slot @ None) => *slot = map.next_value::<Option<String>>()?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                },
                Key::Object => object_is_error = map.next_value_seed(IsStr("error"))?,
                Key::Message => top_message = Some(map.next_value_seed(AnyText)?),
                Key::Code => top_code = Some(map.next_value_seed(AnyText)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if object_is_error && self.info.error.is_none() {
            self.info.error = Some(StreamErrorInfo {
                code: top_code,
                message: top_message.unwrap_or_default(),
            });
        }
        Ok(())
    }
}

fn error_from_value(v: &serde_json::Value) -> StreamErrorInfo {
    let text = |x: &serde_json::Value| match x {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    };
    match v {
        serde_json::Value::Object(o) => StreamErrorInfo {
            code: o.get("code").and_then(text),
            message: o
                .get("message")
                .and_then(text)
                .unwrap_or_else(|| v.to_string()),
        },
        other => StreamErrorInfo {
            code: None,
            message: text(other).unwrap_or_default(),
        },
    }
}

// ---- choices ------------------------------------------------------------------------------

struct ChoicesSeed<'a, 'c> {
    info: &'a mut ChunkInfo,
    cap: &'a mut Capture<'c>,
}

impl<'de> DeserializeSeed<'de> for ChoicesSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChoicesSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a choices array")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(ChoiceSeed {
                info: self.info,
                cap: self.cap,
            })?
            .is_some()
        {
            self.info.choices += 1;
        }
        Ok(())
    }
}

struct ChoiceSeed<'a, 'c> {
    info: &'a mut ChunkInfo,
    cap: &'a mut Capture<'c>,
}

impl<'de> DeserializeSeed<'de> for ChoiceSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChoiceSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a choice object")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(k) = map.next_key::<Key>()? {
            match k {
                Key::Text => {
                    if map.next_value_seed(TextSeed {
                        cap: self.cap.text.as_deref_mut(),
                    })? {
                        self.info.token_event = true;
                        self.info.content = true;
                    }
                }
                Key::Delta => map.next_value_seed(DeltaSeed {
                    info: self.info,
                    cap: self.cap,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct DeltaSeed<'a, 'c> {
    info: &'a mut ChunkInfo,
    cap: &'a mut Capture<'c>,
}

impl<'de> DeserializeSeed<'de> for DeltaSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DeltaSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a delta object")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(k) = map.next_key::<Key>()? {
            match k {
                Key::Content => {
                    if map.next_value_seed(TextSeed {
                        cap: self.cap.text.as_deref_mut(),
                    })? {
                        self.info.token_event = true;
                        self.info.content = true;
                    }
                }
                Key::ReasoningContent | Key::Reasoning => {
                    if map.next_value_seed(TextSeed { cap: None })? {
                        self.info.token_event = true;
                        self.info.reasoning = true;
                    }
                }
                Key::ToolCalls => {
                    if map.next_value_seed(NonEmptySeq)? {
                        self.info.token_event = true;
                        self.info.tool_calls = true;
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

// ---- leaf visitors ------------------------------------------------------------------------

/// Returns whether the value is a non-empty string; appends it to `cap` if given.
struct TextSeed<'c> {
    cap: Option<&'c mut String>,
}

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        if let Some(c) = self.cap {
            c.push_str(v);
        }
        Ok(!v.is_empty())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        // content as a list of parts: non-empty when it has any part
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(n > 0)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

/// Returns whether the value is a non-empty array.
struct NonEmptySeq;

impl<'de> DeserializeSeed<'de> for NonEmptySeq {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NonEmptySeq {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(n > 0)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
}

/// Whether the value is the string `self.0`.
struct IsStr(&'static str);

impl<'de> DeserializeSeed<'de> for IsStr {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IsStr {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

/// Any scalar as text (used for rare top-level `message`/`code` fields).
struct AnyText;

impl<'de> DeserializeSeed<'de> for AnyText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(match v {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        })
    }
}

use serde::Deserialize as _;

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(s: &str) -> ChunkInfo {
        scan_chunk(
            s.as_bytes(),
            Capture {
                text: None,
                id: None,
            },
        )
        .unwrap()
    }

    #[test]
    fn chat_token_events() {
        let role = scan(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        assert_eq!((role.choices, role.token_event), (1, false));
        let null = scan(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#);
        assert!(!null.token_event);
        let c = scan(r#"{"id":"x","choices":[{"index":0,"delta":{"content":"Hi"}}]}"#);
        assert!(c.token_event && c.content && !c.reasoning);
        let r = scan(r#"{"choices":[{"delta":{"reasoning_content":"Ok"}}]}"#);
        assert!(r.token_event && r.reasoning && !r.content);
        let r2 = scan(r#"{"choices":[{"delta":{"reasoning":"Ok","content":null}}]}"#);
        assert!(r2.token_event && r2.reasoning);
        let t = scan(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
        );
        assert!(t.token_event && t.tool_calls);
        let t0 = scan(r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#);
        assert!(!t0.token_event);
        let empty = scan(r#"{"choices":[{"delta":{}}]}"#);
        assert!(!empty.token_event);
    }

    #[test]
    fn completions_and_usage() {
        let e = scan(r#"{"choices":[{"index":0,"text":""}]}"#);
        assert_eq!((e.choices, e.token_event), (1, false));
        let u = scan(
            r#"{"choices":[{"index":0,"text":"","finish_reason":null}],"usage":{"prompt_tokens":8,"completion_tokens":3,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}}}"#,
        );
        assert_eq!(
            u.usage,
            Some(Usage {
                prompt_tokens: Some(8),
                completion_tokens: Some(3),
                reasoning_tokens: None,
                cached_tokens: Some(0),
            })
        );
        assert!(!u.token_event);
        let only = scan(
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
        );
        assert_eq!(only.choices, 0);
        assert_eq!(only.usage.unwrap().completion_tokens, Some(3));
        assert_eq!(only.usage.unwrap().cached_tokens, None);
        // llama.cpp's final usage chunk
        let ll = scan(
            r#"{"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":24,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":23}},"timings":{"cache_n":23,"prompt_n":1,"predicted_n":3}}"#,
        );
        assert_eq!(ll.usage.unwrap().cached_tokens, Some(23));
        let nd = scan(r#"{"choices":[],"usage":{"prompt_tokens":5,"prompt_tokens_details":null}}"#);
        assert_eq!(nd.usage.unwrap().cached_tokens, None);
        let nu = scan(r#"{"choices":[{"text":"a"}],"usage":null}"#);
        assert!(nu.usage.is_none() && nu.token_event);
    }

    #[test]
    fn reasoning_tokens_and_llamacpp_timings() {
        let u = scan(
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":40,"total_tokens":49,"completion_tokens_details":{"reasoning_tokens":31}}}"#,
        );
        assert_eq!(u.usage.unwrap().reasoning_tokens, Some(31));
        let n = scan(
            r#"{"choices":[],"usage":{"completion_tokens":4,"completion_tokens_details":null}}"#,
        );
        assert_eq!(n.usage.unwrap().reasoning_tokens, None);
        // llama.cpp: timings ride on every chunk (timings_per_token) and on the last one
        let t = scan(
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"reasoning_content":" it"}}],"created":1781492230,"id":"chatcmpl-q","model":"m.gguf","system_fingerprint":"b9554-d403f00ec","object":"chat.completion.chunk","timings":{"cache_n":7,"prompt_n":10,"prompt_ms":251.51,"predicted_n":28,"predicted_ms":407.596,"draft_n":30,"draft_n_accepted":12}}"#,
        );
        assert_eq!(t.predicted_n, Some(28));
        assert!(t.reasoning && t.token_event);
        assert_eq!(scan(r#"{"choices":[],"timings":null}"#).predicted_n, None);
    }

    #[test]
    fn errors() {
        let e = scan(r#"{"error":{"message":"too long","type":"BadRequestError","code":400}}"#);
        assert_eq!(
            e.error,
            Some(StreamErrorInfo {
                code: Some("400".into()),
                message: "too long".into()
            })
        );
        let o = scan(r#"{"object":"error","message":"bad","type":"x","code":500}"#);
        assert_eq!(
            o.error,
            Some(StreamErrorInfo {
                code: Some("500".into()),
                message: "bad".into()
            })
        );
        let s = scan(r#"{"error":"boom"}"#);
        assert_eq!(s.error.unwrap().message, "boom");
        let n = scan(r#"{"object":"chat.completion.chunk","error":null,"choices":[]}"#);
        assert!(n.error.is_none());
        assert!(scan_chunk(
            b"[DONE]",
            Capture {
                text: None,
                id: None
            }
        )
        .is_err());
        assert!(scan_chunk(
            b"{\"a\":1} x",
            Capture {
                text: None,
                id: None
            }
        )
        .is_err());
    }

    #[test]
    fn capture_text_and_id_with_escapes() {
        let mut text = String::new();
        let mut id = None;
        scan_chunk(
            "{\"id\":\"cmpl-1\",\"choices\":[{\"delta\":{\"content\":\"h\\u00e9\\nl\"}}]}"
                .as_bytes(),
            Capture {
                text: Some(&mut text),
                id: Some(&mut id),
            },
        )
        .unwrap();
        scan_chunk(
            "{\"id\":\"cmpl-2\",\"choices\":[{\"delta\":{\"content\":\"ö\"}}]}".as_bytes(),
            Capture {
                text: Some(&mut text),
                id: Some(&mut id),
            },
        )
        .unwrap();
        assert_eq!(text, "hé\nlö");
        assert_eq!(id.as_deref(), Some("cmpl-1"));
    }
}
