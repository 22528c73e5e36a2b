//! Resuming a sweep that was killed (`kill -9`, a lost node, Ctrl-C) part-way: `servebench
//! sweep … --out DIR --resume` keeps every point that finished and measures the rest.
//!
//! * A point is finished when its marker `DIR/conc*/point.json` exists. The marker is written
//!   after `result.json` and `agg.json`, to a temporary file renamed into place, so it is either
//!   whole or absent; it holds what the table, the summary and the store need (metrics, agg row,
//!   result, wall time). A point marked `interrupted` (Ctrl-C) counts as not finished.
//! * A point that did not finish is measured again from scratch: its directory (records cut
//!   mid-line included) is emptied first. This holds for AgentX replay points too: an
//!   interrupted replay window cannot be continued, only redone.
//! * The store: the run that wrote into `DIR` (newest of the plan's kind) is reopened
//!   (status `running`), its point rows are matched with the finished points by their agg row
//!   (stored verbatim), rows of points being redone are deleted, a finished point whose row
//!   never reached the store (killed between the marker and the insert) is added, and eval rows
//!   are deleted (the eval runs again, resuming its own `samples.jsonl`). The resumed run
//!   therefore ends with exactly one row per point.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use servebench_metrics::{AggRow, PointMetrics, PointStatus};
use servebench_store::{RunId, Store};

use crate::error::{io, Context, IoOp, PipelineError, Result};
use crate::executor::{point_dir_name, PointOutput, PointSpec};
use crate::plan::SweepPlan;
use crate::record::StoreRecorder;

/// The completion marker of a point, in its directory.
pub const POINT_MARKER: &str = "point.json";

/// Writes `point.json` for a finished point (temporary file, then rename: whole or absent).
pub fn mark_finished(p: &PointOutput) -> Result<()> {
    let v = json!({
        "conc": p.spec.conc,
        "repeat": p.spec.repeat,
        "repeats": p.spec.repeats,
        "wall_s": p.wall_s,
        "metrics": p.metrics,
        "agg": p.agg.to_value(),
        "result": p.result,
    });
    let path = p.spec.dir.join(POINT_MARKER);
    let tmp = p.spec.dir.join(format!("{POINT_MARKER}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec(&v)?).map_err(io(IoOp::Write, &tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(IoOp::Write, &path))
}

/// A finished point read back from its marker.
pub struct Finished {
    /// The point as the observers receive it.
    pub point: PointOutput,
    /// Its agg row exactly as the marker holds it (what the store row holds: matched by value).
    pub agg_json: Value,
}

/// The finished point in `spec.dir` (from its marker), or `None` when the point has to be
/// measured (again): no marker or an interrupted point. A marker of another point (the sweep
/// resumed with other flags) is an error.
pub fn load_finished(spec: &PointSpec) -> Result<Option<Finished>> {
    let path = spec.dir.join(POINT_MARKER);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PipelineError::io(IoOp::ReadMarker, &path, e)),
    };
    let v: Value = serde_json::from_slice(&text)
        .with_context(|| format!("{}: not a point marker", path.display()))?;
    if v["conc"].as_u64() != Some(spec.conc)
        || v["repeat"].as_u64() != Some(u64::from(spec.repeat))
        || v["repeats"].as_u64() != Some(u64::from(spec.repeats))
    {
        return Err(PipelineError::Invalid(format!(
            "{}: written for another point (conc {}, repeat {}/{}) than {}; resume with the flags of the interrupted sweep",
            path.display(),
            v["conc"],
            v["repeat"],
            v["repeats"],
            spec.label()
        )));
    }
    let metrics: PointMetrics = serde_json::from_value(v["metrics"].clone())
        .with_context(|| format!("{}: metrics", path.display()))?;
    if metrics.point_status == PointStatus::Interrupted {
        return Ok(None);
    }
    let agg =
        AggRow::from_value(&v["agg"]).with_context(|| format!("{}: agg row", path.display()))?;
    Ok(Some(Finished {
        point: PointOutput {
            spec: spec.clone(),
            metrics,
            agg,
            result: serde_json::from_value(v["result"].clone())
                .with_context(|| format!("{}: result", path.display()))?,
            wall_s: v["wall_s"].as_f64().unwrap_or(0.0),
        },
        agg_json: v["agg"].clone(),
    }))
}

