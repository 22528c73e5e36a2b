//! What both backends store of a row: the identity columns copied out of an agg or eval row
//! (typed rows through their types, foreign rows through their keys), and the raw rows read
//! back before the facade parses them.

use serde_json::Value;
use servebench_contracts::{AggRow, EvalRow, ForeignRow};

use crate::energy::EnergyColumns;
use crate::error::{err, Result};
use crate::RunId;

/// Now, RFC 3339 UTC with milliseconds (`2026-09-21T01:15:02.123Z`).
pub(crate) fn now_utc() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// Column extraction of foreign rows (baseline runs), whose keys and value types are not fixed:
// numbers written as strings, `"true"` for booleans, multinode `prefill_*` keys. Rows
// servebench wrote are read through their types instead ([`point_columns`]).

pub(crate) fn row_str(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(crate) fn row_int(v: &Value, k: &str) -> Option<i64> {
    match v.get(k)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn row_bool(v: &Value, k: &str) -> Option<i64> {
    match v.get(k)? {
        Value::Bool(b) => Some(*b as i64),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" => Some(1),
            "false" => Some(0),
            _ => None,
        },
        Value::Number(n) => n.as_i64().map(|i| (i != 0) as i64),
        _ => None,
    }
}

/// The columns of one `points` row (besides ids and times).
pub(crate) struct PointColumns {
    pub(crate) hw: Option<String>,
    pub(crate) framework: Option<String>,
    pub(crate) model_prefix: Option<String>,
    pub(crate) precision: Option<String>,
    pub(crate) spec_decoding: Option<String>,
    pub(crate) disagg: Option<i64>,
    pub(crate) is_multinode: Option<i64>,
    pub(crate) tp: Option<i64>,
    pub(crate) ep: Option<i64>,
    pub(crate) dp_attention: Option<i64>,
    pub(crate) benchmark_type: Option<String>,
    pub(crate) isl: Option<i64>,
    pub(crate) osl: Option<i64>,
    pub(crate) conc: Option<i64>,
    pub(crate) image: Option<String>,
    pub(crate) status: String,
    pub(crate) records_file: Option<String>,
    pub(crate) invalid_reasons: Vec<String>,
    /// Flags the run only (not the point's status or column): an AgentX point that is not a
    /// valid InferenceX submission.
    pub(crate) run_reasons: Option<String>,
    /// The point's energy columns (`crate::energy`), copied from the row.
    pub(crate) energy: EnergyColumns,
    /// `row_json`.
    pub(crate) json: String,
    /// The row as JSON (what `json` spells).
    pub(crate) value: Value,
}

/// The columns of one `evals` row (besides ids and times).
pub(crate) struct EvalColumns {
    pub(crate) task: String,
    pub(crate) score_name: Option<String>,
    pub(crate) conc: Option<i64>,
    pub(crate) score: Option<f64>,
    pub(crate) n_eff: Option<i64>,
    /// `row_json`.
    pub(crate) json: String,
    /// The row as JSON (what `json` spells).
    pub(crate) value: Value,
}

impl PointColumns {
    /// The columns of a point servebench measured: copied from its one identity
    /// ([`AggRow::identity`]) and its `conc`.
    pub(crate) fn of_agg(row: &AggRow) -> Result<PointColumns> {
        // an AgentX point InferenceX would not accept as a submission keeps its status (its
        // numbers stand) but flags its run, as `servebench run` calls such a run invalid
        let submission = row.submission_invalid_reasons();
        let run_reasons = (!submission.is_empty()).then(|| {
            format!(
                "not a valid InferenceX submission ({})",
                submission.join(", ")
            )
        });
        let value = row.to_value();
        let id = &row.identity;
        Ok(PointColumns {
            hw: Some(id.hw.clone()),
            framework: Some(id.framework.clone()),
            model_prefix: Some(id.infmax_model_prefix.clone()),
            precision: Some(id.precision.clone()),
            spec_decoding: Some(id.spec_decoding.clone()),
            disagg: Some(id.disagg.into()),
            is_multinode: Some(id.is_multinode.into()),
            tp: Some(id.tp.into()),
            ep: Some(id.ep.into()),
            dp_attention: Some(id.dp_attention.into()),
            benchmark_type: Some(id.benchmark_type.as_str().to_string()),
            isl: id.isl.map(i64::from),
            osl: id.osl.map(i64::from),
            conc: row.conc.map(|c| c as i64),
            image: Some(id.image.clone()),
            status: row.point_status.as_str().to_string(),
            records_file: Some(row.records_file.clone()),
            invalid_reasons: row.invalid_reasons.clone(),
            run_reasons,
            energy: EnergyColumns::of_row(&value),
            json: serde_json::to_string(&value)?,
            value,
        })
    }

    /// The columns of an imported row (read through its keys: `infmax_model_prefix` or
    /// `model_prefix`; multinode rows `prefill_tp`, `prefill_ep`, `prefill_dp_attention`;
    /// `scenario_type: agentic-coding` → `agentic_traces`).
    pub(crate) fn of_foreign(row: &ForeignRow) -> Result<PointColumns> {
        let value = row.to_value();
        let row = &value;
        let benchmark_type = row_str(row, "benchmark_type").or_else(|| {
            (row_str(row, "scenario_type").as_deref() == Some("agentic-coding"))
                .then(|| "agentic_traces".to_string())
        });
        Ok(PointColumns {
            hw: row_str(row, "hw"),
            framework: row_str(row, "framework"),
            model_prefix: row_str(row, "infmax_model_prefix")
                .or_else(|| row_str(row, "model_prefix")),
            precision: row_str(row, "precision"),
            spec_decoding: row_str(row, "spec_decoding"),
            disagg: row_bool(row, "disagg"),
            is_multinode: row_bool(row, "is_multinode"),
            tp: row_int(row, "tp").or_else(|| row_int(row, "prefill_tp")),
            ep: row_int(row, "ep").or_else(|| row_int(row, "prefill_ep")),
            dp_attention: row_bool(row, "dp_attention")
                .or_else(|| row_bool(row, "prefill_dp_attention")),
            benchmark_type,
            isl: row_int(row, "isl"),
            osl: row_int(row, "osl"),
            conc: row_int(row, "conc"),
            image: row_str(row, "image"),
            status: row_str(row, "point_status").unwrap_or_else(|| "ok".into()),
            records_file: row_str(row, "records_file"),
            invalid_reasons: servebench_contracts::status::invalid_reasons_of(row),
            run_reasons: None,
            energy: EnergyColumns::of_row(row),
            json: serde_json::to_string(row)?,
            value: value.clone(),
        })
    }

    /// The point's invalid reasons, `; ` joined (`points.invalid_reason`).
    pub(crate) fn invalid(&self) -> Option<String> {
        (!self.invalid_reasons.is_empty()).then(|| self.invalid_reasons.join("; "))
    }

    /// What the point adds to its run's `invalid_reason`: `conc N: <reasons>`, or `None`.
    pub(crate) fn run_flag(&self) -> Option<String> {
        let reason = match (self.invalid(), &self.run_reasons) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b.clone()),
        }?;
        Some(match self.conc {
            Some(conc) => format!("conc {conc}: {reason}"),
            None => reason,
        })
    }
}

