//! The harness's branch and join timing (agentx-harness 1.0.12 `timing/branch_orchestrator.py`),
//! against a scripted mock engine, without the harness:
//! * a branch that starts while its spawning turn still runs in the recording starts when that
//!   turn is *sent*, its first request `t0 − t(spawning turn)` later (`on_credit_issued`), not
//!   when the turn completes;
//! * a root turn gated on its children starts at the later of its replay deadline (its recorded
//!   delay, counted from the completion of the turn before it) and its last child's completion
//!   (`PendingBranchJoin.can_release`), not its delay after the last child;
//! * per-tree idle cap: the tree's timers shift when its watchdog fires `tree_idle_cap` after its
//!   last completion, so a root turn with a long recorded delay that follows a background
//!   child's request starts one cap after that request ends, whatever the root's own delay.
//!
//! Times: modelled seconds, replayed at `time_scale` 10 (1 s recorded = 100 ms wall); the mock
//! answers every request ~31 ms (wall) after reading it.

mod support;

use std::sync::Arc;
use std::time::Duration;

use servebench_agentx::point::load_plans;
use servebench_agentx::replay::{run, ReplayConfig, ReplayRecord};
use servebench_agentx::synth::WordCodec;
use servebench_client::mock::{Captured, MockServer, Reply};
use servebench_client::Cancel;

const SCALE: f64 = 10.0;
/// Wall-clock tolerance, ms (1 s modelled = 100 ms wall).
const TOL_MS: f64 = 60.0;

/// Root r0 (t 0, api 3 s) spawns subagent `a` at t 2, while r0 still runs in the recording:
/// a0 at t 2 (api 1), a1 at t 6.5 (3.5 s after a0 ends, api 1, ends at 7.5). Root r1 at t 8 (5 s after
/// r0 ends) joins `a`. Root r2 at t 10 (api 1); background subagent `b` at t 11.5: b0 (api 0.5,
/// ends 12); root r3 at t 200 (187 s after r2) and r4 at t 201.
fn trace() -> &'static str {
    r#"{"id":"js1","block_size":64,"requests":[
      {"t":0.0,"type":"s","in":200,"out":2,"hash_ids":[1,2],"api_time":3.0},
      {"t":2.0,"type":"subagent","agent_id":"a","requests":[
        {"t":2.0,"type":"s","in":150,"out":2,"hash_ids":[9,10],"api_time":1.0},
        {"t":6.5,"type":"s","in":210,"out":2,"hash_ids":[9,10,11],"api_time":1.0}]},
      {"t":8.0,"type":"s","in":260,"out":2,"hash_ids":[1,2,3],"api_time":1.0},
      {"t":10.0,"type":"s","in":330,"out":2,"hash_ids":[1,2,3,4],"api_time":1.0},
      {"t":11.5,"type":"subagent","agent_id":"b","requests":[
        {"t":11.5,"type":"s","in":150,"out":2,"hash_ids":[20,21],"api_time":0.5}]},
      {"t":200.0,"type":"s","in":400,"out":2,"hash_ids":[1,2,3,4,5],"api_time":1.0},
      {"t":201.0,"type":"s","in":470,"out":2,"hash_ids":[1,2,3,4,5,6],"api_time":1.0}]}"#
}

