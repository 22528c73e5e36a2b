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

/// The shared data folder (`shared/` next to the checkout).
pub const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared");

/// The PRODUCT.md scenario's files (`shared/data/scenario`).
pub const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/scenario");

/// The GSM8K test/train files and recorded solutions (`shared/data/gsm8k`).
pub const GSM8K: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/gsm8k");

/// The scratch store for commands that need `--db` but whose test does not look at it: one
/// file in this target directory's test temp dir (`CARGO_TARGET_TMPDIR`), so nothing is written
/// into the test's working directory and a store of another checkout's build (another schema)
/// is never shared.
pub fn scratch_db() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("servebench-tests-scratch.db")
}

/// `servebench ARGS` in `dir` (as [`servebench_in`], with `SERVEBENCH_GSM8K_DIR` pointing at the
/// shared GSM8K files for eval jobs), run to the end.
pub fn output_in<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Output {
    gsm8k_in(dir).args(args).output().unwrap()
}

/// `servebench` in `dir` as [`servebench_in`], with `SERVEBENCH_GSM8K_DIR` pointing at the
/// shared GSM8K files (for `eval` and `sweep --eval`).
pub fn gsm8k_in(dir: &Path) -> Command {
    let mut c = servebench_in(dir);
    c.env("SERVEBENCH_GSM8K_DIR", GSM8K);
    c
}

/// A finished process's stdout, after asserting it exited 0 (as [`exits`]).
pub fn ok(o: &Output) -> String {
    exits(o, 0)
}

/// A finished process's stdout, after asserting it exited with `code` (the panic shows the exit
/// code, stdout and stderr).
pub fn exits(o: &Output, code: i32) -> String {
    let out = stdout(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit {:?}\nstdout:\n{out}\nstderr:\n{}",
        o.status.code(),
        stderr(o)
    );
    out
}

/// `servebench` in `dir` as [`servebench_in`], with the shared GSM8K files and stdout and stderr
/// piped: for a child the test spawns, signals and then collects with `wait_with_output`.
pub fn piped_in(dir: &Path) -> Command {
    let mut c = gsm8k_in(dir);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c
}

/// (exit code, stdout, stderr) of a finished process; -1 when it was killed by a signal.
pub fn outcome(o: &Output) -> (i32, String, String) {
    (o.status.code().unwrap_or(-1), stdout(o), stderr(o))
}

/// `servebench ARGS` in `dir`, as [`output_in`]: (exit code, stdout, stderr).
pub fn run_in<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> (i32, String, String) {
    outcome(&output_in(dir, args))
}

/// `servebench` in `dir` as [`servebench_in`], with the store at [`scratch_db`] instead of
/// `servebench.db` in `dir`.
pub fn scratch_in(dir: &Path) -> Command {
    let mut c = servebench_in(dir);
    c.env("SERVEBENCH_DB", scratch_db());
    c
}

/// `servebench ARGS` in `dir` with the store at [`scratch_db`]: (exit code, stdout, stderr).
pub fn run_scratch<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> (i32, String, String) {
    outcome(&scratch_in(dir).args(args).output().unwrap())
}

/// `servebench ARGS` in the test's own working directory (the crate), with the store at
/// [`scratch_db`] and `SERVEBENCH_GSM8K_DIR` unset (the data folder comes from the arguments),
/// run to the end. Paths in `args` should be absolute.
pub fn output_scratch<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    scratch_in(Path::new("."))
        .args(args)
        .env_remove("SERVEBENCH_GSM8K_DIR")
        .output()
        .unwrap()
}

/// Runs `f` (typically a `servebench` child run to the end) on tokio's blocking pool, so that a
/// mock server on the test's own runtime keeps answering while it waits.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// [`output_in`] on tokio's blocking pool (see [`blocking`]).
pub async fn output_in_async<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Output {
    let dir = dir.to_path_buf();
    let args: Vec<std::ffi::OsString> = args.iter().map(|a| a.as_ref().to_owned()).collect();
    blocking(move || output_in(&dir, &args)).await
}

/// [`output_scratch`] on tokio's blocking pool (see [`blocking`]).
pub async fn output_scratch_async(args: Vec<String>) -> Output {
    blocking(move || output_scratch(&args)).await
}

/// `http://127.0.0.1:PORT` of a port that was free a moment ago and has nothing listening.
pub fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    url
}

