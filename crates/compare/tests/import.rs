//! Baseline import: the scenario's `baseline.json` table, InferenceX agg rows (golden
//! process_result outputs), AgentX aggregates and eval rows.

use serde_json::{json, Value};
use servebench_compare::{
    compare, parse_baseline, BaselineFormat, BenchmarkType, CompareOptions, EvalPoint, GateKind,
    GateOutcome, IdentityOverrides, Metric, NaReason, Point, RunInfo, Stat, Verdict,
};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared");

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{SHARED}/{rel}")).unwrap()
}

#[test]
fn scenario_baseline_table_as_is() {
    let imp = parse_baseline(
        &read("data/scenario/baseline.json"),
        "baseline.json",
        &IdentityOverrides::default(),
    )
    .unwrap();
    assert_eq!(imp.format, BaselineFormat::Table);
    assert_eq!(
        imp.config_key.as_deref(),
        Some("qwen3.8next-fp4-b200-sglang-agentic-mtp")
    );
    assert_eq!(imp.date.as_deref(), Some("2026-09-15"));
    assert_eq!(
        imp.image.as_deref(),
        Some("lmsysorg/sglang:qwen38flashnext")
    );
    assert_eq!(imp.workload.as_deref(), Some("AgentX"));
    assert_eq!(imp.topology.as_deref(), Some("TP1/EP1"));
    assert_eq!(imp.statistic, Some(Stat::Mean));
    assert_eq!(imp.points.len(), 4);
    assert_eq!(imp.evals.len(), 1);
    assert_eq!(
        imp.notes.len(),
        1,
        "identity derived from the config key is reported"
    );
    assert!(imp.notes[0].contains("hw b200"), "{}", imp.notes[0]);

    let pts: Vec<Point> = imp
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    let id = &pts[0].identity;
    assert_eq!(
        (
            id.hw.as_str(),
            id.framework.as_str(),
            id.model_prefix.as_str(),
            id.precision.as_str(),
            id.spec_decoding.as_str()
        ),
        ("b200", "sglang", "qwen3.8next", "fp4", "mtp")
    );
    assert_eq!(id.benchmark_type, BenchmarkType::AgenticTraces);
    assert_eq!((id.isl, id.osl), (None, None));
    assert_eq!((id.topology.prefill.tp, id.topology.prefill.ep), (1, 1));
    assert_eq!(
        pts.iter().map(|p| p.identity.conc).collect::<Vec<_>>(),
        vec![1, 4, 8, 16]
    );
    // Values come back in display units (2-decimal rounding, as the table is written).
    let r2 = |x: f64| (x * 100.0).round() / 100.0;
    let p16 = &pts[3];
    assert_eq!(
        p16.value(Metric::TotalTputPerGpu, Stat::Mean),
        Some(71333.43)
    );
    assert_eq!(p16.value(Metric::OutputTputPerGpu, Stat::Mean), Some(637.9));
    assert_eq!(r2(p16.value(Metric::Ttft, Stat::Mean).unwrap()), 1570.11);
    assert_eq!(r2(p16.value(Metric::Tpot, Stat::Mean).unwrap()), 12.65);
    assert_eq!(p16.only_stat, Some(Stat::Mean));
    assert_eq!(
        p16.value(Metric::Ttft, Stat::Median),
        None,
        "a mean-only table has no median"
    );

    let ev = EvalPoint::from_foreign(&imp.evals[0]).unwrap();
    assert_eq!(
        (ev.task.as_str(), ev.metric.as_str()),
        ("gsm8k", "em_strict")
    );
    assert_eq!(ev.identity.conc, 16);
    assert_eq!(ev.score, Some(0.9795));
    assert_eq!(ev.samples, Some(1319));
    assert_eq!(
        ev.passed,
        Some(true),
        "0.9795 ≥ default gsm8k threshold 0.90"
    );
}

