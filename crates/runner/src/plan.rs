//! The plan: catalog matrix rows (expanded by `servebench-catalog`, the same expansion and
//! filters as `servebench matrix test-config`) turned into typed [`Point`]s.
//!
//! Throughput points and eval points are separate jobs, as InferenceX dispatches them
//! (AUTOMATION.md §2.5, §3.3 step 4): the throughput rows are generated with `--no-evals`, the
//! eval rows with `--evals-only` (which, for agentic configs, marks the highest concurrency per
//! (model, runner, framework, precision)).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use servebench_catalog::matrix::{
    expand_config_keys, generate, Common, Mode, Row, ScenarioType, TestConfig,
};
use servebench_catalog::{Catalog, Runners};

use crate::error::{Result, RunnerError};

/// What a point measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    /// Fixed sequence lengths (`fixed-seq-len`), tokens.
    Fixed {
        /// Input length, tokens.
        isl: u32,
        /// Output length, tokens.
        osl: u32,
    },
    /// AgentX agentic-coding trace replay (`agentic-coding`).
    Agentic {
        /// Run length, s (InferenceX emits 3600).
        duration_s: u32,
        /// `none` or `dram`.
        kv_offloading: String,
        /// DRAM budget for KV offload, GB (0 without `dram`).
        total_cpu_dram_gb: i64,
        /// The search space's `kv-offload-backend` (`{ name: vllm-simple, … }`) as JSON, when
        /// set: the recipe gets its `name` as `KV_OFFLOAD_BACKEND` and the object as
        /// `KV_OFFLOAD_BACKEND_METADATA`, as InferenceX's e2e workflow passes them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kv_offload_backend: Option<String>,
    },
}

/// One matrix point, typed (the fields of a single-node matrix row, AUTOMATION.md §2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Unique, file-system safe id within a run (`<key>_<seq>_tp1-ep1_conc4[_eval-gsm8k]`).
    pub id: String,
    /// Catalog config key.
    pub config_key: String,
    /// Engine image.
    pub image: String,
    /// Model (HF id or launcher alias).
    pub model: String,
    /// Model prefix (`qwen3.8next`).
    pub model_prefix: String,
    /// Precision (`fp4`).
    pub precision: String,
    /// Framework (`sglang`).
    pub framework: String,
    /// Runner label of the config (`cluster:b200-nscale`).
    pub runner: String,
    /// Speculative decoding (`mtp`, `none`).
    pub spec_decoding: String,
    /// What is measured.
    pub workload: Workload,
    /// Tensor parallelism.
    pub tp: u32,
    /// Pipeline parallelism.
    pub pp: u32,
    /// Decode context parallelism (adds no GPUs).
    pub dcp: u32,
    /// Prefill context parallelism.
    pub pcp: u32,
    /// Expert parallelism.
    pub ep: u32,
    /// DP attention.
    pub dp_attn: bool,
    /// Concurrency (requests in flight).
    pub conc: u32,
    /// `isl + osl + 256` for fixed-seq-len points, tokens.
    pub max_model_len: Option<u32>,
    /// InferenceX exp-name.
    pub exp_name: String,
    /// This job runs the GSM8K eval (eval-only job, no throughput).
    pub eval_only: bool,
    /// Recipe fingerprint (sha256 of the canonical row without conc/exp-name).
    pub recipe_fingerprint: String,
    /// A multinode point's prefill/decode shape (`None`: single-node). Its `tp`, `ep`,
    /// `dp_attn` above are the decode side's (prefill's when aggregated), `pp`/`dcp`/`pcp` 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagg: Option<Box<crate::multinode::Disagg>>,
    /// A multinode point's srt-slurm recipe (`CONFIG_FILE`) or launcher script as found in the
    /// checkout given to the plan ([`PlanOptions::checkout`]); `None` when not visible there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multinode_recipe: Option<PathBuf>,
}

impl Point {
    /// GPUs the point allocates: TP × PP × PCP (DCP reuses the TP GPUs), AUTOMATION.md §4.2;
    /// a multinode point's prefill + decode GPUs.
    pub fn gpus(&self) -> u32 {
        match &self.disagg {
            Some(d) => d.gpus(),
            None => self.tp * self.pp * self.pcp,
        }
    }

