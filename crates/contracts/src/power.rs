//! [`PowerFields`]: a point's GPU energy as its agg row carries it — InferenceX's power keys
//! (`power_metric_schema_version` 2, `power_valid` 1/0 and, when there are numbers,
//! `avg_power_w`, `avg_total_gpu_power_w`, `total_gpu_energy_j`, `joules_per_*`;
//! MEASUREMENT.md Part 2 §2.5) followed by servebench's `power_source` (where the numbers come
//! from) and `power_invalid_reasons` (why there are none, or why they are not valid).
//!
//! `power_valid` keeps InferenceX's meaning, *measured and validated*: a modelled point
//! (the simulator) writes its numbers with `power_valid: 0` and `power_source: "modelled"`,
//! so no reader that trusts `power_valid` takes a model for a measurement; a point where no
//! telemetry could be read writes `power_valid: 0`, no numbers (never zeros) and its reason
//! (`telemetry_missing: …`).

use serde_json::{json, Map, Value};

/// InferenceX `POWER_METRIC_SCHEMA_VERSION`.
pub const POWER_METRIC_SCHEMA_VERSION: i64 = 2;

/// Where a point's energy numbers come from (`power_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PowerSource {
    /// Board power sampled through NVML during the point (≥ 10 Hz), trapezoid-integrated over
    /// the benchmark window; cross-checked against NVML's total-energy counter.
    Nvml,
    /// An nvidia-smi / amd-smi telemetry CSV as InferenceX's monitor writes it
    /// (`--power-telemetry`), integrated by `aggregate_power.py`'s method.
    Telemetry,
    /// The simulator's power model (idle + utilisation-scaled dynamic power of its GPU SKU):
    /// not a measurement.
    Modelled,
    /// Nothing was measured (`power_invalid_reasons` says why).
    None,
}

impl PowerSource {
    /// The `power_source` string: `nvml`, `telemetry`, `modelled`, `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            PowerSource::Nvml => "nvml",
            PowerSource::Telemetry => "telemetry",
            PowerSource::Modelled => "modelled",
            PowerSource::None => "none",
        }
    }

    /// Parses [`PowerSource::as_str`].
    pub fn parse(s: &str) -> Option<PowerSource> {
        Some(match s {
            "nvml" => PowerSource::Nvml,
            "telemetry" => PowerSource::Telemetry,
            "modelled" => PowerSource::Modelled,
            "none" => PowerSource::None,
            _ => return None,
        })
    }

    /// Measured (NVML or a telemetry file), as opposed to modelled or absent.
    pub fn is_measured(self) -> bool {
        matches!(self, PowerSource::Nvml | PowerSource::Telemetry)
    }
}

/// The energy numbers of a point (InferenceX `_POWER_METRIC_KEYS`), rounded as InferenceX
/// rounds them (3 digits for `_w`/`_j` keys, 6 for the per-unit ones).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PowerMetrics {
    /// Mean board power per GPU over the benchmark window, W.
    pub avg_power_w: f64,
    /// Mean summed power of all GPUs over the window, W.
    pub avg_total_gpu_power_w: f64,
    /// Energy of all GPUs over the window, J.
    pub total_gpu_energy_j: f64,
    /// `total_gpu_energy_j / completed`, J per successful request.
    pub joules_per_successful_query: f64,
    /// `total_gpu_energy_j / total_input_tokens`, J/token.
    pub joules_per_input_token: f64,
    /// `total_gpu_energy_j / total_output_tokens`, J/token.
    pub joules_per_output_token: f64,
    /// `total_gpu_energy_j / (input + output tokens)`, J/token.
    pub joules_per_total_token: f64,
}

