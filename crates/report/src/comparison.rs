//! A `servebench_compare::Comparison` (or a run alone) as a report document: the compare stage
//! has already matched points, run the gates and decided deltas and verdicts; this module only
//! words them (English with the numbers, Chinese without) and lays them out.

use servebench_compare as cmp;

use crate::format::fmt_pct_delta;
use crate::model::*;

/// Options of [`build`].
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Title prefix / bot name (default `servebench`).
    pub title_prefix: Option<String>,
    /// Columns of the point table; empty → Total and Output tok/s/GPU, TTFT ms, TPOT ms.
    pub columns: Vec<Column>,
}

/// The report's default columns (the PRODUCT.md table).
pub const DEFAULT_COLUMNS: [Column; 4] = crate::attempt::BASELINE_COLUMNS;

/// [`DEFAULT_COLUMNS`], and J per output token when a point carries energy.
pub fn default_columns(energy: bool) -> Vec<Column> {
    let mut c = DEFAULT_COLUMNS.to_vec();
    if energy {
        c.push(Column::JoulesPerOutputToken);
    }
    c
}

/// Report metric → compare metric.
pub fn to_cmp_metric(m: Column) -> cmp::Metric {
    match m {
        Column::TotalTputPerGpu => cmp::Metric::TotalTputPerGpu,
        Column::OutputTputPerGpu => cmp::Metric::OutputTputPerGpu,
        Column::InputTputPerGpu => cmp::Metric::InputTputPerGpu,
        Column::TtftMs => cmp::Metric::Ttft,
        Column::TpotMs => cmp::Metric::Tpot,
        Column::ItlMs => cmp::Metric::Itl,
        Column::E2elMs => cmp::Metric::E2el,
        Column::Interactivity => cmp::Metric::Intvty,
        Column::JoulesPerOutputToken => cmp::Metric::JoulesPerOutputToken,
        Column::JoulesPerToken => cmp::Metric::JoulesPerToken,
        Column::PowerPerGpu => cmp::Metric::PowerPerGpu,
        Column::Ix(c) => c.cmp_metric(),
    }
}

/// A side's value of a column in its display unit: an InferenceX column's fixed statistic, else
/// the metric at `stat`.
fn side_value(p: &cmp::Point, m: Column, stat: cmp::Stat) -> Option<f64> {
    match m {
        Column::Ix(c) => c.value(p),
        _ => p.value(to_cmp_metric(m), stat),
    }
}

/// A cell of an InferenceX PR-check column (`crate::ix_columns`): the candidate's value, and
/// compare_results.py's delta `(new / old − 1) × 100` against the matched baseline, toned by
/// direction alone; N/A with the point's reason where the script would print `N/A` or the
/// comparison found the point not comparable.
fn ix_cell(m: Column, pc: &cmp::PointComparison) -> Cell {
    let cand = &pc.candidate;
    let value = if usable(cand.status) {
        side_value(cand, m, cmp::Stat::Mean)
    } else {
        None
    };
    let baseline = pc
        .baseline
        .as_ref()
        .and_then(|b| side_value(b, m, cmp::Stat::Mean));
    let delta = if let Some(r) = &pc.na {
        Delta::Na(na_reason(r))
    } else if pc.baseline.is_none() {
        Delta::Na(NaReason::NoMatchedBaseline)
    } else if !usable(cand.status) {
        Delta::Na(NaReason::PointFailed)
    } else {
        match (baseline, value) {
            (None, _) => Delta::Na(NaReason::BaselineMissing),
            (Some(b), _) if b == 0.0 => Delta::Na(NaReason::BaselineZero),
            (_, None) => Delta::Na(NaReason::CandidateMissing),
            (Some(b), Some(v)) => match crate::format::pct_delta(b, v) {
                Some(p) => Delta::Pct(p),
                None => Delta::Na(NaReason::CandidateMissing),
            },
        }
    };
    Cell {
        value,
        baseline,
        sd: None,
        tone: match &delta {
            Delta::Pct(d) => Tone::of_pct(m, *d),
            _ => None,
        },
        delta,
        modelled: false,
    }
}

/// The note of a row whose energy cells are modelled: which columns, and that they are the
/// simulator's power model, not a measurement (docs/simulator.md "Energy").
fn modelled_remark(columns: &[Column], cells: &[Cell]) -> Option<RowRemark> {
    let cols: Vec<&str> = columns
        .iter()
        .zip(cells)
        .filter(|(_, c)| c.modelled)
        .map(|(m, _)| m.label())
        .collect();
    (!cols.is_empty()).then(|| RowRemark {
        kind: "energy".into(),
        en: format!(
            "{} modelled by the simulator's power model (per-GPU idle and TDP power), not measured",
            cols.join(", ")
        ),
        zh: format!(
            "{} 为模拟器功耗模型的估算值（按 GPU 的空闲与 TDP 功耗），并非实测",
            cols.join("、")
        ),
    })
}

