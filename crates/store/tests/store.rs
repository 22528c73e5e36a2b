//! The results store against real SQLite files: schema, round trips, two writer processes,
//! writer threads with separate connections, and a writer killed mid-sweep.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{agg_row, eval_row, foreign};
use serde_json::json;
use servebench_store::{RunId, RunKind, RunMeta, RunStatus, Store, StoredRow, SCHEMA_VERSION};

/// Child-process entry point of the multi-process tests ([`child`] runs this test binary with
/// `--ignored --exact child_entry` and `SB_STORE_CHILD` set). Ignored in a normal run: on its
/// own it has nothing to check.
#[test]
#[ignore = "the child process of the multi-process store tests, started by them"]
fn child_entry() {
    let mode = std::env::var("SB_STORE_CHILD")
        .expect("child_entry is started by the multi-process tests, which set SB_STORE_CHILD");
    let db = std::env::var("SB_STORE_DB").unwrap();
    let n: u64 = std::env::var("SB_STORE_N").unwrap().parse().unwrap();
    let tag = std::env::var("SB_STORE_TAG").unwrap();
    // Start line: wait (bounded) until the parent says go, so both writers really overlap.
    if let Ok(go) = std::env::var("SB_STORE_GO") {
        // tell the parent this writer is at the start line
        std::fs::write(format!("{go}.{tag}.ready"), b"").unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !Path::new(&go).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let mut store = Store::open(&db).unwrap();
    let mut meta = RunMeta::new(RunKind::Sweep);
    meta.label = Some(tag.clone());
    let run = store.record_run(&meta).unwrap();
    for i in 0..n {
        store.add_point(run, &agg_row(i, &tag)).unwrap();
        if mode == "slow" {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    match mode.as_str() {
        // Dies without finishing the run, like a crash mid-sweep.
        "abort" => std::process::abort(),
        _ => store.finish_run(run, RunStatus::Ok).unwrap(),
    }
}

fn child(db: &Path, mode: &str, n: u64, tag: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        "child_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("SB_STORE_CHILD", mode)
    .env("SB_STORE_DB", db)
    .env("SB_STORE_N", n.to_string())
    .env("SB_STORE_TAG", tag)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    c
}

#[test]
fn schema_wal_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("servebench.db");
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let mut meta = RunMeta::new(RunKind::Sweep);
    meta.endpoint = Some("http://127.0.0.1:8000".into());
    meta.image = Some("lmsysorg/sglang:v0.5.20-cu130".into());
    meta.index_digest =
        Some("sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f".into());
    meta.platform_digest =
        Some("sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4".into());
    meta.config_key = Some("qwen3.8next-fp4-b200-sglang-agentic-mtp".into());
    meta.topology = Some("TP1/EP1".into());
    meta.workload = Some("AgentX".into());
    meta.out_dir = Some("servebench-out/20260915T000000Z".into());
    let run = s.record_run(&meta).unwrap();
    let row = agg_row(16, "a");
    s.add_point(run, &row).unwrap();
    s.add_point(run, &agg_row(32, "a")).unwrap();
    let eval = eval_row(16, 0.9795);
    s.add_eval(run, &eval).unwrap();
    s.set_provenance(run, "image.index_digest", "sha256:06e4")
        .unwrap();
    s.set_provenance(run, "image.index_digest", "sha256:06e4f2")
        .unwrap();
    s.set_provenance(run, "source.file", "baseline.json")
        .unwrap();

    let r = s.get_run(run).unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Running);
    assert_eq!((r.n_points, r.n_evals), (2, 1));
    assert!(r.created_at.ends_with('Z'), "UTC: {}", r.created_at);
    s.finish_run(run, RunStatus::Ok).unwrap();
    drop(s);

    // Reopen: persisted, WAL, migrations not re-run.
    let s = Store::open(&db).unwrap();
    let r = s.get_run(run).unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Ok);
    assert!(r.finished_at.is_some());
    assert_eq!(r.meta.platform_digest, meta.platform_digest);
    assert_eq!(r.meta.config_key, meta.config_key);
    let pts = s.points(run).unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(
        pts[0].row,
        StoredRow::Servebench(row.clone()),
        "rows read back as they were added (null stays null)"
    );
    assert_eq!(pts[0].records_file.as_deref(), Some("conc16/records.jsonl"));
    assert_eq!(pts[0].hw.as_deref(), Some("sim-h200"));
    assert_eq!(
        s.evals(run).unwrap()[0].row,
        StoredRow::Servebench(eval.clone())
    );
    // the stored text is the row's own JSON, byte for byte (what agg.json / result.json hold)
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let text: String = conn
            .query_row(
                "SELECT row_json FROM points WHERE id = ?1",
                [pts[0].id],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(text, serde_json::to_string(&row.to_value()).unwrap());
        assert!(text.contains(r#""median_ttft":null"#), "{text}");
        let (text, score): (String, f64) = conn
            .query_row(
                "SELECT row_json, score FROM evals WHERE run_id = ?1",
                [run.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(text, serde_json::to_string(&eval).unwrap());
        assert_eq!(score, 0.9795);
    }
    assert_eq!(
        s.provenance(run).unwrap(),
        vec![
            (
                "image.index_digest".to_string(),
                "sha256:06e4f2".to_string()
            ),
            ("source.file".to_string(), "baseline.json".to_string())
        ]
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // Per-request records are not in the store: only the path.
    let cols: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('points')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(cols.contains(&"records_file".to_string()));
    assert!(!cols
        .iter()
        .any(|c| c.contains("itl") || c.contains("record_json")));

    // list / latest / errors
    let mut s = Store::open(&db).unwrap();
    let b = s.record_run(&RunMeta::new(RunKind::Baseline)).unwrap();
    assert_eq!(s.latest_run(None).unwrap().unwrap().id, b);
    assert_eq!(s.latest_run(Some(RunKind::Sweep)).unwrap().unwrap().id, run);
    assert_eq!(s.list_runs(None, None).unwrap().len(), 2);
    assert_eq!(s.list_runs(Some(RunKind::Eval), None).unwrap().len(), 0);
    let e = s.add_point(RunId(999), &row).unwrap_err().to_string();
    assert!(e.contains("run 999 does not exist"), "{e}");
    // imported rows go to baseline runs only, servebench rows to the others
    let inferencex = foreign(json!({"hw": "b200", "conc": 4, "tp": 8, "dp_attention": "true"}));
    let e = s
        .add_foreign_point(run, &inferencex)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("run {run} is a sweep run")), "{e}");
    let e = s.add_point(b, &row).unwrap_err().to_string();
    assert!(e.contains(&format!("run {b} is a baseline run")), "{e}");
    let e = s.add_eval(b, &eval).unwrap_err().to_string();
    assert!(e.contains("baseline run"), "{e}");
    s.integrity_check().unwrap();
}

#[test]
fn a_baseline_run_keeps_its_imported_rows_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let b = s.record_run(&RunMeta::new(RunKind::Baseline)).unwrap();
    // InferenceX multinode row: booleans as strings, topology under prefill_*, no api
    let row = foreign(json!({
        "hw": "gb200-multinode", "framework": "dynamo-trt", "infmax_model_prefix": "dsr1",
        "precision": "fp4", "is_multinode": "true", "prefill_tp": 4, "prefill_ep": 4,
        "prefill_dp_attention": "true", "decode_tp": 8, "conc": "64", "isl": 8192,
        "osl": 1024, "tput_per_gpu": 1500.5, "median_ttft": null,
        "point_status": "partial"
    }));
    let eval = foreign(
        json!({"task": "gsm8k", "metric": "em_strict", "samples": 1319,
                              "em_strict": 0.95, "hw": "b200", "conc": 64}),
    );
    let id = s.add_foreign_point(b, &row).unwrap();
    s.add_foreign_eval(b, &eval).unwrap();
    let e = s
        .add_foreign_eval(b, &foreign(json!({"score": 0.9})))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing field `task`"), "{e}");
    let pts = s.points(b).unwrap();
    assert_eq!(pts[0].row, StoredRow::Imported(row.clone()));
    assert_eq!(
        pts[0].status,
        servebench_contracts::PointStatus::Interrupted
    );
    assert_eq!(
        s.evals(b).unwrap()[0].row,
        StoredRow::Imported(eval.clone())
    );
    // the columns come from the foreign spelling
    let conn = rusqlite::Connection::open(&db).unwrap();
    let cols: (Option<i64>, Option<i64>, Option<i64>, Option<i64>, String) = conn
        .query_row(
            "SELECT tp, ep, dp_attention, conc, row_json FROM points WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_eq!(
        (cols.0, cols.1, cols.2, cols.3),
        (Some(4), Some(4), Some(1), Some(64))
    );
    assert_eq!(cols.4, serde_json::to_string(&row).unwrap());
    let (score, n): (f64, i64) = conn
        .query_row(
            "SELECT score, n_eff FROM evals WHERE run_id = ?1",
            [b.0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((score, n), (0.95, 1319));
}

#[test]
fn a_stored_row_that_is_not_an_agg_row_is_named_by_run_point_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    let id = s.add_point(run, &agg_row(1, "a")).unwrap();
    let ev = s.add_eval(run, &eval_row(1, 0.9)).unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(&db).unwrap();
    // a whole row but for one field of the wrong type
    let mut bad = agg_row(1, "a").to_value();
    bad["conc"] = json!("many");
    conn.execute(
        "UPDATE points SET row_json = ?1",
        [serde_json::to_string(&bad).unwrap()],
    )
    .unwrap();
    conn.execute("UPDATE evals SET row_json = '{\"task\": \"gsm8k\"}'", [])
        .unwrap();
    drop(conn);
    let s = Store::open(&db).unwrap();
    let e = s.points(run).unwrap_err().to_string();
    assert!(e.contains(&format!("run {run}, point {id}")), "{e}");
    assert!(e.contains("`conc`"), "{e}");
    assert!(e.contains("s.db"), "{e}");
    let e = s.evals(run).unwrap_err().to_string();
    assert!(e.contains(&format!("run {run}, eval {ev}")), "{e}");
    assert!(e.contains("missing field"), "{e}");
}

#[test]
fn newer_schema_is_refused_and_garbage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    Store::open(&db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(conn);
    let e = format!("{:#}", Store::open(&db).err().unwrap());
    assert!(e.contains("newer than this servebench"), "{e}");

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"this is not sqlite at all, not even close.......").unwrap();
    let e = format!("{:#}", Store::open(&junk).err().unwrap());
    assert!(e.contains("junk.db"), "{e}");
    let e = format!(
        "{:#}",
        Store::open(dir.path().join("no/such/dir/s.db"))
            .err()
            .unwrap()
    );
    assert!(e.contains("does not exist"), "{e}");
}

#[test]
fn two_processes_writing_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("servebench.db");
    // Both start on a file that does not exist yet: migrations race too.
    let n = 300;
    let go = dir.path().join("go");
    let mut a = child(&db, "fast", n, "proc-a")
        .env("SB_STORE_GO", &go)
        .spawn()
        .unwrap();
    let mut b = child(&db, "fast", n, "proc-b")
        .env("SB_STORE_GO", &go)
        .spawn()
        .unwrap();
    // both writers at the start line (each says so with a file), then go
    let deadline = Instant::now() + Duration::from_secs(60);
    for tag in ["proc-a", "proc-b"] {
        let ready = dir.path().join(format!("go.{tag}.ready"));
        while !ready.exists() {
            assert!(
                Instant::now() < deadline,
                "{tag} never reached the start line"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    std::fs::write(&go, b"go").unwrap();
    let (ra, rb) = (a.wait().unwrap(), b.wait().unwrap());
    let mut err = String::new();
    for c in [&mut a, &mut b] {
        use std::io::Read;
        c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    }
    assert!(ra.success() && rb.success(), "children failed: {err}");
    let s = Store::open(&db).unwrap();
    s.integrity_check().unwrap();
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r.status, RunStatus::Ok);
        assert_eq!(r.n_points, n);
        let pts = s.points(r.id).unwrap();
        let concs: Vec<u64> = pts
            .iter()
            .map(|p| p.row.servebench().unwrap().conc.unwrap())
            .collect();
        assert_eq!(concs, (0..n).collect::<Vec<_>>(), "every row, in order");
        let tag = r.meta.label.clone().unwrap();
        assert!(
            pts.iter()
                .all(|p| p.row.servebench().unwrap().extra["tag"] == json!(tag)),
            "no row crossed runs"
        );
    }
    // How much the two writers interleaved (informative: the store serialised them).
    let mut all: Vec<(i64, usize)> = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        all.extend(s.points(r.id).unwrap().iter().map(|p| (p.id, k)));
    }
    all.sort();
    let switches = all.windows(2).filter(|w| w[0].1 != w[1].1).count();
    eprintln!("writer switches between the two processes: {switches}");
}

#[test]
fn threads_with_separate_connections() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("servebench.db");
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&db).unwrap();
                let run = s.record_run(&RunMeta::new(RunKind::Bench)).unwrap();
                for i in 0..40 {
                    s.add_point(run, &agg_row(i, &format!("t{t}"))).unwrap();
                    if i % 10 == 0 {
                        s.add_eval(run, &eval_row(i as u32, 0.9)).unwrap();
                    }
                }
                s.finish_run(run, RunStatus::Ok).unwrap();
                run
            })
        })
        .collect();
    let runs: Vec<RunId> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let s = Store::open(&db).unwrap();
    for r in runs {
        let rec = s.get_run(r).unwrap().unwrap();
        assert_eq!(
            (rec.n_points, rec.n_evals, rec.status),
            (40, 4, RunStatus::Ok)
        );
    }
    s.integrity_check().unwrap();
}

