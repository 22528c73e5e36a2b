//! `servebench compare` through the binary: stored baseline vs candidate files, exit codes,
//! JSON output, B18 and B20 end to end.

use crate::common;
use common::{output_in, SHARED};

use std::process::Output;

use serde_json::{json, Value};

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Candidate rows for the scenario config (AgentX, TP1/EP1, b200 sglang fp4 mtp) in the
/// servebench agg-row shape, scaled from the baseline table.
fn scenario_candidate(ttft_factor_c16: f64) -> Value {
    let base = [
        (1, 14445.12, 159.68, 665.82, 3.57),
        (4, 23191.29, 246.97, 595.02, 4.3),
        (8, 39051.57, 370.67, 858.57, 5.43),
        (16, 71333.43, 637.9, 1570.11, 12.65),
    ];
    let rows: Vec<Value> = base
        .iter()
        .map(|&(conc, tot, out, ttft, tpot)| {
            let f = if conc == 16 { ttft_factor_c16 } else { 1.0 };
            json!({
                "hw": "b200", "conc": conc, "image": "lmsysorg/sglang:v0.5.20-cu130",
                "model": "Qwen/Qwen3.8-Flash-Next-NVFP4", "infmax_model_prefix": "qwen3.8next",
                "framework": "sglang", "precision": "fp4", "spec_decoding": "mtp", "disagg": false,
                "recipe_fingerprint": "", "isl": null, "osl": null, "is_multinode": false, "tp": 1,
                "pp": 1, "dcp_size": 1, "pcp_size": 1, "ep": 1, "dp_attention": "false",
                "tput_per_gpu": tot * 1.02, "output_tput_per_gpu": out * 1.02,
                "mean_ttft": ttft * f / 1000.0, "mean_tpot": tpot / 1000.0,
                "schema_version": 1, "benchmark_type": "agentic_traces", "api": "chat",
                "num_requests_total": 100, "num_requests_successful": 100, "num_requests_failed": 0,
                "point_status": "ok"
            })
        })
        .collect();
    json!(rows)
}

#[test]
fn scenario_baseline_in_store_vs_candidate_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{SHARED}/data/scenario/baseline.json");
    assert!(output_in(dir.path(), &["baseline", "import", &file])
        .status
        .success());

    // +2 % throughput, TTFT unchanged: no regression, exit 0.
    std::fs::write(
        dir.path().join("ok.json"),
        scenario_candidate(1.0).to_string(),
    )
    .unwrap();
    let o = output_in(
        dir.path(),
        &["compare", "--baseline", "1", "--candidate", "ok.json"],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(0), "{s}");
    assert!(s.contains("14,734.02 (+2.0%)"), "{s}");
    assert!(s.contains("1,570.11 (+0.0%)"), "{s}");
    assert!(
        s.contains(
            "Verdict: no_change (baseline run 1, candidate ok.json, mean latency, gate ±5%)"
        ),
        "{s}"
    );

    // TTFT +31.3 % at c16: regression, exit 2.
    std::fs::write(
        dir.path().join("slow.json"),
        scenario_candidate(1.313).to_string(),
    )
    .unwrap();
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "latest-baseline",
            "--candidate",
            "slow.json",
        ],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(2), "{s}");
    assert!(
        s.contains("AgentX · TP1/EP1 · c16: regression — TTFT ms +31.3%"),
        "{s}"
    );
    assert!(s.contains("Verdict: regression, exit 2"), "{s}");
    // A wider gate lets it pass.
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "1",
            "--candidate",
            "slow.json",
            "--gate",
            "40",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));

    // --stat median against a mean-only table: statistic mismatch, never a fake delta.
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "1",
            "--candidate",
            "ok.json",
            "--stat",
            "median",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ttft = c["points"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft")
        .unwrap()
        .clone();
    assert_eq!(ttft["delta"]["na"]["kind"], "statistic_mismatch");
    // The baseline eval has no candidate: listed with its reason.
    assert_eq!(c["evals"][0]["delta"]["na"]["kind"], "candidate_missing");
    assert_eq!(c["evals"][0]["baseline"]["samples"], 1319);
}

