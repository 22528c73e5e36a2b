//! The attempt comment and the frozen-baseline body of an image bump (AUTOMATION.md §5.6).
//!
//! Inputs are this crate's own small types, filled by the binary from the bump record, the
//! triage result, the baseline table and the candidate run (or its logs). This module decides
//! the deltas and their N/A reasons for the comment:
//!
//! 1. the candidate point has no result row (its job failed before writing one) or the baseline
//!    has no point at that concurrency → `no matched baseline` (a point without a result has no
//!    identity to match: InferenceX matches on the generated point key of a result row);
//! 2. the candidate point failed / is unavailable → `point failed` / `point unavailable`;
//! 3. the latency statistic or the workload differs → `statistic mismatch` / `workload/dataset
//!    mismatch` (latency columns only for the statistic);
//! 4. the baseline value is missing or 0, the candidate value is missing → said so;
//! 5. otherwise `(new/old − 1) × 100`.
//!
//! Eval rows: pp delta `(new − old) × 100` only when both passed with equal sample counts.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::format::pct_delta;
use crate::model::*;
use crate::notes::merge;
use crate::words;

/// A baseline table (the format of `../shared/data/scenario/baseline.json`): one frozen
/// baseline, latencies in ms, throughput in tok/s/GPU, eval scores as fractions.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct BaselineTable {
    /// Catalog config key.
    #[serde(default)]
    pub config_key: Option<String>,
    /// Baseline date `YYYY-MM-DD`.
    pub date: String,
    /// Baseline (old) image.
    pub image: String,
    /// `AgentX` or `8k/1k`.
    pub workload: String,
    /// Topology.
    pub topology: TopologySpec,
    /// Latency statistic of the table (`mean`).
    #[serde(default = "default_stat")]
    pub statistic: String,
    /// Points, one per concurrency.
    pub points: Vec<BaselinePoint>,
    /// Eval rows.
    #[serde(default)]
    pub evals: Vec<BaselineEval>,
    /// Source links `(name, url)`.
    #[serde(default)]
    pub sources: Vec<Source>,
    /// Framework (`sglang`), for the Goal line.
    #[serde(default)]
    pub framework: Option<String>,
}

fn default_stat() -> String {
    "mean".into()
}

/// A source link of the baseline (`API 1` → URL).
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
pub struct Source {
    /// Link text.
    pub name: String,
    /// URL.
    pub url: String,
}

/// Topology: `{"tp": 1, "ep": 1}` or a ready label (`"TP4/EP1 + TP2/EP2"`).
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
#[serde(untagged)]
pub enum TopologySpec {
    /// Single-node TP/EP.
    TpEp {
        /// Tensor parallel size.
        tp: u32,
        /// Expert parallel size.
        ep: u32,
    },
    /// A label as written in the comment.
    Label(String),
}

impl TopologySpec {
    /// `TP1/EP1`, or the label.
    pub fn label(&self) -> String {
        match self {
            TopologySpec::TpEp { tp, ep } => words::topology_label(*tp, *ep),
            TopologySpec::Label(s) => s.clone(),
        }
    }
}

/// One baseline point; any value may be missing (`null`).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct BaselinePoint {
    /// Concurrency.
    pub conc: u32,
    /// Total tok/s/GPU.
    #[serde(default)]
    pub total_tput_per_gpu: Option<f64>,
    /// Output tok/s/GPU.
    #[serde(default)]
    pub output_tput_per_gpu: Option<f64>,
    /// TTFT, ms.
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// TPOT, ms.
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    /// E2EL, ms.
    #[serde(default)]
    pub e2el_ms: Option<f64>,
    /// Interactivity, tok/s/user.
    #[serde(default)]
    pub interactivity: Option<f64>,
}

impl BaselinePoint {
    /// The value of a column, in its display unit.
    pub fn get(&self, m: Column) -> Option<f64> {
        match m {
            Column::TotalTputPerGpu => self.total_tput_per_gpu,
            Column::OutputTputPerGpu => self.output_tput_per_gpu,
            Column::TtftMs => self.ttft_ms,
            Column::TpotMs => self.tpot_ms,
            Column::E2elMs => self.e2el_ms,
            Column::Interactivity => self.interactivity,
            Column::InputTputPerGpu
            | Column::ItlMs
            | Column::JoulesPerOutputToken
            | Column::JoulesPerToken
            | Column::PowerPerGpu
            | Column::Ix(_) => None,
        }
    }

    fn curve(&self) -> CurvePoint {
        CurvePoint {
            conc: self.conc,
            total_tput_per_gpu: self.total_tput_per_gpu,
            output_tput_per_gpu: self.output_tput_per_gpu,
            interactivity: self.interactivity,
            ttft_ms: self.ttft_ms,
            tpot_ms: self.tpot_ms,
            joules_per_output_token: None,
        }
    }
}

/// One baseline eval row (score as a fraction).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct BaselineEval {
    /// Task (`gsm8k`).
    pub task: String,
    /// Metric (`em_strict`).
    pub metric: String,
    /// Concurrency.
    pub conc: u32,
    /// Score (fraction).
    pub score: Option<f64>,
    /// Samples.
    #[serde(default)]
    pub samples: Option<u64>,
    /// Standard error (fraction).
    #[serde(default)]
    pub stderr: Option<f64>,
}

