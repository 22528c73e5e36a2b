//! `servebench eval gsm8k` end to end: the embedded simulator (replay), the printed summary,
//! the result files, the threshold gate's exit codes, one-line errors, the default data path,
//! and a run against the real engine (llama.cpp, `SERVEBENCH_REAL_ENGINE_URL`).

use crate::common;
use common::{output_scratch, scratch_in, GSM8K};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn eval_args<'a>(out: &'a str, data: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "eval",
        "gsm8k",
        "--sim-zero-delay",
        "--no-progress",
        "--out",
        out,
        "--gsm8k-dir",
        data,
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn simulator_replay_prints_scores_writes_files_and_fails_the_default_gate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let (o, d) = (out.to_str().unwrap(), PathBuf::from(GSM8K));
    let r = output_scratch(&eval_args(
        o,
        d.to_str().unwrap(),
        &["--limit", "40", "--conc", "8"],
    ));
    let stdout = common::stdout(&r);
    assert_eq!(
        r.status.code(),
        Some(2),
        "stdout {stdout}\nstderr {}",
        common::stderr(&r)
    );
    assert!(
        stdout.contains("replays the recorded solutions of the 175b_verification model"),
        "{stdout}"
    );
    assert!(stdout.contains("n_eff       40\n"), "{stdout}");
    assert!(
        stdout.contains("threshold   85.00 % (default 0.85): FAIL"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("em_strict   ") && l.contains(" ± ")),
        "{stdout}"
    );

    let res: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let keys: Vec<&str> = res["row"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "is_multinode",
            "model_prefix",
            "model",
            "hw",
            "framework",
            "precision",
            "spec_decoding",
            "isl",
            "osl",
            "tp",
            "ep",
            "prefill_tp",
            "prefill_ep",
            "prefill_num_workers",
            "decode_tp",
            "decode_ep",
            "decode_num_workers",
            "conc",
            "dp_attention",
            "prefill_dp_attention",
            "decode_dp_attention",
            "task",
            "em_strict",
            "em_strict_se",
            "em_flexible",
            "em_flexible_se",
            "n_eff",
            "source",
            "score",
            "score_name",
            "score_se"
        ]
    );
    assert_eq!(res["row"]["n_eff"], 40);
    assert_eq!(res["row"]["conc"], 8);
    assert_eq!(res["row"]["score_name"], "em_strict");
    assert_eq!(res["row"]["score"], res["row"]["em_strict"]);
    assert_eq!(
        res["results"]["gsm8k"]["exact_match,strict-match"],
        res["row"]["em_strict"]
    );
    assert_eq!(res["n-samples"]["gsm8k"]["effective"], 40);
    let samples = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    assert_eq!(samples.lines().count(), 40);
    let s: Value = serde_json::from_str(samples.lines().next().unwrap()).unwrap();
    for k in [
        "doc_id", "messages", "response", "text", "strict", "flexible", "target",
    ] {
        assert!(s.get(k).is_some(), "sample lacks {k}");
    }
    assert_eq!(s["messages"].as_array().unwrap().len(), 11);
}

/// Issue 27: the simulated success path. `--sim-gsm8k-accuracy 0.9` scores 0.9 exactly on the
/// first 100 questions (⌊100·0.9⌋ = 90 reference solutions, 10 recorded wrong ones), passes the
/// 0.85 gate, and says SIMULATED in the summary, `result.json` and the stored row
/// (`simulated_accuracy`); without it the replay of the recorded model stays what it was (the
/// test above: 175b_verification, FAIL, no `simulated_accuracy` key).
#[test]
fn a_chosen_simulated_accuracy_passes_the_gate_and_says_simulated() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let db = dir.path().join("e.db");
    let (o, d) = (out.to_str().unwrap(), PathBuf::from(GSM8K));
    let r = output_scratch(
        &[
            eval_args(o, d.to_str().unwrap(), &["--limit", "100", "--conc", "16"]),
            vec!["--sim-gsm8k-accuracy", "0.9", "--db", db.to_str().unwrap()],
        ]
        .concat(),
    );
    let stdout = common::stdout(&r);
    assert_eq!(r.status.code(), Some(0), "{stdout}\n{}", common::stderr(&r));
    assert!(stdout.contains("em_strict   90.00 %"), "{stdout}");
    assert!(stdout.contains("em_flexible 90.00 %"), "{stdout}");
    assert!(stdout.contains("SIMULATED accuracy 0.9"), "{stdout}");
    assert!(stdout.contains(": PASS"), "{stdout}");
    let res: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(res["row"]["em_strict"], 0.9);
    assert_eq!(res["row"]["simulated_accuracy"], 0.9);
    assert!(res["servebench"]["replay_note"]
        .as_str()
        .unwrap()
        .contains("SIMULATED"));
    let st = servebench_store::Store::open(&db).unwrap();
    let run = st.latest_run(None).unwrap().unwrap();
    let evals = st.evals(run.id).unwrap();
    let servebench_store::StoredRow::Servebench(row) = &evals[0].row else {
        panic!("a servebench row")
    };
    assert_eq!(row.extra["simulated_accuracy"], 0.9);
    // with an endpoint it means nothing: refused in one line
    let r = output_scratch(
        &[
            eval_args(
                o,
                d.to_str().unwrap(),
                &["--endpoint", "http://127.0.0.1:9"],
            ),
            vec!["--sim-gsm8k-accuracy", "0.9"],
        ]
        .concat(),
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(common::stderr(&r).contains("--sim-gsm8k-accuracy is for the embedded simulator"));
}

