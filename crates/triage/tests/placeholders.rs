//! No placeholder text ever reaches a finding (issue 27): every row's `fix` and `next`,
//! rendered with whatever fields a log gives (all, some, none), reads as words, never as
//! `<var>` or `{var}`; and the full triage of logs built around every row's lines (plain, under
//! `set -x` with traces between the error and its continuation, with CI timestamps, inside a
//! container, after an engine launch) says nothing with a placeholder in its fix, next step,
//! evidence or reasoning. Property-checked with generated logs too.

use std::collections::BTreeMap;

use proptest::prelude::*;
use servebench_triage::{triage_texts, Layer, SignatureTable, TriageOptions, TriageReport};

/// `<name>` or `{name}`: a template field that was not filled.
fn placeholder(s: &str) -> Option<String> {
    placeholder_not_in(s, "")
}

/// [`placeholder`], leaving out those the log itself holds (a quoted line may carry `<id>`
/// as the tool printed it).
fn placeholder_not_in(s: &str, log: &str) -> Option<String> {
    let re = regex::Regex::new(r"<[A-Za-z_][A-Za-z0-9_ -]*>|\{[A-Za-z_][A-Za-z0-9_]*\}").unwrap();
    let found = re
        .find_iter(s)
        .map(|m| m.as_str().to_string())
        .find(|m| !log.contains(m.as_str()));
    found
}

fn assert_clean(r: &TriageReport, log: &str, what: &str) {
    let mut texts = vec![("fix", r.fix.clone()), ("next", r.next_step.clone())];
    texts.extend(r.evidence.iter().map(|e| ("evidence", e.clone())));
    texts.extend(r.reasoning.iter().map(|e| ("reasoning", e.clone())));
    texts.push(("class", r.class.clone()));
    for (k, t) in texts {
        let p = placeholder_not_in(&t, log);
        assert!(p.is_none(), "{what}: {k} has {p:?}: {t}");
    }
}

/// Every row, every template, every layer, with no fields, each single field removed and all
/// fields given (from the row's own example and published line).
#[test]
fn every_template_of_every_row_renders_without_placeholders() {
    let t = SignatureTable::builtin();
    let mut rendered = 0;
    for s in t.signatures() {
        let mut field_sets: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
        for line in std::iter::once(&s.example).chain(s.source_text.as_ref()) {
            if let Some(m) = t.match_line_in_traceback(line, &[s.example.clone()]) {
                let all = m.fields;
                for k in all.keys() {
                    let mut less = all.clone();
                    less.remove(k);
                    field_sets.push(less);
                }
                field_sets.push(all);
            }
        }
        // An empty value is as good as none.
        let mut empty = BTreeMap::new();
        for f in servebench_triage::signatures::template_fields(&s.next) {
            empty.insert(f.to_string(), String::new());
        }
        field_sets.push(empty);
        for fields in &field_sets {
            for &layer in Layer::ALL {
                for (which, tpl) in [("fix", &s.fix), ("next", &s.next)] {
                    let out = s.render(tpl, fields, layer);
                    rendered += 1;
                    assert!(
                        placeholder(&out).is_none(),
                        "{} {which} with {fields:?} at {layer}: {out}",
                        s.id
                    );
                }
            }
        }
    }
    assert!(rendered > 1000, "{rendered}");
}

