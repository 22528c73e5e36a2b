//! InferenceX `utils/agentic/aggregation/power_adapter.py`: AgentX (AIPerf) profiling artifacts
//! → the strict power window (`agentic_power_window.json`: the profiling lifecycle's start/end,
//! successful-record count and token sums), then [`super::aggregate_power`] on
//! `<result-dir>/gpu_metrics.csv` with the sidecar `<result-dir>/power_validation.json`. When no
//! window can be built, the agg row is marked `power_valid: 0` and the sidecar records why, with
//! `window_source: "aiperf_profile_lifecycle"`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::aggregate::{
    aggregate_power, patch_power_fields, write_json_atomic, AggregatePowerArgs, PowerError,
    PowerOutcome, PowerVerdict,
};
use super::integrate::PowerIntegration;
use super::parse::fromisoformat;
use super::pycsv::py_strip;
use crate::inferencex::{py_int_value, py_path};

/// The flags of `power_adapter.py`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentxPowerArgs {
    /// `--result-dir`: holds `aiperf_artifacts/`, `gpu_metrics.csv` and
    /// `agentic_power_timezone_offset.txt`; the window and sidecar are written here.
    pub result_dir: PathBuf,
    /// `--agg-result`: the AgentX agg row, patched in place.
    pub agg_result: PathBuf,
    /// `--expected-num-gpus` (optional here).
    pub expected_num_gpus: Option<i64>,
    /// `--require-power` / `REQUIRE_POWER`.
    pub require_power: bool,
    /// Directory relative paths are opened from (`None`: the current directory).
    pub dir: Option<PathBuf>,
}

fn resolve(dir: &Option<PathBuf>, p: &Path) -> PathBuf {
    match dir {
        Some(d) => d.join(p),
        None => p.to_path_buf(),
    }
}

/// `_resolve_artifact_dir`: `aiperf_artifacts/` when it holds `profile_export.jsonl`, else its
/// first sub-directory (by name) that does, else `aiperf_artifacts/`.
fn artifact_dir(result_dir: &Path) -> PathBuf {
    let base = result_dir.join("aiperf_artifacts");
    if base.join("profile_export.jsonl").is_file() {
        return base;
    }
    if let Ok(entries) = std::fs::read_dir(&base) {
        let mut children: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        children.sort();
        for child in children {
            if child.is_dir() && child.join("profile_export.jsonl").is_file() {
                return child;
            }
        }
    }
    base
}

/// The window file's contents (`build_power_window`), or the reasons it cannot be built.
type Window = Result<Map<String, Value>, Vec<String>>;

fn fail(reason: &str) -> Window {
    Err(vec![reason.to_string()])
}

/// `_captured_timezone`: the UTC offset (µs) in `agentic_power_timezone_offset.txt`.
fn captured_offset(result_dir: &Path) -> Result<i128, &'static str> {
    let path = result_dir.join("agentic_power_timezone_offset.txt");
    if !path.is_file() {
        return Err("profile_timezone_offset_missing");
    }
    let text = std::fs::read(&path).map_err(|_| "profile_timezone_offset_invalid")?;
    let text = String::from_utf8_lossy(&text);
    let t = py_strip(&text).as_bytes();
    // ^([+-])(\d{2}):?(\d{2})$
    let ok = (t.len() == 5 || (t.len() == 6 && t[3] == b':'))
        && matches!(t[0], b'+' | b'-')
        && t[1..3].iter().all(u8::is_ascii_digit)
        && t[t.len() - 2..].iter().all(u8::is_ascii_digit);
    if !ok {
        return Err("profile_timezone_offset_invalid");
    }
    let num = |s: &[u8]| i128::from((s[0] - b'0') * 10 + (s[1] - b'0'));
    let (h, m) = (num(&t[1..3]), num(&t[t.len() - 2..]));
    if h > 23 || m > 59 {
        return Err("profile_timezone_offset_invalid");
    }
    let sign = if t[0] == b'+' { 1 } else { -1 };
    Ok(sign * (h * 3600 + m * 60) * 1_000_000)
}

/// `_parse_profile_timestamp`: epoch seconds or ISO text (naive → `fallback` offset, µs).
fn profile_timestamp(value: &Value, fallback: Option<i128>) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|x| x.is_finite()),
        Value::String(s) if !py_strip(s).is_empty() => {
            let iso = py_strip(s).replace('Z', "+00:00");
            let (dt, us, offset) = fromisoformat(iso.as_bytes())?;
            let offset = offset.or(fallback)?;
            let total = i128::from(dt.and_utc().timestamp()) * 1_000_000 + i128::from(us) - offset;
            Some(total as f64 / 1e6)
        }
        _ => None,
    }
}

