//! The Markdown comment in the bilingual layout of AUTOMATION.md §5.6.
//!
//! English first; header fields joined by ` · `; line breaks inside a block are two trailing
//! spaces; tables with `↑`/`↓` headers and right-aligned numeric columns (`---:`); cells
//! `value (±x.x%)`; `**Note:**` lines under a table; `**Next:**`; then, with [`Lang::EnZh`],
//! `<details><summary>中文</summary>…</details>` with natural Chinese and no table numbers.
//!
//! One deliberate layout detail: a blank line separates a table from the `**Note:**` lines after
//! it. GitHub-flavoured Markdown continues a table through the next non-blank line (a `**Note:**`
//! line glued to the table would render as a one-cell table row), so the blank line is what
//! makes the §5.6 layout render as intended.

use crate::format::{fmt_count, fmt_pct_delta, fmt_pp_delta, fmt_score_pct, fmt_value};
use crate::model::{
    Bilingual, Cell, Context, Delta, Document, EvalLine, FailureSummary, Heading, NaReason, RunRef,
    Span,
};
use crate::notes::{self, Note};
use crate::words;

/// Which languages to write.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub enum Lang {
    /// English only.
    En,
    /// English plus the collapsed Chinese block (the default).
    #[default]
    EnZh,
}

impl std::str::FromStr for Lang {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "en" => Ok(Lang::En),
            "en+zh" | "en,zh" | "zh" => Ok(Lang::EnZh),
            _ => Err(format!("unknown language {s:?}: expected en or en+zh")),
        }
    }
}

/// Line break inside a Markdown block: two trailing spaces.
const BR: &str = "  \n";

/// Renders inline spans as Markdown. `in_table` escapes `|`.
pub fn rich_md(spans: &[Span], in_table: bool) -> String {
    let mut s = String::new();
    for sp in spans {
        match sp {
            Span::Text(x) => {
                if in_table {
                    s.push_str(&x.replace('|', "\\|"))
                } else {
                    s.push_str(x)
                }
            }
            Span::Bold(x) => {
                s.push_str("**");
                s.push_str(x);
                s.push_str("**");
            }
            Span::Code(x) => s.push_str(&code_md(x)),
            Span::Link { text, url } => s.push_str(&format!("[{text}]({url})")),
        }
    }
    s
}

/// Inline code that survives backticks inside the content.
fn code_md(x: &str) -> String {
    let mut ticks = 1;
    while x.contains(&"`".repeat(ticks)) {
        ticks += 1;
    }
    let fence = "`".repeat(ticks);
    if ticks > 1 || x.starts_with('`') || x.ends_with('`') {
        format!("{fence} {x} {fence}")
    } else {
        format!("{fence}{x}{fence}")
    }
}

/// A Markdown table: first column left-aligned label unless `numeric_first`, all other
/// columns right-aligned (`---:`).
pub fn table_md(headers: &[String], numeric_first: bool, rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    s.push_str("| ");
    s.push_str(&headers.join(" | "));
    s.push_str(" |\n|");
    for i in 0..headers.len() {
        s.push_str(if i == 0 && !numeric_first {
            " --- |"
        } else {
            " ---: |"
        });
    }
    s.push('\n');
    for r in rows {
        s.push_str("| ");
        s.push_str(&r.join(" | "));
        s.push_str(" |\n");
    }
    s
}

/// `value`, or `value ± sd` for the mean of repeats.
pub fn value_text(v: f64, sd: Option<f64>) -> String {
    match sd {
        Some(sd) if sd.is_finite() => format!("{} ± {}", fmt_value(v), fmt_value(sd)),
        _ => fmt_value(v),
    }
}

/// The value part of a point-table cell: `value`, `value ± sd` (repeats), `value (modelled)`
/// (the simulator's energy model); without a value `telemetry missing` for an energy cell
/// whose GPU power was not measured, else `N/A`.
pub fn shown_value(c: &Cell) -> String {
    match c.value {
        Some(v) if v.is_finite() && c.modelled => format!("{} (modelled)", value_text(v, c.sd)),
        Some(v) if v.is_finite() => value_text(v, c.sd),
        _ if matches!(c.delta, Delta::Na(NaReason::TelemetryMissing(_))) => {
            "telemetry missing".to_string()
        }
        _ => "N/A".to_string(),
    }
}

