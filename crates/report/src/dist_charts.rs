//! The issue-13 charts of the HTML report, drawn like [`crate::charts`] with plotters' SVG
//! backend into strings: latency CDFs per point (TTFT, TPOT, ITL, E2EL, with the SLO threshold
//! as a dashed vertical line when the run has `--slo`), the goodput curve (req/s against
//! concurrency, attainment on the right axis with the SLO target as a dashed line), and the
//! throughput-vs-interactivity Pareto of several runs (points per run, frontier line per run).
//!
//! Every chart is one `<svg role="img">` whose first child is a `<title>` (its accessible
//! name) and then a `<desc>` saying what is drawn; axes carry their units; a legend names every
//! curve. Nothing is loaded from anywhere.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::charts::{no_data, range, tick_decimals, H, LEGEND_H, W, X_LABELS, Y_LABELS};
use crate::html::esc;
use crate::model::{Cdf, GoodputCurve, ParetoRun, PointCdfs};

/// Series colours, in order (the first two are the baseline/candidate colours of
/// [`crate::charts`]).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(230, 110, 20),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Colour of the SLO lines (threshold on a CDF, attainment target on the goodput chart).
pub const SLO_COLOR: RGBColor = RGBColor(200, 30, 30);

/// Which latency a CDF chart shows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CdfMetric {
    /// Time to first token, per request.
    Ttft,
    /// Time per output token, per request.
    Tpot,
    /// Inter-token latency, per gap.
    Itl,
    /// End-to-end latency, per request.
    E2el,
}

impl CdfMetric {
    /// All four, in chart order.
    pub const ALL: [CdfMetric; 4] = [
        CdfMetric::Ttft,
        CdfMetric::Tpot,
        CdfMetric::Itl,
        CdfMetric::E2el,
    ];

    /// Short name, as in `--slo` (`ttft`, `tpot`, `itl`, `e2el`).
    pub fn key(self) -> &'static str {
        match self {
            CdfMetric::Ttft => "ttft",
            CdfMetric::Tpot => "tpot",
            CdfMetric::Itl => "itl",
            CdfMetric::E2el => "e2el",
        }
    }

    /// Display name (`TTFT`).
    pub fn name(self) -> &'static str {
        match self {
            CdfMetric::Ttft => "TTFT",
            CdfMetric::Tpot => "TPOT",
            CdfMetric::Itl => "ITL",
            CdfMetric::E2el => "E2EL",
        }
    }

    /// The CDF of this metric of a point.
    pub fn of(self, p: &PointCdfs) -> &Cdf {
        match self {
            CdfMetric::Ttft => &p.ttft,
            CdfMetric::Tpot => &p.tpot,
            CdfMetric::Itl => &p.itl,
            CdfMetric::E2el => &p.e2el,
        }
    }

    /// What one sample is (`requests`, `token gaps`), for the y axis.
    fn unit(self) -> &'static str {
        match self {
            CdfMetric::Itl => "token gaps",
            _ => "requests",
        }
    }
}

