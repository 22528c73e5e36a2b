//! The comparison itself: grouping repeats, matching, gates, deltas, noise rule, verdicts.
//! The rules are written out for users in `docs/compare.md`; keep the two in step.

use std::collections::BTreeMap;

use crate::{
    BenchmarkType, CompareOptions, Comparison, Delta, Direction, EvalComparison, EvalPoint,
    GateCheck, GateKind, GateOutcome, GateValue, Metric, MetricComparison, NaReason, Point,
    PointComparison, PointKey, PointStatus, RunInfo, Side, Spread, Verdict,
};

/// Rounds to `d` decimals, never returning `-0.0`.
pub fn round_to(x: f64, d: i32) -> f64 {
    let f = 10f64.powi(d);
    let r = (x * f).round() / f;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// `(new/old − 1) × 100`, unrounded; `None` when `old` is 0.
fn rel_pct(old: f64, new: f64) -> Option<f64> {
    (old != 0.0).then(|| (new / old - 1.0) * 100.0)
}

/// Groups points by match identity (repeats of one identity merged with
/// [`Point::merge_repeats`]), sorted by identity.
pub fn group_repeats(points: Vec<Point>) -> Vec<Point> {
    let mut groups: BTreeMap<PointKey, Vec<Point>> = BTreeMap::new();
    for p in points {
        groups.entry(p.identity.match_key()).or_default().push(p);
    }
    groups
        .into_values()
        .filter_map(Point::merge_repeats)
        .collect()
}

/// The throughput/latency delta of `old` → `new` in display units (AUTOMATION §5.6).
pub fn delta(old: Option<f64>, new: Option<f64>) -> Delta {
    match (old, new) {
        (None, _) => Delta::na(NaReason::BaselineMissing),
        (Some(0.0), _) => Delta::na(NaReason::BaselineZero),
        (_, None) => Delta::na(NaReason::CandidateMissing),
        (Some(o), Some(n)) => Delta {
            value: Some(n - o),
            pct: rel_pct(o, n).map(|p| round_to(p, 1)),
            na: None,
        },
    }
}

fn length_gate(
    kind: GateKind,
    name: &str,
    base: Option<f64>,
    cand: Option<f64>,
    tol: f64,
) -> GateCheck {
    match (base, cand) {
        (Some(b), Some(c)) if b > 0.0 => {
            let diff = (c / b - 1.0) * 100.0;
            let failed = diff.abs() > tol;
            let shown = round_to(diff, 1);
            GateCheck {
                kind,
                baseline: Some(GateValue::Number(b)),
                candidate: Some(GateValue::Number(c)),
                diff_pct: Some(shown),
                limit: Some(tol),
                outcome: if failed {
                    GateOutcome::Failed
                } else {
                    GateOutcome::Passed
                },
                message: format!(
                    "{name} {}{:.1}% ({} vs {}), {} the ±{}% tolerance",
                    if shown < 0.0 { "−" } else { "+" },
                    shown.abs(),
                    fmt_num(c),
                    fmt_num(b),
                    if failed { "beyond" } else { "within" },
                    fmt_num(tol)
                ),
            }
        }
        _ => GateCheck {
            kind,
            baseline: base.map(GateValue::Number),
            candidate: cand.map(GateValue::Number),
            diff_pct: None,
            limit: Some(tol),
            outcome: GateOutcome::Skipped,
            message: format!(
                "{name} not checked ({} has none)",
                match (base, cand) {
                    (None, None) => "neither side",
                    (None, _) => "the baseline",
                    _ => "the candidate",
                }
            ),
        },
    }
}

/// Shortest plain rendering of a number for messages: `1024`, `63`, `8192.5`.
fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{:.2}", x);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn failure_gate(kind: GateKind, who: &str, p: &Point, limit: f64) -> GateCheck {
    match p.failure_rate() {
        Some(rate) => {
            let failed = rate > limit;
            GateCheck {
                kind,
                baseline: None,
                candidate: None,
                diff_pct: None,
                limit: Some(limit),
                outcome: if failed {
                    GateOutcome::Failed
                } else {
                    GateOutcome::Passed
                },
                message: format!(
                    "{who} failure rate {}% ({} of {} requests), {} the {}% gate",
                    fmt_num(round_to(rate * 100.0, 1)),
                    p.num_requests_failed.unwrap_or(0),
                    p.num_requests_total.unwrap_or(0),
                    if failed { "over" } else { "within" },
                    fmt_num(limit * 100.0)
                ),
            }
        }
        None => GateCheck {
            kind,
            baseline: None,
            candidate: None,
            diff_pct: None,
            limit: Some(limit),
            outcome: GateOutcome::Skipped,
            message: format!("{who} failure rate not checked (request counts unknown)"),
        },
    }
}