/// New-user F4: after importing baselines of other configurations, `latest-baseline` is the
/// newest baseline run with a point matching the candidate (was: the newest baseline run of
/// any configuration: nothing matched, `not_comparable`, exit 0), and says which; when no run
/// matches, one line names the run it used and the candidate's identity.
#[test]
fn latest_baseline_is_the_newest_matching_baseline_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{SHARED}/data/scenario/baseline.json");
    assert!(output_in(dir.path(), &["baseline", "import", &file])
        .status
        .success());
    // a newer baseline run of another GPU (nothing of it matches the candidate)
    let mut other = scenario_candidate(1.0);
    for r in other.as_array_mut().unwrap() {
        r["hw"] = json!("mi355x");
    }
    std::fs::write(dir.path().join("other.json"), other.to_string()).unwrap();
    let o = output_in(dir.path(), &["baseline", "import", "other.json"]);
    assert!(o.status.success(), "{}", out(&o));
    std::fs::write(
        dir.path().join("slow.json"),
        scenario_candidate(1.313).to_string(),
    )
    .unwrap();
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "latest-baseline",
            "--candidate",
            "slow.json",
        ],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(2), "{s}");
    assert!(
        s.contains(
            "note: --baseline latest-baseline: run 1, the newest of the 2 baseline runs with a \
             point matching the candidate (1 newer baseline run(s) hold other configurations)"
        ),
        "{s}"
    );
    assert!(
        s.contains("Verdict: regression, exit 2 (baseline run 1,"),
        "{s}"
    );
    // a candidate no baseline run matches: the newest is used, and one line says so
    let mut none = scenario_candidate(1.0);
    for r in none.as_array_mut().unwrap() {
        r["hw"] = json!("gb200");
    }
    std::fs::write(dir.path().join("none.json"), none.to_string()).unwrap();
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "latest-baseline",
            "--candidate",
            "none.json",
        ],
    );
    let s = out(&o);
    assert!(
        s.contains(
            "warning: --baseline latest-baseline: none of the 2 baseline runs has a point \
             matching the candidate (gb200 · sglang · qwen3.8next · fp4 · mtp · AgentX · TP1/EP1 \
             · conc 1, 4, 8, 16); comparing with the newest, run 2, so nothing is compared"
        ),
        "{s}"
    );
}

#[test]
fn b18_and_b20_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let row = |extra: Value| {
        let mut r = json!({"hw": "b200", "conc": 64, "infmax_model_prefix": "gptoss", "framework": "vllm",
            "precision": "fp4", "isl": 8192, "osl": 1024, "tp": 1, "ep": 1, "dp_attention": "false",
            "point_status": "ok", "num_requests_total": 640, "num_requests_failed": 0,
            "num_requests_successful": 640, "mean_isl": 8192.0, "mean_isl_server": 8192.0});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    };
    let w = |name: &str, v: Value| std::fs::write(dir.path().join(name), v.to_string()).unwrap();
    // B18
    w(
        "b18-base.json",
        json!([row(
            json!({"api": "completions", "mean_osl": 1024.0, "output_tput_per_gpu": 10000.0})
        )]),
    );
    w(
        "b18-cand.json",
        json!([row(
            json!({"api": "chat", "mean_osl": 63.0, "output_tput_per_gpu": 1100.0})
        )]),
    );
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "b18-base.json",
            "--candidate",
            "b18-cand.json",
        ],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(0), "not a regression: {s}");
    assert!(s.contains("not_comparable — mean output length −93.8% (63 vs 1024), beyond the ±5% tolerance; different API kind (chat vs completions)"), "{s}");
    assert!(s.contains("1,100 (-89.0%)"), "{s}");
    // B20: baseline repeats in one file (same identity five times) → spread.
    let reps: Vec<Value> = [100.0, 112.0, 95.0, 108.0, 118.0]
        .iter()
        .map(|ms: &f64| row(json!({"median_ttft": ms / 1000.0})))
        .collect();
    w("b20-base.json", json!(reps));
    w("b20-a.json", json!([row(json!({"median_ttft": 0.115}))]));
    w("b20-b.json", json!([row(json!({"median_ttft": 0.140}))]));
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "b20-base.json",
            "--candidate",
            "b20-a.json",
            "--stat",
            "median",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = c["points"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft")
        .unwrap()
        .clone();
    assert_eq!(m["delta"]["pct"], 7.9);
    assert_eq!(m["verdict"], "no_change");
    assert_eq!(m["baseline_spread"]["n"], 5);
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "b20-base.json",
            "--candidate",
            "b20-b.json",
            "--stat",
            "median",
        ],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(2), "{s}");
    assert!(s.contains("regression — TTFT ms +31.3% (baseline 5 repeats: mean 106.60, sd 9.21, range 95.00–118.00)"), "{s}");
}

