//! Energy of a point from servebench's own power samples (NVML, ≥ 10 Hz) — the same method as
//! `aggregate_power.py` (per-GPU trapezoid rule over `[benchmark_start_time_unix,
//! benchmark_end_time_unix]`, linear interpolation at the edges, max sample gap 3 s, GPU-count
//! check; [`super::integrate::integrate_samples`]) — plus a cross-check against NVML's
//! cumulative energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since the driver
//! loaded), the counterpart of InferenceX's amd-smi accumulator check: advisory, it never
//! changes validity, and its numbers go into the point's `power_validation.json`.
//!
//! Counter edge cases: a reading lower than the one before is taken as a 64-bit wrap when the
//! wrapped step is a plausible energy (≤ [`MAX_PLAUSIBLE_W`] × the step's seconds), else as a
//! counter reset (driver reload): the check then says `energy_counter_reset` and gives no
//! number. GPUs whose counter is unsupported are left out of the check and named.

use serde_json::{json, Map, Value};
use servebench_contracts::{PowerFields, PowerMetrics, PowerSource};

use super::aggregate::{BenchmarkData, PowerVerdict, INTEGRATION_METHOD};
use super::integrate::{append_reason, integrate_samples, RawSamples, MAX_SAMPLE_GAP_S};
use crate::inferencex::pyjson::py_round;

/// Upper bound of one GPU's board power used to tell a counter wrap from a reset, W (no GPU
/// board draws 5 kW; the largest today are ~1.4 kW).
pub const MAX_PLAUSIBLE_W: f64 = 5000.0;

/// Relative tolerance of the counter cross-check (the acceptance bound, 3 %).
pub const COUNTER_TOLERANCE: f64 = 0.03;

/// One reading of one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    /// GPU id as InferenceX's CSV names it (the NVML index, `"0"`).
    pub gpu: String,
    /// When it was read, Unix s.
    pub t_unix: f64,
    /// Board power, W (`nvmlDeviceGetPowerUsage` mW / 1000).
    pub watts: f64,
    /// The cumulative energy counter, mJ; `None` where the GPU does not support it.
    pub energy_mj: Option<u64>,
}

/// What a point's samples gave: the agg row's block and the sidecar object.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledEnergy {
    /// The agg row's power keys.
    pub fields: PowerFields,
    /// `power_validation.json`: InferenceX's sidecar keys, the counter check under
    /// `accumulator_check`.
    pub sidecar: Value,
    /// Energy of all GPUs over the window by the counter, J (`None`: no usable counter).
    pub counter_energy_j: Option<f64>,
}

/// The counts of the window's reasons as `_load_benchmark_data` gives them: a zero count is
/// `invalid_{successful_query,input_token,output_token}_count`.
pub fn count_reasons(b: &BenchmarkData) -> Vec<String> {
    let mut r = Vec::new();
    for (n, reason) in [
        (b.completed, "invalid_successful_query_count"),
        (b.total_input_tokens, "invalid_input_token_count"),
        (b.total_output_tokens, "invalid_output_token_count"),
    ] {
        if n == 0 {
            append_reason(&mut r, reason);
        }
    }
    r
}

/// One counter step in mJ: `b − a`, across a 64-bit wrap when plausible for `dt_s` seconds;
/// `None` for a reset.
pub fn counter_step(a: u64, b: u64, dt_s: f64) -> Option<u64> {
    let step = b.wrapping_sub(a);
    let ceiling = MAX_PLAUSIBLE_W * dt_s.max(0.0) * 1000.0 + 1000.0;
    (b >= a || (step as f64) <= ceiling).then_some(step)
}

