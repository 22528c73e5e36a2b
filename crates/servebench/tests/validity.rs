//! Validity rules end to end (issue 12 item 1, docs/measurement.md "Validity rules"): a scripted
//! server that breaks the request's contract — fewer output tokens than `max_tokens` under
//! `ignore_eos`/`min_tokens`, or a `usage.prompt_tokens` 25 % above the prompt as built — makes
//! the point invalid: the sweep finishes and writes everything, prints the reason, exits 1, the
//! files and the store keep the flag, and `servebench compare` draws no delta from it (reason
//! shown). A clean server and the simulator stay valid (exit 0).
//!
//! The mock counts one token per whitespace word (prompt and `/tokenize`); the client side uses
//! a word-level `tokenizer.json` written here (`w0`…`w99`, unknown words → `w0`), so client and
//! server counts agree exactly unless the fault inflates them.

use crate::common;
use common::{json_reply, read_json, read_jsonl, servebench_in};

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use servebench_client::mock::{event, Captured, MockServer, Reply, Step};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    None,
    /// Measured requests 2 and 5 (0-based) stop after 5 tokens.
    Short,
    /// Measured request 3 streams 9 tokens (1 more than asked).
    Long,
    /// Measured requests 1 and 6 report usage.prompt_tokens = words × 5/4.
    InflatedPrompt,
}

fn mock(fault: Fault) -> servebench_client::mock::Handler {
    let n = Arc::new(AtomicUsize::new(0));
    Arc::new(move |c: &Captured| match c.path.as_str() {
        "/health" => json_reply(json!({"status": "ok"})),
        "/v1/models" => json_reply(json!({"data": [{"id": "mock-model"}]})),
        "/tokenize" => {
            let words = c.json()["prompt"]
                .as_str()
                .unwrap_or_default()
                .split_whitespace()
                .count();
            json_reply(json!({"count": words, "tokens": vec![1; words]}))
        }
        _ => {
            let body = c.json();
            let prompt = body["prompt"].as_str().unwrap_or_default().to_string();
            let words = prompt.split_whitespace().count() as u64;
            let want = body["max_tokens"].as_u64().unwrap_or(2);
            // the preflight ("Hello") is answered correctly; measured requests are counted
            let i = if prompt == "Hello" {
                usize::MAX
            } else {
                n.fetch_add(1, Ordering::SeqCst)
            };
            let k = match (fault, i) {
                (Fault::Short, 2 | 5) => 5,
                (Fault::Long, 3) => want + 1,
                _ => want,
            };
            let prompt_tokens = match (fault, i) {
                (Fault::InflatedPrompt, 1 | 6) => words * 5 / 4,
                _ => words,
            };
            let mut steps: Vec<Step> = (0..k)
                .map(|j| {
                    event(
                        1 + j,
                        r#"{"id":"cmpl-v","choices":[{"index":0,"text":" w"}]}"#,
                    )
                })
                .collect();
            steps.push(event(
                1 + k,
                &json!({"id": "cmpl-v", "choices": [], "usage": {"prompt_tokens": prompt_tokens,
                    "completion_tokens": k, "total_tokens": prompt_tokens + k}})
                .to_string(),
            ));
            steps.push(event(2 + k, "[DONE]"));
            Reply::Stream { status: 200, steps }
        }
    })
}

/// A word-level tokenizer: `w0`…`w99`, whitespace pre-tokenizer, unknown words → `w0`.
fn write_tokenizer(dir: &Path) -> std::path::PathBuf {
    let vocab: serde_json::Map<String, Value> =
        (0..100).map(|i| (format!("w{i}"), json!(i))).collect();
    let t = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "w0"}
    });
    let p = dir.join("tokenizer.json");
    std::fs::write(&p, t.to_string()).unwrap();
    p
}

