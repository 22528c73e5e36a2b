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

/// A temp dir with the shared catalogs (NVIDIA's as `master.yaml`) and their `runners.yaml`.
fn catalog_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = common::shared().join("data/inferencex");
    for (from, to) in [
        ("nvidia-master.yaml", "master.yaml"),
        ("amd-master.yaml", "amd-master.yaml"),
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

    let out = common::ok(&servebench(d, &conf, &run_args("run1", &[])));
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
    // the stored row has the deployment's shape (P3×TP4 + D1×TP8: 12 + 8 GPUs)
    let shapes = stored_shapes(&d.join("s.db"));
    assert_eq!(shapes, vec![(12, 8, "single_turn".to_string())]);
}

/// (num_prefill_gpu, num_decode_gpu, benchmark_type) of every row in the store `db`, after
/// checking each is a multinode row in process_result.py's shape (prefill/decode fields, no
/// single `tp`, GPUs = prefill + decode, per-GPU throughput over all of them).
fn stored_shapes(db: &Path) -> Vec<(u64, u64, String)> {
    let mut out = Vec::new();
    for run in common::runs::stored_rows(db) {
        for row in run {
            let v = row.to_value();
            assert_eq!(v["is_multinode"], true, "{v}");
            assert_eq!(v["disagg"], true, "{v}");
            assert!(
                v.get("tp").is_none() && v.get("prefill_tp").is_some(),
                "{v}"
            );
            let (pg, dg) = (
                v["num_prefill_gpu"].as_u64().unwrap(),
                v["num_decode_gpu"].as_u64().unwrap(),
            );
            assert_eq!(v["num_gpus"].as_u64(), Some(pg + dg), "{v}");
            let per_gpu = row.total_token_throughput / (pg + dg) as f64;
            assert!(
                (row.tput_per_gpu - per_gpu).abs() <= 1e-9 * per_gpu.max(1.0),
                "{v}"
            );
            out.push((pg, dg, v["benchmark_type"].as_str().unwrap().to_string()));
        }
    }
    out
}

/// The sample on the multi-node cluster: an NVIDIA agentic and an AMD fixed-seq and
/// agentic multinode config (the NVIDIA fixed-seq one is the test above) run under `--simulate
/// --executor slurm`, each point one job over its nodes with one log per node and role, and
/// store rows with the prefill/decode shape.
#[test]
fn both_vendors_fixed_and_agentic_run_on_slurm_and_store_the_prefill_decode_shape() {
    let Some(conf) = cluster() else { return };
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = catalog_copy();
    let d = dir.path();
    let traces = common::agentx_traces(d, &["trace_0167.json", "trace_0504.json"]);
    let traces = traces.to_str().unwrap();
    // (key, conc, exit code: an AgentX window of 3 s is stored but is no valid submission,
    // rows as (prefill GPUs, decode GPUs, benchmark type))
    let cases: [(&str, &str, i32, &[(u64, u64, &str)]); 3] = [
        (
            "minimaxm3-fp4-gb200-dynamo-vllm-agentic-disagg-mtp",
            "48",
            3,
            &[(8, 4, "agentic_traces")],
        ),
        (
            "dsr1-fp8-mi355x-sglang-disagg",
            "8",
            0,
            &[(8, 16, "single_turn"), (4, 8, "single_turn")],
        ),
        (
            "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp",
            "1",
            3,
            &[(8, 8, "agentic_traces")],
        ),
    ];
    for (i, (key, conc, rc, rows)) in cases.iter().enumerate() {
        let out = format!("out{i}");
        let db = format!("s{i}.db");
        let args = [
            "run",
            key,
            "--catalog",
            "master.yaml",
            "amd-master.yaml",
            "--executor",
            "slurm",
            "--simulate",
            "--no-evals",
            "--conc",
            conc,
            "--num-prompts",
            "8",
            "--warmups",
            "0",
            "--isl",
            "512",
            "--osl",
            "32",
            "--duration",
            "3",
            "--sim-speedup",
            "50",
            "--traces",
            traces,
            "--out",
            &out,
            "--db",
            &db,
        ];
        let so = common::exits(&servebench(d, &conf, &args), *rc);
        assert_eq!(
            so.matches(": stored 1 row").count(),
            rows.len(),
            "{key}: {so}"
        );
        for p in std::fs::read_dir(d.join(&out).join("points")).unwrap() {
            let attempt = p.unwrap().path().join("attempt-1");
            let log = std::fs::read_to_string(attempt.join("job.log")).unwrap();
            let nodes = log
                .split_once(" nodes: ")
                .and_then(|(head, _)| head.rsplit(' ').next())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("{key}: {log}"));
            assert!(nodes >= 2, "{key}: {log}");
            // one log per node and role: the frontend's and every worker's
            let logs = role_logs(&attempt);
            assert!(
                logs.iter().any(|f| f.ends_with("_frontend_0.out")),
                "{key}: {logs:?}"
            );
            assert!(
                logs.iter().any(|f| f.contains("_prefill_w0")),
                "{key}: {logs:?}"
            );
            assert!(
                logs.iter().any(|f| f.contains("_decode_w0")),
                "{key}: {logs:?}"
            );
            // the frontend serves the simulated disaggregated fleet
            let front = logs
                .iter()
                .find(|f| f.ends_with("_frontend_0.out"))
                .unwrap();
            let front = std::fs::read_to_string(attempt.join("logs/workers").join(front)).unwrap();
            assert!(front.contains("disaggregated "), "{key}: {front}");
        }
        let mut got = stored_shapes(&d.join(&db));
        let mut want: Vec<(u64, u64, String)> = rows
            .iter()
            .map(|(p, d, b)| (*p, *d, b.to_string()))
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{key}");
    }
}

