//! `servebench sweep` against a REAL serving engine (llama.cpp `llama-server`, tiny random
//! model, started by `scripts/services/real-engine.sh`; `../shared/tools/real-engine/`).
//!
//! Needs `SERVEBENCH_REAL_ENGINE_URL` and `SERVEBENCH_REAL_ENGINE_MODEL_DIR`; without them the
//! tests print `skipped: …`, or fail when `SERVEBENCH_REQUIRE_SERVICES=1`.

use crate::common;
use common::{read_json, read_jsonl, scratch_in};

use serde_json::Value;

use common::real_engine_sweep as sweep;

#[test]
fn completions_sweep_counts_usage_and_sanity() {
    let Some((url, dir)) = common::real_engine() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("re");
    let stdout = sweep(&url, &dir, &out, &["--conc", "1,2,4"]);
    assert!(
        stdout.contains("| Concurrency | Total tok/s/GPU |"),
        "{stdout}"
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["points"].as_array().unwrap().len(), 3);
    for conc in [1u64, 2, 4] {
        let d = out.join(format!("conc{conc}"));
        let recs = read_jsonl(&d.join("records.jsonl"));
        let measured: Vec<&Value> = recs.iter().filter(|r| r["phase"] == "measured").collect();
        assert_eq!(
            measured.len() as u64,
            10 * conc,
            "conc {conc}: 10 × conc measured"
        );
        assert_eq!(
            (recs.len() - measured.len()) as u64,
            2 * conc,
            "conc {conc}: 2 × conc warmups"
        );
        let mut sum_req = 0;
        let mut sum_in = 0;
        for r in &measured {
            assert_eq!(r["success"], true, "{r}");
            let out_tokens = r["output_tokens"].as_u64().unwrap();
            let req = r["requested_output_tokens"].as_u64().unwrap();
            assert!(
                (25..=32).contains(&req),
                "OSL drawn in [floor(32·0.8), 32]: {req}"
            );
            assert_eq!(
                out_tokens, req,
                "ignore_eos: completion_tokens == max_tokens"
            );
            assert_eq!(
                r["output_tokens_source"], "usage",
                "usage on the finish chunk is read"
            );
            assert_eq!(
                r["token_events"].as_u64().unwrap(),
                out_tokens,
                "one SSE chunk per token"
            );
            assert_eq!(
                r["prompt_tokens_client"], r["prompt_tokens_server"],
                "HF tokenizer count == server count"
            );
            let (ttft, e2el, tpot) = (
                r["ttft_ms"].as_f64().unwrap(),
                r["e2el_ms"].as_f64().unwrap(),
                r["tpot_ms"].as_f64().unwrap(),
            );
            // a busy CPU can make llama.cpp flush several tokens in one write (seen with a raw
            // socket client too), so equal arrival times are real: e2el ≥ ttft, tpot ≥ 0
            assert!(ttft > 0.0 && e2el >= ttft && tpot >= 0.0, "{r}");
            assert_eq!(r["itl_ms"].as_array().unwrap().len() as u64, out_tokens - 1);
            assert!((tpot - (e2el - ttft) / (out_tokens - 1) as f64).abs() < 1e-9);
            assert!(
                r["warnings"].is_null() || r["warnings"].as_array().unwrap().is_empty(),
                "{r}"
            );
            sum_req += req;
            sum_in += r["prompt_tokens_client"].as_u64().unwrap();
        }
        let raw = read_json(&d.join("result.json"));
        assert_eq!(raw["completed"].as_u64().unwrap(), 10 * conc);
        assert_eq!(
            raw["total_output_tokens"].as_u64().unwrap(),
            sum_req,
            "usage totals"
        );
        assert_eq!(raw["total_input_tokens"].as_u64().unwrap(), sum_in);
        assert_eq!(
            raw["servebench"]["peak_concurrency"].as_u64().unwrap(),
            conc,
            "pool sized to the concurrency"
        );
        let agg = read_json(&d.join("agg.json"));
        assert_eq!(agg["point_status"], "ok");
        assert_eq!(agg["num_requests_failed"], 0);
        assert_eq!(agg["mean_isl"], agg["mean_isl_server"]);
        for k in [
            "tput_per_gpu",
            "output_tput_per_gpu",
            "input_tput_per_gpu",
            "mean_ttft",
            "mean_e2el",
            "mean_tpot",
        ] {
            assert!(agg[k].as_f64().unwrap() > 0.0, "{k} = {}", agg[k]);
        }
        for k in ["median_tpot", "p99_itl", "p99.9_e2el", "std_ttft"] {
            assert!(agg[k].as_f64().unwrap() >= 0.0, "{k} = {}", agg[k]);
        }
        let mean_tpot_ms = agg["mean_tpot"].as_f64().unwrap() * 1000.0;
        assert!((agg["mean_intvty"].as_f64().unwrap() - 1000.0 / mean_tpot_ms).abs() < 1e-6);
        let (med, p99) = (
            agg["median_ttft"].as_f64().unwrap(),
            agg["p99_ttft"].as_f64().unwrap(),
        );
        assert!(p99 >= med);
        let tput = agg["tput_per_gpu"].as_f64().unwrap();
        let want = (sum_in + sum_req) as f64 / agg["duration"].as_f64().unwrap();
        assert!(
            (tput - want).abs() / want < 1e-9,
            "tput_per_gpu = (in + out) / duration / 1 GPU"
        );
    }
}