fn reply(_: &Captured) -> Reply {
    support::two_token_reply(20, 30)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn branches_start_at_send_and_joins_release_at_the_later_of_deadline_and_children() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace_js1.json"), trace()).unwrap();
    let plans = load_plans(dir.path(), &WordCodec).unwrap();
    let p = &plans[0];
    let ids: Vec<&str> = p.convs.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["js1", "js1::sa:a", "js1::sa:b"], "conversations");
    assert!(p.branches[0].at_send, "a starts while r0 runs (2 < 0 + 3)");
    assert_eq!(p.branches[0].join_turn, Some(1));
    assert!(
        !p.branches[1].at_send,
        "b starts after r2 ended (11.5 ≥ 11)"
    );
    assert_eq!(p.branches[1].join_turn, Some(3), "b ends at 12 ≤ r3's t");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt.block_on(async {
        let srv = MockServer::start(Arc::new(reply), false).await.unwrap();
        let client = support::client(&srv.base_url(), Duration::from_secs(10));
        let cfg = ReplayConfig {
            conc: 1,
            duration: Duration::from_secs(20),
            warmup_per_lane: 0,
            start_min: 0.0,
            start_max: 0.0,
            tree_idle_cap: Duration::from_secs(3),
            system_idle_cap: Duration::from_secs(100),
            model: "m".into(),
            time_scale: SCALE,
            ..Default::default()
        };
        run(client, plans.clone(), cfg, Cancel::never(), |_| {})
            .await
            .unwrap()
    });
    // the first play (a drained tree recycles with a new marker)
    let first = out.records[0].marker.clone();
    let get = |conv: &str, turn: u32| -> &ReplayRecord {
        out.records
            .iter()
            .find(|r| {
                r.rec.conversation_id == conv && r.rec.turn_index == turn && r.marker == first
            })
            .unwrap_or_else(|| panic!("{conv}#{turn} not replayed"))
    };
    let (r0, r1, r2, r3) = (get("js1", 0), get("js1", 1), get("js1", 2), get("js1", 3));
    let (a0, a1, b0) = (
        get("js1::sa:a", 0),
        get("js1::sa:a", 1),
        get("js1::sa:b", 0),
    );
    for r in [r0, r1, r2, r3, a0, a1, b0] {
        assert!(r.rec.error.is_none(), "{r:?}");
    }
    let near = |what: &str, got: f64, want: f64| {
        assert!(
            (got - want).abs() <= TOL_MS,
            "{what}: {got:.1} ms wall, want {want:.1} ms"
        );
    };
    // a0: 2 s modelled after r0 was *sent* (not at r0's completion, ~31 ms after its send)
    near(
        "a0 after r0's start",
        ms(a0.rec.start_ns) - ms(r0.rec.start_ns),
        2.0 * 1000.0 / SCALE,
    );
    // a1: its recorded 3.5 s after a0
    near(
        "a1 after a0's end",
        ms(a1.rec.start_ns) - ms(a0.rec.end_ns),
        3.5 * 1000.0 / SCALE,
    );
    // r1's deadline (r0's end + 5 s = ~500 ms wall) passes while a1 still waits: r1 starts
    // when a1 completes, not 5 s after it
    let deadline = ms(r0.rec.end_ns) + 5.0 * 1000.0 / SCALE;
    assert!(
        ms(a1.rec.end_ns) > deadline + 10.0,
        "a1 ends after r1's deadline: the case under test"
    );
    near(
        "r1 after a1's end",
        ms(r1.rec.start_ns) - ms(a1.rec.end_ns),
        0.0,
    );
    // r2: 1 s after r1 (recorded t 10 − (8 + 1))
    near(
        "r2 after r1's end",
        ms(r2.rec.start_ns) - ms(r1.rec.end_ns),
        1.0 * 1000.0 / SCALE,
    );
    // b0 at r2's completion (b starts after r2 ended in the recording: offset 0)
    near(
        "b0 after r2's end",
        ms(b0.rec.start_ns) - ms(r2.rec.end_ns),
        0.0,
    );
    // r3 (recorded 189 s after r2, gated on b which ended long before): the tree goes idle when
    // b0 ends, its watchdog fires 3 s later and shifts r3's timer to then
    near(
        "r3 after b0's end (tree idle cap)",
        ms(r3.rec.start_ns) - ms(b0.rec.end_ns),
        3.0 * 1000.0 / SCALE,
    );
}

/// The same schedule on tokio's paused clock (deterministic tier): the mock stamps every request
/// with the paused clock when it has read it and answers 31 ms later, so every send time is
/// exact — no wall-clock tolerance. Times in ms of the paused clock since the replay started
/// (1 s modelled = 100 ms).
#[tokio::test(start_paused = true)]
async fn paused_clock_branch_and_join_times_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace_js1.json"), trace()).unwrap();
    let plans = load_plans(dir.path(), &WordCodec).unwrap();
    let seen: Arc<std::sync::Mutex<Vec<(u64, usize)>>> = Arc::default();
    let t0 = tokio::time::Instant::now();
    let handler = {
        let seen = seen.clone();
        move |c: &Captured| {
            let chars: usize = c.json()["messages"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .map(|x| x["content"].as_str().map_or(0, str::len))
                        .sum()
                })
                .unwrap_or(0);
            seen.lock()
                .unwrap()
                .push((t0.elapsed().as_millis() as u64, chars));
            support::two_token_reply(20, 30)
        }
    };
    let srv = MockServer::start(Arc::new(handler), false).await.unwrap();
    let client = support::client(&srv.base_url(), Duration::from_secs(10));
    let cfg = ReplayConfig {
        conc: 1,
        duration: Duration::from_secs(25),
        warmup_per_lane: 0,
        start_min: 0.0,
        start_max: 0.0,
        tree_idle_cap: Duration::from_secs(3),
        system_idle_cap: Duration::from_secs(100),
        model: "m".into(),
        time_scale: SCALE,
        ..Default::default()
    };
    run(client, plans.clone(), cfg, Cancel::never(), |_| {})
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    // (send ms, prompt characters): r0 820, a0 620, a1 860, r1 1060, r2 1340, b0 620, r3 1620,
    // r4 1900; every request is answered 31 ms after it is read
    let play = [
        (0, 820),   // r0
        (200, 620), // a0: 2 s modelled after r0 was *sent*
        // a1: recorded 3.5 s after a0's end (231), but the tree is idle from 231 (r0 done,
        // r1 waits on the branch) and its 3 s idle cap fires first: 231 + 300
        (531, 860),
        (562, 1060),  // r1: its deadline (31 + 500) passed while a1 ran: at a1's end
        (693, 1340),  // r2: 1 s after r1's end (593)
        (724, 620),   // b0: at r2's end (b starts after r2 ended in the recording)
        (1055, 1620), // r3: recorded 189 s later; tree idle cap 3 s after b0's end (755)
        (1086, 1900), // r4: 0 s after r3's end
    ];
    // the drained tree is replayed again from r4's end (1117) until the 2,500 ms window ends
    let want: Vec<(u64, usize)> = play
        .iter()
        .copied()
        .chain(play.iter().map(|&(t, c)| (t + 1117, c)))
        .chain(
            play.iter()
                .map(|&(t, c)| (t + 2234, c))
                .take_while(|&(t, _)| t < 2500),
        )
        .collect();
    assert_eq!(seen, want);
}