impl EvalColumns {
    /// The columns of an eval row servebench wrote.
    pub(crate) fn of_eval(row: &EvalRow) -> Result<EvalColumns> {
        let finite = |x: Option<f64>| x.filter(|v| v.is_finite());
        let value = row.to_value();
        Ok(EvalColumns {
            task: row.task.clone(),
            score_name: Some(row.score_name.clone()),
            conc: Some(row.conc.into()),
            score: finite(row.score).or(finite(row.em_strict)),
            n_eff: Some(row.n_eff as i64),
            json: serde_json::to_string(&value)?,
            value,
        })
    }

    /// The columns of an imported eval row (`task`; `score_name` or `metric`; `conc`;
    /// `score` or `em_strict`; `n_eff` or `samples`).
    ///
    /// Errors: the row has no `task`.
    pub(crate) fn of_foreign(run: RunId, row: &ForeignRow) -> Result<EvalColumns> {
        let value = row.to_value();
        let row = &value;
        let task = row_str(row, "task")
            .ok_or_else(|| err!("eval row for run {run}: missing field `task`"))?;
        Ok(EvalColumns {
            task,
            score_name: row_str(row, "score_name").or_else(|| row_str(row, "metric")),
            conc: row_int(row, "conc"),
            score: row
                .get("score")
                .and_then(Value::as_f64)
                .or_else(|| row.get("em_strict").and_then(Value::as_f64)),
            n_eff: row_int(row, "n_eff").or_else(|| row_int(row, "samples")),
            json: serde_json::to_string(row)?,
            value: value.clone(),
        })
    }
}

/// A `points` row as read back, before the facade parses `json`.
pub(crate) struct RawPoint {
    pub(crate) id: i64,
    pub(crate) run_id: RunId,
    pub(crate) status: String,
    pub(crate) records_file: Option<String>,
    pub(crate) json: String,
    pub(crate) invalid_reason: Option<String>,
    pub(crate) hw: Option<String>,
}

/// Whether a run of stored kind `kind` may hold a row of this origin: imported rows
/// (`foreign`) in baseline runs only, servebench rows in every other run.
pub(crate) fn check_origin_kind(
    location: &std::path::Path,
    run: RunId,
    kind: &str,
    foreign: bool,
) -> Result<()> {
    let baseline = kind == crate::RunKind::Baseline.as_str();
    if foreign && !baseline {
        crate::error::fail!(
            "{}: run {run} is a {kind} run: imported rows belong to baseline runs",
            location.display()
        );
    }
    if !foreign && baseline {
        crate::error::fail!(
            "{}: run {run} is a baseline run: its rows are imported ones",
            location.display()
        );
    }
    Ok(())
}
