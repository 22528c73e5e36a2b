//! InferenceX result-processor parity: a raw `bench_serving` result JSON (MEASUREMENT.md Part 2
//! §1.7) plus the environment of `utils/process_result.py` → the `agg_<RESULT_FILENAME>.json` row
//! and the `power_validation_<RESULT_FILENAME>.json` sidecar that the same run writes, byte for
//! byte (`../shared/data/inferencex/golden/process-result/R1–R4`).
//!
//! What the reference does (InferenceX `utils/process_result.py`, MEASUREMENT.md Part 2 §2):
//!
//! * required env `RUNNER_TYPE FRAMEWORK PRECISION SPEC_DECODING RESULT_FILENAME ISL OSL DISAGG
//!   MODEL_PREFIX IMAGE` (missing → `Missing required environment variables: A, B`); optional
//!   `RECIPE_FINGERPRINT` (default `""`), `ROUTER_METADATA` (JSON with exactly `name`, `version`),
//!   `KV_P2P_TRANSFER` (kept when non-empty), `IS_MULTINODE` (`true`, case-insensitive).
//! * single node (`TP EP_SIZE DP_ATTENTION`, optional `PP_SIZE DCP_SIZE PCP_SIZE` = 1):
//!   `G = TP × PP × PCP`; `tput_per_gpu = total_token_throughput / G`, `output_tput_per_gpu =
//!   output_throughput / G`, `input_tput_per_gpu = (total − output) / G` (tok/s/GPU).
//! * multi node (`PREFILL_GPUS DECODE_GPUS PREFILL_NUM_WORKERS PREFILL_TP PREFILL_EP
//!   PREFILL_DP_ATTN DECODE_*`, optional `{PREFILL,DECODE}_{PP,DCP,PCP}_SIZE` = 1 and
//!   `PREFILL_HARDWARE`/`DECODE_HARDWARE` together): `tput_per_gpu = total / (P + D)`,
//!   `output_tput_per_gpu = output / D` (`/(P + D)` when D = 0, and then decode_tp/ep = 0,
//!   decode_pp/dcp/pcp = 1), `input_tput_per_gpu = (total − output) / P`.
//! * every raw key ending in `ms`: `key.replace("_ms", "") = value / 1000` (s); every raw key
//!   containing `tpot`: `key.replace("_ms", "").replace("tpot", "intvty") = 1000 / value`
//!   (tok/s/user), emitted right after, in raw-key order.
//! * the power step (`utils/aggregate_power.py`, multinode `utils/aggregate_power_multinode.py`)
//!   appends `power_metric_schema_version: 2` and `power_valid` (1/0) and writes the sidecar.
//!
//! Power: [`process_result`] takes `None` when no telemetry exists — the golden situation
//! (single node: reason `telemetry_file_missing`; multinode: `power_artifacts_missing`), which is
//! reproduced byte for byte. `Some(PowerMeasurement)` (single node only) takes per-GPU energies
//! already integrated over the benchmark window and applies `aggregate_power.py`'s validation
//! (GPU count, ≥ 2 samples, window bracketed, max gap 3 s) and metrics (`avg_power_w`,
//! `avg_total_gpu_power_w`, `total_gpu_energy_j`, `joules_per_*`, rounded to 3 digits for `_w`/`_j`
//! keys, 6 otherwise); no golden covers that path. Reading InferenceX's `gpu_metrics.csv` or
//! srt-slurm power packages is not implemented.
//!
//! Deviations a caller could hit only with absurd input: integers beyond `i64` are rejected
//! (Python has big ints), and a non-finite float (which Python would write as the non-JSON token
//! `Infinity`/`NaN`) is an error.

pub mod pyjson;

use std::collections::BTreeMap;

/// Why a raw result could not be processed: one line, InferenceX's own message (or the variable
/// or raw key prefixed where its Python exception would not name it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProcessError(pub String);

/// `Result` of this module: [`ProcessError`] unless said otherwise.
pub type Result<T, E = ProcessError> = std::result::Result<T, E>;

/// A [`ProcessError`] with a formatted message.
macro_rules! err {
    ($($t:tt)*) => { ProcessError(format!($($t)*)) };
}

