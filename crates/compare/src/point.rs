//! Turning the typed rows servebench writes ([`AggRow`], [`EvalRow`]) into [`Point`] /
//! [`EvalPoint`], and what compare does with points (values in display units, merging
//! repeats, eval thresholds). Foreign rows (InferenceX files, baseline tables) are read in
//! [`crate::import`], the one module that reads JSON keys.

use std::collections::BTreeMap;

use crate::error::{err, fail, Result};
use serde_json::Value;
use servebench_contracts::agg::STAT_PREFIXES;
use servebench_contracts::{AggRow, EvalRow};

use crate::import::{
    dataset_of, f64_of, flatten_agentic, sort_open_keys, submission_invalid_of,
    SUBMISSION_REASONS_KEY, SUBMISSION_VALID_KEY,
};
use crate::{
    normalize_hw, ApiKind, BenchmarkType, EvalPoint, Metric, Metrics, Parallelism, Point, PointKey,
    PointStatus, Spread, Stat, Topology,
};

impl PointKey {
    /// The match identity of a row servebench wrote: [`PointKey::of`] its
    /// [`AggRow::identity`] at its `conc` (the kv-offload mode as [`AggRow::kv_offloading`]
    /// reads it).
    ///
    /// Errors: no `conc` (or one over 2^32), or `is_multinode` (servebench writes single-node
    /// rows only; a multinode row is a foreign one, read by [`PointKey::from_row`]).
    pub fn from_agg(row: &AggRow) -> Result<PointKey> {
        let conc = row.conc.ok_or_else(|| err!("missing field `conc`"))?;
        let conc = u32::try_from(conc).map_err(|_| err!("field `conc` is {conc}, too large"))?;
        let mut id = PointKey::of(&row.identity, conc)?;
        id.kv_offloading = row.kv_offloading();
        Ok(id)
    }

    /// The match key of the one identity ([`servebench_contracts::Identity`]) at `conc`
    /// (single-node: `tp`, `ep`, `dp_attention` for both pools; `isl`/`osl` cleared for
    /// `agentic_traces`). Same rules as [`PointKey::from_row`]: `hw` normalised, framework and
    /// precision lowercased, an empty `spec_decoding` is `"none"`.
    ///
    /// Errors: `is_multinode` (the one identity describes a single-node deployment).
    pub fn of(id: &servebench_contracts::Identity, conc: u32) -> Result<PointKey> {
        if id.is_multinode {
            fail!("field `is_multinode` is true: a servebench agg row is single-node");
        }
        let p = Parallelism {
            tp: id.tp,
            ep: id.ep,
            dp_attention: id.dp_attention,
        };
        let agentic = id.benchmark_type == BenchmarkType::AgenticTraces;
        Ok(PointKey {
            hw: normalize_hw(&id.hw),
            framework: id.framework.to_ascii_lowercase(),
            model_prefix: id.infmax_model_prefix.clone(),
            precision: id.precision.to_ascii_lowercase(),
            spec_decoding: spec_or_none(Some(&id.spec_decoding)),
            disagg: id.disagg,
            is_multinode: false,
            topology: Topology {
                prefill: p,
                decode: p,
                prefill_workers: None,
                decode_workers: None,
            },
            benchmark_type: id.benchmark_type,
            isl: if agentic { None } else { id.isl },
            osl: if agentic { None } else { id.osl },
            conc,
            kv_offloading: id.kv_offloading.clone(),
        })
    }

