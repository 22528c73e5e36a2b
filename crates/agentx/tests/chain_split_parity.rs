//! Chain splitting parity with agentx-harness 1.0.12 on every shared trace: the conversations
//! the harness's own loader functions split each trace into (`tests/oracle/split_oracle.py`
//! calls `_detect_and_split_flat_chains`, `_expand_subagent_to_child_plans` and
//! `_child_plans_for_active_subagents` of the installed harness, default `WEKA_*` settings)
//! equal servebench's plans: the same conversation ids (`::fa:`, `::aux:`, `::wg:`, `::sa:`,
//! `::sa:<id>:fa:` …) and, per conversation, the same requests in the same order (start time,
//! input and output tokens).
//!
//! Needs `SERVEBENCH_AGENTX_ORACLE_VENV` (scripts/services/agentx-oracle.sh); skipped without
//! it unless `SERVEBENCH_REQUIRE_SERVICES=1`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use servebench_agentx::chains::SplitOptions;
use servebench_agentx::plan::build_with;
use servebench_agentx::synth::{Corpus, WordCodec};
use servebench_agentx::TraceSource;

fn venv() -> Option<PathBuf> {
    match std::env::var_os("SERVEBENCH_AGENTX_ORACLE_VENV") {
        Some(v) => Some(PathBuf::from(v)),
        None => {
            servebench_testkit::skip_or_fail(
                "SERVEBENCH_AGENTX_ORACLE_VENV not set: agentx oracle not installed (scripts/services/agentx-oracle.sh)",
            );
            None
        }
    }
}

fn shared() -> PathBuf {
    std::env::var_os("SERVEBENCH_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

type Convs = BTreeMap<String, Vec<(f64, u64, u64)>>;

#[test]
fn conversations_split_like_the_harness_on_every_shared_trace() {
    let Some(venv) = venv() else { return };
    let dir = shared().join("data/agentx-traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "{} traces in {}",
        files.len(),
        dir.display()
    );
    let o = Command::new(venv.join("bin/python"))
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/split_oracle.py"))
        .args(&files)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "split_oracle.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut want: BTreeMap<String, Convs> = BTreeMap::new();
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let mut convs = Convs::new();
        for (k, reqs) in v["convs"].as_object().unwrap() {
            let reqs = reqs
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r[0].as_f64().unwrap(),
                        r[1].as_u64().unwrap(),
                        r[2].as_u64().unwrap(),
                    )
                })
                .collect();
            convs.insert(k.clone(), reqs);
        }
        want.insert(v["id"].as_str().unwrap().to_string(), convs);
    }
    assert_eq!(want.len(), files.len());

    let codec = WordCodec;
    let corpus = Corpus::build(&codec);
    let (mut split_traces, mut children) = (0, 0);
    for t in TraceSource::open(&dir).unwrap().iter() {
        let t = t.unwrap();
        let plan = build_with(&t, &corpus, &codec, &SplitOptions::default()).unwrap();
        let got: Convs = plan
            .convs
            .iter()
            .map(|c| {
                let turns = c
                    .turns
                    .iter()
                    .map(|u| (u.t_ms / 1000.0, u64::from(u.input_tokens), 0))
                    .collect();
                (c.id.clone(), turns)
            })
            .collect();
        let w = &want[&t.id];
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            w.keys().collect::<Vec<_>>(),
            "trace {}: conversation ids",
            t.id
        );
        for (id, turns) in &got {
            let wt = &w[id];
            assert_eq!(turns.len(), wt.len(), "{id}: turn count");
            for (k, (a, b)) in turns.iter().zip(wt).enumerate() {
                assert!(
                    (a.0 - b.0).abs() < 1e-6 && a.1 == b.1,
                    "{id} turn {k}: servebench (t {}, in {}) vs harness (t {}, in {})",
                    a.0,
                    a.1,
                    b.0,
                    b.1
                );
            }
            // max_completion_tokens = recorded out (0 → 1)
            let conv = plan.convs.iter().find(|c| &c.id == id).unwrap();
            for (u, b) in conv.turns.iter().zip(wt) {
                assert_eq!(u64::from(u.max_tokens), b.2.max(1), "{id}");
            }
        }
        if plan.convs.iter().any(|c| {
            c.id.contains("::fa:")
                || c.id.contains("::aux:")
                || c.id.contains("::wg:")
                || c.id.contains(":fa:")
                || c.id.contains(":aux:")
        }) {
            split_traces += 1;
        }
        children += plan.convs.len() - 1;
    }
    // the shared corpus does exercise the split (trace_0286: two ::aux: sidecars,
    // trace_0365: an 11-request ::fa: agent)
    assert!(split_traces >= 2, "{split_traces} traces split");
    eprintln!(
        "{} traces, {children} child conversations, {split_traces} split",
        files.len()
    );
}
