//! `servebench triage` on case logs (B22, B23) and bad input.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_servebench");

#[test]
fn b23_log_through_the_cli() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("server.log");
    std::fs::write(
        &p,
        "INFO 04-30 10:20:35 [monitor.py:33] torch.compile takes 13.93 s in total\n\
ERROR 04-30 10:20:36 [core.py:396] EngineCore failed to start.\n\
ERROR 04-30 10:20:36 [core.py:396] Traceback (most recent call last):\n\
ERROR 04-30 10:20:36 [core.py:396]   File \"/opt/venv/lib/python3.11/site-packages/vllm/v1/engine/core.py\", line 329, in __init__\n\
ERROR 04-30 10:20:36 [core.py:396]   File \"/opt/venv/lib/python3.11/site-packages/vllm/v1/core/kv_cache_utils.py\", line 616, in _check_enough_kv_cache_memory\n\
ERROR 04-30 10:20:36 [core.py:396]     raise ValueError(\n\
ERROR 04-30 10:20:36 [core.py:396] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["triage", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["first_error"]["line_no"], 7);
    assert_eq!(v["category"], "gpu_oom_kv_cache");
    assert_eq!(v["secondary"][0]["category"], "engine_core_failed");
    let o = Command::new(BIN)
        .args(["triage", p.to_str().unwrap(), "--repairs", "5"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("Outcome:     failed · phase targeted · repairs 5"),
        "{s}"
    );
}

#[test]
fn bad_input_is_one_line() {
    let o = Command::new(BIN)
        .args(["triage", "/nonexistent/a.log"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.starts_with("error: cannot read log /nonexistent/a.log: "),
        "{e}"
    );
    assert_eq!(e.trim_end().lines().count(), 1);
    let o = Command::new(BIN)
        .args(["triage", "x.log", "--phase", "later"])
        .output()
        .unwrap();
    // a usage error is EX_USAGE (64), never 2 ("regression")
    assert_eq!(o.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown Phase `later`"));
}

#[test]
fn empty_and_binary_logs_are_named_and_repairs_over_budget_refused() {
    let t = tempfile::tempdir().unwrap();
    let empty = t.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let bin = t.path().join("core.bin");
    let mut bytes = b"\x7fELF\x02\x01\x01".to_vec();
    bytes.extend([0u8; 9]);
    bytes.extend(b"\nRuntimeError: CUDA error: out of memory\n");
    std::fs::write(&bin, &bytes).unwrap();
    let o = Command::new(BIN)
        .args(["triage", empty.to_str().unwrap(), bin.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("First error: none found"), "{s}");
    assert!(
        s.contains(&format!("{}: empty log", empty.display())),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            "{}: not a text log (binary data at byte 7)",
            bin.display()
        )),
        "{s}"
    );
    assert!(!s.contains("lines: no error-like line"), "{s}");

    let o = Command::new(BIN)
        .args(["triage", empty.to_str().unwrap(), "--repairs", "9"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: --repairs 9: at most 5 repairs are allowed per candidate (AUTOMATION.md §5.3)\n"
    );
}

// ------------------------------------------------------------ shell-level first errors (real bash)
//
// Issue 19 item 3: a recipe tree in the InferenceX layout run by the real `bash` with an empty
// PATH (no `hf`), its output written into a job log shaped like `servebench run`'s (header,
// `Run bash RECIPE`, the recipe's output, the runner's wrapper with the real exit status), then
// triaged through the CLI: the shell's own line is the first error, not the wrapper.

use std::path::{Path, PathBuf};

fn find_bash() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bash"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/bash"))
}

/// A recipe tree: `benchmarks/benchmark_lib.sh` (with `check_env_vars`) and
/// `benchmarks/single_node/NAME` holding `body` after the usual InferenceX preamble.
fn recipe_tree(root: &Path, name: &str, body: &str) -> PathBuf {
    let bench = root.join("benchmarks");
    std::fs::create_dir_all(bench.join("single_node")).unwrap();
    std::fs::write(
        bench.join("benchmark_lib.sh"),
        "check_env_vars() {\n  local missing=()\n  for v in \"$@\"; do [[ -n \"${!v:-}\" ]] || missing+=(\"$v\"); done\n  if ((${#missing[@]})); then\n    echo \"Error: The following required environment variables are not set:\"\n    printf '  - %s\\n' \"${missing[@]}\"\n    exit 1\n  fi\n}\n",
    )
    .unwrap();
    let recipe = bench.join("single_node").join(name);
    std::fs::write(
        &recipe,
        format!("#!/usr/bin/env bash\nset -euo pipefail\nset -x\nsource \"${{0%/*}}/../benchmark_lib.sh\"\ncheck_env_vars MODEL TP\n{body}"),
    )
    .unwrap();
    recipe
}

/// Runs `bash RECIPE` (PATH: an empty directory) and writes the job log; returns its path and
/// the exit status.
fn run_job(
    dir: &Path,
    recipe: &Path,
    runner: &str,
    port: u16,
    env: &[(&str, &str)],
) -> (PathBuf, i32) {
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = Command::new(find_bash());
    cmd.arg(recipe)
        .env_clear()
        .env("PATH", &empty)
        .current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let code = o.status.code().unwrap();
    let mut log = format!(
        "Runner name: '{runner}'\nJob: benchmark (qwen3.5-fp8-b200-sglang-agentic-mtp, agentic-coding, tp1 ep1 conc4)\n\
         2026-12-02T04:00:00.000Z servebench-job: Run bash {}\n\
         2026-12-02T04:00:00.010Z servebench-job: engine started (pid 4242, process group 4242); waiting for http://127.0.0.1:{port}/health (up to 600 s)\n",
        recipe.display()
    );
    log.push_str(&String::from_utf8_lossy(&o.stdout));
    log.push_str(&String::from_utf8_lossy(&o.stderr));
    log.push_str(&format!(
        "2026-12-02T04:00:01.000Z servebench-job: ERROR: Process died before http://127.0.0.1:{port}/health became ready (exit status {code})\n"
    ));
    let p = dir.join(format!("{runner}.log"));
    std::fs::write(&p, log).unwrap();
    (p, code)
}