/// Empties the directory of a point that is measured again (records of the killed attempt,
/// possibly cut mid-line, must not mix with the new ones) and recreates it.
pub fn clear_point_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io(IoOp::Empty, dir))?;
    }
    std::fs::create_dir_all(dir).map_err(io(IoOp::Create, dir))
}

/// What reconciling the store with the finished points did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StoreFix {
    /// Finished points whose row was already stored.
    pub kept: usize,
    /// Finished points whose row was missing and was added.
    pub added: usize,
    /// Rows of points that are measured again, deleted.
    pub deleted: usize,
    /// Eval rows deleted (the eval runs again).
    pub evals_deleted: usize,
}

/// Makes the stored points of `run` exactly the `finished` ones: each finished point's agg row
/// is matched with a stored row holding the same JSON; unmatched stored rows are deleted,
/// unmatched finished points added (in order). Eval rows are deleted.
pub fn reconcile_store(store: &mut Store, run: RunId, finished: &[&Finished]) -> Result<StoreFix> {
    let mut stored = store.points(run)?;
    let mut fix = StoreFix::default();
    let mut to_add = Vec::new();
    for f in finished {
        let same = |s: &servebench_store::StoredPoint| {
            s.row.servebench().map(AggRow::to_value).as_ref() == Some(&f.agg_json)
        };
        match stored.iter().position(same) {
            Some(i) => {
                stored.remove(i);
                fix.kept += 1;
            }
            None => to_add.push(&f.point.agg),
        }
    }
    for s in stored {
        if store.delete_point(run, s.id)? {
            fix.deleted += 1;
        }
    }
    for a in to_add {
        store.add_point(run, a)?;
        fix.added += 1;
    }
    fix.evals_deleted = store.delete_evals(run)?;
    Ok(fix)
}

/// With `--resume`: the newest run of the plan's kind that wrote into `out_dir`, if any (the
/// sweep then continues it instead of recording a new run). Without `--resume`: `None`.
pub fn previous_run(store: &Store, out_dir: &Path, plan: &SweepPlan) -> Result<Option<RunId>> {
    if !plan.resume {
        return Ok(None);
    }
    Ok(store
        .runs_in_out_dir(out_dir, plan.kind)?
        .first()
        .map(|r| r.id))
}

/// With `--resume`: the finished points under `out_dir` by (conc, repeat), said on stdout, and
/// the store's run made to hold exactly their rows ([`reconcile_store`]). Without: empty.
pub fn finished_points(
    plan: &SweepPlan,
    out_dir: &Path,
    recorder: Option<&mut StoreRecorder>,
) -> Result<BTreeMap<(u64, u32), Finished>> {
    let mut out = BTreeMap::new();
    if !plan.resume {
        return Ok(out);
    }
    for &conc in &plan.concurrencies {
        for repeat in 1..=plan.repeats {
            let spec = PointSpec {
                conc,
                repeat,
                repeats: plan.repeats,
                dir: out_dir.join(point_dir_name(conc, repeat, plan.repeats)),
            };
            if let Some(f) = load_finished(&spec)? {
                out.insert((conc, repeat), f);
            }
        }
    }
    let total = plan.concurrencies.len() * plan.repeats as usize;
    println!(
        "resuming {}: {} of {total} points finished earlier and kept, {} to measure",
        out_dir.display(),
        out.len(),
        total - out.len()
    );
    if let Some(r) = recorder {
        let run = r.run;
        let fix = reconcile_store(r.store_mut(), run, &out.values().collect::<Vec<_>>())?;
        println!(
            "resuming run {run} (store {}): {} point rows kept, {} added, {} of unfinished points removed, {} eval rows removed",
            r.db.display(),
            fix.kept,
            fix.added,
            fix.deleted,
            fix.evals_deleted
        );
    }
    Ok(out)
}
