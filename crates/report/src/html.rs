//! The HTML report: one self-contained file (inline CSS, inline SVG charts, no script, no font,
//! image or stylesheet from anywhere), readable offline. The same header, tables and notes as the
//! Markdown comment, plus the charts of [`crate::charts`], then the Chinese block in a
//! `<details>`.

use crate::charts;
use crate::format::{fmt_pct_delta, fmt_pp_delta, fmt_value};
use crate::markdown::{eval_samples_text, eval_score_text, failure_en, failure_zh, Lang};
use crate::model::{Bilingual, Cell, ChartData, Delta, Document, Heading, RunRef, Span, Tone};
use crate::notes;
use crate::words;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn rich(spans: &[Span]) -> String {
    let mut s = String::new();
    for sp in spans {
        match sp {
            Span::Text(x) => s.push_str(&esc(x)),
            Span::Code(x) => s.push_str(&format!("<code>{}</code>", esc(x))),
            Span::Bold(x) => s.push_str(&format!("<strong>{}</strong>", esc(x))),
            Span::Link { text, url } => {
                s.push_str(&format!("<a href=\"{}\">{}</a>", esc(url), esc(text)))
            }
        }
    }
    s
}

/// Minimal inline Markdown (code spans and links, as the failure paragraph uses) to HTML.
fn md_inline(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['`', '[']) {
        out.push_str(&esc(&rest[..i]));
        let r = &rest[i..];
        if r.starts_with('`') {
            let ticks = r.bytes().take_while(|&b| b == b'`').count();
            let fence = &r[..ticks];
            if let Some(end) = r[ticks..].find(fence) {
                let inner = r[ticks..ticks + end].trim();
                out.push_str(&format!("<code>{}</code>", esc(inner)));
                rest = &r[ticks + end + ticks..];
                continue;
            }
            out.push_str(&esc(fence));
            rest = &r[ticks..];
        } else {
            // [text](url)
            if let Some(close) = r.find("](") {
                if let Some(end) = r[close..].find(')') {
                    let text = &r[1..close];
                    let url = &r[close + 2..close + end];
                    out.push_str(&format!("<a href=\"{}\">{}</a>", esc(url), esc(text)));
                    rest = &r[close + end + 1..];
                    continue;
                }
            }
            out.push('[');
            rest = &r[1..];
        }
    }
    out.push_str(&esc(rest));
    out
}

fn run_html(run: &RunRef) -> String {
    let text = match run.attempt {
        Some(a) => format!("Run {} / attempt {a}", run.id),
        None => format!("Run {}", run.id),
    };
    match &run.url {
        Some(u) => format!("<a href=\"{}\">{}</a>", esc(u), esc(&text)),
        None => esc(&text),
    }
}

fn tone_class(t: Option<Tone>) -> &'static str {
    match t {
        Some(Tone::Good) => "good",
        Some(Tone::Bad) => "bad",
        Some(Tone::Neutral) => "neutral",
        None => "",
    }
}

