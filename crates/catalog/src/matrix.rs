//! Matrix expansion and eval marking, at parity with InferenceX's
//! `utils/matrix_logic/generate_sweep_configs.py` (commit 843c6254, AUTOMATION.md §2.2–2.5).
//!
//! Rows are insertion-ordered JSON maps whose key order is the generator's construction order,
//! so [`crate::pyjson::dumps_py`] of the row list is byte-identical to the generator's stdout.
//!
//! Row shapes (all defaults resolved):
//! * single-node fixed: `image, model, model-prefix, precision, framework, runner, isl, osl, tp,
//!   pp, dcp-size, pcp-size, conc, max-model-len (= isl+osl+256), ep, dp-attn, spec-decoding,
//!   exp-name ("<prefix>_<1k1k|8k1k|isl_osl>"), disagg, run-eval[, router][, kv-p2p-transfer]`;
//! * multinode fixed: `…, isl, osl, spec-decoding, prefill, decode, conc: [..], max-model-len,
//!   exp-name, disagg, run-eval[, router][, kv-p2p-transfer]` (workers as written + pp/dcp/pcp);
//! * single-node agentic: `…, tp, pp, dcp-size, pcp-size, ep, dp-attn, spec-decoding, conc,
//!   kv-offloading, total-cpu-dram-gb, duration (3600 s), exp-name, scenario-type[, kv-offload-backend]…`;
//! * multinode agentic: one row per concurrency (`conc: [c]`), exp-name encodes the topology.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::catalog::{Catalog, Runners};
use crate::error::CatalogError;
use crate::pyjson::{dumps_canonical_fields, dumps_canonical_filtered, py_float_repr};
use crate::schema::{expand_range, Conc, ConfigEntry, KvOffloading, SearchEntry, Topology, Worker};

/// One matrix row (ordered JSON object).
pub type Row = Map<String, Value>;

/// Room reserved in a new row: the most fields a row gets (21 in the golden outputs, plus
/// `eval-conc`/`eval-only` added later), so building a row never regrows its map.
const ROW_FIELDS: usize = 24;

/// Agentic run length emitted in every agentic row, seconds.
pub const DEFAULT_AGENTIC_DURATION_SECONDS: i64 = 3600;
/// Rows with a lower concurrency are never eval-marked.
pub const MIN_EVAL_CONC: i64 = 16;
/// 3 TB decimal expressed in MiB: the cap on a node's DRAM before utilization scaling.
pub const MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB: i64 = 2_861_022;

/// `1k1k` / `8k1k` → (ISL, OSL) tokens.
pub fn seq_len_from_str(s: &str) -> Option<(i64, i64)> {
    match s {
        "1k1k" => Some((1024, 1024)),
        "8k1k" => Some((8192, 1024)),
        _ => None,
    }
}

/// (ISL, OSL) → `1k1k` / `8k1k` / `<isl>_<osl>`.
pub fn seq_len_to_str(isl: i64, osl: i64) -> String {
    match (isl, osl) {
        (1024, 1024) => "1k1k".into(),
        (8192, 1024) => "8k1k".into(),
        _ => format!("{isl}_{osl}"),
    }
}

/// Scenario types (`--scenario-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScenarioType {
    /// `fixed-seq-len`.
    FixedSeqLen,
    /// `agentic-coding`.
    AgenticCoding,
}

impl ScenarioType {
    /// Parses the CLI spelling.
    pub fn parse(s: &str) -> Option<ScenarioType> {
        match s {
            "fixed-seq-len" => Some(ScenarioType::FixedSeqLen),
            "agentic-coding" => Some(ScenarioType::AgenticCoding),
            _ => None,
        }
    }
    /// The CLI spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScenarioType::FixedSeqLen => "fixed-seq-len",
            ScenarioType::AgenticCoding => "agentic-coding",
        }
    }
}

/// Options shared by both generator modes.
#[derive(Debug, Clone, Default)]
pub struct Common {
    /// `--no-evals`: skip eval marking entirely.
    pub no_evals: bool,
    /// `--evals-only`: keep only eval rows (`eval-only: true`).
    pub evals_only: bool,
    /// `--all-evals`: every 8k1k row becomes an eval row (and only eval rows are kept).
    pub all_evals: bool,
    /// `--runner-node-filter SUBSTR`: expand one row per matching concrete runner.
    pub runner_node_filter: Option<String>,
    /// `--scenario-type …` (None = all).
    pub scenario_type: Option<Vec<ScenarioType>>,
}

/// `full-sweep` filters.
#[derive(Debug, Clone)]
pub struct FullSweep {
    /// Key prefixes (`--model-prefix`, matched against the config **key**).
    pub model_prefix: Option<Vec<String>>,
    /// `--precision`.
    pub precision: Option<Vec<String>>,
    /// `--framework`.
    pub framework: Option<Vec<String>>,
    /// `--runner-type` (must be runner labels).
    pub runner_type: Option<Vec<String>>,
    /// `--seq-lens` as (ISL, OSL).
    pub seq_lens: Option<Vec<(i64, i64)>>,
    /// `--step-size` (> 1, default 2).
    pub step_size: i64,
    /// `--min-conc`.
    pub min_conc: Option<i64>,
    /// `--max-conc`.
    pub max_conc: Option<i64>,
    /// `--max-tp` (rows with larger TP are skipped).
    pub max_tp: Option<i64>,
    /// `--max-ep` (larger EP is clamped, rows kept).
    pub max_ep: Option<i64>,
    /// `--single-node` (after defaulting: neither flag means both).
    pub single_node: bool,
    /// `--multi-node`.
    pub multi_node: bool,
}

impl Default for FullSweep {
    fn default() -> Self {
        FullSweep {
            model_prefix: None,
            precision: None,
            framework: None,
            runner_type: None,
            seq_lens: None,
            step_size: 2,
            min_conc: None,
            max_conc: None,
            max_tp: None,
            max_ep: None,
            single_node: true,
            multi_node: true,
        }
    }
}

/// `test-config` selection.
#[derive(Debug, Clone, Default)]
pub struct TestConfig {
    /// Exact keys or fnmatch globs (`*`, `?`, `[..]`).
    pub config_keys: Vec<String>,
    /// `--conc`: keep only these values (intersection, source order).
    pub conc: Option<Vec<i64>>,
    /// `--seq-lens` as (ISL, OSL).
    pub seq_lens: Option<Vec<(i64, i64)>>,
}

