//! `https://` endpoints end to end: `servebench bench/sweep` and `servebench eval gsm8k`
//! against a local TLS terminator (a self-signed certificate made by the test, trusted with
//! `--ca-cert`) in front of the embedded simulator; readiness with an API key in front of a
//! server that answers 401 without it, for both commands; an untrusted certificate is a
//! one-line error naming the URL.

use crate::common;
use common::{output_in_async, GSM8K};

#[path = "../../endpoint/tests/common/tls_proxy.rs"]
mod tls_proxy;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use servebench_client::mock::{event, Captured, MockServer, Reply};
use tls_proxy::{socket_of, TlsProxy};

const KEY: &str = "sk-tls-test";

/// The simulator replaying recorded GSM8K solutions, emitting as fast as it can.
async fn simulator() -> servebench_endpoint::Target {
    let book = servebench_eval::sim_answers::load_from(
        servebench_eval::sim_answers::DEFAULT_MODEL,
        Some(Path::new(GSM8K)),
    )
    .unwrap();
    servebench_endpoint::Target::start_simulator(servebench_endpoint::SimOptions {
        zero_delay: true,
        answers: Some(servebench_endpoint::answer_book(move |p| {
            book.lookup(p).map(str::to_string)
        })),
        ..Default::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_and_eval_measure_an_https_endpoint_through_a_tls_proxy() {
    let sim = simulator().await;
    let proxy = TlsProxy::start(socket_of(sim.endpoint().base_url())).await;
    let ca = proxy.ca_file.to_str().unwrap().to_string();
    let d = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", proxy.url());
    let o = output_in_async(
        d.path(),
        &[
            "sweep",
            "--endpoint",
            &url,
            "--ca-cert",
            &ca,
            "--conc",
            "1,2",
            "--num-prompts",
            "4",
            "--warmups",
            "1",
            "--isl",
            "32",
            "--osl",
            "8",
            "--no-store",
            "--out",
            "s",
        ],
    )
    .await;
    let stdout = common::stdout(&o);
    assert!(o.status.success(), "{}{stdout}", common::stderr(&o));
    assert_eq!(stdout.matches("using the base URL").count(), 1, "{stdout}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("s/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["endpoint"], proxy.url());
    let points = summary["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        let agg = serde_json::to_string(p).unwrap();
        let records = std::fs::read_to_string(d.path().join(format!(
            "s/conc{}/records.jsonl",
            p["conc"].as_u64().unwrap()
        )))
        .unwrap();
        let recs: Vec<Value> = records
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let measured: Vec<&Value> = recs.iter().filter(|r| r["phase"] == "measured").collect();
        assert_eq!(measured.len(), 4, "{agg}");
        assert!(
            measured.iter().all(|r| r["success"] == true
                && r["output_tokens"] == r["requested_output_tokens"]
                && r["token_events"].as_u64() > Some(0)),
            "{records}"
        );
        // keep-alive over TLS: each lane dials once, the other requests reuse its session
        let dialled = measured
            .iter()
            .filter(|r| !r["connect_ms"].is_null())
            .count();
        assert!(
            dialled as u64 <= p["conc"].as_u64().unwrap(),
            "{dialled} dials: {records}"
        );
    }
    let sessions = proxy.handshakes();
    assert!(
        sessions >= 2,
        "requests went through TLS ({sessions} sessions)"
    );

    // eval: the same proxy, the same --ca-cert
    let o = output_in_async(
        d.path(),
        &[
            "eval",
            "gsm8k",
            "--endpoint",
            &format!("{}/v1/chat/completions", proxy.url()),
            "--ca-cert",
            &ca,
            "--limit",
            "8",
            "--conc",
            "4",
            "--no-store",
            "--no-progress",
            "--out",
            "e",
        ],
    )
    .await;
    assert!(
        matches!(o.status.code(), Some(0) | Some(2)),
        "{}{}",
        common::stderr(&o),
        common::stdout(&o)
    );
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("e/result.json")).unwrap())
            .unwrap();
    assert_eq!(
        result["servebench"]["url"],
        format!("{}/v1/chat/completions", proxy.url())
    );
    assert_eq!(result["row"]["n_eff"], 8);
    // the replayed solutions score as recorded: not all wrong
    assert!(
        result["row"]["em_strict"].as_f64().unwrap() > 0.0,
        "{result}"
    );
    assert!(proxy.handshakes() > sessions, "eval went through TLS");

    // without --ca-cert the self-signed certificate is not trusted: one line naming the URL
    for args in [
        vec![
            "bench",
            "--endpoint",
            url.as_str(),
            "--ready-timeout",
            "0",
            "--no-store",
            "--out",
            "x",
        ],
        vec![
            "eval",
            "gsm8k",
            "--endpoint",
            url.as_str(),
            "--ready-timeout",
            "0",
            "--limit",
            "1",
            "--no-store",
            "--out",
            "y",
        ],
    ] {
        let o = output_in_async(d.path(), &args).await;
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = common::stderr(&o);
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with(&format!("error: endpoint {} is not ready", proxy.url()))
                && last.contains("certificate"),
            "{args:?}: {err}"
        );
    }
    sim.shutdown().await;
}

