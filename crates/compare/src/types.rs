//! Public data types of the comparison. Renderers (the report crate) read these; they are
//! stable: fields and variants are only ever added, never renamed or removed.
//!
//! Units everywhere in this module ("display units"): latency in **ms** (the agg rows carry
//! seconds; InferenceX `compare_results.py` also shows TTFT as s×1000), throughput in
//! **tok/s/GPU**, interactivity in **tok/s/user**, eval scores as a **fraction** (0.9795) with
//! eval deltas in **percentage points**.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Which side of a comparison a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The reference run (old image).
    Baseline,
    /// The run under test (new image).
    Candidate,
}

/// Kind of benchmark a point ran (InferenceX-app `benchmark_type`): defined in contracts, the
/// agg row's own type.
pub use servebench_contracts::BenchmarkType;

/// One side of a topology: tensor parallel, expert parallel, DP-attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Parallelism {
    /// Tensor-parallel size (`tp`, `prefill_tp`, `decode_tp`).
    pub tp: u32,
    /// Expert-parallel size (`ep`, `prefill_ep`, `decode_ep`).
    pub ep: u32,
    /// DP-attention on/off (agg rows spell it `"true"`/`"false"` strings; both accepted).
    pub dp_attention: bool,
}

/// The topology part of the identity. Single-node rows use the same [`Parallelism`] for prefill
/// and decode (as InferenceX `compare_results.py` does); multinode rows carry both pools.
/// `pp`, `dcp_size`, `pcp_size` and worker counts are NOT part of the match key (InferenceX
/// does not match on them either); worker counts are kept for labels only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Topology {
    /// Prefill pool (single-node: the one engine).
    pub prefill: Parallelism,
    /// Decode pool (single-node: same as `prefill`).
    pub decode: Parallelism,
    /// Prefill worker count (multinode only; not matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_workers: Option<u32>,
    /// Decode worker count (multinode only; not matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_workers: Option<u32>,
}

/// The key a candidate point is matched on (the normalised projection of the one
/// [`servebench_contracts::Identity`] at a concurrency; named apart from it): InferenceX
/// `compare_results.py` (MEASUREMENT Part 2 §3) plus `benchmark_type` (InferenceX-app natural key, AUTOMATION §7.5).
/// **Not** the image, the full model id, the recipe fingerprint, pp/dcp/pcp or worker counts.
///
/// Equality of two identities (see [`PointKey::match_key`]) is the match rule: `hw` is
/// normalised (lowercased, one trailing `-multinode|-trt|-disagg` stripped), `spec_decoding`
/// defaults to `"none"`, the model is matched by its InferenceX model prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PointKey {
    /// Hardware (runner type), already normalised, e.g. `"b200"`, `"sim-h200"`.
    pub hw: String,
    /// Framework, e.g. `"sglang"`, `"vllm"`, `"dynamo-trt"`.
    pub framework: String,
    /// InferenceX model prefix (`infmax_model_prefix`), e.g. `"qwen3.5"`.
    pub model_prefix: String,
    /// Precision, e.g. `"fp4"`.
    pub precision: String,
    /// Speculative decoding method: `"mtp"`, `"draft_model"` or `"none"`.
    pub spec_decoding: String,
    /// Disaggregated prefill/decode.
    pub disagg: bool,
    /// Multinode deployment.
    pub is_multinode: bool,
    /// Topology (TP/EP/DP-attention of prefill and decode).
    pub topology: Topology,
    /// Fixed-sequence or agentic.
    pub benchmark_type: BenchmarkType,
    /// Nominal input length in tokens (`null` for agentic).
    pub isl: Option<u32>,
    /// Nominal output length in tokens (`null` for agentic).
    pub osl: Option<u32>,
    /// Client concurrency (`conc`).
    pub conc: u32,
    /// KV-cache offload mode (InferenceX `kv_offloading`; InferenceX-app keys on it: `none`
    /// and `dram` rows never match). Serialized only when not `none`.
    #[serde(default, skip_serializing_if = "KvOffload::is_none")]
    pub kv_offloading: KvOffload,
}

/// The KV-offload mode of the identity (contracts' type).
pub use servebench_contracts::KvOffload;

