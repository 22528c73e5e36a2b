//! Cases through the real transport: a scripted mock server writes the fixtures' bytes at the
//! fixtures' times; the live client (own HTTP/1.1 transport, driver, records) measures them.
//! The timing fixtures (B01–B04, the timeout's partial measurements) run on tokio's paused clock
//! over the mock's in-memory connections: every write lands at exactly its scripted time, so
//! their timings are asserted exactly, once, with no retry. The rest (pooling, open loop,
//! connect failure, Ctrl-C, byte-by-byte framing) go over TCP on the wall clock.

use std::sync::Arc;
use std::time::Duration;

use servebench_client::mock::{event, Captured, MockServer, Reply, Step};
use servebench_client::{
    run_phase, Api, BodyBuilder, Cancel, CancelToken, ClientCtx, Clock, Compat, Endpoint, Engine,
    Load, OutputSource, Phase, RequestRecord,
};
use servebench_workload::{DatasetSource, Prompt, RequestSpec};

/// `ms` is exactly `want` (to 1 µs): a paused-clock measurement.
fn exact(ms: Option<f64>, want: f64) -> bool {
    ms.is_some_and(|a| (a - want).abs() < 1e-3)
}

/// Sends `spec` alone over `srv`'s in-memory connections on the test's paused clock.
async fn run_paused(mut c: ClientCtx, srv: &MockServer, spec: RequestSpec) -> RequestRecord {
    c.endpoint = c.endpoint.with_memory(srv.memory_dial());
    run(c, vec![spec], 1).await.remove(0)
}

fn spec(id: u64, max_tokens: u32) -> RequestSpec {
    RequestSpec {
        id,
        session: None,
        prompt: Prompt::Text(Arc::from("hello world")),
        prompt_tokens: Some(2),
        max_tokens,
        delay: Duration::ZERO,
    }
}

fn ctx(url: &str, api: Api, engine: Engine, compat: Compat) -> ClientCtx {
    ClientCtx {
        endpoint: Endpoint::parse(url).unwrap(),
        builder: BodyBuilder::new("m", api, engine, compat, false),
        compat,
        new_connection_per_request: false,
        timeout: Duration::from_secs(10),
        clock: Clock::start(),
        capture_text: true,
        api_key: None,
    }
}

async fn run(ctx: ClientCtx, specs: Vec<RequestSpec>, conc: usize) -> Vec<RequestRecord> {
    let res = run_phase(
        ctx,
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Closed { concurrency: conc },
        Arc::new(|_: &RequestRecord| {}),
        Cancel::never(),
    )
    .await;
    let mut r = res.records;
    r.sort_by_key(|r| r.id);
    r
}

fn stream(steps: Vec<Step>) -> Reply {
    Reply::Stream { status: 200, steps }
}

fn f01() -> Vec<Step> {
    vec![
        event(
            5,
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        ),
        event(
            214,
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#,
        ),
        event(
            234,
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}"#,
        ),
        event(
            254,
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}"#,
        ),
        event(
            300,
            r#"{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
        ),
        event(301, "[DONE]"),
    ]
}

#[tokio::test(start_paused = true)]
async fn b01_live_timing() {
    let srv = MockServer::start(Arc::new(|_: &Captured| stream(f01())), false)
        .await
        .unwrap();
    let c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench);
    let r = &run_paused(c, &srv, spec(0, 3)).await;
    assert!(r.success, "{r:?}");
    assert!(exact(r.ttft_ms, 214.0), "ttft {:?}", r.ttft_ms);
    assert!(exact(r.e2el_ms, 254.0), "e2el {:?}", r.e2el_ms);
    assert!(exact(r.tpot_ms, 20.0), "tpot {:?}", r.tpot_ms);
    assert_eq!(r.itl_ms.len(), 2);
    assert!(
        r.itl_ms.iter().all(|&g| exact(Some(f64::from(g)), 20.0)),
        "{:?}",
        r.itl_ms
    );
    assert_eq!(r.output_tokens, 3);
    assert_eq!(r.response_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(r.text.as_deref(), Some("Hello world!"));
    // InferenceX compat on the same bytes: TTFT at the role chunk, E2EL at the usage chunk
    let c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::InferenceX);
    let ix = run_paused(c, &srv, spec(0, 3)).await;
    assert!(exact(ix.ttft_ms, 5.0), "{:?}", ix.ttft_ms);
    assert!(exact(ix.e2el_ms, 300.0), "{:?}", ix.e2el_ms);
}

