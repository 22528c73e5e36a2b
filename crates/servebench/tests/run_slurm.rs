//! `servebench run --executor slurm --simulate` on the real one-node Slurm cluster
//! (scripts/services/slurm.sh): the scenario of PRODUCT.md end to end — bump → one Slurm job
//! per point of the config (4 throughput points + the GSM8K eval job) → rows stored →
//! compared with the frozen baseline → attempt comment — and the same with a launcher recipe
//! that fails the way the scenario's logs do (MODEL_PATH not set, exit 1): triaged
//! `readiness-blocked`, deterministic, no retry spent.
//!
//! Skipped when Slurm is absent, unless SERVEBENCH_REQUIRE_SERVICES=1 (then it fails).

use std::path::Path;
use std::process::Command;

use crate::common;
use common::runs::{runs_json, slurm_up};
use common::{copy_rw, run_in, BIN, SCENARIO as SCEN};

const CHANGELOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex/perf-changelog.yaml"
);
const KEY: &str = "qwen3.8next-fp4-b200-sglang-agentic-mtp";
const RECIPE: &str = "qwen3.8next_fp4_b200_sglang_mtp.sh";

/// A temp dir with copies of the scenario's catalog, runners, recipe and change log.
fn scenario_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("recipes")).unwrap();
    copy_rw(&format!("{SCEN}/master.yaml"), &d.join("master.yaml"));
    copy_rw(&format!("{SCEN}/runners.yaml"), &d.join("runners.yaml"));
    copy_rw(
        &format!("{SCEN}/recipes/{RECIPE}"),
        &d.join("recipes").join(RECIPE),
    );
    copy_rw(CHANGELOG, &d.join("perf-changelog.yaml"));
    dir
}