#[test]
fn crash_mid_sweep_keeps_finished_points() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("servebench.db");
    // (1) abort() after 5 points: the run never finishes.
    let st = child(&db, "abort", 5, "aborted").status().unwrap();
    assert!(!st.success());
    let s = Store::open(&db).unwrap();
    let r = s.latest_run(None).unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Running);
    assert_eq!(r.n_points, 5);
    drop(s);

    // (2) SIGKILL while writing: every point committed before the kill is there and whole.
    let mut c = child(&db, "slow", 10_000, "killed").spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let s = Store::open(&db).unwrap();
    let killed_run = loop {
        assert!(Instant::now() < deadline, "child wrote nothing in 60 s");
        std::thread::sleep(Duration::from_millis(50));
        if let Some(r) = s.latest_run(None).unwrap() {
            if r.meta.label.as_deref() == Some("killed") && r.n_points >= 5 {
                break r.id;
            }
        }
    };
    c.kill().unwrap();
    c.wait().unwrap();
    drop(s);
    let s = Store::open(&db).unwrap();
    s.integrity_check().unwrap();
    let r = s.get_run(killed_run).unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Running);
    let pts = s.points(killed_run).unwrap();
    assert!(pts.len() >= 5);
    for (i, p) in pts.iter().enumerate() {
        assert_eq!(
            p.row.servebench().unwrap().conc.unwrap(),
            i as u64,
            "no gaps, no torn rows"
        );
    }
}