/// Makes a plotters SVG accessible: `role="img"` and `aria-labelledby` on the root, a `<title>`
/// (`title`) and a `<desc>` (`desc`) as its first children.
pub fn accessible(svg: String, id: &str, title: &str, desc: &str) -> String {
    let Some(end) = svg.find('>') else {
        return svg;
    };
    let (open, rest) = svg.split_at(end);
    let open = open.trim_end_matches('/');
    format!(
        "{open} role=\"img\" aria-labelledby=\"{id}-title {id}-desc\"><title id=\"{id}-title\">{}</title><desc id=\"{id}-desc\">{}</desc>{}",
        esc(title),
        esc(desc),
        &rest[1..]
    )
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// One legend entry: name, colour, drawn as a line (`true`) or a dot.
struct Entry {
    name: String,
    color: RGBColor,
    line: bool,
    dashed: bool,
}

/// The legend strip below a chart: entries laid out left to right, wrapping onto a second row
/// when they do not fit.
fn legend(area: &Area<'_>, entries: &[Entry]) -> Result<(), String> {
    let width = |e: &Entry| 24 + 7 * e.name.chars().count() as i32 + 14;
    let rows = {
        let mut rows: Vec<Vec<&Entry>> = vec![vec![]];
        let mut x = 0;
        for e in entries {
            if x + width(e) > W as i32 - 16 && !rows.last().unwrap().is_empty() {
                rows.push(vec![]);
                x = 0;
            }
            x += width(e);
            rows.last_mut().unwrap().push(e);
        }
        rows
    };
    for (r, row) in rows.iter().enumerate() {
        let total: i32 = row.iter().map(|e| width(e)).sum();
        let mut x = (W as i32 - total).max(0) / 2;
        let y = 10 + 16 * r as i32;
        for e in row {
            // Line samples are thin filled rectangles (not paths), so the data curves are the
            // only polylines of a chart.
            if e.line {
                let style = e.color.filled();
                if e.dashed {
                    for k in 0..3 {
                        area.draw(&Rectangle::new(
                            [(x + 7 * k, y - 1), (x + 7 * k + 4, y + 1)],
                            style,
                        ))
                        .map_err(|er| er.to_string())?;
                    }
                } else {
                    area.draw(&Rectangle::new([(x, y - 1), (x + 18, y + 1)], style))
                        .map_err(|er| er.to_string())?;
                }
            } else {
                area.draw(&Circle::new((x + 9, y), 4, e.color.filled()))
                    .map_err(|er| er.to_string())?;
            }
            area.draw(&Text::new(
                e.name.clone(),
                (x + 24, y - 6),
                ("sans-serif", 12).into_font(),
            ))
            .map_err(|er| er.to_string())?;
            x += width(e);
        }
    }
    Ok(())
}

fn legend_height(n: usize, names: usize) -> u32 {
    // A second row when the names would not fit on one (≈ 7 px per character).
    if n * 38 + names * 7 > W as usize - 16 {
        LEGEND_H + 16
    } else {
        LEGEND_H
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The empirical CDF of `metric` for every point of `points` (one step curve each), with the
/// SLO threshold `slo_ms` as a dashed vertical line. x: the latency in ms (linear); y: the
/// fraction of requests (token gaps for ITL) at or below it.
pub fn latency_cdf(
    metric: CdfMetric,
    points: &[PointCdfs],
    slo_ms: Option<f64>,
) -> Result<String, String> {
    let title = format!("{} CDF per point", metric.name());
    let shown: Vec<(usize, &PointCdfs)> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| !metric.of(p).points.is_empty())
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        if shown.is_empty() {
            no_data(&root, &title)?;
            root.present().map_err(err)?;
        } else {
            root.fill(&WHITE).map_err(err)?;
            let xs = shown
                .iter()
                .flat_map(|(_, p)| metric.of(p).points.iter().map(|q| q[0]))
                .chain(slo_ms);
            let (x0, x1) = range(xs, true);
            let mut entries: Vec<Entry> = shown
                .iter()
                .map(|(i, p)| Entry {
                    name: format!("{} (n={})", p.label, metric.of(p).n),
                    color: PALETTE[i % PALETTE.len()],
                    line: true,
                    dashed: false,
                })
                .collect();
            if let Some(s) = slo_ms {
                entries.push(Entry {
                    name: format!("SLO {} ≤ {} ms", metric.key(), crate::format::fmt_value(s)),
                    color: SLO_COLOR,
                    line: true,
                    dashed: true,
                });
            }
            let names: usize = entries.iter().map(|e| e.name.chars().count()).sum();
            let lh = legend_height(entries.len(), names);
            let (plot, leg) = root.split_vertically(H - lh);
            let mut chart = ChartBuilder::on(&plot)
                .caption(&title, ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(38)
                .y_label_area_size(56)
                .build_cartesian_2d(x0..x1, 0f64..1.0)
                .map_err(err)?;
            let x_dp = tick_decimals(x0, x1, X_LABELS);
            let xfmt = |v: &f64| crate::format::fmt_value_dp(*v, x_dp);
            let yfmt = |v: &f64| crate::format::fmt_value_dp(*v, 1);
            chart
                .configure_mesh()
                .x_labels(X_LABELS)
                .y_labels(Y_LABELS.min(6))
                .x_desc(format!("{} (ms)", metric.name()))
                .y_desc(format!("Fraction of {} ≤ x", metric.unit()))
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            for (i, p) in &shown {
                let color = PALETTE[i % PALETTE.len()];
                let pts = &metric.of(p).points;
                // Step curve: F is 0 left of the first sample, jumps at every sample.
                let mut line: Vec<(f64, f64)> = Vec::with_capacity(pts.len() * 2 + 1);
                let mut prev = 0.0;
                for q in pts {
                    line.push((q[0], prev));
                    line.push((q[0], q[1]));
                    prev = q[1];
                }
                line.push((x1, 1.0));
                chart
                    .draw_series(LineSeries::new(line, color.stroke_width(2)))
                    .map_err(err)?;
            }
            if let Some(s) = slo_ms {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(s, 0.0), (s, 1.0)],
                        6,
                        4,
                        SLO_COLOR.stroke_width(2),
                    ))
                    .map_err(err)?;
            }
            legend(&leg, &entries)?;
            root.present().map_err(err)?;
        }
    }
    let desc = if shown.is_empty() {
        format!("No {} samples.", metric.name())
    } else {
        format!(
            "Empirical CDF of {} in ms for {} point(s): {}{}.",
            metric.name(),
            shown.len(),
            shown
                .iter()
                .map(|(_, p)| format!("{} (n={})", p.label, metric.of(p).n))
                .collect::<Vec<_>>()
                .join(", "),
            slo_ms
                .map(|s| format!("; SLO threshold {} ms", crate::format::fmt_value(s)))
                .unwrap_or_default()
        )
    };
    Ok(accessible(
        svg,
        &format!("cdf-{}", metric.key()),
        &title,
        &desc,
    ))
}