/// An energy cell of a candidate point (issue 30): a modelled value (the simulator's power
/// model) is marked `modelled`; a usable point without a value says `telemetry missing` (its
/// row's reason as the detail), never 0.
fn mark_energy(cell: &mut Cell, m: Column, cand: &cmp::Point) {
    if !m.is_energy() {
        return;
    }
    if cell.value.is_some() {
        cell.modelled = cand.energy_kind() == "modelled";
    } else if usable(cand.status) {
        cell.delta = Delta::Na(NaReason::TelemetryMissing(
            cand.power_invalid_reasons().join("; "),
        ));
        cell.tone = None;
    }
}

/// Compare N/A reason → report N/A reason.
pub fn na_reason(r: &cmp::NaReason) -> NaReason {
    match r {
        cmp::NaReason::NoMatchedBaseline => NaReason::NoMatchedBaseline,
        cmp::NaReason::BaselineMissing => NaReason::BaselineMissing,
        cmp::NaReason::BaselineZero => NaReason::BaselineZero,
        cmp::NaReason::CandidateMissing => NaReason::CandidateMissing,
        cmp::NaReason::PointFailed {
            side: cmp::Side::Candidate,
        } => NaReason::PointFailed,
        cmp::NaReason::PointFailed {
            side: cmp::Side::Baseline,
        } => NaReason::BaselineFailed,
        cmp::NaReason::PointInvalid {
            side: cmp::Side::Candidate,
            reason,
        } => NaReason::CandidateInvalid(reason.clone()),
        cmp::NaReason::PointInvalid {
            side: cmp::Side::Baseline,
            reason,
        } => NaReason::NotComparable(format!("baseline invalid: {reason}")),
        cmp::NaReason::WorkloadMismatch {
            baseline,
            candidate,
        } => NaReason::WorkloadMismatch(format!("{baseline} vs {candidate}")),
        cmp::NaReason::StatisticMismatch {
            baseline,
            requested,
        } => NaReason::StatisticMismatch(format!("baseline {baseline}, requested {requested}")),
        cmp::NaReason::EvalNotPassed {
            side: cmp::Side::Candidate,
        } => NaReason::EvalNotPassed,
        cmp::NaReason::EvalNotPassed {
            side: cmp::Side::Baseline,
        } => NaReason::BaselineEvalNotPassed,
        cmp::NaReason::SampleCountsDiffer { .. } => NaReason::SampleCountMismatch,
        cmp::NaReason::EnergySourceMismatch {
            baseline,
            candidate,
        } => NaReason::NotComparable(format!("energy {baseline} vs {candidate}")),
    }
}

fn status(s: cmp::PointStatus) -> RowStatus {
    match s {
        cmp::PointStatus::Ok => RowStatus::Passed,
        cmp::PointStatus::Interrupted => RowStatus::Partial,
        cmp::PointStatus::Failed => RowStatus::Failed,
        cmp::PointStatus::Invalid => RowStatus::Invalid,
    }
}

/// Whether a candidate point's values may be shown and charted (not failed, not invalid).
fn usable(s: cmp::PointStatus) -> bool {
    !matches!(s, cmp::PointStatus::Failed | cmp::PointStatus::Invalid)
}

/// An invalid point's violated rules, quoted in its row's notes.
fn invalid_note(p: &cmp::Point) -> Option<String> {
    (p.status == cmp::PointStatus::Invalid).then(|| {
        let r = p.invalid_reasons();
        if r.is_empty() {
            "point_status invalid".to_string()
        } else {
            r.join("; ")
        }
    })
}

fn tone(v: cmp::Verdict) -> Option<Tone> {
    match v {
        cmp::Verdict::Regression => Some(Tone::Bad),
        cmp::Verdict::Improvement => Some(Tone::Good),
        cmp::Verdict::NoChange => Some(Tone::Neutral),
        _ => None,
    }
}

/// English and Chinese of an overall verdict (`No change` / `无变化`, …).
pub fn verdict_words(v: cmp::Verdict) -> (&'static str, &'static str) {
    match v {
        cmp::Verdict::NoChange => ("No change", "无变化"),
        cmp::Verdict::Observation => ("Observations only", "仅有参考性观察"),
        cmp::Verdict::Improvement => ("Improvement", "性能提升"),
        cmp::Verdict::Inconclusive => ("Inconclusive", "无法判定"),
        cmp::Verdict::NotComparable => ("Not comparable", "不可比较"),
        cmp::Verdict::CandidateInvalid => ("Candidate invalid", "候选结果无效"),
        cmp::Verdict::Regression => ("Regression", "性能回退"),
    }
}

