//! `Note:` lines under the tables (AUTOMATION.md §5.6): one line per kind of remark (point
//! status, request errors, Δ N/A reason, verdict). A remark shared by every row collapses to
//! `All rows: <remark>.`; otherwise the rows that have one are listed, `c8: <remark>; c16: …`.

use crate::format::fmt_count;
use crate::model::{code, t, Delta, EvalLine, NaReason, PointTable, Rich, Row, RowStatus, Span};
use crate::words;

/// One `Note:` line, in English and Chinese.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// English text after `Note:`.
    pub en: Rich,
    /// Chinese text after `说明：`.
    pub zh: Rich,
}

/// A remark about one row (`failed`, `request errors unavailable`, …).
type Remark = (Rich, Rich);

/// Collapses per-row remarks into a note: `All rows: X.` when every row has the same remark,
/// else `c1, c4: X; c8: Y.` over the rows that have one (rows sharing a remark grouped);
/// `None` when no row has one.
pub fn collapse(labels: &[String], remarks: &[Option<Remark>]) -> Option<Note> {
    debug_assert_eq!(labels.len(), remarks.len());
    if remarks.is_empty() || remarks.iter().all(Option::is_none) {
        return None;
    }
    if let Some(first) = remarks[0].as_ref() {
        if remarks.iter().all(|r| r.as_ref() == Some(first)) {
            let mut en = vec![t("All rows: ")];
            en.extend(first.0.iter().cloned());
            en.push(t("."));
            let mut zh = vec![t("所有行：")];
            zh.extend(first.1.iter().cloned());
            zh.push(t("。"));
            return Some(Note {
                en: merge(en),
                zh: merge(zh),
            });
        }
    }
    // Rows with the same remark share one entry (`c1, c4: X`), in order of first appearance.
    let mut groups: Vec<(Vec<&str>, &Remark)> = Vec::new();
    for (label, r) in labels.iter().zip(remarks) {
        let Some(r) = r else { continue };
        match groups.iter_mut().find(|(_, g)| *g == r) {
            Some((ls, _)) => ls.push(label),
            None => groups.push((vec![label], r)),
        }
    }
    let mut en = Vec::new();
    let mut zh = Vec::new();
    for (ls, (ren, rzh)) in groups {
        if !en.is_empty() {
            en.push(t("; "));
            zh.push(t("；"));
        }
        en.push(t(format!("{}: ", ls.join(", "))));
        en.extend(ren.iter().cloned());
        zh.push(t(format!("{}：", ls.join("、"))));
        zh.extend(rzh.iter().cloned());
    }
    en.push(t("."));
    zh.push(t("。"));
    Some(Note {
        en: merge(en),
        zh: merge(zh),
    })
}

/// Joins adjacent text spans (so snapshots and HTML stay tidy).
pub fn merge(spans: Rich) -> Rich {
    let mut out: Rich = Vec::with_capacity(spans.len());
    for s in spans {
        match (out.last_mut(), s) {
            (Some(Span::Text(a)), Span::Text(b)) => a.push_str(&b),
            (_, s) => out.push(s),
        }
    }
    out
}

fn status_remark(r: &Row) -> Option<Remark> {
    let en = words::point_status_en(r.status)?;
    let zh = words::point_status_zh(r.status)?;
    let mut e = vec![t(en)];
    let mut z = vec![t(zh)];
    if let Some(err) = &r.first_error {
        e.push(t(" — "));
        e.push(code(err.clone()));
        z.push(t(if r.status == RowStatus::Invalid {
            "，原因："
        } else {
            "，首个错误："
        }));
        z.push(code(err.clone()));
    }
    Some((e, z))
}

fn errors_remark(r: &Row) -> Option<Remark> {
    // A baseline-only row was not run by the candidate: nothing to say about its requests.
    if r.status == RowStatus::BaselineOnly {
        return None;
    }
    match r.request_errors {
        None => Some((
            vec![t("request errors unavailable")],
            vec![t("请求错误数不可用")],
        )),
        Some(0) => None,
        Some(n) => {
            let mut en = format!(
                "{} request error{}",
                fmt_count(n),
                if n == 1 { "" } else { "s" }
            );
            if !r.request_error_reasons.is_empty() {
                let parts: Vec<String> = r
                    .request_error_reasons
                    .iter()
                    .map(|(k, c)| format!("{k} ×{}", fmt_count(*c)))
                    .collect();
                en.push_str(&format!(" ({})", parts.join(", ")));
            }
            Some((vec![t(en)], vec![t("存在失败的请求")]))
        }
    }
}

