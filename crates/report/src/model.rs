//! The report document: everything a renderer needs, already decided (values, deltas, N/A
//! reasons, notes, next step, failure). Renderers only format; builders (attempt, baseline body,
//! comparison) only decide. The JSON output is this document serialized.

use serde::{Deserialize, Serialize};

/// A metric column of the point table. Values are in the unit of the header: tok/s/GPU for
/// throughput, ms for latency, tok/s/user for interactivity.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// Total (input + output) tokens per second per GPU (InferenceX `tput_per_gpu`).
    TotalTputPerGpu,
    /// Output tokens per second per GPU (`output_tput_per_gpu`).
    OutputTputPerGpu,
    /// Input tokens per second per GPU (`input_tput_per_gpu`).
    InputTputPerGpu,
    /// Time to first token, ms.
    TtftMs,
    /// Time per output token, ms.
    TpotMs,
    /// Inter-token latency, ms.
    ItlMs,
    /// End-to-end latency, ms.
    E2elMs,
    /// Interactivity, tok/s/user (InferenceX `*_intvty` = 1 / TPOT).
    Interactivity,
    /// GPU energy per output token, J (`joules_per_output_token`).
    JoulesPerOutputToken,
    /// GPU energy per input + output token, J (`joules_per_total_token`).
    JoulesPerToken,
    /// Mean board power per GPU, W (`avg_power_w`).
    PowerPerGpu,
    /// One of InferenceX's PR-check columns (a fixed statistic of TTFT, interactivity or
    /// E2EL, `crate::ix_columns`).
    Ix(crate::ix_columns::IxColumn),
}

impl Column {
    /// The English column header without the direction arrow (`"TTFT ms"`).
    pub fn label(self) -> &'static str {
        match self {
            Column::TotalTputPerGpu => "Total tok/s/GPU",
            Column::OutputTputPerGpu => "Output tok/s/GPU",
            Column::InputTputPerGpu => "Input tok/s/GPU",
            Column::TtftMs => "TTFT ms",
            Column::TpotMs => "TPOT ms",
            Column::ItlMs => "ITL ms",
            Column::E2elMs => "E2EL ms",
            Column::Interactivity => "Interactivity tok/s/user",
            Column::JoulesPerOutputToken => "J/output tok",
            Column::JoulesPerToken => "J/tok",
            Column::PowerPerGpu => "W/GPU",
            Column::Ix(c) => c.label(),
        }
    }

    /// True when a larger value is better (throughput, interactivity); false for latencies.
    pub fn higher_is_better(self) -> bool {
        match self {
            Column::Ix(c) => c.higher_is_better(),
            _ => matches!(
                self,
                Column::TotalTputPerGpu
                    | Column::OutputTputPerGpu
                    | Column::InputTputPerGpu
                    | Column::Interactivity
            ),
        }
    }

    /// Whether this is an energy column (J/output tok, J/tok, W/GPU).
    pub fn is_energy(self) -> bool {
        matches!(
            self,
            Column::JoulesPerOutputToken | Column::JoulesPerToken | Column::PowerPerGpu
        )
    }

    /// The column header with its direction arrow (`"TTFT ms ↓"`, `"Output tok/s/GPU ↑"`).
    pub fn header(self) -> String {
        format!(
            "{} {}",
            self.label(),
            if self.higher_is_better() {
                "↑"
            } else {
                "↓"
            }
        )
    }
}