#[tokio::test(start_paused = true)]
async fn b02_live_reasoning() {
    let steps = vec![
        event(
            50,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Okay"}}]}"#,
        ),
        event(
            70,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":" so"}}]}"#,
        ),
        event(
            90,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":" yes"}}]}"#,
        ),
        event(
            900,
            r#"{"choices":[{"index":0,"delta":{"content":"The"}}]}"#,
        ),
        event(
            920,
            r#"{"choices":[{"index":0,"delta":{"content":" answer"},"finish_reason":"stop"}]}"#,
        ),
        event(
            921,
            r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}"#,
        ),
        event(922, "[DONE]"),
    ];
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(steps.clone())), false)
        .await
        .unwrap();
    let c = ctx(
        &srv.base_url(),
        Api::Chat,
        Engine::Sglang,
        Compat::Servebench,
    );
    let r = &run_paused(c, &srv, spec(0, 5)).await;
    assert!(
        exact(r.ttft_ms, 50.0) && exact(r.ttfo_ms, 900.0) && exact(r.e2el_ms, 920.0),
        "{r:?}"
    );
    assert!(exact(r.tpot_ms, 217.5), "{:?}", r.tpot_ms);
    assert_eq!(r.output_tokens, 5);
}

#[tokio::test(start_paused = true)]
async fn b03_b04_live_bodies_and_counts() {
    // B03: completions, usage on a chunk with an empty-text choice, max_tokens 128
    let f03 = vec![
        event(
            100,
            r#"{"choices":[{"index":0,"text":"The","finish_reason":null}]}"#,
        ),
        event(
            120,
            r#"{"choices":[{"index":0,"text":" cat","finish_reason":null}]}"#,
        ),
        event(
            140,
            r#"{"choices":[{"index":0,"text":" sat","finish_reason":"stop"}]}"#,
        ),
        event(
            141,
            r#"{"choices":[{"index":0,"text":"","finish_reason":null}],"usage":{"prompt_tokens":8,"completion_tokens":3,"total_tokens":11}}"#,
        ),
        event(142, "[DONE]"),
    ];
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(f03.clone())), false)
        .await
        .unwrap();
    let c = ctx(
        &srv.base_url(),
        Api::Completions,
        Engine::Sglang,
        Compat::Servebench,
    );
    let r = &run_paused(c, &srv, spec(0, 128)).await;
    let body = srv.captured()[0].json();
    assert_eq!(srv.captured()[0].path, "/v1/completions");
    assert_eq!(body["max_tokens"], 128);
    assert_eq!(body["stream"], true);
    assert_eq!(r.output_tokens, 3);
    assert!(exact(r.tpot_ms, 20.0), "{:?}", r.tpot_ms);
    assert!(exact(r.e2el_ms, 140.0), "{:?}", r.e2el_ms);
    assert!(
        r.warnings.contains(&"output_tokens_mismatch".to_string()),
        "3 of 128 under ignore_eos is flagged"
    );

    // B04: chat, the server never sends usage
    let f04: Vec<Step> = [100, 120, 140, 160]
        .iter()
        .map(|&t| event(t, r#"{"choices":[{"index":0,"delta":{"content":"w"}}]}"#))
        .chain([
            event(
                180,
                r#"{"choices":[{"index":0,"delta":{"content":"w"},"finish_reason":"stop"}]}"#,
            ),
            event(181, "[DONE]"),
        ])
        .collect();
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(f04.clone())), false)
        .await
        .unwrap();
    let c = ctx(
        &srv.base_url(),
        Api::Chat,
        Engine::Openai,
        Compat::Servebench,
    );
    let r = &run_paused(c, &srv, spec(0, 256)).await;
    let body = srv.captured()[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (5, OutputSource::Chunks)
    );
    assert!(exact(r.tpot_ms, 20.0), "{:?}", r.tpot_ms);
    assert!(r.warnings.contains(&"usage_missing".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b07_live_byte_by_byte_with_crlf_and_comment() {
    let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"héllo\"}}]}\r\n\r\n: ping\r\n\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" wörld\"}}]}\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\r\n\r\ndata: [DONE]\r\n\r\n";
    let steps: Vec<Step> = s
        .as_bytes()
        .iter()
        .enumerate()
        .map(|(i, b)| Step {
            at_ms: i as u64 / 64,
            bytes: vec![*b],
        })
        .collect();
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(steps.clone())), false)
        .await
        .unwrap();
    let r = &run(
        ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench),
        vec![spec(0, 3)],
        1,
    )
    .await[0];
    assert!(r.success, "{r:?}");
    assert_eq!(r.text.as_deref(), Some("héllo wörld!"));
    assert_eq!((r.token_events, r.output_tokens), (3, 3));

    // 200 KB line in one write
    let big = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}},\"finish_reason\":\"stop\"}}]}}\n\n",
        "x".repeat(200_000)
    );
    let steps = vec![
        Step {
            at_ms: 10,
            bytes: big.into_bytes(),
        },
        event(
            11,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#,
        ),
        event(12, "[DONE]"),
    ];
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(steps.clone())), false)
        .await
        .unwrap();
    let r = &run(
        ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench),
        vec![spec(0, 1)],
        1,
    )
    .await[0];
    assert!(r.success, "{:?}", r.error);
    assert_eq!(r.text.as_ref().map(|t| t.len()), Some(200_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b08_live_http_503_and_stream_errors() {
    let srv = MockServer::start(
        Arc::new(|c: &Captured| {
            let content = c.json()["messages"][0]["content"].as_str().unwrap_or_default().to_string();
            match content.as_str() {
                "E" => Reply::Body {
                    status: 503,
                    body: br#"{"error":{"message":"Service Unavailable","code":503}}"#.to_vec(),
                    content_type: "application/json",
                },
                "C" => stream(vec![
                    event(40, r#"{"error":{"message":"The input (128038 tokens) is longer than the model's context length (40960 tokens).","type":"BadRequestError","code":400}}"#),
                    event(41, "[DONE]"),
                ]),
                _ => stream(vec![
                    event(120, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
                    event(140, r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#),
                    event(141, "[DONE]"),
                ]),
            }
        }),
        false,
    )
    .await
    .unwrap();
    let mk = |id: u64, text: &str| RequestSpec {
        prompt: Prompt::Text(Arc::from(text)),
        ..spec(id, 1)
    };
    let recs = run(
        ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench),
        vec![mk(0, "A"), mk(1, "C"), mk(2, "E")],
        1,
    )
    .await;
    assert!(recs[0].success);
    assert_eq!(
        recs[1].failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("stream_error:400")
    );
    assert_eq!(
        recs[2].failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("http_503")
    );
    assert_eq!(recs[2].http_status, Some(503));
    assert!(
        recs[2]
            .error
            .as_deref()
            .unwrap()
            .contains("Service Unavailable"),
        "error text kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b12_chat_cap_fields_per_profile() {
    // honours only max_tokens (default 16 when absent)
    let srv = MockServer::start(
        Arc::new(|c: &Captured| {
            let n = c.json()["max_tokens"].as_u64().unwrap_or(16);
            let mut steps: Vec<Step> = (0..n)
                .map(|i| event(1 + i / 8, r#"{"choices":[{"index":0,"delta":{"content":"t"}}]}"#))
                .collect();
            steps.push(event(20, &format!(r#"{{"choices":[],"usage":{{"prompt_tokens":2,"completion_tokens":{n},"total_tokens":{}}}}}"#, n + 2)));
            steps.push(event(20, "[DONE]"));
            stream(steps)
        }),
        false,
    )
    .await
    .unwrap();
    let r = &run(
        ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench),
        vec![spec(0, 64)],
        1,
    )
    .await[0];
    let b = srv.captured()[0].json();
    assert_eq!(
        (
            b["max_tokens"].as_u64(),
            b["max_completion_tokens"].as_u64()
        ),
        (Some(64), Some(64))
    );
    assert_eq!(r.output_tokens, 64);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);

    let r = &run(
        ctx(
            &srv.base_url(),
            Api::Chat,
            Engine::Openai,
            Compat::Servebench,
        ),
        vec![spec(0, 64)],
        1,
    )
    .await[0];
    let b = srv.captured()[1].json();
    assert!(b.get("max_tokens").is_none());
    assert_eq!(b["max_completion_tokens"], 64);
    assert_eq!(
        r.output_tokens, 16,
        "OSL reported as the server produced it"
    );
    assert!(
        r.warnings
            .contains(&"output_tokens_below_request".to_string()),
        "{:?}",
        r.warnings
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_closing_keepalive_connections_is_not_a_failure() {
    // llama.cpp: answers with keep-alive headers, then closes after every streamed response
    let srv = MockServer::start(Arc::new(|_: &Captured| stream(f01())), true)
        .await
        .unwrap();
    let specs: Vec<RequestSpec> = (0..6).map(|i| spec(i, 3)).collect();
    let recs = run(
        ctx(
            &srv.base_url(),
            Api::Chat,
            Engine::LlamaCpp,
            Compat::Servebench,
        ),
        specs,
        2,
    )
    .await;
    assert_eq!(recs.len(), 6);
    assert!(
        recs.iter().all(|r| r.success),
        "{:?}",
        recs.iter().map(|r| &r.failure).collect::<Vec<_>>()
    );
    assert_eq!(
        srv.connections(),
        6,
        "one connection per request, re-dialled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_pool_reuses_connections_and_new_conn_mode_does_not() {
    let srv = MockServer::start(Arc::new(|_: &Captured| stream(f01())), false)
        .await
        .unwrap();
    let specs: Vec<RequestSpec> = (0..8).map(|i| spec(i, 3)).collect();
    let recs = run(
        ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench),
        specs.clone(),
        2,
    )
    .await;
    assert!(recs.iter().all(|r| r.success));
    assert_eq!(srv.connections(), 2, "pool sized to the concurrency");
    let mut c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench);
    c.new_connection_per_request = true;
    let recs = run(c, specs, 2).await;
    assert!(recs.iter().all(|r| r.success && r.connect_ms.is_some()));
    assert_eq!(srv.connections(), 2 + 8);
}

/// A reply that sends its first token at 50 ms and its end at 5 s.
fn slow() -> Vec<Step> {
    vec![
        event(50, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
        event(5000, "[DONE]"),
    ]
}

#[tokio::test(start_paused = true)]
async fn timeout_keeps_the_partial_measurements() {
    let srv = MockServer::start(Arc::new(|_: &Captured| stream(slow())), false)
        .await
        .unwrap();
    let mut c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench);
    c.timeout = Duration::from_millis(300);
    let r = &run_paused(c, &srv, spec(0, 1)).await;
    assert_eq!(
        r.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("timeout")
    );
    assert!(
        exact(r.ttft_ms, 50.0),
        "partial measurements kept: {:?}",
        r.ttft_ms
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_failure_and_cancel() {
    let srv = MockServer::start(Arc::new(|_: &Captured| stream(slow())), false)
        .await
        .unwrap();

    // nothing listens on this port
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let r = &run(
        ctx(&dead, Api::Chat, Engine::Vllm, Compat::Servebench),
        vec![spec(0, 1)],
        1,
    )
    .await[0];
    assert_eq!(
        r.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("connect")
    );
    assert!(r.error.as_deref().unwrap().contains(&dead), "{:?}", r.error);

    // Ctrl-C: in-flight requests are recorded as cancelled, no new ones start
    let cancel = CancelToken::new();
    let h = cancel.clone();
    let c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench);
    let specs: Vec<RequestSpec> = (0..10).map(|i| spec(i, 1)).collect();
    let before = srv.captured().len();
    let task = tokio::spawn(run_phase(
        c,
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Closed { concurrency: 2 },
        Arc::new(|_: &RequestRecord| {}),
        cancel,
    ));
    // Ctrl-C once both lanes' requests reached the server (each then waits 5 s for its [DONE])
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while srv.captured().len() < before + 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "requests never arrived"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    h.cancel();
    let res = tokio::time::timeout(Duration::from_secs(3), task)
        .await
        .expect("stops promptly")
        .unwrap();
    assert!(res.cancelled);
    assert_eq!(res.records.len(), 2);
    assert!(res
        .records
        .iter()
        .all(|r| r.failure.as_ref().map(|f| f.as_str()).as_deref() == Some("cancelled")));
}

#[tokio::test(start_paused = true)]
async fn open_loop_rate_and_queue_time() {
    let quick = vec![
        event(1, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
        event(
            2,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#,
        ),
    ];
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(quick.clone())), false)
        .await
        .unwrap();
    let specs: Vec<RequestSpec> = (0..40).map(|i| spec(i, 1)).collect();
    let mut c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench);
    c.endpoint = c.endpoint.with_memory(srv.memory_dial());
    let res = run_phase(
        c,
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Open {
            rate: 100.0,
            burstiness: 1.0,
            max_concurrency: None,
            seed: 0,
        },
        Arc::new(|_: &RequestRecord| {}),
        Cancel::never(),
    )
    .await;
    assert_eq!(res.records.len(), 40);
    assert!(res.records.iter().all(|r| r.success));
    let span = (res.records.iter().map(|r| r.scheduled_ns).max().unwrap()
        - res.records.iter().map(|r| r.scheduled_ns).min().unwrap()) as f64
        / 1e9;
    // 39 exponential gaps at 100/s: mean 0.39 s (seeded: the same span every run)
    assert!((0.15..1.0).contains(&span), "arrival span {span}");
    // uncapped on the paused clock: every request starts at its scheduled time, rounded up to
    // the timer's 1 ms resolution (tokio's timer wheel), never later
    assert!(
        res.records.iter().all(|r| (0.0..1.0).contains(&r.queue_ms)),
        "{:?}",
        res.records.iter().map(|r| r.queue_ms).collect::<Vec<_>>()
    );

    // capped at 1 lane with arrivals faster than service: the wait shows in queue_ms
    let slow = vec![event(
        30,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
    )];
    let srv = MockServer::start(Arc::new(move |_: &Captured| stream(slow.clone())), false)
        .await
        .unwrap();
    let specs: Vec<RequestSpec> = (0..6).map(|i| spec(i, 1)).collect();
    let mut c = ctx(&srv.base_url(), Api::Chat, Engine::Vllm, Compat::Servebench);
    c.endpoint = c.endpoint.with_memory(srv.memory_dial());
    let res = run_phase(
        c,
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Open {
            rate: 1000.0,
            burstiness: 1.0,
            max_concurrency: Some(1),
            seed: 0,
        },
        Arc::new(|_: &RequestRecord| {}),
        Cancel::never(),
    )
    .await;
    assert_eq!(srv.peak_open(), 1);
    let max_q = res.records.iter().map(|r| r.queue_ms).fold(0.0, f64::max);
    assert!(
        max_q > 100.0,
        "coordinated omission visible: max queue {max_q} ms"
    );
}

/// A raw HTTP/1.1 server for transport framing: every request (on any connection) is answered
/// with `pieces` written one by one 3 ms apart; the connection is closed after each response
/// when `close` is set. Returns the base URL and the accepted-connection counter.
async fn raw_server(
    pieces: Vec<Vec<u8>>,
    close: bool,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let conns = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = conns.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            c2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let pieces = pieces.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                loop {
                    // one request: head up to the blank line, then Content-Length bytes
                    let (head_end, len) = loop {
                        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..p]).to_lowercase();
                            let len = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length: "))
                                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                            break (p + 4, len);
                        }
                        match s.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                    };
                    while buf.len() < head_end + len {
                        match s.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                    }
                    buf.drain(..head_end + len);
                    for p in &pieces {
                        if s.write_all(p).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(3)).await;
                    }
                    if close {
                        let _ = s.shutdown().await;
                        return;
                    }
                }
            });
        }
    });
    (url, conns)
}

