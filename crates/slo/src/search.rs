//! [`run_search`]: the SLO search over real measured points. One measuring
//! [`Session`] is opened against the target (the embedded simulator is started once, its
//! emission log in `DIR/`); each probe is one point of it ([`Session::probe`]: one concurrency,
//! or one request rate) in its own directory `DIR/probe-<k>-<axis><load>/`, whose records give
//! the goodput that [`servebench_metrics::search::Search`] decides on. On the simulator every
//! probe's measured phase starts with a flushed prefix cache (`--flush-cache auto` unless given),
//! as if on a fresh server. The result is written to `DIR/search.json` and rendered with its
//! evidence points.

use std::path::PathBuf;

use std::sync::Arc;

use servebench_metrics::goodput::{goodput, Slo};
use servebench_metrics::search::{Axis, Search, SearchConfig, SearchResult};
use servebench_pipeline::{
    Console, PipelineError, PointOutput, ProbeLoad, Session, StdConsole, SweepPlan,
};

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
    let mut plan = req.plan.clone();
    plan.repeats = 1;
    plan.db = None;
    plan.report = None;
    plan.eval = None;
    plan.resume = false;
    // checked as the first probe's plan (each probe sets its own load)
    plan.concurrencies = vec![match req.config.axis {
        Axis::Conc => req.config.start as u64,
        Axis::Rate => req.rate_max_concurrency,
    }];
    if let (Axis::Rate, Some(f)) = (req.config.axis, plan.workload.fixed_mut()) {
        f.request_rate = Some(req.config.start);
    }
    let open_err = |e: PipelineError| SloError::Probe {
        probe: 1,
        axis: req.config.axis,
        load: req.config.start,
        source: e.into(),
    };
    plan.validate().map_err(|e| open_err(e.into()))?;
    let console: Arc<dyn Console> = Arc::new(StdConsole);
    let endpoint =
        servebench_pipeline::target::plan_endpoint(&plan, &*console).map_err(open_err)?;
    if let Some(ep) = &endpoint {
        plan.endpoint = Some(ep.base_url().to_string());
    } else if plan.flush_cache.is_none() {
        // one simulator for every probe: each measured phase starts cold, as on a fresh one
        plan.flush_cache = Some(servebench_pipeline::cache::FlushCache::Auto);
    }
    plan.check_modes().map_err(|e| open_err(e.into()))?;
    // the pipeline's one entry: runtime and Ctrl-C watcher; the body opens one session
    let said = console.clone();
    servebench_pipeline::entry::run(
        plan.sim_clock(),
        &servebench_endpoint::CancelToken::new(),
        move || {
            said.warn(
                "\ninterrupted: finishing the files for what was measured (point marked partial)",
            );
        },
        |cancel| async {
            let session = Session::open(
                plan,
                endpoint,
                None,
                req.out.clone(),
                Vec::new(),
                cancel,
                console,
            )
            .await
            .map_err(open_err);
            match session {
                Ok(mut s) => {
                    let r = probes(&mut s, &req).await;
                    s.close().await;
                    r
                }
                Err(e) => Err(e),
            }
        },
    )
    .map_err(open_err)?
}

/// The probes of the search on one session, then `search.json`.
async fn probes(
    session: &mut Session<servebench_pipeline::workload::AnyExecutor>,
    req: &SearchRequest,
) -> Result<SearchResult> {
    let console = session.console().clone();
    let mut search = Search::new(req.config);
    let mut k = 0;
    while let Some(load) = search.next_load() {
        k += 1;
        let (conc, request_rate, tag) = match req.config.axis {
            Axis::Conc => (load as u64, None, format!("conc{}", load as u64)),
            Axis::Rate => (
                req.rate_max_concurrency,
                Some(load),
                format!("rate{load:.4}"),
            ),
        };
        console.line(&format!(
            "search probe {k}: {} {}",
            req.config.axis.as_str(),
            match req.config.axis {
                Axis::Conc => format!("{conc}"),
                Axis::Rate => format!("{load:.4} req/s (≤ {conc} lanes)"),
            }
        ));
        let probe = ProbeLoad {
            conc,
            request_rate,
            num_prompts: req.prompts_per_lane.map(|ppl| ppl * conc as usize),
        };
        let dir = req.out.join(format!("probe-{k}-{tag}"));
        let p = match session.probe(probe, dir).await {
            Ok(p) => p,
            Err(PipelineError::Interrupted) => return Err(SloError::Interrupted { probe: k }),
            Err(e) => {
                return Err(SloError::Probe {
                    probe: k,
                    axis: req.config.axis,
                    load,
                    source: e.into(),
                })
            }
        };
        if session.cancel().is_cancelled() {
            return Err(SloError::Interrupted { probe: k });
        }
        let g = probe_goodput(&p, &req.slo);
        console.line(&format!(
            "search probe {k}: attainment {} of {} good → {}",
            g.attainment_pct
                .map_or("null".to_string(), |a| format!("{a:.1} %")),
            g.requests,
            if g.meets_slo { "meets" } else { "misses" }
        ));
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

/// The goodput of a probe's point, from its records (in memory, as its `records.jsonl`).
fn probe_goodput(p: &PointOutput, slo: &Slo) -> servebench_metrics::goodput::Goodput {
    let g = p.agg.num_gpus.max(1);
    let ts = p.result.time_scale();
    goodput(&p.records, slo, p.metrics.duration_s, g, ts)
}
