//! A point's GPU energy in the store's own columns (issue 30), beside the row it comes from.
//!
//! The row (`row_json`) keeps every power key as the metrics stage wrote it; these columns copy
//! the ones a query needs — `power_source` (`nvml`, `telemetry`, `modelled`, `none`; NULL for an
//! imported row, which does not say), `power_valid` (InferenceX's 1/0: measured *and*
//! validated), `avg_power_w` (W per GPU), `total_gpu_energy_j` (J, all GPUs),
//! `joules_per_output_token` and `joules_per_total_token` (J/token) — so `SELECT … WHERE
//! joules_per_output_token < 2` works on both backends (SQLite `points`, PostgreSQL
//! `servebench_points`; migrations 4 → 5 and 1 → 2 fill them for rows stored before).
//! Numbers are NULL when the row has none (telemetry missing or invalid): never zeros.
//!
//! InferenceX-app's own place for power is `benchmark_results.metrics` (its ETL auto-captures
//! every numeric key; `utils/aggregate_power.py` keeps the aggregate "numeric-only for
//! InferenceX-app's metric auto-capture" and writes the numbers only when `power_valid` is 1).
//! [`inferencex_metrics_filter`] keeps that meaning: a modelled point's numbers (the
//! simulator's power model, `power_valid` 0) stay out of `metrics`, which has no place to mark
//! them modelled; they are in `servebench_points` and its row.

use serde_json::Value;

/// Power keys whose numbers InferenceX writes only for valid telemetry.
pub(crate) const NUMBER_KEYS: [&str; 7] = [
    "avg_power_w",
    "avg_total_gpu_power_w",
    "total_gpu_energy_j",
    "joules_per_successful_query",
    "joules_per_input_token",
    "joules_per_output_token",
    "joules_per_total_token",
];

/// The energy columns of one stored point (module docs); all `None` for a row without power.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EnergyColumns {
    /// `power_source`.
    pub(crate) source: Option<String>,
    /// `power_valid` (1/0).
    pub(crate) valid: Option<i64>,
    /// `avg_power_w`, W per GPU.
    pub(crate) avg_power_w: Option<f64>,
    /// `total_gpu_energy_j`, J.
    pub(crate) total_gpu_energy_j: Option<f64>,
    /// `joules_per_output_token`, J/token.
    pub(crate) joules_per_output_token: Option<f64>,
    /// `joules_per_total_token`, J/token.
    pub(crate) joules_per_total_token: Option<f64>,
}

impl EnergyColumns {
    /// The columns of a row (servebench's or imported: the same keys), from its JSON.
    pub(crate) fn of_row(v: &Value) -> EnergyColumns {
        let num = |k: &str| v.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
        EnergyColumns {
            source: v
                .get("power_source")
                .and_then(Value::as_str)
                .map(str::to_string),
            valid: v.get("power_valid").and_then(|x| {
                x.as_i64()
                    .or_else(|| x.as_bool().map(i64::from))
                    .or_else(|| x.as_f64().map(|f| (f != 0.0) as i64))
            }),
            avg_power_w: num("avg_power_w"),
            total_gpu_energy_j: num("total_gpu_energy_j"),
            joules_per_output_token: num("joules_per_output_token"),
            joules_per_total_token: num("joules_per_total_token"),
        }
    }
}

/// Whether `key` of row `v` stays out of InferenceX's `metrics`: the energy numbers of a row
/// whose `power_source` is `modelled` (module docs).
pub(crate) fn inferencex_metrics_filter(v: &Value, key: &str) -> bool {
    NUMBER_KEYS.contains(&key) && v.get("power_source").and_then(Value::as_str) == Some("modelled")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_copy_the_row_and_leave_absent_numbers_null() {
        let measured = json!({"power_valid": 1, "avg_power_w": 317.25,
            "total_gpu_energy_j": 9517.5, "joules_per_output_token": 1.161804,
            "joules_per_total_token": 0.12909, "power_source": "nvml"});
        let c = EnergyColumns::of_row(&measured);
        assert_eq!(c.source.as_deref(), Some("nvml"));
        assert_eq!(c.valid, Some(1));
        assert_eq!(c.joules_per_output_token, Some(1.161804));
        let missing = json!({"power_valid": 0, "power_source": "none",
            "power_invalid_reasons": ["telemetry_missing: no NVIDIA GPU"]});
        let c = EnergyColumns::of_row(&missing);
        assert_eq!((c.valid, c.avg_power_w), (Some(0), None), "never zeros");
        assert_eq!(
            EnergyColumns::of_row(&json!({"tput_per_gpu": 1.0})),
            EnergyColumns::default()
        );
        // an InferenceX row: no power_source; `power_valid` may be a bool in hand-made files
        let ix = json!({"power_valid": true, "joules_per_output_token": 6.35});
        assert_eq!(EnergyColumns::of_row(&ix).valid, Some(1));
    }

    #[test]
    fn modelled_numbers_stay_out_of_inferencex_metrics() {
        let modelled = json!({"power_source": "modelled", "power_valid": 0});
        assert!(inferencex_metrics_filter(
            &modelled,
            "joules_per_output_token"
        ));
        assert!(!inferencex_metrics_filter(&modelled, "power_valid"));
        assert!(!inferencex_metrics_filter(&modelled, "tput_per_gpu"));
        let measured = json!({"power_source": "nvml", "power_valid": 1});
        assert!(!inferencex_metrics_filter(
            &measured,
            "joules_per_output_token"
        ));
    }
}
