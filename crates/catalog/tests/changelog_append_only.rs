//! `append-only: true` change-log entries (AUTOMATION.md §3.3 step 5): only added concurrency
//! points of existing curves are emitted; every other edit is rejected with the reference's words.

use crate::common;

use common::DATA;
use serde_json::Value;
use servebench_catalog::changelog::{process_with_base, ProcessOptions};
use servebench_catalog::{Catalog, Runners};

const KEY: &str = "qwen3.5-fp4-b200-sglang-mtp";
const ENTRY: &str = "\n- config-keys:\n    - qwen3.5-fp4-b200-sglang-mtp\n  append-only: true\n  description:\n    - \"Add concurrency 128 to the TP2/EP2 curve.\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX\n";

fn read(f: &str) -> String {
    std::fs::read_to_string(format!("{DATA}/{f}")).unwrap()
}

fn catalog(nvidia: &str) -> Catalog {
    Catalog::from_sources(&[
        ("amd-master.yaml".into(), read("amd-master.yaml")),
        ("nvidia-master.yaml".into(), nvidia.to_string()),
    ])
    .unwrap()
}

fn run(head_nvidia: &str, entry: &str) -> Result<Value, String> {
    let base_log = read("perf-changelog.yaml");
    let head_log = format!("{base_log}{entry}");
    let runners = Runners::load(&format!("{DATA}/runners.yaml")).unwrap();
    let base = catalog(&read("nvidia-master.yaml"));
    let head = catalog(head_nvidia);
    process_with_base(
        &base_log,
        &head_log,
        "perf-changelog.yaml",
        "base",
        "head",
        &ProcessOptions::default(),
        &head,
        &runners,
        Some(&base),
    )
    .and_then(|m| m.to_json())
    .map_err(|e| e.to_string())
}

fn edited(old: &str, new: &str) -> String {
    let text = read("nvidia-master.yaml");
    let start = text.find(&format!("\n{KEY}:\n")).unwrap();
    let at = start + text[start..].find(old).unwrap();
    format!("{}{}{}", &text[..at], new, &text[at + old.len()..])
}

#[test]
fn only_the_added_point_is_emitted_with_the_unchanged_fingerprint() {
    let head = edited("conc-list: [16, 32, 64]", "conc-list: [16, 32, 64, 128]");
    let out = run(&head, ENTRY).unwrap();
    let rows = out["single_node"]["8k1k"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["conc"], 128);
    assert_eq!(rows[0]["tp"], 2);
    assert_eq!(rows[0]["ep"], 2);
    // Same recipe as the existing TP2/EP2 curve: golden C1 fingerprints that curve as e1bb77e8….
    assert_eq!(
        rows[0]["recipe-fingerprint"],
        "e1bb77e8cb7cab6c336dc896167061717c87e168882a6c67451ed9c13dfb48ac"
    );
    assert_eq!(
        out["evals"],
        Value::Array(vec![]),
        "append-only runs no evals"
    );
    assert_eq!(out["changelog_metadata"]["entries"][0]["append-only"], true);
}

#[test]
fn edits_outside_the_scope_are_rejected() {
    let cases = [
        (edited("conc-list: [16, 32, 64]", "conc-list: [32, 64, 128]"), "append-only may not remove existing concurrency points: [16]"),
        (
            edited("image: lmsysorg/sglang:v0.5.14-cu130", "image: lmsysorg/sglang:v0.5.20-cu130"),
            "append-only changed non-scenario field 'image' in 'qwen3.5-fp4-b200-sglang-mtp'",
        ),
        (
            edited("{ tp: 2, ep: 2, conc-list: [16, 32, 64]", "{ tp: 2, ep: 4, conc-list: [16, 32, 64, 128]"),
            "append-only changed non-concurrency value at qwen3.5-fp4-b200-sglang-mtp.fixed-seq-len[0].search-space[2].ep",
        ),
        (read("nvidia-master.yaml"), "append-only did not add any concurrency points"),
        (
            read("nvidia-master.yaml").replacen(
                "qwen3.5-fp8-b200-sglang-mtp:\n  image: lmsysorg/sglang:v0.5.14-cu130",
                "qwen3.5-fp8-b200-sglang-mtp:\n  image: lmsysorg/sglang:v0.5.20-cu130",
                1,
            ),
            "append-only PR changed configs not selected by its changelog entry: ['qwen3.5-fp8-b200-sglang-mtp']",
        ),
    ];
    for (head, want) in cases {
        assert_eq!(run(&head, ENTRY).unwrap_err(), want);
    }
}

#[test]
fn append_only_cannot_mix_with_evals_or_run_without_base() {
    let bad = ENTRY.replace(
        "  append-only: true\n",
        "  append-only: true\n  evals-only: true\n",
    );
    assert_eq!(
        run(&read("nvidia-master.yaml"), &bad).unwrap_err(),
        "added changelog entry 1: append-only cannot be combined with eval selection fields"
    );
    let base_log = read("perf-changelog.yaml");
    let head_log = format!("{base_log}{ENTRY}");
    let runners = Runners::load(&format!("{DATA}/runners.yaml")).unwrap();
    let head = catalog(&read("nvidia-master.yaml"));
    let e = process_with_base(
        &base_log,
        &head_log,
        "perf-changelog.yaml",
        "b",
        "h",
        &ProcessOptions::default(),
        &head,
        &runners,
        None,
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .starts_with("append-only entries need the master configs at the base revision"));
}
