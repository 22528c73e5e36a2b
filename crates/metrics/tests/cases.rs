//! Metrics cases: B05 (ITL modes, pooled percentiles), B08 (failures excluded, TTFT median),
//! B10 (pool sized to the concurrency, server-side peak), the §2.6 worked example, the result
//! JSON keys (§1.7) and the InferenceX compat rules.

use std::sync::Arc;
use std::time::Duration;

use servebench_client::mock::{event, Captured, MockServer, Reply, Step};
use servebench_client::{
    run_phase, Api, BodyBuilder, Cancel, ClientCtx, Clock, Compat, Endpoint, Engine, Load,
    OutputSource, Phase, RequestRecord,
};
use servebench_metrics::{
    agg_row, compute, result_doc, AggExtra, Identity, ItlMode, PointOptions, PointStatus,
    PromptCount, ResultSetup, RunInfo,
};
use servebench_workload::{DatasetSource, Prompt, RequestSpec};

fn rec(id: u64, token_times_ms: &[f64], out: u64) -> RequestRecord {
    let first = token_times_ms.first().copied();
    let last = token_times_ms.last().copied();
    RequestRecord {
        id,
        phase: Phase::Measured,
        session: None,
        response_id: None,
        scheduled_ns: 0,
        t0_ns: 0,
        end_ns: (last.unwrap_or(0.0) * 1e6) as u64 + 1_000_000,
        queue_ms: 0.0,
        connect_ms: None,
        redials: 0,
        ttft_ms: first,
        ttfo_ms: first,
        e2el_ms: last,
        tpot_ms: None,
        itl_ms: token_times_ms
            .windows(2)
            .map(|w| (w[1] - w[0]) as f32)
            .collect(),
        tokens_per_chunk: None,
        token_events: token_times_ms.len() as u32,
        output_tokens: out,
        output_tokens_source: OutputSource::Usage,
        prompt_tokens_client: Some(100),
        prompt_tokens_server: Some(101),
        prompt_tokens_cached: None,
        requested_output_tokens: out as u32,
        http_status: Some(200),
        success: !token_times_ms.is_empty(),
        failure: None,
        error: None,
        warnings: vec![],
        phases: None,
        text: None,
    }
}

