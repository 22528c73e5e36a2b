//! `servebench run --executor slurm --simulate` of multinode (disaggregated) points on the real
//! 4-node Slurm cluster of scripts/services/slurm-multinode.sh (issue 32): one job whose
//! allocation spans 3 nodes, one `srun` step per role on the node the plan gives it, one log per
//! node and role in srt-slurm's layout; and a node lost mid-job (`scontrol update state=down`)
//! failing the point as `node_lost` with its node and role.
//!
//! Skipped when that cluster is not running, unless SERVEBENCH_REQUIRE_SERVICES=1 (then it
//! fails).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common;

/// A 3-node point: P3×TP4 + D1×TP8 at 8 GPUs per node (B200) → prefill workers 0-1 on node 0,
/// 2 on node 1, the decode worker on node 2, the frontend on node 0.
const KEY: &str = "dsr1-fp4-b200-dynamo-trt";
const CONC: &str = "548";

/// The tests down nodes of the one cluster: one at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

/// The cluster's config (`SERVEBENCH_SLURM_MN_CONF`, else the script's default) when `sinfo`
/// there lists at least 3 nodes; else skipped (or failed under SERVEBENCH_REQUIRE_SERVICES=1).
fn cluster() -> Option<PathBuf> {
    let conf = std::env::var_os("SERVEBENCH_SLURM_MN_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/servebench-slurm-mn/etc/slurm.conf"));
    let nodes = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%N"])
        .env("SLURM_CONF", &conf)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0);
    if nodes < 3 {
        servebench_testkit::skip_or_fail(&format!(
            "the multi-node Slurm cluster is not running ({} lists {nodes} node(s); start it with scripts/services/slurm-multinode.sh)",
            conf.display()
        ));
        return None;
    }
    Some(conf)
}

fn scontrol(conf: &Path, args: &[&str]) -> String {
    let o = Command::new("scontrol")
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "scontrol {args:?}: {}",
        common::stderr(&o)
    );
    common::stdout(&o)
}

fn run_args<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        KEY,
        "--catalog",
        "master.yaml",
        "--executor",
        "slurm",
        "--simulate",
        "--no-evals",
        "--conc",
        CONC,
        "--num-prompts",
        "8",
        "--warmups",
        "0",
        "--isl",
        "128",
        "--out",
        out,
        "--db",
        "s.db",
    ];
    a.extend_from_slice(extra);
    a
}

fn servebench(dir: &Path, conf: &Path, args: &[&str]) -> Output {
    common::servebench_in(dir)
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap()
}

/// A temp dir with the shared NVIDIA catalog as `master.yaml` and its `runners.yaml`.
fn catalog_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = common::shared().join("data/inferencex");
    for (from, to) in [
        ("nvidia-master.yaml", "master.yaml"),
        ("runners.yaml", "runners.yaml"),
    ] {
        common::copy_rw(data.join(from).to_str().unwrap(), &dir.path().join(to));
    }
    dir
}