/// The comparability gates of one matched pair (case B18), in a fixed order: output length,
/// input length, API kind, candidate failure rate, baseline failure rate.
pub fn gates(base: &Point, cand: &Point, opts: &CompareOptions) -> Vec<GateCheck> {
    let tol = opts.length_tolerance_pct;
    let mut out = vec![length_gate(
        GateKind::OutputLength,
        "mean output length",
        base.mean_osl,
        cand.mean_osl,
        tol,
    )];
    // Server-side input length when both have it (what the engine really prefilled), else the
    // client-side count.
    let isl = if base.mean_isl_server.is_some() && cand.mean_isl_server.is_some() {
        length_gate(
            GateKind::InputLength,
            "mean server-side input length",
            base.mean_isl_server,
            cand.mean_isl_server,
            tol,
        )
    } else {
        length_gate(
            GateKind::InputLength,
            "mean input length",
            base.mean_isl,
            cand.mean_isl,
            tol,
        )
    };
    out.push(isl);
    let api_name = |a: Option<crate::ApiKind>| match a {
        Some(crate::ApiKind::Chat) => "chat".to_string(),
        Some(crate::ApiKind::Completions) => "completions".to_string(),
        None => "unknown".to_string(),
    };
    out.push(match (base.api, cand.api) {
        (Some(b), Some(c)) => GateCheck {
            kind: GateKind::ApiKind,
            baseline: Some(GateValue::Text(api_name(Some(b)))),
            candidate: Some(GateValue::Text(api_name(Some(c)))),
            diff_pct: None,
            limit: None,
            outcome: if b == c {
                GateOutcome::Passed
            } else {
                GateOutcome::Failed
            },
            message: if b == c {
                format!("same API kind ({})", api_name(Some(b)))
            } else {
                format!(
                    "different API kind ({} vs {})",
                    api_name(Some(c)),
                    api_name(Some(b))
                )
            },
        },
        (b, c) => GateCheck {
            kind: GateKind::ApiKind,
            baseline: b.map(|b| GateValue::Text(api_name(Some(b)))),
            candidate: c.map(|c| GateValue::Text(api_name(Some(c)))),
            diff_pct: None,
            limit: None,
            outcome: GateOutcome::Skipped,
            message: "API kind not checked (unknown on one side)".into(),
        },
    });
    let limit = opts
        .max_failure_rate
        .unwrap_or(match cand.identity.benchmark_type {
            BenchmarkType::SingleTurn | BenchmarkType::MultiTurn => 0.05,
            BenchmarkType::AgenticTraces => 0.10,
        });
    out.push(failure_gate(
        GateKind::CandidateFailureRate,
        "candidate",
        cand,
        limit,
    ));
    out.push(failure_gate(
        GateKind::BaselineFailureRate,
        "baseline",
        base,
        limit,
    ));
    out
}

