//! Invalid points (a validity rule was violated, docs/measurement.md "Validity rules"): the
//! point and its run stay flagged with the reason, and a version-2 store (before the flag
//! existed) opens, migrates and keeps its runs.

mod common;

use common::status_row as row;
use serde_json::json;
use servebench_contracts::PointStatus::{Invalid, Ok as Fine};
use servebench_store::{RunKind, RunMeta, RunStatus, Store, SCHEMA_VERSION};

#[test]
fn an_invalid_point_flags_its_run_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    s.add_point(run, &row(1, Fine, None)).unwrap();
    let short = "fixed length violated: 2/4 short (min 5, want 128)";
    s.add_point(run, &row(4, Invalid, Some(&[short]))).unwrap();
    // flagged before the run finishes: a crash now keeps the flag
    let r = s.get_run(run).unwrap().unwrap();
    assert_eq!(
        r.invalid_reason.as_deref(),
        Some(&*format!("conc 4: {short}"))
    );
    let prompt = "prompt length violated: 1/4 off by more than 5 % (worst: usage.prompt_tokens 160, intended 128, +25.0 %)";
    s.add_point(run, &row(8, Invalid, Some(&[short, prompt])))
        .unwrap();
    s.finish_run(run, RunStatus::Partial).unwrap();
    drop(s);

    let s = Store::open(&db).unwrap();
    let r = s.get_run(run).unwrap().unwrap();
    assert_eq!(
        r.invalid_reason.unwrap(),
        format!("conc 4: {short}; conc 8: {short}; {prompt}")
    );
    let pts = s.points(run).unwrap();
    assert_eq!(
        pts.iter().map(|p| p.status.as_str()).collect::<Vec<_>>(),
        ["ok", "invalid", "invalid"]
    );
    assert_eq!(pts[0].invalid_reason, None);
    assert_eq!(pts[1].invalid_reason.as_deref(), Some(short));
    let stored = pts[1].row.servebench().unwrap();
    assert_eq!(stored.invalid_reasons, [short]);
    assert_eq!(
        stored.to_value()["invalid_reasons"],
        json!([short]),
        "row kept verbatim"
    );
    assert!(!stored.extra.contains_key("invalid_reasons"));
    // a run without invalid points has no flag
    let mut s = Store::open(&db).unwrap();
    let clean = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    s.add_point(clean, &row(1, Fine, None)).unwrap();
    assert_eq!(s.get_run(clean).unwrap().unwrap().invalid_reason, None);
}

/// An AgentX point InferenceX would not accept (`agentx_submission_valid: false`) keeps its
/// status `ok` and no point reason (its numbers stand), but flags its run, as `servebench run`
/// calls such a run invalid; `agentx_submission_valid: true` flags nothing.
#[test]
fn an_agentx_point_that_is_not_a_valid_submission_flags_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("s.db")).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    let mut valid = row(1, Fine, None);
    valid
        .extra
        .insert("agentx_submission_valid".into(), json!(true));
    valid
        .extra
        .insert("agentx_submission_invalid_reasons".into(), json!([]));
    s.add_point(run, &valid).unwrap();
    assert_eq!(s.get_run(run).unwrap().unwrap().invalid_reason, None);
    let mut short = row(4, Fine, None);
    short
        .extra
        .insert("agentx_submission_valid".into(), json!(false));
    short.extra.insert(
        "agentx_submission_invalid_reasons".into(),
        json!(["unsafe_override", "context_overflow_rate_exceeded"]),
    );
    s.add_point(run, &short).unwrap();
    assert_eq!(
        s.get_run(run).unwrap().unwrap().invalid_reason.as_deref(),
        Some(
            "conc 4: not a valid InferenceX submission (unsafe_override, context_overflow_rate_exceeded)"
        )
    );
    let pts = s.points(run).unwrap();
    assert_eq!(pts[1].status.as_str(), "ok");
    assert_eq!(pts[1].invalid_reason, None);
}

#[test]
fn a_version_2_store_migrates_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v2.db");
    {
        let mut s = Store::open(&db).unwrap();
        let mut m = RunMeta::new(RunKind::Sweep);
        m.label = Some("before".into());
        let run = s.record_run(&m).unwrap();
        s.add_point(run, &row(2, Fine, None)).unwrap();
        s.finish_run(run, RunStatus::Ok).unwrap();
    }
    // what the previous build wrote: no invalid_reason columns, user_version 2
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "DROP INDEX points_energy; ALTER TABLE points DROP COLUMN power_source;
             ALTER TABLE points DROP COLUMN power_valid; ALTER TABLE points DROP COLUMN avg_power_w;
             ALTER TABLE points DROP COLUMN total_gpu_energy_j;
             ALTER TABLE points DROP COLUMN joules_per_output_token;
             ALTER TABLE points DROP COLUMN joules_per_total_token;
             ALTER TABLE points DROP COLUMN invalid_reason;
             ALTER TABLE runs DROP COLUMN invalid_reason; DROP INDEX runs_branch;
             ALTER TABLE runs DROP COLUMN branch; PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].meta.label.as_deref(), Some("before"));
    assert_eq!(runs[0].status, RunStatus::Ok);
    assert_eq!(runs[0].invalid_reason, None);
    assert_eq!(s.points(runs[0].id).unwrap()[0].invalid_reason, None);
    // and the migrated file takes a flagged point
    s.add_point(runs[0].id, &row(4, Invalid, Some(&["x"])))
        .unwrap();
    assert_eq!(
        s.get_run(runs[0].id)
            .unwrap()
            .unwrap()
            .invalid_reason
            .as_deref(),
        Some("conc 4: x")
    );
    s.integrity_check().unwrap();
}
