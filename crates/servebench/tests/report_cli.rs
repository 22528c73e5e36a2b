//! `servebench report` end to end through the binary: the frozen-baseline body of the scenario
//! (equal to the report crate's snapshot), a candidate against the baseline file and against the
//! baseline imported into a store, in every format.

use crate::common;
use common::{run_in, SCENARIO};
use std::path::Path;

use serde_json::{json, Value};
use servebench_compare::{parse_baseline, IdentityOverrides};

const BODY_SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../report/tests/snapshots/scenario__baseline_body.snap"
);

/// A candidate file: the baseline's agg rows on the new image, c1 TTFT +30 %, c16 missing.
fn write_candidate(dir: &Path) -> String {
    let text = std::fs::read_to_string(format!("{SCENARIO}/baseline.json")).unwrap();
    let imp = parse_baseline(&text, "baseline.json", &IdentityOverrides::default()).unwrap();
    let rows: Vec<Value> = imp
        .points
        .iter()
        .map(|r| r.to_value())
        .filter(|r| r["conc"] != json!(16))
        .map(|r| {
            let mut c = r.clone();
            c["image"] = json!("lmsysorg/sglang:v0.5.20-cu130");
            if r["conc"] == json!(1) {
                c["mean_ttft"] = json!(r["mean_ttft"].as_f64().unwrap() * 1.3);
            }
            c
        })
        .collect();
    let p = dir.join("candidate.json");
    std::fs::write(&p, serde_json::to_string(&rows).unwrap()).unwrap();
    p.display().to_string()
}

#[test]
fn baseline_body_through_the_cli_equals_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{SCENARIO}/baseline.json");
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "report",
            &base,
            "--target-image",
            "lmsysorg/sglang:v0.5.20-cu130",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let snap = std::fs::read_to_string(BODY_SNAPSHOT).unwrap();
    // insta snapshot: a `---` front matter block, then the body.
    let body = snap.splitn(3, "---\n").nth(2).unwrap();
    assert_eq!(out.trim_end(), body.trim_end());
    assert!(out.contains("| 4 | 23,191.29 | 246.97 | 595.02 | 4.3 |"));
    assert!(out.contains("| 16 | 71,333.43 | 637.9 | 1,570.11 | 12.65 |"));
}

