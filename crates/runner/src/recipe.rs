//! Recipes and the environment InferenceX gives them (AUTOMATION.md §4.2–4.3), the engine a
//! point starts (its recipe, or the embedded simulator set up from the point), and the job
//! script both executors run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunnerError};
use crate::plan::{Point, Workload};

/// The GPU SKU of a runner label: `cluster:b200-nscale` → `b200`, `h200` → `h200`,
/// `mi355x-amds` → `mi355x` (the part before the first `-` or `_` after `cluster:`).
pub fn sku(runner: &str) -> String {
    let r = runner.strip_prefix("cluster:").unwrap_or(runner);
    r.split(['-', '_']).next().unwrap_or(r).to_ascii_lowercase()
}

/// Recipe file names for a point, most specific first (AUTOMATION.md §4.3): the
/// framework-tagged name, then the legacy name (`_trt` for trt), each with `_mtp` when the
/// point speculates with MTP: `<model-code>_<precision>_<sku>[_<framework>][_mtp].sh`, where
/// the model code is the exp-name up to the first `_` (`${EXP_NAME%%_*}`).
pub fn recipe_names(p: &Point) -> Vec<String> {
    let code = p.exp_name.split('_').next().unwrap_or(&p.model_prefix);
    let code = if code.is_empty() {
        &p.model_prefix
    } else {
        code
    };
    let spec = if p.spec_decoding == "mtp" { "_mtp" } else { "" };
    let base = format!("{code}_{}_{}", p.precision, sku(&p.runner));
    let mut v = vec![format!("{base}_{}{spec}.sh", p.framework)];
    if servebench_engines::Engine::Trtllm.profile().framework == Some(p.framework.as_str()) {
        v.push(format!("{base}_trt{spec}.sh"));
    }
    v.push(format!("{base}{spec}.sh"));
    v.dedup();
    v
}

/// Finds a point's recipe under `dir`, in the layouts: InferenceX's repository root
/// (`benchmarks/single_node/<SCENARIO_SUBDIR><name>`), its `benchmarks/single_node` folder
/// (`<SCENARIO_SUBDIR><name>`), and a flat folder of recipes (`<name>`, the scenario's
/// `recipes/`).
///
/// Errors: nothing found, naming every path tried.
pub fn resolve_recipe(dir: &Path, p: &Point) -> Result<PathBuf> {
    let sub = p.scenario_subdir();
    let mut tried = Vec::new();
    for name in recipe_names(p) {
        for cand in [
            dir.join("benchmarks/single_node").join(sub).join(&name),
            dir.join(sub).join(&name),
            dir.join(&name),
        ] {
            if cand.is_file() {
                return Ok(cand);
            }
            tried.push(cand.display().to_string());
        }
    }
    Err(RunnerError::Recipe(format!(
        "{}: no recipe for point {} (tried {})",
        dir.display(),
        p.id,
        tried.join(", ")
    )))
}

/// The embedded simulator set up from a point: GPU from the runner's SKU, model, TP (EP is
/// not modelled by the simulator; it is recorded with the point). `notes` say what was
/// substituted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimSetup {
    /// GPU preset (`b200`).
    pub gpu: String,
    /// Model preset (`qwen3-8b`).
    pub model: String,
    /// Tensor parallelism.
    pub tp: u32,
    /// What could not be modelled exactly.
    pub notes: Vec<String>,
    /// Wall time = modelled time / speedup (`run --sim-speedup`); `None`: real time. The
    /// point's sweep gets the same factor and reports modelled time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// A planted regression, every modelled step × F (`run --sim-slowdown`); `None`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<f64>,
    /// A multinode point's simulated fleet (`servebench sim --prefill … --decode …
    /// --router …`, docs/simulator.md "Multinode"); `None`: one engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetSetup>,
    /// `run --sim-clock`: on the virtual clock the point's sweep embeds its own simulator
    /// (same GPU, model, TP, slowdown) and measures the whole point in virtual time; the
    /// started `servebench sim` only answers readiness. `None`: the wall clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<servebench_sim::SimClock>,
}

