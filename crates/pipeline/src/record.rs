//! [`StoreRecorder`]: the run being recorded in the results store. Points and eval rows are
//! added as they finish (a crash later keeps them); store errors are reported and make the exit
//! status 1, but never stop measuring.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use servebench_metrics::{Identity, PointStatus};
use servebench_store::{RunId, RunMeta, RunStatus, Store};

use crate::error::Result;
use crate::executor::PointOutput;
use crate::observe::{Observer, ObserverError};
use crate::plan::SweepPlan;
use crate::target::Target;

/// The run in the store.
pub struct StoreRecorder {
    store: Store,
    /// The run's id.
    pub run: RunId,
    /// The database file.
    pub db: PathBuf,
    /// Store writes that failed (each reported on stderr).
    pub errors: u32,
    /// Where its warnings go (the session's reporter).
    console: std::sync::Arc<dyn crate::console::Console>,
}

impl StoreRecorder {
    /// Records the run (status `running`) and its image provenance: the plan's digests, else
    /// the newest resolved provenance `servebench bump` stored for the plan's image.
    pub fn start(
        mut store: Store,
        db: &Path,
        mut meta: RunMeta,
        plan: &SweepPlan,
        console: std::sync::Arc<dyn crate::console::Console>,
    ) -> Result<Self> {
        let mut facts: Vec<(String, String)> = Vec::new();
        if let Some(image) = &plan.identity.image {
            if plan.index_digest.is_some() || plan.platform_digest.is_some() {
                facts.push(("image.provenance".into(), "command-line flags".into()));
            } else if let Some(p) = store.resolved_image_provenance(image)? {
                let pv = &p.provenance;
                meta.index_digest = pv.index_digest.clone();
                meta.platform_digest = pv.amd64_digest().map(str::to_string);
                facts.push((
                    "image.provenance".into(),
                    format!(
                        "store image_provenance {} recorded {} ({})",
                        p.id, p.recorded_at, pv.source
                    ),
                ));
                for (plat, d) in &pv.platform_digests {
                    facts.push((format!("image.platform_digest.{plat}"), d.clone()));
                }
                for (k, v) in &pv.labels {
                    facts.push((format!("image.label.{k}"), v.clone()));
                }
                if let Some(t) = &pv.image_created {
                    facts.push(("image.created".into(), t.clone()));
                }
                console.line(&format!(
                    "image {image}: digests from the store (recorded by `servebench bump` {})",
                    p.recorded_at
                ));
            }
        }
        if let Some(d) = &meta.index_digest {
            facts.push(("image.index_digest".into(), d.clone()));
        }
        if let Some(d) = &meta.platform_digest {
            facts.push(("image.platform_digest".into(), d.clone()));
        }
        let run = store.record_run(&meta)?;
        for (k, v) in &facts {
            store.set_provenance(run, k, v)?;
        }
        Ok(StoreRecorder {
            store,
            run,
            db: db.to_path_buf(),
            errors: 0,
            console,
        })
    }

    /// Continues `run` (reopened: status `running` until [`StoreRecorder::finish`]), for a
    /// sweep resumed with `--resume` ([`crate::resume`]).
    pub fn reopen(
        mut store: Store,
        db: &Path,
        run: RunId,
        console: std::sync::Arc<dyn crate::console::Console>,
    ) -> Result<Self> {
        store.reopen_run(run)?;
        Ok(StoreRecorder {
            store,
            run,
            db: db.to_path_buf(),
            errors: 0,
            console,
        })
    }

    /// The open store.
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// Adds an eval row (see [`eval_store_row`]).
    pub fn add_eval(&mut self, row: &servebench_eval::EvalRow) {
        if let Err(e) = self.store.add_eval(self.run, row) {
            self.console.warn(&format!(
                "warning: {}: the eval row was not stored: {e:#}",
                self.db.display()
            ));
            self.errors += 1;
        }
    }

    /// Marks the run finished with `status`.
    pub fn finish(&mut self, status: RunStatus) {
        if let Err(e) = self.store.finish_run(self.run, status) {
            self.console.warn(&format!(
                "warning: {}: run {} could not be marked {}: {e:#}",
                self.db.display(),
                self.run,
                status.as_str()
            ));
            self.errors += 1;
        }
    }
}

