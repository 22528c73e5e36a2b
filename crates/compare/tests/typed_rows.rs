//! Typed rows read the same as their JSON: for rows servebench writes, [`Point::from_agg`] /
//! [`EvalPoint::from_eval`] (typed fields, no key lookups) give exactly the point that the
//! foreign-row reader (`Point::from_agg_row` / `EvalPoint::from_eval_row` on the row's JSON)
//! gives, so comparisons of stored runs are unchanged.

use serde_json::json;
use servebench_compare::{ApiKind, BenchmarkType, EvalPoint, Point, PointStatus};
use servebench_contracts::{AggRow, EvalRow, StatRow};

fn stat(x: f64) -> StatRow {
    StatRow {
        mean: Some(x),
        median: Some(x * 0.9),
        std: Some(x / 10.0),
        p90: Some(x * 1.5),
        p99: None,
        p99_9: Some(f64::NAN),
    }
}

fn row(conc: u64) -> AggRow {
    AggRow {
        identity: servebench_contracts::Identity {
            hw: "H200-trt".into(),
            image: "lmsysorg/sglang:v0.5.20-cu130".into(),
            model: "Qwen/Qwen3-8B".into(),
            infmax_model_prefix: "qwen3".into(),
            framework: "SGLang".into(),
            precision: "FP8".into(),
            spec_decoding: "".into(),
            disagg: false,
            recipe_fingerprint: Some("qwen3-fp8-h200-sglang".into()),
            isl: Some(8192),
            osl: Some(1024),
            is_multinode: false,
            tp: 4,
            pp: 1,
            dcp_size: 1,
            pcp_size: 1,
            ep: 2,
            dp_attention: true,
            benchmark_type: servebench_contracts::BenchmarkType::SingleTurn,
            kv_offloading: Default::default(),
            kv_offload_backend: None,
            allocated_cpu_dram_gb: 0,
        },
        conc: Some(conc),
        tput_per_gpu: 1500.5,
        output_tput_per_gpu: 700.25,
        input_tput_per_gpu: f64::NAN,
        ttft: stat(0.05),
        tpot: stat(0.01),
        itl: stat(0.011),
        e2el: stat(12.0),
        intvty: stat(100.0),
        schema_version: 1,
        api: "completions".into(),
        engine: "sglang".into(),
        endpoint: "http://127.0.0.1:8000".into(),
        itl_mode: "chunk".into(),
        compat: "servebench".into(),
        num_gpus: 4,
        num_requests_total: 100,
        num_requests_successful: 97,
        num_requests_failed: 3,
        failure_reasons: [("timeout".to_string(), 2), ("http_500".to_string(), 1)]
            .into_iter()
            .collect(),
        point_status: PointStatus::Ok,
        duration: 60.5,
        request_throughput: 1.6,
        output_throughput: 2801.0,
        total_token_throughput: 6002.0,
        input_throughput: 3201.0,
        mean_isl: Some(8190.5),
        mean_isl_server: None,
        mean_osl: Some(f64::INFINITY),
        records_file: "records.jsonl".into(),
        invalid_reasons: Vec::new(),
        power: None,
        multinode: None,
        extra: Default::default(),
    }
}

fn same_point(r: &AggRow) -> Point {
    let typed = Point::from_agg(r).unwrap();
    let json = Point::from_agg_row(&r.to_value()).unwrap();
    assert_eq!(
        typed,
        json,
        "typed and JSON reading differ for {}",
        r.to_value()
    );
    typed
}