/// A simulated disaggregated fleet: the worker shapes as `servebench sim` takes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetSetup {
    /// `--prefill WxTP[/epN][/dpa]`.
    pub prefill: String,
    /// `--decode WxTP[/epN][/dpa]` (`0x…`: aggregated).
    pub decode: String,
    /// `--router kv|round-robin`.
    pub router: String,
    /// Where the router policy comes from.
    pub router_source: String,
}

/// The router policy of a multinode point and why: `kv` when its visible recipe sets
/// `router-mode: kv` (Dynamo's KV router) or its router is SGLang's (`sglang-router`, whose
/// default policy is cache-aware), else `round-robin` (Dynamo's frontend default).
pub fn router_policy(p: &Point, d: &crate::multinode::Disagg) -> (&'static str, String) {
    let recipe = p
        .multinode_recipe
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok());
    if let Some(text) = &recipe {
        let kv = text.lines().any(|l| {
            let l = l.replace(['"', '\'', ':', '='], " ");
            let mut w = l.split_whitespace();
            while let Some(x) = w.next() {
                if x.trim_start_matches('-') == "router-mode" {
                    return w.next() == Some("kv");
                }
            }
            false
        });
        if kv {
            return ("kv", "the recipe sets router-mode kv".into());
        }
    }
    match d.router.as_deref() {
        Some(r) if r.starts_with("sglang") => ("kv", format!("router {r}: cache-aware by default")),
        Some(r) => (
            "round-robin",
            format!(
                "router {r}{}: round-robin (Dynamo's default router mode)",
                if recipe.is_some() {
                    ", the recipe sets no router-mode kv"
                } else {
                    ""
                }
            ),
        ),
        None => ("round-robin", "no router named: round-robin".into()),
    }
}

/// The simulator for a point; `model_override` replaces the model preset.
pub fn sim_setup(p: &Point, model_override: Option<&str>) -> SimSetup {
    let presets = servebench_sim::Presets::embedded();
    let mut notes = Vec::new();
    let sku = sku(&p.runner);
    let gpu = if presets.gpus.contains_key(&sku) {
        sku
    } else {
        notes.push(format!(
            "runner {} (GPU {sku}) has no simulator preset: simulated as h200",
            p.runner
        ));
        "h200".to_string()
    };
    // a multinode DeepSeek-R1 point by its prefix and precision (the served names of its
    // checkpoints, `nvidia/DeepSeek-R1-0528-NVFP4-v2`, name no preset)
    let dsr1 = (p.disagg.is_some() && p.model_prefix == "dsr1")
        .then(|| format!("deepseek-r1-{}", p.precision))
        .filter(|k| presets.models.contains_key(k));
    let model = match (model_override, dsr1) {
        (Some(m), _) => m.to_string(),
        (None, Some(k)) => k,
        (None, None) => {
            let lower = p.model.to_ascii_lowercase();
            let found = presets.models.iter().find(|(k, m)| {
                lower.contains(k.as_str()) || lower.contains(&m.served_name.to_ascii_lowercase())
            });
            match found {
                Some((k, _)) => k.clone(),
                None => {
                    notes.push(format!(
                        "model {} has no simulator preset: simulated as qwen3-8b",
                        p.model
                    ));
                    "qwen3-8b".to_string()
                }
            }
        }
    };
    if p.ep > 1 && p.disagg.is_none() {
        notes.push(format!(
            "EP{} is not modelled by the simulator (recorded only)",
            p.ep
        ));
    }
    let fleet = p.disagg.as_deref().map(|d| {
        let shape = |w: &crate::multinode::Worker| {
            let mut s = format!("{}x{}", w.num_worker, w.gpus_per_worker());
            if w.ep > 1 {
                s.push_str(&format!("/ep{}", w.ep));
            }
            if w.dp_attn {
                s.push_str("/dpa");
            }
            s
        };
        if d.prefill.pp > 1 || d.decode.pp > 1 || d.prefill.pcp > 1 || d.decode.pcp > 1 {
            notes.push("PP/PCP inside a worker are modelled as TP over the same GPUs".into());
        }
        let (router, router_source) = router_policy(p, d);
        FleetSetup {
            prefill: shape(&d.prefill),
            decode: shape(&d.decode),
            router: router.into(),
            router_source,
        }
    });
    if p.spec_decoding != "none" {
        notes.push(format!(
            "speculative decoding `{}` is not modelled by the simulator",
            p.spec_decoding
        ));
    }
    SimSetup {
        gpu,
        model,
        tp: p.tp,
        notes,
        speedup: None,
        slowdown: None,
        fleet,
        clock: None,
    }
}

