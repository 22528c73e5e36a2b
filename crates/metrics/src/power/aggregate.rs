//! `run` of InferenceX `utils/aggregate_power.py`: the benchmark window and counts from the raw
//! result, the integration, the agg-row patch and the validation sidecar — the files written
//! byte for byte as the Python writes them (`json.dumps(indent=2)`, atomically through
//! `<name>.tmp`).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::integrate::{
    append_reason, cross_check_accumulator, integrate_power, PowerIntegration, MAX_SAMPLE_GAP_S,
};
use crate::inferencex::py_path;
use crate::inferencex::pyjson::{dumps_indent2, py_round};

/// `_INTEGRATION_METHOD`, written into every sidecar.
pub const INTEGRATION_METHOD: &str = "per_device_trapezoidal_with_linear_boundary_interpolation";
/// `POWER_METRIC_SCHEMA_VERSION`, written into every patched agg row.
pub const POWER_METRIC_SCHEMA_VERSION: i64 = 2;
/// `_POWER_METRIC_KEYS`: the whole-deployment metrics, in the order they are written.
pub const POWER_METRIC_KEYS: [&str; 7] = [
    "avg_power_w",
    "avg_total_gpu_power_w",
    "total_gpu_energy_j",
    "joules_per_successful_query",
    "joules_per_input_token",
    "joules_per_output_token",
    "joules_per_total_token",
];

/// Where the Python would stop with a traceback (exit 1, nothing more written): input it does
/// not guard against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PowerError(pub String);

/// `BenchmarkData`: the window and normalisation counts of a raw benchmark result.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchmarkData {
    /// `benchmark_start_time_unix`, s.
    pub start: f64,
    /// `benchmark_end_time_unix`, s.
    pub end: f64,
    /// `duration` as reported, s.
    pub duration: f64,
    /// Successful requests (0 when invalid).
    pub completed: u64,
    /// Input tokens of successful requests (0 when invalid).
    pub total_input_tokens: u64,
    /// Output tokens of successful requests (0 when invalid).
    pub total_output_tokens: u64,
}

impl BenchmarkData {
    /// `end − start`, s.
    pub fn integration_duration_s(&self) -> f64 {
        self.end - self.start
    }

    /// The sidecar's `benchmark_window` object.
    pub fn window_json(&self) -> Value {
        json!({
            "start_time_unix": self.start,
            "end_time_unix": self.end,
            "reported_duration_s": self.duration,
            "integration_duration_s": self.integration_duration_s(),
            "completed": self.completed,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
        })
    }
}

/// `_load_benchmark_data` on a parsed result object: the window and counts, with the reasons
/// that make them unusable (`invalid_benchmark_window`, `benchmark_duration_mismatch` when
/// `|duration − (end − start)| > max(0.5, 1 %)`, `invalid_{successful_query,input_token,
/// output_token}_count` when not a JSON integer > 0).
pub fn load_benchmark_data(raw: &Map<String, Value>) -> (Option<BenchmarkData>, Vec<String>) {
    let window = [
        "benchmark_start_time_unix",
        "benchmark_end_time_unix",
        "duration",
    ]
    .map(|k| raw.get(k).and_then(Value::as_f64));
    let [Some(start), Some(end), Some(duration)] = window else {
        return (None, vec!["invalid_benchmark_window".into()]);
    };
    if !(start.is_finite() && end.is_finite() && duration.is_finite())
        || end <= start
        || duration <= 0.0
    {
        return (None, vec!["invalid_benchmark_window".into()]);
    }
    let mut reasons = Vec::new();
    let integration = end - start;
    if (duration - integration).abs() > f64::max(0.5, integration * 0.01) {
        append_reason(&mut reasons, "benchmark_duration_mismatch");
    }
    let mut count = |key: &str, reason: &str| -> u64 {
        match raw.get(key).and_then(Value::as_u64) {
            Some(n) if n > 0 => n,
            _ => {
                append_reason(&mut reasons, reason);
                0
            }
        }
    };
    let completed = count("completed", "invalid_successful_query_count");
    let total_input_tokens = count("total_input_tokens", "invalid_input_token_count");
    let total_output_tokens = count("total_output_tokens", "invalid_output_token_count");
    (
        Some(BenchmarkData {
            start,
            end,
            duration,
            completed,
            total_input_tokens,
            total_output_tokens,
        }),
        reasons,
    )
}

