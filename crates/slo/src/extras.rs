//! [`ExtrasObserver`]: goodput, steady window and confidence per sweep point
//! (docs/measurement.md §12), from the point's records in memory ([`PointOutput::records`]).
//! The point's own files (`result.json`, `agg.json`) are never changed; everything goes into
//! `summary.json` under `extras` (contributed as a typed [`SummaryExtras`] through
//! [`Observer::summary_extras`]; the pipeline's file output writes the file once) and to a
//! table of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use servebench_client::RequestRecord;
use servebench_contracts::{ConfidenceSettings, ExtrasPoint, SummaryExtras};
use servebench_metrics::confidence::{
    is_small_sample, point_bootstrap, t_interval, Ci, NamedCi, DEFAULT_RESAMPLES, SMALL_SAMPLE_MARK,
};
use servebench_metrics::goodput::{goodput, Goodput, Slo};
use servebench_metrics::reasoning::{reasoning_stats, ReasoningStats};
use servebench_metrics::stats::Stats;
use servebench_metrics::window::{steady_point, SteadyWindow};
use servebench_metrics::{compute, PointMetrics, PointOptions};
use servebench_pipeline::observe::ObserverError;
use servebench_pipeline::{Console, Observer, PointOutput, StdConsole, SweepSummary};

use crate::error::SloError;

/// What to compute (each `None`/`false` = off).
#[derive(Debug, Clone)]
pub struct ExtrasOptions {
    /// `--slo`.
    pub slo: Option<Slo>,
    /// `--window steady`.
    pub steady: bool,
    /// Confidence intervals (on with `--repeats N`, N ≥ 2, or `--ci`).
    pub confidence: bool,
    /// Bootstrap seed (the run's `--seed`).
    pub seed: u64,
    /// Bootstrap resamples.
    pub resamples: u32,
}

impl ExtrasOptions {
    /// Whether anything is on (otherwise the observer is not added and the output is the
    /// default one, byte for byte).
    pub fn any(&self) -> bool {
        self.slo.is_some() || self.steady || self.confidence
    }

    /// Defaults: nothing on, seed 0, [`DEFAULT_RESAMPLES`].
    pub fn off() -> Self {
        ExtrasOptions {
            slo: None,
            steady: false,
            confidence: false,
            seed: 0,
            resamples: DEFAULT_RESAMPLES,
        }
    }
}

/// Steady-state numbers of one point (latencies ms, throughput tok/s/GPU, modelled time).
#[derive(Debug, Clone, Serialize)]
pub struct SteadyBlock {
    /// Window bounds and inside/outside counts, as measured (wall clock; `*_ns` on the run
    /// clock).
    pub window: SteadyWindow,
    /// Window start after the first measured t0, s (modelled time against the simulator).
    pub start_s: f64,
    /// Window end after the first measured t0, s (modelled time).
    pub end_s: f64,
    /// Window length, s (modelled time).
    pub duration_s: f64,
    /// `describe()` line.
    pub line: String,
    /// TTFT over the inside requests.
    pub ttft: Stats,
    /// TPOT over the inside requests.
    pub tpot: Stats,
    /// ITL over the inside requests.
    pub itl: Stats,
    /// E2EL over the inside requests.
    pub e2el: Stats,
    /// Total tok/s/GPU inside the window.
    pub tput_per_gpu: f64,
    /// Output tok/s/GPU inside the window.
    pub output_tput_per_gpu: f64,
    /// Completions/s inside the window.
    pub request_throughput: f64,
}

/// Everything computed for one point.
#[derive(Debug, Clone, Serialize)]
pub struct PointExtras {
    /// `conc 4` / `conc 4 repeat 2/3`.
    pub label: String,
    /// Concurrency.
    pub conc: u64,
    /// Repeat (1-based).
    pub repeat: u32,
    /// Goodput under `--slo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// Steady-state window and its statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyBlock>,
    /// Why there is no steady window (never held, open loop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_error: Option<String>,
    /// Bootstrap intervals within the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bootstrap: Vec<NamedCi>,
    /// Raw-result keys of percentiles from too few samples (`p99_ttft_ms`, …).
    pub small_sample: Vec<String>,
    /// Reasoning / tool-call statistics, when the streams carried them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningStats>,
    #[serde(skip)]
    metrics: PointMetrics,
    #[serde(skip)]
    num_gpus: f64,
}

