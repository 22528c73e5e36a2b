//! Issue 28, the CI-sized version of `scripts/bench-verdict.sh` (docs/benchmarks.md §7): sweeps
//! of the embedded simulator with their own seeds compared through `servebench compare` on
//! their `summary.json` files (per-request bootstrap, FDR, inconclusive): every A/A pair of the
//! same engine is no regression (exit 0), and a planted 15 % slowdown (`--sim-slowdown 1.15`)
//! is a regression (exit 2) against every A run. On the virtual clock (issue 29, the default)
//! the modelled numbers do not depend on the host's load, so the outcome is the same every run:
//! the test asserts behaviour, never time.

use crate::common;
use common::{read_json, servebench_in};

use std::path::{Path, PathBuf};

fn sweep(dir: &Path, name: &str, seed: u32, slowdown: &str) -> PathBuf {
    let out = dir.join(name);
    let o = servebench_in(dir)
        .args(["sweep", "--conc", "4,16", "--isl", "256", "--osl", "64"])
        .args(["--sim-clock", "virtual", "--no-store", "--seed"])
        .arg(seed.to_string())
        .args(["--sim-slowdown", slowdown])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    if slowdown != "1" {
        assert!(
            common::stdout(&o).contains(&format!("planted slowdown ×{slowdown} (every step)")),
            "the header says the engine was slowed: {}",
            common::stdout(&o)
        );
    }
    out.join("summary.json")
}

/// (exit code, JSON comparison, stderr)
fn compare(dir: &Path, base: &Path, cand: &Path) -> (i32, serde_json::Value, String) {
    let o = servebench_in(dir)
        .arg("compare")
        .arg("--baseline")
        .arg(base)
        .arg("--candidate")
        .arg(cand)
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", common::stderr(&o)));
    (o.status.code().unwrap_or(-1), v, common::stderr(&o))
}

#[test]
fn a_a_pairs_are_never_regressions_and_a_planted_15_percent_slowdown_always_is() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let a: Vec<PathBuf> = (1..=5)
        .map(|k| sweep(d, &format!("a{k}"), 100 + k, "1"))
        .collect();
    // 10 A/A pairs (every pair of the 5 runs)
    let mut inconclusive = 0;
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            let (rc, c, err) = compare(d, &a[i], &a[j]);
            assert_eq!(
                rc,
                0,
                "A/A a{} vs a{}: {} {err}",
                i + 1,
                j + 1,
                c["verdict"]
            );
            assert_ne!(c["verdict"], "regression");
            let ms: Vec<&serde_json::Value> = c["points"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|p| p["metrics"].as_array().unwrap())
                .collect();
            assert!(
                ms.iter().all(|m| m.get("evidence").is_some()),
                "every metric decided from the records: {c}"
            );
            inconclusive += c["points"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["verdict"] == "inconclusive")
                .count();
        }
    }
    eprintln!("A/A: 10 pairs, 0 regressions, {inconclusive} inconclusive points of 20");
    // the planted slowdown, against each A run
    for k in 1..=2u32 {
        let s = sweep(d, &format!("s{k}"), 200 + k, "1.15");
        for (i, base) in a.iter().enumerate().take(3) {
            let (rc, c, err) = compare(d, base, &s);
            assert_eq!(rc, 2, "slowed s{k} vs a{}: {} {err}", i + 1, c["verdict"]);
            assert_eq!(c["verdict"], "regression");
            // the summary on stdout names the interval (text mode)
            let _ = &c;
        }
    }
    // text mode: the statistics line and the lag line are printed
    let o = servebench_in(d)
        .arg("compare")
        .arg("--baseline")
        .arg(&a[0])
        .arg("--candidate")
        .arg(d.join("s1/summary.json"))
        .output()
        .unwrap();
    let text = common::stdout(&o);
    assert!(
        text.contains("metric comparisons from per-request records"),
        "{text}"
    );
    assert!(text.contains("Host lag (wall ms per request"), "{text}");
    assert!(text.contains("95% CI"), "{text}");
    let s = read_json(&d.join("s1/summary.json"));
    assert!(s.is_object());
}
