//! Crash safety (issue 12 item 4): `kill -9` of `servebench sweep`, of the AgentX replay
//! (`sweep --scenario agentx`) and of `servebench eval gsm8k` at random moments, 20 times each
//! (`CRASH_KILLS`), against the embedded simulator with small workloads.
//!
//! Each kill moment is drawn uniformly from `[0, T)`, `T` the wall time of an uninterrupted run
//! of the same command measured first (the reference), from a seeded generator (`CRASH_SEED`).
//! After every kill: the store (`./servebench.db`, the default path) opens and passes
//! `PRAGMA integrity_check`; finished points (samples) are whole on disk. Then the same command
//! resumes (`sweep … --resume`; eval: the same command, which resumes its `samples.jsonl`) and
//! must exit as the reference did, leaving exactly the full set of points (samples) once:
//! one stored run, one row per point (one eval row), no duplicate request or sample ids, the
//! points (samples) finished before the kill unchanged, the same eval score as the reference.
//! `CRASH_REPORT=FILE` appends the loop's figures (docs/reliability.md).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::crash::{assert_store_sound, jsonl_lines, kill_after, SplitMix};
use common::{read_json, servebench_in, shared};
use serde_json::Value;
use servebench_store::{RunKind, RunStatus, Store};

fn kills() -> usize {
    std::env::var("CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

fn seed(salt: u64) -> u64 {
    std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
        ^ salt
}

fn gsm8k_dir() -> PathBuf {
    shared().join("data/gsm8k")
}

/// The figures of one kill loop.
#[derive(Default, Debug)]
struct Figures {
    kills: usize,
    moments_ms: Vec<u128>,
    exited_before_kill: usize,
    no_store_yet: usize,
    /// kills by how many points (samples) had finished
    finished: BTreeMap<usize, usize>,
    torn_lines: usize,
    reference_s: f64,
    resumes_passed: usize,
}

impl Figures {
    fn report(&self, name: &str, unit: &str) {
        let min = self.moments_ms.iter().min().copied().unwrap_or(0);
        let max = self.moments_ms.iter().max().copied().unwrap_or(0);
        let line = format!(
            "{name}: {} kills (SIGKILL) at {min}–{max} ms of a {:.2} s reference run; {} after the process had exited; {} before the store existed; {unit} finished at the kill → kills: {:?}; torn last lines seen: {}; resumes passed: {}/{}",
            self.kills,
            self.reference_s,
            self.exited_before_kill,
            self.no_store_yet,
            self.finished,
            self.torn_lines,
            self.resumes_passed,
            self.kills
        );
        eprintln!("{line}");
        if let Ok(p) = std::env::var("CRASH_REPORT") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .unwrap();
            writeln!(f, "{line}").unwrap();
        }
    }
}

/// Runs `args` to the end in `dir`: (exit code, wall time, stdout+stderr).
fn run_to_end(dir: &Path, args: &[String]) -> (i32, Duration, String) {
    let t0 = Instant::now();
    let o = servebench_in(dir)
        .args(args)
        .env("SERVEBENCH_GSM8K_DIR", gsm8k_dir())
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), t0.elapsed(), text)
}

// ---------------------------------------------------------------------------------------------
// sweep and AgentX replay

/// One point's files as they were when the sweep was killed (finished points only).
struct KeptPoint {
    marker: Vec<u8>,
    agg: Vec<u8>,
    records: Vec<u8>,
}