/// `_load_benchmark_data` on a file: unreadable or invalid JSON → `invalid_benchmark_result`.
fn load_benchmark_file(path: &Path) -> Result<(Option<BenchmarkData>, Vec<String>), PowerError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok((None, vec!["invalid_benchmark_result".into()]));
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(PowerError(format!(
            "{}: not UTF-8 (the reference stops with UnicodeDecodeError)",
            path.display()
        )));
    };
    let Ok(value) = serde_json::from_str::<Value>(&text) else {
        return Ok((None, vec!["invalid_benchmark_result".into()]));
    };
    match value {
        Value::Object(map) => Ok(load_benchmark_data(&map)),
        _ => Err(PowerError(format!(
            "{}: not a JSON object (the reference stops with AttributeError)",
            path.display()
        ))),
    }
}

/// One power step's verdict: reasons, validity and the derived metrics (unrounded).
#[derive(Debug, Clone, PartialEq)]
pub struct PowerVerdict {
    /// The benchmark window and counts, when usable.
    pub benchmark: Option<BenchmarkData>,
    /// The telemetry integration.
    pub integration: PowerIntegration,
    /// Benchmark reasons then integration reasons (then agg-file reasons), deduplicated.
    pub reasons: Vec<String>,
    /// No reason.
    pub power_valid: bool,
    /// `_derived_metrics` when valid (keys of [`POWER_METRIC_KEYS`], in order), else empty.
    pub metrics: Vec<(&'static str, f64)>,
}

impl PowerVerdict {
    /// The reasons and metrics of `run` before the agg file is touched.
    pub fn new(
        benchmark: Option<BenchmarkData>,
        bench_reasons: Vec<String>,
        integration: PowerIntegration,
    ) -> PowerVerdict {
        let mut reasons = bench_reasons;
        for r in &integration.invalid_reasons {
            append_reason(&mut reasons, r);
        }
        let power_valid = reasons.is_empty();
        let mut metrics = Vec::new();
        if let (true, Some(b)) = (power_valid, &benchmark) {
            let (Some(avg), Some(avg_total), Some(energy)) = (
                integration.avg_power_w,
                integration.avg_total_gpu_power_w,
                integration.total_gpu_energy_j,
            ) else {
                unreachable!("a valid integration has its totals");
            };
            let total_tokens = (b.total_input_tokens + b.total_output_tokens) as f64;
            metrics = vec![
                ("avg_power_w", avg),
                ("avg_total_gpu_power_w", avg_total),
                ("total_gpu_energy_j", energy),
                ("joules_per_successful_query", energy / b.completed as f64),
                (
                    "joules_per_input_token",
                    energy / b.total_input_tokens as f64,
                ),
                (
                    "joules_per_output_token",
                    energy / b.total_output_tokens as f64,
                ),
                ("joules_per_total_token", energy / total_tokens),
            ];
        }
        PowerVerdict {
            benchmark,
            integration,
            reasons,
            power_valid,
            metrics,
        }
    }

    /// Marks the result invalid for an agg-file problem (`aggregate_result_missing`,
    /// `aggregate_result_unwritable`).
    pub fn fail(&mut self, reason: &str) {
        append_reason(&mut self.reasons, reason);
        self.power_valid = false;
        self.metrics.clear();
    }

    /// `_patch_power_result` on an agg row in memory: removes the power metrics, sets
    /// `power_metric_schema_version` and `power_valid` (1/0), drops `power_invalid_reasons`, adds
    /// the metrics rounded (3 digits for `_w`/`_j` keys, else 6). A non-finite metric leaves the
    /// row untouched and marks the verdict `aggregate_result_unwritable` (the Python raises
    /// before writing).
    pub fn patch(&mut self, data: &mut Map<String, Value>) {
        if self.metrics.iter().any(|(_, v)| !v.is_finite()) {
            self.fail("aggregate_result_unwritable");
            return;
        }
        patch_power_fields(data, self.power_valid, &self.metrics);
    }

