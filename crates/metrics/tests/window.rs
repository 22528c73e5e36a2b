//! Steady-state window bounds, inside/outside counts and in-window throughput, by hand.

use crate::support;

use servebench_client::{Compat, RequestRecord};
use servebench_metrics::window::{steady_point, steady_window, token_arrivals, WindowError};
use servebench_metrics::{compute, ItlMode, PointOptions};
use support::{ok, MS};

/// A token every 10 ms from t0 + 10 to the end: `len/10` tokens.
fn req(id: u64, t0: u64, end: u64) -> RequestRecord {
    let n = (end - t0) / 10;
    ok(id, t0, end, 10.0, (end - t0) as f64, n)
}

/// Closed loop at concurrency 2, two lanes:
/// lane 1: A[0,100] D[100,170] F[170,240]; lane 2: B[10,60] C[60,130] E[130,200].
fn two_lanes() -> Vec<RequestRecord> {
    let mut f = req(5, 170, 240);
    // F: 7 events but 14 tokens, no per-chunk usage → 2 tokens per event
    f.output_tokens = 14;
    vec![
        req(0, 0, 100),
        req(1, 10, 60),
        req(2, 60, 130),
        req(3, 100, 170),
        req(4, 130, 200),
        f,
    ]
}

#[test]
fn window_bounds_and_counts() {
    let w = steady_window(&two_lanes(), 2).unwrap();
    // 2 in flight first at 10 (B starts); the last start is F at 170; the first completion
    // after it is E at 200 (D's completion at 170 is the refill of F's lane, not the drain)
    assert_eq!((w.start_ns, w.end_ns), (10 * MS, 200 * MS));
    assert_eq!((w.start_s, w.end_s), (0.010, 0.200));
    assert!((w.duration_s() - 0.190).abs() < 1e-12);
    assert_eq!((w.inside, w.outside_rampup, w.outside_drain), (4, 1, 1));
    // tokens in [10, 200]: A 10 (its first at 10 counts), B 5, C 7, D 7, E 7, F 3 events × 2
    assert!((w.output_tokens_in_window - 42.0).abs() < 1e-9);
    // every request's first token arrives in the window (A at exactly 10)
    assert_eq!(w.input_tokens_in_window, 600);
    // completions at 100, 60, 130, 170, 200 (F ends at 240)
    assert_eq!(w.completions_in_window, 5);
    assert_eq!(
        w.describe(1.0),
        "steady window 0.01–0.20 s (0.19 s) at concurrency 2: 4 requests inside, 1 in ramp-up and 1 in drain excluded"
    );
}

#[test]
fn steady_point_uses_inside_latencies_and_window_throughput() {
    let recs = two_lanes();
    let opts = PointOptions {
        compat: Compat::Servebench,
        itl_mode: ItlMode::Chunk,
        phase_window_ns: (0, 240 * MS),
        max_failed_fraction: 0.05,
        cancelled: false,
        prompt_count: servebench_metrics::PromptCount::Client,
    };
    let full = compute(&recs, &opts);
    assert!((full.duration_s - 0.240).abs() < 1e-12);
    let (m, w) = steady_point(&recs, &opts, &full, 2).unwrap();
    assert_eq!(w.inside, 4);
    assert_eq!((m.completed, m.e2el.n), (4, 4));
    // E2EL of B C D E: 50 70 70 70 → mean 65 (A's 100 and F's 70 are excluded)
    assert_eq!(m.e2el.mean, Some(65.0));
    assert!((m.duration_s - 0.19).abs() < 1e-12);
    assert!((m.output_throughput - 42.0 / 0.19).abs() < 1e-9);
    assert!((m.request_throughput - 5.0 / 0.19).abs() < 1e-9);
    assert!((m.total_token_throughput - 642.0 / 0.19).abs() < 1e-9);
    assert_eq!(m.peak_concurrency, 2);
}

#[test]
fn never_held_and_open_edges() {
    assert_eq!(
        steady_window(&two_lanes(), 3),
        Err(WindowError::NeverHeld { target: 3, peak: 2 })
    );
    let e = steady_window(&two_lanes(), 3).unwrap_err().to_string();
    assert_eq!(
        e,
        "target concurrency 3 was never held (peak 2 in flight); steady window not defined"
    );
    assert!(matches!(
        steady_window(&[], 1),
        Err(WindowError::NeverHeld { target: 1, peak: 0 })
    ));
    // two overlapping requests only: held from 10 to the first end after the last start (100)
    let w = steady_window(&[req(0, 0, 100), req(1, 10, 60)], 2).unwrap();
    assert_eq!((w.start_ns, w.end_ns), (10 * MS, 60 * MS));
    assert_eq!((w.inside, w.outside_rampup, w.outside_drain), (1, 1, 0));
}

#[test]
fn token_arrivals_use_per_chunk_counts() {
    // E-like request: events at +20, +40, +60, +80 carrying 1, 2, 2, 2 tokens (MTP)
    let mut r = ok(0, 1000, 1080, 20.0, 80.0, 7);
    r.itl_ms = vec![20.0, 20.0, 20.0];
    r.token_events = 4;
    r.tokens_per_chunk = Some(vec![1, 2, 2, 2]);
    let a = token_arrivals(&r);
    assert_eq!(
        a,
        vec![
            (1020 * MS, 1.0),
            (1040 * MS, 2.0),
            (1060 * MS, 2.0),
            (1080 * MS, 2.0)
        ]
    );
    r.tokens_per_chunk = None;
    // unknown split: 7 tokens over 4 events
    assert!(token_arrivals(&r)
        .iter()
        .all(|&(_, k)| (k - 1.75).abs() < 1e-12));
}
