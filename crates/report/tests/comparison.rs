//! A `servebench_compare::Comparison` of a candidate against the scenario baseline, rendered:
//! deltas from compare, verdict notes with the gate, the unmatched baseline point listed, the
//! eval pp delta, and the other renderers (HTML, terminal, JSON) on the same document.

use serde_json::{json, Value};
use servebench_compare::{
    compare, parse_baseline, CompareOptions, EvalPoint, IdentityOverrides, Point, RunInfo,
};
use servebench_report::comparison::{build, BuildOptions};
use servebench_report::{html, markdown, terminal, Lang};

const BASELINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/scenario/baseline.json"
);

fn scenario() -> servebench_compare::Comparison {
    let text = std::fs::read_to_string(BASELINE).unwrap();
    let imp = parse_baseline(&text, "baseline.json", &IdentityOverrides::default()).unwrap();
    let base: Vec<Point> = imp
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    let base_evals: Vec<EvalPoint> = imp
        .evals
        .iter()
        .map(|r| EvalPoint::from_foreign(r).unwrap())
        .collect();
    // Candidate: the same identities on the new image; c1 30 % slower TTFT, c4 unchanged,
    // c8 7.9 % more output throughput; c16 not run.
    let mut cand_rows: Vec<Value> = Vec::new();
    for r in imp.points.iter().map(|r| r.to_value()) {
        let conc = r["conc"].as_u64().unwrap();
        if conc == 16 {
            continue;
        }
        let mut c = r.clone();
        c["image"] = json!("lmsysorg/sglang:v0.5.20-cu130");
        match conc {
            1 => c["mean_ttft"] = json!(r["mean_ttft"].as_f64().unwrap() * 1.3),
            8 => {
                c["output_tput_per_gpu"] = json!(r["output_tput_per_gpu"].as_f64().unwrap() * 1.079)
            }
            _ => {}
        }
        cand_rows.push(c);
    }
    let cand: Vec<Point> = cand_rows
        .iter()
        .map(|r| Point::from_agg_row(r).unwrap())
        .collect();
    let mut ev = imp.evals[0].to_value();
    ev["score"] = json!(0.9803);
    if ev.get("em_strict").is_some() {
        ev["em_strict"] = json!(0.9803);
    }
    ev["image"] = json!("lmsysorg/sglang:v0.5.20-cu130");
    let cand_evals = vec![EvalPoint::from_eval_row(&ev).unwrap()];
    compare(
        RunInfo {
            label: "baseline.json".into(),
            image: imp.image.clone(),
            created_at: imp.date.clone(),
            ..Default::default()
        },
        base,
        base_evals,
        RunInfo {
            run_id: Some(7),
            label: "run 7".into(),
            image: Some("lmsysorg/sglang:v0.5.20-cu130".into()),
            created_at: Some("2026-09-22T10:04:05Z".into()),
            config_key: imp.config_key.clone(),
            kind: Some("sweep".into()),
            endpoint: None,
            sources: vec![],
        },
        cand,
        cand_evals,
        &CompareOptions::default(),
    )
}

#[test]
fn comparison_report_words_the_compare_verdicts() {
    let c = scenario();
    let doc = build(&c, &BuildOptions::default());
    let md = markdown::render(&doc, Lang::EnZh);
    assert!(
        md.starts_with("**Benchmark report · Regression** · Run 7 · 2026-09-22 10:04 UTC · vs baseline.json  \n"),
        "{md}"
    );
    assert!(
        md.contains("`lmsysorg/sglang:v0.5.20-cu130` · AgentX · TP1/EP1 · Mean latency"),
        "{md}"
    );
    assert!(
        md.contains("| c1 | 14,445.12 (+0.0%) | 159.68 (+0.0%) | 865.57 (+30.0%) | 3.57 (+0.0%) |"),
        "{md}"
    );
    assert!(
        md.contains("| c8 | 39,051.57 (+0.0%) | 399.95 (+7.9%) | 858.57 (+0.0%) | 5.43 (+0.0%) |"),
        "{md}"
    );
    // The baseline point nobody matched is listed, labelled by side, with the baseline's
    // values and its reason; no claim about the candidate's request errors for it.
    assert!(
        md.contains("| c16 (baseline only) | 71,333.43 | 637.9 | 1,570.11 | 12.65 |"),
        "{md}"
    );
    assert!(
        md.contains(
            "c16 (baseline only): baseline values; the candidate has no point with this identity."
        ),
        "{md}"
    );
    assert!(
        md.contains("**Note:** c1, c4, c8: request errors unavailable."),
        "{md}"
    );
    assert!(
        md.contains("c1: regression: TTFT ms +30.0% (beyond the ±5% gate)"),
        "{md}"
    );
    assert!(
        md.contains("c4: no change (within the noise band and the ±5% gate)"),
        "{md}"
    );
    assert!(
        md.contains("c8: improvement: Output tok/s/GPU +7.9%"),
        "{md}"
    );
    assert!(
        md.contains("| gsm8k/em_strict · c16 | 98.03% (+0.08 pp) | 1,319 each |"),
        "{md}"
    );
    assert!(md.contains("**基准测试报告 · 性能回退**"), "{md}");
    insta::assert_snapshot!("comparison_md", md);

    // Terminal: same columns, colours only when asked.
    let plain = terminal::render(&doc, false);
    assert!(plain.contains("865.57 (+30.0%)"), "{plain}");
    assert!(!plain.contains('\u{1b}'), "no ANSI without a TTY");
    let coloured = terminal::render(&doc, true);
    assert!(coloured.contains("\u{1b}["), "ANSI colours on a TTY");

    // HTML: one file, the same numbers, four inline SVG charts, no external resources.
    let h = html::render(&doc, Lang::EnZh);
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert_eq!(h.matches("<svg").count(), 4, "four charts");
    assert!(h.contains("865.57"));
    assert!(h.contains("<details lang=\"zh-CN\"><summary>中文</summary>"));
    for bad in ["<script", "<link", "src=\"http", "@import", "url("] {
        assert!(!h.contains(bad), "external resource or script: {bad}");
    }

    // JSON: the document.
    let j: Value = serde_json::from_str(&servebench_report::to_json(&doc)).unwrap();
    assert_eq!(j["points"]["rows"][0]["cells"][2]["delta"]["kind"], "pct");
}