/// Returns a [`ProcessError`] with a formatted message.
macro_rules! fail {
    ($($t:tt)*) => { return Err(err!($($t)*)) };
}
use serde_json::{json, Map, Value};

pub use pyjson::{dumps_indent2, py_float_repr, py_repr_str, py_round};

/// Base environment variables, in the order `process_result.py` checks (and names) them.
pub const BASE_ENV_VARS: [&str; 10] = [
    "RUNNER_TYPE",
    "FRAMEWORK",
    "PRECISION",
    "SPEC_DECODING",
    "RESULT_FILENAME",
    "ISL",
    "OSL",
    "DISAGG",
    "MODEL_PREFIX",
    "IMAGE",
];

/// Single-node environment variables (checked after the base ones when `IS_MULTINODE` ≠ true).
pub const SINGLE_NODE_ENV_VARS: [&str; 3] = ["TP", "EP_SIZE", "DP_ATTENTION"];

/// Multinode environment variables (checked when `IS_MULTINODE` = true).
pub const MULTINODE_ENV_VARS: [&str; 10] = [
    "PREFILL_GPUS",
    "DECODE_GPUS",
    "PREFILL_NUM_WORKERS",
    "PREFILL_TP",
    "PREFILL_EP",
    "PREFILL_DP_ATTN",
    "DECODE_NUM_WORKERS",
    "DECODE_TP",
    "DECODE_EP",
    "DECODE_DP_ATTN",
];

pub use crate::power::aggregate::POWER_METRIC_SCHEMA_VERSION;
use crate::power::aggregate::{
    load_benchmark_data, patch_power_fields, BenchmarkData, INTEGRATION_METHOD,
};
use crate::power::integrate::{
    append_reason, cross_check_accumulator, integrate_power, PowerIntegration, MAX_SAMPLE_GAP_S,
};
use crate::power::PowerVerdict;

/// Single-node telemetry file name when `GPU_METRICS_CSV` is unset (`aggregate_power.py`).
pub const DEFAULT_GPU_METRICS_CSV: &str = "gpu_metrics.csv";
/// Multinode power artifact directory when `POWER_ARTIFACT_DIR` is unset.
pub const DEFAULT_POWER_ARTIFACT_DIR: &str = "LOGS/power";

const ROLE_METRIC_KEYS: [&str; 6] = [
    "prefill_gpu_energy_j",
    "decode_gpu_energy_j",
    "prefill_avg_power_w",
    "decode_avg_power_w",
    "prefill_joules_per_input_token",
    "decode_joules_per_output_token",
];

/// What one `process_result.py` run writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Processed {
    /// `RESULT_FILENAME` (the raw result is `<it>.json`).
    pub result_filename: String,
    /// The agg row, keys in the reference's order (power fields last).
    pub agg: Value,
    /// The power-validation sidecar.
    pub power_validation: Value,
}

impl Processed {
    /// `agg_<RESULT_FILENAME>.json`.
    pub fn agg_file_name(&self) -> String {
        format!("agg_{}.json", self.result_filename)
    }

    /// `power_validation_<RESULT_FILENAME>.json`.
    pub fn power_validation_file_name(&self) -> String {
        format!("power_validation_{}.json", self.result_filename)
    }

    /// The agg file's bytes: `json.dumps(agg, indent=2)`, no trailing newline.
    pub fn agg_json(&self) -> String {
        dumps_indent2(&self.agg)
    }

    /// The sidecar's bytes: `json.dumps(sidecar, indent=2)`, no trailing newline.
    pub fn power_validation_json(&self) -> String {
        dumps_indent2(&self.power_validation)
    }
}

enum Topology {
    Single { num_gpus: i64 },
    Multi,
}

