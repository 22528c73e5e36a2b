//! The final table of a sweep: per concurrency, per-GPU throughputs and TTFT/TPOT at the
//! chosen statistic; with repeats, mean ± sample standard deviation (n − 1) over them.

use servebench_client::Compat;
use servebench_metrics::{ItlMode, PointStatus};

use crate::executor::PointOutput;
use crate::observe::table_notes;
use crate::plan::SweepPlan;

/// Table numbers: thousands separators, fixed decimals (the report crate's formatter), `-` for
/// a missing value.
pub fn fmt_num(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    servebench_contracts::labels::fmt_fixed_dp(x, decimals)
}

/// Mean and sample standard deviation (n − 1; `None` for one value) of the finite values.
pub fn mean_sd(xs: &[f64]) -> Option<(f64, Option<f64>)> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.len() > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    Some((mean, sd))
}

/// The statistic line, the table and the note lines, after an empty line (each line ends with
/// a newline).
pub fn render_table(points: &[PointOutput], plan: &SweepPlan) -> String {
    use std::fmt::Write as _;
    let key = plan.stat.to_string();
    let key = key.as_str();
    let (itl, compat, repeats) = (plan.itl_mode, plan.compat, plan.repeats);
    let mut out = String::from("\n");
    let _ = writeln!(
        out,
        "statistic: {key}; ITL mode: {}; counting: {}{}",
        if itl == ItlMode::Chunk {
            "per chunk"
        } else {
            "per token"
        },
        Compat::as_str(compat),
        if repeats > 1 {
            format!("; {repeats} repeats per concurrency: mean ± sample standard deviation (n − 1) over the repeats")
        } else {
            String::new()
        }
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    t.set_header(vec![
        "Concurrency",
        "Total tok/s/GPU",
        "Output tok/s/GPU",
        "TTFT ms",
        "TPOT ms",
    ]);
    // consecutive points of one concurrency are its repeats
    let mut groups: Vec<&[PointOutput]> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let j = points[i..]
            .iter()
            .position(|p| p.spec.conc != points[i].spec.conc)
            .map_or(points.len(), |k| i + k);
        groups.push(&points[i..j]);
        i = j;
    }
    for g in groups {
        let gpus = |p: &PointOutput| f64::from(p.agg.num_gpus).max(1.0);
        let cell = |xs: Vec<f64>| match mean_sd(&xs) {
            None => "-".to_string(),
            Some((m, None)) => fmt_num(m, 2),
            Some((m, Some(sd))) if g.len() > 1 => format!("{} ± {}", fmt_num(m, 2), fmt_num(sd, 2)),
            Some((m, Some(_))) => fmt_num(m, 2),
        };
        t.add_row(vec![
            conc_cell(g),
            cell(
                g.iter()
                    .map(|p| p.metrics.total_token_throughput / gpus(p))
                    .collect(),
            ),
            cell(
                g.iter()
                    .map(|p| p.metrics.output_throughput / gpus(p))
                    .collect(),
            ),
            cell(g.iter().filter_map(|p| p.metrics.ttft.get(key)).collect()),
            cell(g.iter().filter_map(|p| p.metrics.tpot.get(key)).collect()),
        ]);
    }
    for i in 1..5 {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{t}");
    for line in table_notes(points, repeats) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// `4`, `4 (FAILED)`, `4 (partial)`, `4 (INVALID)`, or with repeats `4 ×3 (1 FAILED) (1
/// partial)`.
fn conc_cell(g: &[PointOutput]) -> String {
    let mut conc = g[0].spec.conc.to_string();
    let count = |s: PointStatus| g.iter().filter(|p| p.metrics.point_status == s).count();
    let (failed, partial) = (count(PointStatus::Failed), count(PointStatus::Interrupted));
    let invalid = count(PointStatus::Invalid);
    if g.len() == 1 {
        match g[0].metrics.point_status {
            PointStatus::Ok => {}
            PointStatus::Failed => conc.push_str(" (FAILED)"),
            PointStatus::Interrupted => conc.push_str(" (partial)"),
            PointStatus::Invalid => conc.push_str(" (INVALID)"),
        }
    } else {
        conc.push_str(&format!(" ×{}", g.len()));
        if failed > 0 {
            conc.push_str(&format!(" ({failed} FAILED)"));
        }
        if partial > 0 {
            conc.push_str(&format!(" ({partial} partial)"));
        }
        if invalid > 0 {
            conc.push_str(&format!(" ({invalid} INVALID)"));
        }
    }
    conc
}

/// The prefix-cache table printed under the sweep's own, after an empty line (only points with
/// a `prefix_cache` block, i.e. with `--flush-cache`; `None` when there is none).
pub fn render_cache_table(points: &[PointOutput]) -> Option<String> {
    use std::fmt::Write as _;
    let rows: Vec<(&PointOutput, &serde_json::Value)> = points
        .iter()
        .filter_map(|p| {
            p.result
                .single()
                .and_then(|r| r.servebench.prefix_cache.as_ref())
                .filter(|v| v.is_object())
                .map(|v| (p, v))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut out = String::from("\n");
    out.push_str("| Point | Flushed | Repeated prompts | Server prefix-cache hit rate | Hit / query tokens |\n");
    out.push_str("|---|---|---|---|---|\n");
    for (p, v) in rows {
        let tok = match (v["hit_tokens"].as_f64(), v["query_tokens"].as_f64()) {
            (Some(h), Some(q)) => format!("{h:.0} / {q:.0}"),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {tok} |",
            p.spec.label(),
            if v["flushed"] == true { "yes" } else { "no" },
            v["repeated_prompts"],
            crate::cache::fmt_rate(v["hit_rate"].as_f64()),
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{fmt_num, mean_sd};

    #[test]
    fn thousands_separators() {
        assert_eq!(fmt_num(14445.123, 2), "14,445.12");
        assert_eq!(fmt_num(159.68, 2), "159.68");
        assert_eq!(fmt_num(1234567.0, 0), "1,234,567");
        assert_eq!(fmt_num(-1570.11, 2), "-1,570.11");
        assert_eq!(fmt_num(0.5, 2), "0.50");
        assert_eq!(fmt_num(f64::NAN, 2), "-");
    }

    #[test]
    fn sample_sd_over_repeats() {
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[2.0]), Some((2.0, None)));
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, f64::NAN]).unwrap();
        assert_eq!(m, 2.0);
        assert!((sd.unwrap() - 1.0).abs() < 1e-12);
    }
}