#[test]
fn servebench_agg_rows_read_as_their_json() {
    let p = same_point(&row(8));
    assert_eq!(p.identity.hw, "h200", "hw normalised");
    assert_eq!(p.identity.spec_decoding, "none");
    assert_eq!(
        (p.identity.framework.as_str(), p.identity.precision.as_str()),
        ("sglang", "fp8")
    );
    assert_eq!(
        (
            p.identity.topology.prefill.tp,
            p.identity.topology.prefill.ep
        ),
        (4, 2)
    );
    assert_eq!(p.api, Some(ApiKind::Completions));
    assert_eq!(p.values["median_ttft"], 0.05 * 0.9);
    assert!(!p.values.contains_key("p99.9_ttft"), "NaN is not a value");
    assert!(!p.values.contains_key("input_tput_per_gpu"));
    assert_eq!(p.mean_osl, None, "a non-finite mean is written null");
    assert_eq!(p.failure_rate(), Some(0.03));

    // an invalid point: its reasons stay with it; numbers in the remainder are metrics
    let mut r = row(16);
    r.point_status = PointStatus::Invalid;
    r.invalid_reasons = vec!["fixed length violated: 2/4 short".to_string()];
    r.extra.insert("power_w".into(), json!(650.5));
    r.extra.insert("note".into(), json!("kept out"));
    let p = same_point(&r);
    assert_eq!(p.status, PointStatus::Invalid);
    assert_eq!(p.invalid_reasons(), ["fixed length violated: 2/4 short"]);
    assert_eq!(p.values["power_w"], 650.5);

    // an AgentX point: agentic identity (no ISL/OSL), chat, the aggregate kept
    let mut r = row(4);
    r.identity.benchmark_type = BenchmarkType::AgenticTraces;
    r.api = "chat".into();
    r.identity.isl = None;
    r.identity.osl = None;
    r.extra
        .insert("scenario_type".into(), json!("agentic-coding"));
    r.extra
        .insert("agentx_submission_valid".into(), json!(true));
    let ax = json!({
        "dataset": {"source_type": null, "hf_dataset_name": "semianalysisai/cc-traces"},
        "request_metrics": {"qps": {"mean": 0.5}, "cache": {"theoretical_cache_hit_rate": 0.9}},
        "server_metrics": {"tokens": {"prompt_total": 1000,
            "prompt_by_source": {"raw": {"local_compute": 10, "local_cache_hit": null}}}}
    });
    r.extra.insert("agentx".into(), ax.clone());
    let p = same_point(&r);
    assert_eq!(p.identity.benchmark_type, BenchmarkType::AgenticTraces);
    assert_eq!(p.identity.isl, None);
    assert_eq!(p.api, Some(ApiKind::Chat));
    assert_eq!(p.extra["agentx"], ax);
    // compare reads the aggregate's blocks (agentx.json keys) under the agg_bmk names
    assert_eq!(p.dataset.as_deref(), Some("semianalysisai/cc-traces"));
    assert_eq!(p.values["mean_qps"], 0.5);
    assert_eq!(p.values["theoretical_cache_hit_rate"], 0.9);
    assert_eq!(p.values["total_prompt_tokens"], 1000.0);
    assert_eq!(p.values["prompt_tokens_raw_local_compute"], 10.0);
    assert!(
        !p.values.contains_key("prompt_tokens_raw_local_cache_hit"),
        "null is no value"
    );

    // an interrupted point, and a failed one
    for s in [PointStatus::Interrupted, PointStatus::Failed] {
        let mut r = row(2);
        r.point_status = s;
        assert_eq!(same_point(&r).status, s);
    }
}

/// A multi-turn row (`sweep --scenario multiturn`) is filed as multi-turn, its ISL/OSL kept,
/// read the same from its JSON, and never matches the single-turn point of the same
/// model, hardware, lengths and concurrency (it used to be filed as single-turn).
#[test]
fn multi_turn_rows_are_multi_turn_and_do_not_match_single_turn() {
    let single = same_point(&row(8));
    let mut r = row(8);
    r.identity.benchmark_type = BenchmarkType::MultiTurn;
    let multi = same_point(&r);
    assert_eq!(multi.identity.benchmark_type, BenchmarkType::MultiTurn);
    assert_eq!(
        (multi.identity.isl, multi.identity.osl),
        (Some(8192), Some(1024))
    );
    assert_eq!(single.identity.benchmark_type, BenchmarkType::SingleTurn);
    assert_ne!(multi.identity.match_key(), single.identity.match_key());
    // a kind this version does not know is refused where the row is read, naming it
    let mut v = row(8).to_value();
    v["benchmark_type"] = json!("two_turn");
    let e = servebench_contracts::AggRow::from_value(&v)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`benchmark_type`") && e.contains("two_turn"),
        "{e}"
    );
}