/// Image provenance for the Change line (the format of `images.json`'s `old`/`new`).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct ImageInfo {
    /// Image reference `repo:tag`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Multi-arch index digest `sha256:…`.
    #[serde(default)]
    pub index_digest: Option<String>,
    /// Per-platform manifest digests (`linux/amd64` → `sha256:…`).
    #[serde(default)]
    pub platform_digests: IndexMap<String, String>,
    /// `release build`, `model-branch build`, `nightly build`…
    #[serde(default)]
    pub kind: Option<String>,
    /// Library versions from the image labels (`sgl-kernel` → `0.4.7`).
    #[serde(default)]
    pub labels: IndexMap<String, String>,
    /// Build commit (image label), when known.
    #[serde(default)]
    pub build_commit: Option<String>,
    /// Image creation time, when known.
    #[serde(default)]
    pub created: Option<String>,
}

/// A recipe flag edit made by the bump.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct RecipeEdit {
    /// Recipe file name.
    pub file: String,
    /// Old flag (`--cuda-graph-max-bs`).
    pub old_flag: String,
    /// New flag, `None` when the flag was removed.
    pub new_flag: Option<String>,
    /// Value before.
    pub old_value: Option<String>,
    /// Value after (same as before for a rename).
    pub new_value: Option<String>,
    /// Why (English): `SGLang v0.5.20 removed the alias`.
    pub reason: Option<String>,
    /// Evidence link (upstream PR).
    pub evidence: Option<String>,
    /// A ready English summary with inline code in backticks (from the bump's rule outcome,
    /// e.g. `` `--a` → `--b` (value `64` kept) ``); when set it replaces the flag fields in
    /// English, and its code spans name the flags in Chinese.
    #[serde(default)]
    pub summary: Option<String>,
}

/// Splits `` text `code` text `` into spans.
pub fn code_spans(s: &str) -> Rich {
    let mut out = Vec::new();
    for (i, part) in s.split('`').enumerate() {
        if part.is_empty() {
            continue;
        }
        out.push(if i % 2 == 1 { code(part) } else { t(part) });
    }
    out
}

/// What the bump changed, with provenance.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct ChangeInput {
    /// The old image.
    pub old: ImageInfo,
    /// The new image.
    pub new: ImageInfo,
    /// Recipe edits.
    #[serde(default)]
    pub recipe_edits: Vec<RecipeEdit>,
    /// False when the bump ran offline (`--no-resolve`): digests not resolved.
    #[serde(default = "yes")]
    pub digests_resolved: bool,
}

fn yes() -> bool {
    true
}

/// One candidate point of the attempt (display units).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct AttemptPoint {
    /// Concurrency.
    pub conc: u32,
    /// Status.
    pub status: RowStatus,
    /// Whether the point wrote a result row (its identity can be matched).
    pub has_result: bool,
    /// Failed requests, `None` when unknown.
    pub request_errors: Option<u64>,
    /// This point's own first error, when it differs from the attempt's failure.
    pub first_error: Option<String>,
    /// Measured values (display units).
    #[serde(default)]
    pub values: BaselinePoint,
    /// The point's topology (`TP8/EP1`), when known (the job line of its log): rows of two
    /// topologies are labelled with it, and a baseline point of another topology is not its
    /// baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

/// One candidate eval row of the attempt.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct AttemptEval {
    /// Task.
    pub task: String,
    /// Metric.
    pub metric: String,
    /// Concurrency.
    pub conc: u32,
    /// Score (fraction), `None` when the eval produced none.
    pub score: Option<f64>,
    /// Samples, `None` when unknown.
    pub samples: Option<u64>,
    /// Standard error (fraction).
    #[serde(default)]
    pub stderr: Option<f64>,
    /// Passed its threshold.
    pub passed: bool,
}

/// A job of the run that failed although other jobs stored results (e.g. the eval job whose
/// engine died, or whose data was missing): the attempt names it and its first error, so a
/// missing eval score never reads as just "candidate value missing".
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct FailedJob {
    /// The job as the run names it (`agentic · TP1/EP1 · conc 16 · eval gsm8k`).
    pub label: String,
    /// Concurrency.
    pub conc: u32,
    /// The eval task of an eval job (`gsm8k`); `None` for a throughput point.
    pub eval_task: Option<String>,
    /// The first error line of its log (triage), else the failure's one-line summary.
    pub error: String,
    /// Its log file, when known.
    #[serde(default)]
    pub log: Option<String>,
    /// The per-node, per-role logs of a multinode job (`logs/workers/<node>_<role>.out`),
    /// triaged with its log; empty for a single-node job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_logs: Vec<String>,
}

impl FailedJob {
    /// The finding that names the job and why it failed, in English and Chinese.
    pub fn finding(&self) -> Bilingual {
        let log = |word: &str, nodes: &str, sep: &str, open: &str, close: &str| {
            let mut files = self
                .log
                .as_deref()
                .map(|l| format!("{word}{l}"))
                .unwrap_or_default();
            if !self.node_logs.is_empty() {
                if !files.is_empty() {
                    files.push_str(sep);
                }
                files.push_str(nodes);
                files.push_str(&self.node_logs.join(", "));
            }
            if files.is_empty() {
                files
            } else {
                format!("{open}{files}{close}")
            }
        };
        let (what_en, what_zh) = match &self.eval_task {
            Some(task) => (
                format!("the {task} eval job ({}) failed", self.label),
                format!("{task} 评估作业（{}）失败", self.label),
            ),
            None => (
                format!("the job {} failed", self.label),
                format!("作业 {} 失败", self.label),
            ),
        };
        let then_en = if self.eval_task.is_some() {
            "; it produced no score, so its eval row has no candidate value"
        } else {
            "; it stored no row, so the table has no candidate point for it"
        };
        let then_zh = if self.eval_task.is_some() {
            "；它没有得出分数，因此评估行没有候选结果"
        } else {
            "；它没有存储结果，因此表中没有该点的候选结果"
        };
        Bilingual {
            en: vec![
                Span::Bold("Failed job:".into()),
                t(format!(" {what_en}: ")),
                code(self.error.clone()),
                t(format!(
                    "{then_en}{}.",
                    log("log: ", "per-node logs: ", "; ", " (", ")")
                )),
            ],
            zh: vec![
                Span::Bold("失败的作业：".into()),
                t(format!("{what_zh}：")),
                code(self.error.clone()),
                t(format!(
                    "{then_zh}{}。",
                    log("日志：", "各节点日志：", "；", "（", "）")
                )),
            ],
        }
    }
}

