//! A multinode point inside its Slurm allocation (`run --executor slurm`, issue 32): the
//! job's "engine" is a launcher script that starts one `srun` step per role on the nodes the
//! plan gives it ([`crate::multinode::Layout`]), the way srt-slurm's `srtctl` starts a Dynamo
//! deployment: every prefill and decode worker on its node(s), then — once all workers answer
//! `/health` (they registered) — the frontend and router on the first node, which is what the
//! point's measurement talks to.
//!
//! Logs follow srt-slurm's layout (`src/srtctl/core/log_layout.py`), which `servebench-triage`
//! reads as a multi-node log set: `logs/workers/<node>_<prefill|decode|agg>_w<i>.out` (one per
//! node of a worker that spans several) and `logs/workers/<node>_frontend_0.out`; the
//! launcher's own lines and `srun`'s (`srun: error: Node failure on mn3`) go to the job log, in
//! srtctl's format (`2026-09-21 01:15:07,000 - srtctl - INFO - Model is not ready, waiting for 1
//! prefills and 0 decodes. Have 0 prefills and 4 decodes.`, `Model did not get healthy in N
//! seconds`).
//!
//! Under `--simulate` every role's process is `servebench sim`: a worker runs the simulated
//! engine of its own shape (its TP, at most 8; the point's engine TP when the model does not
//! fit the worker's GPUs in the simulator's presets) and carries placement, registration,
//! liveness and its log; the frontend runs the point's simulated engine (`sim_argv`), which
//! models the deployment's timing. A role whose step ends (a lost node, a crash) ends the
//! launcher with a line naming the role and its node(s), so the job stops measuring.
//!
//! Must not know about: how the point is measured (the job, [`crate::job`]), triage rules.

use std::path::{Path, PathBuf};

use crate::error::{Result, RunnerError};
use crate::multinode::{Disagg, Layout, Side};
use crate::recipe::{shell_quote, SimSetup};

/// The launcher's file in the attempt directory.
pub const SCRIPT: &str = "fleet.sh";

/// The folder (in the attempt directory) of the per-node, per-role logs.
pub const LOG_DIR: &str = "logs/workers";

/// One `srun` step of the launcher.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleStep {
    /// srt-slurm's log stem: `prefill_w0`, `decode_w3`, `agg_w0`, `frontend_0`.
    pub stem: String,
    /// `prefill worker w0 (TP4)`, `frontend + dynamo-router`.
    pub role: String,
    /// Indices of the job's nodes the step runs on (its first is the one that serves).
    pub nodes: Vec<u32>,
    /// Port it serves on; `/health` there is its registration.
    pub port: u16,
    /// The process (`servebench sim …`).
    pub argv: Vec<String>,
}

/// The simulator's TP for a worker of `tp` GPUs: `tp` capped at 8 when the model fits there
/// (the simulator's presets), else the point's engine TP `fallback` (which the frontend runs).
fn worker_tp(sim: &SimSetup, tp: u32, fallback: u32) -> u32 {
    let t = tp.clamp(1, 8);
    if servebench_sim::EngineConfig::from_presets(&sim.gpu, &sim.model, t).is_ok() {
        t
    } else {
        fallback
    }
}