fn scenario_allowed(common: &Common, t: ScenarioType) -> bool {
    common
        .scenario_type
        .as_ref()
        .map(|v| v.contains(&t))
        .unwrap_or(true)
}

fn filter_str(f: &Option<String>) -> Option<&str> {
    f.as_deref().filter(|s| !s.is_empty())
}

/// `router` and `kv-p2p-transfer` from the entry, else from the config's top level.
fn component_metadata(row: &mut Row, bmk: &SearchEntry, cfg: &ConfigEntry) {
    if let Some(r) = bmk.router.clone().or_else(|| cfg.router.clone()) {
        row.insert("router".into(), r);
    }
    if let Some(t) = bmk
        .kv_p2p_transfer
        .clone()
        .or_else(|| cfg.kv_p2p_transfer.clone())
    {
        row.insert("kv-p2p-transfer".into(), Value::String(t));
    }
}

fn ints(v: &[i64]) -> Value {
    Value::Array(v.iter().map(|c| Value::from(*c)).collect())
}

fn base(row: &mut Row, cfg: &ConfigEntry, runner: &str) {
    row.insert("image".into(), cfg.image.clone().into());
    row.insert("model".into(), cfg.model.clone().into());
    row.insert("model-prefix".into(), cfg.model_prefix.clone().into());
    row.insert("precision".into(), cfg.precision.clone().into());
    row.insert("framework".into(), cfg.framework.clone().into());
    row.insert("runner".into(), runner.into());
}

#[allow(clippy::too_many_arguments)]
fn single_fixed_row(
    cfg: &ConfigEntry,
    bmk: &SearchEntry,
    runner: &str,
    isl: i64,
    osl: i64,
    conc: i64,
    ep_override: Option<Option<i64>>,
) -> Row {
    let Topology::Single {
        tp,
        pp,
        dcp_size,
        pcp_size,
        ep,
        dp_attn,
    } = &bmk.topology
    else {
        unreachable!("single-node row from a single-node entry")
    };
    let ep = ep_override.unwrap_or(*ep);
    let mut row = Row::with_capacity(ROW_FIELDS);
    base(&mut row, cfg, runner);
    row.insert("isl".into(), isl.into());
    row.insert("osl".into(), osl.into());
    row.insert("tp".into(), (*tp).into());
    row.insert("pp".into(), (*pp).into());
    row.insert("dcp-size".into(), (*dcp_size).into());
    row.insert("pcp-size".into(), (*pcp_size).into());
    row.insert("conc".into(), conc.into());
    row.insert("max-model-len".into(), (isl + osl + 256).into());
    row.insert("ep".into(), ep.unwrap_or(1).into());
    row.insert("dp-attn".into(), dp_attn.unwrap_or(false).into());
    row.insert("spec-decoding".into(), bmk.spec_decoding.as_str().into());
    row.insert(
        "exp-name".into(),
        format!("{}_{}", cfg.model_prefix, seq_len_to_str(isl, osl)).into(),
    );
    row.insert("disagg".into(), cfg.disagg.into());
    row.insert("run-eval".into(), false.into());
    component_metadata(&mut row, bmk, cfg);
    row
}

fn multi_fixed_row(
    cfg: &ConfigEntry,
    bmk: &SearchEntry,
    runner: &str,
    isl: i64,
    osl: i64,
    conc: &[i64],
) -> Row {
    let Topology::Disagg { prefill, decode } = &bmk.topology else {
        unreachable!("multinode row from a multinode entry")
    };
    let mut row = Row::with_capacity(ROW_FIELDS);
    base(&mut row, cfg, runner);
    row.insert("isl".into(), isl.into());
    row.insert("osl".into(), osl.into());
    row.insert("spec-decoding".into(), bmk.spec_decoding.as_str().into());
    row.insert("prefill".into(), Value::Object(prefill.matrix_json()));
    row.insert("decode".into(), Value::Object(decode.matrix_json()));
    row.insert("conc".into(), ints(conc));
    row.insert("max-model-len".into(), (isl + osl + 256).into());
    row.insert(
        "exp-name".into(),
        format!("{}_{}", cfg.model_prefix, seq_len_to_str(isl, osl)).into(),
    );
    row.insert("disagg".into(), cfg.disagg.into());
    row.insert("run-eval".into(), false.into());
    component_metadata(&mut row, bmk, cfg);
    row
}

