//! Rows the store tests write: a servebench agg row and eval row (typed, every key present),
//! and foreign rows of a baseline import.
#![allow(dead_code)]

pub mod pg;

use serde_json::{json, Value};
use servebench_contracts::{AggRow, EvalRow, ForeignRow, PointStatus, StatRow};

/// A servebench agg row at `conc`, `tag` kept as an extra key (which writer wrote it).
pub fn agg_row(conc: u64, tag: &str) -> AggRow {
    let stat = |x: f64| StatRow {
        mean: Some(x),
        median: None,
        std: Some(0.0),
        p90: Some(x),
        p99: Some(x),
        p99_9: Some(x),
    };
    AggRow {
        identity: servebench_contracts::Identity {
            isl: Some(1024),
            osl: Some(1024),
            ..servebench_contracts::Identity::single_node(
                "sim-h200",
                "sim:1",
                "Qwen/Qwen3-8B",
                "qwen3",
                "sim",
                "bf16",
            )
        },
        conc: Some(conc),
        tput_per_gpu: 1234.5,
        output_tput_per_gpu: 600.25,
        input_tput_per_gpu: 634.25,
        ttft: stat(0.12),
        tpot: stat(0.01),
        itl: stat(0.01),
        e2el: stat(10.5),
        intvty: stat(100.0),
        schema_version: 1,
        api: "completions".into(),
        engine: "sglang".into(),
        endpoint: "http://127.0.0.1:8000".into(),
        itl_mode: "chunk".into(),
        compat: "servebench".into(),
        num_gpus: 1,
        num_requests_total: 40,
        num_requests_successful: 40,
        num_requests_failed: 0,
        failure_reasons: Default::default(),
        point_status: PointStatus::Ok,
        duration: 30.0,
        request_throughput: 1.25,
        output_throughput: 600.25,
        total_token_throughput: 1234.5,
        input_throughput: 634.25,
        mean_isl: Some(1024.0),
        mean_isl_server: None,
        mean_osl: Some(1024.0),
        records_file: format!("conc{conc}/records.jsonl"),
        invalid_reasons: Vec::new(),
        power: None,
        multinode: None,
        extra: [("tag".to_string(), json!(tag))].into_iter().collect(),
    }
}

/// An agg row with `status`, and the validity rules it broke (`invalid_reasons`).
pub fn status_row(conc: u64, status: PointStatus, reasons: Option<&[&str]>) -> AggRow {
    let mut r = agg_row(conc, "status");
    r.point_status = status;
    if let Some(rs) = reasons {
        r.invalid_reasons = rs.iter().map(|s| s.to_string()).collect();
    }
    r
}

/// A servebench GSM8K eval row at `conc`, with the gate's `passed` key.
pub fn eval_row(conc: u32, score: f64) -> EvalRow {
    EvalRow {
        is_multinode: false,
        model_prefix: Some("qwen3.8next".into()),
        model: "Qwen/Qwen3-8B".into(),
        hw: Some("b200".into()),
        framework: Some("sglang".into()),
        precision: Some("fp4".into()),
        spec_decoding: Some("none".into()),
        isl: None,
        osl: None,
        tp: Some(1),
        ep: Some(1),
        prefill_tp: None,
        prefill_ep: None,
        prefill_num_workers: None,
        decode_tp: None,
        decode_ep: None,
        decode_num_workers: None,
        conc,
        dp_attention: Some(false),
        prefill_dp_attention: None,
        decode_dp_attention: None,
        task: "gsm8k".into(),
        em_strict: Some(score),
        em_strict_se: Some(0.004),
        em_flexible: Some(score),
        em_flexible_se: Some(0.004),
        n_eff: 1319,
        source: "eval/results.json".into(),
        score: Some(score),
        score_name: "em_strict".into(),
        score_se: Some(0.004),
        threshold: None,
        threshold_source: None,
        passed: Some(true),
        image: None,
        target: None,
        identity_defaults: None,
        extra: Default::default(),
    }
}

/// A foreign row (what a baseline import stores), from a JSON object.
pub fn foreign(v: Value) -> ForeignRow {
    ForeignRow::from_value(v).expect("a JSON object")
}

/// Energy in four shapes, each a point of one run: measured by NVML (conc 32), telemetry
/// missing (conc 8), modelled by the simulator (conc 1), and a row written before servebench
/// measured energy (conc 4).
pub fn energy_rows() -> Vec<AggRow> {
    use servebench_contracts::{PowerFields, PowerMetrics, PowerSource};
    let metrics = PowerMetrics {
        avg_power_w: 317.0,
        avg_total_gpu_power_w: 317.0,
        total_gpu_energy_j: 9_660.5,
        joules_per_successful_query: 100.63,
        joules_per_input_token: 0.098275,
        joules_per_output_token: 1.509453,
        joules_per_total_token: 0.092251,
    };
    let mut measured = agg_row(32, "nvml");
    measured.power = Some(PowerFields {
        source: PowerSource::Nvml,
        valid: true,
        metrics: Some(metrics),
        invalid_reasons: vec![],
    });
    let mut missing = agg_row(8, "none");
    missing.power = Some(PowerFields::missing("telemetry_missing: NVML not loadable"));
    let mut modelled = agg_row(1, "sim");
    modelled.power = Some(PowerFields {
        source: PowerSource::Modelled,
        valid: false,
        metrics: Some(PowerMetrics {
            avg_power_w: 350.0,
            joules_per_output_token: 2.053,
            ..metrics
        }),
        invalid_reasons: vec![],
    });
    vec![measured, missing, modelled, agg_row(4, "before energy")]
}

/// The energy columns every backend stores for [`energy_rows`], in conc order 32, 8, 1, 4:
/// `(power_source, power_valid, avg_power_w, joules_per_output_token)` as text, NULL as `-`.
pub const ENERGY_COLUMNS: [&str; 4] = [
    "nvml|1|317|1.509453",
    "none|0|-|-",
    "modelled|0|350|2.053",
    "-|-|-|-",
];
