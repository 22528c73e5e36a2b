//! Helpers shared by the servebench integration tests (`mod common;` in a test file). Each
//! test binary uses a subset, hence `dead_code` is allowed here.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// The servebench binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_servebench");

/// `servebench` in `dir` with the environment a test must not inherit removed: the store path
/// (`SERVEBENCH_DB`), API keys, colours.
pub fn servebench_in(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env_remove("SERVEBENCH_DB")
        .env_remove("OPENAI_API_KEY")
        .env_remove("SERVEBENCH_API_KEY")
        .env("NO_COLOR", "1");
    c
}

/// A JSON file, panicking with its path.
pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap()
}

/// A JSON-lines file (blank lines skipped), panicking with its path.
pub fn read_jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A process's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A process's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Non-empty stderr lines.
pub fn err_lines(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Makes a file writable by its owner (shared/ is checked out read-only).
pub fn make_writable(p: impl AsRef<Path>) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(p.as_ref()).unwrap().permissions().mode();
    std::fs::set_permissions(p.as_ref(), std::fs::Permissions::from_mode(mode | 0o200)).unwrap();
}

/// A writable copy of `from` at `to`.
pub fn copy_rw(from: &str, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("{from}: {e}"));
    make_writable(to);
}

/// An HTTP 200 JSON reply of the client's mock server.
pub fn json_reply(v: Value) -> servebench_client::mock::Reply {
    servebench_client::mock::Reply::Body {
        status: 200,
        body: v.to_string().into_bytes(),
        content_type: "application/json",
    }
}

/// `servebench ARGS` in `dir` (as [`servebench_in`], with `SERVEBENCH_GSM8K_DIR` pointing at the
/// shared GSM8K files for eval jobs): (exit code, stdout, stderr).
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = servebench_in(dir)
        .args(args)
        .env(
            "SERVEBENCH_GSM8K_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/gsm8k"),
        )
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// Crash-test helpers (SIGKILL at seeded moments, store soundness, torn JSON lines).
pub mod crash;