/// The steps of multinode point with shape `d` laid out as `layout`: the workers (each on a
/// port from `ports`), then the frontend on node 0 serving `frontend_argv` on `frontend_port`.
pub fn role_steps(
    exe: &Path,
    d: &Disagg,
    layout: &Layout,
    sim: &SimSetup,
    frontend_argv: Vec<String>,
    frontend_port: u16,
    mut ports: impl FnMut() -> Result<u16>,
) -> Result<Vec<RoleStep>> {
    let mut steps = Vec::new();
    for w in &layout.workers {
        let port = ports()?;
        let tp = worker_tp(sim, w.tp, sim.tp);
        let argv = vec![
            exe.display().to_string(),
            "sim".into(),
            "--gpu".into(),
            sim.gpu.clone(),
            "--model".into(),
            sim.model.clone(),
            "--tp".into(),
            tp.to_string(),
            "--host".into(),
            "0.0.0.0".into(),
            "--port".into(),
            port.to_string(),
        ];
        let span = if w.nodes.len() > 1 {
            format!(" over {} nodes", w.nodes.len())
        } else {
            String::new()
        };
        let side = match w.side {
            Side::Agg => "aggregated",
            s => s.as_str(),
        };
        steps.push(RoleStep {
            stem: format!("{}_w{}", w.side.as_str(), w.index),
            role: format!("{side} worker w{} (TP{}{span})", w.index, w.tp),
            nodes: w.nodes.clone(),
            port,
            argv,
        });
    }
    steps.push(RoleStep {
        stem: "frontend_0".into(),
        role: format!("frontend + {}", d.router.as_deref().unwrap_or("router")),
        nodes: vec![0],
        port: frontend_port,
        argv: frontend_argv,
    });
    Ok(steps)
}

/// The bash the launcher runs: helpers, then one `start` per worker, the registration wait,
/// the frontend and the watch (see the module docs). `nodes`: the job's node count;
/// `health_timeout_s`: how long the workers get to register.
pub fn launcher_script(
    point_id: &str,
    steps: &[RoleStep],
    nodes: u32,
    health_timeout_s: f64,
) -> String {
    let mut s = String::from("#!/usr/bin/env bash\n");
    s.push_str(&format!(
        "# servebench multinode launcher for point {point_id} (generated by crates/runner/src/fleet_launch.rs):\n\
         # one srun step per node and role in this Slurm allocation; logs in {LOG_DIR}/<node>_<role>.out\n"
    ));
    s.push_str(HELPERS);
    s.push_str(&format!("need_nodes {nodes}\n"));
    let (workers, front) = steps.split_at(steps.len().saturating_sub(1));
    for st in workers {
        s.push_str(&start_line(st, true));
    }
    s.push_str(&format!(
        "wait_registered {}\n",
        health_timeout_s.max(1.0).round() as u64
    ));
    for st in front {
        s.push_str(&start_line(st, false));
    }
    s.push_str("watch_roles\n");
    s
}

fn start_line(st: &RoleStep, worker: bool) -> String {
    let nodes: Vec<String> = st.nodes.iter().map(u32::to_string).collect();
    let argv: Vec<String> = st.argv.iter().map(|a| shell_quote(a)).collect();
    format!(
        "start {} {} {} {} {} {}\n",
        shell_quote(&st.stem),
        shell_quote(&st.role),
        nodes.join(","),
        st.port,
        if worker { "worker" } else { "frontend" },
        argv.join(" ")
    )
}

/// Writes the launcher into attempt directory `dir` (and creates its log folder); returns its
/// path.
pub fn write(dir: &Path, script: &str) -> Result<PathBuf> {
    let logs = dir.join(LOG_DIR);
    std::fs::create_dir_all(&logs).map_err(|e| RunnerError::io(&logs, e))?;
    let path = dir.join(SCRIPT);
    std::fs::write(&path, script).map_err(|e| RunnerError::io(&path, e))?;
    Ok(path)
}

/// The launcher's functions. `start STEM ROLE NODE_INDICES PORT KIND ARGV…` runs ARGV as one
/// task per node on the job's nodes at NODE_INDICES (the first task serves; the others hold
/// their node for a worker spanning several); `wait_registered T` waits until every worker
/// answers `/health` on its node's address (srtctl's progress line every 5 s; `Model did not
/// get healthy in T seconds` after T); `watch_roles` waits until any step ends and exits 1
/// naming its role and node(s). SIGTERM (the job's teardown) reaches the whole process group.
const HELPERS: &str = r#"set -uo pipefail
log() { echo "$(date -u '+%Y-%m-%d %H:%M:%S,%3N') - srtctl - $1 - $2"; }
if [ -z "${SLURM_JOB_NODELIST:-}" ]; then
  log ERROR "not inside a Slurm allocation (no SLURM_JOB_NODELIST): a multinode point runs with --executor slurm"
  exit 1
