//! Foreign rows: the one module of compare that reads JSON keys. Baseline files (InferenceX
//! artifacts and the servebench baseline table) are turned into [`ForeignRow`]s (what a
//! baseline run stores), and foreign rows into [`Point`] / [`EvalPoint`]
//! ([`Point::from_foreign`], [`EvalPoint::from_foreign`]; any JSON row:
//! [`Point::from_agg_row`], [`EvalPoint::from_eval_row`]). Rows servebench wrote are typed and
//! read in `point.rs` instead ([`Point::from_agg`], [`EvalPoint::from_eval`]).
//!
//! Accepted row shapes:
//! * servebench `agg.json` rows (contract: InferenceX single-node agg row + servebench keys);
//! * InferenceX `agg_bmk.json` fixed-seq rows (single-node and multinode, MEASUREMENT §2.6/§2.3);
//! * InferenceX AgentX aggregates (`scenario_type: "agentic-coding"`, MEASUREMENT §5.8), whose
//!   nested `request_metrics` are flattened here (`p50` → `median_`, latency blocks already in s,
//!   `throughput.per_gpu.*` → `tput_per_gpu`/`output_tput_per_gpu`/`input_tput_per_gpu`);
//! * eval rows: InferenceX `agg_eval_all.json` rows (MEASUREMENT §4.4) and servebench eval rows
//!   (same fields, optionally `passed`, `threshold`).
//!
//! Accepted inputs (detected from the JSON shape; the format is documented in
//! `docs/compare.md`, "Baseline files"):
//! 1. a JSON **array** of rows: InferenceX `agg_bmk.json` (fixed-seq rows and AgentX
//!    `scenario_type: agentic-coding` aggregates) and/or `agg_eval_all.json` rows (a row with a
//!    `task` field is an eval row); one agg row as a bare object is accepted too;
//! 2. a JSON array of **InferenceX dashboard API rows** (`/api/v1/benchmarks`,
//!    `/api/v1/benchmarks/history`: `hardware`, `model`, `spec_method`, `prefill_*`/`decode_*`
//!    pools, a `metrics` object in seconds and tok/s/GPU, `date`, `run_url`), converted by
//!    [`api_row`] into agg-row keys (the API's own units: latencies in s, shown in ms by
//!    compare like every agg row);
//! 3. a **baseline table** object (`"points": [...]`), the shape of
//!    `shared/data/scenario/baseline.json`: `config_key`, `date`, `image`, `workload`
//!    (`"AgentX"`, `"8k/1k"`, or `{"isl":…, "osl":…}`), `topology` (`{"tp","ep"[,"dp_attention"]}`),
//!    `statistic` (`mean|median|p90|p99`), optional `identity`, `points`, `evals`.

use std::collections::BTreeMap;

use crate::error::{err, fail, Context, Result};
use serde_json::{json, Map, Value};
use servebench_contracts::ForeignRow;

use crate::{
    eval_threshold, normalize_hw, ApiKind, BenchmarkType, EvalPoint, Metrics, Parallelism, Point,
    PointKey, PointStatus, Stat, Topology,
};

/// Which input shape a baseline file had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineFormat {
    /// InferenceX rows (`agg_bmk.json`, `agg_eval_all.json`, or a mix).
    InferencexRows,
    /// The servebench baseline table.
    Table,
    /// InferenceX dashboard API rows (`/api/v1/benchmarks`, `/benchmarks/history`).
    InferencexApi,
}

impl BaselineFormat {
    /// How the format is named to users: `InferenceX rows`, `baseline table`, `InferenceX
    /// dashboard API rows`.
    pub fn label(self) -> &'static str {
        match self {
            BaselineFormat::InferencexRows => "InferenceX rows",
            BaselineFormat::Table => "baseline table",
            BaselineFormat::InferencexApi => "InferenceX dashboard API rows",
        }
    }
}

/// Identity fields given on the command line (`servebench baseline import --hw …`); they
/// override the table's `identity` object and whatever is derived from its `config_key`.
#[derive(Debug, Clone, Default)]
pub struct IdentityOverrides {
    /// Hardware (runner type), e.g. `b200`.
    pub hw: Option<String>,
    /// Framework, e.g. `sglang`.
    pub framework: Option<String>,
    /// InferenceX model prefix, e.g. `qwen3.5`.
    pub model_prefix: Option<String>,
    /// Precision, e.g. `fp4`.
    pub precision: Option<String>,
    /// Speculative decoding: `mtp`, `draft_model`, `none`.
    pub spec_decoding: Option<String>,
    /// Full model id (not matched; shown).
    pub model: Option<String>,
}

/// A parsed baseline file.
#[derive(Debug, Clone)]
pub struct BaselineImport {
    /// Input shape.
    pub format: BaselineFormat,
    /// Catalog config key (table `config_key`; for InferenceX rows `None`).
    pub config_key: Option<String>,
    /// Baseline date (`YYYY-MM-DD`, table `date`).
    pub date: Option<String>,
    /// Engine image (table `image`, or the first row's `image`).
    pub image: Option<String>,
    /// Workload label (`AgentX`, `8k/1k`) when uniform.
    pub workload: Option<String>,
    /// Topology label (`TP1/EP1`) when uniform.
    pub topology: Option<String>,
    /// Latency statistic the table carries (`None` for InferenceX rows, which carry all).
    pub statistic: Option<Stat>,
    /// Agg rows, ready for `Store::add_foreign_point` (validated with
    /// [`Point::from_foreign`]).
    pub points: Vec<ForeignRow>,
    /// Eval rows, ready for `Store::add_foreign_eval` (validated with
    /// [`EvalPoint::from_foreign`]).
    pub evals: Vec<ForeignRow>,
    /// Things the user should know (e.g. identity derived from the config key).
    pub notes: Vec<String>,
}

/// Parses a baseline file's text. `source` names the file in error messages
/// (`"baseline.json: points[2]: unknown field `ttft`"`).
pub fn parse_baseline(text: &str, source: &str, ov: &IdentityOverrides) -> Result<BaselineImport> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        err!(
            "{source}: not valid JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        )
    })?;
    match v {
        Value::Array(rows) => rows_import(rows, source),
        Value::Object(ref m) if m.contains_key("points") || m.contains_key("evals") => {
            table_import(m, source, ov)
        }
        Value::Object(_) => rows_import(vec![v], source),
        _ => fail!("{source}: expected a JSON array of InferenceX rows or a baseline table object"),
    }
}

