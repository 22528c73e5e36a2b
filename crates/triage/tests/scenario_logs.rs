//! The scenario's two job logs (shared/data/scenario/logs): first error, launcher layer,
//! deterministic on two runners, readiness-blocked at phase targeted with 0 repairs.

use servebench_triage::{triage_logs, Action, Layer, Outcome, Persistence, Phase};

const LOGS: [&str; 2] = [
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/scenario/logs/agentic-c1.log"
    ),
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/scenario/logs/eval-c16.log"
    ),
];

#[test]
fn scenario_first_error_is_the_launcher_env_check_on_both_runners() {
    let r = triage_logs(&LOGS).unwrap();
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(
        fe.line,
        "Error: The following required environment variables are not set:"
    );
    assert_eq!(fe.continuation, vec!["- MODEL_PATH".to_string()]);
    assert_eq!(fe.line_no, 10);
    assert!(fe.file.ends_with("agentic-c1.log"));
    assert_eq!(fe.fields.get("var").map(String::as_str), Some("MODEL_PATH"));
    assert_eq!(r.category, "missing_env_var");
    assert_eq!(r.layer, Layer::Launcher);
    assert_eq!(r.persistence, Persistence::Deterministic);
    assert!(r.deterministic);
    assert!(!r.retry);
    assert_eq!(r.action, Action::Stop);
    assert_eq!(r.outcome, Some(Outcome::ReadinessBlocked));
    assert_eq!(r.phase, Phase::Targeted);
    assert_eq!(r.repairs_used, 0);
    assert_eq!(
        r.same_first_error_runners,
        vec![
            "b200-nscale-slurm_00".to_string(),
            "b200-nscale-slurm_01".to_string()
        ]
    );
    assert_eq!(r.logs_agreeing, 2);
    assert_eq!(
        r.determinism(),
        "deterministic (same first error on 2 runners)"
    );
    assert!(
        r.evidence
            .iter()
            .any(|e| e.contains("before any image import or server start")),
        "{:?}",
        r.evidence
    );
    assert!(
        r.evidence
            .iter()
            .any(|e| e.contains("2.8 s after the log's first line")),
        "{:?}",
        r.evidence
    );
    assert!(
        r.next_step.contains("launcher") && r.next_step.contains("MODEL_PATH"),
        "{}",
        r.next_step
    );
    // The exit-code wrapper is secondary in both logs, never the first error.
    assert_eq!(
        r.secondary
            .iter()
            .filter(|s| s.category == "process_exit_code")
            .count(),
        2
    );
    let text = r.render_text();
    assert!(
        text.contains("Outcome:     readiness-blocked · phase targeted · repairs 0"),
        "{text}"
    );
}

#[test]
fn one_log_alone_is_deterministic_by_class_but_claims_no_second_runner() {
    let r = triage_logs(&LOGS[..1]).unwrap();
    assert!(r.deterministic);
    assert_eq!(r.determinism(), "deterministic");
    assert_eq!(r.same_first_error_runners.len(), 1);
}

#[test]
fn missing_log_is_one_clear_line() {
    let e = triage_logs(&["/nonexistent/job.log"])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cannot read log /nonexistent/job.log:"),
        "{e}"
    );
}
