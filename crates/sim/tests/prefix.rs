//! Prefix caching and `--tokenizer` counting over HTTP: a repeated long chat prompt is served
//! from the KV prefix cache (hits in `/metrics`, shorter TTFT), and with a tokenizer the usage
//! counts its tokens instead of whitespace words.

use std::time::Instant;

use serde_json::{json, Value};
use servebench_sim::{SimOptions, SimServer};

/// (TTFT s, usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens) of one streamed
/// chat request.
async fn ttft_and_usage(url: &str, body: &Value) -> (f64, u64, Option<u64>) {
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let mut resp = client
        .post(format!("{url}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut ttft = None;
    let mut usage = 0;
    let mut cached = None;
    let mut buf = String::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        if ttft.is_none() && buf.contains("\"content\":\"") {
            ttft = Some(t0.elapsed().as_secs_f64());
        }
    }
    for line in buf.lines() {
        if let Some(d) = line.strip_prefix("data: ") {
            if let Ok(v) = serde_json::from_str::<Value>(d) {
                if let Some(p) = v["usage"]["prompt_tokens"].as_u64() {
                    usage = p;
                    cached = v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64();
                }
            }
        }
    }
    (ttft.unwrap(), usage, cached)
}

async fn metric(url: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

fn long_prompt(seed: u32, words: usize) -> String {
    (0..words)
        .map(|i| format!("w{}x{}", seed, i % 997))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_prompts_hit_the_prefix_cache() {
    let s = SimServer::start(SimOptions {
        speedup: 1.0,
        ..Default::default()
    })
    .await
    .unwrap();
    let url = s.base_url();
    let body = json!({"model": "Qwen/Qwen3-8B", "stream": true, "max_completion_tokens": 2,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": long_prompt(1, 20_000)}]});
    let (cold, n, cold_cached) = ttft_and_usage(&url, &body).await;
    assert!(n > 20_000);
    assert_eq!(metric(&url, "vllm:prefix_cache_hits_total").await, 0.0);
    assert_eq!(
        cold_cached,
        Some(0),
        "usage says no prompt token came from the cache"
    );
    let (warm, _, warm_cached) = ttft_and_usage(&url, &body).await;
    let hits = metric(&url, "vllm:prefix_cache_hits_total").await;
    let queries = metric(&url, "vllm:prefix_cache_queries_total").await;
    assert_eq!(queries, 2.0 * n as f64);
    // per request, as vLLM's usage.prompt_tokens_details says it: the counter's whole delta
    assert_eq!(warm_cached.map(|c| c as f64), Some(hits));
    // and the same without streaming
    let mut plain = body.clone();
    plain["stream"] = json!(false);
    plain.as_object_mut().unwrap().remove("stream_options");
    let r: Value = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&plain)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let third = metric(&url, "vllm:prefix_cache_hits_total").await - hits;
    assert!(third > 0.0, "{r}");
    assert_eq!(
        r["usage"]["prompt_tokens_details"]["cached_tokens"].as_f64(),
        Some(third)
    );
    assert!(hits > 0.95 * n as f64, "hits {hits} of {n}");
    assert!(
        warm < cold * 0.7,
        "cached prefill is faster: {warm:.3} s vs {cold:.3} s"
    );
    assert!(s.token_counting().contains("whitespace-separated words"));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenizer_counts_prompt_tokens() {
    let dir = tempfile::tempdir().unwrap();
    // WordLevel model with a Whitespace pre-tokenizer: `hello, world` = hello , world
    let vocab: serde_json::Map<String, Value> = ["[UNK]", "hello", ",", "world"]
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), json!(i)))
        .collect();
    let tok = json!({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}});
    std::fs::write(dir.path().join("tokenizer.json"), tok.to_string()).unwrap();
    let s = SimServer::start(SimOptions {
        speedup: 50.0,
        tokenizer: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .await
    .unwrap();
    let url = s.base_url();
    let body = json!({"model": "Qwen/Qwen3-8B", "stream": true, "max_completion_tokens": 1,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hello, world"}]});
    let (_, n, _) = ttft_and_usage(&url, &body).await;
    // words of the rendered chat: `<|im_start|>user` `hello,` `world<|im_end|>` `<|im_start|>assistant`
    // = 4; tokens: <| im_start |> user hello , world <| im_end |> <| im_start |> assistant = 14
    assert_eq!(n, 14, "usage.prompt_tokens counted with the tokenizer");
    assert!(s.token_counting().contains("tokenizer"));
    s.shutdown().await;
}

/// The SGLang dialect (a shimmed `sglang serve`): `/metrics` carries SGLang's series names,
/// typed as prometheus_client writes them, with the same values the vLLM names carry (usage of
/// the two requests), and no `vllm:` series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_dialect_exposes_sglang_series_with_the_same_values() {
    let mut cfg = servebench_sim::EngineConfig::from_presets("h200", "qwen3-8b", 1).unwrap();
    cfg.metrics_dialect = servebench_sim::MetricsDialect::Sglang;
    let s = SimServer::start_with_config(
        SimOptions {
            speedup: 20.0,
            ..Default::default()
        },
        cfg,
    )
    .await
    .unwrap();
    let url = s.base_url();
    let body = json!({"model": "Qwen/Qwen3-8B", "stream": true, "max_completion_tokens": 3,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": long_prompt(7, 4_000)}]});
    let (_, n, _) = ttft_and_usage(&url, &body).await;
    let (_, _, warm_cached) = ttft_and_usage(&url, &body).await;
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !text.lines().any(|l| l.starts_with("vllm:")),
        "no vLLM series:\n{text}"
    );
    for family in [
        "# TYPE sglang:prompt_tokens counter",
        "# TYPE sglang:generation_tokens counter",
        "# TYPE sglang:cached_tokens counter",
        "# TYPE sglang:num_requests counter",
        "# TYPE sglang:token_usage gauge",
        "# TYPE sglang:cache_hit_rate gauge",
        "# TYPE sglang:max_total_num_tokens gauge",
        "# TYPE sglang:num_running_reqs gauge",
        "# TYPE sglang:num_queue_reqs gauge",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    let prompt = metric(&url, "sglang:prompt_tokens_total").await;
    assert_eq!(prompt, 2.0 * n as f64);
    assert_eq!(metric(&url, "sglang:generation_tokens_total").await, 6.0);
    assert_eq!(metric(&url, "sglang:num_requests_total").await, 2.0);
    let cached = metric(
        &url,
        "sglang:cached_tokens_total{model_name=\"Qwen/Qwen3-8B\",cache_source=\"device\"}",
    )
    .await;
    assert!(cached > 0.9 * n as f64, "cached {cached} of {n}");
    assert_eq!(warm_cached.map(|c| c as f64), Some(cached));
    let rate = metric(&url, "sglang:cache_hit_rate").await;
    assert!((rate - cached / prompt).abs() < 1e-9, "rate {rate}");
    s.shutdown().await;
}

/// The ATOM dialect (a shimmed `python3 -m atom.entrypoints.openai_server`): vLLM's series under
/// the `atom:` prefix, which InferenceX's ATOM agentic recipes require in AIPerf's export.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atom_dialect_exposes_vllm_series_under_the_atom_prefix() {
    let mut cfg = servebench_sim::EngineConfig::from_presets("mi355x", "qwen3-8b", 1).unwrap();
    cfg.metrics_dialect = servebench_sim::MetricsDialect::Atom;
    let s = SimServer::start_with_config(
        SimOptions {
            speedup: 20.0,
            ..Default::default()
        },
        cfg,
    )
    .await
    .unwrap();
    let url = s.base_url();
    let body = json!({"model": "Qwen/Qwen3-8B", "stream": true, "max_completion_tokens": 3,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": long_prompt(3, 400)}]});
    let (_, n, _) = ttft_and_usage(&url, &body).await;
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !text.lines().any(|l| l.starts_with("vllm:")),
        "no vLLM series:\n{text}"
    );
    assert!(
        text.contains("# TYPE atom:num_requests_running gauge"),
        "{text}"
    );
    assert_eq!(metric(&url, "atom:prompt_tokens_total").await, n as f64);
    s.shutdown().await;
}