#[test]
fn candidate_against_baseline_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let cand = write_candidate(dir.path());
    let base = format!("{SCENARIO}/baseline.json");
    let (code, md, err) = run_in(dir.path(), &["report", &cand, "--baseline", &base]);
    assert_eq!(code, 0, "{err}");
    assert!(md.starts_with("**Benchmark report · Regression**"), "{md}");
    assert!(
        md.contains("| c1 | 14,445.12 (+0.0%) | 159.68 (+0.0%) | 865.57 (+30.0%) | 3.57 (+0.0%) |"),
        "{md}"
    );
    assert!(
        md.contains("| c16 (baseline only) | 71,333.43 | 637.9 | 1,570.11 | 12.65 |"),
        "{md}"
    );
    assert!(
        md.contains("**Note:** c16 (baseline only): baseline values; the candidate has no point with this identity."),
        "{md}"
    );
    assert!(md.contains("<details><summary>中文</summary>"));

    let (code, en, _) = run_in(
        dir.path(),
        &["report", &cand, "--baseline", &base, "--lang", "en"],
    );
    assert_eq!(code, 0);
    assert!(!en.contains("<details>"));

    let (code, _, err) = run_in(
        dir.path(),
        &[
            "report",
            &cand,
            "--baseline",
            &base,
            "--format",
            "html",
            "-o",
            "r.html",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let h = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert_eq!(h.matches("<svg").count(), 4);
    assert!(h.contains("865.57"));

    let (code, j, _) = run_in(
        dir.path(),
        &["report", &cand, "--baseline", &base, "--format", "json"],
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["heading"]["type"], "run");

    let (code, t, _) = run_in(
        dir.path(),
        &["report", &cand, "--baseline", &base, "--format", "table"],
    );
    assert_eq!(code, 0);
    assert!(t.contains("865.57 (+30.0%)"), "{t}");
    assert!(!t.contains('\u{1b}'), "no colour off a TTY");
}

#[test]
fn report_reads_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let cand = write_candidate(dir.path());
    let base = format!("{SCENARIO}/baseline.json");
    let (code, _, err) = run_in(dir.path(), &["baseline", "import", &base, "--db", "s.db"]);
    assert_eq!(code, 0, "baseline import: {err}");
    let (code, md, err) = run_in(
        dir.path(),
        &[
            "report",
            &cand,
            "--db",
            "s.db",
            "--baseline",
            "latest-baseline",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("865.57 (+30.0%)"), "{md}");
    // No store: one clear line.
    let (code, _, err) = run_in(dir.path(), &["report", "--db", "none.db"]);
    assert_ne!(code, 0);
    assert!(err.contains("none.db"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A candidate with 2 repeats per point (two agg rows of one identity): the Markdown and HTML
/// reports show `value ± sd` and the candidate's spread, and a TTFT change inside the
/// candidate's own spread is not a regression (docs/compare.md §4, rule 2b).
#[test]
fn repeated_candidate_shows_its_spread_and_the_verdict_honours_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{SCENARIO}/baseline.json")).unwrap();
    let imp = parse_baseline(&text, "baseline.json", &IdentityOverrides::default()).unwrap();
    let mut rows: Vec<Value> = Vec::new();
    for r in imp
        .points
        .iter()
        .map(|r| r.to_value())
        .filter(|r| r["conc"] == json!(1))
    {
        // TTFT 665.82 ms → repeats ×1.02 and ×1.138: mean +7.9 %, sd ±7.7 % of the mean.
        for f in [1.02, 1.138] {
            let mut c = r.clone();
            c["image"] = json!("lmsysorg/sglang:v0.5.20-cu130");
            c["mean_ttft"] = json!(r["mean_ttft"].as_f64().unwrap() * f);
            rows.push(c);
        }
    }
    std::fs::write(
        dir.path().join("cand.json"),
        serde_json::to_string(&rows).unwrap(),
    )
    .unwrap();
    let base = format!("{SCENARIO}/baseline.json");
    let (code, md, err) = run_in(
        dir.path(),
        &["report", "cand.json", "--baseline", &base, "--lang", "en"],
    );
    assert_eq!(code, 0, "{err}");
    // 665.82 × 1.079 = 718.42; sd of (679.14, 757.70) = 78.57 / √2 = 55.56.
    assert!(md.contains("| 718.42 ± 55.56 (+7.9%) |"), "{md}");
    assert!(
        md.contains("candidate spread over 2 repeats (1 sd):") && md.contains("TTFT ms ±7.7%"),
        "{md}"
    );
    assert!(
        !md.contains("regression"),
        "inside the candidate's spread: {md}"
    );
    assert!(md.contains("No change"), "{md}");
    let (code, _, err) = run_in(
        dir.path(),
        &[
            "report",
            "cand.json",
            "--baseline",
            &base,
            "--format",
            "html",
            "-o",
            "r.html",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(html.contains("718.42 ± 55.56"), "html shows the spread");
}

/// A simulator sweep given a real `--image`: the report says it is simulated, with the
/// simulator's description, in Markdown and HTML (alone and against a baseline).
#[test]
fn simulated_run_is_labelled_simulated() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
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
        assert_eq!(code, 0, "{err}");
    }
    let (code, md, err) = run_in(dir.path(), &["report", "1", "--db", "s.db"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        md.contains(
            "`lmsysorg/sglang:v0.5.20-cu130` · 256/128 · TP1/EP1 · Mean latency · simulated"
        ),
        "{md}"
    );
    assert!(
        md.contains("Simulated: this run ran on the embedded simulator, not a real engine: simulated 1× H200"),
        "{md}"
    );
    assert!(md.contains("模拟结果：本次运行在内置模拟器上完成"), "{md}");
    let (code, md, err) = run_in(
        dir.path(),
        &[
            "report",
            "2",
            "--baseline",
            "1",
            "--db",
            "s.db",
            "--lang",
            "en",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        md.contains("Simulated: the candidate ran on the embedded simulator"),
        "{md}"
    );
    assert!(
        md.contains("Simulated: the baseline ran on the embedded simulator"),
        "{md}"
    );
    let (code, _, err) = run_in(
        dir.path(),
        &[
            "report", "1", "--db", "s.db", "--format", "html", "-o", "s.html",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let h = std::fs::read_to_string(dir.path().join("s.html")).unwrap();
    assert!(
        h.contains("Simulated: this run ran on the embedded simulator"),
        "html"
    );
}

/// Reports against real InferenceX captures (SOURCE.md S1, S7): an AgentX point InferenceX
/// would not accept still compares and says why; a dashboard-API baseline cites its run as
/// `API 1`.
#[test]
fn report_on_real_captures_says_why_and_cites_sources() {
    let dir = tempfile::tempdir().unwrap();
    let raw = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/real-results/raw"
    );
    let s7 = format!(
        "{raw}/S7-ix-kimik2.7-mi355x-agentic/tp8_sweep_29337493492/kimik2.7_tp8_conc16_kvdram-lmcache_fp4_vllm_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc16_mi355x-amds_01.json"
    );
    let mut cand: Value = serde_json::from_str(&std::fs::read_to_string(&s7).unwrap()).unwrap();
    cand["request_metrics"]["latency"]["ttft"]["mean"] = json!(33.72351 * 1.2);
    cand["agentx_submission_valid"] = json!(false);
    cand["agentx_submission_invalid_reasons"] = json!(["context_overflow_rate_exceeded"]);
    std::fs::write(dir.path().join("inv.json"), json!([cand]).to_string()).unwrap();
    let (code, md, err) = run_in(
        dir.path(),
        &["report", "inv.json", "--baseline", &s7, "--lang", "en"],
    );
    assert_eq!(code, 0, "{err}");
    // it still compares (TTFT +20 %), and says why it is not a valid submission
    assert!(md.starts_with("**Benchmark report · Regression**"), "{md}");
    assert!(
        md.contains(
            "| 16 | 2,884.89 (+0.0%) | 26.38 (+0.0%) | 40,468.21 (+20.0%) | 72.11 (+0.0%) |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "AgentX · TP8/EP1 · c16: not a valid InferenceX submission: more than 1 % of the \
             profiling requests were rejected as longer than the server's context \
             (context_overflow_rate_exceeded)."
        ),
        "{md}"
    );

    let base = format!(
        "{raw}/S1-ix-app-cypress-528c4146/packages/app/cypress/fixtures/api/benchmarks.json"
    );
    let row = json!([{
        "hw": "mi355x", "conc": 4, "image": "lmsysorg/sglang:v0.5.13-rocm700-mi35x",
        "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
        "framework": "sglang", "precision": "fp4", "spec_decoding": "none", "disagg": false,
        "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 4, "ep": 1,
        "dp_attention": "false", "tput_per_gpu": 198.9447984579421,
        "output_tput_per_gpu": 98.9883650269406, "mean_ttft": 0.190,
        "mean_tpot": 0.009618676175431115, "benchmark_type": "single_turn", "point_status": "ok"
    }]);
    std::fs::write(dir.path().join("cand.json"), row.to_string()).unwrap();
    let (code, md, err) = run_in(
        dir.path(),
        &["report", "cand.json", "--baseline", &base, "--lang", "en"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        md.contains("| 1k/1k · TP4/EP1 · c4 | 198.94 (+0.0%) | 98.99 (+0.0%) | 190 (+10.1%) | 9.62 (+0.0%) |"),
        "{md}"
    );
    assert!(
        md.contains("Baseline sources: [API 1](https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27213443242/attempts/1)."),
        "{md}"
    );
    assert!(
        md.contains("The baseline also holds 424 point(s) of configurations the candidate did not run; not compared."),
        "{md}"
    );
}

/// The attempt comment against dashboard API rows (SOURCE.md S1: b200 sglang dsr1 fp8 TP8
/// 8k/1k, three points of three CI runs) cites them as the scenario's PR does: `Sources: API
/// 1, API 2, API 3`, each a link to its run.
#[test]
fn attempt_against_dashboard_rows_cites_api_sources() {
    let dir = tempfile::tempdir().unwrap();
    let raw = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/real-results/raw"
    );
    let all: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{raw}/S1-ix-app-cypress-528c4146/packages/app/cypress/fixtures/api/benchmarks.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let rows: Vec<Value> = all
        .into_iter()
        .filter(|r| {
            r["hardware"] == "b200"
                && r["framework"] == "sglang"
                && r["precision"] == "fp8"
                && r["spec_method"] == "none"
                && r["decode_tp"] == 8
                && r["isl"] == 8192
                && r["osl"] == 1024
                && r["disagg"] == false
        })
        .collect();
    assert_eq!(rows.len(), 3);
    std::fs::write(dir.path().join("api.json"), json!(rows).to_string()).unwrap();
    // the candidate repeats the baseline's numbers
    let cand: Vec<Value> = rows
        .iter()
        .map(|r| {
            let m = &r["metrics"];
            json!({
                "hw": "b200", "conc": r["conc"], "image": "lmsysorg/sglang:v0.5.20-cu130",
                "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
                "framework": "sglang", "precision": "fp8", "spec_decoding": "none",
                "disagg": false, "isl": 8192, "osl": 1024, "is_multinode": false, "tp": 8,
                "ep": r["decode_ep"], "dp_attention": "false",
                "tput_per_gpu": m["tput_per_gpu"], "output_tput_per_gpu": m["output_tput_per_gpu"],
                "mean_ttft": m["mean_ttft"], "mean_tpot": m["mean_tpot"],
                "benchmark_type": "single_turn", "point_status": "ok"
            })
        })
        .collect();
    std::fs::write(dir.path().join("cand.json"), json!(cand).to_string()).unwrap();
    let (code, md, err) = run_in(
        dir.path(),
        &[
            "attempt",
            "--baseline",
            "api.json",
            "--candidate",
            "cand.json",
            "--lang",
            "en",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let run = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs";
    assert!(
        md.contains(&format!(
            "Baseline: 2025-11-18 – 2026-05-22 · \
             `lmsysorg/sglang:v0.5.12-cu130, lmsysorg/sglang:v0.5.6-cu129-amd64` · 8k/1k · TP8/EP1, \
             TP8/EP8 · Mean latency · Sources: \
             [API 1]({run}/26306422380/attempts/1), [API 2]({run}/19449195765/attempts/4), \
             [API 3]({run}/20621824084/attempts/1)"
        )),
        "{md}"
    );
    assert!(
        md.contains("| 8k/1k · TP8/EP1 · c1 | 16.18 (+0.0%) |"),
        "{md}"
    );
}

/// A whole dashboard capture (435 rows, many configurations and dates) as the baseline of an
/// attempt that ran one point: the baseline line describes the one matched row (its date,
/// image, workload, topology and run link), not the file; a candidate matching nothing says so.
#[test]
fn attempt_baseline_line_describes_only_the_matched_dashboard_rows() {
    let dir = tempfile::tempdir().unwrap();
    let api = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/real-results/raw/S1-ix-app-cypress-528c4146/packages/app/",
        "cypress/fixtures/api/benchmarks.json"
    );
    let all: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(api).unwrap()).unwrap();
    let row = all
        .iter()
        .find(|r| {
            r["hardware"] == "b200"
                && r["framework"] == "sglang"
                && r["precision"] == "fp8"
                && r["spec_method"] == "none"
                && r["decode_tp"] == 8
                && r["isl"] == 8192
                && r["osl"] == 1024
                && r["disagg"] == false
                && r["conc"] == 1
        })
        .unwrap();
    let cand = |conc: u64| {
        let m = &row["metrics"];
        json!([{
            "hw": "b200", "conc": conc, "image": "lmsysorg/sglang:v0.5.20-cu130",
            "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
            "framework": "sglang", "precision": "fp8", "spec_decoding": "none",
            "disagg": false, "isl": 8192, "osl": 1024, "is_multinode": false, "tp": 8,
            "ep": row["decode_ep"], "dp_attention": "false",
            "tput_per_gpu": m["tput_per_gpu"], "output_tput_per_gpu": m["output_tput_per_gpu"],
            "mean_ttft": m["mean_ttft"], "mean_tpot": m["mean_tpot"],
            "benchmark_type": "single_turn", "point_status": "ok"
        }])
        .to_string()
    };
    std::fs::write(dir.path().join("cand.json"), cand(1)).unwrap();
    std::fs::write(dir.path().join("none.json"), cand(3)).unwrap();
    let attempt = |c: &str| {
        run_in(
            dir.path(),
            &[
                "attempt",
                "--baseline",
                api,
                "--candidate",
                c,
                "--lang",
                "en",
            ],
        )
    };
    let (code, md, err) = attempt("cand.json");
    assert_eq!(code, 0, "{err}");
    let line = md.lines().find(|l| l.starts_with("Baseline: ")).unwrap();
    assert_eq!(
        line,
        "Baseline: 2026-05-22 · `lmsysorg/sglang:v0.5.12-cu130` · 8k/1k · TP8/EP1 · Mean \
         latency · Sources: [API 1](https://github.com/SemiAnalysisAI/InferenceX/actions/runs/\
         26306422380/attempts/1)",
        "{md}"
    );
    // nothing matched (c3 is not in the capture): no file-wide date, image or sources
    let (_, md, err) = attempt("none.json");
    let line = md
        .lines()
        .find(|l| l.starts_with("Baseline: "))
        .unwrap_or_else(|| panic!("{md}{err}"));
    assert!(
        line.starts_with("Baseline: none of the baseline's 435 points matched a candidate point"),
        "{line}"
    );
    assert!(
        !line.contains("Sources") && !line.contains("API 1"),
        "{line}"
    );
}