fn opts(itl: ItlMode) -> PointOptions {
    PointOptions {
        compat: Compat::Servebench,
        itl_mode: itl,
        phase_window_ns: (0, 1_000_000_000),
        max_failed_fraction: 0.05,
        cancelled: false,
        prompt_count: PromptCount::Client,
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

#[test]
fn b05a_chunk_and_token_itl() {
    let mut r = rec(0, &[100.0, 140.0, 150.0, 190.0], 10);
    r.tokens_per_chunk = Some(vec![1, 4, 1, 4]);
    let chunk = compute(std::slice::from_ref(&r), &opts(ItlMode::Chunk));
    assert!(close(chunk.tpot.mean, 10.0));
    assert_eq!(chunk.itl.n, 3);
    assert!(close(chunk.itl.mean, 30.0));
    let tok = compute(&[r], &opts(ItlMode::Token));
    assert_eq!(tok.itl.n, 9);
    assert!(close(tok.itl.mean, 10.0), "token ITL mean equals TPOT");
    assert!(close(tok.itl.max, 10.0));
    assert_eq!(tok.itl_mode.as_str(), "token");
}

#[test]
fn b05b_pooled_itl_not_per_request_average() {
    let r1 = rec(0, &[100.0, 110.0, 120.0, 130.0, 140.0, 340.0], 6);
    let r2 = rec(1, &[100.0, 110.0, 120.0, 130.0, 140.0, 150.0], 6);
    let m = compute(&[r1, r2], &opts(ItlMode::Chunk));
    assert_eq!(m.itl.n, 10);
    assert!(close(m.itl.mean, 29.0));
    assert!(close(m.itl.median, 10.0));
    assert!(close(m.itl.p90, 29.0));
    assert!(close(m.itl.p99, 182.9));
    assert!(close(m.itl.max, 200.0));
}

#[test]
fn worked_example_2_6() {
    // TP=8, duration 100 s, completed 640, total_input 5,900,000, total_output 590,000
    // → tput_per_gpu 8112.5, output 737.5, input 7375; median_tpot_ms 20 → 0.02 s, intvty 50.
    let mut recs = Vec::new();
    for i in 0..640u64 {
        let mut r = rec(i, &[10.0, 30.0], 2);
        // spread tokens so the sums are exact: 5,900,000 / 640 = 9218.75 in, 921.875 out
        r.prompt_tokens_client = Some(if i < 480 { 9219 } else { 9218 });
        r.output_tokens = if i < 560 { 922 } else { 921 };
        r.t0_ns = 0;
        r.end_ns = 100_000_000_000;
        r.e2el_ms = Some(10.0 + 20.0 * (r.output_tokens - 1) as f64);
        recs.push(r);
    }
    let m = compute(&recs, &opts(ItlMode::Chunk));
    assert_eq!(
        (m.completed, m.total_input_tokens, m.total_output_tokens),
        (640, 5_900_000, 590_000)
    );
    assert!((m.duration_s - 100.0).abs() < 1e-9);
    assert!((m.total_token_throughput - 64_900.0).abs() < 1e-6);
    assert!(close(m.tpot.median, 20.0));
    let id = Identity {
        hw: "b200".into(),
        image: "img".into(),
        model: "m".into(),
        infmax_model_prefix: "m".into(),
        framework: "sglang".into(),
        precision: "fp8".into(),
        spec_decoding: "none".into(),
        disagg: false,
        recipe_fingerprint: None,
        isl: Some(8192),
        osl: Some(1024),
        tp: 8,
        pp: 1,
        dcp_size: 1,
        pcp_size: 1,
        ep: 8,
        dp_attention: true,
        is_multinode: false,
        benchmark_type: Default::default(),
        kv_offloading: Default::default(),
        kv_offload_backend: None,
        allocated_cpu_dram_gb: 0,
    };
    let extra = AggExtra {
        api: "completions".into(),
        engine: "sglang".into(),
        endpoint: "http://x".into(),
        records_file: "records.jsonl".into(),
    };
    let agg = agg_row(&id, Some(64), &m, &extra).to_value();
    assert_eq!(agg["num_gpus"], 8, "EP and DP-attention do not multiply");
    assert!((agg["tput_per_gpu"].as_f64().unwrap() - 8112.5).abs() < 1e-9);
    assert!((agg["output_tput_per_gpu"].as_f64().unwrap() - 737.5).abs() < 1e-9);
    assert!((agg["input_tput_per_gpu"].as_f64().unwrap() - 7375.0).abs() < 1e-9);
    assert!((agg["median_tpot"].as_f64().unwrap() - 0.02).abs() < 1e-12);
    assert!((agg["median_intvty"].as_f64().unwrap() - 50.0).abs() < 1e-9);
    for k in [
        "mean_ttft",
        "p99.9_e2el",
        "std_intvty",
        "p99_itl",
        "schema_version",
        "point_status",
        "mean_isl_server",
    ] {
        assert!(agg.get(k).is_some(), "agg key {k}");
    }
    assert_eq!(agg["is_multinode"], false);
    assert_eq!(agg["point_status"], "ok");
}

#[test]
fn empty_stats_are_null_and_inferencex_zero() {
    // every request produced one token: TPOT has no samples
    let recs: Vec<RequestRecord> = (0..3).map(|i| rec(i, &[50.0], 1)).collect();
    let m = compute(&recs, &opts(ItlMode::Chunk));
    assert_eq!(m.tpot.n, 0);
    assert_eq!(m.tpot.mean, None);
    let info = RunInfo {
        date: "20260101-000000".into(),
        backend: "vllm".into(),
        model_id: "m".into(),
        tokenizer_id: "t".into(),
        num_prompts: 3,
        request_rate: None,
        burstiness: 1.0,
        max_concurrency: Some(1),
        benchmark_start_time_unix: 0.0,
        benchmark_end_time_unix: 1.0,
    };
    let raw = serde_json::to_value(result_doc(&info, &m, ResultSetup::default())).unwrap();
    assert!(raw["mean_tpot_ms"].is_null());
    assert_eq!(raw["request_rate"], "inf");
    assert!(raw.as_object().unwrap().contains_key("request_goodput:"));
    assert!(raw.as_object().unwrap().contains_key("p99.9_tpot_ms"));
    let keys: Vec<&String> = raw.as_object().unwrap().keys().collect();
    assert_eq!(&keys[..4], &["date", "backend", "model_id", "tokenizer_id"]);
    let mut o = opts(ItlMode::Chunk);
    o.compat = Compat::InferenceX;
    let ix = compute(&recs, &o);
    assert_eq!(
        ix.tpot.mean,
        Some(0.0),
        "InferenceX writes 0 for empty lists"
    );
    assert!(
        (ix.duration_s - 1.0).abs() < 1e-12,
        "InferenceX duration is the driver window"
    );
}

#[test]
fn failure_gate() {
    let mut recs: Vec<RequestRecord> = (0..20).map(|i| rec(i, &[10.0, 20.0], 2)).collect();
    recs[0].success = false;
    recs[0].failure = Some("http_503".into());
    assert_eq!(
        compute(&recs, &opts(ItlMode::Chunk)).point_status,
        PointStatus::Ok,
        "1/20 = 5 % is not above 5 %"
    );
    recs[1].success = false;
    recs[1].failure = Some("no_token".into());
    let m = compute(&recs, &opts(ItlMode::Chunk));
    assert_eq!(m.point_status, PointStatus::Failed);
    assert_eq!(m.failure_reasons.get("http_503"), Some(&1));
    assert_eq!(m.output_lens[0], 0);
    let mut o = opts(ItlMode::Chunk);
    o.cancelled = true;
    assert_eq!(compute(&recs, &o).point_status, PointStatus::Interrupted);
}

// ---- live cases -------------------------------------------------------------------------------

fn spec(id: u64, text: &str, max_tokens: u32) -> RequestSpec {
    RequestSpec {
        id,
        session: None,
        prompt: Prompt::Text(Arc::from(text)),
        prompt_tokens: Some(3),
        max_tokens,
        delay: Duration::ZERO,
    }
}

fn ctx(url: &str) -> ClientCtx {
    ClientCtx {
        endpoint: Endpoint::parse(url).unwrap(),
        builder: BodyBuilder::new("m", Api::Chat, Engine::Vllm, Compat::Servebench, false),
        compat: Compat::Servebench,
        new_connection_per_request: false,
        timeout: Duration::from_secs(20),
        clock: Clock::start(),
        capture_text: false,
        api_key: None,
    }
}

fn stream(steps: Vec<Step>) -> Reply {
    Reply::Stream { status: 200, steps }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b08_five_requests_one_success() {
    let srv = MockServer::start(
        Arc::new(|c: &Captured| {
            let which = c.json()["messages"][0]["content"].as_str().unwrap_or_default().to_string();
            let tok = r#"{"choices":[{"index":0,"delta":{"content":"t"}}]}"#;
            match which.as_str() {
                "A" => stream(vec![
                    event(120, tok),
                    event(140, tok),
                    event(160, tok),
                    event(161, r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}"#),
                    event(162, "[DONE]"),
                ]),
                "B" => stream(vec![
                    event(30, r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#),
                    event(31, r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
                    event(32, "[DONE]"),
                ]),
                "C" => stream(vec![
                    event(40, r#"{"error":{"message":"The input (128038 tokens) is longer than the model's context length (40960 tokens).","type":"BadRequestError","code":400}}"#),
                    event(41, "[DONE]"),
                ]),
                "D" => stream(vec![
                    event(100, tok),
                    event(120, tok),
                    event(121, r#"{"error":{"message":"Unexpected token 200002 while expecting start token 200006","type":"InternalServerError","code":500}}"#),
                    event(122, "[DONE]"),
                ]),
                _ => Reply::Body {
                    status: 503,
                    body: br#"{"error":{"message":"Service Unavailable","code":503}}"#.to_vec(),
                    content_type: "application/json",
                },
            }
        }),
        false,
    )
    .await
    .unwrap();
    let specs: Vec<RequestSpec> = ["A", "B", "C", "D", "E"]
        .iter()
        .enumerate()
        .map(|(i, t)| spec(i as u64, t, 3))
        .collect();
    let res = run_phase(
        ctx(&srv.base_url()),
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Closed { concurrency: 5 },
        Arc::new(|_: &RequestRecord| {}),
        Cancel::never(),
    )
    .await;
    let m = compute(&res.records, &opts(ItlMode::Chunk));
    assert_eq!((m.completed, m.failed), (1, 4));
    let reasons: Vec<(&str, u64)> = m
        .failure_reasons
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("http_503", 1),
            ("no_token", 1),
            ("stream_error:400", 1),
            ("stream_error_after_tokens", 1)
        ]
    );
    // TTFT is A's alone: the server holds A's first token 120 ms after it reads the request,
    // so it cannot come sooner; a loaded 2-core CI machine can only make it later. The wrong
    // answers this separates are 0 (the buggy value), 30 (B's empty delta) and 100 (D's
    // tokens, whose request failed).
    assert!(
        m.ttft.median.is_some_and(|t| (115.0..400.0).contains(&t)),
        "median TTFT {:?}: A's alone, at 120 ms or later (buggy value 0)",
        m.ttft.median
    );
    assert_eq!(
        m.total_output_tokens, 3,
        "D's two tokens are excluded from throughput"
    );
    assert_eq!(m.point_status, PointStatus::Failed);
    let d = res.records.iter().find(|r| r.id == 3).unwrap();
    assert!(
        d.error.as_deref().unwrap().contains("200002"),
        "error text kept for triage"
    );
}

fn hold_stream() -> Reply {
    // first token at +50 ms, stream held open for 1000 ms
    stream(vec![
        event(50, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
        event(
            1000,
            r#"{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}]}"#,
        ),
        event(
            1000,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
        ),
        event(1000, "[DONE]"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b10_pool_sized_to_concurrency() {
    // Run 1: concurrency 256, 512 requests
    let srv = MockServer::start(Arc::new(|_: &Captured| hold_stream()), false)
        .await
        .unwrap();
    let specs: Vec<RequestSpec> = (0..512).map(|i| spec(i, "x", 2)).collect();
    let t = std::time::Instant::now();
    let res = run_phase(
        ctx(&srv.base_url()),
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Closed { concurrency: 256 },
        Arc::new(|_: &RequestRecord| {}),
        Cancel::never(),
    )
    .await;
    let wall = t.elapsed().as_secs_f64();
    let m = compute(&res.records, &opts(ItlMode::Chunk));
    assert_eq!(m.completed, 512);
    assert_eq!(srv.peak_open(), 256, "server-side peak");
    assert_eq!(res.peak_in_flight, 256);
    assert!(
        m.peak_concurrency >= 250,
        "achieved peak from records {}",
        m.peak_concurrency
    );
    let p99 = m.ttft.p99.unwrap();
    assert!(
        p99 < 400.0,
        "TTFT p99 {p99} ms: ~1050 would mean pool queueing"
    );
    assert!(wall < 4.0, "wall {wall} s (ideal ≈ 2.1 s)");

    // Run 2: concurrency 4, 20 requests: peak exactly 4
    let srv = MockServer::start(Arc::new(|_: &Captured| hold_stream()), false)
        .await
        .unwrap();
    let specs: Vec<RequestSpec> = (0..20).map(|i| spec(i, "x", 2)).collect();
    let res = run_phase(
        ctx(&srv.base_url()),
        Phase::Measured,
        Box::new(DatasetSource::new(specs)),
        Load::Closed { concurrency: 4 },
        Arc::new(|_: &RequestRecord| {}),
        Cancel::never(),
    )
    .await;
    assert_eq!(res.records.len(), 20);
    assert_eq!(srv.peak_open(), 4);
    assert_eq!(srv.connections(), 4);
}

#[test]
fn inferencex_zero_output_tokens_is_said_truthfully_and_noted() {
    // llama.cpp: usage on a chunk with choices; InferenceX counting records 0 output tokens
    let mut r = rec(0, &[100.0, 110.0, 120.0], 0);
    r.output_tokens_source = OutputSource::None;
    r.warnings = vec!["usage_missing".into()];
    let o = PointOptions {
        compat: Compat::InferenceX,
        ..opts(ItlMode::Chunk)
    };
    let r1 = RequestRecord { id: 1, ..r.clone() };
    let m = compute(&[r, r1], &o);
    assert_eq!(m.output_throughput, 0.0);
    assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
    assert!(m.notes[0].contains("2 of 2"), "{}", m.notes[0]);
    assert!(m.notes[0].contains("no usage-only chunk"), "{}", m.notes[0]);
    assert!(
        !m.warnings
            .iter()
            .any(|w| w.contains("counted from token events")),
        "the chunks warning is not claimed for source none: {:?}",
        m.warnings
    );
    // servebench counting of a stream without usage: chunks, no note
    let mut r = rec(0, &[100.0, 110.0, 120.0], 3);
    r.output_tokens_source = OutputSource::Chunks;
    r.warnings = vec!["usage_missing".into()];
    let m = compute(&[r], &opts(ItlMode::Chunk));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    assert!(m.warnings[0].contains("counted from token events"));
}

#[test]
fn tpot_zero_from_one_read_is_noted() {
    // every token in one read: TTFT = E2EL
    let rs: Vec<RequestRecord> = (0..3).map(|i| rec(i, &[100.0], 8)).collect();
    let m = compute(&rs, &opts(ItlMode::Chunk));
    assert_eq!(m.tpot.mean, Some(0.0));
    assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
    assert!(m.notes[0].contains("TTFT = E2EL"), "{}", m.notes[0]);
    // a real stream: no note
    let m = compute(&[rec(0, &[100.0, 110.0, 120.0], 3)], &opts(ItlMode::Chunk));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    // one read for some requests only: no note (TPOT is not 0.00)
    let m = compute(
        &[rec(0, &[100.0], 8), rec(1, &[100.0, 110.0, 120.0], 3)],
        &opts(ItlMode::Chunk),
    );
    assert!(m.notes.is_empty(), "{:?}", m.notes);
}
