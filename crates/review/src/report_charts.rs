//! Chart data of the HTML report that the agg rows alone cannot give (issue 13 item 6): the
//! latency CDFs and the goodput curve of a stored run, read from each point's `records.jsonl`
//! (located through the run's `out_dir`), and the throughput-vs-interactivity Pareto of several
//! stored runs (`servebench report --runs 12,15,19`).
//!
//! Latencies are in modelled time against the simulator (record values × the point's
//! `servebench.time_scale` from `result.json`), like every printed number. Goodput follows
//! docs/measurement.md §12.1 (`servebench_metrics::goodput`), under the `--slo` given to
//! `report`, else the one the sweep ran with (`summary.json` `extras.slo`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use servebench_client::{read_records, RequestRecord};
use servebench_compare::Stat;
use servebench_metrics::goodput::{goodput, Slo};
use servebench_report::comparison::{build_run, BuildOptions};
use servebench_report::dist::{pareto_run, point_cdfs};
use servebench_report::model::{ChartData, GoodputCurve, GoodputPoint, ParetoRun, PointCdfs};
use servebench_report::Document;
use servebench_store::{RunId, RunKind, Store};

use crate::error::{flag, Result, ReviewError};
use crate::sides::{load_side, open_store};

/// Which chart data to load.
#[derive(Debug, Clone)]
pub struct ChartRequest {
    /// Results store.
    pub db: PathBuf,
    /// The report's run (`latest`, ids, or a file: files have no records, so no CDFs).
    pub run: String,
    /// `--runs`: stored runs for the Pareto chart, `12,15,19`.
    pub runs: Option<String>,
    /// `--slo` for the goodput curve (overrides the sweep's own).
    pub slo: Option<String>,
    /// Latency statistic of the Pareto's TPOT (interactivity = 1000 / TPOT).
    pub stat: Stat,
}

/// Parses `--runs`: comma-separated store run ids; anything else is a one-line error naming
/// the bad part.
pub fn parse_runs(s: &str) -> Result<Vec<RunId>> {
    let ids: Vec<RunId> = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<i64>()
                .ok()
                .filter(|v| *v > 0)
                .map(RunId)
                .ok_or_else(|| flag!("--runs {s:?}: {:?} is not a run id", p.trim()))
        })
        .collect::<Result<_>>()?;
    if ids.is_empty() {
        return Err(flag!("--runs {s:?}: no run id"));
    }
    Ok(ids)
}

/// Adds the chart data `req` asks for to `doc` (latency CDFs and goodput of the report's run
/// when it is a stored run with records; the Pareto of `--runs`). Missing records are said in
/// [`ChartData::notes`]; an unknown run id in `--runs` or a bad `--slo` is an error.
pub fn add_charts(doc: &mut Document, req: &ChartRequest) -> Result<()> {
    let slo = match &req.slo {
        Some(s) => Some(Slo::parse(s)?),
        None => None,
    };
    let mut data = ChartData::default();
    if let Some(runs) = &req.runs {
        let ids = parse_runs(runs)?;
        let store = open_store(&req.db)?;
        data.pareto = pareto_runs(&store, &req.db, &ids, req.stat)?;
    }
    if let Some(ids) = store_ids(&req.db, &req.run)? {
        let store = open_store(&req.db)?;
        for id in ids {
            run_charts(&store, id, slo.as_ref(), &mut data)?;
        }
    }
    doc.charts = data;
    Ok(())
}

/// The store run ids the report's RUN names, or `None` for a file.
fn store_ids(db: &Path, run: &str) -> Result<Option<Vec<RunId>>> {
    if run == "latest" {
        if !db.exists() {
            return Ok(None);
        }
        let store = Store::open(db)?;
        return Ok(store
            .list_runs(None, None)?
            .iter()
            .find(|r| r.kind != RunKind::Baseline)
            .map(|r| vec![r.id]));
    }
    if !run.is_empty() && run.split(',').all(|p| p.trim().parse::<i64>().is_ok()) {
        return parse_runs(run).map(Some);
    }
    Ok(None)
}