/// Eval rows with no candidate score whose eval job failed say so (`Δ N/A: its job failed:
/// <first error>`) instead of "candidate value missing". A job matches on task and
/// concurrency, else on task alone.
fn mark_failed_eval_jobs(jobs: &[FailedJob], evals: &mut [EvalLine]) {
    for e in evals.iter_mut() {
        if e.candidate.as_ref().is_some_and(|c| c.score.is_some()) {
            continue;
        }
        let same_task = |j: &&FailedJob| j.eval_task.as_deref() == Some(e.task.as_str());
        let job = jobs
            .iter()
            .filter(same_task)
            .find(|j| j.conc == e.conc)
            .or_else(|| jobs.iter().find(same_task));
        if let Some(j) = job {
            e.delta = Delta::Na(NaReason::JobFailed(j.error.clone()));
        }
    }
}

/// Everything the attempt comment says.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct AttemptInput {
    /// Title prefix / bot name (HTML title, PR title).
    #[serde(default)]
    pub title_prefix: Option<String>,
    /// Which attempt.
    pub kind: AttemptKind,
    /// Its status.
    pub status: AttemptStatus,
    /// The run.
    pub run: Option<RunRef>,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub time: Option<String>,
    /// Candidate image.
    pub image: String,
    /// Head commit.
    #[serde(default)]
    pub head: Option<String>,
    /// `AgentX` / `8k/1k`.
    pub workload: String,
    /// `TP1/EP1`.
    pub topology: String,
    /// Latency statistic (`mean`).
    pub statistic: String,
    /// The change with provenance.
    pub change: Option<ChangeInput>,
    /// The frozen baseline.
    pub baseline: Option<BaselineTable>,
    /// Candidate points.
    pub points: Vec<AttemptPoint>,
    /// Candidate evals.
    pub evals: Vec<AttemptEval>,
    /// Failure summary (from triage).
    pub failure: Option<FailureSummary>,
    /// Next step.
    pub next: Option<Bilingual>,
    /// Table columns; empty → Output tok/s/GPU, TTFT ms, TPOT ms (the attempt layout).
    #[serde(default)]
    pub columns: Vec<Column>,
    /// The compare stage's comparison of the candidate's results with the baseline (matching
    /// on the InferenceX identity, comparability gates, noise rule; `docs/compare.md`). When
    /// set, the point rows, eval rows and curves come from it (and `points`/`evals` are not
    /// used for the tables), so the attempt says exactly what `servebench compare` says. `None`
    /// when the attempt has no results (logs only): then `points` are matched by concurrency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<servebench_compare::Comparison>,
    /// Jobs that failed while others stored results (`servebench run` with a failed eval job):
    /// each gets a finding with its first error, and its eval row says the job failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_jobs: Vec<FailedJob>,
}

/// The attempt table's default columns (AUTOMATION.md §5.6).
pub const ATTEMPT_COLUMNS: [Column; 3] = [Column::OutputTputPerGpu, Column::TtftMs, Column::TpotMs];

/// The attempt table's default columns when it has the candidate's results (a comparison):
/// [`ATTEMPT_COLUMNS`], J per output token (measured, `modelled` on the simulator, `telemetry
/// missing` when the point has none — never 0), then InferenceX's PR-check columns (median,
/// P90, P99, P99.9 of TTFT, interactivity and E2EL as `utils/compare_results.py` prints
/// them; `crate::ix_columns`).
pub fn pr_columns() -> Vec<Column> {
    let mut c = ATTEMPT_COLUMNS.to_vec();
    c.push(Column::JoulesPerOutputToken);
    c.extend(crate::ix_columns::IxColumn::ALL.map(Column::Ix));
    c
}

/// The baseline body's columns (PRODUCT.md table).
pub const BASELINE_COLUMNS: [Column; 4] = [
    Column::TotalTputPerGpu,
    Column::OutputTputPerGpu,
    Column::TtftMs,
    Column::TpotMs,
];

fn is_latency(m: Column) -> bool {
    matches!(
        m,
        Column::TtftMs | Column::TpotMs | Column::ItlMs | Column::E2elMs | Column::Interactivity
    )
}

/// The delta of one cell of the attempt table (rules in the module doc).
pub fn cell_delta(
    base: Option<&BaselinePoint>,
    cand: &AttemptPoint,
    m: Column,
    workload_differs: Option<String>,
    statistic_differs: Option<String>,
) -> Delta {
    let Some(base) = base.filter(|_| cand.has_result) else {
        return Delta::Na(NaReason::NoMatchedBaseline);
    };
    match cand.status {
        RowStatus::Failed => return Delta::Na(NaReason::PointFailed),
        RowStatus::Invalid => {
            return Delta::Na(NaReason::CandidateInvalid(
                cand.first_error.clone().unwrap_or_default(),
            ))
        }
        RowStatus::Unavailable | RowStatus::BaselineOnly => {
            return Delta::Na(NaReason::PointUnavailable)
        }
        RowStatus::Passed | RowStatus::Partial => {}
    }
    if let Some(d) = workload_differs {
        return Delta::Na(NaReason::WorkloadMismatch(d));
    }
    if is_latency(m) {
        if let Some(d) = statistic_differs {
            return Delta::Na(NaReason::StatisticMismatch(d));
        }
    }
    let Some(old) = base.get(m) else {
        return Delta::Na(NaReason::BaselineMissing);
    };
    if old == 0.0 {
        return Delta::Na(NaReason::BaselineZero);
    }
    let Some(new) = cand.values.get(m) else {
        return Delta::Na(NaReason::CandidateMissing);
    };
    match pct_delta(old, new) {
        Some(p) => Delta::Pct(p),
        None => Delta::Na(NaReason::CandidateMissing),
    }
}

