//! Reasoning, tool-call and multi-token chunks in the byte formats of vLLM, SGLang and
//! llama.cpp (shapes as those engines stream them: vLLM's `reasoning` field and
//! `continuous_usage_stats` usage on every chunk, SGLang's `reasoning_content` with
//! `"content":null,"tool_calls":null` and `"usage":null`, llama.cpp's `timings` on every chunk
//! with `predicted_n`), fed as byte streams with exact arrival times.

use servebench_client::stream::{parse_stream, Api, Compat, OutputSource, StreamOutcome};

const MS: u64 = 1_000_000;

fn run_reads(reads: &[(String, u64)]) -> StreamOutcome {
    let st = parse_stream(
        reads.iter().map(|(b, t)| (b.as_bytes(), t * MS)),
        Api::Chat,
        Compat::Servebench,
        false,
    );
    st.outcome(0, None)
}

/// One read per event: `data: JSON\n\n` at `t` ms.
fn one_per_read(evs: &[(u64, String)]) -> Vec<(String, u64)> {
    evs.iter()
        .map(|(t, j)| (format!("data: {j}\n\n"), *t))
        .collect()
}

fn vllm_chunk(delta: &str, finish: &str, completion: u64) -> String {
    format!(
        r#"{{"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":1764590000,"model":"Qwen/Qwen3-8B","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}],"usage":{{"prompt_tokens":12,"total_tokens":{},"completion_tokens":{completion}}}}}"#,
        12 + completion
    )
}

