//! Error paths of `servebench sweep`/`bench` (issue 2 "Errors"), against scripted mock servers:
//! unreachable endpoint, a server rejecting optional body fields (`transformers serve` style),
//! `--lenient`, and a point with more than 5 % failed requests.

use crate::common;
use common::{output_scratch_async, read_json, scratch_in, sigint};

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use servebench_client::mock::{event, Captured, MockServer, Reply, Step};

/// A minimal OpenAI-compatible mock: /health, /v1/models, /tokenize (one token per word) and a
/// 2-token completion stream; `reject` decides a 4xx body for a request, `fail` a 503.
fn openai_mock(
    reject: impl Fn(&Value) -> Option<String> + Send + Sync + 'static,
    fail: impl Fn(usize) -> bool + Send + Sync + 'static,
) -> servebench_client::mock::Handler {
    let n = AtomicUsize::new(0);
    common::openai_mock(move |c: &Captured| {
        let body = c.json();
        if let Some(msg) = reject(&body) {
            return Reply::Body {
                status: 422,
                body: msg.into_bytes(),
                content_type: "application/json",
            };
        }
        if body["prompt"] != "Hello" && fail(n.fetch_add(1, Ordering::SeqCst)) {
            return Reply::Body {
                status: 503,
                body: br#"{"error":{"message":"Service Unavailable","code":503}}"#.to_vec(),
                content_type: "application/json",
            };
        }
        let k = body["max_tokens"].as_u64().unwrap_or(2);
        let mut steps: Vec<Step> = (0..k)
            .map(|i| {
                event(
                    1 + i,
                    r#"{"id":"cmpl-m","choices":[{"index":0,"text":"x"}]}"#,
                )
            })
            .collect();
        steps.push(event(
                1 + k,
                &format!(r#"{{"choices":[],"usage":{{"prompt_tokens":1,"completion_tokens":{k},"total_tokens":{}}}}}"#, k + 1),
            ));
        steps.push(event(2 + k, "[DONE]"));
        Reply::Stream { status: 200, steps }
    })
}

fn args(url: &str, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "bench",
        "--endpoint",
        url,
        "--conc",
        "2",
        "--num-prompts",
        "20",
        "--isl",
        "16",
        "--osl",
        "4",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(out.display().to_string());
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_endpoint_is_one_line_naming_the_url() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o =
        output_scratch_async(args(&url, &dir.path().join("o"), &["--ready-timeout", "1"])).await;
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "bounded readiness wait"
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].contains(&url) && lines[0].contains("not ready"),
        "{err}"
    );
}

