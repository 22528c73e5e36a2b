//! Per-request statistics (docs/compare.md §4a, issue 28): with samples on both sides a
//! metric's verdict is the bootstrap interval of the change against the gate; underpowered
//! points are inconclusive, never regressions; Benjamini–Hochberg keeps the run's false
//! discoveries in check; the seeded bootstrap is deterministic.

use std::sync::Arc;

use serde_json::{json, Value};
use servebench_compare::evidence::{RequestSample, Samples};
use servebench_compare::{compare, CompareOptions, Comparison, Point, RunInfo, Verdict};

fn row(conc: u32) -> Value {
    json!({
        "hw": "h200", "conc": conc, "image": "x:1", "model": "m", "infmax_model_prefix": "m",
        "framework": "vllm", "precision": "bf16", "spec_decoding": "none", "disagg": false,
        "isl": 256, "osl": 64, "is_multinode": false, "tp": 1, "pp": 1, "dcp_size": 1,
        "pcp_size": 1, "ep": 1, "dp_attention": "false", "schema_version": 1,
        "benchmark_type": "single_turn", "point_status": "ok", "num_gpus": 1,
        "mean_ttft": 0.1, "mean_tpot": 0.01, "mean_itl": 0.01, "mean_e2el": 0.73,
        "tput_per_gpu": 1000.0, "output_tput_per_gpu": 200.0, "mean_intvty": 100.0
    })
}