    /// `_validation_payload`: the sidecar object.
    pub fn sidecar(
        &self,
        telemetry_source: &str,
        benchmark_result: &str,
        accumulator_check: Option<Value>,
    ) -> Map<String, Value> {
        let i = &self.integration;
        let obj = |pairs: Vec<(String, Value)>| Value::Object(pairs.into_iter().collect());
        let mut m = Map::new();
        m.insert("schema_version".into(), json!(1));
        m.insert("power_valid".into(), json!(self.power_valid));
        m.insert("reasons".into(), json!(self.reasons));
        m.insert("telemetry_source".into(), json!(telemetry_source));
        m.insert("benchmark_result".into(), json!(benchmark_result));
        m.insert(
            "benchmark_window".into(),
            self.benchmark
                .as_ref()
                .map_or(Value::Null, BenchmarkData::window_json),
        );
        m.insert("integration_method".into(), json!(INTEGRATION_METHOD));
        m.insert("expected_gpu_count".into(), json!(i.expected_num_gpus));
        m.insert("observed_gpu_count".into(), json!(i.observed_gpu_ids.len()));
        m.insert("observed_gpu_ids".into(), json!(i.observed_gpu_ids));
        m.insert(
            "per_gpu_sample_counts".into(),
            obj(i
                .per_gpu_sample_counts
                .iter()
                .map(|(g, n)| (g.clone(), json!(n)))
                .collect()),
        );
        m.insert(
            "per_gpu_max_sample_gap_s".into(),
            obj(i
                .per_gpu_max_sample_gap_s
                .iter()
                .map(|(g, x)| (g.clone(), json!(x)))
                .collect()),
        );
        m.insert(
            "per_gpu_energy_j".into(),
            obj(i
                .per_gpu_energy_j
                .iter()
                .map(|(g, x)| (g.clone(), json!(x)))
                .collect()),
        );
        m.insert(
            "device_issues".into(),
            obj(i
                .device_issues
                .iter()
                .map(|(g, x)| (g.clone(), json!(x)))
                .collect()),
        );
        m.insert(
            "accumulator_check".into(),
            accumulator_check.unwrap_or(Value::Null),
        );
        m.insert(
            "metrics".into(),
            obj(self
                .metrics
                .iter()
                .filter(|(_, v)| v.is_finite())
                .map(|(k, v)| ((*k).to_string(), json!(py_round(*v, 6))))
                .collect()),
        );
        m
    }
}

/// Replaces the power fields of an agg row (`_patch_power_result`).
pub fn patch_power_fields(data: &mut Map<String, Value>, valid: bool, metrics: &[(&str, f64)]) {
    for key in POWER_METRIC_KEYS {
        data.shift_remove(key);
    }
    data.insert(
        "power_metric_schema_version".into(),
        json!(POWER_METRIC_SCHEMA_VERSION),
    );
    data.insert("power_valid".into(), json!(i64::from(valid)));
    data.shift_remove("power_invalid_reasons");
    if valid {
        for (key, value) in metrics {
            let digits = if key.ends_with("_w") || key.ends_with("_j") {
                3
            } else {
                6
            };
            data.insert((*key).into(), json!(py_round(*value, digits)));
        }
    }
}

/// `_write_json_atomic`: parents created, `<path>.tmp` written, then renamed over `path`.
pub fn write_json_atomic(path: &Path, value: &Value) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, dumps_indent2(value))?;
    std::fs::rename(&tmp, path)
}

/// Reads, patches and rewrites the agg file (`run`'s agg step); `Err` only where the Python
/// would stop with a traceback.
fn patch_agg_file(verdict: &mut PowerVerdict, agg: &Path) -> Result<Option<String>, PowerError> {
    if !agg.is_file() {
        verdict.fail("aggregate_result_missing");
        return Ok(None);
    }
    let text = std::fs::read(agg)
        .map_err(|e| e.to_string())
        .and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
    let mut data = match text {
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            return Err(PowerError(format!(
                "{}: the agg row is not a JSON object (the reference stops with a TypeError)",
                agg.display()
            )))
        }
        Err(e) => {
            verdict.fail("aggregate_result_unwritable");
            return Ok(Some(e));
        }
    };
    if verdict.metrics.iter().any(|(_, v)| !v.is_finite()) {
        let key = verdict
            .metrics
            .iter()
            .find(|(_, v)| !v.is_finite())
            .unwrap()
            .0;
        verdict.fail("aggregate_result_unwritable");
        return Ok(Some(format!("non-finite power metric: {key}")));
    }
    patch_power_fields(&mut data, verdict.power_valid, &verdict.metrics);
    match write_json_atomic(agg, &Value::Object(data)) {
        Ok(()) => Ok(None),
        Err(e) => {
            verdict.fail("aggregate_result_unwritable");
            Ok(Some(e.to_string()))
        }
    }
}

/// The flags of `utils/aggregate_power.py`.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregatePowerArgs {
    /// `--csv`: the telemetry (`gpu_metrics.csv` from `start_gpu_monitor`).
    pub csv: PathBuf,
    /// `--bench-result`: the raw `bench_serving` result (window and token counts).
    pub bench_result: PathBuf,
    /// `--agg-result`: the agg row, patched in place.
    pub agg_result: PathBuf,
    /// `--expected-num-gpus`: TP × PP × PCP (`None` only through the library, as `run()`).
    pub expected_num_gpus: Option<i64>,
    /// `--validation-result` [default: `power_validation_<bench stem>.json` beside the bench
    /// result].
    pub validation_result: Option<PathBuf>,
    /// `--require-power` / `REQUIRE_POWER`: exit 1 when the power is invalid.
    pub require_power: bool,
    /// Directory relative paths are opened from (`None`: the current directory). The written
    /// texts name paths as given, as the Python does.
    pub dir: Option<PathBuf>,
}