fn rows_import(rows: Vec<Value>, source: &str) -> Result<BaselineImport> {
    if rows.is_empty() {
        fail!("{source}: the array has no rows");
    }
    let mut points = Vec::new();
    let mut evals = Vec::new();
    let mut parsed = Vec::new();
    let api_rows = rows.iter().filter(|r| is_api_row(r)).count();
    if api_rows > 0 && api_rows < rows.len() {
        fail!(
            "{source}: {api_rows} of {} rows are InferenceX dashboard API rows (`hardware`, \
             `metrics`) and the others are not; import them from separate files",
            rows.len()
        );
    }
    for (i, row) in rows.into_iter().enumerate() {
        if api_rows > 0 {
            let r =
                api_row(&row).with_context(|| format!("{source}: row {i} (dashboard API row)"))?;
            parsed.push(Point::from_foreign(&r).with_context(|| format!("{source}: row {i}"))?);
            points.push(r);
            continue;
        }
        if row.get("task").is_some() {
            EvalPoint::from_eval_row(&row)
                .with_context(|| format!("{source}: row {i} (eval row)"))?;
            evals.extend(ForeignRow::from_value(row));
        } else {
            parsed.push(Point::from_agg_row(&row).with_context(|| format!("{source}: row {i}"))?);
            points.extend(ForeignRow::from_value(row));
        }
    }
    let uniform = |f: &dyn Fn(&Point) -> String| -> Option<String> {
        let first = f(parsed.first()?);
        parsed.iter().all(|p| f(p) == first).then_some(first)
    };
    let dates: Vec<&str> = parsed.iter().filter_map(|p| p.date.as_deref()).collect();
    Ok(BaselineImport {
        format: if api_rows > 0 {
            BaselineFormat::InferencexApi
        } else {
            BaselineFormat::InferencexRows
        },
        config_key: None,
        // rows of one date (one CI run): that date; else the newest (history files)
        date: dates.iter().max().map(|d| d.to_string()),
        image: uniform(&|p| p.image.clone().unwrap_or_default()).filter(|s| !s.is_empty()),
        workload: uniform(&|p| p.identity.workload_label()),
        topology: uniform(&|p| p.identity.topology_label()),
        statistic: None,
        points,
        evals,
        notes: Vec::new(),
    })
}

/// The rows of one CI run, each with its point.
type RunRows = Vec<(ForeignRow, Point)>;

impl BaselineImport {
    /// The rows of one identity but different runs (a `/benchmarks/history` capture holds up
    /// to ten dates of each configuration) are history, not repeats: this keeps the newest row
    /// of each match identity (by `date`, then `run_url`) and says how many it left out.
    /// Rows without a date and eval rows are kept as they are. `(rows, left out)`.
    pub fn latest_per_identity(&self) -> Result<(Vec<ForeignRow>, usize)> {
        let mut best: BTreeMap<PointKey, (usize, String)> = BTreeMap::new();
        let mut keep = vec![true; self.points.len()];
        for (i, r) in self.points.iter().enumerate() {
            let p = Point::from_foreign(r)?;
            let Some(date) = p.date.clone() else { continue };
            let order = format!("{date}\u{0}{}", p.run_url.clone().unwrap_or_default());
            match best.get(&p.identity.match_key()) {
                Some((_, o)) if *o >= order => keep[i] = false,
                Some((j, _)) => {
                    keep[*j] = false;
                    best.insert(p.identity.match_key(), (i, order));
                }
                None => {
                    best.insert(p.identity.match_key(), (i, order));
                }
            }
        }
        let left_out = keep.iter().filter(|k| !**k).count();
        let rows = self
            .points
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(r, _)| r.clone())
            .collect();
        Ok((rows, left_out))
    }

    /// Splits dashboard API rows into one import per CI run (`run_url`), in order of the
    /// runs' dates (then URLs): each is what one stored history run holds (its date, its
    /// image when uniform, its workload/topology labels when uniform). Rows without a
    /// `run_url` form one group. Any other format is returned whole.
    pub fn split_by_run(&self) -> Result<Vec<BaselineImport>> {
        if self.format != BaselineFormat::InferencexApi {
            return Ok(vec![self.clone()]);
        }
        let mut groups: BTreeMap<(String, String), RunRows> = BTreeMap::new();
        for r in &self.points {
            let p = Point::from_foreign(r)?;
            let key = (
                p.date.clone().unwrap_or_default(),
                p.run_url.clone().unwrap_or_default(),
            );
            groups.entry(key).or_default().push((r.clone(), p));
        }
        // one run spans one date in the captures; a run spanning two dates is still one run
        let mut by_url: Vec<((String, String), RunRows)> = Vec::new();
        for (k, rows) in groups {
            match by_url
                .iter_mut()
                .find(|(kk, _)| !k.1.is_empty() && kk.1 == k.1)
            {
                Some((_, v)) => v.extend(rows),
                None => by_url.push((k, rows)),
            }
        }
        Ok(by_url
            .into_iter()
            .map(|((date, url), rows)| {
                let uniform = |f: &dyn Fn(&Point) -> Option<String>| -> Option<String> {
                    let first = f(&rows.first()?.1)?;
                    rows.iter()
                        .all(|(_, p)| f(p).as_deref() == Some(first.as_str()))
                        .then_some(first)
                };
                BaselineImport {
                    format: BaselineFormat::InferencexApi,
                    config_key: None,
                    date: (!date.is_empty()).then_some(date),
                    image: uniform(&|p| p.image.clone()),
                    workload: uniform(&|p| Some(p.identity.workload_label())),
                    topology: uniform(&|p| Some(p.identity.topology_label())),
                    statistic: None,
                    notes: if url.is_empty() {
                        vec!["rows without a run_url stored as one run".into()]
                    } else {
                        vec![]
                    },
                    points: rows.into_iter().map(|(r, _)| r).collect(),
                    evals: Vec::new(),
                }
            })
            .collect())
    }
}