/// A point's run status, from the agg row's `point_status` (InferenceX rows: `ok`): the one
/// definition of `servebench-contracts`. `Interrupted` (on disk `"partial"`) means Ctrl-C
/// stopped the point; failed requests of a finished point are `num_requests_failed`.
pub use servebench_contracts::PointStatus;

/// The API kind the client used; different kinds are never comparable (case B18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKind {
    /// `/v1/completions` (raw prompt).
    Completions,
    /// `/v1/chat/completions` (chat template applied server-side).
    Chat,
}

/// Latency statistic selected with `--stat` (the agg-row key prefix); defined in contracts so
/// that the measuring side (the sweep's table) names it without depending on compare.
pub use servebench_contracts::Stat;

/// A compared metric, with its direction and unit. Throughputs have no statistic; latency and
/// interactivity metrics are read at the selected [`Stat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// `tput_per_gpu`: total (input+output) tok/s/GPU. Higher is better.
    TotalTputPerGpu,
    /// `output_tput_per_gpu`: output tok/s/GPU. Higher is better.
    OutputTputPerGpu,
    /// `input_tput_per_gpu`: input tok/s/GPU. Higher is better.
    InputTputPerGpu,
    /// Time to first token, ms (agg key `<stat>_ttft`, s×1000). Lower is better.
    Ttft,
    /// Time per output token, ms (`<stat>_tpot`). Lower is better.
    Tpot,
    /// Inter-token latency, ms (`<stat>_itl`). Lower is better.
    Itl,
    /// End-to-end latency, ms (`<stat>_e2el`). Lower is better.
    E2el,
    /// Interactivity, tok/s/user (`<stat>_intvty` = 1000/TPOT_ms stat). Higher is better.
    Intvty,
    /// GPU energy per output token, J (`joules_per_output_token`: window energy / output
    /// tokens, MEASUREMENT.md Part 2 §2.5). Lower is better.
    JoulesPerOutputToken,
    /// GPU energy per token, input and output, J (`joules_per_total_token`). Lower is better.
    JoulesPerToken,
    /// Mean board power per GPU over the benchmark window, W (`avg_power_w`). Lower is better
    /// at equal work.
    PowerPerGpu,
}

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput, interactivity, eval scores.
    HigherIsBetter,
    /// Latencies.
    LowerIsBetter,
}

/// Why a delta (or a whole row) is `N/A`. Every N/A carries exactly one of these as its primary
/// reason; [`NaReason::text`] gives the English phrase used in `Note:` lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NaReason {
    /// No baseline point has the candidate's identity.
    NoMatchedBaseline,
    /// The matched baseline point has no value for this metric/statistic (null or absent).
    BaselineMissing,
    /// The matched baseline value is 0 (a ratio is undefined).
    BaselineZero,
    /// The candidate point has no value for this metric/statistic.
    CandidateMissing,
    /// A point did not pass (status `failed`); `side` says which.
    PointFailed {
        /// Which point failed.
        side: Side,
    },
    /// A point is `invalid`: the server broke the request's contract (a validity rule of
    /// docs/measurement.md); no delta is drawn from it. `reason` = its violated rules, `; `
    /// joined (`fixed length violated: 2/4 short (min 5, want 128)`).
    PointInvalid {
        /// Which point is invalid.
        side: Side,
        /// The violated rules, one line.
        reason: String,
    },
    /// Workload differs (fixed-seq vs agentic, ISL/OSL, or an AgentX trace dataset that differs).
    WorkloadMismatch {
        /// Baseline workload/dataset label.
        baseline: String,
        /// Candidate workload/dataset label.
        candidate: String,
    },
    /// The baseline only carries another latency statistic (e.g. a baseline table in `mean`
    /// compared with `--stat median`).
    StatisticMismatch {
        /// Statistic the baseline carries.
        baseline: Stat,
        /// Statistic requested.
        requested: Stat,
    },
    /// An eval row did not pass its threshold (eval deltas need both passed).
    EvalNotPassed {
        /// Which eval row did not pass.
        side: Side,
    },
    /// One side's energy is measured, the other's modelled (the simulator's power model):
    /// no energy delta is drawn between them.
    EnergySourceMismatch {
        /// `measured` or `modelled`.
        baseline: String,
        /// `measured` or `modelled`.
        candidate: String,
    },
    /// Eval sample counts differ (eval deltas need equal counts).
    SampleCountsDiffer {
        /// Baseline sample count (`n_eff`).
        baseline: Option<u64>,
        /// Candidate sample count.
        candidate: Option<u64>,
    },
}