impl PowerMetrics {
    /// The InferenceX keys and values, in the order InferenceX writes them.
    pub fn pairs(&self) -> [(&'static str, f64); 7] {
        [
            ("avg_power_w", self.avg_power_w),
            ("avg_total_gpu_power_w", self.avg_total_gpu_power_w),
            ("total_gpu_energy_j", self.total_gpu_energy_j),
            (
                "joules_per_successful_query",
                self.joules_per_successful_query,
            ),
            ("joules_per_input_token", self.joules_per_input_token),
            ("joules_per_output_token", self.joules_per_output_token),
            ("joules_per_total_token", self.joules_per_total_token),
        ]
    }
}

/// Every key [`PowerFields`] may write, in order.
pub const POWER_KEYS: [&str; 11] = [
    "power_metric_schema_version",
    "power_valid",
    "avg_power_w",
    "avg_total_gpu_power_w",
    "total_gpu_energy_j",
    "joules_per_successful_query",
    "joules_per_input_token",
    "joules_per_output_token",
    "joules_per_total_token",
    "power_source",
    "power_invalid_reasons",
];

/// A point's energy block of the agg row (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct PowerFields {
    /// Where the numbers come from.
    pub source: PowerSource,
    /// Measured and validated (InferenceX `power_valid`); always false for
    /// [`PowerSource::Modelled`] and [`PowerSource::None`].
    pub valid: bool,
    /// The numbers: present when valid, or modelled; `None` otherwise (never zeros).
    pub metrics: Option<PowerMetrics>,
    /// Why not valid (reason codes, e.g. `telemetry_missing: libnvidia-ml.so not found`,
    /// `sampling_gap_exceeded`); empty when valid or modelled.
    pub invalid_reasons: Vec<String>,
}

impl PowerFields {
    /// Nothing measured, for `reason` (`telemetry_missing: …`).
    pub fn missing(reason: impl Into<String>) -> PowerFields {
        PowerFields {
            source: PowerSource::None,
            valid: false,
            metrics: None,
            invalid_reasons: vec![reason.into()],
        }
    }

    /// The numbers when they may be shown: measured and valid, or modelled.
    pub fn usable(&self) -> Option<&PowerMetrics> {
        match self.source {
            PowerSource::Modelled => self.metrics.as_ref(),
            _ if self.valid => self.metrics.as_ref(),
            _ => None,
        }
    }

    /// Writes the block into `o` (after the keys already there), in [`POWER_KEYS`] order.
    pub fn write(&self, o: &mut Map<String, Value>) {
        o.insert(
            "power_metric_schema_version".into(),
            json!(POWER_METRIC_SCHEMA_VERSION),
        );
        o.insert("power_valid".into(), json!(i64::from(self.valid)));
        if let Some(m) = &self.metrics {
            for (k, v) in m.pairs() {
                o.insert(k.into(), if v.is_finite() { json!(v) } else { Value::Null });
            }
        }
        o.insert("power_source".into(), json!(self.source.as_str()));
        if !self.invalid_reasons.is_empty() {
            o.insert("power_invalid_reasons".into(), json!(self.invalid_reasons));
        }
    }

    /// Reads the block back from a row's keys: `None` when the row has no `power_source`
    /// (rows written before servebench measured energy), or when its keys are not what
    /// [`PowerFields::write`] writes.
    pub fn read(m: &Map<String, Value>) -> Option<PowerFields> {
        let source = PowerSource::parse(m.get("power_source")?.as_str()?)?;
        let valid = m.get("power_valid")?.as_i64()? == 1;
        let num = |k: &str| m.get(k).and_then(Value::as_f64);
        let metrics = match num("avg_power_w") {
            Some(avg_power_w) => Some(PowerMetrics {
                avg_power_w,
                avg_total_gpu_power_w: num("avg_total_gpu_power_w")?,
                total_gpu_energy_j: num("total_gpu_energy_j")?,
                joules_per_successful_query: num("joules_per_successful_query")?,
                joules_per_input_token: num("joules_per_input_token")?,
                joules_per_output_token: num("joules_per_output_token")?,
                joules_per_total_token: num("joules_per_total_token")?,
            }),
            None => None,
        };
        let invalid_reasons = match m.get("power_invalid_reasons") {
            None => Vec::new(),
            Some(v) => v
                .as_array()?
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()?,
        };
        Some(PowerFields {
            source,
            valid,
            metrics,
            invalid_reasons,
        })
    }

