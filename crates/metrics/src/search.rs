//! SLO search (`servebench search --slo … --metric conc|rate`): the highest load whose point
//! meets the SLO, found by bracketing and bisection over real measured points.
//!
//! The search is a state machine with no I/O: [`Search::next_load`] says which load to measure,
//! the caller measures a point there and hands its [`Goodput`] to [`Search::record`]. Rules
//! (docs/measurement.md "SLO search"):
//!
//! 1. **Bracket**: measure `start`; while it passes, double (capped at `max`). The first
//!    failing load closes the bracket `(pass, fail)`. `start` failing → no load meets the SLO;
//!    `max` passing → the knee is at least `max`.
//! 2. **Bisect**: measure the midpoint of `(pass, fail)` (concurrency: rounded down to an
//!    integer) and move the side it lands on, until `fail − pass ≤ step`, where `step =
//!    max(tolerance · pass, 1)` for concurrency and `tolerance · pass` for a request rate.
//! 3. **Knee** = the highest passing load; its evidence is the highest passing and the lowest
//!    failing point. The search assumes attainment falls with load; a passing point above a
//!    failing one (noise) is reported as non-monotone.

use serde::{Deserialize, Serialize};

use crate::goodput::Goodput;

/// The load axis searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Closed-loop concurrency (integers).
    Conc,
    /// Open-loop request rate, req/s.
    Rate,
}

impl Axis {
    /// `conc` / `rate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Conc => "conc",
            Axis::Rate => "rate",
        }
    }
}

/// Search settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchConfig {
    /// Load axis.
    pub axis: Axis,
    /// First load measured (concurrency ≥ 1, rate > 0).
    pub start: f64,
    /// Highest load measured.
    pub max: f64,
    /// Relative bracket width at which bisection stops (0.05 = 5 %).
    pub tolerance: f64,
    /// Most points measured in total.
    pub max_probes: u32,
}

impl SearchConfig {
    /// The bracket width at which the search stops, for a passing load `pass`.
    pub fn step(&self, pass: f64) -> f64 {
        match self.axis {
            Axis::Conc => (self.tolerance * pass).max(1.0),
            Axis::Rate => self.tolerance * pass,
        }
    }
}

/// One measured point of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Load (concurrency or req/s).
    pub load: f64,
    /// Its goodput and SLO evidence.
    pub goodput: Goodput,
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Bracket narrowed to one step.
    Converged,
    /// Even `start` misses the SLO.
    NoneMeets,
    /// `max` still meets the SLO.
    AboveMax,
    /// `max_probes` reached before convergence.
    ProbeLimit,
}

/// The search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Axis searched.
    pub axis: Axis,
    /// The SLO in canonical form.
    pub slo: String,
    /// Highest load that met the SLO (null when none did).
    pub knee: Option<f64>,
    /// Lowest load that missed it (null when none did).
    pub first_fail: Option<f64>,
    /// Bracket width at which the search stopped.
    pub step: Option<f64>,
    /// How it ended.
    pub outcome: Outcome,
    /// A passing point lies above a failing one (noise or a non-monotone engine).
    pub non_monotone: bool,
    /// Every measured point, by load.
    pub probes: Vec<Probe>,
}

/// The search state.
#[derive(Debug, Clone)]
pub struct Search {
    cfg: SearchConfig,
    probes: Vec<Probe>,
}

impl Search {
    /// A new search. `start`/`max` are rounded to integers for concurrency.
    pub fn new(mut cfg: SearchConfig) -> Search {
        if cfg.axis == Axis::Conc {
            cfg.start = cfg.start.round().max(1.0);
            cfg.max = cfg.max.round().max(cfg.start);
        }
        Search {
            cfg,
            probes: Vec::new(),
        }
    }

    /// Settings in use.
    pub fn config(&self) -> &SearchConfig {
        &self.cfg
    }

    fn highest_pass(&self) -> Option<f64> {
        self.probes
            .iter()
            .filter(|p| p.goodput.meets_slo)
            .map(|p| p.load)
            .max_by(|a, b| a.total_cmp(b))
    }

    fn lowest_fail(&self) -> Option<f64> {
        self.probes
            .iter()
            .filter(|p| !p.goodput.meets_slo)
            .map(|p| p.load)
            .min_by(|a, b| a.total_cmp(b))
    }