/// A signed difference, candidate against baseline.
///
/// * throughput / latency: `value = new − old` in display units,
///   `pct = (new/old − 1) × 100` rounded to **one** decimal (AUTOMATION §5.6 "Numbers");
/// * eval: `value = pct = (new − old) × 100` percentage points rounded to **two** decimals.
///
/// When the delta cannot be computed, `value` and `pct` are `None` and `na` says why. When it
/// can, `na` is `None` (a delta computed only for information on a not-comparable pair is still
/// a number; the pair's [`Verdict`] says it is not a regression).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// `new − old` (display units; eval: percentage points, 2 decimals).
    pub value: Option<f64>,
    /// Relative change in % (1 decimal); for eval rows the pp delta (2 decimals).
    pub pct: Option<f64>,
    /// Why there is no delta.
    pub na: Option<NaReason>,
}

/// A decision about a metric, a point, an eval row or a whole comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the noise band (baseline spread with repeats; the gate without).
    NoChange,
    /// Informational only: a tail percentile with fewer repeats than the noise rule needs, or a
    /// metric compared on a pair that is not comparable.
    Observation,
    /// Better beyond the noise band and the gate.
    Improvement,
    /// The per-request evidence cannot tell: the change's 95 % interval straddles the gate,
    /// the percentile has too few samples, or the false-discovery-rate correction did not keep
    /// it. Exit 0; the line says how many requests would settle it.
    Inconclusive,
    /// The pair cannot be compared (comparability gate failed, no baseline, N/A delta).
    NotComparable,
    /// The candidate itself is invalid (failed point, failure rate over the gate).
    CandidateInvalid,
    /// Worse beyond the noise band and the gate.
    Regression,
}

/// Run-to-run spread of a metric over repeats (`sweep --repeats N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Number of repeats.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); `None` when n < 2.
    pub sd: Option<f64>,
    /// Smallest repeat.
    pub min: f64,
    /// Largest repeat.
    pub max: f64,
}

/// A comparability gate (case B18): checked before any delta is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// Mean output length (`mean_osl`, tokens) within ±tolerance %.
    OutputLength,
    /// Mean input length within ±tolerance % (server-side `mean_isl_server` when both sides
    /// have it, else client-side `mean_isl`).
    InputLength,
    /// Same API kind (completions vs chat).
    ApiKind,
    /// Failure rate of the candidate (`num_requests_failed / num_requests_total`) ≤ gate.
    CandidateFailureRate,
    /// Failure rate of the baseline ≤ gate.
    BaselineFailureRate,
}

/// Outcome of one gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateOutcome {
    /// Within tolerance.
    Passed,
    /// Beyond tolerance: the pair is `not_comparable` / `candidate_invalid`.
    Failed,
    /// Could not be checked (a side lacks the number, e.g. a baseline table without mean OSL).
    Skipped,
}

/// One gate's numbers, e.g. B18: `OutputLength`, baseline 1024, candidate 63, diff −93.8 %,
/// limit 5 % → `Failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateCheck {
    /// Which gate.
    pub kind: GateKind,
    /// Baseline value (tokens for lengths; fraction for failure rates; label for API kind).
    pub baseline: Option<GateValue>,
    /// Candidate value.
    pub candidate: Option<GateValue>,
    /// Relative difference in % (lengths: `(cand/base − 1)×100`, 1 decimal); `None` otherwise.
    pub diff_pct: Option<f64>,
    /// The tolerance: ±% for lengths, max failure fraction for failure rates, `None` for API kind.
    pub limit: Option<f64>,
    /// Result.
    pub outcome: GateOutcome,
    /// One English line with the numbers, e.g.
    /// `mean output length −93.8% (63 vs 1024), beyond the ±5% tolerance`.
    pub message: String,
}

