//! `servebench attempt` on the PRODUCT.md scenario, from the files alone: the baseline table,
//! the image provenance, the recipe (for the flag rename and its value) and the two job logs of
//! the failed initial attempt. The whole comment is compared exactly (every element the
//! scenario README lists), then the HTML and JSON forms and the error lines.

use crate::common;
use common::{run_in, SCENARIO};

fn scenario_args() -> Vec<String> {
    vec![
        "attempt".into(),
        "--baseline".into(),
        format!("{SCENARIO}/baseline.json"),
        "--logs".into(),
        format!("{SCENARIO}/logs/agentic-c1.log"),
        format!("{SCENARIO}/logs/eval-c16.log"),
        "--change".into(),
        format!("{SCENARIO}/images.json"),
        "--recipe-edit".into(),
        format!(
            "{SCENARIO}/recipes/qwen3.8next_fp4_b200_sglang_mtp.sh:--cuda-graph-max-bs=--cuda-graph-max-bs-decode"
        ),
        "--edit-evidence".into(),
        "https://github.com/sgl-project/sglang/pull/38375".into(),
        "--kind".into(),
        "initial".into(),
        "--run-id".into(),
        "18000000001".into(),
        "--run-attempt".into(),
        "1".into(),
    ]
}

const EXPECTED: &str = r#"**Initial attempt · Failed** · Run 18000000001 / attempt 1 · 2026-09-21 01:15 UTC  
`lmsysorg/sglang:v0.5.20-cu130` · AgentX · TP1/EP1 · Mean latency  
**Change:** Image `lmsysorg/sglang:qwen38flashnext` (model-branch build, index `sha256:5ae5816783d58e2e56e84d2e863f5441425056f500b7fbd7448c4aae017a2521`) → `lmsysorg/sglang:v0.5.20-cu130` (release build, index `sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f`, linux/amd64 `sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4`). Versions: sgl-kernel 0.4.6.post1 → 0.4.7; sgl-deep-gemm 0.2.0 (new); flashinfer 0.6.18 and cuda 13.0.3 unchanged. Recipe `qwen3.8next_fp4_b200_sglang_mtp.sh`: `--cuda-graph-max-bs 64` → `--cuda-graph-max-bs-decode 64` ([sgl-project/sglang#38375](https://github.com/sgl-project/sglang/pull/38375)).

| Concurrency | Output tok/s/GPU ↑ | TTFT ms ↓ | TPOT ms ↓ |
| ---: | ---: | ---: | ---: |
| 1 | N/A | N/A | N/A |

**Note:** All rows: failed.  
**Note:** All rows: request errors unavailable.  
**Note:** All rows: Δ N/A: no matched baseline.

| Eval | Score ↑ | Samples |
| --- | ---: | ---: |
| gsm8k/em_strict · c16 | N/A | 1,319/N/A (old/new) |

**Note:** gsm8k/em_strict · c16: failed, no score; Δ N/A: point failed.

**Finding:** First error in the job log (`agentic-c1.log`, line 10): `Error: The following required environment variables are not set:` / `- MODEL_PATH`. Raised by the launcher 2.8 s after the job log started, before any image import or server start: not the recipe, image or engine. Class: required environment variable not set (F3). Deterministic: the same first error on 2 runners (`b200-nscale-slurm_00`, `b200-nscale-slurm_01`), so no infrastructure retry; no repair is possible inside the recipe. Outcome `readiness-blocked` · phase `targeted` · repairs 0/5.  
**Next:** Fix the launcher: set MODEL_PATH before the check runs (for MODEL_PATH: the staged-weights fallback must come before check_env_vars). No recipe or image change can fix it; rerun after the fix. Launcher: `runners/launch_b200-nscale-slurm.sh`.

<details><summary>中文</summary>

**首次尝试 · 失败**  
**变更：** 镜像从 `lmsysorg/sglang:qwen38flashnext`（模型分支构建）更新为 `lmsysorg/sglang:v0.5.20-cu130`（正式发布构建），已记录镜像索引摘要和 amd64 架构的清单摘要。依赖库：sgl-kernel 版本变更，新增 sgl-deep-gemm，flashinfer、cuda 版本不变。配方 `qwen3.8next_fp4_b200_sglang_mtp.sh` 中的 `--cuda-graph-max-bs` 改为 `--cuda-graph-max-bs-decode`，取值不变。  
**说明：** 所有行：失败。  
**说明：** 所有行：请求错误数不可用。  
**说明：** 所有行：Δ 为 N/A，原因：没有匹配的基线点。  
**说明：** gsm8k/em_strict · c16：失败，没有得分；Δ 为 N/A，原因：该点运行失败。  
**诊断：** 作业日志中的第一个错误是 `Error: The following required environment variables are not set:` / `- MODEL_PATH`，由启动器报出，发生在镜像导入和服务启动之前，问题不在配方、镜像或推理引擎。多个运行器上出现了相同的第一个错误，属于确定性错误，不做基础设施重试，也无法在配方内修复。结果为 `readiness-blocked`，阶段为 `targeted`，未消耗修复次数。  
**下一步：** 修复启动器：在检查运行之前设置 `MODEL_PATH`（回退到预置权重路径的逻辑必须放在 `check_env_vars` 之前）。修改配方或镜像都无法解决，修复后重新运行。启动器脚本：`runners/launch_b200-nscale-slurm.sh`。

</details>
"#;

#[test]
fn failed_initial_attempt_comment_from_the_scenario_files() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_in(dir.path(), &scenario_args());
    assert_eq!(code, 0, "stderr: {err}");
    if out != EXPECTED {
        for (i, (a, b)) in out.lines().zip(EXPECTED.lines()).enumerate() {
            if a != b {
                panic!(
                    "line {} differs:\n got: {a:?}\nwant: {b:?}\n\nfull output:\n{out}",
                    i + 1
                );
            }
        }
        panic!("line count differs:\n{out}");
    }
    // The elements the scenario README lists, named one by one.
    for want in [
        "**Initial attempt · Failed** · Run 18000000001 / attempt 1 · 2026-09-21 01:15 UTC",
        "AgentX · TP1/EP1",
        "**Change:**",
        "| 1 | N/A | N/A | N/A |",
        "**Note:** All rows: failed.",
        "**Note:** All rows: request errors unavailable.",
        "**Note:** All rows: Δ N/A: no matched baseline.",
        "1,319/N/A (old/new)",
        "**Next:** Fix the launcher",
        "`Error: The following required environment variables are not set:` / `- MODEL_PATH`",
        "<details><summary>中文</summary>",
    ] {
        assert!(out.contains(want), "missing {want:?}");
    }
}

#[test]
fn attempt_html_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = scenario_args();
    a.extend([
        "--format".into(),
        "html".into(),
        "-o".into(),
        "a.html".into(),
    ]);
    let (code, _, err) = run_in(dir.path(), &a);
    assert_eq!(code, 0, "{err}");
    let h = std::fs::read_to_string(dir.path().join("a.html")).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert_eq!(h.matches("<svg").count(), 4);
    assert!(h.contains("All rows: failed."));
    assert!(!h.contains("<script"));

    let mut a = scenario_args();
    a.extend(["--format".into(), "json".into()]);
    let (code, out, err) = run_in(dir.path(), &a);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["heading"]["type"], "attempt");
    assert_eq!(v["heading"]["status"], "failed");
    assert_eq!(v["failure"]["layer"], "launcher");
    assert_eq!(v["failure"]["outcome"], "readiness-blocked");
    assert_eq!(v["failure"]["deterministic"], true);
    assert_eq!(v["evals"][0]["baseline"]["samples"], 1319);
}

