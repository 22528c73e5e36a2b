//! `servebench run --dry-run` for a multinode point: the Slurm job as InferenceX's launcher
//! would submit it — nodes and GPUs per node, what runs on each node, the srt-slurm recipe
//! (`CONFIG_FILE`) or launcher script it names and whether that file is visible — then how
//! servebench runs the point (the simulated fleet under `--simulate`).

use crate::error::Result;
use crate::multinode::{recipe_resources, Disagg, Layout, RecipeResources};
use crate::plan::Point;
use crate::recipe::runner_name;
use crate::run::Runner;

/// The launcher InferenceX runs for runner name `name` (`gb200-nv_0` →
/// `runners/launch_gb200-nv.sh`: the name up to its last `_`).
pub fn launcher_for(name: &str) -> String {
    let base = match name.rsplit_once('_') {
        Some((b, idx)) if idx.chars().all(|c| c.is_ascii_digit()) => b,
        _ => name,
    };
    format!("runners/launch_{base}.sh")
}

/// What the plan says about one multinode point's job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    /// Worker placement from the shape.
    pub layout: Layout,
    /// The visible recipe's resources, when it has a top-level `resources:` block.
    pub recipe: Option<RecipeResources>,
    /// Nodes the job asks `sbatch` for: the recipe's when visible, else the shape's.
    pub sbatch_nodes: u32,
}

/// The job of multinode point `p` (its [`Disagg`] must be set).
pub fn job_plan(p: &Point, d: &Disagg) -> Result<JobPlan> {
    let layout = d.layout()?;
    let recipe = match (&p.multinode_recipe, d.config_file()) {
        (Some(path), Some(_)) => recipe_resources(path)?,
        _ => None,
    };
    let sbatch_nodes = recipe
        .as_ref()
        .map_or(layout.total_nodes(), RecipeResources::sbatch_nodes);
    Ok(JobPlan {
        layout,
        recipe,
        sbatch_nodes,
    })
}

/// Collapses consecutive nodes with the same roles: `node 1-2: …`.
fn node_lines(nodes: &[Vec<String>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let mut j = i;
        while j + 1 < nodes.len() && nodes[j + 1] == nodes[i] && nodes[i].len() == 1 {
            j += 1;
        }
        let what = if nodes[i].is_empty() {
            "(idle: the side's nodes are more than its workers fill)".to_string()
        } else {
            nodes[i].join(" · ")
        };
        out.push(if i == j {
            format!("node {i}: {what}")
        } else {
            format!("node {i}-{j}: {what}")
        });
        i = j + 1;
    }
    out
}

/// The dry-run text of multinode point `p`, number `i + 1` of `n`.
pub fn point_text(runner: &Runner, i: usize, n: usize, p: &Point) -> Result<String> {
    let Some(d) = p.disagg.as_deref() else {
        return Ok(String::new());
    };
    let opts = runner.options();
    let nodes = opts
        .runner_nodes
        .get(&p.runner)
        .cloned()
        .unwrap_or_default();
    let name = runner_name(p, &nodes, i);
    let job = job_plan(p, d)?;
    let mut s =
        format!(
        "[{}/{n}] {}\n  point: {} · {} · {} · {} GPUs (prefill {} + decode {}) · {} · eval: {}\n",
        i + 1,
        p.id,
        p.label(),
        p.scenario_type(),
        p.image,
        d.gpus(),
        d.prefill.gpus(),
        d.decode.gpus(),
        if d.disagg { "disaggregated" } else { "aggregated" },
        if p.eval_only { "yes (gsm8k, eval-only job)" } else { "no" }
    );
    let launcher = launcher_for(&name);
    let submit = match d.config_file() {
        Some(cf) => format!("srtctl apply -f {cf}"),
        None => format!("bash {}", crate::multinode::launcher_script(p)),
    };
    s.push_str(&format!(
        "  slurm job ({launcher}, runner {name}): {submit} → sbatch --nodes={} --gpus-per-node={} --exclusive --job-name=inferencex-{name}\n",
        job.sbatch_nodes, d.gpus_per_node
    ));
    let l = &job.layout;
    s.push_str(&format!(
        "  nodes: {} = prefill {} ({} × {} GPUs) + decode {} ({} × {} GPUs) at {} GPUs per node ({})\n",
        l.total_nodes(),
        l.prefill_nodes,
        d.prefill.num_worker,
        d.prefill.gpus_per_worker(),
        l.decode_nodes,
        d.decode.num_worker,
        d.decode.gpus_per_worker(),
        d.gpus_per_node,
        d.gpus_per_node_source
    ));
    for line in node_lines(&l.nodes) {
        s.push_str(&format!("    {line}\n"));
    }
    let what = match d.config_file() {
        Some(cf) => format!("recipe CONFIG_FILE={cf}"),
        None => format!("launcher script {}", crate::multinode::launcher_script(p)),
    };
    match (&p.multinode_recipe, &job.recipe) {
        (Some(path), Some(r)) => {
            let agrees = r.worker_nodes() == l.total_nodes();
            s.push_str(&format!(
                "  {what}: visible ({}); resources: prefill_nodes {}, decode_nodes {}{}{}, gpus_per_node {} → srtctl requests {} node(s){}\n",
                path.display(),
                r.prefill_nodes,
                r.decode_nodes,
                r.agg_nodes.map(|a| format!(", agg_nodes {a}")).unwrap_or_default(),
                if r.dedicated_nodes > 0 {
                    format!(", {} dedicated role node(s)", r.dedicated_nodes)
                } else {
                    String::new()
                },
                r.gpus_per_node.map_or("-".into(), |g| g.to_string()),
                r.sbatch_nodes(),
                if agrees {
                    String::new()
                } else {
                    format!(
                        " (differs from the config's shape: {} worker node(s); the recipe's count is what is submitted)",
                        l.total_nodes()
                    )
                }
            ));
        }
        (Some(path), None) => s.push_str(&format!(
            "  {what}: visible ({}){}\n",
            path.display(),
            if d.config_file().is_some() {
                "; no top-level resources: block (its :selector picks an override): nodes from the shape"
            } else {
                ""
            }
        )),
        (None, _) => s.push_str(&format!(
            "  {what}: not visible{}\n",
            if d.config_file().is_some() {
                " in this checkout's benchmarks/multi_node/srt-slurm-recipes (the launcher runs it from its srt-slurm clone): nodes from the shape"
            } else {
                " (give --recipes an InferenceX checkout)"
            }
        )),
    }
    let mut facts = Vec::new();
    if let Some(r) = &d.router {
        facts.push(format!("router {r}"));
    }
    if let Some(k) = &d.kv_p2p_transfer {
        facts.push(format!("KV transfer {k}"));
    }
    if d.concs.len() > 1 {
        let c: Vec<String> = d.concs.iter().map(u32::to_string).collect();
        facts.push(format!(
            "InferenceX runs conc [{}] in this one allocation; servebench measures each as its own point",
            c.join(", ")
        ));
    }
    if !facts.is_empty() {
        s.push_str(&format!("  {}\n", facts.join(" · ")));
    }
    let engine = if opts.simulate {
        simulated_fleet_line(p)
    } else {
        "not started: servebench runs multinode points only with --simulate".to_string()
    };
    s.push_str(&format!("  engine: {engine}\n"));
    if runner.executor_name() == "slurm" && opts.simulate {
        s.push_str(&slurm_job_line(d, &job));
    }
    Ok(s)
}

