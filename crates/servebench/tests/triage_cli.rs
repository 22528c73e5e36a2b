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
    assert_eq!(o.status.code(), Some(2));
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
