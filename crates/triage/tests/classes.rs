//! One test per class of AUTOMATION.md §5.4 (43): a real-shaped line for each signature, buried
//! in logging noise (CI timestamps, INFO/WARNING lines, NCCL INFO, progress bars, `set -x`
//! echoes, a traceback frame) and followed by a generic wrapper. The line must be found at its
//! line number and classified as its class, with the table's layer and transient/deterministic.

use servebench_triage::{triage_texts, LayerSpec, SignatureTable, TriageOptions};

const NOISE: &[&str] = &[
    "Runner name: 'b200-dgxc-slurm_03'",
    "INFO 09-21 01:15:07 [model_runner.py:1203] Capturing cudagraphs for decoding.",
    "b200-n17:41233:41301 [3] NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/CUMEM/read",
    "Loading safetensors checkpoint shards:  42% Completed | 21/50 [00:31<00:43,  1.49s/it]",
    "+ echo 'Error: this is only an echoed command'",
    "WARNING 09-21 01:15:09 [config.py:1101] error budget: swap space too large",
    "  File \"/opt/venv/lib/python3.12/site-packages/sglang/srt/server_args.py\", line 412, in check",
    "100%|██████████| 1319/1319 [02:11<00:00, 10.03it/s]",
];

fn check(id: &str, line: &str) {
    let mut log = String::new();
    for (i, n) in NOISE.iter().enumerate() {
        log.push_str(&format!("2026-09-21T01:15:{:02}.000Z {n}\n", i));
    }
    log.push_str(&format!("2026-09-21T01:15:30.500Z {line}\n"));
    log.push_str("2026-09-21T01:15:31.000Z ##[error]Process completed with exit code 1.\n");
    let r = triage_texts(&[("job.log", &log)], &TriageOptions::default());
    let fe = r
        .first_error
        .as_ref()
        .unwrap_or_else(|| panic!("{id}: no first error"));
    assert_eq!(
        r.signature_id.as_deref(),
        Some(id),
        "{id}: classified as {:?} ({})",
        r.signature_id,
        r.category
    );
    assert_eq!(fe.line_no, NOISE.len() as u64 + 1, "{id}");
    assert_eq!(fe.line, line.trim(), "{id}");
    assert_eq!(r.section_class.as_deref(), Some(id));
    let sig = SignatureTable::builtin().get(id).unwrap();
    assert_eq!(r.category, sig.category);
    assert_eq!(r.persistence, sig.persistence, "{id}");
    if let LayerSpec::Fixed(l) = sig.layer {
        assert_eq!(r.layer, l, "{id}");
    }
    assert_eq!(r.deterministic, sig.persistence.is_deterministic(), "{id}");
    assert_eq!(
        r.retry,
        sig.action == servebench_triage::Action::Retry,
        "{id}"
    );
    assert!(!r.fix.is_empty() && !r.next_step.is_empty());
    assert!(
        !r.next_step.contains('<'),
        "{id}: unfilled template in {}",
        r.next_step
    );
    // The generic wrapper after it is secondary, never the first error (unless it is generic too).
    if !sig.generic {
        assert!(
            r.secondary
                .iter()
                .any(|s| s.category == "process_exit_code"),
            "{id}"
        );
    }
}

