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
    write_whole(&p.spec.dir.join(POINT_MARKER), &serde_json::to_vec(&v)?)
}

/// Writes `bytes` to `path` whole or not at all: a temporary file beside it (`NAME.tmp`), then a
/// rename, so a sweep killed mid-write never leaves a truncated marker or flags file for
/// `--resume` to trip over (seen: an AgentX sweep SIGKILLed 12 ms in left an empty
/// `sweep-flags.json`, and the resume failed "not a flags file").
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes).map_err(io(IoOp::Write, &tmp))?;
    std::fs::rename(&tmp, path).map_err(io(IoOp::Write, path))
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
    // the point's records, as the observers of a measured point get them in memory
    let records = servebench_client::read_records(&spec.dir.join("records.jsonl"))
        .map_err(PipelineError::Client)?;
    Ok(Some(Finished {
        point: PointOutput {
            spec: spec.clone(),
            metrics,
            agg,
            result: serde_json::from_value(v["result"].clone())
                .with_context(|| format!("{}: result", path.display()))?,
            wall_s: v["wall_s"].as_f64().unwrap_or(0.0),
            records: records.into(),
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
    console: &dyn crate::console::Console,
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
    console.line(&format!(
        "resuming {}: {} of {total} points finished earlier and kept, {} to measure",
        out_dir.display(),
        out.len(),
        total - out.len()
    ));
    if let Some(r) = recorder {
        let run = r.run;
        let fix = reconcile_store(r.store_mut(), run, &out.values().collect::<Vec<_>>())?;
        console.line(&format!(
            "resuming run {run} (store {}): {} point rows kept, {} added, {} of unfinished points removed, {} eval rows removed",
            r.db.display(),
            fix.kept,
            fix.added,
            fix.deleted,
            fix.evals_deleted
        ));
    }
    Ok(out)
}

/// The file in the output directory that holds the measurement's flags ([`plan_flags`]), so
/// `--resume` can refuse to mix points measured under other flags.
pub const PLAN_FILE: &str = "sweep-flags.json";

/// The flags that decide what a point measures and how it is labelled, as `flag → value`
/// (`--conc` and `--repeats` are not among them: a resumed sweep may add or drop points).
pub fn plan_flags(plan: &SweepPlan) -> BTreeMap<&'static str, String> {
    let d = |v: &dyn std::fmt::Debug| format!("{v:?}");
    let id = &plan.identity;
    let mut m = BTreeMap::new();
    let mut put = |k: &'static str, v: String| {
        m.insert(k, v);
    };
    put("--scenario", plan.workload.scenario().into());
    for (k, v) in plan.workload.flags(plan.api) {
        put(k, v);
    }
    put("--endpoint", d(&plan.endpoint));
    put("--model", d(&plan.model));
    put("--tokenizer", d(&plan.tokenizer));
    put("--engine", d(&plan.engine));
    put("--compat", d(&plan.compat));
    put("--itl", d(&plan.itl_mode));
    put("--gpus", d(&plan.gpus));
    put(
        "--new-connection-per-request",
        plan.new_connection_per_request.to_string(),
    );
    put("--flush-cache", d(&plan.flush_cache));
    if plan.endpoint.is_none() {
        put("--sim-gpu", plan.sim.gpu.clone());
        put("--sim-model", plan.sim.model.clone());
        put("--sim-speedup", d(&plan.sim.speedup));
        // Only when planted (runs recorded before the flag existed resume unchanged).
        if plan.sim.slowdown != 1.0 {
            put("--sim-slowdown", plan.sim.slowdown.to_string());
        }
        // only for a fleet (runs recorded before the flags existed resume unchanged)
        if let Some(f) = &plan.sim.fleet {
            put("--sim-prefill", f.prefill.clone());
            put("--sim-decode", f.decode.clone());
            put("--sim-router", f.router.clone());
            put("--sim-fabric", d(&f.fabric));
        }
    }
    for (k, v) in [
        ("--hw", d(&id.hw)),
        ("--framework", d(&id.framework)),
        ("--precision", d(&id.precision)),
        ("--model-prefix", d(&id.model_prefix)),
        ("--tp", d(&id.tp)),
        ("--pp", id.pp.to_string()),
        ("--pcp", id.pcp.to_string()),
        ("--dcp", id.dcp.to_string()),
        ("--ep", id.ep.to_string()),
        ("--dp-attn", id.dp_attn.to_string()),
        ("--spec-decoding", id.spec_decoding.clone()),
        ("--image", d(&id.image)),
    ] {
        put(k, v);
    }
    m
}

/// A new sweep: writes [`PLAN_FILE`]. `--resume`: compares the flags with the ones the sweep
/// in `out_dir` was started with and refuses, naming every flag that differs; a directory
/// with results but without the file (written by an older servebench) is resumed unchecked,
/// said once; one with neither (a sweep killed before it wrote anything, or none) starts the
/// sweep, writing the file.
pub fn check_or_write_flags(
    plan: &SweepPlan,
    out_dir: &Path,
    console: &dyn crate::console::Console,
) -> Result<()> {
    let path = out_dir.join(PLAN_FILE);
    let now = plan_flags(plan);
    if plan.resume {
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && crate::outdir::holds_results(out_dir) =>
            {
                console.warn(&format!(
                    "warning: --resume: {} has no {PLAN_FILE} (an older servebench wrote it): the flags of the kept points are not checked against this command's",
                    out_dir.display()
                ));
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // killed before it wrote anything, or never started: nothing kept, the sweep
                // starts here (and records its flags for the next --resume)
                console.warn(&format!(
                    "--resume: {} holds no sweep yet: measuring every point",
                    out_dir.display()
                ));
                return write_whole(&path, &serde_json::to_vec_pretty(&now)?);
            }
            Err(e) => return Err(PipelineError::io(IoOp::ReadMarker, &path, e)),
        };
        let then: BTreeMap<String, String> = serde_json::from_slice(&text)
            .with_context(|| format!("{}: not a flags file", path.display()))?;
        let diffs: Vec<String> = now
            .iter()
            .filter_map(|(k, v)| {
                let was = then.get(*k).map(String::as_str).unwrap_or("(not set)");
                (was != v).then(|| format!("{k} {was} → {v}"))
            })
            .collect();
        if !diffs.is_empty() {
            return Err(PipelineError::Invalid(format!(
                "--resume {}: the sweep there was measured with other flags ({}); resume with the same flags, or measure into another --out",
                out_dir.display(),
                diffs.join(", ")
            )));
        }
        return Ok(());
    }
    write_whole(&path, &serde_json::to_vec_pretty(&now)?)
}
