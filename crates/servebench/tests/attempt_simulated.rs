//! `servebench attempt --candidate RUN` on a run made by the embedded simulator: the comment
//! says it was simulated (the `simulated` context word and a `Simulated:` finding, in English
//! and in the Chinese block), as `servebench report` does, even when `--image` names a real
//! image. A run from a file (no stored endpoint) says nothing of the kind.

use crate::common;
use common::{run_in, SCENARIO};

#[test]
fn attempt_on_a_simulated_run_says_simulated() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run_in(
        dir.path(),
        &[
            "sweep",
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--isl",
            "256",
            "--osl",
            "128",
            "--conc",
            "1",
            "--num-prompts",
            "2",
            "--db",
            "s.db",
        ],
    );
    assert_eq!(code, 0, "sweep: {err}");
    let baseline = format!("{SCENARIO}/baseline.json");
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "attempt",
            "--baseline",
            &baseline,
            "--candidate",
            "1",
            "--db",
            "s.db",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (en, zh) = out.split_once("<details>").expect("Chinese block");
    let context = en.lines().nth(1).unwrap_or_default();
    assert!(
        context.starts_with("`lmsysorg/sglang:v0.5.20-cu130` · ")
            && context.trim_end().ends_with("· simulated"),
        "context line: {context:?}\n{out}"
    );
    assert!(
        en.contains(
            "Simulated: the candidate ran on the embedded simulator, not a real engine: simulated 1× H200"
        ),
        "{out}"
    );
    assert!(
        !en.contains("Simulated: the baseline"),
        "the baseline table is not simulated: {out}"
    );
    assert!(
        zh.contains("模拟结果：候选运行在内置模拟器上完成，并非真实推理引擎（"),
        "{out}"
    );
    // A candidate from a file has no simulator endpoint: no such words.
    let text = std::fs::read_to_string(&baseline).unwrap();
    let imp = servebench_compare::parse_baseline(
        &text,
        "baseline.json",
        &servebench_compare::IdentityOverrides::default(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("cand.json"),
        serde_json::to_string(&imp.points).unwrap(),
    )
    .unwrap();
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "attempt",
            "--baseline",
            &baseline,
            "--candidate",
            "cand.json",
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains("simulated") && !out.contains("Simulated") && !out.contains("模拟"),
        "{out}"
    );
}

/// The PR comment (issues 30, 31): after its own columns, J per output token — marked
/// `modelled` on the simulator, with the note in both languages — and InferenceX's PR-check
/// columns (median, P90, P99, P99.9 of TTFT in ms, interactivity and E2EL in s, with
/// compare_results.py's headers and its plain `(new/old − 1)` delta); a candidate without
/// power says `telemetry missing`, never 0.
#[test]
fn the_pr_comment_has_energy_and_inferencex_columns() {
    let dir = tempfile::tempdir().unwrap();
    for out in ["o1", "o2"] {
        let (code, _, err) = run_in(
            dir.path(),
            &[
                "sweep",
                "--isl",
                "256",
                "--osl",
                "128",
                "--conc",
                "2",
                "--num-prompts",
                "4",
                "--db",
                "s.db",
                "--out",
                out,
            ],
        );
        assert_eq!(code, 0, "sweep: {err}");
    }
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "attempt",
            "--baseline",
            "1",
            "--candidate",
            "2",
            "--db",
            "s.db",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (en, zh) = out.split_once("<details>").expect("Chinese block");
    let header = en
        .lines()
        .find(|l| l.starts_with("| Concurrency |"))
        .unwrap_or_else(|| panic!("no table: {out}"));
    assert_eq!(
        header,
        "| Concurrency | Output tok/s/GPU ↑ | TTFT ms ↓ | TPOT ms ↓ | J/output tok ↓ | \
         TTFT Median (ms) ↓ | TTFT P90 (ms) ↓ | TTFT P99 (ms) ↓ | TTFT P99.9 (ms) ↓ | \
         Intvty Median ↑ | Intvty@P90 TPOT ↑ | Intvty@P99 TPOT ↑ | Intvty@P99.9 TPOT ↑ | \
         E2EL Median (s) ↓ | E2EL P90 (s) ↓ | E2EL P99 (s) ↓ | E2EL P99.9 (s) ↓ |"
    );
    // the virtual clock makes both runs the same: every InferenceX delta is +0.0%
    let row = en
        .lines()
        .find(|l| l.starts_with("| 2 |"))
        .expect("the c2 row");
    let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
    assert_eq!(cells.len(), 17, "{row}");
    assert!(cells[4].contains(" (modelled) (+0.0%)"), "{row}");
    for c in &cells[5..] {
        assert!(c.ends_with(" (+0.0%)"), "{c} in {row}");
    }
    // TTFT in ms and E2EL in s, from the stored row (seconds)
    let agg = common::read_json(&dir.path().join("o2/conc2/agg.json"));
    let ms = agg["median_ttft"].as_f64().unwrap() * 1000.0;
    let e2el = agg["p99.9_e2el"].as_f64().unwrap();
    let num = |c: &str| c.split_whitespace().next().unwrap().parse::<f64>().unwrap();
    assert!((num(cells[5]) - ms).abs() < 0.01, "{} vs {ms} ms", cells[5]);
    assert!(
        (num(cells[16]) - e2el).abs() < 0.01,
        "{} vs {e2el} s",
        cells[16]
    );
    assert!(
        en.contains("All rows: J/output tok modelled by the simulator's power model"),
        "{out}"
    );
    assert!(
        zh.contains("J/output tok 为模拟器功耗模型的估算值"),
        "{out}"
    );

    // a candidate without power keys: `telemetry missing`, never a number
    let mut rows = vec![agg.clone()];
    for k in servebench_contracts::power::POWER_KEYS {
        rows[0].as_object_mut().unwrap().remove(k);
    }
    std::fs::write(
        dir.path().join("cand.json"),
        serde_json::to_string(&rows).unwrap(),
    )
    .unwrap();
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "attempt",
            "--baseline",
            "1",
            "--candidate",
            "cand.json",
            "--db",
            "s.db",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| 2 |"))
        .expect("the c2 row");
    let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
    assert_eq!(cells[4], "telemetry missing", "{row}");
    assert!(
        out.contains("J/output tok telemetry missing") || out.contains("Δ N/A: telemetry missing"),
        "{out}"
    );
    assert!(out.contains("没有 GPU 功耗遥测数据"), "{out}");
}
