//! The attempt comment built from what a run left behind (its job logs, or its stored points)
//! against a baseline that does not match it (issue 27): the comment must describe the run,
//! not the baseline; say where the error happened in triage's own words; label rows so that
//! two topologies at one concurrency are told apart; and say the same in both languages.

use std::path::{Path, PathBuf};

use servebench_compare::Stat;
use servebench_report::attempt::build_attempt;
use servebench_report::model::AttemptKind;
use servebench_report::{render, Format, Lang};
use servebench_review::attempt::{input, AttemptRequest};

/// The scenario's baseline: TP1/EP1, AgentX, conc 1/4/8/16.
const BASELINE: &str = r#"{
  "date": "2026-09-15", "image": "lmsysorg/sglang:old", "workload": "AgentX",
  "topology": {"tp": 1, "ep": 1}, "statistic": "mean",
  "points": [
    {"conc": 1, "total_tput_per_gpu": 14445.12, "output_tput_per_gpu": 159.68, "ttft_ms": 665.82, "tpot_ms": 3.57},
    {"conc": 4, "total_tput_per_gpu": 23191.29, "output_tput_per_gpu": 246.97, "ttft_ms": 595.02, "tpot_ms": 4.3}
  ]
}"#;

fn request(dir: &Path, logs: Vec<PathBuf>) -> AttemptRequest {
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, BASELINE).unwrap();
    AttemptRequest {
        baseline: baseline.display().to_string(),
        candidate: None,
        logs,
        kind: AttemptKind::Initial,
        status: None,
        change: None,
        provenance: None,
        recipe_edits: vec![],
        edit_evidence: None,
        image: Some("lmsysorg/sglang:new".into()),
        run_id: Some("run-1".into()),
        run_attempt: None,
        run_url: None,
        head: None,
        time: None,
        workload: None,
        topology: None,
        stat: Stat::Mean,
        repairs_used: Some(0),
        title_prefix: None,
        db: dir.join("none.db"),
    }
}

/// A job log as `servebench run --executor local` writes it: the job lines, the recipe's
/// `set -x` trace starting the engine (no container: the local executor), then `tail`.
fn job_log(dir: &Path, name: &str, tp: u32, conc: u32, tail: &str) -> PathBuf {
    let text = format!(
        "Runner name: 'local'\n\
         Job: benchmark (qwen3.8next-fp4-b200-sglang-agentic-mtp, agentic-coding, tp{tp} ep1 conc{conc})\n\
         servebench-job: Run bash /work/ix/benchmarks/single_node/agentic/q.sh\n\
         + source /work/ix/benchmarks/single_node/agentic/../../benchmark_lib.sh\n\
         ++ AIPERF_DIR=/workspace/utils/aiperf\n\
         + python3 -m sglang.launch_server --model-path /m --tp {tp} --port 33047\n\
         {tail}"
    );
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const ENGINE_DIES: &str = "ModuleNotFoundError: No module named 'sgl_kernel'\n\
    servebench-job: ERROR: Process died before http://127.0.0.1:33047/health became ready (exit status 1)\n";

fn comment(req: &AttemptRequest) -> String {
    let inp = input(req).expect("attempt input");
    render(&build_attempt(&inp), Format::Md, Lang::EnZh, false)
}

/// The English part and the collapsed Chinese block.
fn halves(md: &str) -> (&str, &str) {
    md.split_once("<details>").expect("a Chinese block")
}

/// The engine was launched (a `set -x` trace of `sglang.launch_server`) and died before
/// becoming ready: triage says "during engine start-up"; the comment said "before any image
/// import or server start" (no image import under the local executor). Both languages now say
/// what triage says.
#[test]
fn an_engine_start_failure_is_worded_as_triage_words_it_in_both_languages() {
    let dir = tempfile::tempdir().unwrap();
    let log = job_log(dir.path(), "c4.log", 1, 4, ENGINE_DIES);
    let triage = servebench_triage::triage_logs(&[&log]).unwrap();
    assert!(
        triage
            .evidence
            .iter()
            .any(|e| e.contains("during engine start-up")),
        "{:#?}",
        triage.evidence
    );
    let md = comment(&request(dir.path(), vec![log]));
    let (en, zh) = halves(&md);
    assert!(en.contains("during engine start-up"), "{en}");
    assert!(
        !md.contains("before any image import or server start"),
        "{md}"
    );
    assert!(!md.contains("before the server started"), "{md}");
    assert!(zh.contains("推理引擎启动过程中"), "{zh}");
    assert!(!zh.contains("服务启动之前"), "{zh}");
}

/// The run's jobs were TP8/EP1; the baseline is TP1/EP1. The header line must show the run's
/// topology, never the baseline's, in both languages.
#[test]
fn the_header_shows_the_runs_topology_not_the_baselines() {
    let dir = tempfile::tempdir().unwrap();
    let log = job_log(dir.path(), "c4.log", 8, 4, ENGINE_DIES);
    let md = comment(&request(dir.path(), vec![log]));
    let (en, zh) = halves(&md);
    let header = en.lines().nth(1).unwrap_or("");
    assert!(header.contains("TP8/EP1"), "header: {header}\n{md}");
    assert!(!header.contains("TP1/EP1"), "header: {header}\n{md}");
    // the Chinese block has no header line of its own: it must not name the baseline's
    // topology as the run's either
    assert!(!zh.contains("TP1/EP1"), "{zh}");
}

/// Two jobs at conc 4 that differ only by TP (TP4 and TP8): their rows carry the topology in
/// their labels, in both languages; the header names both topologies.
#[test]
fn two_tps_at_one_concurrency_get_labels_that_carry_the_tp() {
    let dir = tempfile::tempdir().unwrap();
    let a = job_log(dir.path(), "job-a.log", 4, 4, ENGINE_DIES);
    let b = job_log(dir.path(), "job-b.log", 8, 4, ENGINE_DIES);
    let md = comment(&request(dir.path(), vec![a, b]));
    let (en, zh) = halves(&md);
    assert!(en.contains("| TP4/EP1 · c4 |"), "{en}");
    assert!(en.contains("| TP8/EP1 · c4 |"), "{en}");
    // wherever either language names a row, the name carries its TP
    for half in [en, zh] {
        for (i, _) in half.match_indices("c4") {
            let before = &half[..i];
            assert!(
                before.ends_with("TP4/EP1 · ") || before.ends_with("TP8/EP1 · "),
                "a row named without its TP: …{}",
                &half[i.saturating_sub(40)..(i + 2).min(half.len())]
            );
        }
    }
    let header = en.lines().nth(1).unwrap_or("");
    assert!(
        header.contains("TP4/EP1") && header.contains("TP8/EP1") && !header.contains("TP1/EP1"),
        "header: {header}"
    );
}