/// The argv of `servebench sim` for a point (`PORT` is filled in by the job).
pub fn sim_argv(exe: &Path, s: &SimSetup, port: u16, answers: bool) -> Vec<String> {
    let mut v = vec![
        exe.display().to_string(),
        "sim".into(),
        "--gpu".into(),
        s.gpu.clone(),
        "--model".into(),
        s.model.clone(),
        "--tp".into(),
        s.tp.to_string(),
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        port.to_string(),
    ];
    if let Some(f) = &s.fleet {
        for (k, x) in [
            ("--prefill", &f.prefill),
            ("--decode", &f.decode),
            ("--router", &f.router),
        ] {
            v.push(k.into());
            v.push(x.clone());
        }
    }
    if let Some(x) = s.speedup {
        v.push("--speedup".into());
        v.push(x.to_string());
    }
    if let Some(f) = s.slowdown {
        v.push("--sim-slowdown".into());
        v.push(f.to_string());
    }
    if answers {
        v.push("--sim-answers".into());
        v.push("175b_verification".into());
    }
    v
}

/// The runner name of a point's job (`<launcher-base>_<index>`): the label's `index`-th node
/// from the runners file, else the label with `cluster:` dropped.
pub fn runner_name(p: &Point, nodes: &[String], index: usize) -> String {
    if nodes.is_empty() {
        p.runner.trim_start_matches("cluster:").to_string()
    } else {
        nodes[index % nodes.len()].clone()
    }
}

/// InferenceX `RESULT_FILENAME` of a single-node point (AUTOMATION.md §4.2):
/// `<EXP_NAME>_<PRECISION>_<FRAMEWORK>_tp<TP>-pp<PP>-dcp<DCP>-pcp<PCP>-ep<EP>-dpa<DPA>_disagg-false_spec-<SPEC>_conc<CONC>_<runner>_recipe-<16 hex>`.
pub fn result_filename(p: &Point, runner: &str) -> String {
    format!(
        "{}_{}_{}_tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}_disagg-false_spec-{}_conc{}_{}_recipe-{}",
        p.exp_name,
        p.precision,
        p.framework,
        p.tp,
        p.pp,
        p.dcp,
        p.pcp,
        p.ep,
        p.dp_attn,
        p.spec_decoding,
        p.conc,
        runner,
        &p.recipe_fingerprint[..16.min(p.recipe_fingerprint.len())]
    )
}

