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

/// Issue 32: `run --dry-run` of multinode points of the real repository prints the Slurm job
/// InferenceX's launcher submits: nodes × GPUs per node, what runs on each node, the srt-slurm
/// recipe or launcher script it names and whether the checkout holds it. No `--simulate`, no
/// recipe folder: a dry run of multinode points needs neither.
#[test]
fn run_dry_run_prints_the_multinode_slurm_job_of_both_vendors() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ix) = crate::common::runs::real_repo(dir.path()) else {
        return;
    };
    let run_with = |key: &str, file: &str, conc: &str, extra: &[&str]| {
        let out = crate::common::servebench_in(&ix)
            .args([
                "run",
                key,
                "--catalog",
                file,
                "--dry-run",
                "--no-evals",
                "--conc",
                conc,
            ])
            .args(extra)
            .output()
            .unwrap();
        crate::common::ok(&out)
    };
    let run = |key: &str, file: &str, conc: &str| run_with(key, file, conc, &[]);
    // GB200 NVL72, Dynamo TRT-LLM: 1 prefill TP4 + 4 decode TP8 at 4 GPUs per tray = 1 + 8 nodes
    let s = run(
        "dsr1-fp4-gb200-dynamo-trt",
        "configs/nvidia-master.yaml",
        "4",
    );
    assert!(s.contains("P1×TP4/EP4/DPA + D4×TP8/EP8 · conc 4"), "{s}");
    assert!(s.contains("36 GPUs (prefill 4 + decode 32)"), "{s}");
    assert!(s.contains("runners/launch_gb200-nv.sh"), "{s}");
    assert!(s.contains("srtctl apply -f recipes/trtllm/gb200-fp4/8k1k/mtp/ctx1_gen4_tep8_batch8_eplb0_mtp3.yaml → sbatch --nodes=9 --gpus-per-node=4"), "{s}");
    assert!(
        s.contains("nodes: 9 = prefill 1 (1 × 4 GPUs) + decode 8 (4 × 8 GPUs)"),
        "{s}"
    );
    assert!(
        s.contains("node 1-2: decode worker 0 (TP8 over 2 nodes)"),
        "{s}"
    );
    assert!(
        s.contains("node 0: prefill worker 0 (TP4) · frontend + dynamo-router"),
        "{s}"
    );
    // that recipe lives in NVIDIA's srt-slurm branch, not in the checkout
    assert!(s.contains("not visible in this checkout"), "{s}");
    assert!(
        s.contains("engine: not started: servebench runs multinode points only with --simulate"),
        "{s}"
    );
    // under --simulate: the prefill/decode fleet `run --simulate` starts, KV over NVLink
    let s = run_with(
        "dsr1-fp4-gb200-dynamo-trt",
        "configs/nvidia-master.yaml",
        "4",
        &["--simulate"],
    );
    assert!(
        s.contains("engine: simulated disaggregated fleet on gb200 (deepseek-r1-fp4): prefill 1x4/ep4/dpa, decode 4x8/ep8"),
        "{s}"
    );
    assert!(
        s.contains("router round-robin (why: router dynamo-router"),
        "{s}"
    );
    assert!(
        s.contains("KV transfer over NVLink (NVL72 domain) 900 GB/s"),
        "{s}"
    );
    assert!(!s.contains("one engine"), "{s}");
    // a recipe the checkout holds: its resources are what srtctl requests
    // (plus one node for its dedicated role)
    let s = run(
        "dsv4-fp4-gb200-dynamo-vllm",
        "configs/nvidia-master.yaml",
        "1",
    );
    assert!(
        s.contains("disagg-gb200-low-latency.yaml: visible ("),
        "{s}"
    );
    assert!(s.contains("resources: prefill_nodes 2, decode_nodes 2, 1 dedicated role node(s), gpus_per_node 4 → srtctl requests 5 node(s)"), "{s}");
    assert!(s.contains("sbatch --nodes=5 --gpus-per-node=4"), "{s}");
    // MI355X SGLang disagg: 2 prefill TP8 + 1 decode TP8 at 8 GPUs per node, AMD's own script
    let s = run(
        "dsr1-fp8-mi355x-sglang-disagg",
        "configs/amd-master.yaml",
        "1024",
    );
    assert!(s.contains("runners/launch_mi355x-amds.sh"), "{s}");
    assert!(s.contains("bash benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh → sbatch --nodes=3 --gpus-per-node=8"), "{s}");
    assert!(
        s.contains(
            "launcher script benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh: visible"
        ),
        "{s}"
    );
    assert!(s.contains("KV transfer mori"), "{s}");
}