#[test]
fn gate_exit_codes_and_threshold_sources() {
    let dir = tempfile::tempdir().unwrap();
    let d = PathBuf::from(GSM8K);
    let d = d.to_str().unwrap();
    let o1 = dir.path().join("a");
    let r = output_scratch(&eval_args(
        o1.to_str().unwrap(),
        d,
        &["--limit", "10", "--threshold", "0"],
    ));
    assert_eq!(r.status.code(), Some(0), "{}", common::stdout(&r));
    assert!(common::stdout(&r).contains("threshold   0.00 % (--threshold): PASS"));

    let th = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/inferencex/thresholds.yaml"
    );
    let o2 = dir.path().join("b");
    let r = output_scratch(&eval_args(
        o2.to_str().unwrap(),
        d,
        &[
            "--limit",
            "10",
            "--thresholds",
            th,
            "--model-prefix",
            "qwen3.5",
            "--threshold",
            "0",
        ],
    ));
    assert_eq!(r.status.code(), Some(2));
    assert!(
        common::stdout(&r)
            .contains("threshold   94.00 % (thresholds.yaml models.qwen3.5.gsm8k): FAIL"),
        "{}",
        common::stdout(&r)
    );
    let res: Value =
        serde_json::from_str(&std::fs::read_to_string(o2.join("result.json")).unwrap()).unwrap();
    assert_eq!(res["row"]["model_prefix"], "qwen3.5");
    assert_eq!(res["gate"]["threshold"]["value"], 0.94);
}

#[test]
fn lm_eval_profile_sends_the_upstream_prompt_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let d = PathBuf::from(GSM8K);
    let r = output_scratch(&eval_args(
        o.to_str().unwrap(),
        d.to_str().unwrap(),
        &["--limit", "3", "--profile", "lm-eval"],
    ));
    assert_eq!(r.status.code(), Some(2), "{}", common::stderr(&r));
    let s: Value = serde_json::from_str(
        std::fs::read_to_string(o.join("samples.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        s["request"]["stop"],
        serde_json::json!(["Question:", "</s>", "<|im_end|>"])
    );
    assert_eq!(s["request"]["max_tokens"], 256);
    assert!(s["messages"][10]["content"]
        .as_str()
        .unwrap()
        .ends_with("\nAnswer:"));
    assert!(!s["messages"][10]["content"]
        .as_str()
        .unwrap()
        .contains("####"));
}

#[test]
fn bad_input_is_one_line_naming_the_thing() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let o = o.to_str().unwrap();
    let d = PathBuf::from(GSM8K);
    let d = d.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (eval_args(o, "/nonexistent/gsm8k", &[]), "error: cannot read GSM8K file /nonexistent/gsm8k/test.jsonl"),
        (eval_args(o, d, &["--sim-answers", "gpt5"]), "error: unknown --sim-answers model \"gpt5\" (recorded models: 6b_finetuning, 6b_verification, 175b_finetuning, 175b_verification)"),
        (eval_args(o, d, &["--limit", "2", "--thresholds", "/nonexistent/t.yaml"]), "error: cannot read thresholds file /nonexistent/t.yaml"),
        (eval_args(o, d, &["--threshold", "1.5"]), "error: --threshold 1.5 is outside [0, 1]"),
        (eval_args(o, d, &["--endpoint", "not a url"]), "error: --endpoint \"not a url\" is not a URL"),
    ];
    for (args, want) in cases {
        let r = output_scratch(&args);
        let err = common::stderr(&r);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {err}");
        let last = err.lines().last().unwrap_or("");
        assert!(last.starts_with(want), "{args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error:")).count(),
            1,
            "{err}"
        );
    }
}

