//! The stored per-configuration noise floor (issue 28, docs/compare.md §4a): how much a metric
//! moves between runs of the **same** configuration and image (A/A runs) in the store. A
//! bootstrap inside one run cannot see what changes between runs (a loaded host, a warmer
//! cache); the floor can, and compare's gate becomes the larger of `--gate` and the floor.
//!
//! For a baseline point, every stored non-baseline run with a point of the same match
//! identity and the same image (the candidate's runs excluded) gives one value per metric (each
//! repeat one value). With at least [`MIN_RUNS`] values, the floor of a metric is the 95 %
//! band of the difference of two single runs, relative to their mean:
//! `1.96 · √2 · sd / |mean| · 100` %.

use std::collections::BTreeMap;
use std::path::Path;

use servebench_compare::{Metric, Point, PointKey, Stat};
use servebench_store::{RunKind, StoredRow};

use crate::error::Result;

/// Fewest stored values of a configuration before it has a noise floor.
pub const MIN_RUNS: usize = 3;

/// The floor (%) of values `v`: `1.96·√2·sd/|mean|·100`, `None` under [`MIN_RUNS`] values or a
/// zero mean.
pub fn floor_pct(v: &[f64]) -> Option<f64> {
    let n = v.len();
    if n < MIN_RUNS {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    if mean == 0.0 || !mean.is_finite() {
        return None;
    }
    let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
    Some(1.959_964 * std::f64::consts::SQRT_2 * sd / mean.abs() * 100.0)
}

/// Sets [`Point::noise_floor`] of the baseline `points` from the store at `db` (no store: no
/// floor) and returns `(values behind the largest floor, metric label → largest floor %)` for
/// the report line; runs in `exclude` (the candidate's) do not count.
pub fn attach(
    db: &Path,
    points: &mut [Point],
    exclude: &[i64],
    stat: Stat,
) -> Result<Option<(usize, BTreeMap<&'static str, f64>)>> {
    if !db.exists() || points.is_empty() {
        return Ok(None);
    }
    let store = servebench_store::Store::open(db)?;
    // (identity, image) → the runs' values per agg key
    let mut pool: BTreeMap<(PointKey, Option<String>), BTreeMap<String, Vec<f64>>> =
        BTreeMap::new();
    let wanted: Vec<(PointKey, Option<String>)> = points
        .iter()
        .map(|p| (p.identity.match_key(), p.image.clone()))
        .collect();
    for run in store.list_runs(None, None)? {
        if run.kind == RunKind::Baseline || exclude.contains(&run.id.0) {
            continue;
        }
        for sp in store.points(run.id)? {
            let StoredRow::Servebench(r) = &sp.row else {
                continue;
            };
            let Ok(p) = Point::from_agg(r) else {
                continue;
            };
            if p.status != servebench_compare::PointStatus::Ok {
                continue;
            }
            let key = (p.identity.match_key(), p.image.clone());
            if !wanted.contains(&key) {
                continue;
            }
            let e = pool.entry(key).or_default();
            for m in Metric::ALL {
                if let Some(v) = p.values.get(&m.agg_key(stat)) {
                    e.entry(m.agg_key(stat)).or_default().push(*v);
                }
            }
        }
    }
    let mut shown: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut runs = 0;
    for p in points.iter_mut() {
        let Some(values) = pool.get(&(p.identity.match_key(), p.image.clone())) else {
            continue;
        };
        for m in Metric::ALL {
            let k = m.agg_key(stat);
            if let Some(f) = values.get(&k).and_then(|v| floor_pct(v)) {
                p.noise_floor.insert(k.clone(), f);
                let e = shown.entry(m.label()).or_insert(0.0);
                if f > *e {
                    *e = f;
                }
                runs = runs.max(values[&k].len());
            }
        }
    }
    Ok((!shown.is_empty()).then_some((runs, shown)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_is_the_two_run_band_of_the_spread() {
        // 100, 110, 90: mean 100, sd 10 → 1.96·√2·10% = 27.72 %
        let f = floor_pct(&[100.0, 110.0, 90.0]).unwrap();
        assert!((f - 27.718).abs() < 1e-2, "{f}");
        assert_eq!(floor_pct(&[100.0, 110.0]), None, "two runs are not enough");
        assert_eq!(floor_pct(&[0.0, 0.0, 0.0]), None);
    }
}