fn curve(p: &cmp::Point, stat: cmp::Stat) -> CurvePoint {
    CurvePoint {
        conc: p.identity.conc,
        total_tput_per_gpu: p.value(cmp::Metric::TotalTputPerGpu, stat),
        output_tput_per_gpu: p.value(cmp::Metric::OutputTputPerGpu, stat),
        interactivity: p.value(cmp::Metric::Intvty, stat),
        ttft_ms: p.value(cmp::Metric::Ttft, stat),
        tpot_ms: p.value(cmp::Metric::Tpot, stat),
        joules_per_output_token: p.value(cmp::Metric::JoulesPerOutputToken, stat),
    }
}

fn metric_of(m: cmp::Metric) -> Column {
    match m {
        cmp::Metric::TotalTputPerGpu => Column::TotalTputPerGpu,
        cmp::Metric::OutputTputPerGpu => Column::OutputTputPerGpu,
        cmp::Metric::InputTputPerGpu => Column::InputTputPerGpu,
        cmp::Metric::Ttft => Column::TtftMs,
        cmp::Metric::Tpot => Column::TpotMs,
        cmp::Metric::Itl => Column::ItlMs,
        cmp::Metric::E2el => Column::E2elMs,
        cmp::Metric::Intvty => Column::Interactivity,
        cmp::Metric::JoulesPerOutputToken => Column::JoulesPerOutputToken,
        cmp::Metric::JoulesPerToken => Column::JoulesPerToken,
        cmp::Metric::PowerPerGpu => Column::PowerPerGpu,
    }
}

/// The verdict remark of a row: which metrics moved, with their deltas; failed gates with
/// their numbers.
fn verdict_remark(pc: &cmp::PointComparison, gate_pct: f64) -> Option<RowRemark> {
    let list = |v: cmp::Verdict| -> Vec<String> {
        pc.metrics
            .iter()
            .filter(|m| m.verdict == v)
            .filter_map(|m| {
                let mut s = format!(
                    "{} {}",
                    metric_of(m.metric).label(),
                    fmt_pct_delta(m.delta.pct?)
                );
                // with per-request evidence: its interval, and what would settle it
                if let Some(e) = &m.evidence {
                    let f = |x: f64| format!("{}{:.1}%", if x < 0.0 { "−" } else { "+" }, x.abs());
                    s.push_str(&format!(
                        " (worse by {}, 95% CI {}…{}, {}/{} requests",
                        f(e.change_pct),
                        f(e.lo_pct),
                        f(e.hi_pct),
                        e.n_baseline,
                        e.n_candidate
                    ));
                    if let Some(n) = e.requests_needed.filter(|_| m.verdict == v) {
                        if v == cmp::Verdict::Inconclusive {
                            s.push_str(&format!("; about {n} requests per side would settle it"));
                        }
                    }
                    if e.small_sample {
                        s.push_str("; too few samples for this percentile");
                    }
                    if e.fdr_dropped {
                        s.push_str("; not kept by the false-discovery-rate correction");
                    }
                    s.push(')');
                }
                Some(s)
            })
            .collect()
    };
    let needed: Option<u64> = pc
        .metrics
        .iter()
        .filter(|m| m.verdict == cmp::Verdict::Inconclusive)
        .filter_map(|m| m.evidence.as_ref()?.requests_needed)
        .max();
    let gate_msgs: Vec<String> = pc
        .gates
        .iter()
        .filter(|g| g.outcome == cmp::GateOutcome::Failed)
        .map(|g| g.message.clone())
        .collect();
    let (en, zh) = match pc.verdict {
        cmp::Verdict::NoChange => (
            format!("no change (within the noise band and the ±{gate_pct}% gate)"),
            "无变化（在噪声范围和门限之内）".to_string(),
        ),
        cmp::Verdict::Regression => (
            format!(
                "regression: {} (beyond the ±{gate_pct}% gate)",
                list(cmp::Verdict::Regression).join(", ")
            ),
            "性能回退，超出门限".to_string(),
        ),
        cmp::Verdict::Improvement => (
            format!(
                "improvement: {} (beyond the ±{gate_pct}% gate)",
                list(cmp::Verdict::Improvement).join(", ")
            ),
            "性能提升，超出门限".to_string(),
        ),
        cmp::Verdict::Inconclusive => (
            format!(
                "inconclusive: {} (the 95% interval of the change cannot exclude the ±{}% gate; \
                 not a regression)",
                list(cmp::Verdict::Inconclusive).join(", "),
                pc.metrics
                    .iter()
                    .filter_map(|m| m.evidence.as_ref())
                    .map(|e| e.gate_pct)
                    .fold(gate_pct, f64::max)
            ),
            match needed {
                Some(n) => format!(
                    "无法判定：变化的 95% 置信区间跨越门限（不算回退），每侧约需 {n} 个请求才能判定"
                ),
                None => "无法判定：变化的 95% 置信区间跨越门限（不算回退）".to_string(),
            },
        ),
        cmp::Verdict::Observation => (
            format!(
                "observation only: {}",
                list(cmp::Verdict::Observation).join(", ")
            ),
            "仅供参考（重复次数不足或不可比较）".to_string(),
        ),
        cmp::Verdict::NotComparable if !gate_msgs.is_empty() => (
            format!("not comparable: {}", gate_msgs.join("; ")),
            "未通过可比性检查，差值仅供参考".to_string(),
        ),
        cmp::Verdict::CandidateInvalid if !gate_msgs.is_empty() => (
            format!("candidate invalid: {}", gate_msgs.join("; ")),
            "候选结果无效（失败率超出门限）".to_string(),
        ),
        // N/A rows: the Δ N/A note already says why.
        cmp::Verdict::NotComparable | cmp::Verdict::CandidateInvalid => return None,
    };
    Some(RowRemark {
        kind: "verdict".into(),
        en,
        zh,
    })
}