/// A value a gate looked at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GateValue {
    /// A number (tokens, or a failure fraction 0–1).
    Number(f64),
    /// A label (API kind).
    Text(String),
}

/// Metric values of one agg row, keyed by the agg-row key (`"tput_per_gpu"`, `"median_ttft"`,
/// … in the row's own units: **seconds** for latencies). Read them in display units with
/// [`Point::value`].
pub type Metrics = BTreeMap<String, f64>;

/// One benchmark point (one agg row, or the merge of its repeats), as compare sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Match identity.
    pub identity: PointKey,
    /// Engine image (not matched; shown in headers).
    pub image: Option<String>,
    /// Full model id (not matched).
    pub model: Option<String>,
    /// Point status.
    pub status: PointStatus,
    /// API kind, when known (InferenceX fixed-seq rows: completions; AgentX: chat).
    pub api: Option<ApiKind>,
    /// Endpoint URL, when known.
    pub endpoint: Option<String>,
    /// AgentX trace dataset label (`dataset.name` or similar), when known.
    pub dataset: Option<String>,
    /// When the point comes from a table that carries only one latency statistic (baseline
    /// tables: `"statistic": "mean"`), that statistic; `None` = every statistic present in the
    /// row is real.
    pub only_stat: Option<Stat>,
    /// Requests sent (measured phase).
    pub num_requests_total: Option<u64>,
    /// Successful requests.
    pub num_requests_successful: Option<u64>,
    /// Failed requests.
    pub num_requests_failed: Option<u64>,
    /// Failure reason → count.
    pub failure_reasons: BTreeMap<String, u64>,
    /// Mean client-side input tokens (`mean_isl`).
    pub mean_isl: Option<f64>,
    /// Mean server-side input tokens (`mean_isl_server`, from `usage.prompt_tokens`).
    pub mean_isl_server: Option<f64>,
    /// Mean output tokens (`mean_osl`).
    pub mean_osl: Option<f64>,
    /// Metric values (mean over repeats when `repeats` is non-empty), agg-row units.
    pub values: Metrics,
    /// Each repeat's values, in run order; empty for a single run.
    pub repeats: Vec<Metrics>,
    /// The row's open remainder: its object and array values (`failure_reasons`,
    /// `invalid_reasons`, an AgentX aggregate), kept as JSON for renderers because their shape
    /// is not compare's to fix; compare itself reads only `invalid_reasons`
    /// ([`Point::invalid_reasons`]).
    #[serde(default)]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// Within-run 95 % confidence half-widths of the point's latency statistics in display
    /// units (ms), keyed by agg key (`mean_ttft`, `p90_tpot`): the request bootstrap of a
    /// sweep run with `--ci` (`summary.json` `extras.points[].bootstrap`, attached by the
    /// loader); empty otherwise. Used by the noise rule ([`crate::ci`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ci: BTreeMap<String, f64>,
    /// The CI run that measured the point (InferenceX dashboard API `run_url`, a GitHub
    /// Actions run attempt URL), when the row names one; cited as a source of a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_url: Option<String>,
    /// The measurement date `YYYY-MM-DD` the row carries (dashboard API `date`, baseline
    /// table `date`), when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Whether the row came from the InferenceX dashboard API (`/api/v1/benchmarks`,
    /// `/benchmarks/history`): its run link is then cited as `API n`, as the scenario's PR does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dashboard_row: bool,
    /// Why InferenceX would not accept the point as a submission (AgentX
    /// `agentx_submission_valid: false`): the harness's reason codes as the row gives them
    /// (`context_overflow_rate_exceeded`, `unsafe_override`, `run_cancelled`, or
    /// `agentx_submission_valid false` when the row names none); empty = a valid submission
    /// or not an AgentX point. Such a candidate is compared as any other (its numbers stand:
    /// a short `unsafe_override` window is fine for trying things out); the verdict line and
    /// the report say why it is not a valid submission ([`Point::submission_invalid_text`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub submission_invalid: Vec<String>,
    /// The point's successful measured requests (pooled over repeats), attached by the loader
    /// from `records.jsonl` when it has them; with samples on both sides a metric's verdict is
    /// the bootstrap's ([`crate::evidence`]). Not serialised (the records stay on disk).
    #[serde(skip)]
    pub samples: Option<std::sync::Arc<crate::evidence::Samples>>,
    /// The configuration's noise floor per agg key (`mean_ttft`, `tput_per_gpu`), % of the
    /// value: the spread of earlier A/A runs of the same configuration and image in the
    /// store (attached by the loader); it widens the gate when larger ([`crate::evidence`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub noise_floor: BTreeMap<String, f64>,
}

