//! `append-only: true` entries: edits must stay inside the selected configs/scenarios and only
//! add concurrency points; only the added points are run.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::process::{py_ints, py_list};
use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::matrix::{Row, ScenarioType};

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
