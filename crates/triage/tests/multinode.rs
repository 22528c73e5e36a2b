//! Multi-node logs (one per node and role, srt-slurm's layout): the first error across nodes by
//! time with the clock skew between nodes in mind, its node and role, and the classes
//! multinode runs hit (a lost node, NCCL/UCX/NIXL transport, etcd/NATS, a role that never
//! registers). The sets under `data/multinode/` are built like the logs a GB200 dynamo job
//! leaves: the GitHub job log of `runners/launch_gb200-nv.sh` (CI timestamps, `set -x`
//! traces), srt-slurm's batch log and its per-worker logs (SGLang, TensorRT-LLM, Dynamo).

use std::path::PathBuf;

use servebench_triage::{triage_logs_with, triage_texts, TriageOptions, TriageReport};

fn set(name: &str) -> Vec<PathBuf> {
    let dir =
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/multinode")).join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn triage_set(files: &[PathBuf], skew_ms: u64) -> TriageReport {
    let opts = TriageOptions {
        clock_skew_ms: skew_ms,
        ..TriageOptions::default()
    };
    triage_logs_with(files, &opts).unwrap()
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap()
}

/// The node that died leaves no error at all, only a log that stops; its peers are loud. The
/// lost node is the first error, on that node, with its role.
#[test]
fn a_lost_node_is_the_first_error_not_its_loud_peers() {
    let mut files = set("node-lost");
    // the loudest log first: order of the logs must not matter
    files.sort_by_key(|f| !f.ends_with("gb200-cn08_decode_w1.out"));
    let r = triage_set(&files, 2000);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(r.category, "node_lost", "{}", r.render_text());
    assert_eq!(file_name(&fe.file), "slurm_job-18590.out");
    assert_eq!(fe.line, "srun: error: Node failure on gb200-cn07");
    assert_eq!(fe.node.as_deref(), Some("gb200-cn07"));
    assert_eq!(fe.role.as_deref(), Some("decode worker w0"));
    assert!(r.retry, "a lost node is an infrastructure retry");
    assert!(
        r.fix.contains("gb200-cn07") && r.next_step.contains("--exclude"),
        "{}",
        r.next_step
    );
    let e = &r.evidence[1];
    assert!(
        e.starts_with("node gb200-cn07 was lost: ") && e.contains("slurm_job-18590.out:14"),
        "{e}"
    );
    // cn07's log stops at 01:20:11, before cn08's NCCL errors (at or after 01:20:13)
    assert!(
        e.contains("its logs stop at 2026-09-21 01:20:11.000")
            && e.contains("before the first error on another node")
            && e.contains("gb200-cn08_decode_w1.out:6 (node gb200-cn08, decode worker w1) at or after 2026-09-21 01:20:13.000"),
        "{e}"
    );
    let text = r.render_text();
    assert!(
        text.contains("slurm_job-18590.out:14 (node gb200-cn07, decode worker w0)"),
        "{text}"
    );
    // The launcher's `set -x` traces (`+ srtctl apply …`, `+ [[ ! -f recipes/… ]]`) are no
    // error, and its exit wrapper is only secondary.
    let gh = r
        .logs
        .iter()
        .find(|l| file_name(&l.file) == "gh-job.log")
        .unwrap();
    assert_eq!(
        gh.first_error.as_ref().unwrap().category,
        "process_exit_code"
    );
}

/// Without the lost node's own logs the loss still explains the rest.
#[test]
fn a_lost_node_without_its_logs() {
    let files: Vec<PathBuf> = set("node-lost")
        .into_iter()
        .filter(|f| !f.ends_with("gb200-cn07_decode_w0.out"))
        .collect();
    let r = triage_set(&files, 2000);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(r.category, "node_lost");
    assert_eq!(
        (fe.node.as_deref(), fe.role.as_deref()),
        (Some("gb200-cn07"), None)
    );
    assert!(
        r.evidence[1].ends_with("no log of that node was given"),
        "{:?}",
        r.evidence
    );
}