/// Goodput (req/s meeting every SLO) and throughput (completed req/s) against concurrency
/// (log2 axis); on the right axis the SLO attainment (%) with the attainment target as a dashed
/// horizontal line. Points that miss the SLO are drawn hollow.
pub fn goodput_curve(g: &GoodputCurve) -> Result<String, String> {
    let title = format!("Goodput vs concurrency (SLO {})", g.slo);
    let mut pts = g.points.clone();
    pts.sort_by_key(|p| p.conc);
    let good = PALETTE[2];
    let thr = PALETTE[0];
    let att = PALETTE[4];
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        if pts.is_empty() {
            no_data(&root, &title)?;
            root.present().map_err(err)?;
        } else {
            root.fill(&WHITE).map_err(err)?;
            let tx = |c: u32| f64::from(c.max(1)).log2();
            let (x0, x1) = range(pts.iter().map(|p| tx(p.conc)), false);
            let (y0, y1) = range(
                pts.iter().flat_map(|p| [p.goodput_rps, p.throughput_rps]),
                true,
            );
            let entries = vec![
                Entry {
                    name: "throughput (completed) req/s".into(),
                    color: thr,
                    line: true,
                    dashed: false,
                },
                Entry {
                    name: "goodput req/s".into(),
                    color: good,
                    line: true,
                    dashed: false,
                },
                Entry {
                    name: "attainment %".into(),
                    color: att,
                    line: true,
                    dashed: false,
                },
                Entry {
                    name: format!("SLO target {}%", crate::format::fmt_value(g.target_pct)),
                    color: SLO_COLOR,
                    line: true,
                    dashed: true,
                },
            ];
            let names: usize = entries.iter().map(|e| e.name.chars().count()).sum();
            let lh = legend_height(entries.len(), names);
            let (plot, leg) = root.split_vertically(H - lh);
            let mut chart = ChartBuilder::on(&plot)
                .caption(&title, ("sans-serif", 15))
                .margin(10)
                .x_label_area_size(38)
                .y_label_area_size(56)
                .right_y_label_area_size(48)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(err)?
                .set_secondary_coord(x0..x1, 0f64..105.0);
            let y_dp = tick_decimals(y0, y1, Y_LABELS);
            let xfmt = |v: &f64| {
                let c = 2f64.powf(*v);
                if (c - c.round()).abs() < 0.05 {
                    format!("{}", c.round() as i64)
                } else {
                    String::new()
                }
            };
            let yfmt = |v: &f64| crate::format::fmt_value_dp(*v, y_dp);
            chart
                .configure_mesh()
                .x_labels(X_LABELS)
                .y_labels(Y_LABELS)
                .x_desc("Concurrency (requests in flight)")
                .y_desc("Requests per second (req/s)")
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            chart
                .configure_secondary_axes()
                .y_desc("SLO attainment (%)")
                .y_labels(6)
                .y_label_formatter(&|v: &f64| format!("{v:.0}"))
                .label_style(("sans-serif", 12).into_font().color(&att))
                .draw()
                .map_err(err)?;
            for (color, f) in [
                (
                    thr,
                    (|p: &crate::model::GoodputPoint| p.throughput_rps) as fn(&_) -> f64,
                ),
                (good, |p: &crate::model::GoodputPoint| p.goodput_rps),
            ] {
                let line: Vec<(f64, f64)> = pts.iter().map(|p| (tx(p.conc), f(p))).collect();
                chart
                    .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                    .map_err(err)?;
                chart
                    .draw_series(pts.iter().zip(&line).map(|(p, &(x, y))| {
                        let style = if p.meets_slo {
                            color.filled()
                        } else {
                            color.stroke_width(2)
                        };
                        Circle::new((x, y), 4, style)
                    }))
                    .map_err(err)?;
            }
            chart
                .draw_series(pts.iter().map(|p| {
                    Text::new(
                        format!("c{}", p.conc),
                        (tx(p.conc), p.goodput_rps),
                        ("sans-serif", 11).into_font().color(&good),
                    )
                }))
                .map_err(err)?;
            let att_line: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|p| Some((tx(p.conc), p.attainment_pct?)))
                .collect();
            chart
                .draw_secondary_series(LineSeries::new(att_line, att.stroke_width(2)))
                .map_err(err)?;
            chart
                .draw_secondary_series(DashedLineSeries::new(
                    vec![(x0, g.target_pct), (x1, g.target_pct)],
                    6,
                    4,
                    SLO_COLOR.stroke_width(2),
                ))
                .map_err(err)?;
            legend(&leg, &entries)?;
            root.present().map_err(err)?;
        }
    }
    let knee = pts.iter().filter(|p| p.meets_slo).map(|p| p.conc).max();
    let desc = format!(
        "Goodput and throughput in req/s at {} concurrencies ({}); SLO {} with attainment target {}%; {}.",
        pts.len(),
        pts.iter()
            .map(|p| format!("c{}", p.conc))
            .collect::<Vec<_>>()
            .join(", "),
        g.slo,
        crate::format::fmt_value(g.target_pct),
        match knee {
            Some(k) => format!("the highest concurrency meeting it is {k}"),
            None => "no point meets it".into(),
        }
    );
    Ok(accessible(svg, "goodput", &title, &desc))
}