#[test]
fn attempt_kinds_and_english_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = scenario_args();
    let k = a.iter().position(|x| x == "initial").unwrap();
    a[k] = "repair 2".into();
    a.extend(["--lang".into(), "en".into()]);
    let (code, out, err) = run_in(dir.path(), &a);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("**Repair 2/5 · Failed**"), "{out}");
    assert!(out.contains("repairs 2/5."), "{out}");
    assert!(!out.contains("<details>"));
}

#[test]
fn bad_input_gives_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    // A log that does not exist.
    let mut a = scenario_args();
    let i = a
        .iter()
        .position(|x| x.ends_with("agentic-c1.log"))
        .unwrap();
    a[i] = "missing.log".into();
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(err.contains("missing.log"), "{err}");
    // A log that names no point.
    std::fs::write(dir.path().join("nojob.log"), "Error: something broke\n").unwrap();
    let mut a = scenario_args();
    a[i] = "nojob.log".into();
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(err.contains("nojob.log") && err.contains("Job"), "{err}");
    // A recipe flag that is not in the recipe.
    let mut a = scenario_args();
    let j = a
        .iter()
        .position(|x| x.contains("--cuda-graph-max-bs="))
        .unwrap();
    a[j] = format!("{SCENARIO}/recipes/qwen3.8next_fp4_b200_sglang_mtp.sh:--no-such-flag=--x");
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(
        err.contains("--no-such-flag") && err.contains("not found"),
        "{err}"
    );
    // An unknown attempt kind.
    let mut a = scenario_args();
    let k = a.iter().position(|x| x == "initial").unwrap();
    a[k] = "repair 9".into();
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(err.contains("repairs are numbered 1 to 5"), "{err}");
}

