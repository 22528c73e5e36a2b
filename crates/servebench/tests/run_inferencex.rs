//! `servebench run --simulate` on real-shaped InferenceX recipes (issue 19): a tree written for
//! the test in the InferenceX layout (`configs/`, `benchmarks/benchmark_lib.sh` with
//! `check_env_vars`, `benchmarks/single_node/fixed_seq_len/*.sh` recipes that `hf download`,
//! probe `nvidia-smi`, launch SGLang / vLLM with real-looking flags, wait with `curl` and run
//! `run_benchmark_serving`). The recipes run for real under `bash`; only the engine and host
//! tools are shims. Checked: rows stored, the engine started with the recipe's port/TP/model,
//! the recipe's remaining steps ran and its result file landed where it expects; at a newer
//! image the removed flag fails with the engine's argparse text.

use std::path::Path;

use crate::common;
use common::runs::{find_files, real_args, real_repo, slurm_up, stored_rows};
use common::{read_json, run_in};

const LIB: &str = r#"#!/usr/bin/env bash
# Shared benchmarking utilities (the shape of InferenceX's benchmarks/benchmark_lib.sh)
export PORT="${PORT:-8888}"

check_env_vars() {
    local missing_vars=()
    for var_name in "$@"; do
        if [[ -z "${!var_name:-}" ]]; then
            missing_vars+=("$var_name")
        fi
    done
    if [[ ${#missing_vars[@]} -gt 0 ]]; then
        echo "Error: The following required environment variables are not set:"
        for var in "${missing_vars[@]}"; do
            echo "  - $var"
        done
        exit 1
    fi
}

# streams the server log while polling /health, as InferenceX's wait_for_ready does
wait_for_server_ready() {
    local port="$1" pid="$2" log="$3"
    while [[ ! -f "$log" ]]; do sleep 0.2; done
    tail -f -n +1 "$log" &
    local tail_pid=$!
    until curl --output /dev/null --silent --fail "http://0.0.0.0:${port}/health"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "Process died before http://0.0.0.0:${port}/health became ready." >&2
            kill "$tail_pid" 2>/dev/null || true
            exit 1
        fi
        sleep 1
    done
    kill "$tail_pid" 2>/dev/null || true
}

run_benchmark_serving() {
    local model="" port="" result_filename="" result_dir="" conc=""
    while [[ $# -gt 0 ]]; do
        case $1 in
            --model) model="$2"; shift 2 ;;
            --port) port="$2"; shift 2 ;;
            --max-concurrency) conc="$2"; shift 2 ;;
            --result-filename) result_filename="$2"; shift 2 ;;
            --result-dir) result_dir="$2"; shift 2 ;;
            *) echo "Unknown parameter: $1"; return 1 ;;
        esac
    done
    python3 "$(dirname "${BASH_SOURCE[0]}")/../utils/bench_serving/benchmark_serving.py" \
        --model "$model" --backend vllm --base-url "http://0.0.0.0:$port" \
        --dataset-name random --max-concurrency "$conc" --save-result \
        --result-dir "$result_dir" --result-filename "$result_filename.json"
}
"#;

const SGLANG: &str = r#"#!/usr/bin/env bash
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC ISL OSL RESULT_FILENAME RESULT_DIR
hf download "$MODEL"
nvidia-smi
SERVER_LOG="$RESULT_DIR/server.log"
python3 -m sglang.launch_server \
  --model-path "$MODEL" \
  --served-model-name "$MODEL" \
  --host 0.0.0.0 --port "$PORT" \
  --trust-remote-code \
  --tp "$TP" \
  --context-length "$MAX_MODEL_LEN" \
  --max-running-requests 8 \
  --mem-fraction-static 0.85 \
  --cuda-graph-max-bs "$CONC" \
  > "$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_for_server_ready "$PORT" "$SERVER_PID" "$SERVER_LOG"
run_benchmark_serving --model "$MODEL" --port "$PORT" --max-concurrency "$CONC" \
  --result-filename "$RESULT_FILENAME" --result-dir "$RESULT_DIR"