#[test]
fn baseline_table_against_itself_and_statistic_mismatch() {
    let imp = parse_baseline(
        &read("data/scenario/baseline.json"),
        "b",
        &Default::default(),
    )
    .unwrap();
    let pts = || {
        imp.points
            .iter()
            .map(|r| Point::from_foreign(r).unwrap())
            .collect::<Vec<_>>()
    };
    let evs = || {
        imp.evals
            .iter()
            .map(|r| EvalPoint::from_foreign(r).unwrap())
            .collect::<Vec<_>>()
    };
    let opts = CompareOptions {
        metrics: vec![
            Metric::TotalTputPerGpu,
            Metric::OutputTputPerGpu,
            Metric::Ttft,
            Metric::Tpot,
        ],
        ..Default::default()
    };
    let c = compare(
        RunInfo::default(),
        pts(),
        evs(),
        RunInfo::default(),
        pts(),
        evs(),
        &opts,
    );
    assert_eq!(c.points.len(), 4);
    assert!(c.points.iter().all(|p| p.verdict == Verdict::NoChange));
    assert_eq!(c.evals.len(), 1);
    assert_eq!(c.evals[0].delta.pct, Some(0.0));
    assert_eq!(c.evals[0].delta.pp_text(), "+0.00 pp");
    assert_eq!(c.evals[0].verdict, Verdict::NoChange);

    let opts = CompareOptions {
        stat: Stat::Median,
        ..opts
    };
    let c = compare(
        RunInfo::default(),
        pts(),
        vec![],
        RunInfo::default(),
        pts(),
        vec![],
        &opts,
    );
    let m = &c.points[0].metrics;
    assert_eq!(m[0].delta.pct, Some(0.0), "throughput has no statistic");
    assert_eq!(
        m[2].delta.na,
        Some(NaReason::StatisticMismatch {
            baseline: Stat::Mean,
            requested: Stat::Median
        })
    );
}

#[test]
fn baseline_table_errors_name_the_field() {
    let bad = r#"{"config_key": "x", "workload": "AgentX", "topology": {"tp": 1}, "points": [{"conc": 1}]}"#;
    let e = parse_baseline(bad, "t.json", &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("t.json") && e.contains("hw"), "{e}");
    let ov = IdentityOverrides {
        hw: Some("h200".into()),
        framework: Some("vllm".into()),
        model_prefix: Some("x".into()),
        precision: Some("fp8".into()),
        ..Default::default()
    };
    assert!(parse_baseline(bad, "t.json", &ov).is_ok());
    let typo = r#"{"config_key": "qwen3.5-fp4-b200-sglang", "workload": "8k/1k", "topology": {"tp": 1},
                  "points": [{"conc": 1, "ttft": 3}]}"#;
    let e = format!(
        "{:#}",
        parse_baseline(typo, "t.json", &Default::default()).unwrap_err()
    );
    assert!(e.contains("t.json: points[0]: unknown field `ttft`"), "{e}");
    let e = format!(
        "{:#}",
        parse_baseline("{\"points\": [", "t.json", &Default::default()).unwrap_err()
    );
    assert!(e.starts_with("t.json: not valid JSON (line 1"), "{e}");
}

#[test]
fn inferencex_golden_agg_rows() {
    let rows: Vec<Value> = (1..=4)
        .map(|i| {
            serde_json::from_str(&read(&format!(
                "data/inferencex/golden/process-result/R{i}-agg.json"
            )))
            .unwrap()
        })
        .collect();
    let text = serde_json::to_string(&rows).unwrap();
    let imp = parse_baseline(&text, "agg_bmk.json", &Default::default()).unwrap();
    assert_eq!(imp.format, BaselineFormat::InferencexRows);
    assert_eq!(imp.points.len(), 4);
    let p: Vec<Point> = imp
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    // R1: single-node TP4, conc 8, dp_attention "false".
    assert_eq!(p[0].identity.topology_label(), "TP4/EP1");
    assert_eq!(p[0].identity.workload_label(), "8k/1k");
    assert_eq!(
        p[0].value(Metric::TotalTputPerGpu, Stat::Mean),
        Some(887.4087205171463)
    );
    assert!((p[0].value(Metric::Ttft, Stat::Median).unwrap() - 398.5).abs() < 1e-9);
    assert!((p[0].value(Metric::Tpot, Stat::P99).unwrap() - 10.873).abs() < 1e-9);
    // R2: dp_attention "true" string.
    assert!(p[1].identity.topology.prefill.dp_attention);
    // R3: multinode disagg: prefill TP4×2 EP4, decode TP16×1.
    let id = &p[2].identity;
    assert!(id.is_multinode && id.disagg);
    assert_eq!(
        (
            id.topology.prefill.tp,
            id.topology.prefill.ep,
            id.topology.decode.tp
        ),
        (4, 4, 16)
    );
    assert_eq!(id.topology_label(), "PTP4x2/DTP16x1");
    // Matching R1 against a copy with another image and a 10 % better throughput.
    let mut cand = rows[0].clone();
    cand["image"] = json!("lmsysorg/sglang:v0.5.20-cu130");
    cand["tput_per_gpu"] = json!(887.4087205171463 * 1.1);
    let c = compare(
        RunInfo::default(),
        p.clone(),
        vec![],
        RunInfo::default(),
        vec![Point::from_agg_row(&cand).unwrap()],
        vec![],
        &CompareOptions::default(),
    );
    assert_eq!(c.points.len(), 1);
    assert!(c.points[0].baseline.is_some());
    assert_eq!(c.points[0].metrics[0].delta.pct, Some(10.0));
    assert_eq!(c.points[0].metrics[0].verdict, Verdict::Improvement);
    // the other three goldens are other configurations: kept, counted apart
    assert_eq!(c.unmatched_baseline.len(), 0);
    assert_eq!(c.baseline_other_configs.len(), 3);
}

