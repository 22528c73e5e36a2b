//! The PRODUCT.md image-bump scenario rendered by the report crate: the frozen baseline body
//! (equal cell for cell to the PRODUCT.md table), the failed initial attempt, a passing attempt
//! with deltas, and an eval row with a pp delta. Inputs come from `../shared/data/scenario/`.

use servebench_report::attempt::*;
use servebench_report::markdown::{self, Lang};
use servebench_report::model::*;

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/scenario");
const PRODUCT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/docs/PRODUCT.md"
);

fn baseline() -> BaselineTable {
    let p = format!("{SCENARIO}/baseline.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn images() -> ChangeInput {
    #[derive(serde::Deserialize)]
    struct Images {
        old: ImageInfo,
        new: ImageInfo,
    }
    let p = format!("{SCENARIO}/images.json");
    let i: Images = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    ChangeInput {
        old: i.old,
        new: i.new,
        recipe_edits: vec![RecipeEdit {
            file: "qwen3.8next_fp4_b200_sglang_mtp.sh".into(),
            old_flag: "--cuda-graph-max-bs".into(),
            new_flag: Some("--cuda-graph-max-bs-decode".into()),
            old_value: Some("64".into()),
            new_value: Some("64".into()),
            reason: Some("SGLang v0.5.20 removed the deprecated alias".into()),
            evidence: Some("https://github.com/sgl-project/sglang/pull/38375".into()),
            summary: None,
        }],
        digests_resolved: true,
    }
}

/// Cells of the first Markdown table after `marker` in `text`: header row, then body rows.
fn table_after(text: &str, marker: &str) -> Vec<Vec<String>> {
    let start = text.find(marker).expect("marker");
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.contains("---"))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn baseline_body_equals_product_table_cell_for_cell() {
    let b = baseline();
    let doc = build_baseline_body(&b, Some("lmsysorg/sglang:v0.5.20-cu130"), None);
    let md = markdown::render(&doc, Lang::EnZh);
    let product = std::fs::read_to_string(PRODUCT).unwrap();
    let want = table_after(&product, "Its baseline (2026-09-15");
    let got = table_after(&md, "**Baseline:**");
    assert_eq!(got.len(), want.len(), "row count\n{md}");
    // Headers: the comment adds the direction arrows; otherwise equal.
    let strip = |h: &str| h.trim_end_matches(['↑', '↓']).trim().to_string();
    let got_h: Vec<String> = got[0].iter().map(|h| strip(h)).collect();
    assert_eq!(got_h, want[0]);
    assert_eq!(got[0][1], "Total tok/s/GPU ↑");
    assert_eq!(got[0][3], "TTFT ms ↓");
    for (g, w) in got[1..].iter().zip(&want[1..]) {
        assert_eq!(g, w, "row differs");
    }
    // The cells PRODUCT.md is known for.
    for cell in ["14,445.12", "4.3", "1,570.11", "637.9", "71,333.43"] {
        assert!(md.contains(&format!("| {cell} |")), "{cell} missing\n{md}");
    }
    // The alignment row right-aligns every column.
    assert!(md.contains("| ---: | ---: | ---: | ---: | ---: |"));
    // GSM8K row: 97.95 % over 1,319 samples.
    assert!(
        md.contains("| gsm8k/em_strict · c16 | 97.95% | 1,319 |"),
        "{md}"
    );
    insta::assert_snapshot!("baseline_body", md);
}

fn failed_attempt() -> AttemptInput {
    AttemptInput {
        title_prefix: None,
        kind: AttemptKind::Initial,
        status: AttemptStatus::Failed,
        run: Some(RunRef {
            id: "18000000001".into(),
            attempt: Some(1),
            url: None,
        }),
        time: Some("2026-09-21 01:15 UTC".into()),
        image: "lmsysorg/sglang:v0.5.20-cu130".into(),
        head: None,
        workload: "AgentX".into(),
        topology: "TP1/EP1".into(),
        statistic: "mean".into(),
        change: Some(images()),
        baseline: Some(baseline()),
        points: vec![AttemptPoint {
            conc: 1,
            status: RowStatus::Failed,
            has_result: false,
            request_errors: None,
            first_error: None,
            values: BaselinePoint::default(),
            topology: None,
        }],
        evals: vec![AttemptEval {
            task: "gsm8k".into(),
            metric: "em_strict".into(),
            conc: 16,
            score: None,
            samples: None,
            stderr: None,
            passed: false,
        }],
        failure: Some(FailureSummary {
            first_error: vec![
                "Error: The following required environment variables are not set:".into(),
                "  - MODEL_PATH".into(),
            ],
            log_file: Some("agentic-c1.log".into()),
            line: Some(10),
            layer: "launcher".into(),
            not_layers: vec!["recipe".into(), "image".into(), "engine".into()],
            seconds_after_start: Some(2.819),
            stage: Some(servebench_contracts::JobStage::BeforeImportOrServerStart),
            node: None,
            role: None,
            class: Some("required environment variable not set (F3)".into()),
            deterministic: Some(true),
            same_on: vec!["b200-nscale-slurm_00".into(), "b200-nscale-slurm_01".into()],
            repairable_in_recipe: Some(false),
            outcome: Some("readiness-blocked".into()),
            phase: Some("targeted".into()),
            repairs_used: Some(0),
            max_repairs: Some(5),
        }),
        next: Some(Bilingual {
            en: vec![
                Span::Text("Fix the launcher ".into()),
                Span::Code("runners/launch_b200-nscale-slurm.sh".into()),
                Span::Text(": fall back to the staged weights path before ".into()),
                Span::Code("check_env_vars MODEL_PATH".into()),
                Span::Text(", then rerun the attempt.".into()),
            ],
            zh: vec![
                Span::Text("修复启动器 ".into()),
                Span::Code("runners/launch_b200-nscale-slurm.sh".into()),
                Span::Text("：在 ".into()),
                Span::Code("check_env_vars MODEL_PATH".into()),
                Span::Text(" 之前回退到预置的权重路径，然后重新运行本次尝试。".into()),
            ],
        }),
        columns: vec![],
        comparison: None,
        failed_jobs: vec![],
    }
}

#[test]
fn failed_initial_attempt_has_every_element() {
    let doc = build_attempt(&failed_attempt());
    let md = markdown::render(&doc, Lang::EnZh);
    let first = md.lines().next().unwrap();
    assert_eq!(
        first,
        "**Initial attempt · Failed** · Run 18000000001 / attempt 1 · 2026-09-21 01:15 UTC  "
    );
    for want in [
        "`lmsysorg/sglang:v0.5.20-cu130` · AgentX · TP1/EP1 · Mean latency",
        "**Change:** Image `lmsysorg/sglang:qwen38flashnext`",
        "sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f",
        "linux/amd64 `sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4`",
        "`--cuda-graph-max-bs 64` → `--cuda-graph-max-bs-decode 64`",
        "| Concurrency | Output tok/s/GPU ↑ | TTFT ms ↓ | TPOT ms ↓ |",
        "| 1 | N/A | N/A | N/A |",
        "**Note:** All rows: failed.",
        "**Note:** All rows: request errors unavailable.",
        "**Note:** All rows: Δ N/A: no matched baseline.",
        "| gsm8k/em_strict · c16 | N/A | 1,319/N/A (old/new) |",
        "**Note:** gsm8k/em_strict · c16: failed, no score; Δ N/A: point failed.",
        "**Next:** Fix the launcher",
        "`Error: The following required environment variables are not set:` / `- MODEL_PATH`",
        "Raised by the launcher 2.8 s after the job log started, before any image import or server start: not the recipe, image or engine.",
        "Deterministic: the same first error on 2 runners",
        "Outcome `readiness-blocked` · phase `targeted` · repairs 0/5.",
        "<details><summary>中文</summary>",
        "**首次尝试 · 失败**",
        "所有行：失败。",
        "**下一步：** 修复启动器",
        "由启动器报出，发生在镜像导入和服务启动之前，问题不在配方、镜像或推理引擎",
        "</details>",
    ] {
        assert!(md.contains(want), "missing {want:?}\n{md}");
    }
    // Numbers of the tables are not repeated in the Chinese block.
    let zh = &md[md.find("<details>").unwrap()..];
    for n in ["1,319", "14,445.12", "97.95"] {
        assert!(!zh.contains(n), "{n} repeated in Chinese");
    }
    insta::assert_snapshot!("attempt_failed", md);
}

fn passing_attempt() -> AttemptInput {
    let mut a = failed_attempt();
    a.status = AttemptStatus::Passed;
    a.kind = AttemptKind::Repair { n: 1, max: 5 };
    a.failure = None;
    a.next = Some(Bilingual {
        en: vec![Span::Text(
            "Append the change-log entry and start the final full sweep.".into(),
        )],
        zh: vec![Span::Text(
            "追加变更日志条目，然后启动最终完整扫描。".into(),
        )],
    });
    // Candidate numbers (display units), chosen around the baseline.
    let vals = [
        (1, 15000.0, 166.1, 610.2, 3.41),
        (4, 22800.5, 240.3, 640.0, 4.3),
        (8, 40100.0, 380.0, 850.0, 5.5),
        (16, 70000.0, 600.0, 1700.0, 13.0),
    ];
    a.points = vals
        .iter()
        .map(|&(conc, tot, out, ttft, tpot)| AttemptPoint {
            conc,
            status: RowStatus::Passed,
            has_result: true,
            request_errors: Some(0),
            first_error: None,
            values: BaselinePoint {
                conc,
                total_tput_per_gpu: Some(tot),
                output_tput_per_gpu: Some(out),
                ttft_ms: Some(ttft),
                tpot_ms: Some(tpot),
                ..Default::default()
            },
            topology: None,
        })
        .collect();
    a.evals = vec![AttemptEval {
        task: "gsm8k".into(),
        metric: "em_strict".into(),
        conc: 16,
        score: Some(0.9803),
        samples: Some(1319),
        stderr: None,
        passed: true,
    }];
    a
}

#[test]
fn passing_attempt_has_deltas_against_the_baseline() {
    let doc = build_attempt(&passing_attempt());
    let md = markdown::render(&doc, Lang::EnZh);
    // (new/old − 1) × 100, one decimal, signed.
    for (conc, out, ttft, tpot) in [
        (
            1u32,
            (166.1f64, 159.68f64),
            (610.2f64, 665.82f64),
            (3.41f64, 3.57f64),
        ),
        (16, (600.0, 637.9), (1700.0, 1570.11), (13.0, 12.65)),
    ] {
        let d = |n: f64, o: f64| format!("{:+.1}%", (n / o - 1.0) * 100.0);
        let f = servebench_report::format::fmt_value;
        let row = format!(
            "| {conc} | {} ({}) | {} ({}) | {} ({}) |",
            f(out.0),
            d(out.0, out.1),
            f(ttft.0),
            d(ttft.0, ttft.1),
            f(tpot.0),
            d(tpot.0, tpot.1)
        );
        assert!(md.contains(&row), "missing {row}\n{md}");
    }
    assert!(
        md.contains("| 1 | 166.1 (+4.0%) | 610.2 (-8.4%) | 3.41 (-4.5%) |"),
        "{md}"
    );
    // An unchanged value is +0.0%, never -0.0%.
    assert!(md.contains("| 4.3 (+0.0%) |"), "{md}");
    assert!(md.starts_with("**Repair 1/5 · Passed**"));
    assert!(
        !md.contains("**Note:**"),
        "no notes when everything passed: {md}"
    );
    insta::assert_snapshot!("attempt_passed", md);
}

#[test]
fn eval_row_with_a_pp_delta() {
    let doc = build_attempt(&passing_attempt());
    let md = markdown::render(&doc, Lang::En);
    assert!(
        md.contains("| gsm8k/em_strict · c16 | 98.03% (+0.08 pp) | 1,319 each |"),
        "{md}"
    );
    assert!(!md.contains("<details>"), "en only");
    // Different sample counts: no pp delta, and the reason.
    let mut a = passing_attempt();
    a.evals[0].samples = Some(1000);
    let md = markdown::render(&build_attempt(&a), Lang::En);
    assert!(
        md.contains("| gsm8k/em_strict · c16 | 98.03% | 1,319/1,000 (old/new) |"),
        "{md}"
    );
    assert!(
        md.contains("**Note:** gsm8k/em_strict · c16: Δ N/A: sample counts differ."),
        "{md}"
    );
}

/// A run whose eval job crashed while its throughput points stored rows (new-user F18): the
/// attempt names the failed job and its first error in both languages, and the eval row says
/// its job failed instead of "candidate value missing" / "point failed".
#[test]
fn a_crashed_eval_job_is_named_with_its_first_error() {
    let mut a = passing_attempt();
    a.status = AttemptStatus::Failed;
    a.evals[0].score = None;
    a.evals[0].samples = None;
    a.evals[0].passed = false;
    let before = markdown::render(&build_attempt(&a), Lang::EnZh);
    assert!(!before.contains("Failed job"), "{before}");
    let err = "error: cannot read recorded GSM8K solutions ../shared/data/gsm8k/example_model_solutions.jsonl";
    a.failed_jobs = vec![FailedJob {
        label: "agentic · TP1/EP1 · conc 16 · eval gsm8k".into(),
        conc: 16,
        eval_task: Some("gsm8k".into()),
        error: err.into(),
        log: Some("run1/points/x_conc16_eval-gsm8k/attempt-1/job.log".into()),
        node_logs: vec![],
    }];
    let md = markdown::render(&build_attempt(&a), Lang::EnZh);
    assert!(
        md.contains(&format!(
            "**Failed job:** the gsm8k eval job (agentic · TP1/EP1 · conc 16 · eval gsm8k) failed: `{err}`; it produced no score"
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "gsm8k/em_strict · c16: failed, no score; Δ N/A: its job failed: {err}."
        )),
        "{md}"
    );
    assert!(md.contains("**失败的作业：**gsm8k 评估作业"), "{md}");
    assert!(
        md.contains("（日志：run1/points/x_conc16_eval-gsm8k/attempt-1/job.log）"),
        "{md}"
    );
    assert!(md.contains("产生该值的作业失败"), "{md}");
    assert!(!md.contains("candidate value missing"), "{md}");
    // a failed throughput job is named too (no eval row to mark)
    a.failed_jobs[0].eval_task = None;
    a.failed_jobs[0].label = "agentic · TP1/EP1 · conc 4".into();
    let md = markdown::render(&build_attempt(&a), Lang::En);
    assert!(
        md.contains(&format!(
            "**Failed job:** the job agentic · TP1/EP1 · conc 4 failed: `{err}`; it stored no row"
        )),
        "{md}"
    );
    // a failed multinode job lists its per-node, per-role logs beside its job log
    a.failed_jobs[0].label = "8k1k · P1×TP4/EP4/DPA + D1×TP8/EP8/DPA · conc 4".into();
    a.failed_jobs[0].log = Some("run2/points/p/attempt-1/job.log".into());
    a.failed_jobs[0].node_logs = vec![
        "run2/points/p/attempt-1/logs/workers/mn1_prefill_w0.out".into(),
        "run2/points/p/attempt-1/logs/workers/mn2_decode_w0.out".into(),
    ];
    let md = markdown::render(&build_attempt(&a), Lang::EnZh);
    assert!(
        md.contains(
            "for it (log: run2/points/p/attempt-1/job.log; per-node logs: \
             run2/points/p/attempt-1/logs/workers/mn1_prefill_w0.out, \
             run2/points/p/attempt-1/logs/workers/mn2_decode_w0.out)."
        ),
        "{md}"
    );
    assert!(
        md.contains("（日志：run2/points/p/attempt-1/job.log；各节点日志：run2/points/p/attempt-1/logs/workers/mn1_prefill_w0.out"),
        "{md}"
    );
}

#[test]
fn mixed_rows_are_listed_not_collapsed() {
    let mut a = passing_attempt();
    a.status = AttemptStatus::Failed;
    a.points[2].status = RowStatus::Failed;
    a.points[2].request_errors = Some(12);
    a.points[2].first_error = Some("ERROR: Server process 4242 died during benchmark".into());
    let md = markdown::render(&build_attempt(&a), Lang::En);
    assert!(md.contains("| 8 | N/A | N/A | N/A |"), "{md}");
    assert!(
        md.contains("**Note:** c8: failed — `ERROR: Server process 4242 died during benchmark`."),
        "{md}"
    );
    assert!(md.contains("**Note:** c8: 12 request errors."), "{md}");
    assert!(md.contains("**Note:** c8: Δ N/A: point failed."), "{md}");
}

#[test]
fn json_round_trips() {
    let doc = build_attempt(&failed_attempt());
    let j = servebench_report::to_json(&doc);
    let back: Document = serde_json::from_str(&j).unwrap();
    assert_eq!(back, doc);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["points"]["rows"][0]["cells"][0]["delta"]["kind"], "na");
    assert_eq!(
        v["points"]["rows"][0]["cells"][0]["delta"]["value"]["reason"],
        "no_matched_baseline"
    );
}
