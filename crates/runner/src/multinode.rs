//! Multinode (disaggregated) points: the prefill/decode shape of a matrix row and the Slurm job
//! InferenceX's launcher would submit for it (issue 32).
//!
//! A multinode row (`prefill`, `decode`, `conc: [..]`) becomes a [`Disagg`] on its [`Point`]:
//! each side's worker count and TP/PP/DCP/PCP/EP/DP-attention, the row's router and KV transfer,
//! the launcher settings (`CONFIG_FILE=recipes/…`, `PREFILL_NODES=…`) and the GPUs per node of
//! the runner. [`Layout`] places the workers on nodes the way the launchers size their jobs:
//!
//! * GPUs per node: `runners.yaml` `hardware.<runner>.gpus-per-node` when the label has an
//!   entry, else the launcher's own number for the SKU ([`launcher_gpus_per_node`]: GB200/GB300
//!   NVL72 trays 4, every other multinode SKU 8);
//! * nodes per side: the side's `PREFILL_NODES` / `DECODE_NODES` setting when the config gives
//!   one (AMD's `submit.sh` and some Dynamo entries take them from the config), else
//!   `ceil(workers × tp·pp·pcp / gpus_per_node)` — the generator's per-replica GPU footprint
//!   (`worker_gpus_per_node`, `process_agentic_result.py` `num_prefill_gpu`);
//! * a visible srt-slurm recipe's `resources:` (`prefill_nodes`, `decode_nodes`, `agg_nodes`,
//!   plus one node per dedicated etcd/NATS, frontend or benchmark-client role, as `srtctl
//!   submit` adds them) is what `srtctl apply` really requests; where it differs from the shape
//!   the plan says so ([`RecipeResources`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Result, RunnerError};

/// One side of a disaggregated deployment (`prefill` or `decode` of a matrix row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    /// Replicas (`num-worker`); 0 on the decode side of an aggregated multinode config.
    pub num_worker: u32,
    /// Tensor parallelism per replica.
    pub tp: u32,
    /// Pipeline parallelism per replica.
    pub pp: u32,
    /// Decode context parallelism (reuses the TP GPUs).
    pub dcp: u32,
    /// Prefill context parallelism.
    pub pcp: u32,
    /// Expert parallelism.
    pub ep: u32,
    /// DP attention.
    pub dp_attn: bool,
}

impl Worker {
    /// GPUs of one replica: `tp × pp × pcp` (InferenceX `worker_gpus_per_node`,
    /// `process_agentic_result.py`).
    pub fn gpus_per_worker(&self) -> u32 {
        self.tp * self.pp * self.pcp
    }

    /// GPUs of the side: `num_worker × tp × pp × pcp` (`num_prefill_gpu` / `num_decode_gpu`).
    pub fn gpus(&self) -> u32 {
        self.num_worker * self.gpus_per_worker()
    }

    /// `1×TP4/EP4/DPA` (DPA only with DP attention; PP when > 1).
    pub fn tag(&self) -> String {
        let mut s = format!("{}×TP{}", self.num_worker, self.tp);
        if self.pp > 1 {
            s.push_str(&format!("/PP{}", self.pp));
        }
        s.push_str(&format!("/EP{}", self.ep));
        if self.dp_attn {
            s.push_str("/DPA");
        }
        s
    }