fi
mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
need_nodes() {
  if [ "${#NODES[@]}" -lt "$1" ]; then
    log ERROR "the allocation has ${#NODES[@]} node(s) ($SLURM_JOB_NODELIST); the plan places roles on $1"
    exit 1
  fi
  log INFO "Job ${SLURM_JOB_ID:-?}: ${#NODES[@]} nodes: ${NODES[*]} (SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST)"
}
addr_of() { scontrol show node "$1" 2>/dev/null | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2; }
declare -A ROLE=() WADDR=() WKIND=()
WORKERS=()
# one line first in each task's log: which node, task and GPUs it runs on. A step's log is its
# first node's (srun --output; slurmstepd's own lines, e.g. a step cancelled by a node failure,
# land there too); another task of a step over several nodes writes its own node's log
# (SLURMD_NODENAME: srun's %N is the host name, which several slurmd on one machine share)
TASK='if [ "${SLURM_PROCID:-0}" != 0 ]; then exec >>"logs/workers/${SLURMD_NODENAME:-$(hostname -s)}_$1.out" 2>&1; fi; shift
echo "$(date -u "+%Y-%m-%d %H:%M:%S,%3N") - $0 on node ${SLURMD_NODENAME:-?} (host $(hostname), task ${SLURM_PROCID:-0} of ${SLURM_NTASKS:-1}, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-none})"
if [ "${SLURM_PROCID:-0}" != 0 ]; then echo "rank ${SLURM_PROCID} holds this node for the worker; its leader serves"; exec sleep infinity; fi
exec "$@"'
start() {
  local stem=$1 role=$2 idx=$3 port=$4 kind=$5; shift 5
  local list="" i
  for i in ${idx//,/ }; do list+="${list:+,}${NODES[$i]}"; done
  local n=$(( $(tr -cd , <<<"$idx" | wc -c) + 1 ))
  srun --overlap --nodes="$n" --ntasks="$n" --ntasks-per-node=1 --nodelist="$list" \
    --job-name="$stem" --output="logs/workers/${NODES[${idx%%,*}]}_${stem}.out" \
    --kill-on-bad-exit=1 bash -c "$TASK" "$role" "$stem" "$@" &
  ROLE[$!]="$role on node ${list}"
  log INFO "started $role on node ${list} (srun step, pid $!, port $port)"
  if [ "$kind" = worker ]; then
    local lead=${NODES[${idx%%,*}]}
    WORKERS+=("$!"); WADDR[$!]="$(addr_of "$lead"):$port"; WKIND[$!]=$stem
  fi
}
healthy() {
  local hp=$1 head=""
  { exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}"; } 2>/dev/null || return 1
  printf 'GET /health HTTP/1.0\r\nHost: %s\r\n\r\n' "$hp" >&3
  IFS= read -r -t 2 head <&3
  exec 3<&- 3>&-
  [[ "$head" == "HTTP/1."?" 200"* ]]
}
ended() {  # a step that ended: names its role and exits 1
  local pid=$1 rc=$2
  log ERROR "${ROLE[$pid]:-a role} ended (srun exit $rc): stopping the deployment"
  kill $(jobs -p) 2>/dev/null
  wait
  exit 1
}
wait_registered() {
  local limit=$1 t0=$SECONDS last=-5 pid
  while :; do
    local wp=0 wd=0 hp=0 hd=0
    for pid in "${WORKERS[@]}"; do
      kill -0 "$pid" 2>/dev/null || { wait "$pid"; ended "$pid" $?; }
      case ${WKIND[$pid]} in decode_*) k=d;; *) k=p;; esac
      if healthy "${WADDR[$pid]}"; then
        if [ $k = d ]; then hd=$((hd + 1)); else hp=$((hp + 1)); fi
      else
        if [ $k = d ]; then wd=$((wd + 1)); else wp=$((wp + 1)); fi
      fi
    done
    if [ $((wp + wd)) = 0 ]; then
      log INFO "all ${#WORKERS[@]} worker(s) registered after $((SECONDS - t0)) s"
      return 0
    fi
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      log ERROR "Model did not get healthy in $limit seconds"
      kill $(jobs -p) 2>/dev/null
      exit 1
    fi
    if [ $((SECONDS - last)) -ge 5 ]; then
      log INFO "Model is not ready, waiting for $wp prefills and $wd decodes. Have $hp prefills and $hd decodes."
      last=$SECONDS
    fi
    sleep 0.5
  done
}
watch_roles() {
  local pid
  wait -n -p pid
  ended "$pid" $?
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multinode::Worker;

    fn disagg() -> Disagg {
        let w = |n, tp| Worker {
            num_worker: n,
            tp,
            pp: 1,
            dcp: 1,
            pcp: 1,
            ep: tp,
            dp_attn: false,
        };
        Disagg {
            prefill: w(1, 4),
            decode: w(1, 8),
            concs: vec![4],
            router: Some("dynamo-router".into()),
            router_version: None,
            kv_p2p_transfer: Some("nixl".into()),
            disagg: true,
            settings: vec![],
            gpus_per_node: 4,
            gpus_per_node_source: "t".into(),
        }
    }

    fn sim() -> SimSetup {
        SimSetup {
            gpu: "b200".into(),
            model: "deepseek-r1-fp4".into(),
            tp: 8,
            notes: vec![],
            speedup: None,
            slowdown: None,
            fleet: None,
            clock: None,
        }
    }

    /// A TP4 prefill worker on node 0, a TP8 decode worker over nodes 1-2 (4 GPUs per node),
    /// the frontend on node 0: one step each, srt-slurm's log stems, distinct ports.
    #[test]
    fn one_step_per_role_on_the_plans_nodes() {
        let d = disagg();
        let l = d.layout().unwrap();
        let mut next = 40000;
        let steps = role_steps(
            Path::new("/bin/servebench"),
            &d,
            &l,
            &sim(),
            vec!["/bin/servebench".into(), "sim".into()],
            39999,
            || {
                next += 1;
                Ok(next)
            },
        )
        .unwrap();
        let got: Vec<(&str, &str, Vec<u32>, u16)> = steps
            .iter()
            .map(|s| (s.stem.as_str(), s.role.as_str(), s.nodes.clone(), s.port))
            .collect();
        assert_eq!(
            got,
            vec![
                ("prefill_w0", "prefill worker w0 (TP4)", vec![0], 40001),
                (
                    "decode_w0",
                    "decode worker w0 (TP8 over 2 nodes)",
                    vec![1, 2],
                    40002
                ),
                ("frontend_0", "frontend + dynamo-router", vec![0], 39999),
            ]
        );
        // the decode worker serves TP8 of its model; the prefill worker its own TP4
        assert!(steps[1].argv.windows(2).any(|w| w == ["--tp", "8"]));
        assert!(steps[0].argv.windows(2).any(|w| w == ["--tp", "4"]));
        let text = launcher_script("pt", &steps, 3, 30.0);
        assert!(text.contains("need_nodes 3\n"), "{text}");
        assert!(
            text.contains("start decode_w0 'decode worker w0 (TP8 over 2 nodes)' 1,2 40002 worker /bin/servebench sim"),
            "{text}"
        );
        let front = text.find("start frontend_0").unwrap();
        assert!(text.find("wait_registered 30\n").unwrap() < front, "{text}");
        assert!(text.ends_with("watch_roles\n"));
    }

    /// A worker whose model does not fit its own TP in the simulator's presets runs the
    /// point's engine TP instead (DeepSeek-R1 FP8 on one H200 does not fit; on eight it does).
    #[test]
    fn a_worker_too_small_for_its_model_runs_the_points_tp() {
        let s = SimSetup {
            gpu: "h200".into(),
            model: "deepseek-r1-fp8".into(),
            ..sim()
        };
        assert_eq!(worker_tp(&s, 1, 8), 8);
        assert_eq!(worker_tp(&s, 16, 4), 8);
    }
}
