//! The computations behind the distribution and frontier charts (issue 13 item 6): empirical
//! CDFs of per-request latencies, reduced to a drawable number of exact points, and the
//! throughput-vs-interactivity Pareto frontier of a run.
//!
//! Definitions:
//! * **Empirical CDF** of samples x₁…xₙ: F(x) = #{i : xᵢ ≤ x} / n, a right-continuous step
//!   function. [`ecdf`] returns one `[x, F(x)]` per distinct sample value (F at the value, ties
//!   counted together), so the last point has F = 1. Non-finite samples are dropped first.
//! * **Pareto frontier** on the (interactivity ↑, tok/s/GPU ↑) plane: the points no other point
//!   dominates, where `a` dominates `b` when `a` is at least as good in both and better in one
//!   (InferenceX draws the same frontier of its `tput_per_gpu` vs `intvty` scatter).

use crate::model::{Cdf, CurvePoint, ParetoPoint, ParetoRun, PointCdfs};

/// At most this many `[x, F]` points are kept per CDF (the chart is 560 px wide; a CDF of
/// 100,000 ITL gaps would otherwise put 100,000 vertices into the SVG).
pub const MAX_CDF_POINTS: usize = 400;

/// The empirical CDF of `samples` (ms), reduced to at most `max_points` points (see
/// [`reduce`]). Empty input → `n = 0`, no points.
pub fn ecdf(samples: &[f64], max_points: usize) -> Cdf {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mut points: Vec<[f64; 2]> = Vec::new();
    for (i, x) in v.iter().enumerate() {
        // The last of a run of equal values carries F = (index + 1) / n.
        if i + 1 < n && v[i + 1] == *x {
            continue;
        }
        points.push([*x, (i + 1) as f64 / n as f64]);
    }
    Cdf {
        n,
        points: reduce(points, max_points),
    }
}

/// Keeps at most `max_points` of the exact CDF points (`max_points` ≥ 2): for each k of
/// 1…max_points − 1 the first point with F ≥ k / (max_points − 1), plus the first point. Every
/// kept point is a point of the full CDF (no interpolation), the first and the last (F = 1)
/// are always kept, and the gap in F between kept neighbours is at most 1 / (max_points − 1)
/// plus one sample's step.
pub fn reduce(points: Vec<[f64; 2]>, max_points: usize) -> Vec<[f64; 2]> {
    let max_points = max_points.max(2);
    if points.len() <= max_points {
        return points;
    }
    let steps = (max_points - 1) as f64;
    let mut out = vec![points[0]];
    let mut j = 0usize;
    for k in 1..=(max_points - 1) {
        let target = k as f64 / steps;
        while j + 1 < points.len() && points[j][1] < target - 1e-12 {
            j += 1;
        }
        if out.last().is_some_and(|l| l[0] < points[j][0]) {
            out.push(points[j]);
        }
    }
    out
}

/// The CDFs of one point from its per-request samples (ms): TTFT, TPOT and E2EL per request,
/// ITL per gap.
pub fn point_cdfs(
    conc: u32,
    label: impl Into<String>,
    ttft_ms: &[f64],
    tpot_ms: &[f64],
    itl_ms: &[f64],
    e2el_ms: &[f64],
) -> PointCdfs {
    PointCdfs {
        conc,
        label: label.into(),
        ttft: ecdf(ttft_ms, MAX_CDF_POINTS),
        tpot: ecdf(tpot_ms, MAX_CDF_POINTS),
        itl: ecdf(itl_ms, MAX_CDF_POINTS),
        e2el: ecdf(e2el_ms, MAX_CDF_POINTS),
    }
}

/// The Pareto frontier of `points` (maximising both interactivity and tok/s/GPU), sorted by
/// interactivity ascending (so tok/s/GPU descending). Of points equal in both values one is
/// kept; non-finite points are ignored.
pub fn pareto_frontier(points: &[ParetoPoint]) -> Vec<ParetoPoint> {
    let mut v: Vec<ParetoPoint> = points
        .iter()
        .copied()
        .filter(|p| p.interactivity.is_finite() && p.tput_per_gpu.is_finite())
        .collect();
    // Best interactivity first; among equal interactivity the highest throughput first, so a
    // point with the same interactivity and less throughput is seen as dominated.
    v.sort_by(|a, b| {
        b.interactivity
            .total_cmp(&a.interactivity)
            .then(b.tput_per_gpu.total_cmp(&a.tput_per_gpu))
    });
    let mut best = f64::NEG_INFINITY;
    let mut front = Vec::new();
    for p in v {
        // Every point seen so far has interactivity ≥ p's: p survives only with strictly more
        // throughput than all of them.
        if p.tput_per_gpu > best {
            best = p.tput_per_gpu;
            front.push(p);
        }
    }
    front.reverse();
    front
}