    fn from_row(key: &str, side: &str, v: Option<&Value>) -> Result<Worker> {
        let m = v.and_then(Value::as_object).ok_or_else(|| {
            RunnerError::Catalog(format!(
                "{key}: multinode matrix row has no `{side}` worker"
            ))
        })?;
        let int = |k: &str, default: Option<u32>| -> Result<u32> {
            match m.get(k).and_then(Value::as_i64) {
                Some(v) if v >= 0 => Ok(v as u32),
                Some(v) => Err(RunnerError::Catalog(format!(
                    "{key}: {side}.{k} = {v} is negative"
                ))),
                None => default.ok_or_else(|| {
                    RunnerError::Catalog(format!("{key}: {side} worker has no integer `{k}`"))
                }),
            }
        };
        Ok(Worker {
            num_worker: int("num-worker", None)?,
            tp: int("tp", None)?.max(1),
            pp: int("pp", Some(1))?.max(1),
            dcp: int("dcp-size", Some(1))?.max(1),
            pcp: int("pcp-size", Some(1))?.max(1),
            ep: int("ep", Some(1))?.max(1),
            dp_attn: m.get("dp-attn").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// The disaggregated shape of a multinode point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagg {
    /// Prefill workers.
    pub prefill: Worker,
    /// Decode workers (`num_worker` 0: aggregated, the prefill workers serve both phases).
    pub decode: Worker,
    /// The row's whole concurrency list: InferenceX runs them in one allocation.
    pub concs: Vec<u32>,
    /// The row's `router.name` (`dynamo-router`, `sglang-router`, …), when set.
    pub router: Option<String>,
    /// The row's `router.version`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_version: Option<String>,
    /// The row's `kv-p2p-transfer` (`nixl`, `mooncake`, `mori`, …), when set.
    pub kv_p2p_transfer: Option<String>,
    /// The row's `disagg` flag (prefill and decode on separate workers).
    pub disagg: bool,
    /// Launcher settings of both sides (`KEY=VALUE` of `additional-settings`), prefill first.
    pub settings: Vec<(String, String)>,
    /// GPUs per node of the runner.
    pub gpus_per_node: u32,
    /// Where [`Disagg::gpus_per_node`] comes from.
    pub gpus_per_node_source: String,
}

impl Disagg {
    /// The multinode shape of a matrix row holding `prefill`/`decode`; `runners` gives the GPUs
    /// per node. Errors name the config key and the missing field.
    pub fn from_row(
        key: &str,
        row: &serde_json::Map<String, Value>,
        runners: &servebench_catalog::Runners,
    ) -> Result<Disagg> {
        let prefill = Worker::from_row(key, "prefill", row.get("prefill"))?;
        let decode = Worker::from_row(key, "decode", row.get("decode"))?;
        let concs = row
            .get("conc")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_u64)
                    .map(|c| c as u32)
                    .collect()
            })
            .unwrap_or_default();
        let mut settings = Vec::new();
        for side in ["prefill", "decode"] {
            let list = row
                .get(side)
                .and_then(|w| w.get("additional-settings"))
                .and_then(Value::as_array);
            for s in list.into_iter().flatten().filter_map(Value::as_str) {
                if let Some((k, v)) = s.split_once('=') {
                    settings.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
        }
        let runner = row.get("runner").and_then(Value::as_str).unwrap_or("");
        let (gpus_per_node, gpus_per_node_source) = gpus_per_node(runner, runners)?;
        Ok(Disagg {
            prefill,
            decode,
            concs,
            router: row
                .get("router")
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
            router_version: row
                .get("router")
                .and_then(|r| r.get("version"))
                .and_then(Value::as_str)
                .map(str::to_string),
            kv_p2p_transfer: row
                .get("kv-p2p-transfer")
                .and_then(Value::as_str)
                .map(str::to_string),
            disagg: row.get("disagg").and_then(Value::as_bool).unwrap_or(true),
            settings,
            gpus_per_node,
            gpus_per_node_source,
        })
    }

    /// A launcher setting (`CONFIG_FILE`, `PREFILL_NODES`, …), the first side's that has it.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The srt-slurm recipe the config names (`CONFIG_FILE=recipes/…[:selector]`).
    pub fn config_file(&self) -> Option<&str> {
        self.setting("CONFIG_FILE")
    }

    /// GPUs of the whole deployment: prefill + decode.
    pub fn gpus(&self) -> u32 {
        self.prefill.gpus() + self.decode.gpus()
    }

    /// `P1×TP4/EP4/DPA + D4×TP8/EP8`.
    pub fn tag(&self) -> String {
        format!("P{} + D{}", self.prefill.tag(), self.decode.tag())
    }

    /// Where the workers go: nodes per side (the `*_NODES` setting, else the GPU footprint
    /// rounded up to whole nodes) and each node's roles.
    pub fn layout(&self) -> Result<Layout> {
        let side_nodes = |w: &Worker, var: &str| -> Result<u32> {
            if let Some(v) = self.setting(var) {
                return v.parse::<u32>().map_err(|_| {
                    RunnerError::Catalog(format!("additional-settings {var}={v}: not a node count"))
                });
            }
            Ok(w.gpus().div_ceil(self.gpus_per_node))
        };
        let prefill_nodes = side_nodes(&self.prefill, "PREFILL_NODES")?;
        let decode_nodes = side_nodes(&self.decode, "DECODE_NODES")?;
        let mut nodes = Vec::new();
        let mut workers = Vec::new();
        // an aggregated deployment's workers serve both phases (srt-slurm's `agg` mode)
        let first = if self.decode.num_worker == 0 {
            Side::Agg
        } else {
            Side::Prefill
        };
        for (side, w, n) in [
            (first, &self.prefill, prefill_nodes),
            (Side::Decode, &self.decode, decode_nodes),
        ] {
            place(&mut nodes, &mut workers, side, w, n, self.gpus_per_node);
        }
        if let Some(first) = nodes.first_mut() {
            let router = self.router.as_deref().unwrap_or("router");
            first.push(format!("frontend + {router}"));
        }
        Ok(Layout {
            prefill_nodes,
            decode_nodes,
            nodes,
            workers,
        })
    }
}

/// A multinode point's agg row as InferenceX's `process_result.py` writes it with
/// `IS_MULTINODE=true`: the prefill/decode shape (`num_prefill_gpu` = workers × tp·pp·pcp, as
/// `process_agentic_result.py` counts it) in place of the single-node keys, `disagg`, the
/// router and KV transfer, and the per-GPU throughputs over its denominators (total over all
/// GPUs, output over decode GPUs, input over prefill GPUs:
/// [`servebench_contracts::MultinodeFields::per_gpu`]).
pub fn multinode_row(
    row: &servebench_contracts::AggRow,
    d: &Disagg,
) -> servebench_contracts::AggRow {
    use servebench_contracts::{MultinodeFields, WorkerFields};
    let side = |w: &Worker| WorkerFields {
        tp: if w.num_worker > 0 { w.tp } else { 0 },
        pp: w.pp,
        dcp_size: w.dcp,
        pcp_size: w.pcp,
        ep: if w.num_worker > 0 { w.ep } else { 0 },
        dp_attention: w.dp_attn,
        num_workers: w.num_worker,
    };
    let mut decode = side(&d.decode);
    if d.decode.num_worker == 0 {
        // process_result.py: no decode GPUs → decode tp/ep 0, pp/dcp/pcp 1
        decode.pp = 1;
        decode.dcp_size = 1;
        decode.pcp_size = 1;
    }
    let mn = MultinodeFields {
        router: d.router.as_ref().map(|r| match &d.router_version {
            Some(v) => serde_json::json!({ "name": r, "version": v }),
            None => serde_json::json!({ "name": r }),
        }),
        kv_p2p_transfer: d.kv_p2p_transfer.clone(),
        prefill: side(&d.prefill),
        decode,
        num_prefill_gpu: d.prefill.gpus(),
        num_decode_gpu: d.decode.gpus(),
    };
    let mut r = row.clone();
    let (t, o, i) = mn.per_gpu(r.total_token_throughput, r.output_throughput);
    r.tput_per_gpu = t;
    r.output_tput_per_gpu = o;
    r.input_tput_per_gpu = i;
    r.num_gpus = d.gpus();
    r.identity.is_multinode = true;
    r.identity.disagg = d.disagg;
    let main = *mn.main_side();
    r.identity.tp = main.tp;
    r.identity.ep = main.ep;
    r.identity.dp_attention = main.dp_attention;
    r.multinode = Some(mn);
    r
}

/// Workers placed on nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Nodes of the prefill side.
    pub prefill_nodes: u32,
    /// Nodes of the decode side.
    pub decode_nodes: u32,
    /// Per node (prefill nodes first), what runs there.
    pub nodes: Vec<Vec<String>>,
    /// Every worker with the nodes it runs on (prefill workers first), for the `srun` step
    /// per role of a Slurm job ([`crate::fleet_launch`]).
    pub workers: Vec<Placed>,
}

/// The role of a worker: srt-slurm's worker modes (its log names `<node>_<mode>_w<i>.out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A prefill worker of a disaggregated deployment.
    Prefill,
    /// A decode worker.
    Decode,
    /// A worker of an aggregated multinode deployment (prefill and decode in one).
    Agg,
}

