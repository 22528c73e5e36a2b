//! Coverage of a catalog under `--simulate` (`servebench coverage`): the smallest point of every
//! selected config, run under `--simulate` with short windows — a single-node config from its
//! real recipe with the simulator behind the shims, a multinode config as the simulated
//! prefill/decode fleet `servebench run KEY --simulate` runs for it (its srt-slurm recipe is
//! read for the router policy, not run) — one after another (or `jobs` at a time) in one run directory, then one row
//! per config: kind (fixed-seq/agentic), vendor, the point run, stored or failed, and the
//! failure's first error with its triage class. The table drives the fixes class by class
//! (docs/run.md, "Coverage"; the whole-catalog figure is in docs/benchmarks.md).
//!
//! "Smallest point": the throughput point (no eval job) with the fewest GPUs, then the lowest
//! concurrency, then the lowest TP, of the config's matrix (the catalog's own expansion).
//! Multinode configs are of their own kinds (`multinode fixed-seq`, `multinode agentic`) and are
//! counted in the totals beside the single-node ones.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use servebench_catalog::matrix::ScenarioType;
use servebench_catalog::{Catalog, Runners};

use crate::backend::LocalBackend;
use crate::error::Result;
use crate::job::MeasureSpec;
use crate::plan::{build_plan, EvalSelection, PlanOptions, Point, Workload};
use crate::run::{PointState, RunOptions, RunSummary, Runner};

/// What a coverage run needs besides the cases.
#[derive(Debug, Clone)]
pub struct CoverageRequest {
    /// Run directory (resumed when it holds the same coverage run; `overwrite` starts over).
    pub out: PathBuf,
    /// Results store of the stored points.
    pub db: PathBuf,
    /// The servebench binary.
    pub exe: PathBuf,
    /// InferenceX checkout (or recipes folder).
    pub recipes: PathBuf,
    /// Runner label → runner names.
    pub runner_nodes: HashMap<String, Vec<String>>,
    /// AgentX traces for the agentic points (`None`: their fixed-sequence stand-in).
    pub traces: Option<PathBuf>,
    /// Profiling window of an agentic point, s (the recipe's `DURATION`).
    pub duration_s: f64,
    /// Measured prompts of a fixed-seq point.
    pub num_prompts: u32,
    /// Measured ISL/OSL of a fixed-seq point, tokens (short windows).
    pub isl: u32,
    /// Measured OSL, tokens.
    pub osl: u32,
    /// Jobs at once.
    pub jobs: usize,
    /// Shared data folder (`SERVEBENCH_SHARED` of the jobs).
    pub shared_dir: Option<PathBuf>,
    /// Readiness bound per point, s.
    pub ready_timeout_s: f64,
    /// Measurement bound per point, s.
    pub measure_timeout_s: f64,
    /// Start over in `out`.
    pub overwrite: bool,
    /// Progress lines on stderr (`--json` keeps stdout for the report).
    pub progress_stderr: bool,
}

/// Runs the cases' points (those with a recipe or, multinode, the simulated fleet; a point
/// without one is a failed row of class `no_recipe`) under `--simulate` with short windows, then builds the report; also written as
/// `coverage.json` in the run directory.
///
/// Errors: the run directory or store cannot be used.
pub fn run(req: &CoverageRequest, cases: &[Case]) -> Result<CoverageReport> {
    let mut selection = BTreeMap::new();
    selection.insert(
        "coverage".to_string(),
        cases
            .iter()
            .map(|c| c.key.as_str())
            .collect::<Vec<_>>()
            .join(","),
    );
    let opts = RunOptions {
        out: req.out.clone(),
        db: req.db.clone(),
        exe: req.exe.clone(),
        recipes: Some(req.recipes.clone()),
        simulate: true,
        sim_model: None,
        sim_speedup: None,
        sim_slowdown: None,
        sim_clock: None,
        runner_nodes: req.runner_nodes.clone(),
        partition: None,
        time_limit_min: None,
        max_retries: 0,
        measure: MeasureSpec {
            num_prompts: Some(req.num_prompts),
            warmups: Some(0),
            isl: Some(req.isl),
            osl: Some(req.osl),
            shared_dir: req.shared_dir.clone(),
            traces: req.traces.clone(),
            duration_s: req.traces.as_ref().map(|_| req.duration_s),
            ..MeasureSpec::default()
        },
        gsm8k_unresolved: None,
        ready_timeout_s: req.ready_timeout_s,
        teardown_grace_s: 5.0,
        measure_timeout_s: req.measure_timeout_s,
        selection,
        overwrite: req.overwrite,
        progress_stderr: req.progress_stderr,
    };
    let mut runner = Runner::new(opts, Box::new(LocalBackend::with_parallel(req.jobs)));
    let mut cases = cases.to_vec();
    for c in &mut cases {
        if let Some(p) = &c.point {
            if let Err(e) = runner.engine_for(p) {
                c.skipped = Some(format!("no_recipe: {e}"));
                c.point = None;
            }
        }
    }
    let plan: Vec<Point> = cases.iter().filter_map(|c| c.point.clone()).collect();
    let summary = if plan.is_empty() {
        None
    } else {
        runner.preflight(&plan)?;
        Some(runner.run(plan)?)
    };
    let rep = report(&cases, summary.as_ref());
    let path = req.out.join("coverage.json");
    let _ = std::fs::create_dir_all(&req.out);
    crate::state::write_json(&path, &rep)?;
    Ok(rep)
}

