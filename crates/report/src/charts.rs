//! SVG charts for the HTML report, drawn with plotters' SVG backend into strings (no files, no
//! fonts needed: text is left to the browser as SVG `<text>`).
//!
//! Charts: throughput per GPU vs interactivity (the InferenceX Pareto view), TTFT vs
//! concurrency, TPOT vs concurrency (baseline and candidate curves each), and eval scores with
//! 95 % confidence error bars (±1.96 standard errors; the standard error is the row's own when
//! given, else the binomial one lm-evaluation-harness reports for a mean of 0/1 scores,
//! `sqrt(p(1−p)/(n−1))`).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::{CurvePoint, Curves, EvalRow, EvalScore};

/// Chart size in px.
pub const W: u32 = 560;
/// Chart height in px.
pub const H: u32 = 340;

const BASE: RGBColor = RGBColor(31, 119, 180);
const CAND: RGBColor = RGBColor(230, 110, 20);

type Series = (&'static str, RGBColor, Vec<(f64, f64, u32)>);

fn series(
    curves: &Curves,
    x: impl Fn(&CurvePoint) -> Option<f64>,
    y: impl Fn(&CurvePoint) -> Option<f64>,
) -> Vec<Series> {
    let pick = |pts: &[CurvePoint]| -> Vec<(f64, f64, u32)> {
        let mut v: Vec<(f64, f64, u32)> = pts
            .iter()
            .filter_map(|p| Some((x(p)?, y(p)?, p.conc)))
            .filter(|(a, b, _)| a.is_finite() && b.is_finite())
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    vec![
        ("baseline", BASE, pick(&curves.baseline)),
        ("candidate", CAND, pick(&curves.candidate)),
    ]
}

fn range(vals: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        hi.abs().max(1.0) * 0.1
    };
    let lo = if from_zero && lo >= 0.0 {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

fn no_data(root: &DrawingArea<SVGBackend, Shift>, title: &str) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    root.draw(&Text::new(
        title.to_string(),
        (16, 20),
        ("sans-serif", 16).into_font(),
    ))
    .map_err(|e| e.to_string())?;
    root.draw(&Text::new(
        "no data".to_string(),
        ((W / 2 - 30) as i32, (H / 2) as i32),
        ("sans-serif", 14)
            .into_font()
            .color(&RGBColor(120, 120, 120)),
    ))
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// A line chart of the two series with point markers labelled `c<conc>`. `log_x` draws the x
/// axis in log2 spacing (concurrency).
fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    data: &[Series],
    log_x: bool,
    legend: SeriesLabelPosition,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let all: Vec<&(f64, f64, u32)> = data.iter().flat_map(|s| s.2.iter()).collect();
        if all.is_empty() {
            no_data(&root, title)?;
            root.present().map_err(|e| e.to_string())?;
            drop(root);
            return Ok(svg);
        }
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let tx = |v: f64| if log_x { v.max(1e-9).log2() } else { v };
        let (x0, x1) = range(all.iter().map(|p| tx(p.0)), false);
        let (y0, y1) = range(all.iter().map(|p| p.1), true);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        let xfmt = |v: &f64| {
            if log_x {
                let c = 2f64.powf(*v);
                if (c - c.round()).abs() < 0.05 {
                    format!("{}", c.round() as i64)
                } else {
                    String::new()
                }
            } else {
                crate::format::fmt_value_dp(*v, 0)
            }
        };
        let yfmt = |v: &f64| crate::format::fmt_value_dp(*v, if y1 - y0 < 10.0 { 1 } else { 0 });
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        for (name, color, pts) in data {
            if pts.is_empty() {
                continue;
            }
            let line: Vec<(f64, f64)> = pts.iter().map(|p| (tx(p.0), p.1)).collect();
            let color = *color;
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
                )
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(pts.iter().map(|p| {
                    Text::new(
                        format!("c{}", p.2),
                        (tx(p.0), p.1),
                        ("sans-serif", 11).into_font().color(&color),
                    )
                }))
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .position(legend)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Throughput per GPU (total tok/s/GPU) against interactivity (tok/s/user).
pub fn throughput_vs_interactivity(c: &Curves) -> Result<String, String> {
    line_chart(
        "Throughput per GPU vs interactivity",
        "Interactivity (tok/s/user)",
        "Total tok/s/GPU",
        &series(c, CurvePoint::interactivity, |p| p.total_tput_per_gpu),
        false,
        SeriesLabelPosition::UpperRight,
    )
}

/// TTFT (ms) against concurrency.
pub fn ttft_vs_conc(c: &Curves) -> Result<String, String> {
    line_chart(
        "TTFT vs concurrency",
        "Concurrency",
        "TTFT ms",
        &series(c, |p| Some(p.conc as f64), |p| p.ttft_ms),
        true,
        SeriesLabelPosition::UpperLeft,
    )
}

/// TPOT (ms) against concurrency.
pub fn tpot_vs_conc(c: &Curves) -> Result<String, String> {
    line_chart(
        "TPOT vs concurrency",
        "Concurrency",
        "TPOT ms",
        &series(c, |p| Some(p.conc as f64), |p| p.tpot_ms),
        true,
        SeriesLabelPosition::UpperLeft,
    )
}

/// Standard error of a score (fraction): its own, else the binomial one
/// (`sqrt(p(1−p)/(n−1))`, lm-evaluation-harness `mean_stderr` for 0/1 samples).
pub fn score_stderr(s: &EvalScore) -> Option<f64> {
    if s.stderr.is_some() {
        return s.stderr;
    }
    let p = s.score?;
    let n = s.samples? as f64;
    (n > 1.0).then(|| (p * (1.0 - p) / (n - 1.0)).sqrt())
}

/// Eval scores (%) with 95 % error bars, baseline and candidate side by side per eval row.
pub fn eval_scores(evals: &[EvalRow]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let title = "Eval scores (95% CI)";
        let mut pts: Vec<(f64, f64, f64, RGBColor)> = Vec::new();
        for (i, e) in evals.iter().enumerate() {
            for (off, side, color) in [(-0.15, &e.baseline, BASE), (0.15, &e.candidate, CAND)] {
                if let Some(s) = side {
                    if let Some(score) = s.score {
                        let se = score_stderr(s).unwrap_or(0.0);
                        pts.push((i as f64 + off, score * 100.0, 1.96 * se * 100.0, color));
                    }
                }
            }
        }
        if pts.is_empty() {
            no_data(&root, title)?;
            root.present().map_err(|e| e.to_string())?;
            drop(root);
            return Ok(svg);
        }
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let lo = pts.iter().map(|p| p.1 - p.2).fold(f64::INFINITY, f64::min);
        let hi = pts
            .iter()
            .map(|p| p.1 + p.2)
            .fold(f64::NEG_INFINITY, f64::max);
        let pad = ((hi - lo) * 0.25).max(1.0);
        let (y0, y1) = ((lo - pad).max(0.0), (hi + pad).min(100.0));
        let labels: Vec<String> = evals.iter().map(|e| e.label()).collect();
        let n = evals.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.6..(n - 0.4), y0..y1)
            .map_err(|e| e.to_string())?;
        let xfmt = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(evals.len().max(1) * 2 + 1)
            .x_label_formatter(&xfmt)
            .y_desc("Score %")
            .y_label_formatter(&|v| crate::format::fmt_value_dp(*v, 1))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        for (x, y, e, color) in &pts {
            let (x, y, e, color) = (*x, *y, *e, *color);
            if e > 0.0 {
                let w = 0.06;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, y - e), (x, y + e)],
                        color.stroke_width(2),
                    )))
                    .map_err(|er| er.to_string())?;
                for yy in [y - e, y + e] {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(x - w, yy), (x + w, yy)],
                            color.stroke_width(2),
                        )))
                        .map_err(|er| er.to_string())?;
                }
            }
            chart
                .draw_series(std::iter::once(Circle::new((x, y), 5, color.filled())))
                .map_err(|er| er.to_string())?;
        }
        for (name, color) in [("baseline", BASE), ("candidate", CAND)] {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(|e| e.to_string())?
                .label(name)
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(conc: u32, tput: f64, tpot: f64, ttft: f64) -> CurvePoint {
        CurvePoint {
            conc,
            total_tput_per_gpu: Some(tput),
            output_tput_per_gpu: None,
            interactivity: None,
            ttft_ms: Some(ttft),
            tpot_ms: Some(tpot),
        }
    }

    #[test]
    fn charts_are_svg_with_both_curves() {
        let c = Curves {
            baseline: vec![pt(1, 100.0, 5.0, 50.0), pt(4, 300.0, 8.0, 80.0)],
            candidate: vec![pt(1, 110.0, 4.5, 45.0), pt(4, 320.0, 7.0, 70.0)],
        };
        for svg in [
            throughput_vs_interactivity(&c).unwrap(),
            ttft_vs_conc(&c).unwrap(),
            tpot_vs_conc(&c).unwrap(),
        ] {
            assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
            assert!(svg.contains("baseline") && svg.contains("candidate"));
            assert!(svg.contains("<polyline"), "no curve drawn");
        }
        let empty = ttft_vs_conc(&Curves::default()).unwrap();
        assert!(empty.contains("no data"));
    }

    #[test]
    fn binomial_stderr_like_lm_eval() {
        let s = EvalScore {
            score: Some(0.9795),
            samples: Some(1319),
            stderr: None,
            passed: true,
        };
        let se = score_stderr(&s).unwrap();
        assert!((se - (0.9795f64 * 0.0205 / 1318.0).sqrt()).abs() < 1e-12);
        assert!((se - 0.003904).abs() < 1e-5, "{se}");
    }
}