/// Why a delta (or a value) is `N/A`. A `N/A` never appears without one of these.
/// Mirrors the compare stage's reasons (AUTOMATION.md §5.6 "Numbers"); details carry numbers.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
#[serde(tag = "reason", content = "detail", rename_all = "snake_case")]
pub enum NaReason {
    /// No baseline point has the candidate's identity.
    NoMatchedBaseline,
    /// The matched baseline point has no value for this metric.
    BaselineMissing,
    /// The matched baseline value is 0.
    BaselineZero,
    /// The candidate point has no value for this metric.
    CandidateMissing,
    /// The candidate point failed (no usable measurement).
    PointFailed,
    /// The baseline point failed.
    BaselineFailed,
    /// The candidate point was not produced (not run, or its result is missing).
    PointUnavailable,
    /// The workload or dataset differs or is unproven; detail `"AgentX vs 8k/1k"`.
    WorkloadMismatch(String),
    /// The latency statistic differs; detail `"baseline mean, requested median"`.
    StatisticMismatch(String),
    /// The candidate eval did not pass (eval deltas need both passed).
    EvalNotPassed,
    /// The baseline eval did not pass.
    BaselineEvalNotPassed,
    /// Eval sample counts differ (pp deltas only for equal counts).
    SampleCountMismatch,
    /// A comparability gate failed; the detail carries the numbers.
    NotComparable(String),
    /// The candidate failed a validity gate (e.g. failure rate); the detail carries the numbers.
    CandidateInvalid(String),
    /// The job that should have produced the value failed (an eval job whose engine died, its
    /// data missing); the detail is the first error line of its log.
    JobFailed(String),
    /// An energy cell of a point whose GPU power was not measured (no GPU or NVML, invalid
    /// telemetry, or a row written before servebench measured energy): shown as `telemetry
    /// missing`, never as 0. The detail is the row's reason (`NVML not loadable`), or empty.
    TelemetryMissing(String),
}

/// One cell of the point or eval table.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Cell {
    /// The value shown (the candidate's, or the baseline's in a baseline body). `None` → `N/A`.
    pub value: Option<f64>,
    /// The baseline value the delta was computed from, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    /// Run-to-run sample standard deviation of the value (same unit) when it is the mean of
    /// repeats (`sweep --repeats N`, N ≥ 2); shown as `value ± sd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<f64>,
    /// The delta shown next to the value.
    pub delta: Delta,
    /// Whether the delta is good or bad news (colours in HTML and on a terminal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tone: Option<Tone>,
    /// The value is modelled (the simulator's power model), not measured: shown with
    /// `(modelled)`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub modelled: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Colour of a delta: good news, bad news, or within noise/gate.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Better (beyond the gate when one is known).
    Good,
    /// Worse (beyond the gate when one is known).
    Bad,
    /// No change / within the noise band.
    Neutral,
}

impl Tone {
    /// Tone of a relative delta by direction alone (no gate known): a change that rounds to
    /// `+0.0%` is neutral.
    pub fn of_pct(m: Column, pct: f64) -> Option<Tone> {
        if !pct.is_finite() {
            return None;
        }
        if pct.abs() < 0.05 {
            return Some(Tone::Neutral);
        }
        let better = (pct > 0.0) == m.higher_is_better();
        Some(if better { Tone::Good } else { Tone::Bad })
    }
}

/// The delta part of a cell.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Delta {
    /// No delta column at all (baseline body, run without baseline).
    #[default]
    None,
    /// Relative change in percent, `(new/old − 1) × 100`.
    Pct(f64),
    /// Change in percentage points (eval scores).
    Pp(f64),
    /// Not available, with the reason.
    Na(NaReason),
}

/// Status of one benchmark point (one row).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Measured and usable.
    Passed,
    /// Measured, but interrupted (Ctrl-C) before all its requests ran (agg `point_status`
    /// `partial`, [`servebench_compare::PointStatus::Interrupted`]).
    Partial,
    /// Failed (no usable measurement).
    Failed,
    /// Measured, but the server broke the request's contract (a validity rule of
    /// docs/measurement.md; agg `point_status` `invalid`): no value or delta is shown, the
    /// row's `first_error` carries the violated rules.
    Invalid,
    /// Not produced (not dispatched, not run, or its result is missing).
    Unavailable,
    /// A baseline point no candidate point matched (the row shows the baseline's values).
    BaselineOnly,
}