/// One selected config and the point chosen for it.
#[derive(Debug, Clone)]
pub struct Case {
    /// Config key.
    pub key: String,
    /// `fixed-seq` or `agentic` (from the config's scenarios).
    pub kind: String,
    /// `nvidia` or `amd` (the runner's SKU).
    pub vendor: String,
    /// The point run for it; `None` with `skipped` when nothing is run.
    pub point: Option<Point>,
    /// Why the config is not run (multinode, no point, the plan's error).
    pub skipped: Option<String>,
}

/// The configs of `keys` (globs; all when empty) with their smallest point, in catalog order.
/// `scenario` keeps only configs with points of those scenario types. `checkout` is the
/// InferenceX checkout where multinode points look for their srt-slurm recipe (the router
/// policy of the simulated fleet), as `servebench run --recipes` gives it.
///
/// Errors: a key or glob that matches nothing (the catalog's message).
pub fn select(
    catalog: &Catalog,
    runners: &Runners,
    keys: &[String],
    scenario: Option<&[ScenarioType]>,
    checkout: Option<&Path>,
) -> Result<Vec<Case>> {
    let keys = if keys.is_empty() {
        catalog.entries.keys().cloned().collect()
    } else {
        servebench_catalog::matrix::expand_config_keys(keys, catalog)?
    };
    let mut cases = Vec::new();
    for key in keys {
        let Some(e) = catalog.entries.get(&key) else {
            continue;
        };
        let vendor = crate::smi::gpu_sku(&crate::recipe::sku(&e.runner))
            .vendor
            .name()
            .to_string();
        let mut case = Case {
            key: key.clone(),
            kind: String::new(),
            vendor,
            point: None,
            skipped: None,
        };
        let plan = build_plan(
            catalog,
            runners,
            &PlanOptions {
                keys: vec![key.clone()],
                evals: EvalSelection::None,
                scenario: scenario.map(<[ScenarioType]>::to_vec),
                checkout: checkout.filter(|_| e.multinode).map(Path::to_path_buf),
                ..Default::default()
            },
        );
        match plan {
            Ok(points) => {
                let p = points
                    .into_iter()
                    .min_by_key(|p| (p.gpus(), p.conc, p.tp))
                    .expect("build_plan returns at least one point");
                case.kind = kind_of(&p).into();
                case.point = Some(p);
            }
            Err(err) => {
                if scenario.is_some() {
                    continue; // not of the selected scenario types
                }
                case.kind = if e.multinode { "multinode ?" } else { "?" }.into();
                case.skipped = Some(err.to_string());
            }
        }
        cases.push(case);
    }
    Ok(cases)
}

/// `fixed-seq` or `agentic`; `multinode fixed-seq` or `multinode agentic` for a multinode
/// (disaggregated) point.
pub fn kind_of(p: &Point) -> &'static str {
    match (p.disagg.is_some(), &p.workload) {
        (false, Workload::Fixed { .. }) => "fixed-seq",
        (false, Workload::Agentic { .. }) => "agentic",
        (true, Workload::Fixed { .. }) => "multinode fixed-seq",
        (true, Workload::Agentic { .. }) => "multinode agentic",
    }
}

/// Whether a coverage kind is a multinode one.
pub fn is_multinode(kind: &str) -> bool {
    kind.starts_with("multinode")
}

/// One config's row of the coverage table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageRow {
    /// Config key.
    pub config: String,
    /// `fixed-seq`, `agentic`, `multinode fixed-seq`, `multinode agentic`.
    pub kind: String,
    /// `nvidia`, `amd`.
    pub vendor: String,
    /// The point run (`8k1k · TP8/EP1 · conc 4`), if one was.
    pub point: Option<String>,
    /// `stored`, `failed`, `interrupted`, `not run`.
    pub state: String,
    /// Rows stored for it.
    pub rows: usize,
    /// Triage class of the first error (`shell_file_not_found`), when failed.
    pub class: Option<String>,
    /// Owning layer of the first error (`host`, `launcher`, …), when failed.
    pub layer: Option<String>,
    /// The first error line (or why the config was not run).
    pub first_error: Option<String>,
    /// The point's job log (last attempt).
    pub log: Option<String>,
}