impl Side {
    /// `prefill`, `decode`, `agg` (srt-slurm's mode names).
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Prefill => "prefill",
            Side::Decode => "decode",
            Side::Agg => "agg",
        }
    }
}

/// One worker placed on nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// Its side.
    pub side: Side,
    /// Index within the side (`w<i>`).
    pub index: u32,
    /// Indices of the job's nodes it runs on (one, or the nodes a wide worker spans).
    pub nodes: Vec<u32>,
    /// Its tensor parallelism.
    pub tp: u32,
    /// GPUs of the worker: `tp × pp × pcp`.
    pub gpus: u32,
}

impl Layout {
    /// Worker nodes: prefill + decode.
    pub fn total_nodes(&self) -> u32 {
        self.prefill_nodes + self.decode_nodes
    }
}

/// Appends `n` nodes for one side and puts its workers on them: a worker wider than a node
/// spans `ceil(gpus/gpn)` nodes; narrower ones share a node, spread evenly when the side was
/// given more nodes than it fills.
fn place(
    nodes: &mut Vec<Vec<String>>,
    workers: &mut Vec<Placed>,
    side: Side,
    w: &Worker,
    n: u32,
    gpn: u32,
) {
    let start = nodes.len();
    nodes.extend((0..n).map(|_| Vec::new()));
    if n == 0 || w.num_worker == 0 {
        return;
    }
    let name = match side {
        Side::Decode => "decode",
        _ => "prefill",
    };
    let gpw = w.gpus_per_worker();
    for k in 0..w.num_worker {
        let mut on = Vec::new();
        if gpw >= gpn {
            let span = gpw.div_ceil(gpn);
            for j in 0..span {
                let i = start + ((k * span + j) % n) as usize;
                nodes[i].push(if span > 1 {
                    format!("{name} worker {k} (TP{} over {span} nodes)", w.tp)
                } else {
                    format!("{name} worker {k} (TP{})", w.tp)
                });
                if !on.contains(&(i as u32)) {
                    on.push(i as u32);
                }
            }
        } else {
            let fit = (gpn / gpw).max(1);
            let per_node = w.num_worker.div_ceil(n).min(fit).max(1);
            let i = start + ((k / per_node) % n) as usize;
            let slot = k % per_node;
            nodes[i].push(format!(
                "{name} worker {k} (TP{}, GPUs {}-{})",
                w.tp,
                slot * gpw,
                slot * gpw + gpw - 1
            ));
            on.push(i as u32);
        }
        workers.push(Placed {
            side,
            index: k,
            nodes: on,
            tp: w.tp,
            gpus: gpw,
        });
    }
}