/// Spread remarks (with repeats): coefficient of variation per metric, for the baseline and
/// for the candidate.
fn spread_remarks(pc: &cmp::PointComparison, columns: &[Column]) -> Vec<RowRemark> {
    let mut out = Vec::new();
    out.extend(spread_remark(pc, columns, cmp::Side::Baseline));
    out.extend(spread_remark(pc, columns, cmp::Side::Candidate));
    out
}

/// One side's spread remark: `baseline spread over 3 repeats (1 sd): TTFT ms ±5.5%, …`.
fn spread_remark(
    pc: &cmp::PointComparison,
    columns: &[Column],
    side: cmp::Side,
) -> Option<RowRemark> {
    let mut parts = Vec::new();
    let mut n = 0;
    for m in &pc.metrics {
        if !columns.contains(&metric_of(m.metric)) {
            continue;
        }
        let spread = match side {
            cmp::Side::Baseline => &m.baseline_spread,
            cmp::Side::Candidate => &m.candidate_spread,
        };
        let Some(s) = spread else {
            continue;
        };
        let Some(sd) = s.sd else { continue };
        if s.mean == 0.0 {
            continue;
        }
        n = s.n;
        parts.push(format!(
            "{} ±{}",
            metric_of(m.metric).label(),
            crate::format::fmt_value_dp(sd / s.mean.abs() * 100.0, 1) + "%"
        ));
    }
    if parts.is_empty() {
        return None;
    }
    let (who_en, who_zh) = match side {
        cmp::Side::Baseline => ("baseline", "基线"),
        cmp::Side::Candidate => ("candidate", "候选"),
    };
    Some(RowRemark {
        kind: "spread".into(),
        en: format!(
            "{who_en} spread over {n} repeats (1 sd): {}",
            parts.join(", ")
        ),
        zh: format!("已给出{who_zh}多次重复运行的波动范围"),
    })
}

/// Sample standard deviation over a point's repeats (display units), when it has ≥ 2.
fn repeat_sd(p: &cmp::Point, m: Column, stat: cmp::Stat) -> Option<f64> {
    if p.repeats.len() < 2 || matches!(m, Column::Ix(_)) {
        return None;
    }
    cmp::Spread::of(&p.repeat_values(to_cmp_metric(m), stat)).and_then(|s| s.sd)
}

fn eval_score(e: &cmp::EvalPoint) -> EvalScore {
    EvalScore {
        score: e.score,
        samples: e.samples,
        stderr: e.score_se,
        passed: e.passed.unwrap_or(e.score.is_some()),
    }
}

fn fmt_time(s: &str) -> String {
    // RFC 3339 `2026-09-21T01:15:02Z` → `2026-09-21 01:15 UTC`; a plain date stays as is.
    if s.len() >= 16 && s.as_bytes().get(10) == Some(&b'T') {
        format!("{} {} UTC", &s[..10], &s[11..16])
    } else {
        s.to_string()
    }
}

/// Which row remarks [`point_rows`] adds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Remarks {
    /// Verdict of every row and the baseline spread (the report).
    All,
    /// Only failed comparability/validity gates with their numbers (the attempt comment).
    GatesOnly,
}