/// The source links of `points` (in their order): each distinct `run_url` once, named
/// `API 1`, `API 2`, … when it came from a dashboard API row (the scenario PR's spelling),
/// else `run 1`, `run 2`, ….
pub fn source_links<'a>(points: impl IntoIterator<Item = &'a Point>) -> Vec<crate::SourceLink> {
    let mut out: Vec<crate::SourceLink> = Vec::new();
    let (mut api, mut other) = (0, 0);
    for p in points {
        let Some(url) = &p.run_url else { continue };
        if out.iter().any(|s| &s.url == url) {
            continue;
        }
        let name = if p.dashboard_row {
            api += 1;
            format!("API {api}")
        } else {
            other += 1;
            format!("run {other}")
        };
        out.push(crate::SourceLink {
            name,
            url: url.clone(),
        });
    }
    out
}

pub use servebench_contracts::agg::{SUBMISSION_REASONS_KEY, SUBMISSION_VALID_KEY};

/// [`servebench_contracts::agg::submission_invalid_reasons`] with `valid` as an imported row
/// writes it (JSON boolean or `"false"`).
pub(crate) fn submission_invalid_of(valid: Option<&Value>, reasons: Option<&Value>) -> Vec<String> {
    let valid = bool_of(SUBMISSION_VALID_KEY, valid).ok().flatten();
    servebench_contracts::agg::submission_invalid_reasons(valid, reasons)
}

/// Whether a row is an InferenceX dashboard API row (`/api/v1/benchmarks`,
/// `/benchmarks/history`): it names `hardware` and carries a `metrics` object.
fn is_api_row(v: &Value) -> bool {
    v.get("hardware").is_some() && v.get("metrics").is_some_and(Value::is_object)
}

/// Marks a foreign row built from a dashboard API row (its run link is cited as `API n`).
const DASHBOARD_ROW_KEY: &str = "dashboard_api_row";

/// One InferenceX dashboard API row as agg-row keys (what a baseline run stores):
///
/// * identity: `hardware` → `hw`, `framework`, `model` (the API's model key, e.g. `dsr1`) →
///   `infmax_model_prefix`, `precision`, `spec_method` → `spec_decoding`, `disagg`,
///   `is_multinode`, `isl`, `osl`, `conc`; single-node rows: `tp`/`ep`/`dp_attention` from the
///   decode pool (the API writes the one engine as both pools); every row keeps
///   `prefill_*`/`decode_*` (TP, EP, DP-attention, workers) and `num_prefill_gpu` /
///   `num_decode_gpu`, and `num_gpus` = prefill GPUs (+ decode GPUs when disaggregated);
/// * facts: `image` (absent from history rows), `date`, `run_url`, `workers`;
/// * `metrics.*` → top-level agg keys unchanged: the API defines latencies (`*_ttft`,
///   `*_tpot`, `*_itl`, `*_e2el`) in **seconds** as agg rows do (compare shows them ×1000 in
///   ms), `*_intvty` in tok/s/user, `*tput_per_gpu` in tok/s/GPU, power in W and J/token.
///
/// Errors name the missing or mistyped field (``missing field `hardware` ``).
pub fn api_row(row: &Value) -> Result<ForeignRow> {
    let m = obj(row)?;
    let mut r = Map::new();
    let s =
        |k: &str| -> Result<String> { get_str(m, k).ok_or_else(|| err!("missing field `{k}`")) };
    r.insert("hw".into(), json!(s("hardware")?));
    r.insert("framework".into(), json!(s("framework")?));
    r.insert("infmax_model_prefix".into(), json!(s("model")?));
    r.insert("precision".into(), json!(s("precision")?));
    r.insert(
        "spec_decoding".into(),
        json!(get_str(m, "spec_method").unwrap_or_else(|| "none".into())),
    );
    let disagg = get_bool(m, "disagg")?.unwrap_or(false);
    let multinode = get_bool(m, "is_multinode")?.unwrap_or(false);
    r.insert("disagg".into(), json!(disagg));
    r.insert("is_multinode".into(), json!(multinode));
    r.insert("benchmark_type".into(), json!("single_turn"));
    for k in ["isl", "osl"] {
        r.insert(k.into(), json!(get_u32(m, k)?));
    }
    r.insert(
        "conc".into(),
        json!(get_u32(m, "conc")?.ok_or_else(|| err!("missing field `conc`"))?),
    );
    let dtp = get_u32(m, "decode_tp")?.ok_or_else(|| err!("missing field `decode_tp`"))?;
    let ptp = get_u32(m, "prefill_tp")?.ok_or_else(|| err!("missing field `prefill_tp`"))?;
    if !multinode {
        r.insert("tp".into(), json!(dtp));
        r.insert("ep".into(), json!(get_u32(m, "decode_ep")?.unwrap_or(1)));
        let dpa = get_bool(m, "decode_dp_attention")?.unwrap_or(false);
        r.insert("dp_attention".into(), json!(dpa.to_string()));
    }
    for pool in ["prefill", "decode"] {
        r.insert(
            format!("{pool}_tp"),
            json!(if pool == "prefill" { ptp } else { dtp }),
        );
        r.insert(
            format!("{pool}_ep"),
            json!(get_u32(m, &format!("{pool}_ep"))?.unwrap_or(1)),
        );
        r.insert(
            format!("{pool}_dp_attention"),
            json!(get_bool(m, &format!("{pool}_dp_attention"))?
                .unwrap_or(false)
                .to_string()),
        );
        r.insert(
            format!("{pool}_num_workers"),
            json!(get_u32(m, &format!("{pool}_num_workers"))?),
        );
        r.insert(
            format!("num_{pool}_gpu"),
            json!(get_u32(m, &format!("num_{pool}_gpu"))?),
        );
    }
    let pg = get_u32(m, "num_prefill_gpu")?.unwrap_or(ptp);
    let dg = get_u32(m, "num_decode_gpu")?.unwrap_or(0);
    r.insert("num_gpus".into(), json!(if disagg { pg + dg } else { pg }));
    for k in ["image", "date", "run_url"] {
        if let Some(v) = get_str(m, k) {
            r.insert(k.into(), json!(v));
        }
    }
    if let Some(w) = m.get("workers").filter(|w| !w.is_null()) {
        r.insert("workers".into(), w.clone());
    }
    r.insert("point_status".into(), json!("ok"));
    r.insert(DASHBOARD_ROW_KEY.into(), json!(true));
    let metrics = m
        .get("metrics")
        .and_then(Value::as_object)
        .ok_or_else(|| err!("missing object field `metrics`"))?;
    for (k, v) in metrics {
        match v {
            Value::Number(_) | Value::Null => {
                if r.contains_key(k) {
                    fail!("metrics.{k}: the key is also an identity field of the row");
                }
                r.insert(k.clone(), v.clone());
            }
            other => fail!("metrics.{k} is {other}, expected a number"),
        }
    }
    Ok(ForeignRow::new(r))
}

