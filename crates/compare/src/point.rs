//! Turning agg rows and eval rows (JSON) into [`Point`] / [`EvalPoint`].
//!
//! Accepted row shapes:
//! * servebench `agg.json` rows (contract: InferenceX single-node agg row + servebench keys);
//! * InferenceX `agg_bmk.json` fixed-seq rows (single-node and multinode, MEASUREMENT §2.6/§2.3);
//! * InferenceX AgentX aggregates (`scenario_type: "agentic-coding"`, MEASUREMENT §5.8), whose
//!   nested `request_metrics` are flattened here (`p50` → `median_`, latency blocks already in s,
//!   `throughput.per_gpu.*` → `tput_per_gpu`/`output_tput_per_gpu`/`input_tput_per_gpu`);
//! * eval rows: InferenceX `agg_eval_all.json` rows (MEASUREMENT §4.4) and servebench eval rows
//!   (same fields, optionally `passed`, `threshold`).

use std::collections::BTreeMap;

use crate::error::{err, fail, Result};
use serde_json::{Map, Value};

use crate::{
    normalize_hw, ApiKind, BenchmarkType, EvalPoint, Identity, Metric, Metrics, Parallelism, Point,
    PointStatus, Spread, Stat, Topology,
};

/// Top-level agg keys that are identity or counts, not metrics (not copied into
/// [`Point::values`]).
const NON_METRIC_KEYS: &[&str] = &[
    "conc",
    "isl",
    "osl",
    "tp",
    "pp",
    "dcp_size",
    "pcp_size",
    "ep",
    "schema_version",
    "num_gpus",
    "num_requests_total",
    "num_requests_successful",
    "num_requests_failed",
    "mean_isl",
    "mean_isl_server",
    "mean_osl",
    "power_metric_schema_version",
    "power_valid",
    "prefill_tp",
    "prefill_pp",
    "prefill_dcp_size",
    "prefill_pcp_size",
    "prefill_ep",
    "prefill_num_workers",
    "decode_tp",
    "decode_pp",
    "decode_dcp_size",
    "decode_pcp_size",
    "decode_ep",
    "decode_num_workers",
    "num_prefill_gpu",
    "num_decode_gpu",
    "allocated_cpu_dram_gb",
    "kv_cache_pool_tokens",
];

fn obj(row: &Value) -> Result<&Map<String, Value>> {
    row.as_object()
        .ok_or_else(|| err!("row is not a JSON object"))
}

fn get_str(m: &Map<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn req_str(m: &Map<String, Value>, key: &str) -> Result<String> {
    get_str(m, key).ok_or_else(|| err!("missing or non-string field `{key}`"))
}

/// Reads a non-negative integer that may be written as a number or a numeric string.
fn get_u64(m: &Map<String, Value>, key: &str) -> Result<Option<u64>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                Ok(Some(u))
            } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0) {
                Ok(Some(f as u64))
            } else {
                fail!("field `{key}` is {n}, expected a non-negative integer")
            }
        }
        Some(Value::String(s)) => s
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| err!("field `{key}` is {s:?}, expected a non-negative integer")),
        Some(other) => fail!("field `{key}` is {other}, expected a non-negative integer"),
    }
}

fn get_u32(m: &Map<String, Value>, key: &str) -> Result<Option<u32>> {
    match get_u64(m, key)? {
        None => Ok(None),
        Some(v) => u32::try_from(v)
            .map(Some)
            .map_err(|_| err!("field `{key}` is {v}, too large")),
    }
}

fn get_f64(m: &Map<String, Value>, key: &str) -> Option<f64> {
    match m.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Booleans written as JSON booleans or as `"true"`/`"false"` strings (InferenceX agg rows
/// write `dp_attention` as a string).
fn get_bool(m: &Map<String, Value>, key: &str) -> Result<Option<bool>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(Some(true)),
            "false" | "0" | "no" | "" => Ok(Some(false)),
            _ => fail!("field `{key}` is {s:?}, expected true or false"),
        },
        Some(Value::Number(n)) => Ok(Some(n.as_f64() != Some(0.0))),
        Some(other) => fail!("field `{key}` is {other}, expected true or false"),
    }
}