/// What `run --executor slurm` submits for a multinode point: one job of the plan's nodes,
/// one `srun` step per role on its nodes ([`crate::fleet_launch`]).
fn slurm_job_line(d: &Disagg, job: &JobPlan) -> String {
    let mut roles: Vec<String> = job
        .layout
        .workers
        .iter()
        .map(|w| {
            let on: Vec<String> = w.nodes.iter().map(u32::to_string).collect();
            format!("{}_w{} on node {}", w.side.as_str(), w.index, on.join("+"))
        })
        .collect();
    roles.push("frontend_0 on node 0".into());
    format!(
        "  servebench job: sbatch --nodes={} --gpus-per-node={} --exclusive --no-requeue; one srun step per role: {} (logs: logs/workers/<node>_<role>.out)\n",
        job.sbatch_nodes,
        d.gpus_per_node,
        roles.join(", ")
    )
}

/// The engine line of a multinode point under `--simulate`: the fleet `run --simulate` starts
/// ([`crate::recipe::sim_setup`]: `servebench sim --prefill … --decode … --router …`), its GPU
/// and model presets and the fabric its KV transfer is modelled over
/// ([`servebench_sim::disagg::Fabric::for_gpu`]: NVLink on GB200/GB300, RDMA otherwise).
fn simulated_fleet_line(p: &Point) -> String {
    let s = crate::recipe::sim_setup(p, None);
    let Some(f) = &s.fleet else {
        return format!(
            "simulated as one engine of TP{} on {} ({})",
            s.tp, s.gpu, s.model
        );
    };
    let fabric = servebench_sim::Presets::embedded()
        .gpu(&s.gpu)
        .map(|(k, g)| servebench_sim::disagg::Fabric::for_gpu(k, g.link_gb_s).describe())
        .unwrap_or_else(|e| format!("unknown ({e})"));
    let workers = if f.decode.starts_with("0x") {
        format!("aggregated workers {} (no decode side)", f.prefill)
    } else {
        format!("prefill {}, decode {}", f.prefill, f.decode)
    };
    let mut line = format!(
        "simulated disaggregated fleet on {} ({}): {workers} (workers x GPUs[/epN][/dpa]); router {} (why: {}); KV transfer over {fabric}, counted in TTFT (docs/simulator.md, Multinode)",
        s.gpu, s.model, f.router, f.router_source
    );
    for n in &s.notes {
        line.push_str(&format!("; {n}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_is_the_runner_name_without_its_index() {
        assert_eq!(launcher_for("gb200-nv_0"), "runners/launch_gb200-nv.sh");
        assert_eq!(
            launcher_for("mi355x-amds_08"),
            "runners/launch_mi355x-amds.sh"
        );
        assert_eq!(
            launcher_for("h200-dgxc-slurm_11"),
            "runners/launch_h200-dgxc-slurm.sh"
        );
        assert_eq!(launcher_for("gb200"), "runners/launch_gb200.sh");
    }

    #[test]
    fn equal_single_role_nodes_collapse() {
        let nodes = vec![
            vec![
                "prefill worker 0 (TP4, GPUs 0-3)".to_string(),
                "frontend + r".into(),
            ],
            vec!["decode worker 0 (TP8, node 1 of 2)".into()],
            vec!["decode worker 0 (TP8, node 1 of 2)".into()],
            vec![],
        ];
        let l = node_lines(&nodes);
        assert_eq!(l.len(), 3, "{l:?}");
        assert!(l[0].starts_with("node 0: prefill worker 0"));
        assert!(l[1].starts_with("node 1-2: decode worker 0"));
        assert!(l[2].starts_with("node 3: (idle"));
    }
}