/// Runs InferenceX `utils/process_result.py` on a raw result and its environment.
///
/// * `raw` — the `bench_serving` result JSON object (`<RESULT_FILENAME>.json`), keys in file
///   order (latency keys in ms).
/// * `env` — the tool's whole environment; nothing else is read.
/// * `dir` — the directory the reference runs in: single-node telemetry is looked up there as
///   it does (`GPU_METRICS_CSV`, `gpu_metrics.csv`, `/workspace/gpu_metrics.csv`; the first
///   that is a file, else the first named) and integrated by [`crate::power`]. `None`: no
///   telemetry exists anywhere (the golden situation; nothing is read).
///
/// Errors carry the reference's own message where it has one (`Missing required environment
/// variables: TP, EP_SIZE`, `Disaggregated mode requires multinode setup.`, `ROUTER_METADATA must
/// contain valid JSON`, …), prefixed with the variable or raw key when the reference's Python
/// exception would not name it (`ISL: invalid literal for int() with base 10: 'abc'`,
/// `raw result key 'mean_tpot_ms': float division by zero`).
pub fn process_result(
    raw: &Value,
    env: &BTreeMap<String, String>,
    dir: Option<&std::path::Path>,
) -> Result<Processed> {
    let raw = raw
        .as_object()
        .ok_or_else(|| err!("raw result is not a JSON object"))?;
    require_env(env, &BASE_ENV_VARS)?;
    let var = |name: &str| env[name].as_str();
    let result_filename = var("RESULT_FILENAME").to_string();
    let disagg = var("DISAGG").to_lowercase() == "true";

    let mut data = Map::new();
    data.insert("hw".into(), json!(var("RUNNER_TYPE")));
    let conc = py_int_value(raw_key(raw, "max_concurrency")?)
        .map_err(|e| err!("raw result key 'max_concurrency': {e}"))?;
    data.insert("conc".into(), json!(conc));
    data.insert("image".into(), json!(var("IMAGE")));
    data.insert("model".into(), raw_key(raw, "model_id")?.clone());
    data.insert("infmax_model_prefix".into(), json!(var("MODEL_PREFIX")));
    data.insert("framework".into(), json!(var("FRAMEWORK")));
    data.insert("precision".into(), json!(var("PRECISION")));
    data.insert("spec_decoding".into(), json!(var("SPEC_DECODING")));
    data.insert("disagg".into(), json!(disagg));
    data.insert(
        "recipe_fingerprint".into(),
        json!(env.get("RECIPE_FINGERPRINT").map_or("", String::as_str)),
    );
    data.insert("isl".into(), json!(env_int(env, "ISL", None)?));
    data.insert("osl".into(), json!(env_int(env, "OSL", None)?));

    if let Some(router) = router_metadata(env.get("ROUTER_METADATA").map(String::as_str))? {
        data.insert("router".into(), router);
    }
    if let Some(kv) = env.get("KV_P2P_TRANSFER").filter(|s| !s.is_empty()) {
        data.insert("kv_p2p_transfer".into(), json!(kv));
    }

    let is_multinode = env
        .get("IS_MULTINODE")
        .map_or("false", String::as_str)
        .to_lowercase()
        == "true";
    let topology = if is_multinode {
        multinode_fields(raw, env, &mut data)?
    } else {
        if disagg {
            fail!("Disaggregated mode requires multinode setup.");
        }
        single_node_fields(raw, env, &mut data)?
    };

    for (key, value) in raw {
        if key.ends_with("ms") {
            let x = py_float_value(value).map_err(|e| err!("raw result key '{key}': {e}"))?;
            data.insert(key.replace("_ms", ""), finite(x / 1000.0, key)?);
        }
        if key.contains("tpot") {
            let x = py_float_value(value).map_err(|e| err!("raw result key '{key}': {e}"))?;
            let v = py_div(1000.0, x).map_err(|e| err!("raw result key '{key}': {e}"))?;
            data.insert(
                key.replace("_ms", "").replace("tpot", "intvty"),
                finite(v, key)?,
            );
        }
    }

    let bench_result = py_path(&format!("{result_filename}.json"));
    let benchmark = load_benchmark_data(raw);
    let power_validation = match topology {
        Topology::Single { num_gpus } => {
            single_node_power(&mut data, &benchmark, num_gpus, env, dir, bench_result)
        }
        Topology::Multi => {
            let dir = py_path(
                env.get("POWER_ARTIFACT_DIR")
                    .map_or(DEFAULT_POWER_ARTIFACT_DIR, String::as_str),
            );
            let producer_sha = env.get("POWER_PRODUCER_SHA").filter(|s| !s.is_empty());
            multinode_power_missing(&mut data, &benchmark, dir, bench_result, producer_sha)
        }
    };

    Ok(Processed {
        result_filename,
        agg: Value::Object(data),
        power_validation,
    })
}