fn kv_suffix(bmk: &SearchEntry) -> String {
    match bmk.kv_offloading.unwrap_or(KvOffloading::None) {
        KvOffloading::None => "kvnone".into(),
        KvOffloading::Dram => {
            let name = bmk
                .kv_offload_backend
                .as_ref()
                .and_then(|b| b.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or("");
            format!("kvdram-{name}")
        }
    }
}

fn single_agentic_row(
    cfg: &ConfigEntry,
    bmk: &SearchEntry,
    runner: &str,
    conc: i64,
    dram_gb: i64,
) -> Row {
    let Topology::Single {
        tp,
        pp,
        dcp_size,
        pcp_size,
        ep,
        dp_attn,
    } = &bmk.topology
    else {
        unreachable!("single-node agentic row")
    };
    let kv = bmk.kv_offloading.unwrap_or(KvOffloading::None);
    let mut row = Row::with_capacity(ROW_FIELDS);
    base(&mut row, cfg, runner);
    row.insert("tp".into(), (*tp).into());
    row.insert("pp".into(), (*pp).into());
    row.insert("dcp-size".into(), (*dcp_size).into());
    row.insert("pcp-size".into(), (*pcp_size).into());
    row.insert("ep".into(), ep.unwrap_or(1).into());
    row.insert("dp-attn".into(), dp_attn.unwrap_or(false).into());
    row.insert("spec-decoding".into(), bmk.spec_decoding.as_str().into());
    row.insert("conc".into(), conc.into());
    row.insert("kv-offloading".into(), kv.as_str().into());
    row.insert("total-cpu-dram-gb".into(), dram_gb.into());
    row.insert("duration".into(), DEFAULT_AGENTIC_DURATION_SECONDS.into());
    let spec = match bmk.spec_decoding.as_str() {
        "none" => String::new(),
        s => format!("_spec-{s}"),
    };
    row.insert(
        "exp-name".into(),
        format!(
            "{}_tp{}_conc{}_{}{}",
            cfg.model_prefix,
            tp,
            conc,
            kv_suffix(bmk),
            spec
        )
        .into(),
    );
    row.insert("scenario-type".into(), "agentic-coding".into());
    if let Some(b) = &bmk.kv_offload_backend {
        row.insert("kv-offload-backend".into(), b.clone());
    }
    component_metadata(&mut row, bmk, cfg);
    row
}

fn worker_tag(w: &Worker, role: &str) -> String {
    let ep = w.json.get("ep").and_then(Value::as_i64).unwrap_or(1);
    let dpa = w
        .json
        .get("dp-attn")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut tag = format!("{role}{}x{}", w.num_worker, w.tp);
    if ep != 1 {
        tag.push_str(&format!("ep{ep}"));
    }
    if dpa {
        tag.push_str("dpa");
    }
    tag
}

fn multi_agentic_row(
    cfg: &ConfigEntry,
    bmk: &SearchEntry,
    runner: &str,
    conc: &[i64],
    dram_gb: i64,
) -> Row {
    let Topology::Disagg { prefill, decode } = &bmk.topology else {
        unreachable!("multinode agentic row")
    };
    let kv = bmk.kv_offloading.unwrap_or(KvOffloading::None);
    let suffix = if kv == KvOffloading::None {
        String::new()
    } else {
        format!("_{}", kv_suffix(bmk))
    };
    let mut row = Row::with_capacity(ROW_FIELDS);
    base(&mut row, cfg, runner);
    row.insert("spec-decoding".into(), bmk.spec_decoding.as_str().into());
    row.insert("prefill".into(), Value::Object(prefill.matrix_json()));
    row.insert("decode".into(), Value::Object(decode.matrix_json()));
    row.insert("conc".into(), ints(conc));
    row.insert("kv-offloading".into(), kv.as_str().into());
    row.insert("total-cpu-dram-gb".into(), dram_gb.into());
    row.insert("duration".into(), DEFAULT_AGENTIC_DURATION_SECONDS.into());
    let concs: Vec<String> = conc.iter().map(|c| c.to_string()).collect();
    row.insert(
        "exp-name".into(),
        format!(
            "{}_{}_{}_conc{}{}",
            cfg.model_prefix,
            worker_tag(prefill, "p"),
            worker_tag(decode, "d"),
            concs.join("x"),
            suffix
        )
        .into(),
    );
    row.insert("disagg".into(), cfg.disagg.into());
    row.insert("scenario-type".into(), "agentic-coding".into());
    if let Some(b) = &bmk.kv_offload_backend {
        row.insert("kv-offload-backend".into(), b.clone());
    }
    component_metadata(&mut row, bmk, cfg);
    row
}

/// Parses Python's `str(float)` into an exact decimal `(numerator, scale)`: `"0.21429"` →
/// `(21429, 5)`, `"1e-05"` → `(1, 5)`.
fn decimal_of(x: f64) -> (u128, u32) {
    let s = py_float_repr(x);
    let (mant, exp) = match s.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse::<i32>().unwrap_or(0)),
        None => (s.clone(), 0),
    };
    let (int_part, frac_part) = mant.split_once('.').unwrap_or((&mant, ""));
    let digits = format!("{int_part}{frac_part}");
    let mut num: u128 = digits.parse().unwrap_or(0);
    let mut scale = frac_part.len() as i32 - exp;
    while scale < 0 {
        num *= 10;
        scale += 1;
    }
    (num, scale as u32)
}

fn hardware_int(runners: &Runners, runner: &str, field: &str) -> Result<i64, CatalogError> {
    let hw = runners.hardware.get(runner);
    let v = hw.map(|h| match field {
        "available-cpu-dram-mib" => h.available_cpu_dram_mib.0,
        _ => h.gpus_per_node.0,
    });
    v.ok_or_else(|| {
        let mut keys: Vec<&str> = runners.hardware.keys().map(String::as_str).collect();
        keys.sort();
        CatalogError::msg(format!(
            "Runner '{runner}' requires '{field}' in runner hardware metadata. Available hardware keys: {}",
            keys.join(", ")
        ))
    })
}

fn worker_gpus_per_node(w: &Worker, gpn: i64) -> Result<i64, CatalogError> {
    let per = w.gpus_per_replica();
    if per > gpn {
        if per % gpn != 0 {
            return Err(CatalogError::msg(format!(
                "worker tp*pp*pcp-size={per} spans multiple nodes but is not a multiple of gpus-per-node={gpn}"
            )));
        }
        return Ok(gpn);
    }
    if gpn % per != 0 {
        return Err(CatalogError::msg(format!(
            "worker tp*pp*pcp-size={per} does not divide gpus-per-node={gpn} evenly"
        )));
    }
    Ok(per)
}

/// DRAM offload budget for one agentic server, GB (decimal), 0 unless `kv-offloading: dram`:
/// `floor(min(available_mib, 2_861_022) × 2^20 × dram_utilization × used_gpus / gpus_per_node / 1e9)`.
///
/// `used_gpus` is `tp×pp×pcp` for single-node (error when it exceeds the node) and the prefill
/// replica's per-node footprint for multinode. Exact rational arithmetic on the decimal text of
/// `dram_utilization` (Python: `Decimal(str(x))`). Source: InferenceX `agentic_dram_offload_gb`.
pub fn agentic_dram_offload_gb(
    dram_utilization: Option<f64>,
    bmk: &SearchEntry,
    runner: &str,
    runners: &Runners,
) -> Result<i64, CatalogError> {
    if bmk.kv_offloading != Some(KvOffloading::Dram) {
        return Ok(0);
    }
    let available = hardware_int(runners, runner, "available-cpu-dram-mib")?
        .min(MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB);
    let util = dram_utilization
        .ok_or_else(|| CatalogError::msg("kv-offloading='dram' requires dram-utilization"))?;
    let (num, scale) = decimal_of(util);
    let gpn = hardware_int(runners, runner, "gpus-per-node")?;
    let gpus = match &bmk.topology {
        Topology::Disagg { prefill, .. } => worker_gpus_per_node(prefill, gpn)?,
        Topology::Single {
            tp, pp, pcp_size, ..
        } => {
            let g = tp * pp * pcp_size;
            if g > gpn {
                return Err(CatalogError::msg(format!(
                    "tp={tp} with pp={pp} and pcp-size={pcp_size} requires {g} GPUs and exceeds gpus-per-node={gpn} for runner '{runner}'"
                )));
            }
            g
        }
    };
    let numer = (available as u128) * 1_048_576u128 * num * (gpus as u128);
    let denom = 10u128.pow(scale) * (gpn as u128) * 1_000_000_000u128;
    Ok((numer / denom) as i64)
}

