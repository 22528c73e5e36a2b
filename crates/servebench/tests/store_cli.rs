//! `servebench baseline import` and `servebench runs` through the binary, on real SQLite files.

use crate::common;
use common::{output_in, run_in, BIN, SHARED};

use std::path::Path;
use std::process::Command;

#[test]
fn import_scenario_baseline_then_list() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{SHARED}/data/scenario/baseline.json");
    // Default store: ./servebench.db in the working directory.
    let o = output_in(dir.path(), &["baseline", "import", &file]);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.starts_with("imported baseline run 1 from ")
            && out.contains("(baseline table) into servebench.db: 4 points, 1 eval · 2026-09-15 · `lmsysorg/sglang:qwen38flashnext` · AgentX · TP1/EP1 · Mean latency"),
        "{out}"
    );
    assert!(err.contains("identity derived from config key"), "{err}");
    assert!(dir.path().join("servebench.db").exists());

    let o = output_in(dir.path(), &["runs", "--json"]);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &runs[0];
    assert_eq!(r["kind"], "baseline");
    assert_eq!(r["status"], "ok");
    assert_eq!(r["n_points"], 4);
    assert_eq!(r["n_evals"], 1);
    assert_eq!(r["created_at"], "2026-09-15T00:00:00Z");
    assert_eq!(
        r["meta"]["config_key"],
        "qwen3.8next-fp4-b200-sglang-agentic-mtp"
    );

    let o = output_in(dir.path(), &["runs"]);
    let out = common::stdout(&o);
    assert!(
        out.contains("2026-09-15 00:00") && out.contains("baseline") && out.contains("AgentX"),
        "{out}"
    );
    let o = output_in(dir.path(), &["runs", "--kind", "sweep"]);
    assert_eq!(common::stdout(&o).trim(), "no runs in servebench.db");
}

#[test]
fn import_inferencex_golden_rows() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<serde_json::Value> = (1..=4)
        .map(|i| {
            let p = format!("{SHARED}/data/inferencex/golden/process-result/R{i}-agg.json");
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        })
        .collect();
    let f = dir.path().join("agg_bmk.json");
    std::fs::write(&f, serde_json::to_string(&rows).unwrap()).unwrap();
    let o = output_in(
        dir.path(),
        &["baseline", "import", "agg_bmk.json", "--db", "x.db"],
    );
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("(InferenceX rows) into x.db: 4 points, 0 evals"),
        "{out}"
    );
    // Stored verbatim: the row read back equals the golden file.
    let conn = rusqlite_free_read(&dir.path().join("x.db"));
    assert_eq!(conn, rows);
}

/// Reads the stored rows back through the store crate (the binary's own library).
fn rusqlite_free_read(db: &Path) -> Vec<serde_json::Value> {
    let s = servebench_store::Store::open(db).unwrap();
    let run = s.latest_run(None).unwrap().unwrap();
    s.points(run.id)
        .unwrap()
        .into_iter()
        .map(|p| p.row.to_value())
        .collect()
}

#[test]
fn bad_inputs_get_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = output_in(dir.path(), &["baseline", "import", "nope.json"]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.starts_with("error: nope.json: cannot read"), "{err}");
    std::fs::write(dir.path().join("bad.json"), "{\n  \"points\": [1,\n").unwrap();
    let (_, _, err) = run_in(dir.path(), &["baseline", "import", "bad.json"]);
    assert!(
        err.starts_with("error: bad.json: not valid JSON (line 3"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("rows.json"),
        r#"[{"hw": "b200", "framework": "vllm", "precision": "fp8", "conc": 4, "tp": 8}]"#,
    )
    .unwrap();
    let (_, _, err) = run_in(dir.path(), &["baseline", "import", "rows.json"]);
    assert!(
        err.contains("rows.json: row 0: missing field `infmax_model_prefix`"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let (_, _, err) = run_in(dir.path(), &["runs", "--db", "missing.db"]);
    assert!(
        err.starts_with("error: missing.db: no results store here"),
        "{err}"
    );
    assert!(
        !dir.path().join("missing.db").exists(),
        "reading commands create nothing"
    );
}

#[test]
fn two_processes_importing_into_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{SHARED}/data/scenario/baseline.json");
    // Two shells, each importing 8 times, at the same time, into one (new) store.
    let script = format!("for i in 1 2 3 4 5 6 7 8; do {BIN} baseline import {file} --db shared.db >/dev/null 2>&1 || exit 1; done");
    let spawn = || {
        Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(dir.path())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let s = servebench_store::Store::open(dir.path().join("shared.db")).unwrap();
    s.integrity_check().unwrap();
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 16);
    for r in runs {
        assert_eq!((r.n_points, r.n_evals), (4, 1), "run {}", r.id);
    }
}

/// A simulator sweep: `servebench runs` shows the endpoint in short (`sim: H200/Qwen3-8B`),
/// `--json` keeps the simulator's full description.
#[test]
fn runs_table_shortens_the_simulator_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let o = output_in(
        dir.path(),
        &[
            "sweep",
            "--isl",
            "256",
            "--osl",
            "128",
            "--conc",
            "1",
            "--num-prompts",
            "2",
            "--db",
            "s.db",
        ],
    );
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{out}{err}");
    let o = output_in(dir.path(), &["runs", "--db", "s.db"]);
    let out = common::stdout(&o);
    assert!(out.contains("sim: H200/Qwen3-8B"), "{out}");
    assert!(
        !out.contains("TFLOP/s"),
        "full description only in --json: {out}"
    );
    let o = output_in(dir.path(), &["runs", "--db", "s.db", "--json"]);
    let out = common::stdout(&o);
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ep = runs[0]["meta"]["endpoint"].as_str().unwrap();
    assert!(
        ep.starts_with("embedded simulator") && ep.contains("TFLOP/s"),
        "{ep}"
    );
}

