//! `--baseline main` (or `--baseline branch:NAME`): the baseline side InferenceX's PR check
//! (`utils/compare_results.py`) would use — for each candidate point, the newest error-free
//! stored row of the same config on that branch ([`servebench_store::Store::baseline_point`],
//! docs/store-postgres.md), on either backend.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use servebench_compare::{source_links, Point, RunInfo};
use servebench_store::{RunKind, StoredRow};

use crate::error::{io, Context, IoOp, Result, ReviewError};
use crate::sides::{open_store, Side};

/// The branch a `--baseline` value names: `main` → `main`, `branch:NAME` → `NAME`.
pub fn branch_of(arg: &str) -> Option<&str> {
    if arg == "main" {
        return Some("main");
    }
    arg.strip_prefix("branch:").filter(|b| !b.is_empty())
}

/// The candidate's rows as JSON: a stored run (`latest`, `12`, `12,13`) or a file of agg rows
/// (one object or an array, as compare_results.py reads them).
fn candidate_rows(db: &Path, candidate: &str) -> Result<Vec<Value>> {
    let ids: Option<Vec<i64>> = candidate
        .split(',')
        .map(|s| s.trim().parse().ok())
        .collect();
    if candidate == "latest" || ids.is_some() {
        let store = open_store(db)?;
        let ids = match ids {
            Some(ids) => ids,
            None => store
                .list_runs(None, None)?
                .into_iter()
                .find(|r| r.kind != RunKind::Baseline)
                .map(|r| vec![r.id.0])
                .ok_or_else(|| {
                    ReviewError::NotFound(format!("{}: no non-baseline run", db.display()))
                })?,
        };
        let mut rows = Vec::new();
        for id in ids {
            for p in store.points(servebench_store::RunId(id))? {
                rows.push(p.row.to_value());
            }
        }
        return Ok(rows);
    }
    let path = Path::new(candidate);
    let text = std::fs::read_to_string(path).map_err(io(IoOp::Read, path))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| ReviewError::NotFound(format!("{candidate}: not JSON: {e}")))?;
    Ok(match v {
        Value::Array(a) => a,
        other => vec![other],
    })
}

/// The baseline side of `candidate` on `branch`, and the one line saying what was found.
pub fn branch_baseline_for(db: &Path, candidate: &str, branch: &str) -> Result<(Side, String)> {
    let rows = candidate_rows(db, candidate)?;
    let store = open_store(db)?;
    let (mut seen, mut runs, mut points, mut matched) =
        (BTreeSet::new(), BTreeSet::new(), Vec::new(), 0);
    for v in &rows {
        let Some(p) = store.baseline_point(v, branch)? else {
            continue;
        };
        matched += 1;
        runs.insert(p.run_id.0);
        if seen.insert(p.id) {
            let point = match &p.row {
                StoredRow::Servebench(r) => Point::from_agg(r),
                StoredRow::Imported(r) => Point::from_foreign(r),
            };
            points.push(point.with_context(|| format!("run {}, point {}", p.run_id, p.id))?);
        }
    }
    let from: Vec<String> = runs.iter().map(|r| r.to_string()).collect();
    let line = format!(
        "note: --baseline {branch}: {matched} of {} candidate points have a baseline, the newest \
         error-free row of the same config on branch {branch} (InferenceX compare_results.py's \
         choice){}",
        rows.len(),
        if from.is_empty() {
            String::new()
        } else {
            format!(", from run(s) {}", from.join(", "))
        }
    );
    let info = RunInfo {
        label: format!("branch {branch}"),
        kind: Some("branch".into()),
        sources: source_links(&points),
        ..RunInfo::default()
    };
    Ok((
        Side {
            info,
            points,
            evals: Vec::new(),
        },
        line,
    ))
}