#[test]
fn a_node_lost_mid_job_fails_the_point_as_node_lost_with_its_node_and_role() {
    let Some(conf) = cluster() else { return };
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = catalog_copy();
    let d = dir.path();
    let baseline = format!("{}/baseline.json", common::SCENARIO);
    // on the wall clock at real speed with long outputs the measurement outlasts the node's loss
    let mut child = common::servebench_in(d)
        .args(run_args(
            "run2",
            &[
                "--sim-clock",
                "wall",
                "--sim-speedup",
                "1",
                "--osl",
                "4096",
                "--max-retries",
                "0",
                // the attempt comment (attempt.md) of a run that stored nothing
                "--baseline",
                &baseline,
            ],
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
    let out = common::exits(&o, 1);
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
    // the result lists the per-node, per-role logs its triage read, beside the job log
    let listed: Vec<String> = result["node_logs"]
        .as_array()
        .unwrap_or_else(|| panic!("no node_logs in {result}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = role_logs(&attempt)
        .iter()
        .map(|f| attempt.join("logs/workers").join(f).display().to_string())
        .collect();
    assert_eq!(listed, expected, "{result}");
    assert!(listed
        .iter()
        .any(|l| l.ends_with(&format!("{decode}_decode_w0.out"))));
    // and so does the attempt comment
    let comment = std::fs::read_to_string(d.join("run2/attempt.md")).unwrap();
    assert!(
        comment.contains(&format!("per-node logs: {}", expected.join(", "))),
        "{comment}"
    );

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

/// A plan larger than the cluster (9 nodes on the 4-node one) is no job pending forever: the
/// point fails at once with Slurm's reason.
#[test]
fn a_plan_larger_than_the_cluster_fails_with_slurms_reason() {
    let Some(conf) = cluster() else { return };
    let dir = catalog_copy();
    let d = dir.path();
    let mut args = run_args("run3", &["--max-retries", "0"]);
    let conc = args.iter().position(|a| *a == "--conc").unwrap() + 1;
    // dsr1-fp4-gb200-dynamo-trt conc 4: P1×TP4 + D4×TP8 on 4-GPU trays, 9 nodes
    args[1] = "dsr1-fp4-gb200-dynamo-trt";
    args[conc] = "4";
    let out = common::exits(&servebench(d, &conf, &args), 1);
    assert!(
        out.contains("Slurm will never start job ")
            && out.contains(
                "Reason=PartitionNodeLimit: it asks for 9 node(s), more than its partition has"
            ),
        "{out}"
    );
    assert!(
        out.contains("· layer scheduler · slurm_job_never_starts · deterministic"),
        "{out}"
    );
}
