//! Cases B22, B23, B25 of cases/README.md, with the exact lines and categories.

use servebench_triage::{preflight_env, required_env, triage_texts, Layer, Tier, TriageOptions};

fn one(text: &str) -> servebench_triage::TriageReport {
    triage_texts(&[("case.log", text)], &TriageOptions::default())
}

#[test]
fn b22_server_unreachable_then_zero_division() {
    let mut log = String::new();
    log.push_str("[harness] starting vllm-benchmark: 20 prompts, concurrency 4, target http://vllm-svc:8000\n");
    log.push_str("[harness] warmup skipped\n");
    for i in 0..20 {
        log.push_str(&format!(
            "ERROR request {i} failed: aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host vllm-svc:8000 ssl:default [Connect call failed ('10.0.0.12', 8000)]\n"
        ));
    }
    log.push_str("Successful requests: 0\n");
    log.push_str("Traceback (most recent call last):\n");
    log.push_str("  File \"/workspace/analysis/convert_report.py\", line 662, in convert\n");
    log.push_str("    mean_ttft = total_ttft / results.get(\"completed\", -1)\n");
    log.push_str("ZeroDivisionError: division by zero\n");
    assert_eq!(log.lines().count(), 27);
    let r = one(&log);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line_no, 3);
    assert_eq!(fe.line, "ERROR request 0 failed: aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host vllm-svc:8000 ssl:default [Connect call failed ('10.0.0.12', 8000)]");
    assert_eq!(r.category, "server_unreachable");
    assert_eq!(
        fe.fields.get("host").map(String::as_str),
        Some("vllm-svc:8000")
    );
    assert_eq!(fe.repeats, 19);
    // The ZeroDivisionError is labelled secondary (generic), at line 27.
    let zd = r
        .secondary
        .iter()
        .find(|s| s.category == "zero_division")
        .expect("secondary ZeroDivisionError");
    assert_eq!(zd.line_no, 27);
    assert!(zd.generic);
}

#[test]
fn b22b_readiness_timeout_with_600s() {
    let log = "Waiting for endpoint to become up in 600 seconds\n\
WARNING [ready_checker.py] Endpoint is not ready. Error='Cannot connect to host 127.0.0.1:8000'\n\
WARNING [ready_checker.py] Endpoint is not ready. Error='Cannot connect to host 127.0.0.1:8000'\n\
WARNING [ready_checker.py] Endpoint is not ready. Error='Cannot connect to host 127.0.0.1:8000'\n\
ValueError: Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: Endpoint readiness timed out after 600s.\n";
    let r = one(log);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(r.category, "server_not_ready_timeout");
    assert_eq!(fe.line_no, 5);
    assert!(fe.line.contains("Endpoint readiness timed out after 600s"));
    assert_eq!(fe.fields.get("timeout_s").map(String::as_str), Some("600"));
}

const F23_HEAD: &str = "INFO 04-30 10:20:35 [monitor.py:33] torch.compile takes 13.93 s in total\n\
ERROR 04-30 10:20:36 [core.py:396] EngineCore failed to start.\n\
ERROR 04-30 10:20:36 [core.py:396] Traceback (most recent call last):\n\
ERROR 04-30 10:20:36 [core.py:396]   File \"/opt/venv/lib/python3.11/site-packages/vllm/v1/engine/core.py\", line 329, in __init__\n\
ERROR 04-30 10:20:36 [core.py:396]   File \"/opt/venv/lib/python3.11/site-packages/vllm/v1/core/kv_cache_utils.py\", line 616, in _check_enough_kv_cache_memory\n\
ERROR 04-30 10:20:36 [core.py:396]     raise ValueError(\n";

#[test]
fn b23a_kv_cache_oom_skips_wrapper_frames_and_echoed_source() {
    let log = format!("{F23_HEAD}ERROR 04-30 10:20:36 [core.py:396] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n");
    let r = one(&log);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line_no, 7);
    assert_eq!(
        fe.line,
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    );
    assert_eq!(r.category, "gpu_oom_kv_cache");
    assert_eq!(fe.tier, Tier::Specific);
    // The generic wrapper is kept, as secondary.
    assert!(r
        .secondary
        .iter()
        .any(|s| s.category == "engine_core_failed" && s.line_no == 2));
}

#[test]
fn b23b_gpu_busy_other_process() {
    let log = format!("{F23_HEAD}ERROR 04-30 10:20:36 [core.py:396] ValueError: Free memory on device (67.24/79.25 GiB) on startup is less than desired GPU memory utilization (0.9, 71.33 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n");
    let r = one(&log);
    assert_eq!(r.category, "gpu_busy_other_process");
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line_no, 7);
    assert_eq!(fe.fields.get("free_gib").map(String::as_str), Some("67.24"));
    assert_eq!(
        fe.fields.get("total_gib").map(String::as_str),
        Some("79.25")
    );
    assert_eq!(
        fe.fields.get("utilization").map(String::as_str),
        Some("0.9")
    );
}

#[test]
fn b23c_cuda_oom() {
    let log = format!("{F23_HEAD}ERROR 04-30 10:20:36 [core.py:396] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a total capacity of 79.25 GiB of which 101.19 MiB is free.\n");
    let r = one(&log);
    assert_eq!(r.category, "cuda_oom");
    assert_eq!(r.first_error.as_ref().unwrap().line_no, 7);
    assert_eq!(r.section_class.as_deref(), Some("D3"));
}

#[test]
fn b25a_missing_env_var_line_1() {
    let log = "❌ Environment variable 'LLMDBENCH_HF_TOKEN' is not set.\nError: Process completed with exit code 1.\n";
    let r = one(log);
    assert_eq!(r.category, "missing_env_var");
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line_no, 1);
    assert_eq!(
        fe.fields.get("var").map(String::as_str),
        Some("LLMDBENCH_HF_TOKEN")
    );
    assert!(r
        .secondary
        .iter()
        .any(|s| s.category == "process_exit_code" && s.line_no == 2));
}

#[test]
fn b25b_hf_gated_repo_401() {
    let log = "INFO 09-03 21:20:47 [api_server.py] vLLM API server version 0.10.0\n\
requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/ORG/MODEL/resolve/main/config.json\n\
OSError: You are trying to access a gated repo.\n";
    let r = one(log);
    assert_eq!(r.category, "hf_auth_gated_repo");
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.line_no, 2);
    assert!(fe
        .line
        .starts_with("requests.exceptions.HTTPError: 401 Client Error"));
    assert!(
        r.next_step.contains("HF_TOKEN missing or invalid"),
        "{}",
        r.next_step
    );
    assert_eq!(r.layer, Layer::Launcher);
}

#[test]
fn b25c_preflight_treats_empty_as_unset() {
    let req = required_env(&["MODEL_PATH"], true);
    assert_eq!(req, vec!["MODEL_PATH".to_string(), "HF_TOKEN".to_string()]);
    let env = |k: &str| match k {
        "HF_TOKEN" => Some(String::new()),
        "MODEL_PATH" => Some("/scratch/models/x".to_string()),
        _ => None,
    };
    let f = preflight_env(&req, env);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].category, "missing_env_var");
    assert_eq!(f[0].var, "HF_TOKEN");
    assert_eq!(f[0].reason, "empty");
    assert_eq!(f[0].message, "missing_env_var: HF_TOKEN (set but empty)");
    // Not gated: nothing to report.
    assert!(preflight_env(&required_env(&["MODEL_PATH"], false), env).is_empty());
}