/// Eval delta: pp only when both passed with equal sample counts.
pub fn eval_delta(base: Option<&EvalScore>, cand: &EvalScore) -> Delta {
    let Some(base) = base else {
        return Delta::Na(NaReason::NoMatchedBaseline);
    };
    if cand.score.is_none() {
        return Delta::Na(NaReason::PointFailed);
    }
    if !cand.passed {
        return Delta::Na(NaReason::EvalNotPassed);
    }
    if !base.passed || base.score.is_none() {
        return Delta::Na(NaReason::BaselineEvalNotPassed);
    }
    match (base.samples, cand.samples) {
        (Some(a), Some(b)) if a == b => {}
        _ => return Delta::Na(NaReason::SampleCountMismatch),
    }
    Delta::Pp((cand.score.unwrap_or(0.0) - base.score.unwrap_or(0.0)) * 100.0)
}

fn baseline_eval_score(e: &BaselineEval) -> EvalScore {
    EvalScore {
        score: e.score,
        samples: e.samples,
        stderr: e.stderr,
        passed: e.score.is_some(),
    }
}

/// Builds the attempt comment document.
pub fn build_attempt(a: &AttemptInput) -> Document {
    let columns: Vec<Column> = match (a.columns.is_empty(), &a.comparison) {
        (false, _) => a.columns.clone(),
        (true, Some(_)) => pr_columns(),
        (true, None) => ATTEMPT_COLUMNS.to_vec(),
    };
    let base = a.baseline.as_ref();
    let workload_differs = base
        .filter(|b| !b.workload.eq_ignore_ascii_case(&a.workload))
        .map(|b| format!("{} vs {}", b.workload, a.workload));
    let statistic_differs = base
        .filter(|b| !b.statistic.eq_ignore_ascii_case(&a.statistic))
        .map(|b| format!("baseline {}, candidate {}", b.statistic, a.statistic));
    if let Some(c) = &a.comparison {
        let (mut rows, curves, labelled) =
            crate::comparison::point_rows(c, &columns, crate::comparison::Remarks::GatesOnly);
        submission_remarks(c, labelled, &mut rows);
        let mut evals = crate::comparison::eval_rows(c);
        mark_failed_eval_jobs(&a.failed_jobs, &mut evals);
        return attempt_document(a, columns, rows, evals, curves);
    }
    let mut rows = Vec::new();
    let mut cand_curve = Vec::new();
    let mut points = a.points.clone();
    // Points of two topologies (TP4 and TP8 at conc 4): each row's label carries its
    // topology, rows grouped by it.
    let mut topologies: Vec<&str> = points
        .iter()
        .filter_map(|p| p.topology.as_deref())
        .collect();
    topologies.sort();
    topologies.dedup();
    let labelled = topologies.len() > 1;
    points.sort_by(|x, y| (&x.topology, x.conc).cmp(&(&y.topology, y.conc)));
    for p in &points {
        // the baseline's point at this concurrency, unless the baseline is another topology
        let same_topology = |b: &BaselineTable| {
            p.topology
                .as_deref()
                .is_none_or(|t| t == b.topology.label())
        };
        let bp = base
            .filter(|b| same_topology(b))
            .and_then(|b| b.points.iter().find(|x| x.conc == p.conc));
        let usable = matches!(p.status, RowStatus::Passed | RowStatus::Partial);
        let cells = columns
            .iter()
            .map(|&m| {
                let delta = cell_delta(
                    bp,
                    p,
                    m,
                    workload_differs.clone(),
                    statistic_differs.clone(),
                );
                Cell {
                    value: if usable { p.values.get(m) } else { None },
                    sd: None,
                    baseline: bp.and_then(|b| b.get(m)),
                    tone: match &delta {
                        Delta::Pct(d) => Tone::of_pct(m, *d),
                        _ => None,
                    },
                    delta,
                    modelled: false,
                }
            })
            .collect();
        rows.push(Row {
            conc: p.conc,
            status: p.status,
            label: labelled
                .then(|| p.topology.as_ref().map(|t| format!("{t} · c{}", p.conc)))
                .flatten(),
            first_error: p.first_error.clone(),
            request_errors: p.request_errors,
            request_error_reasons: vec![],
            cells,
            remarks: vec![],
        });
        if usable {
            cand_curve.push(CurvePoint {
                conc: p.conc,
                ..p.values.curve()
            });
        }
    }
    let mut evals: Vec<EvalLine> = a
        .evals
        .iter()
        .map(|e| {
            let be = base.and_then(|b| {
                b.evals
                    .iter()
                    .find(|x| x.task == e.task && x.metric == e.metric && x.conc == e.conc)
            });
            let bscore = be.map(baseline_eval_score);
            let cscore = EvalScore {
                score: e.score,
                samples: e.samples,
                stderr: e.stderr,
                passed: e.passed,
            };
            EvalLine {
                task: e.task.clone(),
                metric: e.metric.clone(),
                conc: e.conc,
                delta: eval_delta(bscore.as_ref(), &cscore),
                baseline: bscore,
                candidate: Some(cscore),
            }
        })
        .collect();
    mark_failed_eval_jobs(&a.failed_jobs, &mut evals);
    let curves = Curves {
        baseline: base
            .map(|b| b.points.iter().map(BaselinePoint::curve).collect())
            .unwrap_or_default(),
        candidate: cand_curve,
    };
    attempt_document(a, columns, rows, evals, curves)
}

