//! The store's PostgreSQL backend against a real server (scripts/services/postgres.sh): round
//! trips into InferenceX's tables, idempotent point identity, one-line errors for a wrong URL,
//! password, database or schema, and a dropped connection retried; energy columns and their
//! migration (`energy`); many writers and a killed
//! one (`writers`); `compare --baseline main`'s rows against compare_results.py
//! (`baseline_main`). One test binary for all of them.

#[path = "pg/baseline_main.rs"]
mod baseline_main;
mod common;
#[path = "pg/energy.rs"]
mod energy;
#[path = "pg/writers.rs"]
mod writers;

use common::pg::{admin_sql, fresh_db, query_text, service_url, with_db};
use common::{agg_row, eval_row, foreign, status_row};
use serde_json::json;
use servebench_contracts::PointStatus;
use servebench_store::{
    ImageProvenance, RunKind, RunMeta, RunStatus, Store, StoredRow, PG_SCHEMA_VERSION,
};

#[test]
fn runs_points_evals_and_provenance_round_trip_through_inferencex_tables() {
    let Some(url) = fresh_db("sb_round_trip") else {
        return;
    };
    let mut s = Store::open(&url).unwrap();
    assert_eq!(s.schema_version().unwrap(), PG_SCHEMA_VERSION);
    let mut m = RunMeta::new(RunKind::Sweep);
    m.label = Some("sweep sim".into());
    m.image = Some("lmsysorg/sglang:v0.5".into());
    m.branch = Some("main".into());
    m.created_at = Some("2026-09-15T10:00:00.000Z".into());
    m.meta = json!({"command": "servebench sweep", "conc": [1, 4]});
    let run = s.record_run(&m).unwrap();
    let a = agg_row(4, "a");
    let p1 = s.add_point(run, &a).unwrap();
    s.add_point(
        run,
        &status_row(8, PointStatus::Invalid, Some(&["ttft over SLO"])),
    )
    .unwrap();
    s.add_eval(run, &eval_row(16, 0.91)).unwrap();
    s.set_provenance(run, "image.index_digest", "sha256:abc")
        .unwrap();
    s.set_provenance(run, "image.index_digest", "sha256:def")
        .unwrap();
    s.finish_run(run, RunStatus::Partial).unwrap();

    let r = s.get_run(run).unwrap().unwrap();
    assert_eq!(
        (r.kind, r.status, r.n_points, r.n_evals),
        (RunKind::Sweep, RunStatus::Partial, 2, 1)
    );
    assert_eq!(r.created_at, "2026-09-15T10:00:00.000Z");
    assert_eq!(r.meta.branch.as_deref(), Some("main"));
    assert_eq!(r.meta.meta, m.meta);
    assert!(r.finished_at.is_some());
    assert_eq!(r.invalid_reason.as_deref(), Some("conc 8: ttft over SLO"));
    let pts = s.points(run).unwrap();
    assert_eq!(pts[0].id, p1);
    assert_eq!(pts[0].row, StoredRow::Servebench(a.clone()));
    assert_eq!(
        serde_json::to_string(&pts[0].row).unwrap(),
        serde_json::to_string(&a.to_value()).unwrap(),
        "row_json verbatim"
    );
    assert_eq!(pts[1].status, PointStatus::Invalid);
    assert_eq!(
        s.evals(run).unwrap()[0].row,
        StoredRow::Servebench(eval_row(16, 0.91))
    );
    assert_eq!(
        s.provenance(run).unwrap(),
        vec![("image.index_digest".into(), "sha256:def".into())]
    );

    // InferenceX's own tables hold the run as InferenceX-app and compare_results.py read it
    let q = |sql: &str| query_text(&url, sql);
    assert_eq!(
        q("SELECT head_branch || ' ' || date::text || ' ' || conclusion FROM workflow_runs"),
        "main 2026-09-15 failure"
    );
    assert_eq!(
        q(
            "SELECT hardware || '/' || framework || '/' || model || '/' || precision || '/' \
        || spec_method || '/' || prefill_tp FROM configs ORDER BY id LIMIT 1"
        ),
        "sim-h200/sim/qwen3/bf16/none/1"
    );
    assert_eq!(
        q(
            "SELECT string_agg(conc || ':' || coalesce(error, 'ok') || ':' || \
        (metrics->>'tput_per_gpu'), ',' ORDER BY conc) FROM benchmark_results"
        ),
        "4:ok:1234.5,8:invalid: ttft over SLO:1234.5"
    );
    assert_eq!(
        q("SELECT task || ' ' || (metrics->>'em_strict') || ' ' || conc FROM eval_results"),
        "gsm8k 0.91 16"
    );

    // a baseline run keeps its imported rows; the origin rules hold
    let base = s.record_run(&RunMeta::new(RunKind::Baseline)).unwrap();
    let f = foreign(
        json!({"hw": "h200-trt", "framework": "sglang", "model_prefix": "dsr1",
        "precision": "fp8", "tp": "8", "ep": 1, "dp_attention": "false", "isl": 1024,
        "osl": 1024, "conc": 64, "tput_per_gpu": 999.5, "median_ttft": 0.2}),
    );
    s.add_foreign_point(base, &f).unwrap();
    assert_eq!(
        s.points(base).unwrap()[0].row,
        StoredRow::Imported(f.clone())
    );
    let e = s.add_foreign_point(run, &f).unwrap_err().to_string();
    assert!(e.contains("imported rows belong to baseline runs"), "{e}");
    assert!(s.add_point(base, &a).is_err());
    assert!(s
        .add_point(servebench_store::RunId(99_999), &a)
        .unwrap_err()
        .to_string()
        .ends_with("run 99999 does not exist"));

    let img = ImageProvenance {
        image: "lmsysorg/sglang:v0.5".into(),
        role: Some("new".into()),
        config_key: Some("dsr1-fp8".into()),
        index_digest: Some("sha256:idx".into()),
        platform_digests: [("linux/amd64".to_string(), "sha256:p".to_string())].into(),
        labels: Default::default(),
        image_created: None,
        source: "file images.json".into(),
        change: json!({"from": "v0.4"}),
    };
    s.record_image_provenance(&img).unwrap();
    let got = s
        .resolved_image_provenance("lmsysorg/sglang:v0.5")
        .unwrap()
        .unwrap();
    assert_eq!(got.provenance, img);
    assert_eq!(s.list_runs(Some(RunKind::Baseline), None).unwrap().len(), 1);
    s.integrity_check().unwrap();
}