/// GPUs per node the launchers size a multinode job with, by SKU, and the line that says so:
/// `srtslurm.yaml`'s `gpus_per_node` in `runners/launch_gb200-nv.sh` / `launch_gb300-nv.sh`
/// (4: an NVL72 compute tray holds 4 GPUs), `launch_b200-dgxc-slurm.sh`, `launch_b300-nv.sh`,
/// `launch_h100-dgxc-slurm.sh`, `launch_h200-dgxc-slurm.sh` (8), and `launch_mi355x-amds.sh`
/// (`GPUS_PER_NODE=8`).
pub fn launcher_gpus_per_node(sku: &str) -> Option<(u32, &'static str)> {
    Some(match sku {
        "gb200" => (
            4,
            "runners/launch_gb200-nv.sh: srtslurm.yaml gpus_per_node: 4",
        ),
        "gb300" => (
            4,
            "runners/launch_gb300-nv.sh: srtslurm.yaml gpus_per_node: 4",
        ),
        "b200" => (
            8,
            "runners/launch_b200-dgxc-slurm.sh: srtslurm.yaml gpus_per_node: 8",
        ),
        "b300" => (
            8,
            "runners/launch_b300-nv.sh: srtslurm.yaml gpus_per_node: 8",
        ),
        "h100" => (
            8,
            "runners/launch_h100-dgxc-slurm.sh: srtslurm.yaml gpus_per_node: 8",
        ),
        "h200" => (
            8,
            "runners/launch_h200-dgxc-slurm.sh: srtslurm.yaml gpus_per_node: 8",
        ),
        "mi355x" => (8, "runners/launch_mi355x-amds.sh: GPUS_PER_NODE=8"),
        _ => return None,
    })
}