/// The default data folder: `../shared` from the checkout root, and (new-user F17) from any
/// other directory the `shared/` beside the checkout the binary was built in, with
/// `SERVEBENCH_SHARED` unset (it was `../shared` of the working directory only).
#[test]
fn default_data_folder_is_shared_beside_the_repo() {
    let dir = tempfile::tempdir().unwrap();
    // a working directory whose ../shared does not exist (unlike /tmp/shared, which may)
    let elsewhere = dir.path().join("work");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for (i, cwd) in [Path::new(repo), elsewhere.as_path()]
        .into_iter()
        .enumerate()
    {
        let o = dir.path().join(format!("o{i}"));
        let r = scratch_in(cwd)
            .args([
                "eval",
                "gsm8k",
                "--sim-zero-delay",
                "--no-progress",
                "--limit",
                "2",
                "--threshold",
                "0",
                "--out",
            ])
            .arg(&o)
            .env_remove("SERVEBENCH_GSM8K_DIR")
            .env_remove("SERVEBENCH_SHARED")
            .output()
            .unwrap();
        assert_eq!(
            r.status.code(),
            Some(0),
            "from {}: {}",
            cwd.display(),
            common::stderr(&r)
        );
        let res: Value =
            serde_json::from_str(&std::fs::read_to_string(o.join("result.json")).unwrap()).unwrap();
        assert_eq!(res["row"]["n_eff"], 2, "{res}");
    }
}

#[test]
fn real_engine_llama_cpp() {
    let Ok(url) = std::env::var("SERVEBENCH_REAL_ENGINE_URL") else {
        servebench_testkit::skip_or_fail(
            "SERVEBENCH_REAL_ENGINE_URL not set (scripts/services/real-engine.sh)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let d = PathBuf::from(GSM8K);
    let r = output_scratch(&[
        "eval",
        "gsm8k",
        "--endpoint",
        &url,
        "--limit",
        "4",
        "--conc",
        "2",
        "--max-tokens",
        "16",
        "--no-progress",
        "--out",
        o.to_str().unwrap(),
        "--gsm8k-dir",
        d.to_str().unwrap(),
    ]);
    assert!(
        matches!(r.status.code(), Some(0 | 2)),
        "{}",
        common::stderr(&r)
    );
    let res: Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("result.json")).unwrap()).unwrap();
    assert_eq!(res["row"]["n_eff"], 4);
    assert_eq!(
        res["row"]["model"], "tiny-chatml",
        "model discovered from /v1/models"
    );
    for line in std::fs::read_to_string(o.join("samples.jsonl"))
        .unwrap()
        .lines()
    {
        let s: Value = serde_json::from_str(line).unwrap();
        assert_eq!(s["response"]["object"], "chat.completion");
        assert!(
            s["response"]["usage"]["completion_tokens"]
                .as_u64()
                .unwrap()
                <= 16
        );
        assert!(s["strict"]["extracted"].is_string());
    }
}

/// A `servebench sim` child on a free port (a remote endpoint to the commands under test),
/// killed on drop.
struct RemoteSim(std::process::Child, u16);