#[test]
fn passing_attempt_from_a_candidate_run_has_deltas() {
    // The launcher fixed: the same flow with results, deltas against the baseline table.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{SCENARIO}/baseline.json")).unwrap();
    let imp = servebench_compare::parse_baseline(
        &text,
        "baseline.json",
        &servebench_compare::IdentityOverrides::default(),
    )
    .unwrap();
    let rows: Vec<serde_json::Value> = imp
        .points
        .iter()
        .map(|r| r.to_value())
        .map(|r| {
            let mut c = r.clone();
            c["image"] = serde_json::json!("lmsysorg/sglang:v0.5.20-cu130");
            c["output_tput_per_gpu"] =
                serde_json::json!(r["output_tput_per_gpu"].as_f64().unwrap() * 1.05);
            c["mean_tpot"] = serde_json::json!(r["mean_tpot"].as_f64().unwrap() * 0.9);
            c
        })
        .collect();
    let mut ev = imp.evals[0].to_value();
    ev["score"] = serde_json::json!(0.9803);
    if ev.get("em_strict").is_some() {
        ev["em_strict"] = serde_json::json!(0.9803);
    }
    let mut all = rows.clone();
    all.push(ev);
    std::fs::write(
        dir.path().join("cand.json"),
        serde_json::to_string(&all).unwrap(),
    )
    .unwrap();
    let args: Vec<String> = vec![
        "attempt".into(),
        "--baseline".into(),
        format!("{SCENARIO}/baseline.json"),
        "--candidate".into(),
        "cand.json".into(),
        "--change".into(),
        format!("{SCENARIO}/images.json"),
        "--kind".into(),
        "repair 1".into(),
        "--run-id".into(),
        "18000000002".into(),
    ];
    let (code, out, err) = run_in(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("**Repair 1/5 · Passed** · Run 18000000002"),
        "{out}"
    );
    // 159.68 × 1.05 = 167.66 (+5.0%), TPOT 3.57 × 0.9 = 3.21 (-10.0%), TTFT unchanged;
    // 637.9 × 1.05 = 669.795 and 12.65 × 0.9 = 11.385 are just below the half in binary.
    assert!(
        out.contains("| 1 | 167.66 (+5.0%) | 665.82 (+0.0%) | 3.21 (-10.0%) |"),
        "{out}"
    );
    assert!(
        out.contains("| 16 | 669.79 (+5.0%) | 1,570.11 (+0.0%) | 11.38 (-10.0%) |"),
        "{out}"
    );
    assert!(
        out.contains("| gsm8k/em_strict · c16 | 98.03% (+0.08 pp) | 1,319 each |"),
        "{out}"
    );
    assert!(!out.contains("**Finding:**"), "no failure: {out}");
}

