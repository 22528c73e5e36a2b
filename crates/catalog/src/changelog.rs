//! `perf-changelog.yaml`: entries, the append-only rules, the sweep matrix of a change, and
//! byte-safe appends (AUTOMATION.md §3).
//!
//! * [`process`] — InferenceX `utils/process_changelog.py`: diff base→head, reject deleted
//!   lines, parse the added entries, resolve keys (`*` globs), run the generator per entry
//!   (`test-config --no-evals` for throughput, `--evals-only [--all-evals]` for evals), trim,
//!   fingerprint, bucket, and print pydantic-ordered JSON ([`ChangelogMatrix::to_json_text`]).
//! * [`validate`] — InferenceX `utils/validate_perf_changelog.py` rules F-1…F-4 on two file
//!   versions (error wording kept).
//! * [`append_entry`] — appends one entry at the tail without touching any historical byte.

use std::collections::HashMap;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};
use similar::{ChangeTag, TextDiff};

use crate::catalog::{Catalog, Runners};
use crate::de::{from_node, path_string};
use crate::error::CatalogError;
use crate::matrix::{generate, seq_len_to_str, Common, Mode, Row, ScenarioType, TestConfig};
use crate::pyjson::{dumps_pydantic, recipe_fingerprint};
use crate::yaml::{self, Kind, Node};

/// Scenario literal of `scenario-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScenarioLit {
    /// `fixed-seq-len`.
    FixedSeqLen,
    /// `agentic-coding`.
    AgenticCoding,
}

impl ScenarioLit {
    fn to_type(self) -> ScenarioType {
        match self {
            ScenarioLit::FixedSeqLen => ScenarioType::FixedSeqLen,
            ScenarioLit::AgenticCoding => ScenarioType::AgenticCoding,
        }
    }
}

/// A list with at least one element (pydantic `min_length=1`).
#[derive(Debug, Clone, PartialEq)]
pub struct NonEmptyList<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NonEmptyList<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        if v.is_empty() {
            return Err(serde::de::Error::custom("must contain at least one item"));
        }
        Ok(NonEmptyList(v))
    }
}

/// One change-log entry (`ChangelogEntry`, extra fields forbidden).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ChangelogEntry {
    /// Exact keys or `*` globs.
    pub config_keys: NonEmptyList<String>,
    /// What changed.
    pub description: NonEmptyList<String>,
    /// The PR URL (or `…/pull/XXX` placeholder inside a PR).
    pub pr_link: String,
    /// Suppress throughput for this entry.
    #[serde(default)]
    pub evals_only: bool,
    /// Expand evals and suppress throughput.
    #[serde(default)]
    pub all_evals: bool,
    /// Run only the newly added points.
    #[serde(default)]
    pub append_only: bool,
    /// Drop multinode eval rows whose prefill EP is below this.
    #[serde(default)]
    pub eval_min_prefill_ep: Option<i64>,
    /// Restrict the entry to these scenarios.
    #[serde(default)]
    pub scenario_type: Option<NonEmptyList<ScenarioLit>>,
}

impl ChangelogEntry {
    /// Reads and checks one entry node; the message names the field path.
    pub fn from_node(node: &Node) -> Result<ChangelogEntry, String> {
        let e: ChangelogEntry = from_node(node).map_err(|e| {
            let p = path_string(&e.path);
            let line = e
                .mark
                .map(|m| format!("line {}: ", m.line))
                .unwrap_or_default();
            if p.is_empty() {
                format!("{line}{}", e.message)
            } else {
                format!("{line}{p}: {}", e.message)
            }
        })?;
        if let Some(ep) = e.eval_min_prefill_ep {
            if ep < 1 {
                return Err(format!(
                    "eval-min-prefill-ep: must be greater than or equal to 1, got {ep}"
                ));
            }
        }
        if e.append_only && (e.evals_only || e.all_evals || e.eval_min_prefill_ep.is_some()) {
            return Err("append-only cannot be combined with eval selection fields".into());
        }
        Ok(e)
    }

    /// The pydantic dump (`by_alias=True, exclude_none=True`) of this entry, in field order.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("config-keys".into(), self.config_keys.0.clone().into());
        m.insert("description".into(), self.description.0.clone().into());
        m.insert("pr-link".into(), self.pr_link.clone().into());
        m.insert("evals-only".into(), self.evals_only.into());
        m.insert("all-evals".into(), self.all_evals.into());
        m.insert("append-only".into(), self.append_only.into());
        if let Some(ep) = self.eval_min_prefill_ep {
            m.insert("eval-min-prefill-ep".into(), ep.into());
        }
        if let Some(s) = &self.scenario_type {
            let v: Vec<Value> =
                s.0.iter()
                    .map(|x| Value::from(x.to_type().as_str()))
                    .collect();
            m.insert("scenario-type".into(), Value::Array(v));
        }
        Value::Object(m)
    }

    fn scenarios(&self) -> Vec<ScenarioType> {
        match &self.scenario_type {
            Some(s) => s.0.iter().map(|x| x.to_type()).collect(),
            None => vec![ScenarioType::FixedSeqLen, ScenarioType::AgenticCoding],
        }
    }
}

/// Added lines of the change `base → head`, joined with `\n` (what `git diff` shows as `+`).
///
/// Errors: any deleted non-blank line, with the reference's wording:
/// `Deletions are not allowed in FILE. Only additions to the changelog are permitted. Found
/// deleted line: LINE`.
pub fn added_text(base: &str, head: &str, file_label: &str) -> Result<String, CatalogError> {
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .diff_lines(base, head);
    let mut added = Vec::new();
    for change in diff.iter_all_changes() {
        let line = change.value().strip_suffix('\n').unwrap_or(change.value());
        match change.tag() {
            ChangeTag::Delete => {
                if !line.trim().is_empty() {
                    return Err(CatalogError::msg(format!(
                        "Deletions are not allowed in {file_label}. Only additions to the changelog are permitted. Found deleted line: {line}"
                    )));
                }
            }
            ChangeTag::Insert => added.push(line.to_string()),
            ChangeTag::Equal => {}
        }
    }
    Ok(added.join("\n"))
}