/// A table whose template names a field that not every pattern captures, without a default,
/// is refused when it loads (the row and the field named).
#[test]
fn a_row_that_could_render_a_placeholder_is_refused() {
    let row = "[[signature]]\nid='x'\ngroup='extra'\ncategory='x'\nclass='x'\nlayer='recipe'\npersistence='mixed'\naction='inspect'\npatterns=['(?P<var>A) a', 'b']\nfix='set {var}'\nnext='n'\nexample='A a'\nsource='spec: x'\n";
    let e = SignatureTable::from_toml(row, "t.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("signature `x`") && e.contains("{var}"), "{e}");
    let ok = row.replace(
        "next='n'\n",
        "next='n'\ndefaults = { var = 'the variable' }\n",
    );
    SignatureTable::from_toml(&ok, "t.toml").expect("a default fills it");
}

/// The shapes a row's line is found in, as real job logs write them.
fn shapes(line: &str, cont: &[String]) -> Vec<(&'static str, String)> {
    let cont_plain: String = cont.iter().map(|c| format!("{c}\n")).collect();
    let cont_traced: String = cont
        .iter()
        .map(|c| format!("+ for var in \"${{missing_vars[@]}}\"\n+ echo '{c}'\n{c}\n"))
        .collect();
    let wrapper = "##[error]Process completed with exit code 1.\n";
    vec![
        ("plain", format!("{line}\n{cont_plain}{wrapper}")),
        (
            "set -x recipe",
            format!(
                "Runner name: 'h200-nb_0'\nRun bash ./runners/launch_h200-nb.sh\n\
                 + srun --container-image=img bash benchmarks/single_node/agentic/x.sh\n\
                 + source benchmarks/single_node/agentic/../../benchmark_lib.sh\n\
                 ++ AIPERF_DIR=/workspace/utils/aiperf\n+ echo '{}'\n{line}\n{cont_traced}+ exit 1\n{wrapper}",
                line.replace('\'', "")
            ),
        ),
        (
            "ci timestamps",
            format!(
                "2026-09-21T01:15:02.114Z Runner name: 'b200_0'\n2026-09-21T01:15:04.933Z {line}\n{}2026-09-21T01:15:05.000Z {wrapper}",
                cont.iter()
                    .map(|c| format!("2026-09-21T01:15:04.934Z {c}\n"))
                    .collect::<String>()
            ),
        ),
        (
            "after engine launch",
            format!(
                "Runner name: 'local'\n+ python3 -m sglang.launch_server --model-path /m\n{line}\n{cont_plain}servebench-job: ERROR: Process died before http://127.0.0.1:33047/health became ready (exit status 1)\n"
            ),
        ),
        ("header only", format!("{line}\n{wrapper}")),
    ]
}

/// Every row's example and published line, in every shape: a report with no placeholder.
#[test]
fn every_row_in_every_log_shape_reports_without_placeholders() {
    let t = SignatureTable::builtin();
    let cont = vec!["  - DURATION".to_string(), "  - EVAL_ONLY".to_string()];
    let mut n = 0;
    for s in t.signatures() {
        let lines: Vec<&String> = std::iter::once(&s.example)
            .chain(s.source_text.as_ref())
            .collect();
        for line in lines {
            let c: &[String] = if s.continuation.is_some() { &cont } else { &[] };
            for (shape, log) in shapes(line, c) {
                let r = triage_texts(&[("job.log", &log)], &TriageOptions::default());
                assert_clean(&r, &log, &format!("{} ({shape})", s.id));
                n += 1;
            }
        }
    }
    // the synthetic `set -e` stop: a trace, its output, a wrapper with an exit status
    let log = "Runner name: 'r'\n+ cp /models/x/config.json /workspace/\ncp: cannot stat '/models/x/config.json': No such file or directory\nservebench-job: ERROR: Process died before http://127.0.0.1:1/health became ready (exit status 1)\n";
    let r = triage_texts(&[("job.log", log)], &TriageOptions::default());
    assert_eq!(r.category, "shell_set_e_command_failed");
    assert_clean(&r, log, "set -e");
    assert!(n > 300, "{n}");
}

const NOISE: &[&str] = &[
    "INFO 04-30 10:20:35 [monitor.py:33] torch.compile takes 13.93 s in total",
    "+ for var_name in \"$@\"",
    "+ [[ -z '' ]]",
    "++ AIPERF_DIR=/workspace/utils/aiperf",
    "+++ date +%s",
    "++ export PORT=8888",
    "+ missing_vars+=(\"$var_name\")",
    "[GPU Monitor] No GPU monitoring tool found (nvidia-smi or amd-smi), skipping",
    "+ echo 'aiperf profile'",
    "Downloading model weights: 45%|████▌     | 9/20 [00:10<00:12, 1.1s/it]",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// check_env_vars' list under `set -x`, with any noise and traces around and between its
    /// lines: the first error is the header, every listed variable is collected (traces do not
    /// end the list), the layer is the launcher exactly when every variable is the launcher's
    /// contract, and no text has a placeholder.
    #[test]
    fn check_env_vars_lists_survive_traces_and_never_leave_a_placeholder(
        vars in prop::collection::vec(
            prop::sample::select(vec!["DURATION", "EVAL_ONLY", "MODEL", "TP", "RESULT_FILENAME", "MY_OWN_KNOB", "LLMDBENCH_X"]),
            0..4,
        ),
        before in prop::collection::vec(prop::sample::select(NOISE.to_vec()), 0..6),
        between in prop::collection::vec(prop::sample::select(NOISE[1..7].to_vec()), 0..3),
        traced_echo in any::<bool>(),
        stage in prop::sample::select(vec!["", "+ source benchmarks/single_node/x/../../benchmark_lib.sh", "Run bash ./runners/launch_b200-nb.sh"]),
    ) {
        let mut vars = vars;
        vars.dedup();
        let mut log = String::from("Runner name: 'r0'\n");
        if !stage.is_empty() {
            log.push_str(stage);
            log.push('\n');
        }
        for b in &before {
            log.push_str(b);
            log.push('\n');
        }
        if traced_echo {
            log.push_str("+ echo 'Error: The following required environment variables are not set:'\n");
        }
        log.push_str("Error: The following required environment variables are not set:\n");
        for v in &vars {
            for b in &between {
                log.push_str(b);
                log.push('\n');
            }
            if traced_echo {
                log.push_str(&format!("+ echo '  - {v}'\n"));
            }
            log.push_str(&format!("  - {v}\n"));
        }
        log.push_str("+ exit 1\n##[error]Process completed with exit code 1.\n");
        let r = triage_texts(&[("job.log", &log)], &TriageOptions::default());
        prop_assert_eq!(r.category.as_str(), "missing_env_var");
        let fe = r.first_error.as_ref().unwrap();
        let got = fe.fields.get("var").cloned().unwrap_or_default();
        prop_assert_eq!(got, vars.join(", "));
        let contract = ["DURATION", "EVAL_ONLY", "MODEL", "TP", "RESULT_FILENAME"];
        if !vars.is_empty() && vars.iter().all(|v| contract.contains(v)) {
            prop_assert_eq!(r.layer, Layer::Launcher);
        } else {
            // outside the contract: the stage the log was in (a trace assignment is no stage)
            prop_assert_ne!(r.layer, Layer::Client);
        }
        for v in &vars {
            prop_assert!(r.next_step.contains(v), "{}", r.next_step);
        }
        let texts = [&r.fix, &r.next_step];
        for t in texts {
            prop_assert!(placeholder(t).is_none(), "{}", t);
        }
        for e in r.evidence.iter().chain(&r.reasoning) {
            prop_assert!(placeholder(e).is_none(), "{}", e);
        }
    }
}

/// Every row's example and published line as the first error of a multi-node set (a worker
/// log, a peer's log and the batch log, srt-slurm's names): the placement evidence (node,
/// role, times, the clock-skew tolerance) and the findings hold no placeholder either.
#[test]
fn every_row_in_a_multinode_set_reports_without_placeholders() {
    let t = SignatureTable::builtin();
    let peer = "[2026-09-21 01:15:06] INFO:     Application startup complete.\n[2026-09-21 01:15:08 TP0] Decode batch. #running-req: 1\ngb200-cn02:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<4000> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n";
    let batch = "2026-09-21 01:15:00,000 - srtctl.cli.do_sweep - INFO - Job 1: 2 nodes\n2026-09-21 01:20:00,000 - srtctl.core.health - INFO - Model is not ready, waiting for 1 prefills and 0 decodes. Have 0 prefills and 1 decodes.\n";
    let mut n = 0;
    for s in t.signatures() {
        for line in std::iter::once(&s.example).chain(s.source_text.as_ref()) {
            let worker = format!("[2026-09-21 01:15:07] Load weight end.\n{line}\n");
            for skew in [0, 2000] {
                let opts = TriageOptions {
                    clock_skew_ms: skew,
                    ..TriageOptions::default()
                };
                let logs = [
                    ("logs/gb200-cn02_decode_w0.out", peer),
                    ("logs/gb200-cn01_prefill_w0.out", worker.as_str()),
                    ("logs/slurm_job-1.out", batch),
                ];
                let r = triage_texts(&logs, &opts);
                let all: String = logs.iter().map(|(_, t)| *t).collect();
                assert_clean(&r, &all, &format!("{} (multinode, skew {skew} ms)", s.id));
                let fe = r.first_error.as_ref().expect("an error");
                assert!(
                    fe.node.is_some() || fe.role.is_some(),
                    "{}: no node or role",
                    s.id
                );
                n += 1;
            }
        }
    }
    assert!(n > 100, "{n}");
}