fn require_env(env: &BTreeMap<String, String>, names: &[&str]) -> Result<()> {
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !env.contains_key(*n))
        .collect();
    if !missing.is_empty() {
        fail!(
            "Missing required environment variables: {}",
            missing.join(", ")
        );
    }
    Ok(())
}

/// `int(os.environ[name])`, or `int(os.environ.get(name, default))`.
fn env_int(env: &BTreeMap<String, String>, name: &str, default: Option<&str>) -> Result<i64> {
    let s = match (env.get(name), default) {
        (Some(v), _) => v.as_str(),
        (None, Some(d)) => d,
        (None, None) => fail!("Missing required environment variables: {name}"),
    };
    py_int_str(s).map_err(|e| err!("{name}: {e}"))
}

fn raw_key<'a>(raw: &'a Map<String, Value>, key: &str) -> Result<&'a Value> {
    raw.get(key)
        .ok_or_else(|| err!("raw result has no key '{key}' (KeyError: '{key}')"))
}

fn raw_float(raw: &Map<String, Value>, key: &str) -> Result<f64> {
    py_float_value(raw_key(raw, key)?).map_err(|e| err!("raw result key '{key}': {e}"))
}

fn finite(x: f64, what: &str) -> Result<Value> {
    if x.is_finite() {
        Ok(json!(x))
    } else {
        fail!(
            "{what}: the result is {} (process_result.py would write the non-JSON token {})",
            py_float_repr(x),
            if x.is_nan() {
                "NaN"
            } else if x > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            }
        )
    }
}

/// Python float division `a / b` (ZeroDivisionError for ±0).
fn py_div(a: f64, b: f64) -> Result<f64, String> {
    if b == 0.0 {
        Err("float division by zero".into())
    } else {
        Ok(a / b)
    }
}

fn single_node_fields(
    raw: &Map<String, Value>,
    env: &BTreeMap<String, String>,
    data: &mut Map<String, Value>,
) -> Result<Topology> {
    require_env(env, &SINGLE_NODE_ENV_VARS)?;
    let tp = env_int(env, "TP", None)?;
    let ep = env_int(env, "EP_SIZE", None)?;
    let dp_attention = env["DP_ATTENTION"].clone();
    let pp = env_int(env, "PP_SIZE", Some("1"))?;
    let dcp = env_int(env, "DCP_SIZE", Some("1"))?;
    let pcp = env_int(env, "PCP_SIZE", Some("1"))?;
    if pp <= 0 || dcp <= 0 || pcp <= 0 {
        fail!("PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers.");
    }
    let num_gpus = tp
        .checked_mul(pp)
        .and_then(|x| x.checked_mul(pcp))
        .ok_or_else(|| err!("TP × PP_SIZE × PCP_SIZE overflows a 64-bit integer"))?;
    let g = num_gpus as f64;
    let per_gpu = |x: Result<f64>| -> Result<Value> {
        let v = py_div(x?, g)
            .map_err(|e| err!("per-GPU throughput (TP × PP × PCP = {num_gpus}): {e}"))?;
        finite(v, "per-GPU throughput")
    };
    data.insert("is_multinode".into(), json!(false));
    data.insert("tp".into(), json!(tp));
    data.insert("pp".into(), json!(pp));
    data.insert("dcp_size".into(), json!(dcp));
    data.insert("pcp_size".into(), json!(pcp));
    data.insert("ep".into(), json!(ep));
    data.insert("dp_attention".into(), json!(dp_attention));
    let tput = per_gpu(raw_float(raw, "total_token_throughput"))?;
    let out = per_gpu(raw_float(raw, "output_throughput"))?;
    let input = per_gpu(
        raw_float(raw, "total_token_throughput")
            .and_then(|t| Ok(t - raw_float(raw, "output_throughput")?)),
    )?;
    data.insert("tput_per_gpu".into(), tput);
    data.insert("output_tput_per_gpu".into(), out);
    data.insert("input_tput_per_gpu".into(), input);
    Ok(Topology::Single { num_gpus })
}