fn runner_values_test_config(runner: &str, runners: &Runners, filter: Option<&str>) -> Vec<String> {
    let Some(f) = filter else {
        return vec![runner.to_string()];
    };
    let mut candidates: Vec<&str> = Vec::new();
    if runner.contains(f) {
        candidates.push(runner);
    }
    candidates.extend(runners.nodes(runner).iter().map(String::as_str));
    let mut seen = HashSet::new();
    candidates
        .into_iter()
        .filter(|n| n.contains(f) && seen.insert(n.to_string()))
        .map(str::to_string)
        .collect()
}

fn python_set_repr(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// `full-sweep`: every config that passes the filters, expanded (no eval marking yet).
///
/// Per config (catalog order): the key/precision/framework/runner-type filters
/// ([`FullSweep::selects`]), the runners it expands to (`--runner-node-filter`), the
/// single/multi-node switch, then its fixed-sequence rows and its agentic rows.
///
/// Errors: an unknown `--runner-type` label (reference wording), DRAM budget errors.
pub fn generate_full_sweep(
    fs: &FullSweep,
    common: &Common,
    catalog: &Catalog,
    runners: &Runners,
) -> Result<Vec<Row>, CatalogError> {
    check_runner_types(fs, runners)?;
    let mut rows = Vec::new();
    let node_filter = filter_str(&common.runner_node_filter);
    for (key, cfg) in &catalog.entries {
        if !fs.selects(key, cfg) {
            continue;
        }
        let Some(entry_runners) = runners_for_entry(cfg, runners, node_filter) else {
            continue;
        };
        if !fs.allows_nodes(cfg.multinode) {
            continue;
        }
        if scenario_allowed(common, ScenarioType::FixedSeqLen) {
            fs.push_fixed_rows(&mut rows, cfg, &entry_runners);
        }
        if scenario_allowed(common, ScenarioType::AgenticCoding) {
            fs.push_agentic_rows(&mut rows, cfg, &entry_runners, runners)?;
        }
    }
    Ok(rows)
}

/// `--runner-type` must name runner labels: the unknown ones as a Python set, then the valid
/// labels (the reference's wording).
fn check_runner_types(fs: &FullSweep, runners: &Runners) -> Result<(), CatalogError> {
    let Some(types) = &fs.runner_type else {
        return Ok(());
    };
    let mut invalid: Vec<String> = types
        .iter()
        .filter(|t| !runners.labels.contains_key(*t))
        .cloned()
        .collect();
    invalid.sort();
    invalid.dedup();
    if invalid.is_empty() {
        return Ok(());
    }
    let mut valid: Vec<&str> = runners.labels.keys().map(String::as_str).collect();
    valid.sort();
    Err(CatalogError::msg(format!(
        "Invalid runner type(s): {}. Valid runner types are: {}",
        python_set_repr(&invalid),
        valid.join(", ")
    )))
}

/// The runners a config's rows are written for: its runner label, or with
/// `--runner-node-filter` each concrete node of the label containing the filter (`None`: no
/// node matches, the config is skipped).
fn runners_for_entry(
    cfg: &ConfigEntry,
    runners: &Runners,
    node_filter: Option<&str>,
) -> Option<Vec<String>> {
    let Some(f) = node_filter else {
        return Some(vec![cfg.runner.clone()]);
    };
    let nodes: Vec<String> = runners
        .nodes(&cfg.runner)
        .iter()
        .filter(|n| n.contains(f))
        .cloned()
        .collect();
    (!nodes.is_empty()).then_some(nodes)
}

impl FullSweep {
    /// The config passes `--model-prefix` (a prefix of its key), `--precision`, `--framework`
    /// and `--runner-type`.
    fn selects(&self, key: &str, cfg: &ConfigEntry) -> bool {
        let keeps = |filter: &Option<Vec<String>>, value: &String| {
            filter.as_ref().is_none_or(|v| v.contains(value))
        };
        self.model_prefix
            .as_ref()
            .is_none_or(|p| p.iter().any(|p| key.starts_with(p.as_str())))
            && keeps(&self.precision, &cfg.precision)
            && keeps(&self.framework, &cfg.framework)
            && keeps(&self.runner_type, &cfg.runner)
    }

    /// `--single-node` / `--multi-node` let a (multinode or not) config through.
    fn allows_nodes(&self, multinode: bool) -> bool {
        if multinode {
            self.multi_node
        } else {
            self.single_node
        }
    }

    /// The fixed-sequence rows of one config: per (ISL, OSL) block that passes `--seq-lens` and
    /// per search entry, one row per concurrency × runner (single-node) or one row per runner
    /// with the concurrency list (multinode).
    fn push_fixed_rows(&self, rows: &mut Vec<Row>, cfg: &ConfigEntry, entry_runners: &[String]) {
        for blk in &cfg.fixed {
            let (isl, osl) = (blk.isl, blk.osl);
            if self
                .seq_lens
                .as_ref()
                .is_some_and(|v| !v.contains(&(isl, osl)))
            {
                continue;
            }
            for bmk in &blk.search_space {
                if cfg.multinode {
                    let Some(concs) = self.multinode_concs(bmk) else {
                        continue;
                    };
                    for r in entry_runners {
                        rows.push(multi_fixed_row(cfg, bmk, r, isl, osl, &concs));
                    }
                } else {
                    let (Some(ep), Some(concs)) =
                        (self.single_node_ep(bmk), self.single_node_concs(&bmk.conc))
                    else {
                        continue;
                    };
                    for c in &concs {
                        for r in entry_runners {
                            rows.push(single_fixed_row(cfg, bmk, r, isl, osl, *c, Some(ep)));
                        }
                    }
                }
            }
        }
    }

    /// A multinode entry's concurrencies: the expanded list (`--step-size`) at or above
    /// `--min-conc` (a limit ≤ 0, or nothing left: skipped), then at or below `--max-conc`
    /// (nothing left: just the limit, or skipped when the limit is ≤ 0).
    fn multinode_concs(&self, bmk: &SearchEntry) -> Option<Vec<i64>> {
        let mut concs = bmk.conc.expand(self.step_size);
        if let Some(m) = self.min_conc {
            if m <= 0 {
                return None;
            }
            concs.retain(|c| *c >= m);
            if concs.is_empty() {
                return None;
            }
        }
        if let Some(m) = self.max_conc {
            let filtered: Vec<i64> = concs.iter().copied().filter(|c| *c <= m).collect();
            if filtered.is_empty() {
                if m <= 0 {
                    return None;
                }
                concs = vec![m];
            } else {
                concs = filtered;
            }
        }
        Some(concs)
    }

    /// A single-node entry's EP after `--max-tp` (`None`: skipped, TP above the limit or a
    /// limit ≤ 0; also for a non-single-node topology) and `--max-ep` (a larger EP is clamped
    /// to it; a limit ≤ 0 skips the entry).
    fn single_node_ep(&self, bmk: &SearchEntry) -> Option<Option<i64>> {
        let Topology::Single { tp, ep, .. } = &bmk.topology else {
            return None;
        };
        if let Some(m) = self.max_tp {
            if m <= 0 || *tp > m {
                return None;
            }
        }
        let mut ep = *ep;
        if let Some(m) = self.max_ep {
            if m <= 0 {
                return None;
            }
            if ep.is_some_and(|e| e > m) {
                ep = Some(m);
            }
        }
        Some(ep)
    }

    /// A single-node entry's concurrencies under `--min-conc`/`--max-conc` (`None`: skipped).
    /// A list is filtered (nothing at or below `--max-conc`: just the limit); a range is
    /// clipped before it is expanded with `--step-size` (a range wholly above `--max-conc`
    /// becomes the limit alone).
    fn single_node_concs(&self, conc: &Conc) -> Option<Vec<i64>> {
        let positive = |m: Option<i64>| m.is_none_or(|m| m > 0);
        if !positive(self.min_conc) || !positive(self.max_conc) {
            return None;
        }
        match conc {
            Conc::List(list) => {
                let mut v = list.clone();
                if let Some(m) = self.min_conc {
                    v.retain(|c| *c >= m);
                    if v.is_empty() {
                        return None;
                    }
                }
                if let Some(m) = self.max_conc {
                    let f: Vec<i64> = v.iter().copied().filter(|c| *c <= m).collect();
                    v = if f.is_empty() { vec![m] } else { f };
                }
                Some(v)
            }
            Conc::Range { start, end } => {
                let (mut s, mut e) = (*start, *end);
                if let Some(m) = self.min_conc {
                    if e < m {
                        return None;
                    }
                    s = s.max(m);
                }
                if let Some(m) = self.max_conc {
                    if s > m {
                        s = m;
                        e = m;
                    } else {
                        e = e.min(m);
                    }
                }
                Some(expand_range(s, e, self.step_size))
            }
        }
    }

    /// The agentic rows of one config: per search entry, its DRAM offload budget
    /// ([`agentic_dram_offload_gb`], GB) and its expanded concurrencies within
    /// `--min-conc`/`--max-conc` (none left: no rows).
    fn push_agentic_rows(
        &self,
        rows: &mut Vec<Row>,
        cfg: &ConfigEntry,
        entry_runners: &[String],
        runners: &Runners,
    ) -> Result<(), CatalogError> {
        for blk in &cfg.agentic {
            for bmk in &blk.search_space {
                let dram =
                    agentic_dram_offload_gb(blk.dram_utilization, bmk, &cfg.runner, runners)?;
                let mut concs = bmk.conc.expand(self.step_size);
                if let Some(m) = self.min_conc {
                    concs.retain(|c| *c >= m);
                }
                if let Some(m) = self.max_conc {
                    concs.retain(|c| *c <= m);
                }
                if concs.is_empty() {
                    continue;
                }
                push_agentic(rows, cfg, bmk, entry_runners, &concs, dram);
            }
        }
        Ok(())
    }
}

fn push_agentic(
    rows: &mut Vec<Row>,
    cfg: &ConfigEntry,
    bmk: &SearchEntry,
    runners_for_entry: &[String],
    concs: &[i64],
    dram: i64,
) {
    match &bmk.topology {
        Topology::Disagg { .. } => {
            for r in runners_for_entry {
                for c in concs {
                    rows.push(multi_agentic_row(cfg, bmk, r, &[*c], dram));
                }
            }
        }
        Topology::Single { .. } => {
            for c in concs {
                for r in runners_for_entry {
                    rows.push(single_agentic_row(cfg, bmk, r, *c, dram));
                }
            }
        }
    }
}

/// Python `fnmatch.fnmatchcase`: `*`, `?`, `[seq]`, `[!seq]`.
pub fn fnmatch(name: &str, pat: &str) -> bool {
    type Class = (Vec<(char, char)>, bool, usize);
    fn class(p: &[char]) -> Option<Class> {
        // p starts after '['
        let mut i = 0;
        let mut neg = false;
        if i < p.len() && p[i] == '!' {
            neg = true;
            i += 1;
        }
        let mut ranges = Vec::new();
        let start = i;
        while i < p.len() && (p[i] != ']' || i == start) {
            if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                ranges.push((p[i], p[i + 2]));
                i += 3;
            } else {
                ranges.push((p[i], p[i]));
                i += 1;
            }
        }
        if i >= p.len() {
            return None;
        }
        Some((ranges, neg, i + 1))
    }
    fn go(n: &[char], p: &[char]) -> bool {
        if p.is_empty() {
            return n.is_empty();
        }
        match p[0] {
            '*' => (0..=n.len()).any(|k| go(&n[k..], &p[1..])),
            '?' => !n.is_empty() && go(&n[1..], &p[1..]),
            '[' => match class(&p[1..]) {
                Some((ranges, neg, used)) => {
                    !n.is_empty()
                        && (ranges.iter().any(|(a, b)| *a <= n[0] && n[0] <= *b) != neg)
                        && go(&n[1..], &p[1 + used..])
                }
                None => !n.is_empty() && n[0] == '[' && go(&n[1..], &p[1..]),
            },
            c => !n.is_empty() && n[0] == c && go(&n[1..], &p[1..]),
        }
    }
    let n: Vec<char> = name.chars().collect();
    let p: Vec<char> = pat.chars().collect();
    go(&n, &p)
}