const PRECISIONS: &[&str] = &[
    "fp4", "fp8", "fp16", "bf16", "int4", "int8", "mxfp4", "nvfp4",
];
use servebench_engines::TWO_SEGMENT_FRAMEWORKS;

/// Identity fields derived from a config key by the InferenceX naming convention
/// `<model-prefix>-<precision>-<sku>-<framework>[-<variant>…]` (AUTOMATION §1.2): model prefix,
/// precision, hw (= sku), framework, spec decoding (`mtp` if a variant starts with `mtp`,
/// else `none`). `None` when the key does not follow the convention.
pub fn identity_from_config_key(key: &str) -> Option<[(&'static str, String); 5]> {
    let segs: Vec<&str> = key.split('-').collect();
    let p = segs.iter().position(|s| PRECISIONS.contains(s))?;
    if p == 0 || segs.len() < p + 3 {
        return None;
    }
    let prefix = segs[..p].join("-");
    let hw = segs[p + 1].to_string();
    let mut fw = segs[p + 2].to_string();
    let mut rest = p + 3;
    if let Some(next) = segs.get(p + 3) {
        let two = format!("{fw}-{next}");
        if TWO_SEGMENT_FRAMEWORKS.contains(&two.as_str()) {
            fw = two;
            rest += 1;
        }
    }
    let spec = if segs[rest..].iter().any(|s| s.starts_with("mtp")) {
        "mtp"
    } else {
        "none"
    };
    Some([
        ("infmax_model_prefix", prefix),
        ("precision", segs[p].to_string()),
        ("hw", hw),
        ("framework", fw),
        ("spec_decoding", spec.to_string()),
    ])
}

fn known_keys(m: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<()> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            fail!(
                "{at}: unknown field `{k}` (allowed: {})",
                allowed.join(", ")
            );
        }
    }
    Ok(())
}

fn num(m: &Map<String, Value>, k: &str, at: &str) -> Result<Option<f64>> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => fail!("{at}: field `{k}` is {other}, expected a number"),
    }
}

fn table_import(
    m: &Map<String, Value>,
    source: &str,
    ov: &IdentityOverrides,
) -> Result<BaselineImport> {
    known_keys(
        m,
        &[
            "config_key",
            "date",
            "image",
            "workload",
            "topology",
            "statistic",
            "identity",
            "points",
            "evals",
            "note",
        ],
        source,
    )?;
    let mut notes = Vec::new();
    let config_key = m
        .get("config_key")
        .and_then(Value::as_str)
        .map(String::from);
    let date = m.get("date").and_then(Value::as_str).map(String::from);
    let image = m.get("image").and_then(Value::as_str).map(String::from);
    let statistic = match m.get("statistic") {
        None => Stat::Mean,
        Some(Value::String(s)) => Stat::parse(s).ok_or_else(|| {
            err!("{source}: field `statistic` is {s:?}, expected mean|median|p90|p99")
        })?,
        Some(other) => fail!("{source}: field `statistic` is {other}, expected a string"),
    };

    // PointKey: CLI overrides > table `identity` > derived from config_key.
    let ident = table_identity(m, source, config_key.as_deref(), ov, &mut notes)?;

    let (benchmark_type, isl, osl, workload_label) = table_workload(m, source)?;
    let (tp, ep, dpa, topology_label) = table_topology(m, source)?;

    let base_row = |conc: u64| -> Map<String, Value> {
        let mut r = Map::new();
        for k in [
            "hw",
            "framework",
            "infmax_model_prefix",
            "precision",
            "spec_decoding",
            "model",
        ] {
            if let Some(v) = ident.get(k) {
                r.insert(k.to_string(), v.clone());
            }
        }
        r.insert("conc".into(), json!(conc));
        if let Some(i) = &image {
            r.insert("image".into(), json!(i));
        }
        r.insert(
            "disagg".into(),
            ident.get("disagg").cloned().unwrap_or(json!(false)),
        );
        r.insert("isl".into(), isl.clone());
        r.insert("osl".into(), osl.clone());
        r.insert(
            "is_multinode".into(),
            ident.get("is_multinode").cloned().unwrap_or(json!(false)),
        );
        r.insert("tp".into(), json!(tp));
        r.insert("ep".into(), json!(ep));
        r.insert(
            "dp_attention".into(),
            json!(if dpa { "true" } else { "false" }),
        );
        r.insert("benchmark_type".into(), json!(benchmark_type));
        r
    };

    let points = table_points(m, source, statistic, date.as_deref(), &base_row)?;
    let evals = table_evals(m, source, date.as_deref(), &ident, &base_row)?;
    if points.is_empty() && evals.is_empty() {
        fail!("{source}: the baseline table has no points and no evals");
    }
    Ok(BaselineImport {
        format: BaselineFormat::Table,
        config_key,
        date,
        image,
        workload: Some(workload_label),
        topology: Some(topology_label),
        statistic: Some(statistic),
        points,
        evals,
        notes,
    })
}