macro_rules! class_tests {
    ($($name:ident: $id:literal => $line:expr;)+) => {
        $( #[test] fn $name() { check($id, $line) } )+
        #[test]
        fn all_43_classes_have_a_test() {
            let ids = [$($id),+];
            assert_eq!(ids.len(), 43);
            let table = SignatureTable::builtin();
            for s in table.signatures().iter().filter(|s| s.is_section_class()) {
                assert!(ids.contains(&s.id.as_str()), "no test for {}", s.id);
            }
        }
    };
}

class_tests! {
    a1: "A1" => "Error: Deletions are not allowed in perf-changelog.yaml. Only additions to the change log are allowed. Found deleted line: '    - dsr1-fp8-h200-sglang'";
    a2: "A2" => "ValueError: final appended changelog entry must end with exactly one newline";
    a3: "A3" => "ValueError: invalid pr-link 'https://github.com/SemiAnalysisAI/InferenceX/issues/12' for entry 3";
    a4: "A4" => "Error: Pattern 'qwen3.9*' matched no config keys";
    a5: "A5" => "pydantic_core.ValidationError: parsed agentic matrix entry failed validation: kv-offload-backend is required";
    a6: "A6" => "::error::PR has multiple conflicting sweep labels (full-sweep-enabled, e2e-sweep)";
    a7: "A7" => "| #3363 | NO_SUCCESS | Run Sweep: SKIPPED |";
    b1: "B1" => "docker: Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock";
    b2: "B2" => "enroot-aufs2ovlfs: failed to create whiteout: No space left on device";
    b3: "B3" => "slurmstepd: error: *** STEP 8812.0 ON b200-n03 CANCELLED AT 2026-09-21T01:20:00 *** Kill task failed";
    b4: "B4" => "Error: EACCES: permission denied, rmdir '/runner/_work/InferenceX/InferenceX/benchmark_logs/logs/slurm_job-90211'";
    b5: "B5" => "curl: (6) Could not resolve host: nvcr.io";
    b6: "B6" => "ERROR: salloc failed to allocate resources: Requested node configuration is not available";
    b7: "B7" => "dpkg-deb: error: 'etcd_3.5.17_amd64.deb' is not a Debian format archive: unexpected end of file";
    b8: "B8" => "error: Failed to fetch: `https://pypi.org/simple/aiperf/`";
    b9: "B9" => "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8888): [errno 98] address already in use";
    b10: "B10" => "ERROR: job 91772 failed before creating outputs/91772/logs/sweep_91772.log";
    b11: "B11" => "capacity-gate: cluster mi355x-amds has no idle nodes (allocated 31, mixed 1, total 32)";
    c1: "C1" => "Error response from daemon: manifest for lmsysorg/sglang:v0.5.21-cu130 not found: manifest unknown: manifest unknown";
    c2: "C2" => "enroot: [ERROR] Invalid image reference: docker://lmsysorg/sglang:v0.5.14-cu130@sha256:5027e95b6a4f09c3c0e5b1f1f3d9c2e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2";
    c3: "C3" => "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: 0.85";
    d1: "D1" => "sglang.launch_server: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill";
    d2: "D2" => "vllm serve: error: unrecognized arguments: --async-scheduling";
    d3: "D3" => "RuntimeError: HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.";
    d4: "D4" => "RuntimeError: [breakable_cudagraph.py:140] capture_end(): CUDA error: out of memory";
    d5: "D5" => "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS (700) raised in DeepGemm fp8_gemm_nt kernel launch";
    d6: "D6" => "[TensorRT-LLM][ERROR] Assertion failed: Error in trtllm_batched_gemm_runner.cu:312: no valid config for numBatches=256";
    d7: "D7" => "AssertionError: assert sm_100 <= arch <= sm_110f, 'FA4 supports Blackwell only'";
    d8: "D8" => "RuntimeError: minimax_m3_msa: q2k_indices must be contiguous (got strides (1, 4096))";
    d9: "D9" => "Process died before creating /workspace/server.log.";
    d10: "D10" => "ERROR: Server process 98765 died during benchmark";
    d11: "D11" => "Run failed: Benchmark result dsv4_fp4_vllm_tp8-ep1_conc64.json not found.";
    d12: "D12" => "Timed out waiting for http://0.0.0.0:8888/v1/models.";
    e1: "E1" => "Error: No eval results found to summarize under eval_results/";
    e2: "E2" => "validate_scores: gsm8k em_strict 0.912 below threshold 0.93 for dsr1-fp8-h200-sglang";
    e3: "E3" => "ERROR validate_agentic_result: error rate 0.31 exceeds threshold 0.10 (62 of 200 requests failed)";
    e4: "E4" => "ERROR: Latest exact-head final sweep failed (run 17734455 attempt 2)";
    f1: "F1" => "klaud: Candidate ownership mismatch for family qwen3.5-fp4-b200-sglang (author dependabot[bot])";
    f2: "F2" => "klaud baseline: unproven provenance for baseline point conc 4 (producer run unknown)";
    f3: "F3" => "FileNotFoundError: model path /scratch/models/dsv4-fp4 does not exist on b200-n04";
    f4: "F4" => "X run 17745512 cannot be rerun because it is still in progress";
    f5: "F5" => "GraphQL: Projects (classic) is being deprecated in favor of the new Projects experience (repository.pullRequest.projectCards)";
    f6: "F6" => r#"[{"name":"benchmark (b200)","status":"in_progress","conclusion":""}]"#;
}

#[test]
fn e3_extracts_the_rate_and_b10_the_job() {
    let r = triage_texts(
        &[(
            "j.log",
            "ERROR validate_agentic_result: error rate 0.31 exceeds threshold 0.10\n",
        )],
        &TriageOptions::default(),
    );
    assert_eq!(
        r.first_error
            .unwrap()
            .fields
            .get("rate")
            .map(String::as_str),
        Some("0.31")
    );
    let r = triage_texts(
        &[("j.log", "ERROR: job 91772 failed before creating x.log\n")],
        &TriageOptions::default(),
    );
    assert!(
        r.next_step.contains("scontrol show job 91772"),
        "{}",
        r.next_step
    );
}

#[test]
fn repair_budget_exhausted_turns_into_failed() {
    let opts = TriageOptions {
        repairs_used: 5,
        ..TriageOptions::default()
    };
    let r = triage_texts(
        &[(
            "j.log",
            "vllm serve: error: unrecognized arguments: --async-scheduling\n",
        )],
        &opts,
    );
    assert_eq!(r.outcome, Some(servebench_triage::Outcome::Failed));
    assert_eq!(r.action, servebench_triage::Action::Stop);
}

#[test]
fn unclassified_error_beats_generic_wrapper_and_nothing_found_is_said() {
    let log = "INFO starting\nRuntimeError: something nobody has seen before\nEngineCore failed to start.\n";
    let r = triage_texts(&[("j.log", log)], &TriageOptions::default());
    assert_eq!(r.category, "unclassified");
    assert_eq!(r.first_error.as_ref().unwrap().line_no, 2);
    assert!(r.next_step.contains("j.log:2"));
    let r = triage_texts(
        &[("j.log", "INFO all good\n+ echo error\n")],
        &TriageOptions::default(),
    );
    assert!(r.first_error.is_none());
    assert_eq!(r.category, "none");
}

#[test]
fn transient_on_two_runners_says_not_node_specific() {
    let a = "Runner name: 'r1'\ncurl: (6) Could not resolve host: registry-1.docker.io\n";
    let b = "Runner name: 'r2'\ncurl: (6) Could not resolve host: registry-1.docker.io\n";
    let r = triage_texts(&[("a.log", a), ("b.log", b)], &TriageOptions::default());
    assert!(!r.deterministic);
    assert!(r.retry);
    assert!(
        r.evidence
            .iter()
            .any(|e| e.contains("same first error on 2 runners (r1, r2): not node-specific")),
        "{:?}",
        r.evidence
    );
}

#[test]
fn mixed_class_on_two_runners_becomes_deterministic_and_disagreement_is_reported() {
    let a = "Runner name: 'r1'\nTimed out waiting for http://0.0.0.0:8888/health.\n";
    let b = "Runner name: 'r2'\nTimed out waiting for http://0.0.0.0:8888/health.\n";
    let r = triage_texts(&[("a.log", a), ("b.log", b)], &TriageOptions::default());
    assert!(r.deterministic);
    assert_eq!(
        r.determinism(),
        "deterministic (same first error on 2 runners)"
    );
    let c = "Runner name: 'r3'\nNo space left on device\n";
    let r = triage_texts(&[("a.log", a), ("c.log", c)], &TriageOptions::default());
    assert!(!r.deterministic);
    assert!(
        r.evidence
            .iter()
            .any(|e| e.contains("1 of 2 logs share this first error")
                && e.contains("c.log → node_disk_full")),
        "{:?}",
        r.evidence
    );
}

// ------------------------------------------------------------------ shell-level first errors
//
// Issue 19 item 3: each log is shaped like a `servebench run` job log (or an InferenceX CI
// log): the shell's own error line comes first, servebench's wrapper line ("Process died
// before …/health became ready (exit status N)") after it. The shell line must win, with its
// class, owning layer, deterministic or not, and the fix; the wrapper is secondary.

use servebench_triage::{Action, Layer, Outcome, Persistence, TriageReport};

const RECIPE: &str = "/work/ix/benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh";

/// A servebench job log: header, `Run bash RECIPE`, the recipe's output `body`, and the
/// runner's wrapper with `status` and `port`.
fn job_log(runner: &str, body: &[&str], status: u32, port: u16) -> String {
    let mut s = format!(
        "Runner name: '{runner}'\nJob: benchmark (qwen3.5-fp8-b200-sglang-agentic-mtp, agentic-coding, tp1 ep1 conc4)\n\
         2026-12-02T04:00:00.000Z servebench-job: Run bash {RECIPE}\n\
         2026-12-02T04:00:00.010Z servebench-job: engine started (pid 4242, process group 4242); waiting for http://127.0.0.1:{port}/health (up to 600 s)\n"
    );
    for l in body {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&format!(
        "2026-12-02T04:00:00.300Z servebench-job: ERROR: Process died before http://127.0.0.1:{port}/health became ready (exit status {status})\n"
    ));
    s
}

fn tri(log: &str) -> TriageReport {
    triage_texts(&[("job.log", log)], &TriageOptions::default())
}

/// The shell line is the first error (at `line_no`), of `category`, and the wrapper after it
/// is secondary.
fn shell_first(r: &TriageReport, category: &str, line_no: u64) {
    let fe = r.first_error.as_ref().expect("a first error");
    assert_eq!(r.category, category, "{}: {}", fe.line_no, fe.line);
    assert_eq!(fe.line_no, line_no, "{}", fe.line);
    assert!(
        r.secondary
            .iter()
            .any(|s| s.category == "server_died_at_start" && s.generic && s.line_no > line_no),
        "{:?}",
        r.secondary
    );
    assert!(
        !r.fix.contains('<') && !r.next_step.contains('<'),
        "{}",
        r.next_step
    );
}

#[test]
fn shell_command_not_found_on_the_host_before_the_runner_wrapper() {
    // Issue 19: the real recipe's line 29 runs `hf download` on a machine without `hf`.
    let log = job_log(
        "local",
        &[
            "+ source /work/ix/benchmarks/single_node/agentic/../../benchmark_lib.sh",
            "+ check_env_vars MODEL TP CONC",
            "+ hf download Qwen/Qwen3.5-397B-A17B-FP8",
            &format!("{RECIPE}: line 29: hf: command not found"),
        ],
        127,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_command_not_found", 8);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.fields["command"], "hf");
    assert_eq!(fe.fields["script"], RECIPE);
    assert_eq!(fe.fields["script_line"], "29");
    assert_eq!(r.layer, Layer::Host, "{:?}", fe.fields);
    assert_eq!(r.persistence, Persistence::Deterministic);
    assert!(r.deterministic && !r.retry);
    // A tool missing on the host is outside the candidate's scope.
    assert_eq!(
        (r.action, r.outcome),
        (Action::Stop, Some(Outcome::ReadinessBlocked))
    );
    assert!(r.fix.contains("install `hf` on the host"), "{}", r.fix);
    assert!(r.fix.contains("huggingface_hub"), "{}", r.fix);
    assert!(r.next_step.contains("ran on the host"), "{}", r.next_step);
    assert_ne!(r.category, "server_died_at_start");
}

#[test]
fn shell_command_not_found_inside_the_container_is_the_image() {
    let log = "Runner name: 'b200-dgxc-slurm_03'\n\
        Run bash ./runners/launch_b200-dgxc-slurm.sh\n\
        + srun --container-image=/squash/lmsysorg_sglang_v0.5.20-cu130.sqsh bash benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh\n\
        + hf download Qwen/Qwen3.5-397B-A17B-FP8\n\
        benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh: line 29: hf: command not found\n\
        ##[error]Process completed with exit code 127.\n";
    let r = tri(log);
    assert_eq!(r.category, "shell_command_not_found");
    assert_eq!(r.first_error.as_ref().unwrap().line_no, 5);
    assert_eq!(r.layer, Layer::Image);
    assert_eq!((r.action, r.outcome), (Action::Repair, None));
    assert!(r.fix.contains("use an image that ships `hf`"), "{}", r.fix);
    // A scheduler tool is the host's even inside the launcher.
    let log = "Runner name: 'b200-dgxc-slurm_03'\n\
        Run bash ./runners/launch_b200-dgxc-slurm.sh\n\
        ./runners/launch_b200-dgxc-slurm.sh: line 61: salloc: command not found\n\
        ##[error]Process completed with exit code 127.\n";
    let r = tri(log);
    assert_eq!(
        (r.category.as_str(), r.layer),
        ("shell_command_not_found", Layer::Host)
    );
}

#[test]
fn shell_sourced_file_missing_is_the_recipe() {
    // Issue 19: a recipe whose sourced ../benchmark_lib.sh is missing (line 5 was skipped).
    let log = job_log(
        "local",
        &[
            "+ source ../benchmark_lib.sh",
            &format!("{RECIPE}: line 5: ../benchmark_lib.sh: No such file or directory"),
        ],
        1,
        45543,
    );
    let r = tri(&log);
    shell_first(&r, "shell_file_not_found", 6);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.fields["path"], "../benchmark_lib.sh");
    assert_eq!(r.layer, Layer::Recipe);
    assert_eq!((r.action, r.outcome), (Action::Repair, None));
    assert!(r.deterministic);
    assert!(r.fix.contains("\"$(dirname \"$0\")/…\""), "{}", r.fix);
    // A hand-written recipe tree (no `benchmarks/` in its path): the file beside the recipe
    // the log started belongs to the recipe tree too.
    let log = "servebench-job: Run bash /home/u/my-recipes/qwen.sh\n\
        /home/u/my-recipes/qwen.sh: line 3: /home/u/my-recipes/common.sh: No such file or directory\n\
        servebench-job: ERROR: Process died before http://127.0.0.1:40001/health became ready (exit status 1)\n";
    let r = tri(log);
    assert_eq!(
        (r.category.as_str(), r.layer),
        ("shell_file_not_found", Layer::Recipe)
    );
}

#[test]
fn shell_unbound_variable_is_owned_by_the_script_that_reads_it() {
    let log = job_log(
        "local",
        &[&format!("{RECIPE}: line 12: MODEL_PATH: unbound variable")],
        1,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_unbound_variable", 5);
    assert_eq!(r.first_error.as_ref().unwrap().fields["var"], "MODEL_PATH");
    assert_eq!(r.layer, Layer::Recipe);
    assert!(r.deterministic);
    assert!(
        r.fix.contains("set `MODEL_PATH` before line 12 of"),
        "{}",
        r.fix
    );
    // In the launcher (InferenceX CI log shape): launcher layer, readiness-blocked.
    let log = "2026-09-21T01:15:02.114Z Runner name: 'b200-nscale-slurm_00'\n\
        2026-09-21T01:15:04.902Z Run bash ./runners/launch_b200-nscale-slurm.sh\n\
        2026-09-21T01:15:04.931Z ./runners/launch_b200-nscale-slurm.sh: line 32: IS_MULTINODE: unbound variable\n\
        2026-09-21T01:15:05.002Z ##[error]Process completed with exit code 1.\n";
    let r = tri(log);
    assert_eq!(r.category, "shell_unbound_variable");
    assert_eq!(r.layer, Layer::Launcher);
    assert_eq!(
        (r.action, r.outcome),
        (Action::Stop, Some(Outcome::ReadinessBlocked))
    );
}

#[test]
fn shell_permission_denied_recipe_file_or_host_path() {
    let log = job_log(
        "local",
        &[
            "+ ./start_server.sh",
            "/work/ix/benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh: line 40: /work/ix/benchmarks/single_node/agentic/start_server.sh: Permission denied",
        ],
        126,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_permission_denied", 6);
    assert_eq!(r.layer, Layer::Recipe);
    assert!(r.fix.contains("chmod +x"), "{}", r.fix);
    // Writing results where the job's user may not, on the host.
    let log = job_log(
        "local",
        &[&format!(
            "{RECIPE}: line 88: /results/qwen.json: Permission denied"
        )],
        1,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_permission_denied", 5);
    assert_eq!(r.layer, Layer::Host);
    assert_eq!(r.outcome, Some(Outcome::ReadinessBlocked));
}

#[test]
fn shell_syntax_error_and_crlf_script_are_the_recipe() {
    let log = job_log(
        "local",
        &[&format!(
            "{RECIPE}: line 80: syntax error: unexpected end of file"
        )],
        2,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_syntax_error", 5);
    assert_eq!(r.layer, Layer::Recipe);
    assert!(r.fix.contains("bash -n"), "{}", r.fix);
    let log = job_log(
        "local",
        &[&format!(
            "bash: {RECIPE}: /bin/bash^M: bad interpreter: No such file or directory"
        )],
        126,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_bad_interpreter", 5);
    assert_eq!(r.layer, Layer::Recipe);
    assert!(r.fix.contains("CRLF"), "{}", r.fix);
}

#[test]
fn shell_set_e_stop_is_the_last_trace_before_a_wrapper_with_an_exit_status() {
    let log = job_log(
        "local",
        &[
            "+ check_env_vars MODEL TP CONC",
            "+ cp /models/Qwen3.5/config.json /workspace/",
            "cp: cannot stat '/models/Qwen3.5/config.json': No such file or directory",
        ],
        1,
        33047,
    );
    let r = tri(&log);
    shell_first(&r, "shell_set_e_command_failed", 6);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line, "+ cp /models/Qwen3.5/config.json /workspace/");
    assert_eq!(
        fe.continuation,
        vec![
            "cp: cannot stat '/models/Qwen3.5/config.json': No such file or directory".to_string()
        ]
    );
    assert_eq!(
        fe.fields["command"],
        "cp /models/Qwen3.5/config.json /workspace/"
    );
    assert_eq!(fe.fields["exit_status"], "1");
    assert_eq!(r.layer, Layer::Recipe);
    assert_eq!(r.persistence, Persistence::Mixed);
    assert!(!r.deterministic);
    assert!(r.fix.contains("under `set -e`"), "{}", r.fix);
    // The GitHub Actions wrapper carries the status too.
    let log = "Runner name: 'r1'\nRun bash ./runners/launch_h200-nb.sh\n+ mkdir -p /lustre/fsw/x\nmkdir: cannot create directory '/lustre/fsw/x': Read-only file system\n##[error]Process completed with exit code 1.\n";
    let r = tri(log);
    assert_eq!(r.category, "shell_set_e_command_failed");
    assert_eq!(r.layer, Layer::Launcher);
}

#[test]
fn server_died_at_start_only_when_nothing_earlier_explains_the_exit() {
    // The InferenceX wrapper has no exit status: the engine (a background process) died, not
    // a `set -e` command; the traces above it explain nothing.
    let log = "Runner name: 'r1'\n+ python3 -m sglang.launch_server --model-path /m --port 8888 &\n+ wait_for_server_ready --port 8888\nProcess died before http://0.0.0.0:8888/health became ready.\n";
    let r = tri(log);
    assert_eq!(r.category, "server_died_at_start");
    // A foreground engine launch traced last is the engine's death, not a set -e stop.
    let log = job_log(
        "local",
        &["+ exec python3 -m sglang.launch_server --model-path /m --port 33047"],
        1,
        33047,
    );
    assert_eq!(tri(&log).category, "server_died_at_start");
    // `exit 1` traced last: the script chose to stop; nothing earlier is an error line.
    let log = job_log(
        "local",
        &["+ echo 'no GPU'", "no GPU", "+ exit 1"],
        1,
        33047,
    );
    assert_eq!(tri(&log).category, "server_died_at_start");
    // Exit 127 with no shell line in this log: still the wrapper, and the reasoning says what
    // 127 means.
    let r = tri(&job_log("local", &[], 127, 33047));
    assert_eq!(r.category, "server_died_at_start");
    assert_eq!(r.first_error.as_ref().unwrap().fields["exit_status"], "127");
    assert!(
        r.reasoning
            .iter()
            .any(|l| l.contains("exit status 127 is the shell's `command not found`")),
        "{:?}",
        r.reasoning
    );
}

#[test]
fn a_shell_error_after_the_wrapper_is_teardown() {
    let mut log = job_log("local", &[], 1, 33047);
    log.push_str(&format!(
        "{RECIPE}: line 95: nvidia-smi: command not found\n"
    ));
    let r = tri(&log);
    assert_eq!(r.category, "server_died_at_start");
    assert!(
        r.secondary
            .iter()
            .any(|s| s.category == "shell_command_not_found" && s.line_no == 6),
        "{:?}",
        r.secondary
    );
}

#[test]
fn identical_failures_on_two_ports_group_as_one() {
    // Issue 18: the first error was shown per port (…:33047…, …:45543…).
    let a = job_log("sim-b200_00", &[], 1, 33047);
    let b = job_log("sim-b200_01", &[], 1, 45543);
    let r = triage_texts(&[("a.log", &a), ("b.log", &b)], &TriageOptions::default());
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(
        fe.summary,
        "servebench-job: ERROR: Process died before http://127.0.0.1:<port>/health became ready (exit status 1)"
    );
    assert!(fe.raw.contains(":33047/health"), "{}", fe.raw);
    assert_eq!(r.logs_agreeing, 2);
    assert_eq!(r.same_first_error_runners.len(), 2);
    assert!(
        r.evidence[0].contains("http://127.0.0.1:<port>/health")
            && r.evidence[0].contains("as written at a.log:5"),
        "{:?}",
        r.evidence
    );
    let summaries: Vec<&str> = r
        .logs
        .iter()
        .map(|l| l.first_error.as_ref().unwrap().summary.as_str())
        .collect();
    assert_eq!(summaries[0], summaries[1]);
    // Different commands missing are different failures.
    let a = job_log(
        "r1",
        &[&format!("{RECIPE}: line 29: hf: command not found")],
        127,
        1111,
    );
    let b = job_log(
        "r2",
        &[&format!("{RECIPE}: line 29: jq: command not found")],
        127,
        2222,
    );
    let r = triage_texts(&[("a.log", &a), ("b.log", &b)], &TriageOptions::default());
    assert_eq!(r.logs_agreeing, 1);
}

#[test]
fn shell_errors_behind_an_srun_task_label() {
    // `srun --label` prefixes each line with the task number.
    let log = "Runner name: 'b200-dgxc-slurm_03'\n\
        + srun --label --container-image=/squash/x.sqsh bash benchmarks/single_node/q.sh\n\
        0: benchmarks/single_node/q.sh: line 29: hf: command not found\n\
        ##[error]Process completed with exit code 127.\n";
    let r = tri(log);
    assert_eq!(r.category, "shell_command_not_found");
    assert_eq!(r.first_error.as_ref().unwrap().fields["script_line"], "29");
    assert_eq!(r.layer, Layer::Image);
}

// ------------------------------------------------- the recipes' own env checks (`echo "Error: …"`)

/// `line` in [`NOISE`], followed by the runner's wrapper: found at its line as `id`, the
/// wrapper secondary (for the rows outside §5.4, which have no section class).
fn in_noise(id: &str, line: &str) {
    let mut log = String::new();
    for (i, n) in NOISE.iter().enumerate() {
        log.push_str(&format!("2026-09-21T01:15:{:02}.000Z {n}\n", i));
    }
    log.push_str(&format!("2026-09-21T01:15:30.500Z {line}\n"));
    log.push_str("2026-09-21T01:15:31.000Z ##[error]Process completed with exit code 1.\n");
    let r = triage_texts(&[("job.log", &log)], &TriageOptions::default());
    let fe = r
        .first_error
        .as_ref()
        .unwrap_or_else(|| panic!("{id}: no first error"));
    assert_eq!(
        r.signature_id.as_deref(),
        Some(id),
        "{line}: {}",
        r.category
    );
    assert_eq!(fe.line_no, NOISE.len() as u64 + 1, "{line}");
    assert!(
        r.secondary
            .iter()
            .any(|s| s.category == "process_exit_code"),
        "{line}"
    );
    // the env checks name their variable in the next step (check_env_vars' list header alone
    // leaves `<var>` for its continuation lines, as before)
    if id.ends_with("_env_check") {
        assert!(
            !r.next_step.contains('<') && !r.next_step.contains('{'),
            "{}",
            r.next_step
        );
    }
}

/// InferenceX's benchmark_lib.sh stops an agentic recipe with `Error: KV_OFFLOAD_BACKEND is
/// required when KV_OFFLOADING=dram` when the launcher did not pass the search space's
/// `kv-offload-backend` (the workflow's env does): the launcher's env contract, deterministic,
/// not the engine or the image (was: layer unknown · unclassified · mixed).
#[test]
fn kv_offload_backend_required_is_the_launchers_env_contract() {
    let line = "Error: KV_OFFLOAD_BACKEND is required when KV_OFFLOADING=dram";
    in_noise("launcher_env_check", line);
    let log = job_log(
        "local",
        &[
            "+ source /work/ix/benchmarks/single_node/agentic/../../benchmark_lib.sh",
            "+ check_agentic_kv_offloading",
            line,
        ],
        1,
        33047,
    );
    let r = tri(&log);
    let fe = r.first_error.as_ref().expect("a first error");
    assert_eq!(fe.line, line);
    assert_eq!(r.category, "launcher_env_check");
    assert_eq!(r.layer, Layer::Launcher);
    assert_eq!(r.persistence, Persistence::Deterministic);
    assert_eq!(fe.fields["var"], "KV_OFFLOAD_BACKEND");
    assert!(
        r.next_step.contains("KV_OFFLOAD_BACKEND"),
        "{}",
        r.next_step
    );
}

/// The whole kind, as InferenceX's recipes and benchmark_lib.sh print it (grep `echo "Error:`):
/// a variable of the workflows' env contract that is missing or conflicting is the launcher's;
/// the recipe's own variables, invalid values and helper-script flags are the recipe's.
#[test]
fn the_recipes_own_env_checks_are_classified_with_the_variable() {
    let launcher = [
        (
            "Error: KV_OFFLOADING must be set for agentic benchmarks",
            "KV_OFFLOADING",
        ),
        (
            "Error: KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none",
            "KV_OFFLOAD_BACKEND",
        ),
        ("Error: MODEL not set", "MODEL"),
        (
            "Error: TOTAL_CPU_DRAM_GB is required for DRAM offloading",
            "TOTAL_CPU_DRAM_GB",
        ),
    ];
    let recipe = [
        ("ERROR: MODEL_NAME is not set", "MODEL_NAME"),
        ("Error: DOCKER_IMAGE_NAME is not set.", "DOCKER_IMAGE_NAME"),
        ("Error: --max-concurrency is required", "--max-concurrency"),
        ("Error: TP='8' must be divisible by DCP_SIZE='3'", "TP"),
        (
            "Error: GPU_COUNT must be a positive integer, got 'x'",
            "GPU_COUNT",
        ),
        (
            "Error: HICACHE_SIZE=900 must be in (0, 512]",
            "HICACHE_SIZE",
        ),
        (
            "Error: HICACHE_SIZE_GB=900 outside 1..512",
            "HICACHE_SIZE_GB",
        ),
        (
            "Error: unsupported KV_OFFLOADING value 'disk' (expected one of: none, dram)",
            "KV_OFFLOADING",
        ),
        (
            "Error: unsupported KV_OFFLOAD_BACKEND 'lmcache' (expected: hicache)",
            "KV_OFFLOAD_BACKEND",
        ),
        (
            "Error: unsupported B300 KV_OFFLOAD_BACKEND='lmcache'",
            "KV_OFFLOAD_BACKEND",
        ),
        (
            "Error: expected KV_OFFLOAD_BACKEND=mooncake when KV_OFFLOADING=dram, got ''",
            "KV_OFFLOAD_BACKEND",
        ),
        (
            "DP_ATTENTION must be true or false; got 'yes'",
            "DP_ATTENTION",
        ),
        (
            "CRITICAL: DRAFT_SAMPLE_METHOD must be 'greedy' or 'probabilistic' (got 'x')",
            "DRAFT_SAMPLE_METHOD",
        ),
    ];
    let want = launcher
        .iter()
        .map(|l| (l, "launcher_env_check", Layer::Launcher))
        .chain(
            recipe
                .iter()
                .map(|l| (l, "recipe_env_check", Layer::Recipe)),
        );
    for ((line, var), category, layer) in want {
        in_noise(category, line);
        let r = tri(&job_log("local", &[line], 1, 33047));
        let fe = r.first_error.as_ref().expect("a first error");
        assert_eq!((r.category.as_str(), r.layer), (category, layer), "{line}");
        assert_eq!(fe.fields["var"], *var, "{line}");
        assert!(r.deterministic, "{line}");
    }
}

/// The env-check signatures take nothing from the classes before them: the matrix validator's
/// `kv-offload-backend is required` (A5), check_env_vars' list (missing_env_var), `set -u`.
#[test]
fn env_checks_do_not_steal_existing_classes() {
    check(
        "A5",
        "pydantic_core.ValidationError: parsed agentic matrix entry failed validation: kv-offload-backend is required",
    );
    in_noise(
        "missing_env_var",
        "Error: The following required environment variables are not set:",
    );
    let r = tri(&job_log(
        "local",
        &[&format!("{RECIPE}: line 12: MODEL_PATH: unbound variable")],
        1,
        33047,
    ));
    assert_eq!(r.category, "shell_unbound_variable");
}