/// One compared metric of a matched pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Which metric.
    pub metric: Metric,
    /// The statistic read (`None` for throughputs).
    pub stat: Option<Stat>,
    /// Baseline value in display units (mean over repeats).
    pub baseline: Option<f64>,
    /// Candidate value in display units (mean over repeats).
    pub candidate: Option<f64>,
    /// The delta, or why there is none.
    pub delta: Delta,
    /// This metric's verdict.
    pub verdict: Verdict,
    /// Baseline run-to-run spread (display units) when it has ≥ 2 repeats.
    pub baseline_spread: Option<Spread>,
    /// Candidate run-to-run spread when it has ≥ 2 repeats.
    pub candidate_spread: Option<Spread>,
    /// The bootstrap evidence behind the verdict, when both sides carry per-request samples
    /// (docs/compare.md §4a).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::Evidence>,
}

/// One candidate point against its baseline point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointComparison {
    /// The candidate's identity (= the baseline's when matched).
    pub identity: PointKey,
    /// The matched baseline point, if any.
    pub baseline: Option<Point>,
    /// The candidate point.
    pub candidate: Point,
    /// Gates that were checked (empty when there is no baseline).
    pub gates: Vec<GateCheck>,
    /// One entry per compared metric, in [`CompareOptions::metrics`] order.
    pub metrics: Vec<MetricComparison>,
    /// The row's verdict: `candidate_invalid` > `not_comparable` > `regression` >
    /// `improvement` > `observation` > `no_change` (first that applies).
    pub verdict: Verdict,
    /// Why the whole row has N/A deltas, when it does (no matched baseline, point failed…).
    pub na: Option<NaReason>,
}

/// One eval row (InferenceX `agg_eval_all.json` row, servebench eval row, or baseline-table
/// eval), as compare sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalPoint {
    /// Config identity; for eval matching the workload fields (`benchmark_type`, `isl`, `osl`)
    /// are ignored, `conc` is used.
    pub identity: PointKey,
    /// Task, e.g. `"gsm8k"`.
    pub task: String,
    /// Score name, e.g. `"em_strict"`.
    pub metric: String,
    /// Score as a fraction (0.9795), `None` when the eval did not produce one.
    pub score: Option<f64>,
    /// Standard error of the score (fraction).
    pub score_se: Option<f64>,
    /// Samples scored (`n_eff`, 1,319 for a full GSM8K run).
    pub samples: Option<u64>,
    /// Threshold the row was gated on (fraction), when known.
    pub threshold: Option<f64>,
    /// Whether the row passed its gate (explicit in the row, or `score ≥ threshold`).
    pub passed: Option<bool>,
    /// Engine image (not matched).
    pub image: Option<String>,
}

/// One eval row pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalComparison {
    /// Task, e.g. `"gsm8k"`.
    pub task: String,
    /// Score name, e.g. `"em_strict"`.
    pub metric: String,
    /// Concurrency the eval ran at.
    pub conc: u32,
    /// Baseline row, if matched.
    pub baseline: Option<EvalPoint>,
    /// Candidate row, if any (a baseline eval with no candidate is listed too).
    pub candidate: Option<EvalPoint>,
    /// Percentage-point delta (2 decimals), only when both passed with equal sample counts.
    pub delta: Delta,
    /// `no_change` when |Δ| ≤ 2 × combined stderr (or both pass and no stderr is known),
    /// `regression` when the candidate fails its threshold or drops beyond that band,
    /// `improvement` when it rises beyond it, `not_comparable` when there is no delta.
    pub verdict: Verdict,
}

