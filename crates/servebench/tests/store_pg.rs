//! The results store in PostgreSQL through the real commands (server from
//! scripts/services/postgres.sh): a sweep, an AgentX sweep and a GSM8K eval land in Postgres;
//! `compare --baseline main` takes main's rows; `DATABASE_URL` is the store when `--db` is not
//! given; `store migrate` copies everything into SQLite with equal checksums. Tiny workloads.

use crate::common;
use common::{agentx_traces, gsm8k_in, ok};

use std::process::Command;

use servebench_store::{RunKind, Store};

/// A new empty database `name` on the service's cluster (through `psql`), or `None` (skipped).
fn fresh_db(name: &str) -> Option<String> {
    let url = servebench_testkit::require(
        std::env::var("SERVEBENCH_PG_URL")
            .ok()
            .filter(|u| !u.is_empty()),
        "no PostgreSQL: SERVEBENCH_PG_URL is not set (scripts/services/postgres.sh)",
    )?;
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        let o = Command::new("psql").args([&url, "-qc", &sql]).output();
        let good = o.as_ref().is_ok_and(|o| o.status.success());
        if !good {
            servebench_testkit::skip_or_fail(&format!("psql {sql}: {o:?}"));
            return None;
        }
    }
    Some(format!("{}/{name}", &url[..url.rfind('/').unwrap()]))
}

fn printed_run(stdout: &str) -> i64 {
    let l = stdout
        .lines()
        .find_map(|l| l.strip_prefix("run: "))
        .unwrap_or_else(|| panic!("no run line in {stdout}"));
    l.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn sweep_agentx_and_eval_land_in_postgres_and_compare_takes_main() {
    let Some(url) = fresh_db("sb_cli") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let sweep = |branch: &str, out: &str| {
        let o = gsm8k_in(d)
            .args(["sweep", "--num-prompts", "4", "--isl", "128", "--osl", "64"])
            .args(["--sim-speedup", "20", "--conc", "1,2", "--out", out])
            .args(["--db", &url, "--branch", branch])
            .output()
            .unwrap();
        printed_run(&ok(&o))
    };
    let main_run = sweep("main", "o-main");
    let pr_run = sweep("my-pr", "o-pr");
    let traces = agentx_traces(d, &["trace_0504.json"]);
    let o = gsm8k_in(d)
        .args([
            "sweep",
            "--scenario",
            "agentx",
            "--conc",
            "1",
            "--duration",
            "3",
        ])
        .arg("--traces")
        .arg(&traces)
        .args(["--out", "o-agentx", "--db", &url, "--branch", "main"])
        .output()
        .unwrap();
    let agentx_run = printed_run(&common::stdout(&o));
    // the eval fails its default gate (exit 2) on the replayed solutions; it is stored anyway
    let e = gsm8k_in(d)
        .args([
            "eval",
            "gsm8k",
            "--sim-zero-delay",
            "--no-progress",
            "--limit",
            "20",
        ])
        .args(["--out", "o-eval"])
        .env("DATABASE_URL", &url) // no --db: InferenceX's variable names the store
        .output()
        .unwrap();
    assert!(e.status.code().is_some_and(|c| c == 0 || c == 2), "{e:?}");

    let s = Store::open(&url).unwrap();
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 4, "{runs:#?}");
    let by = |id: i64| runs.iter().find(|r| r.id.0 == id).unwrap();
    assert_eq!(
        (by(main_run).n_points, by(main_run).meta.branch.as_deref()),
        (2, Some("main"))
    );
    assert_eq!(by(pr_run).meta.branch.as_deref(), Some("my-pr"));
    let ax = s.points(by(agentx_run).id).unwrap();
    assert_eq!(ax.len(), 1);
    assert_eq!(
        ax[0].row.servebench().unwrap().identity.benchmark_type,
        servebench_contracts::BenchmarkType::AgenticTraces
    );
    let ev = runs
        .iter()
        .find(|r| r.kind == RunKind::Eval)
        .expect("the eval run");
    assert_eq!(ev.n_evals, 1);
    s.integrity_check().unwrap();
    drop(s);

    // compare the PR run with main: every point finds main's row
    let c = gsm8k_in(d)
        .args([
            "compare",
            "--baseline",
            "main",
            "--candidate",
            &pr_run.to_string(),
        ])
        .args(["--db", &url])
        .output()
        .unwrap();
    let err = common::stderr(&c);
    assert!(
        err.contains(&format!(
            "note: --baseline main: 2 of 2 candidate points have a baseline, the newest \
             error-free row of the same config on branch main (InferenceX compare_results.py's \
             choice), from run(s) {main_run}"
        )),
        "{err}"
    );
    assert!(c.status.code().is_some_and(|x| x <= 3), "{c:?}");

    // the whole store into SQLite, checksums equal
    let m = gsm8k_in(d)
        .args(["store", "migrate", "--from", &url, "--to", "sqlite:copy.db"])
        .output()
        .unwrap();
    let out = ok(&m);
    assert!(out.contains("copied 4 runs, 5 points, 1 evals"), "{out}");
    assert!(out.ends_with("checksums equal\n"), "{out}");
    let copy = Store::open(d.join("copy.db")).unwrap();
    assert_eq!(copy.list_runs(None, None).unwrap().len(), 4);
}