/// One row of the point table: one concurrency (of one workload/topology).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct Row {
    /// Concurrency.
    pub conc: u32,
    /// Row label when the table mixes workloads or topologies (`8k/1k · TP1/EP1 · c4`); then
    /// the first column is `Point` instead of `Concurrency`. `None`: the label is `c<conc>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Point status.
    pub status: RowStatus,
    /// First error of this point, when it differs from the attempt's failure (quoted in notes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Failed requests; `None` when unknown (`request errors unavailable`).
    pub request_errors: Option<u64>,
    /// Failed requests by reason (`http_503` → 10), when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_error_reasons: Vec<(String, u64)>,
    /// One cell per column of the table, in order.
    pub cells: Vec<Cell>,
    /// Further remarks (verdict, spread…), each of a kind; notes collapse them per kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<RowRemark>,
}

impl Row {
    /// The row's name in notes: its label, else `c<conc>`.
    pub fn name(&self) -> String {
        self.label
            .clone()
            .unwrap_or_else(|| format!("c{}", self.conc))
    }
}

/// A worded remark about one row (English with numbers, Chinese without).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct RowRemark {
    /// Kind (`verdict`, `spread`, `gate`…): remarks of one kind share a `Note:` line.
    pub kind: String,
    /// English, e.g. `regression: TTFT ms +29.9% (gate ±5%)`.
    pub en: String,
    /// Chinese.
    pub zh: String,
}

/// The point table.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct PointTable {
    /// Metric columns after `Concurrency`.
    pub columns: Vec<Column>,
    /// Rows, in concurrency order.
    pub rows: Vec<Row>,
}

/// One eval score (a fraction in `[0, 1]`).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct EvalScore {
    /// Score as a fraction (0.9795 = 97.95 %); `None` when the eval produced no result.
    pub score: Option<f64>,
    /// Number of samples scored; `None` when unknown.
    pub samples: Option<u64>,
    /// Standard error of the score (fraction), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<f64>,
    /// Whether the eval passed (ran and met its threshold).
    pub passed: bool,
}

/// One eval row (`gsm8k/em_strict · c16`).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct EvalLine {
    /// Task name (`gsm8k`).
    pub task: String,
    /// Metric name (`em_strict`).
    pub metric: String,
    /// Concurrency the eval ran at.
    pub conc: u32,
    /// Baseline score, when there is a baseline.
    pub baseline: Option<EvalScore>,
    /// Candidate score; `None` in a baseline body.
    pub candidate: Option<EvalScore>,
    /// Delta in percentage points, or why not (`Delta::None` in a baseline body).
    pub delta: Delta,
}

impl EvalLine {
    /// `task/metric · c<conc>`.
    pub fn label(&self) -> String {
        format!("{}/{} · c{}", self.task, self.metric, self.conc)
    }
}

/// Inline rich text (rendered to Markdown or HTML).
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
#[serde(tag = "t", content = "c", rename_all = "snake_case")]
pub enum Span {
    /// Plain text.
    Text(String),
    /// Inline code (image references, flags, digests, quoted errors).
    Code(String),
    /// Bold text.
    Bold(String),
    /// A link.
    Link {
        /// Link text.
        text: String,
        /// Target URL.
        url: String,
    },
}

/// A run of inline spans.
pub type Rich = Vec<Span>;

/// Small helpers to build [`Rich`] text.
pub fn t(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}
/// Inline code span.
pub fn code(s: impl Into<String>) -> Span {
    Span::Code(s.into())
}

/// English text and its Chinese counterpart.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Bilingual {
    /// English.
    pub en: Rich,
    /// Simplified Chinese (no numbers from the tables).
    pub zh: Rich,
}

/// A run reference: `Run <id> / attempt <a>`, linked when a URL is known.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug, Default)]
pub struct RunRef {
    /// Run id (a CI run id or a servebench store run id).
    pub id: String,
    /// Run attempt, when the CI has attempts.
    pub attempt: Option<u32>,
    /// Link to the run.
    pub url: Option<String>,
}