fn multinode_fields(
    raw: &Map<String, Value>,
    env: &BTreeMap<String, String>,
    data: &mut Map<String, Value>,
) -> Result<Topology> {
    require_env(env, &MULTINODE_ENV_VARS)?;
    let prefill_hw = env.get("PREFILL_HARDWARE").map_or("", String::as_str);
    let decode_hw = env.get("DECODE_HARDWARE").map_or("", String::as_str);
    if prefill_hw.is_empty() != decode_hw.is_empty() {
        fail!("PREFILL_HARDWARE and DECODE_HARDWARE must be specified together.");
    }
    let int = |name: &str| env_int(env, name, None);
    let int1 = |name: &str| env_int(env, name, Some("1"));
    let prefill_gpus = int("PREFILL_GPUS")?;
    let decode_gpus = int("DECODE_GPUS")?;
    let prefill_num_workers = int("PREFILL_NUM_WORKERS")?;
    let prefill_tp = int("PREFILL_TP")?;
    let prefill_pp = int1("PREFILL_PP_SIZE")?;
    let prefill_dcp = int1("PREFILL_DCP_SIZE")?;
    let prefill_pcp = int1("PREFILL_PCP_SIZE")?;
    let prefill_ep = int("PREFILL_EP")?;
    let prefill_dp_attn = env["PREFILL_DP_ATTN"].clone();
    let decode_num_workers = int("DECODE_NUM_WORKERS")?;
    let decode_tp = int("DECODE_TP")?;
    let decode_pp = int1("DECODE_PP_SIZE")?;
    let decode_dcp = int1("DECODE_DCP_SIZE")?;
    let decode_pcp = int1("DECODE_PCP_SIZE")?;
    let decode_ep = int("DECODE_EP")?;
    let decode_dp_attn = env["DECODE_DP_ATTN"].clone();
    if [
        prefill_pp,
        prefill_dcp,
        prefill_pcp,
        decode_pp,
        decode_dcp,
        decode_pcp,
    ]
    .iter()
    .any(|v| *v <= 0)
    {
        fail!("Multinode PP, DCP, and PCP sizes must be positive integers.");
    }
    let total_gpus = prefill_gpus
        .checked_add(decode_gpus)
        .ok_or_else(|| err!("PREFILL_GPUS + DECODE_GPUS overflows a 64-bit integer"))?;
    if total_gpus <= 0 {
        fail!("Multinode results require at least one GPU.");
    }
    if prefill_gpus <= 0 {
        fail!("Multinode results require at least one prefill GPU.");
    }
    let has_decode = decode_gpus > 0;
    let output_denominator = if has_decode { decode_gpus } else { total_gpus };

    data.insert("is_multinode".into(), json!(true));
    data.insert("prefill_tp".into(), json!(prefill_tp));
    data.insert("prefill_pp".into(), json!(prefill_pp));
    data.insert("prefill_dcp_size".into(), json!(prefill_dcp));
    data.insert("prefill_pcp_size".into(), json!(prefill_pcp));
    data.insert("prefill_ep".into(), json!(prefill_ep));
    data.insert("prefill_dp_attention".into(), json!(prefill_dp_attn));
    data.insert("prefill_num_workers".into(), json!(prefill_num_workers));
    let (dtp, dpp, ddcp, dpcp, dep) = if has_decode {
        (decode_tp, decode_pp, decode_dcp, decode_pcp, decode_ep)
    } else {
        (0, 1, 1, 1, 0)
    };
    data.insert("decode_tp".into(), json!(dtp));
    data.insert("decode_pp".into(), json!(dpp));
    data.insert("decode_dcp_size".into(), json!(ddcp));
    data.insert("decode_pcp_size".into(), json!(dpcp));
    data.insert("decode_ep".into(), json!(dep));
    data.insert("decode_dp_attention".into(), json!(decode_dp_attn));
    data.insert("decode_num_workers".into(), json!(decode_num_workers));
    data.insert("num_prefill_gpu".into(), json!(prefill_gpus));
    data.insert("num_decode_gpu".into(), json!(decode_gpus));
    let total = raw_float(raw, "total_token_throughput")?;
    data.insert(
        "tput_per_gpu".into(),
        finite(total / total_gpus as f64, "tput_per_gpu")?,
    );
    let output = raw_float(raw, "output_throughput")?;
    data.insert(
        "output_tput_per_gpu".into(),
        finite(output / output_denominator as f64, "output_tput_per_gpu")?,
    );
    data.insert(
        "input_tput_per_gpu".into(),
        finite((total - output) / prefill_gpus as f64, "input_tput_per_gpu")?,
    );
    if !prefill_hw.is_empty() {
        data.insert("prefill_hw".into(), json!(prefill_hw));
        data.insert("decode_hw".into(), json!(decode_hw));
    }
    Ok(Topology::Multi)
}