/// A baseline table's identity: CLI overrides > the table's `identity` > derived from its
/// `config_key` (a note says which keys were derived). Errors: `identity` not an object or
/// with an unknown key; hw, framework, model prefix or precision unknown.
fn table_identity(
    m: &Map<String, Value>,
    source: &str,
    config_key: Option<&str>,
    ov: &IdentityOverrides,
    notes: &mut Vec<String>,
) -> Result<Map<String, Value>> {
    let mut ident = Map::new();
    if let Some(k) = config_key {
        if let Some(fields) = identity_from_config_key(k) {
            for (f, v) in fields {
                ident.insert(f.to_string(), Value::String(v));
            }
        }
    }
    // Keys still holding the value derived from the config key (reported as a note).
    let mut from_key: Vec<String> = ident.keys().cloned().collect();
    if let Some(idv) = m.get("identity") {
        let id = idv
            .as_object()
            .ok_or_else(|| err!("{source}: field `identity` must be an object"))?;
        let at = format!("{source}: identity");
        known_keys(
            id,
            &[
                "hw",
                "framework",
                "model_prefix",
                "infmax_model_prefix",
                "precision",
                "spec_decoding",
                "disagg",
                "is_multinode",
                "model",
            ],
            &at,
        )?;
        for (k, v) in id {
            let k = if k == "model_prefix" {
                "infmax_model_prefix"
            } else {
                k
            };
            from_key.retain(|f| f != k);
            ident.insert(k.to_string(), v.clone());
        }
    }
    for (k, v) in [
        ("hw", &ov.hw),
        ("framework", &ov.framework),
        ("infmax_model_prefix", &ov.model_prefix),
        ("precision", &ov.precision),
        ("spec_decoding", &ov.spec_decoding),
        ("model", &ov.model),
    ] {
        if let Some(v) = v {
            from_key.retain(|f| f != k);
            ident.insert(k.to_string(), Value::String(v.clone()));
        }
    }
    if !from_key.is_empty() {
        let shown: Vec<String> = from_key
            .iter()
            .map(|k| format!("{} {}", k, ident[k.as_str()].as_str().unwrap_or("")))
            .collect();
        notes.push(format!(
            "identity derived from config key `{}` by the InferenceX naming convention: {} \
             (override with --hw/--framework/--model-prefix/--precision/--spec-decoding)",
            config_key.unwrap_or(""),
            shown.join(", ")
        ));
    }
    for req in ["hw", "framework", "infmax_model_prefix", "precision"] {
        if !ident.contains_key(req) {
            fail!(
                "{source}: cannot tell the baseline's `{req}`: add an \"identity\" object or pass \
                 --{} (config_key {} does not follow <model-prefix>-<precision>-<sku>-<framework>)",
                match req {
                    "infmax_model_prefix" => "model-prefix",
                    other => other,
                },
                config_key.map_or("absent".to_string(), |k| format!("`{k}`"))
            );
        }
    }
    Ok(ident)
}

/// A baseline table's `workload`: (benchmark type, isl, osl, label); `"AgentX"` or
/// `"agentic-coding"`, `"8k/1k"` (k = 1024) or `{"isl":…,"osl":…}`.
fn table_workload(
    m: &Map<String, Value>,
    source: &str,
) -> Result<(&'static str, Value, Value, String)> {
    let w = match m.get("workload") {
        Some(Value::String(s)) if s.eq_ignore_ascii_case("agentx") || s == "agentic-coding" => (
            "agentic_traces",
            Value::Null,
            Value::Null,
            "AgentX".to_string(),
        ),
        Some(Value::String(s)) => {
            let parse = |t: &str| -> Option<u64> {
                let t = t.trim().to_ascii_lowercase();
                match t.strip_suffix('k') {
                    Some(k) => k.parse::<u64>().ok().map(|n| n * 1024),
                    None => t.parse().ok(),
                }
            };
            let (i, o) = s
                .split_once('/')
                .and_then(|(a, b)| Some((parse(a)?, parse(b)?)))
                .ok_or_else(|| {
                    err!("{source}: field `workload` is {s:?}, expected \"AgentX\", \"8k/1k\" or {{\"isl\":…,\"osl\":…}}")
                })?;
            ("single_turn", json!(i), json!(o), s.clone())
        }
        Some(Value::Object(w)) => {
            let i = w.get("isl").and_then(Value::as_u64);
            let o = w.get("osl").and_then(Value::as_u64);
            match (i, o) {
                (Some(i), Some(o)) => ("single_turn", json!(i), json!(o), format!("{i}/{o}")),
                _ => fail!("{source}: field `workload` object needs integer `isl` and `osl`"),
            }
        }
        None => fail!(
            "{source}: missing field `workload` (\"AgentX\", \"8k/1k\" or {{\"isl\",\"osl\"}})"
        ),
        Some(other) => fail!("{source}: field `workload` is {other}, expected a string or object"),
    };
    Ok(w)
}

/// A baseline table's `topology`: (tp, ep (default 1), dp_attention (default false),
/// `TP{tp}/EP{ep}`). Errors: missing, an unknown key, no integer `tp`.
fn table_topology(m: &Map<String, Value>, source: &str) -> Result<(u64, u64, bool, String)> {
    let topo = m
        .get("topology")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            err!("{source}: missing field `topology` (e.g. {{\"tp\": 1, \"ep\": 1}})")
        })?;
    known_keys(
        topo,
        &["tp", "ep", "dp_attention", "pp", "dcp_size", "pcp_size"],
        &format!("{source}: topology"),
    )?;
    let tp = topo
        .get("tp")
        .and_then(Value::as_u64)
        .ok_or_else(|| err!("{source}: topology: missing integer field `tp`"))?;
    let ep = topo.get("ep").and_then(Value::as_u64).unwrap_or(1);
    let dpa = topo
        .get("dp_attention")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let topology_label = format!("TP{tp}/EP{ep}");
    Ok((tp, ep, dpa, topology_label))
}