/// The noise rule for one metric with a delta (case B20). Returns the metric's verdict.
///
/// * tail statistic (p90/p99) and fewer than `tail_min_repeats` baseline repeats → `observation`;
/// * baseline with ≥ 2 repeats: candidate inside `[min, max]` or within `mean ± noise_sd·sd`
///   → `no_change`;
/// * `|cand − base|` within the combined 95 % confidence interval of the two sides' means
///   (`√(h_b² + h_c²)`, t-intervals over repeats, else `--ci` bootstrap intervals,
///   [`crate::ci`]) → `no_change`;
/// * |Δ%| ≤ `gate_pct` → `no_change`;
/// * otherwise `regression` / `improvement` by the metric's direction.
fn noise_verdict(
    metric: Metric,
    base_spread: Option<&Spread>,
    cand_spread: Option<&Spread>,
    base: f64,
    cand: f64,
    ci: (Option<f64>, Option<f64>),
    opts: &CompareOptions,
) -> Verdict {
    let n = base_spread.map_or(1, |s| s.n);
    if metric.has_stat() && opts.stat.is_tail() && n < opts.tail_min_repeats {
        return Verdict::Observation;
    }
    // `x` inside the spread `s` of the other side: within [min, max] or mean ± noise_sd × sd.
    let inside = |s: &Spread, x: f64| {
        s.n >= 2
            && ((x >= s.min && x <= s.max)
                || s.sd
                    .is_some_and(|sd| (x - s.mean).abs() <= opts.noise_sd * sd))
    };
    // Rule 2: the candidate inside the baseline's run-to-run spread.
    if base_spread.is_some_and(|s| inside(s, cand)) {
        return Verdict::NoChange;
    }
    // Rule 2b: the baseline inside the candidate's own run-to-run spread (the candidate's
    // repeats disagree with each other by more than the change).
    if cand_spread.is_some_and(|s| inside(s, base)) {
        return Verdict::NoChange;
    }
    // Rule 2c: the delta within the combined 95 % confidence interval of the two sides
    // (t-intervals over the repeats as `--repeats N` prints them, else a `--ci` run's
    // bootstrap interval; crate::ci).
    if crate::ci::within(base, cand, ci.0, ci.1) {
        return Verdict::NoChange;
    }
    let pct = match rel_pct(base, cand) {
        Some(p) => p,
        None => return Verdict::NotComparable,
    };
    if pct.abs() <= opts.gate_pct {
        return Verdict::NoChange;
    }
    let better = match metric.direction() {
        Direction::HigherIsBetter => cand > base,
        Direction::LowerIsBetter => cand < base,
    };
    if better {
        Verdict::Improvement
    } else {
        Verdict::Regression
    }
}

/// The noise rule's claim `v`, kept only where its uncertainty is known. When both sides carry
/// per-request records (`records`: the comparison decides by intervals, docs/compare.md §4a)
/// but this metric has no per-request samples (energy: one integral per point), no repeats or
/// interval on either side (`interval`) and no stored noise floor it clears (`floor`, % of
/// the baseline), a change beyond the gate is `inconclusive`, never a regression: measured
/// 2026-12-03, 8 of 200 simulated A/A pairs with other seeds were called regressions on J/tok
/// alone (+6 % at conc 1, 10 requests: the prompt-length mix moves it). Without records
/// (InferenceX rows, files) the bare gate stays the rule, as compare_results.py has it.
fn unmeasured_uncertainty(
    v: Verdict,
    records: bool,
    interval: bool,
    floor: Option<f64>,
    pct: Option<f64>,
) -> Verdict {
    let claim = matches!(v, Verdict::Regression | Verdict::Improvement);
    let clears_floor = matches!((floor, pct), (Some(f), Some(p)) if p.abs() > f);
    if claim && records && !interval && !clears_floor {
        Verdict::Inconclusive
    } else {
        v
    }
}

/// A metric's verdict from its bootstrap interval (before the false-discovery-rate step).
fn evidence_verdict(e: &crate::evidence::Evidence) -> Verdict {
    use crate::evidence::Call;
    match e.call() {
        Call::Worse => Verdict::Regression,
        Call::Better => Verdict::Improvement,
        Call::Same => Verdict::NoChange,
        Call::Unsure => Verdict::Inconclusive,
    }
}

/// A compared row's verdict from its metrics: regression, improvement, inconclusive,
/// observation, no change — the first any metric has.
fn rollup(metrics: &[MetricComparison]) -> Verdict {
    let has = |v: Verdict| metrics.iter().any(|m| m.verdict == v);
    [
        Verdict::Regression,
        Verdict::Improvement,
        Verdict::Inconclusive,
        Verdict::Observation,
    ]
    .into_iter()
    .find(|v| has(*v))
    .unwrap_or(Verdict::NoChange)
}