/// The point rows and chart curves of a comparison: one row per candidate point (matched or
/// not) and one per baseline point no candidate matched, sorted by label then concurrency.
/// Rows carry a label (`workload · topology · cN`) when workloads or topologies differ among
/// all rows, baseline-only rows included. Returns `(rows, curves, labelled)`.
pub fn point_rows(
    c: &cmp::Comparison,
    columns: &[Column],
    remarks_kind: Remarks,
) -> (Vec<Row>, Curves, bool) {
    let stat = c.options.stat;
    // Uniform workload/topology → context line; mixed → row labels.
    let wl: Vec<String> = c
        .points
        .iter()
        .map(|p| p.identity.workload_label())
        .chain(
            c.unmatched_baseline
                .iter()
                .map(|p| p.identity.workload_label()),
        )
        .collect();
    let topo: Vec<String> = c
        .points
        .iter()
        .map(|p| p.identity.topology_label())
        .chain(
            c.unmatched_baseline
                .iter()
                .map(|p| p.identity.topology_label()),
        )
        .collect();
    let uniform = |v: &[String]| v.windows(2).all(|w| w[0] == w[1]);
    let labelled = !(uniform(&wl) && uniform(&topo));
    let mut rows = Vec::new();
    let mut curves = Curves::default();
    for pc in &c.points {
        let cand = &pc.candidate;
        let cells: Vec<Cell> = columns
            .iter()
            .map(|&m| {
                if matches!(m, Column::Ix(_)) {
                    return ix_cell(m, pc);
                }
                let mc = pc.metrics.iter().find(|x| x.metric == to_cmp_metric(m));
                let usable = usable(cand.status);
                let mut cell = match mc {
                    Some(mc) => Cell {
                        value: if usable { mc.candidate } else { None },
                        baseline: mc.baseline,
                        sd: mc
                            .candidate_spread
                            .as_ref()
                            .and_then(|s| s.sd)
                            .filter(|_| usable),
                        delta: match (mc.delta.pct, &mc.delta.na, &pc.na) {
                            (Some(p), _, _) => Delta::Pct(p),
                            (None, Some(r), _) | (None, None, Some(r)) => Delta::Na(na_reason(r)),
                            (None, None, None) => Delta::Na(NaReason::CandidateMissing),
                        },
                        tone: tone(mc.verdict),
                        modelled: false,
                    },
                    None => Cell {
                        value: if usable {
                            side_value(cand, m, stat)
                        } else {
                            None
                        },
                        sd: if usable {
                            repeat_sd(cand, m, stat)
                        } else {
                            None
                        },
                        baseline: pc.baseline.as_ref().and_then(|b| side_value(b, m, stat)),
                        delta: Delta::Na(
                            pc.na
                                .as_ref()
                                .map(na_reason)
                                .unwrap_or(NaReason::NoMatchedBaseline),
                        ),
                        tone: None,
                        modelled: false,
                    },
                };
                mark_energy(&mut cell, m, cand);
                cell
            })
            .collect();
        let mut remarks: Vec<RowRemark> = Vec::new();
        match remarks_kind {
            Remarks::All => {
                remarks.extend(verdict_remark(pc, c.options.gate_pct));
                remarks.extend(spread_remarks(pc, columns));
            }
            Remarks::GatesOnly => {
                if matches!(
                    pc.verdict,
                    cmp::Verdict::NotComparable | cmp::Verdict::CandidateInvalid
                ) {
                    remarks.extend(verdict_remark(pc, c.options.gate_pct));
                }
            }
        }
        remarks.extend(crate::plausibility::remark(cand));
        remarks.extend(modelled_remark(columns, &cells));
        rows.push(Row {
            conc: pc.identity.conc,
            label: candidate_row_label(c, pc, labelled),
            status: status(cand.status),
            first_error: invalid_note(cand),
            request_errors: cand.num_requests_failed,
            request_error_reasons: cand
                .failure_reasons
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            cells,
            remarks,
        });
        if let Some(b) = &pc.baseline {
            curves.baseline.push(curve(b, stat));
        }
        if usable(cand.status) {
            curves.candidate.push(curve(cand, stat));
        }
    }
    // Baseline points no candidate matched: listed, never dropped.
    for b in &c.unmatched_baseline {
        rows.push(Row {
            conc: b.identity.conc,
            label: row_label(&b.identity, labelled, Some("baseline only")),
            status: RowStatus::BaselineOnly,
            first_error: None,
            request_errors: None,
            request_error_reasons: vec![],
            // The baseline's own values (the row is labelled as such); no delta.
            cells: columns
                .iter()
                .map(|&m| Cell {
                    value: side_value(b, m, stat),
                    sd: repeat_sd(b, m, stat),
                    baseline: None,
                    delta: Delta::Na(NaReason::PointUnavailable),
                    tone: None,
                    modelled: m.is_energy() && b.energy_kind() == "modelled",
                })
                .collect(),
            remarks: vec![],
        });
        curves.baseline.push(curve(b, stat));
    }
    // By workload · topology, then concurrency as a number (not `c16` before `c4`).
    rows.sort_by_key(|r| {
        let group = r
            .label
            .as_deref()
            .map(|l| l.rsplit_once(" · c").map_or(l, |(g, _)| g).to_string());
        (group, r.conc)
    });
    curves.baseline.sort_by_key(|p| p.conc);
    curves.candidate.sort_by_key(|p| p.conc);
    (rows, curves, labelled)
}