/// Most keys listed in a "not found" error; a larger catalog lists the closest ones.
pub const MAX_LISTED_KEYS: usize = 10;

/// The `n` keys of `keys` closest to `key` (normalised Damerau–Levenshtein similarity,
/// `strsim`; ties in `keys` order), for "did you mean" suggestions.
pub fn closest_keys<'a>(key: &str, keys: &[&'a str], n: usize) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &'a str)> = keys
        .iter()
        .map(|k| (strsim::normalized_damerau_levenshtein(key, k), *k))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(n).map(|(_, k)| k).collect()
}

/// Resolves `--config-keys` (globs via fnmatch, exact keys must exist), de-duplicated in order.
///
/// Errors (reference wording): `Pattern 'x' matched no config keys.` / `Config key(s) not found: x.`
/// (with ` Did you mean 'y'?` when a key is close), each followed by the sorted list of
/// available keys — at most [`MAX_LISTED_KEYS`], the closest ones in a larger catalog.
pub fn expand_config_keys(keys: &[String], catalog: &Catalog) -> Result<Vec<String>, CatalogError> {
    let available: Vec<&String> = catalog.entries.keys().collect();
    // A short list: every key of a small catalog, else the closest few (the real catalog's
    // full list is ~5 KB on one line).
    let sorted_avail = |key: &str| {
        let mut v: Vec<&str> = available.iter().map(|s| s.as_str()).collect();
        v.sort();
        if v.len() <= MAX_LISTED_KEYS {
            return v.join(", ");
        }
        let close = closest_keys(key, &v, MAX_LISTED_KEYS);
        format!(
            "{} (the {} closest of {} keys)",
            close.join(", "),
            close.len(),
            v.len()
        )
    };
    let did_you_mean = |key: &str| -> String {
        let v: Vec<&str> = available.iter().map(|s| s.as_str()).collect();
        match closest_keys(key, &v, 1).first() {
            Some(best) if strsim::normalized_damerau_levenshtein(key, best) >= 0.6 => {
                format!(" Did you mean '{best}'?")
            }
            _ => String::new(),
        }
    };
    let mut out: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for key in keys {
        if key.contains('*') || key.contains('?') {
            let matches: Vec<&String> = available
                .iter()
                .copied()
                .filter(|k| fnmatch(k, key))
                .collect();
            if matches.is_empty() {
                return Err(CatalogError::msg(format!(
                    "Pattern '{key}' matched no config keys.\nAvailable keys: {}",
                    sorted_avail(key)
                )));
            }
            for m in matches {
                if seen.insert(m.clone()) {
                    out.push(m.clone());
                }
            }
        } else {
            if !catalog.entries.contains_key(key) {
                return Err(CatalogError::msg(format!(
                    "Config key(s) not found: {key}.{}\nAvailable keys: {}",
                    did_you_mean(key),
                    sorted_avail(key)
                )));
            }
            if seen.insert(key.clone()) {
                out.push(key.clone());
            }
        }
    }
    Ok(out)
}

