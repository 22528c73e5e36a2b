//! The run loop: every point of the plan through a [`JobBackend`], results read back into the
//! store, failures triaged and retried or not, progress printed one line per event.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use servebench_store::{RunId, RunKind, RunMeta, Store};

use crate::backend::{kill_engine_of, JobBackend, JobHandle};
use crate::error::{Result, RunnerError};
use crate::job::{read_status, EngineSpec, JobSpec, MeasureSpec};
use crate::plan::Point;
use crate::recipe::{job_script, resolve_recipe, runner_name, sim_setup, ScriptInput, SimSetup};
use crate::signal;
use crate::state::{self, RunState};
use crate::status::{invalid_words, EvalGate, RunStatus, VerdictOutcome};

/// A progress line of the run: on stdout, or on stderr with [`RunOptions::progress_stderr`]
/// (`servebench coverage --json` keeps stdout for its JSON).
macro_rules! say {
    ($r:expr, $($t:tt)*) => {
        if $r.opts.progress_stderr {
            eprintln!($($t)*)
        } else {
            println!($($t)*)
        }
    };
}

mod scheduler;

/// What a run needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run directory (created, or resumed when it holds `run.json`).
    pub out: PathBuf,
    /// The results store the points go into.
    pub db: PathBuf,
    /// The servebench binary (jobs run `servebench run --exec-point`, the sweep and the sim).
    pub exe: PathBuf,
    /// Recipes folder (scenario `recipes/`, InferenceX root or its `benchmarks/single_node`).
    pub recipes: Option<PathBuf>,
    /// Start the embedded simulator instead of (or, with `recipes`, for) the real engine.
    pub simulate: bool,
    /// Simulator model preset override.
    pub sim_model: Option<String>,
    /// Simulated engines run this many times faster than real time (`--sim-speedup`; the
    /// sweep scales back to modelled time). `None`: real time.
    pub sim_speedup: Option<f64>,
    /// A planted regression: each simulated engine's modelled steps take F times longer
    /// (`--sim-slowdown`, passed to `servebench sim`). `None`: the preset's engine.
    pub sim_slowdown: Option<f64>,
    /// `--sim-clock` of simulated points: `virtual` (the default without --sim-speedup, and for
    /// a real recipe's shimmed engine launch) measures each point in one process on the
    /// discrete-event clock; `wall` over TCP against the started simulator.
    pub sim_clock: Option<servebench_sim::SimClock>,
    /// Runner label → runner names (`runners.yaml` labels).
    pub runner_nodes: HashMap<String, Vec<String>>,
    /// Slurm partition.
    pub partition: Option<String>,
    /// Slurm time limit per job, minutes.
    pub time_limit_min: Option<u32>,
    /// Infrastructure retries per point (≤ 2, AUTOMATION.md §5.3).
    pub max_retries: u32,
    /// Measurement flags.
    pub measure: MeasureSpec,
    /// Why no GSM8K folder could be resolved (the resolver's one-line error), when
    /// `measure.gsm8k_dir` is None: [`Runner::preflight`] says it when a point is an eval job.
    pub gsm8k_unresolved: Option<String>,
    /// Readiness bound, s.
    pub ready_timeout_s: f64,
    /// Engine SIGTERM → SIGKILL grace, s.
    pub teardown_grace_s: f64,
    /// Measurement bound, s.
    pub measure_timeout_s: f64,
    /// The flags that chose the plan (`KEY|GLOB`, `--conc`, `--seq-lens`, `--scenario`,
    /// `--no-evals`, `--evals-only`) as `flag → value`, only those given: recorded in
    /// `run.json` with the measurement flags ([`Runner::run_flags`]) so a resume with others is
    /// refused naming them.
    pub selection: BTreeMap<String, String>,
    /// `--overwrite`: an earlier run in `out` is removed (its jobs stopped, `run.json`,
    /// `summary.json`, `attempt.md` and `points/` deleted; its store run stays in the store)
    /// and the run starts over, instead of resuming it.
    pub overwrite: bool,
    /// Progress lines go to stderr instead of stdout.
    pub progress_stderr: bool,
}

/// A point's final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointState {
    /// Measured and stored.
    Stored,
    /// Already stored by an earlier invocation of the run (resume).
    AlreadyStored,
    /// Failed (after the retries triage allowed).
    Failed,
    /// Stopped by Ctrl-C / `--cancel`.
    Interrupted,
}

impl PointState {
    /// `stored`, `already stored`, `failed`, `interrupted`.
    pub fn as_str(&self) -> &'static str {
        match self {
            PointState::Stored => "stored",
            PointState::AlreadyStored => "already stored",
            PointState::Failed => "failed",
            PointState::Interrupted => "interrupted",
        }
    }
}

/// The triage of a point's last failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureInfo {
    /// First error line.
    pub first_error: Option<String>,
    /// Category (`missing_env_var`).
    pub category: String,
    /// Owning layer.
    pub layer: String,
    /// `transient`, `deterministic`, …
    pub persistence: String,
    /// Deterministic class.
    pub deterministic: bool,
    /// §5.3 outcome implied (`readiness-blocked`), if terminal.
    pub outcome: Option<String>,
    /// Next step.
    pub next_step: String,
    /// One line for the progress output.
    pub summary: String,
}

/// One point's result (`points/<id>/result.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PointResult {
    /// Point id.
    pub id: String,
    /// `conc 4`.
    pub label: String,
    /// Eval job.
    pub eval_only: bool,
    /// Concurrency.
    pub conc: u32,
    /// Final state.
    pub state: PointState,
    /// Attempts made.
    pub attempts: u32,
    /// Infrastructure retries spent (attempts − 1).
    pub retries: u32,
    /// The jobs, in order.
    pub jobs: Vec<JobHandle>,
    /// Job logs, in order.
    pub logs: Vec<PathBuf>,
    /// The per-node, per-role logs of the last attempt of a multinode point run as one `srun`
    /// step per role (`logs/workers/<node>_<role>.out`, sorted), which its triage read with
    /// the job log; empty for a single-node point or a fleet run as one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_logs: Vec<PathBuf>,
    /// Throughput rows stored.
    pub points_stored: usize,
    /// Eval rows stored.
    pub evals_stored: usize,
    /// Seconds to readiness (last attempt).
    pub ready_after_s: Option<f64>,
    /// Wall time of all attempts, s.
    pub wall_s: f64,
    /// Triage of the last failed attempt.
    pub failure: Option<FailureInfo>,
    /// Triage of each retried attempt (why it was retried).
    pub retried: Vec<FailureInfo>,
    /// Why a stored point is not a valid submission (AgentX `agentx_submission_invalid_reasons`
    /// worded, the row's `invalid_reasons`); empty when valid.
    #[serde(default)]
    pub invalid: Vec<String>,
    /// An eval job's gate (score against its threshold), from its stored eval row.
    #[serde(default)]
    pub eval_gate: Option<EvalGate>,
}

