//! `--slo` parsing and goodput with failures, every value computed by hand.

use crate::support;

use servebench_metrics::goodput::{goodput, Slo};
use support::{failed, ok};

#[test]
fn parses_objectives_units_and_target() {
    let s = Slo::parse("ttft=500ms,tpot=50ms").unwrap();
    assert_eq!(
        (s.ttft_ms, s.tpot_ms, s.e2el_ms, s.ttfo_ms),
        (Some(500.0), Some(50.0), None, None)
    );
    assert_eq!(s.attainment_pct, 90.0, "default target is p90");
    let s = Slo::parse("ttft=0.5s, e2el=10s, ttfo=750us@p99.9").unwrap();
    assert_eq!(s.ttft_ms, Some(500.0));
    assert_eq!(s.e2el_ms, Some(10_000.0));
    assert_eq!(s.ttfo_ms, Some(0.75));
    assert_eq!(s.attainment_pct, 99.9);
    assert_eq!(
        Slo::parse("tpot=20").unwrap().tpot_ms,
        Some(20.0),
        "bare number = ms"
    );
    assert_eq!(
        Slo::parse("ttft=500ms,tpot=50ms@p95").unwrap().to_string(),
        "ttft=500ms,tpot=50ms@p95"
    );
}

#[test]
fn bad_specs_are_one_line_naming_the_part() {
    for (spec, part) in [
        ("ttft=fast", "ttft=fast"),
        ("ttft=500ms,foo=1ms", "foo=1ms"),
        ("ttft=1ms,ttft=2ms", "ttft=2ms"),
        ("ttft=500ms@p0", "@p0"),
        ("ttft=500ms@q90", "@q90"),
        ("ttft=-5ms", "ttft=-5ms"),
        ("ttft500ms", "ttft500ms"),
        ("ttft=5ms,,tpot=1ms", "\"\""),
        ("", "\"\""),
    ] {
        let e = Slo::parse(spec).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.starts_with("--slo "), "{e}");
        assert!(
            e.contains(part),
            "{spec:?}: error {e:?} does not name {part:?}"
        );
    }
}

/// Ten requests, SLO ttft ≤ 100 ms, tpot ≤ 20 ms, 80 % attainment, 2 GPUs, 5 s.
fn ten() -> Vec<servebench_client::RequestRecord> {
    // (ttft, tpot, out)
    let spec = [
        (50.0, 10.0, 20),  // good
        (80.0, 20.0, 20),  // good: thresholds are inclusive
        (120.0, 10.0, 20), // ttft missed
        (90.0, 0.0, 1),    // good: one token, no TPOT, tpot objective does not apply
        (60.0, 25.0, 20),  // tpot missed
        (40.0, 15.0, 20),  // good
        (100.0, 5.0, 20),  // good (inclusive)
        (70.0, 19.9, 20),  // good
    ];
    let mut v: Vec<_> = spec
        .iter()
        .enumerate()
        .map(|(i, &(ttft, tpot, out))| {
            let e2el = ttft + tpot * (out as f64 - 1.0);
            ok(i as u64, 0, 5000, ttft, e2el, out)
        })
        .collect();
    v.push(failed(8, 0, 100, "http_503"));
    v.push(failed(9, 0, 100, "no_token"));
    v
}

#[test]
fn goodput_counts_failures_against_it() {
    let slo = Slo::parse("ttft=100ms,tpot=20ms@p80").unwrap();
    let g = goodput(&ten(), &slo, 5.0, 2, 1.0);
    assert_eq!((g.requests, g.good, g.failed), (10, 6, 2));
    assert_eq!(g.attainment_pct, Some(60.0));
    assert!(!g.meets_slo, "60 % < 80 %");
    assert!((g.goodput_rps - 1.2).abs() < 1e-12, "6 good / 5 s");
    // good outputs 20+20+1+20+20+20 = 101, inputs 6 × 100: (600+101)/5/2 and 101/5/2
    assert!((g.goodput_tput_per_gpu - 70.1).abs() < 1e-9);
    assert!((g.goodput_output_tput_per_gpu - 10.1).abs() < 1e-9);
    let ttft = &g.evidence[0];
    assert_eq!((ttft.metric.as_str(), ttft.threshold_ms), ("ttft", 100.0));
    // successful TTFTs sorted 40 50 60 70 80 90 100 120: rank 7·0.8 = 5.6 → 90 + 0.6·10
    assert!((ttft.observed_ms.unwrap() - 96.0).abs() < 1e-9);
    assert_eq!(ttft.missed, 3, "one slow + two failed");
    let tpot = &g.evidence[1];
    // TPOTs (out > 1) sorted 5 10 10 15 19.9 20 25: rank 6·0.8 = 4.8 → 19.9 + 0.8·0.1
    assert!((tpot.observed_ms.unwrap() - 19.98).abs() < 1e-6);
    assert_eq!(
        tpot.missed, 3,
        "one slow + two failed; the 1-token request is exempt"
    );

    // the same requests at 60 %: met exactly at the boundary
    let g = goodput(
        &ten(),
        &Slo::parse("ttft=100ms,tpot=20ms@p60").unwrap(),
        5.0,
        2,
        1.0,
    );
    assert!(g.meets_slo);
}

#[test]
fn time_scale_applies_to_record_latencies() {
    // the simulator's records are wall time; at speedup 2 every latency doubles
    let slo = Slo::parse("ttft=200ms,tpot=40ms@p60").unwrap();
    let g = goodput(&ten(), &slo, 5.0, 2, 2.0);
    assert_eq!(g.good, 6);
    let tight = Slo::parse("ttft=100ms,tpot=20ms").unwrap();
    // at ×2 only TTFT 40/50 (→ 80/100) still pass ttft ≤ 100, and their TPOT 15/10 → 30/20:
    // the 50-ms request (tpot 10 → 20) is the only good one
    assert_eq!(goodput(&ten(), &tight, 5.0, 2, 2.0).good, 1);
}

#[test]
fn empty_point_has_no_attainment() {
    let g = goodput(&[], &Slo::parse("ttft=1s").unwrap(), 0.0, 1, 1.0);
    assert_eq!(
        (g.requests, g.attainment_pct, g.meets_slo, g.goodput_rps),
        (0, None, false, 0.0)
    );
}
