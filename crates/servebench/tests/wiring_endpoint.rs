//! How `--endpoint` and the API key reach the server, against a scripted mock: a base URL
//! given as `http://host:port/v1/` is normalised (calibration calls `/tokenize`, not
//! `/v1/tokenize`), said once; `$OPENAI_API_KEY` is the fallback of `$SERVEBENCH_API_KEY` in
//! both `bench` and `eval`.

use crate::common;
use common::{blocking, json_reply, servebench_in, GSM8K};

use serde_json::Value;
use servebench_client::mock::{event, Captured, MockServer, Reply};

fn handler() -> servebench_client::mock::Handler {
    common::openai_mock(|c: &Captured| match c.path.as_str() {
        "/v1/chat/completions" => json_reply(serde_json::json!({
            "choices": [{"message": {"content": "#### 1"}}]
        })),
        "/v1/completions" => {
            let k = c.json()["max_tokens"].as_u64().unwrap_or(2);
            let mut steps: Vec<_> = (0..k)
                .map(|i| event(1 + i, r#"{"choices":[{"index":0,"text":"x"}]}"#))
                .collect();
            steps.push(event(
                k + 1,
                &format!(r#"{{"choices":[],"usage":{{"prompt_tokens":1,"completion_tokens":{k},"total_tokens":{}}}}}"#, k + 1),
            ));
            steps.push(event(k + 2, "[DONE]"));
            Reply::Stream { status: 200, steps }
        }
        _ => Reply::Body {
            status: 404,
            body: b"not found".to_vec(),
            content_type: "text/plain",
        },
    })
}

async fn servebench(args: Vec<String>, dir: std::path::PathBuf) -> std::process::Output {
    blocking(move || {
        servebench_in(&dir)
            .env("OPENAI_API_KEY", "sk-fallback")
            .env("SERVEBENCH_GSM8K_DIR", GSM8K)
            .args(args)
            .output()
            .unwrap()
    })
    .await
}

fn auth(c: &Captured) -> bool {
    c.headers.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("authorization: bearer sk-fallback")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_suffix_is_normalised_and_openai_api_key_is_the_fallback() {
    let srv = MockServer::start(handler(), false).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1/", srv.base_url());
    let args: Vec<String> = [
        "bench",
        "--endpoint",
        &url,
        "--conc",
        "1",
        "--num-prompts",
        "2",
        "--warmups",
        "0",
        "--isl",
        "16",
        "--osl",
        "4",
        "--no-store",
        "--out",
        "o",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = servebench(args, dir.path().to_path_buf()).await;
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}{stdout}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        stdout.matches("using the base URL").count(),
        1,
        "said once: {stdout}"
    );
    let reqs = srv.captured();
    assert!(
        reqs.iter().any(|c| c.path == "/tokenize"),
        "calibration at the root"
    );
    assert!(
        !reqs
            .iter()
            .any(|c| c.path.starts_with("/v1/v1") || c.path == "/v1/tokenize"),
        "{:?}",
        reqs.iter().map(|c| &c.path).collect::<Vec<_>>()
    );
    let completions: Vec<&Captured> = reqs
        .iter()
        .filter(|c| c.path == "/v1/completions")
        .collect();
    assert!(!completions.is_empty());
    assert!(
        completions.iter().all(|c| auth(c)),
        "bench sends $OPENAI_API_KEY"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["endpoint"], srv.base_url());

    // eval reads the same fallback
    let args: Vec<String> = [
        "eval",
        "gsm8k",
        "--endpoint",
        &srv.base_url(),
        "--limit",
        "2",
        "--no-store",
        "--no-progress",
        "--out",
        "e",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = servebench(args, dir.path().to_path_buf()).await;
    assert!(
        matches!(o.status.code(), Some(0) | Some(2)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let chat: Vec<Captured> = srv
        .captured()
        .into_iter()
        .filter(|c| c.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chat.len(), 2);
    assert!(chat.iter().all(auth), "eval sends $OPENAI_API_KEY");
}