/// The whole coverage: a row per config and the totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageReport {
    /// Rows in catalog order.
    pub rows: Vec<CoverageRow>,
    /// Configs run (single-node and multinode).
    pub run: usize,
    /// Configs with rows stored.
    pub stored: usize,
    /// `stored / run` in percent.
    pub stored_pct: f64,
    /// Single-node configs: [stored, run].
    #[serde(default)]
    pub single_node: [usize; 2],
    /// Multinode configs: [stored, run].
    #[serde(default)]
    pub multinode: [usize; 2],
    /// Stored/run per `kind vendor` (`fixed-seq nvidia`, `multinode agentic amd` → [stored, run]).
    pub by_group: BTreeMap<String, [usize; 2]>,
    /// Failed configs per first-error class, biggest first.
    pub by_class: Vec<(String, usize)>,
}

/// Builds the report from the cases and the run of their points (`summary` holds the points'
/// results in the order they were given, i.e. the cases with a point).
pub fn report(cases: &[Case], summary: Option<&RunSummary>) -> CoverageReport {
    let mut rows = Vec::new();
    let mut results = summary.map(|s| s.results.iter());
    for c in cases {
        let mut row = CoverageRow {
            config: c.key.clone(),
            kind: c.kind.clone(),
            vendor: c.vendor.clone(),
            point: c.point.as_ref().map(Point::label),
            state: "not run".into(),
            rows: 0,
            class: None,
            layer: None,
            first_error: c.skipped.clone(),
            log: None,
        };
        if let Some(why) = c
            .skipped
            .as_deref()
            .and_then(|s| s.strip_prefix("no_recipe: "))
        {
            row.state = "failed".into();
            row.class = Some("no_recipe".into());
            row.first_error = Some(why.to_string());
        }
        if c.point.is_some() {
            if let Some(r) = results.as_mut().and_then(|it| it.next()) {
                row.rows = r.points_stored + r.evals_stored;
                row.state = match r.state {
                    PointState::Stored | PointState::AlreadyStored if row.rows > 0 => "stored",
                    PointState::Stored | PointState::AlreadyStored => "failed",
                    PointState::Failed => "failed",
                    PointState::Interrupted => "interrupted",
                }
                .into();
                row.log = r.logs.last().map(|p| p.display().to_string());
                if let Some(f) = &r.failure {
                    row.class = Some(f.category.clone());
                    row.layer = Some(f.layer.clone());
                    row.first_error = f.first_error.clone().or(Some(f.summary.clone()));
                }
            }
        }
        rows.push(row);
    }
    totals(rows)
}

fn totals(rows: Vec<CoverageRow>) -> CoverageReport {
    let ran: Vec<&CoverageRow> = rows.iter().collect();
    let stored = ran.iter().filter(|r| r.state == "stored").count();
    let mut by_group: BTreeMap<String, [usize; 2]> = BTreeMap::new();
    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    let (mut single_node, mut multinode) = ([0, 0], [0, 0]);
    for r in &ran {
        let side: &mut [usize; 2] = if is_multinode(&r.kind) {
            &mut multinode
        } else {
            &mut single_node
        };
        side[1] += 1;
        if r.state == "stored" {
            side[0] += 1;
        }
        let g = by_group
            .entry(format!("{} {}", r.kind, r.vendor))
            .or_default();
        g[1] += 1;
        if r.state == "stored" {
            g[0] += 1;
        } else {
            let c = r.class.clone().unwrap_or_else(|| r.state.clone());
            *classes.entry(c).or_default() += 1;
        }
    }
    let mut by_class: Vec<(String, usize)> = classes.into_iter().collect();
    by_class.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let run = ran.len();
    CoverageReport {
        stored_pct: if run == 0 {
            0.0
        } else {
            100.0 * stored as f64 / run as f64
        },
        run,
        stored,
        single_node,
        multinode,
        by_group,
        by_class,
        rows,
    }
}