/// The baseline line of an attempt whose baseline cites sources (InferenceX dashboard API
/// rows), as the scenario's PR writes it: `Baseline: 2026-06-11 · `image` · 1k/1k · TP4/EP1 ·
/// Mean latency · Sources: API 1, API 2` with each source a link. The table describes the
/// baseline points the candidate matched (`servebench attempt` narrows it); when the
/// comparison matched none, the line says so instead of describing the whole file. `None`
/// without sources.
fn baseline_sources_line(
    b: &BaselineTable,
    c: Option<&servebench_compare::Comparison>,
) -> Option<Bilingual> {
    if b.sources.is_empty() {
        return None;
    }
    if let Some(c) = c.filter(|c| c.points.iter().all(|p| p.baseline.is_none())) {
        let n = c.unmatched_baseline.len() + c.baseline_other_configs.len();
        return Some(Bilingual {
            en: vec![t(format!(
                "Baseline: none of the baseline's {n} points matched a candidate point \
                 (hardware, framework, model, precision, workload, topology, concurrency); \
                 nothing was compared against it"
            ))],
            zh: vec![t(format!(
                "基线：基线的 {n} 个点均未与候选的点匹配（硬件、框架、模型、精度、负载、拓扑、并发）；\
                 未与之比较"
            ))],
        });
    }
    let stat = {
        let mut c = b.statistic.chars();
        match c.next() {
            Some(f) => format!("{}{} latency", f.to_uppercase(), c.as_str()),
            None => "Mean latency".into(),
        }
    };
    let line = |head: &str, src: &str, sep: &str| {
        let mut v = vec![
            t(format!("{head}{} · ", b.date)),
            code(b.image.clone()),
            t(format!(
                " · {} · {} · {stat} · {src}",
                b.workload,
                b.topology.label()
            )),
        ];
        for (i, s) in b.sources.iter().enumerate() {
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
    Some(Bilingual {
        en: line("Baseline: ", "Sources: ", ", "),
        zh: line("基线：", "来源：", "、"),
    })
}

fn attempt_document(
    a: &AttemptInput,
    columns: Vec<Column>,
    rows: Vec<Row>,
    evals: Vec<EvalLine>,
    curves: Curves,
) -> Document {
    // A candidate (or baseline) run from the store that ran on the embedded simulator: say so
    // (`simulated` in the context line and a `Simulated:` finding), as `servebench report` does.
    let (sim, findings) = match &a.comparison {
        Some(c) => crate::comparison::simulation_notice(&[
            ("candidate", &c.candidate),
            ("baseline", &c.baseline),
        ]),
        None => (None, vec![]),
    };
    let mut findings = findings;
    if let Some(c) = &a.comparison {
        findings.insert(0, verdict_finding(c));
    }
    findings.extend(a.failed_jobs.iter().map(FailedJob::finding));
    findings.extend(
        a.baseline
            .as_ref()
            .and_then(|b| baseline_sources_line(b, a.comparison.as_ref())),
    );
    Document {
        schema_version: SCHEMA_VERSION,
        title_prefix: a
            .title_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_TITLE_PREFIX.into()),
        heading: Heading::Attempt {
            kind: a.kind,
            status: a.status,
            run: a.run.clone(),
            time: a.time.clone(),
        },
        context: Context {
            image: Some(a.image.clone()),
            head: a.head.clone(),
            workload: Some(a.workload.clone()),
            // the run's own topology (empty: unknown, said by nothing rather than borrowed
            // from the baseline)
            topology: (!a.topology.is_empty()).then(|| a.topology.clone()),
            statistic: Some(a.statistic.clone()),
            extra: sim.into_iter().collect(),
        },
        change: a.change.as_ref().map(change_text),
        points: PointTable { columns, rows },
        evals,
        next: a.next.clone(),
        failure: a.failure.clone(),
        findings,
        curves,
        charts: Default::default(),
    }
}

/// Each row whose candidate point is not a valid InferenceX submission (AgentX rules) gets
/// the reason as a remark, so the notes say it (`All rows: not a valid InferenceX submission:
/// …`) — unless a remark already says it (the comparison's own gate remark). The row is found
/// by its label ([`crate::comparison::candidate_row_label`], `labelled` as `point_rows` said),
/// never by concurrency alone: a baseline-only row or another topology's row at the same
/// concurrency is not that point.
fn submission_remarks(c: &servebench_compare::Comparison, labelled: bool, rows: &mut [Row]) {
    for pc in &c.points {
        let Some(text) = pc.candidate.submission_invalid_text() else {
            continue;
        };
        let label = crate::comparison::candidate_row_label(c, pc, labelled);
        for row in rows.iter_mut().filter(|r| {
            r.conc == pc.identity.conc && r.status != RowStatus::BaselineOnly && r.label == label
        }) {
            let key = "not a valid InferenceX submission";
            let said = row.remarks.iter().any(|r| r.en.contains(key))
                || row.first_error.as_deref().is_some_and(|e| e.contains(key))
                || row.cells.iter().any(|c| {
                    matches!(&c.delta, Delta::Na(NaReason::CandidateInvalid(d)) if d.contains(key))
                });
            if !said {
                row.remarks.push(RowRemark {
                    kind: "validity".into(),
                    en: text.clone(),
                    zh: "不是有效的 InferenceX 提交结果".into(),
                });
            }
        }
    }
}

/// The comparison's overall verdict, as `servebench compare` ends with it: `Verdict:
/// Regression (as servebench compare; baseline …)`.
fn verdict_finding(c: &servebench_compare::Comparison) -> Bilingual {
    let (en, zh) = crate::comparison::verdict_words(c.verdict);
    Bilingual {
        en: vec![
            Span::Bold("Verdict:".into()),
            t(format!(
                " {en}, as `servebench compare` says against {} ({} latency, ±{} % gate).",
                c.baseline.label, c.options.stat, c.options.gate_pct
            )),
        ],
        zh: vec![Span::Bold("结论：".into()), t(format!("{zh}。"))],
    }
}

/// Builds the frozen-baseline body (PR body). `goal`: `(engine display name, new image)` when
/// the bump target is known.
pub fn build_baseline_body(
    b: &BaselineTable,
    new_image: Option<&str>,
    title_prefix: Option<&str>,
) -> Document {
    let columns = BASELINE_COLUMNS.to_vec();
    let mut points = b.points.clone();
    points.sort_by_key(|p| p.conc);
    let rows = points
        .iter()
        .map(|p| {
            let cells: Vec<Cell> = columns
                .iter()
                .map(|&m| Cell {
                    value: p.get(m),
                    ..Cell::default()
                })
                .collect();
            let all_missing = cells.iter().all(|c| c.value.is_none());
            Row {
                conc: p.conc,
                status: if all_missing {
                    RowStatus::Unavailable
                } else {
                    RowStatus::Passed
                },
                label: None,
                first_error: None,
                request_errors: None,
                request_error_reasons: vec![],
                cells,
                remarks: vec![],
            }
        })
        .collect();
    let evals = b
        .evals
        .iter()
        .map(|e| EvalLine {
            task: e.task.clone(),
            metric: e.metric.clone(),
            conc: e.conc,
            baseline: Some(baseline_eval_score(e)),
            candidate: None,
            delta: Delta::None,
        })
        .collect();
    let engine = b
        .framework
        .as_deref()
        .map(words::engine_display)
        .or_else(|| engine_from_image(&b.image));
    Document {
        schema_version: SCHEMA_VERSION,
        title_prefix: title_prefix.unwrap_or(DEFAULT_TITLE_PREFIX).to_string(),
        heading: Heading::Baseline {
            engine,
            old_image: b.image.clone(),
            new_image: new_image.map(str::to_string),
            date: b.date.clone(),
            sources: b
                .sources
                .iter()
                .map(|s| (s.name.clone(), s.url.clone()))
                .collect(),
        },
        context: Context {
            image: None,
            head: None,
            workload: Some(b.workload.clone()),
            topology: Some(b.topology.label()),
            statistic: Some(b.statistic.clone()),
            extra: vec![],
        },
        change: None,
        points: PointTable { columns, rows },
        evals,
        next: None,
        failure: None,
        findings: vec![],
        curves: Curves {
            baseline: points.iter().map(BaselinePoint::curve).collect(),
            candidate: vec![],
        },
        charts: Default::default(),
    }
}

/// Engine display name guessed from a well-known image repository (`lmsysorg/sglang` →
/// `SGLang`, `vllm/vllm-openai` → `vLLM`, `nvcr.io/nvidia/tensorrt-llm/…` → `TensorRT-LLM`).
pub fn engine_from_image(image: &str) -> Option<String> {
    servebench_engines::Engine::from_image(image).map(|e| e.profile().display.to_string())
}

fn kind_zh(kind: &str) -> Option<&'static str> {
    match kind.to_ascii_lowercase().as_str() {
        "release build" | "release" => Some("正式发布构建"),
        "model-branch build" | "model branch build" => Some("模型分支构建"),
        "nightly build" | "nightly" | "dev nightly" => Some("每日构建"),
        "custom build" => Some("定制构建"),
        _ => None,
    }
}