/// An AgentX aggregate row in the §5.8 shape (hand-written; values chosen to check mapping).
fn agentx_row(conc: u32, p50_ttft_s: f64) -> Value {
    let block = |mean: f64| json!({"mean": mean, "p50": mean * 0.9, "p75": mean * 1.1, "p90": mean * 1.3, "p95": mean * 1.5, "std": mean * 0.2});
    json!({
        "hw": "b200", "conc": conc, "image": "lmsysorg/sglang:qwen38flashnext", "recipe_fingerprint": "",
        "model": "Qwen/Qwen3.8-Flash-Next-NVFP4", "infmax_model_prefix": "qwen3.8next",
        "framework": "sglang", "precision": "fp4", "spec_decoding": "mtp", "disagg": false,
        "scenario_type": "agentic-coding", "is_multinode": false, "tp": 1, "ep": 1,
        "dp_attention": false, "kv_offloading": "none", "kv_offload_backend": null,
        "num_requests_total": 200, "num_requests_successful": 196,
        "request_accounting": {"records_total": 210, "records_profiled": 200, "records_dropped_total": 14,
            "records_warmup_dropped": 10, "records_error_dropped": 4, "error_categories": {"timeout": 4}},
        "request_metrics": {
            "latency": {"ttft": {"mean": 0.66582, "p50": p50_ttft_s, "p75": 0.7, "p90": 0.9, "p95": 1.0, "std": 0.1},
                        "e2el": block(10.0), "itl": block(0.00357), "tpot": block(0.00357), "intvty": block(280.0)},
            "tokens": {"input": {"mean": 30000.0}, "output_actual": {"mean": 512.0}, "output_expected": {"mean": 512.0}},
            "throughput": {"per_gpu": {"total_tput_tps": 14445.12, "output_tput_tps": 159.68, "input_tput_tps": 14285.44}}
        }
    })
}