fn sweep_loop(name: &str, salt: u64, args: Vec<String>, points: &[&str], agentx: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    std::fs::create_dir(&reference).unwrap();
    let (ref_code, t, text) = run_to_end(&reference, &args);
    // the reference measured every point (exit 1 only if a point is flagged, e.g. invalid)
    assert!(
        ref_code == 0 || ref_code == 1,
        "{name}: the reference run failed ({ref_code}):\n{text}"
    );
    let ref_status = {
        let st = assert_store_sound(&reference.join("servebench.db")).unwrap();
        let runs = st.list_runs(None, None).unwrap();
        assert_eq!(runs.len(), 1, "{name}: reference:\n{text}");
        assert_eq!(
            st.points(runs[0].id).unwrap().len(),
            points.len(),
            "{name}: reference"
        );
        for p in points {
            assert!(
                reference.join("out").join(p).join("point.json").exists(),
                "{name}: reference {p}"
            );
        }
        runs[0].status
    };
    let mut rng = SplitMix(seed(salt));
    let mut fig = Figures {
        reference_s: t.as_secs_f64(),
        ..Figures::default()
    };
    for i in 0..kills() {
        let d = tmp.path().join(format!("kill{i}"));
        std::fs::create_dir(&d).unwrap();
        let at = t.mul_f64(rng.unit());
        let mut cmd = servebench_in(&d);
        cmd.args(&args);
        let k = kill_after(cmd, at);
        fig.kills += 1;
        fig.moments_ms.push(k.at.as_millis());
        fig.exited_before_kill += usize::from(k.finished_first);
        let ctx = format!("{name}: kill {i} at {} ms", k.at.as_millis());

        // after the kill: a sound store, finished points whole
        let db = d.join("servebench.db");
        match assert_store_sound(&db) {
            None => fig.no_store_yet += 1,
            Some(st) => {
                let runs = st.list_runs(None, None).unwrap();
                assert!(runs.len() <= 1, "{ctx}: {} runs", runs.len());
                if let Some(r) = runs.first() {
                    assert!(st.points(r.id).unwrap().len() <= points.len(), "{ctx}");
                }
            }
        }
        let out = d.join("out");
        let mut kept: BTreeMap<&str, KeptPoint> = BTreeMap::new();
        for p in points {
            let pd = out.join(p);
            let recs = jsonl_lines(&pd.join("records.jsonl"));
            if pd.join("point.json").exists() {
                let (_, torn) = recs.unwrap_or_else(|| panic!("{ctx}: {p} without records"));
                assert!(torn.is_none(), "{ctx}: finished {p} has a cut record line");
                if agentx {
                    let (_, torn) = jsonl_lines(&pd.join("agentx_records.jsonl")).unwrap();
                    assert!(torn.is_none(), "{ctx}: finished {p}: cut agentx record");
                }
                kept.insert(
                    p,
                    KeptPoint {
                        marker: std::fs::read(pd.join("point.json")).unwrap(),
                        agg: std::fs::read(pd.join("agg.json")).unwrap(),
                        records: std::fs::read(pd.join("records.jsonl")).unwrap(),
                    },
                );
            } else {
                // an unfinished point: complete lines parse, the last may be cut
                for f in ["records.jsonl", "agentx_records.jsonl"] {
                    if let Some((_, Some(_))) = jsonl_lines(&pd.join(f)) {
                        fig.torn_lines += 1;
                    }
                }
            }
        }
        *fig.finished.entry(kept.len()).or_default() += 1;

        // resume
        let mut resume = args.clone();
        resume.push("--resume".into());
        let (code, _, text) = run_to_end(&d, &resume);
        assert_eq!(code, ref_code, "{ctx}: resume exit status:\n{text}");
        check_complete_sweep(&ctx, &d, points, &kept, agentx, ref_status, &text);
        fig.resumes_passed += 1;
    }
    fig.report(name, "points");
}

