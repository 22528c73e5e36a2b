//! `servebench run --executor local --simulate` with recipes written for the test: a transient
//! failure (the engine killed once from outside mid-point) is retried and then stored; a
//! deterministic one (a removed engine flag) is not retried; a run killed with SIGKILL resumes
//! and skips the points already stored. No external service needed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::runs::{find_files, real_args, real_repo, runs_json, stored_rows};
use common::{read_json, run_in};

const KEY: &str = "tiny-bf16-h200-vllm";

/// A catalog with one fixed-seq-len config (1k1k, conc 1 and 2) on runner `h200`.
fn catalog(d: &Path) {
    std::fs::write(
        d.join("master.yaml"),
        format!(
            "{KEY}:\n  image: vllm/vllm-openai:v0.99.0\n  model: Qwen/Qwen3-8B\n  model-prefix: tiny\n  runner: h200\n  precision: bf16\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - {{ tp: 1, conc-list: [1, 2] }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("runners.yaml"),
        "labels:\n  h200:\n    - h200-local_00\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("recipes")).unwrap();
}

/// Waits (bounded) until no process is left in the process group of any local job submitted
/// under `run_dir` (`submit.json` of each attempt: its `id` is the job's process group).
fn wait_for_jobs_to_end(run_dir: &Path, limit: Duration) {
    let groups: Vec<String> = find_files(run_dir, "submit.json")
        .iter()
        .map(|p| read_json(p)["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !groups.is_empty(),
        "no job submitted under {}",
        run_dir.display()
    );
    let t0 = Instant::now();
    for g in groups {
        while Command::new("kill")
            .args(["-0", "--", &format!("-{g}")])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
        {
            assert!(t0.elapsed() < limit, "job process group {g} still alive");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn recipe(d: &Path, body: &str) {
    std::fs::write(d.join("recipes/tiny_bf16_h200_vllm.sh"), body).unwrap();
}

fn result(d: &Path, run: &str, conc: u32) -> serde_json::Value {
    read_json(&d.join(format!(
        "{run}/points/{KEY}_1k1k_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-none_conc{conc}/result.json"
    )))
}

#[test]
fn engine_killed_once_mid_point_is_retried_then_stored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    catalog(d);
    // first attempt: SIGKILL the engine 2 s after it started (mid-measurement); then run clean
    recipe(
        d,
        r#"#!/usr/bin/env bash
mark="$(dirname "$0")/killed-once"
if [ ! -e "$mark" ]; then
  touch "$mark"
  ( sleep 2; kill -9 $$ ) &
fi
exec $SERVEBENCH_SIM_CMD
"#,
    );
    let (rc, out, err) = run_in(
        d,
        &[
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--simulate",
            "--conc",
            "1",
            "--no-evals",
            "--out",
            "r",
            "--db",
            "s.db",
            "--num-prompts",
            "6",
            "--warmups",
            "0",
            "--isl",
            "128",
            "--osl",
            "512",
        ],
    );
    assert_eq!(rc, 0, "{out}\n{err}");
    assert!(out.contains("engine_killed_externally"), "{out}");
    assert!(
        out.contains("transient: infrastructure retry 1/2 (no repair consumed)"),
        "{out}"
    );
    assert!(out.contains(": stored 1 row"), "{out}");
    assert!(out.contains("infrastructure retries 1"), "{out}");
    let r = result(d, "r", 1);
    assert_eq!(r["state"], "stored");
    assert_eq!(r["attempts"], 2);
    assert_eq!(r["retries"], 1);
    assert_eq!(r["retried"][0]["category"], "engine_killed_externally");
    // the failed attempt's log is kept
    let log1 = std::fs::read_to_string(d.join(format!(
        "r/points/{KEY}_1k1k_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-none_conc1/attempt-1/job.log"
    )))
    .unwrap();
    assert!(
        log1.contains("killed by signal 9 (SIGKILL) from outside"),
        "{log1}"
    );
}

#[test]
fn deterministic_failure_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    catalog(d);
    recipe(
        d,
        "#!/usr/bin/env bash\necho 'api_server.py: error: unrecognized arguments: --cuda-graph-max-bs 64' >&2\nexit 2\n",
    );
    let (rc, out, err) = run_in(
        d,
        &[
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--simulate",
            "--no-evals",
            "--out",
            "r",
            "--db",
            "s.db",
        ],
    );
    assert_eq!(rc, 1, "{out}\n{err}");
    assert_eq!(
        out.matches("deterministic: not retried").count(),
        2,
        "{out}"
    );
    assert!(out.contains("infrastructure retries 0"), "{out}");
    for c in [1, 2] {
        let r = result(d, "r", c);
        assert_eq!(r["state"], "failed");
        assert_eq!(r["attempts"], 1);
        assert_eq!(r["failure"]["deterministic"], true);
        assert!(r["failure"]["first_error"]
            .as_str()
            .unwrap()
            .contains("unrecognized arguments: --cuda-graph-max-bs"));
    }
}

#[test]
fn a_killed_run_resumes_skipping_stored_points() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    catalog(d);
    let args = [
        "run",
        KEY,
        "--catalog",
        "master.yaml",
        "--simulate",
        "--no-evals",
        "--out",
        "r",
        "--db",
        "s.db",
        "--num-prompts",
        "4",
        "--warmups",
        "0",
        "--isl",
        "128",
        "--osl",
        "256",
    ];
    let mut child = common::gsm8k_in(d)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // SIGKILL the run as soon as the first point is stored
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let t0 = Instant::now();
    loop {
        let l = lines
            .next()
            .expect("run ended before storing a point")
            .unwrap();
        if l.contains("conc 1: stored") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no point stored in 120 s"
        );
    }
    // while its process works on it: `run --status` says so and exits 75 (EX_TEMPFAIL)
    let (rc, st, err) = run_in(d, &["run", "--status", "r"]);
    assert_eq!(rc, 75, "{st}{err}");
    assert!(
        st.contains(&format!(
            "status running (servebench run pid {})",
            child.id()
        )),
        "{st}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // killed before its summary: `incomplete`, exit 1, and how to resume it
    let (rc, st, err) = run_in(d, &["run", "--status", "r"]);
    assert_eq!(rc, 1, "{st}{err}");
    assert!(
        st.contains("status incomplete: its servebench run ended without a summary.json (killed?); run the same command again to resume it"),
        "{st}"
    );
    // the job of the second point may still be running (its own process group, which the
    // killed run cannot stop): wait until every job group it submitted is gone
    wait_for_jobs_to_end(&d.join("r"), Duration::from_secs(60));
    let (rc, out, err) = run_in(d, &args);
    assert_eq!(rc, 0, "{out}\n{err}");
    assert!(out.contains("resuming run r"), "{out}");
    assert!(out.contains("conc 1: already stored, skipped"), "{out}");
    assert!(out.contains("conc 2: stored 1 row"), "{out}");
    let runs = runs_json(d, "s.db");
    assert_eq!(
        runs.as_array().unwrap().len(),
        1,
        "one store run for the whole run: {runs}"
    );
    assert_eq!(runs[0]["n_points"], 2, "{runs}");
}

/// New-user F9: a run measured at one ISL/OSL, partly killed, was resumed with other
/// `--isl`/`--osl`/`--num-prompts`: the stored point was `already stored, skipped`, the rest
/// measured under the new flags, one store run mixing both workloads, `status passed`, exit 0.
/// Now the resume is refused before anything runs, naming each differing flag with both
/// values; nothing is added to the store or the run directory. `--overwrite` starts over.
#[test]
fn a_resume_with_other_measurement_flags_is_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    catalog(d);
    let args = |isl: &str, osl: &str, n: &str| {
        [
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--simulate",
            "--no-evals",
            "--out",
            "r",
            "--db",
            "s.db",
            "--num-prompts",
            n,
            "--warmups",
            "0",
            "--isl",
            isl,
            "--osl",
            osl,
            "--sim-speedup",
            "10",
        ]
        .map(String::from)
    };
    let (rc, out, err) = run_in(d, &args("128", "32", "4"));
    assert_eq!(rc, 0, "{out}\n{err}");
    // as a run killed after its first point: conc 2 has no result
    let conc2 = d.join(format!(
        "r/points/{KEY}_1k1k_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-none_conc2"
    ));
    std::fs::remove_file(conc2.join("result.json")).unwrap();
    let run_json = std::fs::read(d.join("r/run.json")).unwrap();
    let (rc, out, err) = run_in(d, &args("64", "16", "2"));
    assert_eq!(rc, 1, "refused: {out}\n{err}");
    assert!(
        err.contains("the run there was measured with other flags (--isl 128 → 64, --num-prompts 4 → 2, --osl 32 → 16); rerun with the same flags to resume it, or start over with --overwrite, or measure into another --out"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(!out.contains("already stored"), "{out}");
    assert!(!conc2.join("attempt-2").exists(), "nothing measured");
    assert_eq!(std::fs::read(d.join("r/run.json")).unwrap(), run_json);
    let runs = runs_json(d, "s.db");
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["n_points"], 2, "nothing added to the store: {runs}");
    // a narrower --conc is named too
    let mut a = args("128", "32", "4").to_vec();
    a.extend(["--conc", "1"].map(String::from));
    let (rc, _, err) = run_in(d, &a);
    assert_eq!(rc, 1);
    assert!(err.contains("(--conc (not set) → 1)"), "{err}");
    // --overwrite starts over: a new store run with only the new workload
    a = args("64", "16", "2").to_vec();
    a.extend(["--conc", "1", "--overwrite"].map(String::from));
    let (rc, out, err) = run_in(d, &a);
    assert_eq!(rc, 0, "{out}\n{err}");
    assert!(
        out.contains("--overwrite: removed the earlier run in"),
        "{out}"
    );
    assert!(!out.contains("already stored"), "{out}");
    assert!(!conc2.exists(), "the earlier run's points are gone");
    let runs = runs_json(d, "s.db");
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    assert_eq!(runs[0]["n_points"], 1, "{runs}");
    assert_eq!(runs[0]["meta"]["workload"], "64/16", "{runs}");
}

/// New-user F3: `run --status` exited 0 for a run that itself exited 3 (invalid), and `runs`
/// showed the first point's topology for a run holding TP1 and TP2 points. `run --status` now
/// exits with the run's own code (the summary's status, every status of docs/run.md's table)
/// and `runs` lists every topology stored. F14: `run --cancel` on a finished run printed
/// nothing (exit 0); it now says there is nothing to cancel.
#[test]
fn run_status_exits_like_the_run_and_runs_lists_every_topology() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    catalog(d);
    let two = std::fs::read_to_string(d.join("master.yaml"))
        .unwrap()
        .replace(
            "- { tp: 1, conc-list: [1, 2] }",
            "- { tp: 1, conc-list: [1] }\n      - { tp: 2, conc-list: [1] }",
        );
    std::fs::write(d.join("master.yaml"), two).unwrap();
    let (rc, out, err) = run_in(
        d,
        &[
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--simulate",
            "--no-evals",
            "--out",
            "r",
            "--db",
            "s.db",
            "--num-prompts",
            "2",
            "--warmups",
            "0",
            "--isl",
            "64",
            "--osl",
            "8",
            "--sim-speedup",
            "10",
        ],
    );
    assert_eq!(rc, 0, "{out}\n{err}");
    assert!(out.contains("TP2/EP1 · conc 1: stored"), "{out}");
    let (_, runs, _) = run_in(d, &["runs", "--db", "s.db"]);
    assert!(runs.contains("TP1/EP1, TP2/EP1"), "{runs}");
    let (rc, st, err) = run_in(d, &["run", "--status", "r"]);
    assert_eq!(rc, 0, "{st}{err}");
    assert!(st.contains("status passed"), "{st}");
    // every status of the table exits as the run did
    let path = d.join("r/summary.json");
    let passed = std::fs::read_to_string(&path).unwrap();
    for (status, code) in [
        ("invalid", 3),
        ("regression", 2),
        ("eval failed", 1),
        ("failed", 1),
        ("cancelled", 130),
        ("not comparable", 0),
    ] {
        let text = passed.replace(
            "\"status\": \"passed\"",
            &format!("\"status\": \"{}\"", status.replace(' ', "-")),
        );
        assert_ne!(text, passed, "summary.json holds no status field: {passed}");
        std::fs::write(&path, text).unwrap();
        let (rc, st, _) = run_in(d, &["run", "--status", "r"]);
        assert_eq!(rc, code, "{status}: {st}");
        assert!(st.contains(&format!("status {status}")), "{st}");
    }
    std::fs::write(&path, &passed).unwrap();
    // F14: `run --cancel` on a finished run printed nothing; it says so in one line, exit 0
    let (rc, out, err) = run_in(d, &["run", "--cancel", "r"]);
    assert_eq!(rc, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        "run r already finished (status passed); nothing to cancel",
        "{err}"
    );
    // a killed run whose jobs are gone: nothing to cancel either, said
    let res = std::fs::read_dir(d.join("r/points"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("result.json"))
        .find(|p| p.is_file())
        .unwrap();
    std::fs::remove_file(res).unwrap();
    let (rc, out, err) = run_in(d, &["run", "--cancel", "r"]);
    assert_eq!(rc, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        "run r: no servebench run process and no job of it left running; nothing to cancel",
        "{err}"
    );
}

/// The scenario's catalog and runners copied into `d` (so `run` finds runners.yaml beside it).
fn scenario(d: &Path) -> std::path::PathBuf {
    let s = common::shared().join("data/scenario");
    for f in ["master.yaml", "runners.yaml"] {
        std::fs::write(d.join(f), std::fs::read(s.join(f)).unwrap()).unwrap();
    }
    s
}

const SCENARIO_KEY: &str = "qwen3.8next-fp4-b200-sglang-agentic-mtp";

/// Issue 18 item 1: the simulated GSM8K eval job scores 43.75 % on 16 documents, under the
/// 85 % gate. `run` said `status passed` and exited 0 while attempt.md said Failed; now the
/// table, the status line, `run --status`, `runs` and attempt.md all say it failed, the exit
/// code is 1, and the attempt comment carries the verdict and the bump's recipe migration
/// (`--provenance`, item 4).
#[test]
fn a_failing_eval_gate_is_never_passed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = scenario(d);
    // bump's provenance.json (the recipe flag rename) for the Change line
    std::fs::create_dir_all(d.join("recipes")).unwrap();
    for e in std::fs::read_dir(s.join("recipes")).unwrap().flatten() {
        std::fs::write(
            d.join("recipes").join(e.file_name()),
            std::fs::read(e.path()).unwrap(),
        )
        .unwrap();
    }
    let (code, out, err) = run_in(
        d,
        &[
            "bump",
            SCENARIO_KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--provenance",
            s.join("images.json").to_str().unwrap(),
            "--db",
            "s.db",
            "--provenance-out",
            "provenance.json",
        ],
    );
    assert_eq!(code, 0, "bump: {out}{err}");
    // "also seen": provenance.json was written 0600 while the rest is 0644
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(d.join("provenance.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "provenance.json mode {mode:o}");
    let (code, out, err) = run_in(
        d,
        &[
            "run",
            SCENARIO_KEY,
            "--catalog",
            "master.yaml",
            "--simulate",
            "--evals-only",
            "--eval-limit",
            "16",
            "--out",
            "r",
            "--db",
            "s.db",
            "--baseline",
            s.join("baseline.json").to_str().unwrap(),
            "--provenance",
            "provenance.json",
        ],
    );
    assert_eq!(code, 1, "an eval under its gate fails the run: {out}{err}");
    assert!(out.contains("stored · eval failed"), "{out}");
    assert!(out.contains("gsm8k 43.75 % < threshold"), "{out}");
    assert!(out.contains("status eval failed"), "{out}");
    assert!(!out.contains("status passed"), "{out}");
    let (code, st, _) = run_in(d, &["run", "--status", "r"]);
    assert_eq!(code, 1, "run --status exits as the run did: {st}");
    assert!(
        st.contains("stored · eval failed after 1 attempt(s)"),
        "{st}"
    );
    assert!(st.contains("status eval failed"), "{st}");
    let (_, runs, _) = run_in(d, &["runs", "--db", "s.db"]);
    assert!(runs.contains("eval failed"), "{runs}");
    let md = std::fs::read_to_string(d.join("r/attempt.md")).unwrap();
    assert!(md.contains("**Initial attempt · Failed**"), "{md}");
    assert!(md.contains("**Verdict:**"), "{md}");
    assert!(
        md.contains("renamed `--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode`"),
        "the bump's recipe migration reaches the Change line: {md}"
    );
}

/// Issue 18 item 2: inputs are checked before the first job. A missing --traces folder, a
/// malformed --baseline, a --change of the wrong kind and a recipes folder without the recipe
/// each stop the run with one line, and no point directory is made.
#[test]
fn inputs_are_checked_before_any_job() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = scenario(d);
    std::fs::write(d.join("bad.json"), "{\"points\": [").unwrap();
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let base = s.join("baseline.json");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--traces", "no-such-traces"], "no-such-traces"),
        (vec!["--baseline", "bad.json"], "bad.json"),
        (
            vec![
                "--baseline",
                base.to_str().unwrap(),
                "--change",
                base.to_str().unwrap(),
            ],
            "baseline.json",
        ),
        (vec!["--recipes", "empty"], "no recipe for point"),
    ];
    for (extra, needle) in cases {
        let mut a = vec![
            "run",
            SCENARIO_KEY,
            "--catalog",
            "master.yaml",
            "--simulate",
            "--out",
            "r",
            "--db",
            "s.db",
        ];
        a.extend(extra.iter());
        let (code, out, err) = run_in(d, &a);
        assert_ne!(code, 0, "{extra:?}: {out}{err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
        assert!(err.trim().lines().count() <= 2, "one clear line: {err}");
        assert!(
            !d.join("r/points").exists(),
            "{extra:?}: a job was started: {out}"
        );
    }
}

/// New-user F17: an eval job whose GSM8K files are missing was submitted and died in its job
/// (`cannot read recorded GSM8K solutions ../shared/…`, triaged `unclassified · mixed`). The
/// run now checks the files before the first job, naming the path; a `--no-evals` run does not
/// need them.
#[test]
fn eval_data_is_checked_before_any_job() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scenario(d);
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let run = |extra: &[&str]| {
        common::servebench_in(d)
            .args([
                "run",
                SCENARIO_KEY,
                "--catalog",
                "master.yaml",
                "--simulate",
                "--dry-run",
                "--out",
                "r",
                "--db",
                "s.db",
            ])
            .args(extra)
            .env_remove("SERVEBENCH_GSM8K_DIR")
            .env("SERVEBENCH_SHARED", d.join("empty"))
            .output()
            .unwrap()
    };
    let o = run(&[]);
    let err = common::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    let want = d.join("empty/data/gsm8k/test.jsonl");
    assert!(
        err.contains(&format!("{}: eval job ", want.display()))
            && err.contains("needs this GSM8K file: no such file"),
        "{err}"
    );
    assert!(err.trim().lines().count() <= 2, "one clear line: {err}");
    assert!(!d.join("r").exists(), "nothing is written");
    // without eval jobs the data is not needed
    let o = run(&["--no-evals"]);
    common::ok(&o);
}

/// Issue 18 "also seen": `--conc 32` leaving no point lists the available values; a config
/// key typo gets a suggestion and a short error, also with the real InferenceX catalog.
#[test]
fn filters_and_key_typos_say_what_is_available() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scenario(d);
    // "32,64": comma separated as for sweep (issue 27), parsed as two values
    for c in ["32", "0", "32,64"] {
        let (code, _, err) = run_in(
            d,
            &[
                "run",
                SCENARIO_KEY,
                "--catalog",
                "master.yaml",
                "--simulate",
                "--conc",
                c,
            ],
        );
        assert_ne!(code, 0);
        assert!(
            err.contains("available: --conc 1 4 8 16"),
            "--conc {c}: {err}"
        );
    }
    let inferencex = common::shared().join("data/inferencex");
    let (code, _, err) = run_in(
        d,
        &[
            "run",
            "dsr1-fp8-h200-sglangg",
            "--catalog",
            inferencex.join("nvidia-master.yaml").to_str().unwrap(),
            "--runners",
            inferencex.join("runners.yaml").to_str().unwrap(),
            "--simulate",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("Did you mean 'dsr1-fp8-h200-sglang'?"),
        "{err}"
    );
    assert!(err.len() < 1500, "short error ({} bytes): {err}", err.len());
    // catalog show finds runners.yaml beside the catalog, as run does
    let (code, out, err) = run_in(
        d,
        &["catalog", "show", SCENARIO_KEY, "--catalog", "master.yaml"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("b200-nscale-slurm_00"), "{out}");
}

/// Issue 18 item 7 (`run --simulate` had no speedup) and "also seen" (every simulated point
/// warned about an --engine mismatch a `run` user cannot act on): `--sim-speedup 10` starts
/// the simulator with `--speedup 10`, its sweep scales back to modelled time, so the point's
/// numbers agree with the real-time run's; no engine-mismatch warning either way.
#[test]
fn sim_speedup_reports_modelled_time_without_engine_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scenario(d);
    let mut got = Vec::new();
    // "virtual": no --sim-speedup, so the default clock (issue 29): the point's sweep embeds
    // its own simulator and runs on the virtual clock
    for sp in ["1", "10", "virtual"] {
        let out_dir = format!("sp{sp}");
        let speedup: &[&str] = if sp == "virtual" {
            &[]
        } else {
            &["--sim-speedup", sp]
        };
        let (code, out, err) = run_in(
            d,
            &[
                "run",
                SCENARIO_KEY,
                "--catalog",
                "master.yaml",
                "--simulate",
                "--no-evals",
                "--conc",
                "4",
                "--isl",
                "512",
                "--osl",
                "64",
                "--num-prompts",
                "16",
                "--warmups",
                "4",
                "--out",
                &out_dir,
                "--db",
                "s.db",
            ]
            .iter()
            .chain(speedup)
            .copied()
            .collect::<Vec<_>>(),
        );
        assert_eq!(code, 0, "{out}{err}");
        let att = std::fs::read_dir(d.join(&out_dir).join("points"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path()
            .join("attempt-1");
        let log = std::fs::read_to_string(att.join("job.log")).unwrap();
        let started = if sp == "virtual" { "1" } else { sp };
        assert!(log.contains(&format!("speedup ×{started}")), "{log}");
        let measure = std::fs::read_to_string(att.join("measure.log")).unwrap();
        assert!(!measure.contains("engine profile is"), "{measure}");
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(att.join("sweep/summary.json")).unwrap())
                .unwrap();
        // wall: the sweep measured the runner's `servebench sim` over TCP (no embedded one)
        assert_eq!(
            s["simulator"]["clock"] == "virtual",
            sp == "virtual",
            "{}",
            s["simulator"]
        );
        let p = &s["points"][0];
        got.push((
            p["mean_tpot"].as_f64().unwrap(),
            p["output_tput_per_gpu"].as_f64().unwrap(),
        ));
    }
    for b in &got[1..] {
        let (a, b) = (got[0], *b);
        // This checks the wiring (the speedup reaches the simulator and the sweep rescales to
        // modelled time), not the simulator's physics (crates/sim/tests/speedup.rs holds that to the
        // repeat spread). Measured: 854.6 vs 837.9 tok/s/GPU; a missing rescale would be 10× apart,
        // so a factor of 2 fails on it while a loaded 2-core CI machine's jitter at 10× does not.
        let within_2x = |x: f64, y: f64| (0.5..2.0).contains(&(x / y));
        assert!(within_2x(a.0, b.0), "TPOT {a:?} vs {b:?}");
        assert!(within_2x(a.1, b.1), "output tok/s/GPU {a:?} vs {b:?}");
    }
}

/// Issue 18 item 3 of "Why": every AgentX point was "not a valid InferenceX submission", said
/// only in its measure.log; `run`'s table, `runs` and attempt.md said nothing (status passed,
/// ok). A 3 s replay of two traces whose contexts fit the simulated model: invalid
/// (unsafe_override) in the table, the status line (exit 3), `run --status`, `runs` and the
/// attempt comment.
#[test]
fn an_invalid_agentx_point_is_said_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = scenario(d);
    let all = common::shared().join("data/agentx-traces");
    std::fs::create_dir(d.join("traces")).unwrap();
    for t in ["trace_0167.json", "trace_0504.json"] {
        std::os::unix::fs::symlink(all.join(t), d.join("traces").join(t)).unwrap();
    }
    let (code, out, err) = run_in(
        d,
        &[
            "run",
            SCENARIO_KEY,
            "--catalog",
            "master.yaml",
            "--simulate",
            "--conc",
            "1",
            "--no-evals",
            "--traces",
            "traces",
            "--duration",
            "3",
            "--out",
            "r",
            "--db",
            "s.db",
            "--baseline",
            s.join("baseline.json").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("stored · invalid"), "{out}");
    assert!(out.contains("not a valid InferenceX submission"), "{out}");
    assert!(out.contains("(unsafe_override)"), "{out}");
    assert!(out.contains("status invalid · verdict "), "{out}");
    let (code, st, _) = run_in(d, &["run", "--status", "r"]);
    assert_eq!(code, 3, "run --status exits as the run did: {st}");
    assert!(st.contains("stored · invalid after 1 attempt(s)"), "{st}");
    assert!(st.contains("status invalid"), "{st}");
    let (_, runs, _) = run_in(d, &["runs", "--db", "s.db"]);
    assert!(runs.contains("invalid"), "{runs}");
    let md = std::fs::read_to_string(d.join("r/attempt.md")).unwrap();
    assert!(md.starts_with("**Initial attempt · Failed**"), "{md}");
    assert!(md.contains("not a valid InferenceX submission"), "{md}");
    assert!(md.contains("**Verdict:**"), "{md}");
}

/// Issue 22 item 5 in `servebench run`: the attempt.md a run writes sets the simulator's
/// prediction beside each measured point, as `servebench attempt` does. A simulated
/// DeepSeek-R1 FP8 point on a `cluster:b200-…` runner (TP8, conc 4, 512/64): the store row's
/// hw is the runner label, whose GPU (`b200`) has a validated preset, so the row carries the
/// `simulator (b200 preset) predicts …` line with the measured values beside the predicted.
#[test]
fn run_attempt_md_sets_the_prediction_beside_the_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = scenario(d);
    let key = "dsr1-fp8-b200-sglang";
    std::fs::write(
        d.join("dsr1.yaml"),
        format!(
            "{key}:\n  image: lmsysorg/sglang:v0.5.12-cu130\n  model: deepseek-ai/DeepSeek-R1-0528\n  model-prefix: dsr1\n  runner: cluster:b200-nscale\n  precision: fp8\n  framework: sglang\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - {{ tp: 8, ep: 1, conc-list: [4] }}\n"
        ),
    )
    .unwrap();
    let (code, out, err) = run_in(
        d,
        &[
            "run",
            key,
            "--catalog",
            "dsr1.yaml",
            "--runners",
            "runners.yaml",
            "--simulate",
            "--no-evals",
            "--isl",
            "512",
            "--osl",
            "64",
            "--num-prompts",
            "8",
            "--warmups",
            "0",
            "--out",
            "r",
            "--db",
            "s.db",
            "--baseline",
            s.join("baseline.json").to_str().unwrap(),
        ],
    );
    // no baseline point of this identity: not comparable, exit 0
    assert_eq!(code, 0, "{out}{err}");
    let md = std::fs::read_to_string(d.join("r/attempt.md")).unwrap();
    let line = md
        .lines()
        .find(|l| l.contains("simulator (b200 preset) predicts"))
        .unwrap_or_else(|| panic!("no prediction line in attempt.md: {md}"));
    for m in ["tok/s/GPU (measured ", "median TPOT", "median TTFT"] {
        assert!(line.contains(m), "{m} missing: {line}");
    }
    assert!(line.contains("(measured "), "{line}");
}

/// Issue 32: multinode points of the REAL repository (`repo-843c6254f.tar.gz`) — both vendors,
/// fixed-seq and agentic — run under `--simulate` as simulated disaggregated fleets (prefill
/// and decode workers as separate engines, KV over NVLink on GB200/GB300, RDMA on MI355X) and
/// store rows in process_result.py's multinode shape: the prefill/decode fields, `disagg`,
/// the router and KV transfer, per-GPU throughputs over all / decode / prefill GPUs.
#[test]
fn multinode_points_run_as_simulated_fleets_and_store_the_multinode_shape() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if real_repo(d).is_none() {
        return;
    }
    let traces = common::agentx_traces(d, &["trace_0167.json", "trace_0504.json"]);
    // (key, conc, kind, fabric the fleet uses, prefill GPUs, decode GPUs)
    let cases = [
        ("dsr1-fp4-gb200-dynamo-trt", "4", "fixed", "NVLink", 4, 32),
        (
            "qwen3.5-fp8-mi355x-sglang-disagg",
            "8",
            "fixed",
            "RDMA",
            4,
            8,
        ),
        (
            "glm5.2-fp4-gb300-dynamo-sglang-agentic-disagg",
            "48",
            "agentic",
            "NVLink",
            4,
            8,
        ),
        (
            "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp",
            "1",
            "agentic",
            "RDMA",
            8,
            8,
        ),
    ];
    let db = d.join("mn.db");
    for (i, (key, conc, kind, fabric, _, _)) in cases.iter().enumerate() {
        let out = d.join(format!("out{i}"));
        let args = real_args(
            "run",
            &[key],
            &[
                "--simulate",
                "--no-evals",
                "--conc",
                conc,
                "--num-prompts",
                "8",
                "--warmups",
                "0",
                "--isl",
                "512",
                "--osl",
                "32",
                "--duration",
                "3",
                "--sim-speedup",
                "50",
                "--traces",
                traces.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ],
        );
        let (rc, so, se) = run_in(d, &args);
        // an AgentX window of 3 s is stored but is not a valid submission (exit 3)
        let want = if *kind == "agentic" { 3 } else { 0 };
        assert_eq!(rc, want, "{key}\n{so}\n{se}");
        assert!(so.contains("stored 1 row"), "{key}: {so}");
        let log = std::fs::read_to_string(&find_files(&out.join("points"), "job.log")[0]).unwrap();
        assert!(log.contains("disaggregated "), "{key}: {log}");
        assert!(log.contains(&format!("over {fabric}")), "{key}: {log}");
        // the job log's engine line names the fleet, not one engine of the point's TP
        assert!(log.contains(", fleet: prefill "), "{key}: {log}");
    }
    let runs = stored_rows(&db);
    assert_eq!(runs.len(), 4);
    for (pts, (key, conc, kind, _, pg, dg)) in runs.iter().zip(cases.iter()) {
        assert!(!pts.is_empty(), "{key}");
        let mut shapes = Vec::new();
        for row in pts {
            let v = row.to_value();
            if *kind == "fixed" {
                // (AgentX rows carry the replay's own keys beyond the schema)
                common::check_schema(&v, "agg-row.schema.json");
            }
            assert_eq!(v["is_multinode"], true, "{key}: {v}");
            assert_eq!(v["disagg"], true);
            assert_eq!(v["conc"].to_string(), *conc);
            assert!(
                v.get("tp").is_none() && v.get("prefill_tp").is_some(),
                "{key}: {v}"
            );
            assert!(v["kv_p2p_transfer"].is_string(), "{key}: {v}");
            let (p_gpus, d_gpus) = (
                v["num_prefill_gpu"].as_u64().unwrap(),
                v["num_decode_gpu"].as_u64().unwrap(),
            );
            assert_eq!(v["num_gpus"].as_u64(), Some(p_gpus + d_gpus));
            shapes.push((p_gpus, d_gpus));
            // process_result.py's multinode denominators
            let (total, output) = (row.total_token_throughput, row.output_throughput);
            assert!(output > 0.0, "{key}");
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(
                close(row.tput_per_gpu, total / (p_gpus + d_gpus) as f64),
                "{key}"
            );
            assert!(
                close(row.output_tput_per_gpu, output / d_gpus as f64),
                "{key}"
            );
            assert!(
                close(row.input_tput_per_gpu, (total - output) / p_gpus as f64),
                "{key}"
            );
            assert_eq!(
                v["benchmark_type"],
                if *kind == "agentic" {
                    "agentic_traces"
                } else {
                    "single_turn"
                }
            );
            assert!(row.ttft.median.unwrap() > 0.0);
        }
        assert!(shapes.contains(&(*pg, *dg)), "{key}: {shapes:?}");
    }
}