/// A deterministic "random" stream (SplitMix64 → uniform) so the samples look like a run's.
fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` requests of an engine whose step time is `slow` × the base: TTFT ~ 100 ms ± 30 %,
/// TPOT ~ 10 ms ± 3 %, 64 output tokens.
fn samples(n: usize, slow: f64, seed: u64) -> Samples {
    let mut u = uniform(seed);
    let requests = (0..n)
        .map(|_| {
            let ttft = slow * 100.0 * (0.7 + 0.6 * u());
            let tpot = slow * 10.0 * (0.97 + 0.06 * u());
            RequestSample {
                ttft: Some(ttft),
                tpot: Some(tpot),
                e2el: Some(ttft + 63.0 * tpot),
                itl: vec![tpot; 63],
                output_tokens: 64.0,
                input_tokens: 256.0,
            }
        })
        .collect();
    Samples {
        requests,
        lag_ms: vec![0.05; n],
        server_lag_ms: Vec::new(),
        time_scale: 1.0,
    }
}

fn side(concs: &[(u32, usize)], slow: f64, seed: u64) -> Vec<Point> {
    concs
        .iter()
        .map(|&(c, n)| {
            let mut p = Point::from_agg_row(&row(c)).unwrap();
            p.samples = Some(Arc::new(samples(n, slow, seed + u64::from(c))));
            p
        })
        .collect()
}

fn run(base: Vec<Point>, cand: Vec<Point>) -> Comparison {
    let info = |l: &str| RunInfo {
        label: l.into(),
        ..Default::default()
    };
    compare(
        info("b"),
        base,
        vec![],
        info("c"),
        cand,
        vec![],
        &CompareOptions::default(),
    )
}

const SWEEP: [(u32, usize); 3] = [(1, 10), (4, 40), (16, 160)];

#[test]
fn twenty_a_a_pairs_raise_no_regression() {
    for k in 0..20u64 {
        let c = run(
            side(&SWEEP, 1.0, 100 + 2 * k),
            side(&SWEEP, 1.0, 101 + 2 * k),
        );
        assert!(!c.has_regression(), "A/A pair {k}: {:?}", c.verdict);
        assert!(
            c.verdict <= Verdict::Inconclusive,
            "pair {k}: {:?}",
            c.verdict
        );
    }
}

#[test]
fn a_planted_15_percent_slowdown_is_a_regression_every_time() {
    for k in 0..20u64 {
        let c = run(side(&SWEEP, 1.0, 300 + k), side(&SWEEP, 1.15, 400 + k));
        assert_eq!(c.verdict, Verdict::Regression, "pair {k}");
        // found where the samples can show it: TPOT at c16, with its interval
        let c16 = c.points.iter().find(|p| p.identity.conc == 16).unwrap();
        let tpot = c16
            .metrics
            .iter()
            .find(|m| m.metric == servebench_compare::Metric::Tpot)
            .unwrap();
        assert_eq!(tpot.verdict, Verdict::Regression);
        let e = tpot.evidence.as_ref().unwrap();
        assert!(e.lo_pct > 5.0 && e.hi_pct < 25.0, "{e:?}");
        assert_eq!(e.family, 21, "3 points × 7 metrics in one FDR family");
    }
}

#[test]
fn an_underpowered_point_is_inconclusive_with_the_requests_that_settle_it() {
    // 6 requests a side, TTFT ± 30 %, a 4 % change: the interval spans the gate
    let c = run(side(&[(1, 6)], 1.0, 7), side(&[(1, 6)], 1.04, 8));
    let ttft = &c.points[0].metrics[2];
    assert_eq!(ttft.metric, servebench_compare::Metric::Ttft);
    assert_eq!(ttft.verdict, Verdict::Inconclusive, "{:?}", ttft.evidence);
    let e = ttft.evidence.as_ref().unwrap();
    assert!(e.requests_needed.is_some_and(|n| n > 6), "{e:?}");
    assert!(!c.has_regression());
    assert_eq!(c.verdict, Verdict::Inconclusive);
}

#[test]
fn the_bootstrap_is_deterministic() {
    let a = run(side(&SWEEP, 1.0, 1), side(&SWEEP, 1.1, 2));
    let b = run(side(&SWEEP, 1.0, 1), side(&SWEEP, 1.1, 2));
    assert_eq!(a, b);
}

#[test]
fn without_samples_the_noise_rule_decides_as_before() {
    let mut base = side(&SWEEP, 1.0, 1);
    for p in &mut base {
        p.samples = None;
    }
    let c = run(base, side(&SWEEP, 1.0, 2));
    assert!(c
        .points
        .iter()
        .all(|p| p.metrics.iter().all(|m| m.evidence.is_none())));
    // the agg rows are equal: +0.0 % on every metric
    assert_eq!(c.verdict, Verdict::NoChange);
}

#[test]
fn a_change_the_host_lag_could_account_for_is_inconclusive_and_says_so() {
    // the candidate's simulator read every request 2 ms (wall) late at speedup 10: 20 ms of
    // modelled TTFT (+ the client's 0.05 ms × 10), ~20 % of its 100 ms; TTFT +15 % is then not
    // a regression
    let base = side(&[(16, 160)], 1.0, 1);
    let mut cand = side(&[(16, 160)], 1.15, 2);
    for p in &mut cand {
        let mut s = (**p.samples.as_ref().unwrap()).clone();
        s.server_lag_ms = vec![2.0; s.requests.len()];
        s.time_scale = 10.0;
        p.samples = Some(Arc::new(s));
    }
    let c = run(base, cand);
    let ttft = &c.points[0].metrics[2];
    let e = ttft.evidence.as_ref().unwrap();
    assert!((e.host_lag_pct - 20.5).abs() < 1.0, "{e:?}");
    assert_eq!(ttft.verdict, Verdict::Inconclusive, "{e:?}");
    assert!(
        e.text().contains("host lag could account for"),
        "{}",
        e.text()
    );
    // TPOT: ~20.5 ms of lag over a ~725 ms decode (63 × 11.5 ms) is under 3 %: +15 % still
    // clears the gate by more
    let tpot = &c.points[0].metrics[3];
    let e = tpot.evidence.as_ref().unwrap();
    assert!(e.host_lag_pct > 2.0 && e.host_lag_pct < 4.0, "{e:?}");
    assert_eq!(tpot.verdict, Verdict::Regression, "{e:?}");
}