/// A real capture of the InferenceX dashboard's `/benchmarks/history` (SOURCE.md S1): every CI
/// run becomes its own stored baseline run, dated, with its run link, and compare cites it.
#[test]
fn dashboard_history_imports_one_run_per_ci_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!(
        "{SHARED}/data/real-results/raw/S1-ix-app-cypress-528c4146/packages/app/cypress/fixtures/api/benchmarks-history.json"
    );
    let o = output_in(dir.path(), &["baseline", "import", &file, "--db", "h.db"]);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{out}{err}");
    // 1,462 rows of 133 CI runs (run URLs), oldest first
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 133, "{out}");
    assert!(
        lines[0].starts_with("imported baseline run 1 from ")
            && lines[0].contains(
                "(InferenceX dashboard API rows) into h.db: 3 points, 0 evals · 2025-12-05"
            ),
        "{}",
        lines[0]
    );
    let s = servebench_store::Store::open(dir.path().join("h.db")).unwrap();
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 133);
    assert_eq!(
        runs.iter().map(|r| r.n_points).sum::<u64>(),
        1462,
        "every history row stored"
    );
    // run 27213443242 (2026-06-11): 6 mi355x sglang fp4 points
    let url = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27213443242/attempts/1";
    let r = runs
        .iter()
        .find(|r| r.meta.meta["run_url"] == url)
        .expect("the run is stored");
    assert_eq!(r.id.0, 132);
    assert_eq!(r.n_points, 6);
    assert_eq!(r.created_at, "2026-06-11T00:00:00Z");
    assert_eq!(
        r.meta.label.as_deref(),
        Some("benchmarks-history.json · 2026-06-11 · run 27213443242")
    );
    let prov = s.provenance(r.id).unwrap();
    assert!(
        prov.contains(&("source.url".to_string(), url.to_string())),
        "{prov:?}"
    );

    // compared with a servebench row of its mi355x/sglang/dsr1/fp4 TP4 c4 point: matched,
    // the run cited as API 1
    let cand = serde_json::json!([{
        "hw": "mi355x", "conc": 4, "image": "lmsysorg/sglang:v0.5.13-rocm700-mi35x",
        "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
        "framework": "sglang", "precision": "fp4", "spec_decoding": "none", "disagg": false,
        "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 4, "ep": 1,
        "dp_attention": "false", "tput_per_gpu": 198.9447984579421 * 1.02,
        "output_tput_per_gpu": 98.9883650269406, "median_ttft": 0.10217383736744523,
        "benchmark_type": "single_turn", "point_status": "ok"
    }]);
    std::fs::write(dir.path().join("cand.json"), cand.to_string()).unwrap();
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "132",
            "--candidate",
            "cand.json",
            "--db",
            "h.db",
            "--stat",
            "median",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("202.92 (+2.0%)"), "{out}");
    assert!(
        out.contains(&format!("Baseline sources: API 1 {url}")),
        "{out}"
    );
}

/// A shared store holds no secrets: a sweep given `--api-key` records its command line with the
/// key replaced, and neither the SQLite file nor any file of the run holds the key's bytes.
#[test]
fn api_key_is_redacted_in_the_store_and_run_files() {
    const KEY: &str = "sk-servebench-test-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let o = output_in(
        dir.path(),
        &[
            "sweep",
            "--isl",
            "64",
            "--osl",
            "8",
            "--conc",
            "1",
            "--num-prompts",
            "2",
            "--warmups",
            "0",
            "--api-key",
            KEY,
            "--db",
            "s.db",
            "--out",
            "out",
        ],
    );
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{out}{err}");
    let o = output_in(dir.path(), &["runs", "--db", "s.db", "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let command = runs[0]["meta"]["meta"]["command"].as_str().unwrap();
    assert!(command.contains("--api-key ***"), "{command}");
    let mut files = vec![dir.path().join("s.db")];
    let mut stack = vec![dir.path().join("out")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 3, "the run wrote its files: {files:?}");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "{} holds the API key",
            f.display()
        );
    }
}