/// Python truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `load_records`: the successful profiling records of `profile_export.jsonl` (warmup-phase and
/// errored records dropped). `Ok(None)`: a line is not JSON (`profile_artifacts_invalid`).
fn load_records(path: &Path) -> Result<Option<Vec<Map<String, Value>>>, PowerError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(None);
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for (n, raw) in text.split_inclusive('\n').enumerate() {
        let line = py_strip(raw);
        if line.is_empty() {
            continue;
        }
        let Ok(obj) = serde_json::from_str::<Value>(line) else {
            return Ok(None);
        };
        let crash = |what: &str| {
            PowerError(format!(
                "{}:{}: {what} (the reference stops with AttributeError)",
                path.display(),
                n + 1
            ))
        };
        let Value::Object(obj) = obj else {
            return Err(crash("record is not a JSON object"));
        };
        let phase = match obj.get("metadata") {
            None => None,
            Some(Value::Object(m)) => m.get("benchmark_phase").filter(|v| !v.is_null()),
            Some(_) => return Err(crash("metadata is not an object")),
        };
        let warmup = phase.is_some_and(|p| p.as_str() != Some("profiling"));
        let error = obj.get("error").is_some_and(truthy);
        if !(warmup || error) {
            out.push(obj);
        }
    }
    Ok(Some(out))
}

/// `extract_per_record_ints`: `int(metrics[key]["value"])` (or `int(metrics[key])`) of each
/// record where that works.
fn per_record_ints(records: &[Map<String, Value>], key: &str) -> Result<Vec<i64>, PowerError> {
    let mut out = Vec::new();
    for r in records {
        let metric =
            match r.get("metrics") {
                None => None,
                Some(Value::Object(m)) => m.get(key),
                Some(_) => return Err(PowerError(
                    "a record's metrics is not an object (the reference stops with AttributeError)"
                        .into(),
                )),
            };
        let value = match metric {
            Some(Value::Object(m)) => m.get("value"),
            other => other,
        };
        if let Some(v) = value.filter(|v| !v.is_null()) {
            if let Ok(i) = py_int_value(v) {
                out.push(i);
            }
        }
    }
    Ok(out)
}

/// `build_power_window`.
fn build_window(result_dir: &Path) -> Result<Window, PowerError> {
    let artifacts = artifact_dir(result_dir);
    let aggregate_path = artifacts.join("profile_export_aiperf.json");
    let records_path = artifacts.join("profile_export.jsonl");
    if !aggregate_path.is_file() || !records_path.is_file() {
        return Ok(fail("profile_artifacts_missing"));
    }
    let aggregate = std::fs::read(&aggregate_path)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let Some(aggregate) = aggregate else {
        return Ok(fail("profile_artifacts_invalid"));
    };
    let Some(records) = load_records(&records_path)? else {
        return Ok(fail("profile_artifacts_invalid"));
    };
    let Value::Object(aggregate) = aggregate else {
        return Err(PowerError(format!(
            "{}: not a JSON object (the reference stops with AttributeError)",
            aggregate_path.display()
        )));
    };
    let (Some(raw_start), Some(raw_end)) = (
        aggregate.get("start_time").filter(|v| !v.is_null()),
        aggregate.get("end_time").filter(|v| !v.is_null()),
    ) else {
        return Ok(fail("profile_window_missing"));
    };
    let naive = [raw_start, raw_end].iter().any(|v| {
        v.as_str()
            .and_then(|s| fromisoformat(py_strip(s).replace('Z', "+00:00").as_bytes()))
            .is_some_and(|(_, _, off)| off.is_none())
    });
    let fallback = if naive {
        match captured_offset(result_dir) {
            Ok(off) => Some(off),
            Err(reason) => return Ok(fail(reason)),
        }
    } else {
        None
    };
    let (Some(start), Some(end)) = (
        profile_timestamp(raw_start, fallback),
        profile_timestamp(raw_end, fallback),
    ) else {
        return Ok(fail("profile_window_invalid"));
    };
    if end <= start {
        return Ok(fail("profile_window_invalid"));
    }
    let completed = records.len();
    if completed == 0 {
        return Ok(fail("successful_request_count_invalid"));
    }
    let input = per_record_ints(&records, "input_sequence_length")?;
    let output = per_record_ints(&records, "output_sequence_length")?;
    let (sum_in, sum_out): (i64, i64) = (input.iter().sum(), output.iter().sum());
    if input.len() != completed
        || output.len() != completed
        || input.iter().chain(&output).any(|v| *v < 0)
        || sum_in <= 0
        || sum_out <= 0
    {
        return Ok(fail("incomplete_token_accounting"));
    }
    let mut w = Map::new();
    w.insert("benchmark_start_time_unix".into(), start.into());
    w.insert("benchmark_end_time_unix".into(), end.into());
    w.insert("duration".into(), (end - start).into());
    w.insert("completed".into(), completed.into());
    w.insert("total_input_tokens".into(), sum_in.into());
    w.insert("total_output_tokens".into(), sum_out.into());
    Ok(Ok(w))
}