/// `ROUTER_METADATA` (absent, `""` or `"null"` → none): a JSON object with exactly the string
/// keys `name` and `version`, both non-empty strings; kept in its own key order.
fn router_metadata(raw: Option<&str>) -> Result<Option<Value>> {
    let raw = match raw {
        None | Some("") | Some("null") => return Ok(None),
        Some(s) => s,
    };
    let value: Value =
        serde_json::from_str(raw).map_err(|_| err!("ROUTER_METADATA must contain valid JSON"))?;
    let ok_keys = value
        .as_object()
        .is_some_and(|o| o.len() == 2 && o.contains_key("name") && o.contains_key("version"));
    if !ok_keys {
        fail!("ROUTER_METADATA must contain exactly 'name' and 'version'");
    }
    let strings = value
        .as_object()
        .expect("checked above")
        .values()
        .all(|v| v.as_str().is_some_and(|s| !s.is_empty()));
    if !strings {
        fail!("ROUTER_METADATA name and version must be non-empty strings");
    }
    Ok(Some(value))
}

// ---------------------------------------------------------------------------------------------
// Python scalar conversions

fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python `int(s)` for a string in base 10: surrounding whitespace, one sign, digits with single
/// underscores between them. Values beyond `i64` are rejected (Python would accept them).
pub fn py_int_str(s: &str) -> Result<i64, String> {
    let invalid = || format!("invalid literal for int() with base 10: {}", py_repr_str(s));
    let t = s.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return Err(invalid());
    }
    if !underscores_between_digits(body) {
        return Err(invalid());
    }
    let digits: String = body.chars().filter(|c| *c != '_').collect();
    let magnitude: i128 = digits
        .trim_start_matches('0')
        .parse::<i128>()
        .or_else(|e| {
            if digits.trim_start_matches('0').is_empty() {
                Ok(0)
            } else {
                Err(e)
            }
        })
        .map_err(|_| format!("{} is out of the supported 64-bit range", py_repr_str(s)))?;
    let v = if neg { -magnitude } else { magnitude };
    i64::try_from(v).map_err(|_| format!("{} is out of the supported 64-bit range", py_repr_str(s)))
}

fn underscores_between_digits(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().all(|(i, c)| {
        *c != b'_'
            || (i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
    })
}

/// Python `int(value)` of a JSON value (floats truncate toward zero, bools are 0/1, strings as
/// [`py_int_str`]).
pub fn py_int_value(v: &Value) -> Result<i64, String> {
    match v {
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if n.is_u64() {
                Err(format!("{n} is out of the supported 64-bit range"))
            } else {
                let x = n.as_f64().expect("f64 number");
                if x.is_nan() {
                    Err("cannot convert float NaN to integer".into())
                } else if x.is_infinite() {
                    Err("cannot convert float infinity to integer".into())
                } else if x.trunc().abs() >= 9.223_372_036_854_776e18 {
                    Err(format!(
                        "{} is out of the supported 64-bit range",
                        py_float_repr(x)
                    ))
                } else {
                    Ok(x.trunc() as i64)
                }
            }
        }
        Value::String(s) => py_int_str(s),
        other => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            py_type_name(other)
        )),
    }
}

/// Python `float(value)` of a JSON value (strings with whitespace, underscores between digits,
/// `inf`/`nan` spellings; bools are 0/1).
pub fn py_float_value(v: &Value) -> Result<f64, String> {
    match v {
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => Ok(n.as_f64().expect("JSON numbers convert to f64")),
        Value::String(s) => {
            let invalid = || format!("could not convert string to float: {}", py_repr_str(s));
            let t = s.trim();
            if t.contains('_') && !underscores_between_digits(t) {
                return Err(invalid());
            }
            let t: String = t.chars().filter(|c| *c != '_').collect();
            // Rust accepts the same grammar as Python's float() here (incl. case-insensitive
            // inf/infinity/nan with an optional sign) except for what was handled above.
            t.parse::<f64>().map_err(|_| invalid())
        }
        other => Err(format!(
            "float() argument must be a string or a real number, not '{}'",
            py_type_name(other)
        )),
    }
}