/// After the resume: every point once, on disk and in the store; kept points unchanged.
fn check_complete_sweep(
    ctx: &str,
    d: &Path,
    points: &[&str],
    kept: &BTreeMap<&str, KeptPoint>,
    agentx: bool,
    ref_status: RunStatus,
    text: &str,
) {
    let st = assert_store_sound(&d.join("servebench.db")).expect("store after the resume");
    let runs = st.list_runs(None, None).unwrap();
    assert_eq!(
        runs.len(),
        1,
        "{ctx}: one stored run, got {}\n{text}",
        runs.len()
    );
    let run = &runs[0];
    assert_eq!(
        run.status, ref_status,
        "{ctx}: run status as the reference's\n{text}"
    );
    assert_eq!(run.kind, RunKind::Sweep);
    let rows = st.points(run.id).unwrap();
    assert_eq!(
        rows.len(),
        points.len(),
        "{ctx}: one store row per point\n{text}"
    );
    let out = d.join("out");
    let mut stored_concs: Vec<u64> = rows
        .iter()
        .map(|r| r.row.to_value()["conc"].as_u64().unwrap())
        .collect();
    stored_concs.sort();
    let mut want: Vec<u64> = points
        .iter()
        .map(|p| p.trim_start_matches("conc").parse().unwrap())
        .collect();
    want.sort();
    assert_eq!(stored_concs, want, "{ctx}: stored points");
    for p in points {
        let pd = out.join(p);
        assert!(pd.join("point.json").exists(), "{ctx}: {p} not finished");
        let agg = read_json(&pd.join("agg.json"));
        assert!(
            rows.iter().any(|r| r.row.to_value() == agg),
            "{ctx}: {p}: agg.json is not the stored row"
        );
        let (recs, torn) = jsonl_lines(&pd.join("records.jsonl")).unwrap();
        assert!(torn.is_none(), "{ctx}: {p}: cut line after the resume");
        let mut ids = BTreeSet::new();
        for r in &recs {
            let key = (
                r["phase"].as_str().unwrap().to_string(),
                r["id"].as_u64().unwrap(),
            );
            assert!(
                ids.insert(key.clone()),
                "{ctx}: {p}: duplicate request {key:?}"
            );
        }
        if agentx {
            let (ax, torn) = jsonl_lines(&pd.join("agentx_records.jsonl")).unwrap();
            assert!(torn.is_none(), "{ctx}: {p}: cut agentx line");
            assert!(!ax.is_empty(), "{ctx}: {p}: no AgentX records");
            let mut seen = BTreeSet::new();
            for r in &ax {
                let key = agentx_key(r);
                assert!(
                    seen.insert(key.clone()),
                    "{ctx}: {p}: duplicate AgentX request {key}"
                );
            }
            assert!(pd.join("agentx.json").exists(), "{ctx}: {p}");
        } else {
            let measured: Vec<u64> = recs
                .iter()
                .filter(|r| r["phase"] == "measured")
                .map(|r| r["id"].as_u64().unwrap())
                .collect();
            let n = measured.len() as u64;
            assert_eq!(
                measured.iter().copied().collect::<BTreeSet<_>>(),
                (0..n).collect::<BTreeSet<_>>(),
                "{ctx}: {p}: measured request ids"
            );
            assert_eq!(n, 12, "{ctx}: {p}: measured requests");
        }
        if let Some(k) = kept.get(p) {
            assert_eq!(
                std::fs::read(pd.join("point.json")).unwrap(),
                k.marker,
                "{ctx}: {p} marker changed"
            );
            assert_eq!(
                std::fs::read(pd.join("agg.json")).unwrap(),
                k.agg,
                "{ctx}: {p} agg changed"
            );
            assert_eq!(
                std::fs::read(pd.join("records.jsonl")).unwrap(),
                k.records,
                "{ctx}: {p} records changed"
            );
        }
    }
    let s = read_json(&out.join("summary.json"));
    assert_eq!(s["interrupted"], false, "{ctx}");
    assert_eq!(
        s["points"].as_array().unwrap().len(),
        points.len(),
        "{ctx}: summary points"
    );
    assert_eq!(s["store"]["run_id"], run.id.0, "{ctx}: summary run id");
}

/// What names one AgentX request: the record's own id when it has one, else conversation/turn
/// with phase and start time.
/// One AgentX request: its play (lane + `[rid:…]` marker), turn and phase. A play sends each
/// of its turns once, so two records with one key are one request written twice. (Start
/// times are no key: two lanes' primers go out at once and can read one clock tick.)
fn agentx_key(r: &Value) -> String {
    format!(
        "{}/lane {}/{}/turn {}",
        r["phase"], r["lane"], r["marker"], r["turn_index"]
    )
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn sigkill_of_a_sweep_at_random_moments_then_resume_completes_it_once() {
    let args = strings(&[
        "sweep",
        "--conc",
        "1,2,4",
        "--isl",
        "64",
        "--osl",
        "48",
        "--range-ratio",
        "1.0",
        "--num-prompts",
        "12",
        "--warmups",
        "2",
        "--sim-speedup",
        "8",
        "--out",
        "out",
    ]);
    sweep_loop("sweep", 1, args, &["conc1", "conc2", "conc4"], false);
}

#[test]
fn sigkill_of_an_agentx_replay_at_random_moments_then_resume_completes_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("traces");
    std::fs::create_dir(&t).unwrap();
    // a trace that fits the simulated model's context (others overflow it, failing the point)
    let n = "trace_0504.json";
    std::fs::copy(shared().join("data/agentx-traces").join(n), t.join(n)).unwrap();
    let mut args = strings(&[
        "sweep",
        "--scenario",
        "agentx",
        "--sim-model",
        "llama-3.1-8b",
        "--conc",
        "1,2",
        "--duration",
        "1",
        "--out",
        "out",
        "--traces",
    ]);
    args.push(t.display().to_string());
    sweep_loop("agentx", 2, args, &["conc1", "conc2"], true);
}