/// A run on the Pareto chart from its curve points: interactivity from the row (else
/// `1000 / TPOT ms`, [`CurvePoint::interactivity`]) against total tok/s/GPU; points missing
/// either value are left out.
pub fn pareto_run(label: impl Into<String>, curve: &[CurvePoint]) -> ParetoRun {
    let mut points: Vec<ParetoPoint> = curve
        .iter()
        .filter_map(|c| {
            Some(ParetoPoint {
                conc: c.conc,
                interactivity: c.interactivity()?,
                tput_per_gpu: c.total_tput_per_gpu?,
            })
        })
        .filter(|p| p.interactivity.is_finite() && p.tput_per_gpu.is_finite())
        .collect();
    points.sort_by(|a, b| a.interactivity.total_cmp(&b.interactivity));
    let frontier = pareto_frontier(&points);
    ParetoRun {
        label: label.into(),
        points,
        frontier,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecdf_counts_ties_together_and_ends_at_one() {
        // Sorted: 1, 2, 2, 3 → F(1) = 1/4, F(2) = 3/4, F(3) = 4/4.
        let c = ecdf(&[3.0, 1.0, 2.0, 2.0], MAX_CDF_POINTS);
        assert_eq!(c.n, 4);
        assert_eq!(c.points, vec![[1.0, 0.25], [2.0, 0.75], [3.0, 1.0]]);
        // Non-finite samples are dropped before counting: n = 2.
        let c = ecdf(&[5.0, f64::NAN, 10.0, f64::INFINITY], MAX_CDF_POINTS);
        assert_eq!(c.n, 2);
        assert_eq!(c.points, vec![[5.0, 0.5], [10.0, 1.0]]);
        let e = ecdf(&[], MAX_CDF_POINTS);
        assert_eq!((e.n, e.points.len()), (0, 0));
    }

    #[test]
    fn reduced_cdf_keeps_exact_points_first_and_last() {
        // 1..=1000: F(x) = x / 1000 exactly.
        let s: Vec<f64> = (1..=1000).map(f64::from).collect();
        let c = ecdf(&s, 11);
        assert_eq!(c.n, 1000);
        // Targets k/10, k = 1..10 → x = 100, 200, …, 1000, plus the first point x = 1.
        let xs: Vec<f64> = c.points.iter().map(|p| p[0]).collect();
        assert_eq!(
            xs,
            vec![1.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0]
        );
        for p in &c.points {
            assert_eq!(p[1], p[0] / 1000.0, "{p:?} is not a point of the full CDF");
        }
        let big = ecdf(&s, MAX_CDF_POINTS);
        assert!(big.points.len() <= MAX_CDF_POINTS);
        assert_eq!(big.points.first(), Some(&[1.0, 0.001]));
        assert_eq!(big.points.last(), Some(&[1000.0, 1.0]));
        assert!(big
            .points
            .windows(2)
            .all(|w| w[0][0] < w[1][0] && w[0][1] < w[1][1]));
    }

    fn pp(conc: u32, interactivity: f64, tput_per_gpu: f64) -> ParetoPoint {
        ParetoPoint {
            conc,
            interactivity,
            tput_per_gpu,
        }
    }

    #[test]
    fn frontier_drops_dominated_points() {
        let pts = [
            pp(1, 100.0, 200.0),
            pp(2, 90.0, 380.0),
            pp(4, 70.0, 700.0),
            pp(8, 72.0, 650.0), // more interactive than c4, less throughput: on the frontier
            pp(16, 50.0, 690.0), // c4 has more of both: dominated
            pp(32, 40.0, 1200.0),
            pp(64, 40.0, 1100.0), // same interactivity as c32, less throughput: dominated
        ];
        let f: Vec<u32> = pareto_frontier(&pts).iter().map(|p| p.conc).collect();
        assert_eq!(f, vec![32, 4, 8, 2, 1]);
        // A single point is its own frontier; duplicates collapse to one.
        assert_eq!(pareto_frontier(&[pp(1, 5.0, 5.0)]).len(), 1);
        assert_eq!(
            pareto_frontier(&[pp(1, 5.0, 5.0), pp(2, 5.0, 5.0)]).len(),
            1
        );
        assert!(pareto_frontier(&[]).is_empty());
    }

    #[test]
    fn pareto_run_uses_1000_over_tpot_without_an_interactivity_value() {
        let c = |conc, tput: f64, tpot: f64, intvty: Option<f64>| CurvePoint {
            conc,
            total_tput_per_gpu: Some(tput),
            output_tput_per_gpu: None,
            interactivity: intvty,
            ttft_ms: None,
            tpot_ms: Some(tpot),
            joules_per_output_token: None,
        };
        let r = pareto_run(
            "run 1",
            &[
                c(1, 400.0, 5.0, None),         // 1000/5 = 200 tok/s/user
                c(4, 1200.0, 8.0, Some(124.0)), // the row's own value wins
                c(8, 1100.0, 10.0, None),       // 100 tok/s/user, less tput than c4: dominated
            ],
        );
        let got: Vec<(u32, f64)> = r.points.iter().map(|p| (p.conc, p.interactivity)).collect();
        assert_eq!(got, vec![(8, 100.0), (4, 124.0), (1, 200.0)]);
        let f: Vec<u32> = r.frontier.iter().map(|p| p.conc).collect();
        assert_eq!(f, vec![4, 1]);
    }
}
