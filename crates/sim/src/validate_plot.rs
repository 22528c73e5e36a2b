//! The predicted-vs-measured chart of a [`Validation`]: one panel per metric, log–log, one
//! colour per GPU (filled: the fitted hardware, hollow: test sets), the y = x line and the
//! ±20 % band. SVG via plotters' SVG backend (text left to the viewer as `<text>`).

use plotters::prelude::*;

use crate::validate::{Metric, Validation};

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(230, 110, 20),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
];

/// Draws the chart as an SVG document (1500 × 500 px).
///
/// Errors: no modelled row to plot (`nothing to plot: 0 rows modelled`); plotters' drawing
/// error, as text.
pub fn svg(v: &Validation) -> Result<String, String> {
    if v.rows.is_empty() {
        return Err("nothing to plot: 0 rows modelled".to_string());
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1500, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((1, 3));
        let hws: Vec<&String> = v.by_hardware.keys().collect();
        for (panel, m) in panels.iter().zip(Metric::ALL) {
            let (scale, unit) = match m {
                Metric::OutputTputPerGpu => (1.0, "tok/s/GPU"),
                _ => (1e3, "ms"),
            };
            let pts: Vec<(usize, bool, f64, f64)> = v
                .rows
                .iter()
                .filter_map(|r| {
                    let (p, q) = (r.predicted.get(m) * scale, r.measured.get(m) * scale);
                    let hw = hws.iter().position(|h| **h == r.hardware)?;
                    (p.is_finite() && q.is_finite() && p > 0.0 && q > 0.0).then_some((
                        hw,
                        v.fit.contains(&r.hardware),
                        q,
                        p,
                    ))
                })
                .collect();
            let lo = pts
                .iter()
                .flat_map(|p| [p.2, p.3])
                .fold(f64::INFINITY, f64::min)
                .max(1e-3);
            let hi = pts
                .iter()
                .flat_map(|p| [p.2, p.3])
                .fold(lo * 10.0, f64::max);
            // A metric no row has (an empty panel) gets a plain 1–10 axis: a log axis over an
            // infinite range asks plotters for unbounded tick memory.
            let (lo, hi) = if pts.is_empty() {
                (1.0, 10.0)
            } else {
                (lo / 1.2, hi * 1.2)
            };
            let mut c = ChartBuilder::on(panel)
                .caption(format!("{} ({unit})", m.key()), ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(55)
                .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
                .map_err(|e| e.to_string())?;
            c.configure_mesh()
                .x_desc("measured")
                .y_desc("predicted")
                .draw()
                .map_err(|e| e.to_string())?;
            for (f, style) in [
                (1.0, BLACK.stroke_width(1)),
                (1.2, BLACK.mix(0.3).stroke_width(1)),
                (1.0 / 1.2, BLACK.mix(0.3).stroke_width(1)),
            ] {
                c.draw_series(LineSeries::new([(lo, lo * f), (hi, hi * f)], style))
                    .map_err(|e| e.to_string())?;
            }
            for (i, hw) in hws.iter().enumerate() {
                let col = COLOURS[i % COLOURS.len()];
                let fitted = v.fit.contains(hw);
                let s = c
                    .draw_series(pts.iter().filter(|p| p.0 == i).map(|p| {
                        let style = if p.1 {
                            col.filled()
                        } else {
                            col.stroke_width(1)
                        };
                        Circle::new((p.2, p.3), 3, style)
                    }))
                    .map_err(|e| e.to_string())?;
                let label = format!("{hw}{}", if fitted { " (fit)" } else { "" });
                s.label(label)
                    .legend(move |(x, y)| Circle::new((x, y), 4, col.filled()));
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::{validate, RealRow};

    /// No modelled row: a one-line error, not a plot over an infinite log range (which made
    /// plotters allocate without bound and the process die for memory).
    #[test]
    fn nothing_modelled_is_an_error_not_an_unbounded_axis() {
        let v = validate(&Vec::<RealRow>::new(), None);
        assert_eq!(svg(&v).unwrap_err(), "nothing to plot: 0 rows modelled");
    }
}