const SSE_BODY: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";

fn split_every(b: &[u8], n: usize) -> Vec<Vec<u8>> {
    b.chunks(n).map(<[u8]>::to_vec).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_framings_content_length_chunked_eof_and_error_bodies() {
    let ok = |recs: &[RequestRecord], what: &str| {
        for r in recs {
            assert!(r.success, "{what}: {:?} {:?}", r.failure, r.error);
            assert_eq!(r.output_tokens, 2, "{what}");
            assert_eq!(r.token_events, 2, "{what}");
            assert_eq!(r.text.as_deref(), Some("ab"), "{what}");
        }
    };
    let c = |url: &str| ctx(url, Api::Chat, Engine::Vllm, Compat::Servebench);

    // Content-Length, keep-alive, head and body split into 7-byte writes: one connection reused
    let mut wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n",
        SSE_BODY.len()
    )
    .into_bytes();
    wire.extend_from_slice(SSE_BODY.as_bytes());
    let (url, conns) = raw_server(split_every(&wire, 7), false).await;
    let recs = run(c(&url), (0..3).map(|i| spec(i, 2)).collect(), 1).await;
    ok(&recs, "content-length");
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(recs.iter().all(|r| r.redials == 0));

    // chunked with upper-case sizes, extensions and trailers, split into 5-byte writes
    let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for part in SSE_BODY.as_bytes().chunks(40) {
        wire.extend_from_slice(format!("{:X};ext=1\r\n", part.len()).as_bytes());
        wire.extend_from_slice(part);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\nX-Trailer: yes\r\n\r\n");
    let (url, conns) = raw_server(split_every(&wire, 5), false).await;
    let recs = run(c(&url), (0..3).map(|i| spec(i, 2)).collect(), 1).await;
    ok(&recs, "chunked");
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 1);

    // no length: the body ends at EOF; never reused, never a failure
    let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
    wire.extend_from_slice(SSE_BODY.as_bytes());
    let (url, conns) = raw_server(split_every(&wire, 64), true).await;
    let recs = run(c(&url), (0..3).map(|i| spec(i, 2)).collect(), 1).await;
    ok(&recs, "until EOF");
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 3);

    // chunked body cut by the server: a transport failure with the events so far kept
    let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    wire.extend_from_slice(format!("{:x}\r\n", SSE_BODY.len()).as_bytes());
    wire.extend_from_slice(&SSE_BODY.as_bytes()[..60]);
    let (url, _) = raw_server(vec![wire], true).await;
    let r = &run(c(&url), vec![spec(0, 2)], 1).await[0];
    assert!(!r.success);
    assert!(
        r.error
            .as_deref()
            .unwrap_or("")
            .contains("closed before the response body ended"),
        "{:?} {:?}",
        r.failure,
        r.error
    );
    assert_eq!(r.token_events, 1);

    // an error status with a chunked JSON body: http_400 carrying the body text
    let msg = r#"{"error":{"message":"max_tokens is too large","code":400}}"#;
    let wire = format!(
        "HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{msg}\r\n0\r\n\r\n",
        msg.len()
    );
    let (url, _) = raw_server(split_every(wire.as_bytes(), 9), false).await;
    let r = &run(c(&url), vec![spec(0, 2)], 1).await[0];
    assert_eq!(
        r.failure.as_ref().map(|f| f.as_str()).as_deref(),
        Some("http_400")
    );
    assert_eq!(r.http_status, Some(400));
    assert_eq!(r.error.as_deref(), Some(msg));
}