#[test]
fn scenario_end_to_end_on_slurm_with_simulated_engines() {
    if !slurm_up() {
        return;
    }
    let dir = scenario_copy();
    let d = dir.path();
    let images = format!("{SCEN}/images.json");
    let (rc, _, err) = run_in(
        d,
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--changelog",
            "perf-changelog.yaml",
            "--provenance",
            &images,
        ],
    );
    assert_eq!(rc, 0, "bump: {err}");
    let baseline = format!("{SCEN}/baseline.json");
    let args = [
        "run",
        KEY,
        "--catalog",
        "master.yaml",
        "--executor",
        "slurm",
        "--simulate",
        "--out",
        "run1",
        "--db",
        "s.db",
        "--num-prompts",
        "2",
        "--warmups",
        "0",
        "--isl",
        "128",
        "--osl",
        "16",
        "--eval-limit",
        "8",
        "--baseline",
        &baseline,
        "--change",
        &images,
    ];
    // the plan first: every point, its GPUs, the job script
    let (rc, plan, err) = run_in(d, &[&args[..], &["--dry-run"]].concat());
    assert_eq!(rc, 0, "{err}");
    assert_eq!(plan.matches("#SBATCH --gpus=1").count(), 5, "{plan}");
    assert!(plan.contains("eval: yes (gsm8k, eval-only job)"), "{plan}");
    // no --traces: the agentic points' stand-in is said once
    assert_eq!(
        plan.matches("agentic point: fixed-sequence stand-in at 128/16 (no --traces")
            .count(),
        1,
        "{plan}"
    );
    assert!(
        plan.contains("servebench sim --gpu b200 --model qwen3-8b --tp 1"),
        "{plan}"
    );
    assert!(
        plan.contains("image lmsysorg/sglang:v0.5.20-cu130")
            || plan.contains("lmsysorg/sglang:v0.5.20-cu130"),
        "{plan}"
    );
    assert!(
        !d.join("run1/run.json").exists(),
        "--dry-run must not start anything"
    );

    let (rc, out, err) = run_in(d, &args);
    // the 8-document GSM8K score is under its threshold: the run is not passed (issue 18: it
    // said `status passed` and exited 0 while attempt.md said Failed)
    assert_eq!(rc, 1, "run:\n{out}\n{err}");
    assert!(
        out.contains("status eval failed · verdict regression"),
        "{out}"
    );
    assert!(out.contains("stored · eval failed"), "{out}");
    // one Slurm job per point, each stored
    assert_eq!(out.matches("started (slurm job").count(), 5, "{out}");
    assert_eq!(out.matches(": stored 1 row").count(), 5, "{out}");
    for c in ["conc1", "conc4", "conc8", "conc16"] {
        let log = d.join(format!("run1/points/{KEY}_agentic_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-mtp_{c}/attempt-1/job.log"));
        let text =
            std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        assert!(text.contains("Runner name: 'b200-nscale-slurm_0"), "{text}");
        assert!(
            text.contains("GPUs: CUDA_VISIBLE_DEVICES="),
            "Slurm gave the job a GPU: {text}"
        );
        assert!(
            text.contains("engine process group") && text.contains("torn down"),
            "{text}"
        );
    }
    // stored: 4 points + 1 eval row in one run, marked simulated
    let runs = runs_json(d, "s.db");
    let run = &runs[0];
    assert_eq!(run["n_points"], 4, "{run}");
    assert_eq!(run["n_evals"], 1, "{run}");
    assert_eq!(run["status"], "ok", "{run}");
    assert!(
        run["meta"]["endpoint"]
            .as_str()
            .unwrap()
            .starts_with("embedded simulator: simulated 1× B200"),
        "{run}"
    );
    assert_eq!(run["meta"]["image"], "lmsysorg/sglang:v0.5.20-cu130");
    // compared with the baseline, in the attempt comment
    let md = std::fs::read_to_string(d.join("run1/attempt.md")).unwrap();
    assert!(md.starts_with("**Initial attempt · Failed**"), "{md}");
    assert!(md.contains("**Verdict:** Regression"), "{md}");
    assert!(md.contains("simulated"), "{md}");
    assert!(md.contains("gsm8k"), "{md}");
    for c in ["c1", "c4", "c8", "c16"] {
        let row = format!("| 128/16 · TP1/EP1 · {c} (candidate only) |");
        assert!(md.contains(&row), "row {row} missing:\n{md}");
    }
    // the eval job's score (8 documents), matched with the baseline's (1,319) although the run
    // stores the runner label `cluster:b200-nscale` and the baseline the config key's `b200`
    assert!(md.contains("| 1,319/8 (old/new) |"), "{md}");
    // status of the run: every job, its state, its log
    let (rc, st, err) = run_in(d, &["run", "--status", "run1"]);
    assert_eq!(
        rc, 1,
        "run --status exits as the run did (eval failed): {st}{err}"
    );
    assert_eq!(st.matches("stored after 1 attempt(s)").count(), 4, "{st}");
    assert_eq!(
        st.matches("stored · eval failed after 1 attempt(s)")
            .count(),
        1,
        "{st}"
    );
    assert!(
        st.contains("status eval failed · verdict regression"),
        "{st}"
    );
    assert_eq!(st.matches("slurm ").count(), 5, "{st}");
    // a second invocation resumes: nothing left to run, the same status
    let (rc, out, err) = run_in(d, &args);
    assert_eq!(rc, 1, "{out}\n{err}");
    assert!(out.contains("status eval failed"), "{out}");
    assert_eq!(out.matches("already stored, skipped").count(), 5, "{out}");
    assert_eq!(out.matches("started (slurm job").count(), 0, "{out}");
}