impl PointResult {
    /// The point's part of the run status: failed, cancelled (interrupted), eval failed,
    /// invalid, or passed.
    pub fn status(&self) -> RunStatus {
        match self.state {
            PointState::Failed => RunStatus::Failed,
            PointState::Interrupted => RunStatus::Cancelled,
            PointState::Stored | PointState::AlreadyStored => {
                if self.eval_gate.as_ref().is_some_and(|g| !g.passed) {
                    RunStatus::EvalFailed
                } else if !self.invalid.is_empty() {
                    RunStatus::Invalid
                } else {
                    RunStatus::Passed
                }
            }
        }
    }

    /// The state as the table and `run --status` say it: `stored`, `stored · eval failed`,
    /// `stored · invalid`, `failed`, `interrupted`, `not started` (interrupted before its first
    /// attempt).
    pub fn state_text(&self) -> String {
        match self.status() {
            RunStatus::EvalFailed => format!("{} · eval failed", self.state.as_str()),
            RunStatus::Invalid => format!("{} · invalid", self.state.as_str()),
            RunStatus::Cancelled if self.attempts == 0 => "not started".into(),
            _ => self.state.as_str().into(),
        }
    }

    /// Why the point is not passed, in one line (the table's last column): the eval gate, the
    /// validity rules, or the failure's one line.
    pub fn reason(&self) -> Option<String> {
        match self.status() {
            RunStatus::EvalFailed => self.eval_gate.as_ref().map(EvalGate::describe),
            RunStatus::Invalid => Some(format!(
                "not a valid InferenceX submission: {}",
                self.invalid.join("; ")
            )),
            _ => self.failure.as_ref().map(|f| f.summary.clone()),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// Run name.
    pub name: String,
    /// Run directory.
    pub dir: PathBuf,
    /// Store.
    pub db: PathBuf,
    /// Store run with the points (None when nothing was stored).
    pub store_run: Option<i64>,
    /// Per point, in plan order.
    pub results: Vec<PointResult>,
    /// Ctrl-C / SIGTERM stopped the run.
    pub interrupted: bool,
    /// The run's one status (points, eval gates, validity, and the comparison's verdict once
    /// [`RunSummary::apply_verdict`] was called).
    pub status: RunStatus,
    /// The comparison's verdict, when the run was compared with a baseline.
    #[serde(default)]
    pub verdict: Option<VerdictOutcome>,
    /// §5.3 outcome implied by the first deterministic failure (`readiness-blocked`, …).
    pub outcome: Option<String>,
    /// §5.3 phase of this run (`targeted`).
    pub phase: String,
    /// Repairs used (the runner never edits a recipe: 0).
    pub repairs_used: u32,
    /// Infrastructure retries spent over all points.
    pub infra_retries: u32,
    /// The simulator's description, when simulated.
    pub sim_describe: Option<String>,
}

/// A job in flight.
struct Active {
    /// Plan index of its point.
    idx: usize,
    /// The executor's handle.
    handle: JobHandle,
    /// Its spec (attempt number and directory).
    spec: JobSpec,
    /// When it was submitted.
    started: Instant,
}

/// Runs a plan through an executor.
pub struct Runner {
    opts: RunOptions,
    exec: Box<dyn JobBackend>,
}

/// Wall-clock speedup of a simulated multinode fleet under `--sim-clock wall` without
/// `--sim-speedup` (`servebench sim --prefill … --decode … --speedup 20`; the sweep reports
/// modelled time), and by default under `--executor slurm` (its roles serve the measurement,
/// one `srun` step per node). Otherwise a fleet, like one engine, runs on the virtual clock
/// inside the point's sweep (`sweep --sim-prefill … --sim-decode …`), where speed is moot.
pub const MULTINODE_SPEEDUP: f64 = 20.0;

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn store_err(e: servebench_store::StoreError) -> RunnerError {
    RunnerError::StoreDb(e)
}

impl Runner {
    /// A runner.
    pub fn new(opts: RunOptions, exec: Box<dyn JobBackend>) -> Runner {
        Runner { opts, exec }
    }

    /// The run's options.
    pub fn options(&self) -> &RunOptions {
        &self.opts
    }

    /// How points are measured (`--num-prompts`, `--traces`, …).
    pub fn measure(&self) -> &MeasureSpec {
        &self.opts.measure
    }

    /// `local` or `slurm`.
    pub fn executor_name(&self) -> &'static str {
        self.exec.name()
    }

    /// The flags that decide which points this run has and what each of them measures, as
    /// `flag → value` (only those given): the plan's selection ([`RunOptions::selection`]),
    /// `--num-prompts`, `--warmups`, `--isl`, `--osl`, `--eval-limit`, `--traces`,
    /// `--duration`, `--recipes`, `--sim-model`, `--sim-speedup`, `--sim-slowdown`. Recorded in `run.json` when
    /// the run starts; a resume must give the same (retries, timeouts, Slurm partition and
    /// time limit may change). `--executor` and `--simulate` are checked on their own.
    pub fn run_flags(&self) -> BTreeMap<String, String> {
        let o = &self.opts;
        let m = &o.measure;
        let mut f = o.selection.clone();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                f.insert(k.to_string(), v);
            }
        };
        put("--num-prompts", m.num_prompts.map(|v| v.to_string()));
        put("--warmups", m.warmups.map(|v| v.to_string()));
        put("--isl", m.isl.map(|v| v.to_string()));
        put("--osl", m.osl.map(|v| v.to_string()));
        put("--eval-limit", m.eval_limit.map(|v| v.to_string()));
        put("eval max_tokens", m.eval_max_tokens.map(|v| v.to_string()));
        put("--traces", m.traces.as_ref().map(|p| abs(p)));
        put("--duration", m.duration_s.map(|v| v.to_string()));
        put("--recipes", o.recipes.as_ref().map(|p| abs(p)));
        put("--sim-model", o.sim_model.clone());
        put("--sim-speedup", o.sim_speedup.map(|v| v.to_string()));
        put("--sim-slowdown", o.sim_slowdown.map(|v| v.to_string()));
        put("--sim-clock", o.sim_clock.map(|c| c.as_str().to_string()));
        f
    }

    /// Whether the run `prev` (an earlier invocation's `run.json`) may be resumed by this
    /// invocation: the same `--executor` and `--simulate`, the same [`Runner::run_flags`]
    /// (every differing flag named with both values), the same point ids, and each point the
    /// same (image, recipe fingerprint, … after a catalog change). One error line, naming
    /// `--overwrite` and `--out` as the ways to measure anew.
    pub fn check_resume(&self, out: &Path, prev: &RunState, plan: &[Point]) -> Result<()> {
        if prev.executor != self.exec.name() || prev.simulate != self.opts.simulate {
            return Err(RunnerError::Invalid(format!(
                "{}: this run was started with --executor {}{}; resume it the same way",
                out.display(),
                prev.executor,
                if prev.simulate { " --simulate" } else { "" }
            )));
        }
        let anew = "rerun with the same flags to resume it, or start over with --overwrite, or measure into another --out";
        if let Some(then) = &prev.flags {
            let diffs = state::flag_diffs(then, &self.run_flags());
            if !diffs.is_empty() {
                return Err(RunnerError::Invalid(format!(
                    "{}: the run there was measured with other flags ({}); {anew}",
                    out.display(),
                    diffs.join(", ")
                )));
            }
        }
        let ids: Vec<&str> = prev.points.iter().map(|p| p.id.as_str()).collect();
        let now_ids: Vec<&str> = plan.iter().map(|p| p.id.as_str()).collect();
        if ids != now_ids {
            return Err(RunnerError::Invalid(format!(
                "{}: holds a run of other points ({} planned then, {} now); {anew}",
                out.display(),
                ids.len(),
                now_ids.len()
            )));
        }
        if let Some(change) = point_changes(&prev.points, plan) {
            return Err(RunnerError::Invalid(format!(
                "{}: the catalog changed since the run started ({change}); {anew}",
                out.display()
            )));
        }
        Ok(())
    }

    /// The engine of a point (its recipe, the simulator, or the recipe with the simulator).
    pub fn engine_for(&self, p: &Point) -> Result<EngineSpec> {
        let sim = self
            .opts
            .simulate
            .then(|| sim_setup(p, self.opts.sim_model.as_deref()));
        if p.disagg.is_some() && sim.is_none() {
            return Err(RunnerError::Invalid(format!(
                "{}: multinode points run only simulated (--simulate); --dry-run prints the Slurm job InferenceX's launcher submits",
                p.id
            )));
        }
        // a multinode point's recipe is an srt-slurm deployment, not a single-node script:
        // under --simulate it is the simulated fleet
        let recipes = self.opts.recipes.as_ref().filter(|_| p.disagg.is_none());
        match (recipes, sim) {
            (Some(dir), sim) => Ok(EngineSpec::Recipe {
                path: std::fs::canonicalize(resolve_recipe(dir, p)?)
                    .map_err(|e| RunnerError::io(dir, e))?,
                // `--sim-clock` as given; none: virtual for a shimmed engine launch, the wall
                // clock for a recipe running `$SERVEBENCH_SIM_CMD` (EngineSpec::virtual_clock)
                sim: sim.map(|s| SimSetup {
                    clock: self.opts.sim_clock,
                    ..s
                }),
            }),
            (None, Some(s)) => {
                use servebench_sim::SimClock;
                // A fleet submitted to Slurm runs one `srun` step per role on its nodes
                // (fleet_launch) and is measured through them: the wall clock by default.
                // Everywhere else a point, fleet or one engine, is measured on the virtual
                // clock unless the wall clock is asked for (or implied by --sim-speedup).
                let slurm_fleet = s.fleet.is_some() && self.exec.name() == "slurm";
                let clock = match (self.opts.sim_clock, self.opts.sim_speedup) {
                    (Some(c), _) => c,
                    (None, Some(_)) => SimClock::Wall,
                    (None, None) if slurm_fleet => SimClock::Wall,
                    (None, None) => SimClock::Virtual,
                };
                Ok(EngineSpec::Simulator(SimSetup {
                    // a fleet on the wall clock plays back ×20 unless --sim-speedup says
                    // otherwise; on the virtual clock speed is moot
                    speedup: match (&s.fleet, clock) {
                        (Some(_), SimClock::Wall) => {
                            Some(self.opts.sim_speedup.unwrap_or(MULTINODE_SPEEDUP))
                        }
                        _ => self.opts.sim_speedup,
                    },
                    slowdown: self.opts.sim_slowdown,
                    clock: (clock == SimClock::Virtual).then_some(clock),
                    ..s
                }))
            }
            (None, None) => Err(RunnerError::Invalid(
                "--recipes DIR is needed to start real engines (or --simulate)".into(),
            )),
        }
    }

    /// Checks, before the first job, everything the run needs that the plan does not: a
    /// recipe for every point (or the simulator), the traces folder, the GSM8K data when a
    /// point is an eval job, the servebench binary, `sbatch` for the Slurm executor. One error
    /// line naming what is wrong (all points without a recipe at once); nothing is started or
    /// written.
    pub fn preflight(&self, plan: &[Point]) -> Result<()> {
        if plan.is_empty() {
            return Err(RunnerError::Invalid("the plan holds no point".into()));
        }
        let missing: Vec<String> = plan
            .iter()
            .filter_map(|p| self.engine_for(p).err().map(|e| e.to_string()))
            .collect();
        if let Some(first) = missing.first() {
            return Err(RunnerError::Recipe(if missing.len() == 1 {
                first.clone()
            } else {
                format!(
                    "{first} (and {} more point(s) without a recipe)",
                    missing.len() - 1
                )
            }));
        }
        if let Some(dir) = &self.opts.recipes {
            // recipes of an InferenceX checkout run with their own /workspace (bubblewrap)
            if plan.iter().any(|p| {
                resolve_recipe(dir, p)
                    .ok()
                    .and_then(|r| crate::workspace::checkout_root(&r))
                    .is_some()
            }) {
                crate::workspace::find_bwrap()?;
            }
        }
        if let Some(x) = self.opts.sim_speedup {
            if !(x.is_finite() && x > 0.0) {
                return Err(RunnerError::Invalid(format!(
                    "--sim-speedup {x}: must be a number > 0"
                )));
            }
            if !self.opts.simulate || self.opts.recipes.is_some() {
                return Err(RunnerError::Invalid(
                    "--sim-speedup applies to --simulate without --recipes (the runner starts \
                     the simulator itself)"
                        .into(),
                ));
            }
        }
        if let Some(x) = self.opts.sim_slowdown {
            if !(x.is_finite() && x > 0.0) {
                return Err(RunnerError::Invalid(format!(
                    "--sim-slowdown {x}: must be a number > 0 (1.1 = every step 10 % slower)"
                )));
            }
            if !self.opts.simulate || self.opts.recipes.is_some() {
                return Err(RunnerError::Invalid(
                    "--sim-slowdown applies to --simulate without --recipes (the runner starts \
                     the simulator itself)"
                        .into(),
                ));
            }
        }
        if let Some(t) = &self.opts.measure.traces {
            if !t.exists() {
                return Err(RunnerError::io(t, "--traces: no such file or folder"));
            }
        }
        if let Some(p) = plan.iter().find(|p| p.eval_only) {
            self.check_gsm8k(p)?;
        }
        if !self.opts.exe.is_file() {
            return Err(RunnerError::io(
                &self.opts.exe,
                "the servebench binary is missing",
            ));
        }
        if self.exec.name() == "slurm" && !on_path("sbatch") {
            return Err(RunnerError::Slurm(
                "--executor slurm: `sbatch` is not on PATH (is this a Slurm submit host?)".into(),
            ));
        }
        if let Ok(prev) = state::load(&self.opts.out) {
            if self.opts.overwrite {
                if let Some(pid) = run_process_alive(&prev) {
                    return Err(RunnerError::Invalid(format!(
                        "--overwrite {}: servebench run (pid {pid}) is still working on it; `servebench run --cancel {}` first",
                        self.opts.out.display(),
                        self.opts.out.display()
                    )));
                }
            } else {
                self.check_resume(&self.opts.out, &prev, plan)?;
            }
        }
        Ok(())
    }

    /// The GSM8K files eval job `p` reads (`test.jsonl`, `train.jsonl`, and under
    /// `--simulate` the recorded solutions the simulator replays) are in the resolved folder.
    fn check_gsm8k(&self, p: &Point) -> Result<()> {
        let Some(dir) = &self.opts.measure.gsm8k_dir else {
            return Err(RunnerError::Invalid(format!(
                "eval job {} needs the GSM8K data: {}",
                p.id,
                self.opts
                    .gsm8k_unresolved
                    .as_deref()
                    .unwrap_or("no folder given (set SERVEBENCH_SHARED or SERVEBENCH_GSM8K_DIR)")
            )));
        };
        let mut files = vec!["test.jsonl", "train.jsonl"];
        if self.opts.simulate {
            files.push("example_model_solutions.jsonl");
        }
        for f in files {
            let path = dir.join(f);
            if !path.is_file() {
                return Err(RunnerError::io(
                    &path,
                    format!(
                        "eval job {} needs this GSM8K file: no such file (set SERVEBENCH_SHARED \
                         or SERVEBENCH_GSM8K_DIR)",
                        p.id
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The job spec and script of attempt `attempt` of point `idx` (also used by `--dry-run`).
    pub fn prepare(
        &self,
        run_name: &str,
        idx: usize,
        p: &Point,
        attempt: u32,
    ) -> Result<(JobSpec, String)> {
        let dir = state::point_dir(&self.opts.out, &p.id).join(format!("attempt-{attempt}"));
        let nodes = self
            .opts
            .runner_nodes
            .get(&p.runner)
            .cloned()
            .unwrap_or_default();
        let runner = runner_name(p, &nodes, idx);
        let spec = JobSpec {
            point: p.clone(),
            attempt,
            dir: dir.clone(),
            runner: runner.clone(),
            exe: self.opts.exe.clone(),
            engine: self.engine_for(p)?,
            measure: self.opts.measure.clone(),
            ready_timeout_s: self.opts.ready_timeout_s,
            teardown_grace_s: self.opts.teardown_grace_s,
            measure_timeout_s: self.opts.measure_timeout_s,
            slurm_nodes: self.slurm_nodes(p)?,
        };
        let spec_path = dir.join("point.json");
        let log = dir.join("job.log");
        let script = job_script(&ScriptInput {
            point: p,
            run_name,
            attempt,
            runner: &runner,
            exe: &self.opts.exe,
            spec: &spec_path,
            log: &log,
            partition: self.opts.partition.as_deref(),
            time_limit_min: self.opts.time_limit_min,
            nodes: spec
                .slurm_nodes
                .zip(p.disagg.as_deref().map(|d| d.gpus_per_node)),
        });
        Ok((spec, script))
    }

    /// The nodes a multinode point's Slurm job asks for (the plan's `sbatch --nodes`);
    /// `None` for a single-node point or another executor.
    fn slurm_nodes(&self, p: &Point) -> Result<Option<u32>> {
        match (&p.disagg, self.exec.name()) {
            (Some(d), "slurm") => Ok(Some(crate::multinode_plan::job_plan(p, d)?.sbatch_nodes)),
            _ => Ok(None),
        }
    }

    fn submit(&mut self, run_name: &str, idx: usize, p: &Point, attempt: u32) -> Result<Active> {
        let (spec, script) = self.prepare(run_name, idx, p, attempt)?;
        std::fs::create_dir_all(&spec.dir).map_err(|e| RunnerError::io(&spec.dir, e))?;
        state::write_json(&spec.dir.join("point.json"), &spec)?;
        let script_path = spec.dir.join("job.sh");
        std::fs::write(&script_path, script).map_err(|e| RunnerError::io(&script_path, e))?;
        let log = spec.dir.join("job.log");
        let handle = self.exec.submit(&script_path, &spec.dir, &log)?;
        state::write_json(&spec.dir.join("submit.json"), &handle)?;
        Ok(Active {
            idx,
            handle,
            spec,
            started: Instant::now(),
        })
    }

    /// Runs (or resumes) the plan. Progress goes to stdout, one line per event.
    ///
    /// Phases ([`scheduler::Scheduler`]): open the run directory and store (resuming an
    /// earlier invocation of the same plan), queue the points not yet stored, start and reap
    /// jobs until every point is stored, failed or interrupted (Ctrl-C cancels the jobs in
    /// flight), then close the store run and write `summary.json`.
    pub fn run(&mut self, plan: Vec<Point>) -> Result<RunSummary> {
        signal::install();
        let mut s = scheduler::Scheduler::open(self, plan)?;
        s.queue_unstored();
        s.drive()?;
        s.finish()
    }

    /// Creates the run directory and makes `opts.out` absolute (jobs run elsewhere); returns
    /// it with the run's name (the directory's name, else `run`).
    fn open_out_dir(&mut self) -> Result<(PathBuf, String)> {
        let out = self.opts.out.clone();
        std::fs::create_dir_all(&out).map_err(|e| RunnerError::io(&out, e))?;
        let out = std::fs::canonicalize(&out).map_err(|e| RunnerError::io(&out, e))?;
        self.opts.out = out.clone();
        let name = out
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        Ok((out, name))
    }

    /// The state of the run in `out`: the earlier invocation's (`run.json`), which must have
    /// used the same executor, `--simulate` and point ids, else a new one named `name`.
    fn resume_or_start(&self, out: &Path, name: &str, plan: &[Point]) -> Result<RunState> {
        if self.opts.overwrite {
            clear_run_dir(out)?;
        }
        let Ok(prev) = state::load(out) else {
            return Ok(RunState {
                name: name.to_string(),
                created_at: now(),
                executor: self.exec.name().into(),
                simulate: self.opts.simulate,
                db: if servebench_store::is_postgres_url(&self.opts.db) {
                    self.opts.db.clone()
                } else {
                    std::path::absolute(&self.opts.db).unwrap_or(self.opts.db.clone())
                },
                store_run: None,
                pid: std::process::id(),
                points: plan.to_vec(),
                flags: Some(self.run_flags()),
            });
        };
        self.check_resume(out, &prev, plan)?;
        if prev.flags.is_none() {
            say!(self,
                "warning: {}: run.json records no flags (an older servebench wrote it): the stored points' flags are not checked against this command's",
                out.display()
            );
        }
        say!(self, "resuming run {} ({})", prev.name, out.display());
        Ok(prev)
    }

    /// Copies the rows the attempt's measurement stored in its `point.db` into the run's store
    /// run (created with the first stored point). Returns (points, evals) copied.
    fn store_point(
        &self,
        store: &mut Store,
        rs: &mut RunState,
        spec: &JobSpec,
        sim_describe: Option<&str>,
    ) -> Result<(usize, usize, Vec<String>, Option<EvalGate>)> {
        let pdb = spec.dir.join("point.db");
        let sub = Store::open(&pdb).map_err(store_err)?;
        let Some(sub_run) = sub.latest_run(None).map_err(store_err)? else {
            return Err(RunnerError::Store(format!(
                "{}: the measurement stored no run",
                pdb.display()
            )));
        };
        let rows = sub.points(sub_run.id).map_err(store_err)?;
        let evals = sub.evals(sub_run.id).map_err(store_err)?;
        let run = match rs.store_run {
            Some(id) => RunId(id),
            None => {
                let p = &spec.point;
                let mut m = RunMeta::new(RunKind::Sweep);
                m.label = Some(format!("run {} ({})", p.config_key, rs.executor));
                m.endpoint = Some(match sim_describe {
                    Some(d) => format!("embedded simulator: {d}"),
                    None => sub_run
                        .meta
                        .endpoint
                        .clone()
                        .unwrap_or_else(|| "unknown".into()),
                });
                m.image = Some(p.image.clone());
                m.index_digest = sub_run.meta.index_digest.clone();
                m.branch = sub_run.meta.branch.clone();
                m.platform_digest = sub_run.meta.platform_digest.clone();
                m.config_key = Some(p.config_key.clone());
                m.topology = sub_run.meta.topology.clone();
                m.workload = sub_run.meta.workload.clone();
                m.out_dir = Some(self.opts.out.clone());
                m.meta = serde_json::json!({
                    "servebench_run": rs.name,
                    "executor": rs.executor,
                    "simulate": rs.simulate,
                });
                let id = store.record_run(&m).map_err(store_err)?;
                rs.store_run = Some(id.0);
                state::save(&self.opts.out, rs)?;
                id
            }
        };
        for r in &rows {
            match (&spec.point.disagg, &r.row) {
                // a multinode point's row in process_result.py's multinode shape
                (Some(d), servebench_store::StoredRow::Servebench(row)) => store
                    .add_point(run, &crate::multinode::multinode_row(row, d))
                    .map_err(store_err)?,
                _ => store.copy_point(run, r).map_err(store_err)?,
            };
        }
        for e in &evals {
            store.copy_eval(run, e).map_err(store_err)?;
        }
        let (invalid, gate) = checks_of(&rows, &evals);
        Ok((rows.len(), evals.len(), invalid, gate))
    }
}

/// Stops the job of an attempt directory if it still runs (a killed `servebench run` leaves
/// its jobs behind). Returns true when something was stopped.
fn stop_stale(attempt: &Path) -> bool {
    let Some(h) = state::read_json::<JobHandle>(&attempt.join("submit.json")) else {
        return false;
    };
    if read_status(attempt).is_some_and(|s| s.stage == crate::job::Stage::Done) {
        return false;
    }
    let stopped = if h.executor == "slurm" {
        match crate::backend::scontrol_state(&h.id) {
            Ok(Some((st, _)))
                if matches!(
                    st.as_str(),
                    "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING"
                ) =>
            {
                let mut ex = crate::backend::SlurmBackend::default();
                ex.cancel(&h).is_ok()
            }
            _ => false,
        }
    } else {
        let pg: i32 = h.id.parse().unwrap_or(0);
        let alive = signal::group_alive(pg);
        if alive {
            signal::teardown_group(pg, Duration::from_secs(20), || {});
        }
        alive
    };
    let engine_was_alive = !kill_engine_of_was_gone(attempt);
    stopped || engine_was_alive
}

fn kill_engine_of_was_gone(attempt: &Path) -> bool {
    let pg = std::fs::read_to_string(attempt.join("engine.pgid"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(0);
    let was_gone = !signal::group_alive(pg);
    kill_engine_of(attempt);
    was_gone
}

/// A path made absolute (for comparing `--traces` / `--recipes` across working directories).
fn abs(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The first point (same id) whose definition changed between the run's plan and this one,
/// with the fields that differ (`point X: image a → b`), and how many more changed.
fn point_changes(prev: &[Point], now: &[Point]) -> Option<String> {
    let changed: Vec<(&Point, &Point)> = prev.iter().zip(now).filter(|(a, b)| a != b).collect();
    let (a, b) = changed.first()?;
    let (va, vb) = (serde_json::to_value(a).ok()?, serde_json::to_value(b).ok()?);
    let show = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let fields: Vec<String> = va
        .as_object()?
        .iter()
        .filter(|(k, v)| vb.get(k.as_str()) != Some(*v))
        .map(|(k, v)| format!("{k} {} → {}", show(v), show(&vb[k.as_str()])))
        .collect();
    let mut s = format!("point {}: {}", a.id, fields.join(", "));
    if changed.len() > 1 {
        s.push_str(&format!(" (and {} more point(s))", changed.len() - 1));
    }
    Some(s)
}

/// The pid of the `servebench run` process recorded in `rs` when it is still alive (and is
/// not this process).
fn run_process_alive(rs: &RunState) -> Option<i32> {
    let pid = rs.pid as i32;
    (pid > 1
        && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.contains("servebench") && c.contains("run"))
        && pid != std::process::id() as i32)
        .then_some(pid)
}

/// `--overwrite`: stops the jobs an earlier run in `out` left running and deletes what the
/// runner wrote there (`run.json`, `summary.json`, `attempt.md`, `points/`); anything else in
/// the folder is kept. Nothing to do when `out` holds no run.
fn clear_run_dir(out: &Path) -> Result<()> {
    let Ok(prev) = state::load(out) else {
        return Ok(());
    };
    for p in &prev.points {
        if let Some(last) = state::attempts(out, &p.id).pop() {
            stop_stale(&last);
        }
    }
    let points = out.join("points");
    if points.exists() {
        std::fs::remove_dir_all(&points).map_err(|e| RunnerError::io(&points, e))?;
    }
    for f in ["summary.json", "attempt.md", "run.json"] {
        let p = out.join(f);
        if p.exists() {
            std::fs::remove_file(&p).map_err(|e| RunnerError::io(&p, e))?;
        }
    }
    println!(
        "--overwrite: removed the earlier run in {}{}",
        out.display(),
        prev.store_run
            .map(|id| format!(" (its store run {id} stays in {})", prev.db.display()))
            .unwrap_or_default()
    );
    Ok(())
}

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

fn new_result(p: &Point) -> PointResult {
    PointResult {
        id: p.id.clone(),
        label: p.label(),
        eval_only: p.eval_only,
        conc: p.conc,
        state: PointState::Failed,
        attempts: 0,
        retries: 0,
        jobs: vec![],
        logs: vec![],
        node_logs: vec![],
        points_stored: 0,
        evals_stored: 0,
        ready_after_s: None,
        wall_s: 0.0,
        failure: None,
        retried: vec![],
        invalid: vec![],
        eval_gate: None,
    }
}

/// The run status of its points: cancelled when interrupted, else the worst point status.
pub fn roll_up(results: &[PointResult], interrupted: bool) -> RunStatus {
    let worst = results
        .iter()
        .map(PointResult::status)
        .fold(RunStatus::Passed, RunStatus::worst);
    if interrupted {
        RunStatus::Cancelled
    } else {
        worst
    }
}

impl RunSummary {
    /// Folds the comparison's verdict into the status (the worse of the two) and keeps it.
    pub fn apply_verdict(&mut self, v: VerdictOutcome) {
        self.verdict = Some(v);
        self.status = roll_up(&self.results, self.interrupted).worst(v.status());
    }

    /// Writes `summary.json` into the run directory (what `run --status` and `runs` read).
    pub fn save(&self) -> Result<()> {
        state::write_json(&self.dir.join("summary.json"), self)
    }

    /// The points not passed, each with why: `(label, state text, reason)`.
    pub fn problems(&self) -> Vec<(String, String, String)> {
        self.results
            .iter()
            .filter(|r| r.status() != RunStatus::Passed)
            .map(|r| {
                (
                    r.label.clone(),
                    r.state_text(),
                    r.reason().unwrap_or_default(),
                )
            })
            .collect()
    }
}

/// Reads a run directory's `summary.json` (written at the end of every invocation).
pub fn load_summary(dir: &Path) -> Option<RunSummary> {
    state::read_json(&dir.join("summary.json"))
}

/// A stored point's validity and eval gate, from the rows its measurement stored.
fn checks_of(
    rows: &[servebench_store::StoredPoint],
    evals: &[servebench_store::StoredEval],
) -> (Vec<String>, Option<EvalGate>) {
    let mut invalid = Vec::new();
    for r in rows {
        let Some(row) = r.row.servebench() else {
            continue;
        };
        let codes: Vec<String> =
            if row.extra.get("agentx_submission_valid") == Some(&serde_json::Value::Bool(false)) {
                row.extra
                    .get("agentx_submission_invalid_reasons")
                    .and_then(|v| v.as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .filter(|v: &Vec<String>| !v.is_empty())
                    .unwrap_or_else(|| vec!["agentx_submission_valid false".into()])
            } else {
                vec![]
            };
        let own: Vec<String> = r
            .invalid_reason
            .iter()
            .cloned()
            .chain(
                (r.status.as_str() == "invalid" && r.invalid_reason.is_none())
                    .then(|| "point_status invalid".to_string()),
            )
            .collect();
        for w in invalid_words(&codes, &own) {
            if !invalid.contains(&w) {
                invalid.push(w);
            }
        }
    }
    let gate = evals.iter().find_map(|e| {
        let row = e.row.servebench()?;
        let passed = row.passed.unwrap_or(row.score.is_some());
        Some(EvalGate {
            task: row.task.clone(),
            score: row.score,
            threshold: row.threshold,
            passed,
        })
    });
    (invalid, gate)
}

/// The pid of the `servebench run` process working on the run in `dir` while it is alive
/// (`None` when it ended, or `dir` holds no run).
pub fn running_pid(dir: &Path) -> Option<i32> {
    run_process_alive(&state::load(dir).ok()?)
}

/// The distinct (TP, EP) of the run's stored points (`points/<id>/result.json` stored), in
/// plan order: what `servebench runs` shows as the run's topology (the store run's own
/// `topology` is its first point's). Empty when `dir` holds no run or nothing was stored.
pub fn stored_topologies(dir: &Path) -> Vec<(u32, u32)> {
    let Ok(rs) = state::load(dir) else {
        return vec![];
    };
    let mut out = Vec::new();
    for p in &rs.points {
        let stored =
            state::read_json::<PointResult>(&state::point_dir(dir, &p.id).join("result.json"))
                .is_some_and(|r| matches!(r.state, PointState::Stored | PointState::AlreadyStored));
        if stored && !out.contains(&(p.tp, p.ep)) {
            out.push((p.tp, p.ep));
        }
    }
    out
}

/// The state of every point of a run directory (`servebench run --status`): its final result,
/// or the live state of its newest job.
pub fn status_lines(dir: &Path) -> Result<Vec<(String, String, String, PathBuf)>> {
    let rs = state::load(dir)?;
    let mut out = Vec::new();
    for p in &rs.points {
        let pd = state::point_dir(dir, &p.id);
        let last = state::attempts(dir, &p.id).pop();
        let log = last
            .as_ref()
            .map(|a| a.join("job.log"))
            .unwrap_or_else(|| pd.join("(not started)"));
        let job: Option<JobHandle> = last
            .as_ref()
            .and_then(|a| state::read_json(&a.join("submit.json")));
        let jobs = job
            .as_ref()
            .map(|h| format!("{} {}", h.executor, h.id))
            .unwrap_or_else(|| "-".into());
        let st = match state::read_json::<PointResult>(&pd.join("result.json")) {
            Some(r) if r.attempts == 0 => r.state_text(),
            Some(r) => {
                let mut s = format!("{} after {} attempt(s)", r.state_text(), r.attempts);
                if let Some(w) = r.reason() {
                    s.push_str(&format!(": {w}"));
                }
                s
            }
            None => match &job {
                Some(h) if h.executor == "slurm" => match crate::backend::scontrol_state(&h.id) {
                    Ok(Some((s, e))) => format!("slurm {s} (exit {e})"),
                    _ => "unknown (Slurm has forgotten the job)".into(),
                },
                Some(h) => {
                    if signal::group_alive(h.id.parse().unwrap_or(0)) {
                        "running".into()
                    } else {
                        "ended without a result (killed?)".into()
                    }
                }
                None => "not started".into(),
            },
        };
        out.push((p.id.clone(), jobs, st, log));
    }
    Ok(out)
}

/// Cancels a run from another process (`servebench run --cancel`): SIGINT to the `servebench
/// run` process when it is alive (it cancels its jobs and tears their engines down), then
/// `scancel` / group teardown of every job without a final result. Returns one line per action,
/// or the one line saying there was nothing to cancel (`run X already finished (status …);
/// nothing to cancel` when every point has its result and no process works on it).
pub fn cancel_run(dir: &Path) -> Result<Vec<String>> {
    let rs = state::load(dir)?;
    let mut lines = Vec::new();
    let alive = run_process_alive(&rs);
    let all_done = rs.points.iter().all(|p| {
        state::read_json::<PointResult>(&state::point_dir(dir, &p.id).join("result.json")).is_some()
    });
    if alive.is_none() && all_done {
        let status = load_summary(dir)
            .map(|s| s.status.as_str().to_string())
            .unwrap_or_else(|| "unknown: no summary.json".into());
        return Ok(vec![format!(
            "run {} already finished (status {status}); nothing to cancel",
            rs.name
        )]);
    }
    if let Some(pid) = alive {
        // SAFETY: plain syscall.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
        lines.push(format!("sent SIGINT to servebench run (pid {pid})"));
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30)
            && std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    for p in &rs.points {
        let pd = state::point_dir(dir, &p.id);
        if state::read_json::<PointResult>(&pd.join("result.json")).is_some() {
            continue;
        }
        let Some(a) = state::attempts(dir, &p.id).pop() else {
            continue;
        };
        let Some(h) = state::read_json::<JobHandle>(&a.join("submit.json")) else {
            continue;
        };
        if h.executor == "slurm" {
            let mut ex = crate::backend::SlurmBackend::default();
            match ex.cancel(&h) {
                Ok(()) => lines.push(format!("scancel {} ({})", h.id, p.id)),
                Err(e) => lines.push(format!("scancel {} ({}): {e}", h.id, p.id)),
            }
        } else {
            let pg: i32 = h.id.parse().unwrap_or(0);
            if signal::group_alive(pg) {
                signal::teardown_group(pg, Duration::from_secs(20), || {});
                lines.push(format!(
                    "stopped local job (process group {pg}) of {}",
                    p.id
                ));
            }
            kill_engine_of(&a);
        }
    }
    if lines.is_empty() {
        lines.push(format!(
            "run {}: no servebench run process and no job of it left running; nothing to cancel",
            rs.name
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LocalBackend;
    use crate::plan::scenario_point;

    fn opts(d: &Path) -> RunOptions {
        RunOptions {
            out: d.join("run"),
            db: d.join("s.db"),
            exe: PathBuf::from("/bin/true"),
            recipes: Some(d.join("recipes")),
            simulate: true,
            sim_model: None,
            sim_speedup: None,
            sim_slowdown: None,
            sim_clock: None,
            runner_nodes: HashMap::new(),
            partition: None,
            time_limit_min: None,
            max_retries: 0,
            measure: MeasureSpec::default(),
            gsm8k_unresolved: None,
            ready_timeout_s: 1.0,
            teardown_grace_s: 1.0,
            measure_timeout_s: 1.0,
            selection: BTreeMap::new(),
            overwrite: false,
            progress_stderr: false,
        }
    }

    /// Issue 32: a multinode point under --simulate is its prefill/decode fleet, measured on
    /// the virtual clock by default (no speedup) with the local executor; `--sim-clock wall`
    /// plays it back ×20 unless `--sim-speedup` says otherwise, and `--sim-speedup` alone means
    /// wall at that speed. (Submitted to Slurm a fleet is wall by default: its roles serve.)
    #[test]
    fn a_fleet_point_is_virtual_by_default_and_wall_x20_when_asked() {
        use crate::multinode::{Disagg, Worker};
        use servebench_sim::SimClock;
        let w = |n, tp| Worker {
            num_worker: n,
            tp,
            pp: 1,
            dcp: 1,
            pcp: 1,
            ep: tp,
            dp_attn: false,
        };
        let p = Point {
            disagg: Some(Box::new(Disagg {
                prefill: w(1, 4),
                decode: w(2, 8),
                concs: vec![4],
                router: Some("dynamo-router".into()),
                router_version: None,
                kv_p2p_transfer: Some("nixl".into()),
                disagg: true,
                settings: Vec::new(),
                gpus_per_node: 4,
                gpus_per_node_source: "test".into(),
            })),
            ..scenario_point()
        };
        let dir = tempfile::tempdir().unwrap();
        let spec = |clock: Option<SimClock>, speedup: Option<f64>| {
            let o = RunOptions {
                recipes: None,
                sim_clock: clock,
                sim_speedup: speedup,
                ..opts(dir.path())
            };
            match Runner::new(o, Box::new(LocalBackend::new())).engine_for(&p) {
                Ok(EngineSpec::Simulator(s)) => s,
                other => panic!("{other:?}"),
            }
        };
        let s = spec(None, None);
        let f = s.fleet.as_ref().expect("a fleet");
        assert_eq!(
            (f.prefill.as_str(), f.decode.as_str()),
            ("1x4/ep4", "2x8/ep8")
        );
        assert_eq!((s.clock, s.speedup), (Some(SimClock::Virtual), None));
        let s = spec(Some(SimClock::Wall), None);
        assert_eq!((s.clock, s.speedup), (None, Some(MULTINODE_SPEEDUP)));
        let s = spec(None, Some(5.0));
        assert_eq!((s.clock, s.speedup), (None, Some(5.0)));
        // one engine keeps its defaults: virtual, or wall at real speed
        let one = |clock: Option<SimClock>| {
            let o = RunOptions {
                recipes: None,
                sim_clock: clock,
                ..opts(dir.path())
            };
            match Runner::new(o, Box::new(LocalBackend::new())).engine_for(&scenario_point()) {
                Ok(EngineSpec::Simulator(s)) => (s.clock, s.speedup),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(one(None), (Some(SimClock::Virtual), None));
        assert_eq!(one(Some(SimClock::Wall)), (None, None));
    }

    /// Issue 18 item 3: a recipes folder without the recipe aborted the run after point 1
    /// (`…/points/<id>/result.json.tmp: No such file or directory`); every point is now a
    /// failed point with its reason, and the run ends with all of them.
    #[test]
    fn a_point_that_cannot_start_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("recipes")).unwrap();
        let plan = vec![
            scenario_point(),
            Point {
                id: "k_agentic_conc4".into(),
                conc: 4,
                ..scenario_point()
            },
        ];
        let mut r = Runner::new(opts(d), Box::new(LocalBackend::new()));
        let preflight = r.preflight(&plan).unwrap_err().to_string();
        assert!(
            preflight.contains("no recipe for point k_agentic_conc1")
                && preflight.contains("1 more point(s) without a recipe"),
            "{preflight}"
        );
        let s = r.run(plan).unwrap();
        assert_eq!(s.results.len(), 2);
        for p in &s.results {
            assert_eq!(p.state, PointState::Failed);
            assert!(
                p.reason().unwrap().contains("no recipe"),
                "{:?}",
                p.reason()
            );
            assert!(state::point_dir(&s.dir, &p.id)
                .join("result.json")
                .is_file());
        }
        assert_eq!(s.status, RunStatus::Failed);
        assert_eq!(s.status.exit_code(), 1);
    }

    /// Issue 18 "also seen": after Ctrl-C a point never started said `interrupted` in the
    /// table and `not started` in `run --status`; both say `not started` now.
    #[test]
    fn never_started_points_say_not_started() {
        let mut r = new_result(&scenario_point());
        r.state = PointState::Interrupted;
        assert_eq!(r.state_text(), "not started");
        r.attempts = 1;
        assert_eq!(r.state_text(), "interrupted");
        r.state = PointState::Stored;
        r.invalid = vec!["x".into()];
        assert_eq!(r.state_text(), "stored · invalid");
        assert_eq!(r.status(), RunStatus::Invalid);
        assert_eq!(
            roll_up(&[r.clone()], false).worst(VerdictOutcome::Regression.status()),
            RunStatus::Invalid
        );
        r.eval_gate = Some(EvalGate {
            task: "gsm8k".into(),
            score: Some(0.5),
            threshold: Some(0.85),
            passed: false,
        });
        assert_eq!(r.status(), RunStatus::EvalFailed);
    }
}