/// `test-config`: the named configs fully expanded (step 2, no filters other than `--conc`,
/// `--seq-lens`, `--scenario-type`, `--runner-node-filter`).
pub fn generate_test_config(
    tc: &TestConfig,
    common: &Common,
    catalog: &Catalog,
    runners: &Runners,
) -> Result<Vec<Row>, CatalogError> {
    let keys = expand_config_keys(&tc.config_keys, catalog)?;
    let mut rows = Vec::new();
    let conc_filter = tc.conc.as_ref().filter(|v| !v.is_empty());
    for key in keys {
        let cfg = &catalog.entries[&key];
        let runners_for_entry =
            runner_values_test_config(&cfg.runner, runners, filter_str(&common.runner_node_filter));
        if runners_for_entry.is_empty() {
            continue;
        }
        if scenario_allowed(common, ScenarioType::FixedSeqLen) {
            for blk in &cfg.fixed {
                let (isl, osl) = (blk.isl, blk.osl);
                if tc
                    .seq_lens
                    .as_ref()
                    .is_some_and(|v| !v.contains(&(isl, osl)))
                {
                    continue;
                }
                for bmk in &blk.search_space {
                    let mut concs = bmk.conc.expand(2);
                    if let Some(f) = conc_filter {
                        concs.retain(|c| f.contains(c));
                        if concs.is_empty() {
                            continue;
                        }
                    }
                    match &bmk.topology {
                        Topology::Disagg { .. } => {
                            for r in &runners_for_entry {
                                rows.push(multi_fixed_row(cfg, bmk, r, isl, osl, &concs));
                            }
                        }
                        Topology::Single { .. } => {
                            for c in &concs {
                                for r in &runners_for_entry {
                                    rows.push(single_fixed_row(cfg, bmk, r, isl, osl, *c, None));
                                }
                            }
                        }
                    }
                }
            }
        }
        if scenario_allowed(common, ScenarioType::AgenticCoding) {
            for blk in &cfg.agentic {
                for bmk in &blk.search_space {
                    let dram =
                        agentic_dram_offload_gb(blk.dram_utilization, bmk, &cfg.runner, runners)?;
                    let mut concs = bmk.conc.expand(2);
                    if let Some(f) = conc_filter {
                        concs.retain(|c| f.contains(c));
                    }
                    if concs.is_empty() {
                        continue;
                    }
                    push_agentic(&mut rows, cfg, bmk, &runners_for_entry, &concs, dram);
                }
            }
        }
    }
    Ok(rows)
}

fn conc_values(row: &Row) -> Vec<i64> {
    match row.get("conc") {
        Some(Value::Array(v)) => v.iter().filter_map(Value::as_i64).collect(),
        Some(v) => v.as_i64().into_iter().collect(),
        None => Vec::new(),
    }
}