/// `_record_adapter_failure`: agg row `power_valid: 0`, sidecar with the adapter's reasons.
/// Returns the sidecar, or the error text when the agg row or sidecar could not be written.
fn record_failure(
    args: &AgentxPowerArgs,
    reasons: &[String],
) -> Result<Result<Value, String>, PowerError> {
    let dir_text = args.result_dir.to_string_lossy().into_owned();
    let result_dir = resolve(&args.dir, &args.result_dir);
    let agg = resolve(&args.dir, &args.agg_result);
    let loaded = std::fs::read(&agg)
        .map_err(|e| e.to_string())
        .and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
    let mut data = match loaded {
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            return Err(PowerError(format!(
                "{}: the agg row is not a JSON object (the reference stops with a TypeError)",
                agg.display()
            )))
        }
        Err(e) => return Ok(Err(e)),
    };
    patch_power_fields(&mut data, false, &[]);
    if let Err(e) = write_json_atomic(&agg, &Value::Object(data)) {
        return Ok(Err(e.to_string()));
    }
    let verdict = PowerVerdict {
        benchmark: None,
        integration: PowerIntegration::empty(args.expected_num_gpus, reasons.to_vec()),
        reasons: reasons.to_vec(),
        power_valid: false,
        metrics: Vec::new(),
    };
    let mut side = verdict.sidecar(
        &py_path(&format!("{dir_text}/gpu_metrics.csv")),
        &py_path(&format!("{dir_text}/agentic_power_window.json")),
        None,
    );
    side.insert("window_source".into(), "aiperf_profile_lifecycle".into());
    let side = Value::Object(side);
    match write_json_atomic(&result_dir.join("power_validation.json"), &side) {
        Ok(()) => Ok(Ok(side)),
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// What the adapter did when it could not build a window: exit status, stderr lines, reasons,
/// and the sidecar it wrote (`None` when writing failed).
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterFailure {
    /// 0, or 1 under `--require-power`.
    pub exit_code: u8,
    /// Lines for stderr.
    pub stderr: Vec<String>,
    /// Why no window was built.
    pub reasons: Vec<String>,
    /// The sidecar written, if any.
    pub sidecar: Option<Value>,
}

/// The adapter's result: the power step ran on the window, or the adapter failed first.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentxOutcome {
    /// `aggregate_power.run` on the window.
    Ran(PowerOutcome),
    /// No window (or it could not be written).
    Failed(AdapterFailure),
}

impl AgentxOutcome {
    /// Exit status of the tool.
    pub fn exit_code(&self) -> u8 {
        match self {
            AgentxOutcome::Ran(o) => o.exit_code,
            AgentxOutcome::Failed(f) => f.exit_code,
        }
    }
}

/// `run_agentic_power`.
pub fn agentx_power(args: &AgentxPowerArgs) -> Result<AgentxOutcome, PowerError> {
    let result_dir = resolve(&args.dir, &args.result_dir);
    let window = match build_window(&result_dir)? {
        Ok(w) => match write_json_atomic(
            &result_dir.join("agentic_power_window.json"),
            &Value::Object(w),
        ) {
            Ok(()) => None,
            Err(_) => Some(vec!["power_window_unwritable".to_string()]),
        },
        Err(reasons) => Some(reasons),
    };
    if let Some(reasons) = window {
        let mut stderr = Vec::new();
        let sidecar = match record_failure(args, &reasons)? {
            Ok(side) => Some(side),
            Err(e) => {
                stderr.push(format!(
                    "[agentx_power] Failed to record adapter failure: {e}"
                ));
                None
            }
        };
        stderr.push(format!(
            "[agentx_power] Power-window adaptation failed: {}",
            reasons.join(", ")
        ));
        return Ok(AgentxOutcome::Failed(AdapterFailure {
            exit_code: u8::from(args.require_power),
            stderr,
            reasons,
            sidecar,
        }));
    }
    let dir_text = args.result_dir.to_string_lossy().into_owned();
    let p = |name: &str| PathBuf::from(py_path(&format!("{dir_text}/{name}")));
    aggregate_power(&AggregatePowerArgs {
        csv: p("gpu_metrics.csv"),
        bench_result: p("agentic_power_window.json"),
        agg_result: args.agg_result.clone(),
        expected_num_gpus: args.expected_num_gpus,
        validation_result: Some(p("power_validation.json")),
        require_power: args.require_power,
        dir: args.dir.clone(),
    })
    .map(AgentxOutcome::Ran)
}