/// Which attempt a comment is about (AUTOMATION.md §5.3: one initial attempt, up to 5 repairs,
/// up to 2 infrastructure retries per attempt, one final sweep).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttemptKind {
    /// `Initial attempt`.
    Initial,
    /// `Repair N/MAX`.
    Repair {
        /// Repair number, 1-based.
        n: u32,
        /// Repair budget (5 in Klaud).
        max: u32,
    },
    /// `Infrastructure retry N`.
    Retry {
        /// Retry number, 1-based.
        n: u32,
    },
    /// `Final full sweep`.
    Final,
}

/// Status of an attempt (the header's second field).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    /// `Passed`.
    Passed,
    /// `Failed`.
    Failed,
    /// `Running`.
    Running,
    /// `Queued`.
    Queued,
    /// `Cancelled`.
    Cancelled,
    /// `not dispatched (stopped)`.
    NotDispatched,
    /// `blocked before dispatch`.
    BlockedBeforeDispatch,
    /// `Not comparable`: the candidate ran, but none of its points has a comparable baseline
    /// point (no point matched the baseline's identity, or every matched pair failed a
    /// comparability gate), so nothing was checked against the baseline.
    NotComparable,
}

/// What the document is, which decides its header lines.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Heading {
    /// The frozen baseline (PR body): Goal and Baseline lines.
    Baseline {
        /// Engine display name (`SGLang`), for the Goal line.
        engine: Option<String>,
        /// Baseline image.
        old_image: String,
        /// Target image, when a bump is planned (Goal line).
        new_image: Option<String>,
        /// Baseline date `YYYY-MM-DD`.
        date: String,
        /// Source links (`API 1`, …).
        sources: Vec<(String, String)>,
    },
    /// An attempt comment.
    Attempt {
        /// Which attempt.
        kind: AttemptKind,
        /// Its status.
        status: AttemptStatus,
        /// The run.
        run: Option<RunRef>,
        /// `YYYY-MM-DD HH:MM UTC`.
        time: Option<String>,
    },
    /// A plain run report (`servebench report`), optionally against a baseline.
    Run {
        /// The run.
        run: RunRef,
        /// `YYYY-MM-DD HH:MM UTC`.
        time: Option<String>,
        /// Overall verdict, worded (`No change`, `Regression`, …), when compared.
        verdict: Option<Bilingual>,
        /// The baseline it was compared with, worded (`run 3` / `baseline.json`).
        baseline: Option<String>,
    },
}

/// The second header line: image, head, workload, topology, latency statistic.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Context {
    /// Image reference (shown in code).
    pub image: Option<String>,
    /// Head commit (first 12 hex shown).
    pub head: Option<String>,
    /// `AgentX` or `8k/1k`.
    pub workload: Option<String>,
    /// `TP1/EP1`, `TP4/EP1 + TP2/EP2`, `PTP1x2/DTP8x2`.
    pub topology: Option<String>,
    /// Latency statistic: `mean`, `median`, `p90`, `p99`.
    pub statistic: Option<String>,
    /// Extra free fields (engine, hardware…), shown after the statistic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
}

/// Curves for the HTML charts: one entry per measured point and side.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Curves {
    /// Baseline points.
    pub baseline: Vec<CurvePoint>,
    /// Candidate points (passed or partial ones only).
    pub candidate: Vec<CurvePoint>,
}

/// One point of a curve. Any metric may be missing.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct CurvePoint {
    /// Concurrency.
    pub conc: u32,
    /// Total tok/s/GPU.
    pub total_tput_per_gpu: Option<f64>,
    /// Output tok/s/GPU.
    pub output_tput_per_gpu: Option<f64>,
    /// Interactivity, tok/s/user; when `None`, charts derive it as 1000 / TPOT ms.
    pub interactivity: Option<f64>,
    /// TTFT, ms.
    pub ttft_ms: Option<f64>,
    /// TPOT, ms.
    pub tpot_ms: Option<f64>,
    /// GPU energy per output token, J (measured or modelled; `None` without energy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_output_token: Option<f64>,
}