/// vLLM ≥ 0.9 with `--reasoning-parser` and MTP: `reasoning` deltas, per-chunk usage
/// (`continuous_usage_stats`), two chunks carrying several tokens.
fn vllm() -> Vec<(u64, String)> {
    vec![
        (5, vllm_chunk(r#"{"role":"assistant","content":""}"#, "null", 0)),
        (40, vllm_chunk(r#"{"reasoning":"Okay"}"#, "null", 1)),
        (60, vllm_chunk(r#"{"reasoning":", two plus"}"#, "null", 3)),
        (70, vllm_chunk(r#"{"reasoning":" two"}"#, "null", 4)),
        (300, vllm_chunk(r#"{"content":"The"}"#, "null", 5)),
        (330, vllm_chunk(r#"{"content":" answer is 4."}"#, "null", 8)),
        (331, vllm_chunk(r#"{"content":""}"#, r#""stop""#, 8)),
        (
            332,
            r#"{"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":1764590000,"model":"Qwen/Qwen3-8B","choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}"#.into(),
        ),
        (333, "[DONE]".into()),
    ]
}

#[test]
fn vllm_reasoning_with_multi_token_chunks() {
    let o = run_reads(&one_per_read(&vllm()));
    assert!(o.success, "{:?}", o.failure);
    assert_eq!(o.ttft_ms, Some(40.0), "first token of any kind: reasoning");
    assert_eq!(o.ttfo_ms, Some(300.0), "first visible output");
    assert_eq!(
        o.e2el_ms,
        Some(330.0),
        "the empty finish chunk and usage do not extend E2EL"
    );
    assert_eq!((o.output_tokens, o.output_source), (8, OutputSource::Usage));
    assert_eq!(o.token_events, 5);
    assert_eq!(o.tokens_per_chunk, Some(vec![1, 2, 1, 1, 3]));
    let gaps: Vec<f64> = o.itl_ns.iter().map(|&g| g as f64 / 1e6).collect();
    assert_eq!(gaps, vec![20.0, 10.0, 230.0, 30.0]);
    let p = o.phases.expect("reasoning phases");
    assert_eq!(
        (p.first_reasoning_ms, p.last_reasoning_ms),
        (Some(40.0), Some(70.0))
    );
    assert_eq!(p.reasoning_span_ms(), Some(30.0));
    assert_eq!((p.reasoning_events, p.tool_call_events), (3, 0));
    assert_eq!(
        (p.first_content_ms, p.first_tool_call_ms),
        (Some(300.0), None)
    );
    // older vLLM (≤ 0.8) sends the same stream with `reasoning_content`
    let old: Vec<(u64, String)> = vllm()
        .into_iter()
        .map(|(t, j)| (t, j.replace("\"reasoning\"", "\"reasoning_content\"")))
        .collect();
    let o2 = run_reads(&one_per_read(&old));
    assert_eq!(
        (o2.ttft_ms, o2.ttfo_ms, o2.phases),
        (o.ttft_ms, o.ttfo_ms, Some(p))
    );
}

fn sglang_chunk(delta: &str, finish: &str) -> String {
    format!(
        r#"{{"id":"fea45bfa7bbd4209b1e71bdcdcc6c667","object":"chat.completion.chunk","created":1756216933,"model":"qwen3","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish},"matched_stop":null}}],"usage":null}}"#
    )
}

/// SGLang with a reasoning parser and a tool-call parser: reasoning, then a tool call (name,
/// then argument fragments), no answer content.
fn sglang_tool() -> Vec<(u64, String)> {
    let r = |t: &str| {
        format!(r#"{{"role":null,"content":null,"reasoning_content":"{t}","tool_calls":null}}"#)
    };
    vec![
        (30, sglang_chunk(&r("The"), "null")),
        (45, sglang_chunk(&r(" user"), "null")),
        (60, sglang_chunk(&r(" wants weather"), "null")),
        (
            400,
            sglang_chunk(
                r#"{"role":null,"content":null,"reasoning_content":null,"tool_calls":[{"id":"call_0d9c","index":0,"type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
                "null",
            ),
        ),
        (
            420,
            sglang_chunk(
                r#"{"role":null,"content":null,"reasoning_content":null,"tool_calls":[{"id":null,"index":0,"type":"function","function":{"name":null,"arguments":"{\"city\": "}}]}"#,
                "null",
            ),
        ),
        (
            440,
            sglang_chunk(
                r#"{"role":null,"content":null,"reasoning_content":null,"tool_calls":[{"id":null,"index":0,"type":"function","function":{"name":null,"arguments":"\"Paris\"}"}}]}"#,
                "null",
            ),
        ),
        (
            441,
            sglang_chunk(
                r#"{"role":null,"content":null,"reasoning_content":null,"tool_calls":null}"#,
                r#""tool_calls""#,
            ),
        ),
        (
            442,
            r#"{"id":"fea45bfa7bbd4209b1e71bdcdcc6c667","object":"chat.completion.chunk","created":1756216933,"model":"qwen3","choices":[],"usage":{"prompt_tokens":40,"total_tokens":49,"completion_tokens":9,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":5}}}"#.into(),
        ),
        (443, "[DONE]".into()),
    ]
}

#[test]
fn sglang_reasoning_then_tool_call() {
    let o = run_reads(&one_per_read(&sglang_tool()));
    assert!(o.success, "{:?}", o.failure);
    assert_eq!(o.ttft_ms, Some(30.0));
    assert_eq!(o.ttfo_ms, Some(400.0), "a tool call is visible output");
    assert_eq!(o.e2el_ms, Some(440.0));
    assert_eq!((o.output_tokens, o.token_events), (9, 6));
    assert_eq!(
        o.tokens_per_chunk, None,
        "no per-chunk usage: split unknown"
    );
    let p = o.phases.expect("phases");
    assert_eq!(p.reasoning_span_ms(), Some(30.0));
    assert_eq!((p.reasoning_events, p.tool_call_events), (3, 3));
    assert_eq!(
        (p.first_tool_call_ms, p.first_content_ms),
        (Some(400.0), None)
    );
    assert_eq!(p.reasoning_tokens, Some(5));
}

#[test]
fn sglang_split_reads_give_identical_results() {
    // the whole stream as bytes, cut every 7 bytes; an event's time is when its blank line
    // arrives, so each 7-byte read is stamped with the time of the event it completes (or the
    // next event's time while in between)
    let evs = sglang_tool();
    let whole = one_per_read(&evs);
    let mut reads: Vec<(String, u64)> = Vec::new();
    for (bytes, t) in &whole {
        let b = bytes.as_bytes();
        for c in b.chunks(7) {
            reads.push((String::from_utf8(c.to_vec()).unwrap(), *t));
        }
    }
    assert_eq!(run_reads(&reads), run_reads(&whole));
}

fn llamacpp_chunk(delta: &str, finish: &str, predicted_n: u64, extra: &str) -> String {
    format!(
        r#"{{"choices":[{{"finish_reason":{finish},"index":0,"delta":{delta}}}],"created":1781492230,"id":"chatcmpl-qC6laQHbZ2CmxNvJ4NoB1L93LcVF7nfe","model":"qwen3-0.6b-q8_0.gguf","system_fingerprint":"b6550-d403f00ec","object":"chat.completion.chunk"{extra},"timings":{{"cache_n":0,"prompt_n":10,"prompt_ms":25.1,"prompt_per_token_ms":2.51,"prompt_per_second":398.4,"predicted_n":{predicted_n},"predicted_ms":40.7,"predicted_per_token_ms":14.5,"predicted_per_second":68.7,"draft_n":4,"draft_n_accepted":1}}}}"#
    )
}

/// llama.cpp with `timings_per_token` and a draft model: `reasoning_content` deltas, timings on
/// every chunk, one chunk carrying an accepted draft token too, usage on the last chunk with
/// choices.
fn llamacpp() -> Vec<(u64, String)> {
    vec![
        (
            2,
            llamacpp_chunk(r#"{"role":"assistant","content":null}"#, "null", 0, ""),
        ),
        (
            50,
            llamacpp_chunk(r#"{"reasoning_content":" it"}"#, "null", 1, ""),
        ),
        (
            64,
            llamacpp_chunk(r#"{"reasoning_content":" handles"}"#, "null", 2, ""),
        ),
        (200, llamacpp_chunk(r#"{"content":"Yes"}"#, "null", 3, "")),
        (
            215,
            llamacpp_chunk(r#"{"content":", done"}"#, "null", 5, ""),
        ),
        (
            216,
            llamacpp_chunk(
                "{}",
                r#""stop""#,
                5,
                r#","usage":{"completion_tokens":5,"prompt_tokens":10,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":7}}"#,
            ),
        ),
        (217, "[DONE]".into()),
    ]
}

#[test]
fn llamacpp_reasoning_with_timings_per_token() {
    let o = run_reads(&one_per_read(&llamacpp()));
    assert!(o.success, "{:?}", o.failure);
    assert_eq!(
        (o.ttft_ms, o.ttfo_ms, o.e2el_ms),
        (Some(50.0), Some(200.0), Some(215.0))
    );
    assert_eq!((o.output_tokens, o.output_source), (5, OutputSource::Usage));
    assert_eq!(o.prompt_tokens_server, Some(10));
    // llama.cpp reports its prefix-cache reuse per request
    assert_eq!(o.prompt_tokens_cached, Some(7));
    // per-chunk counts from timings.predicted_n (no per-chunk usage in llama.cpp)
    assert_eq!(o.tokens_per_chunk, Some(vec![1, 1, 1, 2]));
    let p = o.phases.expect("phases");
    assert_eq!(p.reasoning_span_ms(), Some(14.0));
    assert_eq!((p.reasoning_events, p.first_content_ms), (2, Some(200.0)));
}

#[test]
fn plain_streams_have_no_phases_and_inferencex_compat_ignores_them() {
    let plain: Vec<(u64, String)> = vec![
        (10, vllm_chunk(r#"{"content":"a"}"#, "null", 1)),
        (20, vllm_chunk(r#"{"content":"b"}"#, "null", 2)),
    ];
    let o = run_reads(&one_per_read(&plain));
    assert_eq!((o.phases, o.ttfo_ms), (None, Some(10.0)));
    let reads = one_per_read(&vllm());
    let st = parse_stream(
        reads.iter().map(|(b, t)| (b.as_bytes(), t * MS)),
        Api::Chat,
        Compat::InferenceX,
        false,
    );
    assert_eq!(st.outcome(0, None).phases, None);
}