impl CoverageReport {
    /// The table as text: one line per config, then the totals per group and per class.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let w = self
            .rows
            .iter()
            .map(|r| r.config.len())
            .max()
            .unwrap_or(6)
            .max(6);
        s.push_str(&format!(
            "{:<w$}  {:<19}  {:<6}  {:<7}  {:<28}  first error\n",
            "config", "kind", "vendor", "state", "class"
        ));
        for r in &self.rows {
            let err = r.first_error.as_deref().unwrap_or("");
            let err: String = err.chars().take(160).collect();
            s.push_str(&format!(
                "{:<w$}  {:<19}  {:<6}  {:<7}  {:<28}  {}\n",
                r.config,
                r.kind,
                r.vendor,
                r.state,
                r.class.as_deref().unwrap_or("-"),
                err
            ));
        }
        let pct = |[ok, n]: [usize; 2]| {
            if n == 0 {
                0.0
            } else {
                100.0 * ok as f64 / n as f64
            }
        };
        if self.single_node[1] > 0 || self.multinode[1] == 0 {
            s.push_str(&format!(
                "stored {}/{} single-node configs ({:.1} %)\n",
                self.single_node[0],
                self.single_node[1],
                pct(self.single_node)
            ));
        }
        if self.multinode[1] > 0 {
            s.push_str(&format!(
                "stored {}/{} multinode configs ({:.1} %), simulated prefill/decode fleets\n",
                self.multinode[0],
                self.multinode[1],
                pct(self.multinode)
            ));
        }
        for (g, [ok, n]) in &self.by_group {
            s.push_str(&format!("  {g}: {ok}/{n}\n"));
        }
        if !self.by_class.is_empty() {
            s.push_str("failed by first-error class:\n");
            for (c, n) in &self.by_class {
                s.push_str(&format!("  {n:>3}  {c}\n"));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        config: &str,
        kind: &str,
        vendor: &str,
        state: &str,
        class: Option<&str>,
    ) -> CoverageRow {
        CoverageRow {
            config: config.into(),
            kind: kind.into(),
            vendor: vendor.into(),
            point: None,
            state: state.into(),
            rows: usize::from(state == "stored"),
            class: class.map(str::to_string),
            layer: None,
            first_error: None,
            log: None,
        }
    }

    #[test]
    fn totals_count_single_node_configs_by_group_and_class() {
        let r = totals(vec![
            row("a", "fixed-seq", "amd", "stored", None),
            row(
                "b",
                "fixed-seq",
                "amd",
                "failed",
                Some("shell_file_not_found"),
            ),
            row(
                "c",
                "agentic",
                "nvidia",
                "failed",
                Some("shell_file_not_found"),
            ),
            row(
                "d",
                "agentic",
                "nvidia",
                "failed",
                Some("python_module_missing"),
            ),
            row("e", "multinode fixed-seq", "nvidia", "stored", None),
            row(
                "f",
                "multinode agentic",
                "amd",
                "failed",
                Some("shell_file_not_found"),
            ),
        ]);
        assert_eq!((r.stored, r.run), (2, 6));
        assert_eq!((r.single_node, r.multinode), ([1, 4], [1, 2]));
        assert_eq!(r.by_group["multinode agentic amd"], [0, 1]);
        assert_eq!(r.by_group["multinode fixed-seq nvidia"], [1, 1]);
        assert_eq!(r.by_group["fixed-seq amd"], [1, 2]);
        assert_eq!(r.by_group["agentic nvidia"], [0, 2]);
        assert_eq!(r.by_class[0], ("shell_file_not_found".to_string(), 3));
        let t = r.render();
        assert!(t.contains("stored 1/4 single-node configs (25.0 %)"), "{t}");
        assert!(t.contains("stored 1/2 multinode configs (50.0 %)"), "{t}");
        assert!(t.contains("    3  shell_file_not_found"), "{t}");
    }

    #[test]
    fn the_smallest_point_of_each_single_node_config_is_chosen() {
        let cat = "k-fp4-b200-vllm:\n  image: vllm/vllm-openai:v0.27.1\n  model: m/M\n  model-prefix: k\n  runner: b200\n  precision: fp4\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - { tp: 8, conc-start: 4, conc-end: 16 }\n      - { tp: 4, conc-start: 8, conc-end: 8 }\nm-fp8-mi355x-sglang:\n  image: lmsysorg/sglang:v0.5.16-rocm\n  model: m/M\n  model-prefix: m\n  runner: mi355x\n  precision: fp8\n  framework: sglang\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - { tp: 2, conc-start: 2, conc-end: 4 }\n";
        let catalog = Catalog::from_sources(&[("m.yaml".into(), cat.into())]).unwrap();
        let runners = Runners::from_source(
            "r.yaml",
            "labels:\n  b200:\n    - b200_0\n  mi355x:\n    - mi355x_0\n",
        )
        .unwrap();
        let cases = select(&catalog, &runners, &[], None, None).unwrap();
        assert_eq!(cases.len(), 2);
        let p = cases[0].point.as_ref().unwrap();
        assert_eq!((p.tp, p.conc, p.eval_only), (4, 8, false));
        assert_eq!(
            (cases[0].kind.as_str(), cases[0].vendor.as_str()),
            ("fixed-seq", "nvidia")
        );
        assert_eq!(cases[1].vendor, "amd");
        assert_eq!(cases[1].point.as_ref().unwrap().conc, 2);
    }
}