    /// `fixed-seq-len` or `agentic-coding`.
    pub fn scenario_type(&self) -> &'static str {
        match self.workload {
            Workload::Fixed { .. } => "fixed-seq-len",
            Workload::Agentic { .. } => "agentic-coding",
        }
    }

    /// InferenceX `SCENARIO_SUBDIR`: `fixed_seq_len/` or `agentic/`.
    pub fn scenario_subdir(&self) -> &'static str {
        match self.workload {
            Workload::Fixed { .. } => "fixed_seq_len/",
            Workload::Agentic { .. } => "agentic/",
        }
    }

    /// Short label for progress lines: `agentic · TP1/EP1 · conc 4` or
    /// `8k1k · TP8/EP1 · conc 16 · eval gsm8k`.
    pub fn label(&self) -> String {
        let shape = match &self.disagg {
            Some(d) => d.tag(),
            None => format!("TP{}/EP{}", self.tp, self.ep),
        };
        let mut s = format!("{} · {shape} · conc {}", self.seq_label(), self.conc);
        if self.eval_only {
            s.push_str(" · eval gsm8k");
        }
        s
    }

    /// The job line InferenceX prints and triage/attempt read back:
    /// `benchmark (KEY, agentic-coding, tp1 ep1 conc16, eval-only gsm8k)`.
    pub fn job_line(&self) -> String {
        let mut s = format!(
            "benchmark ({}, {}, tp{} ep{} conc{}",
            self.config_key,
            self.scenario_type(),
            self.tp,
            self.ep,
            self.conc
        );
        if self.eval_only {
            s.push_str(", eval-only gsm8k");
        }
        s.push(')');
        s
    }

    /// `1k1k`, `8k1k`, `<isl>_<osl>` or `agentic`.
    pub fn seq_label(&self) -> String {
        match &self.workload {
            Workload::Fixed { isl, osl } => {
                servebench_catalog::matrix::seq_len_to_str(*isl as i64, *osl as i64)
            }
            Workload::Agentic { .. } => "agentic".into(),
        }
    }
}

/// Which eval jobs the plan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvalSelection {
    /// The default eval marking (InferenceX `--evals-only` rows) plus every throughput point.
    #[default]
    Default,
    /// Throughput points only (`--no-evals`).
    None,
    /// Eval points only (`--evals-only`).
    Only,
}

/// Filters of the plan (the same meaning as `servebench matrix test-config`).
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Config keys or fnmatch globs.
    pub keys: Vec<String>,
    /// `--conc`: keep only these concurrencies.
    pub conc: Option<Vec<i64>>,
    /// `--seq-lens` as (ISL, OSL).
    pub seq_lens: Option<Vec<(i64, i64)>>,
    /// `--scenario`: scenario types to include (None = all).
    pub scenario: Option<Vec<ScenarioType>>,
    /// Eval jobs.
    pub evals: EvalSelection,
    /// `--runner-node-filter`.
    pub runner_node_filter: Option<String>,
    /// An InferenceX checkout where multinode points look for their srt-slurm recipe
    /// (`benchmarks/multi_node/srt-slurm-recipes/…`) or launcher script (None: not looked up).
    pub checkout: Option<PathBuf>,
}

fn s(row: &Row, k: &str) -> Option<String> {
    row.get(k).and_then(Value::as_str).map(str::to_string)
}

fn int(row: &Row, k: &str) -> Option<i64> {
    row.get(k).and_then(Value::as_i64)
}

fn req_s(row: &Row, k: &str, key: &str) -> Result<String> {
    s(row, k).ok_or_else(|| RunnerError::Catalog(format!("{key}: matrix row has no `{k}`")))
}

fn req_u(row: &Row, k: &str, key: &str) -> Result<u32> {
    int(row, k)
        .filter(|v| *v >= 0)
        .map(|v| v as u32)
        .ok_or_else(|| RunnerError::Catalog(format!("{key}: matrix row has no integer `{k}`")))
}

/// Typed points from one matrix row of config `key`: one for a single-node row; one per
/// concurrency of a multinode row (`prefill`/`decode`, `conc: [..]`), each carrying the
/// [`crate::multinode::Disagg`] shape (GPUs per node from `runners`).
pub fn points_from_row(key: &str, row: &Row, runners: &Runners) -> Result<Vec<Point>> {
    if !row.contains_key("prefill") {
        return Ok(vec![point_from_row(key, row)?]);
    }
    let d = crate::multinode::Disagg::from_row(key, row, runners)?;
    let mut single = row.clone();
    let side = if d.decode.num_worker > 0 {
        &d.decode
    } else {
        &d.prefill
    };
    single.insert("tp".into(), side.tp.into());
    single.insert("ep".into(), side.ep.into());
    single.insert("dp-attn".into(), side.dp_attn.into());
    if d.concs.is_empty() {
        return Err(RunnerError::Catalog(format!(
            "{key}: multinode matrix row has no `conc` list"
        )));
    }
    let mut v = Vec::new();
    for c in &d.concs {
        single.insert("conc".into(), (*c).into());
        let mut p = point_from_row(key, &single)?;
        // the fingerprint of the row as InferenceX expands it (conc is left out of it)
        p.recipe_fingerprint = servebench_catalog::recipe_fingerprint(row)
            .map_err(|e| RunnerError::Catalog(format!("{key}: recipe fingerprint: {e:?}")))?;
        p.disagg = Some(Box::new(d.clone()));
        v.push(p);
    }
    Ok(v)
}