    /// Schema fragments of the keys (all optional in the agg row).
    pub fn schema_properties() -> Vec<(&'static str, Value)> {
        let per = |d: &str| json!({"type": ["number", "null"], "description": d});
        vec![
            ("power_metric_schema_version", json!({"type": "integer", "const": 2, "description": "InferenceX power schema version; present when servebench measured or modelled energy"})),
            ("power_valid", json!({"enum": [0, 1], "description": "1: measured and validated (InferenceX meaning); 0: not measured, invalid telemetry, or modelled (power_source says which)"})),
            ("avg_power_w", per("mean board power per GPU over the benchmark window, W")),
            ("avg_total_gpu_power_w", per("mean summed power of all GPUs, W")),
            ("total_gpu_energy_j", per("energy of all GPUs over the benchmark window, J (trapezoid rule, linear interpolation at the window edges)")),
            ("joules_per_successful_query", per("total_gpu_energy_j / completed requests")),
            ("joules_per_input_token", per("total_gpu_energy_j / input tokens")),
            ("joules_per_output_token", per("total_gpu_energy_j / output tokens")),
            ("joules_per_total_token", per("total_gpu_energy_j / (input + output tokens)")),
            ("power_source", json!({"enum": ["nvml", "telemetry", "modelled", "none"], "description": "nvml: sampled by servebench; telemetry: an nvidia-smi/amd-smi CSV (--power-telemetry); modelled: the simulator's power model, not a measurement; none: not measured (power_invalid_reasons)"})),
            ("power_invalid_reasons", json!({"type": "array", "items": {"type": "string"}, "description": "why power_valid is 0 for a point that was to be measured (telemetry_missing: …, sampling_gap_exceeded, expected_gpu_count_mismatch, …)"})),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> PowerFields {
        PowerFields {
            source: PowerSource::Nvml,
            valid: true,
            metrics: Some(PowerMetrics {
                avg_power_w: 317.25,
                avg_total_gpu_power_w: 317.25,
                total_gpu_energy_j: 9517.5,
                joules_per_successful_query: 148.711,
                joules_per_input_token: 0.145225,
                joules_per_output_token: 1.161804,
                joules_per_total_token: 0.12909,
            }),
            invalid_reasons: vec![],
        }
    }

    #[test]
    fn blocks_round_trip_through_their_keys() {
        for f in [
            measured(),
            PowerFields::missing("telemetry_missing: libnvidia-ml.so.1 not found"),
            PowerFields {
                source: PowerSource::Modelled,
                valid: false,
                ..measured()
            },
        ] {
            let mut o = Map::new();
            f.write(&mut o);
            assert_eq!(PowerFields::read(&o), Some(f.clone()));
            let keys: Vec<&str> = o.keys().map(String::as_str).collect();
            let order: Vec<&str> = POWER_KEYS
                .iter()
                .copied()
                .filter(|k| keys.contains(k))
                .collect();
            assert_eq!(keys, order, "written in POWER_KEYS order");
        }
    }

    #[test]
    fn a_missing_measurement_writes_no_numbers_and_modelled_is_never_valid() {
        let mut o = Map::new();
        PowerFields::missing("telemetry_missing: no NVIDIA GPU").write(&mut o);
        assert_eq!(o["power_valid"], json!(0));
        assert!(!o.contains_key("joules_per_output_token"));
        assert_eq!(o["power_source"], json!("none"));
        let modelled = PowerFields {
            source: PowerSource::Modelled,
            valid: false,
            ..measured()
        };
        assert!(modelled.usable().is_some());
        let invalid = PowerFields {
            valid: false,
            invalid_reasons: vec!["sampling_gap_exceeded".into()],
            ..measured()
        };
        assert!(
            invalid.usable().is_none(),
            "invalid measurements are not shown"
        );
        assert_eq!(
            PowerFields::read(&Map::new()),
            None,
            "old rows have no block"
        );
    }
}
