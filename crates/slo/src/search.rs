//! [`run_search`]: the SLO search over real measured points. Each probe is one full sweep point
//! ([`servebench_pipeline::run_sweep`] with one concurrency, or one request rate) in its own
//! directory `DIR/probe-<k>-<axis><load>/`; its records give the goodput that
//! [`servebench_metrics::search::Search`] decides on. The result is written to
//! `DIR/search.json` and rendered with its evidence points.

use std::path::PathBuf;

use servebench_client::read_records;
use servebench_metrics::goodput::{goodput, Goodput, Slo};
use servebench_metrics::search::{Axis, Search, SearchConfig, SearchResult};
use servebench_pipeline::observe::ObserverError;
use servebench_pipeline::{run_sweep, Observer, PointOutput, SweepPlan};

use crate::error::{IoOp, Result, SloError};

/// One search: the base plan (workload, target, identity), the SLO and the search settings.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// Everything but the load; `concurrencies`, `request_rate`, `out`, `db` and `repeats` are
    /// set per probe.
    pub plan: SweepPlan,
    /// The SLO.
    pub slo: Slo,
    /// Axis, start, max, tolerance, probe limit.
    pub config: SearchConfig,
    /// Measured requests per lane (`num_prompts = k × concurrency`); `None` keeps the plan's.
    pub prompts_per_lane: Option<usize>,
    /// Concurrency cap (lanes) of the open loop when searching the rate.
    pub rate_max_concurrency: u64,
    /// Output directory of the search.
    pub out: PathBuf,
}

/// Keeps the goodput of the probe's single point.
struct Capture {
    slo: Slo,
    got: Option<Goodput>,
}

impl Observer for Capture {
    fn point_done(&mut self, p: &PointOutput) -> Result<(), ObserverError> {
        let records = read_records(&p.spec.dir.join("records.jsonl"))?;
        let g = p.agg.num_gpus.max(1);
        let ts = p.result.time_scale();
        self.got = Some(goodput(&records, &self.slo, p.metrics.duration_s, g, ts));
        Ok(())
    }
}

/// Shares the captured goodput between the observer (moved into the sweep) and the search.
struct Shared(std::rc::Rc<std::cell::RefCell<Capture>>);

impl Observer for Shared {
    fn point_done(&mut self, p: &PointOutput) -> Result<(), ObserverError> {
        self.0.borrow_mut().point_done(p)
    }
}

/// Runs the search; every probe's files stay under `req.out`.
///
/// Errors ([`SloError`]): the output directory cannot be created or `search.json` written
/// ([`SloError::Io`]); a rate search with `rate_max_concurrency` 0
/// ([`SloError::RateWithoutLanes`]); a probe that could not run at all, e.g. target
/// unreachable or bad flags ([`SloError::Probe`], the sweep's error as its source), was
/// interrupted ([`SloError::Interrupted`]) or measured nothing ([`SloError::NoResult`]). A probe
/// whose requests fail is a measurement (failures count against goodput), not an error.
pub fn run_search(req: SearchRequest) -> Result<SearchResult> {
    std::fs::create_dir_all(&req.out).map_err(|source| SloError::Io {
        op: IoOp::CreateDir,
        path: req.out.clone(),
        source,
    })?;
    if req.config.axis == Axis::Rate && req.rate_max_concurrency == 0 {
        return Err(SloError::RateWithoutLanes);
    }
    let mut search = Search::new(req.config);
    let mut k = 0;
    while let Some(load) = search.next_load() {
        k += 1;
        let mut plan = req.plan.clone();
        plan.repeats = 1;
        plan.db = None;
        plan.report = None;
        plan.eval = None;
        let (conc, tag) = match req.config.axis {
            Axis::Conc => (load as u64, format!("conc{}", load as u64)),
            Axis::Rate => {
                plan.request_rate = Some(load);
                (req.rate_max_concurrency, format!("rate{load:.4}"))
            }
        };
        plan.concurrencies = vec![conc];
        if let Some(ppl) = req.prompts_per_lane {
            plan.num_prompts = Some(ppl * conc as usize);
        }
        plan.out = Some(req.out.join(format!("probe-{k}-{tag}")));
        println!(
            "search probe {k}: {} {}",
            req.config.axis.as_str(),
            match req.config.axis {
                Axis::Conc => format!("{conc}"),
                Axis::Rate => format!("{load:.4} req/s (≤ {conc} lanes)"),
            }
        );
        let cap = std::rc::Rc::new(std::cell::RefCell::new(Capture {
            slo: req.slo,
            got: None,
        }));
        let outcome =
            run_sweep(plan, vec![Box::new(Shared(cap.clone()))]).map_err(|e| SloError::Probe {
                probe: k,
                axis: req.config.axis,
                load,
                source: e.into(),
            })?;
        let got = cap.borrow_mut().got.take();
        let Some(g) = got else {
            if outcome.exit == servebench_pipeline::EXIT_INTERRUPTED {
                return Err(SloError::Interrupted { probe: k });
            }
            return Err(SloError::NoResult { probe: k });
        };
        println!(
            "search probe {k}: attainment {} of {} good → {}",
            g.attainment_pct
                .map_or("null".to_string(), |a| format!("{a:.1} %")),
            g.requests,
            if g.meets_slo { "meets" } else { "misses" }
        );
        search.record(load, g);
    }
    let result = search.result();
    let path = req.out.join("search.json");
    let bytes = serde_json::to_vec_pretty(&result).map_err(|err| SloError::Serialize { err })?;
    std::fs::write(&path, bytes).map_err(|source| SloError::Io {
        op: IoOp::Write,
        path,
        source,
    })?;
    Ok(result)
}