/// A baseline table's `points`, each a foreign row (`base_row(conc)` plus its metrics at
/// `statistic`, latencies ms → s) checked by [`Point::from_foreign`].
fn table_points(
    m: &Map<String, Value>,
    source: &str,
    statistic: Stat,
    date: Option<&str>,
    base_row: &impl Fn(u64) -> Map<String, Value>,
) -> Result<Vec<ForeignRow>> {
    let mut points = Vec::new();
    let pts = match m.get("points") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => fail!("{source}: field `points` must be an array"),
    };
    for (i, p) in pts.iter().enumerate() {
        let at = format!("{source}: points[{i}]");
        let pm = p
            .as_object()
            .ok_or_else(|| err!("{at}: expected an object"))?;
        known_keys(
            pm,
            &[
                "conc",
                "total_tput_per_gpu",
                "tput_per_gpu",
                "output_tput_per_gpu",
                "input_tput_per_gpu",
                "ttft_ms",
                "tpot_ms",
                "itl_ms",
                "e2el_ms",
                "intvty",
                "mean_isl",
                "mean_isl_server",
                "mean_osl",
                "num_requests_total",
                "num_requests_failed",
                "status",
            ],
            &at,
        )?;
        let conc = pm
            .get("conc")
            .and_then(Value::as_u64)
            .ok_or_else(|| err!("{at}: missing integer field `conc`"))?;
        let mut r = base_row(conc);
        let stat = statistic.to_string();
        for (src, dst, factor) in [
            ("total_tput_per_gpu", "tput_per_gpu".to_string(), 1.0),
            ("tput_per_gpu", "tput_per_gpu".to_string(), 1.0),
            (
                "output_tput_per_gpu",
                "output_tput_per_gpu".to_string(),
                1.0,
            ),
            ("input_tput_per_gpu", "input_tput_per_gpu".to_string(), 1.0),
            ("ttft_ms", format!("{stat}_ttft"), 1e-3),
            ("tpot_ms", format!("{stat}_tpot"), 1e-3),
            ("itl_ms", format!("{stat}_itl"), 1e-3),
            ("e2el_ms", format!("{stat}_e2el"), 1e-3),
            ("intvty", format!("{stat}_intvty"), 1.0),
        ] {
            if let Some(x) = num(pm, src, &at)? {
                r.insert(dst, json!(x * factor));
            }
        }
        for k in ["mean_isl", "mean_isl_server", "mean_osl"] {
            if let Some(x) = num(pm, k, &at)? {
                r.insert(k.into(), json!(x));
            }
        }
        for k in ["num_requests_total", "num_requests_failed"] {
            if let Some(x) = pm.get(k) {
                r.insert(k.into(), x.clone());
            }
        }
        let status = pm.get("status").and_then(Value::as_str).unwrap_or("ok");
        if !matches!(status, "ok" | "partial" | "failed") {
            fail!("{at}: field `status` is {status:?}, expected ok|partial|failed");
        }
        r.insert("point_status".into(), json!(status));
        r.insert("statistic".into(), json!(stat));
        if let Some(d) = date {
            r.insert("date".into(), json!(d));
        }
        let row = ForeignRow::new(r);
        Point::from_foreign(&row).with_context(|| at.clone())?;
        points.push(row);
    }
    Ok(points)
}

/// A baseline table's `evals`, each a foreign eval row (`base_row(conc)` plus task, score as
/// a fraction, gate keys) checked by [`EvalPoint::from_foreign`].
fn table_evals(
    m: &Map<String, Value>,
    source: &str,
    date: Option<&str>,
    ident: &Map<String, Value>,
    base_row: &impl Fn(u64) -> Map<String, Value>,
) -> Result<Vec<ForeignRow>> {
    let mut evals = Vec::new();
    let evs = match m.get("evals") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => fail!("{source}: field `evals` must be an array"),
    };
    for (i, e) in evs.iter().enumerate() {
        let at = format!("{source}: evals[{i}]");
        let em = e
            .as_object()
            .ok_or_else(|| err!("{at}: expected an object"))?;
        known_keys(
            em,
            &[
                "task",
                "metric",
                "conc",
                "score",
                "score_se",
                "samples",
                "passed",
                "threshold",
            ],
            &at,
        )?;
        let conc = em
            .get("conc")
            .and_then(Value::as_u64)
            .ok_or_else(|| err!("{at}: missing integer field `conc`"))?;
        let task = em
            .get("task")
            .and_then(Value::as_str)
            .ok_or_else(|| err!("{at}: missing string field `task`"))?;
        let mut r = base_row(conc);
        r.insert("model_prefix".into(), ident["infmax_model_prefix"].clone());
        r.insert("task".into(), json!(task));
        let metric = em
            .get("metric")
            .and_then(Value::as_str)
            .unwrap_or("em_strict");
        r.insert("score_name".into(), json!(metric));
        if let Some(s) = num(em, "score", &at)? {
            if !(0.0..=1.0).contains(&s) {
                fail!("{at}: field `score` is {s}, expected a fraction between 0 and 1 (97.95 % → 0.9795)");
            }
            r.insert("score".into(), json!(s));
            r.insert(metric.to_string(), json!(s));
        }
        for (src, dst) in [
            ("score_se", "score_se"),
            ("samples", "n_eff"),
            ("passed", "passed"),
            ("threshold", "threshold"),
        ] {
            if let Some(x) = em.get(src) {
                r.insert(dst.into(), x.clone());
            }
        }
        if let Some(d) = date {
            r.insert("date".into(), json!(d));
        }
        let row = ForeignRow::new(r);
        EvalPoint::from_foreign(&row).with_context(|| at.clone())?;
        evals.push(row);
    }
    Ok(evals)
}

