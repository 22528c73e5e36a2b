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
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, body) = reset(&url).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("requests are queued or running"), "{body}");
    assert_eq!(
        metric(&url, "servebench_sim_prefix_cache_resets_total").await,
        0.0
    );
    busy.abort();
    // the aborted client frees its sequence; the engine is idle again shortly after
    let mut ok = false;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if reset(&url).await.0 == 200 {
            ok = true;
            break;
        }
    }
    assert!(ok, "reset answered 200 once idle");
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
