//! Property: a candidate identical to its baseline yields 0.0 % on every metric and
//! `no_change` (issue 4, "What proves it").

use proptest::prelude::*;
use serde_json::{json, Value};
use servebench_compare::{compare, CompareOptions, Metric, Point, RunInfo, Stat, Verdict};

fn arb_row() -> impl Strategy<Value = Value> {
    (
        (
            prop::sample::select(vec![
                "b200",
                "h200",
                "mi355x",
                "sim-h200",
                "GB200-multinode",
            ]),
            prop::sample::select(vec!["sglang", "vllm", "dynamo-trt"]),
            prop::sample::select(vec![1u32, 2, 4, 8]),
            prop::sample::select(vec![1u32, 4, 8, 16, 64, 256]),
            any::<bool>(),
            any::<bool>(),
        ),
        prop::collection::vec(1e-4f64..1e5, 26),
        (0u64..1000, 1u64..1000),
    )
        .prop_map(
            |((hw, fw, tp, conc, agentic, dpa), m, (failed_permille, total))| {
                let failed = total * failed_permille.min(40) / 1000; // ≤ 4 %: within the gate
                let mut r = json!({
                    "hw": hw, "conc": conc, "image": "img:1", "model": "m/x",
                    "infmax_model_prefix": "qwen3.5", "framework": fw, "precision": "fp4",
                    "spec_decoding": "mtp", "disagg": false, "is_multinode": false, "tp": tp,
                    "ep": 1, "dp_attention": if dpa { "true" } else { "false" },
                    "benchmark_type": if agentic { "agentic_traces" } else { "single_turn" },
                    "isl": if agentic { Value::Null } else { json!(8192) },
                    "osl": if agentic { Value::Null } else { json!(1024) },
                    "api": if agentic { "chat" } else { "completions" },
                    "num_requests_total": total, "num_requests_failed": failed,
                    "num_requests_successful": total - failed, "point_status": "ok",
                    "tput_per_gpu": m[0], "output_tput_per_gpu": m[1], "input_tput_per_gpu": m[2],
                    "mean_isl": m[3], "mean_isl_server": m[4], "mean_osl": m[5],
                });
                let mut i = 6;
                for stat in ["mean", "median", "p90", "p99"] {
                    for metric in ["ttft", "tpot", "itl", "e2el", "intvty"] {
                        if i < m.len() {
                            r[format!("{stat}_{metric}")] = json!(m[i] / 1000.0);
                        } else {
                            r[format!("{stat}_{metric}")] = json!(m[i % m.len()] * 0.5);
                        }
                        i += 1;
                    }
                }
                r
            },
        )
}

proptest! {
    #[test]
    fn identical_candidate_is_zero_and_no_change(
        row in arb_row(),
        repeats in 1usize..7,
        stat in prop::sample::select(vec![Stat::Mean, Stat::Median, Stat::P90, Stat::P99]),
        jitter in prop::collection::vec(0.9f64..1.1, 6),
    ) {
        // Repeats of the same identity, values jittered per repeat (same rows on both sides).
        let rows: Vec<Value> = (0..repeats).map(|k| {
            let mut r = row.clone();
            for (key, v) in r.as_object_mut().unwrap().iter_mut() {
                let is_metric = key.contains("tput") || key.ends_with("_ttft")
                    || key.ends_with("_tpot") || key.ends_with("_itl")
                    || key.ends_with("_e2el") || key.ends_with("_intvty");
                if is_metric {
                    *v = json!(v.as_f64().unwrap() * jitter[k]);
                }
            }
            r
        }).collect();
        let pts = |rs: &[Value]| rs.iter().map(|r| Point::from_agg_row(r).unwrap()).collect::<Vec<_>>();
        // the generated rows carry no energy keys: every other metric (energy joins by itself when
        // a row has it, compare::with_energy)
        let metrics = Metric::ALL.into_iter().filter(|m| !m.is_energy()).collect();
        let opts = CompareOptions { stat, metrics, ..Default::default() };
        let c = compare(RunInfo::default(), pts(&rows), vec![], RunInfo::default(), pts(&rows), vec![], &opts);
        prop_assert!(c.unmatched_candidate.is_empty());
        prop_assert!(c.unmatched_baseline.is_empty());
        prop_assert_eq!(c.points.len(), 1);
        let p = &c.points[0];
        let tail_observation = stat.is_tail() && repeats < opts.tail_min_repeats;
        for m in &p.metrics {
            prop_assert_eq!(m.delta.pct, Some(0.0), "{:?}", m);
            prop_assert_eq!(m.delta.pct_text(), "+0.0%");
            let expected = if tail_observation && m.metric.has_stat() { Verdict::Observation } else { Verdict::NoChange };
            prop_assert_eq!(m.verdict, expected, "{:?}", m);
        }
        if !tail_observation {
            prop_assert_eq!(p.verdict, Verdict::NoChange);
            prop_assert_eq!(c.verdict, Verdict::NoChange);
        }
        prop_assert!(!c.has_regression());
    }
}
