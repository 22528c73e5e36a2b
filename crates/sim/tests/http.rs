//! The simulator over real HTTP on loopback: every endpoint, the SSE shapes, errors, metrics,
//! queueing, the emission log against client-side timing, answer books and zero-delay mode.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use servebench_sim::{AnswerBook, EngineConfig, SimOptions, SimServer};

/// Serializes the timing-sensitive test with the CPU-heavy one (tests in a binary run in
/// parallel, and this machine has 2 cores).
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn opts(speedup: f64) -> SimOptions {
    SimOptions {
        speedup,
        ..Default::default()
    }
}

/// One SSE event: its `data:` payload and when its terminating blank line arrived.
#[derive(Debug)]
struct Event {
    data: String,
    at: Instant,
}

/// POSTs `body` and reads the SSE stream; returns (status, events, send instant).
async fn sse(client: &reqwest::Client, url: &str, body: Value) -> (u16, Vec<Event>, Instant) {
    let t0 = Instant::now();
    let resp = client.post(url).json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        let at = Instant::now();
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.windows(2).position(|w| w == b"\n\n") {
            let ev: Vec<u8> = buf.drain(..pos + 2).collect();
            let s = String::from_utf8(ev).unwrap();
            let data = s
                .trim_end()
                .strip_prefix("data: ")
                .unwrap_or(s.trim_end())
                .to_string();
            events.push(Event { data, at });
        }
    }
    assert!(
        buf.is_empty(),
        "trailing bytes: {:?}",
        String::from_utf8_lossy(&buf)
    );
    (status, events, t0)
}