/// Top-level agg keys that are identity or counts, not metrics (not copied into
/// [`Point::values`]).
/// Sorts a row's open keys: numbers (other than [`NON_METRIC_KEYS`]) into `values`, objects and
/// arrays into `extra`; strings, booleans and nulls are left out. Used for foreign rows here and
/// for the open remainder of typed rows in `point.rs`.
pub(crate) fn sort_open_keys<'a>(
    kv: impl IntoIterator<Item = (&'a String, &'a Value)>,
    values: &mut Metrics,
    extra: &mut BTreeMap<String, Value>,
) {
    for (k, v) in kv {
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
}

pub(crate) const NON_METRIC_KEYS: &[&str] = &[
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

/// A string, or a number or boolean written as its text (foreign rows mix them).
pub(crate) fn str_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn get_str(m: &Map<String, Value>, key: &str) -> Option<String> {
    str_of(m.get(key))
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

/// A number, or a numeric string.
pub(crate) fn f64_of(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn get_f64(m: &Map<String, Value>, key: &str) -> Option<f64> {
    f64_of(m.get(key))
}

/// Booleans written as JSON booleans or as `"true"`/`"false"` strings (InferenceX agg rows
/// write `dp_attention` as a string).
fn get_bool(m: &Map<String, Value>, key: &str) -> Result<Option<bool>> {
    bool_of(key, m.get(key))
}

/// [`get_bool`] of a value already looked up (`key` names it in errors).
pub(crate) fn bool_of(key: &str, v: Option<&Value>) -> Result<Option<bool>> {
    match v {
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

impl PointKey {
    /// Reads the match identity from an agg row or an eval row.
    ///
    /// Required: `hw`, `framework`, `infmax_model_prefix` (eval rows: `model_prefix`),
    /// `precision`, `conc`, and `tp` (single-node) or `prefill_tp`/`decode_tp` (multinode).
    /// Defaults: `spec_decoding` "none", `disagg`/`is_multinode`/`dp_attention` false, `ep` 1.
    /// `benchmark_type` is read, or `agentic_traces` when `scenario_type == "agentic-coding"`.
    ///
    /// Errors name the missing/bad field, e.g. ``missing or non-string field `hw` ``.
    pub fn from_row(row: &Value) -> Result<PointKey> {
        PointKey::from_map(obj(row)?)
    }

    fn from_map(m: &Map<String, Value>) -> Result<PointKey> {
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
        } else if get_str(m, "benchmark_type").as_deref() == Some("multi_turn") {
            BenchmarkType::MultiTurn
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
            BenchmarkType::SingleTurn | BenchmarkType::MultiTurn => {
                (get_u32(m, "isl")?, get_u32(m, "osl")?)
            }
        };
        Ok(PointKey {
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
            kv_offloading: servebench_contracts::KvOffload::parse(
                get_str(m, servebench_contracts::KvOffload::KEY)
                    .or_else(|| get_str(m, "offloading"))
                    .as_deref(),
            ),
        })
    }

    /// The match identity of a foreign row ([`PointKey::from_row`]).
    pub fn from_foreign(row: &ForeignRow) -> Result<PointKey> {
        PointKey::from_map(row.as_object())
    }
}

/// Flattens an AgentX aggregate's `request_metrics` into agg-row keys (seconds, tok/s/GPU).
/// The AgentX trace dataset label of a row: its `dataset` string, or the first of the
/// `dataset` block's `name`, `hf_dataset_name`, `loader`, `source`, `source_type`.
pub(crate) fn dataset_of(m: &Map<String, Value>) -> Option<String> {
    match m.get("dataset") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(d)) => ["name", "hf_dataset_name", "loader", "source", "source_type"]
            .iter()
            .find_map(|k| get_str(d, k)),
        _ => None,
    }
}

/// Flattens an AgentX aggregate (its `request_metrics` and `server_metrics` blocks) into
/// agg-row keys; keys already present are kept.
pub(crate) fn flatten_agentic(m: &Map<String, Value>, values: &mut Metrics) {
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
    // The rest of the nested aggregate under the flat names InferenceX's agg_bmk.json rows
    // give the same numbers (S9 captures): `<stat>_qps`, `<stat>_input_tokens`,
    // `<stat>_output_tokens_actual|expected`, `*_tput_tps`, `duration_seconds`.
    let six = [
        ("mean", "mean"),
        ("p50", "median"),
        ("p75", "p75"),
        ("p90", "p90"),
        ("p95", "p95"),
        ("std", "std"),
    ];
    let mut put = |k: String, v: Option<f64>| {
        if let Some(v) = v {
            values.entry(k).or_insert(v);
        }
    };
    if let Some(q) = rm.get("qps").and_then(Value::as_object) {
        for (stat, prefix) in six {
            put(format!("{prefix}_qps"), get_f64(q, stat));
        }
    }
    if let Some(t) = rm.get("tokens").and_then(Value::as_object) {
        for (block, name) in [
            ("input", "input_tokens"),
            ("output_actual", "output_tokens_actual"),
            ("output_expected", "output_tokens_expected"),
        ] {
            if let Some(b) = t.get(block).and_then(Value::as_object) {
                for (stat, prefix) in six {
                    put(format!("{prefix}_{name}"), get_f64(b, stat));
                }
            }
        }
    }
    if let Some(th) = rm.get("throughput").and_then(Value::as_object) {
        for (block, name) in [
            ("input", "input_tput_tps"),
            ("output", "output_tput_tps"),
            ("total", "total_tput_tps"),
        ] {
            put(
                name.to_string(),
                th.get(block)
                    .and_then(|b| b.get("tokens_per_second"))
                    .and_then(|x| f64_of(Some(x))),
            );
        }
        put("duration_seconds".into(), get_f64(th, "duration_seconds"));
    }
    if let Some(c) = rm.get("cache").and_then(Value::as_object) {
        put(
            "theoretical_cache_hit_rate".into(),
            get_f64(c, "theoretical_cache_hit_rate"),
        );
    }
    flatten_server_metrics(m, &mut put);
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

/// The AgentX aggregate's `server_metrics` block under the flat agg_bmk names
/// (`server_gpu_cache_hit_rate`, `gpu_kv_cache_usage_pct`, `kv_offload_bytes_gpu_to_cpu`,
/// `total_prompt_tokens`, …) plus its prompt tokens by source (`prompt_tokens_gpu_cache_hit`,
/// `prompt_tokens_cpu_or_external_cache_hit`, `prompt_tokens_computed`, and each
/// `prompt_by_source.raw` source as `prompt_tokens_raw_<source>`).
fn flatten_server_metrics(m: &Map<String, Value>, put: &mut impl FnMut(String, Option<f64>)) {
    let Some(sm) = m.get("server_metrics").and_then(Value::as_object) else {
        return;
    };
    let block = |k: &str| sm.get(k).and_then(Value::as_object);
    if let Some(c) = block("cache") {
        for (src, dst) in [
            ("gpu_cache_hit_rate", "server_gpu_cache_hit_rate"),
            ("cpu_cache_hit_rate", "server_cpu_cache_hit_rate"),
            ("external_cache_hit_rate", "server_external_cache_hit_rate"),
            ("overall_cache_hit_rate", "server_overall_cache_hit_rate"),
            ("prefix_cache_hits", "prefix_cache_hits"),
            ("prefix_cache_queries", "prefix_cache_queries"),
            ("external_prefix_cache_hits", "external_prefix_cache_hits"),
            (
                "external_prefix_cache_queries",
                "external_prefix_cache_queries",
            ),
        ] {
            put(dst.to_string(), get_f64(c, src));
        }
    }
    if let Some(k) = block("kv_cache") {
        for (src, dst) in [
            ("gpu_usage_pct", "gpu_kv_cache_usage_pct"),
            ("cpu_usage_pct", "cpu_kv_cache_usage_pct"),
            ("cpu_used_tokens", "cpu_kv_cache_used_tokens"),
            ("cpu_total_tokens", "cpu_kv_cache_total_tokens"),
        ] {
            put(dst.to_string(), get_f64(k, src));
        }
    }
    if let Some(o) = block("kv_offload") {
        for k in [
            "bytes_gpu_to_cpu",
            "bytes_cpu_to_gpu",
            "time_gpu_to_cpu",
            "time_cpu_to_gpu",
            "bandwidth_gpu_to_cpu_bytes_per_second",
            "bandwidth_cpu_to_gpu_bytes_per_second",
        ] {
            put(format!("kv_offload_{k}"), get_f64(o, k));
        }
    }
    if let Some(t) = block("tokens") {
        for (src, dst) in [
            ("prompt_total", "total_prompt_tokens"),
            ("generation_total", "total_generation_tokens"),
            ("requests_completed", "total_requests_completed"),
        ] {
            put(dst.to_string(), get_f64(t, src));
        }
        if let Some(p) = t.get("prompt_by_source").and_then(Value::as_object) {
            for k in ["gpu_cache_hit", "cpu_or_external_cache_hit", "computed"] {
                put(format!("prompt_tokens_{k}"), get_f64(p, k));
            }
            if let Some(raw) = p.get("raw").and_then(Value::as_object) {
                for (k, v) in raw {
                    put(format!("prompt_tokens_raw_{k}"), f64_of(Some(v)));
                }
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
        Self::from_map(obj(row)?)
    }

    /// Reads one foreign row (what a baseline run stores), as [`Point::from_agg_row`].
    pub fn from_foreign(row: &ForeignRow) -> Result<Point> {
        Self::from_map(row.as_object())
    }

    fn from_map(m: &Map<String, Value>) -> Result<Point> {
        let identity = PointKey::from_map(m)?;
        let mut values = Metrics::new();
        let mut extra = BTreeMap::new();
        sort_open_keys(m, &mut values, &mut extra);
        let agentic = is_agentic(m);
        if agentic {
            flatten_agentic(m, &mut values);
        }
        // a servebench AgentX row carries its aggregate under `agentx` (as Point::from_agg reads)
        let agentx = m.get("agentx").and_then(Value::as_object);
        if let Some(ax) = agentx {
            flatten_agentic(ax, &mut values);
        }
        let mut total = get_u64(m, "num_requests_total")?;
        let ok = get_u64(m, "num_requests_successful")?;
        // An AgentX aggregate's `num_requests_total` counts the warmup requests too (S7: 1,607
        // records, 887 of them warmup, 720 profiled): its profiling requests are total −
        // warmup, and the failed ones those dropped for an error outside the warmup
        // (`records_dropped_total − records_warmup_dropped`), as the harness's 10 % gate
        // counts them.
        let accounting = m
            .get("request_accounting")
            .and_then(Value::as_object)
            .filter(|_| agentic && get_u64(m, "num_requests_failed").ok().flatten().is_none());
        let mut failed_profiling = None;
        if let Some(a) = accounting {
            if let (Some(t), Some(w), Some(d)) = (
                get_u64(a, "records_total")?,
                get_u64(a, "records_warmup_dropped")?,
                get_u64(a, "records_dropped_total")?,
            ) {
                total = Some(t.saturating_sub(w));
                failed_profiling = Some(d.saturating_sub(w));
            }
        }
        let failed = get_u64(m, "num_requests_failed")?
            .or(failed_profiling)
            .or_else(|| match (total, ok) {
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
        let dataset = dataset_of(m).or_else(|| agentx.and_then(dataset_of));
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
            // AgentX: the nested aggregate's token blocks, else the flat agg_bmk keys
            mean_isl_server: get_f64(m, "mean_isl_server").or_else(|| {
                agentic
                    .then(|| {
                        agentic_tokens_mean(m, "input").or_else(|| get_f64(m, "mean_input_tokens"))
                    })
                    .flatten()
            }),
            mean_osl: get_f64(m, "mean_osl").or_else(|| {
                agentic
                    .then(|| {
                        agentic_tokens_mean(m, "output_actual")
                            .or_else(|| get_f64(m, "mean_output_tokens_actual"))
                    })
                    .flatten()
            }),
            values,
            repeats: Vec::new(),
            extra,
            ci: BTreeMap::new(),
            run_url: get_str(m, "run_url"),
            date: get_str(m, "date"),
            dashboard_row: get_bool(m, DASHBOARD_ROW_KEY)?.unwrap_or(false),
            samples: None,
            noise_floor: BTreeMap::new(),
            submission_invalid: submission_invalid_of(
                m.get(SUBMISSION_VALID_KEY),
                m.get(SUBMISSION_REASONS_KEY),
            ),
        })
    }
}

impl EvalPoint {
    /// Reads one eval row. Score: `score` (fraction), else `em_strict`, else `acc`; metric name
    /// `score_name`, else `metric`, else `"em_strict"`; samples `n_eff` or `samples`;
    /// `passed` when the row says so, else (InferenceX `validate_scores.py`) every present
    /// `em_strict`/`em_flexible` (or the score) ≥ `threshold` (row field, else
    /// [`eval_threshold`]). A row without a score is not passed.
    pub fn from_eval_row(row: &Value) -> Result<EvalPoint> {
        Self::from_map(obj(row)?)
    }

    /// Reads one foreign eval row (what a baseline run stores), as
    /// [`EvalPoint::from_eval_row`].
    pub fn from_foreign(row: &ForeignRow) -> Result<EvalPoint> {
        Self::from_map(row.as_object())
    }

    fn from_map(m: &Map<String, Value>) -> Result<EvalPoint> {
        let identity = PointKey::from_map(m)?;
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
