//! The scenario of PRODUCT.md end to end through the binary, on copies of
//! shared/data/scenario in a temp dir: `servebench bump` (the catalog diff is exactly the image
//! line, the recipe diff exactly the flag rename with the same value, the change-log entry
//! appended with every historical byte kept, provenance from images.json in the Change line),
//! then `servebench triage` of both job logs (first error, launcher layer, deterministic,
//! identical on two runners, readiness-blocked, phase targeted, repairs 0).

use crate::common;
use common::{copy_rw, run_scratch, SCENARIO as SCEN};

const CHANGELOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex/perf-changelog.yaml"
);
const KEY: &str = "qwen3.8next-fp4-b200-sglang-agentic-mtp";
const RECIPE: &str = "qwen3.8next_fp4_b200_sglang_mtp.sh";

/// The `-`/`+` lines of one file's section of a unified diff.
fn changed(diff: &str, file: &str) -> (Vec<String>, Vec<String>) {
    let mut on = false;
    let (mut m, mut p) = (vec![], vec![]);
    for l in diff.lines() {
        if let Some(f) = l.strip_prefix("--- a/") {
            on = f == file;
            continue;
        }
        if l.starts_with("+++ ") || l.starts_with("@@") {
            continue;
        }
        if !on {
            continue;
        }
        if let Some(x) = l.strip_prefix('-') {
            m.push(x.to_string());
        } else if let Some(x) = l.strip_prefix('+') {
            p.push(x.to_string());
        }
    }
    (m, p)
}

#[test]
fn scenario_bump_then_triage() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("recipes")).unwrap();
    copy_rw(&format!("{SCEN}/master.yaml"), &d.join("master.yaml"));
    copy_rw(
        &format!("{SCEN}/recipes/{RECIPE}"),
        &d.join("recipes").join(RECIPE),
    );
    copy_rw(CHANGELOG, &d.join("perf-changelog.yaml"));
    let images = format!("{SCEN}/images.json");

    let (rc, out, err) = run_scratch(
        d,
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--changelog",
            "perf-changelog.yaml",
            "--provenance",
            &images,
            "--provenance-out",
            "provenance.json",
        ],
    );
    assert_eq!(rc, 0, "{err}");

    // Catalog: exactly the image line.
    assert_eq!(
        changed(&out, "master.yaml"),
        (
            vec!["  image: lmsysorg/sglang:qwen38flashnext".to_string()],
            vec!["  image: lmsysorg/sglang:v0.5.20-cu130".to_string()]
        )
    );
    let cat_orig = std::fs::read_to_string(format!("{SCEN}/master.yaml")).unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("master.yaml")).unwrap(),
        cat_orig.replace(
            "image: lmsysorg/sglang:qwen38flashnext",
            "image: lmsysorg/sglang:v0.5.20-cu130"
        )
    );
    // Recipe: exactly the flag rename, same value.
    assert_eq!(
        changed(&out, &format!("recipes/{RECIPE}")),
        (
            vec!["  --cuda-graph-max-bs 64 \\".to_string()],
            vec!["  --cuda-graph-max-bs-decode 64 \\".to_string()]
        )
    );
    // Change log: only additions at the tail, every historical byte kept.
    let cl_orig = std::fs::read_to_string(CHANGELOG).unwrap();
    let cl_now = std::fs::read_to_string(d.join("perf-changelog.yaml")).unwrap();
    assert!(cl_now.starts_with(&cl_orig));
    let tail = &cl_now[cl_orig.len()..];
    assert!(
        tail.starts_with(&format!(
            "\n- config-keys:\n    - {KEY}\n  scenario-type:\n"
        )),
        "{tail}"
    );
    assert!(tail.contains(
        "  scenario-type:\n    - agentic-coding\n  description:\n    - \"Bump SGLang image from lmsysorg/sglang:qwen38flashnext to lmsysorg/sglang:v0.5.20-cu130\"\n"
    ), "{tail}");
    assert!(tail.ends_with("  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX\n"));
    let (m, _) = changed(&out, "perf-changelog.yaml");
    assert!(m.is_empty(), "deleted change-log lines: {m:?}");
    // Provenance: both digests of the new image, the old index digest, in the Change line.
    let change = out.lines().find(|l| l.starts_with("Change: ")).unwrap();
    assert!(
        change.contains(
            "index sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f"
        ),
        "{change}"
    );
    assert!(
        change.contains(
            "linux/amd64 sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4"
        ),
        "{change}"
    );
    assert!(
        change.contains(
            "was index sha256:5ae5816783d58e2e56e84d2e863f5441425056f500b7fbd7448c4aae017a2521"
        ),
        "{change}"
    );
    assert!(
        change.contains("`--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode` (value `64` kept)"),
        "{change}"
    );
    assert!(out.contains("Wrote: master.yaml, recipes/qwen3.8next_fp4_b200_sglang_mtp.sh, perf-changelog.yaml, provenance.json"), "{out}");
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("provenance.json")).unwrap()).unwrap();
    assert_eq!(
        prov["changes"][0]["new_provenance"]["index_digest"],
        "sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f"
    );
    assert_eq!(prov["changes"][0]["change_line"], change);

    // Triage of both job logs.
    let (rc, out, err) = run_scratch(
        d,
        &[
            "triage",
            &format!("{SCEN}/logs/agentic-c1.log"),
            &format!("{SCEN}/logs/eval-c16.log"),
            "--json",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        r["first_error"]["line"],
        "Error: The following required environment variables are not set:"
    );
    assert_eq!(
        r["first_error"]["continuation"],
        serde_json::json!(["- MODEL_PATH"])
    );
    assert_eq!(r["first_error"]["line_no"], 10);
    assert_eq!(r["category"], "missing_env_var");
    assert_eq!(r["layer"], "launcher");
    assert_eq!(r["deterministic"], true);
    assert_eq!(r["retry"], false);
    assert_eq!(
        r["same_first_error_runners"],
        serde_json::json!(["b200-nscale-slurm_00", "b200-nscale-slurm_01"])
    );
    assert_eq!(r["outcome"], "readiness-blocked");
    assert_eq!(r["phase"], "targeted");
    assert_eq!(r["repairs_used"], 0);
    assert_eq!(
        r["logs"][1]["first_error"]["line"],
        r["first_error"]["line"]
    );
    let (rc, text, _) = run_scratch(
        d,
        &[
            "triage",
            &format!("{SCEN}/logs/agentic-c1.log"),
            &format!("{SCEN}/logs/eval-c16.log"),
        ],
    );
    assert_eq!(rc, 0);
    assert!(text.contains("Layer:       launcher"), "{text}");
    assert!(
        text.contains("Verdict:     deterministic (same first error on 2 runners); no retry"),
        "{text}"
    );
    assert!(
        text.contains("Outcome:     readiness-blocked · phase targeted · repairs 0"),
        "{text}"
    );
}