/// The label of candidate point `pc`'s row in [`point_rows`] (`labelled`: its third
/// result): the same label finds the row again (the attempt's validity remarks).
pub fn candidate_row_label(
    c: &cmp::Comparison,
    pc: &cmp::PointComparison,
    labelled: bool,
) -> Option<String> {
    let any_unmatched = !c.unmatched_baseline.is_empty() || !c.unmatched_candidate.is_empty();
    let cand_only = pc.baseline.is_none() && any_unmatched;
    row_label(
        &pc.identity,
        labelled,
        cand_only.then_some("candidate only"),
    )
}

/// A row's label: `8k/1k · TP1/EP1 · c4` when the table mixes workloads/topologies, plus
/// ` (baseline only)` / ` (candidate only)` for a point the other side has no match for
/// (`c4 (baseline only)`); `None` → `c<conc>`.
fn row_label(id: &cmp::PointKey, labelled: bool, only: Option<&str>) -> Option<String> {
    let base = if labelled {
        format!(
            "{} · {} · c{}",
            id.workload_label(),
            id.topology_label(),
            id.conc
        )
    } else {
        format!("c{}", id.conc)
    };
    match only {
        Some(side) => Some(format!("{base} ({side})")),
        None => labelled.then_some(base),
    }
}

/// Identity fields that differ between the unmatched candidate and baseline points (the first
/// of each side), e.g. `hw sim-h200 (baseline) vs sim-h100 (candidate)`: why nothing matched.
fn identity_differences(c: &cmp::Comparison) -> Vec<String> {
    let (Some(cid), Some(b)) = (c.unmatched_candidate.first(), c.unmatched_baseline.first()) else {
        return vec![];
    };
    let (Ok(serde_json::Value::Object(cv)), Ok(serde_json::Value::Object(bv))) =
        (serde_json::to_value(cid), serde_json::to_value(&b.identity))
    else {
        return vec![];
    };
    let show = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "none".into(),
        other => other.to_string(),
    };
    let mut out = Vec::new();
    for (k, bval) in &bv {
        if k == "conc" {
            continue;
        }
        let cval = cv.get(k).cloned().unwrap_or(serde_json::Value::Null);
        if &cval != bval {
            let what = if k == "topology" {
                format!(
                    "topology {} (baseline) vs {} (candidate)",
                    b.identity.topology_label(),
                    cid.topology_label()
                )
            } else {
                format!(
                    "{k} {} (baseline) vs {} (candidate)",
                    show(bval),
                    show(&cval)
                )
            };
            out.push(what);
        }
    }
    out
}

/// The eval rows of a comparison (candidate rows, and baseline rows with no candidate, whose
/// Δ is `N/A: candidate missing`).
pub fn eval_rows(c: &cmp::Comparison) -> Vec<EvalLine> {
    c.evals
        .iter()
        .map(|e| EvalLine {
            task: e.task.clone(),
            metric: e.metric.clone(),
            conc: e.conc,
            baseline: e.baseline.as_ref().map(eval_score),
            candidate: Some(e.candidate.as_ref().map(eval_score).unwrap_or_default()),
            delta: match (e.delta.pct, &e.delta.na) {
                (Some(p), _) => Delta::Pp(p),
                (None, Some(r)) => Delta::Na(na_reason(r)),
                (None, None) => Delta::Na(NaReason::CandidateMissing),
            },
        })
        .collect()
}