/// A typed point from one single-node matrix row of config `key`.
pub fn point_from_row(key: &str, row: &Row) -> Result<Point> {
    let workload = if s(row, "scenario-type").as_deref() == Some("agentic-coding") {
        Workload::Agentic {
            duration_s: int(row, "duration").unwrap_or(3600).max(0) as u32,
            kv_offloading: s(row, "kv-offloading").unwrap_or_else(|| "none".into()),
            total_cpu_dram_gb: int(row, "total-cpu-dram-gb").unwrap_or(0),
            kv_offload_backend: row
                .get("kv-offload-backend")
                .filter(|v| !v.is_null())
                .map(Value::to_string),
        }
    } else {
        Workload::Fixed {
            isl: req_u(row, "isl", key)?,
            osl: req_u(row, "osl", key)?,
        }
    };
    let fp = servebench_catalog::recipe_fingerprint(row)
        .map_err(|e| RunnerError::Catalog(format!("{key}: recipe fingerprint: {e:?}")))?;
    Ok(Point {
        id: String::new(),
        config_key: key.to_string(),
        image: req_s(row, "image", key)?,
        model: req_s(row, "model", key)?,
        model_prefix: req_s(row, "model-prefix", key)?,
        precision: req_s(row, "precision", key)?,
        framework: req_s(row, "framework", key)?,
        runner: req_s(row, "runner", key)?,
        spec_decoding: s(row, "spec-decoding").unwrap_or_else(|| "none".into()),
        workload,
        tp: req_u(row, "tp", key)?,
        pp: int(row, "pp").unwrap_or(1).max(1) as u32,
        dcp: int(row, "dcp-size").unwrap_or(1).max(1) as u32,
        pcp: int(row, "pcp-size").unwrap_or(1).max(1) as u32,
        ep: int(row, "ep").unwrap_or(1).max(1) as u32,
        dp_attn: row.get("dp-attn").and_then(Value::as_bool).unwrap_or(false),
        conc: req_u(row, "conc", key)?,
        max_model_len: int(row, "max-model-len").map(|v| v as u32),
        exp_name: s(row, "exp-name").unwrap_or_else(|| key.to_string()),
        eval_only: row
            .get("eval-only")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        recipe_fingerprint: fp,
        disagg: None,
        multinode_recipe: None,
    })
}