/// Multiple comparisons (docs/compare.md §4a): every metric of every point with bootstrap
/// evidence is one hypothesis; a regression or improvement whose p-value Benjamini–Hochberg
/// (at [`crate::evidence::FDR_Q`]) does not keep becomes `inconclusive`, and the rows'
/// verdicts are rolled up again.
fn control_fdr(points: &mut [PointComparison]) {
    let mut ps = Vec::new();
    for p in points.iter() {
        for m in &p.metrics {
            if let Some(e) = &m.evidence {
                ps.push(e.p_value);
            }
        }
    }
    let keep = crate::evidence::benjamini_hochberg(&ps, crate::evidence::FDR_Q);
    let family = ps.len();
    let mut k = 0;
    for p in points.iter_mut() {
        let mut touched = false;
        for m in p.metrics.iter_mut() {
            let Some(e) = m.evidence.as_mut() else {
                continue;
            };
            e.family = family;
            let kept = keep[k];
            k += 1;
            touched = true;
            if matches!(m.verdict, Verdict::Regression | Verdict::Improvement) && !kept {
                e.fdr_dropped = true;
                m.verdict = Verdict::Inconclusive;
            }
        }
        // only rows whose verdict came from their metrics (not a gate or an N/A row)
        if touched
            && matches!(
                p.verdict,
                Verdict::Regression
                    | Verdict::Improvement
                    | Verdict::Inconclusive
                    | Verdict::Observation
                    | Verdict::NoChange
            )
        {
            p.verdict = rollup(&p.metrics);
        }
    }
}

fn spread_of(p: &Point, metric: Metric, opts: &CompareOptions) -> Option<Spread> {
    if p.repeats.len() < 2 {
        return None;
    }
    Spread::of(&p.repeat_values(metric, opts.stat)).filter(|s| s.n >= 2)
}

/// An invalid point's violated rules as one line (`point_status invalid` when the row carries
/// no reasons).
fn invalid_text(p: &Point) -> String {
    let r = p.invalid_reasons();
    if r.is_empty() {
        "point_status invalid".to_string()
    } else {
        r.join("; ")
    }
}

fn unmatched_row(cand: Point, opts: &CompareOptions) -> PointComparison {
    let failed = matches!(cand.status, PointStatus::Failed | PointStatus::Invalid);
    let metrics = opts
        .metrics
        .iter()
        .map(|&metric| MetricComparison {
            metric,
            stat: metric.has_stat().then_some(opts.stat),
            baseline: None,
            candidate: cand.value(metric, opts.stat),
            delta: Delta::na(NaReason::NoMatchedBaseline),
            verdict: Verdict::NotComparable,
            baseline_spread: None,
            candidate_spread: spread_of(&cand, metric, opts),
            evidence: None,
        })
        .collect();
    PointComparison {
        identity: cand.identity.clone(),
        baseline: None,
        candidate: cand,
        gates: Vec::new(),
        metrics,
        verdict: if failed {
            Verdict::CandidateInvalid
        } else {
            Verdict::NotComparable
        },
        na: Some(NaReason::NoMatchedBaseline),
    }
}

fn workload_label(p: &Point) -> String {
    match &p.dataset {
        Some(d) => format!("{} ({d})", p.identity.workload_label()),
        None => p.identity.workload_label(),
    }
}