/// The single attempt directory of the run in `out`.
fn attempt_dir(out: &Path) -> PathBuf {
    let points: Vec<PathBuf> = std::fs::read_dir(out.join("points"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(points.len(), 1, "{points:?}");
    points[0].join("attempt-1")
}

/// `<node>_<role>.out` names of the per-node, per-role logs, sorted.
fn role_logs(attempt: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(attempt.join("logs/workers"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_multinode_point_is_one_job_over_three_nodes_with_one_srun_step_per_role() {
    let Some(conf) = cluster() else { return };
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = catalog_copy();
    let d = dir.path();

    // the plan says what is submitted
    let o = servebench(
        d,
        &conf,
        &[&run_args("run1", &[])[..], &["--dry-run"]].concat(),
    );
    let plan = common::ok(&o);
    assert!(
        plan.contains("servebench job: sbatch --nodes=3 --gpus-per-node=8 --exclusive --no-requeue; one srun step per role: prefill_w0 on node 0, prefill_w1 on node 0, prefill_w2 on node 1, decode_w0 on node 2, frontend_0 on node 0"),
        "{plan}"
    );

    let o = servebench(d, &conf, &run_args("run1", &[]));
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", common::stderr(&o));
    assert!(out.contains(": stored 1 row"), "{out}");
    let attempt = attempt_dir(&d.join("run1"));
    let script = std::fs::read_to_string(attempt.join("job.sh")).unwrap();
    assert!(
        script.contains("#SBATCH --nodes=3\n#SBATCH --gpus-per-node=8\n"),
        "{script}"
    );

    // Slurm's own record: one job, three nodes
    let id = std::fs::read_to_string(attempt.join("submit.json")).unwrap();
    let id = common::read_json(&attempt.join("submit.json"))["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{id}"))
        .to_string();
    let job = scontrol(&conf, &["-o", "show", "job", &id]);
    assert!(job.contains(" NumNodes=3 "), "{job}");
    let nodelist = job
        .split_whitespace()
        .find_map(|w| w.strip_prefix("NodeList="))
        .unwrap()
        .to_string();
    let hosts = scontrol(&conf, &["show", "hostnames", &nodelist]);
    let nodes: Vec<&str> = hosts.lines().collect();
    assert_eq!(nodes.len(), 3, "{hosts}");

    // the launcher saw the allocation and every worker registered before the frontend started
    let log = std::fs::read_to_string(attempt.join("job.log")).unwrap();
    assert!(
        log.contains(&format!(
            "Job {id}: 3 nodes: {} (SLURM_JOB_NODELIST={nodelist})",
            nodes.join(" ")
        )),
        "{log}"
    );
    let registered = log.find("all 4 worker(s) registered").expect(&log);
    assert!(
        registered < log.find("started frontend + dynamo-router").expect(&log),
        "{log}"
    );

    // one log per node and role, each written on the node its name says (SLURMD_NODENAME)
    let want = [
        (0, "prefill_w0"),
        (0, "prefill_w1"),
        (1, "prefill_w2"),
        (2, "decode_w0"),
        (0, "frontend_0"),
    ];
    let mut expect: Vec<String> = want
        .iter()
        .map(|(i, r)| format!("{}_{r}.out", nodes[*i]))
        .collect();
    expect.sort();
    assert_eq!(role_logs(&attempt), expect);
    for (i, r) in want {
        let f = attempt.join(format!("logs/workers/{}_{r}.out", nodes[i]));
        let text = std::fs::read_to_string(&f).unwrap();
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.contains(&format!(" on node {} (host ", nodes[i])),
            "{}: {first}",
            f.display()
        );
        // every role's process is the simulated engine, serving
        assert!(text.contains("\nserving "), "{}: {text}", f.display());
    }
}

#[test]
fn a_node_lost_mid_job_fails_the_point_as_node_lost_with_its_node_and_role() {
    let Some(conf) = cluster() else { return };
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = catalog_copy();
    let d = dir.path();
    // on the wall clock with long outputs the measurement outlasts the node's loss
    let mut child = common::servebench_in(d)
        .args(run_args(
            "run2",
            &["--sim-clock", "wall", "--osl", "4096", "--max-retries", "0"],
        ))
        .env("SLURM_CONF", &conf)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let attempt = loop {
        let a = std::fs::read_dir(d.join("run2/points"))
            .ok()
            .and_then(|mut r| r.next())
            .map(|e| e.unwrap().path().join("attempt-1"));
        if let Some(a) = a.filter(|a| {
            std::fs::read_to_string(a.join("job.log")).is_ok_and(|l| l.contains("engine ready"))
        }) {
            break a;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120) && child.try_wait().unwrap().is_none(),
            "the job never became ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // the decode worker's node, from its log's name
    let decode = role_logs(&attempt)
        .into_iter()
        .find_map(|f| f.strip_suffix("_decode_w0.out").map(str::to_string))
        .expect("a decode worker log");
    scontrol(
        &conf,
        &[
            "update",
            &format!("nodename={decode}"),
            "state=down",
            "reason=servebench test: node lost",
        ],
    );
    let o = child.wait_with_output().unwrap();
    // the node comes back for the next test (ReturnToService=2 usually has it back already)
    let _ = Command::new("scontrol")
        .args(["update", &format!("nodename={decode}"), "state=resume"])
        .env("SLURM_CONF", &conf)
        .output();
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", common::stderr(&o));
    assert!(
        out.contains("failed (Slurm job NODE_FAIL: a node of the allocation failed)"),
        "{out}"
    );
    assert!(
        // the first node-failure line of the batch log is srun's `Node failure on <node>` or,
        // when it wins the race, slurmstepd's `*** JOB … CANCELLED … DUE TO NODE FAILURE`
        out.contains(&format!(
            "(node {decode}, decode worker w0) · layer node · node_lost"
        )),
        "{out}"
    );
    assert!(!out.contains("cancelled"), "{out}");
    let result = common::read_json(&attempt.parent().unwrap().join("result.json"));
    assert_eq!(result["state"], "failed", "{result}");
    assert_eq!(result["failure"]["category"], "node_lost", "{result}");

    // `servebench triage` over the attempt's logs says the same
    let mut files = vec![attempt.join("job.log")];
    files.extend(
        role_logs(&attempt)
            .iter()
            .map(|f| attempt.join("logs/workers").join(f)),
    );
    let o = common::servebench_in(d)
        .arg("triage")
        .args(&files)
        .output()
        .unwrap();
    let text = common::stdout(&o);
    assert!(
        text.contains(&format!("(node {decode}, decode worker w0)")),
        "{text}\n{}",
        common::stderr(&o)
    );
}