#[test]
fn launcher_without_model_path_is_readiness_blocked_and_not_retried() {
    if !slurm_up() {
        return;
    }
    let dir = scenario_copy();
    let d = dir.path();
    // a launcher-shaped recipe that fails like the scenario's logs/agentic-c1.log
    std::fs::write(
        d.join("recipes").join(RECIPE),
        r#"#!/usr/bin/env bash
echo "Run bash ./runners/launch_b200-nscale-slurm.sh"
echo "+ RUNNER_NAME=$RUNNER_NAME"
echo "+ IMAGE=$IMAGE"
echo "+ check_env_vars MODEL_PATH"
if [ -z "${MODEL_PATH:-}" ]; then
  echo "Error: The following required environment variables are not set:"
  echo "  - MODEL_PATH"
  echo "+ exit 1"
  exit 1
fi
exec $SERVEBENCH_SIM_CMD
"#,
    )
    .unwrap();
    let baseline = format!("{SCEN}/baseline.json");
    let images = format!("{SCEN}/images.json");
    let (rc, out, err) = run_in(
        d,
        &[
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--executor",
            "slurm",
            "--simulate",
            "--recipes",
            "recipes",
            "--out",
            "run2",
            "--db",
            "s.db",
            "--baseline",
            &baseline,
            "--change",
            &images,
        ],
    );
    assert_eq!(rc, 1, "{out}\n{err}");
    assert_eq!(out.matches("started (slurm job").count(), 5, "{out}");
    assert_eq!(
        out.matches("deterministic: not retried").count(),
        5,
        "{out}"
    );
    assert!(
        !out.contains("infrastructure retry 1"),
        "no retry spent: {out}"
    );
    assert!(out.contains("outcome readiness-blocked"), "{out}");
    assert!(out.contains("infrastructure retries 0"), "{out}");
    assert!(out.contains("store run: none"), "{out}");
    // every point has exactly one attempt, its log kept
    for e in std::fs::read_dir(d.join("run2/points")).unwrap() {
        let p = e.unwrap().path();
        assert!(p.join("attempt-1/job.log").is_file());
        assert!(!p.join("attempt-2").exists(), "{} was retried", p.display());
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("result.json")).unwrap()).unwrap();
        assert_eq!(r["state"], "failed");
        assert_eq!(r["failure"]["category"], "missing_env_var");
        assert_eq!(r["failure"]["layer"], "launcher");
        assert_eq!(r["failure"]["outcome"], "readiness-blocked");
        assert_eq!(r["failure"]["deterministic"], true);
    }
    // the attempt comment from the logs of what ran
    let md = std::fs::read_to_string(d.join("run2/attempt.md")).unwrap();
    assert!(md.starts_with("**Initial attempt · Failed**"), "{md}");
    assert!(md.contains("MODEL_PATH"), "{md}");
    assert!(md.contains("readiness-blocked"), "{md}");
    assert!(md.contains("<details>"), "{md}");
}

