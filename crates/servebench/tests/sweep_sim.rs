//! `servebench sweep` against the embedded simulator.
//!
//! The reported TTFT/TPOT agree with the simulator's own emission log (its clock, its
//! record of when it received each request and emitted the first/last token) within 1 ms
//! at p99, matched per request by the response `id`.
//!
//! (The README-command test lives in `sweep_default.rs`, a separate test binary, so the two never
//! compete for the CPU.)

mod common;
use common::{check_schema, read_json, read_jsonl, servebench_in, stderr};

use std::collections::HashMap;
use std::process::Command;

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_servebench"));
    c.env(
        "SERVEBENCH_DB",
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("servebench-tests-scratch.db"),
    );
    c
}

fn p99(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    servebench_metrics::percentile(&v, 99.0).unwrap()
}

/// One sweep; returns (p99 |ΔTTFT|, p99 |ΔTPOT|, median |ΔTTFT|, worst |reported p99 TTFT −
/// simulator p99 TTFT| over the two points) in ms.
fn measure_once() -> (f64, f64, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // real time (speedup 1) so wall-clock measurement equals modelled time; 100 requests per
    // point so that p99 is a percentile, not the maximum
    let o = bin()
        .args([
            "sweep",
            "--conc",
            "1,4",
            "--isl",
            "128",
            "--osl",
            "12",
            "--num-prompts",
            "100",
            "--sim-speedup",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let emission: HashMap<String, Value> = read_jsonl(&out.join("sim-emission.jsonl"))
        .into_iter()
        .map(|e| (e["id"].as_str().unwrap().to_string(), e))
        .collect();
    let (mut d_ttft, mut d_tpot) = (Vec::new(), Vec::new());
    let mut d_p99 = 0.0f64;
    for conc in [1, 4] {
        let recs = read_jsonl(&out.join(format!("conc{conc}/records.jsonl")));
        let measured: Vec<&Value> = recs.iter().filter(|r| r["phase"] == "measured").collect();
        assert_eq!(measured.len(), 100, "--num-prompts measured requests");
        assert_eq!(recs.len() - measured.len(), 2 * conc, "2 × conc warmups");
        // the line before the concurrency's points says what the records hold
        let said = format!(
            "conc {conc}: {} measured requests ({} per lane), {} warmup",
            measured.len(),
            measured.len() / conc,
            recs.len() - measured.len()
        );
        assert!(stdout.contains(&said), "{said:?} in\n{stdout}");
        let (mut sim_ttfts, mut client_ttfts) = (Vec::new(), Vec::new());
        for r in &measured {
            assert_eq!(r["success"], true, "{r}");
            let e = &emission[r["response_id"].as_str().unwrap()];
            let n = r["output_tokens"].as_u64().unwrap();
            assert_eq!(n, e["completion_tokens"].as_u64().unwrap());
            assert_eq!(
                n,
                r["requested_output_tokens"].as_u64().unwrap(),
                "ignore_eos honoured"
            );
            let ns = |k: &str| e[k].as_u64().unwrap() as f64 / 1e6;
            let sim_ttft = ns("first_token_ns") - ns("received_ns");
            let sim_tpot = (ns("last_token_ns") - ns("first_token_ns")) / (n - 1) as f64;
            sim_ttfts.push(sim_ttft);
            client_ttfts.push(r["ttft_ms"].as_f64().unwrap());
            d_ttft.push((r["ttft_ms"].as_f64().unwrap() - sim_ttft).abs());
            d_tpot.push((r["tpot_ms"].as_f64().unwrap() - sim_tpot).abs());
        }
        // the point's reported p99 TTFT is the p99 of its measured records (warmups excluded):
        // exact, whatever the machine's scheduling did
        let agg = read_json(&out.join(format!("conc{conc}/agg.json")));
        let reported = agg["p99_ttft"].as_f64().unwrap() * 1000.0;
        let from_records = p99(client_ttfts);
        assert!(
            (reported - from_records).abs() <= 1e-6,
            "conc {conc}: agg.json p99 TTFT {reported} ms is not the p99 of the measured records {from_records} ms"
        );
        // ... and agrees with the simulator's p99 TTFT; a single delayed thread wake-up moves a
        // p99 of 100 requests, so this is judged per attempt with the per-request bound
        let sim = p99(sim_ttfts);
        println!("conc {conc}: reported p99 TTFT {reported:.3} ms, simulator {sim:.3} ms");
        d_p99 = d_p99.max((reported - sim).abs());
    }
    let median = {
        let mut v = d_ttft.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let n = d_tpot.len();
    let (pt, pp) = (p99(d_ttft), p99(d_tpot));
    println!("p99 |ΔTTFT| = {pt:.3} ms, p99 |ΔTPOT| = {pp:.4} ms, median |ΔTTFT| = {median:.3} ms over {n} requests");
    (pt, pp, median, d_p99)
}

/// The machine's own thread wake-up latency while `work` runs, p99 in ms: a thread blocked on
/// a channel is sent a message after a random 1–8 ms gap (the shape of token gaps at speedup
/// 1), over and over until `work` returns; the delay from the send to the receiver running is
/// what the OS adds to any cross-thread wake-up (futex wake, and on a VM the exit of an idle
/// vCPU). The simulator and the client each pay it between a token's emission and its read, so
/// it is neither's error. Measured during the sweep, not before it, so that it sees the same
/// load (a compile or another test binary on the same 2 cores delays both alike).
fn with_os_wake_latency_p99_ms<T>(work: impl FnOnce() -> T) -> (T, f64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::{Duration, Instant};
    let (tx, rx) = mpsc::channel::<Instant>();
    let recv = std::thread::spawn(move || {
        let mut d = Vec::with_capacity(4096);
        while let Ok(sent) = rx.recv() {
            d.push(sent.elapsed().as_secs_f64() * 1000.0);
        }
        d
    });
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let send = std::thread::spawn(move || {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        // at least 300 samples, then until the work is done
        let mut n = 0;
        while n < 300 || !stop2.load(Ordering::Relaxed) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            std::thread::sleep(Duration::from_micros(1000 + x % 7000));
            tx.send(Instant::now()).unwrap();
            n += 1;
        }
    });
    let out = work();
    stop.store(true, Ordering::Relaxed);
    send.join().unwrap();
    (out, p99(recv.join().unwrap()))
}

/// Every run must agree systematically (median |ΔTTFT| ≤ 0.5 ms: a t0 taken before the connect,
/// or an arrival clock read after parsing, would fail this on every run); the p99 bound of 1 ms
/// beyond the machine's own thread wake-up latency (measured during the sweep, capped at 5 ms
/// so a real client delay cannot hide behind it) must hold in at least one of three runs. The same
/// wake-up loop on the 2-core dev VM gave p99 0.045, 0.107 and 17.4 ms in three consecutive
/// runs: a delayed thread wake-up is neither the client's nor the simulator's doing. The bound
/// and the measured latency are printed for every run.
#[test]
fn reported_ttft_tpot_match_simulator_emission_log() {
    let _alone = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut best = f64::INFINITY;
    for attempt in 1..=3 {
        let ((pt, pp, median, d_p99), wake) = with_os_wake_latency_p99_ms(measure_once);
        let bound = 1.0 + wake.min(5.0);
        assert!(
            median <= 0.5,
            "systematic TTFT offset {median} ms against the simulator"
        );
        let worst = pt.max(pp);
        best = best.min((worst - bound).max(d_p99 - 5.0));
        println!("attempt {attempt}: p99 difference {worst:.3} ms, bound {bound:.3} ms (1 ms + OS wake-up p99 {wake:.3} ms); reported vs simulator p99 TTFT {d_p99:.3} ms (bound 5 ms)");
        // the reported p99 TTFT against the simulator's p99 TTFT: within 5 ms in the same attempt
        if worst <= bound && d_p99 <= 5.0 {
            return;
        }
    }
    panic!("p99 |reported − simulator| TTFT/TPOT above 1 ms + the OS wake-up latency, or reported p99 TTFT more than 5 ms from the simulator's, in 3 runs (best excess {best:.3} ms)");
}

/// `--scenario multiturn`: 3 conversations × 3 turns on 2 lanes against the simulator. One
/// record per turn with its `[conversation, turn]`; each later turn re-sends the history (more
/// prompt tokens than the turn before, part of them served from the prefix cache); each turn
/// waits for the previous answer plus the recorded think time (2 s modelled = 100 ms wall at
/// speedup 20); the answer lengths are the output targets; files and the store row written.
#[test]
fn multiturn_replays_conversations_with_history_and_think_times() {
    let _alone = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().unwrap();
    let mut convs = Vec::new();
    let mut answers = Vec::new();
    for c in 0..3 {
        let mut msgs = Vec::new();
        for t in 0..3 {
            let mut h = serde_json::json!({"from": "human",
                "value": format!("conversation {c} question {t}: {}", "tell me more ".repeat(3 + t))});
            if t > 0 {
                h["think_time_s"] = serde_json::json!(2.0);
            }
            let a = "answer words ".repeat(4 + 2 * t);
            answers.push(((c as u64, t as u64), a.chars().count().div_ceil(4) as u64));
            msgs.push(h);
            msgs.push(serde_json::json!({"from": "gpt", "value": a}));
        }
        convs.push(serde_json::json!({ "conversations": msgs }));
    }
    std::fs::write(
        d.path().join("c.json"),
        serde_json::to_string(&convs).unwrap(),
    )
    .unwrap();
    let o = servebench_in(d.path())
        .args([
            "sweep",
            "--scenario",
            "multiturn",
            "--conversations",
            "c.json",
        ])
        .args([
            "--conc",
            "2",
            "--sim-speedup",
            "20",
            "--out",
            "out",
            "--db",
            "s.db",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = read_jsonl(&d.path().join("out/conc2/records.jsonl"));
    assert_eq!(recs.len(), 9, "one record per turn");
    let by: HashMap<(u64, u64), &Value> = recs
        .iter()
        .map(|r| {
            let s = r["session"]
                .as_array()
                .expect("session [conversation, turn]");
            ((s[0].as_u64().unwrap(), s[1].as_u64().unwrap()), r)
        })
        .collect();
    for ((c, t), osl) in answers {
        let r = by[&(c, t)];
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(
            r["requested_output_tokens"], osl,
            "the gpt turn's length: {r}"
        );
        if t == 0 {
            continue;
        }
        let p = by[&(c, t - 1)];
        let n = |r: &Value, k: &str| r[k].as_u64().unwrap();
        assert!(
            n(r, "prompt_tokens_server") > n(p, "prompt_tokens_server") + n(p, "output_tokens"),
            "turn {t} of {c} re-sends the history and the answer: {r} after {p}"
        );
        assert!(n(r, "prompt_tokens_cached") > 0, "history reused: {r}");
        // the turn was due only after the answer it follows plus the think time (100 ms wall)
        assert!(
            n(r, "scheduled_ns") >= n(p, "end_ns") + 100_000_000,
            "think time: turn {t} of {c} scheduled {} ns, previous ended {} ns",
            n(r, "scheduled_ns"),
            n(p, "end_ns")
        );
    }
    let agg = read_json(&d.path().join("out/conc2/agg.json"));
    assert_eq!(agg["benchmark_type"], "multi_turn", "{agg}");
    check_schema(&agg, "agg-row.schema.json");
    for r in read_jsonl(&d.path().join("out/conc2/records.jsonl")) {
        check_schema(&r, "record.schema.json");
    }
    assert_eq!(agg["num_requests_successful"], 9, "{agg}");
    let summary = read_json(&d.path().join("out/summary.json"));
    assert_eq!(summary["api"], "chat");
    assert!(d.path().join("out/summary.csv").exists());
    let store = servebench_store::Store::open(d.path().join("s.db")).unwrap();
    let runs = store.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].meta.workload.as_deref(), Some("multi-turn"));
    let points = store.points(runs[0].id).unwrap();
    assert_eq!(points.len(), 1);
    let row = points[0].row.servebench().expect("a servebench row");
    assert_eq!(
        (row.identity.benchmark_type.as_str(), row.conc),
        ("multi_turn", Some(2))
    );
}