    /// The identity of an eval row servebench wrote (multinode rows: the `prefill_*` and
    /// `decode_*` pools). Defaults as [`PointKey::from_row`]: `ep` 1, `dp_attention` false,
    /// `spec_decoding` `"none"`; not disaggregated, single-turn.
    ///
    /// Errors name the missing field (`hw`, `framework`, `model_prefix`, `precision`, `tp`).
    pub fn from_eval(row: &EvalRow) -> Result<PointKey> {
        let need = |v: &Option<String>, key: &str| -> Result<String> {
            v.clone()
                .ok_or_else(|| err!("missing or non-string field `{key}`"))
        };
        let pool = |tp: Option<u32>, ep: Option<u32>, dpa: Option<bool>, prefix: &str| {
            Ok::<_, crate::CompareError>(Parallelism {
                tp: tp.ok_or_else(|| err!("missing field `{prefix}tp`"))?,
                ep: ep.unwrap_or(1),
                dp_attention: dpa.unwrap_or(false),
            })
        };
        let topology = if row.is_multinode {
            Topology {
                prefill: pool(
                    row.prefill_tp,
                    row.prefill_ep,
                    row.prefill_dp_attention,
                    "prefill_",
                )?,
                decode: pool(
                    row.decode_tp,
                    row.decode_ep,
                    row.decode_dp_attention,
                    "decode_",
                )?,
                prefill_workers: row.prefill_num_workers,
                decode_workers: row.decode_num_workers,
            }
        } else {
            let p = pool(row.tp, row.ep, row.dp_attention, "")?;
            Topology {
                prefill: p,
                decode: p,
                prefill_workers: None,
                decode_workers: None,
            }
        };
        let model_prefix = row
            .model_prefix
            .clone()
            .ok_or_else(|| err!("missing field `infmax_model_prefix` (or `model_prefix`)"))?;
        Ok(PointKey {
            hw: normalize_hw(&need(&row.hw, "hw")?),
            framework: need(&row.framework, "framework")?.to_ascii_lowercase(),
            model_prefix,
            precision: need(&row.precision, "precision")?.to_ascii_lowercase(),
            spec_decoding: spec_or_none(row.spec_decoding.as_deref()),
            disagg: false,
            is_multinode: row.is_multinode,
            topology,
            benchmark_type: BenchmarkType::SingleTurn,
            isl: row.isl,
            osl: row.osl,
            conc: row.conc,
            kv_offloading: servebench_contracts::KvOffload::parse(
                row.extra
                    .get(servebench_contracts::KvOffload::KEY)
                    .and_then(Value::as_str),
            ),
        })
    }

    /// The identity used for matching: worker counts (labels only) cleared, and a
    /// `cluster:<sku>-<fleet>` runner label reduced to its SKU ([`hw_sku`]), so a run stored
    /// with InferenceX's RUNNER_TYPE (`cluster:b200-nscale`, the label agentic configs must use,
    /// AUTOMATION.md §1.3 V9) matches a baseline whose hw came from the config key (`b200`).
    pub fn match_key(&self) -> PointKey {
        let mut k = self.clone();
        k.hw = hw_sku(&k.hw);
        k.topology.prefill_workers = None;
        k.topology.decode_workers = None;
        k
    }

    /// The key eval rows are matched on: [`PointKey::match_key`] with the workload fields
    /// (`benchmark_type`, `isl`, `osl`) cleared. GSM8K scores do not depend on the benchmark
    /// workload, and eval rows from different tools record it differently.
    pub fn eval_key(&self) -> PointKey {
        let mut k = self.match_key();
        k.benchmark_type = BenchmarkType::SingleTurn;
        k.isl = None;
        k.osl = None;
        k
    }
}

/// The SKU of a `cluster:<sku>[-<fleet>]` runner label (`cluster:b200-nscale` → `b200`); any
/// other hw is returned as is. The config-key naming convention carries the SKU
/// (`qwen3.8next-fp4-b200-sglang-agentic-mtp`), the agg row the runner label.
pub fn hw_sku(hw: &str) -> String {
    match hw.strip_prefix("cluster:") {
        Some(rest) => rest.split('-').next().unwrap_or(rest).to_string(),
        None => hw.to_string(),
    }
}

/// `spec_decoding` lowercased, `"none"` when absent or empty.
fn spec_or_none(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty())
        .unwrap_or("none")
        .to_ascii_lowercase()
}

/// [`Point::extra`] key of where a servebench point's energy comes from (`nvml`,
/// `telemetry`, `modelled`, `none`).
pub const POWER_SOURCE_KEY: &str = "power_source";

/// [`Point::extra`] key of why a servebench point has no valid energy
/// (`telemetry_missing: …`, `sampling_gap_exceeded`); absent when there is no reason.
pub const POWER_INVALID_REASONS_KEY: &str = "power_invalid_reasons";