/// The `Change:` line: images with digests, version changes, recipe edits (English with the
/// numbers; Chinese without them). Parts in order: [`images_en`] / [`images_zh`],
/// [`VersionDiff`], one [`recipe_edit_text`] per edit.
pub fn change_text(c: &ChangeInput) -> Bilingual {
    let mut en = images_en(c);
    let mut zh = images_zh(c);
    let versions = VersionDiff::of(&c.old.labels, &c.new.labels);
    if !versions.is_empty() {
        versions.push_en(&mut en);
        versions.push_zh(&mut zh);
    }
    for e in &c.recipe_edits {
        recipe_edit_text(e, &mut en, &mut zh);
    }
    Bilingual {
        en: merge(en),
        zh: merge(zh),
    }
}

/// `` Image `old` (kind, index `…`, linux/amd64 `…`, …) → `new` (…). `` in English, with
/// "digests not resolved: offline bump" when the bump ran offline.
fn images_en(c: &ChangeInput) -> Rich {
    let mut en: Rich = vec![t("Image ")];
    image_en(&mut en, &c.old, c.digests_resolved);
    en.push(t(" → "));
    image_en(&mut en, &c.new, c.digests_resolved);
    if !c.digests_resolved {
        en.push(t(" (digests not resolved: offline bump)"));
    }
    en.push(t("."));
    en
}

