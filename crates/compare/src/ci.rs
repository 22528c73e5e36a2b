//! Confidence intervals in the noise rule (issue 13 item 3, docs/measurement.md §12.3): with
//! `--repeats N` every statistic of a point has Student's t-interval over its repeats,
//! `mean ± t(0.975, N−1)·s/√N` (s with divisor N − 1; `servebench_metrics::confidence`), and
//! compare reports a delta that lies within the **combined** interval of the two sides as
//! noise (`no_change`).
//!
//! Combined half-width of the difference of two independent means:
//! `h = √(h_b² + h_c²)` (the half-widths add in quadrature, as the variances of independent
//! estimates do; a side without repeats contributes 0). The difference `|c − b|` within `h`
//! is not distinguishable from run-to-run noise at about the 95 % level.
//!
//! A side without repeats that ran with `--ci` has a within-run interval instead: the seeded
//! request bootstrap of the statistic (`summary.json` `extras.points[].bootstrap`, carried in
//! [`Point::ci`]); it enters the same formula (with repeats, the t-interval wins: it also
//! covers run-to-run variation).

use crate::{Metric, Point, Spread, Stat};

/// Two-sided 95 % Student t quantile: the one definition in `servebench-contracts`, shared with
/// the intervals `--repeats N` prints (`servebench_metrics::confidence`).
pub use servebench_contracts::stats::t_975;

/// Half-width of the 95 % t-interval of a side's mean from its repeat spread,
/// `t(0.975, n−1)·sd/√n`; `None` without at least 2 repeats.
pub fn t_half_width(s: &Spread) -> Option<f64> {
    if s.n < 2 {
        return None;
    }
    let sd = s.sd?;
    let h = t_975(s.n - 1) * sd / (s.n as f64).sqrt();
    h.is_finite().then_some(h)
}

/// Combined half-width `√(h_b² + h_c²)` of the two sides' t-intervals; `None` when neither
/// side has an interval (no repeats on either side: the rule does not apply).
pub fn combined_half_width(base: Option<&Spread>, cand: Option<&Spread>) -> Option<f64> {
    let hb = base.and_then(t_half_width);
    let hc = cand.and_then(t_half_width);
    if hb.is_none() && hc.is_none() {
        return None;
    }
    let (hb, hc) = (hb.unwrap_or(0.0), hc.unwrap_or(0.0));
    Some((hb * hb + hc * hc).sqrt())
}

/// Half-width of one side's 95 % interval for `metric` at `stat` (display units): the
/// t-interval over its repeats when it has ≥ 2 ([`t_half_width`]), else the within-run
/// bootstrap interval of a `--ci` run ([`Point::ci`]), else `None`.
pub fn side_half_width(
    p: &Point,
    spread: Option<&Spread>,
    metric: Metric,
    stat: Stat,
) -> Option<f64> {
    spread
        .and_then(t_half_width)
        .or_else(|| p.ci.get(&metric.agg_key(stat)).copied())
        .filter(|h| h.is_finite() && *h >= 0.0)
}

/// Whether `|cand − base|` lies within `√(h_b² + h_c²)` of two sides' half-widths (a side
/// without an interval contributes 0; neither side: `false`, the rule does not apply).
pub fn within(base: f64, cand: f64, hb: Option<f64>, hc: Option<f64>) -> bool {
    if hb.is_none() && hc.is_none() {
        return false;
    }
    let (hb, hc) = (hb.unwrap_or(0.0), hc.unwrap_or(0.0));
    (cand - base).abs() <= (hb * hb + hc * hc).sqrt()
}

/// Whether `cand − base` lies within the combined confidence interval of the two sides.
pub fn within_combined_ci(base: f64, cand: f64, b: Option<&Spread>, c: Option<&Spread>) -> bool {
    combined_half_width(b, c).is_some_and(|h| (cand - base).abs() <= h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_width_of_case_b20_repeats() {
        // 100, 112, 95, 108, 118: mean 106.6, s = 9.2087, t(0.975, 4) = 2.7764 →
        // 2.7764 · 9.2087 / √5 = 11.434 (docs/measurement.md §12.3: `106.6 ± 11.4`).
        let s = Spread::of(&[100.0, 112.0, 95.0, 108.0, 118.0]).unwrap();
        let h = t_half_width(&s).unwrap();
        assert!((h - 11.434).abs() < 1e-3, "{h}");
    }

    #[test]
    fn combined_half_width_adds_in_quadrature() {
        // Baseline 100, 110: s = √50 = 7.0711, t(0.975, 1) = 12.7062 → h_b = 12.7062 · 5 = 63.531.
        let b = Spread::of(&[100.0, 110.0]).unwrap();
        assert!((t_half_width(&b).unwrap() - 63.531).abs() < 1e-3);
        // Candidate 120, 123, 126: s = 3, t(0.975, 2) = 4.3027 → h_c = 4.3027 · 3 / √3 = 7.4525.
        let c = Spread::of(&[120.0, 123.0, 126.0]).unwrap();
        assert!((t_half_width(&c).unwrap() - 7.4525).abs() < 1e-4);
        // √(63.531² + 7.4525²) = √(4036.19 + 55.54) = 63.967.
        let h = combined_half_width(Some(&b), Some(&c)).unwrap();
        assert!((h - 63.967).abs() < 1e-3, "{h}");
        // One side only: its own half-width; neither: no rule.
        assert!((combined_half_width(None, Some(&c)).unwrap() - 7.4525).abs() < 1e-4);
        assert_eq!(combined_half_width(None, None), None);
        let single = Spread::of(&[100.0]).unwrap();
        assert_eq!(combined_half_width(Some(&single), None), None);
        // Δ = 123 − 105 = 18 ≤ 63.967: noise; candidate alone vs a single baseline run of
        // 105: 18 > 7.4525, not noise.
        assert!(within_combined_ci(105.0, 123.0, Some(&b), Some(&c)));
        assert!(!within_combined_ci(105.0, 123.0, None, Some(&c)));
        // Bootstrap half-widths of two single runs, 3 and 4 ms: combined 5 ms.
        assert!(within(100.0, 105.0, Some(3.0), Some(4.0)));
        assert!(!within(100.0, 105.1, Some(3.0), Some(4.0)));
        assert!(!within(100.0, 100.0, None, None));
    }
}