/// Compares one matched pair.
pub fn compare_pair(base: Point, cand: Point, opts: &CompareOptions) -> PointComparison {
    // Row-level N/A reasons, in order of precedence.
    let row_na = if base.status == PointStatus::Failed {
        Some(NaReason::PointFailed {
            side: Side::Baseline,
        })
    } else if cand.status == PointStatus::Failed {
        Some(NaReason::PointFailed {
            side: Side::Candidate,
        })
    } else if base.status == PointStatus::Invalid {
        Some(NaReason::PointInvalid {
            side: Side::Baseline,
            reason: invalid_text(&base),
        })
    } else if cand.status == PointStatus::Invalid {
        Some(NaReason::PointInvalid {
            side: Side::Candidate,
            reason: invalid_text(&cand),
        })
    } else if matches!((&base.dataset, &cand.dataset), (Some(b), Some(c)) if b != c) {
        Some(NaReason::WorkloadMismatch {
            baseline: workload_label(&base),
            candidate: workload_label(&cand),
        })
    } else {
        None
    };
    let gates = if row_na.is_none() {
        gates(&base, &cand, opts)
    } else {
        Vec::new()
    };
    let gate_failed = |k: GateKind| {
        gates
            .iter()
            .any(|g| g.kind == k && g.outcome == GateOutcome::Failed)
    };
    let cand_invalid = gate_failed(GateKind::CandidateFailureRate);
    let not_comparable = gates.iter().any(|g| g.outcome == GateOutcome::Failed);
    // A candidate over its failure-rate gate is invalid: its cells say `Δ N/A` with the gate,
    // never a delta of the invalid run. (A point InferenceX would not accept as a submission,
    // AgentX `agentx_submission_valid: false`, is compared as usual: its numbers stand, and the
    // verdict line says why it is not a valid submission, `Point::submission_invalid_text`.)
    let row_na = match row_na {
        None if cand_invalid => Some(NaReason::PointInvalid {
            side: Side::Candidate,
            reason: gates
                .iter()
                .find(|g| g.kind == GateKind::CandidateFailureRate)
                .map(|g| g.message.clone())
                .unwrap_or_default(),
        }),
        other => other,
    };

    let mut metrics = Vec::with_capacity(opts.metrics.len());
    for &metric in &opts.metrics {
        let stat = metric.has_stat().then_some(opts.stat);
        let b = base.value(metric, opts.stat);
        let c = cand.value(metric, opts.stat);
        let base_spread = spread_of(&base, metric, opts);
        let cand_spread = spread_of(&cand, metric, opts);
        let d = match &row_na {
            Some(r) => Delta::na(r.clone()),
            None if metric.is_energy() && base.energy_kind() != cand.energy_kind() => {
                Delta::na(NaReason::EnergySourceMismatch {
                    baseline: base.energy_kind().to_string(),
                    candidate: cand.energy_kind().to_string(),
                })
            }
            None => match base.only_stat {
                Some(only) if metric.has_stat() && only != opts.stat => {
                    Delta::na(NaReason::StatisticMismatch {
                        baseline: only,
                        requested: opts.stat,
                    })
                }
                _ => delta(b, c),
            },
        };
        // With per-request samples on both sides the bootstrap of the difference decides
        // (docs/compare.md §4a); without (files, tables, old runs) the noise rule below.
        let evidence = match (&d.na, &base.samples, &cand.samples) {
            (None, Some(bs), Some(cs)) if !not_comparable => crate::evidence::evidence(
                bs,
                cs,
                metric,
                opts.stat,
                cand.identity.conc,
                opts.gate_pct,
                base.noise_floor.get(&metric.agg_key(opts.stat)).copied(),
            ),
            _ => None,
        };
        let verdict = match (&d.na, b, c) {
            (Some(_), _, _) => Verdict::NotComparable,
            // Deltas on a pair that failed a gate are information only.
            _ if not_comparable => Verdict::Observation,
            _ if evidence.is_some() => evidence_verdict(evidence.as_ref().expect("some")),
            (None, Some(b), Some(c)) => {
                let ci = (
                    crate::ci::side_half_width(&base, base_spread.as_ref(), metric, opts.stat),
                    crate::ci::side_half_width(&cand, cand_spread.as_ref(), metric, opts.stat),
                );
                let v = noise_verdict(
                    metric,
                    base_spread.as_ref(),
                    cand_spread.as_ref(),
                    b,
                    c,
                    ci,
                    opts,
                );
                let interval = base_spread.as_ref().is_some_and(|s| s.n >= 2)
                    || cand_spread.as_ref().is_some_and(|s| s.n >= 2)
                    || ci.0.is_some()
                    || ci.1.is_some();
                let floor = base.noise_floor.get(&metric.agg_key(opts.stat)).copied();
                unmeasured_uncertainty(
                    v,
                    base.samples.is_some() && cand.samples.is_some(),
                    interval,
                    floor,
                    d.pct,
                )
            }
            _ => Verdict::NotComparable,
        };
        metrics.push(MetricComparison {
            metric,
            stat,
            baseline: b,
            candidate: c,
            delta: d,
            verdict,
            baseline_spread: base_spread,
            candidate_spread: cand_spread,
            evidence,
        });
    }

    let (verdict, na) = if let Some(r) = row_na {
        let v = match r {
            NaReason::PointFailed {
                side: Side::Candidate,
            }
            | NaReason::PointInvalid {
                side: Side::Candidate,
                ..
            } => Verdict::CandidateInvalid,
            _ => Verdict::NotComparable,
        };
        (v, Some(r))
    } else if cand_invalid {
        (Verdict::CandidateInvalid, None)
    } else if not_comparable {
        (Verdict::NotComparable, None)
    } else if metrics.iter().all(|m| m.delta.na.is_some()) && !metrics.is_empty() {
        (Verdict::NotComparable, metrics[0].delta.na.clone())
    } else {
        (rollup(&metrics), None)
    };
    PointComparison {
        identity: cand.identity.clone(),
        baseline: Some(base),
        candidate: cand,
        gates,
        metrics,
        verdict,
        na,
    }
}