/// The emission log once it holds `n` records (2 s at most): a record is pushed when its last
/// bytes are written to the socket, which can be just after the client has read them.
async fn settled_log(s: &SimServer, n: usize) -> Vec<servebench_sim::EmissionRecord> {
    for _ in 0..200 {
        let v = s.emission_log();
        if v.len() >= n {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.emission_log()
}

fn json_events(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect()
}

async fn get_json(client: &reqwest::Client, url: &str) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

async fn post(client: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let r = client.post(url).json(&body).send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap())
}

fn words(n: usize) -> String {
    (0..n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn metric(client: &reqwest::Client, base: &str, name: &str) -> f64 {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .map(|v| v.parse().unwrap())
        .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_models_version_and_unknown_routes() {
    let s = SimServer::start(opts(100.0)).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    assert!(base.starts_with("http://127.0.0.1:"));
    assert!(
        s.describe().contains("H200")
            && s.describe().contains("Qwen3-8B")
            && s.describe().contains("×100")
    );
    let r = c.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let m = get_json(&c, &format!("{base}/v1/models")).await;
    assert_eq!(m["object"], "list");
    assert_eq!(m["data"][0]["id"], "Qwen/Qwen3-8B");
    assert_eq!(m["data"][0]["max_model_len"], 40960);
    let v = get_json(&c, &format!("{base}/version")).await;
    assert!(v["version"].as_str().unwrap().starts_with("servebench-sim"));
    let r = c.get(format!("{base}/nope")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    assert!(e["error"]["message"].as_str().unwrap().contains("/nope"));
    let r = c
        .get(format!("{base}/v1/completions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_non_streaming_usage_matches_tokenize() {
    let s = SimServer::start(opts(200.0)).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    let prompt = words(57);
    let (st, v) = post(
        &c,
        &format!("{base}/v1/completions"),
        json!({"model": "Qwen/Qwen3-8B", "prompt": prompt, "max_tokens": 40, "ignore_eos": true, "temperature": 0}),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["object"], "text_completion");
    assert!(v["id"].as_str().unwrap().starts_with("cmpl-"));
    assert_eq!(v["usage"]["prompt_tokens"], 57);
    assert_eq!(v["usage"]["completion_tokens"], 40);
    assert_eq!(v["usage"]["total_tokens"], 97);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    let text = v["choices"][0]["text"].as_str().unwrap();
    let (_, t) = post(&c, &format!("{base}/tokenize"), json!({"prompt": text})).await;
    assert_eq!(t["count"], 40, "completion tokens = /tokenize of the text");
    let (_, t) = post(
        &c,
        &format!("{base}/tokenize"),
        json!({"model": "qwen3-8b", "prompt": prompt}),
    )
    .await;
    assert_eq!(t["count"], 57);
    assert_eq!(t["tokens"].as_array().unwrap().len(), 57);
    assert_eq!(t["max_model_len"], 40960);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_streaming_one_id_usage_chunk_and_done() {
    let s = SimServer::start(opts(200.0)).await.unwrap();
    let c = reqwest::Client::new();
    let url = format!("{}/v1/completions", s.base_url());
    let (st, events, _) = sse(
        &c,
        &url,
        json!({"model": "Qwen/Qwen3-8B", "prompt": words(100), "max_tokens": 30, "ignore_eos": true,
               "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let js = json_events(&events);
    let id = js[0]["id"].as_str().unwrap().to_string();
    assert!(
        js.iter().all(|j| j["id"] == id.as_str()),
        "every chunk carries the same id"
    );
    let tokens: Vec<&Value> = js
        .iter()
        .filter(|j| !j["choices"].as_array().unwrap().is_empty())
        .collect();
    assert_eq!(tokens.len(), 30, "one chunk per token");
    assert!(tokens
        .iter()
        .all(|j| !j["choices"][0]["text"].as_str().unwrap().is_empty()));
    assert_eq!(tokens[29]["choices"][0]["finish_reason"], "length");
    assert!(tokens[..29]
        .iter()
        .all(|j| j["choices"][0]["finish_reason"].is_null()));
    let usage = js.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 30);
    assert_eq!(usage["usage"]["prompt_tokens"], 100);
    // Without include_usage there is no usage chunk.
    let (_, events, _) = sse(
        &c,
        &url,
        json!({"prompt": "a b", "max_tokens": 3, "ignore_eos": true, "stream": true}),
    )
    .await;
    let js = json_events(&events);
    assert_eq!(js.len(), 3);
    assert!(js.iter().all(|j| j.get("usage").is_none()));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streaming_and_non_streaming() {
    let s = SimServer::start(opts(200.0)).await.unwrap();
    let c = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", s.base_url());
    let msgs = json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "say something long"}]);
    let (st, events, _) = sse(
        &c,
        &url,
        json!({"model": "Qwen/Qwen3-8B", "messages": msgs, "max_completion_tokens": 12, "ignore_eos": true,
               "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(st, 200);
    let js = json_events(&events);
    assert_eq!(js[0]["object"], "chat.completion.chunk");
    assert_eq!(js[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(js[0]["choices"][0]["delta"]["content"], "");
    let content: Vec<&Value> = js[1..js.len() - 1].iter().collect();
    assert_eq!(content.len(), 12);
    assert!(content.iter().all(|j| !j["choices"][0]["delta"]["content"]
        .as_str()
        .unwrap()
        .is_empty()));
    assert_eq!(content[11]["choices"][0]["finish_reason"], "length");
    let u = js.last().unwrap();
    assert_eq!(u["choices"], json!([]));
    assert_eq!(u["usage"]["completion_tokens"], 12);
    let (_, t) = post(
        &c,
        &format!("{}/tokenize", s.base_url()),
        json!({"messages": msgs}),
    )
    .await;
    assert_eq!(
        u["usage"]["prompt_tokens"], t["count"],
        "chat prompt tokens = /tokenize of the messages"
    );
    let id = js[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-") && js.iter().all(|j| j["id"] == id));

    let (st, v) = post(
        &c,
        &url,
        json!({"messages": msgs, "max_tokens": 5, "ignore_eos": true}),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["usage"]["completion_tokens"], 5);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_tokens_stop_and_natural_end() {
    let s = SimServer::start(opts(500.0)).await.unwrap();
    let c = reqwest::Client::new();
    let url = format!("{}/v1/completions", s.base_url());
    // Without ignore_eos the generic text ends by itself (64–1024 words) with "stop".
    let (_, v) = post(&c, &url, json!({"prompt": "tell me", "max_tokens": 5000})).await;
    let n = v["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((64..=1024).contains(&n), "{n}");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    // min_tokens beyond the natural end.
    let (_, v) = post(
        &c,
        &url,
        json!({"prompt": "tell me", "max_tokens": 5000, "min_tokens": 1500}),
    )
    .await;
    assert_eq!(v["usage"]["completion_tokens"], 1500);
    // A stop string cuts the text before it.
    let (_, v) = post(
        &c,
        &url,
        json!({"prompt": "tell me", "max_tokens": 200, "ignore_eos": true, "stop": [" the"]}),
    )
    .await;
    let text = v["choices"][0]["text"].as_str().unwrap();
    assert!(!text.contains(" the"), "{text}");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_name_the_field() {
    let s = SimServer::start(opts(100.0)).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    for (path, body, param) in [
        (
            "/v1/completions",
            json!({"prompt": "x", "max_tokens": -3}),
            "max_tokens",
        ),
        (
            "/v1/completions",
            json!({"prompt": "x", "temperature": "hot"}),
            "temperature",
        ),
        (
            "/v1/completions",
            json!({"prompt": "x", "ignore_eos": 1}),
            "ignore_eos",
        ),
        (
            "/v1/chat/completions",
            json!({"model": "Qwen/Qwen3-8B"}),
            "messages",
        ),
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user"}]}),
            "messages[0].content",
        ),
        (
            "/detokenize",
            json!({"tokens": [1, 999_999_999]}),
            "tokens[1]",
        ),
    ] {
        let (st, v) = post(&c, &format!("{base}{path}"), body.clone()).await;
        assert_eq!(st, 400, "{body}");
        assert_eq!(v["error"]["param"], param, "{v}");
        assert_eq!(v["error"]["type"], "BadRequestError");
        assert!(v["error"]["message"].as_str().unwrap().starts_with(param));
    }
    let (st, v) = post(
        &c,
        &format!("{base}/v1/completions"),
        json!({"model": "gpt-4o", "prompt": "x"}),
    )
    .await;
    assert_eq!((st, v["error"]["param"].as_str()), (404, Some("model")));
    let r = c
        .post(format!("{base}/v1/completions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("body: invalid JSON"));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenize_and_detokenize_in_vllm_and_llama_cpp_shapes() {
    let s = SimServer::start(opts(100.0)).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    let (st, v) = post(
        &c,
        &format!("{base}/tokenize"),
        json!({"content": "hello big world"}),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(v["tokens"].as_array().unwrap().len(), 3);
    assert!(v.get("count").is_none());
    let ids = json!([17, 4096, 151_935, 0]);
    let (st, d) = post(&c, &format!("{base}/detokenize"), json!({"tokens": ids})).await;
    assert_eq!(st, 200);
    let text = d["prompt"].as_str().unwrap();
    assert_eq!(d["content"], text);
    let (_, t) = post(&c, &format!("{base}/tokenize"), json!({"prompt": text})).await;
    assert_eq!(t["tokens"], ids, "ids round-trip through pseudo-words");
    let (st, e) = post(&c, &format!("{base}/tokenize"), json!({"text": "x"})).await;
    assert_eq!((st, e["error"]["param"].as_str()), (400, Some("prompt")));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_serves_several_requests_on_one_connection() {
    let s = SimServer::start(opts(100.0)).await.unwrap();
    let addr = s.addr();
    tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for _ in 0..3 {
            sock.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 512];
            let n = sock.read(&mut buf).unwrap();
            let head = String::from_utf8_lossy(&buf[..n]);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            assert!(head.contains("content-length: 0"), "{head}");
        }
    })
    .await
    .unwrap();
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_expose_running_waiting_kv_and_token_counters() {
    let s = SimServer::start(opts(10.0)).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    assert_eq!(metric(&c, &base, "vllm:num_requests_running").await, 0.0);
    assert_eq!(metric(&c, &base, "vllm:num_requests_waiting").await, 0.0);
    assert_eq!(metric(&c, &base, "vllm:kv_cache_usage_perc").await, 0.0);
    let url = format!("{base}/v1/completions");
    let mut tasks = vec![];
    for _ in 0..4 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            post(
                &c,
                &url,
                json!({"prompt": words(300), "max_tokens": 200, "ignore_eos": true}),
            )
            .await
        }));
    }
    let mut seen_running = 0.0f64;
    let mut seen_kv = 0.0f64;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !tasks.iter().all(|t| t.is_finished()) && Instant::now() < deadline {
        seen_running = seen_running.max(metric(&c, &base, "vllm:num_requests_running").await);
        seen_kv = seen_kv.max(metric(&c, &base, "vllm:kv_cache_usage_perc").await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().0, 200);
    }
    assert!(seen_running >= 2.0, "{seen_running}");
    assert!(seen_kv > 0.0 && seen_kv < 0.01, "{seen_kv}");
    assert_eq!(metric(&c, &base, "vllm:prompt_tokens_total").await, 1200.0);
    assert_eq!(
        metric(&c, &base, "vllm:generation_tokens_total").await,
        800.0
    );
    let text = c
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(
            "vllm:request_success_total{model_name=\"Qwen/Qwen3-8B\",finished_reason=\"length\"} 4"
        ),
        "{text}"
    );
    assert!(text.contains("# TYPE vllm:num_requests_waiting gauge"));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_kv_cache_shows_waiting_requests_in_metrics() {
    let mut cfg = EngineConfig::from_presets("h100", "qwen3-8b", 1).unwrap();
    cfg.kv_blocks = 160; // 2,560 tokens: room for two 1,000-token prompts plus their outputs.
    cfg.max_model_len = 2_560;
    let s = SimServer::start_with_config(opts(2.0), cfg).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    let url = format!("{base}/v1/completions");
    let mut tasks = vec![];
    for _ in 0..6 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            post(
                &c,
                &url,
                json!({"prompt": words(1000), "max_tokens": 60, "ignore_eos": true}),
            )
            .await
        }));
    }
    let mut seen_waiting = 0.0f64;
    let mut seen_kv = 0.0f64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !tasks.iter().all(|t| t.is_finished()) && Instant::now() < deadline {
        seen_waiting = seen_waiting.max(metric(&c, &base, "vllm:num_requests_waiting").await);
        seen_kv = seen_kv.max(metric(&c, &base, "vllm:kv_cache_usage_perc").await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for t in tasks {
        let (st, v) = t.await.unwrap();
        assert_eq!(
            (st, v["usage"]["completion_tokens"].as_u64()),
            (200, Some(60))
        );
    }
    assert!(seen_waiting >= 3.0, "waiting requests seen: {seen_waiting}");
    assert!(seen_kv > 0.7, "KV usage seen: {seen_kv}");
    // A request longer than the budget is refused up front.
    let (st, v) = post(&c, &url, json!({"prompt": words(2000), "max_tokens": 600})).await;
    assert_eq!(
        (st, v["error"]["param"].as_str()),
        (400, Some("max_tokens"))
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emission_log_matches_client_timing_and_the_model() {
    let _serial = HEAVY.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("emission.jsonl");
    let speedup = 10.0;
    let s = SimServer::start(SimOptions {
        speedup,
        emission_log: Some(log.clone()),
        ..Default::default()
    })
    .await
    .unwrap();
    let c = reqwest::Client::new();
    let url = format!("{}/v1/completions", s.base_url());
    c.get(format!("{}/health", s.base_url()))
        .send()
        .await
        .unwrap(); // warm the connection
    let mut client_side = vec![];
    for _ in 0..3 {
        let (_, events, t0) = sse(
            &c,
            &url,
            json!({"prompt": words(512), "max_tokens": 64, "ignore_eos": true, "stream": true,
                   "stream_options": {"include_usage": true}}),
        )
        .await;
        let js = json_events(&events);
        let tok: Vec<&Event> = events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .zip(&js)
            .filter(|(_, j)| !j["choices"].as_array().unwrap().is_empty())
            .map(|(e, _)| e)
            .collect();
        let ttft = (tok[0].at - t0).as_secs_f64() * 1e3;
        let tpot = (tok[tok.len() - 1].at - tok[0].at).as_secs_f64() * 1e3 / (tok.len() - 1) as f64;
        client_side.push((js[0]["id"].as_str().unwrap().to_string(), ttft, tpot));
    }
    let recs = settled_log(&s, 3).await;
    assert_eq!(recs.len(), 3);
    let file: Vec<servebench_sim::EmissionRecord> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(file, recs);
    // Modelled decode step for one 512+k-token sequence, scaled to wall time.
    let cfg = s.config();
    let step = cfg
        .step_cost(&[servebench_sim::model::Chunk {
            context: 550,
            tokens: 1,
            samples: true,
        }])
        .total_s;
    let want_tpot_ms = step * 1e3 / speedup;
    let lag = metric(&c, &s.base_url(), "servebench_sim_lag_seconds_total").await;
    for (r, (id, ttft, tpot)) in recs.iter().zip(&client_side) {
        assert_eq!(&r.id, id);
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens, r.chunks),
            (512, 64, 64)
        );
        assert_eq!(r.finish_reason, "length");
        let first = r.first_token_ns.unwrap();
        let last = r.last_token_ns.unwrap();
        // Socket times follow the frames' handing; the socket read precedes the parsed head.
        assert!(r.first_token_frame_ns.unwrap() <= first, "{r:?}");
        assert!(r.last_token_frame_ns.unwrap() <= last, "{r:?}");
        assert!(r.request_read_ns.unwrap() <= r.received_ns, "{r:?}");
        if cfg!(target_os = "linux") {
            // The kernel's receive time of the request: before the read, and close to it.
            let (arrived, read) = (r.request_arrived_ns.unwrap(), r.request_read_ns.unwrap());
            assert!(arrived <= read && read - arrived < 1_000_000_000, "{r:?}");
        }
        let sim_ttft = (first - r.received_ns) as f64 / 1e6;
        let sim_tpot = (last - first) as f64 / 1e6 / 63.0;
        // The client sees the server's stamps plus loopback and parsing delays.
        assert!(
            (ttft - sim_ttft).abs() < 5.0,
            "ttft client {ttft} sim {sim_ttft}"
        );
        assert!(
            (tpot - sim_tpot).abs() < 0.5,
            "tpot client {tpot} sim {sim_tpot}"
        );
        if lag == 0.0 {
            assert!(
                (sim_tpot / want_tpot_ms - 1.0).abs() < 0.3,
                "tpot {sim_tpot} vs model {want_tpot_ms}"
            );
        } else {
            // The machine was too busy for the engine loop to keep the modelled clock; the
            // dilation is reported in /metrics, and then only the lower bound holds.
            eprintln!("engine lag {lag} s: skipping the TPOT-vs-model check");
            assert!(
                sim_tpot > want_tpot_ms * 0.7,
                "tpot {sim_tpot} vs model {want_tpot_ms}"
            );
        }
        // TTFT ≥ front-end latency + one prefill step, in wall time.
        assert!(sim_ttft >= 25.0 / speedup, "{sim_ttft}");
    }
    s.shutdown().await;
}

struct Book;

impl AnswerBook for Book {
    fn answer(&self, prompt: &str) -> Option<String> {
        prompt.contains("Natalia").then(|| {
            "Natalia sold 48/2 = 24 clips in May.\nAltogether 48+24 = 72.\n#### 72".to_string()
        })
    }
}

/// Every request gets the kernel's receive stamp, also on fresh connections opened right after
/// the previous one closed: with `SO_TIMESTAMPNS` only on accepted sockets, the kernel turned its
/// timestamping switch off whenever the last such socket closed, and requests on the next
/// connections arrived unstamped until a deferred re-enable (seen as 0–7 % of a conc-4,096
/// skew run without `request_arrived_ns`). The listener now holds the switch on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_on_fresh_connections_all_get_the_kernel_stamp() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let _serial = HEAVY.lock().await;
    let s = SimServer::start(SimOptions {
        zero_delay: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let url = format!("{}/v1/completions", s.base_url());
    let n = 300;
    for _ in 0..n {
        // A client per request: its one connection closes when it is dropped.
        let c = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let (status, _) = post(&c, &url, json!({"prompt": "a b c", "max_tokens": 1})).await;
        assert_eq!(status, 200);
    }
    let recs = settled_log(&s, n).await;
    assert_eq!(recs.len(), n);
    let unstamped = recs
        .iter()
        .filter(|r| r.request_arrived_ns.is_none())
        .count();
    assert_eq!(
        unstamped, 0,
        "{unstamped} of {n} requests without request_arrived_ns"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_book_text_is_streamed_verbatim() {
    let s = SimServer::start(SimOptions {
        speedup: 500.0,
        answers: Some(Arc::new(Book)),
        ..Default::default()
    })
    .await
    .unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    let want = "Natalia sold 48/2 = 24 clips in May.\nAltogether 48+24 = 72.\n#### 72";
    let (_, v) = post(
        &c,
        &format!("{base}/v1/chat/completions"),
        json!({"messages": [{"role": "user", "content": "Question: Natalia sold clips..."}], "max_tokens": 256}),
    )
    .await;
    assert_eq!(v["choices"][0]["message"]["content"], want);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["completion_tokens"], 14);
    let (_, events, _) = sse(
        &c,
        &format!("{base}/v1/completions"),
        json!({"prompt": "Natalia?", "max_tokens": 20, "ignore_eos": true, "stream": true}),
    )
    .await;
    let text: String = json_events(&events)
        .iter()
        .map(|j| j["choices"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert!(text.starts_with(want) && text.len() > want.len(), "{text}");
    let (_, v) = post(
        &c,
        &format!("{base}/v1/completions"),
        json!({"prompt": "Natalia?", "max_tokens": 3}),
    )
    .await;
    assert_eq!(v["choices"][0]["text"], "Natalia sold 48/2");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_delay_serves_many_concurrent_streams() {
    let _serial = HEAVY.lock().await;
    let s = SimServer::start(SimOptions {
        zero_delay: true,
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(s.describe().contains("zero-delay"));
    let c = reqwest::Client::builder()
        .pool_max_idle_per_host(1000)
        .build()
        .unwrap();
    let url = format!("{}/v1/completions", s.base_url());
    let t = Instant::now();
    let mut tasks = vec![];
    for _ in 0..500 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let (_, events, _) = sse(
                &c,
                &url,
                json!({"prompt": "go", "max_tokens": 200, "ignore_eos": true, "stream": true,
                       "stream_options": {"include_usage": true}}),
            )
            .await;
            json_events(&events).len()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 201);
    }
    assert!(t.elapsed() < Duration::from_secs(60));
    let recs = settled_log(&s, 500).await;
    assert_eq!(recs.len(), 500);
    assert!(recs
        .iter()
        .all(|r| r.completion_tokens == 200 && r.chunks == 200));
    let c2 = reqwest::Client::new();
    assert_eq!(
        metric(&c2, &s.base_url(), "vllm:generation_tokens_total").await,
        100_000.0
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_frees_its_slot() {
    let s = SimServer::start(opts(1.0)).await.unwrap();
    let c = reqwest::Client::new();
    let base = s.base_url();
    let resp = c
        .post(format!("{base}/v1/completions"))
        .json(&json!({"prompt": "x y z", "max_tokens": 5000, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let aborted = c
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if aborted.contains("finished_reason=\"abort\"} 1")
            && metric(&c, &base, "vllm:num_requests_running").await == 0.0
        {
            break;
        }
        assert!(Instant::now() < deadline, "abort not seen:\n{aborted}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let recs = s.emission_log();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].finish_reason, "abort");
    assert!(recs[0].completion_tokens < 5000);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_streams_in_flight() {
    let s = SimServer::start(opts(1.0)).await.unwrap();
    let c = reqwest::Client::new();
    let (base, c2) = (s.base_url(), c.clone());
    let url = format!("{base}/v1/completions");
    let task = tokio::spawn(async move {
        sse(
            &c,
            &url,
            json!({"prompt": "x", "max_tokens": 20_000, "ignore_eos": true, "stream": true}),
        )
        .await
    });
    // the stream is under way once the engine has generated its first tokens (polled from
    // the simulator's own counter, not a guessed wait)
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&c2, &base, "vllm:generation_tokens_total").await < 3.0 {
        assert!(Instant::now() < deadline, "no token generated in 30 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let t = Instant::now();
    s.shutdown().await;
    assert!(t.elapsed() < Duration::from_secs(5));
    let (_, events, _) = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    assert!(!events.is_empty());
    assert!(
        events.iter().all(|e| e.data != "[DONE]"),
        "an aborted stream has no [DONE]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_errors_are_one_line() {
    let e = SimServer::start(SimOptions {
        gpu: "h300".into(),
        ..Default::default()
    })
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("unknown GPU `h300`"), "{e}");
    let e = SimServer::start(SimOptions {
        speedup: 0.0,
        ..Default::default()
    })
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("speedup:"), "{e}");
    let e = SimServer::start(SimOptions {
        emission_log: Some("/nonexistent-dir/x.jsonl".into()),
        ..Default::default()
    })
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("/nonexistent-dir/x.jsonl"), "{e}");
}

#[tokio::test]
async fn works_from_a_current_thread_runtime() {
    let s = SimServer::start(opts(100.0)).await.unwrap();
    let c = reqwest::Client::new();
    let (_, events, _) = sse(
        &c,
        &format!("{}/v1/chat/completions", s.base_url()),
        json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "ignore_eos": true, "stream": true}),
    )
    .await;
    assert_eq!(json_events(&events).len(), 1 + 8);
    s.shutdown().await;
}
