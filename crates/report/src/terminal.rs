//! The terminal table: the point table with the same columns as the comment, values and deltas,
//! deltas coloured (green better, red worse) when writing to a TTY; then notes and eval rows.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell as TCell, CellAlignment, Color, Table};

use crate::format::{fmt_pct_delta, fmt_pp_delta};
use crate::markdown::{eval_samples_text, eval_score_text, rich_md};
use crate::model::{Cell, Delta, Document, Heading, NaReason, Tone};
use crate::notes;

fn color(t: Option<Tone>) -> Option<Color> {
    match t {
        Some(Tone::Good) => Some(Color::Green),
        Some(Tone::Bad) => Some(Color::Red),
        _ => None,
    }
}

fn cell(c: &Cell, colored: bool) -> TCell {
    let text = match c.value {
        Some(v) if v.is_finite() => {
            let d = match &c.delta {
                Delta::Pct(d) => format!(" ({})", fmt_pct_delta(*d)),
                Delta::Pp(d) => format!(" ({})", fmt_pp_delta(*d)),
                Delta::Na(NaReason::CandidateInvalid(_)) => " (Δ N/A)".to_string(),
                _ => String::new(),
            };
            format!("{}{d}", crate::markdown::shown_value(c))
        }
        _ => crate::markdown::shown_value(c),
    };
    let mut tc = TCell::new(text).set_alignment(CellAlignment::Right);
    if colored {
        if let Some(col) = color(c.tone) {
            tc = tc.fg(col);
        }
    }
    tc
}

/// Renders the point table, its notes and the eval table as plain text (ANSI colours when
/// `colored`).
pub fn render(doc: &Document, colored: bool) -> String {
    let mut out = String::new();
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    if !colored {
        t.force_no_tty();
    } else {
        t.enforce_styling();
    }
    let labelled = doc.points.rows.iter().any(|r| r.label.is_some());
    let mut header = vec![TCell::new(if labelled { "Point" } else { "Concurrency" })];
    header.extend(doc.points.columns.iter().map(|m| TCell::new(m.header())));
    t.set_header(header);
    for r in &doc.points.rows {
        let mut row = vec![if labelled {
            TCell::new(r.name())
        } else {
            TCell::new(r.conc).set_alignment(CellAlignment::Right)
        }];
        row.extend(r.cells.iter().map(|c| cell(c, colored)));
        t.add_row(row);
    }
    out.push_str(&t.to_string());
    out.push('\n');
    let with_errors = !matches!(doc.heading, Heading::Baseline { .. });
    for n in notes::point_notes(&doc.points, with_errors) {
        out.push_str(&format!("Note: {}\n", rich_md(&n.en, false)));
    }
    if !doc.evals.is_empty() {
        let mut e = Table::new();
        e.load_preset(UTF8_FULL_CONDENSED);
        if !colored {
            e.force_no_tty();
        }
        e.set_header(vec!["Eval", "Score ↑", "Samples"]);
        for r in &doc.evals {
            let mut sc = TCell::new(eval_score_text(r)).set_alignment(CellAlignment::Right);
            if colored {
                if let Delta::Pp(d) = r.delta {
                    if d.abs() >= 0.005 {
                        sc = sc.fg(if d > 0.0 { Color::Green } else { Color::Red });
                    }
                }
            }
            e.add_row(vec![
                TCell::new(r.label()),
                sc,
                TCell::new(eval_samples_text(r)).set_alignment(CellAlignment::Right),
            ]);
        }
        out.push_str(&e.to_string());
        out.push('\n');
        for n in notes::eval_notes(&doc.evals) {
            out.push_str(&format!("Note: {}\n", rich_md(&n.en, false)));
        }
    }
    out
}