/// The energy block of a point round-trips through the store: the row's bytes and the typed
/// `AggRow::power` (measured, missing, modelled, and a row written before energy), and the
/// energy columns hold the same numbers (NULL where the row has none, never zeros).
#[test]
fn energy_round_trips_through_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let mut s = Store::open(&db).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    let want = common::energy_rows();
    for r in &want {
        s.add_point(run, r).unwrap();
    }
    let rows: Vec<_> = s
        .points(run)
        .unwrap()
        .iter()
        .map(|p| match &p.row {
            StoredRow::Servebench(r) => r.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(rows, want);
    drop(s);
    assert_eq!(energy_columns(&db), common::ENERGY_COLUMNS);
}

/// `(power_source, power_valid, avg_power_w, joules_per_output_token)` of every point, in
/// insertion order, as `common::ENERGY_COLUMNS` spells them.
fn energy_columns(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT coalesce(power_source, '-') || '|' || coalesce(power_valid, '-') || '|' ||
                    coalesce(avg_power_w, '-') || '|' || coalesce(joules_per_output_token, '-')
             FROM points ORDER BY id",
        )
        .unwrap();
    let v = st
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    v.into_iter()
        .map(|s| s.replace("317.0|", "317|").replace("350.0|", "350|"))
        .collect()
}