/// Resolves change-log keys against the master configs: `*` is the only wildcard (regex-escaped,
/// `*` → `.*`, full match), in config order, de-duplicated.
///
/// Errors: `No config keys matched the wildcard pattern 'P' in master configs.` /
/// `Config key 'K' not found in master configs.`
pub fn resolve_keys(keys: &[String], catalog: &Catalog) -> Result<Vec<String>, CatalogError> {
    let mut out: Vec<String> = Vec::new();
    for key in keys {
        if key.contains('*') {
            let pat = format!("^(?:{})$", regex::escape(key).replace(r"\*", ".*"));
            let re = Regex::new(&pat).map_err(|e| CatalogError::msg(e.to_string()))?;
            let matched: Vec<&String> = catalog.entries.keys().filter(|k| re.is_match(k)).collect();
            if matched.is_empty() {
                return Err(CatalogError::msg(format!(
                    "No config keys matched the wildcard pattern '{key}' in master configs."
                )));
            }
            for m in matched {
                if !out.contains(m) {
                    out.push(m.clone());
                }
            }
        } else if !catalog.entries.contains_key(key) {
            return Err(CatalogError::msg(format!(
                "Config key '{key}' not found in master configs."
            )));
        } else if !out.contains(key) {
            out.push(key.clone());
        }
    }
    Ok(out)
}

fn min_conc(row: &Row) -> i64 {
    match row.get("conc") {
        Some(Value::Array(v)) => v.iter().filter_map(Value::as_i64).min().unwrap_or(i64::MAX),
        Some(v) => v.as_i64().unwrap_or(i64::MAX),
        None => i64::MAX,
    }
}

/// `--trim-conc`: single-node rows grouped by every field except `conc`/`exp-name` keep only the
/// lowest-conc row (first on ties); multinode rows keep `conc: [min]`. (AUTOMATION.md §2.6.)
pub fn trim_conc(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for mut row in rows {
        if row.get("prefill").is_some_and(|p| !p.is_null()) {
            if let Some(Value::Array(c)) = row.get("conc") {
                if c.len() > 1 {
                    let m = min_conc(&row);
                    row.insert("conc".into(), Value::Array(vec![m.into()]));
                }
            }
            out.push(row);
            continue;
        }
        let mut key = Map::new();
        for (k, v) in &row {
            if k != "conc" && k != "exp-name" {
                key.insert(k.clone(), v.clone());
            }
        }
        let key = crate::pyjson::dumps_canonical(&Value::Object(key)).unwrap_or_default();
        let gi = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[gi].push(out.len());
        out.push(row);
    }
    let mut drop = std::collections::HashSet::new();
    for idxs in groups {
        if idxs.len() > 1 {
            let mut keep = idxs[0];
            for &i in &idxs[1..] {
                if min_conc(&out[i]) < min_conc(&out[keep]) {
                    keep = i;
                }
            }
            drop.extend(idxs.into_iter().filter(|i| *i != keep));
        }
    }
    out.into_iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, r)| r)
        .collect()
}

/// Drops multinode eval rows whose `prefill.ep` is below `min` (`eval-min-prefill-ep`).
pub fn filter_eval_rows_by_prefill_ep(rows: Vec<Row>, min: Option<i64>) -> Vec<Row> {
    let Some(min) = min else { return rows };
    rows.into_iter()
        .filter(|r| match r.get("prefill") {
            Some(Value::Object(p)) => p.get("ep").and_then(Value::as_i64).unwrap_or(1) >= min,
            _ => true,
        })
        .collect()
}

/// Options of the change-log processor.
#[derive(Debug, Clone, Default)]
pub struct ProcessOptions {
    /// `--trim-conc`.
    pub trim_conc: bool,
    /// `--all-evals` (every entry).
    pub all_evals: bool,
    /// `--evals-only` (every entry).
    pub evals_only: bool,
}

/// The processor's output (`ChangelogMatrixEntry`), rows in generator key order.
#[derive(Debug, Clone, Default)]
pub struct ChangelogMatrix {
    /// Single-node throughput rows by `1k1k`/`8k1k`/`isl_osl`/`agentic`.
    pub single_node: indexmap::IndexMap<String, Vec<Row>>,
    /// Multinode throughput rows by the same buckets.
    pub multi_node: indexmap::IndexMap<String, Vec<Row>>,
    /// Fixed single-node eval rows.
    pub evals: Vec<Row>,
    /// Single-node agentic eval rows.
    pub agentic_evals: Vec<Row>,
    /// Multinode fixed eval rows.
    pub multinode_evals: Vec<Row>,
    /// Multinode agentic eval rows.
    pub multinode_agentic_evals: Vec<Row>,
    /// `base_ref`.
    pub base_ref: String,
    /// `head_ref`.
    pub head_ref: String,
    /// The added entries.
    pub entries: Vec<ChangelogEntry>,
}

// Field order of the pydantic output models; `Some(default)` fields are always dumped.
type Fields = &'static [(&'static str, Option<fn() -> Value>)];

fn f_false() -> Value {
    Value::Bool(false)
}
fn f_one() -> Value {
    Value::from(1)
}
fn f_empty() -> Value {
    Value::Array(Vec::new())
}
fn f_none_str() -> Value {
    Value::from("none")
}

const SINGLE_NODE: Fields = &[
    ("image", None),
    ("model", None),
    ("model-prefix", None),
    ("precision", None),
    ("framework", None),
    ("spec-decoding", None),
    ("runner", None),
    ("isl", None),
    ("osl", None),
    ("tp", None),
    ("pp", None),
    ("dcp-size", None),
    ("pcp-size", None),
    ("ep", None),
    ("dp-attn", None),
    ("conc", None),
    ("max-model-len", None),
    ("exp-name", None),
    ("disagg", None),
    ("run-eval", None),
    ("eval-only", Some(f_false)),
    ("router", None),
    ("recipe-fingerprint", None),
];
const WORKER: Fields = &[
    ("num-worker", None),
    ("tp", None),
    ("pp", Some(f_one)),
    ("dcp-size", Some(f_one)),
    ("pcp-size", Some(f_one)),
    ("ep", None),
    ("dp-attn", None),
    ("hardware", None),
    ("additional-settings", Some(f_empty)),
];
const MULTI_NODE: Fields = &[
    ("image", None),
    ("model", None),
    ("model-prefix", None),
    ("precision", None),
    ("framework", None),
    ("spec-decoding", None),
    ("runner", None),
    ("isl", None),
    ("osl", None),
    ("prefill", None),
    ("decode", None),
    ("conc", None),
    ("max-model-len", None),
    ("exp-name", None),
    ("disagg", None),
    ("run-eval", None),
    ("eval-only", Some(f_false)),
    ("eval-conc", None),
    ("eval-all-concs", Some(f_false)),
    ("router", None),
    ("kv-p2p-transfer", None),
    ("recipe-fingerprint", None),
];
const SINGLE_AGENTIC: Fields = &[
    ("image", None),
    ("model", None),
    ("model-prefix", None),
    ("precision", None),
    ("framework", None),
    ("runner", None),
    ("tp", None),
    ("pp", None),
    ("dcp-size", None),
    ("pcp-size", None),
    ("ep", None),
    ("dp-attn", None),
    ("spec-decoding", Some(f_none_str)),
    ("conc", None),
    ("kv-offloading", None),
    ("kv-offload-backend", None),
    ("router", None),
    ("total-cpu-dram-gb", None),
    ("duration", None),
    ("exp-name", None),
    ("scenario-type", None),
    ("run-eval", None),
    ("eval-only", None),
    ("recipe-fingerprint", None),
];
const MULTI_AGENTIC: Fields = &[
    ("image", None),
    ("model", None),
    ("model-prefix", None),
    ("precision", None),
    ("framework", None),
    ("spec-decoding", None),
    ("runner", None),
    ("prefill", None),
    ("decode", None),
    ("conc", None),
    ("kv-offloading", None),
    ("kv-offload-backend", None),
    ("router", None),
    ("kv-p2p-transfer", None),
    ("total-cpu-dram-gb", None),
    ("duration", None),
    ("exp-name", None),
    ("disagg", None),
    ("scenario-type", None),
    ("run-eval", None),
    ("eval-only", None),
    ("eval-conc", None),
    ("recipe-fingerprint", None),
];
const COMPONENT: Fields = &[("name", None), ("version", None)];

