//! `compare --baseline main`'s row choice ([`Store::baseline_point`]) against InferenceX's own
//! `utils/compare_results.py`, run on the same PostgreSQL database: a seeded history with
//! older main rows, failed and invalid rows, other branches, offload variants, other
//! topologies, hardware-suffix and model-prefix matches. The SQLite backend, seeded alike,
//! must choose the same rows.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::agg_row;
use crate::common::pg::fresh_db;
use serde_json::{json, Value};
use servebench_contracts::{AggRow, PointStatus};
use servebench_store::{RunKind, RunMeta, RunStatus, Store, StoredRow};

/// One stored row of the history: (day, branch, tput that names it, how it differs).
fn history() -> Vec<(u32, &'static str, f64, fn(&mut AggRow))> {
    vec![
        (1, "main", 101.0, |_| {}),
        (1, "main", 102.0, |r| r.conc = Some(8)),
        (2, "main", 201.0, |_| {}),
        (2, "main", 202.0, |r| {
            r.conc = Some(8);
            r.point_status = PointStatus::Failed;
        }),
        (2, "main", 203.0, |r| r.identity.tp = 4),
        (3, "main", 301.0, |r| {
            r.extra.insert("kv_offloading".into(), json!("cpu"));
        }),
        (4, "feature/x", 401.0, |_| {}),
        (4, "feature/x", 402.0, |r| r.conc = Some(8)),
        (5, "main", 501.0, |r| {
            r.conc = Some(8);
            r.point_status = PointStatus::Invalid;
            r.invalid_reasons = vec!["failure rate 12 % over 5 %".into()];
        }),
        (5, "main", 502.0, |r| {
            r.identity.infmax_model_prefix = "gptoss120b".into()
        }),
        (6, "main", 601.0, |r| {
            r.identity.hw = "H200-trt".into();
            r.identity.framework = "SIM".into();
            r.conc = Some(16);
        }),
        (6, "main", 602.0, |r| {
            r.conc = Some(16);
            r.identity.dp_attention = true;
        }),
        (7, "main", 701.0, |r| {
            r.conc = Some(16);
            r.identity.spec_decoding = "mtp".into();
        }),
    ]
}

/// The candidates (a PR's agg rows): what each should match is what the script says.
fn candidates() -> Vec<Value> {
    let base = |conc: u64| {
        let mut r = agg_row(conc, "candidate").to_value();
        r["hw"] = json!("h200");
        r
    };
    let mut out = vec![base(4), base(8), base(16), base(32)];
    let mut tp4 = base(4);
    tp4["tp"] = json!(4);
    out.push(tp4);
    let mut gpt = base(4);
    gpt["infmax_model_prefix"] = json!("gptoss");
    out.push(gpt);
    let mut mtp = base(16);
    mtp["spec_decoding"] = json!("MTP");
    out.push(mtp);
    let mut dp = base(16);
    dp["dp_attention"] = json!(true);
    out.push(dp);
    out
}

fn seed(s: &mut Store) {
    for (day, branch, tput, change) in history() {
        let mut m = RunMeta::new(RunKind::Sweep);
        m.branch = Some(branch.into());
        m.created_at = Some(format!("2026-09-0{day}T12:00:00.000Z"));
        let run = s.record_run(&m).unwrap();
        let mut r = agg_row(4, "history");
        r.identity.hw = "h200".into();
        r.tput_per_gpu = tput;
        change(&mut r);
        s.add_point(run, &r).unwrap();
        s.finish_run(run, RunStatus::Ok).unwrap();
    }
}

/// The tput of the row our store picks for `cand`, or `None`.
fn ours(s: &Store, cand: &Value) -> Option<f64> {
    let p = s.baseline_point(cand, "main").unwrap()?;
    match p.row {
        StoredRow::Servebench(r) => Some(r.tput_per_gpu),
        StoredRow::Imported(_) => panic!("seeded rows are servebench rows"),
    }
}

/// compare_results.py of the InferenceX checkout in the shared data, extracted to `dir`.
fn the_script(dir: &Path) -> Option<PathBuf> {
    let shared = servebench_testkit_shared()?;
    let tar = shared.join("data/inferencex/repo-843c6254f.tar.gz");
    let st = Command::new("tar")
        .args(["xzf"])
        .arg(&tar)
        .args(["-C"])
        .arg(dir)
        .arg("InferenceX/utils/compare_results.py")
        .status()
        .ok()?;
    st.success()
        .then(|| dir.join("InferenceX/utils/compare_results.py"))
}

fn servebench_testkit_shared() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = std::env::var_os("SERVEBENCH_SHARED")
        .map(PathBuf::from)
        .or_else(|| Some(here.join("../../../shared")))
        .filter(|p| p.join("data/inferencex").is_dir());
    servebench_testkit::require(
        found,
        "the shared data folder (SERVEBENCH_SHARED) is missing",
    )
}

/// The tput of the row the script matched for `cand` (its stderr line `-> Matched DB
/// model=…, tput=…`), or `None` (`-> No baseline found`).
fn theirs(script: &Path, url: &str, cand: &Value, dir: &Path) -> Option<f64> {
    let res = dir.join("results");
    let _ = std::fs::remove_dir_all(&res);
    std::fs::create_dir_all(&res).unwrap();
    std::fs::write(res.join("agg.json"), serde_json::to_vec(&[cand]).unwrap()).unwrap();
    let out = Command::new("python3")
        .arg(script)
        .arg(&res)
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "compare_results.py failed: {err}");
    if err.contains("-> No baseline found") {
        return None;
    }
    let t = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("-> Matched DB model="))
        .unwrap_or_else(|| panic!("no match line in: {err}"));
    Some(t.rsplit("tput=").next().unwrap().trim().parse().unwrap())
}

#[test]
fn our_baseline_rows_are_the_ones_compare_results_py_picks() {
    let Some(url) = fresh_db("sb_baseline_main") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let Some(script) = the_script(tmp.path()) else {
        return;
    };
    let py_ok = Command::new("python3")
        .args(["-c", "import psycopg2, tabulate"])
        .status()
        .is_ok_and(|s| s.success());
    if !py_ok {
        servebench_testkit::skip_or_fail(
            "python3 with psycopg2 and tabulate (scripts/services/postgres.sh installs them)",
        );
        return;
    }
    let mut pg = Store::open(&url).unwrap();
    seed(&mut pg);
    let mut lite = Store::open(tmp.path().join("s.db")).unwrap();
    seed(&mut lite);

    let mut matched = 0;
    for cand in candidates() {
        let want = theirs(&script, &url, &cand, tmp.path());
        let what = format!("candidate {}", cand);
        assert_eq!(ours(&pg, &cand), want, "PostgreSQL, {what}");
        assert_eq!(ours(&lite, &cand), want, "SQLite, {what}");
        matched += want.is_some() as usize;
    }
    // the history decides: newest error-free main row, offload and failures as the script
    let picks: Vec<Option<f64>> = candidates().iter().map(|c| ours(&pg, c)).collect();
    assert_eq!(
        picks,
        vec![
            Some(301.0),
            Some(102.0),
            Some(601.0),
            None,
            Some(203.0),
            Some(502.0),
            Some(701.0),
            Some(602.0)
        ]
    );
    assert_eq!(matched, 7);
}