/// Run-level facts of one side, for headers (filled by the caller; compare does not read the
/// store).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunInfo {
    /// Store run id, when the side comes from the store.
    pub run_id: Option<i64>,
    /// Short label: `"run 12"`, or a file name.
    pub label: String,
    /// Engine image.
    pub image: Option<String>,
    /// When the run was made (UTC, RFC 3339 or `YYYY-MM-DD` for baseline tables).
    pub created_at: Option<String>,
    /// Catalog config key.
    pub config_key: Option<String>,
    /// Run kind (`sweep`, `bench`, `eval`, `baseline`).
    pub kind: Option<String>,
    /// The run's endpoint as stored (a URL, or the embedded simulator's description starting
    /// with `embedded simulator`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The links the side's numbers come from (CI run URLs of InferenceX dashboard API rows:
    /// `API 1`, `API 2`, …), in the order of the points they belong to; after [`compare`]
    /// only those of baseline points a candidate matched (when none matched, those of the
    /// baseline points listed as unmatched; never those of configurations only counted).
    /// Empty when the rows name no run.
    ///
    /// [`compare`]: crate::compare
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceLink>,
}

/// A cited source of a side's numbers: a name (`API 1`) and its URL (a GitHub Actions run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLink {
    /// Link text: `API n` for dashboard API rows, `run n` for other rows naming a run.
    pub name: String,
    /// The run URL.
    pub url: String,
}

/// Options of a comparison (CLI flags of `servebench compare`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Latency statistic (`--stat`, default `mean`, the PR-comment statistic).
    pub stat: Stat,
    /// Regression gate in % (`--gate`, default 5): a change within ±gate is `no_change`.
    pub gate_pct: f64,
    /// Comparability tolerance for mean ISL/OSL in % (default 5, case B18).
    pub length_tolerance_pct: f64,
    /// Maximum failure fraction (default `None` = 0.05 for fixed-seq, the InferenceX client's
    /// exit threshold, and 0.10 for AgentX, its validity gate).
    pub max_failure_rate: Option<f64>,
    /// Noise band half-width in baseline sample standard deviations (default 2, case B20).
    pub noise_sd: f64,
    /// Repeats needed before a tail percentile (p90, p99) can be a regression (default 5);
    /// with fewer it is an `observation` (case B20).
    pub tail_min_repeats: usize,
    /// Metrics compared, in order (default: total and output tok/s/GPU, TTFT, TPOT, ITL, E2EL,
    /// interactivity).
    pub metrics: Vec<Metric>,
}

/// The whole comparison of a candidate run with a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Options used.
    pub options: CompareOptions,
    /// Baseline run facts.
    pub baseline: RunInfo,
    /// Candidate run facts.
    pub candidate: RunInfo,
    /// One row per candidate point (matched or not), sorted by identity (workload, topology,
    /// conc).
    pub points: Vec<PointComparison>,
    /// Candidate identities with no baseline (also present in `points` with
    /// `na = NoMatchedBaseline`).
    pub unmatched_candidate: Vec<PointKey>,
    /// Baseline points no candidate matched (never silently dropped), of the configurations
    /// the candidate ran (hardware, framework, model, precision, spec decoding, disagg,
    /// multinode); all of them when no baseline point shares a configuration with the
    /// candidate.
    pub unmatched_baseline: Vec<Point>,
    /// Baseline points of configurations the candidate did not run at all (a dashboard
    /// capture's other GPUs and frameworks), kept apart from `unmatched_baseline` so they are
    /// counted rather than listed row by row; empty unless some baseline point shares a
    /// configuration with the candidate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_other_configs: Vec<Point>,
    /// Eval rows (candidate rows, plus baseline rows with no candidate).
    pub evals: Vec<EvalComparison>,
    /// Overall verdict: the worst verdict (ordering of [`Verdict`]) over the candidate's point
    /// rows and eval rows; baseline-only rows do not count; `no_change` if empty.
    pub verdict: Verdict,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::NoChange => "no_change",
            Verdict::Observation => "observation",
            Verdict::Improvement => "improvement",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotComparable => "not_comparable",
            Verdict::CandidateInvalid => "candidate_invalid",
            Verdict::Regression => "regression",
        })
    }
}
