//! InferenceX `utils/process_changelog.py`: the added entries of a change → the sweep matrix
//! (key resolution, generator runs per entry and scenario group, `--trim-conc`, fingerprints,
//! buckets).

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::append_only::{append_only_delta, validate_append_only_scope};
use super::diff::added_text;
use super::entry::{parse_added_entries, ChangelogEntry};
use super::output::ChangelogMatrix;
use crate::catalog::{Catalog, Runners};
use crate::error::CatalogError;
use crate::matrix::{generate, Common, Mode, Row, ScenarioType, TestConfig};

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
    process_added(
        &added,
        base_ref,
        head_ref,
        opts,
        catalog,
        runners,
        base_catalog,
    )
}

/// The processor from the added lines on (what follows `get_added_lines` in `main`): `added`
/// is [`super::diff::added_text_git`]'s (or [`super::diff::added_text`]'s) result;
/// `base_ref`/`head_ref` are echoed in `changelog_metadata`.
pub fn process_added(
    added: &str,
    base_ref: &str,
    head_ref: &str,
    opts: &ProcessOptions,
    catalog: &Catalog,
    runners: &Runners,
    base_catalog: Option<&Catalog>,
) -> Result<ChangelogMatrix, CatalogError> {
    let entries = parse_added_entries(added)?;
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
        Some(checked_base(&resolved, catalog, base_catalog)?)
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
    for row in bench_rows {
        out.push_bench(row)?;
    }
    for row in eval_rows {
        out.push_eval(row);
    }
    Ok(out)
}

/// The base revision's master configs for `append-only` entries, after the scope checks:
/// every selected config exists there, and nothing outside the selected configs/scenarios
/// changed (`validate_append_only_scope`).
fn checked_base<'a>(
    resolved: &[(&ChangelogEntry, Vec<String>)],
    catalog: &Catalog,
    base_catalog: Option<&'a Catalog>,
) -> Result<&'a Catalog, CatalogError> {
    let Some(bc) = base_catalog else {
        return Err(CatalogError::msg(
            "append-only entries need the master configs at the base revision (--base-config-files, or git-ref mode)",
        ));
    };
    let mut selected: Vec<(String, Vec<ScenarioType>)> = Vec::new();
    for (e, configs) in resolved {
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
    Ok(bc)
}

pub(super) fn py_list(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", inner.join(", "))
}

pub(super) fn py_ints(items: &[i64]) -> String {
    let inner: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    format!("[{}]", inner.join(", "))
}
