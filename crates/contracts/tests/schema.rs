//! The checked-in JSON schema of the agg row is the one generated from `AggRow`'s key table.
//! To regenerate after changing the type: `SERVEBENCH_UPDATE_SCHEMA=1 cargo test -p
//! servebench-contracts --test schema`.

use std::path::PathBuf;

use servebench_contracts::agg::{agg_row_keys, agg_row_schema_text};
use servebench_contracts::{AggRow, PointStatus, StatRow};

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/agg-row.schema.json")
}

#[test]
fn checked_in_agg_row_schema_is_the_generated_one() {
    let generated = agg_row_schema_text();
    if std::env::var_os("SERVEBENCH_UPDATE_SCHEMA").is_some() {
        std::fs::write(schema_path(), &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(schema_path()).unwrap();
    assert!(
        checked_in == generated,
        "docs/schema/agg-row.schema.json differs from the schema generated from AggRow; \
         regenerate with SERVEBENCH_UPDATE_SCHEMA=1 cargo test -p servebench-contracts --test schema"
    );
}

fn row() -> AggRow {
    let s = |x: f64| StatRow {
        mean: Some(x),
        median: Some(x),
        std: Some(0.0),
        p90: Some(x),
        p99: None,
        p99_9: Some(f64::NAN),
    };
    AggRow {
        hw: "sim-h200".into(),
        conc: Some(4),
        image: "servebench-sim".into(),
        model: "qwen3-8b".into(),
        infmax_model_prefix: "qwen3-8b".into(),
        framework: "sim".into(),
        precision: "bf16".into(),
        spec_decoding: "none".into(),
        disagg: false,
        recipe_fingerprint: None,
        isl: Some(1024),
        osl: Some(1024),
        is_multinode: false,
        tp: 1,
        pp: 1,
        dcp_size: 1,
        pcp_size: 1,
        ep: 1,
        dp_attention: false,
        tput_per_gpu: 1500.5,
        output_tput_per_gpu: 700.25,
        input_tput_per_gpu: 800.25,
        ttft: s(0.05),
        tpot: s(0.01),
        itl: s(0.01),
        e2el: s(10.0),
        intvty: s(100.0),
        schema_version: 1,
        benchmark_type: "single_turn".into(),
        api: "completions".into(),
        engine: "vllm".into(),
        endpoint: "http://127.0.0.1:1".into(),
        itl_mode: "chunk".into(),
        compat: "servebench".into(),
        num_gpus: 1,
        num_requests_total: 40,
        num_requests_successful: 39,
        num_requests_failed: 1,
        failure_reasons: [("http_503".to_string(), 1)].into_iter().collect(),
        point_status: PointStatus::Interrupted,
        duration: 12.0,
        request_throughput: 3.25,
        output_throughput: 700.25,
        total_token_throughput: 1500.5,
        input_throughput: 800.25,
        mean_isl: Some(920.0),
        mean_isl_server: None,
        mean_osl: Some(1024.0),
        records_file: "records.jsonl".into(),
        extra: Default::default(),
    }
}

#[test]
fn written_keys_are_the_schema_keys_and_rows_round_trip_byte_for_byte() {
    let r = row();
    let v = r.to_value();
    let mut written: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    let mut schema = agg_row_keys();
    written.sort();
    schema.sort();
    assert_eq!(written, schema);
    assert_eq!(
        v["point_status"], "partial",
        "interrupted is written as partial"
    );
    assert!(v["p99.9_ttft"].is_null() && v["p99_ttft"].is_null());
    assert_eq!(v["std_tpot"], 0.0, "a zero statistic stays 0, not null");
    // with unknown keys, after the known ones, in order
    let mut text = serde_json::to_string_pretty(&v).unwrap();
    text.truncate(text.len() - 2);
    text.push_str(",\n  \"zeta_new\": [1, 2],\n  \"alpha_new\": \"x\"\n}");
    let back: AggRow = serde_json::from_str(&text).unwrap();
    assert_eq!(back.extra.len(), 2);
    assert_eq!(back.extra.keys().next().unwrap(), "zeta_new");
    let again = serde_json::to_string_pretty(&back).unwrap();
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(again, serde_json::to_string_pretty(&original).unwrap());
}

#[test]
fn a_bad_row_names_the_key() {
    let mut v = row().to_value();
    v["tp"] = serde_json::json!("eight");
    assert_eq!(
        AggRow::from_value(&v).unwrap_err().to_string(),
        "agg row: `tp` is missing or not an integer"
    );
    v.as_object_mut().unwrap().remove("tp");
    assert!(AggRow::from_value(&v)
        .unwrap_err()
        .to_string()
        .contains("`tp`"));
    assert_eq!(
        AggRow::from_value(&serde_json::json!([1]))
            .unwrap_err()
            .to_string(),
        "agg row is not a JSON object"
    );
}
