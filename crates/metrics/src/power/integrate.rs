//! `integrate_power` and `cross_check_accumulator` of InferenceX `utils/aggregate_power.py`:
//! per-GPU trapezoidal energy over the benchmark window with linear interpolation at its edges,
//! the validation reasons, and the advisory energy-accumulator check.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::parse::{detect_columns, gpu_order, parse_power, parse_timestamp, py_mean};
use super::pycsv::{py_strip, DictRows};
use crate::inferencex::py_float_value;

/// Largest allowed gap between consecutive samples around the window, s
/// (`_DEFAULT_MAX_SAMPLE_GAP_S`).
pub const MAX_SAMPLE_GAP_S: f64 = 3.0;
/// Relative tolerance of the accumulator cross-check (`_ACCUMULATOR_TOLERANCE`).
pub const ACCUMULATOR_TOLERANCE: f64 = 0.05;

/// `PowerIntegration`: the auditable result of integrating one single-node telemetry stream.
/// Per-GPU maps keep the reference's order (GPU ids sorted numerically first).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PowerIntegration {
    /// No reason was found.
    pub power_valid: bool,
    /// Reason codes in discovery order (`telemetry_file_missing`, `sampling_gap_exceeded`, …).
    pub invalid_reasons: Vec<String>,
    /// Expected GPU count (TP × PP × PCP), when given.
    pub expected_num_gpus: Option<i64>,
    /// GPU ids seen with usable samples.
    pub observed_gpu_ids: Vec<String>,
    /// Distinct sample timestamps per GPU within the window ± the max gap.
    pub per_gpu_sample_counts: Vec<(String, u64)>,
    /// Largest gap between the samples that bracket and fill the window, per GPU, s.
    pub per_gpu_max_sample_gap_s: Vec<(String, f64)>,
    /// Energy over the window per GPU, J.
    pub per_gpu_energy_j: Vec<(String, f64)>,
    /// Per-GPU issues (`insufficient_power_samples`, `benchmark_window_not_bracketed`,
    /// `sampling_gap_exceeded`).
    pub device_issues: Vec<(String, Vec<String>)>,
    /// Mean board power per GPU over the window, W.
    pub avg_power_w: Option<f64>,
    /// Mean summed power of all GPUs over the window, W.
    pub avg_total_gpu_power_w: Option<f64>,
    /// Energy of all GPUs over the window, J.
    pub total_gpu_energy_j: Option<f64>,
}

impl PowerIntegration {
    /// `_empty_integration`: invalid, with no device data.
    pub fn empty(expected_num_gpus: Option<i64>, reasons: Vec<String>) -> PowerIntegration {
        PowerIntegration {
            power_valid: false,
            invalid_reasons: reasons,
            expected_num_gpus,
            ..PowerIntegration::default()
        }
    }
}

/// `_append_reason`: adds a reason once, keeping discovery order.
pub fn append_reason(reasons: &mut Vec<String>, reason: &str) {
    if !reasons.iter().any(|r| r == reason) {
        reasons.push(reason.to_string());
    }
}

/// Power readings grouped by GPU (first-seen order) and exact timestamp (readings of one
/// timestamp are averaged): the input of the integration, from a CSV or from NVML.
#[derive(Debug, Clone, Default)]
pub struct RawSamples {
    gpus: Vec<(String, Vec<(f64, Vec<f64>)>)>,
    gpu_index: HashMap<String, usize>,
    time_index: Vec<HashMap<u64, usize>>,
}

impl RawSamples {
    /// Adds one reading (W) of `gpu` at `timestamp` (Unix s).
    pub fn push(&mut self, gpu: &str, timestamp: f64, watts: f64) {
        let g = match self.gpu_index.get(gpu) {
            Some(g) => *g,
            None => {
                self.gpus.push((gpu.to_string(), Vec::new()));
                self.time_index.push(HashMap::new());
                self.gpu_index.insert(gpu.to_string(), self.gpus.len() - 1);
                self.gpus.len() - 1
            }
        };
        // Python dict keys: 0.0 and -0.0 are one key.
        let key = if timestamp == 0.0 {
            0
        } else {
            timestamp.to_bits()
        };
        let times = &mut self.gpus[g].1;
        match self.time_index[g].get(&key) {
            Some(i) => times[*i].1.push(watts),
            None => {
                self.time_index[g].insert(key, times.len());
                times.push((timestamp, vec![watts]));
            }
        }
    }

