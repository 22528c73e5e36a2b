//! Cases B01–B05, B07, B08 of `../shared/cases/README.md` fed to the stream parser as byte
//! streams with exact arrival times (timing-independent, so every value is checked exactly).
//! The same fixtures go through a live scripted server in `cases_live.rs`.

use servebench_client::stream::{parse_stream, Api, Compat, OutputSource, StreamOutcome};

const MS: u64 = 1_000_000;

/// `@t data: json\n\n` events, one network read each.
fn events(evs: &[(u64, &str)]) -> Vec<(Vec<u8>, u64)> {
    evs.iter()
        .map(|(t, j)| (format!("data: {j}\n\n").into_bytes(), t * MS))
        .collect()
}

fn run(evs: &[(u64, &str)], api: Api, compat: Compat) -> StreamOutcome {
    let reads = events(evs);
    let st = parse_stream(
        reads.iter().map(|(b, t)| (b.as_slice(), *t)),
        api,
        compat,
        false,
    );
    st.outcome(0, None)
}

fn itl_ms(o: &StreamOutcome) -> Vec<f64> {
    o.itl_ns.iter().map(|&g| g as f64 / 1e6).collect()
}

fn tpot(o: &StreamOutcome) -> f64 {
    (o.e2el_ms.unwrap() - o.ttft_ms.unwrap()) / (o.output_tokens - 1) as f64
}

const F01: &[(u64, &str)] = &[
    (
        5,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
    ),
    (
        214,
        r#"{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#,
    ),
    (
        234,
        r#"{"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}"#,
    ),
    (
        254,
        r#"{"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}"#,
    ),
    (
        300,
        r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
    ),
    (301, "[DONE]"),
];

#[test]
fn b01a_role_only_chunk_is_not_first_token() {
    let o = run(F01, Api::Chat, Compat::Servebench);
    assert!(o.success);
    assert_eq!(o.ttft_ms, Some(214.0));
    assert_eq!(o.e2el_ms, Some(254.0));
    assert_eq!(itl_ms(&o), vec![20.0, 20.0]);
    assert_eq!(tpot(&o), 20.0);
    assert_eq!((o.output_tokens, o.output_source), (3, OutputSource::Usage));
    assert_eq!(o.prompt_tokens_server, Some(12));
    assert_eq!(o.prompt_tokens_cached, None, "the server did not say");
}

#[test]
fn b01b_role_chunk_with_null_content() {
    let mut f = F01.to_vec();
    f[0].1 = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#;
    let o = run(&f, Api::Chat, Compat::Servebench);
    assert_eq!((o.ttft_ms, o.e2el_ms), (Some(214.0), Some(254.0)));
    assert_eq!(itl_ms(&o), vec![20.0, 20.0]);
}

#[test]
fn b01a_inferencex_compat_counts_role_chunk_and_usage_chunk() {
    // InferenceX chat: the role-only chunk is the first "token" (TTFT 5), gaps [209, 20, 20],
    // and E2EL runs to the last data line (the usage chunk @300).
    let o = run(F01, Api::Chat, Compat::InferenceX);
    assert!(o.success);
    assert_eq!(o.ttft_ms, Some(5.0));
    assert_eq!(itl_ms(&o), vec![209.0, 20.0, 20.0]);
    assert_eq!(o.e2el_ms, Some(300.0));
    assert_eq!(o.output_tokens, 3);
}