/// The KV-offload mode is part of the point key (InferenceX-app keys on it): a `dram` row and
/// a `none` row of the same point never match; a row without the key is `none`, typed and read
/// from its JSON alike, and so is an InferenceX row (`kv_offloading`, or the older
/// `offloading`).
#[test]
fn kv_offload_mode_is_part_of_the_point_key() {
    use servebench_contracts::KvOffload;
    let none = same_point(&row(8));
    assert_eq!(none.identity.kv_offloading, KvOffload::None);
    let mut r = row(8);
    r.set_kv_offloading(&KvOffload::Dram);
    assert_eq!(r.to_value()["kv_offloading"], "dram");
    let dram = same_point(&r);
    assert_eq!(dram.identity.kv_offloading, KvOffload::Dram);
    assert_ne!(dram.identity.match_key(), none.identity.match_key());
    // setting none again removes the key: the row's bytes are those of a row without offload
    r.set_kv_offloading(&KvOffload::None);
    assert_eq!(r.to_value(), row(8).to_value());
    let foreign = |k: &str, v: &str| {
        Point::from_agg_row(&json!({
            "hw": "h200", "framework": "sglang", "infmax_model_prefix": "qwen3",
            "precision": "fp8", "conc": 8, "tp": 4, "ep": 2, "isl": 8192, "osl": 1024,
            k: v
        }))
        .unwrap()
        .identity
        .kv_offloading
    };
    assert_eq!(foreign("kv_offloading", "dram"), KvOffload::Dram);
    assert_eq!(foreign("offloading", "none"), KvOffload::None);
    assert_eq!(
        foreign("kv_offloading", "SSD"),
        KvOffload::Other("ssd".into())
    );
}

#[test]
fn rows_the_typed_reader_refuses_are_named() {
    let mut r = row(1);
    r.conc = None;
    let e = Point::from_agg(&r).unwrap_err().to_string();
    assert!(e.contains("`conc`"), "{e}");
    let mut r = row(1);
    r.api = "responses".into();
    let e = Point::from_agg(&r).unwrap_err().to_string();
    assert!(e.contains("`api`"), "{e}");
}

const EVAL_ROWS: &str = include_str!("../../contracts/tests/data/eval-rows.jsonl");

fn same_eval(r: &EvalRow) -> EvalPoint {
    let typed = EvalPoint::from_eval(r).unwrap();
    let json = EvalPoint::from_eval_row(&r.to_value()).unwrap();
    assert_eq!(
        typed,
        json,
        "typed and JSON reading differ for {}",
        r.to_value()
    );
    typed
}

#[test]
fn servebench_eval_rows_read_as_their_json() {
    let rows: Vec<EvalRow> = EVAL_ROWS
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(rows.len() >= 2);
    for r in &rows {
        same_eval(r);
    }
    // the gate's keys in the remainder: passed false, an image
    let ep = same_eval(&rows[1]);
    assert_eq!(ep.passed, Some(false));
    assert_eq!(ep.image.as_deref(), Some("lmsysorg/sglang:v0.5.20-cu130"));

    // no gate keys: threshold by model, passed from the scores
    let mut r = rows[0].clone();
    r.extra.clear();
    (r.threshold, r.threshold_source, r.passed, r.image, r.target) = (None, None, None, None, None);
    r.model_prefix = Some("qwen3.5".into());
    r.em_strict = Some(0.95);
    r.em_flexible = Some(0.93);
    let e = same_eval(&r);
    assert_eq!((e.threshold, e.passed), (Some(0.94), Some(false)));
    // no score at all: not passed; another score name: its own stderr
    r.score = None;
    r.em_strict = None;
    r.em_flexible = None;
    assert_eq!(same_eval(&r).passed, Some(false));
    let mut r = rows[0].clone();
    r.score = None;
    r.score_se = None;
    r.score_name = "em_flexible".into();
    assert_eq!(same_eval(&r).score_se, r.em_flexible_se);
    // `passed` written as a string by some writer
    let mut v = rows[0].to_value();
    v["passed"] = json!("true");
    let r: EvalRow = serde_json::from_value(v).unwrap();
    assert_eq!(r.passed, Some(true));
    assert_eq!(same_eval(&r).passed, Some(true));
    // a multinode row: both pools
    let mut r = rows[0].clone();
    r.is_multinode = true;
    r.prefill_tp = Some(4);
    r.prefill_ep = Some(4);
    r.prefill_dp_attention = Some(true);
    r.decode_tp = Some(8);
    r.prefill_num_workers = Some(2);
    let e = same_eval(&r);
    assert_eq!(e.identity.topology.prefill.tp, 4);
    assert_eq!(e.identity.topology.decode.tp, 8);
    assert_eq!(e.identity.topology.prefill_workers, Some(2));
    // a row without hw is refused, naming the field, by both
    let mut r = rows[0].clone();
    r.hw = None;
    let e = EvalPoint::from_eval(&r).unwrap_err().to_string();
    assert!(e.contains("`hw`"), "{e}");
    assert!(EvalPoint::from_eval_row(&r.to_value()).is_err());
}
