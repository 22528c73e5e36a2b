//! Attaches the within-run confidence intervals of a `--ci` sweep (request bootstrap,
//! docs/measurement.md §12.3; `summary.json` `extras.points[].bootstrap`) to the compare
//! points loaded from the store, so compare's noise rule can use them
//! (`servebench_compare::ci`, docs/compare.md §4 rule 2c).

use std::collections::BTreeMap;
use std::path::Path;

use servebench_compare::Point;
use servebench_contracts::summary::summary_extras;

/// Sets [`Point::ci`] of `points` (one run's, in stored order) from `out_dir/summary.json`:
/// the k-th point of concurrency C gets the bootstrap of the extras point with `conc` C and
/// `repeat` k + 1. Keys `mean_ttft_ms` → `mean_ttft` (agg key), half-widths in ms. A run
/// without `--ci` (no bootstrap) or without a readable summary is left as it is.
pub fn attach_bootstrap(points: &mut [Point], out_dir: &Path) {
    let Some(extras) = std::fs::read_to_string(out_dir.join("summary.json"))
        .ok()
        .and_then(|t| summary_extras(&t).ok().flatten())
    else {
        return;
    };
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    for p in points.iter_mut() {
        let conc = p.identity.conc;
        let k = seen.entry(conc).or_insert(0);
        *k += 1;
        let repeat = *k;
        let Some(e) = extras
            .points
            .iter()
            .find(|e| e.conc == u64::from(conc) && e.repeat == repeat)
        else {
            continue;
        };
        for (key, h) in e.bootstrap_half_widths() {
            let agg = key.strip_suffix("_ms").unwrap_or(&key);
            p.ci.insert(agg.to_string(), h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_half_widths_land_on_the_matching_points() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("summary.json"),
            r#"{"extras": {"points": [
                {"conc": 1, "repeat": 1, "bootstrap": [
                    {"key": "mean_ttft_ms", "ci": {"half_width": 2.5}},
                    {"key": "p90_tpot_ms", "ci": {"half_width": 0.75}}]},
                {"conc": 4, "repeat": 1, "bootstrap": [
                    {"key": "mean_ttft_ms", "ci": {"half_width": 7.0}}]}
            ]}}"#,
        )
        .unwrap();
        let row = |conc: u32| {
            serde_json::json!({"hw": "h", "conc": conc, "image": "i:1", "model": "m",
                "infmax_model_prefix": "m", "framework": "f", "precision": "p",
                "spec_decoding": "none", "disagg": false, "isl": 1, "osl": 1,
                "is_multinode": false, "tp": 1, "pp": 1, "dcp_size": 1, "pcp_size": 1, "ep": 1,
                "dp_attention": "false", "point_status": "ok", "num_gpus": 1, "mean_ttft": 0.1})
        };
        let mut pts: Vec<Point> = [1, 4, 8]
            .iter()
            .map(|c| Point::from_agg_row(&row(*c)).unwrap())
            .collect();
        attach_bootstrap(&mut pts, dir.path());
        assert_eq!(pts[0].ci.get("mean_ttft"), Some(&2.5));
        assert_eq!(pts[0].ci.get("p90_tpot"), Some(&0.75));
        assert_eq!(pts[1].ci.get("mean_ttft"), Some(&7.0));
        assert!(pts[2].ci.is_empty(), "c8 has no extras entry");
    }
}
