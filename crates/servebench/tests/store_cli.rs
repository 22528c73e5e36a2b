//! `servebench baseline import` and `servebench runs` through the binary, on real SQLite files.

mod common;
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