#[test]
fn change_line_from_the_bump_provenance_file() {
    // The record `servebench bump` appends to provenance.json (bump's ChangeRecord shape).
    let dir = tempfile::tempdir().unwrap();
    let images: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{SCENARIO}/images.json")).unwrap())
            .unwrap();
    let prov = |v: &serde_json::Value| {
        let mut p = v.clone();
        p.as_object_mut().unwrap().remove("kind");
        p["source"] = serde_json::json!("file images.json");
        if p.get("platform_digests").is_none() {
            p["platform_digests"] = serde_json::json!({});
        }
        p
    };
    let record = serde_json::json!({
        "schema_version": 1,
        "changes": [{
            "config_key": "qwen3.8next-fp4-b200-sglang-agentic-mtp",
            "catalog": "master.yaml",
            "old_image": "lmsysorg/sglang:qwen38flashnext",
            "new_image": "lmsysorg/sglang:v0.5.20-cu130",
            "engine": "sglang",
            "old_version": "unknown",
            "new_version": "0.5.20",
            "old_provenance": prov(&images["old"]),
            "new_provenance": prov(&images["new"]),
            "resolution": "file images.json",
            "recipes": [{
                "path": "recipes/qwen3.8next_fp4_b200_sglang_mtp.sh",
                "scenario": "agentic-coding",
                "shared_with": [],
                "outcomes": [{
                    "rule": "sglang-cuda-graph-max-bs",
                    "row": 1,
                    "status": "applied",
                    "summary": "`--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode` (value `64` kept)",
                    "message": "renamed",
                    "lines": [27],
                    "evidence": ["https://github.com/sgl-project/sglang/pull/38375"]
                }],
                "change": null
            }],
            "change_line": "…",
            "at": "2026-09-21T01:00:00Z"
        }]
    });
    std::fs::write(
        dir.path().join("provenance.json"),
        serde_json::to_string(&record).unwrap(),
    )
    .unwrap();
    let mut a: Vec<String> = scenario_args()
        .into_iter()
        .filter(|x| !x.contains("images.json") && !x.contains("--cuda-graph-max-bs="))
        .collect();
    a.retain(|x| x != "--change" && x != "--recipe-edit");
    a.extend(["--provenance".into(), "provenance.json".into()]);
    let (code, out, err) = run_in(dir.path(), &a);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "linux/amd64 `sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4`"
        ),
        "{out}"
    );
    assert!(
        out.contains("Recipe `qwen3.8next_fp4_b200_sglang_mtp.sh`: `--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode` (value `64` kept) ([sgl-project/sglang#38375](https://github.com/sgl-project/sglang/pull/38375))."),
        "{out}"
    );
    assert!(out.contains("sgl-kernel 0.4.6.post1 → 0.4.7"), "{out}");
    assert!(
        out.contains(
            "已按迁移规则修改：`--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode`，取值不变。"
        ),
        "{out}"
    );
}