/// Issue 28: a usage error must not share its code with "regression" (2): clap's refusals
/// exit 64 (EX_USAGE) in every command but `matrix` (argparse's 2, as the reference script);
/// `--help` and `--version` exit 0.
#[test]
fn a_usage_error_exits_64_never_the_regression_code() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["compare", "--no-such-flag"][..],
        &["compare", "--stat", "p42"],
        &["sweep", "--conc"],
        &["run", "--sim-slowdown", "1.1"],
        &["no-such-command"],
    ] {
        let o = output_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(64), "{args:?}: {}", out(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("error:"),
            "{args:?}"
        );
    }
    for args in [&["--help"][..], &["--version"], &["compare", "--help"]] {
        let o = output_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", out(&o));
    }
    let o = output_in(dir.path(), &["matrix", "full-sweep", "--seq-lens", "1k8k"]);
    assert_eq!(o.status.code(), Some(2), "argparse's code: {}", out(&o));
}

#[test]
fn failed_candidate_exits_3_and_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{SHARED}/data/scenario/baseline.json");
    assert!(
        output_in(dir.path(), &["baseline", "import", &file, "--db", "s.db"])
            .status
            .success()
    );
    let mut rows = scenario_candidate(1.0);
    for r in rows.as_array_mut().unwrap() {
        r["point_status"] = json!("failed");
        r["num_requests_successful"] = json!(0);
        r["num_requests_failed"] = json!(100);
        for k in [
            "tput_per_gpu",
            "output_tput_per_gpu",
            "mean_ttft",
            "mean_tpot",
        ] {
            r[k] = Value::Null;
        }
    }
    std::fs::write(dir.path().join("failed.json"), rows.to_string()).unwrap();
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "1",
            "--candidate",
            "failed.json",
        ],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(3), "{s}");
    assert!(s.contains("c16: candidate_invalid — Δ N/A: failed"), "{s}");

    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "7",
            "--candidate",
            "failed.json",
        ],
    );
    let s = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        s.starts_with("error: --baseline: run 7 does not exist in s.db"),
        "{s}"
    );
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--db",
            "s.db",
            "--baseline",
            "nothing.json",
            "--candidate",
            "1",
        ],
    );
    let s = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        s.starts_with("error: --baseline: nothing.json: neither a run id nor an existing file"),
        "{s}"
    );
}

/// Two simulator sweeps on different simulated GPUs (h200 vs h100) share no identity: every
/// row is labelled by its side, the baseline-only rows show the baseline's values, no row
/// claims request errors are unavailable (the candidate recorded 0 failures), each remark
/// appears once per group of rows, and the finding names the identity field that differs.
#[test]
fn unmatched_sides_are_labelled_and_notes_are_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    for gpu in ["h200", "h100"] {
        let o = output_in(
            dir.path(),
            &[
                "sweep",
                "--sim-gpu",
                gpu,
                "--isl",
                "256",
                "--osl",
                "128",
                "--conc",
                "1,4",
                "--num-prompts",
                "4",
                "--db",
                "g.db",
            ],
        );
        assert!(o.status.success(), "sweep {gpu}: {}", out(&o));
    }
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            "1",
            "--candidate",
            "2",
            "--db",
            "g.db",
        ],
    );
    let text = out(&o);
    assert!(text.contains("│ c1 (baseline only)"), "{text}");
    assert!(text.contains("│ c1 (candidate only)"), "{text}");
    assert!(text.contains("│ c4 (baseline only)"), "{text}");
    assert!(!text.contains("request errors unavailable"), "{text}");
    assert!(
        text.contains(
            "Note: c1 (candidate only), c4 (candidate only): Δ N/A: no matched baseline."
        ),
        "{text}"
    );
    assert!(!text.contains("c1: Δ N/A"), "{text}");
    assert!(text.contains("Verdict: not_comparable"), "{text}");

    let o = output_in(
        dir.path(),
        &[
            "report",
            "2",
            "--baseline",
            "1",
            "--db",
            "g.db",
            "--lang",
            "en",
        ],
    );
    let md = out(&o);
    assert!(o.status.success(), "{md}");
    assert!(md.contains("| c1 (baseline only) | "), "{md}");
    assert!(
        !md.contains("| c1 (baseline only) | N/A"),
        "baseline values shown: {md}"
    );
    assert!(!md.contains("request errors unavailable"), "{md}");
    assert!(
        md.contains("the identities differ in hw sim-h200 (baseline) vs sim-h100 (candidate)"),
        "{md}"
    );
}