fn cell_html(c: &Cell) -> String {
    let v = match c.value {
        Some(v) if v.is_finite() => crate::markdown::shown_value(c),
        _ => {
            let title = match &c.delta {
                Delta::Na(r) => format!(" title=\"{}\"", esc(&words::na_reason_en(r))),
                _ => String::new(),
            };
            return format!(
                "<td class=\"num na\"{title}>{}</td>",
                esc(&crate::markdown::shown_value(c))
            );
        }
    };
    let base = c
        .baseline
        .map(|b| format!("<span class=\"base\">was {}</span>", fmt_value(b)))
        .unwrap_or_default();
    let d = match &c.delta {
        Delta::Pct(d) => format!(
            " <span class=\"delta {}\">({})</span>",
            tone_class(c.tone),
            fmt_pct_delta(*d)
        ),
        Delta::Pp(d) => format!(
            " <span class=\"delta {}\">({})</span>",
            tone_class(c.tone),
            fmt_pp_delta(*d)
        ),
        Delta::Na(r) => format!(
            " <span class=\"delta na\" title=\"{}\">(Δ N/A)</span>",
            esc(&words::na_reason_en(r))
        ),
        Delta::None => String::new(),
    };
    format!("<td class=\"num\">{}{d}{base}</td>", esc(&v))
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","Helvetica Neue",Arial,sans-serif;margin:24px auto;max-width:1180px;padding:0 16px;color:#1f2328;background:#fff;line-height:1.5}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.meta{margin:4px 0}code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:90%;background:#f2f4f7;padding:1px 4px;border-radius:4px;word-break:break-all}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d0d7de;padding:5px 10px}th{background:#f6f8fa;text-align:right}
th:first-child{text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.label{text-align:left}
.delta.good{color:#1a7f37;font-weight:600}.delta.bad{color:#cf222e;font-weight:600}.delta.neutral{color:#57606a}.na{color:#6e7781}
.base{display:block;font-size:80%;color:#6e7781}.note{margin:2px 0;color:#343a40}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:4px;background:#fff}
figure svg{display:block;max-width:100%;height:auto}figcaption{font-size:12px;color:#57606a;padding:2px 6px}
details{margin-top:24px;border:1px solid #d0d7de;border-radius:6px;padding:8px 12px}summary{cursor:pointer;font-weight:600}
footer{margin-top:24px;font-size:12px;color:#6e7781}
"#;

/// Renders the document as one self-contained HTML page: head and title, header lines, the
/// point table with its notes, the charts, the evals table with its notes, findings, the
/// Chinese block (with [`Lang::EnZh`]) and the footer.
pub fn render(doc: &Document, lang: Lang) -> String {
    let mut b = String::new();
    let title = page_title(doc);
    b.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    b.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    b.push_str(&format!(
        "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&title)
    ));
    b.push_str(&format!("<h1>{}</h1>\n", esc(&title)));
    for l in header_lines(doc).iter().filter(|l| !l.is_empty()) {
        b.push_str(&format!("<p class=\"meta\">{l}</p>\n"));
    }
    points_section(&mut b, doc);
    charts_section(&mut b, doc);
    evals_section(&mut b, doc);
    for f in &doc.findings {
        b.push_str(&format!("<p>{}</p>\n", rich(&f.en)));
    }
    if let Some(f) = &doc.failure {
        b.push_str(&format!(
            "<p><strong>Finding:</strong> {}</p>\n",
            md_inline(&failure_en(f))
        ));
    }
    if let Some(n) = &doc.next {
        b.push_str(&format!("<p><strong>Next:</strong> {}</p>\n", rich(&n.en)));
    }
    if lang == Lang::EnZh {
        b.push_str(&chinese(doc));
    }
    b.push_str(&format!(
        "<footer>Generated by {} (servebench {}). Self-contained: no scripts, no external resources.</footer>\n",
        esc(&doc.title_prefix),
        env!("CARGO_PKG_VERSION")
    ));
    b.push_str("</body>\n</html>\n");
    b
}

/// The page's `<title>` and `<h1>` text (unescaped).
fn page_title(doc: &Document) -> String {
    match &doc.heading {
        Heading::Baseline { old_image, .. } => {
            format!("{} baseline · {}", doc.title_prefix, old_image)
        }
        Heading::Attempt { kind, status, .. } => format!(
            "{} · {} · {}",
            doc.title_prefix,
            words::attempt_kind_en(*kind),
            words::attempt_status_en(*status)
        ),
        Heading::Run { run, .. } => format!("{} report · run {}", doc.title_prefix, run.id),
    }
}

/// The context line (HTML): image and head commit (when `with_image`), workload, topology,
/// statistic and extra fields joined by ` · `.
fn context_line(doc: &Document, with_image: bool) -> String {
    let c = &doc.context;
    let mut f: Vec<String> = Vec::new();
    if with_image {
        if let Some(i) = &c.image {
            f.push(format!("<code>{}</code>", esc(i)));
        }
        if let Some(h) = &c.head {
            f.push(format!(
                "<code>{}</code>",
                esc(&h.chars().take(12).collect::<String>())
            ));
        }
    }
    f.extend(c.workload.iter().map(|s| esc(s)));
    f.extend(c.topology.iter().map(|s| esc(s)));
    f.extend(c.statistic.iter().map(|s| esc(&words::statistic_en(s))));
    f.extend(c.extra.iter().map(|s| esc(s)));
    f.join(" · ")
}

/// The header lines (HTML, one `<p class="meta">` each; empty ones are skipped by the caller):
/// per heading kind, then the change line.
fn header_lines(doc: &Document) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    match &doc.heading {
        Heading::Baseline {
            engine,
            old_image,
            new_image,
            date,
            sources,
        } => {
            if let Some(n) = new_image {
                let eng = engine
                    .as_deref()
                    .map(|e| format!("{} ", esc(e)))
                    .unwrap_or_default();
                lines.push(format!(
                    "<strong>Goal:</strong> Update {eng}image from <code>{}</code> to <code>{}</code>.",
                    esc(old_image),
                    esc(n)
                ));
            }
            lines.push(format!(
                "<strong>Baseline:</strong> {} · <code>{}</code>",
                esc(date),
                esc(old_image)
            ));
            let mut c = context_line(doc, false);
            if !sources.is_empty() {
                let l: Vec<String> = sources
                    .iter()
                    .map(|(n, u)| format!("<a href=\"{}\">{}</a>", esc(u), esc(n)))
                    .collect();
                c.push_str(&format!(" · Sources: {}", l.join(", ")));
            }
            lines.push(c);
        }
        Heading::Attempt {
            kind,
            status,
            run,
            time,
        } => {
            let mut f = vec![format!(
                "<strong>{} · {}</strong>",
                esc(&words::attempt_kind_en(*kind)),
                esc(words::attempt_status_en(*status))
            )];
            f.extend(run.as_ref().map(run_html));
            f.extend(time.iter().map(|t| esc(t)));
            lines.push(f.join(" · "));
            lines.push(context_line(doc, true));
        }
        Heading::Run {
            run,
            time,
            verdict,
            baseline,
        } => {
            let mut f = vec![match verdict {
                Some(v) => format!("<strong>Benchmark report · {}</strong>", rich(&v.en)),
                None => "<strong>Benchmark report</strong>".into(),
            }];
            f.push(run_html(run));
            f.extend(time.iter().map(|t| esc(t)));
            if let Some(bl) = baseline {
                f.push(format!("vs {}", esc(bl)));
            }
            lines.push(f.join(" · "));
            lines.push(context_line(doc, true));
        }
    }
    if let Some(ch) = &doc.change {
        lines.push(format!("<strong>Change:</strong> {}", rich(&ch.en)));
    }
    lines
}

/// `<p class="note">` for one note (English text).
fn push_note(b: &mut String, n: &notes::Note) {
    b.push_str(&format!(
        "<p class=\"note\"><strong>Note:</strong> {}</p>\n",
        rich(&n.en)
    ));
}

/// "Benchmark points": the point table (first column the label when any row has one, else
/// the concurrency) and its notes; nothing when there are no metric columns.
fn points_section(b: &mut String, doc: &Document) {
    if doc.points.columns.is_empty() {
        return;
    }
    let labelled = doc.points.rows.iter().any(|r| r.label.is_some());
    b.push_str(&format!(
        "<h2>Benchmark points</h2>\n<table class=\"points\">\n<thead><tr><th>{}</th>",
        if labelled { "Point" } else { "Concurrency" }
    ));
    for m in &doc.points.columns {
        b.push_str(&format!("<th>{}</th>", esc(&m.header())));
    }
    b.push_str("</tr></thead>\n<tbody>\n");
    for r in &doc.points.rows {
        if labelled {
            b.push_str(&format!("<tr><td class=\"label\">{}</td>", esc(&r.name())));
        } else {
            b.push_str(&format!("<tr><td class=\"num\">{}</td>", r.conc));
        }
        for c in &r.cells {
            b.push_str(&cell_html(c));
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</tbody>\n</table>\n");
    let with_errors = !matches!(doc.heading, Heading::Baseline { .. });
    for n in notes::point_notes(&doc.points, with_errors) {
        push_note(b, &n);
    }
}

/// "Charts": the four fixed figures of [`crate::charts`] (a chart that cannot be drawn says
/// why in its place; with energy, output tokens per joule vs interactivity before the eval
/// scores), then the [`extra_charts`] sections.
fn charts_section(b: &mut String, doc: &Document) {
    b.push_str("<h2>Charts</h2>\n<div class=\"charts\">\n");
    let mut figs: Vec<(&str, Result<String, String>)> = vec![
        (
            "Throughput per GPU vs interactivity: the further up and right, the better.",
            charts::throughput_vs_interactivity(&doc.curves),
        ),
        (
            "TTFT against concurrency (log scale): lower is better.",
            charts::ttft_vs_conc(&doc.curves),
        ),
        (
            "TPOT against concurrency (log scale): lower is better.",
            charts::tpot_vs_conc(&doc.curves),
        ),
        (
            "Eval scores with 95% confidence intervals (±1.96 standard errors).",
            charts::eval_scores(&doc.evals),
        ),
    ];
    // measured (or modelled) energy: drawn only when a point carries it
    if let Ok(svg) = charts::tokens_per_joule_vs_interactivity(&doc.curves) {
        figs.insert(
            3,
            (
                "Output tokens per joule of GPU energy vs interactivity (modelled on the simulator, measured on GPUs): the further up and right, the better.",
                Ok(svg),
            ),
        );
    }
    for (cap, svg) in figs {
        let body = match svg {
            Ok(s) => s,
            Err(e) => format!("<p class=\"na\">chart not drawn: {}</p>", esc(&e)),
        };
        b.push_str(&format!(
            "<figure>{body}<figcaption>{}</figcaption></figure>\n",
            esc(cap)
        ));
    }
    b.push_str("</div>\n");
    b.push_str(&extra_charts(&doc.charts));
}

/// "Evals": one row per eval (score cell green/red when it moved by ≥ 0.5 pp) and the eval
/// notes; "Eval: N/A" when there are none.
fn evals_section(b: &mut String, doc: &Document) {
    b.push_str("<h2>Evals</h2>\n");
    if doc.evals.is_empty() {
        b.push_str("<p><strong>Eval:</strong> N/A</p>\n");
        return;
    }
    b.push_str("<table class=\"evals\">\n<thead><tr><th>Eval</th><th>Score ↑</th><th>Samples</th></tr></thead>\n<tbody>\n");
    for e in &doc.evals {
        let score = eval_score_text(e);
        let class = match &e.delta {
            Delta::Pp(d) if d.abs() >= 0.005 => {
                if *d > 0.0 {
                    " good"
                } else {
                    " bad"
                }
            }
            _ => "",
        };
        b.push_str(&format!(
            "<tr><td class=\"label\">{}</td><td class=\"num{class}\">{}</td><td class=\"num\">{}</td></tr>\n",
            esc(&e.label()),
            esc(&score),
            esc(&eval_samples_text(e))
        ));
    }
    b.push_str("</tbody>\n</table>\n");
    for n in notes::eval_notes(&doc.evals) {
        push_note(b, &n);
    }
}

/// The issue-13 chart sections (latency CDFs, goodput, multi-run Pareto) for the data the
/// document carries; nothing when it carries none.
fn extra_charts(c: &ChartData) -> String {
    use crate::dist_charts::{goodput_curve, latency_cdf, pareto, CdfMetric};
    let mut b = String::new();
    let fig = |b: &mut String, id: &str, svg: Result<String, String>, cap: &str| {
        let body = match svg {
            Ok(s) => s,
            Err(e) => format!("<p class=\"na\">chart not drawn: {}</p>", esc(&e)),
        };
        b.push_str(&format!(
            "<figure id=\"{id}\">{body}<figcaption>{}</figcaption></figure>\n",
            esc(cap)
        ));
    };
    if !c.latency.is_empty() {
        b.push_str("<h2>Latency distributions</h2>\n<div class=\"charts\">\n");
        for m in CdfMetric::ALL {
            let slo = c.goodput.as_ref().and_then(|g| {
                g.objectives
                    .iter()
                    .find(|(k, _)| k == m.key())
                    .map(|(_, v)| *v)
            });
            let cap = format!(
                "Empirical CDF of {} per point (successful measured requests{}): the further left, the better{}.",
                m.name(),
                if m == CdfMetric::Itl { ", every gap between token events" } else { "" },
                if slo.is_some() { "; dashed: the SLO threshold" } else { "" }
            );
            fig(
                &mut b,
                &format!("chart-cdf-{}", m.key()),
                latency_cdf(m, &c.latency, slo),
                &cap,
            );
        }
        b.push_str("</div>\n");
    }
    if let Some(g) = &c.goodput {
        b.push_str("<h2>Goodput</h2>\n<div class=\"charts\">\n");
        fig(
            &mut b,
            "chart-goodput",
            goodput_curve(g),
            "Goodput (requests meeting every SLO objective, failed requests count against it) and completed requests per second against concurrency; right axis: SLO attainment, dashed: its target. Hollow markers miss the SLO.",
        );
        b.push_str("</div>\n");
    }
    if !c.pareto.is_empty() {
        b.push_str("<h2>Throughput vs interactivity across runs</h2>\n<div class=\"charts\">\n");
        fig(
            &mut b,
            "chart-pareto",
            pareto(&c.pareto),
            "Each run's points (total tok/s/GPU against tok/s/user) and its Pareto frontier: the further up and right, the better.",
        );
        b.push_str("</div>\n");
    }
    for n in &c.notes {
        b.push_str(&format!(
            "<p class=\"note\"><strong>Note:</strong> {}</p>\n",
            esc(n)
        ));
    }
    b
}

fn zh(b: &Bilingual) -> String {
    rich(&b.zh)
}

fn chinese(doc: &Document) -> String {
    // Reuse the Markdown Chinese block's content by rendering the same parts as HTML.
    let mut p: Vec<String> = Vec::new();
    match &doc.heading {
        Heading::Baseline {
            old_image,
            new_image,
            engine,
            ..
        } => {
            if let Some(n) = new_image {
                let eng = engine
                    .as_deref()
                    .map(|e| format!(" {} ", esc(e)))
                    .unwrap_or_default();
                p.push(format!(
                    "<strong>目标：</strong>将{eng}镜像从 <code>{}</code> 更新为 <code>{}</code>。",
                    esc(old_image),
                    esc(n)
                ));
            }
            let mut f = vec![format!("<code>{}</code>", esc(old_image))];
            f.extend(doc.context.workload.iter().map(|s| esc(s)));
            f.extend(doc.context.topology.iter().map(|s| esc(s)));
            f.extend(
                doc.context
                    .statistic
                    .iter()
                    .map(|s| esc(&words::statistic_zh(s))),
            );
            p.push(format!("<strong>基线：</strong>{}", f.join(" · ")));
        }
        Heading::Attempt { kind, status, .. } => p.push(format!(
            "<strong>{} · {}</strong>",
            esc(&words::attempt_kind_zh(*kind)),
            esc(words::attempt_status_zh(*status))
        )),
        Heading::Run { verdict, .. } => p.push(match verdict {
            Some(v) => format!("<strong>基准测试报告 · {}</strong>", zh(v)),
            None => "<strong>基准测试报告</strong>".into(),
        }),
    }
    if let Some(ch) = &doc.change {
        p.push(format!("<strong>变更：</strong>{}", zh(ch)));
    }
    let with_errors = !matches!(doc.heading, Heading::Baseline { .. });
    let mut ns = notes::point_notes(&doc.points, with_errors);
    ns.extend(notes::eval_notes(&doc.evals));
    for n in ns {
        p.push(format!("<strong>说明：</strong>{}", rich(&n.zh)));
    }
    for f in &doc.findings {
        p.push(zh(f));
    }
    if let Some(f) = &doc.failure {
        p.push(format!(
            "<strong>诊断：</strong>{}",
            md_inline(&failure_zh(f))
        ));
    }
    if let Some(n) = &doc.next {
        p.push(format!("<strong>下一步：</strong>{}", zh(n)));
    }
    let body: Vec<String> = p.into_iter().map(|x| format!("<p>{x}</p>")).collect();
    format!(
        "<details lang=\"zh-CN\"><summary>中文</summary>\n{}\n</details>\n",
        body.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_inline_markdown() {
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
        assert_eq!(
            md_inline("First `x<y` in [log](http://h/a?b=1&c)."),
            "First <code>x&lt;y</code> in <a href=\"http://h/a?b=1&amp;c\">log</a>."
        );
        assert_eq!(md_inline("a `` b`c `` d"), "a <code>b`c</code> d");
    }
}
