//! The SLO search state machine against synthetic engines whose knee is known exactly.

use servebench_metrics::goodput::Goodput;
use servebench_metrics::search::{Axis, Outcome, Search, SearchConfig};

fn point(meets: bool) -> Goodput {
    Goodput {
        slo: "tpot=50ms@p90".into(),
        requests: 10,
        good: if meets { 10 } else { 0 },
        failed: 0,
        attainment_pct: Some(if meets { 100.0 } else { 0.0 }),
        target_pct: 90.0,
        meets_slo: meets,
        goodput_rps: 1.0,
        goodput_tput_per_gpu: 1.0,
        goodput_output_tput_per_gpu: 1.0,
        evidence: vec![],
    }
}

fn run(cfg: SearchConfig, knee: f64) -> (Vec<f64>, servebench_metrics::search::SearchResult) {
    let mut s = Search::new(cfg);
    let mut order = Vec::new();
    while let Some(load) = s.next_load() {
        order.push(load);
        s.record(load, point(load <= knee));
    }
    (order, s.result())
}

fn conc(max: f64) -> SearchConfig {
    SearchConfig {
        axis: Axis::Conc,
        start: 1.0,
        max,
        tolerance: 0.05,
        max_probes: 30,
    }
}

#[test]
fn concurrency_knee_by_doubling_then_bisection() {
    let (order, r) = run(conc(1024.0), 37.0);
    // double 1…64, then (32,64) → 48 ✗, (32,48) → 40 ✗, (32,40) → 36 ✓, (36,40) → 38 ✗,
    // (36,38) → 37 ✓; (37,38) is one step (max(5 % of 37, 1) = 1.85 ≥ 1)
    assert_eq!(
        order,
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 48.0, 40.0, 36.0, 38.0, 37.0]
    );
    assert_eq!(
        (r.knee, r.first_fail, r.outcome),
        (Some(37.0), Some(38.0), Outcome::Converged)
    );
    assert!(!r.non_monotone);
    assert_eq!(r.probes.first().unwrap().load, 1.0, "sorted by load");
    let text = r.render();
    assert!(
        text.contains("knee: conc 37 meets the SLO, 38 misses it"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1 + 12 + 1);
}

#[test]
fn rate_knee_with_relative_tolerance() {
    let cfg = SearchConfig {
        axis: Axis::Rate,
        start: 0.5,
        max: 100.0,
        tolerance: 0.1,
        max_probes: 30,
    };
    let (_, r) = run(cfg, 5.3);
    let (k, f) = (r.knee.unwrap(), r.first_fail.unwrap());
    assert!(k <= 5.3 && f > 5.3);
    assert!(
        f - k <= 0.1 * k,
        "bracket within 10 % of the knee: {k}..{f}"
    );
}

#[test]
fn edges_none_meets_above_max_and_probe_limit() {
    let (order, r) = run(conc(64.0), 0.5);
    assert_eq!(
        (order, r.knee, r.outcome),
        (vec![1.0], None, Outcome::NoneMeets)
    );
    assert!(r
        .render()
        .contains("no knee: the lowest load measured (conc 1) already misses"));
    let (order, r) = run(conc(48.0), 1000.0);
    assert_eq!(order, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0]);
    assert_eq!((r.knee, r.outcome), (Some(48.0), Outcome::AboveMax));
    let mut cfg = conc(1024.0);
    cfg.max_probes = 8;
    let (order, r) = run(cfg, 37.0);
    assert_eq!(order.len(), 8);
    assert_eq!(
        (r.knee, r.first_fail, r.outcome),
        (Some(32.0), Some(48.0), Outcome::ProbeLimit)
    );
    assert!(r.render().contains("stopped at the probe limit"));
}