#[test]
fn a_point_identity_is_stored_once_and_repeats_keep_their_rows() {
    let Some(url) = fresh_db("sb_identity") else {
        return;
    };
    let mut s = Store::open(&url).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    let mut r1 = agg_row(4, "repeat 1");
    s.add_point(run, &r1).unwrap();
    r1.tput_per_gpu = 1300.0;
    s.add_point(run, &r1).unwrap();
    let mut agentx = agg_row(2, "agentx");
    agentx.identity.benchmark_type = servebench_contracts::BenchmarkType::AgenticTraces;
    agentx.identity.isl = None;
    agentx.identity.osl = None;
    agentx.extra.insert("kv_offloading".into(), json!("cpu"));
    s.add_point(run, &agentx).unwrap();
    s.add_point(run, &agentx).unwrap(); // NULL isl/osl are equal in the identity
    agentx.extra.insert("kv_offloading".into(), json!("none"));
    s.add_point(run, &agentx).unwrap(); // another offload mode: another identity
    assert_eq!(
        s.points(run).unwrap().len(),
        5,
        "every repeat keeps its verbatim row"
    );
    let q = |sql: &str| query_text(&url, sql);
    assert_eq!(q("SELECT count(*)::text FROM benchmark_results"), "3");
    assert_eq!(
        q("SELECT metrics->>'tput_per_gpu' FROM benchmark_results WHERE conc = 4"),
        "1300.0"
    );
    assert_eq!(
        q(
            "SELECT string_agg(coalesce(offload_mode, '-'), ',' ORDER BY offload_mode) \
           FROM benchmark_results WHERE benchmark_type = 'agentic_traces' AND isl IS NULL"
        ),
        "cpu,none"
    );
    s.integrity_check().unwrap();
    // resume drops a point: its InferenceX row goes when no repeat is left
    let ids: Vec<i64> = s.points(run).unwrap().iter().map(|p| p.id).collect();
    assert!(s.delete_point(run, ids[0]).unwrap());
    assert_eq!(q("SELECT count(*)::text FROM benchmark_results"), "3");
    assert!(s.delete_point(run, ids[1]).unwrap());
    assert_eq!(q("SELECT count(*)::text FROM benchmark_results"), "2");
    s.integrity_check().unwrap();
}