impl Drop for RemoteSim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn remote_sim() -> RemoteSim {
    use std::net::{TcpListener, TcpStream};
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(common::BIN)
        .args(["sim", "--zero-delay", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sim = RemoteSim(child, port);
    let t0 = std::time::Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed().as_secs() < 30, "servebench sim not listening");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sim
}

/// F7 of the 2026-12-02 review: against the same remote endpoint, `servebench eval` alone and
/// `servebench sweep --eval` store eval rows with equal compare identities (both default the
/// framework to the engine profile, here `sglang`; before, the standalone row said `unknown`).
#[test]
fn eval_alone_and_sweep_eval_store_equal_identities_against_one_endpoint() {
    let sim = remote_sim();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let common = [
        "--endpoint",
        url.as_str(),
        "--engine",
        "sglang",
        "--db",
        db_s,
    ];
    // the simulator's answers are not GSM8K solutions: the gate fails (exit 2), the row is stored
    let o = scratch_in(dir.path())
        .args([
            "eval",
            "gsm8k",
            "--no-progress",
            "--limit",
            "2",
            "--conc",
            "2",
        ])
        .args(["--gsm8k-dir", GSM8K, "--out", "e"])
        .args(common)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = scratch_in(dir.path())
        .args([
            "sweep",
            "--conc",
            "1",
            "--num-prompts",
            "2",
            "--isl",
            "64",
            "--osl",
            "8",
        ])
        .args([
            "--eval",
            "gsm8k",
            "--eval-limit",
            "2",
            "--eval-conc",
            "2",
            "--out",
            "s",
        ])
        .args(common)
        .env("SERVEBENCH_GSM8K_DIR", GSM8K)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let st = servebench_store::Store::open(&db).unwrap();
    let mut keys = Vec::new();
    for run in st.list_runs(None, None).unwrap() {
        for e in st.evals(run.id).unwrap() {
            let servebench_store::StoredRow::Servebench(row) = &e.row else {
                panic!("run {}: not a servebench eval row", run.id)
            };
            assert_eq!(row.framework.as_deref(), Some("sglang"), "run {}", run.id);
            keys.push(
                servebench_compare::PointKey::from_eval(row)
                    .unwrap()
                    .eval_key(),
            );
        }
    }
    assert_eq!(keys.len(), 2, "one eval row per command: {keys:?}");
    assert_eq!(keys[0], keys[1]);
}

/// Issue 33: against the REAL engine (llama.cpp of `scripts/services/real-engine.sh`),
/// `servebench eval gsm8k` alone and `servebench sweep --eval gsm8k` store eval rows with equal
/// identities, field for field (before, the standalone row stored `spec_decoding` null, EP
/// and DP-attention null, where the sweep's stored `none`, 1 and false). Only the point lengths
/// differ: a sweep's eval row carries its points' ISL/OSL, a standalone eval has no point;
/// and the image (a sweep's identity defaults it to `unknown`, a standalone eval stores only an
/// `--image` given).
#[test]
fn eval_alone_and_sweep_eval_store_equal_identities_against_the_real_engine() {
    let Some((url, model_dir)) = common::real_engine() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let common = [
        "--endpoint",
        url.as_str(),
        "--engine",
        "llama.cpp",
        "--db",
        db_s,
    ];
    let o = scratch_in(dir.path())
        .args([
            "eval",
            "gsm8k",
            "--no-progress",
            "--limit",
            "2",
            "--conc",
            "2",
        ])
        .args(["--max-tokens", "16", "--gsm8k-dir", GSM8K, "--out", "e"])
        .args(common)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 2)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = scratch_in(dir.path())
        .args([
            "sweep",
            "--conc",
            "1",
            "--num-prompts",
            "2",
            "--isl",
            "64",
            "--osl",
            "8",
        ])
        .arg("--tokenizer")
        .arg(model_dir.join("tokenizer.json"))
        .args([
            "--eval",
            "gsm8k",
            "--eval-limit",
            "2",
            "--eval-conc",
            "2",
            "--out",
            "s",
        ])
        .args(common)
        .env("SERVEBENCH_GSM8K_DIR", GSM8K)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 2)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let st = servebench_store::Store::open(&db).unwrap();
    let mut ids = Vec::new();
    for run in st.list_runs(None, None).unwrap() {
        for e in st.evals(run.id).unwrap() {
            let servebench_store::StoredRow::Servebench(row) = &e.row else {
                panic!("run {}: not a servebench eval row", run.id)
            };
            ids.push(serde_json::json!({
                "model": row.model, "model_prefix": row.model_prefix, "hw": row.hw,
                "framework": row.framework, "precision": row.precision,
                "spec_decoding": row.spec_decoding, "tp": row.tp, "ep": row.ep,
                "dp_attention": row.dp_attention, "is_multinode": row.is_multinode,
            }));
        }
    }
    assert_eq!(ids.len(), 2, "one eval row per command: {ids:?}");
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0]["framework"], "llama.cpp");
    assert_eq!(ids[0]["spec_decoding"], "none");
}