#[test]
fn agentx_aggregate_rows_and_eval_rows_in_one_array() {
    let eval = json!({
        "is_multinode": false, "model_prefix": "qwen3.8next", "model": "Qwen/Qwen3.8-Flash-Next-NVFP4",
        "hw": "B200", "framework": "sglang", "precision": "fp4", "spec_decoding": "mtp",
        "isl": 8192, "osl": 1024, "tp": 1, "ep": 1, "conc": 16, "dp_attention": false,
        "task": "gsm8k", "em_strict": 0.9795, "em_strict_se": 0.0039, "em_flexible": 0.9803,
        "em_flexible_se": 0.0038, "n_eff": 1319, "source": "x", "score": 0.9795,
        "score_name": "em_strict", "score_se": 0.0039
    });
    let arr = json!([agentx_row(1, 0.6), agentx_row(4, 0.55), eval]);
    let imp = parse_baseline(&arr.to_string(), "agg_bmk.json", &Default::default()).unwrap();
    assert_eq!((imp.points.len(), imp.evals.len()), (2, 1));
    assert_eq!(imp.workload.as_deref(), Some("AgentX"));
    let p = Point::from_foreign(&imp.points[0]).unwrap();
    assert_eq!(p.identity.benchmark_type, BenchmarkType::AgenticTraces);
    assert_eq!((p.identity.isl, p.identity.osl), (None, None));
    assert_eq!(p.value(Metric::TotalTputPerGpu, Stat::Mean), Some(14445.12));
    assert_eq!(p.value(Metric::OutputTputPerGpu, Stat::Mean), Some(159.68));
    assert!((p.value(Metric::Ttft, Stat::Mean).unwrap() - 665.82).abs() < 1e-9);
    assert!(
        (p.value(Metric::Ttft, Stat::Median).unwrap() - 600.0).abs() < 1e-9,
        "p50 → median"
    );
    assert_eq!(p.value(Metric::Ttft, Stat::P99), None, "AgentX has no p99");
    assert_eq!(p.mean_osl, Some(512.0));
    assert_eq!(p.mean_isl_server, Some(30000.0));
    assert_eq!(p.num_requests_failed, Some(4));
    assert_eq!(p.api, Some(servebench_compare::ApiKind::Chat));
    let e = EvalPoint::from_foreign(&imp.evals[0]).unwrap();
    assert_eq!(
        e.identity.hw, "b200",
        "hw upper-case in eval rows is normalised"
    );
    assert_eq!(e.passed, Some(true));
    // The eval row matches the baseline table's eval (workload is not part of eval matching).
    let table = parse_baseline(
        &read("data/scenario/baseline.json"),
        "b",
        &Default::default(),
    )
    .unwrap();
    let mut cand = imp.evals[0].to_value();
    cand["score"] = json!(0.9803);
    let c = compare(
        RunInfo::default(),
        vec![],
        table
            .evals
            .iter()
            .map(|r| EvalPoint::from_foreign(r).unwrap())
            .collect(),
        RunInfo::default(),
        vec![],
        vec![EvalPoint::from_eval_row(&cand).unwrap()],
        &CompareOptions::default(),
    );
    assert_eq!(c.evals.len(), 1);
    assert_eq!(c.evals[0].delta.pct, Some(0.08));
    assert_eq!(c.evals[0].delta.pp_text(), "+0.08 pp");
    assert_eq!(
        c.evals[0].verdict,
        Verdict::NoChange,
        "0.08 pp is inside 2 × stderr"
    );
}

#[test]
fn eval_deltas_need_both_passed_and_equal_samples() {
    let table = parse_baseline(
        &read("data/scenario/baseline.json"),
        "b",
        &Default::default(),
    )
    .unwrap();
    let base: Vec<EvalPoint> = table
        .evals
        .iter()
        .map(|r| EvalPoint::from_foreign(r).unwrap())
        .collect();
    let mk = |score: Option<f64>, n: u64| {
        let mut r = table.evals[0].to_value();
        match score {
            Some(s) => {
                r["score"] = json!(s);
                r["em_strict"] = json!(s);
            }
            None => {
                r.as_object_mut().unwrap().remove("score");
                r.as_object_mut().unwrap().remove("em_strict");
            }
        }
        r["n_eff"] = json!(n);
        EvalPoint::from_eval_row(&r).unwrap()
    };
    let run = |c: EvalPoint| {
        compare(
            RunInfo::default(),
            vec![],
            base.clone(),
            RunInfo::default(),
            vec![],
            vec![c],
            &CompareOptions::default(),
        )
        .evals
        .remove(0)
    };
    let e = run(mk(Some(0.97), 1000));
    assert_eq!(
        e.delta.na,
        Some(NaReason::SampleCountsDiffer {
            baseline: Some(1319),
            candidate: Some(1000)
        })
    );
    assert_eq!(e.verdict, Verdict::NotComparable);
    let e = run(mk(Some(0.85), 1319));
    assert_eq!(
        e.delta.na,
        Some(NaReason::EvalNotPassed {
            side: servebench_compare::Side::Candidate
        })
    );
    assert_eq!(e.verdict, Verdict::Regression, "under the 0.90 threshold");
    let e = run(mk(None, 1319));
    assert_eq!(e.verdict, Verdict::CandidateInvalid);
    let e = run(mk(Some(0.95), 1319));
    assert_eq!(e.delta.pct, Some(-2.95));
    assert_eq!(
        e.verdict,
        Verdict::Regression,
        "−2.95 pp is beyond 2 × stderr (~1.2 pp)"
    );
    // A baseline eval with no candidate is listed, not dropped.
    let c = compare(
        RunInfo::default(),
        vec![],
        base.clone(),
        RunInfo::default(),
        vec![],
        vec![],
        &CompareOptions::default(),
    );
    assert_eq!(c.evals.len(), 1);
    assert_eq!(c.evals[0].delta.na, Some(NaReason::CandidateMissing));
}