/// `str(pathlib.Path(p))` for POSIX paths: repeated separators and `.` parts collapse, a trailing
/// separator is dropped, an empty path is `.`.
pub(crate) fn py_path(p: &str) -> String {
    let absolute = p.starts_with('/');
    // POSIX pathlib keeps exactly two leading slashes (implementation-defined root).
    let root = if p.starts_with("//") && !p.starts_with("///") {
        "//"
    } else if absolute {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = p
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let joined = parts.join("/");
    if root.is_empty() && joined.is_empty() {
        ".".into()
    } else {
        format!("{root}{joined}")
    }
}

// ---------------------------------------------------------------------------------------------
// Power step

/// `aggregate_power.run` as `process_result.py` calls it for a single-node result.
fn single_node_power(
    data: &mut Map<String, Value>,
    benchmark: &(Option<BenchmarkData>, Vec<String>),
    num_gpus: i64,
    env: &BTreeMap<String, String>,
    dir: Option<&std::path::Path>,
    bench_result: String,
) -> Value {
    let named = env.get("GPU_METRICS_CSV").filter(|s| !s.is_empty());
    let candidates: Vec<&str> = named
        .map(String::as_str)
        .into_iter()
        .chain([DEFAULT_GPU_METRICS_CSV, "/workspace/gpu_metrics.csv"])
        .collect();
    let csv = dir
        .and_then(|d| candidates.iter().find(|p| d.join(p).is_file()))
        .unwrap_or(&candidates[0]);
    let (bench, bench_reasons) = benchmark;
    let integration = match (bench, dir) {
        (None, _) => PowerIntegration::empty(Some(num_gpus), bench_reasons.clone()),
        (Some(b), Some(d)) => integrate_power(
            &d.join(csv),
            b.start,
            b.end,
            Some(num_gpus),
            MAX_SAMPLE_GAP_S,
        ),
        (Some(_), None) => {
            let mut r = Vec::new();
            if num_gpus <= 0 {
                append_reason(&mut r, "invalid_expected_gpu_count");
            }
            append_reason(&mut r, "telemetry_file_missing");
            PowerIntegration::empty(Some(num_gpus), r)
        }
    };
    let mut verdict = PowerVerdict::new(bench.clone(), bench_reasons.clone(), integration);
    verdict.patch(data);
    let accumulator = dir.and_then(|d| cross_check_accumulator(&d.join(csv)));
    Value::Object(verdict.sidecar(&py_path(csv), &bench_result, accumulator))
}

/// Replaces the power fields of a multinode agg row (`_patch_agg`): the whole-deployment and
/// role metrics go, `power_metric_schema_version` and `power_valid: 0` are set.
fn patch_multinode_invalid(data: &mut Map<String, Value>) {
    for key in ROLE_METRIC_KEYS {
        data.shift_remove(key);
    }
    patch_power_fields(data, false, &[]);
}

/// `aggregate_power_multinode.run` when the power artifact directory does not exist.
fn multinode_power_missing(
    data: &mut Map<String, Value>,
    benchmark: &(Option<BenchmarkData>, Vec<String>),
    power_dir: String,
    bench_result: String,
    producer_sha: Option<&String>,
) -> Value {
    let (bench, bench_reasons) = benchmark;
    let mut reasons = vec!["power_artifacts_missing".to_string()];
    for r in bench_reasons {
        append_reason(&mut reasons, r);
    }
    patch_multinode_invalid(data);
    json!({
        "schema_version": 1,
        "power_valid": false,
        "reasons": reasons,
        "failures": [format!("power dir missing: {power_dir}")],
        "telemetry_source": power_dir,
        "benchmark_result": bench_result,
        "benchmark_window": bench.as_ref().map_or(Value::Null, BenchmarkData::window_json),
        "selected_window": null,
        "integration_method": INTEGRATION_METHOD,
        "producer": {
            "producer_git_commit": null,
            "expected_producer_git_commit": producer_sha,
            "exporter_image_sha256": null,
            "stored_publication_valid": null,
            "recomputed_publication_valid": null,
        },
        "expected_gpu_count": 0,
        "observed_gpu_count": 0,
        "per_gpu_role": {},
        "per_gpu_max_sample_gap_s": {},
        "per_gpu_energy_j": {},
        "metrics": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_int_parsing() {
        assert_eq!(py_int_str(" 8 "), Ok(8));
        assert_eq!(py_int_str("+08"), Ok(8));
        assert_eq!(py_int_str("-3"), Ok(-3));
        assert_eq!(py_int_str("1_024"), Ok(1024));
        assert_eq!(py_int_str("0"), Ok(0));
        assert_eq!(py_int_str("000"), Ok(0));
        for bad in ["", "8.0", "1__0", "_1", "1_", "abc", "--1", "0x10"] {
            assert_eq!(
                py_int_str(bad),
                Err(format!(
                    "invalid literal for int() with base 10: {}",
                    py_repr_str(bad)
                )),
                "{bad:?}"
            );
        }
        assert!(py_int_str("99999999999999999999")
            .unwrap_err()
            .contains("out of the supported 64-bit range"));
        assert_eq!(py_int_value(&json!(8.9)), Ok(8));
        assert_eq!(py_int_value(&json!(-8.9)), Ok(-8));
        assert_eq!(py_int_value(&json!("16")), Ok(16));
        assert_eq!(py_int_value(&json!(true)), Ok(1));
        assert_eq!(
            py_int_value(&Value::Null),
            Err("int() argument must be a string, a bytes-like object or a real number, not 'NoneType'".into())
        );
    }

    #[test]
    fn python_float_parsing() {
        assert_eq!(py_float_value(&json!(" 1_000.5 ")), Ok(1000.5));
        assert_eq!(py_float_value(&json!("1e3")), Ok(1000.0));
        assert_eq!(py_float_value(&json!("-Infinity")), Ok(f64::NEG_INFINITY));
        assert_eq!(py_float_value(&json!(12)), Ok(12.0));
        assert_eq!(
            py_float_value(&json!("1__0")),
            Err("could not convert string to float: '1__0'".into())
        );
        assert_eq!(
            py_float_value(&json!([1])),
            Err("float() argument must be a string or a real number, not 'list'".into())
        );
    }

    #[test]
    fn pathlib_normalisation() {
        assert_eq!(py_path("gpu_metrics.csv"), "gpu_metrics.csv");
        assert_eq!(py_path("./a//b/./c/"), "a/b/c");
        assert_eq!(py_path("/workspace//x.csv"), "/workspace/x.csv");
        assert_eq!(py_path("//x"), "//x");
        assert_eq!(py_path("///x"), "/x");
        assert_eq!(py_path(""), ".");
        assert_eq!(py_path("a/../b"), "a/../b");
    }

    #[test]
    fn gpu_ids_sort_numerically_first() {
        let mut ids = vec!["gpu-b", "10", "2", "gpu-a", "01"];
        ids.sort_by(|a, b| crate::power::parse::gpu_order(a, b));
        assert_eq!(ids, vec!["01", "2", "10", "gpu-a", "gpu-b"]);
    }

    #[test]
    fn router_metadata_rules() {
        assert_eq!(router_metadata(None).unwrap(), None);
        assert_eq!(router_metadata(Some("null")).unwrap(), None);
        assert_eq!(router_metadata(Some("")).unwrap(), None);
        let v = router_metadata(Some(r#"{"version": "1", "name": "r"}"#))
            .unwrap()
            .unwrap();
        assert_eq!(
            v.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["version", "name"]
        );
        let err = |s: &str| router_metadata(Some(s)).unwrap_err().to_string();
        assert_eq!(err("{"), "ROUTER_METADATA must contain valid JSON");
        assert_eq!(
            err(r#"{"name": "r"}"#),
            "ROUTER_METADATA must contain exactly 'name' and 'version'"
        );
        assert_eq!(
            err(r#"["name", "version"]"#),
            "ROUTER_METADATA must contain exactly 'name' and 'version'"
        );
        assert_eq!(
            err(r#"{"name": "r", "version": ""}"#),
            "ROUTER_METADATA name and version must be non-empty strings"
        );
        assert_eq!(
            err(r#"{"name": "r", "version": 1}"#),
            "ROUTER_METADATA name and version must be non-empty strings"
        );
    }
}