#[test]
fn chat_and_inferencex_compat_against_the_real_engine() {
    let Some((url, dir)) = common::real_engine() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // chat: the server applies its ChatML template, usage comes in a separate choices:[] chunk
    let out = tmp.path().join("chat");
    sweep(&url, &dir, &out, &["--conc", "2", "--api", "chat"]);
    let recs = read_jsonl(&out.join("conc2/records.jsonl"));
    for r in recs.iter().filter(|r| r["phase"] == "measured") {
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(r["output_tokens"], r["requested_output_tokens"]);
        let (c, s) = (
            r["prompt_tokens_client"].as_u64().unwrap(),
            r["prompt_tokens_server"].as_u64().unwrap(),
        );
        assert!(s > c, "server count includes its chat template: {s} vs {c}");
    }
    // InferenceX counting reads usage only from chunks without choices; llama.cpp attaches the
    // completions usage to its finish chunk, so InferenceX would record 0 output tokens here.
    let out = tmp.path().join("ix");
    sweep(&url, &dir, &out, &["--conc", "2", "--compat", "inferencex"]);
    let raw = read_json(&out.join("conc2/result.json"));
    assert_eq!(raw["completed"].as_u64().unwrap(), 20);
    assert_eq!(
        raw["total_output_tokens"].as_u64().unwrap(),
        0,
        "InferenceX parity: no usage read"
    );
    assert_eq!(
        raw["mean_tpot_ms"].as_f64(),
        Some(0.0),
        "InferenceX writes 0 for an empty TPOT list"
    );
    assert_eq!(raw["servebench"]["compat"], "inferencex");
    assert_eq!(raw["servebench"]["new_connection_per_request"], true);
}

/// What a new user's first run against llama.cpp did without a word (found by a new-user pass):
/// no `--engine` labelled the rows framework `vllm` and sent vLLM's optional fields, and a
/// `--model` the server does not serve was recorded as the model measured (llama.cpp answers
/// any name with its own model). Both are measured as asked, with one warning line each.
#[test]
fn engine_profile_and_model_the_server_contradicts_are_warned_about() {
    let Some((url, _)) = common::real_engine() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let mut a = vec![
            "bench",
            "--endpoint",
            &url,
            "--conc",
            "1",
            "--num-prompts",
            "2",
        ];
        a.extend([
            "--warmups",
            "0",
            "--isl",
            "32",
            "--osl",
            "4",
            "--no-store",
            "--out",
            out,
        ]);
        a.extend(extra);
        let o = scratch_in(tmp.path()).args(a).output().unwrap();
        common::ok(&o);
        common::stderr(&o)
    };
    let err = run("plain", &["--model", "not-served"]);
    let engine_warning = format!(
        "warning: the server at {url} exposes llama.cpp series (llamacpp:…) on /metrics, but the engine profile is vllm (--engine; vllm when not given), which decides the optional request fields and, without --framework, the rows' framework; pass --engine llama.cpp"
    );
    assert_eq!(err.matches(&engine_warning).count(), 1, "{err}");
    let model_warning = format!(
        "warning: --model not-served is not among the models {url}/v1/models serves (tiny-chatml)"
    );
    assert_eq!(err.matches(&model_warning).count(), 1, "{err}");
    let agg = read_json(&tmp.path().join("plain/conc1/agg.json"));
    assert_eq!(
        (agg["framework"].as_str(), agg["model"].as_str()),
        (Some("vllm"), Some("not-served"))
    );
    // the profile and model it serves: no warning
    let err = run(
        "matched",
        &["--engine", "llama.cpp", "--model", "tiny-chatml"],
    );
    assert!(!err.contains("warning:"), "{err}");
    let agg = read_json(&tmp.path().join("matched/conc1/agg.json"));
    assert_eq!(agg["framework"], "llama.cpp");
}
