//! `servebench catalog validate|show` on the real catalog and on a broken copy.

use std::process::Command;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex"
);

fn sb(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn validates_the_real_catalog() {
    let (n, a, r) = (
        format!("{DATA}/nvidia-master.yaml"),
        format!("{DATA}/amd-master.yaml"),
        format!("{DATA}/runners.yaml"),
    );
    let out = sb(&["catalog", "validate", &n, &a, "--runner-config", &r]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("ok: 208 configs ("), "{stdout}");
    assert!(
        stdout.contains("nvidia-master.yaml: 152") && stdout.contains("amd-master.yaml: 56"),
        "{stdout}"
    );
    // §8 decision: labels missing from runners.yaml are warnings, not errors.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("dsr1-fp8-gb300-dynamo-trt: runner: label 'gb300-nv' is not defined in"),
        "{stderr}"
    );
}

#[test]
fn reports_file_line_column_key_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{DATA}/nvidia-master.yaml")).unwrap();
    let broken = text.replacen(
        "{ tp: 2, ep: 2, conc-list: [16, 32, 64], spec-decoding: mtp }",
        "{ tp: 2, ep: 2, conc-start: 16, conc-list: [16, 32, 64], spec-decoding: mtp }",
        1,
    );
    assert_ne!(broken, text);
    let path = dir.path().join("nvidia-master.yaml");
    std::fs::write(&path, broken).unwrap();
    let out = sb(&["catalog", "validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "error: {}:1266:9: qwen3.5-fp4-b200-sglang-mtp: scenarios.fixed-seq-len[0].search-space[2]: conc-start and conc-list are mutually exclusive\n1 problem found\n",
        path.display()
    );
    assert_eq!(stderr, want);
}

#[test]
fn show_resolves_defaults_and_runner_facts() {
    let (n, a, r) = (
        format!("{DATA}/nvidia-master.yaml"),
        format!("{DATA}/amd-master.yaml"),
        format!("{DATA}/runners.yaml"),
    );
    let out = sb(&[
        "catalog",
        "show",
        "qwen3.5-fp4-b200-sglang-agentic-mtp",
        "--config-files",
        &n,
        &a,
        "--runner-config",
        &r,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runner"]["hardware"]["gpus-per-node"], 8);
    let ss = &v["scenarios"]["agentic-coding"][0]["search-space"];
    assert_eq!(ss[0]["pp"], 1);
    assert_eq!(ss[0]["dp-attn"], false);
    assert_eq!(ss[1]["kv-offloading"], "dram");
    // floor(min(3_095_781, 2_861_022) MiB × 2^20 × 0.8 × 4 / 8 / 1e9) = 1199 (matches golden C3).
    assert_eq!(ss[1]["total-cpu-dram-gb"], 1199);
    let out = sb(&[
        "catalog",
        "show",
        "no-such-key",
        "--config-files",
        &n,
        "--runner-config",
        &r,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("config key 'no-such-key' not found"));
}

/// Runs the binary with stdout on a pipe whose reader is already closed (what `| head -1` leaves
/// once head has exited): the first print gets EPIPE.
fn sb_into_closed_pipe(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn closed_stdout_pipe_exits_quietly_without_a_panic() {
    let (n, r) = (
        format!("{DATA}/nvidia-master.yaml"),
        format!("{DATA}/runners.yaml"),
    );
    let log = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(log.path(), "step 1\nRuntimeError: CUDA out of memory\n").unwrap();
    let scen = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/scenario");
    let master = format!("{scen}/master.yaml");
    let cases: Vec<Vec<&str>> = vec![
        vec!["catalog", "validate", &n, "--runner-config", &r],
        vec![
            "catalog",
            "show",
            "qwen3.5-fp4-b200-sglang-agentic-mtp",
            "--config-files",
            &n,
            "--runner-config",
            &r,
        ],
        vec!["triage", log.path().to_str().unwrap()],
        vec![
            "bump",
            "qwen3.8next-fp4-b200-sglang-agentic-mtp",
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            &master,
            "--no-resolve",
            "--dry-run",
        ],
        vec!["--help"],
    ];
    for args in cases {
        let out = sb_into_closed_pipe(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        // 128 + SIGPIPE, what a shell shows for `seq 1 1000000 | head -1`; clap's own --help
        // printer ignores the write error and exits 0.
        let want = if args == ["--help"] { 0 } else { 141 };
        assert_eq!(out.status.code(), Some(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn catalog_and_config_files_flags_work_on_validate_show_and_bump() {
    let (n, r) = (
        format!("{DATA}/nvidia-master.yaml"),
        format!("{DATA}/runners.yaml"),
    );
    for flag in ["--catalog", "--config-files"] {
        let out = sb(&["catalog", "validate", flag, &n, "--runner-config", &r]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{flag}: {stdout}");
        assert!(stdout.starts_with("ok: 152 configs ("), "{flag}: {stdout}");
        let out = sb(&[
            "catalog",
            "show",
            "qwen3.5-fp4-b200-sglang-agentic-mtp",
            flag,
            &n,
            "--runner-config",
            &r,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let scen = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/scenario");
        let out = sb(&[
            "bump",
            "qwen3.8next-fp4-b200-sglang-agentic-mtp",
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            flag,
            &format!("{scen}/master.yaml"),
            "--no-resolve",
            "--dry-run",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("Dry run: nothing written."));
    }
}
