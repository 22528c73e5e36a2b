//! One test per class of AUTOMATION.md §5.4 (and per extra category) with the error text as it
//! was published: issue trackers of vLLM, SGLang, NCCL users, enroot/pyxis, GitHub CLI, and the
//! InferenceX scripts that print the message (variables filled in where the script prints a
//! template). The source of each line is the `source` of its row in `signatures.toml`; the
//! lines are copied here so that a change of the table cannot silently change what is tested.
//!
//! Six classes have no public log text (B7, B11, E4, F1, F2, F6: checks of this project or a
//! tooling pitfall); their test in `classes.rs` uses the message the check prints.
//!
//! Each log: a job start, some noise, the published line at a known line number, a generic
//! wrapper after it. The first error must be that line, classified as its class, and the
//! evidence must quote it with `FILE:LINE`.

use servebench_triage::{triage_texts, SignatureTable, TriageOptions, TriageReport};

fn triage(log: &str) -> TriageReport {
    triage_texts(&[("job.log", log)], &TriageOptions::default())
}

/// `lines` are the log; the published error is at 1-based `at`.
fn check(id: &str, lines: &[&str], at: u64) {
    let mut log = String::from("Runner name: 'h200-dgxc-slurm_02'\n");
    for l in lines {
        log.push_str(l);
        log.push('\n');
    }
    log.push_str("##[error]Process completed with exit code 1.\n");
    let at = at + 1; // the runner line comes first
    let r = triage(&log);
    let fe = r
        .first_error
        .as_ref()
        .unwrap_or_else(|| panic!("{id}: no first error in\n{log}"));
    assert_eq!(
        r.signature_id.as_deref(),
        Some(id),
        "{id}: classified as {} at line {}: {}",
        r.category,
        fe.line_no,
        fe.line
    );
    assert_eq!(fe.line_no, at, "{id}: {}", fe.line);
    let sig = SignatureTable::builtin().get(id).unwrap();
    assert_eq!(r.category, sig.category, "{id}");
    assert!(
        sig.source.starts_with("https://") || sig.source.starts_with("shared: "),
        "{id}: {}",
        sig.source
    );
    let quoted = format!("job.log:{at}: `{}`", fe.line.replace('`', "'"));
    assert!(
        r.evidence[0].starts_with("first error at ") && r.evidence[0].ends_with(&quoted),
        "{id}: {:?}",
        r.evidence
    );
}