fn eligible(row: &Row) -> Vec<i64> {
    let mut v: Vec<i64> = conc_values(row)
        .into_iter()
        .filter(|c| *c >= MIN_EVAL_CONC)
        .collect();
    v.sort();
    v
}

const PARALLELISM_IGNORED: [&str; 6] = [
    "conc",
    "run-eval",
    "eval-only",
    "eval-conc",
    "eval-all-concs",
    "exp-name",
];

/// Identity of a multinode deployment: every field except conc/eval fields/exp-name
/// (InferenceX `_multinode_parallelism_key`).
fn parallelism_key(row: &Row) -> String {
    dumps_canonical_filtered(row, |k| !PARALLELISM_IGNORED.contains(&k)).unwrap_or_default()
}

fn is_8k1k(row: &Row) -> bool {
    row.get("isl").and_then(Value::as_i64) == Some(8192)
        && row.get("osl").and_then(Value::as_i64) == Some(1024)
}

fn is_agentic(row: &Row) -> bool {
    row.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding")
}

fn group_key(row: &Row, fields: &[&str]) -> String {
    dumps_canonical_fields(row, fields).unwrap_or_default()
}

/// First index with the maximum value (Python `max` keeps the first of equal maxima).
fn first_max(entries: &[(usize, i64)]) -> (usize, i64) {
    let mut best = entries[0];
    for e in &entries[1..] {
        if e.1 > best.1 {
            best = *e;
        }
    }
    best
}

/// Default eval selection (`mark_eval_entries`, AUTOMATION.md §2.5.1). Sets `run-eval` on every
/// row and `eval-conc` on the selected multinode rows.
///
/// * Single-node 8k1k rows with conc ≥ 16, grouped by (model, runner, framework, precision, isl,
///   osl, spec-decoding, dp-attn): every row whose conc is the group's maximum or its upper
///   median (`sorted(set(concs))[len//2]`) is marked.
/// * Multinode 8k1k: per deployment, the row holding the highest eligible conc (first on ties).
/// * With `include_agentic`: single-node agentic, the highest-conc row per (model, runner,
///   framework, precision); multinode agentic as multinode fixed.
pub fn mark_eval_entries(rows: &mut [Row], include_agentic: bool) {
    let mut eval: HashSet<usize> = HashSet::new();
    let mut mn_eval_conc: HashMap<usize, i64> = HashMap::new();

    let mut sn_groups: Vec<(String, Vec<usize>)> = Vec::new();
    let mut sn_index: HashMap<String, usize> = HashMap::new();
    let mut mn_groups: Vec<Vec<(usize, i64)>> = Vec::new();
    let mut mn_index: HashMap<String, usize> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        if row.contains_key("tp") {
            if !is_8k1k(row) || eligible(row).is_empty() {
                continue;
            }
            let key = group_key(
                row,
                &[
                    "model",
                    "runner",
                    "framework",
                    "precision",
                    "isl",
                    "osl",
                    "spec-decoding",
                    "dp-attn",
                ],
            );
            let gi = *sn_index.entry(key.clone()).or_insert_with(|| {
                sn_groups.push((key, Vec::new()));
                sn_groups.len() - 1
            });
            sn_groups[gi].1.push(i);
        } else if row.contains_key("prefill") {
            if !is_8k1k(row) {
                continue;
            }
            let el = eligible(row);
            let Some(top) = el.last() else { continue };
            let key = parallelism_key(row);
            let gi = *mn_index.entry(key).or_insert_with(|| {
                mn_groups.push(Vec::new());
                mn_groups.len() - 1
            });
            mn_groups[gi].push((i, *top));
        }
    }
    for (_, idxs) in &sn_groups {
        let mut concs: Vec<i64> = idxs.iter().flat_map(|i| conc_values(&rows[*i])).collect();
        concs.sort();
        concs.dedup();
        let median = concs[concs.len() / 2];
        let max = *concs.last().expect("non-empty group");
        for i in idxs {
            let c = conc_values(&rows[*i]);
            if c.first().is_some_and(|c| *c == max || *c == median) {
                eval.insert(*i);
            }
        }
    }
    for g in &mn_groups {
        let (i, c) = first_max(g);
        eval.insert(i);
        mn_eval_conc.insert(i, c);
    }
    if include_agentic {
        let mut ag_sn: Vec<Vec<(usize, i64)>> = Vec::new();
        let mut ag_sn_index: HashMap<String, usize> = HashMap::new();
        let mut ag_mn: Vec<Vec<(usize, i64)>> = Vec::new();
        let mut ag_mn_index: HashMap<String, usize> = HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            if !is_agentic(row) {
                continue;
            }
            if row.contains_key("prefill") {
                let el = eligible(row);
                let Some(top) = el.last() else { continue };
                let gi = *ag_mn_index.entry(parallelism_key(row)).or_insert_with(|| {
                    ag_mn.push(Vec::new());
                    ag_mn.len() - 1
                });
                ag_mn[gi].push((i, *top));
                continue;
            }
            let c = conc_values(row).into_iter().max().unwrap_or(0);
            let key = group_key(row, &["model", "runner", "framework", "precision"]);
            let gi = *ag_sn_index.entry(key).or_insert_with(|| {
                ag_sn.push(Vec::new());
                ag_sn.len() - 1
            });
            ag_sn[gi].push((i, c));
        }
        for g in &ag_sn {
            eval.insert(first_max(g).0);
        }
        for g in &ag_mn {
            let (i, c) = first_max(g);
            eval.insert(i);
            mn_eval_conc.insert(i, c);
        }
    }
    for (i, row) in rows.iter_mut().enumerate() {
        // Every generated row already has `run-eval` (false): overwrite it in place instead of
        // allocating the key again.
        match row.get_mut("run-eval") {
            Some(v) => *v = eval.contains(&i).into(),
            None => {
                row.insert("run-eval".into(), eval.contains(&i).into());
            }
        }
        if let Some(c) = mn_eval_conc.get(&i) {
            row.insert("eval-conc".into(), (*c).into());
        }
    }
}

fn sorted_union(a: &[i64], b: &[i64]) -> Vec<i64> {
    let mut v: Vec<i64> = a.iter().chain(b.iter()).copied().collect();
    v.sort();
    v.dedup();
    v
}