// ---- real captures (../shared/data/real-results/raw; expected values read from the raw
// files by hand, see SOURCE.md) ----

const S1: &str =
    "data/real-results/raw/S1-ix-app-cypress-528c4146/packages/app/cypress/fixtures/api";
const S7: &str = "data/real-results/raw/S7-ix-kimik2.7-mi355x-agentic/tp8_sweep_29337493492/kimik2.7_tp8_conc16_kvdram-lmcache_fp4_vllm_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc16_mi355x-amds_01.json";
const RUN_0: &str =
    "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27213443242/attempts/1";

fn close(a: Option<f64>, b: f64) {
    let a = a.unwrap_or(f64::NAN);
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
}

#[test]
fn dashboard_api_rows_import_with_their_identity_and_seconds() {
    // `compare --baseline benchmarks.json` used to stop with `row 0: missing field tp`
    let imp = parse_baseline(
        &read(&format!("{S1}/benchmarks.json")),
        "benchmarks.json",
        &IdentityOverrides::default(),
    )
    .unwrap();
    assert_eq!(imp.format, BaselineFormat::InferencexApi);
    assert_eq!(imp.points.len(), 435);
    assert_eq!(
        imp.date.as_deref(),
        Some("2026-06-11"),
        "newest date of the capture"
    );
    let pts: Vec<Point> = imp
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();

    // row 0: mi355x sglang dsr1 fp4, TP4/EP1, 1k/1k, conc 4, run 27213443242
    let p = &pts[0];
    let id = &p.identity;
    assert_eq!(
        (
            id.hw.as_str(),
            id.framework.as_str(),
            id.model_prefix.as_str(),
            id.precision.as_str()
        ),
        ("mi355x", "sglang", "dsr1", "fp4")
    );
    assert_eq!(id.spec_decoding, "none");
    assert_eq!((id.isl, id.osl, id.conc), (Some(1024), Some(1024), 4));
    assert_eq!(id.topology_label(), "TP4/EP1");
    assert_eq!(id.workload_label(), "1k/1k");
    assert_eq!(
        p.image.as_deref(),
        Some("lmsysorg/sglang:v0.5.12-rocm700-mi35x")
    );
    assert_eq!(p.date.as_deref(), Some("2026-06-11"));
    assert_eq!(p.run_url.as_deref(), Some(RUN_0));
    assert!(p.dashboard_row);
    // metrics.mean_ttft 0.17262843293137847 s → 172.628… ms; tput_per_gpu as is
    close(p.value(Metric::Ttft, Stat::Mean), 172.62843293137847);
    close(p.value(Metric::Tpot, Stat::Mean), 9.618676175431115);
    close(
        p.value(Metric::TotalTputPerGpu, Stat::Mean),
        198.9447984579421,
    );
    close(
        p.value(Metric::OutputTputPerGpu, Stat::Mean),
        98.9883650269406,
    );
    close(p.values.get("avg_power_w").copied(), 628.907);

    // row 151: gb200 dynamo-trt disagg multinode, prefill TP4 EP4 DPA ×1, decode TP8 EP8 ×4
    let p = &pts[151];
    let id = &p.identity;
    assert!(id.is_multinode && id.disagg);
    assert_eq!(
        (id.hw.as_str(), id.framework.as_str(), id.conc),
        ("gb200", "dynamo-trt", 24)
    );
    assert_eq!(id.topology_label(), "PTP4x1/DTP8x4");
    assert!(id.topology.prefill.dp_attention && !id.topology.decode.dp_attention);
    assert_eq!((id.topology.prefill.ep, id.topology.decode.ep), (4, 8));
    close(p.value(Metric::Ttft, Stat::Median), 187.82488186843693);
    close(
        p.value(Metric::TotalTputPerGpu, Stat::Mean),
        169.07090612277543,
    );
    assert_eq!(
        imp.points[151].as_object()["num_gpus"],
        json!(36),
        "4 prefill + 32 decode GPUs"
    );
}