fn point_id(p: &Point) -> String {
    let w = |x: &crate::multinode::Worker| {
        format!(
            "{}x-tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}",
            x.num_worker, x.tp, x.pp, x.dcp, x.pcp, x.ep, x.dp_attn
        )
    };
    let mut id = match &p.disagg {
        Some(d) => format!(
            "{}_{}_p{}_d{}_spec-{}",
            p.config_key,
            p.seq_label(),
            w(&d.prefill),
            w(&d.decode),
            p.spec_decoding
        ),
        None => format!(
            "{}_{}_tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}_spec-{}",
            p.config_key,
            p.seq_label(),
            p.tp,
            p.pp,
            p.dcp,
            p.pcp,
            p.ep,
            p.dp_attn,
            p.spec_decoding
        ),
    };
    if let Workload::Agentic { kv_offloading, .. } = &p.workload {
        if kv_offloading != "none" {
            id.push_str(&format!("_kv-{kv_offloading}"));
        }
    }
    id.push_str(&format!("_conc{}", p.conc));
    if p.eval_only {
        id.push_str("_eval-gsm8k");
    }
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Expands the selected configs into points: throughput points (unless
/// [`EvalSelection::Only`]) then eval points (unless [`EvalSelection::None`]), each config key
/// in catalog order. Ids are unique (a numeric suffix on a collision).
///
/// Errors: an unknown key or a glob that matches nothing (the catalog's message), a multinode
/// point, no point left after the filters.
pub fn build_plan(catalog: &Catalog, runners: &Runners, o: &PlanOptions) -> Result<Vec<Point>> {
    let keys = expand_config_keys(&o.keys, catalog)?;
    let mut points: Vec<Point> = Vec::new();
    for key in &keys {
        let mode = Mode::TestConfig(TestConfig {
            config_keys: vec![key.clone()],
            conc: o.conc.clone(),
            seq_lens: o.seq_lens.clone(),
        });
        let mut passes = Vec::new();
        if o.evals != EvalSelection::Only {
            passes.push(Common {
                no_evals: true,
                ..Default::default()
            });
        }
        if o.evals != EvalSelection::None {
            passes.push(Common {
                evals_only: true,
                ..Default::default()
            });
        }
        for mut common in passes {
            common.scenario_type = o.scenario.clone();
            common.runner_node_filter = o.runner_node_filter.clone();
            let rows = generate(&mode, &common, catalog, runners)?;
            for row in &rows {
                for mut p in points_from_row(key, row, runners)? {
                    if let (Some(d), Some(dir)) = (&p.disagg, &o.checkout) {
                        let file = match d.config_file() {
                            Some(cf) => crate::multinode::recipe_in_checkout(dir, cf),
                            None => dir.join(crate::multinode::launcher_script(&p)),
                        };
                        p.multinode_recipe = file.is_file().then_some(file);
                    }
                    points.push(p);
                }
            }
        }
    }
    let mut seen = std::collections::HashMap::<String, u32>::new();
    for p in &mut points {
        let base = point_id(p);
        let n = seen.entry(base.clone()).or_insert(0);
        *n += 1;
        p.id = if *n == 1 {
            base
        } else {
            format!("{base}-{}", *n)
        };
    }
    if points.is_empty() {
        return Err(RunnerError::Invalid(format!(
            "{}: no matrix point left after the filters (--conc, --seq-lens, --scenario){}",
            o.keys.join(" "),
            available(catalog, runners, o)
        )));
    }
    Ok(points)
}

/// What the filters could have kept: `; available: --conc 1 4 8 16, --scenario
/// agentic-coding, --seq-lens 1k1k` from the unfiltered plan of the same keys (empty when
/// that fails too).
fn available(catalog: &Catalog, runners: &Runners, o: &PlanOptions) -> String {
    if o.conc.is_none() && o.seq_lens.is_none() && o.scenario.is_none() {
        return String::new();
    }
    let all = PlanOptions {
        conc: None,
        seq_lens: None,
        scenario: None,
        ..o.clone()
    };
    let Ok(points) = build_plan(catalog, runners, &all) else {
        return String::new();
    };
    let mut conc: Vec<u32> = points.iter().map(|p| p.conc).collect();
    conc.sort();
    conc.dedup();
    let mut scen: Vec<&str> = Vec::new();
    let mut seq: Vec<String> = Vec::new();
    for p in &points {
        match &p.workload {
            Workload::Fixed { isl, osl } => {
                let s = format!("{}k{}k", isl / 1024, osl / 1024);
                if !scen.contains(&"fixed-seq-len") {
                    scen.push("fixed-seq-len");
                }
                if !seq.contains(&s) {
                    seq.push(s);
                }
            }
            Workload::Agentic { .. } => {
                if !scen.contains(&"agentic-coding") {
                    scen.push("agentic-coding");
                }
            }
        }
    }
    let conc: Vec<String> = conc.iter().map(u32::to_string).collect();
    let mut parts = vec![format!("--conc {}", conc.join(" "))];
    parts.push(format!("--scenario {}", scen.join(" ")));
    if !seq.is_empty() {
        parts.push(format!("--seq-lens {}", seq.join(" ")));
    }
    format!("; available: {}", parts.join(", "))
}

/// Unit-test fixture shared by this crate's modules: the PRODUCT.md scenario's AgentX point at
/// concurrency 1 (`qwen3.8next-fp4-b200-sglang-agentic-mtp`, TP1/EP1, one hour on
/// `cluster:b200-nscale`). Tests override the fields they vary with struct-update syntax.
#[cfg(test)]
pub(crate) fn scenario_point() -> Point {
    Point {
        id: "k_agentic_conc1".into(),
        config_key: "qwen3.8next-fp4-b200-sglang-agentic-mtp".into(),
        image: "lmsysorg/sglang:v0.5.20-cu130".into(),
        model: "Qwen/Qwen3.8-Flash-Next-NVFP4".into(),
        model_prefix: "qwen3.8next".into(),
        precision: "fp4".into(),
        framework: "sglang".into(),
        runner: "cluster:b200-nscale".into(),
        spec_decoding: "mtp".into(),
        workload: Workload::Agentic {
            duration_s: 3600,
            kv_offloading: "none".into(),
            total_cpu_dram_gb: 0,
            kv_offload_backend: None,
        },
        tp: 1,
        pp: 1,
        dcp: 1,
        pcp: 1,
        ep: 1,
        dp_attn: false,
        conc: 1,
        max_model_len: None,
        exp_name: "qwen3.8next_tp1_conc1_kvnone_spec-mtp".into(),
        eval_only: false,
        recipe_fingerprint: "0123456789abcdef0123".into(),
        disagg: None,
        multinode_recipe: None,
    }
}