fn parallelism(m: &Map<String, Value>, prefix: &str) -> Result<Parallelism> {
    let tp =
        get_u32(m, &format!("{prefix}tp"))?.ok_or_else(|| err!("missing field `{prefix}tp`"))?;
    Ok(Parallelism {
        tp,
        ep: get_u32(m, &format!("{prefix}ep"))?.unwrap_or(1),
        dp_attention: get_bool(m, &format!("{prefix}dp_attention"))?.unwrap_or(false),
    })
}

/// `true` when the row is an InferenceX AgentX aggregate (or a servebench agentic row).
fn is_agentic(m: &Map<String, Value>) -> bool {
    get_str(m, "scenario_type").as_deref() == Some("agentic-coding")
        || get_str(m, "benchmark_type").as_deref() == Some("agentic_traces")
}

impl Identity {
    /// Reads the match identity from an agg row or an eval row.
    ///
    /// Required: `hw`, `framework`, `infmax_model_prefix` (eval rows: `model_prefix`),
    /// `precision`, `conc`, and `tp` (single-node) or `prefill_tp`/`decode_tp` (multinode).
    /// Defaults: `spec_decoding` "none", `disagg`/`is_multinode`/`dp_attention` false, `ep` 1.
    /// `benchmark_type` is read, or `agentic_traces` when `scenario_type == "agentic-coding"`.
    ///
    /// Errors name the missing/bad field, e.g. ``missing or non-string field `hw` ``.
    pub fn from_row(row: &Value) -> Result<Identity> {
        let m = obj(row)?;
        let is_multinode = get_bool(m, "is_multinode")?.unwrap_or(false);
        let topology = if is_multinode {
            Topology {
                prefill: parallelism(m, "prefill_")?,
                decode: parallelism(m, "decode_")?,
                prefill_workers: get_u32(m, "prefill_num_workers")?,
                decode_workers: get_u32(m, "decode_num_workers")?,
            }
        } else {
            let p = parallelism(m, "")?;
            Topology {
                prefill: p,
                decode: p,
                prefill_workers: None,
                decode_workers: None,
            }
        };
        let benchmark_type = if is_agentic(m) {
            BenchmarkType::AgenticTraces
        } else {
            BenchmarkType::SingleTurn
        };
        let model_prefix = get_str(m, "infmax_model_prefix")
            .or_else(|| get_str(m, "model_prefix"))
            .ok_or_else(|| err!("missing field `infmax_model_prefix` (or `model_prefix`)"))?;
        let spec = get_str(m, "spec_decoding")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "none".into());
        let (isl, osl) = match benchmark_type {
            BenchmarkType::AgenticTraces => (None, None),
            BenchmarkType::SingleTurn => (get_u32(m, "isl")?, get_u32(m, "osl")?),
        };
        Ok(Identity {
            hw: normalize_hw(&req_str(m, "hw")?),
            framework: req_str(m, "framework")?.to_ascii_lowercase(),
            model_prefix,
            precision: req_str(m, "precision")?.to_ascii_lowercase(),
            spec_decoding: spec.to_ascii_lowercase(),
            disagg: get_bool(m, "disagg")?.unwrap_or(false),
            is_multinode,
            topology,
            benchmark_type,
            isl,
            osl,
            conc: get_u32(m, "conc")?.ok_or_else(|| err!("missing field `conc`"))?,
        })
    }

    /// The identity used for matching: worker counts (labels only) cleared, and a
    /// `cluster:<sku>-<fleet>` runner label reduced to its SKU ([`hw_sku`]), so a run stored
    /// with InferenceX's RUNNER_TYPE (`cluster:b200-nscale`, the label agentic configs must use,
    /// AUTOMATION.md §1.3 V9) matches a baseline whose hw came from the config key (`b200`).
    pub fn match_key(&self) -> Identity {
        let mut k = self.clone();
        k.hw = hw_sku(&k.hw);
        k.topology.prefill_workers = None;
        k.topology.decode_workers = None;
        k
    }

    /// The key eval rows are matched on: [`Identity::match_key`] with the workload fields
    /// (`benchmark_type`, `isl`, `osl`) cleared. GSM8K scores do not depend on the benchmark
    /// workload, and eval rows from different tools record it differently.
    pub fn eval_key(&self) -> Identity {
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

/// Flattens an AgentX aggregate's `request_metrics` into agg-row keys (seconds, tok/s/GPU).
fn flatten_agentic(m: &Map<String, Value>, values: &mut Metrics) {
    let rm = match m.get("request_metrics").and_then(Value::as_object) {
        Some(rm) => rm,
        None => return,
    };
    if let Some(lat) = rm.get("latency").and_then(Value::as_object) {
        for (block, name) in [
            ("ttft", "ttft"),
            ("e2el", "e2el"),
            ("itl", "itl"),
            ("tpot", "tpot"),
            ("intvty", "intvty"),
        ] {
            if let Some(b) = lat.get(block).and_then(Value::as_object) {
                for (stat, prefix) in [
                    ("mean", "mean"),
                    ("p50", "median"),
                    ("p75", "p75"),
                    ("p90", "p90"),
                    ("p95", "p95"),
                    ("std", "std"),
                ] {
                    if let Some(v) = get_f64(b, stat) {
                        values.entry(format!("{prefix}_{name}")).or_insert(v);
                    }
                }
            }
        }
    }
    if let Some(pg) = rm
        .get("throughput")
        .and_then(|t| t.get("per_gpu"))
        .and_then(Value::as_object)
    {
        for (src, dst) in [
            ("total_tput_tps", "tput_per_gpu"),
            ("output_tput_tps", "output_tput_per_gpu"),
            ("input_tput_tps", "input_tput_per_gpu"),
        ] {
            if let Some(v) = get_f64(pg, src) {
                values.entry(dst.to_string()).or_insert(v);
            }
        }
    }
}

fn agentic_tokens_mean(m: &Map<String, Value>, block: &str) -> Option<f64> {
    m.get("request_metrics")?
        .get("tokens")?
        .get(block)?
        .get("mean")?
        .as_f64()
}

impl Point {
    /// Reads one agg row (any shape listed in the module docs).
    ///
    /// Status: `point_status` when present; else `failed` when `num_requests_successful == 0`;
    /// else `ok`. Counts: `num_requests_failed` or total − successful. AgentX rows: API kind
    /// `chat`, `mean_isl_server` / `mean_osl` from `request_metrics.tokens`.
    pub fn from_agg_row(row: &Value) -> Result<Point> {
        Self::from_row_value(row)
    }

    /// Reads one typed agg row (a row servebench wrote; see
    /// [`servebench_contracts::AggRow`]).
    pub fn from_typed(row: &servebench_contracts::AggRow) -> Result<Point> {
        Self::from_row_value(&row.to_value())
    }

    fn from_row_value(row: &Value) -> Result<Point> {
        let identity = Identity::from_row(row)?;
        let m = obj(row)?;
        let mut values = Metrics::new();
        let mut extra = BTreeMap::new();
        for (k, v) in m {
            match v {
                Value::Number(n) if !NON_METRIC_KEYS.contains(&k.as_str()) => {
                    if let Some(f) = n.as_f64() {
                        values.insert(k.clone(), f);
                    }
                }
                Value::Object(_) | Value::Array(_) => {
                    extra.insert(k.clone(), v.clone());
                }
                _ => {}
            }
        }
        let agentic = is_agentic(m);
        if agentic {
            flatten_agentic(m, &mut values);
        }
        let total = get_u64(m, "num_requests_total")?;
        let ok = get_u64(m, "num_requests_successful")?;
        let failed = get_u64(m, "num_requests_failed")?.or_else(|| match (total, ok) {
            (Some(t), Some(s)) => Some(t.saturating_sub(s)),
            _ => None,
        });
        let status = match get_str(m, "point_status").as_deref() {
            Some("ok") => PointStatus::Ok,
            Some("partial") => PointStatus::Interrupted,
            Some("failed") => PointStatus::Failed,
            Some("invalid") => PointStatus::Invalid,
            Some(other) => {
                fail!("field `point_status` is {other:?}, expected ok|partial|failed|invalid")
            }
            None if ok == Some(0) => PointStatus::Failed,
            None => PointStatus::Ok,
        };
        let api = match get_str(m, "api").as_deref() {
            Some("completions") => Some(ApiKind::Completions),
            Some("chat") => Some(ApiKind::Chat),
            Some(other) => fail!("field `api` is {other:?}, expected completions|chat"),
            None if agentic => Some(ApiKind::Chat),
            None => None,
        };
        let failure_reasons = match m.get("failure_reasons") {
            Some(Value::Object(fr)) => fr
                .iter()
                .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                .collect(),
            _ => BTreeMap::new(),
        };
        let dataset = match m.get("dataset") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(d)) => ["name", "hf_dataset_name", "source", "source_type"]
                .iter()
                .find_map(|k| get_str(d, k)),
            _ => None,
        };
        let only_stat = get_str(m, "statistic").and_then(|s| Stat::parse(&s));
        Ok(Point {
            identity,
            image: get_str(m, "image"),
            model: get_str(m, "model"),
            status,
            api,
            endpoint: get_str(m, "endpoint"),
            dataset,
            only_stat,
            num_requests_total: total,
            num_requests_successful: ok,
            num_requests_failed: failed,
            failure_reasons,
            mean_isl: get_f64(m, "mean_isl"),
            mean_isl_server: get_f64(m, "mean_isl_server")
                .or_else(|| agentic.then(|| agentic_tokens_mean(m, "input")).flatten()),
            mean_osl: get_f64(m, "mean_osl").or_else(|| {
                agentic
                    .then(|| agentic_tokens_mean(m, "output_actual"))
                    .flatten()
            }),
            values,
            repeats: Vec::new(),
            extra,
            ci: BTreeMap::new(),
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
        })
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
    /// Reads one eval row. Score: `score` (fraction), else `em_strict`, else `acc`; metric name
    /// `score_name`, else `metric`, else `"em_strict"`; samples `n_eff` or `samples`;
    /// `passed` when the row says so, else (InferenceX `validate_scores.py`) every present
    /// `em_strict`/`em_flexible` (or the score) ≥ `threshold` (row field, else
    /// [`eval_threshold`]). A row without a score is not passed.
    pub fn from_eval_row(row: &Value) -> Result<EvalPoint> {
        let identity = Identity::from_row(row)?;
        let m = obj(row)?;
        let task = req_str(m, "task")?;
        let score = get_f64(m, "score")
            .or_else(|| get_f64(m, "em_strict"))
            .or_else(|| get_f64(m, "acc"));
        let metric = get_str(m, "score_name")
            .or_else(|| get_str(m, "metric"))
            .unwrap_or_else(|| "em_strict".into());
        let score_se = get_f64(m, "score_se").or_else(|| get_f64(m, &format!("{metric}_se")));
        let samples = match get_u64(m, "n_eff")? {
            Some(n) => Some(n),
            None => get_u64(m, "samples")?,
        };
        let threshold =
            get_f64(m, "threshold").or_else(|| Some(eval_threshold(&identity.model_prefix, &task)));
        let passed = match get_bool(m, "passed")? {
            Some(p) => Some(p),
            None => {
                let t = threshold.unwrap_or(0.85);
                let gated: Vec<f64> = ["em_strict", "em_flexible"]
                    .iter()
                    .filter_map(|k| get_f64(m, k))
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
            task,
            metric,
            score,
            score_se,
            samples,
            threshold,
            passed,
            image: get_str(m, "image"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agentic(hw: &str) -> Identity {
        Identity::from_row(&json!({
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
