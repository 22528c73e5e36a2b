//! Replay against a sped-up engine (the simulator's `--sim-speedup`): recorded think times, the
//! idle caps and the profiling window are modelled time, waited for as `modelled / time_scale`
//! of wall time, and the records and the aggregate come back in modelled time.
//!
//! A scripted mock answers every request ~30 ms (wall) after reading it; the trace has 4 s
//! recorded think times and one 100 s gap that the 10 s system-wide idle cap shortens. With
//! `time_scale` 10 the 30 s window takes 3 s of wall time.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use servebench_agentx::point::{load_plans, run_point, PointConfig};
use servebench_agentx::synth::WordCodec;
use servebench_agentx::{AggIdentity, ReplayConfig};
use servebench_client::mock::{Captured, MockServer, Reply};
use servebench_client::Cancel;

const SCALE: f64 = 10.0;
/// Recorded API time of every turn, s.
const API_S: f64 = 0.1;
/// Recorded end-to-start gap, s (the 100 s one comes before turn `LONG`).
const GAP_S: f64 = 4.0;
const LONG: usize = 4;

/// Root turns at end-to-start gaps of 4 s, except a 100 s gap before turn 4.
fn trace() -> String {
    let mut t = 0.0;
    let mut reqs = Vec::new();
    for k in 0..20usize {
        if k > 0 {
            t += API_S + if k == LONG { 100.0 } else { GAP_S };
        }
        let ids: Vec<String> = (1..=(k + 2)).map(|i| i.to_string()).collect();
        reqs.push(format!(
            r#"{{"t":{t},"type":"s","in":{},"out":2,"hash_ids":[{}],"api_time":{API_S}}}"#,
            (k + 2) * 64 + 5,
            ids.join(",")
        ));
    }
    format!(
        r#"{{"id":"ts1","block_size":64,"requests":[{}]}}"#,
        reqs.join(",")
    )
}

fn reply(_: &Captured) -> Reply {
    support::two_token_reply(20, 30)
}

#[test]
fn think_times_caps_and_window_are_modelled_time_under_a_speedup() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    std::fs::write(traces.join("trace_ts1.json"), trace()).unwrap();
    let plans = load_plans(&traces, &WordCodec).unwrap();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let (res, wall) = rt.block_on(async {
        let srv = MockServer::start(Arc::new(reply), false).await.unwrap();
        let client = support::client(&srv.base_url(), Duration::from_secs(10));
        let cfg = PointConfig {
            replay: ReplayConfig {
                conc: 1,
                duration: Duration::from_secs(30),
                warmup_per_lane: 0,
                start_min: 0.0,
                start_max: 0.0,
                model: "m".into(),
                time_scale: SCALE,
                ..Default::default()
            },
            identity: AggIdentity::default(),
            scrape_metrics: false,
            aiperf_export: false,
            out_dir: dir.path().join("out"),
        };
        let t = Instant::now();
        let res = run_point(client, plans, cfg, Cancel::never())
            .await
            .unwrap();
        (res, t.elapsed())
    });

    // the 30 s window is 3 s of wall time (+ the last response)
    assert!(
        wall >= Duration::from_millis(2_900) && wall < Duration::from_secs(8),
        "wall {wall:?} for a 30 s modelled window at speedup {SCALE}"
    );
    let mut recs = res.records.clone();
    recs.sort_by_key(|r| r.rec.start_ns);
    assert!(
        recs.len() >= 5,
        "turns 0..=4 fit in 30 modelled s: {} records",
        recs.len()
    );
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r.rec.turn_index as usize, k, "one stream, turns in order");
        assert!(r.rec.error.is_none(), "{r:?}");
        // latencies in modelled time: the first content arrives ≥ 20 ms wall after the request
        let ttft = r.rec.ttft_ms.unwrap();
        assert!(
            ttft >= 20.0 * SCALE * 0.9,
            "ttft {ttft} ms is not modelled time"
        );
    }
    // modelled end-to-start gaps: the recorded 4 s; the 100 s gap capped at the 10 s
    // system-wide idle cap (wall jitter of ±100 ms is ±1 s modelled)
    for k in 1..recs.len() {
        let gap_s = (recs[k].rec.start_ns - recs[k - 1].rec.end_ns) as f64 / 1e9;
        let want = if k == LONG { 10.0 } else { GAP_S };
        assert!(
            (gap_s - want).abs() < 1.0,
            "turn {k}: modelled gap {gap_s:.3} s, want {want} s"
        );
    }
    // the aggregate's window is modelled: max(end) − min(start) spans most of the 30 s
    let dur = res
        .aggregate
        .request_metrics
        .throughput
        .as_ref()
        .expect("throughput block")
        .duration_seconds;
    assert!(dur > 20.0 && dur < 40.0, "duration_seconds {dur}");
    // the records file holds the same modelled times
    let text = std::fs::read_to_string(&res.records_path).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let ttft_file = first["ttft_ms"].as_f64().unwrap();
    assert!(ttft_file >= 20.0 * SCALE * 0.9, "file ttft {ttft_file}");
    // the window is 30 s modelled, not a short one in disguise
    assert!(res.short_window, "30 s < 900 s is still a short window");
}
