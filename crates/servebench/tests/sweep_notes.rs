//! Table notes of `servebench sweep`/`bench`, against scripted mock servers: a number that
//! would mislead (0 output tokens under `--compat inferencex` against a llama.cpp-style stream
//! with usage on a chunk that has choices; TPOT 0.00 because every token arrived in one read)
//! gets a note line under the table and in summary.json, and the warnings say what happened.

use crate::common;
use common::{blocking, read_json, servebench_in};

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use servebench_client::mock::{event, Captured, MockServer, Reply, Step};

/// An OpenAI-compatible mock whose completion stream is `stream(k)` for max_tokens = k.
fn mock(stream: fn(u64) -> Vec<Step>) -> servebench_client::mock::Handler {
    common::openai_mock(move |c: &Captured| {
        let k = c.json()["max_tokens"].as_u64().unwrap_or(2);
        Reply::Stream {
            status: 200,
            steps: stream(k),
        }
    })
}

/// llama.cpp: the usage rides on the last chunk, which also carries `choices`.
fn llama_cpp_stream(k: u64) -> Vec<Step> {
    let mut steps: Vec<Step> = (0..k.saturating_sub(1))
        .map(|i| event(1 + i, r#"{"choices":[{"index":0,"text":"x"}]}"#))
        .collect();
    steps.push(event(
        k,
        &format!(
            r#"{{"choices":[{{"index":0,"text":"x","finish_reason":"length"}}],"usage":{{"prompt_tokens":1,"completion_tokens":{k},"total_tokens":{}}}}}"#,
            k + 1
        ),
    ));
    steps.push(event(k + 1, "[DONE]"));
    steps
}

/// A buffering server: every token event, the usage and [DONE] in one write.
fn one_read_stream(k: u64) -> Vec<Step> {
    let mut bytes = Vec::new();
    for _ in 0..k {
        bytes.extend(event(0, r#"{"choices":[{"index":0,"text":"x"}]}"#).bytes);
    }
    bytes.extend(
        event(
            0,
            &format!(
                r#"{{"choices":[],"usage":{{"prompt_tokens":1,"completion_tokens":{k},"total_tokens":{}}}}}"#,
                k + 1
            ),
        )
        .bytes,
    );
    bytes.extend(event(0, "[DONE]").bytes);
    vec![Step { at_ms: 5, bytes }]
}

async fn bench(url: &str, out: &Path, extra: &[&str]) -> Output {
    let mut a: Vec<String> = [
        "bench",
        "--endpoint",
        url,
        "--conc",
        "2",
        "--num-prompts",
        "6",
        "--warmups",
        "0",
        "--isl",
        "16",
        "--osl",
        "4",
        "--engine",
        "llama.cpp",
        "--no-store",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(out.display().to_string());
    a.extend(extra.iter().map(|s| s.to_string()));
    blocking(move || servebench_in(Path::new(".")).args(a).output().unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inferencex_zero_output_tokens_is_said_truthfully_and_noted_under_the_table() {
    let srv = MockServer::start(mock(llama_cpp_stream), false)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ix");
    let o = bench(&srv.base_url(), &out, &["--compat", "inferencex"]).await;
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}{stdout}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !stdout.contains("counted from token events"),
        "the warning must not claim chunk counting: {stdout}"
    );
    let table_end = stdout.rfind('|').unwrap();
    let after = &stdout[table_end..];
    assert!(
        after.contains("note: conc 2:") && after.contains("no usage-only chunk"),
        "note under the table: {stdout}"
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["points"][0]["output_tput_per_gpu"], 0.0);
    assert!(summary["notes"][0]
        .as_str()
        .unwrap()
        .contains("output tokens are 0 as InferenceX would record"));
    let rec: Value = serde_json::from_str(
        std::fs::read_to_string(out.join("conc2/records.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["output_tokens_source"], "none");

    // the same server under servebench counting: usage read, no note
    let out = dir.path().join("sb");
    let o = bench(&srv.base_url(), &out, &[]).await;
    assert!(o.status.success());
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["notes"], serde_json::json!([]));
    assert!(
        summary["points"][0]["output_tput_per_gpu"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpot_zero_from_one_read_is_noted_under_the_table() {
    let srv = MockServer::start(mock(one_read_stream), false)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let o = bench(&srv.base_url(), &out, &[]).await;
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}{stdout}",
        String::from_utf8_lossy(&o.stderr)
    );
    let after = &stdout[stdout.rfind('|').unwrap()..];
    assert!(
        after.contains("note: conc 2:") && after.contains("TTFT = E2EL"),
        "note under the table: {stdout}"
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["points"][0]["mean_tpot"], 0.0);
}