/// The sample standard error of a proportion score over `n` samples, the way lm-eval reports
/// `exact_match_stderr` (sample sd / √n = √(p(1−p)/(n−1))).
fn binomial_se(p: f64, n: u64) -> Option<f64> {
    (n > 1).then(|| (p * (1.0 - p) / (n - 1) as f64).sqrt())
}

/// Compares one eval pair (AUTOMATION §5.6: pp delta, two decimals, only when both passed with
/// equal sample counts).
pub fn compare_eval(base: Option<EvalPoint>, cand: Option<EvalPoint>) -> EvalComparison {
    let (task, metric, conc) = {
        let any = cand.as_ref().or(base.as_ref()).expect("one side present");
        (any.task.clone(), any.metric.clone(), any.identity.conc)
    };
    let cand_failed = cand.as_ref().is_some_and(|c| c.passed != Some(true));
    let (delta, verdict) = match (&base, &cand) {
        (None, _) => (
            Delta::na(NaReason::NoMatchedBaseline),
            if cand_failed {
                Verdict::CandidateInvalid
            } else {
                Verdict::NotComparable
            },
        ),
        (Some(_), None) => (
            Delta::na(NaReason::CandidateMissing),
            Verdict::NotComparable,
        ),
        (Some(b), Some(c)) => {
            if c.passed != Some(true) {
                (
                    Delta::na(NaReason::EvalNotPassed {
                        side: Side::Candidate,
                    }),
                    // A candidate with a score under its threshold is a regression; one with
                    // no score at all (the eval did not run) is invalid.
                    if c.score.is_some() {
                        Verdict::Regression
                    } else {
                        Verdict::CandidateInvalid
                    },
                )
            } else if b.passed != Some(true) {
                (
                    Delta::na(NaReason::EvalNotPassed {
                        side: Side::Baseline,
                    }),
                    Verdict::NotComparable,
                )
            } else if b.samples.is_none() || b.samples != c.samples {
                (
                    Delta::na(NaReason::SampleCountsDiffer {
                        baseline: b.samples,
                        candidate: c.samples,
                    }),
                    Verdict::NotComparable,
                )
            } else {
                match (b.score, c.score) {
                    (Some(bs), Some(cs)) => {
                        let pp = round_to((cs - bs) * 100.0, 2);
                        let n = b.samples.unwrap_or(0);
                        let se_b = b.score_se.or_else(|| binomial_se(bs, n));
                        let se_c = c.score_se.or_else(|| binomial_se(cs, n));
                        let band = match (se_b, se_c) {
                            (Some(x), Some(y)) => 2.0 * (x * x + y * y).sqrt() * 100.0,
                            _ => 0.0,
                        };
                        let diff = (cs - bs) * 100.0;
                        let v = if diff.abs() <= band {
                            Verdict::NoChange
                        } else if diff > 0.0 {
                            Verdict::Improvement
                        } else {
                            Verdict::Regression
                        };
                        (
                            Delta {
                                value: Some(pp),
                                pct: Some(pp),
                                na: None,
                            },
                            v,
                        )
                    }
                    (None, _) => (Delta::na(NaReason::BaselineMissing), Verdict::NotComparable),
                    (_, None) => (
                        Delta::na(NaReason::CandidateMissing),
                        Verdict::NotComparable,
                    ),
                }
            }
        }
    };
    EvalComparison {
        task,
        metric,
        conc,
        baseline: base,
        candidate: cand,
        delta,
        verdict,
    }
}