    /// The next load to measure, or `None` when the search is over.
    pub fn next_load(&self) -> Option<f64> {
        if self.probes.len() as u32 >= self.cfg.max_probes {
            return None;
        }
        let (pass, fail) = (self.highest_pass(), self.lowest_fail());
        match (pass, fail) {
            (None, None) => Some(self.cfg.start),
            (None, Some(_)) => None,
            (Some(p), None) => (p < self.cfg.max).then(|| (p * 2.0).min(self.cfg.max)),
            (Some(p), Some(f)) => {
                if f <= p || f - p <= self.cfg.step(p) {
                    return None;
                }
                let mid = match self.cfg.axis {
                    Axis::Conc => ((p + f) / 2.0).floor(),
                    Axis::Rate => (p + f) / 2.0,
                };
                (mid > p && mid < f).then_some(mid)
            }
        }
    }

    /// Records the point measured at `load`.
    pub fn record(&mut self, load: f64, goodput: Goodput) {
        self.probes.push(Probe { load, goodput });
    }

    /// The result so far (final once [`Search::next_load`] is `None`).
    pub fn result(&self) -> SearchResult {
        let (pass, fail) = (self.highest_pass(), self.lowest_fail());
        let outcome = match (pass, fail) {
            (None, Some(_)) => Outcome::NoneMeets,
            (Some(p), None) if p >= self.cfg.max => Outcome::AboveMax,
            (Some(p), Some(f)) if f <= p || f - p <= self.cfg.step(p) => Outcome::Converged,
            // still bracketing or bisecting: only a final result at the probe limit gets here
            _ => Outcome::ProbeLimit,
        };
        let mut probes = self.probes.clone();
        probes.sort_by(|a, b| a.load.total_cmp(&b.load));
        SearchResult {
            axis: self.cfg.axis,
            slo: self
                .probes
                .first()
                .map(|p| p.goodput.slo.clone())
                .unwrap_or_default(),
            knee: pass,
            first_fail: fail,
            step: pass.map(|p| self.cfg.step(p)),
            outcome,
            non_monotone: matches!((pass, fail), (Some(p), Some(f)) if f < p),
            probes,
        }
    }
}

fn fmt_load(axis: Axis, x: f64) -> String {
    match axis {
        Axis::Conc => format!("{x:.0}"),
        Axis::Rate => format!("{x:.3} req/s"),
    }
}

impl SearchResult {
    /// Human-readable lines: every probe (load, attainment, goodput, each objective's observed
    /// percentile against its threshold, pass/fail), then the knee with its evidence points.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let axis = self.axis.as_str();
        out.push_str(&format!("SLO search over {axis}: {}\n", self.slo));
        for p in &self.probes {
            let g = &p.goodput;
            let obj: Vec<String> = g
                .evidence
                .iter()
                .map(|e| {
                    format!(
                        "{} p{} {} / {} ms",
                        e.metric,
                        g.target_pct,
                        e.observed_ms
                            .map_or("null".to_string(), |v| format!("{v:.2}")),
                        e.threshold_ms
                    )
                })
                .collect();
            out.push_str(&format!(
                "  {axis} {:>10}: {} — {}/{} good ({} failed), attainment {}, goodput {:.3} req/s, {:.1} tok/s/GPU; {}\n",
                fmt_load(self.axis, p.load),
                if g.meets_slo { "meets" } else { "misses" },
                g.good,
                g.requests,
                g.failed,
                g.attainment_pct
                    .map_or("null".to_string(), |a| format!("{a:.1} %")),
                g.goodput_rps,
                g.goodput_tput_per_gpu,
                obj.join(", ")
            ));
        }
        let line = match (self.outcome, self.knee, self.first_fail) {
            (Outcome::NoneMeets, _, Some(f)) => format!(
                "no knee: the lowest load measured ({axis} {}) already misses the SLO",
                fmt_load(self.axis, f)
            ),
            (Outcome::AboveMax, Some(k), _) => format!(
                "knee ≥ {axis} {}: the SLO is still met at the highest load allowed (--max)",
                fmt_load(self.axis, k)
            ),
            (_, Some(k), Some(f)) => format!(
                "knee: {axis} {} meets the SLO, {} misses it (step {}){}{}",
                fmt_load(self.axis, k),
                fmt_load(self.axis, f),
                self.step.map_or(String::new(), |s| match self.axis {
                    Axis::Conc => format!("{s:.1}"),
                    Axis::Rate => format!("{s:.3} req/s"),
                }),
                if self.outcome == Outcome::ProbeLimit {
                    "; stopped at the probe limit before the bracket reached one step"
                } else {
                    ""
                },
                if self.non_monotone {
                    "; WARNING: a passing point lies above a failing one (noisy or non-monotone)"
                } else {
                    ""
                }
            ),
            _ => "no knee: nothing measured".to_string(),
        };
        out.push_str(&line);
        out.push('\n');
        out
    }
}
