//! Cases B18 and B20 of `shared/cases/README.md`, with their exact numbers.

use serde_json::{json, Value};
use servebench_compare::{
    compare, CompareOptions, GateKind, GateOutcome, Metric, NaReason, Point, RunInfo, Side, Spread,
    Stat, Verdict,
};

/// A servebench agg row with the identity of a single-node 8k/1k point.
fn row(extra: Value) -> Value {
    let mut r = json!({
        "hw": "b200", "conc": 64, "image": "vllm/vllm-openai:v0.11.0", "model": "openai/gpt-oss-120b",
        "infmax_model_prefix": "gptoss", "framework": "vllm", "precision": "fp4",
        "spec_decoding": "none", "disagg": false, "isl": 8192, "osl": 1024,
        "is_multinode": false, "tp": 1, "pp": 1, "dcp_size": 1, "pcp_size": 1, "ep": 1,
        "dp_attention": "false", "schema_version": 1, "benchmark_type": "single_turn",
        "point_status": "ok", "num_gpus": 1
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    r
}

fn points(rows: &[Value]) -> Vec<Point> {
    rows.iter()
        .map(|r| Point::from_agg_row(r).unwrap())
        .collect()
}

fn info(label: &str) -> RunInfo {
    RunInfo {
        label: label.into(),
        ..Default::default()
    }
}

#[test]
fn b18_output_length_gate_makes_the_pair_not_comparable() {
    // F18: baseline mean ISL 8192, mean OSL 1024, output 10,000 tok/s (raw completions);
    // candidate mean ISL 8192, mean OSL 63, output 1,100 tok/s (chat, harmony stopped early).
    let base = row(json!({
        "api": "completions", "endpoint": "http://b:8000",
        "num_requests_total": 640, "num_requests_successful": 640, "num_requests_failed": 0,
        "mean_isl": 8192.0, "mean_isl_server": 8192.0, "mean_osl": 1024.0,
        "output_tput_per_gpu": 10000.0, "median_ttft": 0.5, "p99_ttft": 1.2
    }));
    let cand = row(json!({
        "api": "chat", "endpoint": "http://c:8000",
        "num_requests_total": 640, "num_requests_successful": 640, "num_requests_failed": 0,
        "mean_isl": 8192.0, "mean_isl_server": 8192.0, "mean_osl": 63.0,
        "output_tput_per_gpu": 1100.0, "median_ttft": 0.5, "p99_ttft": 1.2
    }));
    let opts = CompareOptions {
        metrics: vec![Metric::OutputTputPerGpu],
        ..Default::default()
    };
    let c = compare(
        info("base"),
        points(&[base]),
        vec![],
        info("cand"),
        points(&[cand]),
        vec![],
        &opts,
    );
    assert_eq!(c.points.len(), 1);
    let p = &c.points[0];
    assert_eq!(p.verdict, Verdict::NotComparable);
    let osl = p
        .gates
        .iter()
        .find(|g| g.kind == GateKind::OutputLength)
        .unwrap();
    assert_eq!(osl.outcome, GateOutcome::Failed);
    assert_eq!(osl.diff_pct, Some(-93.8));
    assert_eq!(
        osl.message,
        "mean output length −93.8% (63 vs 1024), beyond the ±5% tolerance"
    );
    let isl = p
        .gates
        .iter()
        .find(|g| g.kind == GateKind::InputLength)
        .unwrap();
    assert_eq!(isl.outcome, GateOutcome::Passed);
    assert_eq!(isl.diff_pct, Some(0.0));
    let api = p
        .gates
        .iter()
        .find(|g| g.kind == GateKind::ApiKind)
        .unwrap();
    assert_eq!(api.outcome, GateOutcome::Failed);
    assert_eq!(api.message, "different API kind (chat vs completions)");
    // The −89.0 % throughput delta is shown, as information only: never a regression.
    let m = &p.metrics[0];
    assert_eq!(m.delta.pct, Some(-89.0));
    assert_eq!(m.delta.pct_text(), "-89.0%");
    assert_eq!(m.verdict, Verdict::Observation);
    assert!(!c.has_regression());
    assert_eq!(c.verdict, Verdict::NotComparable);
}

#[test]
fn b18_osl_gate_alone_and_within_tolerance() {
    // Same API kind: the OSL gate alone decides. 1000 vs 1024 is −2.3 %: comparable.
    let mk = |osl: f64, out: f64| {
        row(
            json!({"api": "completions", "mean_osl": osl, "mean_isl": 8192.0,
                   "num_requests_total": 100, "num_requests_failed": 0, "num_requests_successful": 100,
                   "output_tput_per_gpu": out}),
        )
    };
    let opts = CompareOptions {
        metrics: vec![Metric::OutputTputPerGpu],
        ..Default::default()
    };
    let c = compare(
        info("b"),
        points(&[mk(1024.0, 10000.0)]),
        vec![],
        info("c"),
        points(&[mk(1000.0, 8000.0)]),
        vec![],
        &opts,
    );
    let p = &c.points[0];
    assert!(
        p.gates.iter().all(|g| g.outcome != GateOutcome::Failed),
        "{:?}",
        p.gates
    );
    assert_eq!(p.metrics[0].delta.pct, Some(-20.0));
    assert_eq!(p.verdict, Verdict::Regression);
    assert!(c.has_regression());
    // 1070 vs 1024 = +4.5 %: inside; 1076 = +5.1 %: outside.
    let c = compare(
        info("b"),
        points(&[mk(1024.0, 10000.0)]),
        vec![],
        info("c"),
        points(&[mk(1076.0, 10000.0)]),
        vec![],
        &opts,
    );
    assert_eq!(c.points[0].verdict, Verdict::NotComparable);
    assert_eq!(c.points[0].gates[0].diff_pct, Some(5.1));
}

#[test]
fn failure_rate_over_the_gate_is_candidate_invalid() {
    let base = row(
        json!({"num_requests_total": 100, "num_requests_failed": 0, "num_requests_successful": 100,
        "output_tput_per_gpu": 100.0}),
    );
    let cand = row(
        json!({"num_requests_total": 100, "num_requests_failed": 6, "num_requests_successful": 94,
        "point_status": "partial", "output_tput_per_gpu": 100.0}),
    );
    let c = compare(
        info("b"),
        points(&[base]),
        vec![],
        info("c"),
        points(&[cand]),
        vec![],
        &CompareOptions::default(),
    );
    let p = &c.points[0];
    assert_eq!(p.verdict, Verdict::CandidateInvalid);
    let g = p
        .gates
        .iter()
        .find(|g| g.kind == GateKind::CandidateFailureRate)
        .unwrap();
    assert_eq!(g.outcome, GateOutcome::Failed);
    assert_eq!(
        g.message,
        "candidate failure rate 6% (6 of 100 requests), over the 5% gate"
    );
    assert!(c.has_invalid_candidate());
    // Δ N/A in every cell, with the gate as the reason (never the delta of the invalid run)
    let want = NaReason::PointInvalid {
        side: Side::Candidate,
        reason: "candidate failure rate 6% (6 of 100 requests), over the 5% gate".into(),
    };
    assert_eq!(p.na.as_ref(), Some(&want));
    for m in &p.metrics {
        assert_eq!(m.delta.na.as_ref(), Some(&want), "{:?}", m.metric);
        assert_eq!(m.delta.pct, None);
    }
    let out = p
        .metrics
        .iter()
        .find(|m| m.metric == Metric::OutputTputPerGpu)
        .unwrap();
    assert_eq!((out.baseline, out.candidate), (Some(100.0), Some(100.0)));
}

fn ttft_rows(ms: &[f64]) -> Vec<Value> {
    ms.iter()
        .map(|v| row(json!({"median_ttft": v / 1000.0, "p99_ttft": v * 2.0 / 1000.0})))
        .collect()
}

fn b20(cand_ms: f64, base_ms: &[f64], stat: Stat) -> servebench_compare::Comparison {
    let opts = CompareOptions {
        stat,
        metrics: vec![Metric::Ttft],
        ..Default::default()
    };
    compare(
        info("b"),
        points(&ttft_rows(base_ms)),
        vec![],
        info("c"),
        points(&ttft_rows(&[cand_ms])),
        vec![],
        &opts,
    )
}

const F20: [f64; 5] = [100.0, 112.0, 95.0, 108.0, 118.0];

#[test]
fn b20_spread_of_the_baseline_repeats() {
    let s = Spread::of(&F20).unwrap();
    assert_eq!(s.n, 5);
    assert!((s.mean - 106.6).abs() < 1e-9);
    assert_eq!((s.sd.unwrap() * 100.0).round() / 100.0, 9.21);
    assert_eq!((s.min, s.max), (95.0, 118.0));
    assert_eq!(
        ((s.mean + 2.0 * s.sd.unwrap()) * 10.0).round() / 10.0,
        125.0
    );
}

#[test]
fn b20_candidate_a_inside_the_spread_is_no_change() {
    let c = b20(115.0, &F20, Stat::Median);
    let m = &c.points[0].metrics[0];
    let s = m.baseline_spread.as_ref().unwrap();
    assert_eq!(s.n, 5);
    assert!(
        (m.baseline.unwrap() - 106.6).abs() < 1e-9,
        "baseline = mean of repeats"
    );
    assert_eq!(m.delta.pct, Some(7.9));
    assert_eq!(m.delta.pct_text(), "+7.9%");
    assert_eq!(m.verdict, Verdict::NoChange);
    assert_eq!(c.points[0].verdict, Verdict::NoChange);
    assert!(!c.has_regression());
}

#[test]
fn b20_naive_first_run_comparison_would_alarm() {
    // Against the first run alone (no repeats) A is +15.0 %, beyond a 10 % gate.
    let mut c = b20(115.0, &F20[..1], Stat::Median);
    assert_eq!(c.points[0].metrics[0].delta.pct, Some(15.0));
    c.options.gate_pct = 10.0;
    let opts = CompareOptions {
        gate_pct: 10.0,
        metrics: vec![Metric::Ttft],
        stat: Stat::Median,
        ..Default::default()
    };
    let c = compare(
        info("b"),
        points(&ttft_rows(&F20[..1])),
        vec![],
        info("c"),
        points(&ttft_rows(&[115.0])),
        vec![],
        &opts,
    );
    assert_eq!(c.points[0].metrics[0].verdict, Verdict::Regression);
}

#[test]
fn b20_candidate_b_beyond_mean_plus_2sd_is_regression() {
    let c = b20(140.0, &F20, Stat::Median);
    let m = &c.points[0].metrics[0];
    assert_eq!(m.delta.pct, Some(31.3));
    assert_eq!(m.delta.pct_text(), "+31.3%");
    assert_eq!(m.verdict, Verdict::Regression);
    assert_eq!(c.points[0].verdict, Verdict::Regression);
    assert!(c.has_regression());
    assert_eq!(c.verdict, Verdict::Regression);
}

#[test]
fn b20_tail_percentiles_with_few_repeats_are_observations() {
    // p99 with 3 repeats (< 5): observation only, even far outside the spread.
    let c = b20(400.0, &F20[..3], Stat::P99);
    assert_eq!(c.points[0].metrics[0].verdict, Verdict::Observation);
    assert!(!c.has_regression());
    // With 5 repeats the tail is judged: p99 values are 2×, candidate 2×140 = 280 → regression.
    let c = b20(140.0, &F20, Stat::P99);
    assert_eq!(c.points[0].metrics[0].verdict, Verdict::Regression);
}

#[test]
fn unmatched_points_are_listed_on_both_sides() {
    let b = vec![
        row(json!({"conc": 4, "output_tput_per_gpu": 1.0})),
        row(json!({"conc": 8, "output_tput_per_gpu": 1.0})),
    ];
    let c = vec![
        row(json!({"conc": 8, "output_tput_per_gpu": 1.0})),
        row(json!({"conc": 16, "output_tput_per_gpu": 1.0})),
    ];
    let cmp = compare(
        info("b"),
        points(&b),
        vec![],
        info("c"),
        points(&c),
        vec![],
        &CompareOptions::default(),
    );
    assert_eq!(cmp.points.len(), 2);
    assert_eq!(cmp.unmatched_candidate.len(), 1);
    assert_eq!(cmp.unmatched_candidate[0].conc, 16);
    assert_eq!(cmp.unmatched_baseline.len(), 1);
    assert_eq!(cmp.unmatched_baseline[0].identity.conc, 4);
    let row16 = cmp.points.iter().find(|p| p.identity.conc == 16).unwrap();
    assert_eq!(row16.na, Some(NaReason::NoMatchedBaseline));
    assert!(row16
        .metrics
        .iter()
        .all(|m| m.delta.na == Some(NaReason::NoMatchedBaseline)));
    assert_eq!(row16.verdict, Verdict::NotComparable);
}

#[test]
fn image_is_not_part_of_the_match_but_hw_normalisation_is() {
    let b = row(json!({"hw": "B200-TRT", "image": "old:1", "output_tput_per_gpu": 100.0}));
    let c = row(json!({"hw": "b200", "image": "new:2", "output_tput_per_gpu": 104.0}));
    let cmp = compare(
        info("b"),
        points(&[b]),
        vec![],
        info("c"),
        points(&[c]),
        vec![],
        &CompareOptions::default(),
    );
    assert!(cmp.unmatched_candidate.is_empty());
    let m = cmp.points[0]
        .metrics
        .iter()
        .find(|m| m.metric == Metric::OutputTputPerGpu)
        .unwrap();
    assert_eq!(m.delta.pct, Some(4.0));
    assert_eq!(m.verdict, Verdict::NoChange, "4 % is inside the 5 % gate");
    // A different topology does not match.
    let b = row(json!({"tp": 2, "output_tput_per_gpu": 100.0}));
    let c = row(json!({"tp": 4, "output_tput_per_gpu": 100.0}));
    let cmp = compare(
        info("b"),
        points(&[b]),
        vec![],
        info("c"),
        points(&[c]),
        vec![],
        &CompareOptions::default(),
    );
    assert_eq!(cmp.unmatched_candidate.len(), 1);
    assert_eq!(cmp.unmatched_baseline.len(), 1);
}

#[test]
fn failed_point_and_zero_baseline_give_reasons() {
    let b = row(json!({"output_tput_per_gpu": 0.0, "mean_ttft": 0.5}));
    let c = row(json!({"output_tput_per_gpu": 10.0, "mean_ttft": 0.4}));
    let opts = CompareOptions {
        metrics: vec![Metric::OutputTputPerGpu, Metric::Ttft, Metric::Tpot],
        ..Default::default()
    };
    let cmp = compare(
        info("b"),
        points(std::slice::from_ref(&b)),
        vec![],
        info("c"),
        points(&[c]),
        vec![],
        &opts,
    );
    let ms = &cmp.points[0].metrics;
    assert_eq!(ms[0].delta.na, Some(NaReason::BaselineZero));
    assert_eq!(ms[1].delta.pct, Some(-20.0));
    assert_eq!(ms[1].verdict, Verdict::Improvement);
    assert_eq!(ms[2].delta.na, Some(NaReason::BaselineMissing));
    let failed = row(
        json!({"point_status": "failed", "num_requests_total": 10, "num_requests_successful": 0}),
    );
    let cmp = compare(
        info("b"),
        points(&[b]),
        vec![],
        info("c"),
        points(&[failed]),
        vec![],
        &opts,
    );
    assert_eq!(cmp.points[0].verdict, Verdict::CandidateInvalid);
    assert_eq!(
        cmp.points[0].na,
        Some(NaReason::PointFailed {
            side: servebench_compare::Side::Candidate
        })
    );
    assert_eq!(cmp.points[0].na.as_ref().unwrap().text(), "failed");
}

/// Noise rule 2b (docs/compare.md §4): with candidate repeats and a single baseline run, a
/// change that lies inside the candidate's own run-to-run spread is `no_change`; one beyond
/// it and the gate is still a regression.
#[test]
fn candidate_spread_counts_in_the_noise_rule() {
    // Baseline TTFT 100 ms (one run). Candidate repeats 102 and 113.8 ms: mean 107.9 (+7.9 %),
    // sd 8.34 (±7.7 % of the mean), range 102–113.8: the baseline lies inside that range.
    let base = row(json!({"mean_ttft": 0.100}));
    let c1 = row(json!({"mean_ttft": 0.102}));
    let c2 = row(json!({"mean_ttft": 0.1138}));
    let opts = CompareOptions {
        metrics: vec![Metric::Ttft],
        ..Default::default()
    };
    let cmp = compare(
        info("b"),
        points(&[base.clone()]),
        vec![],
        info("c"),
        points(&[c1, c2]),
        vec![],
        &opts,
    );
    let m = &cmp.points[0].metrics[0];
    assert_eq!(m.delta.pct, Some(7.9));
    assert_eq!(m.candidate_spread.as_ref().unwrap().n, 2);
    assert_eq!(
        m.verdict,
        Verdict::NoChange,
        "+7.9% inside the candidate's own spread"
    );
    // Repeats that agree with each other (118, 120 ms): +19 % is beyond their spread
    // (mean ± 2 sd = 119 ± 2.83) and the gate → regression.
    let c1 = row(json!({"mean_ttft": 0.118}));
    let c2 = row(json!({"mean_ttft": 0.120}));
    let cmp = compare(
        info("b"),
        points(&[base]),
        vec![],
        info("c"),
        points(&[c1, c2]),
        vec![],
        &opts,
    );
    let m = &cmp.points[0].metrics[0];
    assert_eq!(m.delta.pct, Some(19.0));
    assert_eq!(m.verdict, Verdict::Regression);
}