// ---------------------------------------------------------------------------------------------
// eval

const EVAL_LIMIT: u64 = 40;

#[test]
fn sigkill_of_an_eval_at_random_moments_then_resume_scores_every_sample_once() {
    let args = strings(&[
        "eval",
        "gsm8k",
        "--limit",
        "40",
        "--conc",
        "4",
        "--sim-speedup",
        "10",
        "--no-progress",
        "--out",
        "out",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    std::fs::create_dir(&reference).unwrap();
    let (ref_code, t, text) = run_to_end(&reference, &args);
    assert!(
        ref_code == 0 || ref_code == 2,
        "the reference eval failed ({ref_code}):\n{text}"
    );
    let ref_result = read_json(&reference.join("out/result.json"));
    let mut rng = SplitMix(seed(3));
    let mut fig = Figures {
        reference_s: t.as_secs_f64(),
        ..Figures::default()
    };
    for i in 0..kills() {
        let d = tmp.path().join(format!("kill{i}"));
        std::fs::create_dir(&d).unwrap();
        let at = t.mul_f64(rng.unit());
        let mut cmd = servebench_in(&d);
        cmd.args(&args).env("SERVEBENCH_GSM8K_DIR", gsm8k_dir());
        let k = kill_after(cmd, at);
        fig.kills += 1;
        fig.moments_ms.push(k.at.as_millis());
        fig.exited_before_kill += usize::from(k.finished_first);
        let ctx = format!("eval: kill {i} at {} ms", k.at.as_millis());

        let db = d.join("servebench.db");
        match assert_store_sound(&db) {
            None => fig.no_store_yet += 1,
            Some(st) => assert!(st.list_runs(None, None).unwrap().len() <= 1, "{ctx}"),
        }
        // the samples finished before the kill (complete lines), the last line may be cut
        let mut kept: BTreeMap<u64, Value> = BTreeMap::new();
        if let Some((lines, torn)) = jsonl_lines(&d.join("out/samples.jsonl")) {
            fig.torn_lines += usize::from(torn.is_some());
            for l in lines {
                let id = l["doc_id"].as_u64().unwrap();
                assert!(
                    kept.insert(id, l).is_none(),
                    "{ctx}: doc {id} twice before the resume"
                );
            }
        }
        *fig.finished.entry(kept.len()).or_default() += 1;

        let (code, _, text) = run_to_end(&d, &args);
        assert_eq!(code, ref_code, "{ctx}: resume exit status:\n{text}");
        check_complete_eval(&ctx, &d, &kept, &ref_result, &text);
        fig.resumes_passed += 1;
    }
    fig.report("eval gsm8k", "samples");
}

fn check_complete_eval(
    ctx: &str,
    d: &Path,
    kept: &BTreeMap<u64, Value>,
    reference: &Value,
    text: &str,
) {
    let (lines, torn) = jsonl_lines(&d.join("out/samples.jsonl")).unwrap();
    assert!(torn.is_none(), "{ctx}: cut line after the resume");
    let ids: Vec<u64> = lines
        .iter()
        .map(|l| l["doc_id"].as_u64().unwrap())
        .collect();
    let set: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(ids.len(), set.len(), "{ctx}: duplicate samples\n{text}");
    assert_eq!(
        set,
        (0..EVAL_LIMIT).collect::<BTreeSet<_>>(),
        "{ctx}: samples"
    );
    for l in &lines {
        let id = l["doc_id"].as_u64().unwrap();
        if let Some(k) = kept.get(&id) {
            for f in ["text", "response", "messages", "strict", "flexible"] {
                assert_eq!(l[f], k[f], "{ctx}: doc {id}: kept sample changed ({f})");
            }
        }
    }
    let r = read_json(&d.join("out/result.json"));
    for k in ["em_strict", "em_flexible", "n_eff"] {
        let (a, b) = (find(&r, k), find(reference, k));
        assert!(a.is_some(), "{ctx}: result.json has no {k}");
        assert_eq!(a, b, "{ctx}: {k} differs from the uninterrupted run");
    }
    let st: Store = assert_store_sound(&d.join("servebench.db")).expect("store");
    let runs = st.list_runs(None, None).unwrap();
    assert_eq!(
        runs.len(),
        1,
        "{ctx}: one stored run, got {}\n{text}",
        runs.len()
    );
    assert_eq!(runs[0].kind, RunKind::Eval);
    assert_eq!(runs[0].status, RunStatus::Ok, "{ctx}\n{text}");
    let evals = st.evals(runs[0].id).unwrap();
    assert_eq!(evals.len(), 1, "{ctx}: one eval row, got {}", evals.len());
}

/// The first value of key `k` anywhere in `v` (depth first).
fn find(v: &Value, k: &str) -> Option<Value> {
    match v {
        Value::Object(o) => o
            .get(k)
            .cloned()
            .or_else(|| o.values().find_map(|x| find(x, k))),
        Value::Array(a) => a.iter().find_map(|x| find(x, k)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// focused cases: the moments a random kill rarely hits, and the bug the loop found

fn eval_args() -> Vec<String> {
    strings(&[
        "eval",
        "gsm8k",
        "--limit",
        "6",
        "--conc",
        "2",
        "--sim-zero-delay",
        "--no-progress",
        "--out",
        "out",
    ])
}

fn one_eval_run(d: &Path) -> (servebench_store::RunRecord, usize) {
    let st = assert_store_sound(&d.join("servebench.db")).unwrap();
    let runs = st.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 1, "one run per output folder");
    let n = st.evals(runs[0].id).unwrap().len();
    (runs[0].clone(), n)
}

/// Found by the loop: a kill after the eval run was finished (`ok`, before the process exited)
/// and the same command again recorded a second run with a second eval row.
#[test]
fn regression_eval_run_again_on_a_finished_out_dir_keeps_one_run_and_one_eval_row() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (c1, _, t1) = run_to_end(d, &eval_args());
    assert!(c1 == 0 || c1 == 2, "{t1}");
    let (first, n) = one_eval_run(d);
    assert_eq!((first.status, n), (RunStatus::Ok, 1));
    let (c2, _, t2) = run_to_end(d, &eval_args());
    assert_eq!(c2, c1, "{t2}");
    assert!(t2.contains(&format!("continuing run {}", first.id)), "{t2}");
    let (again, n) = one_eval_run(d);
    assert_eq!((again.id, again.status, n), (first.id, RunStatus::Ok, 1));
    // --fresh starts over: a new run
    let mut fresh = eval_args();
    fresh.push("--fresh".into());
    run_to_end(d, &fresh);
    let st = Store::open(d.join("servebench.db")).unwrap();
    assert_eq!(st.list_runs(None, None).unwrap().len(), 2);
}

/// A kill between the eval row's insert and the run's final status: the run is `running` with
/// its row; the same command again ends with one row and status ok.
#[test]
fn eval_killed_between_its_eval_row_and_the_run_status_ends_with_one_row() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    run_to_end(d, &eval_args());
    let (run, _) = one_eval_run(d);
    Store::open(d.join("servebench.db"))
        .unwrap()
        .reopen_run(run.id)
        .unwrap();
    let (c, _, t) = run_to_end(d, &eval_args());
    assert!(c == 0 || c == 2, "{t}");
    assert!(t.contains("eval row(s) replaced"), "{t}");
    let (again, n) = one_eval_run(d);
    assert_eq!((again.id, again.status, n), (run.id, RunStatus::Ok, 1));
}

fn small_sweep() -> Vec<String> {
    strings(&[
        "sweep",
        "--conc",
        "1,2",
        "--isl",
        "32",
        "--osl",
        "16",
        "--range-ratio",
        "1.0",
        "--num-prompts",
        "6",
        "--warmups",
        "0",
        "--sim-speedup",
        "20",
        "--out",
        "out",
    ])
}

fn resumed(d: &Path) -> String {
    let mut a = small_sweep();
    a.push("--resume".into());
    let (c, _, t) = run_to_end(d, &a);
    assert_eq!(c, 0, "{t}");
    t
}

fn stored_rows(d: &Path) -> (servebench_store::RunId, Vec<Value>) {
    let st = assert_store_sound(&d.join("servebench.db")).unwrap();
    let runs = st.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 1, "one stored run");
    assert_eq!(runs[0].status, RunStatus::Ok);
    let rows = st.points(runs[0].id).unwrap();
    (
        runs[0].id,
        rows.into_iter().map(|p| p.row.to_value()).collect(),
    )
}

/// A point killed mid-way: no marker, its records end in a cut line, its directory holds
/// whatever was written. Resume measures it again from scratch (one row, whole records).
#[test]
fn resume_redoes_an_unfinished_point_whose_records_end_in_a_cut_line() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (c, _, t) = run_to_end(d, &small_sweep());
    assert_eq!(c, 0, "{t}");
    let conc1 = std::fs::read(d.join("out/conc1/records.jsonl")).unwrap();
    let old2 = read_json(&d.join("out/conc2/agg.json"));
    std::fs::remove_file(d.join("out/conc2/point.json")).unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.join("out/conc2/records.jsonl"))
            .unwrap();
        f.write_all(br#"{"id": 3, "phase": "meas"#).unwrap();
    }
    let t = resumed(d);
    assert!(
        t.contains("1 of 2 points finished earlier and kept, 1 to measure"),
        "{t}"
    );
    assert!(t.contains("conc 1: finished earlier, kept"), "{t}");
    let (recs, torn) = jsonl_lines(&d.join("out/conc2/records.jsonl")).unwrap();
    assert!(torn.is_none());
    assert_eq!(recs.len(), 6, "measured again, not appended to");
    assert_eq!(
        std::fs::read(d.join("out/conc1/records.jsonl")).unwrap(),
        conc1
    );
    let (_, rows) = stored_rows(d);
    assert_eq!(rows.len(), 2, "the unfinished point's old row is replaced");
    assert!(rows.contains(&read_json(&d.join("out/conc2/agg.json"))));
    assert!(!rows.contains(&old2));
}

