//! Cache-state control (`--flush-cache`, docs/measurement.md §12.7) against the simulator run
//! as its own process (`servebench sim`), so its `/metrics` can be read after the sweep:
//! without a flush a repeated seed's second point is served from the prefix cache (hit rate
//! predicted from the block arithmetic) and warned about; with `--flush-cache auto` every
//! measured phase starts cold and the simulator counts one reset per point.

use crate::common;
use common::{agentx_traces, read_json, servebench_in, stderr, stdout};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A `servebench sim` child on a free port, killed on drop.
struct Sim {
    child: Child,
    port: u16,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http(port: u16, method: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let status = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    Some((status, body.to_string()))
}

fn start_sim() -> Sim {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(common::BIN)
        .args(["sim", "--speedup", "10", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sim = Sim { child, port };
    let t0 = Instant::now();
    while http(port, "GET", "/health").map(|r| r.0) != Some(200) {
        assert!(t0.elapsed() < Duration::from_secs(30), "sim not ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    sim
}

/// A counter of the simulator's `/metrics` (the first sample of the family).
fn metric(port: u16, name: &str) -> f64 {
    let (_, text) = http(port, "GET", "/metrics").unwrap();
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
}

fn sweep(port: u16, dir: &Path, out: &str, extra: &[&str]) -> Output {
    let o = servebench_in(dir)
        .args(["sweep", "--endpoint"])
        .arg(format!("http://127.0.0.1:{port}"))
        .args([
            "--conc",
            "2",
            "--repeats",
            "2",
            "--isl",
            "64",
            "--osl",
            "8",
            "--range-ratio",
            "1",
            "--no-store",
            "--out",
            out,
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    o
}

fn cache_block(dir: &Path, point: &str) -> Value {
    read_json(&dir.join(point).join("result.json"))["servebench"]["prefix_cache"].clone()
}

/// Prompt tokens the simulator serves from cache for one prompt of 64 whitespace words held
/// in full KV blocks of `block` tokens: all full blocks, but at least one token is prefilled
/// (vLLM recomputes the last token), crates/sim/src/engine.rs.
fn cached_tokens(prompt: f64, block: f64) -> f64 {
    ((prompt / block).floor() * block).min(prompt - 1.0)
}

#[test]
fn without_a_flush_the_repeated_seed_hits_the_cache_and_is_warned_about() {
    let sim = start_sim();
    let tmp = tempfile::tempdir().unwrap();
    let o = sweep(sim.port, tmp.path(), "off", &["--flush-cache", "off"]);
    let (out, err) = (stdout(&o), stderr(&o));
    let d = tmp.path().join("off");
    // 20 measured prompts of 64 tokens per point, KV block 16 (qwen3-8b preset)
    let (n, isl) = (20.0, 64.0);
    let per_prompt = cached_tokens(isl, 16.0);
    // repeat 1: only prompt 0 was sent before (4 warmup copies): 63 of 20 × 64 tokens
    let r1 = cache_block(&d, "conc2-r1");
    assert_eq!(r1["flushed"], false, "{r1}");
    assert_eq!(r1["repeated_prompts"], 0);
    assert_eq!(r1["query_tokens"].as_f64(), Some(n * isl), "{r1}");
    assert_eq!(r1["hit_tokens"].as_f64(), Some(per_prompt), "{r1}");
    // repeat 2: the same 20 prompts again, every one served from the cache
    let r2 = cache_block(&d, "conc2-r2");
    assert_eq!(r2["repeated_prompts"], 20, "{r2}");
    assert_eq!(r2["hit_tokens"].as_f64(), Some(n * per_prompt), "{r2}");
    let rate = r2["hit_rate"].as_f64().unwrap();
    assert!((rate - per_prompt / isl).abs() < 1e-9, "{rate}");
    assert!(
        r2["source"]
            .as_str()
            .unwrap()
            .starts_with("vllm:prefix_cache"),
        "{r2}"
    );
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "one warning, for repeat 2: {err}");
    assert!(
        warnings[0].starts_with("warning: conc 2 repeat 2/2: 20 of 20 prompts were already sent earlier in this sweep (same --seed 0)"),
        "{err}"
    );
    assert!(
        out.contains("| conc 2 repeat 2/2 | no | 20 | 98.4 % | 1260 / 1280 |"),
        "{out}"
    );
    assert_eq!(
        metric(sim.port, "servebench_sim_prefix_cache_resets_total"),
        0.0
    );
    // without the flag: nothing flushed or reported, but the warning still comes
    let o = sweep(sim.port, tmp.path(), "none", &[]);
    assert!(
        stderr(&o).contains("warning: conc 2 repeat 2/2: 20 of 20 prompts were already sent"),
        "{}",
        stderr(&o)
    );
    assert!(cache_block(&tmp.path().join("none"), "conc2-r2").is_null());
    assert!(!stdout(&o).contains("prefix-cache hit rate"));
}

#[test]
fn with_flush_auto_every_point_starts_cold_and_the_sim_counts_one_reset_per_point() {
    let sim = start_sim();
    let tmp = tempfile::tempdir().unwrap();
    let o = sweep(sim.port, tmp.path(), "auto", &["--flush-cache", "auto"]);
    let err = stderr(&o);
    let d = tmp.path().join("auto");
    for p in ["conc2-r1", "conc2-r2"] {
        let b = cache_block(&d, p);
        assert_eq!(b["flushed"], true, "{b}");
        assert_eq!(b["flush"], "auto");
        assert_eq!(
            b["flush_detail"], "POST /reset_prefix_cache → HTTP 200",
            "the vllm: metrics select vLLM's endpoint: {b}"
        );
        assert_eq!(b["query_tokens"].as_f64(), Some(1280.0), "{b}");
        // the warmup's prompt 0 and the previous repeat were flushed: nothing is reused
        assert_eq!(b["hit_tokens"].as_f64(), Some(0.0), "{b}");
        assert_eq!(b["hit_rate"].as_f64(), Some(0.0), "{b}");
    }
    assert_eq!(cache_block(&d, "conc2-r2")["repeated_prompts"], 20);
    assert!(
        !err.contains("warning:"),
        "flushed: no warm-cache warning: {err}"
    );
    assert_eq!(
        metric(sim.port, "servebench_sim_prefix_cache_resets_total"),
        2.0,
        "one reset per point"
    );
    // a path that the server does not have: said, not flushed, and the repeat is warned about
    let o = sweep(
        sim.port,
        tmp.path(),
        "bad",
        &["--flush-cache", "/flush_cache"],
    );
    let err = stderr(&o);
    assert!(
        err.contains("warning: conc 2 repeat 2/2: 20 of 20 prompts were already sent earlier in this sweep (same --seed 0) and the prefix cache was not flushed: POST /flush_cache → HTTP 404"),
        "{err}"
    );
    assert_eq!(
        cache_block(&tmp.path().join("bad"), "conc2-r1")["flushed"],
        false
    );
    // each point says why it was not flushed once, with its hit rate (it was said twice)
    let all = format!("{err}{}", String::from_utf8_lossy(&o.stdout));
    for p in ["conc 2 repeat 1/2", "conc 2 repeat 2/2"] {
        let said = format!("{p}: prefix cache not flushed: POST /flush_cache → HTTP 404");
        assert_eq!(all.matches(&said).count(), 1, "{p}: {all}");
    }
    assert_eq!(
        metric(sim.port, "servebench_sim_prefix_cache_resets_total"),
        2.0
    );
}

#[test]
fn a_bad_flush_value_is_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let o = servebench_in(tmp.path())
        .args(["sweep", "--no-store", "--flush-cache", "sometimes"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("--flush-cache \"sometimes\": expected auto, off or an endpoint path"),
        "{err}"
    );
}

/// `--flush-cache` with `--scenario agentx` (a new-user run found it silently ignored): every
/// point's replay starts from a flushed cache, as on the fresh server InferenceX launches per
/// point, and says so; the simulator counts one reset per point.
#[test]
fn agentx_points_start_from_a_flushed_cache_too() {
    let sim = start_sim();
    let tmp = tempfile::tempdir().unwrap();
    let traces = agentx_traces(tmp.path(), &["trace_0504.json", "trace_0167.json"]);
    let o = servebench_in(tmp.path())
        .args(["sweep", "--endpoint"])
        .arg(format!("http://127.0.0.1:{}", sim.port))
        .args(["--scenario", "agentx", "--conc", "1,2", "--duration", "3"])
        .arg("--traces")
        .arg(&traces)
        .args(["--flush-cache", "auto", "--no-store", "--out", "ax"])
        .output()
        .unwrap();
    // a short window is not a valid InferenceX submission (unsafe_override): measured, exit 1
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("not a valid InferenceX submission"),
        "{}",
        stdout(&o)
    );
    let err = stderr(&o);
    for c in [1, 2] {
        assert!(
            err.contains(&format!(
                "conc {c}: prefix cache flushed before the warmup (POST /reset_prefix_cache → HTTP 200)"
            )),
            "{err}"
        );
    }
    assert_eq!(
        metric(sim.port, "servebench_sim_prefix_cache_resets_total"),
        2.0,
        "one reset per point"
    );
}
