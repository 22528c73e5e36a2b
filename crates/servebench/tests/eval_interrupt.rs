//! Ctrl-C (SIGINT) during an eval, through the built binary against the embedded simulator in
//! real time: `servebench eval gsm8k` stops promptly, writes result.json from the samples so
//! far marked partial, finishes the stored run as `interrupted` and exits 130; in
//! `sweep --eval gsm8k` the interrupt stops the eval (not a point) and says so.

use crate::common;
use common::{piped_in, read_json, sigint, wait_lines};

use std::time::{Duration, Instant};

use servebench_store::{RunKind, RunStatus, Store};

#[test]
fn ctrl_c_stops_eval_writes_partial_result_and_marks_the_run_interrupted() {
    let d = tempfile::tempdir().unwrap();
    // 200 documents at conc 2 in real time take far longer than this test waits
    let child = piped_in(d.path())
        .args([
            "eval",
            "gsm8k",
            "--limit",
            "200",
            "--conc",
            "2",
            "--out",
            "e",
            "--db",
            "s.db",
            "--no-progress",
        ])
        .spawn()
        .unwrap();
    wait_lines(&d.path().join("e/samples.jsonl"), 2);
    let t = Instant::now();
    sigint(child.id());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(t.elapsed() < Duration::from_secs(10), "stops promptly");
    assert_eq!(o.status.code(), Some(130), "stderr: {err}");
    assert!(err.contains("interrupted") && err.contains("eval"), "{err}");
    assert!(out.contains("PARTIAL"), "{out}");

    let r = read_json(&d.path().join("e/result.json"));
    assert_eq!(r["partial"], true);
    let n_eff = r["row"]["n_eff"].as_u64().unwrap();
    let samples = std::fs::read_to_string(d.path().join("e/samples.jsonl")).unwrap();
    assert!(n_eff >= 2 && n_eff < 200, "n_eff {n_eff}");
    assert_eq!(
        n_eff as usize,
        samples.lines().count(),
        "scores = samples kept"
    );

    let store = Store::open(d.path().join("s.db")).unwrap();
    let runs = store.list_runs(Some(RunKind::Eval), None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Interrupted);
    assert!(
        store.evals(runs[0].id).unwrap().is_empty(),
        "a partial score is not stored as an eval row"
    );
}

#[test]
fn ctrl_c_during_sweep_eval_stops_the_eval_and_names_it() {
    let d = tempfile::tempdir().unwrap();
    let child = piped_in(d.path())
        .args([
            "sweep",
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
            "--sim-speedup",
            "1",
            "--eval",
            "gsm8k",
            "--eval-limit",
            "200",
            "--eval-conc",
            "2",
            "--out",
            "o",
            "--db",
            "s.db",
        ])
        .spawn()
        .unwrap();
    wait_lines(&d.path().join("o/eval-gsm8k/samples.jsonl"), 2);
    let t = Instant::now();
    sigint(child.id());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(t.elapsed() < Duration::from_secs(10), "stops promptly");
    assert_eq!(o.status.code(), Some(130), "stderr: {err}");
    assert!(err.contains("stopping eval gsm8k"), "{err}");
    assert!(!err.contains("point marked partial"), "{err}");

    let r = read_json(&d.path().join("o/eval-gsm8k/result.json"));
    assert_eq!(r["partial"], true);
    assert!(r["row"]["n_eff"].as_u64().unwrap() < 200);
    // the point itself finished before the interrupt
    let summary = read_json(&d.path().join("o/summary.json"));
    assert_eq!(summary["points"][0]["point_status"], "ok");

    let store = Store::open(d.path().join("s.db")).unwrap();
    let runs = store.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Interrupted);
    assert!(store.evals(runs[0].id).unwrap().is_empty());
    assert_eq!(store.points(runs[0].id).unwrap().len(), 1);
}