const F01C: &[(u64, &str)] = &[
    (900, r#"{"choices":[{"index":0,"text":""}]}"#),
    (1300, r#"{"choices":[{"index":0,"text":""}]}"#),
    (1320, r#"{"choices":[{"index":0,"text":"A"}]}"#),
    (
        1340,
        r#"{"choices":[{"index":0,"text":"B","finish_reason":"length"}]}"#,
    ),
    (
        1341,
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
    ),
    (1342, "[DONE]"),
];

#[test]
fn b01c_completions_empty_text_chunks_are_not_tokens() {
    let o = run(F01C, Api::Completions, Compat::Servebench);
    assert_eq!(o.ttft_ms, Some(1320.0));
    assert_eq!(o.e2el_ms, Some(1340.0));
    assert_eq!(itl_ms(&o), vec![20.0]);
    assert_eq!(tpot(&o), 20.0);
    // InferenceX completions: every chunk with choices counts → TTFT 900, gaps [400, 20, 20]
    let ix = run(F01C, Api::Completions, Compat::InferenceX);
    assert_eq!(ix.ttft_ms, Some(900.0));
    assert_eq!(itl_ms(&ix), vec![400.0, 20.0, 20.0]);
    assert_eq!(ix.e2el_ms, Some(1340.0));
}

fn f02(field: &str) -> Vec<(u64, String)> {
    vec![
        (50, format!(r#"{{"choices":[{{"index":0,"delta":{{"{field}":"Okay"}}}}]}}"#)),
        (70, format!(r#"{{"choices":[{{"index":0,"delta":{{"{field}":" so"}}}}]}}"#)),
        (90, format!(r#"{{"choices":[{{"index":0,"delta":{{"{field}":" yes"}}}}]}}"#)),
        (900, r#"{"choices":[{"index":0,"delta":{"content":"The"}}]}"#.to_string()),
        (920, r#"{"choices":[{"index":0,"delta":{"content":" answer"},"finish_reason":"stop"}]}"#.to_string()),
        (921, r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}"#.to_string()),
        (922, "[DONE]".to_string()),
    ]
}

#[test]
fn b02_reasoning_tokens_count_and_ttfo() {
    for field in ["reasoning_content", "reasoning"] {
        let f = f02(field);
        let evs: Vec<(u64, &str)> = f.iter().map(|(t, s)| (*t, s.as_str())).collect();
        let o = run(&evs, Api::Chat, Compat::Servebench);
        assert!(o.success, "{field}");
        assert_eq!(o.ttft_ms, Some(50.0), "{field}");
        assert_eq!(o.ttfo_ms, Some(900.0), "{field}");
        assert_eq!(o.e2el_ms, Some(920.0), "{field}");
        assert_eq!(tpot(&o), 217.5, "{field}");
        assert_eq!(itl_ms(&o), vec![20.0, 20.0, 810.0, 20.0], "{field}");
        assert_eq!(
            o.output_tokens, 5,
            "{field}: reasoning counted once, from usage"
        );
    }
}

#[test]
fn b02c_reasoning_only_stream_is_success_without_ttfo() {
    let evs: &[(u64, &str)] = &[
        (
            50,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Okay"}}]}"#,
        ),
        (
            70,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":" so"}}]}"#,
        ),
        (
            90,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":" yes"},"finish_reason":"length"}]}"#,
        ),
        (
            91,
            r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23}}"#,
        ),
        (92, "[DONE]"),
    ];
    let o = run(evs, Api::Chat, Compat::Servebench);
    assert!(o.success);
    assert_eq!(o.ttft_ms, Some(50.0));
    assert_eq!(o.ttfo_ms, None);
}

const F03: &[(u64, &str)] = &[
    (
        100,
        r#"{"choices":[{"index":0,"text":"The","finish_reason":null}]}"#,
    ),
    (
        120,
        r#"{"choices":[{"index":0,"text":" cat","finish_reason":null}]}"#,
    ),
    (
        140,
        r#"{"choices":[{"index":0,"text":" sat","finish_reason":"stop"}]}"#,
    ),
    (
        141,
        r#"{"choices":[{"index":0,"text":"","finish_reason":null}],"usage":{"prompt_tokens":8,"completion_tokens":3,"total_tokens":11}}"#,
    ),
    (142, "[DONE]"),
];

#[test]
fn b03_usage_on_chunk_with_empty_text_choice() {
    let o = run(F03, Api::Completions, Compat::Servebench);
    assert_eq!(o.output_tokens, 3, "never the requested 128");
    assert_eq!(o.output_source, OutputSource::Usage);
    assert_eq!(tpot(&o), 20.0);
    assert_eq!(o.e2el_ms, Some(140.0));
    assert_eq!(itl_ms(&o), vec![20.0, 20.0]);
    // InferenceX reads usage only from chunks without choices: 0 output tokens here
    let ix = run(F03, Api::Completions, Compat::InferenceX);
    assert_eq!(ix.output_tokens, 0);
    assert_eq!(ix.output_source, OutputSource::None);
}

#[test]
fn b04_no_usage_counts_chunks_and_warns() {
    let evs: &[(u64, &str)] = &[
        (100, r#"{"choices":[{"index":0,"delta":{"content":"w"}}]}"#),
        (120, r#"{"choices":[{"index":0,"delta":{"content":"w"}}]}"#),
        (140, r#"{"choices":[{"index":0,"delta":{"content":"w"}}]}"#),
        (160, r#"{"choices":[{"index":0,"delta":{"content":"w"}}]}"#),
        (
            180,
            r#"{"choices":[{"index":0,"delta":{"content":"w"},"finish_reason":"stop"}]}"#,
        ),
        (181, "[DONE]"),
    ];
    let o = run(evs, Api::Chat, Compat::Servebench);
    assert_eq!(
        (o.output_tokens, o.output_source),
        (5, OutputSource::Chunks)
    );
    assert_eq!(tpot(&o), 20.0);
    assert!(o.warnings.contains(&"usage_missing".to_string()));
}

#[test]
fn b05a_multi_token_chunks_from_continuous_usage() {
    let evs: &[(u64, &str)] = &[
        (
            100,
            r#"{"choices":[{"index":0,"delta":{"content":"A"}}],"usage":{"prompt_tokens":4,"completion_tokens":1}}"#,
        ),
        (
            140,
            r#"{"choices":[{"index":0,"delta":{"content":"BCDE"}}],"usage":{"prompt_tokens":4,"completion_tokens":5}}"#,
        ),
        (
            150,
            r#"{"choices":[{"index":0,"delta":{"content":"F"}}],"usage":{"prompt_tokens":4,"completion_tokens":6}}"#,
        ),
        (
            190,
            r#"{"choices":[{"index":0,"delta":{"content":"GHIJ"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":10}}"#,
        ),
        (
            191,
            r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":10}}"#,
        ),
        (192, "[DONE]"),
    ];
    let o = run(evs, Api::Chat, Compat::Servebench);
    assert_eq!(o.output_tokens, 10);
    assert_eq!(tpot(&o), 10.0);
    assert_eq!(itl_ms(&o), vec![40.0, 10.0, 40.0]);
    assert_eq!(o.tokens_per_chunk, Some(vec![1, 4, 1, 4]));
}

fn f07b_bytes(crlf: bool) -> Vec<u8> {
    let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"héllo\"}}]}\n\n\
: ping\n\n\
data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" wörld\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\n\
data: [DONE]\n\n";
    if crlf {
        s.replace('\n', "\r\n").into_bytes()
    } else {
        s.as_bytes().to_vec()
    }
}

fn parse_reads(reads: &[&[u8]]) -> (servebench_client::StreamState, StreamOutcome) {
    let st = parse_stream(
        reads.iter().enumerate().map(|(i, b)| (*b, i as u64)),
        Api::Chat,
        Compat::Servebench,
        true,
    );
    let o = st.outcome(0, None);
    (st, o)
}

#[test]
fn b07b_every_delivery_pattern_gives_identical_results() {
    let lf = f07b_bytes(false);
    let crlf = f07b_bytes(true);
    let e_pos = lf.windows(2).position(|w| w == [0xC3, 0xA9]).unwrap();
    let second_event = lf.windows(6).position(|w| w == b"data:{").unwrap();
    let third_event_end = {
        let third = lf[second_event + 1..]
            .windows(6)
            .position(|w| w == b"data: ")
            .unwrap()
            + second_event
            + 1;
        third + lf[third..].windows(2).position(|w| w == b"\n\n").unwrap() + 2
    };
    let patterns: Vec<(&str, Vec<&[u8]>)> = vec![
        ("1 byte per read", lf.chunks(1).collect()),
        ("split é", vec![&lf[..e_pos + 1], &lf[e_pos + 1..]]),
        (
            "events 2 and 3 in one read",
            vec![
                &lf[..second_event],
                &lf[second_event..third_event_end],
                &lf[third_event_end..],
            ],
        ),
        ("CRLF", vec![&crlf[..]]),
        ("CRLF 1 byte per read", crlf.chunks(1).collect()),
    ];
    for (name, reads) in patterns {
        let (st, o) = parse_reads(&reads);
        assert_eq!(o.token_events, 3, "{name}");
        assert_eq!(st.text.as_deref(), Some("héllo wörld!"), "{name}");
        assert_eq!(st.comments, 1, "{name}");
        assert!(st.done, "{name}: [DONE] seen");
        assert_eq!(st.parse_errors, 0, "{name}");
        assert_eq!(
            (o.output_tokens, o.output_source),
            (3, OutputSource::Usage),
            "{name}"
        );
        assert!(o.success, "{name}");
    }
}

#[test]
fn b07a_200kb_line() {
    let content = "x".repeat(200_000);
    let mut s = format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}},\"finish_reason\":\"stop\"}}]}}\n\n").into_bytes();
    s.extend_from_slice(b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n");
    // delivered in 64 KiB reads, like a socket buffer would
    let reads: Vec<&[u8]> = s.chunks(65536).collect();
    let (st, o) = parse_reads(&reads);
    assert!(o.success);
    assert_eq!(o.token_events, 1);
    assert_eq!(st.text.as_ref().unwrap().len(), 200_000);
    assert_eq!(st.parse_errors, 0);
}

#[test]
fn b07b_inferencex_compat_fails_on_comment() {
    let lf = f07b_bytes(false);
    let st = parse_stream([(&lf[..], 0u64)], Api::Chat, Compat::InferenceX, false);
    let o = st.outcome(0, None);
    assert!(!o.success, "InferenceX json.loads(': ping') raises");
    assert_eq!(
        o.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("exception")
    );
}

#[test]
fn b08_failure_categories() {
    // B: role chunk + finish, no token
    let b = run(
        &[
            (
                30,
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            ),
            (
                31,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            ),
            (32, "[DONE]"),
        ],
        Api::Chat,
        Compat::Servebench,
    );
    assert_eq!(
        (b.success, b.failure.as_ref().map(|f| f.as_str()).as_deref()),
        (false, Some("no_token"))
    );
    // C: HTTP 200 whose only event is an error object
    let c = run(
        &[
            (
                40,
                r#"{"error":{"message":"The input (128038 tokens) is longer than the model's context length (40960 tokens).","type":"BadRequestError","code":400}}"#,
            ),
            (41, "[DONE]"),
        ],
        Api::Chat,
        Compat::Servebench,
    );
    assert_eq!(
        c.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("stream_error:400")
    );
    assert!(c
        .error
        .as_deref()
        .unwrap()
        .contains("longer than the model's context length"));
    // D: two tokens then an error
    let d = run(
        &[
            (100, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
            (120, r#"{"choices":[{"index":0,"delta":{"content":"b"}}]}"#),
            (
                130,
                r#"{"error":{"message":"Unexpected token 200002 while expecting start token 200006","type":"InternalServerError","code":500}}"#,
            ),
            (131, "[DONE]"),
        ],
        Api::Chat,
        Compat::Servebench,
    );
    assert_eq!(
        d.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("stream_error_after_tokens")
    );
    assert_eq!(d.token_events, 2);
    assert!(d
        .error
        .as_deref()
        .unwrap()
        .contains("Unexpected token 200002"));
}

#[test]
fn malformed_event_fails_request() {
    let o = run(
        &[
            (10, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
            (20, "{not json"),
        ],
        Api::Chat,
        Compat::Servebench,
    );
    assert_eq!(
        o.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("bad_event")
    );
}
