//! `servebench coverage` over multinode configs of the REAL InferenceX repository
//! (`shared/data/inferencex/repo-843c6254f.tar.gz`, unmodified): each config's smallest point
//! runs as the simulated prefill/decode fleet `servebench run KEY --simulate` runs for it, is
//! reported in its own kind (`multinode fixed-seq`/`multinode agentic`), counted in the totals,
//! and stores a row in InferenceX's multinode shape.

use crate::common;
use common::run_in;
use common::runs::{real_args, real_repo, stored_rows};

/// `P1×TP4/EP4/DPA + D1×TP8/EP8/DPA` → ((workers, TP, EP, DPA) prefill, same decode).
fn sides(label: &str) -> [(u64, u64, u64, bool); 2] {
    let shape = label
        .split(" · ")
        .nth(1)
        .expect("a shape in the point label");
    let (p, d) = shape.split_once(" + ").expect("prefill + decode");
    let side = |s: &str, lead: char| {
        let s = s.strip_prefix(lead).unwrap();
        let (w, rest) = s.split_once("×TP").unwrap();
        let mut it = rest.split('/');
        let tp = it.next().unwrap().parse().unwrap();
        let ep = it
            .next()
            .unwrap()
            .strip_prefix("EP")
            .unwrap()
            .parse()
            .unwrap();
        (w.parse().unwrap(), tp, ep, it.next() == Some("DPA"))
    };
    [side(p, 'P'), side(d, 'D')]
}

#[test]
fn multinode_configs_of_both_vendors_run_as_simulated_fleets_and_store_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if real_repo(d).is_none() {
        return;
    }
    let keys = [
        "dsr1-fp4-b200-dynamo-trt",         // fixed-seq, NVIDIA, Dynamo TRT-LLM
        "qwen3.5-fp8-mi355x-sglang-disagg", // fixed-seq, AMD, SGLang disagg
        "kimik3-fp4-h200-vllm-agentic",     // agentic, NVIDIA, aggregated workers
        "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp", // agentic, AMD
    ];
    let args = real_args(
        "coverage",
        &keys,
        &[
            "--recipes",
            "InferenceX",
            "--duration",
            "2",
            "--jobs",
            "2",
            "--out",
            "cov",
            "--db",
            "cov.db",
            "--json",
        ],
    );
    let (rc, out, err) = run_in(d, &args);
    let rep: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(rc, 0, "{out}\n{err}");
    assert_eq!(
        (rep["run"].as_u64(), rep["stored"].as_u64()),
        (Some(4), Some(4)),
        "{out}"
    );
    assert_eq!(rep["multinode"], serde_json::json!([4, 4]), "{out}");
    assert_eq!(rep["single_node"], serde_json::json!([0, 0]), "{out}");
    assert_eq!(
        rep["by_group"]["multinode agentic amd"],
        serde_json::json!([1, 1])
    );
    let rows = rep["rows"].as_array().unwrap();
    let kinds: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["vendor"].as_str().unwrap(),
                r["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("multinode fixed-seq", "nvidia", "stored"),
            ("multinode fixed-seq", "amd", "stored"),
            ("multinode agentic", "nvidia", "stored"),
            ("multinode agentic", "amd", "stored"),
        ]
    );
    // the smallest point of dsr1-fp4-b200-dynamo-trt in the config YAML: 1 prefill worker
    // TP4/EP4 with DP-attention + 1 decode worker TP8/EP8 with DP-attention, conc 90
    assert_eq!(
        rows[0]["point"].as_str().unwrap(),
        "8k1k · P1×TP4/EP4/DPA + D1×TP8/EP8/DPA · conc 90"
    );

    // each stored row carries the prefill/decode shape of the point its config ran
    let stored: Vec<serde_json::Value> = stored_rows(&d.join("cov.db"))
        .concat()
        .iter()
        .map(|r| r.to_value())
        .collect();
    assert_eq!(stored.len(), 4, "{stored:?}");
    for (key, row) in keys.iter().zip(rows) {
        let prefix = key.split('-').next().unwrap();
        let [p, mut dc] = sides(row["point"].as_str().unwrap());
        let v = stored
            .iter()
            .find(|v| {
                v["infmax_model_prefix"] == prefix
                    && v["prefill_num_workers"].as_u64() == Some(p.0)
                    && v["decode_num_workers"].as_u64() == Some(dc.0)
            })
            .unwrap_or_else(|| panic!("{key}: no stored row of shape {p:?} + {dc:?}: {stored:?}"));
        assert_eq!(v["is_multinode"], true, "{v}");
        assert!(v.get("tp").is_none(), "{v}");
        assert_eq!(
            (
                v["prefill_tp"].as_u64(),
                v["prefill_ep"].as_u64(),
                v["prefill_dp_attention"].as_bool()
            ),
            (Some(p.1), Some(p.2), Some(p.3)),
            "{key}: {v}"
        );
        if dc.0 == 0 {
            // aggregated (no decode workers): process_result.py writes decode TP/EP 0
            // (`output_decode_tp = decode_tp if decode_gpus > 0 else 0`)
            (dc.1, dc.2) = (0, 0);
        }
        assert_eq!(
            (
                v["decode_tp"].as_u64(),
                v["decode_ep"].as_u64(),
                v["decode_dp_attention"].as_bool()
            ),
            (Some(dc.1), Some(dc.2), Some(dc.3)),
            "{key}: {v}"
        );
        let (pg, dg) = (p.0 * p.1, dc.0 * dc.1);
        assert_eq!(
            (v["num_prefill_gpu"].as_u64(), v["num_decode_gpu"].as_u64()),
            (Some(pg), Some(dg)),
            "{key}: {v}"
        );
        assert_eq!(v["num_gpus"].as_u64(), Some(pg + dg), "{key}: {v}");
        let bt = if row["kind"] == "multinode agentic" {
            "agentic_traces"
        } else {
            "single_turn"
        };
        assert_eq!(v["benchmark_type"], bt, "{key}: {v}");
    }

    // the text table names the kinds and counts them
    let (rc, text, err) = run_in(
        d,
        &[
            "coverage",
            "dsr1-fp4-b200-dynamo-trt",
            "--catalog",
            "InferenceX/configs/nvidia-master.yaml",
            "--recipes",
            "InferenceX",
            "--out",
            "cov2",
            "--db",
            "cov2.db",
        ],
    );
    assert_eq!(rc, 0, "{text}\n{err}");
    assert!(
        text.contains("multinode fixed-seq  nvidia  stored"),
        "{text}"
    );
    assert!(
        text.contains("stored 1/1 multinode configs (100.0 %)"),
        "{text}"
    );
    assert!(!text.contains("single-node configs"), "{text}");
}