/// The text of a point-table cell: [`shown_value`], then the delta (`value (±x.x%)`).
pub fn cell_text(c: &Cell) -> String {
    let v = match c.value {
        Some(v) if v.is_finite() => shown_value(c),
        _ => return shown_value(c),
    };
    match &c.delta {
        Delta::Pct(d) => format!("{v} ({})", fmt_pct_delta(*d)),
        Delta::Pp(d) => format!("{v} ({})", fmt_pp_delta(*d)),
        // an invalid candidate's own value is shown, never a delta drawn from it
        Delta::Na(NaReason::CandidateInvalid(_)) => format!("{v} (Δ N/A)"),
        Delta::None | Delta::Na(_) => v,
    }
}

/// Score cell of an eval row: candidate score (with pp delta) in a comparison, baseline score in
/// a baseline body.
pub fn eval_score_text(e: &EvalLine) -> String {
    let side = if e.candidate.is_some() {
        e.candidate.as_ref()
    } else {
        e.baseline.as_ref()
    };
    let Some(score) = side.and_then(|s| s.score) else {
        return "N/A".into();
    };
    let v = fmt_score_pct(score);
    match (&e.delta, e.candidate.is_some()) {
        (Delta::Pp(d), true) => format!("{v} ({})", fmt_pp_delta(*d)),
        (Delta::Pct(d), true) => format!("{v} ({})", fmt_pct_delta(*d)),
        _ => v,
    }
}

/// Samples cell: `1,319` (one side), `1,319 each` (equal), `1,319/N/A (old/new)` otherwise.
pub fn eval_samples_text(e: &EvalLine) -> String {
    let n = |s: Option<u64>| s.map(fmt_count).unwrap_or_else(|| "N/A".into());
    match (&e.baseline, &e.candidate) {
        (Some(b), None) => n(b.samples),
        (None, Some(c)) => n(c.samples),
        (None, None) => "N/A".into(),
        (Some(b), Some(c)) => match (b.samples, c.samples) {
            (Some(x), Some(y)) if x == y => format!("{} each", fmt_count(x)),
            (x, y) => format!("{}/{} (old/new)", n(x), n(y)),
        },
    }
}

fn run_md(run: &RunRef) -> String {
    let text = match run.attempt {
        Some(a) => format!("Run {} / attempt {a}", run.id),
        None => format!("Run {}", run.id),
    };
    match &run.url {
        Some(u) => format!("[{text}]({u})"),
        None => text,
    }
}

fn run_zh(run: &RunRef) -> String {
    let text = match run.attempt {
        Some(a) => format!("运行 {} / 第 {a} 次", run.id),
        None => format!("运行 {}", run.id),
    };
    match &run.url {
        Some(u) => format!("[{text}]({u})"),
        None => text,
    }
}

/// Context fields (`image`, `head`, workload, topology, statistic, extras), English.
fn context_fields(c: &Context, with_image: bool, zh: bool) -> Vec<String> {
    let mut f = Vec::new();
    if with_image {
        if let Some(i) = &c.image {
            f.push(code_md(i));
        }
        if let Some(h) = &c.head {
            f.push(code_md(&h.chars().take(12).collect::<String>()));
        }
    }
    f.extend(c.workload.clone());
    f.extend(c.topology.clone());
    if let Some(s) = &c.statistic {
        f.push(if zh {
            words::statistic_zh(s)
        } else {
            words::statistic_en(s)
        });
    }
    f.extend(c.extra.iter().cloned());
    f
}

/// Lines of a block joined with two-space line breaks, no trailing break.
fn block(lines: &[String]) -> String {
    lines.join(BR)
}