    /// No reading at all.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }
}

/// What reading a telemetry CSV gave before the integration proper.
enum Ingested {
    /// Stop with an empty integration carrying these reasons.
    Stop(Vec<String>),
    /// Samples, and the reasons found while reading them.
    Samples(RawSamples, Vec<String>),
}

/// `integrate_power`: validate and integrate per-GPU power over `[start_unix, end_unix]`.
///
/// `csv` is opened as given (relative to the current directory when relative).
pub fn integrate_power(
    csv: &Path,
    start_unix: f64,
    end_unix: f64,
    expected_num_gpus: Option<i64>,
    max_sample_gap_s: f64,
) -> PowerIntegration {
    if let Some(early) = check_window(start_unix, end_unix, expected_num_gpus, max_sample_gap_s) {
        return early;
    }
    let mut reasons = Vec::new();
    if expected_num_gpus.is_some_and(|n| n <= 0) {
        append_reason(&mut reasons, "invalid_expected_gpu_count");
    }
    match ingest_csv(csv, start_unix, end_unix, max_sample_gap_s, reasons) {
        Ingested::Stop(reasons) => PowerIntegration::empty(expected_num_gpus, reasons),
        Ingested::Samples(raw, reasons) => integrate_samples(
            raw,
            reasons,
            start_unix,
            end_unix,
            expected_num_gpus,
            max_sample_gap_s,
        ),
    }
}

/// The window and gap checks that end `integrate_power` before any file is read.
pub fn check_window(
    start_unix: f64,
    end_unix: f64,
    expected_num_gpus: Option<i64>,
    max_sample_gap_s: f64,
) -> Option<PowerIntegration> {
    if !start_unix.is_finite() || !end_unix.is_finite() || end_unix <= start_unix {
        return Some(PowerIntegration::empty(
            expected_num_gpus,
            vec!["invalid_benchmark_window".into()],
        ));
    }
    if !max_sample_gap_s.is_finite() || max_sample_gap_s <= 0.0 {
        return Some(PowerIntegration::empty(
            expected_num_gpus,
            vec!["invalid_max_sample_gap".into()],
        ));
    }
    None
}

fn ingest_csv(
    csv: &Path,
    start: f64,
    end: f64,
    max_gap: f64,
    mut reasons: Vec<String>,
) -> Ingested {
    fn stop(reason: &str, mut reasons: Vec<String>) -> Ingested {
        append_reason(&mut reasons, reason);
        Ingested::Stop(reasons)
    }
    if !csv.is_file() {
        return stop("telemetry_file_missing", reasons);
    }
    match std::fs::metadata(csv) {
        Ok(m) if m.len() == 0 => return stop("telemetry_file_empty", reasons),
        Ok(_) => {}
        Err(_) => return stop("telemetry_file_unreadable", reasons),
    }
    let Ok(bytes) = std::fs::read(csv) else {
        return stop("telemetry_file_unreadable", reasons);
    };
    let table = DictRows::parse(&bytes);
    if table.error_in_header {
        return stop("telemetry_file_unreadable", reasons);
    }
    let (ts_col, power_col, gpu_col) = detect_columns(&table.header);
    let mut missing = false;
    for (col, reason) in [
        (ts_col, "timestamp_column_missing"),
        (power_col, "power_column_missing"),
        (gpu_col, "gpu_identity_column_missing"),
    ] {
        if col.is_none() {
            append_reason(&mut reasons, reason);
            missing = true;
        }
    }
    let (Some(ts_col), Some(power_col), Some(gpu_col), false) =
        (ts_col, power_col, gpu_col, missing)
    else {
        return Ingested::Stop(reasons);
    };
    let (ti, pi, gi) = (
        table.column(ts_col).expect("detected column"),
        table.column(power_col).expect("detected column"),
        table.column(gpu_col).expect("detected column"),
    );
    let mut raw = RawSamples::default();
    let mut saw_missing_gpu = false;
    for row in &table.rows {
        let ts = parse_timestamp(DictRows::cell(row, ti));
        let Some(ts) = ts.filter(|t| t.is_finite()) else {
            append_reason(&mut reasons, "invalid_timestamp_sample");
            continue;
        };
        if ts < start - max_gap || ts > end + max_gap {
            continue;
        }
        let power = parse_power(DictRows::cell(row, pi));
        let gpu = py_strip(DictRows::cell(row, gi));
        let Some(power) = power.filter(|p| p.is_finite() && *p >= 0.0) else {
            append_reason(&mut reasons, "invalid_power_sample");
            continue;
        };
        if gpu.is_empty() {
            saw_missing_gpu = true;
            continue;
        }
        raw.push(gpu, ts, power);
    }
    if table.error.is_some() {
        return stop("telemetry_file_unreadable", reasons);
    }
    if saw_missing_gpu {
        append_reason(&mut reasons, "gpu_identity_missing");
    }
    Ingested::Samples(raw, reasons)
}