impl Observer for StoreRecorder {
    fn point_done(&mut self, p: &PointOutput) -> Result<(), ObserverError> {
        if let Err(e) = self.store.add_point(self.run, &p.agg) {
            self.console.warn(&format!(
                "warning: {}: {} was not stored: {e:#}",
                self.db.display(),
                p.spec.label()
            ));
            self.errors += 1;
        }
        Ok(())
    }
}

/// The run's metadata for the store.
pub fn run_meta(
    plan: &SweepPlan,
    target: &Target,
    model: &str,
    identity: &Identity,
    out_dir: &Path,
) -> RunMeta {
    let c = plan;
    let mut m = RunMeta::new(c.kind);
    m.endpoint = Some(match &target.sim_describe {
        Some(d) => format!("embedded simulator: {d}"),
        None => target.endpoint.base_url.clone(),
    });
    m.image = Some(identity.image.clone());
    m.index_digest = c.index_digest.clone();
    m.platform_digest = c.platform_digest.clone();
    m.config_key = c.identity.config_key.clone();
    m.topology = Some(servebench_contracts::labels::topology_label(
        identity.tp,
        identity.ep,
    ));
    m.workload = Some(c.workload.label());
    m.branch = c.branch.clone();
    m.out_dir = Some(std::fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.to_path_buf()));
    let (w1, w2) = c.workload.run_meta();
    let mut meta = serde_json::Map::new();
    let mut put = |k: &str, v: Value| {
        meta.insert(k.to_string(), v);
    };
    put("model", json!(model));
    put("model_prefix", json!(identity.infmax_model_prefix));
    put("hw", json!(identity.hw));
    put("framework", json!(identity.framework));
    put("precision", json!(identity.precision));
    put("spec_decoding", json!(identity.spec_decoding));
    put("tp", json!(identity.tp));
    put("ep", json!(identity.ep));
    put("pp", json!(identity.pp));
    put("dp_attention", json!(identity.dp_attention));
    put("num_gpus", json!(identity.num_gpus()));
    put("api", json!(c.api.as_str()));
    put("engine", json!(c.engine.name()));
    put("compat", json!(c.compat.as_str()));
    // the workload's keys (fixed-sequence flags, or the AgentX traces and window)
    for (k, v) in w1 {
        put(k, v);
    }
    put("concurrencies", json!(c.concurrencies));
    put("repeats", json!(c.repeats));
    for (k, v) in w2 {
        put(k, v);
    }
    put(
        "endpoint_url",
        json!(servebench_contracts::redact::url(&target.endpoint.base_url)),
    );
    put("simulator", target.simulator_json());
    put(
        "eval",
        json!(c.eval.map(
            |_| json!({"task": "gsm8k", "conc": c.eval_plan.conc, "limit": c.eval_plan.limit})
        )),
    );
    put(
        "command",
        json!(servebench_contracts::redact::command_line(std::env::args())),
    );
    m.meta = Value::Object(meta);
    m
}

/// The run's final status: `interrupted` (Ctrl-C), `failed` (an error stopped it, or no
/// point is ok), `ok` (every point ok and the eval, if any, ran), else `partial`.
pub fn run_status(
    points: &[PointOutput],
    cancelled: bool,
    errored: bool,
    eval_error: bool,
) -> RunStatus {
    let ok = points
        .iter()
        .filter(|p| p.metrics.point_status == PointStatus::Ok)
        .count();
    if cancelled {
        RunStatus::Interrupted
    } else if errored || ok == 0 {
        RunStatus::Failed
    } else if ok == points.len() && !eval_error {
        RunStatus::Ok
    } else {
        RunStatus::Partial
    }
}

/// The stored eval row: InferenceX's eval aggregate row (§4.4) plus the gate outcome
/// (`threshold`, `threshold_source`, `passed`, read by compare) and the image.
pub fn eval_store_row(
    r: &servebench_eval::EvalResult,
    image: Option<&str>,
) -> servebench_eval::EvalRow {
    let mut row = r.row.clone();
    row.threshold = Some(r.gate.threshold.value);
    row.threshold_source = Some(r.gate.threshold.source.clone());
    row.passed = Some(r.gate.pass);
    row.image = image.map(str::to_string);
    row.target = Some(r.target.clone());
    row
}