/// A simulator sweep (hw `sim-h200`, random 256/128) against the AgentX baseline table: no
/// point has the baseline's identity, so the attempt must say what `servebench compare` says —
/// no deltas, `N/A: no matched baseline`, the candidate's own workload, status `Not
/// comparable`, and the baseline eval with no candidate N/A with its reason.
#[test]
fn attempt_against_an_unmatched_baseline_is_not_comparable() {
    let dir = tempfile::tempdir().unwrap();
    let sweep: Vec<String> = [
        "sweep",
        "--isl",
        "256",
        "--osl",
        "128",
        "--conc",
        "1,4",
        "--num-prompts",
        "4",
        "--db",
        "c.db",
    ]
    .map(String::from)
    .to_vec();
    let (code, _, err) = run_in(dir.path(), &sweep);
    assert_eq!(code, 0, "sweep: {err}");
    let args: Vec<String> = vec![
        "attempt".into(),
        "--baseline".into(),
        format!("{SCENARIO}/baseline.json"),
        "--candidate".into(),
        "1".into(),
        "--db".into(),
        "c.db".into(),
        "--lang".into(),
        "en".into(),
    ];
    let (code, out, err) = run_in(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("**Initial attempt · Not comparable** · Run 1"),
        "{out}"
    );
    assert!(
        out.contains("· 256/128 · TP1/EP1 ·"),
        "candidate workload: {out}"
    );
    assert!(!out.contains("AgentX · TP1/EP1 · Mean"), "{out}");
    // No percentage delta anywhere in the point table.
    assert!(!out.contains("%)"), "no delta may be shown: {out}");
    assert!(out.contains("Δ N/A: no matched baseline"), "{out}");
    assert!(
        out.contains("gsm8k/em_strict · c16: Δ N/A: candidate value missing"),
        "{out}"
    );
    assert!(
        !out.contains("**Eval:** N/A\n"),
        "eval N/A without reason: {out}"
    );
    // The same pair through compare: not comparable too.
    let (code, cmp_out, _) = run_in(
        dir.path(),
        &[
            "compare".into(),
            "--baseline".into(),
            format!("{SCENARIO}/baseline.json"),
            "--candidate".into(),
            "1".into(),
            "--db".into(),
            "c.db".into(),
        ],
    );
    assert_eq!(code, 0);
    assert!(cmp_out.contains("Verdict: not_comparable"), "{cmp_out}");
}

/// After `servebench bump` the recipe already carries the new flag: `--recipe-edit OLD=NEW`
/// reads the value from NEW and the Change line is the same as before the bump.
#[test]
fn recipe_edit_accepts_an_already_renamed_recipe() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = std::fs::read_to_string(format!(
        "{SCENARIO}/recipes/qwen3.8next_fp4_b200_sglang_mtp.sh"
    ))
    .unwrap();
    assert!(recipe.contains("--cuda-graph-max-bs 64"));
    let bumped = recipe.replace("--cuda-graph-max-bs ", "--cuda-graph-max-bs-decode ");
    let path = dir.path().join("qwen3.8next_fp4_b200_sglang_mtp.sh");
    std::fs::write(&path, bumped).unwrap();
    let mut a = scenario_args();
    let j = a
        .iter()
        .position(|x| x.contains("--cuda-graph-max-bs="))
        .unwrap();
    a[j] = format!(
        "{}:--cuda-graph-max-bs=--cuda-graph-max-bs-decode",
        path.display()
    );
    let (code, out, err) = run_in(dir.path(), &a);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out, EXPECTED,
        "same comment as from the recipe before the bump"
    );
    // Neither flag present: one line naming both.
    a[j] = format!("{}:--no-such-flag=--also-missing", path.display());
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(
        err.contains("--no-such-flag") && err.contains("--also-missing") && err.contains("not"),
        "{err}"
    );
}

/// `--time garbage` and `--repairs-used 6` are refused with one line naming the flag.
#[test]
fn time_and_repairs_used_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = scenario_args();
    a.extend(["--time".into(), "garbage".into()]);
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(err.contains("--time") && err.contains("RFC 3339"), "{err}");
    let mut a = scenario_args();
    a.extend(["--repairs-used".into(), "6".into()]);
    let (code, _, err) = run_in(dir.path(), &a);
    assert_ne!(code, 0);
    assert!(
        err.contains("--repairs-used") && err.contains("at most 5"),
        "{err}"
    );
    // Valid forms are accepted and shown in UTC minutes.
    let mut a = scenario_args();
    a.extend(["--time".into(), "2026-09-22 08:30".into()]);
    let (code, out, err) = run_in(dir.path(), &a);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("· 2026-09-22 08:30 UTC"), "{out}");
}