/// A deployment configuration: the identity without topology, workload and concurrency
/// (hardware, framework, model prefix, precision, speculative decoding, disaggregation,
/// multinode) — what an InferenceX config key names.
type ConfigKey = (String, String, String, String, String, bool, bool);

fn config_key(i: &PointKey) -> ConfigKey {
    let m = i.match_key();
    (
        m.hw,
        m.framework,
        m.model_prefix,
        m.precision,
        m.spec_decoding,
        m.disagg,
        m.is_multinode,
    )
}

/// Compares a candidate run with a baseline run.
///
/// Points of one side with the same match identity are repeats and are merged
/// ([`group_repeats`]). Every candidate point yields a row (unmatched ones with
/// `na = NoMatchedBaseline`); baseline points nobody matched are listed in
/// `unmatched_baseline`. Eval rows are matched on [`PointKey::eval_key`] + task + metric;
/// baseline evals without a candidate are listed with `CandidateMissing`.
pub fn compare(
    baseline: RunInfo,
    baseline_points: Vec<Point>,
    baseline_evals: Vec<EvalPoint>,
    candidate: RunInfo,
    candidate_points: Vec<Point>,
    candidate_evals: Vec<EvalPoint>,
    opts: &CompareOptions,
) -> Comparison {
    // energy columns join the table when a point of either side carries energy
    let with_energy = CompareOptions {
        metrics: crate::with_energy(
            &opts.metrics,
            baseline_points.iter().chain(candidate_points.iter()),
        ),
        ..opts.clone()
    };
    let opts = &with_energy;
    let mut base_by_key: BTreeMap<PointKey, Point> = group_repeats(baseline_points)
        .into_iter()
        .map(|p| (p.identity.match_key(), p))
        .collect();
    let mut points = Vec::new();
    let mut unmatched_candidate = Vec::new();
    for cand in group_repeats(candidate_points) {
        match base_by_key.remove(&cand.identity.match_key()) {
            Some(base) => points.push(compare_pair(base, cand, opts)),
            None => {
                unmatched_candidate.push(cand.identity.clone());
                points.push(unmatched_row(cand, opts));
            }
        }
    }
    control_fdr(&mut points);
    let mut unmatched_baseline: Vec<Point> = base_by_key.into_values().collect();
    // A baseline file holding many configurations (a dashboard capture: 435 rows of 9 GPUs ×
    // 6 frameworks): its points of configurations the candidate did not run at all are kept
    // apart (counted, not listed row by row) once some baseline point shares a configuration
    // with the candidate; when none does, every baseline point stays listed (it shows why
    // nothing matched).
    let cand_configs: Vec<ConfigKey> = points.iter().map(|p| config_key(&p.identity)).collect();
    let shares = |p: &Point| cand_configs.contains(&config_key(&p.identity));
    let mut baseline_other_configs = Vec::new();
    if points.iter().any(|p| p.baseline.is_some()) || unmatched_baseline.iter().any(shares) {
        let (same, other): (Vec<Point>, Vec<Point>) =
            unmatched_baseline.into_iter().partition(shares);
        unmatched_baseline = same;
        baseline_other_configs = other;
    }
    // The baseline's sources: the run links of the baseline points a candidate matched; when
    // none matched, those of the baseline points listed (`unmatched_baseline`: the
    // candidate's configuration, or every point when it shares none), never the links of
    // configurations only counted; the loader's list when no point names a run.
    let mut baseline = baseline;
    let matched = crate::import::source_links(points.iter().filter_map(|p| p.baseline.as_ref()));
    let listed = crate::import::source_links(&unmatched_baseline);
    if !matched.is_empty() {
        baseline.sources = matched;
    } else if !listed.is_empty() || !baseline_other_configs.is_empty() {
        baseline.sources = listed;
    }

    type EvalKey = (PointKey, String, String);
    let key =
        |e: &EvalPoint| -> EvalKey { (e.identity.eval_key(), e.task.clone(), e.metric.clone()) };
    let mut base_evals: BTreeMap<EvalKey, EvalPoint> = BTreeMap::new();
    for e in baseline_evals {
        // Later rows of the same key replace earlier ones (InferenceX: newest file per conc).
        base_evals.insert(key(&e), e);
    }
    let mut evals = Vec::new();
    let mut cand_evals: BTreeMap<EvalKey, EvalPoint> = BTreeMap::new();
    for e in candidate_evals {
        cand_evals.insert(key(&e), e);
    }
    for (k, c) in cand_evals {
        let b = base_evals.remove(&k);
        evals.push(compare_eval(b, Some(c)));
    }
    for (_, b) in base_evals {
        evals.push(compare_eval(Some(b), None));
    }
    evals.sort_by(|a, b| (&a.task, &a.metric, a.conc).cmp(&(&b.task, &b.metric, b.conc)));

    let verdict = points
        .iter()
        .map(|p| p.verdict)
        // Baseline-only rows (points or evals the candidate did not run) are listed but do
        // not decide the overall verdict.
        .chain(
            evals
                .iter()
                .filter(|e| e.candidate.is_some())
                .map(|e| e.verdict),
        )
        .max()
        .unwrap_or(Verdict::NoChange);
    Comparison {
        options: opts.clone(),
        baseline,
        candidate,
        points,
        unmatched_candidate,
        unmatched_baseline,
        baseline_other_configs,
        evals,
        verdict,
    }
}