macro_rules! real {
    ($($name:ident: $id:literal @ $at:literal => [$($line:expr),+ $(,)?];)+) => {
        $( #[test] fn $name() { check($id, &[$($line),+], $at) } )+
    };
}

real! {
    // utils/process_changelog.py:59-63
    a1_changelog_deletion: "A1" @ 3 => [
        "Traceback (most recent call last):",
        "  File \"/home/runner/work/InferenceX/InferenceX/utils/process_changelog.py\", line 59, in get_added_lines",
        "ValueError: Deletions are not allowed in /home/runner/work/InferenceX/InferenceX/perf-changelog.yaml. Only additions to the changelog are permitted. Found deleted line: - config-keys:",
    ];
    // utils/validate_perf_changelog.py:219-223
    a2_changelog_layout: "A2" @ 1 => [
        "utils.validate_perf_changelog.ChangelogValidationError: appended entries changed historical perf-changelog.yaml bytes; restore the base file byte-for-byte and append at the end",
    ];
    // utils/validate_perf_changelog.py:157-160
    a3_pr_link: "A3" @ 1 => [
        "ChangelogValidationError: new PR entry must use 'https://github.com/SemiAnalysisAI/InferenceX/pull/3363' or an XXX placeholder; found 'https://github.com/SemiAnalysisAI/InferenceX/pull/3362'",
    ];
    // utils/process_changelog.py:153 and 148
    a4_config_key: "A4" @ 1 => [
        "ValueError: Config key 'qwen3.8next-fp4-b200-sglang-agentic' not found in master configs.",
    ];
    a4_wildcard: "A4" @ 1 => [
        "ValueError: No config keys matched the wildcard pattern 'qwen3.9*' in master configs.",
    ];
    // utils/matrix_logic/validation.py:828-829
    a5_schema: "A5" @ 1 => [
        "ValueError: Master config entry 'dsr1-fp8-h200-sglang' failed validation:",
    ];
    // .github/workflows/run-sweep.yml:87
    a6_labels: "A6" @ 1 => [
        "::error::PR has multiple conflicting sweep labels. Pick exactly one.",
    ];
    // .claude/commands/klaud-pr-status-html.md:32-33 (the state word of the PR dashboard)
    a7_no_sweep: "A7" @ 1 => ["#3363 NO_SWEEP"];
    // KLAUD_DEBUG.md §5.2
    b1_docker_socket: "B1" @ 2 => [
        "+ docker stop $(docker ps -a -q)",
        "permission denied while trying to connect to the docker API at unix:///var/run/docker.sock",
    ];
    // NVIDIA/enroot#187, NVIDIA/pyxis#53
    b2_disk_full_enroot: "B2" @ 2 => [
        "[INFO] Extracting image content...",
        "tar: usr/lib/x86_64-linux-gnu/libcudnn_cnn_train.so.8.9.7: Cannot write: No space left on device",
    ];
    b2_disk_full_pyxis: "B2" @ 3 => [
        "pyxis: importing docker image ...",
        "slurmstepd: error: pyxis:     [INFO] Creating squashfs filesystem...",
        "slurmstepd: error: pyxis:     Write failed because No space left on device",
    ];
    // KLAUD_DEBUG.md §5.1
    b3_node_health: "B3" @ 1 => ["slurmstepd: error: Kill task failed (JobId=N StepId=N)"];
    // CONTRIBUTING.md:91
    b4_root_files: "B4" @ 1 => [
        "Error: File was unable to be removed Error: EACCES: permission denied, rmdir '/home/gharunner/_work/InferenceX/InferenceX/benchmark_logs/logs/slurm_job-4411'",
    ];
    // docker/for-win#9227
    b5_dns: "B5" @ 1 => [
        "Error response from daemon: Get https://registry-1.docker.io/v2/: dial tcp: lookup registry-1.docker.io on 192.168.65.1:53: no such host",
    ];
    // runners/launch_b200-cw.sh:40
    b6_salloc: "B6" @ 1 => ["ERROR: salloc failed to allocate a job"];
    // benchmarks/benchmark_lib.sh:1867 and 1822
    b8_aiperf_env: "B8" @ 1 => [
        "ERROR: isolated AIPerf environment is incomplete at /workspace/.aiperf-venv",
    ];
    b8_uv: "B8" @ 1 => ["ERROR: uv installation did not create /workspace/.aiperf-uv/bin/uv-aiperf"];
    // KLAUD_DEBUG.md §5.4 and the uvicorn bind error it refers to
    b9_port: "B9" @ 1 => [
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8888): address already in use",
    ];
    // runners/launch_b300-nv.sh:256
    b10_job_died: "B10" @ 1 => ["ERROR: Job 881234 failed before creating log file"];
    // NVIDIA/enroot#146
    c1_manifest_404: "C1" @ 5 => [
        "enroot import docker://hpcreid/openmpi:2212228",
        "[INFO] Querying registry for permission grant",
        "[INFO] Fetching image manifest list",
        "[INFO] Fetching image manifest",
        "[ERROR] URL https://registry-1.docker.io/v2/hpcreid/openmpi/manifests/2212228 returned error code: 404 Not Found",
    ];
    // NVIDIA/enroot src/docker.sh:287; image of SemiAnalysisAI/InferenceX#3346
    c2_tag_at_digest: "C2" @ 2 => [
        "enroot import -o /mnt/squash/x.sqsh docker://lmsysorg/sglang:nightly-dev-cu13-20260921-0f6761b5@sha256:987c7e4bd26918647211a5dcad72a2bdf2a5f394ac1469eff730e7517fc139be",
        "[ERROR] Invalid image reference: docker://lmsysorg/sglang:nightly-dev-cu13-20260921-0f6761b5@sha256:987c7e4bd26918647211a5dcad72a2bdf2a5f394ac1469eff730e7517fc139be",
    ];
    // sgl-project/sglang#4330
    c3_negative_kv: "C3" @ 2 => [
        "python3 -m sglang.launch_server --model-path /models/dsv4 --mem-fraction-static 0.84",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ];
    // sgl-project/sglang#7505
    d1_ambiguous: "D1" @ 2 => [
        "python3 -m sglang.launch_server --model Qwen/Qwen2.5-7B-Instruct",
        "launch_server.py: error: ambiguous option: --model could match --model-path, --model-loader-extra-config",
    ];
    // vllm-project/vllm#3651, sgl-project/sglang#4116
    d2_unrecognized_vllm: "D2" @ 1 => ["api_server.py: error: unrecognized arguments: --api-key"];
    d2_unrecognized_sglang: "D2" @ 1 => [
        "launch_server.py: error: unrecognized arguments: --enable-reasoning",
    ];
    // vllm-project/vllm#15598 (a worker line with its process and log prefix)
    d3_cuda_oom: "D3" @ 2 => [
        "vllm serve /models/llama --tensor-parallel-size 8",
        "(RayWorkerWrapper pid=206994, ip=192.168.10.25) ERROR 03-27 10:29:13 [worker_base.py:620] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 6 has a total capacity of 44.53 GiB of which 448.00 KiB is free.",
    ];
    // KLAUD_DEBUG.md §2.1 + the traceback shape of vllm-project/vllm#19186
    d4_capture_oom: "D4" @ 6 => [
        "vllm serve /models/minimax-m3 --data-parallel-size 8",
        "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470] Traceback (most recent call last):",
        "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]   File \"/usr/local/lib/python3.12/site-packages/vllm/compilation/breakable_cudagraph.py\", line 140, in __exit__",
        "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]     self.cuda_graph.capture_end()",
        "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]   File \"/usr/local/lib/python3.12/site-packages/torch/cuda/graphs.py\", line 84, in capture_end",
        "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470] RuntimeError: CUDA error: out of memory",
    ];
    // KLAUD_DEBUG.md §4a (sgl-project/sglang#25551)
    d5_deepgemm: "D5" @ 1 => [
        "CUDA_ERROR_ILLEGAL_ADDRESS (700) at /deepgemm/csrc/.../runtime_utils.hpp:143",
    ];
    // KLAUD_DEBUG.md §4b (sgl-project/sglang#25563)
    d6_trtllm_gemm: "D6" @ 1 => [
        "RuntimeError ... trtllm_batched_gemm_runner.cu:276 ... numBatches=256, GemmMNK 128x1024x6144",
    ];
    // KLAUD_DEBUG.md §4c: the assert is echoed source, the exception line is bare
    d7_arch_assert: "D7" @ 5 => [
        "python3 -m sglang.launch_server --model-path /models/qwen3.5 --tp 4",
        "Traceback (most recent call last):",
        "  File \"/opt/venv/lib/python3.12/site-packages/sglang/srt/layers/attention/flashattention_backend.py\", line 88, in __init__",
        "    assert sm_100 <= arch <= sm_110f",
        "AssertionError",
    ];
    // KLAUD_DEBUG.md:254
    d8_msa: "D8" @ 1 => [
        "ValueError: q2k_indices must be contiguous with layout [head_kv, total_q, topK]",
    ];
    // benchmarks/benchmark_lib.sh:427, 740, 432; .github/workflows/benchmark-tmpl.yml:314
    d9_died_before_ready: "D9" @ 1 => ["Process died before http://0.0.0.0:8888/health became ready."];
    d10_died_under_load: "D10" @ 1 => ["ERROR: Server process 41233 died during benchmark"];
    d11_result_missing: "D11" @ 1 => [
        "Run failed: Benchmark result qwen3.8next_fp4_sglang_tp1-ep1_conc1.json not found.",
    ];
    d12_readiness_timeout: "D12" @ 1 => ["Timed out waiting for http://0.0.0.0:8888/health."];
    // utils/collect_eval_results.py:379
    e1_no_eval_results: "E1" @ 1 => ["> No eval results found to summarize."];
    // utils/evals/validate_scores.py:288-291 and the workflow's eval-only check
    e2_score_below: "E2" @ 1 => [
        "FAIL: [conc=16] gsm8k exact_match,strict-match = 0.7120 (< 0.85 from default.gsm8k)",
    ];
    e2_eval_only: "E2" @ 1 => ["Eval-only run failed: no results*.json files found."];
    // utils/agentic/validation/validate_agentic_result.py:75-79
    e3_error_rate: "E3" @ 1 => [
        "ERROR: aiperf request error rate exceeded the benchmark limit: 23/200 = 11.500% > 10.000%",
    ];
    // gpustack/gpustack#1268 (vLLM given a local path that does not exist)
    f3_weights_missing: "F3" @ 1 => [
        "ERROR 02-20 10:13:40 engine.py:389] Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/data/models/cache/model_scope/deepseek-ai/DeepSeek-R1-Distill-Llama-70B'. Use `repo_type` argument if needed.",
    ];
    // KLAUD_DEBUG.md:197 quotes gh's answer "cannot be rerun" (run id and reason filled)
    f4_rerun: "F4" @ 1 => ["run 17734455 cannot be rerun; it is still in progress"];
    // cli/cli#12476
    f5_projects_classic: "F5" @ 1 => [
        "GraphQL: Projects (classic) is being deprecated in favor of the new Projects experience, see: https://github.blog/changelog/2024-05-23-sunset-notice-projects-classic/. (repository.issue.projectCards)",
    ];
    // benchmarks/benchmark_lib.sh:338
    missing_env_var: "missing_env_var" @ 1 => [
        "Error: The following required environment variables are not set:",
        "  - MODEL_PATH",
    ];
    // vllm-project/semantic-router#817
    hf_gated: "hf_auth_gated_repo" @ 1 => [
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-693b313c-3a360d925a720ea722d0d659;d80b0023-f1de-421c-828f-7f393a1763c2)",
    ];
    // vllm-project/vllm#14574 (CI log with its prefix) / #2248
    kv_cache_blocks: "gpu_oom_kv_cache" @ 2 => [
        "[2025-03-10T15:07:20Z] INFO 03-10 08:07:20 [gpu_model_runner.py:1067] Model loading took 0.2389 GB and 0.977005 seconds",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    ];
    // pytorch/pytorch#175666 (vLLM engine core line)
    gpu_busy: "gpu_busy_other_process" @ 1 => [
        "(EngineCore_DP0 pid=6940) ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
    ];
    // vllm-project/vllm#10523, #7800
    nccl: "nccl_error" @ 1 => [
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
    ];
    // sgl-project/sglang#3687
    module_missing: "python_module_missing" @ 1 => ["ModuleNotFoundError: No module named 'sgl_kernel'"];
    // vllm-project/vllm#20361, #14942: compiled extension against another torch (ABI)
    undefined_symbol: "python_import_undefined_symbol" @ 4 => [
        "INFO 07-02 15:53:59 [__init__.py:244] Automatically detected platform cuda.",
        "Traceback (most recent call last):",
        "  File \"/home/pc/data/envs/vllmNext/bin/vllm\", line 5, in <module>",
        "ImportError: /home/pc/data/vllm/vllm/vllm/_C.abi3.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb",
    ];
    undefined_symbol_storage: "python_import_undefined_symbol" @ 1 => [
        "ImportError: vllm/vllm/_C.abi3.so: undefined symbol: _ZNK3c1011StorageImpl27throw_data_ptr_access_errorEv",
    ];
    // sgl-project/sglang#4778, #2584, #10951; vllm-project/vllm#31018
    shared_library_missing: "python_shared_library_missing" @ 1 => [
        "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
    ];
    shared_library_cudart: "python_shared_library_missing" @ 1 => [
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
    ];
    shared_library_nvrtc: "python_shared_library_missing" @ 1 => [
        "ImportError: libnvrtc.so.12: cannot open shared object file: No such file or directory",
    ];
    // Shell-level errors, as GNU bash 5.2.15 and dash 0.5.12 print them (run here: `bash
    // r.sh`, `bash -c`, `sh -c`; the bash source lines are the rows' `source`).
    shell_source_missing: "shell_file_not_found" @ 3 => [
        "++ dirname bench/single_node/recipe.sh",
        "+ source bench/single_node/../benchmark_lib.sh",
        "bench/single_node/recipe.sh: line 4: bench/single_node/../benchmark_lib.sh: No such file or directory",
    ];
    shell_exec_missing: "shell_file_not_found" @ 1 => ["r7.sh: line 2: ./missing.sh: No such file or directory"];
    shell_cd_missing: "shell_file_not_found" @ 1 => ["r16.sh: line 2: cd: /nonexistent: No such file or directory"];
    shell_bash_c_source_missing: "shell_file_not_found" @ 1 => ["bash: ../benchmark_lib.sh: No such file or directory"];
    shell_dash_source_missing: "shell_file_not_found" @ 1 => ["sh: 1: .: cannot open ../benchmark_lib.sh: No such file"];
    shell_python_script_missing: "shell_file_not_found" @ 1 => [
        "/root/.pyenv/versions/3.11.7/bin/python3: can't open file '/x/y.py': [Errno 2] No such file or directory",
    ];
    shell_hf_not_found: "shell_command_not_found" @ 2 => [
        "+ hf download Qwen/Qwen3.5-397B-A17B-FP8",
        "r2.sh: line 3: hf: command not found",
    ];
    shell_function_not_found: "shell_command_not_found" @ 1 => ["./lib.sh: line 3: nosuchcmd_in_lib: command not found"];
    shell_bash_c_not_found: "shell_command_not_found" @ 1 => ["bash: hf: command not found"];
    shell_bash_c_line_not_found: "shell_command_not_found" @ 1 => ["bash: line 1: hf: command not found"];
    shell_dash_not_found: "shell_command_not_found" @ 1 => ["sh: 1: hf: not found"];
    shell_exec_not_found: "shell_command_not_found" @ 1 => ["r9.sh: line 1: exec: nosuch_exec: not found"];
    shell_env_not_found: "shell_command_not_found" @ 1 => ["env: ‘hf’: No such file or directory"];
    shell_timeout_not_found: "shell_command_not_found" @ 1 => ["timeout: failed to run command ‘hf’: No such file or directory"];
    shell_nohup_not_found: "shell_command_not_found" @ 1 => ["nohup: failed to run command 'hf': No such file or directory"];
    shell_xargs_not_found: "shell_command_not_found" @ 1 => ["xargs: hf: No such file or directory"];
    shell_unbound: "shell_unbound_variable" @ 1 => ["r3.sh: line 2: MODEL_PATH: unbound variable"];
    shell_unbound_in_lib: "shell_unbound_variable" @ 1 => ["./lib.sh: line 4: NOPE_VAR: unbound variable"];
    shell_unbound_positional: "shell_unbound_variable" @ 1 => ["r12.sh: line 2: 1: unbound variable"];
    shell_unbound_array: "shell_unbound_variable" @ 1 => ["r15.sh: line 2: arr[1]: unbound variable"];
    shell_unbound_bash_c: "shell_unbound_variable" @ 1 => ["bash: FOO: unbound variable"];
    shell_unbound_dash: "shell_unbound_variable" @ 1 => ["sh: 1: X: parameter not set"];
    shell_null_or_unset: "shell_unbound_variable" @ 1 => ["r19.sh: line 2: MODEL: parameter null or not set"];
    shell_exec_denied: "shell_permission_denied" @ 1 => ["r4.sh: line 2: ./notexec.sh: Permission denied"];
    shell_script_denied: "shell_permission_denied" @ 1 => ["bash: ./r4.sh: Permission denied"];
    shell_dash_denied: "shell_permission_denied" @ 1 => ["sh: 1: ./r14.sh: Permission denied"];
    shell_syntax_token: "shell_syntax_error" @ 1 => ["r13.sh: line 2: syntax error near unexpected token `x'"];
    shell_syntax_eof: "shell_syntax_error" @ 1 => ["r11.sh: line 4: syntax error: unexpected end of file"];
    shell_syntax_bash_c: "shell_syntax_error" @ 1 => ["bash: -c: line 1: syntax error near unexpected token `x'"];
    shell_syntax_bash53: "shell_syntax_error" @ 1 => [
        "r11.sh: line 4: syntax error: unexpected end of file from `if' command on line 2",
    ];
    shell_crlf_required_file: "shell_bad_interpreter" @ 1 => ["bash: ./crlf.sh: cannot execute: required file not found"];
    shell_crlf_bad_interpreter: "shell_bad_interpreter" @ 1 => [
        "bash: ./crlf.sh: /bin/bash^M: bad interpreter: No such file or directory",
    ];
    shell_crlf_env: "shell_bad_interpreter" @ 1 => ["/usr/bin/env: ‘bash\\r’: No such file or directory"];
    // multinode: a published multi-node Slurm job (srun names the lost node, slurmstepd
    // reports the step it cancels); salloc's line as nebius/soperator#854 shows it
    node_lost_srun: "node_lost" @ 2 => [
        "** Finished validation **",
        "srun: error: Node failure on jean-zay-iam37",
        "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.",
        "slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
    ];
    node_lost_salloc: "node_lost" @ 1 => ["salloc: error: Node failure on worker-1"];
    // NVIDIA/nccl#1405
    nccl_ib_completion: "nccl_transport" @ 1 => [
        "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
        "kp-ddp-worker-0:3468:3905 [4] NCCL INFO transport/net.cc:1302 -> 6",
    ];
    // sgl-project/sglang#27894 (UCX under NIXL, then NIXL's own line)
    ucx_devx_cq: "ucx_error" @ 1 => [
        "[1784273406.684686] [iv-ydzf15rfggbw80bfv8sr:994396:0]      ib_mlx5_dv.c:452  UCX  ERROR   mlx5dv_devx_obj_create(CQ) failed on mlx5_1, syndrome 0x2aac7c: Remote I/O error",
        "E0717 07:30:06.719655  994396 nixl_agent.cpp:359] createBackend: backend 'UCX' encountered error during intra-agent transfer setup with status NIXL_ERR_BACKEND",
    ];
    // ai-dynamo/nixl#503, and NIXL's C++ line of sglang#27894 alone
    nixl_backend: "nixl_error" @ 2 => [
        "[2025-06-26 02:04:10] FakeKVSender send with kv_indices: 4",
        "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND",
    ];
    nixl_create_backend: "nixl_error" @ 1 => [
        "E0717 07:30:06.719655  994396 nixl_agent.cpp:359] createBackend: backend 'UCX' encountered error during intra-agent transfer setup with status NIXL_ERR_BACKEND",
    ];
    // ai-dynamo/dynamo#1188
    etcd_connect: "etcd_unreachable" @ 1 => [
        "ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to etcd server with config ClientOptions { etcd_url: [\"http://localhost:2379\"], etcd_connect_options: None, attach_lease: true }",
        "Caused by:",
    ];
    // ai-dynamo/dynamo#3612
    nats_connect: "nats_unreachable" @ 4 => [
        "Traceback (most recent call last):",
        "  File \"/workspace/components/src/dynamo/frontend/main.py\", line 256, in async_main",
        "    runtime = DistributedRuntime(loop, is_static)",
        "Exception: Failed to connect to NATS: IO error: Connection refused (os error 111). Verify NATS server is running and accessible.",
    ];
    // NVIDIA/srt-slurm src/srtctl/core/health.py (wait_for_model)
    never_healthy: "role_never_registered" @ 2 => [
        "Model is not ready, waiting for 1 prefills and 0 decodes. Have 0 prefills and 5 decodes.",
        "Model did not get healthy in 3600 seconds",
    ];
    // runners/launch_gb200-nv.sh:689
    srt_recipe_missing: "srt_recipe_missing" @ 2 => [
        "Submitting job with srtctl...",
        "Error: CONFIG_FILE does not exist after srt-slurm setup: recipes/gb200-fp4/8k1k/low-latency.yaml",
        "Current directory: /home/runner/work/InferenceX/InferenceX/srt-slurm",
    ];
    // benchmarks/benchmark_lib.sh:91 (agentic, KV_OFFLOADING=dram without the backend)
    kv_offload_backend_required: "launcher_env_check" @ 2 => [
        "+ check_agentic_kv_offloading",
        "Error: KV_OFFLOAD_BACKEND is required when KV_OFFLOADING=dram",
    ];
    // benchmarks/benchmark_lib.sh:64
    kv_offloading_unsupported: "recipe_env_check" @ 1 => [
        "Error: unsupported KV_OFFLOADING value 'disk' (expected one of: none, dram)",
    ];
}

