//! `--flush-cache` against a REAL llama.cpp `llama-server` (`../shared/tools/real-engine/`):
//! the shared engine (started without `--slot-save-path`) has no flush, which is said in one
//! line, and its `/metrics` give each point's hit rate (a repeated seed is served from cache);
//! a second llama-server started here with `--slot-save-path` is flushed by erasing its slots —
//! cold points with `--cache-ram 0`, and a warning that the flush did not empty the cache with
//! the default host-memory prompt cache.
//!
//! Needs `SERVEBENCH_REAL_ENGINE_URL` and `SERVEBENCH_REAL_ENGINE_MODEL_DIR` (the llama-server
//! binary is `$SERVEBENCH_REAL_ENGINE_MODEL_DIR/../bin/llama-server`, where `setup.sh` puts it);
//! without them the tests print `skipped: …`, or fail when `SERVEBENCH_REQUIRE_SERVICES=1`.

use crate::common;
use common::read_json;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A missing prerequisite: `skipped: …`, or a failure under `SERVEBENCH_REQUIRE_SERVICES=1`.
fn require(why: &str) {
    servebench_testkit::skip_or_fail(why);
}

fn sweep(url: &str, dir: &Path, out: &Path, extra: &[&str]) -> Output {
    let o = Command::new(common::BIN)
        .env_remove("SERVEBENCH_DB")
        .args([
            "sweep",
            "--endpoint",
            url,
            "--engine",
            "llama.cpp",
            "--gpus",
            "1",
        ])
        .args([
            "--isl",
            "128",
            "--osl",
            "8",
            "--conc",
            "2",
            "--repeats",
            "2",
        ])
        .args(["--no-store", "--flush-cache", "auto"])
        .arg("--tokenizer")
        .arg(dir.join("tokenizer.json"))
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        common::stdout(&o),
        common::stderr(&o)
    );
    o
}

fn block(out: &Path, point: &str) -> Value {
    read_json(&out.join(point).join("result.json"))["servebench"]["prefix_cache"].clone()
}

#[test]
fn the_shared_engine_has_no_flush_and_reports_its_hit_rate() {
    let Some((url, dir)) = common::real_engine() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("shared");
    // a seed of its own: earlier runs against the shared engine must not have warmed it
    let seed = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 1_000_000_007) as u32;
    let o = sweep(&url, &dir, &out, &["--seed", &seed.to_string()]);
    let err = common::stderr(&o);
    let r1 = block(&out, "conc2-r1");
    let r2 = block(&out, "conc2-r2");
    for b in [&r1, &r2] {
        assert_eq!(b["flushed"], false, "{b}");
        assert!(
            b["flush_detail"]
                .as_str()
                .unwrap()
                .contains("--slot-save-path"),
            "llama.cpp's own reason is quoted: {b}"
        );
        assert!(
            b["source"]
                .as_str()
                .unwrap()
                .starts_with("llamacpp:prompt_tokens_cached"),
            "{b}"
        );
        assert!(b["hit_rate"].as_f64().is_some(), "{b}");
    }
    assert!(
        err.contains(&format!("warning: conc 2 repeat 2/2: 20 of 20 prompts were already sent earlier in this sweep (same --seed {seed}) and the prefix cache was not flushed: llama.cpp has no flush on this server")),
        "{err}"
    );
    // The counters are server-wide (other clients of the shared engine add hits and queries),
    // so the assertion is on this sweep's own share: repeat 2 resends the 20 prompts of
    // repeat 1, and at least 90 % of their tokens must have come from the cache.
    let own: f64 = common::read_jsonl(&out.join("conc2-r2/records.jsonl"))
        .iter()
        .filter(|r| r["phase"] == "measured")
        .map(|r| r["prompt_tokens_server"].as_f64().unwrap())
        .sum();
    let hits = r2["hit_tokens"].as_f64().unwrap();
    assert!(
        hits >= 0.9 * own,
        "repeat 2: {hits} cached tokens for {own} own prompt tokens: {r2} (repeat 1: {r1})"
    );
}

/// A llama-server of its own on a free port, killed on drop.
struct Llama(Child, u16);

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn own_llama(model_dir: &Path, slots: &Path, extra: &[&str]) -> Option<Llama> {
    let bin = model_dir.join("../bin/llama-server");
    let gguf = std::fs::read_dir(model_dir).ok().and_then(|d| {
        d.filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "gguf"))
    });
    let (true, Some(gguf)) = (bin.is_file(), gguf) else {
        require(&format!(
            "no llama-server at {} or no .gguf in {}",
            bin.display(),
            model_dir.display()
        ));
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(bin)
        .arg("-m")
        .arg(gguf)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "-c",
            "8192",
            "-np",
            "2",
            "-t",
            "1",
            "--alias",
            "tiny-chatml",
        ])
        .args(["--no-webui", "--metrics", "--slot-save-path"])
        .arg(slots)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let l = Llama(child, port);
    let t0 = Instant::now();
    loop {
        let ok = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
            use std::io::{Read, Write};
            let _ = write!(
                s,
                "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut b = String::new();
            let _ = s.read_to_string(&mut b);
            b.starts_with("HTTP/1.1 200")
        });
        if ok {
            return Some(l);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "llama-server not ready"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn slot_erase_flushes_a_llama_server_started_with_slot_save_path() {
    let Some((_, dir)) = common::real_engine() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // --cache-ram 0: the slots are the only cache, erasing them makes every point cold
    let Some(l) = own_llama(&dir, tmp.path(), &["--cache-ram", "0"]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{}", l.1);
    let out = tmp.path().join("cold");
    let o = sweep(&url, &dir, &out, &[]);
    for p in ["conc2-r1", "conc2-r2"] {
        let b = block(&out, p);
        assert_eq!(b["flushed"], true, "{b}");
        assert!(
            b["flush_detail"]
                .as_str()
                .unwrap()
                .starts_with("llama.cpp POST /slots/{id}?action=erase for 2 slots → HTTP 200"),
            "{b}"
        );
        assert_eq!(b["hit_tokens"].as_f64(), Some(0.0), "{b}");
        assert_eq!(b["hit_rate"].as_f64(), Some(0.0), "{b}");
        assert!(b["query_tokens"].as_f64().unwrap() > 1000.0, "{b}");
    }
    assert!(
        !common::stderr(&o).contains("warning:"),
        "{}",
        common::stderr(&o)
    );
    drop(l);
    // the default host-memory prompt cache survives the slot erase: said, not hidden
    let Some(l) = own_llama(&dir, tmp.path(), &[]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{}", l.1);
    let out = tmp.path().join("ram");
    let o = sweep(&url, &dir, &out, &[]);
    let b = block(&out, "conc2-r2");
    assert_eq!(b["flushed"], true, "{b}");
    assert_eq!(b["flush_ineffective"], true, "{b}");
    assert!(b["hit_rate"].as_f64().unwrap() > 0.5, "{b}");
    let err = common::stderr(&o);
    assert!(
        err.contains("warning: conc 2 repeat 2/2: the flush did not empty the cache")
            && err.contains("--cache-ram 0"),
        "{err}"
    );
}