/// Total tok/s/GPU against interactivity (tok/s/user) for several runs: every point of a run
/// as a dot labelled `c<conc>`, and the run's Pareto frontier as a line through its frontier
/// points (in the run's colour).
pub fn pareto(runs: &[ParetoRun]) -> Result<String, String> {
    let title = "Throughput vs interactivity, Pareto per run";
    let mut svg = String::new();
    let shown: Vec<(usize, &ParetoRun)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.points.is_empty())
        .collect();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        if shown.is_empty() {
            no_data(&root, title)?;
            root.present().map_err(err)?;
        } else {
            root.fill(&WHITE).map_err(err)?;
            let (x0, x1) = range(
                shown
                    .iter()
                    .flat_map(|(_, r)| r.points.iter().map(|p| p.interactivity)),
                true,
            );
            let (y0, y1) = range(
                shown
                    .iter()
                    .flat_map(|(_, r)| r.points.iter().map(|p| p.tput_per_gpu)),
                true,
            );
            let entries: Vec<Entry> = shown
                .iter()
                .map(|(i, r)| Entry {
                    name: r.label.clone(),
                    color: PALETTE[i % PALETTE.len()],
                    line: true,
                    dashed: false,
                })
                .collect();
            let names: usize = entries.iter().map(|e| e.name.chars().count()).sum();
            let lh = legend_height(entries.len(), names);
            let (plot, leg) = root.split_vertically(H - lh);
            let mut chart = ChartBuilder::on(&plot)
                .caption(title, ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(38)
                .y_label_area_size(64)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(err)?;
            let x_dp = tick_decimals(x0, x1, X_LABELS);
            let y_dp = tick_decimals(y0, y1, Y_LABELS);
            let xfmt = |v: &f64| crate::format::fmt_value_dp(*v, x_dp);
            let yfmt = |v: &f64| crate::format::fmt_value_dp(*v, y_dp);
            chart
                .configure_mesh()
                .x_labels(X_LABELS)
                .y_labels(Y_LABELS)
                .x_desc("Interactivity (tok/s/user = 1000 / TPOT ms)")
                .y_desc("Total tok/s/GPU")
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            for (i, r) in &shown {
                let color = PALETTE[i % PALETTE.len()];
                let front: Vec<(f64, f64)> = r
                    .frontier
                    .iter()
                    .map(|p| (p.interactivity, p.tput_per_gpu))
                    .collect();
                chart
                    .draw_series(LineSeries::new(front, color.stroke_width(2)))
                    .map_err(err)?;
                chart
                    .draw_series(
                        r.points.iter().map(|p| {
                            Circle::new((p.interactivity, p.tput_per_gpu), 4, color.filled())
                        }),
                    )
                    .map_err(err)?;
                chart
                    .draw_series(r.points.iter().map(|p| {
                        Text::new(
                            format!("c{}", p.conc),
                            (p.interactivity, p.tput_per_gpu),
                            ("sans-serif", 11).into_font().color(&color),
                        )
                    }))
                    .map_err(err)?;
            }
            legend(&leg, &entries)?;
            root.present().map_err(err)?;
        }
    }
    let desc = format!(
        "Total tok/s/GPU against interactivity in tok/s/user for {} run(s): {}.",
        shown.len(),
        shown
            .iter()
            .map(|(_, r)| format!(
                "{} ({} points, {} on the frontier)",
                r.label,
                r.points.len(),
                r.frontier.len()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok(accessible(svg, "pareto", title, &desc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{pareto_run, point_cdfs};
    use crate::model::{CurvePoint, GoodputPoint};

    /// Texts of every `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .map(|c| {
                let body = c.split_once('>').unwrap().1;
                body.split_once("</text>").unwrap().0.trim().to_string()
            })
            .collect()
    }

    /// Vertex counts of the data curves: every `<polyline>` 2 px wide (mesh and axis lines
    /// are 1 px) but the dashes of the SLO lines (drawn in [`SLO_COLOR`]).
    fn polylines(svg: &str) -> Vec<usize> {
        svg.split("<polyline")
            .skip(1)
            .map(|c| c.split_once("/>").unwrap().0)
            .filter(|c| c.contains("stroke-width=\"2\"") && !c.to_uppercase().contains("#C81E1E"))
            .map(|c| {
                let pts = c
                    .split_once("points=\"")
                    .unwrap()
                    .1
                    .split_once('"')
                    .unwrap()
                    .0;
                pts.split_whitespace().count()
            })
            .collect()
    }

    fn circles(svg: &str) -> usize {
        svg.matches("<circle").count()
    }

    #[test]
    fn cdf_chart_has_one_step_curve_per_point_units_legend_and_title() {
        let a = point_cdfs(1, "c1", &[10.0, 20.0, 30.0], &[5.0], &[1.0, 2.0], &[100.0]);
        let b = point_cdfs(4, "c4", &[15.0, 25.0], &[6.0], &[1.5], &[120.0]);
        let svg = latency_cdf(CdfMetric::Ttft, &[a, b], Some(40.0)).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("role=\"img\""));
        assert!(svg.contains("<title id=\"cdf-ttft-title\">TTFT CDF per point</title>"));
        let t = texts(&svg);
        for want in [
            "TTFT (ms)",
            "Fraction of requests ≤ x",
            "c1 (n=3)",
            "c4 (n=2)",
            "SLO ttft ≤ 40 ms",
        ] {
            assert!(
                t.iter().any(|x| x == want),
                "missing text {want:?} in {t:?}"
            );
        }
        // Step curves: 2 vertices per distinct sample + the end at F = 1 (c1: 3 → 7, c4: 2 → 5);
        // the SLO line is dashed (path segments, not a polyline).
        let mut lines = polylines(&svg);
        lines.sort();
        assert_eq!(lines, vec![5, 7], "{svg}");
        // ITL: the y axis counts gaps.
        let a = point_cdfs(1, "c1", &[], &[], &[1.0, 2.0], &[]);
        let svg = latency_cdf(CdfMetric::Itl, &[a], None).unwrap();
        assert!(texts(&svg)
            .iter()
            .any(|x| x == "Fraction of token gaps ≤ x"));
        assert!(!svg.contains("SLO"));
        // No samples: a titled "no data" chart.
        let e = latency_cdf(CdfMetric::E2el, &[], None).unwrap();
        assert!(e.contains("no data") && e.contains("<title"));
    }

    #[test]
    fn goodput_chart_marks_points_missing_the_slo_and_draws_the_target() {
        let g = GoodputCurve {
            slo: "ttft=50ms,tpot=10ms@p90".into(),
            objectives: vec![("ttft".into(), 50.0), ("tpot".into(), 10.0)],
            target_pct: 90.0,
            points: vec![
                GoodputPoint {
                    conc: 1,
                    throughput_rps: 5.0,
                    goodput_rps: 5.0,
                    attainment_pct: Some(100.0),
                    meets_slo: true,
                },
                GoodputPoint {
                    conc: 2,
                    throughput_rps: 9.0,
                    goodput_rps: 8.5,
                    attainment_pct: Some(94.0),
                    meets_slo: true,
                },
                GoodputPoint {
                    conc: 4,
                    throughput_rps: 16.0,
                    goodput_rps: 6.0,
                    attainment_pct: Some(37.5),
                    meets_slo: false,
                },
            ],
        };
        let svg = goodput_curve(&g).unwrap();
        let t = texts(&svg);
        for want in [
            "Concurrency (requests in flight)",
            "Requests per second (req/s)",
            "SLO attainment (%)",
            "goodput req/s",
            "throughput (completed) req/s",
            "SLO target 90%",
            "c1",
            "c2",
            "c4",
        ] {
            assert!(
                t.iter().any(|x| x == want),
                "missing text {want:?} in {t:?}"
            );
        }
        // Throughput, goodput and attainment polylines of 3 points each.
        assert_eq!(polylines(&svg), vec![3, 3, 3]);
        // 3 markers per curve (2 curves); the c4 ones are hollow (fill="none").
        assert_eq!(circles(&svg), 6);
        let hollow = svg
            .split("<circle")
            .skip(1)
            .filter(|c| c.split_once("/>").unwrap().0.contains("fill=\"none\""))
            .count();
        assert_eq!(hollow, 2, "{svg}");
        assert!(svg.contains("the highest concurrency meeting it is 2"));
    }

    #[test]
    fn pareto_chart_has_points_and_a_frontier_per_run() {
        let c = |conc, tput: f64, tpot: f64| CurvePoint {
            conc,
            total_tput_per_gpu: Some(tput),
            output_tput_per_gpu: None,
            interactivity: None,
            ttft_ms: None,
            tpot_ms: Some(tpot),
            joules_per_output_token: None,
        };
        let r1 = pareto_run(
            "run 1 · sim-h200",
            &[c(1, 400.0, 5.0), c(4, 1200.0, 8.0), c(8, 1100.0, 10.0)],
        );
        let r2 = pareto_run("run 2 · sim-b200", &[c(1, 700.0, 3.0), c(4, 2000.0, 5.0)]);
        let svg = pareto(&[r1, r2]).unwrap();
        let t = texts(&svg);
        for want in [
            "Interactivity (tok/s/user = 1000 / TPOT ms)",
            "Total tok/s/GPU",
            "run 1 · sim-h200",
            "run 2 · sim-b200",
        ] {
            assert!(
                t.iter().any(|x| x == want),
                "missing text {want:?} in {t:?}"
            );
        }
        // One dot per point (3 + 2), one frontier line per run (run 1: c8 dominated → 2
        // vertices; run 2: 2).
        assert_eq!(circles(&svg), 5);
        assert_eq!(polylines(&svg), vec![2, 2]);
        assert_eq!(t.iter().filter(|x| x.starts_with('c')).count(), 5);
        assert!(svg.contains("run 1 · sim-h200 (3 points, 2 on the frontier)"));
    }

    #[test]
    fn accessible_adds_title_and_desc_as_first_children() {
        let s = accessible(
            "<svg width=\"1\" xmlns=\"x\"><rect/></svg>".into(),
            "k",
            "A <b>",
            "d",
        );
        assert_eq!(
            s,
            "<svg width=\"1\" xmlns=\"x\" role=\"img\" aria-labelledby=\"k-title k-desc\"><title id=\"k-title\">A &lt;b&gt;</title><desc id=\"k-desc\">d</desc><rect/></svg>"
        );
    }
}