/// Every row with a published line has a test here or in `classes.rs`; the lines above cover
/// the 37 classes of §5.4 that have public text.
#[test]
fn every_published_class_has_a_real_text_test() {
    let src = include_str!("real_text.rs");
    let table = SignatureTable::builtin();
    for s in table.signatures() {
        if s.source_text.is_none() || s.generic {
            continue;
        }
        assert!(
            src.contains(&format!("\"{}\" @", s.id)),
            "{} has a published line but no test in real_text.rs",
            s.id
        );
    }
}

// ------------------------------------------------------------------ what the evidence may say

fn stage_line(r: &TriageReport) -> &str {
    r.evidence
        .iter()
        .find(|e| e.starts_with("raised "))
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no stage evidence in {:?}", r.evidence))
}

#[test]
fn before_any_import_only_when_the_log_shows_the_job_start() {
    // With the job start (line 1) and no import/launch line before the error (line 3).
    let r = triage(
        "Runner name: 'r1'\n+ check_env_vars MODEL_PATH\nError: The following required environment variables are not set:\n  - MODEL_PATH\n",
    );
    let s = stage_line(&r);
    assert!(
        s.contains("before any image import or server start: the job starts at job.log:1 `Runner name: 'r1'` and lines 1–2 hold no import or launch line"),
        "{s}"
    );
    // The same error in a log that starts mid-job: no claim on the stage.
    let r = triage("+ check_env_vars MODEL_PATH\nError: The following required environment variables are not set:\n");
    let s = stage_line(&r);
    assert!(!s.contains("before any image import"), "{s}");
    assert!(s.contains("does not show the job start"), "{s}");
    assert!(r.first_error.as_ref().unwrap().marks.job_start.is_none());
}