/// The environment InferenceX's workflow and launcher give a recipe (AUTOMATION.md §4.2), for
/// one point on `runner` listening on `port`, writing under `result_dir`. `MODEL_PATH` is not
/// set: it is the launcher's pre-staged weights path, which servebench does not stage.
/// `window_s` is the measured AgentX window (`run --duration`), given to an agentic recipe as
/// its `DURATION` (the recipe sizes its replay and its checks by it); `None`: the catalog
/// point's duration.
pub fn recipe_env(
    p: &Point,
    runner: &str,
    port: u16,
    result_dir: &Path,
    window_s: Option<f64>,
) -> Vec<(String, String)> {
    let mut e: Vec<(&str, String)> = vec![
        ("IMAGE", p.image.clone()),
        ("MODEL", p.model.clone()),
        ("MODEL_PREFIX", p.model_prefix.clone()),
        ("PRECISION", p.precision.clone()),
        ("FRAMEWORK", p.framework.clone()),
        ("EXP_NAME", p.exp_name.clone()),
        ("CONC", p.conc.to_string()),
        ("TP", p.tp.to_string()),
        ("PP_SIZE", p.pp.to_string()),
        ("DCP_SIZE", p.dcp.to_string()),
        ("PCP_SIZE", p.pcp.to_string()),
        ("EP_SIZE", p.ep.to_string()),
        ("EP", p.ep.to_string()),
        ("DP_ATTENTION", p.dp_attn.to_string()),
        ("GPU_COUNT", p.gpus().to_string()),
        ("SPEC_DECODING", p.spec_decoding.clone()),
        ("DISAGG", "false".into()),
        ("RUN_EVAL", p.eval_only.to_string()),
        ("EVAL_ONLY", p.eval_only.to_string()),
        ("SCENARIO_TYPE", p.scenario_type().into()),
        ("SCENARIO_SUBDIR", p.scenario_subdir().into()),
        ("RECIPE_FINGERPRINT", p.recipe_fingerprint.clone()),
        ("RANDOM_RANGE_RATIO", "0.8".into()),
        ("RESULT_DIR", result_dir.display().to_string()),
        ("RUNNER_NAME", runner.into()),
        ("RUNNER_TYPE", p.runner.clone()),
        ("RESULT_FILENAME", result_filename(p, runner)),
        ("PORT", port.to_string()),
        ("PYTHONDONTWRITEBYTECODE", "1".into()),
    ];
    match &p.workload {
        Workload::Fixed { isl, osl } => {
            e.push(("ISL", isl.to_string()));
            e.push(("OSL", osl.to_string()));
            e.push((
                "MAX_MODEL_LEN",
                p.max_model_len.unwrap_or(isl + osl + 256).to_string(),
            ));
            e.push(("IS_AGENTIC", "0".into()));
        }
        Workload::Agentic {
            duration_s,
            kv_offloading,
            total_cpu_dram_gb,
            kv_offload_backend,
        } => {
            e.push(("IS_AGENTIC", "1".into()));
            let d = match window_s {
                Some(w) if w.fract() == 0.0 => format!("{}", w as i64),
                Some(w) => w.to_string(),
                None => duration_s.to_string(),
            };
            e.push(("DURATION", d));
            e.push(("KV_OFFLOADING", kv_offloading.clone()));
            e.push(("TOTAL_CPU_DRAM_GB", total_cpu_dram_gb.to_string()));
            // e2e-tests.yml: `kv-offload-backend: matrix.config['kv-offload-backend'].name`,
            // `kv-offload-backend-metadata: toJson(matrix.config['kv-offload-backend'])`
            if let Some(json) = kv_offload_backend {
                let name = serde_json::from_str::<serde_json::Value>(json)
                    .ok()
                    .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
                    .unwrap_or_default();
                e.push(("KV_OFFLOAD_BACKEND", name));
                e.push(("KV_OFFLOAD_BACKEND_METADATA", json.clone()));
            }
        }
    }
    e.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Single-quotes a word for bash.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Inputs of a job script.
#[derive(Debug, Clone)]
pub struct ScriptInput<'a> {
    /// The point.
    pub point: &'a Point,
    /// Run name (job names: `sb-<run>-<n>`).
    pub run_name: &'a str,
    /// Attempt number (1 = first).
    pub attempt: u32,
    /// Runner name of the job.
    pub runner: &'a str,
    /// The servebench binary.
    pub exe: &'a Path,
    /// The job's spec file (`point.json`).
    pub spec: &'a Path,
    /// The job's log (`job.log`).
    pub log: &'a Path,
    /// Slurm partition.
    pub partition: Option<&'a str>,
    /// Slurm time limit, minutes.
    pub time_limit_min: Option<u32>,
    /// A multinode point's allocation: (nodes, GPUs per node); `None`: one node, `--gpus`.
    pub nodes: Option<(u32, u32)>,
}