/// What one run did: exit status, the lines the Python prints, and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerOutcome {
    /// 0, or 1 when invalid under `--require-power`.
    pub exit_code: u8,
    /// Lines for stdout.
    pub stdout: Vec<String>,
    /// Lines for stderr.
    pub stderr: Vec<String>,
    /// The verdict (reasons, validity, unrounded metrics).
    pub verdict: PowerVerdict,
    /// The sidecar as written (or as it would have been, when writing failed).
    pub sidecar: Value,
}

fn resolve(dir: &Option<PathBuf>, p: &Path) -> PathBuf {
    match dir {
        Some(d) => d.join(p),
        None => p.to_path_buf(),
    }
}

/// `Path.with_name(f"power_validation_{stem}.json")`.
fn default_validation(bench: &Path) -> PathBuf {
    let name = bench
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match name.rfind('.') {
        Some(i) if i > 0 && i < name.len() - 1 => &name[..i],
        _ => name.as_str(),
    };
    bench.with_file_name(format!("power_validation_{stem}.json"))
}

fn display(p: &Path) -> String {
    py_path(&p.to_string_lossy())
}

/// `aggregate_power.run`: integrate, patch the agg row, write the sidecar, print, and return
/// the exit status; valid and invalid telemetry alike.
pub fn aggregate_power(args: &AggregatePowerArgs) -> Result<PowerOutcome, PowerError> {
    let validation = args
        .validation_result
        .clone()
        .unwrap_or_else(|| default_validation(&args.bench_result));
    let (benchmark, bench_reasons) = load_benchmark_file(&resolve(&args.dir, &args.bench_result))?;
    let csv = resolve(&args.dir, &args.csv);
    let integration = match &benchmark {
        None => PowerIntegration::empty(args.expected_num_gpus, bench_reasons.clone()),
        Some(b) => integrate_power(
            &csv,
            b.start,
            b.end,
            args.expected_num_gpus,
            MAX_SAMPLE_GAP_S,
        ),
    };
    let mut verdict = PowerVerdict::new(benchmark, bench_reasons, integration);
    finish(
        verdict_into_files(&mut verdict, args, &validation, &csv)?,
        verdict,
        args,
        &validation,
    )
}

/// The agg patch and the accumulator check; returns (patch error text, accumulator check).
fn verdict_into_files(
    verdict: &mut PowerVerdict,
    args: &AggregatePowerArgs,
    _validation: &Path,
    csv: &Path,
) -> Result<(Option<String>, Option<Value>), PowerError> {
    let patch_err = patch_agg_file(verdict, &resolve(&args.dir, &args.agg_result))?;
    Ok((patch_err, cross_check_accumulator(csv)))
}

fn finish(
    (patch_err, accumulator): (Option<String>, Option<Value>),
    verdict: PowerVerdict,
    args: &AggregatePowerArgs,
    validation: &Path,
) -> Result<PowerOutcome, PowerError> {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(e) = patch_err {
        stderr.push(format!(
            "[aggregate_power] Failed to patch {}: {e}",
            display(&args.agg_result)
        ));
    }
    let sidecar = Value::Object(verdict.sidecar(
        &display(&args.csv),
        &display(&args.bench_result),
        accumulator,
    ));
    let fail_code = u8::from(args.require_power);
    let mut out = PowerOutcome {
        exit_code: 0,
        stdout: Vec::new(),
        stderr: Vec::new(),
        verdict,
        sidecar,
    };
    if let Err(e) = write_json_atomic(&resolve(&args.dir, validation), &out.sidecar) {
        stderr.push(format!(
            "[aggregate_power] Failed to write validation artifact {}: {e}",
            display(validation)
        ));
        out.exit_code = fail_code;
    } else if !out.verdict.power_valid {
        stderr.push(format!(
            "[aggregate_power] Power validation failed: {} (details: {})",
            out.verdict.reasons.join(", "),
            display(validation)
        ));
        out.exit_code = fail_code;
    } else {
        let m = |k: &str| {
            out.verdict
                .metrics
                .iter()
                .find(|(n, _)| *n == k)
                .map_or(f64::NAN, |(_, v)| *v)
        };
        stdout.push(format!(
            "[aggregate_power] avg_power_w={:.2} avg_total_gpu_power_w={:.2} \
             total_gpu_energy_j={:.2} (n={}) -> {}",
            m("avg_power_w"),
            m("avg_total_gpu_power_w"),
            m("total_gpu_energy_j"),
            out.verdict.integration.observed_gpu_ids.len(),
            display(&args.agg_result)
        ));
    }
    out.stdout = stdout;
    out.stderr = stderr;
    Ok(out)
}
