//! Triage of real `set -x` job logs of the unmodified InferenceX recipes and launchers
//! (`tests/data/real/README.md` says how each was made). Issue 27: a launcher that forgot
//! `DURATION` was blamed on the client (`since ++ AIPERF_DIR=…`, a trace assignment), the
//! variable was lost (the `+ echo '  - DURATION'` trace ended check_env_vars' list) and a
//! literal `<var>` reached the Fix and Next lines.

use servebench_triage::{triage_logs, Layer, TriageReport};

fn real(name: &str) -> TriageReport {
    let path = format!("{}/tests/data/real/{name}", env!("CARGO_MANIFEST_DIR"));
    triage_logs(&[&path]).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn no_placeholder(r: &TriageReport) {
    for t in [&r.fix, &r.next_step]
        .into_iter()
        .chain(&r.evidence)
        .chain(&r.reasoning)
    {
        assert!(!t.contains("<var>") && !t.contains("{var}"), "{t}");
        assert!(
            !regex::Regex::new(r"<[a-z_]+>").unwrap().is_match(t),
            "placeholder in: {t}"
        );
    }
}

#[test]
fn a_launcher_that_forgot_duration_is_the_launchers_with_the_variable_named() {
    let r = real("h200-launcher-forgot-duration.log");
    let fe = r.first_error.as_ref().expect("a first error");
    assert_eq!(r.category, "missing_env_var");
    assert_eq!(fe.line_no, 68);
    assert_eq!(
        fe.line,
        "Error: The following required environment variables are not set:"
    );
    assert_eq!(fe.continuation, ["- DURATION"]);
    assert_eq!(fe.fields["var"], "DURATION");
    assert_eq!(r.layer, Layer::Launcher);
    // the stage is the recipe that ran the check (the `source …benchmark_lib.sh` trace), never
    // the client of a trace assignment
    assert_eq!(fe.stage, Some(Layer::Recipe));
    let all = r.evidence.join("\n");
    assert!(!all.contains("AIPERF_DIR"), "{all}");
    assert!(!all.contains("client"), "{all}");
    assert!(all.contains("raised while the recipe was running"), "{all}");
    assert!(
        r.reasoning
            .iter()
            .any(|x| x.contains("DURATION belongs to the launcher's environment contract")),
        "{:#?}",
        r.reasoning
    );
    assert!(
        r.fix.contains("export DURATION in the launcher"),
        "{}",
        r.fix
    );
    assert!(
        r.next_step.starts_with("Fix the launcher: set DURATION"),
        "{}",
        r.next_step
    );
    assert!(r.deterministic);
    no_placeholder(&r);
}

#[test]
fn two_forgotten_variables_are_both_named() {
    let r = real("h200-launcher-forgot-duration-eval-only.log");
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.fields["var"], "DURATION, EVAL_ONLY");
    assert_eq!(fe.continuation, ["- DURATION", "- EVAL_ONLY"]);
    assert_eq!(r.layer, Layer::Launcher);
    assert!(
        r.next_step.contains("set DURATION, EVAL_ONLY"),
        "{}",
        r.next_step
    );
    no_placeholder(&r);
}

#[test]
fn a_missing_command_in_a_real_recipe_is_its_own_line() {
    let r = real("h200-fixed-seq-no-pip3-hf.log");
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(r.category, "shell_command_not_found");
    assert_eq!(fe.line_no, 4);
    assert_eq!(fe.fields["command"], "pip3");
    assert_eq!(r.layer, Layer::Host);
    no_placeholder(&r);
}