/// One GPU's counter energy over `[start, end]`, J: the counter made cumulative from its first
/// reading (wraps unwrapped) and interpolated linearly at the edges, as the power is.
/// `Err(reason)` when it cannot be read: fewer than 2 readings, the window not bracketed, or a
/// reset.
pub fn counter_energy(readings: &[(f64, u64)], start: f64, end: f64) -> Result<f64, &'static str> {
    if readings.len() < 2 {
        return Err("insufficient_counter_samples");
    }
    let mut cum = Vec::with_capacity(readings.len());
    cum.push((readings[0].0, 0.0));
    for w in readings.windows(2) {
        let step = counter_step(w[0].1, w[1].1, w[1].0 - w[0].0).ok_or("energy_counter_reset")?;
        let last = cum.last().expect("seeded").1;
        cum.push((w[1].0, last + step as f64 / 1000.0));
    }
    let at = |t: f64| -> Option<f64> {
        let i = cum.iter().position(|(x, _)| *x >= t)?;
        if cum[i].0 == t {
            return Some(cum[i].1);
        }
        if i == 0 {
            return None;
        }
        let (t0, e0) = cum[i - 1];
        let (t1, e1) = cum[i];
        Some(e0 + (e1 - e0) * (t - t0) / (t1 - t0))
    };
    match (at(start), at(end)) {
        (Some(a), Some(b)) => Ok(b - a),
        _ => Err("counter_window_not_bracketed"),
    }
}

/// The point's energy from its readings over the benchmark window `b`, for `expected_gpus`
/// GPUs (TP × PP × PCP). `notes`: reasons found while sampling (read errors), added to the
/// integration's.
pub fn energy_from_readings(
    readings: &[GpuReading],
    notes: &[String],
    b: &BenchmarkData,
    expected_gpus: i64,
) -> SampledEnergy {
    let mut raw = RawSamples::default();
    for r in readings
        .iter()
        .filter(|r| r.watts.is_finite() && r.watts >= 0.0)
    {
        raw.push(&r.gpu, r.t_unix, r.watts);
    }
    let bench_reasons = count_reasons(b);
    let integration = integrate_samples(
        raw,
        notes.to_vec(),
        b.start,
        b.end,
        Some(expected_gpus),
        MAX_SAMPLE_GAP_S,
    );
    let integrated_total = integration.total_gpu_energy_j;
    let verdict = PowerVerdict::new(Some(b.clone()), bench_reasons, integration);
    let (check, counter_energy_j) = counter_check(readings, b, integrated_total);
    let metrics = if verdict.power_valid {
        rounded(&verdict.metrics)
    } else {
        None
    };
    let fields = PowerFields {
        source: PowerSource::Nvml,
        valid: metrics.is_some(),
        metrics,
        invalid_reasons: if verdict.power_valid {
            Vec::new()
        } else {
            verdict.reasons.clone()
        },
    };
    let mut side = verdict.sidecar("nvml", "result.json", Some(check));
    side.insert("sample_source".into(), json!("nvml"));
    SampledEnergy {
        fields,
        sidecar: Value::Object(side),
        counter_energy_j,
    }
}

/// The point's energy from a telemetry CSV (`--power-telemetry`: nvidia-smi / amd-smi as
/// InferenceX's monitor writes it) over the window `b`: `integrate_power` and InferenceX's
/// amd-smi accumulator check, as `aggregate_power.py` does, without touching any file.
pub fn telemetry_energy(
    csv: &std::path::Path,
    b: &BenchmarkData,
    expected_gpus: i64,
) -> SampledEnergy {
    let integration = super::integrate::integrate_power(
        csv,
        b.start,
        b.end,
        Some(expected_gpus),
        MAX_SAMPLE_GAP_S,
    );
    let verdict = PowerVerdict::new(Some(b.clone()), count_reasons(b), integration);
    let metrics = if verdict.power_valid {
        rounded(&verdict.metrics)
    } else {
        None
    };
    let accumulator = super::integrate::cross_check_accumulator(csv);
    let side = verdict.sidecar(&csv.display().to_string(), "result.json", accumulator);
    SampledEnergy {
        fields: PowerFields {
            source: PowerSource::Telemetry,
            valid: metrics.is_some(),
            metrics,
            invalid_reasons: if verdict.power_valid {
                Vec::new()
            } else {
                verdict.reasons.clone()
            },
        },
        sidecar: Value::Object(side),
        counter_energy_j: None,
    }
}