const S1_API: &str =
    "data/real-results/raw/S1-ix-app-cypress-528c4146/packages/app/cypress/fixtures/api";

/// `compare --baseline benchmarks.json` on a real capture of the InferenceX dashboard API
/// (SOURCE.md S1) used to stop with `row 0: missing field tp`; now its rows are baselines.
#[test]
fn dashboard_api_capture_is_a_baseline() {
    let dir = tempfile::tempdir().unwrap();
    // a servebench row of the capture's row 0 configuration: TTFT 190 ms (baseline 172.63)
    let cand = json!([{
        "hw": "mi355x", "conc": 4, "image": "lmsysorg/sglang:v0.5.13-rocm700-mi35x",
        "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
        "framework": "sglang", "precision": "fp4", "spec_decoding": "none", "disagg": false,
        "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 4, "ep": 1,
        "dp_attention": "false", "tput_per_gpu": 198.9447984579421,
        "output_tput_per_gpu": 98.9883650269406, "mean_ttft": 0.190,
        "mean_tpot": 0.009618676175431115, "benchmark_type": "single_turn", "point_status": "ok"
    }]);
    std::fs::write(dir.path().join("cand.json"), cand.to_string()).unwrap();
    let base = format!("{SHARED}/{S1_API}/benchmarks.json");
    let o = output_in(
        dir.path(),
        &["compare", "--baseline", &base, "--candidate", "cand.json"],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(2), "{s}");
    assert!(!s.contains("missing field"), "{s}");
    assert!(
        s.contains("1k/1k · TP4/EP1 · c4: regression — TTFT ms +10.1%"),
        "{s}"
    );
    assert!(s.contains("190 (+10.1%)"), "{s}");
    // same configuration, other topologies/workloads: listed; other GPUs/frameworks: counted
    assert!(
        s.contains("1k/1k · TP8/EP1 · c8: baseline point with no candidate"),
        "{s}"
    );
    assert!(
        s.contains("Baseline: 424 points of 60 other configurations not compared"),
        "{s}"
    );
    assert!(
        !s.contains("gb200"),
        "other GPUs are not listed row by row: {s}"
    );
    assert!(
        s.contains(
            "Baseline sources: API 1 https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27213443242/attempts/1"
        ),
        "{s}"
    );
}

/// Dashboard history rows carry median/p90/p99 latencies and no mean: `compare` at the default
/// `--stat mean` said only `Δ N/A: baseline missing`; it now says why and which `--stat` works.
#[test]
fn history_rows_without_means_say_which_stat_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let cand = json!([{
        "hw": "h200", "conc": 4, "image": "lmsysorg/sglang:v0.5.12-cu130",
        "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
        "framework": "sglang", "precision": "fp8", "spec_decoding": "none", "disagg": false,
        "isl": 8192, "osl": 1024, "is_multinode": false, "tp": 8, "ep": 1,
        "dp_attention": "false", "tput_per_gpu": 337.41, "output_tput_per_gpu": 36.89,
        "mean_ttft": 0.284, "median_ttft": 0.2416, "mean_tpot": 0.0127, "median_tpot": 0.0128,
        "benchmark_type": "single_turn", "point_status": "ok"
    }]);
    std::fs::write(dir.path().join("cand.json"), cand.to_string()).unwrap();
    let base = format!("{SHARED}/{S1_API}/benchmarks-history.json");
    let o = output_in(
        dir.path(),
        &["compare", "--baseline", &base, "--candidate", "cand.json"],
    );
    let s = out(&o);
    // the latencies: baseline missing; the energy column: the candidate file has no power
    // keys, so `telemetry missing` (the dashboard rows carry measured energy)
    assert!(
        s.contains(
            "Δ N/A: TTFT ms baseline missing, TPOT ms baseline missing, J/output tok telemetry missing"
        ),
        "{s}"
    );
    assert!(
        s.contains("Note: the baseline has no mean latencies (1 matched point): it carries median, p90, p99; compare with --stat median"),
        "{s}"
    );
    let o = output_in(
        dir.path(),
        &[
            "compare",
            "--baseline",
            &base,
            "--candidate",
            "cand.json",
            "--stat",
            "median",
        ],
    );
    let s = out(&o);
    assert!(!s.contains("the baseline has no"), "{s}");
}