/// t-intervals of one concurrency across its repeats.
#[derive(Debug, Clone, Serialize)]
pub struct RepeatCi {
    /// Concurrency.
    pub conc: u64,
    /// Repeats measured.
    pub repeats: usize,
    /// Statistic key (`tput_per_gpu`, `median_ttft_ms`, `goodput_rps`, …) → interval.
    pub intervals: BTreeMap<String, Ci>,
}

/// The sweep observer (see the crate docs).
pub struct ExtrasObserver {
    opts: ExtrasOptions,
    open_loop: bool,
    points: Vec<PointExtras>,
    console: Arc<dyn Console>,
}

impl ExtrasObserver {
    /// An observer; `open_loop` = the sweep has `--request-rate` (no steady window then). Its
    /// lines (goodput, steady window, the extras table) go to stdout
    /// ([`servebench_pipeline::StdConsole`]) unless [`ExtrasObserver::with_console`] says where.
    pub fn new(opts: ExtrasOptions, open_loop: bool) -> Self {
        ExtrasObserver {
            opts,
            open_loop,
            points: Vec::new(),
            console: Arc::new(StdConsole),
        }
    }

    /// The same observer saying its lines through `console` (the session's reporter).
    pub fn with_console(mut self, console: Arc<dyn Console>) -> Self {
        self.console = console;
        self
    }

    /// The points computed so far.
    pub fn points(&self) -> &[PointExtras] {
        &self.points
    }
}

/// The per-GPU divisor (agg row `num_gpus`) and `servebench.time_scale` (raw result) of a point.
fn gpus_and_scale(p: &PointOutput) -> (f64, f64) {
    let g = f64::from(p.agg.num_gpus);
    let ts = p.result.time_scale();
    (g.max(1.0), ts)
}

/// Raw-result keys of the point's percentiles estimated from too few samples.
pub fn small_sample_keys(m: &PointMetrics) -> Vec<String> {
    let mut out = Vec::new();
    for (metric, s) in [
        ("ttft", &m.ttft),
        ("tpot", &m.tpot),
        ("itl", &m.itl),
        ("e2el", &m.e2el),
    ] {
        for stat in ["median", "p90", "p99", "p99.9"] {
            if s.n > 0 && is_small_sample(stat, s.n) {
                out.push(format!("{stat}_{metric}_ms"));
            }
        }
    }
    out
}

/// Computes the extras of one point from its records.
pub fn point_extras(
    opts: &ExtrasOptions,
    open_loop: bool,
    p: &PointOutput,
    records: &[RequestRecord],
) -> PointExtras {
    let (g, ts) = gpus_and_scale(p);
    let m = &p.metrics;
    let goodput = opts
        .slo
        .as_ref()
        .map(|slo| goodput(records, slo, m.duration_s, g as u32, ts));
    let (mut steady, mut steady_error) = (None, None);
    if opts.steady {
        if open_loop {
            steady_error =
                Some("steady window not defined for an open loop (--request-rate)".into());
        } else {
            let po = PointOptions {
                compat: m.compat,
                itl_mode: m.itl_mode,
                phase_window_ns: (0, 0),
                max_failed_fraction: 0.05,
                cancelled: false,
                prompt_count: servebench_metrics::PromptCount::Client,
            };
            let full = compute(records, &po);
            match steady_point(records, &po, &full, p.spec.conc) {
                Ok((mut sm, w)) => {
                    sm.rescale_time(ts);
                    steady = Some(SteadyBlock {
                        line: w.describe(ts),
                        start_s: w.start_s * ts,
                        end_s: w.end_s * ts,
                        duration_s: w.duration_s() * ts,
                        ttft: sm.ttft,
                        tpot: sm.tpot,
                        itl: sm.itl,
                        e2el: sm.e2el,
                        tput_per_gpu: sm.total_token_throughput / g,
                        output_tput_per_gpu: sm.output_throughput / g,
                        request_throughput: sm.request_throughput,
                        window: w,
                    });
                }
                Err(e) => steady_error = Some(e.to_string()),
            }
        }
    }
    let bootstrap = if opts.confidence {
        point_bootstrap(records, ts, opts.resamples, opts.seed)
    } else {
        Vec::new()
    };
    PointExtras {
        label: p.spec.label(),
        conc: p.spec.conc,
        repeat: p.spec.repeat,
        goodput,
        steady,
        steady_error,
        bootstrap,
        small_sample: small_sample_keys(m),
        reasoning: reasoning_stats(records, ts),
        metrics: m.clone(),
        num_gpus: g,
    }
}