struct Sweep {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `servebench sweep` against `url`: conc 2, 8 measured prompts of exactly 16 tokens asking for
/// exactly 8 (range ratio 1), no warmup, vllm profile (`ignore_eos` + `min_tokens`).
async fn sweep(dir: &Path, url: &str, out: &str, tokenizer: bool) -> Sweep {
    let mut args: Vec<String> = [
        "sweep",
        "--endpoint",
        url,
        "--conc",
        "2",
        "--num-prompts",
        "8",
        "--warmups",
        "0",
        "--isl",
        "16",
        "--osl",
        "8",
        "--range-ratio",
        "1",
        "--db",
        "s.db",
        "--out",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if tokenizer {
        args.push("--tokenizer".into());
        args.push(write_tokenizer(dir).display().to_string());
    }
    let dir = dir.to_path_buf();
    let o = tokio::task::spawn_blocking(move || servebench_in(&dir).args(&args).output().unwrap())
        .await
        .unwrap();
    Sweep {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn sb(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = servebench_in(dir).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// The stored runs (`runs --json`), by id.
fn stored_run(dir: &Path, id: u64) -> Value {
    let (code, text) = sb(dir, &["runs", "--db", "s.db", "--json"]);
    assert_eq!(code, 0, "{text}");
    let runs: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    runs.as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("run {id} not in {text}"))
}

/// Checks an invalid sweep: exit 1, the line printed, everything written, flagged in the files.
fn assert_invalid(dir: &Path, out: &str, s: &Sweep, line: &str) {
    let all = format!("stdout:\n{}\nstderr:\n{}", s.stdout, s.stderr);
    assert_eq!(s.code, 1, "an invalid point exits 1: {all}");
    assert!(
        s.stdout.contains(&format!("→ POINT INVALID: {line}")),
        "the point line says it: {all}"
    );
    assert!(
        s.stdout.contains("2 (INVALID)"),
        "the table marks the row: {all}"
    );
    assert!(
        s.stdout.contains(&format!("INVALID: {line}")),
        "the note under the table: {all}"
    );
    let d = dir.join(out).join("conc2");
    // nothing lost: every measured request recorded, files written
    assert_eq!(read_jsonl(&d.join("records.jsonl")).len(), 8);
    let agg = read_json(&d.join("agg.json"));
    assert_eq!(agg["point_status"], "invalid", "{agg}");
    assert_eq!(agg["invalid_reasons"], json!([line]));
    assert_eq!(agg["num_requests_failed"], 0, "no request failed");
    let raw = read_json(&d.join("result.json"));
    assert_eq!(raw["servebench"]["point_status"], "invalid");
    assert_eq!(raw["servebench"]["invalid_reasons"], json!([line]));
    let summary = read_json(&dir.join(out).join("summary.json"));
    assert_eq!(summary["points"][0]["point_status"], "invalid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_violations_invalidate_the_point_the_run_and_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // run 1: a server that keeps the contract — valid, exit 0, both rules checked
    let srv = MockServer::start(mock(Fault::None), false).await.unwrap();
    let s = sweep(d, &srv.base_url(), "clean", true).await;
    assert_eq!(s.code, 0, "stdout:\n{}\nstderr:\n{}", s.stdout, s.stderr);
    assert!(
        s.stdout.contains(
            "validity: output length fixed by the request: every response must carry exactly max_tokens; prompt length checked: usage.prompt_tokens − 0 (server overhead measured by the preflight) within 5 % of the client count"
        ),
        "{}",
        s.stdout
    );
    assert!(!s.stdout.contains("INVALID"), "{}", s.stdout);
    let agg = read_json(&d.join("clean/conc2/agg.json"));
    assert_eq!(agg["point_status"], "ok");
    assert!(agg.get("invalid_reasons").is_none(), "{agg}");
    assert_eq!(agg["mean_isl"], 16.0, "prompts of exactly 16 tokens");
    assert_eq!(stored_run(d, 1)["invalid_reason"], Value::Null);

    // run 2: two of eight responses stop after 5 of 8 tokens
    let srv = MockServer::start(mock(Fault::Short), false).await.unwrap();
    let s = sweep(d, &srv.base_url(), "short", true).await;
    let short = "fixed length violated: 2/8 short (min 5, want 8)";
    assert_invalid(d, "short", &s, short);
    let run = stored_run(d, 2);
    assert_eq!(run["invalid_reason"], format!("conc 2: {short}"), "{run}");
    assert_eq!(
        run["status"], "failed",
        "no point of the run is usable: {run}"
    );
    let (_, runs) = sb(d, &["runs", "--db", "s.db"]);
    assert!(runs.contains("failed (INVALID)"), "{runs}");

    // run 3: one response one token long
    let srv = MockServer::start(mock(Fault::Long), false).await.unwrap();
    let s = sweep(d, &srv.base_url(), "long", true).await;
    assert_invalid(
        d,
        "long",
        &s,
        "fixed length violated: 1/8 long (max 9, want 8)",
    );

    // run 4: two responses claim 20 prompt tokens for a 16-token prompt (+25 %)
    let srv = MockServer::start(mock(Fault::InflatedPrompt), false)
        .await
        .unwrap();
    let s = sweep(d, &srv.base_url(), "prompt", true).await;
    let prompt = "prompt length violated: 2/8 off by more than 5 % (worst: usage.prompt_tokens 20, intended 16, +25.0 %)";
    assert_invalid(d, "prompt", &s, prompt);
    assert_eq!(
        stored_run(d, 4)["invalid_reason"],
        format!("conc 2: {prompt}")
    );

    // compare refuses to draw a delta from an invalid candidate, and names the reason
    let (code, text) = sb(
        d,
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "1",
            "--candidate",
            "2",
        ],
    );
    assert_eq!(
        code, 3,
        "an invalid candidate exits 3 like a failed one: {text}"
    );
    assert!(
        text.contains(&format!("candidate_invalid — Δ N/A: invalid: {short}")),
        "{text}"
    );
    // no metric of the pair has a delta; the pair says why
    let (_, js) = sb(
        d,
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "1",
            "--candidate",
            "2",
            "--json",
        ],
    );
    let c: Value = serde_json::from_str(&js).unwrap_or_else(|e| panic!("{e}: {js}"));
    let pc = &c["points"][0];
    assert_eq!(pc["verdict"], "candidate_invalid", "{pc}");
    assert_eq!(
        pc["na"],
        json!({"kind": "point_invalid", "side": "candidate", "reason": short})
    );
    let metrics = pc["metrics"].as_array().unwrap();
    assert!(!metrics.is_empty());
    for m in metrics {
        assert_eq!(m["delta"]["pct"], Value::Null, "{m}");
    }
    // the report of the invalid run against the clean one: no value, no delta, the reason
    let (code, md) = sb(
        d,
        &[
            "report",
            "2",
            "--db",
            "s.db",
            "--baseline",
            "1",
            "--lang",
            "en",
        ],
    );
    assert_eq!(code, 0, "{md}");
    assert!(
        md.contains(&format!(
            "invalid (a validity rule was violated) — `{short}`"
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!("candidate invalid: {short}")),
        "the N/A reason names the rule: {md}"
    );
    // … and from an invalid baseline
    let (code, text) = sb(
        d,
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "4",
            "--candidate",
            "1",
        ],
    );
    assert!(
        text.contains(&format!("Δ N/A: baseline invalid: {prompt}")),
        "exit {code}: {text}"
    );
    // a valid pair still compares (exit 0)
    let (code, text) = sb(
        d,
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "1",
            "--candidate",
            "1",
        ],
    );
    assert_eq!(code, 0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tokenizer_the_prompt_rule_says_it_did_not_check() {
    // the inflated prompt counts would trip the rule, but without --tokenizer the prompts were
    // sized with the server's own count: not checked, said once, the point stays valid
    let dir = tempfile::tempdir().unwrap();
    let srv = MockServer::start(mock(Fault::InflatedPrompt), false)
        .await
        .unwrap();
    let s = sweep(dir.path(), &srv.base_url(), "o", false).await;
    assert_eq!(s.code, 0, "stdout:\n{}\nstderr:\n{}", s.stdout, s.stderr);
    assert!(
        s.stdout.contains(
            "prompt length not checked: no --tokenizer (prompts were sized with the server's own count)"
        ),
        "{}",
        s.stdout
    );
    let agg = read_json(&dir.path().join("o/conc2/agg.json"));
    assert_eq!(agg["point_status"], "ok");
}

#[test]
fn the_simulator_happy_path_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let o = servebench_in(dir.path())
        .args([
            "sweep",
            "--conc",
            "1,2",
            "--isl",
            "64",
            "--osl",
            "16",
            "--num-prompts",
            "8",
            "--sim-speedup",
            "50",
            "--no-store",
            "--out",
            "sim",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("validity: output length fixed by the request"),
        "{stdout}"
    );
    assert!(!stdout.contains("INVALID"), "{stdout}");
    // issue 21 target 3: the client says how many cores it can use (one tokio worker per CPU
    // the process may run on; the child inherits this test's affinity)
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let want = format!(
        "client: {cpus} worker thread{} (tokio multi-thread",
        if cpus == 1 { "" } else { "s" }
    );
    assert!(stdout.contains(&want), "want {want:?} in:\n{stdout}");
    for c in [1, 2] {
        let agg = read_json(&dir.path().join(format!("sim/conc{c}/agg.json")));
        assert_eq!(agg["point_status"], "ok");
        let recs = read_jsonl(&dir.path().join(format!("sim/conc{c}/records.jsonl")));
        assert!(recs
            .iter()
            .filter(|r| r["phase"] == "measured")
            .all(|r| r["output_tokens"] == r["requested_output_tokens"]));
    }
}

fn real_sweep(dir: &Path, url: &str, tokenizer: &Path, extra: &[&str]) -> (i32, String) {
    let o = servebench_in(dir)
        .args([
            "sweep",
            "--endpoint",
            url,
            "--engine",
            "llama.cpp",
            "--gpus",
            "1",
            "--isl",
            "128",
            "--osl",
            "16",
            "--conc",
            "2",
            "--no-store",
            "--out",
            "o",
            "--tokenizer",
        ])
        .arg(tokenizer)
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn real_engine_chat_template_overhead_does_not_trip_the_prompt_rule() {
    let Some((url, model)) = common::real_engine() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = real_sweep(
        dir.path(),
        &url,
        &model.join("tokenizer.json"),
        &["--api", "chat"],
    );
    assert_eq!(code, 0, "{text}");
    let recs = read_jsonl(&dir.path().join("o/conc2/records.jsonl"));
    let diffs: Vec<(i64, i64)> = recs
        .iter()
        .filter(|r| r["phase"] == "measured")
        .map(|r| {
            let c = r["prompt_tokens_client"].as_i64().unwrap();
            (r["prompt_tokens_server"].as_i64().unwrap() - c, c)
        })
        .collect();
    // the server's chat template adds the same tokens to every prompt: the overhead the
    // preflight measured, and more than 5 % of these prompts (an uncorrected rule would trip)
    let overhead = diffs[0].0;
    assert!(diffs.iter().all(|d| d.0 == overhead), "{diffs:?}");
    assert!(
        diffs.iter().any(|&(o, c)| o as f64 / c as f64 > 0.05),
        "{diffs:?}"
    );
    assert!(
        text.contains(&format!(
            "prompt length checked: usage.prompt_tokens − {overhead} (server overhead"
        )),
        "{text}"
    );
    let agg = read_json(&dir.path().join("o/conc2/agg.json"));
    assert_eq!(agg["point_status"], "ok", "{text}");
}

#[test]
fn real_engine_with_the_wrong_tokenizer_is_invalid() {
    // a word-level tokenizer (one token per `wN` word) against llama.cpp's BPE: the server
    // counts each prompt differently from the client — the prompt rule invalidates the point
    let Some((url, _)) = common::real_engine() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tok = write_tokenizer(dir.path());
    let (code, text) = real_sweep(dir.path(), &url, &tok, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("→ POINT INVALID: prompt length violated: 20/20 off by more than 5 %"),
        "{text}"
    );
    let agg = read_json(&dir.path().join("o/conc2/agg.json"));
    assert_eq!(agg["point_status"], "invalid");
    // the output length is honoured by the real engine: no fixed-length violation
    let reasons = agg["invalid_reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
}