#[test]
fn an_error_after_model_loading_is_during_engine_start_up() {
    let log = "Runner name: 'r1'\n\
        + vllm serve /models/llama --tensor-parallel-size 8\n\
        INFO 05-23 09:31:24 [gpu_model_runner.py:1347] Model loading took 18.1450 GiB and 40.766484 seconds\n\
        ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n";
    let r = triage(log);
    let s = stage_line(&r);
    assert!(
        s.contains("raised while the engine was running (since job.log:2 `+ vllm serve"),
        "{s}"
    );
    assert!(
        s.contains("during engine start-up, after model loading, before any server-ready line (model loaded at job.log:3 `Model loading took 18.1450 GiB and 40.766484 seconds`"),
        "{s}"
    );
    assert!(!s.contains("before any image import"), "{s}");
    // Before model loading finished: still start-up, and said so.
    let r = triage("+ python3 -m sglang.launch_server --model-path /m\nModuleNotFoundError: No module named 'sgl_kernel'\n");
    let s = stage_line(&r);
    assert!(s.contains("during engine start-up, before any model-loaded or server-ready line (engine launched at job.log:1"), "{s}");
}

#[test]
fn an_error_after_the_server_reported_ready_says_so() {
    let log = "+ python3 -m sglang.launch_server --model-path /m\n\
        [2026-09-21 01:15:07] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=12.11 GB\n\
        [2026-09-21 01:16:07] The server is fired up and ready to roll!\n\
        ERROR: Server process 41233 died during benchmark\n";
    let r = triage(log);
    let s = stage_line(&r);
    assert!(
        s.contains("after the server reported ready (ready at job.log:3 `The server is fired up and ready to roll!`; engine launched at job.log:1)"),
        "{s}"
    );
}

