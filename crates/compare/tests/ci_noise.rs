//! Noise rule 2c (docs/compare.md §4): a delta within the combined 95 % confidence interval of
//! the two sides' repeat means is `no_change`; hand-computed numbers.

use serde_json::{json, Value};
use servebench_compare::{compare, CompareOptions, Metric, Point, RunInfo, Verdict};

fn row(mean_ttft_s: f64) -> Value {
    json!({
        "hw": "b200", "conc": 64, "image": "x:1", "model": "m", "infmax_model_prefix": "m",
        "framework": "vllm", "precision": "fp4", "spec_decoding": "none", "disagg": false,
        "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 1, "pp": 1, "dcp_size": 1,
        "pcp_size": 1, "ep": 1, "dp_attention": "false", "schema_version": 1,
        "benchmark_type": "single_turn", "point_status": "ok", "num_gpus": 1,
        "mean_ttft": mean_ttft_s
    })
}

fn verdict(base_ms: &[f64], cand_ms: &[f64]) -> Verdict {
    let pts = |v: &[f64]| -> Vec<Point> {
        v.iter()
            .map(|ms| Point::from_agg_row(&row(ms / 1000.0)).unwrap())
            .collect()
    };
    let info = |l: &str| RunInfo {
        label: l.into(),
        ..Default::default()
    };
    let opts = CompareOptions {
        metrics: vec![Metric::Ttft],
        ..Default::default()
    };
    let c = compare(
        info("b"),
        pts(base_ms),
        vec![],
        info("c"),
        pts(cand_ms),
        vec![],
        &opts,
    );
    c.points[0].metrics[0].verdict
}

#[test]
fn a_delta_within_the_combined_ci_is_noise() {
    // Baseline repeats 100, 110 ms: mean 105, sd √50 = 7.0711, h_b = t(0.975, 1) · sd / √2
    // = 12.7062 · 5 = 63.531. Candidate 140 ms (one run): Δ = 35 ms, +33.3 % — outside
    // [100, 110] and outside 105 ± 2 sd = [90.86, 119.14], beyond the 5 % gate, but within
    // the interval: no_change.
    assert_eq!(verdict(&[100.0, 110.0], &[140.0]), Verdict::NoChange);
    // 170 ms: Δ = 65 > 63.531 → regression.
    assert_eq!(verdict(&[100.0, 110.0], &[170.0]), Verdict::Regression);
    // Both sides with repeats: baseline 100, 110 (h_b = 63.531), candidate 160, 163, 166 ms
    // (mean 163, sd 3, h_c = 4.3027 · 3 / √3 = 7.4525): combined √(63.531² + 7.4525²) = 63.967;
    // Δ = 163 − 105 = 58 ≤ 63.967 → no_change (the candidate's own spread, mean ± 2 sd =
    // 157–169, does not contain 105, and 105 ± 2 sd does not contain 163).
    assert_eq!(
        verdict(&[100.0, 110.0], &[160.0, 163.0, 166.0]),
        Verdict::NoChange
    );
    // Candidate 168, 171, 174 (mean 171): Δ = 66 > 63.967 → regression.
    assert_eq!(
        verdict(&[100.0, 110.0], &[168.0, 171.0, 174.0]),
        Verdict::Regression
    );
    // Without repeats on either side only the gate applies: 100 → 110 ms (+10 %) regresses.
    assert_eq!(verdict(&[100.0], &[110.0]), Verdict::Regression);
}

/// Two single runs with `--ci`: their bootstrap half-widths (Point::ci, ms) combine.
#[test]
fn bootstrap_intervals_of_single_runs_combine() {
    let verdict_ci = |base_ms: f64, hb: Option<f64>, cand_ms: f64, hc: Option<f64>| {
        let pt = |ms: f64, h: Option<f64>| {
            let mut p = Point::from_agg_row(&row(ms / 1000.0)).unwrap();
            if let Some(h) = h {
                p.ci.insert("mean_ttft".into(), h);
            }
            vec![p]
        };
        let info = |l: &str| RunInfo {
            label: l.into(),
            ..Default::default()
        };
        let opts = CompareOptions {
            metrics: vec![Metric::Ttft],
            ..Default::default()
        };
        compare(
            info("b"),
            pt(base_ms, hb),
            vec![],
            info("c"),
            pt(cand_ms, hc),
            vec![],
            &opts,
        )
        .points[0]
            .metrics[0]
            .verdict
    };
    // Half-widths 6 and 8 ms: combined √(36 + 64) = 10 ms. 100 → 110 ms (+10 %, beyond the
    // 5 % gate) is within → no_change; 100 → 110.5 is beyond → regression.
    assert_eq!(
        verdict_ci(100.0, Some(6.0), 110.0, Some(8.0)),
        Verdict::NoChange
    );
    assert_eq!(
        verdict_ci(100.0, Some(6.0), 110.5, Some(8.0)),
        Verdict::Regression
    );
    // Only the candidate has an interval (8 ms): 100 → 108 within, 100 → 109 beyond.
    assert_eq!(verdict_ci(100.0, None, 108.0, Some(8.0)), Verdict::NoChange);
    assert_eq!(
        verdict_ci(100.0, None, 109.0, Some(8.0)),
        Verdict::Regression
    );
}