/// A simulated point's modelled energy: `energy_j` (modelled J of all GPUs) over
/// `modelled_s` modelled seconds, normalised by the window's counts `b` like a measurement
/// (`avg_power_w` per GPU of `gpus`, `joules_per_*`), rounded as InferenceX rounds; marked
/// [`PowerSource::Modelled`], never `power_valid`.
pub fn modelled_energy(
    energy_j: f64,
    modelled_s: f64,
    b: &BenchmarkData,
    gpus: i64,
) -> PowerFields {
    let mut reasons = count_reasons(b);
    if !(modelled_s > 0.0 && energy_j >= 0.0) {
        append_reason(&mut reasons, "invalid_benchmark_window");
    }
    let metrics = if reasons.is_empty() {
        let total = (b.total_input_tokens + b.total_output_tokens) as f64;
        let avg_total = energy_j / modelled_s;
        rounded(&[
            ("avg_power_w", avg_total / gpus.max(1) as f64),
            ("avg_total_gpu_power_w", avg_total),
            ("total_gpu_energy_j", energy_j),
            ("joules_per_successful_query", energy_j / b.completed as f64),
            (
                "joules_per_input_token",
                energy_j / b.total_input_tokens as f64,
            ),
            (
                "joules_per_output_token",
                energy_j / b.total_output_tokens as f64,
            ),
            ("joules_per_total_token", energy_j / total),
        ])
    } else {
        None
    };
    PowerFields {
        source: PowerSource::Modelled,
        valid: false,
        metrics,
        invalid_reasons: reasons,
    }
}