/// `--all-evals` expansion (`mark_all_eval_entries`, AUTOMATION.md §2.5.2): every 8k1k
/// single-node row and every single-node agentic row is an eval row; multinode fixed rows of one
/// deployment merge into one row (union of concs, `eval-all-concs: true`); multinode agentic rows
/// merge with `eval-conc = max`. Other rows pass through.
pub fn mark_all_eval_entries(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut mn_fixed: HashMap<String, usize> = HashMap::new();
    let mut mn_agentic: HashMap<String, usize> = HashMap::new();
    for mut row in rows {
        if is_agentic(&row) {
            if !row.contains_key("prefill") {
                row.insert("run-eval".into(), true.into());
                out.push(row);
                continue;
            }
            let concs = conc_values(&row);
            let key = parallelism_key(&row);
            if let Some(&idx) = mn_agentic.get(&key) {
                let merged = sorted_union(&conc_values(&out[idx]), &concs);
                let max = *merged.last().expect("non-empty");
                out[idx].insert("conc".into(), ints(&merged));
                out[idx].insert("eval-conc".into(), max.into());
                continue;
            }
            let merged = sorted_union(&concs, &[]);
            let max = concs.iter().copied().max().unwrap_or(0);
            row.insert("conc".into(), ints(&merged));
            row.insert("run-eval".into(), true.into());
            row.insert("eval-conc".into(), max.into());
            mn_agentic.insert(key, out.len());
            out.push(row);
            continue;
        }
        if !is_8k1k(&row) {
            out.push(row);
            continue;
        }
        if row.contains_key("prefill") {
            let concs = conc_values(&row);
            let key = parallelism_key(&row);
            if let Some(&idx) = mn_fixed.get(&key) {
                let merged = sorted_union(&conc_values(&out[idx]), &concs);
                out[idx].insert("conc".into(), ints(&merged));
                continue;
            }
            row.insert("conc".into(), ints(&sorted_union(&concs, &[])));
            row.insert("run-eval".into(), true.into());
            row.insert("eval-all-concs".into(), true.into());
            row.shift_remove("eval-conc");
            mn_fixed.insert(key, out.len());
            out.push(row);
            continue;
        }
        row.insert("run-eval".into(), true.into());
        out.push(row);
    }
    out
}

/// Applies the eval policy of the generator's `main()` to freshly generated rows:
/// default marking unless `--no-evals`, `--all-evals` expansion, and the eval-only filter.
pub fn apply_evals(mut rows: Vec<Row>, common: &Common) -> Vec<Row> {
    if !common.no_evals {
        mark_eval_entries(&mut rows, common.evals_only || common.all_evals);
        if common.all_evals {
            rows = mark_all_eval_entries(rows);
        }
    }
    if common.evals_only || common.all_evals {
        rows.retain(|r| r.get("run-eval").and_then(Value::as_bool).unwrap_or(false));
        for r in &mut rows {
            r.insert("eval-only".into(), true.into());
        }
    }
    rows
}

/// Argument errors that the reference reports through `argparse` (exit status 2).
pub fn check_args(full: Option<&FullSweep>, common: &Common) -> Result<(), String> {
    if let Some(fs) = full {
        if fs.step_size <= 1 {
            return Err("--step-size must be greater than 1".into());
        }
        if let (Some(a), Some(b)) = (fs.min_conc, fs.max_conc) {
            if a > b {
                return Err("--min-conc must be less than or equal to --max-conc".into());
            }
        }
    }
    if common.no_evals && common.evals_only {
        return Err("argument --evals-only: not allowed with argument --no-evals".into());
    }
    if common.no_evals && common.all_evals {
        return Err("--all-evals cannot be combined with --no-evals".into());
    }
    Ok(())
}

/// Generator mode.
#[derive(Debug, Clone)]
pub enum Mode {
    /// `full-sweep`.
    FullSweep(FullSweep),
    /// `test-config`.
    TestConfig(TestConfig),
}

/// The whole generator: expand, mark evals, filter. Same as running
/// `generate_sweep_configs.py` and parsing its stdout.
pub fn generate(
    mode: &Mode,
    common: &Common,
    catalog: &Catalog,
    runners: &Runners,
) -> Result<Vec<Row>, CatalogError> {
    let rows = match mode {
        Mode::FullSweep(fs) => generate_full_sweep(fs, common, catalog, runners)?,
        Mode::TestConfig(tc) => generate_test_config(tc, common, catalog, runners)?,
    };
    Ok(apply_evals(rows, common))
}

/// The generator's stdout for `rows`: `json.dumps(rows)` plus a newline.
pub fn to_stdout(rows: &[Row]) -> String {
    let v = Value::Array(rows.iter().cloned().map(Value::Object).collect());
    let mut s = crate::pyjson::dumps_py(&v);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_like_python() {
        assert!(fnmatch(
            "dsv4-fp4-gb300-dynamo-vllm-agentic",
            "dsv4-fp4-gb300-dynamo-vllm-agentic*"
        ));
        assert!(fnmatch("abc", "a?c"));
        assert!(!fnmatch("abc", "a?d"));
        assert!(fnmatch("a1", "a[0-9]"));
        assert!(!fnmatch("a1", "a[!0-9]"));
        assert!(fnmatch("", "*"));
    }

    #[test]
    fn closest_keys_rank_by_similarity() {
        let keys = [
            "dsr1-fp8-h200-sglang",
            "dsr1-fp8-h200-trt",
            "gptoss-fp4-b200-vllm",
            "dsr1-fp4-b200-sglang",
        ];
        let c = closest_keys("dsr1-fp8-h200-sglangg", &keys, 2);
        assert_eq!(c, vec!["dsr1-fp8-h200-sglang", "dsr1-fp4-b200-sglang"]);
        assert_eq!(closest_keys("x", &keys, 10).len(), 4);
    }

    #[test]
    fn decimal_text_of_floats() {
        assert_eq!(decimal_of(0.8), (8, 1));
        assert_eq!(decimal_of(0.21429), (21429, 5));
        assert_eq!(decimal_of(1.0), (10, 1));
        assert_eq!(decimal_of(1e-05), (1, 5));
    }
}