/// Issue 27: a run at TP4 and TP8 (conc 4, not valid submissions) against the scenario
/// baseline (TP1/EP1): nothing matches, so the baseline's points are listed as `baseline only`.
/// The candidate's validity remark belongs to the candidate's rows only — a baseline-only row
/// at the same concurrency was marked invalid too — and the two candidate rows, which differ
/// only by TP, carry it in their labels.
#[test]
fn an_attempt_against_another_topology_marks_no_baseline_only_row_invalid() {
    use servebench_report::attempt::{build_attempt, AttemptInput};
    use servebench_report::model::{AttemptKind, AttemptStatus, RowStatus};
    let text = std::fs::read_to_string(BASELINE).unwrap();
    let imp = parse_baseline(&text, "baseline.json", &IdentityOverrides::default()).unwrap();
    let base: Vec<Point> = imp
        .points
        .iter()
        .map(|r| Point::from_foreign(r).unwrap())
        .collect();
    let row4 = imp
        .points
        .iter()
        .map(|r| r.to_value())
        .find(|r| r["conc"] == 4)
        .unwrap();
    let cand: Vec<Point> = [4, 8]
        .iter()
        .map(|tp| {
            let mut c = row4.clone();
            c["tp"] = json!(tp);
            c["image"] = json!("lmsysorg/sglang:new");
            c["agentx_submission_valid"] = json!(false);
            c["agentx_submission_invalid_reasons"] = json!(["unsafe_override"]);
            Point::from_agg_row(&c).unwrap()
        })
        .collect();
    let c = compare(
        RunInfo {
            label: "baseline.json".into(),
            ..Default::default()
        },
        base,
        vec![],
        RunInfo {
            run_id: Some(3),
            label: "run 3".into(),
            ..Default::default()
        },
        cand,
        vec![],
        &CompareOptions::default(),
    );
    assert_eq!(c.unmatched_baseline.len(), 4, "nothing matched");
    let inp = AttemptInput {
        title_prefix: None,
        kind: AttemptKind::Initial,
        status: AttemptStatus::Failed,
        run: None,
        time: None,
        image: "lmsysorg/sglang:new".into(),
        head: None,
        workload: "AgentX".into(),
        topology: "TP4/EP1, TP8/EP1".into(),
        statistic: "mean".into(),
        change: None,
        baseline: None,
        points: vec![],
        evals: vec![],
        failure: None,
        next: None,
        columns: vec![],
        comparison: Some(c),
        failed_jobs: vec![],
    };
    let doc = build_attempt(&inp);
    let rows = &doc.points.rows;
    let invalid = |r: &servebench_report::model::Row| {
        r.remarks
            .iter()
            .any(|m| m.en.contains("not a valid InferenceX submission"))
            || r.first_error
                .as_deref()
                .is_some_and(|e| e.contains("valid"))
    };
    let baseline_only: Vec<_> = rows
        .iter()
        .filter(|r| r.status == RowStatus::BaselineOnly)
        .collect();
    assert_eq!(baseline_only.len(), 4);
    for r in &baseline_only {
        assert!(
            !invalid(r),
            "baseline-only row {} marked invalid: {:?}",
            r.name(),
            r.remarks
        );
    }
    let cand: Vec<_> = rows
        .iter()
        .filter(|r| r.status != RowStatus::BaselineOnly)
        .collect();
    assert_eq!(cand.len(), 2);
    assert!(cand.iter().all(|r| invalid(r)), "{cand:?}");
    let names: Vec<String> = cand.iter().map(|r| r.name()).collect();
    assert_ne!(names[0], names[1], "two TPs at one conc labelled alike");
    assert!(
        names
            .iter()
            .any(|n| n.contains("TP4/EP1") && n.contains("c4")),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.contains("TP8/EP1") && n.contains("c4")),
        "{names:?}"
    );
    // the notes say the same in both languages: no note puts a baseline-only row among the
    // invalid ones
    let md = markdown::render(&doc, Lang::EnZh);
    for line in md
        .lines()
        .filter(|l| l.contains("not a valid InferenceX submission"))
    {
        assert!(!line.contains("baseline only"), "{line}");
    }
    for line in md
        .lines()
        .filter(|l| l.contains("不是有效的 InferenceX 提交结果"))
    {
        assert!(!line.contains("TP1/EP1"), "{line}");
    }
}
