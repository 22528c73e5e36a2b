//! `servebench sweep --scenario agentx` end to end against the embedded simulator: the AgentX
//! files are written, a context-overflow rejection ends only that session (the lane recycles and
//! keeps measuring), and the result is matched against the scenario's AgentX baseline table.

use crate::common;

use common::{agentx_traces as traces, read_json, read_jsonl, servebench_in, shared};

#[test]
fn context_overflow_ends_the_session_and_the_lane_recycles() {
    let tmp = tempfile::tempdir().unwrap();
    // every play of trace_0092 is over Qwen3-8B's 40,960-token context from its first turn
    // (its first user message alone is > 500k tokens at 4 characters a token)
    let t = traces(tmp.path(), &["trace_0092.json"]);
    let out = tmp.path().join("out");
    let o = servebench_in(tmp.path())
        .args([
            "sweep",
            "--scenario",
            "agentx",
            "--conc",
            "1",
            "--duration",
            "6",
        ])
        .arg("--traces")
        .arg(&t)
        .arg("--out")
        .arg(&out)
        .args(["--no-store"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let recs = read_jsonl(&out.join("conc1/agentx_records.jsonl"));
    let prof: Vec<_> = recs.iter().filter(|r| r["phase"] == "profiling").collect();
    let overflow_end = prof
        .iter()
        .filter(|r| r["http_status"] == 400)
        .map(|r| r["end_ns"].as_u64().unwrap())
        .min();
    let Some(first_overflow) = overflow_end else {
        panic!("no context overflow in the profiling window; stderr:\n{stderr}")
    };
    // the lane did not stall: a request started after the first overflow ended
    assert!(
        prof.iter()
            .any(|r| r["start_ns"].as_u64().unwrap() > first_overflow),
        "no request after the overflow (lane stalled); {} profiling records; stderr:\n{stderr}",
        prof.len()
    );
    // the rejections are counted apart, as the harness does: flagged in agentx_records.jsonl,
    // `context_overflow` (not http_400) in records.jsonl, out of the aggregate and the gate
    let n_overflow = prof
        .iter()
        .filter(|r| r["context_overflow"] == true)
        .count();
    assert_eq!(n_overflow, prof.len(), "every profiling request overflowed");
    assert!(
        prof.iter().all(|r| r["error"] == "context_overflow"),
        "the error field names the kind, not a JSON body cut at its first colon"
    );
    let client = read_jsonl(&out.join("conc1/records.jsonl"));
    assert!(client
        .iter()
        .filter(|r| r["phase"] == "measured")
        .all(|r| r["failure"] == "context_overflow"));
    let agentx = read_json(&out.join("conc1/agentx.json"));
    assert_eq!(
        agentx["request_accounting"]["records_error_dropped"], 0,
        "{agentx}"
    );
    // result.json: the AgentX aggregate plus servebench's own block
    let result = read_json(&out.join("conc1/result.json"));
    let sb = &result["servebench"];
    assert_eq!(
        sb["context_overflow_requests"]["profiling"].as_u64(),
        Some(prof.len() as u64)
    );
    assert_eq!(
        sb["submission_invalid_reasons"],
        serde_json::json!(["unsafe_override", "context_overflow_rate_exceeded"])
    );
    let agg = read_json(&out.join("conc1/agg.json"));
    assert_eq!(agg["agentx_submission_valid"], false);
    assert_eq!(
        agg["num_requests_failed"], 0,
        "rejections are not failed requests"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("note: conc 1: context overflow:") && stdout.contains("session(s) ended"),
        "overflows are said under the table: {stdout}"
    );
    // more than 1 % of the profiling requests rejected: InferenceX's rule, said with its code;
    // nothing was served, so the point failed (nothing measured), named as such
    assert!(
        stdout.contains("POINT FAILED (no request was measured)")
            && stdout.contains("note: conc 1: not a valid InferenceX submission: ")
            && stdout.contains("(context_overflow_rate_exceeded)"),
        "{stdout}"
    );
    assert!(!o.status.success(), "a failed point exits non-zero");
}

#[test]
fn agentx_sweep_is_matched_with_the_scenarios_agentx_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let t = traces(tmp.path(), &["trace_0504.json", "trace_0167.json"]);
    let out = tmp.path().join("out");
    let db = tmp.path().join("s.db");
    let o = servebench_in(tmp.path())
        .args([
            "sweep",
            "--scenario",
            "agentx",
            "--conc",
            "1",
            "--duration",
            "10",
        ])
        .arg("--traces")
        .arg(&t)
        .arg("--out")
        .arg(&out)
        .arg("--db")
        .arg(&db)
        .args([
            "--tp",
            "1",
            "--ep",
            "1",
            "--hw",
            "b200",
            "--framework",
            "sglang",
        ])
        .args([
            "--precision",
            "fp4",
            "--model-prefix",
            "qwen3.8next",
            "--spec-decoding",
            "mtp",
        ])
        .args(["--config-key", "qwen3.8next-fp4-b200-sglang-agentic-mtp"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let agg = read_json(&out.join("conc1/agg.json"));
    assert_eq!(agg["benchmark_type"], "agentic_traces", "{agg}");
    // energy over the profiling window, modelled on the simulator (issue 30): the window's
    // modelled length × the point's mean modelled power, per output token of the window
    assert_eq!(agg["power_source"], "modelled", "{agg}");
    assert_eq!(agg["power_valid"], 0, "{agg}");
    let (w, j, e) = (
        agg["avg_power_w"].as_f64().unwrap(),
        agg["joules_per_output_token"].as_f64().unwrap(),
        agg["total_gpu_energy_j"].as_f64().unwrap(),
    );
    assert!(w > 77.0 && w < 1000.0, "between idle and TDP: {agg}");
    assert!(
        (e / w - 10.0).abs() < 0.01,
        "the 10 s window: {e} J at {w} W"
    );
    let out_tokens = agg["agentx"]["request_metrics"]["output_sequence_length"]["sum"].as_f64();
    if let Some(n) = out_tokens {
        assert!((j - e / n).abs() < 1e-3, "{j} J/tok vs {e} J / {n} tokens");
    }
    assert!(stdout_has_energy(&o), "the point's energy line");
    // a 10 s window is not a valid InferenceX submission (unsafe_override): the point is
    // measured and stored as ok (its numbers stand), but the sweep says the run is invalid in
    // its status line, its exit code and `servebench runs`, as `servebench run` does for the
    // same point (was: `status ok`, exit 0)
    assert_eq!(agg["agentx_submission_valid"], false, "{agg}");
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("status ok (INVALID: conc 1; see the notes above)")
            && stdout.contains("note: conc 1: not a valid InferenceX submission: "),
        "{stdout}"
    );
    let runs = servebench_in(tmp.path())
        .args(["runs", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let runs_text = String::from_utf8_lossy(&runs.stdout);
    assert!(
        runs_text.contains("conc 1: not a valid InferenceX submission (unsafe_override"),
        "{runs_text}"
    );
    let table = servebench_in(tmp.path())
        .args(["runs", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&table.stdout).contains("ok (INVALID)"),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );
    let c = servebench_in(tmp.path())
        .args(["compare", "--json", "--candidate", "latest", "--baseline"])
        .arg(shared().join("data/scenario/baseline.json"))
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("compare --json: {e}: {text}"));
    let points = v["points"].as_array().expect("points");
    let c1 = points
        .iter()
        .find(|p| p["identity"]["conc"] == 1)
        .unwrap_or_else(|| panic!("conc 1 is matched with the baseline: {text}"));
    assert_eq!(c1["identity"]["benchmark_type"], "agentic_traces");
    assert_ne!(c1["verdict"], "not_comparable", "{c1}");
    let total = c1["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "total_tput_per_gpu")
        .expect("total tok/s/GPU compared");
    assert_eq!(total["baseline"], 14445.12);
    assert!(total["delta"]["pct"].is_number(), "a real delta: {total}");
}

/// New-user F11/F16: an empty traces.jsonl got as far as the replay (`no trace has a live
/// stream at its start point`, after the simulator started) and left a half-made results
/// directory (`sweep-flags.json`, an empty `sim-emission.jsonl`, `conc1/`). `--traces` is now
/// checked before anything is created: one line naming the file, no output directory, no store.
#[test]
fn traces_without_a_trace_are_refused_before_anything_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("empty.jsonl"), "").unwrap();
    std::fs::create_dir(d.join("blank")).unwrap();
    std::fs::write(d.join("blank/traces.jsonl"), "\n\n").unwrap();
    for (arg, want) in [
        ("empty.jsonl", "empty.jsonl: no traces in the file"),
        ("blank", "blank: no traces in its 1 *.jsonl file(s)"),
        ("missing.jsonl", "missing.jsonl: cannot read"),
    ] {
        let o = servebench_in(d)
            .args(["sweep", "--conc", "1", "--duration", "5", "--traces", arg])
            .args(["--out", "o", "--db", "s.db"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{arg}: {out}{err}");
        assert!(err.contains(&format!("--traces {arg}: {want}")), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!out.contains("embedded simulator"), "{arg}: started: {out}");
        assert!(!d.join("o").exists(), "{arg}: an output directory was made");
        assert!(!d.join("s.db").exists(), "{arg}: a store was made");
    }
    // a missing --tokenizer too (it was found only after the simulator had started)
    let t = common::agentx_traces(d, &["trace_0092.json"]);
    let o = servebench_in(d)
        .args(["sweep", "--conc", "1", "--duration", "5", "--traces"])
        .arg(&t)
        .args(["--tokenizer", "no-tok", "--out", "o", "--db", "s.db"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tokenizer file no-tok does not exist"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("embedded simulator"));
    assert!(!d.join("o").exists() && !d.join("s.db").exists());
}

/// The sweep printed the point's energy line, marked modelled.
fn stdout_has_energy(o: &std::process::Output) -> bool {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    all.contains("conc 1: energy: ") && all.contains("(modelled, not measured)")
}