impl Point {
    /// Why the point's energy is missing or invalid, as its row says (empty: no reason given).
    pub fn power_invalid_reasons(&self) -> Vec<String> {
        self.extra
            .get(POWER_INVALID_REASONS_KEY)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How the point's energy was obtained: `modelled` (the simulator's power model) or
    /// `measured` (NVML, a telemetry file, or an InferenceX row's telemetry).
    pub fn energy_kind(&self) -> &'static str {
        match self.extra.get(POWER_SOURCE_KEY).and_then(Value::as_str) {
            Some("modelled") => "modelled",
            _ => "measured",
        }
    }
}

/// A finite number, else `None` (the row writes non-finite values as `null`).
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl Point {
    /// Reads a row servebench wrote ([`AggRow`]): the typed fields, then the row's open
    /// remainder ([`AggRow::extra`]): numbers there are metrics too, objects and arrays
    /// (an AgentX run's `agentx` aggregate) are kept in [`Point::extra`], as are the typed
    /// [`AggRow::invalid_reasons`] (under `invalid_reasons`).
    /// Gives the point [`Point::from_agg_row`] gives for the row's JSON.
    ///
    /// Errors: see [`PointKey::from_agg`]; an `api` other than `completions` or `chat`.
    pub fn from_agg(row: &AggRow) -> Result<Point> {
        let identity = PointKey::from_agg(row)?;
        let mut values = Metrics::new();
        for (key, v) in [
            ("tput_per_gpu", row.tput_per_gpu),
            ("output_tput_per_gpu", row.output_tput_per_gpu),
            ("input_tput_per_gpu", row.input_tput_per_gpu),
            ("duration", row.duration),
            ("request_throughput", row.request_throughput),
            ("output_throughput", row.output_throughput),
            ("total_token_throughput", row.total_token_throughput),
            ("input_throughput", row.input_throughput),
        ] {
            if let Some(v) = finite(v) {
                values.insert(key.to_string(), v);
            }
        }
        for (name, fam) in [
            ("ttft", &row.ttft),
            ("tpot", &row.tpot),
            ("itl", &row.itl),
            ("e2el", &row.e2el),
            ("intvty", &row.intvty),
        ] {
            for (prefix, v) in STAT_PREFIXES.iter().zip(fam.values()) {
                if let Some(v) = v.and_then(finite) {
                    values.insert(format!("{prefix}_{name}"), v);
                }
            }
        }
        let mut extra = BTreeMap::new();
        // energy: the numbers when they may be shown (measured and valid, or modelled), and
        // where they come from (compare never draws a delta between measured and modelled)
        if let Some(p) = &row.power {
            if let Some(m) = p.usable() {
                for (k, v) in m.pairs() {
                    if let Some(v) = finite(v) {
                        values.insert(k.to_string(), v);
                    }
                }
            }
            extra.insert(POWER_SOURCE_KEY.to_string(), Value::from(p.source.as_str()));
            if !p.invalid_reasons.is_empty() {
                extra.insert(
                    POWER_INVALID_REASONS_KEY.to_string(),
                    Value::from(p.invalid_reasons.clone()),
                );
            }
        }
        extra.insert(
            "failure_reasons".to_string(),
            serde_json::to_value(&row.failure_reasons).expect("a map of counts serialises"),
        );
        if !row.invalid_reasons.is_empty() {
            extra.insert(
                servebench_contracts::status::INVALID_REASONS_KEY.to_string(),
                Value::from(row.invalid_reasons.clone()),
            );
        }
        sort_open_keys(&row.extra, &mut values, &mut extra);
        // An AgentX point's aggregate (`agentx`, the agentx.json body): its blocks under the
        // flat agg_bmk names, as for a foreign aggregate, and its dataset
        let agentx = row.extra.get("agentx").and_then(Value::as_object);
        if let Some(ax) = agentx {
            flatten_agentic(ax, &mut values);
        }
        let api = match row.api.as_str() {
            "completions" => ApiKind::Completions,
            "chat" => ApiKind::Chat,
            other => fail!("field `api` is {other:?}, expected completions|chat"),
        };
        Ok(Point {
            identity,
            image: Some(row.identity.image.clone()),
            model: Some(row.identity.model.clone()),
            status: row.point_status,
            api: Some(api),
            endpoint: Some(row.endpoint.clone()),
            dataset: agentx.and_then(dataset_of),
            only_stat: None,
            num_requests_total: Some(row.num_requests_total),
            num_requests_successful: Some(row.num_requests_successful),
            num_requests_failed: Some(row.num_requests_failed),
            failure_reasons: row.failure_reasons.clone(),
            mean_isl: row.mean_isl.and_then(finite),
            mean_isl_server: row.mean_isl_server.and_then(finite),
            mean_osl: row.mean_osl.and_then(finite),
            values,
            repeats: Vec::new(),
            extra,
            ci: BTreeMap::new(),
            run_url: None,
            date: None,
            dashboard_row: false,
            samples: None,
            noise_floor: BTreeMap::new(),
            submission_invalid: submission_invalid_of(
                row.extra.get(SUBMISSION_VALID_KEY),
                row.extra.get(SUBMISSION_REASONS_KEY),
            ),
        })
    }

    /// The metric in display units (ms, tok/s/GPU, tok/s/user) at `stat` (ignored for
    /// throughputs). `None` when the row has no value, or when the row only carries another
    /// statistic ([`Point::only_stat`]).
    pub fn value(&self, metric: Metric, stat: Stat) -> Option<f64> {
        if metric.has_stat() {
            if let Some(only) = self.only_stat {
                if only != stat {
                    return None;
                }
            }
        }
        self.values
            .get(&metric.agg_key(stat))
            .map(|v| v * metric.display_factor())
    }

    /// Each repeat's value of the metric in display units (one element for a single run).
    pub fn repeat_values(&self, metric: Metric, stat: Stat) -> Vec<f64> {
        if self.repeats.is_empty() {
            return self.value(metric, stat).into_iter().collect();
        }
        if metric.has_stat() && self.only_stat.is_some_and(|s| s != stat) {
            return Vec::new();
        }
        let key = metric.agg_key(stat);
        self.repeats
            .iter()
            .filter_map(|r| r.get(&key).map(|v| v * metric.display_factor()))
            .collect()
    }

    /// Number of runs behind this point (1, or the number of repeats).
    pub fn n_repeats(&self) -> usize {
        self.repeats.len().max(1)
    }

    /// Failure fraction `failed / total` (0–1), when both counts are known and total > 0.
    pub fn failure_rate(&self) -> Option<f64> {
        match (self.num_requests_failed, self.num_requests_total) {
            (Some(f), Some(t)) if t > 0 => Some(f as f64 / t as f64),
            _ => None,
        }
    }

    /// Merges repeats of one identity (rows of one run with the same match key, in run order)
    /// into one point: `values` = arithmetic mean per key over the repeats that have it,
    /// `repeats` = each row's values, counts summed, mean lengths averaged, status = worst
    /// (`failed` if any failed, else `invalid` if any was invalid, its reasons kept). A single
    /// point is returned unchanged.
    pub fn merge_repeats(mut points: Vec<Point>) -> Option<Point> {
        if points.len() <= 1 {
            return points.pop();
        }
        let repeats: Vec<Metrics> = points
            .iter()
            .flat_map(|p| {
                if p.repeats.is_empty() {
                    vec![p.values.clone()]
                } else {
                    p.repeats.clone()
                }
            })
            .collect();
        let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
        for r in &repeats {
            for (k, v) in r {
                let e = sums.entry(k.clone()).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
        let values = sums
            .into_iter()
            .map(|(k, (s, n))| (k, s / n as f64))
            .collect();
        let sum_opt = |f: &dyn Fn(&Point) -> Option<u64>| -> Option<u64> {
            points.iter().map(f).sum::<Option<u64>>()
        };
        let mean_opt = |f: &dyn Fn(&Point) -> Option<f64>| -> Option<f64> {
            let v: Option<Vec<f64>> = points.iter().map(f).collect();
            v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
        };
        let status = if points.iter().any(|p| p.status == PointStatus::Failed) {
            PointStatus::Failed
        } else if points.iter().any(|p| p.status == PointStatus::Invalid) {
            PointStatus::Invalid
        } else if points.iter().any(|p| p.status == PointStatus::Interrupted) {
            PointStatus::Interrupted
        } else {
            PointStatus::Ok
        };
        let mut failure_reasons = BTreeMap::new();
        for p in &points {
            for (k, n) in &p.failure_reasons {
                *failure_reasons.entry(k.clone()).or_insert(0) += n;
            }
        }
        let first = &points[0];
        // an invalid repeat's reasons stay with the merged point (compare shows them)
        let mut extra = first.extra.clone();
        let reasons: Vec<String> = points.iter().flat_map(|p| p.invalid_reasons()).collect();
        if !reasons.is_empty() {
            extra.insert(
                servebench_contracts::status::INVALID_REASONS_KEY.to_string(),
                Value::from(reasons),
            );
        }
        Some(Point {
            identity: first.identity.clone(),
            image: first.image.clone(),
            model: first.model.clone(),
            status,
            api: first.api,
            endpoint: first.endpoint.clone(),
            dataset: first.dataset.clone(),
            only_stat: first.only_stat,
            num_requests_total: sum_opt(&|p| p.num_requests_total),
            num_requests_successful: sum_opt(&|p| p.num_requests_successful),
            num_requests_failed: sum_opt(&|p| p.num_requests_failed),
            failure_reasons,
            mean_isl: mean_opt(&|p| p.mean_isl),
            mean_isl_server: mean_opt(&|p| p.mean_isl_server),
            mean_osl: mean_opt(&|p| p.mean_osl),
            values,
            repeats,
            extra,
            // repeats: the t-interval over them replaces within-run intervals
            ci: BTreeMap::new(),
            run_url: first.run_url.clone(),
            date: first.date.clone(),
            dashboard_row: first.dashboard_row,
            // the repeats' requests pooled (a side's evidence covers all of them)
            samples: {
                let all: Vec<&crate::evidence::Samples> =
                    points.iter().filter_map(|p| p.samples.as_deref()).collect();
                (all.len() == points.len()).then(|| {
                    let mut s = crate::evidence::Samples::default();
                    for x in all {
                        s.extend(x);
                    }
                    std::sync::Arc::new(s)
                })
            },
            noise_floor: first.noise_floor.clone(),
            // a repeat InferenceX would not accept makes the merged point one too
            submission_invalid: {
                let mut r: Vec<String> = Vec::new();
                for p in &points {
                    for x in &p.submission_invalid {
                        if !r.contains(x) {
                            r.push(x.clone());
                        }
                    }
                }
                r
            },
        })
    }

    /// Why InferenceX would not accept the point as a submission, in words, or `None` for a
    /// valid one: `not a valid InferenceX submission: more than 1 % of the profiling requests
    /// were rejected as longer than the server's context (context_overflow_rate_exceeded)`.
    /// Each reason code of [`Point::submission_invalid`] is worded (unknown codes as written),
    /// `; ` joined.
    pub fn submission_invalid_text(&self) -> Option<String> {
        if self.submission_invalid.is_empty() {
            return None;
        }
        let words: Vec<String> = self
            .submission_invalid
            .iter()
            .map(|code| match code.as_str() {
                "context_overflow_rate_exceeded" => format!(
                    "more than {} % of the profiling requests were rejected as longer than the \
                     server's context ({code})",
                    servebench_contracts::result::CONTEXT_OVERFLOW_RATE_LIMIT * 100.0
                ),
                "unsafe_override" => {
                    format!("the profiling window is shorter than InferenceX requires ({code})")
                }
                "run_cancelled" => format!("the run was cancelled ({code})"),
                other => other.to_string(),
            })
            .collect();
        Some(format!(
            "not a valid InferenceX submission: {}",
            words.join("; ")
        ))
    }

    /// The violated validity rules of an `invalid` point (its row's `invalid_reasons`; every
    /// repeat's, in order, for merged repeats); empty for a valid point.
    pub fn invalid_reasons(&self) -> Vec<String> {
        let key = servebench_contracts::status::INVALID_REASONS_KEY;
        self.extra
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Spread {
    /// Spread of a sample: mean, sample sd (n − 1), min, max. `None` for an empty sample.
    /// B20: `[100, 112, 95, 108, 118]` → mean 106.6, sd 9.21 (9.2087), range 95–118.
    pub fn of(xs: &[f64]) -> Option<Spread> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (n >= 2)
            .then(|| (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
        Some(Spread {
            n,
            mean,
            sd,
            min: xs.iter().cloned().fold(f64::INFINITY, f64::min),
            max: xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// InferenceX eval threshold (`utils/evals/thresholds.yaml`, MEASUREMENT §4.4) as a fraction:
/// per-model gsm8k thresholds (dsr1 0.91, dsv4 0.91, glm5 0.94, glm5.1 0.93, gptoss 0.91,
/// kimik2.5 0.90, minimaxm2.5 0.92, qwen3.5 0.94), else the task default (gsm8k 0.90,
/// gpqa_diamond_cot_n_shot 0.30, swebench_lite 0.50), else `--min-score` 0.85.
pub fn eval_threshold(model_prefix: &str, task: &str) -> f64 {
    if task == "gsm8k" {
        let per_model = match model_prefix {
            "dsr1" | "dsv4" | "gptoss" => Some(0.91),
            "glm5" | "qwen3.5" => Some(0.94),
            "glm5.1" => Some(0.93),
            "kimik2.5" => Some(0.90),
            "minimaxm2.5" => Some(0.92),
            _ => None,
        };
        if let Some(t) = per_model {
            return t;
        }
    }
    match task {
        "gsm8k" => 0.90,
        "gpqa_diamond_cot_n_shot" => 0.30,
        "swebench_lite" => 0.50,
        _ => 0.85,
    }
}

impl EvalPoint {
    /// Reads an eval row servebench wrote ([`EvalRow`]) with the rules of
    /// [`EvalPoint::from_eval_row`]: score `score`, else `em_strict`; standard error
    /// `score_se`, else the score's own (`em_strict_se`, …); samples `n_eff`; the gate's
    /// `threshold`, `passed` and `image` from the row's gate fields ([`EvalRow::threshold`],
    /// [`EvalRow::passed`], [`EvalRow::image`]; threshold otherwise [`eval_threshold`]; passed otherwise every
    /// present `em_strict`/`em_flexible`, or the score, ≥ the threshold; no score: not passed).
    pub fn from_eval(row: &EvalRow) -> Result<EvalPoint> {
        let identity = PointKey::from_eval(row)?;
        let fin = |x: Option<f64>| x.and_then(finite);
        let score = fin(row.score).or(fin(row.em_strict));
        let metric = row.score_name.clone();
        let own_se = match metric.as_str() {
            "em_strict" => fin(row.em_strict_se),
            "em_flexible" => fin(row.em_flexible_se),
            "score" => fin(row.score_se),
            other => f64_of(row.extra.get(&format!("{other}_se"))),
        };
        let score_se = fin(row.score_se).or(own_se);
        let threshold =
            fin(row.threshold).or_else(|| Some(eval_threshold(&identity.model_prefix, &row.task)));
        let passed = match row.passed {
            Some(p) => Some(p),
            None => {
                let t = threshold.unwrap_or(0.85);
                let gated: Vec<f64> = [row.em_strict, row.em_flexible]
                    .into_iter()
                    .filter_map(fin)
                    .collect();
                match score {
                    None => Some(false),
                    Some(s) if gated.is_empty() => Some(s >= t),
                    Some(_) => Some(gated.iter().all(|v| *v >= t)),
                }
            }
        };
        Ok(EvalPoint {
            identity,
            task: row.task.clone(),
            metric,
            score,
            score_se,
            samples: Some(row.n_eff as u64),
            threshold,
            passed,
            image: row.image.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agentic(hw: &str) -> PointKey {
        PointKey::from_row(&json!({
            "hw": hw, "framework": "sglang", "infmax_model_prefix": "qwen3.8next",
            "precision": "fp4", "spec_decoding": "mtp", "conc": 4, "tp": 1, "ep": 1,
            "scenario_type": "agentic-coding"
        }))
        .unwrap()
    }

    #[test]
    fn a_cluster_runner_label_matches_the_sku_from_the_config_key() {
        assert_eq!(hw_sku("cluster:b200-nscale"), "b200");
        assert_eq!(hw_sku("cluster:mi325x-tw"), "mi325x");
        assert_eq!(hw_sku("b200-nscale"), "b200-nscale");
        assert_eq!(
            agentic("cluster:b200-nscale").match_key(),
            agentic("b200").match_key()
        );
        // the identity shown keeps the label; other SKUs still differ
        assert_eq!(agentic("cluster:b200-nscale").hw, "cluster:b200-nscale");
        assert_ne!(
            agentic("cluster:b300-nv").match_key(),
            agentic("b200").match_key()
        );
    }
}