#[test]
fn an_error_after_the_image_import_cites_the_import_line() {
    let log = "Runner name: 'r1'\n+ enroot import -o /mnt/x.sqsh docker://lmsysorg/sglang:v0.5.20\n[ERROR] URL https://registry-1.docker.io/v2/lmsysorg/sglang/manifests/v0.5.20 returned error code: 404 Not Found\n";
    let r = triage(log);
    let s = stage_line(&r);
    assert!(
        s.contains("after the image import, before any server start (image imported at job.log:2 `+ enroot import"),
        "{s}"
    );
    assert_eq!(r.signature_id.as_deref(), Some("C1"));
}

#[test]
fn every_evidence_line_cites_a_log_line_and_table_conclusions_are_apart() {
    let a = "Runner name: 'r1'\n+ python3 -m sglang.launch_server --model-path /m\nlaunch_server.py: error: unrecognized arguments: --enable-reasoning\n";
    let b = a.replace("'r1'", "'r2'");
    let r = triage_texts(&[("a.log", a), ("b.log", &b)], &TriageOptions::default());
    for e in &r.evidence {
        assert!(
            e.contains(".log:"),
            "evidence without a FILE:LINE reference: {e}"
        );
    }
    assert!(
        r.evidence
            .iter()
            .any(|e| e.contains("same first error on 2 runners (r1, r2)")
                && e.contains("runner names at a.log:1, b.log:1")),
        "{:?}",
        r.evidence
    );
    assert!(
        r.reasoning
            .iter()
            .any(|e| e.contains("deterministic class")),
        "{:?}",
        r.reasoning
    );
    assert!(!r.evidence.iter().any(|e| e.contains("deterministic class")));
    let text = r.render_text();
    assert!(text.contains("Reasoning (signature table):"), "{text}");
}

#[test]
fn unknown_errors_stay_unclassified_with_their_line() {
    let log = "Runner name: 'r1'\n+ vllm serve /m\nRuntimeError: Triton Error [CUDA]: device-side assert triggered in a kernel nobody has seen\nEngineCore failed to start.\n";
    let r = triage(log);
    assert_eq!(r.category, "unclassified");
    assert_eq!(r.signature_id, None);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line_no, 3);
    assert!(
        r.evidence[0].contains("job.log:3: `RuntimeError: Triton Error [CUDA]: device-side assert"),
        "{:?}",
        r.evidence
    );
    assert!(r.next_step.contains("job.log:3"), "{}", r.next_step);
}

#[test]
fn a_bare_assertion_error_without_the_arch_assert_is_not_d7() {
    let log = "Traceback (most recent call last):\n  File \"/x/y.py\", line 3, in f\n    assert x > 0\nAssertionError\n";
    let r = triage(log);
    assert_eq!(r.category, "unclassified");
}