/// t-intervals across the repeats of each concurrency (only concurrencies with ≥ 2 repeats).
pub fn repeat_intervals(points: &[PointExtras]) -> Vec<RepeatCi> {
    let mut by_conc: BTreeMap<u64, Vec<&PointExtras>> = BTreeMap::new();
    for p in points {
        by_conc.entry(p.conc).or_default().push(p);
    }
    let mut out = Vec::new();
    for (conc, ps) in by_conc {
        if ps.len() < 2 {
            continue;
        }
        let mut intervals = BTreeMap::new();
        let mut add = |key: String, f: &dyn Fn(&PointExtras) -> Option<f64>| {
            let v: Vec<f64> = ps.iter().filter_map(|p| f(p)).collect();
            if v.len() == ps.len() {
                if let Some(ci) = t_interval(&v) {
                    intervals.insert(key, ci);
                }
            }
        };
        add("tput_per_gpu".into(), &|p| {
            Some(p.metrics.total_token_throughput / p.num_gpus)
        });
        add("output_tput_per_gpu".into(), &|p| {
            Some(p.metrics.output_throughput / p.num_gpus)
        });
        add("request_throughput".into(), &|p| {
            Some(p.metrics.request_throughput)
        });
        for metric in ["ttft", "tpot", "itl", "e2el"] {
            for stat in ["mean", "median", "p90", "p99"] {
                add(format!("{stat}_{metric}_ms"), &|p| {
                    let s = match metric {
                        "ttft" => &p.metrics.ttft,
                        "tpot" => &p.metrics.tpot,
                        "itl" => &p.metrics.itl,
                        _ => &p.metrics.e2el,
                    };
                    s.get(stat)
                });
            }
        }
        add("goodput_rps".into(), &|p| {
            p.goodput.as_ref().map(|g| g.goodput_rps)
        });
        add("goodput_tput_per_gpu".into(), &|p| {
            p.goodput.as_ref().map(|g| g.goodput_tput_per_gpu)
        });
        out.push(RepeatCi {
            conc,
            repeats: ps.len(),
            intervals,
        });
    }
    out
}

fn cell(v: Option<f64>, d: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or("-".to_string(), |x| format!("{x:.d$}"))
}

