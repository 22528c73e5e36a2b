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
        identity: servebench_contracts::Identity {
            isl: Some(1024),
            osl: Some(1024),
            ..servebench_contracts::Identity::single_node(
                "sim-h200",
                "servebench-sim",
                "qwen3-8b",
                "qwen3-8b",
                "sim",
                "bf16",
            )
        },
        conc: Some(4),
        tput_per_gpu: 1500.5,
        output_tput_per_gpu: 700.25,
        input_tput_per_gpu: 800.25,
        ttft: s(0.05),
        tpot: s(0.01),
        itl: s(0.01),
        e2el: s(10.0),
        intvty: s(100.0),
        schema_version: 1,
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

/// The one identity is written where InferenceX's `process_result.py` writes its keys (`hw`,
/// the point's `conc`, `image` … `dp_attention`), `benchmark_type` among the servebench keys,
/// and the KV-offload keys right after the known keys; each reads back into
/// [`AggRow::identity`] and the row keeps its bytes.
#[test]
fn the_one_identity_is_written_where_inferencex_writes_it() {
    use servebench_contracts::{BenchmarkType, KvOffload};
    let mut r = row();
    let v = r.to_value();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys[..19],
        [
            "hw",
            "conc",
            "image",
            "model",
            "infmax_model_prefix",
            "framework",
            "precision",
            "spec_decoding",
            "disagg",
            "recipe_fingerprint",
            "isl",
            "osl",
            "is_multinode",
            "tp",
            "pp",
            "dcp_size",
            "pcp_size",
            "ep",
            "dp_attention"
        ]
    );
    assert_eq!(v["benchmark_type"], "single_turn");
    assert!(v.get("kv_offloading").is_none(), "none writes no key");

    r.identity.benchmark_type = BenchmarkType::AgenticTraces;
    r.set_kv_offloading(&KvOffload::Dram);
    r.extra.insert("later".into(), serde_json::json!(1));
    let text = serde_json::to_string(&r).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys[keys.len() - 5..],
        [
            "records_file",
            "kv_offloading",
            "kv_offload_backend",
            "allocated_cpu_dram_gb",
            "later"
        ]
    );
    let back: AggRow = serde_json::from_str(&text).unwrap();
    assert_eq!(back.identity, r.identity);
    assert_eq!(back.kv_offloading(), KvOffload::Dram);
    assert!(
        back.extra.keys().eq(["later"]),
        "the offload keys are typed"
    );
    assert_eq!(serde_json::to_string(&back).unwrap(), text);

    // a value this version would not write so (an explicit `none`) stays where it was read
    let mut v = row().to_value();
    v.as_object_mut()
        .unwrap()
        .insert("kv_offloading".into(), "none".into());
    let back = AggRow::from_value(&v).unwrap();
    assert_eq!(back.kv_offloading(), KvOffload::None);
    assert_eq!(back.to_value(), v);
    assert_eq!(
        serde_json::to_string(&back.to_value()).unwrap(),
        serde_json::to_string(&v).unwrap()
    );
}

/// Issue 27: a KV-offload point's row carries what InferenceX's agentic aggregate records
/// (`kv_offloading`, `kv_offload_backend`, `allocated_cpu_dram_gb`), the keys are in the
/// schema, they read back typed, and a row without offload keeps its bytes.
#[test]
fn kv_offload_keys_are_written_read_back_and_in_the_schema() {
    use servebench_contracts::{Identity, KvOffload, KvOffloadBackend};
    let id = |mode: KvOffload, backend: Option<KvOffloadBackend>, gb: u64| Identity {
        hw: "b200".into(),
        image: "i".into(),
        model: "m".into(),
        infmax_model_prefix: "glm5.2".into(),
        framework: "sglang".into(),
        precision: "fp4".into(),
        spec_decoding: "mtp".into(),
        disagg: false,
        recipe_fingerprint: None,
        isl: None,
        osl: None,
        tp: 8,
        pp: 1,
        dcp_size: 1,
        pcp_size: 1,
        ep: 1,
        dp_attention: false,
        is_multinode: false,
        benchmark_type: Default::default(),
        kv_offloading: mode,
        kv_offload_backend: backend,
        allocated_cpu_dram_gb: gb,
    };
    let hicache = KvOffloadBackend::parse(r#"{"name": "hicache"}"#).unwrap();
    let mut r = row();
    r.set_kv_offload(&id(KvOffload::Dram, Some(hicache.clone()), 2399));
    let v = r.to_value();
    assert_eq!(v["kv_offloading"], "dram");
    assert_eq!(
        v["kv_offload_backend"],
        serde_json::json!({"name": "hicache"})
    );
    assert_eq!(v["allocated_cpu_dram_gb"], 2399);
    let schema: serde_json::Value = serde_json::from_str(&agg_row_schema_text()).unwrap();
    for k in v.as_object().unwrap().keys() {
        assert!(
            schema["properties"].get(k).is_some(),
            "{k} not in the schema"
        );
    }
    let back = AggRow::from_value(&v).unwrap();
    assert_eq!(back.kv_offloading(), KvOffload::Dram);
    assert_eq!(back.kv_offload_backend(), Some(hicache));
    assert_eq!(back.allocated_cpu_dram_gb(), 2399);
    assert_eq!(back.to_value(), v, "read and written back byte for byte");
    // none removes all three: the bytes of a row without offload
    r.set_kv_offload(&id(KvOffload::None, None, 0));
    assert_eq!(r.to_value(), row().to_value());
    // InferenceX's KV_OFFLOAD_BACKEND_METADATA rules
    let lm = KvOffloadBackend::parse(r#"{"name": "lmcache", "version": "aaf7c0d3"}"#).unwrap();
    assert_eq!(lm.version.as_deref(), Some("aaf7c0d3"));
    assert_eq!(KvOffloadBackend::parse("hicache").unwrap().name, "hicache");
    for (bad, why) in [
        (r#"{"name": "x", "size": 1}"#, "only `name` and `version`"),
        (r#"{"version": "1"}"#, "`name` is missing"),
        (r#"{"name": ""}"#, "non-empty"),
        ("{oops", "not a JSON object"),
        ("", "empty"),
    ] {
        let e = KvOffloadBackend::parse(bad).unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
    }
}