fn note_lines(notes: &[Note], zh: bool) -> Vec<String> {
    notes
        .iter()
        .map(|n| {
            if zh {
                format!("**说明：** {}", rich_md(&n.zh, false))
            } else {
                format!("**Note:** {}", rich_md(&n.en, false))
            }
        })
        .collect()
}

/// Whether request-error remarks belong in the notes (not in a baseline body).
fn with_error_notes(doc: &Document) -> bool {
    !matches!(doc.heading, Heading::Baseline { .. })
}

fn eval_expected(doc: &Document) -> bool {
    !matches!(doc.heading, Heading::Run { .. })
}

/// Renders the document as the Markdown comment.
pub fn render(doc: &Document, lang: Lang) -> String {
    let mut out: Vec<String> = Vec::new();
    // Header block.
    let mut head: Vec<String> = Vec::new();
    match &doc.heading {
        Heading::Baseline {
            engine,
            old_image,
            new_image,
            date,
            sources,
        } => {
            if let Some(new) = new_image {
                let eng = engine
                    .as_deref()
                    .map(|e| format!("{e} "))
                    .unwrap_or_default();
                head.push(format!(
                    "**Goal:** Update {eng}image from {} to {}.",
                    code_md(old_image),
                    code_md(new)
                ));
            }
            head.push(format!("**Baseline:** {date} · {}", code_md(old_image)));
            let mut f = context_fields(&doc.context, false, false);
            if !sources.is_empty() {
                let links: Vec<String> = sources
                    .iter()
                    .map(|(name, url)| format!("[{name}]({url})"))
                    .collect();
                f.push(format!("Sources: {}", links.join(", ")));
            }
            if !f.is_empty() {
                head.push(f.join(" · "));
            }
        }
        Heading::Attempt {
            kind,
            status,
            run,
            time,
        } => {
            let mut f = vec![format!(
                "**{} · {}**",
                words::attempt_kind_en(*kind),
                words::attempt_status_en(*status)
            )];
            f.extend(run.as_ref().map(run_md));
            f.extend(time.clone());
            head.push(f.join(" · "));
            let c = context_fields(&doc.context, true, false);
            if !c.is_empty() {
                head.push(c.join(" · "));
            }
        }
        Heading::Run {
            run,
            time,
            verdict,
            baseline,
        } => {
            let title = match verdict {
                Some(v) => format!("**Benchmark report · {}**", rich_md(&v.en, false)),
                None => "**Benchmark report**".to_string(),
            };
            let mut f = vec![title, run_md(run)];
            f.extend(time.clone());
            if let Some(b) = baseline {
                f.push(format!("vs {b}"));
            }
            head.push(f.join(" · "));
            let c = context_fields(&doc.context, true, false);
            if !c.is_empty() {
                head.push(c.join(" · "));
            }
        }
    }
    if let Some(ch) = &doc.change {
        head.push(format!("**Change:** {}", rich_md(&ch.en, false)));
    }
    out.push(block(&head));

    // Point table and its notes.
    if !doc.points.columns.is_empty() {
        let labelled = doc.points.rows.iter().any(|r| r.label.is_some());
        let mut headers = vec![if labelled { "Point" } else { "Concurrency" }.to_string()];
        headers.extend(doc.points.columns.iter().map(|m| m.header()));
        let rows: Vec<Vec<String>> = doc
            .points
            .rows
            .iter()
            .map(|r| {
                let mut v = vec![if labelled {
                    r.name()
                } else {
                    r.conc.to_string()
                }];
                v.extend(r.cells.iter().map(cell_text));
                v
            })
            .collect();
        out.push(table_md(&headers, !labelled, &rows).trim_end().to_string());
        let notes = notes::point_notes(&doc.points, with_error_notes(doc));
        if !notes.is_empty() {
            out.push(block(&note_lines(&notes, false)));
        }
    }

    // Eval table and its notes.
    if !doc.evals.is_empty() {
        let headers = vec![
            "Eval".to_string(),
            "Score ↑".to_string(),
            "Samples".to_string(),
        ];
        let rows: Vec<Vec<String>> = doc
            .evals
            .iter()
            .map(|e| vec![e.label(), eval_score_text(e), eval_samples_text(e)])
            .collect();
        out.push(table_md(&headers, false, &rows).trim_end().to_string());
        let notes = notes::eval_notes(&doc.evals);
        if !notes.is_empty() {
            out.push(block(&note_lines(&notes, false)));
        }
    } else if eval_expected(doc) {
        out.push("**Eval:** N/A".into());
    }

    // Findings, failure, next.
    let mut tail: Vec<String> = doc.findings.iter().map(|f| rich_md(&f.en, false)).collect();
    if let Some(fl) = &doc.failure {
        tail.push(format!("**Finding:** {}", failure_en(fl)));
    }
    if let Some(n) = &doc.next {
        tail.push(format!("**Next:** {}", rich_md(&n.en, false)));
    }
    if !tail.is_empty() {
        out.push(block(&tail));
    }

    if lang == Lang::EnZh {
        out.push(chinese_block(doc));
    }
    let mut s = out.join("\n\n");
    s.push('\n');
    s
}