/// The extras table (one row per point; with repeats, one `± half-width` row per concurrency).
pub fn render_table(points: &[PointExtras], repeats: &[RepeatCi], stat: &str) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["Point".to_string()];
    let has_slo = points.iter().any(|p| p.goodput.is_some());
    let has_steady = points
        .iter()
        .any(|p| p.steady.is_some() || p.steady_error.is_some());
    let has_boot = points.iter().any(|p| !p.bootstrap.is_empty());
    if has_slo {
        header.extend(
            [
                "Goodput req/s",
                "Attainment %",
                "Meets SLO",
                "Goodput tok/s/GPU",
            ]
            .map(String::from),
        );
    }
    if has_steady {
        header.extend([
            "Steady window s".to_string(),
            "In/ramp/drain".to_string(),
            "Steady tok/s/GPU".to_string(),
            format!("Steady TTFT {stat} ms"),
            format!("Steady TPOT {stat} ms"),
        ]);
    }
    if has_boot {
        header.extend([
            format!("TTFT {stat} ms (95% CI)"),
            format!("TPOT {stat} ms (95% CI)"),
        ]);
    }
    for p in points {
        let mut r = vec![p.label.clone()];
        if has_slo {
            let g = p.goodput.as_ref();
            r.push(cell(g.map(|g| g.goodput_rps), 3));
            r.push(cell(g.and_then(|g| g.attainment_pct), 1));
            r.push(g.map_or("-".into(), |g| {
                if g.meets_slo { "yes" } else { "no" }.into()
            }));
            r.push(cell(g.map(|g| g.goodput_tput_per_gpu), 1));
        }
        if has_steady {
            match &p.steady {
                Some(s) => {
                    r.push(format!("{:.2}–{:.2}", s.start_s, s.end_s));
                    r.push(format!(
                        "{}/{}/{}",
                        s.window.inside, s.window.outside_rampup, s.window.outside_drain
                    ));
                    r.push(cell(Some(s.tput_per_gpu), 1));
                    r.push(cell(s.ttft.get(stat), 2));
                    r.push(cell(s.tpot.get(stat), 2));
                }
                None => r.extend([
                    "not held".to_string(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]),
            }
        }
        if has_boot {
            for metric in ["ttft", "tpot"] {
                let key = format!("{stat}_{metric}_ms");
                let c = p.bootstrap.iter().find(|c| c.key == key);
                r.push(c.map_or("-".into(), |c| {
                    let mut s = c.ci.fmt(2);
                    if c.small_sample {
                        s.push_str(SMALL_SAMPLE_MARK);
                    }
                    s
                }));
            }
        }
        rows.push(r);
    }
    let mut out = String::new();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let v: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}", w = *w))
            .collect();
        format!("| {} |\n", v.join(" | "))
    };
    out.push_str(&line(&header));
    out.push_str(&format!(
        "|{}|\n",
        widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    ));
    for r in &rows {
        out.push_str(&line(r));
    }
    for rc in repeats {
        let get = |k: &str| rc.intervals.get(k).map_or("-".to_string(), |c| c.fmt(2));
        out.push_str(&format!(
            "conc {} over {} repeats (t-interval, 95 %): tok/s/GPU {}; TTFT {stat} {} ms; TPOT {stat} {} ms{}\n",
            rc.conc,
            rc.repeats,
            get("tput_per_gpu"),
            get(&format!("{stat}_ttft_ms")),
            get(&format!("{stat}_tpot_ms")),
            rc.intervals
                .get("goodput_rps")
                .map_or(String::new(), |c| format!("; goodput {} req/s", c.fmt(3)))
        ));
    }
    let small: Vec<String> = points
        .iter()
        .filter(|p| !p.small_sample.is_empty())
        .map(|p| format!("{}: {}", p.label, p.small_sample.join(", ")))
        .collect();
    if !small.is_empty() {
        out.push_str(&format!(
            "{SMALL_SAMPLE_MARK} small sample: a pX needs n ≥ 100/(100 − X) samples (p90: 10, p99: 100, p99.9: 1,000); below that it is not a tail estimate — {}\n",
            small.join("; ")
        ));
    }
    out
}

/// The typed `summary.json` `extras` of `points` (`repeats`: their t-intervals) under `opts`.
///
/// Errors: [`SloError::Serialize`] when a point's or interval's numbers do not serialize.
pub fn summary_extras(
    opts: &ExtrasOptions,
    points: &[PointExtras],
    repeats: &[RepeatCi],
) -> Result<SummaryExtras, SloError> {
    let ser = |err| SloError::Serialize { err };
    Ok(SummaryExtras {
        slo: opts.slo.map(|s| s.to_string()),
        window: if opts.steady { "steady" } else { "full" }.into(),
        confidence: opts.confidence.then_some(ConfidenceSettings {
            level: 0.95,
            bootstrap_resamples: u64::from(opts.resamples),
            seed: opts.seed,
        }),
        // label, conc and repeat typed; the computed blocks kept in the order they serialize
        points: points
            .iter()
            .map(|p| serde_json::to_value(p).and_then(serde_json::from_value::<ExtrasPoint>))
            .collect::<Result<_, _>>()
            .map_err(ser)?,
        repeats: repeats
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(ser)?,
    })
}