echo "recipe finished after the client step" > "$RESULT_DIR/after-client.txt"
"#;

const VLLM: &str = r#"#!/usr/bin/env bash
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC RESULT_FILENAME RESULT_DIR
if [[ "$MODEL" != /* ]]; then hf download "$MODEL"; fi
vllm serve "$MODEL" --host 0.0.0.0 --port "$PORT" \
  --tensor-parallel-size "$TP" \
  --max-model-len "$MAX_MODEL_LEN" \
  --max-num-seqs 4 \
  --no-enable-prefix-caching > "$RESULT_DIR/server.log" 2>&1 &
SERVER_PID=$!
wait_for_server_ready "$PORT" "$SERVER_PID" "$RESULT_DIR/server.log"
run_benchmark_serving --model "$MODEL" --port "$PORT" --max-concurrency "$CONC" \
  --result-filename "$RESULT_FILENAME" --result-dir "$RESULT_DIR"
"#;

fn config(key: &str, image: &str, framework: &str, tp: u32, conc: u32) -> String {
    format!(
        "{key}:\n  image: {image}\n  model: Qwen/Qwen3-8B\n  model-prefix: tiny\n  runner: h200\n  precision: bf16\n  framework: {framework}\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - {{ tp: {tp}, conc-list: [{conc}] }}\n"
    )
}

/// The InferenceX-layout tree: `configs/master.yaml` (SGLang at v0.5.16, vLLM at v0.27.1),
/// `configs/new.yaml` (the SGLang config at v0.5.20), runners, library, two recipes.
fn tree(d: &Path) {
    let single = d.join("benchmarks/single_node/fixed_seq_len");
    std::fs::create_dir_all(&single).unwrap();
    std::fs::create_dir_all(d.join("configs")).unwrap();
    std::fs::write(d.join("benchmarks/benchmark_lib.sh"), LIB).unwrap();
    std::fs::write(single.join("tiny_bf16_h200_sglang.sh"), SGLANG).unwrap();
    std::fs::write(single.join("tiny_bf16_h200_vllm.sh"), VLLM).unwrap();
    std::fs::write(
        d.join("configs/master.yaml"),
        config(
            "tiny-bf16-h200-sglang",
            "lmsysorg/sglang:v0.5.16-cu130",
            "sglang",
            2,
            2,
        ) + &config(
            "tiny-bf16-h200-vllm",
            "vllm/vllm-openai:v0.27.1",
            "vllm",
            1,
            1,
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("configs/new.yaml"),
        config(
            "tiny-bf16-h200-sglang",
            "lmsysorg/sglang:v0.5.20-cu130",
            "sglang",
            2,
            2,
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("configs/runners.yaml"),
        "labels:\n  h200:\n    - h200-test_00\n",
    )
    .unwrap();
}

fn run_args<'a>(catalog: &'a str, keys: &[&'a str], out: &'a str) -> Vec<&'a str> {
    let mut a = vec!["run"];
    a.extend_from_slice(keys);
    a.extend_from_slice(&[
        "--catalog",
        catalog,
        "--runners",
        "configs/runners.yaml",
        "--recipes",
        ".",
        "--executor",
        "local",
        "--simulate",
        "--no-evals",
        "--num-prompts",
        "4",
        "--warmups",
        "0",
        "--isl",
        "64",
        "--osl",
        "16",
        "--out",
        out,
        "--db",
        "s.db",
    ]);
    a
}

fn attempt(d: &Path, run: &str, key: &str, tp: u32, conc: u32) -> std::path::PathBuf {
    d.join(format!(
        "{run}/points/{key}_1k1k_tp{tp}-pp1-dcp1-pcp1-ep1-dpafalse_spec-none_conc{conc}/attempt-1"
    ))
}

#[test]
fn real_recipes_run_under_simulate_and_store_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let (rc, out, err) = run_in(
        d,
        &run_args(
            "configs/master.yaml",
            &["tiny-bf16-h200-sglang", "tiny-bf16-h200-vllm"],
            "r",
        ),
    );
    assert_eq!(rc, 0, "{out}\n{err}");
    assert_eq!(out.matches(": stored 1 row").count(), 2, "{out}");

    // SGLang: the engine the recipe started, with the recipe's port, TP and model
    let a = attempt(d, "r", "tiny-bf16-h200-sglang", 2, 2);
    let log = std::fs::read_to_string(a.join("job.log")).unwrap();
    let engine = read_json(&a.join("engine.json"));
    let status = read_json(&a.join("status.json"));
    assert_eq!(engine["engine"], "sglang");
    assert_eq!(engine["port"], status["port"], "{engine}");
    assert_eq!(engine["tp"], 2);
    assert_eq!(engine["model"], "Qwen/Qwen3-8B");
    assert_eq!(engine["served_model_name"], "Qwen/Qwen3-8B");
    assert_eq!(engine["max_running_requests"], 8);
    assert_eq!(engine["context_length"], 1024 + 1024 + 256);
    assert!(
        log.contains("servebench-shim: hf download Qwen/Qwen3-8B: simulated"),
        "{log}"
    );
    // nvidia-smi lists the point's 2 GPUs of the runner's SKU
    assert_eq!(log.matches("NVIDIA H200").count(), 2, "{log}");
    // the flags passed the v0.5.16 table (where --cuda-graph-max-bs is still an alias)
    let server = std::fs::read_to_string(a.join("results/server.log")).unwrap();
    assert!(
        server.contains("flags checked against the sglang 0.5.16 table"),
        "{server}"
    );
    // the client step was handed over and returned; the recipe's remaining steps ran
    assert!(
        log.contains("servebench-shim: benchmark_serving handed over"),
        "{log}"
    );
    assert!(
        log.contains("the recipe finished its remaining steps (exit status 0)"),
        "{log}"
    );
    assert!(a.join("results/after-client.txt").is_file());
    // RESULT_FILENAME.json, where the recipe's --result-dir / --result-filename put it
    let result_files: Vec<String> = std::fs::read_dir(a.join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".json") && n.contains("_conc2_h200-test_00_recipe-"))
        .collect();
    assert_eq!(result_files.len(), 1, "{result_files:?}");
    let r = read_json(&a.join("results").join(&result_files[0]));
    assert_eq!(r["max_concurrency"], 2, "{r}");
    // the simulator stood in for SGLang: SGLang's /metrics names, so the sweep (--engine sglang,
    // the engine the recipe launched) warns of no engine-profile mismatch (it did when the
    // simulator exposed vLLM's series to every launch)
    let mlog = std::fs::read_to_string(a.join("measure.log")).unwrap();
    assert!(mlog.contains("conc 2: 4 ok, 0 failed"), "{mlog}");
    assert!(!mlog.contains("engine profile is"), "{mlog}");

    // vLLM: the positional model, --tensor-parallel-size; argv checked against v0.27.1's table
    let v = attempt(d, "r", "tiny-bf16-h200-vllm", 1, 1);
    let engine = read_json(&v.join("engine.json"));
    assert_eq!(engine["engine"], "vllm");
    assert_eq!(engine["model"], "Qwen/Qwen3-8B");
    assert_eq!(engine["max_running_requests"], 4);
    let server = std::fs::read_to_string(v.join("results/server.log")).unwrap();
    assert!(
        server.contains("6 flags checked against the vllm 0.27.1 table"),
        "{server}"
    );
}

#[test]
fn a_removed_flag_at_a_newer_image_fails_like_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let (rc, out, err) = run_in(
        d,
        &run_args("configs/new.yaml", &["tiny-bf16-h200-sglang"], "r"),
    );
    assert_ne!(rc, 0, "{out}\n{err}");
    let argparse = "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill";
    assert!(out.contains(argparse), "{out}");
    assert!(out.contains("removed_cli_alias"), "{out}");
    assert!(!out.contains(": stored"), "{out}");
    let a = attempt(d, "r", "tiny-bf16-h200-sglang", 2, 2);
    let server = std::fs::read_to_string(a.join("results/server.log")).unwrap();
    assert!(server.starts_with("usage: sglang serve [-h]"), "{server}");
    assert!(server.contains(argparse), "{server}");
    // the engine never served
    assert!(!a.join("engine.json").exists());
}

#[test]
fn a_recipe_that_never_reaches_its_client_step_is_not_stored() {
    // No `set -e`, a misspelt client call: the recipe ends 0 without a result file, as
    // dsr1_fp8_h200.sh did with its benchmark_lib.sh missing (stored and `passed` before).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let vllm = d.join("benchmarks/single_node/fixed_seq_len/tiny_bf16_h200_vllm.sh");
    let text = std::fs::read_to_string(&vllm)
        .unwrap()
        .replace("set -euo pipefail\n", "")
        .replace(
            "run_benchmark_serving --model",
            "run_benchmark_servng --model",
        )
        + "echo recipe done\n";
    std::fs::write(&vllm, text).unwrap();
    let (rc, out, err) = run_in(
        d,
        &run_args("configs/master.yaml", &["tiny-bf16-h200-vllm"], "r"),
    );
    assert_ne!(rc, 0, "{out}\n{err}");
    assert!(!out.contains(": stored"), "{out}");
    assert!(
        out.contains("run_benchmark_servng: command not found"),
        "{out}"
    );
    let a = attempt(d, "r", "tiny-bf16-h200-vllm", 1, 1);
    let log = std::fs::read_to_string(a.join("job.log")).unwrap();
    assert!(log.contains("without reaching its client step"), "{log}");
}

const SGLANG_AGENTIC: &str = r#"#!/usr/bin/env bash
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC RESULT_DIR
SERVER_LOG="$RESULT_DIR/server.log"
sglang serve --model-path "$MODEL" --host 0.0.0.0 --port "$PORT" --tp "$TP" \
  --enable-metrics --max-running-requests 8 > "$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_for_server_ready "$PORT" "$SERVER_PID" "$SERVER_LOG"
# as qwen3.5_fp8_b200_sglang_mtp.sh's capture_cache_metrics (on EXIT)
capture_cache_metrics() {
    curl -fsS "http://localhost:$PORT/metrics" 2>/dev/null \
        | grep -E '^(sglang:(cache_hit_rate|cached_tokens_total|prompt_tokens_total|token_usage))' \
        >> "$RESULT_DIR/cache_metrics.txt" || true
}
trap capture_cache_metrics EXIT
mkdir -p "$RESULT_DIR/aiperf_artifacts"
# as dsv4_fp4_b200_sglang_mtp.sh: benchmark_lib.sh's validate_required_agentic_server_metrics
export AIPERF_REQUIRED_SERVER_METRIC_PREFIX="sglang:"
metrics_dir="$RESULT_DIR/aiperf_artifacts"
aiperf profile --model "$MODEL" --url "http://0.0.0.0:$PORT" \
  --output-artifact-dir "$metrics_dir"
test -s "$RESULT_DIR/aiperf_artifacts/servebench_agentx.json"
if [ ! -s "$metrics_dir/server_metrics_export.json" ] || [ ! -s "$metrics_dir/server_metrics_export.csv" ]; then
    echo "ERROR: required AIPerf server metrics artifacts are missing or empty in $metrics_dir" >&2
    exit 1
fi
grep -F -m 1 -q "\"${AIPERF_REQUIRED_SERVER_METRIC_PREFIX}" "$metrics_dir/server_metrics_export.json"
echo "Validated required AIPerf server metrics prefix '$AIPERF_REQUIRED_SERVER_METRIC_PREFIX'"
"#;

/// An SGLang AgentX recipe: the simulator serves SGLang's `/metrics` series, the sweep runs with
/// `--engine sglang` (no profile-mismatch warning) and the aggregate's server-side cache block
/// is read through the SGLang adapter (`sglang:cached_tokens` / `sglang:prompt_tokens`).
#[test]
fn an_sglang_agentic_recipe_gets_sglang_server_metrics() {
    let Some(traces) =
        servebench_testkit::shared_path(env!("CARGO_MANIFEST_DIR"), "data/agentx-traces")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let agentic = d.join("benchmarks/single_node/agentic");
    std::fs::create_dir_all(&agentic).unwrap();
    for name in ["tiny_bf16_h200_sglang.sh", "tiny_bf16_h200.sh"] {
        std::fs::write(agentic.join(name), SGLANG_AGENTIC).unwrap();
    }
    std::fs::write(
        d.join("configs/agentic.yaml"),
        "tiny-bf16-h200-sglang-agentic:\n  image: lmsysorg/sglang:v0.5.16-cu130\n  model: Qwen/Qwen3-8B\n  model-prefix: tiny\n  runner: cluster:h200-dgxc\n  precision: bf16\n  framework: sglang\n  multinode: false\n  scenarios:\n    agentic-coding:\n    - search-space:\n      - { tp: 2, kv-offloading: none, conc-list: [2] }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("configs/runners-agentic.yaml"),
        "labels:\n  cluster:h200-dgxc:\n    - h200-dgxc_00\nhardware:\n  cluster:h200-dgxc:\n    available-cpu-dram-mib: 1_471_356\n    gpus-per-node: 8\n",
    )
    .unwrap();
    let t = traces.display().to_string();
    let (rc, out, err) = run_in(
        d,
        &[
            "run",
            "tiny-bf16-h200-sglang-agentic",
            "--catalog",
            "configs/agentic.yaml",
            "--runners",
            "configs/runners-agentic.yaml",
            "--recipes",
            ".",
            "--executor",
            "local",
            "--simulate",
            "--no-evals",
            "--traces",
            &t,
            "--duration",
            "3",
            "--out",
            "r",
            "--db",
            "s.db",
        ],
    );
    // stored, marked invalid as a submission (a 3 s window): run exits non-zero for that
    assert!(out.contains(": stored 1 row"), "rc {rc}\n{out}\n{err}");
    let points = d.join("r/points");
    let point = std::fs::read_dir(&points)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let a = point.join("attempt-1");
    // AIPerf's server-metrics export, written from the engine's /metrics scraped over the
    // measurement: the recipe's required-prefix check passed
    let log = std::fs::read_to_string(a.join("job.log")).unwrap();
    assert!(
        log.contains("Validated required AIPerf server metrics prefix 'sglang:'"),
        "{log}"
    );
    let arts = a.join("results/aiperf_artifacts");
    let export = read_json(&arts.join("server_metrics_export.json"));
    let prompt = &export["metrics"]["sglang:prompt_tokens"];
    assert_eq!(prompt["type"], "counter", "{export}");
    assert!(
        prompt["series"][0]["stats"]["total"].as_f64().unwrap() > 0.0,
        "{export}"
    );
    let csv = std::fs::read_to_string(arts.join("server_metrics_export.csv")).unwrap();
    assert!(
        csv.starts_with("# AIPerf Server Metrics Export (CSV)"),
        "{csv}"
    );
    assert!(
        csv.contains("\nEndpoint,Type,Metric,Unit,total,rate,"),
        "{csv}"
    );
    // measured on the virtual clock (the default): the sweep embedded the engine the recipe
    // launched, and the export is its own scrapes of it over the modelled window
    assert!(
        log.contains("measuring: ") && log.contains(" sweep --sim-clock virtual --sim-gpu h200"),
        "{log}"
    );
    assert!(log.contains("--sim-served-name "), "{log}");
    assert_eq!(
        export["summary"]["endpoints_configured"][0],
        "http://virtual-clock.simulator.invalid/metrics",
        "{export}"
    );
    assert_eq!(
        export["benchmark_id"]
            .as_str()
            .map(|s| s.contains("_conc2_")),
        Some(true)
    );
    let mlog = std::fs::read_to_string(a.join("measure.log")).unwrap();
    assert!(!mlog.contains("engine profile is"), "{mlog}");
    assert!(mlog.contains("sim_clock: virtual"), "{mlog}");
    let agg = read_json(&a.join("results/aiperf_artifacts/servebench_agentx.json"));
    let sm = &agg["server_metrics"];
    assert_eq!(sm["adapter"], "sglang", "{sm}");
    let rate = sm["cache"]["overall_cache_hit_rate"].as_f64();
    assert!(rate.is_some_and(|r| (0.0..=1.0).contains(&r)), "{sm}");
    assert!(
        sm["tokens"]["prompt_total"].as_u64().is_some_and(|n| n > 0),
        "{sm}"
    );
    // the recipe's own capture of SGLang's cache series found them
    let cache = std::fs::read_to_string(a.join("results/cache_metrics.txt")).unwrap();
    for name in [
        "sglang:cache_hit_rate{",
        "sglang:cached_tokens_total{",
        "sglang:prompt_tokens_total{",
        "sglang:token_usage{",
    ] {
        assert!(cache.contains(name), "{name}: {cache}");
    }
}

/// The same tree on the CI's Slurm (one job per point, `sbatch --gpus`): the recipe runs inside
/// the Slurm job with its shims, the engine gets the recipe's port and TP, rows are stored.
#[test]
fn real_recipes_run_under_simulate_on_slurm() {
    if !slurm_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let mut args = run_args("configs/master.yaml", &["tiny-bf16-h200-sglang"], "r");
    let i = args.iter().position(|a| *a == "local").unwrap();
    args[i] = "slurm";
    let (rc, out, err) = run_in(d, &args);
    assert_eq!(rc, 0, "{out}\n{err}");
    assert!(out.contains("(slurm job "), "{out}");
    assert!(out.contains(": stored 1 row"), "{out}");
    let a = attempt(d, "r", "tiny-bf16-h200-sglang", 2, 2);
    let engine = read_json(&a.join("engine.json"));
    let status = read_json(&a.join("status.json"));
    assert_eq!(engine["port"], status["port"], "{engine}");
    assert_eq!(engine["tp"], 2);
    assert_eq!(engine["model"], "Qwen/Qwen3-8B");
    let log = std::fs::read_to_string(a.join("job.log")).unwrap();
    assert!(
        log.contains("the recipe finished its remaining steps (exit status 0)"),
        "{log}"
    );
    assert!(a.join("results/after-client.txt").is_file());
}

/// Issue 27: the REAL InferenceX repository (`shared/data/inferencex/repo-843c6254f.tar.gz`,
/// unmodified) under `servebench coverage`: a sample of its single-node configs — both vendors,
/// both scenarios, a KV-offload (HiCache DRAM) point, an ATOM recipe that requires AIPerf's
/// `atom:` server-metrics export — runs from its own recipes with the simulator behind the
/// shims, each in its own `/workspace` (bubblewrap), and stores rows with the point's identity.
#[test]
fn the_real_inferencex_recipes_store_rows_under_simulate() {
    let bwrap = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()));
    if !bwrap {
        servebench_testkit::skip_or_fail("needs bwrap (scripts/services/bubblewrap.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(ix) = real_repo(d) else { return };
    let keys = [
        "qwen3.5-fp8-b200-sglang",            // fixed-seq, NVIDIA, SGLang
        "dsr1-fp8-mi300x-sglang",             // fixed-seq, AMD (rocm-smi, amd-smi)
        "glm5.2-fp4-b200-sglang-agentic-mtp", // agentic, NVIDIA, KV offload (HiCache DRAM)
        "kimik3-fp4-mi355x-atom-agentic-mtp", // agentic, AMD, ATOM, requires `atom:` export
    ];
    let args = real_args(
        "coverage",
        &keys,
        &[
            "--recipes",
            "InferenceX",
            "--duration",
            "3",
            "--jobs",
            "4",
            "--out",
            "cov",
            "--db",
            "cov.db",
            "--json",
        ],
    );
    let (rc, out, err) = run_in(d, &args);
    let rep: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(rc, 0, "{out}\n{err}");
    assert_eq!(
        (rep["run"].as_u64(), rep["stored"].as_u64()),
        (Some(4), Some(4)),
        "{out}"
    );
    let rows = rep["rows"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["vendor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("fixed-seq", "nvidia"),
            ("fixed-seq", "amd"),
            ("agentic", "nvidia"),
            ("agentic", "amd")
        ]
    );
    // the checkout was not written: every point's /workspace was its own copy
    assert!(!ix.join("server.log").exists());
    let points = d.join("cov/points");
    let dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&points)
        .unwrap()
        .map(|e| e.unwrap().path().join("attempt-1"))
        .collect();
    let find = |key: &str| {
        dirs.iter()
            .find(|p| {
                p.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{key}_"))
            })
            .unwrap_or_else(|| panic!("{key}: no point in {dirs:?}"))
            .clone()
    };
    // fixed-seq: /workspace/server.log and the result file the recipe put in /workspace/
    let q = find("qwen3.5-fp8-b200-sglang");
    assert!(q.join("workspace/server.log").is_file());
    let agg = read_json(&find_files(&q.join("sweep"), "agg.json")[0]);
    assert_eq!(agg["hw"], "b200", "{agg}");
    assert_eq!(agg["framework"], "sglang");
    assert_eq!(agg["precision"], "fp8");
    // AMD: the GPU tools speak for the MI300X
    let m = find("dsr1-fp8-mi300x-sglang");
    let log = std::fs::read_to_string(m.join("job.log")).unwrap();
    // start_gpu_monitor picks the vendor by `command -v nvidia-smi`: an AMD host has amd-smi
    assert!(log.contains("[GPU Monitor] Started AMD"), "{log}");
    assert!(
        !log.contains("NVIDIA"),
        "an AMD runner's tools name no NVIDIA GPU"
    );
    // the KV-offload point ran with its DRAM arm, and an AgentX row was stored
    let g = find("glm5.2-fp4-b200-sglang-agentic-mtp");
    assert!(g.parent().unwrap().to_string_lossy().contains("_kv-dram_"));
    assert!(!find_files(&g.join("sweep"), "agentx.json").is_empty());
    let ax = read_json(&find_files(&g.join("sweep"), "agg.json")[0]);
    assert_eq!(ax["benchmark_type"], "agentic_traces", "{ax}");
    assert_eq!(ax["framework"], "sglang", "{ax}");
    // recorded as InferenceX's aggregate records it: the mode, the search space's backend and
    // the DRAM budget of the matrix row (b200-dgxc: 3,774,874 MiB × dram-utilization 0.80 /
    // 8 GPUs × TP 8 = 2399 GB, generate_sweep_configs.py), in agg.json, agentx.json and the
    // stored row
    let stored: Vec<serde_json::Value> = stored_rows(&d.join("cov.db"))
        .concat()
        .iter()
        .map(|r| r.to_value())
        .collect();
    let glm = stored
        .iter()
        .find(|r| r["infmax_model_prefix"] == "glm5.2")
        .unwrap_or_else(|| panic!("no glm5.2 row in {stored:?}"));
    let agentx = read_json(&find_files(&g.join("sweep"), "agentx.json")[0]);
    for v in [&ax, &agentx, glm] {
        assert_eq!(v["kv_offloading"], "dram", "{v}");
        assert_eq!(
            v["kv_offload_backend"],
            serde_json::json!({"name": "hicache"}),
            "{v}"
        );
        assert_eq!(v["allocated_cpu_dram_gb"], 2399, "{v}");
    }
    // ATOM: AIPerf's export with the `atom:` series the recipe requires
    let k = find("kimik3-fp4-mi355x-atom-agentic-mtp");
    let export = &find_files(&k.join("results"), "server_metrics_export.json")[0];
    assert!(std::fs::read_to_string(export).unwrap().contains("\"atom:"));
}