/// `(baseline, candidate)` J/output token of each compared point of `compare --json`.
fn joules_compared(c: &std::process::Output) -> Vec<(Option<f64>, Option<f64>)> {
    // 0-3: compared (a simulated regression or invalid point still prints the comparison)
    assert!(c.status.code().is_some_and(|x| x <= 3), "{c:?}");
    let v: serde_json::Value = serde_json::from_str(&common::stdout(c)).unwrap();
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let m = p["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["metric"] == "joules_per_output_token")
                .unwrap_or_else(|| panic!("no J/output tok in {p}"));
            (m["baseline"].as_f64(), m["candidate"].as_f64())
        })
        .collect()
}

/// A simulated point's modelled energy survives the store, `compare --baseline main` and the
/// report on both backends, and a baseline imported with `baseline import --branch main` is
/// main's row for `--baseline main` (an import without `--branch` never is).
#[test]
fn energy_survives_store_compare_baseline_main_and_report_on_both_backends() {
    let Some(url) = fresh_db("sb_energy_cli") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let sqlite = d.join("s.db").display().to_string();
    for db in [sqlite.as_str(), url.as_str()] {
        let tag = if db == url { "pg" } else { "sqlite" };
        let sweep = |branch: &str| {
            let o = gsm8k_in(d)
                .args(["sweep", "--num-prompts", "4", "--isl", "128", "--osl", "64"])
                .args(["--conc", "1,2", "--out", &format!("o-{tag}-{branch}")])
                .args(["--db", db, "--branch", branch])
                .output()
                .unwrap();
            printed_run(&ok(&o))
        };
        sweep("main");
        let pr = sweep("my-pr").to_string();
        let c = gsm8k_in(d)
            .args([
                "compare",
                "--baseline",
                "main",
                "--candidate",
                &pr,
                "--json",
            ])
            .args(["--db", db])
            .output()
            .unwrap();
        let j = joules_compared(&c);
        assert_eq!(j.len(), 2, "{tag}: {j:?}");
        for (b, c) in &j {
            assert!(
                b.is_some_and(|x| x > 0.0) && c.is_some_and(|x| x > 0.0),
                "{tag}: J/output tok of both sides: {j:?}"
            );
        }
        let r = gsm8k_in(d)
            .args(["report", &pr, "--baseline", "main", "--format", "md"])
            .args(["--db", db, "--lang", "en"])
            .output()
            .unwrap();
        let md = ok(&r);
        assert!(md.contains("| J/output tok ↓ |"), "{tag}: {md}");
    }

    // an agg row file imported as main's history: picked by --baseline main only with --branch
    let imported = d.join("main-rows.json");
    let rows: Vec<serde_json::Value> = ["conc1", "conc2"]
        .iter()
        .map(|c| common::read_json(&d.join(format!("o-sqlite-main/{c}/agg.json"))))
        .collect();
    std::fs::write(&imported, serde_json::to_string(&rows).unwrap()).unwrap();
    let fresh = d.join("import.db").display().to_string();
    let import = |branch: Option<&str>| {
        let mut c = gsm8k_in(d);
        c.args(["baseline", "import"]).arg(&imported);
        c.args(["--db", &fresh]);
        if let Some(b) = branch {
            c.args(["--branch", b]);
        }
        ok(&c.output().unwrap())
    };
    let line = import(None);
    assert!(!line.contains("branch"), "{line}");
    let pr = {
        let o = gsm8k_in(d)
            .args(["sweep", "--num-prompts", "4", "--isl", "128", "--osl", "64"])
            .args(["--conc", "1,2", "--out", "o-import-pr", "--db", &fresh])
            .args(["--branch", "my-pr"])
            .output()
            .unwrap();
        printed_run(&ok(&o)).to_string()
    };
    let compare = || {
        gsm8k_in(d)
            .args([
                "compare",
                "--baseline",
                "main",
                "--candidate",
                &pr,
                "--json",
            ])
            .args(["--db", &fresh])
            .output()
            .unwrap()
    };
    let none = compare();
    assert!(
        common::stderr(&none).contains("0 of 2 candidate points have a baseline"),
        "{}",
        common::stderr(&none)
    );
    let line = import(Some("main"));
    assert!(line.contains("· branch main"), "{line}");
    let s = Store::open(&fresh).unwrap();
    let runs = s.list_runs(Some(RunKind::Baseline), None).unwrap();
    let branches: Vec<Option<&str>> = runs.iter().map(|r| r.meta.branch.as_deref()).collect();
    assert!(
        branches.contains(&Some("main")) && branches.contains(&None),
        "{branches:?}"
    );
    drop(s);
    let two = compare();
    assert!(
        common::stderr(&two).contains("2 of 2 candidate points have a baseline"),
        "{}",
        common::stderr(&two)
    );
    let j = joules_compared(&two);
    assert!(j.iter().all(|(b, _)| b.is_some()), "imported energy: {j:?}");
}