/// Python `bisect_left` / `bisect_right` over sorted times.
fn bisect(times: &[f64], x: f64, right: bool) -> usize {
    times.partition_point(|t| if right { *t <= x } else { *t < x })
}

/// `_interpolate_power`: the power at `t`, linear between the samples that bracket it.
fn interpolate(samples: &[(f64, f64)], times: &[f64], t: f64) -> f64 {
    let right = bisect(times, t, false);
    if right < samples.len() && (samples[right].0 == t || (samples[right].0 - t).abs() <= 1e-9) {
        return samples[right].1;
    }
    let (lt, lp) = samples[right - 1];
    let (rt, rp) = samples[right];
    let fraction = (t - lt) / (rt - lt);
    lp + fraction * (rp - lp)
}

/// `_integrate_device`: trapezoids over the samples inside the window plus the interpolated
/// edge values, J.
fn integrate_device(samples: &[(f64, f64)], start: f64, end: f64) -> f64 {
    let times: Vec<f64> = samples.iter().map(|s| s.0).collect();
    let mut clipped = vec![(start, interpolate(samples, &times, start))];
    clipped.extend(samples.iter().filter(|(t, _)| start < *t && *t < end));
    clipped.push((end, interpolate(samples, &times, end)));
    let mut energy = 0.0;
    for w in clipped.windows(2) {
        let ((lt, lp), (rt, rp)) = (w[0], w[1]);
        energy += (rt - lt) * (lp + rp) / 2.0;
    }
    energy
}

/// The second half of `integrate_power`: per-GPU validation and energy from grouped samples
/// (`reasons`: those found while reading them).
pub fn integrate_samples(
    raw: RawSamples,
    mut reasons: Vec<String>,
    start: f64,
    end: f64,
    expected_num_gpus: Option<i64>,
    max_gap: f64,
) -> PowerIntegration {
    if raw.is_empty() {
        append_reason(&mut reasons, "no_usable_power_samples");
        return PowerIntegration::empty(expected_num_gpus, reasons);
    }
    let mut gpus = raw.gpus;
    gpus.sort_by(|a, b| gpu_order(&a.0, &b.0));
    if expected_num_gpus.is_some_and(|n| n > 0 && gpus.len() as i64 != n) {
        append_reason(&mut reasons, "expected_gpu_count_mismatch");
    }
    let mut out = PowerIntegration {
        expected_num_gpus,
        observed_gpu_ids: gpus.iter().map(|g| g.0.clone()).collect(),
        ..PowerIntegration::default()
    };
    for (id, by_time) in gpus {
        let mut samples: Vec<(f64, f64)> = by_time.iter().map(|(t, v)| (*t, py_mean(v))).collect();
        samples.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        out.per_gpu_sample_counts
            .push((id.clone(), samples.len() as u64));
        let mut issues: Vec<String> = Vec::new();
        if samples.len() < 2 {
            issues.push("insufficient_power_samples".into());
        } else if samples[0].0 > start || samples[samples.len() - 1].0 < end {
            issues.push("benchmark_window_not_bracketed".into());
        } else {
            let times: Vec<f64> = samples.iter().map(|s| s.0).collect();
            let left = bisect(&times, start, true) - 1;
            let right = bisect(&times, end, false);
            let relevant = &samples[left..=right];
            let max = relevant
                .windows(2)
                .map(|w| w[1].0 - w[0].0)
                .fold(None, |m: Option<f64>, g| match m {
                    Some(m) if m >= g => Some(m),
                    _ => Some(g),
                })
                .unwrap_or(0.0);
            out.per_gpu_max_sample_gap_s.push((id.clone(), max));
            if max > max_gap {
                issues.push("sampling_gap_exceeded".into());
            }
            out.per_gpu_energy_j
                .push((id.clone(), integrate_device(&samples, start, end)));
        }
        for issue in &issues {
            append_reason(&mut reasons, issue);
        }
        if !issues.is_empty() {
            out.device_issues.push((id, issues));
        }
    }
    if out.per_gpu_energy_j.len() == out.observed_gpu_ids.len() {
        let total = out.per_gpu_energy_j.iter().fold(0.0, |a, (_, e)| a + e);
        let avg_total = total / (end - start);
        out.total_gpu_energy_j = Some(total);
        out.avg_total_gpu_power_w = Some(avg_total);
        out.avg_power_w = Some(avg_total / out.observed_gpu_ids.len() as f64);
    }
    out.power_valid = reasons.is_empty();
    out.invalid_reasons = reasons;
    out
}