/// A kill between a point's marker and its store insert: the finished point is kept and its
/// row added on resume (one row per point).
#[test]
fn resume_stores_a_finished_point_whose_row_never_reached_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (c, _, t) = run_to_end(d, &small_sweep());
    assert_eq!(c, 0, "{t}");
    {
        let mut st = Store::open(d.join("servebench.db")).unwrap();
        let run = st.list_runs(None, None).unwrap()[0].id;
        let last = st.points(run).unwrap().pop().unwrap();
        assert!(st.delete_point(run, last.id).unwrap());
        st.reopen_run(run).unwrap();
    }
    let t = resumed(d);
    assert!(t.contains("1 point rows kept, 1 added"), "{t}");
    let (_, rows) = stored_rows(d);
    assert_eq!(rows.len(), 2);
    for p in ["conc1", "conc2"] {
        assert!(
            rows.contains(&read_json(&d.join("out").join(p).join("agg.json"))),
            "{p}"
        );
    }
}

#[test]
fn resume_needs_out_and_does_not_mix_with_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let (c, _, t) = run_to_end(tmp.path(), &strings(&["sweep", "--resume"]));
    assert_ne!(c, 0);
    assert!(t.contains("--resume needs --out DIR"), "{t}");
    let (c, _, t) = run_to_end(
        tmp.path(),
        &strings(&["sweep", "--resume", "--overwrite", "--out", "o"]),
    );
    assert_ne!(c, 0);
    assert!(t.contains("--overwrite replaces them"), "{t}");
}

