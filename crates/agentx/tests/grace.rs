//! The grace after the profiling window stops requests still in flight without touching the
//! caller's Ctrl-C token: a slow engine (found on the H200 with `transformers serve`, where
//! requests outlast the 30 s grace) must give a finished point, not an interrupted one
//! (exit 130 and "partial" before the fix).

mod support;

use std::sync::Arc;
use std::time::Duration;

use servebench_agentx::point::{load_plans, run_point, PointConfig};
use servebench_agentx::synth::WordCodec;
use servebench_agentx::{AggIdentity, ReplayConfig};
use servebench_client::mock::{Captured, MockServer, Reply};
use servebench_client::Cancel;

/// One root session of 5 turns, 1 s apart.
fn trace() -> String {
    let reqs: Vec<String> = (0..5usize)
        .map(|k| {
            let ids: Vec<String> = (1..=(k + 2)).map(|i| i.to_string()).collect();
            format!(
                r#"{{"t":{}.0,"type":"s","in":{},"out":2,"hash_ids":[{}],"api_time":0.1}}"#,
                k,
                (k + 2) * 64,
                ids.join(",")
            )
        })
        .collect();
    format!(
        r#"{{"id":"g1","block_size":64,"requests":[{}]}}"#,
        reqs.join(",")
    )
}

/// The first content after 50 ms, the rest only after 5 s: longer than window + grace.
fn reply(_: &Captured) -> Reply {
    support::two_token_reply(50, 5000)
}

#[test]
fn requests_cut_by_the_grace_do_not_cancel_the_callers_token() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    std::fs::write(traces.join("trace_g1.json"), trace()).unwrap();
    let plans = load_plans(&traces, &WordCodec).unwrap();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let user = Cancel::new();
    let (res, wall) = rt.block_on(async {
        let srv = MockServer::start(Arc::new(reply), false).await.unwrap();
        let client = support::client(&srv.base_url(), Duration::from_secs(30));
        let cfg = PointConfig {
            replay: ReplayConfig {
                conc: 1,
                duration: Duration::from_millis(500),
                grace: Duration::from_millis(500),
                warmup_per_lane: 0,
                start_min: 0.0,
                start_max: 0.0,
                model: "m".into(),
                ..Default::default()
            },
            identity: AggIdentity::default(),
            scrape_metrics: false,
            aiperf_export: false,
            out_dir: dir.path().join("out"),
        };
        let t = std::time::Instant::now();
        let res = run_point(client, plans, cfg, user.clone()).await.unwrap();
        (res, t.elapsed())
    });
    // the replay ended at window + grace (0.5 + 0.5 s), not after the 5 s responses
    assert!(
        wall < Duration::from_millis(4_000),
        "the grace did not stop the in-flight request: {wall:?}"
    );
    assert!(
        !user.is_cancelled(),
        "the grace cancelled the caller's Ctrl-C token (the point would be 'interrupted')"
    );
    // the request cut by the grace is recorded as cancelled (left out of the counts)
    let cut: Vec<_> = res.raw.iter().filter(|r| r.is_cancelled()).collect();
    assert!(
        !cut.is_empty(),
        "one request was in flight at the end of the grace"
    );
    // ... and says why, not "Ctrl-C"
    for r in &cut {
        assert_eq!(
            r.error.as_deref(),
            Some("cut at the end of the 0.5 s grace after the profiling window"),
            "{r:?}"
        );
    }
    // the harness returns no record for a request it cancels at the grace's end: kept on disk
    // (flagged), but not an error of the aggregate or the 10 % gate, and said in a warning
    let flagged: Vec<_> = res.records.iter().filter(|r| r.cancelled).collect();
    assert_eq!(flagged.len(), cut.len(), "{:?}", res.records);
    assert!(flagged.iter().all(|r| r.rec.error.is_some()));
    assert_eq!(res.aggregate.request_accounting.records_error_dropped, 0);
    assert!(res.aggregate.request_accounting.error_categories.is_empty());
    assert_eq!(res.gate.errors, 0, "{:?}", res.gate);
    let said = format!(
        "grace: {} profiling requests still in flight 0.5 s after the window were cancelled and left out of the metrics (the harness records none)",
        cut.len()
    );
    assert!(
        res.aggregate.warnings.contains(&said),
        "{:?}",
        res.aggregate.warnings
    );
    let line = std::fs::read_to_string(&res.records_path).unwrap();
    assert_eq!(line.matches("\"cancelled\":true").count(), cut.len());
}