/// Plausibility (issue 22 item 5): the simulator has presets for this identity (DeepSeek-R1
/// FP4 on MI355X, TP4, 1k/1k, c4), so the row says what it predicts beside the measurement,
/// and a TPOT about 3× the prediction (30 ms; the real row measured 9.6 ms) is flagged.
#[test]
fn an_implausible_tpot_is_flagged_next_to_the_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let cand = |tpot: f64| {
        json!([{
            "hw": "mi355x", "conc": 4, "image": "lmsysorg/sglang:v0.5.13-rocm700-mi35x",
            "model": "deepseek-ai/DeepSeek-R1-0528", "infmax_model_prefix": "dsr1",
            "framework": "sglang", "precision": "fp4", "spec_decoding": "none", "disagg": false,
            "isl": 1024, "osl": 1024, "is_multinode": false, "tp": 4, "ep": 1,
            "dp_attention": "false", "tput_per_gpu": 198.94, "output_tput_per_gpu": 98.99,
            "mean_ttft": 0.1726, "median_ttft": 0.1022, "mean_tpot": tpot, "median_tpot": tpot,
            "benchmark_type": "single_turn", "point_status": "ok"
        }])
    };
    let base = format!("{SHARED}/{S1_API}/benchmarks.json");
    for (tpot, flagged) in [(0.0096, false), (0.030, true)] {
        std::fs::write(dir.path().join("cand.json"), cand(tpot).to_string()).unwrap();
        let o = output_in(
            dir.path(),
            &["compare", "--baseline", &base, "--candidate", "cand.json"],
        );
        let s = out(&o);
        assert!(s.contains("simulator (mi355x preset) predicts"), "{s}");
        assert!(s.contains("median TPOT"), "{s}");
        assert_eq!(
            s.contains("implausible:") && s.contains("the predicted median TPOT"),
            flagged,
            "TPOT {tpot}: {s}"
        );
    }
}

/// An AgentX point InferenceX would not accept (`agentx_submission_valid: false`, context
/// overflow over 1 %) against the real CI aggregate it repeats (S7): it still compares (TTFT
/// +20.0 % is a regression), and the row and the verdict line say why it is not a valid
/// submission.
#[test]
fn invalid_agentx_submission_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!(
        "{SHARED}/data/real-results/raw/S7-ix-kimik2.7-mi355x-agentic/tp8_sweep_29337493492/kimik2.7_tp8_conc16_kvdram-lmcache_fp4_vllm_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc16_mi355x-amds_01.json"
    );
    let mut cand: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    cand["request_metrics"]["latency"]["ttft"]["mean"] = json!(33.72351 * 1.2);
    cand["agentx_submission_valid"] = json!(false);
    cand["agentx_submission_invalid_reasons"] = json!(["context_overflow_rate_exceeded"]);
    std::fs::write(dir.path().join("inv.json"), json!([cand]).to_string()).unwrap();
    let o = output_in(
        dir.path(),
        &["compare", "--baseline", &base, "--candidate", "inv.json"],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(2), "{s}");
    let why = "not a valid InferenceX submission: more than 1 % of the profiling requests were \
               rejected as longer than the server's context (context_overflow_rate_exceeded)";
    assert!(
        s.contains(&format!(
            "AgentX · TP8/EP1 · c16: regression — TTFT ms +20.0%; {why}"
        )),
        "{s}"
    );
    assert!(
        s.contains("Verdict: regression, exit 2")
            && s.contains(
                "— 1 candidate point is not a valid InferenceX submission (c16: more than 1 %"
            ),
        "{s}"
    );
    // 33.72351 s × 1.2 = 40,468.21 ms
    assert!(s.contains("40,468.21 (+20.0%)"), "{s}");

    // a candidate over its failure-rate gate is candidate_invalid: Δ N/A in its cells
    let mut failed = cand.clone();
    failed["agentx_submission_valid"] = json!(true);
    failed["request_accounting"]["records_dropped_total"] = json!(887 + 100);
    std::fs::write(dir.path().join("fail.json"), json!([failed]).to_string()).unwrap();
    let o = output_in(
        dir.path(),
        &["compare", "--baseline", &base, "--candidate", "fail.json"],
    );
    let s = out(&o);
    assert_eq!(o.status.code(), Some(3), "{s}");
    assert!(
        s.contains(
            "c16: candidate_invalid — Δ N/A: invalid: candidate failure rate 13.9% (100 of 720 \
             requests), over the 10% gate"
        ),
        "{s}"
    );
    assert!(s.contains("40,468.21 (Δ N/A)"), "{s}");
    assert!(!s.contains("+20.0%"), "no delta of the invalid run: {s}");
}