/// English failure paragraph: first error quoted, layer, determinism with evidence, budget,
/// outcome.
pub fn failure_en(f: &FailureSummary) -> String {
    let mut s = String::from("First error in the job log");
    match (&f.log_file, f.line) {
        (Some(file), Some(line)) => s.push_str(&format!(" ({}, line {line})", code_md(file))),
        (Some(file), None) => s.push_str(&format!(" ({})", code_md(file))),
        _ => {}
    }
    match (&f.node, &f.role) {
        (Some(n), Some(r)) => s.push_str(&format!(" on node {} ({r})", code_md(n))),
        (Some(n), None) => s.push_str(&format!(" on node {}", code_md(n))),
        (None, Some(r)) => s.push_str(&format!(" in the {r}")),
        (None, None) => {}
    }
    s.push_str(": ");
    let quoted: Vec<String> = f.first_error.iter().map(|l| code_md(l.trim())).collect();
    s.push_str(&quoted.join(" / "));
    s.push_str(". ");
    s.push_str(&format!("Raised by the {}", f.layer));
    if let Some(sec) = f.seconds_after_start {
        s.push_str(&format!(
            " {} s after the job log started",
            crate::format::fmt_value_dp(sec, 1)
        ));
    }
    if let Some(words) = f.stage.and_then(|st| st.en()) {
        s.push_str(", ");
        s.push_str(words);
    }
    if !f.not_layers.is_empty() {
        s.push_str(&format!(": not the {}", join_or(&f.not_layers)));
    }
    s.push_str(". ");
    if let Some(c) = &f.class {
        s.push_str(&format!("Class: {c}. "));
    }
    match f.deterministic {
        Some(true) => {
            s.push_str("Deterministic");
            if f.same_on.len() >= 2 {
                let names: Vec<String> = f.same_on.iter().map(|n| code_md(n)).collect();
                s.push_str(&format!(
                    ": the same first error on {} runners ({})",
                    f.same_on.len(),
                    names.join(", ")
                ));
            }
            s.push_str(", so no infrastructure retry");
            if f.repairable_in_recipe == Some(false) {
                s.push_str("; no repair is possible inside the recipe");
            }
            s.push_str(". ");
        }
        Some(false) => {
            s.push_str("Transient");
            if !f.same_on.is_empty() {
                let names: Vec<String> = f.same_on.iter().map(|n| code_md(n)).collect();
                s.push_str(&format!(" (seen on {})", names.join(", ")));
            }
            s.push_str(": infrastructure retry on the same head, no repair consumed. ");
        }
        None => s.push_str("Deterministic or transient: not proven yet; inspect before retrying. "),
    }
    let mut tail = Vec::new();
    if let Some(o) = &f.outcome {
        tail.push(format!("Outcome {}", code_md(o)));
    }
    if let Some(p) = &f.phase {
        tail.push(format!("phase {}", code_md(p)));
    }
    match (f.repairs_used, f.max_repairs) {
        (Some(u), Some(m)) => tail.push(format!("repairs {u}/{m}")),
        (Some(u), None) => tail.push(format!("repairs {u}")),
        _ => {}
    }
    if !tail.is_empty() {
        s.push_str(&tail.join(" · "));
        s.push('.');
    }
    s.trim_end().to_string()
}