fn order(obj: &Map<String, Value>, fields: Fields, what: &str) -> Result<Value, CatalogError> {
    if let Some(extra) = obj.keys().find(|k| !fields.iter().any(|(f, _)| f == k)) {
        return Err(CatalogError::msg(format!(
            "{what} row has an unexpected field '{extra}'"
        )));
    }
    let mut m = Map::new();
    for (f, default) in fields {
        let v = match obj.get(*f) {
            Some(Value::Null) | None => default.map(|d| d()),
            Some(v) => Some(match *f {
                "prefill" | "decode" => match v {
                    Value::Object(w) => order(w, WORKER, "worker")?,
                    other => other.clone(),
                },
                "router" | "kv-offload-backend" => match v {
                    Value::Object(c) => order(c, COMPONENT, f)?,
                    other => other.clone(),
                },
                _ => v.clone(),
            }),
        };
        if let Some(v) = v {
            m.insert(f.to_string(), v);
        }
    }
    Ok(Value::Object(m))
}

fn dump_row(row: &Row) -> Result<Value, CatalogError> {
    let agentic = row.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
    let multi = row.get("prefill").is_some_and(|p| !p.is_null());
    match (multi, agentic) {
        (false, false) => order(row, SINGLE_NODE, "single-node"),
        (true, false) => order(row, MULTI_NODE, "multinode"),
        (false, true) => order(row, SINGLE_AGENTIC, "single-node agentic"),
        (true, true) => order(row, MULTI_AGENTIC, "multinode agentic"),
    }
}

impl ChangelogMatrix {
    /// The JSON value in pydantic field order (`model_dump(by_alias=True, exclude_none=True)`).
    pub fn to_json(&self) -> Result<Value, CatalogError> {
        let bucket = |b: &indexmap::IndexMap<String, Vec<Row>>| -> Result<Value, CatalogError> {
            let mut m = Map::new();
            for (k, rows) in b {
                m.insert(
                    k.clone(),
                    Value::Array(rows.iter().map(dump_row).collect::<Result<_, _>>()?),
                );
            }
            Ok(Value::Object(m))
        };
        let list = |rows: &Vec<Row>| -> Result<Value, CatalogError> {
            Ok(Value::Array(
                rows.iter().map(dump_row).collect::<Result<_, _>>()?,
            ))
        };
        let mut m = Map::new();
        m.insert("single_node".into(), bucket(&self.single_node)?);
        m.insert("multi_node".into(), bucket(&self.multi_node)?);
        m.insert("evals".into(), list(&self.evals)?);
        m.insert("agentic_evals".into(), list(&self.agentic_evals)?);
        m.insert("multinode_evals".into(), list(&self.multinode_evals)?);
        m.insert(
            "multinode_agentic_evals".into(),
            list(&self.multinode_agentic_evals)?,
        );
        let mut meta = Map::new();
        meta.insert("base_ref".into(), self.base_ref.clone().into());
        meta.insert("head_ref".into(), self.head_ref.clone().into());
        meta.insert(
            "entries".into(),
            Value::Array(self.entries.iter().map(|e| e.to_json()).collect()),
        );
        m.insert("changelog_metadata".into(), Value::Object(meta));
        Ok(Value::Object(m))
    }

    /// The processor's stdout: compact pydantic JSON plus a newline.
    pub fn to_json_text(&self) -> Result<String, CatalogError> {
        let mut s = dumps_pydantic(&self.to_json()?);
        s.push('\n');
        Ok(s)
    }
}