/// GPUs per node of runner label `runner`: its `runners.yaml` hardware entry, else the
/// launcher's number for its SKU. Error: neither knows it.
pub fn gpus_per_node(runner: &str, runners: &servebench_catalog::Runners) -> Result<(u32, String)> {
    if let Some(h) = runners.hardware.get(runner) {
        return Ok((
            h.gpus_per_node.0 as u32,
            format!("{}: hardware.{runner}.gpus-per-node", runners.file),
        ));
    }
    let sku = crate::recipe::sku(runner);
    launcher_gpus_per_node(&sku)
        .map(|(n, src)| (n, src.to_string()))
        .ok_or_else(|| {
            RunnerError::Catalog(format!(
                "runner {runner}: GPUs per node unknown (no hardware entry in {} and no \
                 multinode launcher for SKU {sku})",
                runners.file
            ))
        })
}

/// Nodes a visible srt-slurm recipe requests (its `resources:` block and dedicated roles).
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeResources {
    /// `resources.prefill_nodes` (0 when absent).
    pub prefill_nodes: u32,
    /// `resources.decode_nodes` (0 when absent).
    pub decode_nodes: u32,
    /// `resources.agg_nodes` (aggregated recipes).
    pub agg_nodes: Option<u32>,
    /// `resources.gpus_per_node`.
    pub gpus_per_node: Option<u32>,
    /// Extra nodes of dedicated roles (`infra.etcd_nats_dedicated_node`,
    /// `frontend.dedicated_node`, `benchmark.client_dedicated_node`; one in all when the
    /// client is colocated with the frontend), as `srtctl submit` adds them.
    pub dedicated_nodes: u32,
}

impl RecipeResources {
    /// Worker nodes: `prefill_nodes + decode_nodes`, or `agg_nodes` (srt-slurm
    /// `ResourceConfig.total_nodes`).
    pub fn worker_nodes(&self) -> u32 {
        if self.prefill_nodes > 0 || self.decode_nodes > 0 {
            self.prefill_nodes + self.decode_nodes
        } else {
            self.agg_nodes.unwrap_or(1)
        }
    }

    /// Nodes `srtctl apply` asks `sbatch` for: worker nodes plus dedicated roles.
    pub fn sbatch_nodes(&self) -> u32 {
        self.worker_nodes() + self.dedicated_nodes
    }
}

