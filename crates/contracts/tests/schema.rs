//! The checked-in JSON schema of the agg row is the one generated from `AggRow`'s key table.
//! To regenerate after changing the type: `SERVEBENCH_UPDATE_SCHEMA=1 cargo test -p
//! servebench-contracts --test contracts_tests schema::`.

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
         regenerate with SERVEBENCH_UPDATE_SCHEMA=1 cargo test -p servebench-contracts --test contracts_tests schema::"
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
        invalid_reasons: Vec::new(),
        power: None,
        multinode: None,
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

/// Checks (or, with `SERVEBENCH_UPDATE_SCHEMA=1`, rewrites) one checked-in schema file.
fn check_generated(file: &str, generated: &str, from: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema")
        .join(file);
    if std::env::var_os("SERVEBENCH_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap();
    assert!(
        checked_in == generated,
        "docs/schema/{file} differs from the schema generated from {from}; \
         regenerate with SERVEBENCH_UPDATE_SCHEMA=1 cargo test -p servebench-contracts --test contracts_tests schema::"
    );
}

#[test]
fn checked_in_record_result_summary_schemas_are_the_generated_ones() {
    use servebench_contracts::schema::{record_schema, result_schema, schema_text, summary_schema};
    check_generated(
        "record.schema.json",
        &schema_text(&record_schema()),
        "RequestRecord (contracts/src/schema.rs)",
    );
    check_generated(
        "result.schema.json",
        &schema_text(&result_schema()),
        "contracts/src/schema.rs",
    );
    check_generated(
        "summary.schema.json",
        &schema_text(&summary_schema()),
        "contracts/src/schema.rs",
    );
    check_generated(
        "agentx-result.schema.json",
        &schema_text(&servebench_contracts::schema::agentx_result_schema()),
        "contracts/src/schema.rs",
    );
}

fn keys_of(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn record_schema_lists_exactly_the_keys_a_record_writes_in_order() {
    use servebench_contracts::schema::record_schema;
    use servebench_contracts::{FailureKind, OutputPhases, RequestRecord};
    let schema = record_schema();
    let props = keys_of(&schema["properties"]);
    let required: Vec<String> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let line = include_str!("data/records.jsonl").lines().next().unwrap();
    let mut r: RequestRecord = serde_json::from_str(line).unwrap();
    // a plain record writes exactly the required keys, in schema order
    assert_eq!(keys_of(&serde_json::to_value(&r).unwrap()), required);
    // with every optional key present: every property; written in the record's own order
    r.session = Some((1, 2));
    r.tokens_per_chunk = Some(vec![2]);
    r.prompt_tokens_cached = Some(7);
    r.failure = Some(FailureKind::Timeout);
    r.warnings = vec!["usage_missing".into()];
    r.phases = Some(OutputPhases {
        first_reasoning_ms: None,
        last_reasoning_ms: None,
        reasoning_events: 0,
        reasoning_tokens: Some(3),
        first_content_ms: None,
        first_tool_call_ms: Some(1.0),
        tool_call_events: 1,
    });
    r.text = Some("x".into());
    let v = serde_json::to_value(&r).unwrap();
    let mut written = keys_of(&v);
    let mut all = props.clone();
    written.sort();
    all.sort();
    assert_eq!(written, all);
    // the phases object writes the keys its schema lists
    let phase_props = keys_of(&schema["properties"]["phases"]["properties"]);
    assert_eq!(keys_of(&v["phases"]), phase_props);
    // the failure strings the schema documents are FailureKind's
    assert_eq!(v["failure"], "timeout");
}
