//! Mutation tests: for each validation rule V1–V16 (AUTOMATION.md §2.1), a minimal edit of a
//! real catalog entry that violates it, and the exact error line expected.

use crate::common;

use common::DATA;
use servebench_catalog::{Catalog, CatalogError};

fn nvidia() -> String {
    std::fs::read_to_string(format!("{DATA}/nvidia-master.yaml")).unwrap()
}

/// Replaces the first `old` after the line `KEY:` with `new` (panics if absent).
fn edit(text: &str, key: &str, old: &str, new: &str) -> String {
    let start = text
        .find(&format!("\n{key}:\n"))
        .unwrap_or_else(|| panic!("key {key}"))
        + 1;
    let at = start
        + text[start..]
            .find(old)
            .unwrap_or_else(|| panic!("{old:?} in {key}"));
    format!("{}{}{}", &text[..at], new, &text[at + old.len()..])
}

fn errors(sources: &[(&str, String)]) -> Vec<String> {
    let s: Vec<(String, String)> = sources
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    match Catalog::from_sources(&s) {
        Ok(_) => vec![],
        Err(CatalogError::Invalid(d)) => d.iter().map(|d| d.to_string()).collect(),
        Err(e) => vec![format!("other error: {e}")],
    }
}

fn amd() -> String {
    std::fs::read_to_string(format!("{DATA}/amd-master.yaml")).unwrap()
}

fn one(key: &str, old: &str, new: &str) -> Vec<String> {
    errors(&[("nvidia-master.yaml", edit(&nvidia(), key, old, new))])
}

const QWEN: &str = "qwen3.5-fp4-b200-sglang-mtp";
const QWEN_AGENTIC: &str = "qwen3.5-fp4-b200-sglang-agentic-mtp";
const DSR1_GB200: &str = "dsr1-fp4-gb200-dynamo-trt";

#[test]
fn the_unedited_catalog_is_valid() {
    let amd = std::fs::read_to_string(format!("{DATA}/amd-master.yaml")).unwrap();
    assert_eq!(
        errors(&[("nvidia-master.yaml", nvidia()), ("amd-master.yaml", amd)]),
        Vec::<String>::new()
    );
}

#[test]
fn v1_unknown_field() {
    assert_eq!(
        one(QWEN, "conc-end: 4, spec-decoding: mtp }", "conc-end: 4, spec-decoding: mtp, max-batch: 8 }"),
        vec![
            "nvidia-master.yaml:1264:73: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[0]: unknown field 'max-batch' (allowed: tp, pp, dcp-size, pcp-size, ep, spec-decoding, dp-attn, router, kv-p2p-transfer, conc-start, conc-end, conc-list)"
        ]
    );
}

#[test]
fn v1_trace_source_is_rejected() {
    assert_eq!(
        one(QWEN_AGENTIC, "    - dram-utilization: 0.80\n", "    - dram-utilization: 0.80\n      trace-source: weka\n"),
        vec![
            "nvidia-master.yaml:7355:7: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0]: unknown field 'trace-source': trace selection lives in the benchmark scripts (CONFIGS.md documents it, but the InferenceX validator rejects it)"
        ]
    );
}

#[test]
fn v1_wrong_type() {
    assert_eq!(
        one(QWEN, "{ tp: 4, ep: 1,", "{ tp: \"4\", ep: 1,"),
        vec![
            "nvidia-master.yaml:1264:15: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[0].tp: expected an integer, got string \"4\""
        ]
    );
}

#[test]
fn v1_missing_field() {
    assert_eq!(
        one(QWEN, "  image: lmsysorg/sglang:v0.5.14-cu130\n", ""),
        vec![
            "nvidia-master.yaml:1252:3: qwen3.5-fp4-b200-sglang-mtp: missing required field 'image'"
        ]
    );
}

#[test]
fn v2_conc_list_and_range() {
    assert_eq!(
        one(QWEN, "{ tp: 2, ep: 2, conc-list:", "{ tp: 2, ep: 2, conc-start: 16, conc-list:"),
        vec![
            "nvidia-master.yaml:1266:9: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[2]: conc-start and conc-list are mutually exclusive"
        ]
    );
}

#[test]
fn v2_range_order() {
    assert_eq!(
        one(QWEN, "conc-start: 4, conc-end: 64,", "conc-start: 64, conc-end: 4,"),
        vec![
            "nvidia-master.yaml:1265:9: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[1]: conc-start (64) must be <= conc-end (4)"
        ]
    );
}

#[test]
fn v3_tp_dcp() {
    assert_eq!(
        one(QWEN, "{ tp: 4, ep: 1,", "{ tp: 4, dcp-size: 3, ep: 1,"),
        vec![
            "nvidia-master.yaml:1264:28: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[0]: tp (4) must be divisible by dcp-size (3)"
        ]
    );
}