/// Parses the added YAML text into entries (`yaml.safe_load` + `ChangelogEntry` validation).
pub fn parse_added_entries(added: &str) -> Result<Vec<ChangelogEntry>, CatalogError> {
    if added.trim().is_empty() {
        return Err(CatalogError::msg(
            "No additions found in the changelog file.",
        ));
    }
    let node = yaml::parse(added)
        .map_err(|e| CatalogError::msg(format!("changelog additions are not valid YAML: {e}")))?;
    let items = match &node.kind {
        Kind::Null => {
            return Err(CatalogError::msg(
                "No valid YAML entries found in the changelog additions.",
            ))
        }
        Kind::Seq(items) if items.is_empty() => {
            return Err(CatalogError::msg(
                "No valid YAML entries found in the changelog additions.",
            ))
        }
        Kind::Seq(items) => items,
        _ => {
            return Err(CatalogError::msg(
                "changelog additions must be a YAML list of entries",
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, n)| {
            ChangelogEntry::from_node(n)
                .map_err(|m| CatalogError::msg(format!("added changelog entry {}: {m}", i + 1)))
        })
        .collect()
}

const ALL_SCENARIOS: [ScenarioType; 2] = [ScenarioType::FixedSeqLen, ScenarioType::AgenticCoding];

/// Runs the change-log processor on two versions of the change log.
///
/// `catalog`/`runners` are the master configs and runners at head (the reference loads
/// `configs/amd-master.yaml` + `configs/nvidia-master.yaml`). Entries with `append-only: true`
/// need the master configs at the base revision: use [`process_with_base`].
#[allow(clippy::too_many_arguments)]
pub fn process(
    base: &str,
    head: &str,
    file_label: &str,
    base_ref: &str,
    head_ref: &str,
    opts: &ProcessOptions,
    catalog: &Catalog,
    runners: &Runners,
) -> Result<ChangelogMatrix, CatalogError> {
    process_with_base(
        base, head, file_label, base_ref, head_ref, opts, catalog, runners, None,
    )
}

/// [`process`] with the master configs at the base revision, for `append-only: true` entries
/// (AUTOMATION.md §3.3 step 5): the change may only add concurrency points to existing curves of
/// the selected configs/scenarios; only the added points are emitted.
///
/// Errors (reference wording): `append-only requires every selected config to exist in the base
/// revision; missing: [...]`, `append-only PR changed configs not selected by its changelog
/// entry: [...]`, `append-only changed non-scenario field 'image' in 'KEY'`, `append-only changed
/// config structure at PATH`, `append-only changed non-concurrency value at PATH`,
/// `append-only may not remove existing concurrency points: [16]`, `append-only did not add any
/// concurrency points`, … The reference's "only perf-changelog.yaml and master configs changed"
/// check needs git and is not made here.
#[allow(clippy::too_many_arguments)]
pub fn process_with_base(
    base: &str,
    head: &str,
    file_label: &str,
    base_ref: &str,
    head_ref: &str,
    opts: &ProcessOptions,
    catalog: &Catalog,
    runners: &Runners,
    base_catalog: Option<&Catalog>,
) -> Result<ChangelogMatrix, CatalogError> {
    let added = added_text(base, head, file_label)?;
    let entries = parse_added_entries(&added)?;
    let has_append_only = entries.iter().any(|e| e.append_only);
    if has_append_only && !entries.iter().all(|e| e.append_only) {
        return Err(CatalogError::msg(
            "append-only entries cannot share a sweep with regular changelog entries",
        ));
    }
    if has_append_only && (opts.all_evals || opts.evals_only) {
        return Err(CatalogError::msg(
            "append-only sweeps cannot use all-evals or evals-only modifiers",
        ));
    }

    let mut resolved: Vec<(&ChangelogEntry, Vec<String>)> = Vec::new();
    for e in &entries {
        resolved.push((e, resolve_keys(&e.config_keys.0, catalog)?));
    }
    let base_catalog = if has_append_only {
        let Some(bc) = base_catalog else {
            return Err(CatalogError::msg(
                "append-only entries need the master configs at the base revision (--base-config-files, or git-ref mode)",
            ));
        };
        let mut selected: Vec<(String, Vec<ScenarioType>)> = Vec::new();
        for (e, configs) in &resolved {
            for c in configs {
                let scen = e.scenarios();
                match selected.iter_mut().find(|(k, _)| k == c) {
                    Some((_, v)) => v.extend(
                        scen.into_iter()
                            .filter(|t| !v.contains(t))
                            .collect::<Vec<_>>(),
                    ),
                    None => selected.push((c.clone(), scen)),
                }
            }
        }
        let mut missing: Vec<String> = selected
            .iter()
            .filter(|(k, _)| !bc.entries.contains_key(k))
            .map(|(k, _)| k.clone())
            .collect();
        missing.sort();
        if !missing.is_empty() {
            return Err(CatalogError::msg(format!(
                "append-only requires every selected config to exist in the base revision; missing: {}",
                py_list(&missing)
            )));
        }
        validate_append_only_scope(bc, catalog, &selected)?;
        Some(bc)
    } else {
        None
    };

    // all-evals entries first (stable), so their broader eval matrix wins.
    resolved.sort_by_key(|(e, _)| !e.all_evals);

    let mut bench_seen: HashMap<String, Vec<ScenarioType>> = HashMap::new();
    let mut eval_seen: HashMap<String, Vec<ScenarioType>> = HashMap::new();
    let mut bench_rows: Vec<Row> = Vec::new();
    let mut eval_rows: Vec<Row> = Vec::new();

    fn group(
        configs: &[String],
        entry_scen: &[ScenarioType],
        seen: &mut HashMap<String, Vec<ScenarioType>>,
    ) -> Vec<(Vec<ScenarioType>, Vec<String>)> {
        let mut groups: Vec<(Vec<ScenarioType>, Vec<String>)> = Vec::new();
        for c in configs {
            let s = seen.entry(c.clone()).or_default();
            let unseen: Vec<ScenarioType> = ALL_SCENARIOS
                .iter()
                .copied()
                .filter(|t| entry_scen.contains(t) && !s.contains(t))
                .collect();
            if unseen.is_empty() {
                continue;
            }
            s.extend(unseen.iter().copied());
            match groups.iter_mut().find(|(k, _)| *k == unseen) {
                Some((_, v)) => v.push(c.clone()),
                None => groups.push((unseen, vec![c.clone()])),
            }
        }
        groups
    }

    for (entry, configs) in &resolved {
        let scen = entry.scenarios();
        let expand_all = opts.all_evals || entry.all_evals;
        let suppress = opts.evals_only || entry.evals_only || entry.all_evals;
        if !suppress {
            for (scenarios, cfgs) in group(configs, &scen, &mut bench_seen) {
                let common = Common {
                    no_evals: true,
                    scenario_type: if scenarios == ALL_SCENARIOS {
                        None
                    } else {
                        Some(scenarios)
                    },
                    ..Default::default()
                };
                let tc = TestConfig {
                    config_keys: cfgs,
                    conc: None,
                    seq_lens: None,
                };
                let mut head_rows =
                    generate(&Mode::TestConfig(tc.clone()), &common, catalog, runners)?;
                if entry.append_only {
                    let bc = base_catalog.expect("checked above");
                    let base_rows = generate(&Mode::TestConfig(tc), &common, bc, runners)?;
                    head_rows = append_only_delta(&base_rows, &head_rows)?;
                }
                bench_rows.extend(head_rows);
            }
        }
        if entry.append_only {
            continue;
        }
        for (scenarios, cfgs) in group(configs, &scen, &mut eval_seen) {
            let common = Common {
                evals_only: true,
                all_evals: expand_all,
                scenario_type: Some(scenarios),
                ..Default::default()
            };
            let tc = TestConfig {
                config_keys: cfgs,
                conc: None,
                seq_lens: None,
            };
            let rows = generate(&Mode::TestConfig(tc), &common, catalog, runners)?;
            eval_rows.extend(filter_eval_rows_by_prefill_ep(
                rows,
                entry.eval_min_prefill_ep,
            ));
        }
    }

    if opts.trim_conc {
        bench_rows = trim_conc(bench_rows);
    }
    let mut out = ChangelogMatrix {
        base_ref: base_ref.to_string(),
        head_ref: head_ref.to_string(),
        entries: entries.clone(),
        ..Default::default()
    };
    for mut row in bench_rows {
        let fp = recipe_fingerprint(&row).map_err(|e| CatalogError::msg(e.to_string()))?;
        row.insert("recipe-fingerprint".into(), fp.into());
        let agentic = row.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
        let multi = row.get("prefill").is_some_and(|p| !p.is_null());
        let bucket = if agentic {
            "agentic".to_string()
        } else {
            let isl = row.get("isl").and_then(Value::as_i64).unwrap_or(0);
            let osl = row.get("osl").and_then(Value::as_i64).unwrap_or(0);
            seq_len_to_str(isl, osl)
        };
        let target = if multi {
            &mut out.multi_node
        } else {
            &mut out.single_node
        };
        target.entry(bucket).or_default().push(row);
    }
    for row in eval_rows {
        let agentic = row.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
        let multi = row.get("prefill").is_some_and(|p| !p.is_null());
        match (multi, agentic) {
            (false, false) => out.evals.push(row),
            (false, true) => out.agentic_evals.push(row),
            (true, false) => out.multinode_evals.push(row),
            (true, true) => out.multinode_agentic_evals.push(row),
        }
    }
    Ok(out)
}

fn py_list(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", inner.join(", "))
}

fn py_ints(items: &[i64]) -> String {
    let inner: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    format!("[{}]", inner.join(", "))
}

const CONC_FIELDS: [&str; 3] = ["conc-list", "conc-start", "conc-end"];

fn concurrency_only(base: &Value, head: &Value, path: &str) -> Result<(), CatalogError> {
    match (base, head) {
        (Value::Object(b), Value::Object(h)) => {
            let bk: std::collections::BTreeSet<&String> = b
                .keys()
                .filter(|k| !CONC_FIELDS.contains(&k.as_str()))
                .collect();
            let hk: std::collections::BTreeSet<&String> = h
                .keys()
                .filter(|k| !CONC_FIELDS.contains(&k.as_str()))
                .collect();
            if bk != hk {
                return Err(CatalogError::msg(format!(
                    "append-only changed config structure at {path}"
                )));
            }
            for k in bk {
                concurrency_only(&b[k.as_str()], &h[k.as_str()], &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(b), Value::Array(h)) => {
            if b.len() != h.len() {
                return Err(CatalogError::msg(format!(
                    "append-only changed config structure at {path}"
                )));
            }
            for (i, (x, y)) in b.iter().zip(h.iter()).enumerate() {
                concurrency_only(x, y, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (b, h) if b != h => Err(CatalogError::msg(format!(
            "append-only changed non-concurrency value at {path}"
        ))),
        _ => Ok(()),
    }
}

/// Rejects edits outside the append-only scope: unselected configs, top-level fields, added or
/// removed scenarios, scenarios outside the entry's `scenario-type`, and anything but
/// `conc-list`/`conc-start`/`conc-end` inside selected scenarios.
pub fn validate_append_only_scope(
    base: &Catalog,
    head: &Catalog,
    selected: &[(String, Vec<ScenarioType>)],
) -> Result<(), CatalogError> {
    let is_selected = |k: &str| selected.iter().any(|(s, _)| s == k);
    let mut unrelated: Vec<String> = base
        .entries
        .keys()
        .chain(
            head.entries
                .keys()
                .filter(|k| !base.entries.contains_key(*k)),
        )
        .filter(|k| !is_selected(k))
        .filter(|k| base.entries.get(*k).map(|e| &e.json) != head.entries.get(*k).map(|e| &e.json))
        .cloned()
        .collect();
    unrelated.sort();
    if !unrelated.is_empty() {
        return Err(CatalogError::msg(format!(
            "append-only PR changed configs not selected by its changelog entry: {}",
            py_list(&unrelated)
        )));
    }
    for (config, allowed) in selected {
        let (Some(Value::Object(b)), Some(Value::Object(h))) = (
            base.entries.get(config).map(|e| &e.json),
            head.entries.get(config).map(|e| &e.json),
        ) else {
            continue;
        };
        let bk: std::collections::BTreeSet<&String> = b.keys().collect();
        let hk: std::collections::BTreeSet<&String> = h.keys().collect();
        if bk != hk {
            return Err(CatalogError::msg(format!(
                "append-only changed top-level fields for config '{config}'"
            )));
        }
        for f in b.keys().filter(|k| *k != "scenarios") {
            if b[f.as_str()] != h[f.as_str()] {
                return Err(CatalogError::msg(format!(
                    "append-only changed non-scenario field '{f}' in '{config}'"
                )));
            }
        }
        let empty = Map::new();
        let bs = b
            .get("scenarios")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let hs = h
            .get("scenarios")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let bsk: std::collections::BTreeSet<&String> = bs.keys().collect();
        let hsk: std::collections::BTreeSet<&String> = hs.keys().collect();
        if bsk != hsk {
            return Err(CatalogError::msg(format!(
                "append-only added or removed a scenario in config '{config}'"
            )));
        }
        for (scenario, bv) in bs {
            let in_scope = allowed.iter().any(|t| t.as_str() == scenario);
            if !in_scope {
                if bv != &hs[scenario.as_str()] {
                    return Err(CatalogError::msg(format!(
                        "append-only changed a scenario outside its changelog scope: '{config}' / '{scenario}'"
                    )));
                }
                continue;
            }
            concurrency_only(bv, &hs[scenario.as_str()], &format!("{config}.{scenario}"))?;
        }
    }
    Ok(())
}

fn curve_key(row: &Row) -> String {
    let mut m = Map::new();
    for (k, v) in row {
        if k != "conc" && k != "exp-name" {
            m.insert(k.clone(), v.clone());
        }
    }
    crate::pyjson::dumps_canonical(&Value::Object(m)).unwrap_or_default()
}

fn row_concs(row: &Row) -> Result<Vec<i64>, CatalogError> {
    match row.get("conc") {
        Some(Value::Array(v)) if !v.is_empty() && v.iter().all(Value::is_i64) => {
            Ok(v.iter().filter_map(Value::as_i64).collect())
        }
        Some(v) if v.is_i64() => Ok(vec![v.as_i64().unwrap_or_default()]),
        other => Err(CatalogError::msg(format!(
            "append-only matrix entry has invalid concurrency value: {}",
            other
                .map(|v| v.to_string())
                .unwrap_or_else(|| "None".into())
        ))),
    }
}

/// Only the newly added points of `head` relative to `base`; any removed/added/modified curve
/// (a row identity without `conc`/`exp-name`) or removed point is an error.
pub fn append_only_delta(base: &[Row], head: &[Row]) -> Result<Vec<Row>, CatalogError> {
    use std::collections::{BTreeSet, HashSet};
    let mut bg: indexmap::IndexMap<String, BTreeSet<i64>> = indexmap::IndexMap::new();
    let mut hg: indexmap::IndexMap<String, BTreeSet<i64>> = indexmap::IndexMap::new();
    for r in base {
        bg.entry(curve_key(r)).or_default().extend(row_concs(r)?);
    }
    for r in head {
        hg.entry(curve_key(r)).or_default().extend(row_concs(r)?);
    }
    if bg.is_empty() {
        return Err(CatalogError::msg(
            "append-only requires an existing curve in the base revision",
        ));
    }
    if bg.keys().any(|k| !hg.contains_key(k)) || hg.keys().any(|k| !bg.contains_key(k)) {
        return Err(CatalogError::msg(
            "append-only may not add, remove, or modify curve logic; only concurrency points may be added",
        ));
    }
    for (k, bc) in &bg {
        let removed: Vec<i64> = bc.difference(&hg[k]).copied().collect();
        if !removed.is_empty() {
            return Err(CatalogError::msg(format!(
                "append-only may not remove existing concurrency points: {}",
                py_ints(&removed)
            )));
        }
    }
    let mut out = Vec::new();
    let mut emitted: HashMap<String, HashSet<i64>> = HashMap::new();
    for r in head {
        let k = curve_key(r);
        let added: BTreeSet<i64> = hg[&k].difference(&bg[&k]).copied().collect();
        let seen = emitted.entry(k).or_default();
        match r.get("conc") {
            Some(Value::Array(v)) => {
                let mut keep = Vec::new();
                for c in v.iter().filter_map(Value::as_i64) {
                    if added.contains(&c) && seen.insert(c) {
                        keep.push(Value::from(c));
                    }
                }
                if !keep.is_empty() {
                    let mut row = r.clone();
                    row.insert("conc".into(), Value::Array(keep));
                    out.push(row);
                }
            }
            Some(v) => {
                if let Some(c) = v.as_i64() {
                    if added.contains(&c) && seen.insert(c) {
                        out.push(r.clone());
                    }
                }
            }
            None => {}
        }
    }
    if out.is_empty() {
        return Err(CatalogError::msg(
            "append-only did not add any concurrency points",
        ));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------------
// F-1 … F-4: validate_perf_changelog.py
// ------------------------------------------------------------------------------------------------

/// The canonical merged-PR link form.
pub const CANONICAL_PR_LINK: &str = r"^https://github\.com/SemiAnalysisAI/InferenceX/pull/\d+$";
const PR_LINK_PLACEHOLDERS: [&str; 2] = [
    "XXX",
    "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX",
];

fn canonical_link(s: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(CANONICAL_PR_LINK).expect("regex"))
        .is_match(s)
}

/// F-1 / F-2: file-level invariants, then every entry validates. Returns the raw entries as JSON
/// (for equality comparisons). `label` names the version in messages (`FILE at REF`).
pub fn parse_changelog(raw: &[u8], label: &str) -> Result<Vec<Value>, CatalogError> {
    let e = |m: String| Err(CatalogError::msg(m));
    if !raw.ends_with(b"\n") {
        return e(format!("{label} does not end with a newline"));
    }
    if raw.contains(&b'\r') {
        return e(format!("{label} contains CR characters"));
    }
    if raw.contains(&b'\t') {
        return e(format!("{label} contains tabs"));
    }
    if raw.contains(&0) {
        return e(format!("{label} contains NUL bytes"));
    }
    let text = match std::str::from_utf8(raw) {
        Ok(t) => t,
        Err(err) => return e(format!("{label} is not UTF-8: {err}")),
    };
    let node = match yaml::parse(text) {
        Ok(n) => n,
        Err(err) => return e(format!("{label} is not valid YAML: {err}")),
    };
    let Kind::Seq(items) = &node.kind else {
        return e(format!("{label} root must be a YAML list"));
    };
    let top = text
        .lines()
        .filter(|l| l.starts_with("- config-keys:"))
        .count();
    if top != items.len() {
        return e(format!(
            "{label} has {top} top-level config entries but YAML parsed {} entries",
            items.len()
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if !matches!(item.kind, Kind::Map(_)) {
            return e(format!("{label} entry {} is not a mapping", i + 1));
        }
        if let Err(m) = ChangelogEntry::from_node(item) {
            return e(format!(
                "{label} entry {} fails ChangelogEntry validation: {m}",
                i + 1
            ));
        }
        out.push(
            item.to_json()
                .map_err(|err| CatalogError::msg(format!("{label}: {err}")))?,
        );
    }
    Ok(out)
}

fn without_pr_link(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "pr-link")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn link_of(v: &Value) -> String {
    match v.get("pr-link") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn py_repr_str(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// F-3 (entries): head keeps every base entry, changed only in a canonical `pr-link`; new
/// entries need a canonical link, or inside PR `pr_number` that PR's link or an `XXX` placeholder.
/// Returns (number of appended entries, number of pr-link corrections).
pub fn compare_entries(
    base: &[Value],
    head: &[Value],
    pr_number: Option<u64>,
) -> Result<(usize, usize), CatalogError> {
    if head.len() < base.len() {
        return Err(CatalogError::msg(
            "perf-changelog.yaml entries were deleted",
        ));
    }
    let mut corrections = 0;
    for (i, (b, h)) in base.iter().zip(head.iter()).enumerate() {
        if b == h {
            continue;
        }
        if without_pr_link(b) != without_pr_link(h) {
            return Err(CatalogError::msg(format!(
                "entry {} changed; existing entries are immutable except for pr-link-only corrections",
                i + 1
            )));
        }
        let (old, new) = (link_of(b), link_of(h));
        if old == new {
            return Err(CatalogError::msg(format!(
                "entry {} was reformatted without a semantic change",
                i + 1
            )));
        }
        if !canonical_link(&new) {
            return Err(CatalogError::msg(format!(
                "entry {} pr-link correction is not canonical: {}",
                i + 1,
                py_repr_str(&new)
            )));
        }
        corrections += 1;
    }
    let additions = &head[base.len()..];
    if corrections > 0 && !additions.is_empty() {
        return Err(CatalogError::msg(
            "do not mix historical pr-link corrections with new changelog entries",
        ));
    }
    for a in additions {
        let link = link_of(a);
        match pr_number {
            None => {
                if !canonical_link(&link) {
                    return Err(CatalogError::msg(format!(
                        "new main-branch entry has invalid pr-link: {}",
                        py_repr_str(&link)
                    )));
                }
            }
            Some(n) => {
                let expected = format!("https://github.com/SemiAnalysisAI/InferenceX/pull/{n}");
                if !PR_LINK_PLACEHOLDERS.contains(&link.as_str()) && link != expected {
                    return Err(CatalogError::msg(format!(
                        "new PR entry must use {} or an XXX placeholder; found {}",
                        py_repr_str(&expected),
                        py_repr_str(&link)
                    )));
                }
            }
        }
    }
    Ok((additions.len(), corrections))
}

fn split_keepends(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in b.iter().enumerate() {
        if *c == b'\n' {
            out.push(&b[start..=i]);
            start = i + 1;
        }
    }
    if start < b.len() {
        out.push(&b[start..]);
    }
    out
}

/// F-3 (bytes): appends keep every historical byte (head starts with base, one blank line
/// before each appended entry, no trailing blank line); pr-link corrections change only
/// `  pr-link:` lines; otherwise the bytes are identical.
pub fn validate_raw_change(
    base: &[u8],
    head: &[u8],
    additions: usize,
    corrections: usize,
) -> Result<(), CatalogError> {
    let e = |m: &str| Err(CatalogError::msg(m));
    if additions > 0 {
        if !head.starts_with(base) {
            return e("appended entries changed historical perf-changelog.yaml bytes; restore the base file byte-for-byte and append at the end");
        }
        let suffix = &head[base.len()..];
        let expected: &[u8] = if base.ends_with(b"\n\n") {
            b"- config-keys:"
        } else {
            b"\n- config-keys:"
        };
        if !suffix.starts_with(expected) {
            return e("new changelog entries must be separated from history by one empty line and appended at the end");
        }
        let re = regex::bytes::Regex::new(r"(?m)^- config-keys:[^\r\n]*\n").expect("regex");
        let starts: Vec<usize> = re.find_iter(head).map(|m| m.start()).collect();
        let appended = &starts[starts.len().saturating_sub(additions)..];
        for &s in appended.iter().skip(1) {
            let prefix = &head[..s];
            if !prefix.ends_with(b"\n\n") || prefix.ends_with(b"\n\n\n") {
                return e("appended changelog entries must have exactly one empty separator line");
            }
        }
        if head.ends_with(b"\n\n") {
            return e("the final appended changelog entry must end with one newline");
        }
        return Ok(());
    }
    if corrections > 0 {
        let (bl, hl) = (split_keepends(base), split_keepends(head));
        if bl.len() != hl.len() {
            return e("pr-link corrections may not add or delete lines");
        }
        let mut changed = 0;
        for (n, (b, h)) in bl.iter().zip(hl.iter()).enumerate() {
            if b == h {
                continue;
            }
            changed += 1;
            if !(b.starts_with(b"  pr-link:")
                && h.starts_with(b"  pr-link:")
                && b.ends_with(b"\n")
                && h.ends_with(b"\n"))
            {
                return Err(CatalogError::msg(format!(
                    "historical bytes changed outside a pr-link line at line {}",
                    n + 1
                )));
            }
        }
        if changed != corrections {
            return Err(CatalogError::msg(format!(
                "expected {corrections} changed pr-link line(s), found {changed}"
            )));
        }
        return Ok(());
    }
    if base != head {
        return e("changelog diff has no appended entry or pr-link correction; historical whitespace and formatting are immutable");
    }
    Ok(())
}

/// `git diff --check` on the added lines: trailing whitespace and a new blank line at EOF.
pub fn diff_check(base: &str, head: &str, path: &str) -> Result<(), CatalogError> {
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .diff_lines(base, head);
    let mut problems = Vec::new();
    let mut last_insert_blank_at_eof = false;
    for change in diff.iter_all_changes() {
        let line = change.value().strip_suffix('\n').unwrap_or(change.value());
        if change.tag() == ChangeTag::Insert {
            let n = change.new_index().map(|i| i + 1).unwrap_or(0);
            if line.ends_with(' ') || line.ends_with('\t') {
                problems.push(format!("{path}:{n}: trailing whitespace.\n+{line}"));
            }
            last_insert_blank_at_eof = line.trim().is_empty();
        } else {
            last_insert_blank_at_eof = false;
        }
    }
    if last_insert_blank_at_eof {
        let n = head.lines().count();
        problems.push(format!("{path}:{n}: new blank line at EOF."));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CatalogError::msg(format!(
            "git diff --check failed for {path}:\n{}",
            problems.join("\n")
        )))
    }
}

/// Outcome of [`validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// Appended entries.
    pub additions: usize,
    /// pr-link corrections.
    pub corrections: usize,
}

impl Validated {
    /// `Validated FILE: N appended entries, M pr-link corrections` (reference wording).
    pub fn summary(&self, path: &str) -> String {
        format!(
            "Validated {path}: {} appended entr{}, {} pr-link correction{}",
            self.additions,
            if self.additions == 1 { "y" } else { "ies" },
            self.corrections,
            if self.corrections == 1 { "" } else { "s" }
        )
    }
}

/// Everything `validate_perf_changelog.py` checks, on two versions of the file (F-1…F-4).
///
/// `base_label`/`head_label` name the versions in messages; F-4 runs [`process`] with
/// `catalog`/`runners` and `opts` and must succeed.
#[allow(clippy::too_many_arguments)]
pub fn validate(
    base: &[u8],
    head: &[u8],
    path: &str,
    base_label: &str,
    head_label: &str,
    pr_number: Option<u64>,
    opts: &ProcessOptions,
    catalog: &Catalog,
    runners: &Runners,
    base_catalog: Option<&Catalog>,
) -> Result<Validated, CatalogError> {
    let base_text = String::from_utf8_lossy(base);
    let head_text = String::from_utf8_lossy(head);
    diff_check(&base_text, &head_text, path)?;
    let b = parse_changelog(base, base_label)?;
    let h = parse_changelog(head, head_label)?;
    let (additions, corrections) = compare_entries(&b, &h, pr_number)?;
    validate_raw_change(base, head, additions, corrections)?;
    if additions > 0 {
        process_with_base(
            &base_text,
            &head_text,
            path,
            base_label,
            head_label,
            opts,
            catalog,
            runners,
            base_catalog,
        )
        .map_err(|e| {
            CatalogError::msg(format!("the change-log processor rejected the diff:\n{e}"))
        })?;
    } else if corrections == 0 {
        return Err(CatalogError::msg(format!("{path} has no changes")));
    }
    Ok(Validated {
        additions,
        corrections,
    })
}

// ------------------------------------------------------------------------------------------------
// Append
// ------------------------------------------------------------------------------------------------

/// A new change-log entry to append.
#[derive(Debug, Clone, Default)]
pub struct NewEntry {
    /// Config keys (or `*` globs).
    pub config_keys: Vec<String>,
    /// Description lines.
    pub description: Vec<String>,
    /// PR link.
    pub pr_link: String,
    /// `scenario-type` restriction.
    pub scenario_type: Vec<ScenarioType>,
    /// `evals-only: true`.
    pub evals_only: bool,
    /// `all-evals: true`.
    pub all_evals: bool,
}

/// Double-quoted YAML scalar (escapes `"`, `\` and control characters).
pub fn yaml_double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20
                || c == '\u{7f}'
                || c == '\u{85}'
                || c == '\u{2028}'
                || c == '\u{2029}'
                || c == '\u{feff}' =>
            {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn yaml_scalar(s: &str) -> String {
    let plain_ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-:*+".contains(c))
        && !s.starts_with(['-', ':', '*', '.'])
        && !s.contains(": ")
        && !s.ends_with(':')
        && matches!(yaml::resolve_plain(s), Kind::Str(_));
    if plain_ok {
        s.to_string()
    } else {
        yaml_double_quoted(s)
    }
}

/// The YAML text of one entry in the file's house style (two-space indent, quoted descriptions).
pub fn render_entry(e: &NewEntry) -> String {
    let mut s = String::from("- config-keys:\n");
    for k in &e.config_keys {
        s.push_str(&format!("    - {}\n", yaml_scalar(k)));
    }
    if !e.scenario_type.is_empty() {
        s.push_str("  scenario-type:\n");
        for t in &e.scenario_type {
            s.push_str(&format!("    - {}\n", t.as_str()));
        }
    }
    if e.evals_only {
        s.push_str("  evals-only: true\n");
    }
    if e.all_evals {
        s.push_str("  all-evals: true\n");
    }
    s.push_str("  description:\n");
    for d in &e.description {
        s.push_str(&format!("    - {}\n", yaml_double_quoted(d)));
    }
    s.push_str(&format!("  pr-link: {}\n", yaml_scalar(&e.pr_link)));
    s
}

/// Appends `entry` to the change log `base`, keeping every historical byte: the result starts
/// with `base`, has exactly one empty line before the new entry and ends with one newline.
///
/// Errors: `base` does not end with a newline (it cannot be extended safely), the entry is
/// empty/invalid, the rendered entry does not read back as the same values, or `validate` would
/// reject the entry (same message), e.g. `new main-branch entry has invalid pr-link: 'notalink'`
/// (the link must match [`CANONICAL_PR_LINK`] or be an `XXX` placeholder).
pub fn append_entry(base: &[u8], entry: &NewEntry) -> Result<Vec<u8>, CatalogError> {
    if entry.config_keys.is_empty() {
        return Err(CatalogError::msg(
            "an entry needs at least one config key (--key)",
        ));
    }
    if entry.description.is_empty() {
        return Err(CatalogError::msg(
            "an entry needs at least one description line (--description)",
        ));
    }
    if !base.is_empty() && !base.ends_with(b"\n") {
        return Err(CatalogError::msg(
            "the change log does not end with a newline; fix the file before appending",
        ));
    }
    let text = render_entry(entry);
    // Read the rendered entry back: the same values must come out.
    let node = yaml::parse(&text)
        .map_err(|e| CatalogError::msg(format!("rendered entry is not valid YAML: {e}")))?;
    let item = node
        .idx(0)
        .ok_or_else(|| CatalogError::msg("rendered entry did not parse as a list"))?;
    let parsed = ChangelogEntry::from_node(item)
        .map_err(|m| CatalogError::msg(format!("new entry is invalid: {m}")))?;
    if parsed.config_keys.0 != entry.config_keys
        || parsed.description.0 != entry.description
        || parsed.pr_link != entry.pr_link
    {
        return Err(CatalogError::msg(
            "rendered entry does not read back to the same values",
        ));
    }
    // The rules `validate` applies to an appended entry (F-2, F-3), with its messages, so that
    // append-then-validate passes: a canonical link, or an XXX placeholder (valid inside a PR,
    // `validate --pr-number N`).
    let entries = parse_changelog(text.as_bytes(), "new entry")?;
    let in_pr = PR_LINK_PLACEHOLDERS
        .contains(&entry.pr_link.as_str())
        .then_some(0);
    compare_entries(&[], &entries, in_pr)?;
    let mut out = base.to_vec();
    if !base.is_empty() && !base.ends_with(b"\n\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(text.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_message_matches_reference() {
        let e = added_text("a\nb\nc\n", "a\nc\nd\n", "perf-changelog.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Deletions are not allowed in perf-changelog.yaml. Only additions to the changelog are permitted. Found deleted line: b"
        );
        assert_eq!(added_text("a\n", "a\n\nb\n", "f").unwrap(), "\nb");
    }

    #[test]
    fn append_keeps_bytes_and_separator() {
        let e = NewEntry {
            config_keys: vec!["k1".into()],
            description: vec!["say \"hi\"".into()],
            pr_link: "https://github.com/SemiAnalysisAI/InferenceX/pull/7".into(),
            ..Default::default()
        };
        let out = append_entry(
            b"- config-keys:\n    - a\n  description:\n    - x\n  pr-link: y\n",
            &e,
        )
        .unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("- config-keys:\n    - a\n  description:\n    - x\n  pr-link: y\n\n- config-keys:\n    - k1\n"));
        assert!(s.ends_with("    - \"say \\\"hi\\\"\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/7\n"));
    }

    #[test]
    fn append_refuses_a_link_validate_refuses_with_its_message() {
        let mut e = NewEntry {
            config_keys: vec!["k1".into()],
            description: vec!["d".into()],
            pr_link: "notalink".into(),
            ..Default::default()
        };
        let err = append_entry(b"", &e).unwrap_err();
        assert_eq!(
            err.to_string(),
            "new main-branch entry has invalid pr-link: 'notalink'"
        );
        e.pr_link = "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX".into();
        assert!(append_entry(b"", &e).is_ok());
        e.pr_link = "XXX".into();
        assert!(append_entry(b"", &e).is_ok());
        e.pr_link = "https://github.com/SemiAnalysisAI/InferenceX/pull/12".into();
        assert!(append_entry(b"", &e).is_ok());
    }
}