/// Chinese failure paragraph (the first error is quoted again: it is evidence, not a table number).
pub fn failure_zh(f: &FailureSummary) -> String {
    let quoted: Vec<String> = f.first_error.iter().map(|l| code_md(l.trim())).collect();
    let origin = match (&f.node, &f.role) {
        (Some(n), Some(r)) => format!("（节点 {}，{}）", code_md(n), words::role_zh(r)),
        (Some(n), None) => format!("（节点 {}）", code_md(n)),
        (None, Some(r)) => format!("（{}）", words::role_zh(r)),
        (None, None) => String::new(),
    };
    let mut s = format!("作业日志中的第一个错误{origin}是 {}，", quoted.join(" / "));
    s.push_str(&format!("由{}报出", words::layer_zh(&f.layer)));
    if let Some(words) = f.stage.and_then(words::job_stage_zh) {
        s.push('，');
        s.push_str(words);
    }
    if !f.not_layers.is_empty() {
        let nl: Vec<String> = f.not_layers.iter().map(|l| words::layer_zh(l)).collect();
        let list = match nl.len() {
            1 => nl[0].clone(),
            n => format!("{}或{}", nl[..n - 1].join("、"), nl[n - 1]),
        };
        s.push_str(&format!("，问题不在{list}"));
    }
    s.push('。');
    match f.deterministic {
        Some(true) => {
            if f.same_on.len() >= 2 {
                s.push_str("多个运行器上出现了相同的第一个错误，");
            }
            s.push_str("属于确定性错误，不做基础设施重试");
            if f.repairable_in_recipe == Some(false) {
                s.push_str("，也无法在配方内修复");
            }
            s.push('。');
        }
        Some(false) => s.push_str("属于瞬时错误：在同一提交上做基础设施重试，不消耗修复次数。"),
        None => s.push_str("尚无法确定是确定性错误还是瞬时错误，重试前需要先排查。"),
    }
    let mut tail = Vec::new();
    if let Some(o) = &f.outcome {
        tail.push(format!("结果为 {}", code_md(o)));
    }
    if let Some(p) = &f.phase {
        tail.push(format!("阶段为 {}", code_md(p)));
    }
    if f.repairs_used == Some(0) {
        tail.push("未消耗修复次数".into());
    }
    if !tail.is_empty() {
        s.push_str(&tail.join("，"));
        s.push('。');
    }
    s
}