/// The decode node's clock runs ahead: its NIXL error (a consequence) reads 1 s *before* the
/// prefill's OOM (the cause). Within the tolerance the clocks cannot order them: the node's
/// own error beats the transport error its peer sees. With no tolerance the clocks decide.
#[test]
fn clock_skew_between_nodes_is_not_taken_as_order() {
    let files = set("skew");
    let r = triage_set(&files, 2000);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(r.signature_id.as_deref(), Some("D3"), "{}", r.render_text());
    assert_eq!(file_name(&fe.file), "gb200-cn01_prefill_w0.out");
    assert_eq!(fe.line_no, 10);
    assert_eq!(
        (fe.node.as_deref(), fe.role.as_deref()),
        (Some("gb200-cn01"), Some("prefill worker w0"))
    );
    assert!(
        r.evidence[1].starts_with("first error across 3 logs by time: ")
            && r.evidence[1].contains(
                "(node gb200-cn01, prefill worker w0) at or after 2026-09-21 01:30:05.000"
            ),
        "{:?}",
        r.evidence
    );
    assert!(
        r.evidence[2].contains("gb200-cn02_decode_w0.out:5 (node gb200-cn02, decode worker w0) at 2026-09-21 01:30:04.000")
            && r.evidence[2].contains("within the clock-skew tolerance (2.000 s)"),
        "{:?}",
        r.evidence
    );
    let r0 = triage_set(&files, 0);
    let fe0 = r0.first_error.as_ref().unwrap();
    assert_eq!(r0.category, "nixl_transfer");
    assert_eq!(
        (fe0.node.as_deref(), fe0.role.as_deref()),
        (Some("gb200-cn02"), Some("decode worker w0"))
    );
    assert!(
        fe0.repeats >= 11,
        "the loud log repeats it: {}",
        fe0.repeats
    );
}

/// The router waits for a prefill worker that hangs in start-up: the batch log's timeout is
/// the first error, and it names the role still missing (from srt-slurm's last wait line).
#[test]
fn a_role_that_never_registers_is_named() {
    let r = triage_set(&set("never-registered"), 2000);
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(r.category, "role_never_registered", "{}", r.render_text());
    assert_eq!(file_name(&fe.file), "sweep_18612.log");
    assert_eq!(fe.role.as_deref(), Some("Slurm batch log"));
    assert_eq!(fe.fields["waiting_for"], "1 prefill worker(s)");
    assert_eq!(fe.fields["timeout_s"], "3600");
    assert!(
        r.fix
            .starts_with("the router still waited for 1 prefill worker(s) after 3600 s"),
        "{}",
        r.fix
    );
    assert!(
        r.next_step
            .starts_with("Open the logs of the 1 prefill worker(s)"),
        "{}",
        r.next_step
    );
}

fn two(a: (&str, &str), b: (&str, &str)) -> TriageReport {
    triage_texts(&[a, b], &TriageOptions::default())
}

/// The earliest error wins over a louder, later one, whatever order the logs come in.
#[test]
fn first_by_time_not_loudest_not_first_given() {
    let mut loud = String::from("[2026-09-21 01:40:20] INFO:     Application startup complete.\n[2026-09-21 01:40:30 TP0] Decode batch. #running-req: 3\n");
    for i in 0..50 {
        loud.push_str(&format!("gb200-cn02:77:{i} [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.1.11<4{i:04}> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"));
    }
    let quiet = "[2026-09-21 01:40:25 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 2811, in run_scheduler_process\nValueError: q2k_indices must be contiguous with layout [head_kv, total_q, topK]\n";
    let r = two(
        ("logs/gb200-cn02_decode_w0.out", &loud),
        ("logs/gb200-cn01_prefill_w0.out", quiet),
    );
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(
        fe.file,
        "logs/gb200-cn01_prefill_w0.out",
        "{}",
        r.render_text()
    );
    assert_eq!(r.signature_id.as_deref(), Some("D8"));
    let e = &r.evidence[1];
    assert!(
        e.contains("next: logs/gb200-cn02_decode_w0.out:3 (node gb200-cn02, decode worker w0) at or after 2026-09-21 01:40:30.000")
            && e.ends_with(", +5.000 s"),
        "{e}"
    );
}