/// Waits (at most 60 s, then panics) until `file` has at least `n` lines.
pub fn wait_lines(file: &Path, n: usize) {
    let t = std::time::Instant::now();
    while std::fs::read_to_string(file)
        .map(|s| s.lines().count())
        .unwrap_or(0)
        < n
    {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "{} never reached {n} lines",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sends SIGINT (Ctrl-C) to `pid` with `kill -INT`, asserting it was delivered.
pub fn sigint(pid: u32) {
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// A minimal OpenAI-compatible mock handler: `/health` ok, `/v1/models` with one model
/// `mock-model`, `/tokenize` counting one token per whitespace-separated word of `prompt`;
/// every other request is answered by `rest` (completions, chat, errors).
pub fn openai_mock(
    rest: impl Fn(&servebench_client::mock::Captured) -> servebench_client::mock::Reply
        + Send
        + Sync
        + 'static,
) -> servebench_client::mock::Handler {
    std::sync::Arc::new(
        move |c: &servebench_client::mock::Captured| match c.path.as_str() {
            "/health" => json_reply(serde_json::json!({"status": "ok"})),
            "/v1/models" => json_reply(serde_json::json!({"data": [{"id": "mock-model"}]})),
            "/tokenize" => {
                let words = c.json()["prompt"]
                    .as_str()
                    .unwrap_or_default()
                    .split_whitespace()
                    .count();
                json_reply(serde_json::json!({"count": words, "tokens": vec![1; words]}))
            }
            _ => rest(c),
        },
    )
}

/// The real llama.cpp engine of `scripts/services/real-engine.sh`: (`SERVEBENCH_REAL_ENGINE_URL`,
/// `SERVEBENCH_REAL_ENGINE_MODEL_DIR`), or `None` with `skipped: …` printed — a panic instead
/// under `SERVEBENCH_REQUIRE_SERVICES=1`, so CI cannot pass by skipping.
pub fn real_engine() -> Option<(String, std::path::PathBuf)> {
    let get = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
    match (
        get("SERVEBENCH_REAL_ENGINE_URL"),
        get("SERVEBENCH_REAL_ENGINE_MODEL_DIR"),
    ) {
        (Some(u), Some(d)) => Some((u, d.into())),
        _ => {
            servebench_testkit::skip_or_fail(
                "SERVEBENCH_REAL_ENGINE_URL / SERVEBENCH_REAL_ENGINE_MODEL_DIR not set",
            );
            None
        }
    }
}

/// `servebench sweep` of the real llama.cpp engine at `url` (ISL 128, OSL 32, 1 GPU, the
/// model's tokenizer from `dir`) into `out`, with `extra` flags; asserts success and returns
/// stdout.
pub fn real_engine_sweep(url: &str, dir: &Path, out: &Path, extra: &[&str]) -> String {
    let o = scratch_in(Path::new("."))
        .args([
            "sweep",
            "--endpoint",
            url,
            "--engine",
            "llama.cpp",
            "--gpus",
            "1",
            "--isl",
            "128",
            "--osl",
            "32",
        ])
        .arg("--tokenizer")
        .arg(dir.join("tokenizer.json"))
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    ok(&o)
}

/// Crash-test helpers (SIGKILL at seeded moments, store soundness, torn JSON lines).
pub mod crash;

/// Helpers of the `run` / `coverage` tests (the real InferenceX repository, stored rows).
pub mod runs;

/// The shared folder (`$SERVEBENCH_SHARED`, else `../shared` beside the repository).
pub fn shared() -> std::path::PathBuf {
    std::env::var_os("SERVEBENCH_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// A traces folder `dir/traces` holding the named shared AgentX traces (copied).
pub fn agentx_traces(dir: &Path, names: &[&str]) -> std::path::PathBuf {
    let t = dir.join("traces");
    std::fs::create_dir_all(&t).unwrap();
    for n in names {
        let src = shared().join("data/agentx-traces").join(n);
        std::fs::copy(&src, t.join(n)).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    }
    t
}

/// Top-level check of `v` against one of `docs/schema/*.schema.json`: required keys present, no
/// keys outside `properties` (when `additionalProperties` is false), `type`/`enum`/`const` of
/// each property.
pub fn check_schema(v: &Value, schema_file: &str) {
    let schema = read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/schema")
            .join(schema_file),
    );
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{schema_file}: not an object"));
    for k in schema["required"].as_array().unwrap() {
        assert!(
            obj.contains_key(k.as_str().unwrap()),
            "{schema_file}: missing required key {k}"
        );
    }
    let props = schema["properties"].as_object().unwrap();
    for (k, val) in obj {
        let Some(p) = props.get(k) else {
            assert!(
                schema["additionalProperties"] != false,
                "{schema_file}: key `{k}` not in the schema"
            );
            continue;
        };
        if let Some(t) = p.get("type") {
            let types: Vec<&str> = match t {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().map(|x| x.as_str().unwrap()).collect(),
                _ => vec![],
            };
            let ok = types.iter().any(|t| match *t {
                "string" => val.is_string(),
                "number" => val.is_number(),
                "integer" => val.is_u64() || val.is_i64(),
                "boolean" => val.is_boolean(),
                "null" => val.is_null(),
                "object" => val.is_object(),
                "array" => val.is_array(),
                _ => false,
            });
            assert!(ok, "{schema_file}: `{k}` = {val} is not {types:?}");
        }
        if let Some(e) = p.get("enum") {
            assert!(
                e.as_array().unwrap().contains(val),
                "{schema_file}: `{k}` = {val} not in {e}"
            );
        }
        if let Some(c) = p.get("const") {
            assert_eq!(c, val, "{schema_file}: `{k}`");
        }
    }
}