fn open_err(url: &str) -> String {
    match Store::open(url) {
        Ok(_) => panic!("{url}: opened"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_wrong_url_password_database_or_schema_is_one_line_naming_it() {
    let Some(url) = service_url() else { return };
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let e = open_err("postgres://servebench@127.0.0.1:notaport/x");
    assert!(
        e.starts_with("postgres://servebench@127.0.0.1:notaport/x: not a valid PostgreSQL URL"),
        "{e}"
    );
    let e = open_err(&format!(
        "postgres://servebench_pw:wrong-secret@127.0.0.1:{port}/servebench"
    ));
    assert!(e.contains("postgres://servebench_pw:***@127.0.0.1"), "{e}");
    assert!(e.contains("password authentication failed"), "{e}");
    assert!(!e.contains("wrong-secret") && !e.contains('\n'), "{e}");
    let e = open_err(&with_db(&url, "sb_no_such_db"));
    assert!(
        e.contains("cannot connect") && e.contains("does not exist"),
        "{e}"
    );
    // a closed port: refused at once, not retried
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = free.local_addr().unwrap().port();
    drop(free);
    let e = open_err(&format!(
        "postgres://servebench@127.0.0.1:{closed}/servebench"
    ));
    assert!(
        e.contains("cannot connect") && e.to_lowercase().contains("refused"),
        "{e}"
    );

    // a newer schema
    let Some(newer) = fresh_db("sb_newer") else {
        return;
    };
    drop(Store::open(&newer).unwrap());
    admin_sql(&newer, "UPDATE servebench_schema SET version = 99");
    let e = open_err(&newer);
    assert!(
        e.contains("schema version 99 is newer than this servebench understands"),
        "{e}"
    );
    // an InferenceX database servebench did not make
    let Some(foreign_db) = fresh_db("sb_foreign") else {
        return;
    };
    admin_sql(
        &foreign_db,
        "CREATE TABLE workflow_runs (id bigserial primary key)",
    );
    let e = open_err(&foreign_db);
    assert!(e.contains("servebench did not create"), "{e}");
}

#[test]
fn a_dropped_connection_is_retried_and_the_write_lands_once() {
    let Some(url) = fresh_db("sb_dropped") else {
        return;
    };
    let mut s = Store::open(&url).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    s.add_point(run, &agg_row(1, "before")).unwrap();
    // the server ends every connection of this database (as a restart or a proxy would)
    let admin = service_url().unwrap();
    admin_sql(
        &admin,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = 'sb_dropped' AND pid <> pg_backend_pid()",
    );
    s.add_point(run, &agg_row(2, "after")).unwrap();
    s.finish_run(run, RunStatus::Ok).unwrap();
    let pts = s.points(run).unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(
        query_text(&url, "SELECT count(*)::text FROM benchmark_results"),
        "2"
    );
}
