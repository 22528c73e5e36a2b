//! Attaches the within-run confidence intervals of a `--ci` sweep (request bootstrap,
//! docs/measurement.md §12.3; `summary.json` `extras.points[].bootstrap`) to the compare
//! points loaded from the store, so compare's noise rule can use them
//! (`servebench_compare::ci`, docs/compare.md §4 rule 2c).

use std::collections::BTreeMap;
use std::path::Path;

use servebench_compare::evidence::{RequestSample, Samples};
use servebench_compare::Point;
use servebench_contracts::summary::summary_extras;

/// Sets [`Point::samples`] of one run's `points` (in stored order) from their `records.jsonl`
/// under `out_dir` (`conc<C>/`, with repeats `conc<C>-r<k>/`; the file named by each row's
/// `records_file`), in modelled time (× the point's `result.json` time scale): the successful
/// measured requests' TTFT, TPOT, E2EL, ITL gaps, token counts, and the client lag
/// `queue_ms` (wall ms). A point whose records cannot be read keeps `None` (compare then uses
/// its noise rule for it) and the reason is returned, one line each.
pub fn attach_samples(
    points: &mut [Point],
    records_files: &[Option<String>],
    out_dir: &Path,
) -> Vec<String> {
    let mut notes = Vec::new();
    let read_lag = simulator_read_lag(out_dir);
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    for (p, file) in points.iter_mut().zip(records_files) {
        let conc = p.identity.conc;
        let k = seen.entry(conc).or_insert(0);
        *k += 1;
        let Some(file) = file.as_deref().filter(|f| !f.is_empty()) else {
            continue;
        };
        let dirs = crate::report_charts::point_dirs(out_dir, u64::from(conc));
        let Some((_, dir)) = dirs.get(*k - 1).or(dirs.first()) else {
            continue;
        };
        let path = dir.join(file);
        let records = match servebench_client::read_records(&path) {
            Ok(r) => r,
            Err(e) => {
                notes.push(format!("c{conc}: {e:#}"));
                continue;
            }
        };
        let ts = crate::report_charts::time_scale(dir);
        let mut s = Samples {
            time_scale: ts,
            ..Samples::default()
        };
        for r in records
            .iter()
            .filter(|r| r.phase == servebench_client::Phase::Measured && r.success)
        {
            s.requests.push(RequestSample {
                ttft: r.ttft_ms.map(|x| x * ts),
                tpot: r.tpot_ms.map(|x| x * ts),
                e2el: r.e2el_ms.map(|x| x * ts),
                itl: r.itl_ms.iter().map(|x| f64::from(*x) * ts).collect(),
                output_tokens: r.output_tokens as f64,
                input_tokens: r
                    .prompt_tokens_server
                    .map(|x| x as f64)
                    .or(r.prompt_tokens_client.map(f64::from))
                    .unwrap_or(0.0),
            });
            s.lag_ms.push(r.queue_ms);
            if !read_lag.is_empty() {
                s.server_lag_ms.push(
                    r.response_id
                        .as_ref()
                        .and_then(|id| read_lag.get(id))
                        .copied()
                        .unwrap_or(0.0),
                );
            }
        }
        if !s.requests.is_empty() {
            p.samples = Some(std::sync::Arc::new(s));
        }
    }
    notes
}

/// The embedded simulator's lag per response id, wall ms, from `out_dir/sim-emission.jsonl`:
/// its read lag `received_ns − request_arrived_ns` (how long the request's bytes waited in the
/// kernel before the simulator parsed them) plus `engine_late_ns` (the latest its engine loop
/// published one of the request's steps after the step's wall-clock target). A starved host
/// shows in both. Empty without the log.
fn simulator_read_lag(out_dir: &Path) -> BTreeMap<String, f64> {
    let Ok(text) = std::fs::read_to_string(out_dir.join("sim-emission.jsonl")) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let id = v["id"].as_str()?.to_string();
            let arrived = v["request_arrived_ns"].as_u64()?;
            let received = v["received_ns"].as_u64()?;
            let late = v["engine_late_ns"].as_u64().unwrap_or(0);
            Some((id, (received.saturating_sub(arrived) + late) as f64 / 1e6))
        })
        .collect()
}

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
