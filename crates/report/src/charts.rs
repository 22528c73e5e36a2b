//! SVG charts for the HTML report, drawn with plotters' SVG backend into strings (no files, no
//! fonts needed: text is left to the browser as SVG `<text>`).
//!
//! Charts: throughput per GPU vs interactivity (the InferenceX Pareto view), TTFT vs
//! concurrency, TPOT vs concurrency (baseline and candidate curves each), and eval scores with
//! 95 % confidence error bars (±1.96 standard errors; the standard error is the row's own when
//! given, else the binomial one lm-evaluation-harness reports for a mean of 0/1 scores,
//! `sqrt(p(1−p)/(n−1))`).

use plotters::coord::ranged1d::{BoldPoints, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::{CurvePoint, Curves, EvalLine, EvalScore};

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

pub(crate) fn range(vals: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
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

pub(crate) fn no_data(root: &DrawingArea<SVGBackend, Shift>, title: &str) -> Result<(), String> {
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
        // The legend goes in a strip below the chart, outside the plot area, so it can never
        // cover a point or its label.
        let (plot_area, legend_area) = root.split_vertically(H - LEGEND_H);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        let x_dp = tick_decimals(x0, x1, X_LABELS);
        let y_dp = tick_decimals(y0, y1, Y_LABELS);
        let xfmt = |v: &f64| {
            if log_x {
                let c = 2f64.powf(*v);
                if (c - c.round()).abs() < 0.05 {
                    format!("{}", c.round() as i64)
                } else {
                    String::new()
                }
            } else {
                crate::format::fmt_value_dp(*v, x_dp)
            }
        };
        let yfmt = |v: &f64| crate::format::fmt_value_dp(*v, y_dp);
        chart
            .configure_mesh()
            .x_labels(X_LABELS)
            .y_labels(Y_LABELS)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        for (_, color, pts) in data {
            if pts.is_empty() {
                continue;
            }
            let line: Vec<(f64, f64)> = pts.iter().map(|p| (tx(p.0), p.1)).collect();
            let color = *color;
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?;
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
        draw_legend(&legend_area, data)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Height (px) of the legend strip below a line chart.
pub(crate) const LEGEND_H: u32 = 22;
/// Tick labels asked of plotters on a line chart's x axis (it may draw fewer).
pub(crate) const X_LABELS: usize = 8;
/// Tick labels asked of plotters on a line chart's y axis.
pub(crate) const Y_LABELS: usize = 8;

/// Decimals for the tick labels of a linear axis over `lo..hi` with at most `n` labels: the
/// fewest (0 to 6) that write every tick plotters will draw exactly, so that neighbouring
/// labels never round to the same text (range 180.2..184.1 → ticks 0.5 apart → 1 decimal).
pub(crate) fn tick_decimals(lo: f64, hi: f64, n: usize) -> usize {
    let keys = plotters::coord::types::RangedCoordf64::from(lo..hi).key_points(BoldPoints(n));
    let step = keys
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(f64::INFINITY, f64::min);
    let tol = if step.is_finite() && step > 0.0 {
        step * 1e-3
    } else {
        return 0;
    };
    (0..=6)
        .find(|&d| {
            let m = 10f64.powi(d as i32);
            keys.iter().all(|k| ((k * m).round() / m - k).abs() <= tol)
        })
        .unwrap_or(6)
}

/// The legend of a line chart, one entry per drawn series, centred in `area` (a strip
/// outside the plot area).
fn draw_legend(area: &DrawingArea<SVGBackend, Shift>, data: &[Series]) -> Result<(), String> {
    let entries: Vec<(&str, RGBColor)> = data
        .iter()
        .filter(|s| !s.2.is_empty())
        .map(|s| (s.0, s.1))
        .collect();
    // ~7 px per character at 12 px sans-serif, 24 px for the line sample and gap.
    let width = |name: &str| 24 + 7 * name.len() as i32 + 16;
    let total: i32 = entries.iter().map(|(n, _)| width(n)).sum();
    let mut x = (W as i32 - total).max(0) / 2;
    let y = (LEGEND_H / 2) as i32;
    for (name, color) in entries {
        area.draw(&PathElement::new(
            vec![(x, y), (x + 18, y)],
            color.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?;
        area.draw(&Text::new(
            name.to_string(),
            (x + 24, y - 6),
            ("sans-serif", 12).into_font(),
        ))
        .map_err(|e| e.to_string())?;
        x += width(name);
    }
    Ok(())
}

/// Throughput per GPU (total tok/s/GPU) against interactivity (tok/s/user).
pub fn throughput_vs_interactivity(c: &Curves) -> Result<String, String> {
    line_chart(
        "Throughput per GPU vs interactivity",
        "Interactivity (tok/s/user)",
        "Total tok/s/GPU",
        &series(c, CurvePoint::interactivity, |p| p.total_tput_per_gpu),
        false,
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
    )
}

/// Output tokens per joule (1 / J per output token) against interactivity (tok/s/user), as
/// the InferenceX dashboard charts measured energy: the further up and right, the better.
/// `Err` (the caption says why) when no point carries energy.
pub fn tokens_per_joule_vs_interactivity(c: &Curves) -> Result<String, String> {
    let per_joule = |p: &CurvePoint| {
        p.joules_per_output_token
            .filter(|j| *j > 0.0)
            .map(|j| 1.0 / j)
    };
    if !c
        .baseline
        .iter()
        .chain(&c.candidate)
        .any(|p| per_joule(p).is_some())
    {
        return Err("no point carries energy (measured or modelled)".into());
    }
    line_chart(
        "Output tokens per joule vs interactivity",
        "Interactivity (tok/s/user)",
        "Output tok/J",
        &series(c, CurvePoint::interactivity, per_joule),
        false,
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
pub fn eval_scores(evals: &[EvalLine]) -> Result<String, String> {
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
            joules_per_output_token: None,
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

    /// `(y attribute, text-anchor, text)` of every `<text>` element of a plotters SVG.
    fn svg_texts(svg: &str) -> Vec<(i32, String, String)> {
        let attr = |tag: &str, name: &str| -> String {
            let k = format!(" {name}=\"");
            tag.split_once(&k)
                .and_then(|(_, r)| r.split_once('"'))
                .map(|(v, _)| v.to_string())
                .unwrap_or_default()
        };
        svg.split("<text")
            .skip(1)
            .map(|chunk| {
                let (tag, rest) = chunk.split_once('>').unwrap();
                let body = rest.split_once("</text>").unwrap().0.trim().to_string();
                (
                    attr(tag, "y").parse().unwrap(),
                    attr(tag, "text-anchor"),
                    body,
                )
            })
            .collect()
    }

    #[test]
    fn tokens_per_joule_is_charted_only_with_energy() {
        let mut c = Curves {
            baseline: vec![pt(1, 100.0, 60.0, 50.0), pt(8, 500.0, 90.0, 80.0)],
            candidate: vec![pt(1, 110.0, 58.0, 48.0)],
        };
        let e = tokens_per_joule_vs_interactivity(&c).unwrap_err();
        assert!(e.contains("no point carries energy"), "{e}");
        c.baseline[0].joules_per_output_token = Some(9.71);
        c.baseline[1].joules_per_output_token = Some(2.8);
        c.candidate[0].joules_per_output_token = Some(1.51);
        let svg = tokens_per_joule_vs_interactivity(&c).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("Output tok/J"));
    }

    fn ipt(conc: u32, intvty: f64, tput: f64) -> CurvePoint {
        CurvePoint {
            interactivity: Some(intvty),
            ..pt(conc, tput, 1000.0 / intvty, 50.0)
        }
    }

    /// Narrow interactivity ranges (a few tok/s/user, or less than one): the x tick labels
    /// carry enough decimals to be distinct (they repeated as `180 181 182 182 182 …` when
    /// rounded to integers), and the legend lies below the axis labels, outside the plot area.
    #[test]
    fn narrow_x_range_has_distinct_tick_labels_and_legend_outside() {
        for (a, b) in [
            (180.6, 183.7),
            (180.2, 180.9),
            (42.01, 42.06),
            (1000.0, 1012.0),
        ] {
            let c = Curves {
                baseline: vec![ipt(1, a, 900.0), ipt(4, b, 2400.0)],
                candidate: vec![
                    ipt(1, a + (b - a) * 0.1, 950.0),
                    ipt(4, b - (b - a) * 0.1, 2500.0),
                ],
            };
            let svg = throughput_vs_interactivity(&c).unwrap();
            let texts = svg_texts(&svg);
            let axis_y = texts
                .iter()
                .find(|t| t.2 == "Interactivity (tok/s/user)")
                .map(|t| t.0)
                .expect("x axis description");
            // X tick labels: centred numbers between the plot and the x axis description.
            let ticks: Vec<&str> = texts
                .iter()
                .filter(|t| t.1 == "middle" && t.0 > (H / 2) as i32 && t.0 < axis_y)
                .map(|t| t.2.as_str())
                .collect();
            assert!(ticks.len() >= 3, "{a}..{b}: ticks {ticks:?}");
            let mut uniq = ticks.clone();
            uniq.sort();
            uniq.dedup();
            assert_eq!(
                uniq.len(),
                ticks.len(),
                "{a}..{b}: repeated x tick labels {ticks:?}"
            );
            let values: Vec<f64> = ticks
                .iter()
                .map(|t| t.replace(',', "").parse::<f64>().unwrap())
                .collect();
            assert!(
                values.windows(2).all(|w| w[0] < w[1]),
                "{a}..{b}: ticks not increasing {ticks:?}"
            );
            assert!(
                values[0] >= a - (b - a) && *values.last().unwrap() <= b + (b - a),
                "{a}..{b}: ticks outside the data range {ticks:?}"
            );
            for name in ["baseline", "candidate"] {
                let l = texts.iter().find(|t| t.2 == name).expect(name);
                assert!(
                    l.0 > axis_y,
                    "{name} legend at y {} inside the plot (axis {axis_y})",
                    l.0
                );
            }
        }
    }

    #[test]
    fn tick_decimals_follow_the_step() {
        assert_eq!(tick_decimals(0.0, 3000.0, 8), 0);
        assert_eq!(tick_decimals(180.3, 184.0, 8), 1);
        assert_eq!(tick_decimals(180.2, 180.9, 8), 1);
        assert_eq!(tick_decimals(42.01, 42.06, 8), 2);
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