/// Each multinode class, from its published text, in a two-log set; the node and role come
/// with it.
#[test]
fn each_multinode_class_in_a_set() {
    let ok = ("logs/gb200-cn09_decode_w0.out", "[2026-09-21 02:10:00] INFO:     Application startup complete.\n[2026-09-21 02:20:00 TP0] Decode batch. #running-req: 1\n");
    let cases: [(&str, &str, &str, &str); 6] = [
        ("nccl_transport", "logs/gb200-cn03_decode_w1.out", "[2026-09-21 02:10:00] INFO:     Application startup complete.\ngb200-cn03:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f\n", "decode worker w1"),
        ("ucx_error", "logs/gb200-cn04_prefill_w0.out", "[1789956000.684686] [gb200-cn04:994396:0]      ib_mlx5_dv.c:452  UCX  ERROR   mlx5dv_devx_obj_create(CQ) failed on mlx5_1, syndrome 0x2aac7c: Remote I/O error\nE0921 02:00:00.719655  994396 nixl_agent.cpp:359] createBackend: backend 'UCX' encountered error during intra-agent transfer setup with status NIXL_ERR_BACKEND\n", "prefill worker w0"),
        ("nixl_error", "logs/gb200-cn05_decode_w0.out", "[2026-09-21 02:00:00] Load weight end. type=Qwen3ForCausalLM\n[2026-09-21 02:00:01] KV transfer failed: nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND\n", "decode worker w0"),
        ("etcd_unreachable", "logs/gb200-cn01_frontend_0.out", "2026-09-21T02:00:00.114Z ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to etcd server with config ClientOptions { etcd_url: [\"http://gb200-cn01:2379\"], etcd_connect_options: None, attach_lease: true }\n", "frontend 0"),
        ("nats_unreachable", "logs/gb200-cn06_agg_w0.out", "2026-09-21T02:00:00.500Z  INFO dynamo_sglang: starting worker\nTraceback (most recent call last):\n  File \"/workspace/components/src/dynamo/frontend/main.py\", line 256, in async_main\n    runtime = DistributedRuntime(loop, is_static)\nException: Failed to connect to NATS: IO error: Connection refused (os error 111). Verify NATS server is running and accessible.\n", "aggregated worker w0"),
        ("node_lost", "logs/slurm_job-18700.out", "2026-09-21 02:00:00,000 - srtctl.cli.do_sweep - INFO - Job 18700: 2 nodes\nsrun: error: Node failure on gb200-cn09\n", "decode worker w0"),
    ];
    for (id, file, text, role) in cases {
        let r = two(ok, (file, text));
        let fe = r
            .first_error
            .as_ref()
            .unwrap_or_else(|| panic!("{id}: none"));
        assert_eq!(
            r.signature_id.as_deref(),
            Some(id),
            "{id}: {}",
            r.render_text()
        );
        assert_eq!(fe.role.as_deref(), Some(role), "{id}");
        let node = if id == "node_lost" {
            "gb200-cn09".to_string()
        } else {
            file_name(file).split('_').next().unwrap().to_string()
        };
        assert_eq!(fe.node.as_deref(), Some(node.as_str()), "{id}");
        assert!(
            !r.fix.contains('{') && !r.next_step.contains('{'),
            "{id}: {} / {}",
            r.fix,
            r.next_step
        );
    }
}

/// Logs outside srt-slurm's layout keep the single-node rules (first log with the best kind).
#[test]
fn single_node_logs_are_unchanged() {
    let r = two(
        ("a.log", "2026-09-21T02:00:05.000Z Error: KV_OFFLOAD_BACKEND is required when KV_OFFLOADING=dram\n"),
        ("b.log", "2026-09-21T02:00:01.000Z Error: KV_OFFLOAD_BACKEND is required when KV_OFFLOADING=dram\n"),
    );
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(fe.file, "a.log");
    assert_eq!((fe.node.as_deref(), fe.role.as_deref()), (None, None));
    assert!(
        !r.evidence.iter().any(|e| e.contains("by time")),
        "{:?}",
        r.evidence
    );
}

/// A batch log's first node-failure line can be slurmstepd's on a surviving node (it races
/// srun's line, seen on the 4-node CI cluster of scripts/services/slurm-multinode.sh): the lost
/// node is still the one srun's `Node failure on X` line names, with that node's role.
#[test]
fn the_lost_node_is_the_one_srun_names_when_slurmstepd_speaks_first() {
    let batch = "2026-12-03 18:28:45,000 - srtctl - INFO - Job 700007: 3 nodes: mn1 mn2 mn3\n\
        slurmstepd-mn1: error: *** JOB 700007 ON mn1 CANCELLED AT 2026-12-03T18:28:47 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n\
        srun: error: Node failure on mn3\n";
    let decode = "2026-12-03 18:28:45,100 - decode worker w0 (TP8) on node mn3 (host vm, task 0 of 1)\nserving nvidia/DeepSeek-R1\n";
    let prefill = "2026-12-03 18:28:45,100 - prefill worker w0 (TP4) on node mn1 (host vm, task 0 of 1)\n\
        slurmstepd-mn1: error: *** STEP 700007.0 ON mn1 CANCELLED AT 2026-12-03T18:28:47 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n";
    let r = triage_texts(
        &[
            ("job.log", batch),
            ("logs/workers/mn3_decode_w0.out", decode),
            ("logs/workers/mn1_prefill_w0.out", prefill),
        ],
        &TriageOptions::default(),
    );
    assert_eq!(r.category, "node_lost", "{}", r.render_text());
    let fe = r.first_error.as_ref().unwrap();
    assert_eq!(
        (fe.node.as_deref(), fe.role.as_deref()),
        (Some("mn3"), Some("decode worker w0")),
        "{}",
        r.render_text()
    );
}
