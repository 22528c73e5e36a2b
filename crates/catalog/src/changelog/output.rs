//! The processor's output (`ChangelogMatrixEntry`) and its pydantic-ordered JSON text
//! (`model_dump_json(by_alias=True, exclude_none=True)`).

use serde_json::{Map, Value};

use super::entry::ChangelogEntry;
use crate::error::CatalogError;
use crate::matrix::{seq_len_to_str, Row};
use crate::pyjson::{dumps_pydantic, recipe_fingerprint};

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
    /// Adds one throughput row: its `recipe-fingerprint` (SHA-256 of the canonical JSON without
    /// `conc`/`exp-name`, [`recipe_fingerprint`]), then into `single_node`/`multi_node` (a
    /// non-null `prefill`) under `agentic` or its `isl`/`osl` bucket (`1k1k`, `8k1k`, …).
    pub fn push_bench(&mut self, mut row: Row) -> Result<(), CatalogError> {
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
            &mut self.multi_node
        } else {
            &mut self.single_node
        };
        target.entry(bucket).or_default().push(row);
        Ok(())
    }

    /// Adds one eval row to `evals`, `agentic_evals`, `multinode_evals` or
    /// `multinode_agentic_evals`.
    pub fn push_eval(&mut self, row: Row) {
        let agentic = row.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
        let multi = row.get("prefill").is_some_and(|p| !p.is_null());
        match (multi, agentic) {
            (false, false) => self.evals.push(row),
            (false, true) => self.agentic_evals.push(row),
            (true, false) => self.multinode_evals.push(row),
            (true, true) => self.multinode_agentic_evals.push(row),
        }
    }

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