/// The job script of one attempt of a point: `#SBATCH` lines (read by `sbatch`, comments for
/// the local executor), the `Runner name:` and `Job:` lines InferenceX logs print (triage and
/// the attempt comment read them back), then `servebench run --exec-point`.
pub fn job_script(i: &ScriptInput<'_>) -> String {
    let p = i.point;
    let mut s = String::from("#!/usr/bin/env bash\n");
    s.push_str(&format!(
        "#SBATCH --job-name={}\n",
        shell_quote(&format!("sb-{}-{}", i.run_name, p.id))
    ));
    match i.nodes {
        // as InferenceX's multinode launchers submit (`sbatch --nodes=N --gpus-per-node=G
        // --exclusive`); a lost node fails the job (NODE_FAIL) instead of requeueing it
        Some((n, g)) => s.push_str(&format!(
            "#SBATCH --nodes={n}\n#SBATCH --gpus-per-node={g}\n#SBATCH --ntasks-per-node=1\n#SBATCH --exclusive\n#SBATCH --no-requeue\n"
        )),
        None => {
            s.push_str(&format!("#SBATCH --gpus={}\n", p.gpus()));
            s.push_str("#SBATCH --ntasks=1\n");
        }
    }
    s.push_str(&format!("#SBATCH --output={}\n", i.log.display()));
    if let Some(part) = i.partition {
        s.push_str(&format!("#SBATCH --partition={part}\n"));
    }
    if let Some(t) = i.time_limit_min {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    s.push_str(&format!(
        "# servebench run {}: point {} ({}), attempt {}\n",
        i.run_name,
        p.id,
        p.label(),
        i.attempt
    ));
    s.push_str(&format!("echo \"Runner name: '{}'\"\n", i.runner));
    s.push_str(&format!(
        "echo {}\n",
        shell_quote(&format!("Job: {}", p.job_line()))
    ));
    s.push_str(&format!(
        "exec {} run --exec-point {}\n",
        shell_quote(&i.exe.display().to_string()),
        shell_quote(&i.spec.display().to_string())
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::scenario_point;

    #[test]
    fn the_kv_offload_backend_reaches_the_recipe_as_inferencex_passes_it() {
        // dsv4-fp4-b200-vllm-agentic-mtp's recipe stopped with `Error: KV_OFFLOAD_BACKEND is
        // required when KV_OFFLOADING=dram`: the backend of the search space was not passed.
        let cat = "k-fp4-b200-vllm-agentic:\n  image: vllm/vllm-openai:v0.27.1\n  model: m/M\n  model-prefix: k\n  runner: cluster:b200-nv\n  precision: fp4\n  framework: vllm\n  multinode: false\n  scenarios:\n    agentic-coding:\n    - dram-utilization: 0.95\n      search-space:\n      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: vllm-simple }, conc-list: [4] }\n";
        let catalog = servebench_catalog::Catalog::from_sources(&[("m.yaml".into(), cat.into())])
            .unwrap_or_else(|e| panic!("{e}"));
        let runners =
            servebench_catalog::Runners::from_source("r.yaml", "labels:\n  cluster:b200-nv:\n    - b200-nv_0\nhardware:\n  cluster:b200-nv:\n    available-cpu-dram-mib: 1966080\n    gpus-per-node: 8\n").unwrap_or_else(|e| panic!("{e}"));
        let points = crate::plan::build_plan(
            &catalog,
            &runners,
            &crate::plan::PlanOptions {
                keys: vec!["k-fp4-b200-vllm-agentic".into()],
                evals: crate::plan::EvalSelection::None,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(points.len(), 1);
        let env = recipe_env(&points[0], "b200-nv_0", 8888, Path::new("/r"), None);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("KV_OFFLOADING"), Some("dram"));
        assert_eq!(get("KV_OFFLOAD_BACKEND"), Some("vllm-simple"));
        assert_eq!(
            get("KV_OFFLOAD_BACKEND_METADATA"),
            Some(r#"{"name":"vllm-simple"}"#)
        );
    }

    #[test]
    fn recipe_names_follow_inferencex() {
        assert_eq!(sku("cluster:b200-nscale"), "b200");
        assert_eq!(sku("h200"), "h200");
        assert_eq!(sku("mi355x-amds_3"), "mi355x");
        assert_eq!(
            recipe_names(&scenario_point()),
            vec![
                "qwen3.8next_fp4_b200_sglang_mtp.sh".to_string(),
                "qwen3.8next_fp4_b200_mtp.sh".to_string()
            ]
        );
    }

    #[test]
    fn scenario_recipe_resolves_in_a_flat_folder() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve_recipe(dir.path(), &scenario_point())
            .unwrap_err()
            .to_string();
        assert!(err.contains("qwen3.8next_fp4_b200_sglang_mtp.sh"), "{err}");
        std::fs::create_dir_all(dir.path().join("benchmarks/single_node/agentic")).unwrap();
        let f = dir
            .path()
            .join("benchmarks/single_node/agentic/qwen3.8next_fp4_b200_mtp.sh");
        std::fs::write(&f, "#!/bin/bash\n").unwrap();
        assert_eq!(resolve_recipe(dir.path(), &scenario_point()).unwrap(), f);
        let flat = dir.path().join("qwen3.8next_fp4_b200_sglang_mtp.sh");
        std::fs::write(&flat, "#!/bin/bash\n").unwrap();
        // the framework-tagged name wins over the legacy one
        assert_eq!(resolve_recipe(dir.path(), &scenario_point()).unwrap(), flat);
    }

    #[test]
    fn env_contract_and_result_filename() {
        let p = scenario_point();
        let env = recipe_env(&p, "b200-nscale-slurm_00", 8888, Path::new("/r"), None);
        let get = |k: &str| env.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
        assert_eq!(get("DURATION").as_deref(), Some("3600"));
        // `run --duration 20`: the recipe's DURATION is the measured window
        let short = recipe_env(
            &p,
            "b200-nscale-slurm_00",
            8888,
            Path::new("/r"),
            Some(20.0),
        );
        assert!(short.contains(&("DURATION".to_string(), "20".to_string())));
        assert_eq!(get("TP").as_deref(), Some("1"));
        assert_eq!(get("EP_SIZE").as_deref(), Some("1"));
        assert_eq!(get("CONC").as_deref(), Some("1"));
        assert_eq!(get("PORT").as_deref(), Some("8888"));
        assert_eq!(get("IS_AGENTIC").as_deref(), Some("1"));
        assert_eq!(get("ISL"), None);
        assert_eq!(get("MODEL_PATH"), None);
        assert_eq!(
            get("RESULT_FILENAME").as_deref(),
            Some("qwen3.8next_tp1_conc1_kvnone_spec-mtp_fp4_sglang_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-mtp_conc1_b200-nscale-slurm_00_recipe-0123456789abcdef")
        );
    }

    #[test]
    fn simulator_from_the_point() {
        let s = sim_setup(&scenario_point(), None);
        assert_eq!(s.gpu, "b200");
        assert_eq!(s.model, "qwen3-8b");
        assert!(s.notes.iter().any(|n| n.contains("no simulator preset")));
        let mut p = scenario_point();
        p.model = "Qwen/Qwen3-30B-A3B".into();
        p.runner = "tpu-v5".into();
        let s = sim_setup(&p, None);
        assert_eq!(s.model, "qwen3-30b-a3b");
        assert_eq!(s.gpu, "h200");
    }
}