impl Observer for ExtrasObserver {
    fn point_done(&mut self, p: &PointOutput) -> Result<(), ObserverError> {
        if self.opts.confidence {
            // the bootstrap is the slow part of a point's extras (seconds in a debug build):
            // say it starts, so the pause after the measurement does not look like a hang
            self.console.line(&format!(
                "  {}: bootstrapping 95 % CIs: {} resamples × {} statistics of TTFT, TPOT, ITL, E2EL…",
                p.spec.label(),
                self.opts.resamples,
                servebench_metrics::confidence::CI_STATS.len() * 4
            ));
        }
        let e = point_extras(&self.opts, self.open_loop, p, &p.records);
        if let Some(g) = &e.goodput {
            self.console.line(&format!(
                "  goodput ({}): {}/{} good, attainment {}, {:.3} req/s, {:.1} tok/s/GPU → {}",
                g.slo,
                g.good,
                g.requests,
                g.attainment_pct
                    .map_or("null".to_string(), |a| format!("{a:.1} %")),
                g.goodput_rps,
                g.goodput_tput_per_gpu,
                if g.meets_slo {
                    "meets the SLO"
                } else {
                    "misses the SLO"
                }
            ));
        }
        if let Some(s) = &e.steady {
            self.console.line(&format!("  {}", s.line));
        }
        if let Some(err) = &e.steady_error {
            self.console.line(&format!("  {err}"));
        }
        self.points.push(e);
        Ok(())
    }

    fn summary_extras(
        &mut self,
        s: &SweepSummary<'_>,
    ) -> Result<Option<SummaryExtras>, ObserverError> {
        if s.points.is_empty() {
            return Ok(None);
        }
        let repeats = repeat_intervals(&self.points);
        Ok(Some(summary_extras(&self.opts, &self.points, &repeats)?))
    }