/// When a side ran on the embedded simulator (store endpoint `embedded simulator: …`): the
/// `simulated` context word and a finding with the simulator's description, so a report never
/// passes simulated numbers off as measured ones (even when `--image` named a real image).
pub(crate) fn simulation_notice(
    sides: &[(&str, &cmp::RunInfo)],
) -> (Option<String>, Vec<Bilingual>) {
    let mut word = None;
    let mut findings = Vec::new();
    for (who, info) in sides {
        let Some(ep) = info
            .endpoint
            .as_deref()
            .filter(|e| crate::words::is_simulator_endpoint(e))
        else {
            continue;
        };
        word = Some("simulated".to_string());
        let desc = ep.split_once(':').map_or(ep, |(_, d)| d.trim()).to_string();
        let (who_en, who_zh) = match *who {
            "baseline" => ("the baseline", "基线"),
            "candidate" => ("the candidate", "候选运行"),
            _ => ("this run", "本次运行"),
        };
        findings.push(Bilingual {
            en: vec![t(format!(
                "Simulated: {who_en} ran on the embedded simulator, not a real engine: {desc}."
            ))],
            zh: vec![t(format!(
                "模拟结果：{who_zh}在内置模拟器上完成，并非真实推理引擎（{}）。",
                crate::words::endpoint_short(ep)
            ))],
        });
    }
    (word, findings)
}

/// Builds the report of a comparison.
pub fn build(c: &cmp::Comparison, o: &BuildOptions) -> Document {
    let columns: Vec<Column> = if o.columns.is_empty() {
        default_columns(
            c.options
                .metrics
                .contains(&cmp::Metric::JoulesPerOutputToken),
        )
    } else {
        o.columns.clone()
    };
    let stat = c.options.stat;
    let (rows, curves, labelled) = point_rows(c, &columns, Remarks::All);
    let wl: Vec<String> = c
        .points
        .iter()
        .map(|p| p.identity.workload_label())
        .collect();
    let topo: Vec<String> = c
        .points
        .iter()
        .map(|p| p.identity.topology_label())
        .collect();
    let evals = eval_rows(c);

    let (ven, vzh) = verdict_words(c.verdict);
    let mut findings = Vec::new();
    if !c.unmatched_candidate.is_empty() || !c.unmatched_baseline.is_empty() {
        let diff = identity_differences(c);
        findings.push(Bilingual {
            en: vec![t(format!(
                "Unmatched: {} candidate point(s) without a baseline, {} baseline point(s) without a candidate (listed in the table){}.",
                c.unmatched_candidate.len(),
                c.unmatched_baseline.len(),
                if diff.is_empty() {
                    String::new()
                } else {
                    format!("; the identities differ in {}", diff.join(", "))
                }
            ))],
            zh: vec![t("部分点没有匹配：已在表中列出，未做丢弃。")],
        });
    }
    // Candidate points InferenceX would not accept: said with the reason, not only as a
    // `Candidate invalid` verdict.
    for p in &c.points {
        if let Some(why) = p.candidate.submission_invalid_text() {
            findings.push(Bilingual {
                en: vec![t(format!(
                    "{} · {} · c{}: {why}.",
                    p.identity.workload_label(),
                    p.identity.topology_label(),
                    p.identity.conc
                ))],
                zh: vec![t(format!(
                    "并发 {} 的候选点不是有效的 InferenceX 提交（原因见英文说明），不计算差值。",
                    p.identity.conc
                ))],
            });
        }
    }
    if !c.baseline_other_configs.is_empty() {
        findings.push(Bilingual {
            en: vec![t(format!(
                "The baseline also holds {} point(s) of configurations the candidate did not run; not compared.",
                c.baseline_other_configs.len()
            ))],
            zh: vec![t("基线中还有候选未运行的其他配置的点，未做比较。")],
        });
    }
    if !c.baseline.sources.is_empty() {
        let links = |sep: &str| {
            let mut v = Vec::new();
            for (i, s) in c.baseline.sources.iter().enumerate() {
                if i > 0 {
                    v.push(t(sep));
                }
                v.push(Span::Link {
                    text: s.name.clone(),
                    url: s.url.clone(),
                });
            }
            v
        };
        let mut en = vec![t("Baseline sources: ")];
        en.extend(links(", "));
        en.push(t("."));
        let mut zh = vec![t("基线来源：")];
        zh.extend(links("、"));
        zh.push(t("。"));
        findings.push(Bilingual { en, zh });
    }
    let run_id = c
        .candidate
        .run_id
        .map(|i| i.to_string())
        .unwrap_or_else(|| c.candidate.label.clone());
    let mut extra = Vec::new();
    if let Some(k) = &c.candidate.config_key {
        extra.push(k.clone());
    }
    let (sim, sim_findings) =
        simulation_notice(&[("candidate", &c.candidate), ("baseline", &c.baseline)]);
    extra.extend(sim);
    findings.extend(sim_findings);
    Document {
        schema_version: SCHEMA_VERSION,
        title_prefix: o
            .title_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_TITLE_PREFIX.into()),
        heading: Heading::Run {
            run: RunRef {
                id: run_id,
                attempt: None,
                url: None,
            },
            time: c.candidate.created_at.as_deref().map(fmt_time),
            verdict: Some(Bilingual {
                en: vec![t(ven)],
                zh: vec![t(vzh)],
            }),
            baseline: Some(c.baseline.label.clone()),
        },
        context: Context {
            image: c.candidate.image.clone(),
            head: None,
            workload: (!labelled).then(|| wl.first().cloned()).flatten(),
            topology: (!labelled).then(|| topo.first().cloned()).flatten(),
            statistic: Some(stat.to_string()),
            extra,
        },
        change: None,
        points: PointTable { columns, rows },
        evals,
        next: None,
        failure: None,
        findings,
        curves,
        charts: Default::default(),
    }
}