/// One image in English: its reference, then in parentheses its kind and (when `resolved`)
/// index digest, platform digests, build commit and creation time; no parentheses when
/// nothing is known.
fn image_en(en: &mut Rich, i: &ImageInfo, resolved: bool) {
    en.push(code(i.reference.clone()));
    let mut parts: Vec<Span> = Vec::new();
    let push = |parts: &mut Vec<Span>, label: String, v: String| {
        if !parts.is_empty() {
            parts.push(t(", "));
        }
        parts.push(t(label));
        parts.push(code(v));
    };
    if let Some(k) = &i.kind {
        parts.push(t(k.clone()));
    }
    if resolved {
        if let Some(d) = &i.index_digest {
            push(&mut parts, "index ".into(), d.clone());
        }
        for (p, d) in &i.platform_digests {
            push(&mut parts, format!("{p} "), d.clone());
        }
        if let Some(b) = &i.build_commit {
            push(&mut parts, "build commit ".into(), b.clone());
        }
        if let Some(cr) = &i.created {
            if !parts.is_empty() {
                parts.push(t(", "));
            }
            parts.push(t(format!("built {cr}")));
        }
    }
    if !parts.is_empty() {
        en.push(t(" ("));
        en.extend(parts);
        en.push(t(")"));
    }
}

/// The image sentence in Chinese: old → new references with their kinds, and which digests
/// were recorded (index, and the platforms' architectures), or that they were not resolved.
fn images_zh(c: &ChangeInput) -> Rich {
    let mut zh: Rich = vec![t("镜像从 "), code(c.old.reference.clone())];
    if let Some(k) = c.old.kind.as_deref().and_then(kind_zh) {
        zh.push(t(format!("（{k}）")));
    }
    zh.push(t(if c.old.kind.as_deref().and_then(kind_zh).is_some() {
        "更新为 "
    } else {
        " 更新为 "
    }));
    zh.push(code(c.new.reference.clone()));
    if let Some(k) = c.new.kind.as_deref().and_then(kind_zh) {
        zh.push(t(format!("（{k}）")));
    }
    if c.digests_resolved {
        let has_platform = !c.new.platform_digests.is_empty() || !c.old.platform_digests.is_empty();
        let plats: Vec<String> = c
            .new
            .platform_digests
            .keys()
            .chain(c.old.platform_digests.keys())
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
            .fold(Vec::new(), |mut v, p| {
                if !v.contains(&p) {
                    v.push(p)
                }
                v
            });
        if has_platform {
            zh.push(t(format!(
                "，已记录镜像索引摘要和 {} 架构的清单摘要",
                plats.join("、")
            )));
        } else {
            zh.push(t("，已记录镜像索引摘要"));
        }
    } else {
        zh.push(t("，摘要未解析（离线更新）"));
    }
    zh.push(t("。"));
    zh
}

/// Library versions (image labels) old → new: changed, new and removed libraries in old-label
/// order then new-only labels, and the unchanged ones.
struct VersionDiff<'a> {
    /// English items: `lib 1 → 2`, `lib 1 (removed)`, `lib 2 (new)`.
    changed: Vec<String>,
    /// English `lib version` of each unchanged library.
    unchanged: Vec<String>,
    /// Names of the unchanged libraries (Chinese).
    unchanged_names: Vec<&'a str>,
    /// Names of libraries whose version changed.
    updated: Vec<&'a str>,
    /// Names of libraries only in the new image.
    added: Vec<&'a str>,
    /// Names of libraries only in the old image.
    removed: Vec<&'a str>,
}

impl<'a> VersionDiff<'a> {
    /// Compares the old and new image labels.
    fn of(old: &'a IndexMap<String, String>, new: &'a IndexMap<String, String>) -> Self {
        let mut d = VersionDiff {
            changed: Vec::new(),
            unchanged: Vec::new(),
            unchanged_names: Vec::new(),
            updated: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
        };
        for (k, ov) in old {
            match new.get(k) {
                Some(nv) if nv == ov => {
                    d.unchanged.push(format!("{k} {ov}"));
                    d.unchanged_names.push(k);
                }
                Some(nv) => {
                    d.changed.push(format!("{k} {ov} → {nv}"));
                    d.updated.push(k);
                }
                None => {
                    d.changed.push(format!("{k} {ov} (removed)"));
                    d.removed.push(k);
                }
            }
        }
        for (k, nv) in new {
            if !old.contains_key(k) {
                d.changed.push(format!("{k} {nv} (new)"));
                d.added.push(k);
            }
        }
        d
    }

    /// Neither image carries library labels.
    fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.unchanged.is_empty()
    }

    /// ` Versions: a 1 → 2; b 1 (new); c 3 and d 4 unchanged.`
    fn push_en(&self, en: &mut Rich) {
        en.push(t(" Versions: "));
        let mut parts = self.changed.clone();
        if !self.unchanged.is_empty() {
            parts.push(format!("{} unchanged", join_and(&self.unchanged)));
        }
        en.push(t(parts.join("; ")));
        en.push(t("."));
    }

    /// `依赖库：a 版本变更，新增 b，移除 c，d 版本不变。` (names only).
    fn push_zh(&self, zh: &mut Rich) {
        let mut z = Vec::new();
        if !self.updated.is_empty() {
            z.push(format!("{} 版本变更", self.updated.join("、")));
        }
        if !self.added.is_empty() {
            z.push(format!("新增 {}", self.added.join("、")));
        }
        if !self.removed.is_empty() {
            z.push(format!("移除 {}", self.removed.join("、")));
        }
        if !self.unchanged.is_empty() {
            z.push(format!("{} 版本不变", self.unchanged_names.join("、")));
        }
        zh.push(t(format!("依赖库：{}。", z.join("，"))));
    }
}