/// The scalar `key: value` lines directly under a top-level `section:` of a YAML text (one
/// indentation level; comments and nested blocks skipped); `None` when there is no such section.
/// srt-slurm recipes use YAML anchors and merge keys (`<<: *base`) elsewhere in the file, which
/// the catalog's PyYAML-faithful parser refuses; the launchers read recipes the same scoped way
/// (`launch_gb200-nv.sh` finds the telemetry block with awk).
pub fn block_scalars(text: &str, section: &str) -> Option<Vec<(String, String)>> {
    let mut lines = text.lines();
    let head = lines.find(|l| {
        l.strip_prefix(section)
            .and_then(|r| r.strip_prefix(':'))
            .is_some_and(|r| r.trim().is_empty() || r.trim_start().starts_with('{'))
    })?;
    let mut out = Vec::new();
    let rest = head[section.len() + 1..].trim();
    if let Some(flow) = rest.strip_prefix('{') {
        // a flow mapping on one line: `resources: { gpu_type: "gb200", agg_nodes: 1 }`
        let body = flow.split('}').next().unwrap_or("");
        for pair in body.split(',') {
            if let Some((k, v)) = pair.split_once(':') {
                let v = v.trim().trim_matches(['"', '\'']);
                out.push((k.trim().to_string(), v.to_string()));
            }
        }
        return Some(out);
    }
    let mut indent: Option<usize> = None;
    for l in lines {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let depth = l.len() - l.trim_start().len();
        if depth == 0 {
            break;
        }
        let ind = *indent.get_or_insert(depth);
        if depth != ind {
            continue;
        }
        if let Some((k, v)) = l.trim().split_once(':') {
            let v = v
                .split(" #")
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches(['"', '\'']);
            if !v.is_empty() {
                out.push((k.trim().to_string(), v.to_string()));
            }
        }
    }
    Some(out)
}

/// Reads the `resources:` of a recipe file (and its dedicated-role flags). `None` when the
/// file has no top-level `resources:` (a recipe whose blocks are selected with
/// `:zip_override_…[i]` keeps them under its overrides). Error: the file cannot be read.
pub fn recipe_resources(path: &Path) -> Result<Option<RecipeResources>> {
    let text = std::fs::read_to_string(path).map_err(|e| RunnerError::io(path, e))?;
    let Some(r) = block_scalars(&text, "resources") else {
        return Ok(None);
    };
    let n = |k: &str| {
        r.iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.parse::<u32>().ok())
    };
    let flag = |sect: &str, k: &str| {
        block_scalars(&text, sect)
            .unwrap_or_default()
            .iter()
            .any(|(key, v)| key == k && v == "true")
    };
    let infra = flag("infra", "etcd_nats_dedicated_node");
    let frontend = flag("frontend", "dedicated_node");
    let client = flag("benchmark", "client_dedicated_node");
    let roles = [infra, frontend, client].iter().filter(|b| **b).count() as u32;
    let dedicated = if roles > 0 && flag("benchmark", "colocate_with_frontend") {
        1
    } else {
        roles
    };
    Ok(Some(RecipeResources {
        prefill_nodes: n("prefill_nodes").unwrap_or(0),
        decode_nodes: n("decode_nodes").unwrap_or(0),
        agg_nodes: n("agg_nodes"),
        gpus_per_node: n("gpus_per_node"),
        dedicated_nodes: dedicated,
    }))
}

/// Where a `CONFIG_FILE=recipes/<path>[:selector]` recipe is in an InferenceX checkout: the
/// launchers overlay `benchmarks/multi_node/srt-slurm-recipes/<path>` onto their srt-slurm
/// clone (`_RECIPE_SRC` in `runners/launch_gb200-nv.sh`).
pub fn recipe_in_checkout(checkout: &Path, config_file: &str) -> PathBuf {
    let file = config_file.split(':').next().unwrap_or(config_file);
    let rel = file.strip_prefix("recipes/").unwrap_or(file);
    checkout
        .join("benchmarks/multi_node/srt-slurm-recipes")
        .join(rel)
}