fn transformers_like(body: &Value) -> Option<String> {
    let bad: Vec<&str> = ["ignore_eos", "min_tokens"]
        .into_iter()
        .filter(|f| body.get(*f).is_some())
        .collect();
    (!bad.is_empty()).then(|| {
        let set = bad
            .iter()
            .map(|f| format!("'{f}'"))
            .collect::<Vec<_>>()
            .join(", ");
        serde_json::json!({"detail": format!("Unexpected fields in the request: {{{set}}}")})
            .to_string()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_field_is_named_and_lenient_retries_without_it() {
    let srv = MockServer::start(openai_mock(transformers_like, |_| false), false)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();

    // vllm profile sends ignore_eos + min_tokens: stop with one line naming them
    let o = output_scratch_async(args(
        &srv.base_url(),
        &dir.path().join("strict"),
        &["--engine", "vllm"],
    ))
    .await;
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("`ignore_eos`")
            && lines[0].contains("`min_tokens`")
            && lines[0].contains("--lenient"),
        "{err}"
    );
    assert!(lines[0].contains("HTTP 422"), "{err}");

    // --lenient: warn, drop them, measure
    let out = dir.path().join("lenient");
    let o = output_scratch_async(args(
        &srv.base_url(),
        &out,
        &["--engine", "vllm", "--lenient"],
    ))
    .await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("retrying without it"));
    let raw = read_json(&out.join("conc2/result.json"));
    let fields: Vec<&str> = raw["servebench"]["request_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        !fields.contains(&"ignore_eos") && !fields.contains(&"min_tokens"),
        "{fields:?}"
    );
    assert_eq!(raw["completed"], 20);

    // the transformers profile never sends them
    let o = output_scratch_async(args(
        &srv.base_url(),
        &dir.path().join("tf"),
        &["--engine", "transformers"],
    ))
    .await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `--model` that the server does not list (a new-user run against llama.cpp, which answers any
/// name with its own model, recorded the run under the typed name without a word): measured as
/// asked, with one warning naming the name and what the server lists; a listed name: no warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_the_server_does_not_list_is_warned_about() {
    let srv = MockServer::start(openai_mock(|_| None, |_| false), false)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("other");
    let o = output_scratch_async(args(
        &srv.base_url(),
        &out,
        &["--model", "other-model", "--no-store"],
    ))
    .await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let warn = format!(
        "warning: --model other-model is not among the models {}/v1/models serves (mock-model): the server may reject the requests, or ignore the name and answer with its own model",
        srv.base_url()
    );
    assert_eq!(err.matches(&warn).count(), 1, "{err}");
    assert_eq!(
        read_json(&out.join("conc2/result.json"))["model_id"],
        "other-model"
    );
    let o = output_scratch_async(args(
        &srv.base_url(),
        &dir.path().join("listed"),
        &["--model", "mock-model", "--no-store"],
    ))
    .await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("is not among the models"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_5_percent_failed_marks_the_point_failed_and_still_writes_files() {
    // every 10th completion request (10 % of 20 measured + warmups) answers 503
    let srv = MockServer::start(openai_mock(|_| None, |i| i % 10 == 9), false)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let o = output_scratch_async(args(&srv.base_url(), &out, &["--warmups", "0"])).await;
    assert_eq!(o.status.code(), Some(1), "non-zero exit for a failed point");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("POINT FAILED (more than 5 % of requests failed)"),
        "{stdout}"
    );
    // why it failed, without opening records.jsonl: the first failed request's error text
    let why = stdout
        .lines()
        .find_map(|l| l.strip_prefix("  first error: "))
        .unwrap_or_else(|| panic!("no first-error line: {stdout}"));
    assert!(why.contains("Service Unavailable"), "{why}");
    let agg = read_json(&out.join("conc2/agg.json"));
    assert_eq!(agg["point_status"], "failed");
    assert_eq!(agg["num_requests_failed"], 2);
    assert_eq!(agg["failure_reasons"]["http_503"], 2);
    assert_eq!(agg["num_requests_successful"], 18);
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["points"][0]["point_status"], "failed");
    let recs = std::fs::read_to_string(out.join("conc2/records.jsonl")).unwrap();
    assert_eq!(recs.lines().count(), 20);
    assert!(recs.contains("Service Unavailable"), "error text kept");
}

#[test]
fn ctrl_c_writes_what_was_measured_and_marks_the_point_partial() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    // real-time simulator, long outputs: the first point cannot finish within 4 s
    let child = scratch_in(Path::new("."))
        .args([
            "sweep",
            "--conc",
            "2,4",
            "--isl",
            "64",
            "--osl",
            "256",
            "--sim-speedup",
            "1",
            "--warmups",
            "0",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let records = out.join("conc2/records.jsonl");
    let t = Instant::now();
    // wait until at least one request finished, then interrupt
    while std::fs::read_to_string(&records)
        .map(|s| s.lines().count())
        .unwrap_or(0)
        < 1
    {
        assert!(t.elapsed() < Duration::from_secs(30), "no record written");
        std::thread::sleep(Duration::from_millis(100));
    }
    sigint(child.id());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("interrupted"));
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["interrupted"], true);
    let points = summary["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "the second point never started");
    assert_eq!(points[0]["point_status"], "partial");
    let agg = read_json(&out.join("conc2/agg.json"));
    assert_eq!(agg, points[0]);
    assert!(agg["num_requests_successful"].as_u64().unwrap() >= 1);
    let lines = std::fs::read_to_string(&records).unwrap();
    assert!(
        lines.contains("\"cancelled\""),
        "in-flight requests recorded as cancelled"
    );
}