impl CurvePoint {
    /// Interactivity in tok/s/user: the stored value, else `1000 / tpot_ms`
    /// (InferenceX process_result: `intvty = 1 / tpot` with tpot in seconds).
    pub fn interactivity(&self) -> Option<f64> {
        self.interactivity.or_else(|| {
            self.tpot_ms
                .filter(|v| *v > 0.0 && v.is_finite())
                .map(|v| 1000.0 / v)
        })
    }
}

/// What went wrong, from triage, for the failure paragraph.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct FailureSummary {
    /// The first real error, one entry per line (`Error: …`, `- MODEL_PATH`).
    pub first_error: Vec<String>,
    /// Log file it was found in (file name).
    pub log_file: Option<String>,
    /// 1-based line number in that log.
    pub line: Option<u64>,
    /// The layer that raised it (`launcher`, `recipe`, `image`, `engine`, `runner`, …).
    pub layer: String,
    /// Layers it is explicitly not in (`recipe`, `image`, `engine`), said when known.
    #[serde(default)]
    pub not_layers: Vec<String>,
    /// Seconds from the job log's first line to the error, when the log has timestamps.
    #[serde(default)]
    pub seconds_after_start: Option<f64>,
    /// Where the error sits among the job's stages, as triage decided it from the log
    /// (`before any image import or server start`, `during engine start-up …`): worded by
    /// [`servebench_contracts::JobStage::en`] and [`crate::words::job_stage_zh`], the same
    /// words as triage's evidence. `None`: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<servebench_contracts::JobStage>,
    /// The node the first error is on, in a multi-node job (for a lost node: the lost node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The role of that node's log in a multi-node job (`decode worker w1`, `frontend`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Failure class, worded (`launcher environment check`), with its id when known (`F3`).
    pub class: Option<String>,
    /// `Some(true)` deterministic, `Some(false)` transient, `None` mixed/unknown.
    pub deterministic: Option<bool>,
    /// Runners (or jobs) where the same first error was found; 2+ strengthens "deterministic".
    #[serde(default)]
    pub same_on: Vec<String>,
    /// Whether a repair inside the recipe is possible (`Some(false)`: the owning layer is elsewhere).
    pub repairable_in_recipe: Option<bool>,
    /// Outcome implied (`readiness-blocked`, …), once terminal.
    pub outcome: Option<String>,
    /// Phase (`targeted`, …).
    pub phase: Option<String>,
    /// Repairs used so far.
    pub repairs_used: Option<u32>,
    /// Repair budget (5).
    pub max_repairs: Option<u32>,
}

/// The whole document.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct Document {
    /// `servebench` report schema version of this JSON.
    pub schema_version: u32,
    /// Title prefix / bot name for titles (`servebench` by default; `Klaud Cold` for InferenceX).
    pub title_prefix: String,
    /// What it is and its header line.
    pub heading: Heading,
    /// Second header line.
    pub context: Context,
    /// `Change:` line (provenance), when there is a change.
    pub change: Option<Bilingual>,
    /// The point table.
    pub points: PointTable,
    /// Eval rows; empty → `Eval: N/A`.
    pub evals: Vec<EvalLine>,
    /// `Next:` line.
    pub next: Option<Bilingual>,
    /// Failure paragraph.
    pub failure: Option<FailureSummary>,
    /// Extra English/Chinese lines (verdict explanations, spread), rendered before `Next:`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Bilingual>,
    /// Chart data.
    pub curves: Curves,
    /// Data of the issue-13 charts (latency CDFs, goodput curve, multi-run Pareto); empty (and
    /// absent from the JSON) unless the report loaded them (`servebench report`, `--runs`).
    #[serde(default, skip_serializing_if = "ChartData::is_empty")]
    pub charts: ChartData,
}

