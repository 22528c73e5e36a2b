//! `servebench run --executor local` against the real engine (llama.cpp's llama-server built by
//! scripts/services/real-engine.sh) started from a recipe written for it: the point is measured
//! and stored; and Ctrl-C (SIGINT to `servebench run`) mid-point leaves no engine process behind.
//!
//! Skipped when the real engine is absent, unless SERVEBENCH_REQUIRE_SERVICES=1 (then it fails).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

const KEY: &str = "tiny-bf16-cpu-llamacpp";

/// (llama-server, GGUF) from $SERVEBENCH_REAL_ENGINE_MODEL_DIR (scripts/services/real-engine.sh).
fn engine() -> Option<(PathBuf, PathBuf)> {
    let found = std::env::var_os("SERVEBENCH_REAL_ENGINE_MODEL_DIR").and_then(|m| {
        let m = PathBuf::from(m);
        let bin = m.parent()?.join("bin/llama-server");
        let gguf = m.join("tiny-chatml-llama.gguf");
        (bin.is_file() && gguf.is_file()).then_some((bin, gguf))
    });
    servebench_testkit::require(
        found,
        "real engine missing: run scripts/services/real-engine.sh and export SERVEBENCH_REAL_ENGINE_MODEL_DIR",
    )
}

/// Catalog, runners and a recipe that starts llama-server from the InferenceX environment
/// (PORT, CONC; MAX_MODEL_LEN sizes the context), tagged with `marker` in its argv.
fn setup(d: &Path, bin: &Path, gguf: &Path, marker: &str) {
    std::fs::write(
        d.join("master.yaml"),
        format!(
            "{KEY}:\n  image: ghcr.io/ggml-org/llama.cpp:server\n  model: tiny-chatml\n  model-prefix: tiny\n  runner: cpu\n  precision: bf16\n  framework: llamacpp\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - {{ tp: 1, conc-list: [2] }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("runners.yaml"),
        "labels:\n  cpu:\n    - cpu-local_00\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("recipes/fixed_seq_len")).unwrap();
    std::fs::write(
        d.join("recipes/fixed_seq_len/tiny_bf16_cpu_llamacpp.sh"),
        format!(
            "#!/usr/bin/env bash\nset -euo pipefail\necho \"starting llama-server on port $PORT for CONC=$CONC TP=$TP\"\nexec {} -m {} --host 127.0.0.1 --port \"$PORT\" -np \"$CONC\" -c $((CONC * MAX_MODEL_LEN)) --kv-unified -t 2 --alias {marker} --no-webui\n",
            bin.display(),
            gguf.display()
        ),
    )
    .unwrap();
}

fn engine_processes(marker: &str) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(marker) && c.contains("llama-server") {
                v.push(format!("{}: {c}", e.file_name().to_string_lossy()));
            }
        }
    }
    v
}

#[test]
fn real_engine_from_a_recipe_is_measured_and_stored() {
    let Some((bin, gguf)) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let marker = format!("run-test-{}", std::process::id());
    setup(d, &bin, &gguf, &marker);
    let o = common::gsm8k_in(d)
        .args([
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--executor",
            "local",
            "--out",
            "r",
            "--db",
            "s.db",
            "--num-prompts",
            "4",
            "--warmups",
            "1",
            "--isl",
            "64",
            "--osl",
            "32",
        ])
        .output()
        .unwrap();
    let out = common::ok(&o);
    assert!(out.contains("conc 2: stored 1 row"), "{out}");
    let pd = d.join(format!(
        "r/points/{KEY}_1k1k_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-none_conc2/attempt-1"
    ));
    let log = std::fs::read_to_string(pd.join("job.log")).unwrap();
    assert!(log.contains("starting llama-server on port"), "{log}");
    assert!(log.contains("engine ready after"), "{log}");
    assert!(log.contains("torn down"), "{log}");
    let runs = common::runs::runs_json(d, "s.db");
    assert_eq!(runs[0]["n_points"], 1, "{runs}");
    assert!(
        runs[0]["meta"]["endpoint"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{runs}"
    );
    assert!(
        engine_processes(&marker).is_empty(),
        "engine left behind: {:?}",
        engine_processes(&marker)
    );
}

#[test]
fn ctrl_c_mid_point_leaves_no_engine_behind() {
    let Some((bin, gguf)) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let marker = format!("run-sigint-{}", std::process::id());
    setup(d, &bin, &gguf, &marker);
    let mut child = common::gsm8k_in(d)
        .args([
            "run",
            KEY,
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--out",
            "r",
            "--db",
            "s.db",
            "--num-prompts",
            "400",
            "--warmups",
            "0",
            "--isl",
            "64",
            "--osl",
            "512",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
            .join("\n")
    });
    // wait until the point is being measured (the engine is up), then Ctrl-C the run
    let log = d.join(format!(
        "r/points/{KEY}_1k1k_tp1-pp1-dcp1-pcp1-ep1-dpafalse_spec-none_conc2/attempt-1/job.log"
    ));
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("measuring:")) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the point never started measuring"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // measuring means the engine is up: its processes are there (polled, not a guessed wait)
    while engine_processes(&marker).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the engine should be running while the point is measured"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let t1 = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        assert!(
            t1.elapsed() < Duration::from_secs(60),
            "servebench run did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = reader.join().unwrap();
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("interrupted"), "{out}");
    // no engine process left, and its whole process group is gone
    let left = engine_processes(&marker);
    assert!(left.is_empty(), "engine left behind after Ctrl-C: {left:?}");
    let pgid = std::fs::read_to_string(log.with_file_name("engine.pgid")).unwrap();
    let alive = Command::new("kill")
        .args(["-0", "--", &format!("-{}", pgid.trim())])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!alive.success(), "process group {pgid} still has a process");
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(log.parent().unwrap().parent().unwrap().join("result.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(r["state"], "interrupted");
}