/// One Pareto entry per run id (each a run alone, repeats merged, as `report ID` shows it).
fn pareto_runs(store: &Store, db: &Path, ids: &[RunId], stat: Stat) -> Result<Vec<ParetoRun>> {
    let mut out = Vec::new();
    for id in ids {
        let run = store.get_run(*id)?.ok_or_else(|| {
            ReviewError::NotFound(format!(
                "--runs: run {id} does not exist in {} (see `servebench runs`)",
                db.display()
            ))
        })?;
        let side = load_side(db, &id.to_string())?;
        let doc = build_run(
            &side.info,
            &side.points,
            &side.evals,
            stat,
            &BuildOptions::default(),
        );
        let hw = store.points(*id)?.first().and_then(|p| p.hw.clone());
        let mut label = format!("run {id}");
        if let Some(l) = run.meta.label.as_deref().or(hw.as_deref()) {
            label.push_str(&format!(" · {l}"));
        }
        out.push(pareto_run(label, &doc.curves.candidate));
    }
    Ok(out)
}

/// A point directory of a run: `conc<C>` or, with repeats, `conc<C>-r<k>` (k ascending).
pub(crate) fn point_dirs(out_dir: &Path, conc: u64) -> Vec<(Option<u32>, PathBuf)> {
    let plain = out_dir.join(format!("conc{conc}"));
    if plain.is_dir() {
        return vec![(None, plain)];
    }
    let prefix = format!("conc{conc}-r");
    let mut v: Vec<(Option<u32>, PathBuf)> = std::fs::read_dir(out_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let k = name.strip_prefix(&prefix)?.parse::<u32>().ok()?;
            Some((Some(k), e.path()))
        })
        .collect();
    v.sort();
    v
}