/// One root session whose second turn comes 120 s after the first (a long think time).
fn long_think_trace() -> String {
    r#"{"id":"g2","block_size":64,"requests":[
        {"t":0.0,"type":"s","in":128,"out":2,"hash_ids":[1,2],"api_time":0.1},
        {"t":120.0,"type":"s","in":192,"out":2,"hash_ids":[1,2,3],"api_time":0.1},
        {"t":240.0,"type":"s","in":256,"out":2,"hash_ids":[1,2,3,4],"api_time":0.1}]}"#
        .to_string()
}

/// Ctrl-C during the profiling window ends the replay at once, even while every lane waits out
/// a recorded think time (found by a new-user run: the replay went on "sending" cancelled turns
/// at their recorded times until the window ended, 111 s after Ctrl-C); no request is sent
/// after it.
#[test]
fn ctrl_c_ends_the_replay_without_waiting_for_think_times_or_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    std::fs::write(traces.join("trace_g2.json"), long_think_trace()).unwrap();
    let plans = load_plans(&traces, &WordCodec).unwrap();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let user = Cancel::new();
    let (res, after_ctrl_c, sent) = rt.block_on(async {
        let srv = MockServer::start(
            Arc::new(|_: &Captured| support::two_token_reply(10, 20)),
            false,
        )
        .await
        .unwrap();
        let client = support::client(&srv.base_url(), Duration::from_secs(30));
        let cfg = PointConfig {
            replay: ReplayConfig {
                conc: 1,
                duration: Duration::from_secs(600),
                warmup_per_lane: 0,
                start_min: 0.0,
                start_max: 0.0,
                // the tree and system caps must not shorten the 120 s think time
                tree_idle_cap: Duration::from_secs(300),
                system_idle_cap: Duration::from_secs(300),
                model: "m".into(),
                ..Default::default()
            },
            identity: AggIdentity::default(),
            scrape_metrics: false,
            aiperf_export: false,
            out_dir: dir.path().join("out"),
        };
        let u = user.clone();
        // Ctrl-C once turn 0 is answered: its record is in agentx_records.jsonl (flushed per
        // record), the lane now waits out the 120 s think time before turn 1
        let records = cfg.out_dir.join("agentx_records.jsonl");
        let stopper = tokio::spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while std::fs::read_to_string(&records).map_or(0, |s| s.lines().count()) < 1 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "turn 0 never answered"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            u.cancel();
            std::time::Instant::now()
        });
        let res = run_point(client, plans, cfg, user.clone()).await.unwrap();
        let pressed = stopper.await.unwrap();
        (res, pressed.elapsed(), srv.captured().len())
    });
    assert!(
        after_ctrl_c < Duration::from_secs(3),
        "the replay went on for {after_ctrl_c:?} after Ctrl-C"
    );
    // turn 0 was sent and answered; turn 1 (due at 120 s) never went out
    assert_eq!(sent, 1, "requests sent");
    assert_eq!(res.raw.len(), 1);
    assert!(res.raw[0].success);
    assert_eq!(
        res.submission_invalid_reasons,
        ["unsafe_override", "run_cancelled"]
    );
}

/// Two files with one trace id (a new-user pass: both were loaded without a word, one session
/// replayed as two lanes sharing every prefix block): refused, naming both files.
#[test]
fn a_trace_id_twice_is_refused_naming_both_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace_a.json"), trace()).unwrap();
    std::fs::write(dir.path().join("trace_b.json"), trace()).unwrap();
    let e = load_plans(dir.path(), &WordCodec)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("trace g1 appears twice (")
            && e.contains("trace_a.json")
            && e.contains("trace_b.json")
            && e.ends_with("each trace id must be unique"),
        "{e}"
    );
}