/// One recipe edit: `` Recipe `file`: `` then its ready summary ([`summary_edit_text`]) or
/// the flag change with reason and evidence ([`flag_edit_text`]).
fn recipe_edit_text(e: &RecipeEdit, en: &mut Rich, zh: &mut Rich) {
    en.push(t(" Recipe "));
    en.push(code(e.file.clone()));
    en.push(t(": "));
    zh.push(t("配方 "));
    zh.push(code(e.file.clone()));
    match &e.summary {
        Some(sum) => summary_edit_text(e, sum, en, zh),
        None => flag_edit_text(e, en, zh),
    }
}

/// An edit with a ready English summary: the summary (and evidence) in English; in Chinese the
/// summary's flag-like code spans (`-…` or containing `=`) joined by arrows, and "value kept"
/// when the summary says `kept`.
fn summary_edit_text(e: &RecipeEdit, sum: &str, en: &mut Rich, zh: &mut Rich) {
    en.extend(code_spans(sum));
    let codes: Vec<Span> = code_spans(sum)
        .into_iter()
        .filter(|s| matches!(s, Span::Code(c) if c.starts_with('-') || c.contains('=')))
        .collect();
    zh.push(t(" 已按迁移规则修改"));
    if !codes.is_empty() {
        zh.push(t("："));
        for (k, c) in codes.into_iter().enumerate() {
            if k > 0 {
                zh.push(t(" → "));
            }
            zh.push(c);
        }
    }
    if sum.contains("kept") {
        zh.push(t("，取值不变"));
    }
    if let Some(ev) = &e.evidence {
        en.push(t(" ("));
        en.push(evidence_span(ev));
        en.push(t(")"));
    }
    en.push(t("."));
    zh.push(t("。"));
}

/// An edit from its flag fields: `` `--old v` → `--new v` `` (renamed or re-valued) or
/// `` removed `--old v` ``, then `(reason, evidence)` in English.
fn flag_edit_text(e: &RecipeEdit, en: &mut Rich, zh: &mut Rich) {
    let flag = |f: &str, v: &Option<String>| match v {
        Some(v) => format!("{f} {v}"),
        None => f.to_string(),
    };
    match &e.new_flag {
        Some(nf) => {
            en.push(code(flag(&e.old_flag, &e.old_value)));
            en.push(t(" → "));
            en.push(code(flag(nf, &e.new_value)));
            zh.push(t(" 中的 "));
            zh.push(code(e.old_flag.clone()));
            if nf != &e.old_flag {
                zh.push(t(" 改为 "));
                zh.push(code(nf.clone()));
                if e.old_value == e.new_value {
                    zh.push(t("，取值不变"));
                } else {
                    zh.push(t("，并调整取值"));
                }
            } else {
                zh.push(t(" 调整了取值"));
            }
        }
        None => {
            en.push(t("removed "));
            en.push(code(flag(&e.old_flag, &e.old_value)));
            zh.push(t(" 删除了 "));
            zh.push(code(e.old_flag.clone()));
        }
    }
    if let Some(r) = &e.reason {
        en.push(t(format!(" ({r}")));
        if let Some(ev) = &e.evidence {
            en.push(t(", "));
            en.push(evidence_span(ev));
        }
        en.push(t(")"));
    } else if let Some(ev) = &e.evidence {
        en.push(t(" ("));
        en.push(evidence_span(ev));
        en.push(t(")"));
    }
    en.push(t("."));
    zh.push(t("。"));
}

fn evidence_span(ev: &str) -> Span {
    if ev.starts_with("http://") || ev.starts_with("https://") {
        let text = ev
            .rsplit_once("/pull/")
            .map(|(repo, n)| {
                let repo = repo.rsplit('/').take(2).collect::<Vec<_>>();
                format!("{}/{}#{n}", repo[1..].join("/"), repo[0])
            })
            .unwrap_or_else(|| "evidence".into());
        Span::Link {
            text,
            url: ev.into(),
        }
    } else {
        t(ev.to_string())
    }
}

fn join_and(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_from_images() {
        assert_eq!(
            engine_from_image("lmsysorg/sglang:v0.5.20-cu130").as_deref(),
            Some("SGLang")
        );
        assert_eq!(
            engine_from_image("vllm/vllm-openai:v0.14.0").as_deref(),
            Some("vLLM")
        );
        assert_eq!(
            engine_from_image("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc1").as_deref(),
            Some("TensorRT-LLM")
        );
        assert_eq!(engine_from_image("localhost:5000/foo:bar"), None);
    }

    #[test]
    fn evidence_links_are_named_after_the_pr() {
        match evidence_span("https://github.com/sgl-project/sglang/pull/38375") {
            Span::Link { text, .. } => assert_eq!(text, "sgl-project/sglang#38375"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn eval_delta_needs_both_passed_and_equal_samples() {
        let b = EvalScore {
            score: Some(0.9795),
            samples: Some(1319),
            stderr: None,
            passed: true,
        };
        let mut c = EvalScore {
            score: Some(0.9803),
            samples: Some(1319),
            stderr: None,
            passed: true,
        };
        match eval_delta(Some(&b), &c) {
            Delta::Pp(d) => assert!((d - 0.08).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
        c.samples = Some(1000);
        assert_eq!(
            eval_delta(Some(&b), &c),
            Delta::Na(NaReason::SampleCountMismatch)
        );
        c.samples = Some(1319);
        c.passed = false;
        assert_eq!(eval_delta(Some(&b), &c), Delta::Na(NaReason::EvalNotPassed));
        c.score = None;
        assert_eq!(eval_delta(Some(&b), &c), Delta::Na(NaReason::PointFailed));
        assert_eq!(eval_delta(None, &c), Delta::Na(NaReason::NoMatchedBaseline));
    }
}