/// The verdict's metrics rounded as `_patch_power_result` rounds them; `None` if one is not
/// finite.
pub fn rounded(metrics: &[(&'static str, f64)]) -> Option<PowerMetrics> {
    let get = |k: &str| -> Option<f64> {
        let v = metrics.iter().find(|(n, _)| *n == k)?.1;
        let digits = if k.ends_with("_w") || k.ends_with("_j") {
            3
        } else {
            6
        };
        v.is_finite().then(|| py_round(v, digits))
    };
    Some(PowerMetrics {
        avg_power_w: get("avg_power_w")?,
        avg_total_gpu_power_w: get("avg_total_gpu_power_w")?,
        total_gpu_energy_j: get("total_gpu_energy_j")?,
        joules_per_successful_query: get("joules_per_successful_query")?,
        joules_per_input_token: get("joules_per_input_token")?,
        joules_per_output_token: get("joules_per_output_token")?,
        joules_per_total_token: get("joules_per_total_token")?,
    })
}

/// The counter cross-check object and the counter's total, J.
fn counter_check(
    readings: &[GpuReading],
    b: &BenchmarkData,
    integrated: Option<f64>,
) -> (Value, Option<f64>) {
    let mut per_gpu: Vec<(String, Vec<(f64, u64)>)> = Vec::new();
    let mut unsupported: Vec<String> = Vec::new();
    for r in readings {
        match r.energy_mj {
            Some(e) => match per_gpu.iter_mut().find(|(g, _)| *g == r.gpu) {
                Some((_, v)) => v.push((r.t_unix, e)),
                None => per_gpu.push((r.gpu.clone(), vec![(r.t_unix, e)])),
            },
            None => {
                if !unsupported.contains(&r.gpu) {
                    unsupported.push(r.gpu.clone());
                }
            }
        }
    }
    per_gpu.sort_by(|a, b| super::parse::gpu_order(&a.0, &b.0));
    let mut energies = Map::new();
    let mut failures = Map::new();
    let mut total = 0.0;
    for (gpu, mut v) in per_gpu {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        match counter_energy(&v, b.start, b.end) {
            Ok(e) => {
                total += e;
                energies.insert(gpu, json!(e));
            }
            Err(reason) => {
                failures.insert(gpu, json!(reason));
            }
        }
    }
    let counter =
        (!energies.is_empty() && failures.is_empty() && unsupported.is_empty()).then_some(total);
    let rel = match (counter, integrated) {
        (Some(c), Some(i)) if c > 0.0 => Some((i - c).abs() / c),
        _ => None,
    };
    let check = json!({
        "source": "nvml_total_energy_consumption",
        "method": INTEGRATION_METHOD,
        "per_gpu_counter_energy_j": energies,
        "counter_failures": failures,
        "counter_unsupported_gpus": unsupported,
        "counter_energy_j": counter,
        "integrated_energy_j": integrated,
        "relative_difference": rel,
        "tolerance": COUNTER_TOLERANCE,
        "within_tolerance": rel.map(|r| r <= COUNTER_TOLERANCE),
    });
    (check, counter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(start: f64, end: f64) -> BenchmarkData {
        BenchmarkData {
            start,
            end,
            duration: end - start,
            completed: 10,
            total_input_tokens: 10_240,
            total_output_tokens: 1_280,
        }
    }

    /// `gpus` GPUs at constant `w` watts, read every `period` s over [t0, t1], counter exact.
    fn steady(gpus: u32, w: f64, t0: f64, t1: f64, period: f64) -> Vec<GpuReading> {
        let mut out = Vec::new();
        let n = ((t1 - t0) / period).round() as u64;
        for g in 0..gpus {
            for i in 0..=n {
                let t = t0 + i as f64 * period;
                out.push(GpuReading {
                    gpu: g.to_string(),
                    t_unix: t,
                    watts: w,
                    energy_mj: Some(1_000_000 + ((t - t0) * w * 1000.0).round() as u64),
                });
            }
        }
        out
    }

    #[test]
    fn constant_power_integrates_exactly_and_matches_the_counter() {
        let r = steady(2, 300.0, 1000.0, 1012.0, 0.1);
        let e = energy_from_readings(&r, &[], &bench(1001.05, 1011.05), 2);
        assert!(e.fields.valid, "{:?}", e.fields.invalid_reasons);
        let m = e.fields.metrics.unwrap();
        // 2 GPUs × 300 W × 10 s = 6000 J; per output token 6000 / 1280
        assert_eq!(m.total_gpu_energy_j, 6000.0);
        assert_eq!(m.avg_power_w, 300.0);
        assert_eq!(m.avg_total_gpu_power_w, 600.0);
        assert_eq!(m.joules_per_output_token, py_round(6000.0 / 1280.0, 6));
        assert_eq!(m.joules_per_total_token, py_round(6000.0 / 11_520.0, 6));
        let c = e.counter_energy_j.unwrap();
        assert!((c - 6000.0).abs() < 1e-6, "{c}");
        assert_eq!(
            e.sidecar["accumulator_check"]["within_tolerance"],
            json!(true)
        );
    }

    #[test]
    fn a_ramp_is_integrated_with_trapezoids_and_interpolated_edges() {
        // P(t) = 100 + 10 (t − 1000) W, sampled each second; window [1000.5, 1003.5]:
        // ∫ = 100·3 + 5·(3.5² − 0.5²) = 360 J
        let r: Vec<GpuReading> = (0..5)
            .map(|i| GpuReading {
                gpu: "0".into(),
                t_unix: 1000.0 + f64::from(i),
                watts: 100.0 + 10.0 * f64::from(i),
                energy_mj: None,
            })
            .collect();
        let e = energy_from_readings(&r, &[], &bench(1000.5, 1003.5), 1);
        assert!(e.fields.valid);
        assert_eq!(e.fields.metrics.unwrap().total_gpu_energy_j, 360.0);
        assert_eq!(e.counter_energy_j, None, "no counter: no check number");
        assert_eq!(
            e.sidecar["accumulator_check"]["counter_unsupported_gpus"],
            json!(["0"])
        );
    }

    #[test]
    fn a_gap_over_3_s_invalidates_and_writes_no_numbers() {
        let mut r = steady(1, 200.0, 1000.0, 1010.0, 0.1);
        r.retain(|x| !(1003.0..1007.0).contains(&x.t_unix));
        let e = energy_from_readings(&r, &[], &bench(1001.0, 1009.0), 1);
        assert!(!e.fields.valid);
        assert_eq!(e.fields.metrics, None, "invalid: no numbers, never zeros");
        assert_eq!(e.fields.invalid_reasons, vec!["sampling_gap_exceeded"]);
    }

    #[test]
    fn the_window_must_be_bracketed_and_the_gpu_count_must_match() {
        let r = steady(1, 200.0, 1000.0, 1005.0, 0.1);
        let e = energy_from_readings(&r, &[], &bench(1001.0, 1006.0), 1);
        assert_eq!(
            e.fields.invalid_reasons,
            vec!["benchmark_window_not_bracketed"]
        );
        let e = energy_from_readings(&r, &[], &bench(1001.0, 1004.0), 2);
        assert_eq!(
            e.fields.invalid_reasons,
            vec!["expected_gpu_count_mismatch"]
        );
        let e = energy_from_readings(&[], &["telemetry_missing: x".into()], &bench(1.0, 2.0), 1);
        assert_eq!(
            e.fields.invalid_reasons,
            vec!["telemetry_missing: x", "no_usable_power_samples"]
        );
    }

    #[test]
    fn counter_wraps_are_unwrapped_and_resets_are_refused() {
        // 300 W for 1 s across the 64-bit boundary: 300,000 mJ
        let a = u64::MAX - 100_000;
        assert_eq!(counter_step(a, 199_999, 1.0), Some(300_000));
        assert_eq!(
            counter_energy(&[(0.0, a), (1.0, 199_999), (2.0, 499_999)], 0.5, 1.5),
            Ok(300.0)
        );
        // a driver reload: the counter starts again near 0
        assert_eq!(counter_step(9_000_000_000, 5_000, 0.1), None);
        assert_eq!(
            counter_energy(&[(0.0, 9_000_000_000), (0.1, 5_000)], 0.0, 0.1),
            Err("energy_counter_reset")
        );
        assert_eq!(
            counter_energy(&[(0.0, 0), (1.0, 10)], 0.5, 2.0),
            Err("counter_window_not_bracketed")
        );
        let mut r = steady(1, 250.0, 0.0, 4.0, 0.5);
        r[4].energy_mj = Some(3);
        let e = energy_from_readings(&r, &[], &bench(1.0, 3.0), 1);
        assert!(e.fields.valid, "the counter is advisory");
        assert_eq!(e.counter_energy_j, None);
        assert_eq!(
            e.sidecar["accumulator_check"]["counter_failures"]["0"],
            json!("energy_counter_reset")
        );
    }

    #[test]
    fn a_telemetry_csv_is_integrated_like_aggregate_power() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("gpu_metrics.csv");
        // nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv, one row a second
        let mut text = String::from("timestamp, index, power.draw [W]\n");
        for i in 0..8 {
            text.push_str(&format!("2026/12/03 12:00:0{i}.000, 0, 250.00 W\n"));
        }
        std::fs::write(&csv, text).unwrap();
        let t0 = super::super::parse::parse_timestamp("2026/12/03 12:00:00.000").unwrap();
        let e = telemetry_energy(&csv, &bench(t0 + 1.5, t0 + 5.5), 1);
        assert!(e.fields.valid, "{:?}", e.fields.invalid_reasons);
        assert_eq!(e.fields.source, PowerSource::Telemetry);
        assert_eq!(e.fields.metrics.unwrap().total_gpu_energy_j, 1000.0);
        let e = telemetry_energy(&dir.path().join("absent.csv"), &bench(t0, t0 + 1.0), 1);
        assert_eq!(e.fields.invalid_reasons, vec!["telemetry_file_missing"]);
    }

    #[test]
    fn modelled_energy_is_normalised_like_a_measurement_and_never_valid() {
        // 2 GPUs, 6000 J over 10 modelled s
        let f = modelled_energy(6000.0, 10.0, &bench(0.0, 1.0), 2);
        assert_eq!(f.source, PowerSource::Modelled);
        assert!(!f.valid && f.invalid_reasons.is_empty());
        let m = f.metrics.unwrap();
        assert_eq!((m.avg_power_w, m.avg_total_gpu_power_w), (300.0, 600.0));
        assert_eq!(m.joules_per_output_token, py_round(6000.0 / 1280.0, 6));
        assert_eq!(m.joules_per_successful_query, 600.0);
        let mut b = bench(0.0, 1.0);
        b.total_output_tokens = 0;
        let f = modelled_energy(6000.0, 10.0, &b, 2);
        assert_eq!(
            (f.metrics, f.invalid_reasons),
            (None, vec!["invalid_output_token_count".to_string()])
        );
    }

    #[test]
    fn zero_output_tokens_invalidate_like_the_reference() {
        let r = steady(1, 200.0, 0.0, 4.0, 0.1);
        let mut b = bench(1.0, 3.0);
        b.total_output_tokens = 0;
        let e = energy_from_readings(&r, &[], &b, 1);
        assert_eq!(e.fields.invalid_reasons, vec!["invalid_output_token_count"]);
        assert_eq!(e.fields.metrics, None);
    }
}