/// A point directory's time scale (`result.json`: the simulator's speedup; 1.0 otherwise).
pub(crate) fn time_scale(dir: &Path) -> f64 {
    std::fs::read_to_string(dir.join("result.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<servebench_contracts::ResultFile>(&t).ok())
        .map(|r| r.time_scale())
        .filter(|x| x.is_finite() && *x > 0.0)
        .unwrap_or(1.0)
}

fn sweep_slo(out_dir: &Path) -> Option<Slo> {
    let t = std::fs::read_to_string(out_dir.join("summary.json")).ok()?;
    let extras = servebench_contracts::summary::summary_extras(&t).ok()??;
    Slo::parse(extras.slo.as_deref()?).ok()
}

/// CDFs of one point's successful measured requests, in modelled time.
pub fn cdfs_of(conc: u32, label: &str, records: &[RequestRecord], ts: f64) -> PointCdfs {
    let ok: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == servebench_client::Phase::Measured && r.success)
        .collect();
    let scaled = |f: &dyn Fn(&RequestRecord) -> Option<f64>| -> Vec<f64> {
        ok.iter().filter_map(|r| f(r)).map(|x| x * ts).collect()
    };
    let itl: Vec<f64> = ok
        .iter()
        .flat_map(|r| r.itl_ms.iter().map(|x| f64::from(*x) * ts))
        .collect();
    point_cdfs(
        conc,
        label,
        &scaled(&|r| r.ttft_ms),
        &scaled(&|r| r.tpot_ms),
        &itl,
        &scaled(&|r| r.e2el_ms),
    )
}

fn run_charts(store: &Store, id: RunId, slo: Option<&Slo>, data: &mut ChartData) -> Result<()> {
    let Some(run) = store.get_run(id)? else {
        return Err(ReviewError::NotFound(format!(
            "run {id} does not exist in {} (see `servebench runs`)",
            store.path().display()
        )));
    };
    if run.kind == RunKind::Eval || run.kind == RunKind::Baseline {
        return Ok(());
    }
    let Some(out_dir) = run.meta.out_dir.clone() else {
        data.notes.push(format!(
            "run {id}: no output directory stored, so no latency CDFs"
        ));
        return Ok(());
    };
    let slo = slo.cloned().or_else(|| sweep_slo(&out_dir));
    // Stored rows by concurrency (repeats: several rows, in insertion order).
    let mut rows: BTreeMap<u64, Vec<servebench_metrics::AggRow>> = BTreeMap::new();
    for p in store.points(id)? {
        if let servebench_store::StoredRow::Servebench(r) = p.row {
            if let Some(c) = r.conc {
                rows.entry(c).or_default().push(r);
            }
        }
    }
    // goodput per conc: (throughput, goodput, attainment, n) summed over repeats.
    let mut gp: BTreeMap<u64, Vec<(f64, f64, Option<f64>)>> = BTreeMap::new();
    let mut target = 90.0;
    for (conc, conc_rows) in &rows {
        let dirs = point_dirs(&out_dir, *conc);
        if dirs.is_empty() {
            data.notes.push(format!(
                "run {id} c{conc}: no point directory under {}, so no latency CDFs",
                out_dir.display()
            ));
            continue;
        }
        for (k, (repeat, dir)) in dirs.iter().enumerate() {
            let row = conc_rows.get(k).or(conc_rows.first()).expect("non-empty");
            let path = dir.join(&row.records_file);
            let records = match read_records(&path) {
                Ok(r) => r,
                Err(e) => {
                    data.notes.push(format!("run {id} c{conc}: {e:#}"));
                    continue;
                }
            };
            let ts = time_scale(dir);
            let label = match repeat {
                Some(r) => format!("c{conc} r{r}"),
                None => format!("c{conc}"),
            };
            let conc32 = u32::try_from(*conc).unwrap_or(u32::MAX);
            data.latency.push(cdfs_of(conc32, &label, &records, ts));
            if let Some(slo) = &slo {
                let num = |x: f64| x.is_finite().then_some(x);
                let duration = num(row.duration).ok_or_else(|| {
                    ReviewError::Invalid(format!("{}: agg row has no duration", dir.display()))
                })?;
                let gpus = row.num_gpus.max(1);
                let g = goodput(&records, slo, duration, gpus, ts);
                target = g.target_pct;
                let ok = row.num_requests_successful as f64;
                let thr = num(row.request_throughput).unwrap_or(if duration > 0.0 {
                    ok / duration
                } else {
                    0.0
                });
                gp.entry(*conc)
                    .or_default()
                    .push((thr, g.goodput_rps, g.attainment_pct));
            }
        }
    }
    if let Some(slo) = &slo {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let points = gp
            .into_iter()
            .map(|(conc, v)| {
                let att: Vec<f64> = v.iter().filter_map(|x| x.2).collect();
                let attainment = (!att.is_empty()).then(|| mean(&att));
                GoodputPoint {
                    conc: u32::try_from(conc).unwrap_or(u32::MAX),
                    throughput_rps: mean(&v.iter().map(|x| x.0).collect::<Vec<_>>()),
                    goodput_rps: mean(&v.iter().map(|x| x.1).collect::<Vec<_>>()),
                    attainment_pct: attainment,
                    meets_slo: attainment.is_some_and(|a| a >= target),
                }
            })
            .collect();
        data.goodput = Some(GoodputCurve {
            slo: slo.to_string(),
            objectives: slo
                .objectives()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            target_pct: target,
            points,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// compare's noise rule gives the same half-width as the interval `--repeats N` prints
    /// (both use `servebench_contracts::stats::t_975`; the spreads are computed apart).
    #[test]
    fn compare_and_metrics_half_widths_agree() {
        let s = servebench_compare::Spread::of(&[100.0, 112.0, 95.0, 108.0, 118.0]).unwrap();
        let ci = servebench_metrics::confidence::t_interval(&[100.0, 112.0, 95.0, 108.0, 118.0])
            .unwrap();
        let h = servebench_compare::ci::t_half_width(&s).unwrap();
        assert!(
            (h - ci.half_width).abs() < 1e-12,
            "{h} vs {}",
            ci.half_width
        );
    }

    #[test]
    fn runs_parse_or_name_the_bad_part() {
        let ids: Vec<i64> = parse_runs("12, 15,19")
            .unwrap()
            .iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ids, vec![12, 15, 19]);
        assert_eq!(
            parse_runs("1,x").unwrap_err().to_string(),
            "--runs \"1,x\": \"x\" is not a run id"
        );
        assert!(parse_runs("0").is_err());
    }
}