#[test]
fn v4_positive_pp() {
    assert_eq!(
        one(QWEN, "{ tp: 4, ep: 1,", "{ tp: 4, pp: 0, ep: 1,"),
        vec![
            "nvidia-master.yaml:1264:22: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[0].pp: must be greater than 0, got 0"
        ]
    );
}

#[test]
fn v5_hardware_pair() {
    assert_eq!(
        one(DSR1_GB200, "          dp-attn: true\n          additional-settings:", "          dp-attn: true\n          hardware: gb200\n          additional-settings:"),
        vec![
            "nvidia-master.yaml:2415:9: dsr1-fp4-gb200-dynamo-trt: scenarios.fixed-seq-len[0].search-space[0]: hardware must be specified for both prefill and decode, or neither"
        ]
    );
}

#[test]
fn v6_disagg_needs_transfer() {
    assert_eq!(
        one(DSR1_GB200, "  kv-p2p-transfer: nixl\n", ""),
        vec![
            "nvidia-master.yaml:2407:11: dsr1-fp4-gb200-dynamo-trt: disagg: disagg=true requires kv-p2p-transfer at the top level or in every search-space entry"
        ]
    );
}

#[test]
fn v7_router_single_scope() {
    assert_eq!(
        one(DSR1_GB200, "        conc-list: [ 4, 8, 12, 24, 48 ]\n", "        conc-list: [ 4, 8, 12, 24, 48 ]\n        router: { name: dynamo-router, version: \"0.8.1.post2\" }\n"),
        vec![
            "nvidia-master.yaml:2417:9: dsr1-fp4-gb200-dynamo-trt: scenarios.fixed-seq-len[0].search-space[0]: router must be declared either at the top level or in search-space entries, not both"
        ]
    );
}

#[test]
fn v8_transfer_multinode_only() {
    assert_eq!(
        one(QWEN, "  framework: sglang\n", "  framework: sglang\n  kv-p2p-transfer: nixl\n"),
        vec![
            "nvidia-master.yaml:1258:3: qwen3.5-fp4-b200-sglang-mtp: kv-p2p-transfer: kv-p2p-transfer is only valid when multinode=true"
        ]
    );
}

#[test]
fn v9_agentic_cluster_runner() {
    assert_eq!(
        one(QWEN_AGENTIC, "  runner: cluster:b200-dgxc\n", "  runner: b200\n"),
        vec![
            "nvidia-master.yaml:7348:11: qwen3.5-fp4-b200-sglang-agentic-mtp: runner: agentic configs must use a 'cluster:<name>' runner, got 'b200'"
        ]
    );
}

#[test]
fn v10_backend_required() {
    assert_eq!(
        one(QWEN_AGENTIC, "kv-offloading: dram, kv-offload-backend: { name: hicache }, ", "kv-offloading: dram, "),
        vec![
            "nvidia-master.yaml:7357:9: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0].search-space[1]: kv-offload-backend is required when kv-offloading is 'dram'"
        ]
    );
}

#[test]
fn v10_backend_forbidden() {
    assert_eq!(
        one(QWEN_AGENTIC, "kv-offloading: none, conc-list: [1, 4, 8, 12, 16,", "kv-offloading: none, kv-offload-backend: { name: hicache }, conc-list: [1, 4, 8, 12, 16,"),
        vec![
            "nvidia-master.yaml:7356:9: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0].search-space[0]: kv-offload-backend can only be set when kv-offloading is not 'none'"
        ]
    );
}

#[test]
fn v11_dram_needs_utilization() {
    assert_eq!(
        one(QWEN_AGENTIC, "    - dram-utilization: 0.80\n      search-space:", "    - search-space:"),
        vec![
            "nvidia-master.yaml:7356:9: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0].search-space[1]: kv-offloading='dram' requires dram-utilization",
            "nvidia-master.yaml:7358:9: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0].search-space[3]: kv-offloading='dram' requires dram-utilization"
        ]
    );
}

#[test]
fn v12_agentic_topology() {
    assert_eq!(
        one(QWEN_AGENTIC, "{ tp: 4, ep: 1, spec-decoding: mtp, kv-offloading: none,", "{ ep: 1, spec-decoding: mtp, kv-offloading: none,"),
        vec![
            "nvidia-master.yaml:7356:9: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0].search-space[0]: agentic search-space entries must specify exactly one of tp, or both prefill and decode"
        ]
    );
}