/// A streaming mock that answers 401 to anything without `Authorization: Bearer sk-tls-test`.
fn keyed_handler() -> servebench_client::mock::Handler {
    Arc::new(|c: &Captured| {
        let json = |status: u16, v: Value| Reply::Body {
            status,
            body: v.to_string().into_bytes(),
            content_type: "application/json",
        };
        let authorised = c
            .headers
            .lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {KEY}")));
        if !authorised {
            return json(401, serde_json::json!({"error": "invalid API key"}));
        }
        match c.path.as_str() {
            "/health" => json(200, serde_json::json!({"status": "ok"})),
            "/v1/models" => json(200, serde_json::json!({"data": [{"id": "keyed"}]})),
            "/tokenize" => {
                let words = c.json()["prompt"]
                    .as_str()
                    .unwrap_or_default()
                    .split_whitespace()
                    .count();
                json(
                    200,
                    serde_json::json!({"count": words, "tokens": vec![1; words]}),
                )
            }
            "/v1/chat/completions" => json(
                200,
                serde_json::json!({"choices": [{"message": {"content": "#### 1"}}]}),
            ),
            "/v1/completions" => {
                let k = c.json()["max_tokens"].as_u64().unwrap_or(2);
                let mut steps: Vec<_> = (0..k)
                    .map(|i| event(1 + i, r#"{"choices":[{"index":0,"text":"x"}]}"#))
                    .collect();
                steps.push(event(
                    k + 1,
                    &format!(r#"{{"choices":[],"usage":{{"prompt_tokens":16,"completion_tokens":{k},"total_tokens":{}}}}}"#, k + 16),
                ));
                steps.push(event(k + 2, "[DONE]"));
                Reply::Stream { status: 200, steps }
            }
            _ => json(404, serde_json::json!({"error": "not found"})),
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_sends_the_api_key_for_sweep_and_eval_over_tls() {
    let srv = MockServer::start(keyed_handler(), false).await.unwrap();
    let proxy = TlsProxy::start(socket_of(&srv.base_url())).await;
    let ca = proxy.ca_file.to_str().unwrap().to_string();
    let url = proxy.url();
    let d = tempfile::tempdir().unwrap();
    let bench = |key: Option<&'static str>, out: &'static str| {
        let mut a = vec![
            "bench",
            "--endpoint",
            &url,
            "--ca-cert",
            &ca,
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
            "--ready-timeout",
            "0.5",
            "--no-store",
            "--out",
            out,
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        if let Some(k) = key {
            a.extend(["--api-key".to_string(), k.to_string()]);
        }
        a
    };
    let eval = |key: Option<&'static str>, out: &'static str| {
        let mut a = vec![
            "eval",
            "gsm8k",
            "--endpoint",
            &url,
            "--ca-cert",
            &ca,
            "--limit",
            "2",
            "--ready-timeout",
            "0.5",
            "--no-store",
            "--no-progress",
            "--out",
            out,
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        if let Some(k) = key {
            a.extend(["--api-key".to_string(), k.to_string()]);
        }
        a
    };
    for (what, args) in [("bench", bench(None, "b0")), ("eval", eval(None, "e0"))] {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = output_in_async(d.path(), &a).await;
        assert_eq!(o.status.code(), Some(1), "{what} without a key");
        let err = common::stderr(&o);
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with(&format!("error: endpoint {url} is not ready"))
                && last.ends_with("/v1/models answered HTTP 401"),
            "{what}: {err}"
        );
    }
    assert!(
        srv.captured()
            .iter()
            .all(|c| c.path == "/health" || c.path == "/v1/models"),
        "nothing but readiness probes was sent without a key"
    );

    let o = output_in_async(
        d.path(),
        &bench(Some(KEY), "b1")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert!(
        o.status.success(),
        "{}{}",
        common::stderr(&o),
        common::stdout(&o)
    );
    let o = output_in_async(
        d.path(),
        &eval(Some(KEY), "e1")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert!(
        matches!(o.status.code(), Some(0) | Some(2)),
        "{}{}",
        common::stderr(&o),
        common::stdout(&o)
    );
    let reqs = srv.captured();
    let has_key = |c: &Captured| {
        c.headers
            .lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {KEY}")))
    };
    let keyed = |p: &str| reqs.iter().filter(|c| c.path == p && has_key(c)).count();
    assert!(keyed("/health") >= 2, "both readiness waits sent the key");
    assert!(keyed("/v1/models") >= 1, "model discovery sent the key");
    assert!(keyed("/tokenize") >= 1, "calibration sent the key");
    assert!(
        keyed("/v1/completions") >= 2,
        "measured requests sent the key"
    );
    assert_eq!(keyed("/v1/chat/completions"), 2, "eval sent the key");
    let after_key: Vec<&Captured> = reqs
        .iter()
        .skip_while(|c| !has_key(c))
        .filter(|c| !has_key(c))
        .collect();
    assert!(
        after_key.is_empty(),
        "every request of the keyed runs sent the key: {:?}",
        after_key.iter().map(|c| &c.path).collect::<Vec<_>>()
    );
    assert!(proxy.handshakes() > 0);
}