    fn sweep_done(&mut self, s: &SweepSummary<'_>) -> Result<(), ObserverError> {
        if s.points.is_empty() {
            return Ok(());
        }
        let repeats = repeat_intervals(&self.points);
        let stat = s.plan.stat.to_string();
        self.console.line("");
        self.console
            .line("servebench extras (goodput / steady window / confidence):");
        self.console
            .line(render_table(&self.points, &repeats, &stat).trim_end_matches('\n'));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_metrics::{agg_row, AggExtra, Identity, ItlMode, PromptCount, ResultFile};
    use servebench_pipeline::PointSpec;

    /// Keeps the lines said.
    #[derive(Default)]
    struct Lines(std::sync::Mutex<Vec<String>>);

    impl Console for Lines {
        fn line(&self, s: &str) {
            self.0.lock().unwrap().push(s.to_string());
        }
        fn warn(&self, s: &str) {
            self.0.lock().unwrap().push(format!("warn: {s}"));
        }
    }

    /// 40 measured requests on 4 lanes (10 waves, 20 ms apart), made from the first record of
    /// contracts' fixture with their own ids, times and latencies.
    fn records() -> Vec<RequestRecord> {
        let line = include_str!("../../contracts/tests/data/records.jsonl")
            .lines()
            .next()
            .unwrap();
        let base: RequestRecord = serde_json::from_str(line).unwrap();
        (0..40u64)
            .map(|i| {
                let mut r = base.clone();
                r.id = i;
                r.t0_ns = 1_000_000 + (i / 4) * 20_000_000 + (i % 4) * 1_000;
                r.scheduled_ns = r.t0_ns;
                r.end_ns = r.t0_ns + 19_000_000 + i * 10_000;
                r.ttft_ms = Some(10.0 + i as f64 * 0.1);
                r.e2el_ms = Some((r.end_ns - r.t0_ns) as f64 / 1e6);
                r
            })
            .collect()
    }

    fn point(repeat: u32) -> PointOutput {
        let recs = records();
        let window = (
            recs.iter().map(|r| r.t0_ns).min().unwrap(),
            recs.iter().map(|r| r.end_ns).max().unwrap(),
        );
        let m = compute(
            &recs,
            &PointOptions {
                compat: servebench_client::Compat::Servebench,
                itl_mode: ItlMode::Chunk,
                phase_window_ns: window,
                max_failed_fraction: 0.05,
                cancelled: false,
                prompt_count: PromptCount::Client,
            },
        );
        let id = Identity {
            hw: "sim-h200".into(),
            image: "servebench-sim".into(),
            model: "m".into(),
            infmax_model_prefix: "m".into(),
            framework: "sim".into(),
            precision: "bf16".into(),
            spec_decoding: "none".into(),
            disagg: false,
            recipe_fingerprint: None,
            isl: Some(128),
            osl: Some(6),
            tp: 1,
            pp: 1,
            dcp_size: 1,
            pcp_size: 1,
            ep: 1,
            dp_attention: false,
            is_multinode: false,
            benchmark_type: Default::default(),
            kv_offloading: Default::default(),
            kv_offload_backend: None,
            allocated_cpu_dram_gb: 0,
        };
        let extra = AggExtra {
            api: "completions".into(),
            engine: "vllm".into(),
            endpoint: "http://127.0.0.1:9".into(),
            records_file: "records.jsonl".into(),
        };
        PointOutput {
            spec: PointSpec {
                conc: 4,
                repeat,
                repeats: 2,
                dir: std::path::PathBuf::from(format!("conc4-r{repeat}")),
            },
            agg: agg_row(&id, Some(4), &m, &extra),
            metrics: m,
            result: ResultFile::Other(serde_json::json!({"servebench": {"time_scale": 1.0}})),
            wall_s: 0.2,
            records: recs.into(),
        }
    }

    /// The typed `extras` the observer contributes serialize to exactly the object the old
    /// second writer patched into summary.json (same keys, order and values), here with every
    /// part on: goodput, steady window, bootstrap and the t-interval across two repeats.
    #[test]
    fn typed_extras_are_the_old_extras_object() {
        let opts = ExtrasOptions {
            slo: Some(Slo::parse("ttft=12ms,e2el=1000ms@p90").unwrap()),
            steady: true,
            confidence: true,
            seed: 7,
            resamples: 200,
        };
        let lines = Arc::new(Lines::default());
        let mut obs = ExtrasObserver::new(opts.clone(), false).with_console(lines.clone());
        obs.point_done(&point(1)).unwrap();
        obs.point_done(&point(2)).unwrap();
        // per point: the bootstrap's start line (--ci), its goodput line and its
        // steady-window line, through the console
        let said = lines.0.lock().unwrap().clone();
        assert_eq!(said.len(), 6, "{said:?}");
        assert_eq!(
            said[0],
            "  conc 4 repeat 1/2: bootstrapping 95 % CIs: 200 resamples × 16 statistics of TTFT, TPOT, ITL, E2EL…"
        );
        assert!(
            said[1].starts_with("  goodput (ttft=12ms,e2el=1000ms@p90): "),
            "{said:?}"
        );
        assert!(said[2].starts_with("  ") && !said[2].contains("goodput"));
        let repeats = repeat_intervals(obs.points());
        assert_eq!(repeats.len(), 1);
        assert!(obs.points()[0].goodput.is_some() && obs.points()[0].steady.is_some());
        assert!(!obs.points()[0].bootstrap.is_empty());
        // the object add_to_summary wrote before (slo/src/extras.rs at 2022a6c^)
        let old = serde_json::json!({
            "slo": opts.slo.map(|s| s.to_string()),
            "window": "steady",
            "confidence": {"level": 0.95, "bootstrap_resamples": 200, "seed": 7},
            "points": obs.points(),
            "repeats": repeats,
        });
        let typed = summary_extras(&opts, obs.points(), &repeats).unwrap();
        assert_eq!(
            serde_json::to_string_pretty(&typed).unwrap(),
            serde_json::to_string_pretty(&old).unwrap()
        );
        let off = ExtrasOptions {
            steady: false,
            confidence: false,
            ..opts
        };
        let v = serde_json::to_value(summary_extras(&off, &[], &[]).unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"slo": "ttft=12ms,e2el=1000ms@p90", "window": "full",
                "confidence": null, "points": [], "repeats": []})
        );
    }
}