fn triage_json(logs: &[&Path]) -> serde_json::Value {
    let mut args = vec!["triage".to_string()];
    args.extend(logs.iter().map(|p| p.display().to_string()));
    args.push("--json".into());
    let o = Command::new(BIN).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The shell line is the first error, the runner's wrapper (after it) is secondary.
fn assert_shell_first(v: &serde_json::Value, category: &str, layer: &str) {
    assert_eq!(v["category"], category, "{v:#}");
    assert_eq!(v["layer"], layer, "{v:#}");
    let line_no = v["first_error"]["line_no"].as_u64().unwrap();
    let wrapper = v["secondary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["category"] == "server_died_at_start")
        .unwrap_or_else(|| panic!("no wrapper in {v:#}"));
    assert!(wrapper["line_no"].as_u64().unwrap() > line_no);
}

#[test]
fn real_bash_command_not_found_on_two_runners() {
    let t = tempfile::tempdir().unwrap();
    let recipe = recipe_tree(t.path(), "qwen.sh", "hf download \"$MODEL\"\n");
    let env = [("MODEL", "Qwen/Qwen3.5-397B-A17B-FP8"), ("TP", "8")];
    let (a, code) = run_job(t.path(), &recipe, "sim-b200_00", 33047, &env);
    assert_eq!(code, 127);
    let (b, _) = run_job(t.path(), &recipe, "sim-b200_01", 45543, &env);
    let v = triage_json(&[&a, &b]);
    assert_shell_first(&v, "shell_command_not_found", "host");
    let fe = &v["first_error"];
    assert_eq!(fe["fields"]["command"], "hf");
    assert_eq!(fe["fields"]["script_line"], "6");
    assert_eq!(fe["fields"]["script"], recipe.display().to_string());
    assert_eq!(v["deterministic"], true);
    assert_eq!(v["outcome"], "readiness-blocked");
    assert_eq!(v["same_first_error_runners"].as_array().unwrap().len(), 2);
    assert!(
        v["fix"]
            .as_str()
            .unwrap()
            .contains("install `hf` on the host"),
        "{v:#}"
    );
    // The summary normalises temp paths, the raw line stays as bash wrote it.
    assert!(fe["raw"]
        .as_str()
        .unwrap()
        .ends_with("line 6: hf: command not found"));
    assert!(
        fe["summary"].as_str().unwrap().starts_with("<tmp>/"),
        "{fe:#}"
    );
    // Text output: the class and the layer, not server_died_at_start.
    let o = Command::new(BIN)
        .args(["triage", a.to_str().unwrap()])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("Class:       shell_command_not_found"), "{s}");
    assert!(s.contains("Layer:       host"), "{s}");
}

#[test]
fn real_bash_missing_library_unbound_variable_permission_and_set_e() {
    let t = tempfile::tempdir().unwrap();
    let env = [("MODEL", "Qwen/Qwen3.5-397B-A17B-FP8"), ("TP", "8")];

    // The sourced ../benchmark_lib.sh is missing.
    let root = t.path().join("nolib");
    let recipe = recipe_tree(&root, "qwen.sh", "echo unreachable\n");
    std::fs::remove_file(root.join("benchmarks/benchmark_lib.sh")).unwrap();
    let (log, code) = run_job(t.path(), &recipe, "r-nolib", 33047, &env);
    assert_eq!(code, 1);
    let v = triage_json(&[&log]);
    assert_shell_first(&v, "shell_file_not_found", "recipe");
    assert_eq!(v["first_error"]["fields"]["script_line"], "4");

    // `set -u` and a variable nobody set.
    let recipe = recipe_tree(
        &t.path().join("unbound"),
        "qwen.sh",
        "echo \"$RESULT_DIR\"\n",
    );
    let (log, code) = run_job(t.path(), &recipe, "r-unbound", 33047, &env);
    assert_eq!(code, 1);
    let v = triage_json(&[&log]);
    assert_shell_first(&v, "shell_unbound_variable", "recipe");
    assert_eq!(v["first_error"]["fields"]["var"], "RESULT_DIR");

    // A helper script of the recipe tree without its execute bit.
    let root = t.path().join("noexec");
    let recipe = recipe_tree(&root, "qwen.sh", "\"${0%/*}/start_server.sh\"\n");
    std::fs::write(
        root.join("benchmarks/single_node/start_server.sh"),
        "echo hi\n",
    )
    .unwrap();
    let (log, code) = run_job(t.path(), &recipe, "r-noexec", 33047, &env);
    assert_eq!(code, 126);
    let v = triage_json(&[&log]);
    assert_shell_first(&v, "shell_permission_denied", "recipe");

    // A failing test under `set -e`: bash prints nothing, the last trace is the command.
    let recipe = recipe_tree(
        &t.path().join("sete"),
        "qwen.sh",
        "[[ -f /nonexistent/Qwen3.5/config.json ]]\necho unreachable\n",
    );
    let (log, code) = run_job(t.path(), &recipe, "r-sete", 33047, &env);
    assert_eq!(code, 1);
    let v = triage_json(&[&log]);
    assert_shell_first(&v, "shell_set_e_command_failed", "recipe");
    assert_eq!(
        v["first_error"]["fields"]["command"],
        "[[ -f /nonexistent/Qwen3.5/config.json ]]"
    );
}