#[test]
fn dashboard_history_is_history_and_compare_matches_the_latest_capture() {
    let hist = parse_baseline(
        &read(&format!("{S1}/benchmarks-history.json")),
        "benchmarks-history.json",
        &IdentityOverrides::default(),
    )
    .unwrap();
    assert_eq!(hist.points.len(), 1462);
    // 497 identities at up to 10 dates: the newest row of each stands for it
    let (rows, left_out) = hist.latest_per_identity().unwrap();
    assert_eq!((rows.len(), left_out), (497, 965));
    // one stored history run per CI run (133 run URLs, each of one date)
    let runs = hist.split_by_run().unwrap();
    assert_eq!(runs.len(), 133);
    assert_eq!(runs.iter().map(|r| r.points.len()).sum::<usize>(), 1462);
    let first = &runs[0];
    assert!(
        runs.windows(2).all(|w| w[0].date <= w[1].date),
        "runs in date order"
    );
    assert!(first.image.is_none(), "history rows carry no image");

    // The history's newest mi355x/sglang/dsr1 TP4 c4 row is the latest capture's row 0
    // (run 27213443242, 2026-06-11): compared, it matches with a zero delta and cites it.
    let latest = parse_baseline(
        &read(&format!("{S1}/benchmarks.json")),
        "benchmarks.json",
        &IdentityOverrides::default(),
    )
    .unwrap();
    let base: Vec<Point> = rows
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    let cand = vec![Point::from_foreign(&latest.points[0]).unwrap()];
    let c = compare(
        RunInfo {
            label: "history".into(),
            ..Default::default()
        },
        base,
        vec![],
        RunInfo {
            label: "latest".into(),
            ..Default::default()
        },
        cand,
        vec![],
        &CompareOptions {
            stat: Stat::Median,
            ..Default::default()
        },
    );
    assert_eq!(c.points.len(), 1);
    let p = &c.points[0];
    assert!(p.baseline.is_some(), "matched on the InferenceX identity");
    let tput = p
        .metrics
        .iter()
        .find(|m| m.metric == Metric::TotalTputPerGpu)
        .unwrap();
    close(tput.baseline, 198.9447984579421);
    assert_eq!(tput.delta.pct, Some(0.0));
    let ttft = p.metrics.iter().find(|m| m.metric == Metric::Ttft).unwrap();
    close(ttft.baseline, 102.17383736744523);
    assert_eq!(p.verdict, Verdict::NoChange);
    // 496 unmatched: 9 of the candidate's configuration (other TP/ISL/OSL/conc) are listed,
    // 487 of other GPUs/frameworks/precisions are kept apart
    assert_eq!(c.unmatched_baseline.len(), 9);
    assert_eq!(c.baseline_other_configs.len(), 487);
    assert_eq!(
        c.baseline.sources.len(),
        1,
        "only the matched point's run is cited"
    );
    assert_eq!(c.baseline.sources[0].name, "API 1");
    assert_eq!(c.baseline.sources[0].url, RUN_0);
}

#[test]
fn servebench_row_against_dashboard_baseline_cites_api_sources() {
    let latest = parse_baseline(
        &read(&format!("{S1}/benchmarks.json")),
        "benchmarks.json",
        &IdentityOverrides::default(),
    )
    .unwrap();
    let base: Vec<Point> = latest
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    // a servebench fixed-seq row of the same configuration, TTFT 190 ms (baseline 172.63 ms)
    let cand = Point::from_agg_row(&json!({
        "hw": "mi355x", "conc": 4, "image": "lmsysorg/sglang:v0.5.13-rocm700-mi35x",
        "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
        "framework": "sglang", "precision": "fp4", "spec_decoding": "none", "disagg": false,
        "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 4, "ep": 1,
        "dp_attention": "false", "tput_per_gpu": 198.9447984579421,
        "output_tput_per_gpu": 98.9883650269406, "mean_ttft": 0.190, "mean_tpot": 0.009618676175431115,
        "benchmark_type": "single_turn", "point_status": "ok"
    }))
    .unwrap();
    let c = compare(
        RunInfo {
            label: "benchmarks.json".into(),
            ..Default::default()
        },
        base,
        vec![],
        RunInfo {
            label: "run 1".into(),
            ..Default::default()
        },
        vec![cand],
        vec![],
        &CompareOptions::default(),
    );
    let p = &c.points[0];
    let ttft = p.metrics.iter().find(|m| m.metric == Metric::Ttft).unwrap();
    // (190 / 172.62843293137847 − 1) × 100 = 10.0630… → +10.1 %
    assert_eq!(ttft.delta.pct, Some(10.1));
    assert_eq!(ttft.verdict, Verdict::Regression);
    assert_eq!(p.verdict, Verdict::Regression);
    assert_eq!(
        c.baseline.sources,
        vec![servebench_compare::SourceLink {
            name: "API 1".into(),
            url: RUN_0.into()
        }]
    );
}