/// A store of schema 4 (before the energy columns) migrates on open: the columns are added and
/// filled from the stored rows, the rows keep their bytes; imported InferenceX rows get their
/// `power_valid` and numbers (no `power_source`: the file does not say).
#[test]
fn a_schema_4_store_migrates_its_energy_into_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v4.db");
    let mut s = Store::open(&db).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    for r in &common::energy_rows() {
        s.add_point(run, r).unwrap();
    }
    let base = s.record_run(&RunMeta::new(RunKind::Baseline)).unwrap();
    s.add_foreign_point(
        base,
        &foreign(
            json!({"hw": "mi355x", "conc": 4, "isl": 1024, "osl": 1024, "tp": 4,
            "framework": "sglang", "precision": "fp4", "infmax_model_prefix": "dsr1",
            "power_metric_schema_version": 2, "power_valid": 1, "avg_power_w": 628.907,
            "joules_per_output_token": 6.353339}),
        ),
    )
    .unwrap();
    drop(s);
    let row_json = |db: &Path| -> Vec<String> {
        let conn = rusqlite::Connection::open(db).unwrap();
        let mut st = conn
            .prepare("SELECT row_json FROM points ORDER BY id")
            .unwrap();
        let v = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        v.collect::<rusqlite::Result<Vec<_>>>().unwrap()
    };
    let before = row_json(&db);
    // what schema 4 had: the same tables without the energy columns
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DROP INDEX points_energy;
         ALTER TABLE points DROP COLUMN power_source; ALTER TABLE points DROP COLUMN power_valid;
         ALTER TABLE points DROP COLUMN avg_power_w; ALTER TABLE points DROP COLUMN total_gpu_energy_j;
         ALTER TABLE points DROP COLUMN joules_per_output_token;
         ALTER TABLE points DROP COLUMN joules_per_total_token;
         PRAGMA user_version = 4;",
    )
    .unwrap();
    drop(conn);
    let s = Store::open(&db).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(s.points(run).unwrap().len(), 4);
    drop(s);
    assert_eq!(row_json(&db), before, "rows keep their bytes");
    let mut want: Vec<String> = common::ENERGY_COLUMNS
        .iter()
        .map(|s| s.to_string())
        .collect();
    want.push("-|1|628.907|6.353339".into());
    assert_eq!(energy_columns(&db), want);
}