/// `--resume` with other measurement flags than the sweep was started with is refused, naming
/// each flag with both values (a new-user run resumed a 1k-ISL sweep with `--isl 4096`, kept its
/// point and wrote `"isl": 4096` over it); the directory is left as it was, and the same flags
/// still resume it.
#[test]
fn resume_with_other_flags_is_refused_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (c, _, t) = run_to_end(d, &small_sweep());
    assert_eq!(c, 0, "{t}");
    std::fs::remove_file(d.join("out/conc2/point.json")).unwrap();
    let summary = std::fs::read(d.join("out/summary.json")).unwrap();
    let mut a = small_sweep();
    let isl = a.iter().position(|x| x == "--isl").unwrap();
    a[isl + 1] = "64".into();
    a.extend(strings(&["--resume", "--seed", "7"]));
    let (c, _, t) = run_to_end(d, &a);
    assert_ne!(c, 0, "{t}");
    assert!(
        t.contains("--resume out: the sweep there was measured with other flags (--isl 32 → 64, --seed 0 → 7); resume with the same flags, or measure into another --out"),
        "{t}"
    );
    assert_eq!(std::fs::read(d.join("out/summary.json")).unwrap(), summary);
    let t = resumed(d);
    assert!(
        t.contains("1 of 2 points finished earlier and kept, 1 to measure"),
        "{t}"
    );
}
