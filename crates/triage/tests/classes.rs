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