impl Comparison {
    /// Whether any point metric or eval row is a `regression` (beyond the noise band and the
    /// gate). `servebench compare` exits non-zero on this.
    pub fn has_regression(&self) -> bool {
        self.points
            .iter()
            .any(|p| p.metrics.iter().any(|m| m.verdict == Verdict::Regression))
            || self.evals.iter().any(|e| e.verdict == Verdict::Regression)
    }

    /// Whether any candidate point or eval is `candidate_invalid`.
    pub fn has_invalid_candidate(&self) -> bool {
        self.points
            .iter()
            .any(|p| p.verdict == Verdict::CandidateInvalid)
            || self
                .evals
                .iter()
                .any(|e| e.verdict == Verdict::CandidateInvalid)
    }
}

#[cfg(test)]
mod uncertainty_tests {
    use super::*;

    /// A single-number metric (energy) beyond the gate in a comparison decided by intervals:
    /// inconclusive without an interval or a floor it clears; the claim stands with either,
    /// and always without records (the InferenceX bare gate).
    #[test]
    fn a_claim_without_a_known_uncertainty_is_inconclusive_only_where_intervals_decide() {
        let r = Verdict::Regression;
        assert_eq!(
            unmeasured_uncertainty(r, true, false, None, Some(6.0)),
            Verdict::Inconclusive
        );
        assert_eq!(
            unmeasured_uncertainty(Verdict::Improvement, true, false, Some(8.0), Some(-6.0)),
            Verdict::Inconclusive
        );
        assert_eq!(
            unmeasured_uncertainty(r, true, false, Some(4.0), Some(6.0)),
            r
        );
        assert_eq!(unmeasured_uncertainty(r, true, true, None, Some(6.0)), r);
        assert_eq!(unmeasured_uncertainty(r, false, false, None, Some(6.0)), r);
        assert_eq!(
            unmeasured_uncertainty(Verdict::NoChange, true, false, None, Some(1.0)),
            Verdict::NoChange
        );
    }
}
