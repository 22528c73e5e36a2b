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