fn na_remark(table: &PointTable, r: &Row) -> Option<Remark> {
    // A baseline-only row has no delta by construction; its status note says why.
    if r.status == RowStatus::BaselineOnly {
        return None;
    }
    let nas: Vec<(usize, &crate::model::NaReason)> = r
        .cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match &c.delta {
            Delta::Na(reason) => Some((i, reason)),
            _ => None,
        })
        .collect();
    let (_, first) = *nas.first()?;
    if nas.iter().all(|(_, reason)| *reason == first) {
        return Some((
            vec![t(format!("Δ N/A: {}", words::na_reason_en(first)))],
            vec![t(format!("Δ 为 N/A，原因：{}", words::na_reason_zh(first)))],
        ));
    }
    let mut en = String::from("Δ N/A: ");
    let mut zh = String::from("Δ 为 N/A：");
    for (k, (i, reason)) in nas.iter().enumerate() {
        let col = table.columns.get(*i).map(|m| m.label()).unwrap_or("?");
        if k > 0 {
            en.push_str(", ");
            zh.push('，');
        }
        en.push_str(&format!("{col} {}", words::na_reason_en(reason)));
        zh.push_str(&format!("{col} {}", words::na_reason_zh(reason)));
    }
    Some((vec![t(en)], vec![t(zh)]))
}

fn kind_remark(r: &Row, kind: &str) -> Option<Remark> {
    let v = r.remarks.iter().find(|x| x.kind == kind)?;
    Some((vec![t(v.en.clone())], vec![t(v.zh.clone())]))
}

/// The notes of the point table, in order: status, request errors, Δ N/A, then the rows'
/// remarks by kind in order of first appearance (verdict, spread…).
/// Request-error remarks are only made when the table has rows that were run or failed
/// (a baseline body has no request counts: it says nothing about them).
pub fn point_notes(table: &PointTable, with_errors: bool) -> Vec<Note> {
    let labels: Vec<String> = table.rows.iter().map(Row::name).collect();
    let mut out = Vec::new();
    let status: Vec<_> = table.rows.iter().map(status_remark).collect();
    out.extend(collapse(&labels, &status));
    if with_errors {
        let errs: Vec<_> = table.rows.iter().map(errors_remark).collect();
        out.extend(collapse(&labels, &errs));
    }
    let na: Vec<_> = table.rows.iter().map(|r| na_remark(table, r)).collect();
    out.extend(collapse(&labels, &na));
    let mut kinds: Vec<&str> = Vec::new();
    for r in &table.rows {
        for k in &r.remarks {
            if !kinds.contains(&k.kind.as_str()) {
                kinds.push(&k.kind);
            }
        }
    }
    for kind in kinds {
        let rs: Vec<_> = table.rows.iter().map(|r| kind_remark(r, kind)).collect();
        out.extend(collapse(&labels, &rs));
    }
    out
}

/// The notes of the eval table: one line per eval row that has something to say (failed or
/// below threshold, Δ N/A reason), `gsm8k/em_strict · c16: failed, no score; Δ N/A: point failed.`
/// Eval rows are few and named, so they are never collapsed to `All rows`.
pub fn eval_notes(evals: &[EvalLine]) -> Vec<Note> {
    let mut out = Vec::new();
    for e in evals {
        let mut en: Vec<String> = Vec::new();
        let mut zh: Vec<String> = Vec::new();
        match &e.candidate {
            _ if matches!(
                e.delta,
                Delta::Na(NaReason::CandidateMissing | NaReason::PointUnavailable)
            ) => {}
            Some(c) if !c.passed && c.score.is_none() => {
                en.push("failed, no score".into());
                zh.push("失败，没有得分".into());
            }
            Some(c) if !c.passed => {
                en.push("below its threshold".into());
                zh.push("低于阈值".into());
            }
            _ => {}
        }
        if let Delta::Na(r) = &e.delta {
            en.push(format!("Δ N/A: {}", words::na_reason_en(r)));
            zh.push(format!("Δ 为 N/A，原因：{}", words::na_reason_zh(r)));
        }
        if en.is_empty() {
            continue;
        }
        out.push(Note {
            en: vec![t(format!("{}: {}.", e.label(), en.join("; ")))],
            zh: vec![t(format!("{}：{}。", e.label(), zh.join("；")))],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rem(s: &str) -> Option<Remark> {
        Some((vec![t(s)], vec![t(s)]))
    }

    fn en(n: &Note) -> String {
        n.en.iter()
            .map(|s| match s {
                Span::Text(x) | Span::Code(x) | Span::Bold(x) => x.clone(),
                Span::Link { text, .. } => text.clone(),
            })
            .collect()
    }

    #[test]
    fn shared_remark_collapses_to_all_rows() {
        let labels: Vec<String> = ["c1", "c4"].iter().map(|s| s.to_string()).collect();
        let n = collapse(&labels, &[rem("failed"), rem("failed")]).unwrap();
        assert_eq!(en(&n), "All rows: failed.");
        let n = collapse(&labels, &[rem("failed"), None]).unwrap();
        assert_eq!(en(&n), "c1: failed.");
        let n = collapse(&labels, &[rem("failed"), rem("partial")]).unwrap();
        assert_eq!(en(&n), "c1: failed; c4: partial.");
        assert!(collapse(&labels, &[None, None]).is_none());
        let three: Vec<String> = ["c1", "c4", "c8"].iter().map(|s| s.to_string()).collect();
        let n = collapse(&three, &[rem("a"), rem("b"), rem("a")]).unwrap();
        assert_eq!(en(&n), "c1, c8: a; c4: b.", "one entry per distinct remark");
        let one = vec!["c1".to_string()];
        assert_eq!(
            en(&collapse(&one, &[rem("failed")]).unwrap()),
            "All rows: failed."
        );
    }
}