#[test]
fn ctrl_c_cancels_the_slurm_job_and_its_engine() {
    if !slurm_up() {
        return;
    }
    let dir = scenario_copy();
    let d = dir.path();
    let mut child = common::servebench_in(d)
        .args([
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--executor",
            "slurm",
            "--simulate",
            "--conc",
            "1",
            "--no-evals",
            "--out",
            "run3",
            "--db",
            "s.db",
            "--num-prompts",
            "200",
            "--warmups",
            "0",
            "--isl",
            "128",
            "--osl",
            "1024",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut s = String::new();
        let _ = std::io::BufReader::new(stdout).read_to_string(&mut s);
        s
    });
    let attempt = d.join(format!(
        "run3/points/{KEY}_agentic_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-mtp_conc1/attempt-1"
    ));
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(attempt.join("job.log")).is_ok_and(|t| t.contains("measuring:"))
    {
        assert!(
            t0.elapsed().as_secs() < 60,
            "the Slurm job never started measuring"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let handle: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(attempt.join("submit.json")).unwrap())
            .unwrap();
    let job = handle["id"].as_str().unwrap().to_string();
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let t1 = std::time::Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        assert!(
            t1.elapsed().as_secs() < 60,
            "servebench run did not stop after SIGINT"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let out = reader.join().unwrap();
    assert_eq!(code, Some(130), "{out}");
    // Slurm ended the job (scancel), and no process of the engine's group is left
    let sc = Command::new("scontrol")
        .args(["-o", "show", "job", &job])
        .output()
        .unwrap();
    let sc = String::from_utf8_lossy(&sc.stdout);
    assert!(sc.contains("JobState=CANCELLED"), "job {job}: {sc}");
    let pgid = std::fs::read_to_string(attempt.join("engine.pgid")).unwrap();
    let alive = Command::new("kill")
        .args(["-0", "--", &format!("-{}", pgid.trim())])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(
        !alive.success(),
        "engine process group {pgid} is still alive"
    );
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(attempt.parent().unwrap().join("result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r["state"], "interrupted");
}

/// `--traces` / `--duration`: the agentic points are AgentX trace replays (`sweep --scenario
/// agentx`), stored as `agentic_traces` rows, and the attempt comment matches them with the
/// scenario's AgentX baseline (real deltas, not "no matched baseline").
#[test]
fn agentic_points_replay_traces_and_match_the_agentx_baseline() {
    if !slurm_up() {
        return;
    }
    let dir = scenario_copy();
    let d = dir.path();
    // a subset of the shared traces whose contexts fit the simulated model (Qwen3-8B, 40,960
    // tokens); the others reach 714k tokens and would be rejected by the engine
    let all = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/agentx-traces"
    );
    std::fs::create_dir(d.join("traces")).unwrap();
    for t in ["trace_0167.json", "trace_0504.json"] {
        std::os::unix::fs::symlink(format!("{all}/{t}"), d.join("traces").join(t)).unwrap();
    }
    // the frozen baseline as shipped: its hw comes from the config key (`b200`) while the runner
    // stores InferenceX's RUNNER_TYPE (`cluster:b200-nscale`); compare matches them by SKU
    std::fs::copy(format!("{SCEN}/baseline.json"), d.join("baseline.json")).unwrap();
    let images = format!("{SCEN}/images.json");
    let (rc, _, err) = run_in(
        d,
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--changelog",
            "perf-changelog.yaml",
            "--provenance",
            &images,
        ],
    );
    assert_eq!(rc, 0, "bump: {err}");
    let args = [
        "run",
        KEY,
        "--catalog",
        "master.yaml",
        "--executor",
        "slurm",
        "--simulate",
        "--conc",
        "1",
        "4",
        "--no-evals",
        "--traces",
        "traces",
        "--duration",
        "3",
        "--out",
        "run4",
        "--db",
        "s.db",
        "--baseline",
        "baseline.json",
        "--change",
        &images,
    ];
    let (rc, plan, err) = run_in(d, &[&args[..], &["--dry-run"]].concat());
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        plan.matches("agentic point: AgentX trace replay of ")
            .count(),
        1,
        "{plan}"
    );
    assert_eq!(
        plan.matches("--scenario agentx --traces ").count(),
        2,
        "{plan}"
    );
    assert_eq!(plan.matches("--duration 3 ").count(), 2, "{plan}");
    assert!(!plan.contains("stand-in"), "{plan}");

    let (rc, out, err) = run_in(d, &args);
    // a 3 s window is not a valid InferenceX submission (unsafe_override): the run says so,
    // with compare's exit code for an invalid candidate (issue 18: it was `status passed`)
    assert_eq!(rc, 3, "run:\n{out}\n{err}");
    assert!(out.contains("status invalid · verdict "), "{out}");
    assert!(out.contains("unsafe_override"), "{out}");
    assert!(out.contains("AgentX trace replay of "), "{out}");
    assert_eq!(out.matches(": stored 1 row").count(), 2, "{out}");
    // two rows stored, each an AgentX row (the point's sweep summary is what was stored)
    let runs = runs_json(d, "s.db");
    assert_eq!(runs[0]["n_points"], 2, "{}", runs[0]);
    for c in ["conc1", "conc4"] {
        let f = d.join(format!(
            "run4/points/{KEY}_agentic_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-mtp_{c}/attempt-1/sweep/summary.json"
        ));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let row = &v["points"][0];
        assert_eq!(row["benchmark_type"], "agentic_traces", "{row}");
        assert_eq!(row["scenario_type"], "agentic-coding", "{row}");
        assert!(
            row["num_requests_successful"].as_u64().unwrap() > 0,
            "{row}"
        );
    }
    // matched with the AgentX baseline (c1 and c4 rows, no "candidate only"), but invalid:
    // the comment says why, and its status and verdict agree with `run --status` and compare
    let md = std::fs::read_to_string(d.join("run4/attempt.md")).unwrap();
    assert!(!md.contains("no matched baseline"), "{md}");
    assert!(!md.contains("(candidate only)"), "{md}");
    for c in ["c1", "c4"] {
        assert!(
            md.lines().any(|l| l.starts_with(&format!("| {c} |"))),
            "row {c} missing:\n{md}"
        );
    }
    assert!(md.contains("| c16 (baseline only) |"), "{md}");
    assert!(md.starts_with("**Initial attempt · Failed**"), "{md}");
    assert!(md.contains("not a valid InferenceX submission"), "{md}");
    let (rc, st, _) = run_in(d, &["run", "--status", "run4"]);
    assert_eq!(rc, 3, "run --status exits as the run did (invalid): {st}");
    assert_eq!(
        st.matches("stored · invalid after 1 attempt(s)").count(),
        2,
        "{st}"
    );
    // compare's verdict is the one the run, `run --status` and attempt.md say
    let store_run = runs[0]["id"].to_string();
    let (code, cmp, err) = run_in(
        d,
        &[
            "compare",
            "--baseline",
            "baseline.json",
            "--candidate",
            &store_run,
            "--db",
            "s.db",
        ],
    );
    assert!(code == 2 || code == 3, "{cmp}{err}");
    let verdict = cmp
        .lines()
        .find_map(|l| l.strip_prefix("Verdict: "))
        .and_then(|l| l.split(',').next())
        .unwrap_or_else(|| panic!("no verdict line: {cmp}"))
        .replace('_', " ");
    for text in [&out, &st] {
        assert!(
            text.contains(&format!("status invalid · verdict {verdict} ·")),
            "{verdict}: {text}"
        );
    }
    assert!(
        md.to_lowercase()
            .contains(&format!("**verdict:** {verdict},")),
        "{verdict}: {md}"
    );
}

/// Issue 18 "also seen": docs/run.md's worked example failed as written (a relative `$S`, then
/// `cd demo`). The bash block is run here exactly as the docs show it, from a folder whose
/// `../shared` is the shared data, with this servebench first on PATH; it ends as documented:
/// the 8-document eval under its gate, `exit 1`, and an attempt comment with the recipe
/// migration from `--provenance provenance.json`.
#[test]
fn docs_worked_example_runs_as_written() {
    if !slurm_up() {
        return;
    }
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/run.md")).unwrap();
    let from = docs
        .find("## Worked example")
        .expect("worked example section");
    let block = docs[from..]
        .split("```bash\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("the worked example's bash block");
    let dir = tempfile::tempdir().unwrap();
    let shared = std::fs::canonicalize(common::shared()).unwrap();
    std::os::unix::fs::symlink(&shared, dir.path().join("shared")).unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(block)
        .current_dir(&cwd)
        .env(
            "PATH",
            format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
        )
        .env_remove("SERVEBENCH_DB")
        // as a new user has it (F17): the data comes from `shared/` beside the checkout
        .env_remove("SERVEBENCH_SHARED")
        .env_remove("SERVEBENCH_GSM8K_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the block itself failed: {text}\n{err}"
    );
    assert!(
        text.contains("status eval failed · verdict regression"),
        "{text}\n{err}"
    );
    assert!(text.trim_end().ends_with("exit 1"), "{text}\n{err}");
    let md = std::fs::read_to_string(cwd.join("demo/run1/attempt.md")).unwrap();
    assert!(md.starts_with("**Initial attempt · Failed**"), "{md}");
    assert!(
        md.contains("renamed `--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode`"),
        "{md}"
    );
}