/// `Path.stem`.
fn stem(name: &str) -> &str {
    match name.rfind('.') {
        Some(i) if i > 0 && i < name.len() - 1 => &name[..i],
        _ => name,
    }
}

/// The accumulator snapshot paths next to `csv`: `<stem>_energy_start.csv`,
/// `<stem>_energy_end.csv`.
pub fn snapshot_paths(csv: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let name = csv.file_name().map(|n| n.to_string_lossy().into_owned());
    let s = stem(name.as_deref().unwrap_or("")).to_string();
    (
        csv.with_file_name(format!("{s}_energy_start.csv")),
        csv.with_file_name(format!("{s}_energy_end.csv")),
    )
}

/// An I/O or CSV failure inside the cross-check (Python: `cross_check_error`).
struct CheckError;

/// `_read_energy_snapshot`: GPU id → accumulator J (`amd-smi metric -E --csv`).
fn read_energy_snapshot(path: &Path) -> Result<Option<Vec<(String, f64)>>, CheckError> {
    let bytes = std::fs::read(path).map_err(|_| CheckError)?;
    let table = DictRows::parse(&bytes);
    if table.error_in_header {
        return Err(CheckError);
    }
    let (Some(gi), Some(ei)) = (
        table.column("gpu"),
        table.column("total_energy_consumption"),
    ) else {
        return Ok(None);
    };
    let mut out: Vec<(String, f64)> = Vec::new();
    for row in &table.rows {
        let gpu = py_strip(DictRows::cell(row, gi));
        if gpu.is_empty() {
            continue;
        }
        let cell = py_strip(DictRows::cell(row, ei)).to_string();
        let Ok(e) = py_float_value(&Value::String(cell)) else {
            continue;
        };
        if e.is_finite() {
            match out.iter_mut().find(|(g, _)| g == gpu) {
                Some(slot) => slot.1 = e,
                None => out.push((gpu.to_string(), e)),
            }
        }
    }
    if table.error.is_some() {
        return Err(CheckError);
    }
    Ok((!out.is_empty()).then_some(out))
}

/// `_stream_samples_by_gpu`: every parseable (t, W) sample per GPU, sorted.
fn stream_samples(csv: &Path) -> Result<Vec<(String, Vec<(f64, f64)>)>, CheckError> {
    let bytes = std::fs::read(csv).map_err(|_| CheckError)?;
    let table = DictRows::parse(&bytes);
    if table.error_in_header {
        return Err(CheckError);
    }
    let (Some(t), Some(p), Some(g)) = detect_columns(&table.header) else {
        return Ok(Vec::new());
    };
    let (ti, pi, gi) = (
        table.column(t).expect("detected"),
        table.column(p).expect("detected"),
        table.column(g).expect("detected"),
    );
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for row in &table.rows {
        let ts = parse_timestamp(DictRows::cell(row, ti));
        let pw = parse_power(DictRows::cell(row, pi));
        let gpu = py_strip(DictRows::cell(row, gi));
        let (Some(ts), Some(pw)) = (ts, pw) else {
            continue;
        };
        if gpu.is_empty() || !ts.is_finite() || !pw.is_finite() {
            continue;
        }
        match out.iter_mut().find(|(id, _)| id == gpu) {
            Some(slot) => slot.1.push((ts, pw)),
            None => out.push((gpu.to_string(), vec![(ts, pw)])),
        }
    }
    if table.error.is_some() {
        return Err(CheckError);
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    }
    Ok(out)
}

