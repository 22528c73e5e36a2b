//! `POST /reset_prefix_cache` over HTTP: refused (503, cache untouched) while a request is
//! streaming, then 200; after the reset the repeated prompt misses the cache; each reset is
//! counted in `servebench_sim_prefix_cache_resets_total`.

use serde_json::json;
use servebench_sim::{SimOptions, SimServer};

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

async fn complete(url: &str, prompt: &str, max_tokens: u32) {
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/completions"))
        .json(
            &json!({"model": "Qwen/Qwen3-8B", "prompt": prompt, "max_tokens": max_tokens,
            "ignore_eos": true}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.bytes().await.unwrap();
}

async fn reset(url: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("{url}/reset_prefix_cache"))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_is_refused_while_busy_then_empties_the_cache() {
    let s = SimServer::start(SimOptions {
        speedup: 1.0,
        ..Default::default()
    })
    .await
    .unwrap();
    let url = s.base_url();
    let prompt: String = (0..256)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    complete(&url, &prompt, 1).await;
    assert_eq!(metric(&url, "vllm:prefix_cache_hits_total").await, 0.0);
    // a long generation in flight (~2,000 decode steps of several ms in real time)
    let busy = {
        let (u, p) = (url.clone(), prompt.clone());
        tokio::spawn(async move { complete(&u, &format!("{p} other"), 2000).await })
    };
    // in flight once the engine runs it (polled from the simulator's gauge, not a guessed wait)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while metric(&url, "vllm:num_requests_running").await < 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the request never ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (status, body) = reset(&url).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("requests are queued or running"), "{body}");
    assert_eq!(
        metric(&url, "servebench_sim_prefix_cache_resets_total").await,
        0.0
    );
    busy.abort();
    // the aborted client frees its sequence: wait until the engine says it is idle, then the
    // reset is accepted at once (no retrying of the reset itself)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while metric(&url, "vllm:num_requests_running").await > 0.0
        || metric(&url, "vllm:num_requests_waiting").await > 0.0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the engine never went idle"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (status, body) = reset(&url).await;
    assert_eq!(status, 200, "reset once idle: {body}");
    assert_eq!(
        metric(&url, "servebench_sim_prefix_cache_resets_total").await,
        1.0
    );
    let hits_before = metric(&url, "vllm:prefix_cache_hits_total").await;
    complete(&url, &prompt, 1).await;
    assert_eq!(
        metric(&url, "vllm:prefix_cache_hits_total").await,
        hits_before,
        "the prompt cached before the reset misses after it"
    );
    complete(&url, &prompt, 1).await;
    assert!(
        metric(&url, "vllm:prefix_cache_hits_total").await > hits_before,
        "and is cached again"
    );
    s.shutdown().await;
}