#[test]
fn v12_kv_offloading_required() {
    assert_eq!(
        one(QWEN_AGENTIC, "{ tp: 4, ep: 1, spec-decoding: mtp, kv-offloading: none, conc-list: [1, 4,", "{ tp: 4, ep: 1, spec-decoding: mtp, conc-list: [1, 4,"),
        vec![
            "nvidia-master.yaml:7356:9: qwen3.5-fp4-b200-sglang-agentic-mtp: scenarios.agentic-coding[0].search-space[0]: single-node agentic search-space entries must specify kv-offloading"
        ]
    );
}

#[test]
fn v13_one_scenario() {
    assert_eq!(
        one(QWEN, "    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n      search-space:\n      - { tp: 4, ep: 1, conc-start: 4, conc-end: 4, spec-decoding: mtp }\n      - { tp: 2, ep: 1, conc-start: 4, conc-end: 64, spec-decoding: mtp }\n      - { tp: 2, ep: 2, conc-list: [16, 32, 64], spec-decoding: mtp }\n", "    fixed-seq-len: []\n"),
        vec![
            "nvidia-master.yaml:1260:5: qwen3.5-fp4-b200-sglang-mtp: scenarios: at least one scenario type must be specified"
        ]
    );
}

#[test]
fn v14_disagg_needs_multinode() {
    assert_eq!(
        one(QWEN, "  multinode: false\n", "  multinode: false\n  disagg: true\n"),
        vec![
            "nvidia-master.yaml:1259:11: qwen3.5-fp4-b200-sglang-mtp: disagg: disagg: true requires multinode: true"
        ]
    );
}

#[test]
fn v15_version_not_image() {
    assert_eq!(
        one(DSR1_GB200, "version: \"0.8.1.post2\" }", "version: \"image:nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2\" }"),
        vec![
            "nvidia-master.yaml:2405:43: dsr1-fp4-gb200-dynamo-trt: router.version: version must be a release, package version, or source commit, not an image reference"
        ]
    );
}

#[test]
fn v16_wildcard_key() {
    assert_eq!(
        errors(&[("nvidia-master.yaml", nvidia().replacen("\nqwen3.5-fp4-b200-sglang-mtp:\n", "\nqwen3.5-fp4-b200-*-mtp:\n", 1))]),
        vec![
            "nvidia-master.yaml:1251:1: qwen3.5-fp4-b200-*-mtp: Wildcard '*' is not allowed in master config keys"
        ]
    );
}

#[test]
fn v16_duplicate_across_files() {
    assert_eq!(
        errors(&[("nvidia-master.yaml", nvidia()), ("amd-master.yaml", amd().replacen("dsr1-fp4-mi355x-sglang:\n", "qwen3.5-fp4-b200-sglang-mtp:\n", 1))]),
        vec![
            "amd-master.yaml:1:1: qwen3.5-fp4-b200-sglang-mtp: Duplicate configuration key (also defined at nvidia-master.yaml:1251:1)"
        ]
    );
}

#[test]
fn v16_duplicate_in_one_mapping() {
    assert_eq!(
        one(QWEN, "  precision: fp4\n", "  precision: fp4\n  precision: fp8\n"),
        vec![
            "nvidia-master.yaml:1257:3: duplicate mapping key 'precision' (first defined at line 1256)"
        ]
    );
}

#[test]
fn runners_rules() {
    use servebench_catalog::Runners;
    let text = std::fs::read_to_string(format!("{DATA}/runners.yaml")).unwrap();
    let err = |t: &str| match Runners::from_source("runners.yaml", t) {
        Err(CatalogError::Invalid(d)) => d.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        other => panic!("expected an error, got {other:?}"),
    };
    assert!(Runners::from_source("runners.yaml", &text).is_ok());
    // An empty label list.
    let t = text.replacen("  h100-multinode:\n    - h100-dgxc-slurm_16\n    - h100-dgxc-slurm_17\n    - h100-dgxc-slurm_18\n    - h100-dgxc-slurm_19\n", "  h100-multinode: []\n", 1);
    assert_eq!(err(&t), vec!["runners.yaml:25:19: labels.h100-multinode: Runner config entry 'h100-multinode' cannot be an empty list"]);
    // Hardware entries are strict.
    let t = text.replacen(
        "    gpus-per-node: 8\n",
        "    gpus-per-node: 8\n    nvlink: true\n",
        1,
    );
    assert_eq!(
        err(&t),
        vec!["runners.yaml:329:5: hardware.cluster:h100-dgxc: unknown field 'nvlink' (allowed: available-cpu-dram-mib, gpus-per-node)"]
    );
    let t = text.replacen(
        "available-cpu-dram-mib: 2_063_837",
        "available-cpu-dram-mib: 0",
        1,
    );
    assert_eq!(
        err(&t),
        vec!["runners.yaml:327:29: hardware.cluster:h100-dgxc.available-cpu-dram-mib: must be greater than 0, got 0"]
    );
}