/// `_trapezoid`: the integral of consecutive samples, J.
fn trapezoid(samples: &[(f64, f64)]) -> f64 {
    samples
        .windows(2)
        .fold(0.0, |a, w| a + (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
}

fn unavailable(reason: &str) -> Value {
    json!({"available": false, "reason": reason})
}

/// `cross_check_accumulator` (with `run`'s error handling): the hardware energy-accumulator
/// delta between the `<stem>_energy_start.csv` / `_end.csv` snapshots against the trapezoid
/// integral of the whole stream. `None` when neither snapshot exists. Advisory: never changes
/// validity.
pub fn cross_check_accumulator(csv: &Path) -> Option<Value> {
    let (start_path, end_path) = snapshot_paths(csv);
    match (start_path.is_file(), end_path.is_file()) {
        (false, false) => return None,
        (false, true) => return Some(unavailable("missing_start_snapshot")),
        (true, false) => return Some(unavailable("missing_end_snapshot")),
        (true, true) => {}
    }
    Some(check(csv, &start_path, &end_path).unwrap_or_else(|_| unavailable("cross_check_error")))
}

fn check(csv: &Path, start_path: &Path, end_path: &Path) -> Result<Value, CheckError> {
    let Some(start) = read_energy_snapshot(start_path)? else {
        return Ok(unavailable("unparseable_start_snapshot"));
    };
    let Some(end) = read_energy_snapshot(end_path)? else {
        return Ok(unavailable("unparseable_end_snapshot"));
    };
    let get = |v: &[(String, f64)], id: &str| v.iter().find(|(g, _)| g == id).map(|(_, e)| *e);
    let sorted = |mut ids: Vec<String>| {
        ids.sort_by(|a, b| gpu_order(a, b));
        ids
    };
    let matched = sorted(
        start
            .iter()
            .filter(|(g, _)| get(&end, g).is_some())
            .map(|(g, _)| g.clone())
            .collect(),
    );
    let deltas: Vec<(String, f64)> = matched
        .iter()
        .map(|g| (g.clone(), get(&end, g).unwrap() - get(&start, g).unwrap()))
        .collect();
    let unmatched = sorted(
        start
            .iter()
            .filter(|(g, _)| get(&end, g).is_none())
            .chain(end.iter().filter(|(g, _)| get(&start, g).is_none()))
            .map(|(g, _)| g.clone())
            .collect(),
    );
    let negative: Vec<&String> = deltas
        .iter()
        .filter(|(_, d)| *d < 0.0)
        .map(|(g, _)| g)
        .collect();
    let stream = stream_samples(csv)?;
    let integrated_ids = sorted(
        stream
            .iter()
            .filter(|(g, _)| deltas.iter().any(|(d, _)| d == g))
            .map(|(g, _)| g.clone())
            .collect(),
    );
    let series = |id: &str| &stream.iter().find(|(g, _)| g == id).unwrap().1;
    let integrated = integrated_ids
        .iter()
        .fold(0.0, |a, id| a + trapezoid(series(id)));
    let bounds: Vec<f64> = integrated_ids
        .iter()
        .flat_map(|id| {
            let s = series(id);
            [s[0].0, s[s.len() - 1].0]
        })
        .collect();
    let span = if bounds.is_empty() {
        0.0
    } else {
        let max = bounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = bounds.iter().copied().fold(f64::INFINITY, f64::min);
        max - min
    };
    let delta = deltas.iter().fold(0.0, |a, (_, d)| a + d);
    let (relative, within) = if delta > 0.0 {
        let r = (delta - integrated).abs() / delta;
        (json!(r), negative.is_empty() && r <= ACCUMULATOR_TOLERANCE)
    } else {
        (Value::Null, false)
    };
    let mut m = Map::new();
    m.insert("available".into(), json!(true));
    m.insert("accumulator_delta_j".into(), json!(delta));
    m.insert("integrated_stream_j".into(), json!(integrated));
    m.insert("relative_error".into(), relative);
    m.insert("within_tolerance".into(), json!(within));
    m.insert("tolerance".into(), json!(ACCUMULATOR_TOLERANCE));
    m.insert(
        "per_gpu_delta_j".into(),
        Value::Object(deltas.iter().map(|(g, d)| (g.clone(), json!(d))).collect()),
    );
    m.insert("integrated_gpu_ids".into(), json!(integrated_ids));
    m.insert("unmatched_gpus".into(), json!(unmatched));
    m.insert("negative_delta_gpus".into(), json!(negative));
    m.insert("stream_span_s".into(), json!(span));
    Ok(Value::Object(m))
}