#[test]
fn no_match_cites_only_the_listed_baseline_points_runs() {
    // `compare --baseline benchmarks.json` with a candidate of the mi355x sglang fp4 1k/1k
    // configuration at a concurrency the dashboard does not hold: nothing matches, the 9 points
    // of that configuration are listed, the 426 others only counted; the sources were all 74
    // run links of the file.
    let latest = parse_baseline(
        &read(&format!("{S1}/benchmarks.json")),
        "benchmarks.json",
        &IdentityOverrides::default(),
    )
    .unwrap();
    let base: Vec<Point> = latest
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    // as `pipeline::sides` gives the file's side: every point's link
    let loader_sources = servebench_compare::source_links(&base);
    let cand = Point::from_agg_row(&json!({
        "hw": "mi355x", "conc": 3, "image": "lmsysorg/sglang:v0.5.13-rocm700-mi35x",
        "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
        "framework": "sglang", "precision": "fp4", "spec_decoding": "none", "disagg": false,
        "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 4, "ep": 1,
        "dp_attention": "false", "tput_per_gpu": 150.0, "output_tput_per_gpu": 75.0,
        "mean_ttft": 0.190, "mean_tpot": 0.0096, "benchmark_type": "single_turn",
        "point_status": "ok"
    }))
    .unwrap();
    let c = compare(
        RunInfo {
            label: "benchmarks.json".into(),
            sources: loader_sources.clone(),
            ..Default::default()
        },
        base,
        vec![],
        RunInfo::default(),
        vec![cand],
        vec![],
        &CompareOptions::default(),
    );
    assert!(c.points.iter().all(|p| p.baseline.is_none()));
    assert!(!c.baseline_other_configs.is_empty());
    let listed: std::collections::BTreeSet<&str> = c
        .unmatched_baseline
        .iter()
        .filter_map(|p| p.run_url.as_deref())
        .collect();
    assert!(!listed.is_empty());
    assert!(
        loader_sources.len() > listed.len(),
        "{}",
        loader_sources.len()
    );
    let cited: std::collections::BTreeSet<&str> =
        c.baseline.sources.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(cited, listed);
}

#[test]
fn real_agentx_aggregates_nested_and_flat_are_read_whole() {
    // S7: a nested CI aggregate (run 29337493492, Kimi-K2.7 MI355X TP8 c16, LMCache)
    let v: Value = serde_json::from_str(&read(S7)).unwrap();
    let p = Point::from_agg_row(&v).unwrap();
    assert_eq!(p.identity.benchmark_type, BenchmarkType::AgenticTraces);
    assert_eq!(
        (p.identity.hw.as_str(), p.identity.conc),
        ("cluster:mi355x-amds", 16)
    );
    assert_eq!(
        p.dataset.as_deref(),
        Some("semianalysisai/cc-traces-weka-062126-256k")
    );
    close(p.mean_isl_server, 115257.87639);
    close(p.mean_osl, 1063.55);
    close(p.value(Metric::Ttft, Stat::Median), 31822.2);
    close(p.value(Metric::TotalTputPerGpu, Stat::Mean), 2884.88854);
    let val = |k: &str| p.values.get(k).copied();
    close(val("mean_qps"), 0.19917);
    close(val("p95_input_tokens"), 236637.3);
    close(val("mean_output_tokens_expected"), 1743.53492);
    close(val("total_tput_tps"), 23079.10832);
    close(val("duration_seconds"), 3628.88487);
    close(val("theoretical_cache_hit_rate"), 0.96476);
    close(val("server_gpu_cache_hit_rate"), 0.48253);
    close(val("server_overall_cache_hit_rate"), 0.95283);
    close(val("gpu_kv_cache_usage_pct"), 0.99459);
    close(val("total_prompt_tokens"), 84362778.0);
    close(val("prompt_tokens_gpu_cache_hit"), 40707985.0);
    close(val("prompt_tokens_raw_external_kv_transfer"), 39675007.0);
    close(val("prompt_tokens_raw_local_compute"), 3979786.0);

    // S9: the flat agg_bmk.json form (no medians): lengths from mean_input_tokens
    let rows: Value = serde_json::from_str(&read(
        "data/real-results/raw/S9-amd-fork-agentx/results/0601/results_bmk (1)/agg_bmk.json",
    ))
    .unwrap();
    let p = Point::from_agg_row(&rows[0]).unwrap();
    assert_eq!(
        (p.identity.conc, p.identity.topology_label().as_str()),
        (56, "TP4/EP1")
    );
    close(p.mean_isl_server, 117103.16666666667);
    close(p.mean_osl, 230.26388888888889);
    close(p.value(Metric::Ttft, Stat::P90), 844973.4481226);
    assert_eq!(
        p.value(Metric::Ttft, Stat::Median),
        None,
        "no medians in this format"
    );
    close(
        p.values.get("server_gpu_cache_hit_rate").copied(),
        0.017256850822441147,
    );
}