/// Data of the distribution, goodput and Pareto charts, already reduced for drawing
/// (built by [`crate::dist`] from per-request records and agg rows).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct ChartData {
    /// Empirical latency CDFs, one entry per point (concurrency / repeat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<PointCdfs>,
    /// Goodput against concurrency under the run's SLO (`--slo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputCurve>,
    /// Throughput-vs-interactivity points and frontier of several runs (`report --runs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pareto: Vec<ParetoRun>,
    /// Why a chart's data is missing (records not found, no SLO, …), shown under the charts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ChartData {
    /// True when nothing was loaded (the document then renders as before).
    pub fn is_empty(&self) -> bool {
        self.latency.is_empty()
            && self.goodput.is_none()
            && self.pareto.is_empty()
            && self.notes.is_empty()
    }
}

/// An empirical CDF, reduced for drawing: `points` are `[x, F(x)]` with F the fraction of
/// samples ≤ x (x in ms), strictly increasing in both; the last has F = 1.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Cdf {
    /// Samples the CDF was computed from.
    pub n: usize,
    /// `[x ms, fraction ≤ x]`, at most [`crate::dist::MAX_CDF_POINTS`] of them.
    pub points: Vec<[f64; 2]>,
}

/// The latency CDFs of one point (successful measured requests; modelled time against the
/// simulator).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct PointCdfs {
    /// Concurrency.
    pub conc: u32,
    /// Legend label (`c4`, `c4 r2`).
    pub label: String,
    /// TTFT per request, ms.
    pub ttft: Cdf,
    /// TPOT per request (requests with more than one output token), ms.
    pub tpot: Cdf,
    /// ITL per gap between token events (all requests pooled), ms.
    pub itl: Cdf,
    /// E2EL per request, ms.
    pub e2el: Cdf,
}

/// Goodput of every point of a run under one SLO (docs/measurement.md §12.1).
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct GoodputCurve {
    /// The SLO in canonical form (`ttft=500ms,tpot=50ms@p90`).
    pub slo: String,
    /// Objectives as `(metric, threshold ms)` (`ttft`, `tpot`, …): the SLO lines of the CDFs.
    pub objectives: Vec<(String, f64)>,
    /// Attainment target, % (the `@pX`).
    pub target_pct: f64,
    /// One entry per point, by concurrency.
    pub points: Vec<GoodputPoint>,
}

/// Goodput of one point.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct GoodputPoint {
    /// Concurrency.
    pub conc: u32,
    /// Completed requests per second (all successful requests), req/s.
    pub throughput_rps: f64,
    /// Requests per second meeting every objective, req/s.
    pub goodput_rps: f64,
    /// Good requests / measured requests, % (failed included).
    pub attainment_pct: Option<f64>,
    /// attainment ≥ target.
    pub meets_slo: bool,
}

/// One run on the throughput-vs-interactivity plane.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct ParetoRun {
    /// Legend label (`run 12 · sim-h200`).
    pub label: String,
    /// Every point with both values, by interactivity.
    pub points: Vec<ParetoPoint>,
    /// The Pareto frontier of `points` ([`crate::dist::pareto_frontier`]), by interactivity.
    pub frontier: Vec<ParetoPoint>,
}

/// A point on the throughput-vs-interactivity plane.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Debug, Default)]
pub struct ParetoPoint {
    /// Concurrency.
    pub conc: u32,
    /// Interactivity, tok/s/user (`1000 / TPOT ms`, InferenceX `intvty`).
    pub interactivity: f64,
    /// Total tok/s/GPU (InferenceX `tput_per_gpu`).
    pub tput_per_gpu: f64,
}

/// Current [`Document::schema_version`].
pub const SCHEMA_VERSION: u32 = 1;

/// Default title prefix.
pub const DEFAULT_TITLE_PREFIX: &str = "servebench";