fn join_or(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        2 => format!("{} or {}", items[0], items[1]),
        n => format!("{} or {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

fn bilingual_zh(b: &Bilingual) -> String {
    rich_md(&b.zh, false)
}

fn chinese_block(doc: &Document) -> String {
    let mut lines: Vec<String> = Vec::new();
    match &doc.heading {
        Heading::Baseline {
            engine,
            old_image,
            new_image,
            sources,
            ..
        } => {
            if let Some(new) = new_image {
                let eng = engine
                    .as_deref()
                    .map(|e| format!(" {e} "))
                    .unwrap_or_default();
                lines.push(format!(
                    "**目标：** 将{eng}镜像从 {} 更新为 {}。",
                    code_md(old_image),
                    code_md(new)
                ));
            }
            let mut f = vec![code_md(old_image)];
            f.extend(context_fields(&doc.context, false, true));
            if !sources.is_empty() {
                let links: Vec<String> = sources
                    .iter()
                    .map(|(name, url)| format!("[{name}]({url})"))
                    .collect();
                f.push(format!("来源：{}", links.join("、")));
            }
            lines.push(format!("**基线：** {}", f.join(" · ")));
        }
        Heading::Attempt { kind, status, .. } => {
            lines.push(format!(
                "**{} · {}**",
                words::attempt_kind_zh(*kind),
                words::attempt_status_zh(*status)
            ));
        }
        Heading::Run {
            run,
            verdict,
            baseline,
            ..
        } => {
            let title = match verdict {
                Some(v) => format!("**基准测试报告 · {}**", bilingual_zh(v)),
                None => "**基准测试报告**".to_string(),
            };
            let mut f = vec![title, run_zh(run)];
            if let Some(b) = baseline {
                f.push(format!("对比基线 {b}"));
            }
            lines.push(f.join(" · "));
            let c = context_fields(&doc.context, false, true);
            if !c.is_empty() {
                lines.push(c.join(" · "));
            }
        }
    }
    if let Some(ch) = &doc.change {
        lines.push(format!("**变更：** {}", bilingual_zh(ch)));
    }
    let mut notes = notes::point_notes(&doc.points, with_error_notes(doc));
    notes.extend(notes::eval_notes(&doc.evals));
    lines.extend(note_lines(&notes, true));
    if doc.evals.is_empty() && eval_expected(doc) {
        lines.push("**评估：** 无".into());
    }
    for f in &doc.findings {
        lines.push(bilingual_zh(f));
    }
    if let Some(fl) = &doc.failure {
        lines.push(format!("**诊断：** {}", failure_zh(fl)));
    }
    if let Some(n) = &doc.next {
        lines.push(format!("**下一步：** {}", bilingual_zh(n)));
    }
    format!(
        "<details><summary>中文</summary>\n\n{}\n\n</details>",
        block(&lines)
    )
}

/// The PR title of an image bump (AUTOMATION.md §5.6), with a configurable bot name:
/// `[<prefix>] Update <family> <engine> [ROCm ]image to <tag>[ (digest-pinned)] / 将 <family> 的
/// <engine> 镜像更新至 <tag>`. `prefix` is e.g. `servebench` or `Klaud Cold`; empty → no
/// bracket.
pub fn pr_title(
    prefix: &str,
    family: &str,
    engine: &str,
    rocm: bool,
    tag: &str,
    digest_pinned: bool,
) -> String {
    let p = if prefix.is_empty() {
        String::new()
    } else {
        format!("[{prefix}] ")
    };
    format!(
        "{p}Update {family} {engine} {}image to {tag}{} / 将 {family} 的 {engine} 镜像更新至 {tag}",
        if rocm { "ROCm " } else { "" },
        if digest_pinned {
            " (digest-pinned)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pr_title_has_a_configurable_prefix() {
        assert_eq!(
            pr_title("Klaud Cold", "qwen3.8next-fp4-b200-sglang-agentic-mtp", "SGLang", false, "v0.5.20-cu130", true),
            "[Klaud Cold] Update qwen3.8next-fp4-b200-sglang-agentic-mtp SGLang image to v0.5.20-cu130 (digest-pinned) / 将 qwen3.8next-fp4-b200-sglang-agentic-mtp 的 SGLang 镜像更新至 v0.5.20-cu130"
        );
        assert!(pr_title("servebench", "f", "vLLM", true, "v1", false)
            .starts_with("[servebench] Update f vLLM ROCm image to v1 / "));
        assert!(pr_title("", "f", "vLLM", false, "v1", false).starts_with("Update f vLLM image"));
    }

    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(code_md("a"), "`a`");
        assert_eq!(code_md("a`b"), "`` a`b ``");
    }

    #[test]
    fn tables_right_align_numbers() {
        let t = table_md(
            &["Concurrency".into(), "TTFT ms ↓".into()],
            true,
            &[vec!["4".into(), "433.7".into()]],
        );
        assert_eq!(
            t,
            "| Concurrency | TTFT ms ↓ |\n| ---: | ---: |\n| 4 | 433.7 |\n"
        );
        let t = table_md(&["Eval".into(), "Score ↑".into()], false, &[]);
        assert!(t.contains("| --- | ---: |"));
    }
}