#[test]
fn agentx_point_inferencex_would_not_accept_still_compares_and_says_why() {
    let base: Value = serde_json::from_str(&read(S7)).unwrap();
    // the same point with TTFT +20 % that the harness flagged (context overflow over 1 %)
    let mut cand = base.clone();
    cand["request_metrics"]["latency"]["ttft"]["mean"] = json!(33.72351 * 1.2);
    cand["agentx_submission_valid"] = json!(false);
    cand["agentx_submission_invalid_reasons"] = json!(["context_overflow_rate_exceeded"]);
    let c = compare(
        RunInfo {
            label: "b".into(),
            ..Default::default()
        },
        vec![Point::from_agg_row(&base).unwrap()],
        vec![],
        RunInfo {
            label: "c".into(),
            ..Default::default()
        },
        vec![Point::from_agg_row(&cand).unwrap()],
        vec![],
        &CompareOptions::default(),
    );
    let p = &c.points[0];
    assert!(p.baseline.is_some(), "still matched");
    // warmups are not failures: 0 of 720 profiled requests failed (1,607 records, 887 warmup)
    let g = p
        .gates
        .iter()
        .find(|g| g.kind == GateKind::CandidateFailureRate)
        .unwrap();
    assert_eq!(g.outcome, GateOutcome::Passed, "{}", g.message);
    assert_eq!(
        g.message,
        "candidate failure rate 0% (0 of 720 requests), within the 10% gate"
    );
    // still compares: TTFT +20.0 % is a regression …
    let ttft = p.metrics.iter().find(|m| m.metric == Metric::Ttft).unwrap();
    assert_eq!(ttft.delta.pct, Some(20.0));
    assert_eq!(p.verdict, Verdict::Regression);
    // … of a point that is not a valid submission, and says why
    assert_eq!(
        p.candidate.submission_invalid_text().as_deref(),
        Some(
            "not a valid InferenceX submission: more than 1 % of the profiling requests were \
             rejected as longer than the server's context (context_overflow_rate_exceeded)"
        )
    );
    assert!(Point::from_agg_row(&base)
        .unwrap()
        .submission_invalid
        .is_empty());
}

#[test]
fn dashboard_api_row_errors_name_the_row_and_field() {
    let ov = IdentityOverrides::default();
    let row = json!({"hardware": "b200", "framework": "sglang", "model": "dsr1",
        "precision": "fp8", "spec_method": "none", "disagg": false, "is_multinode": false,
        "prefill_tp": 8, "isl": 1024, "osl": 1024, "conc": 4, "metrics": {"mean_ttft": 0.1}});
    let e = parse_baseline(&json!([row]).to_string(), "b.json", &ov)
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
        .unwrap_err();
    assert_eq!(
        e,
        "b.json: row 0 (dashboard API row): missing field `decode_tp`"
    );
    let mut bad = row.clone();
    bad["decode_tp"] = json!(8);
    bad["metrics"]["mean_ttft"] = json!("0.1 s");
    let e = parse_baseline(&json!([bad]).to_string(), "b.json", &ov)
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
        .unwrap_err();
    assert_eq!(
        e,
        "b.json: row 0 (dashboard API row): metrics.mean_ttft is \"0.1 s\", expected a number"
    );
    let mut ok = row;
    ok["decode_tp"] = json!(8);
    let e = parse_baseline(
        &json!([ok, {"hw": "b200", "conc": 1}]).to_string(),
        "b.json",
        &ov,
    )
    .map(|_| ())
    .map_err(|e| format!("{e:#}"))
    .unwrap_err();
    assert!(
        e.starts_with("b.json: 1 of 2 rows are InferenceX dashboard API rows"),
        "{e}"
    );
}