/// Builds the report of a run alone (no baseline): its points and evals, no deltas.
pub fn build_run(
    run: &cmp::RunInfo,
    points: &[cmp::Point],
    evals: &[cmp::EvalPoint],
    stat: cmp::Stat,
    o: &BuildOptions,
) -> Document {
    let columns: Vec<Column> = if o.columns.is_empty() {
        default_columns(
            points
                .iter()
                .any(|p| p.value(cmp::Metric::JoulesPerOutputToken, stat).is_some()),
        )
    } else {
        o.columns.clone()
    };
    let wl: Vec<String> = points.iter().map(|p| p.identity.workload_label()).collect();
    let topo: Vec<String> = points.iter().map(|p| p.identity.topology_label()).collect();
    let uniform = |v: &[String]| v.windows(2).all(|w| w[0] == w[1]);
    let labelled = !(uniform(&wl) && uniform(&topo));
    let mut pts: Vec<&cmp::Point> = points.iter().collect();
    pts.sort_by(|a, b| {
        (
            a.identity.workload_label(),
            a.identity.topology_label(),
            a.identity.conc,
        )
            .cmp(&(
                b.identity.workload_label(),
                b.identity.topology_label(),
                b.identity.conc,
            ))
    });
    let rows = pts
        .iter()
        .map(|p| Row {
            conc: p.identity.conc,
            label: labelled.then(|| {
                format!(
                    "{} · {} · c{}",
                    p.identity.workload_label(),
                    p.identity.topology_label(),
                    p.identity.conc
                )
            }),
            status: status(p.status),
            first_error: invalid_note(p),
            request_errors: p.num_requests_failed,
            request_error_reasons: p
                .failure_reasons
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            cells: columns
                .iter()
                .map(|&m| {
                    let mut cell = Cell {
                        value: if !usable(p.status) {
                            None
                        } else {
                            side_value(p, m, stat)
                        },
                        sd: if !usable(p.status) {
                            None
                        } else {
                            repeat_sd(p, m, stat)
                        },
                        ..Cell::default()
                    };
                    mark_energy(&mut cell, m, p);
                    cell
                })
                .collect(),
            remarks: crate::plausibility::remark(p).into_iter().collect(),
        })
        .collect();
    let evals = evals
        .iter()
        .map(|e| EvalLine {
            task: e.task.clone(),
            metric: e.metric.clone(),
            conc: e.identity.conc,
            baseline: None,
            candidate: Some(eval_score(e)),
            delta: Delta::None,
        })
        .collect();
    let mut extra = Vec::new();
    if let Some(k) = &run.config_key {
        extra.push(k.clone());
    }
    let (sim, findings) = simulation_notice(&[("run", run)]);
    extra.extend(sim);
    Document {
        schema_version: SCHEMA_VERSION,
        title_prefix: o
            .title_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_TITLE_PREFIX.into()),
        heading: Heading::Run {
            run: RunRef {
                id: run
                    .run_id
                    .map(|i| i.to_string())
                    .unwrap_or_else(|| run.label.clone()),
                attempt: None,
                url: None,
            },
            time: run.created_at.as_deref().map(fmt_time),
            verdict: None,
            baseline: None,
        },
        context: Context {
            image: run.image.clone(),
            head: None,
            workload: (!labelled).then(|| wl.first().cloned()).flatten(),
            topology: (!labelled).then(|| topo.first().cloned()).flatten(),
            statistic: Some(stat.to_string()),
            extra,
        },
        change: None,
        points: PointTable { columns, rows },
        evals,
        next: None,
        failure: None,
        findings,
        curves: Curves {
            baseline: vec![],
            candidate: pts
                .iter()
                .filter(|p| usable(p.status))
                .map(|p| curve(p, stat))
                .collect(),
        },
        charts: Default::default(),
    }
}