/// The script an AMD multinode launcher runs when the config names no recipe:
/// `benchmarks/multi_node[/agentic]/<model-code>_<precision>_<sku>_<framework>.sh`
/// (`runners/launch_mi355x-amds.sh`, `launch_gb200-nv.sh` for llm-d).
pub fn launcher_script(p: &crate::plan::Point) -> String {
    let code = p.exp_name.split('_').next().unwrap_or(&p.model_prefix);
    let sub = match p.workload {
        crate::plan::Workload::Agentic { .. } => "multi_node/agentic",
        crate::plan::Workload::Fixed { .. } => "multi_node",
    };
    format!(
        "benchmarks/{sub}/{code}_{}_{}_{}.sh",
        p.precision,
        crate::recipe::sku(&p.runner),
        p.framework
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_scalars_reads_one_top_level_section_only() {
        let text = "name: x\nbase: &b\n  gpus_per_node: 8\nresources:\n  gpu_type: gb200\n  gpus_per_node: 4 # tray\n  prefill_nodes: 1\n  nested:\n    decode_nodes: 99\n  decode_nodes: 8\nbackend:\n  <<: *b\n";
        let r = block_scalars(text, "resources").unwrap();
        assert_eq!(
            r,
            vec![
                ("gpu_type".to_string(), "gb200".to_string()),
                ("gpus_per_node".into(), "4".into()),
                ("prefill_nodes".into(), "1".into()),
                ("decode_nodes".into(), "8".into()),
            ]
        );
        assert!(block_scalars(text, "infra").is_none());
        let flow = "resources: { gpu_type: \"gb200\", agg_nodes: 1 }\ninfra: { etcd_nats_dedicated_node: true }\n";
        assert_eq!(
            block_scalars(flow, "resources").unwrap(),
            vec![
                ("gpu_type".to_string(), "gb200".to_string()),
                ("agg_nodes".into(), "1".into())
            ]
        );
        assert_eq!(block_scalars(flow, "infra").unwrap()[0].1, "true");
    }

    fn worker(n: u32, tp: u32) -> Worker {
        Worker {
            num_worker: n,
            tp,
            pp: 1,
            dcp: 1,
            pcp: 1,
            ep: 1,
            dp_attn: false,
        }
    }

    #[test]
    fn narrow_workers_share_a_node_unless_the_config_gives_more_nodes() {
        let mut d = Disagg {
            prefill: worker(2, 4),
            decode: worker(1, 8),
            concs: vec![64],
            router: None,
            router_version: None,
            kv_p2p_transfer: None,
            disagg: true,
            settings: vec![],
            gpus_per_node: 8,
            gpus_per_node_source: "t".into(),
        };
        let l = d.layout().unwrap();
        assert_eq!((l.prefill_nodes, l.decode_nodes), (1, 1));
        assert_eq!(l.nodes[0].len(), 3, "{:?}", l.nodes); // two prefill workers + the frontend
        let on: Vec<(Side, u32, Vec<u32>)> = l
            .workers
            .iter()
            .map(|w| (w.side, w.index, w.nodes.clone()))
            .collect();
        assert_eq!(
            on,
            vec![
                (Side::Prefill, 0, vec![0]),
                (Side::Prefill, 1, vec![0]),
                (Side::Decode, 0, vec![1])
            ]
        );
        // a TP8 decode worker on 4-GPU trays spans two nodes
        d.gpus_per_node = 4;
        let l = d.layout().unwrap();
        assert_eq!(l.workers[2].nodes, vec![2, 3], "{:?}", l.nodes);
        d.gpus_per_node = 8;
        d.settings.push(("PREFILL_NODES".into(), "2".into()));
        let l = d.layout().unwrap();
        assert_eq!(
            (l.prefill_nodes, l.decode_nodes, l.total_nodes()),
            (2, 1, 3)
        );
        assert!(
            l.nodes[1][0].starts_with("prefill worker 1"),
            "{:?}",
            l.nodes
        );
        d.settings[0].1 = "two".into();
        assert!(d
            .layout()
            .unwrap_err()
            .to_string()
            .contains("PREFILL_NODES=two"));
    }
}
