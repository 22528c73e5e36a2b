//! Per-point metrics from per-request records (MEASUREMENT.md Part 1; InferenceX Part 2 §1.6
//! under compat).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use servebench_client::{Compat, OutputSource, Phase, RequestRecord};

use crate::stats::Stats;

/// ITL sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItlMode {
    /// One sample per gap between consecutive token events, pooled over requests (default,
    /// InferenceX/vLLM).
    Chunk,
    /// A gap before an event carrying k tokens gives k samples of gap/k (genai-perf-like).
    Token,
}

impl ItlMode {
    /// `"chunk"` / `"token"` (the agg row's `itl_mode`).
    pub fn as_str(self) -> &'static str {
        match self {
            ItlMode::Chunk => "chunk",
            ItlMode::Token => "token",
        }
    }
}

/// Options of the computation.
#[derive(Debug, Clone, Copy)]
pub struct PointOptions {
    /// Counting rules the records were measured with.
    pub compat: Compat,
    /// ITL sampling.
    pub itl_mode: ItlMode,
    /// The measured phase window `(start_ns, end_ns)` as the driver saw it (InferenceX duration:
    /// `perf()` before the first request to after the last completion).
    pub phase_window_ns: (u64, u64),
    /// Failed fraction above which the point fails (MEASUREMENT.md: 0.05).
    pub max_failed_fraction: f64,
    /// The run was interrupted (Ctrl-C): the point is `partial`.
    pub cancelled: bool,
    /// Which prompt-token count the input throughput and `input_lens` use.
    pub prompt_count: PromptCount,
}

/// Which count of a request's prompt tokens a point's input totals use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptCount {
    /// The workload's own count (`prompt_tokens_client`, InferenceX's `input_lens`), else
    /// `usage.prompt_tokens`: fixed-sequence points.
    Client,
    /// `usage.prompt_tokens`, else the workload's count: AgentX points, as the harness counts
    /// with `--use-server-token-count` (so the table and `agentx.json` agree).
    Server,
}

/// Point status: the one definition lives in `servebench-contracts` (`Interrupted` is written
/// as `"partial"`).
pub use servebench_contracts::PointStatus;

/// Everything computed for one point. Latency statistics in ms.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PointMetrics {
    /// Measured requests (warmup excluded; cancelled in-flight requests excluded).
    pub num_requests_total: u64,
    /// Successful requests (InferenceX `completed`).
    pub completed: u64,
    /// Failed requests.
    pub failed: u64,
    /// Failure category → count.
    pub failure_reasons: BTreeMap<String, u64>,
    /// Requests cut off by Ctrl-C (not counted as failed).
    pub cancelled: u64,
    /// Σ client-side prompt tokens over successful requests.
    pub total_input_tokens: u64,
    /// Σ output tokens over successful requests.
    pub total_output_tokens: u64,
    /// Duration, s: servebench = first measured t0 → last response end; compat = phase window.
    pub duration_s: f64,
    /// completed / duration, req/s.
    pub request_throughput: f64,
    /// total_output / duration, tok/s.
    pub output_throughput: f64,
    /// (total_input + total_output) / duration, tok/s.
    pub total_token_throughput: f64,
    /// total_input / duration, tok/s.
    pub input_throughput: f64,
    /// Time to first token.
    pub ttft: Stats,
    /// Time per output token, requests with output_tokens > 1.
    pub tpot: Stats,
    /// Inter-token latency (per `itl_mode`).
    pub itl: Stats,
    /// End-to-end latency.
    pub e2el: Stats,
    /// Time to first content token (reasoning excluded).
    pub ttfo: Stats,
    /// Client queue time (scheduled → t0).
    pub queue: Stats,
    /// Mean client-side prompt tokens of successful requests.
    pub mean_isl: Option<f64>,
    /// Mean `usage.prompt_tokens` of successful requests (null when no usage).
    pub mean_isl_server: Option<f64>,
    /// Mean output tokens of successful requests.
    pub mean_osl: Option<f64>,
    /// Prompt lengths of every measured request (InferenceX `input_lens`).
    pub input_lens: Vec<u64>,
    /// Output lengths of every measured request, 0 for failed ones (InferenceX `output_lens`).
    pub output_lens: Vec<u64>,
    /// ITL mode used.
    pub itl_mode: ItlMode,
    /// Counting rules used.
    pub compat: Compat,
    /// ok / failed / partial.
    pub point_status: PointStatus,
    /// Requests whose per-token ITL split was unknown (fell back to one sample per gap).
    pub itl_token_split_unknown: u64,
    /// Keep-alive connections found closed and re-dialled.
    pub redials: u64,
    /// Warnings for the user (usage missing, output-length mismatch, ISL mismatch, …).
    pub warnings: Vec<String>,
    /// Most requests in flight at once (from the records' [t0, end] intervals).
    pub peak_concurrency: u64,
    /// Table notes: conditions under which a shown number is misleading and must not pass
    /// silently — output tokens 0 under `--compat inferencex` because no usage-only chunk came
    /// (throughput 0.00), TPOT 0.00 because every token arrived in one read (TTFT = E2EL).
    /// Each is also in `warnings`; empty when none applies.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Violated validity rules, one line each (`fixed length violated: 2/4 short (min 5, want
    /// 128)`); non-empty → the point is [`PointStatus::Invalid`] (unless it failed). Set by
    /// [`PointMetrics::apply_validity`] (`crate::validity`); empty after [`compute`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_reasons: Vec<String>,
}

/// Splits one request's chunk gaps into per-token samples (B05): the gap before token event
/// j (j ≥ 1) carrying k tokens gives k samples of gap/k. `None` when k is unknown.
pub fn per_token_itl(r: &RequestRecord) -> Option<Vec<f64>> {
    let gaps = &r.itl_ms;
    match &r.tokens_per_chunk {
        Some(k) if k.len() == gaps.len() + 1 => {
            let mut out = Vec::with_capacity(r.output_tokens as usize);
            for (g, &kk) in gaps.iter().zip(&k[1..]) {
                let kk = kk.max(1);
                for _ in 0..kk {
                    out.push(f64::from(*g) / f64::from(kk));
                }
            }
            Some(out)
        }
        Some(_) => None,
        None if r.output_tokens == u64::from(r.token_events) => {
            Some(gaps.iter().map(|&g| f64::from(g)).collect())
        }
        None => None,
    }
}

/// Whether Ctrl-C cancelled the request ([`servebench_contracts::FailureKind::Cancelled`]):
/// such requests are left out of the point's counts.
fn is_cancelled(r: &RequestRecord) -> bool {
    r.is_cancelled()
}

/// Computes the point metrics from the measured-phase records (warmup records are ignored;
/// so are cancelled requests and context-overflow rejections, which are not the server's
/// failures to serve).
///
/// Phases: select the counted records ([`PointRecords::select`]), total the tokens, take the
/// duration ([`PointRecords::duration_s`]), pool the latency samples ([`LatencySamples`]),
/// then write the warnings and table notes ([`Diagnostics`]).
pub fn compute(records: &[RequestRecord], opts: &PointOptions) -> PointMetrics {
    let recs = PointRecords::select(records, opts);
    let ok = &recs.ok;
    let cancelled = records
        .iter()
        .filter(|r| r.phase == Phase::Measured && is_cancelled(r))
        .count() as u64;
    let total_input: u64 = ok.iter().map(|r| recs.prompt_tokens(r)).sum();
    let total_output: u64 = ok.iter().map(|r| r.output_tokens).sum();
    let duration_s = recs.duration_s();
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };
    let mut lat = LatencySamples::pool(&recs);
    let diag = Diagnostics::collect(&recs, total_output, &lat);
    let fix = |s: Stats| {
        if opts.compat == Compat::InferenceX {
            s.zero_if_empty()
        } else {
            s
        }
    };
    let mean = |sum: f64| {
        if ok.is_empty() {
            None
        } else {
            Some(sum / ok.len() as f64)
        }
    };
    let server_isl: Vec<u64> = ok.iter().filter_map(|r| r.prompt_tokens_server).collect();
    let total = recs.measured.len() as u64;

    PointMetrics {
        num_requests_total: total,
        completed: ok.len() as u64,
        failed: total - ok.len() as u64,
        failure_reasons: recs.failure_reasons(),
        cancelled,
        total_input_tokens: total_input,
        total_output_tokens: total_output,
        duration_s,
        request_throughput: per_s(ok.len() as f64),
        output_throughput: per_s(total_output as f64),
        total_token_throughput: per_s((total_input + total_output) as f64),
        input_throughput: per_s(total_input as f64),
        ttft: fix(Stats::of(&mut lat.ttft)),
        tpot: fix(Stats::of(&mut lat.tpot)),
        itl: fix(Stats::of(&mut lat.itl)),
        e2el: fix(Stats::of(&mut lat.e2el)),
        ttfo: Stats::of(&mut lat.ttfo),
        queue: Stats::of(&mut lat.queue),
        mean_isl: mean(total_input as f64),
        mean_isl_server: if server_isl.is_empty() {
            None
        } else {
            Some(server_isl.iter().sum::<u64>() as f64 / server_isl.len() as f64)
        },
        mean_osl: mean(total_output as f64),
        input_lens: recs
            .measured
            .iter()
            .map(|r| recs.prompt_tokens(r))
            .collect(),
        output_lens: recs
            .measured
            .iter()
            .map(|r| if r.success { r.output_tokens } else { 0 })
            .collect(),
        itl_mode: opts.itl_mode,
        compat: opts.compat,
        point_status: recs.point_status(),
        itl_token_split_unknown: lat.itl_token_split_unknown,
        redials: recs.measured.iter().map(|r| u64::from(r.redials)).sum(),
        warnings: diag.warnings,
        peak_concurrency: recs.peak_concurrency(),
        notes: diag.notes,
        invalid_reasons: Vec::new(),
    }
}

/// The records one point counts: the measured requests that count in a point (cancelled
/// requests and context-overflow rejections left out) in dataset order, and their
/// successful subset.
struct PointRecords<'a> {
    /// Measured, counted requests sorted by `(id, t0_ns)` (InferenceX `input_lens` /
    /// `output_lens` follow the request list).
    measured: Vec<&'a RequestRecord>,
    /// The successful requests of `measured`, same order (InferenceX `completed`).
    ok: Vec<&'a RequestRecord>,
    /// The computation's options.
    opts: &'a PointOptions,
}

impl<'a> PointRecords<'a> {
    /// Keeps the measured-phase records that count in a point, sorted into dataset order.
    fn select(records: &'a [RequestRecord], opts: &'a PointOptions) -> Self {
        let mut measured: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.phase == Phase::Measured)
            .filter(|r| r.counts_in_point())
            .collect();
        measured.sort_by_key(|r| (r.id, r.t0_ns));
        let ok = measured.iter().copied().filter(|r| r.success).collect();
        Self { measured, ok, opts }
    }

    /// A request's prompt tokens as [`PointOptions::prompt_count`] picks them (0 when neither
    /// count is known).
    fn prompt_tokens(&self, r: &RequestRecord) -> u64 {
        let client = r.prompt_tokens_client.map(u64::from);
        match self.opts.prompt_count {
            PromptCount::Client => client.or(r.prompt_tokens_server),
            PromptCount::Server => r.prompt_tokens_server.or(client),
        }
        .unwrap_or(0)
    }

    /// Failure category → count over the failed measured requests (`"unknown"` when a failed
    /// record names none).
    fn failure_reasons(&self) -> BTreeMap<String, u64> {
        let mut reasons = BTreeMap::new();
        for r in self.measured.iter().filter(|r| !r.success) {
            *reasons
                .entry(
                    r.failure
                        .as_ref()
                        .map_or_else(|| "unknown".to_string(), |f| f.as_str()),
                )
                .or_insert(0u64) += 1;
        }
        reasons
    }

    /// The point's duration, s. `--compat inferencex`: the driver's phase window (InferenceX
    /// `benchmark_duration`: `perf()` before the first request to after the last completion);
    /// servebench: first measured `t0` → last response end (0 with no requests).
    fn duration_s(&self) -> f64 {
        match self.opts.compat {
            Compat::InferenceX => {
                let (start, end) = self.opts.phase_window_ns;
                end.saturating_sub(start) as f64 / 1e9
            }
            Compat::Servebench => {
                let start = self.measured.iter().map(|r| r.t0_ns).min();
                let end = self.measured.iter().map(|r| r.end_ns).max();
                match (start, end) {
                    (Some(s), Some(e)) => e.saturating_sub(s) as f64 / 1e9,
                    _ => 0.0,
                }
            }
        }
    }

    /// `partial` when the run was cancelled; `failed` with no measured requests or a failed
    /// fraction above [`PointOptions::max_failed_fraction`]; else `ok`.
    fn point_status(&self) -> PointStatus {
        let total = self.measured.len() as u64;
        let failed = total - self.ok.len() as u64;
        if self.opts.cancelled {
            PointStatus::Interrupted
        } else if total == 0 || failed as f64 / total as f64 > self.opts.max_failed_fraction {
            PointStatus::Failed
        } else {
            PointStatus::Ok
        }
    }

    /// Most requests in flight at once, from the measured `[t0, end]` intervals (an end and
    /// a start at one instant: the end counts first).
    fn peak_concurrency(&self) -> u64 {
        let mut edges: Vec<(u64, i64)> = Vec::with_capacity(self.measured.len() * 2);
        for r in &self.measured {
            edges.push((r.t0_ns, 1));
            edges.push((r.end_ns, -1));
        }
        edges.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let (mut cur, mut peak) = (0i64, 0i64);
        for (_, d) in edges {
            cur += d;
            peak = peak.max(cur);
        }
        peak.max(0) as u64
    }

    /// Successful requests whose warnings include `w`.
    fn count_warning(&self, w: &str) -> usize {
        self.ok
            .iter()
            .filter(|r| r.warnings.iter().any(|x| x == w))
            .count()
    }

    /// Successful requests that carried no usage and whose output tokens came from `src`.
    fn usage_missing(&self, src: OutputSource) -> usize {
        self.ok
            .iter()
            .filter(|r| r.output_tokens_source == src)
            .filter(|r| r.warnings.iter().any(|x| x == "usage_missing"))
            .count()
    }
}

/// Latency samples pooled over a point's requests, ms (unsorted until [`Stats::of`]).
struct LatencySamples {
    /// TTFT of successful requests.
    ttft: Vec<f64>,
    /// E2EL of successful requests.
    e2el: Vec<f64>,
    /// Time to first content token of successful requests.
    ttfo: Vec<f64>,
    /// Client queue time of every measured request.
    queue: Vec<f64>,
    /// `(e2el − ttft) / (output_tokens − 1)` of successful requests with output_tokens > 1
    /// (InferenceX/vLLM `calculate_metrics`).
    tpot: Vec<f64>,
    /// Inter-token gaps pooled over successful requests per [`ItlMode`].
    itl: Vec<f64>,
    /// Requests under [`ItlMode::Token`] whose per-token split was unknown (their gaps count
    /// one sample each).
    itl_token_split_unknown: u64,
}

impl LatencySamples {
    /// Pools the samples of `recs`.
    fn pool(recs: &PointRecords<'_>) -> Self {
        let ok = &recs.ok;
        let ttft = ok.iter().filter_map(|r| r.ttft_ms).collect();
        let e2el = ok.iter().filter_map(|r| r.e2el_ms).collect();
        let ttfo = ok.iter().filter_map(|r| r.ttfo_ms).collect();
        let queue = recs.measured.iter().map(|r| r.queue_ms).collect();
        let tpot = ok
            .iter()
            .filter(|r| r.output_tokens > 1)
            .filter_map(|r| Some((r.e2el_ms? - r.ttft_ms?) / (r.output_tokens - 1) as f64))
            .collect();
        let mut unknown_split = 0u64;
        let mut itl: Vec<f64> = Vec::new();
        for r in ok {
            match recs.opts.itl_mode {
                ItlMode::Chunk => itl.extend(r.itl_ms.iter().map(|&g| f64::from(g))),
                ItlMode::Token => match per_token_itl(r) {
                    Some(v) => itl.extend(v),
                    None => {
                        unknown_split += 1;
                        itl.extend(r.itl_ms.iter().map(|&g| f64::from(g)));
                    }
                },
            }
        }
        Self {
            ttft,
            e2el,
            ttfo,
            queue,
            tpot,
            itl,
            itl_token_split_unknown: unknown_split,
        }
    }

    /// Every token arrived in one read: TTFT = E2EL for every successful request, so TPOT is
    /// 0.00 (a buffering proxy or server).
    fn one_read(&self, ok: &[&RequestRecord]) -> bool {
        !self.tpot.is_empty()
            && self.tpot.iter().all(|&t| t == 0.0)
            && ok
                .iter()
                .all(|r| r.ttft_ms.is_some() && r.ttft_ms == r.e2el_ms)
    }
}

/// A point's warnings for the user and its table notes (a note is also a warning).
struct Diagnostics {
    /// [`PointMetrics::warnings`].
    warnings: Vec<String>,
    /// [`PointMetrics::notes`].
    notes: Vec<String>,
}

impl Diagnostics {
    /// The warnings, in this order: usage missing (counted from chunks), InferenceX found no
    /// usage-only chunk (also a note), output-length mismatch, ISL mismatch, TPOT 0.00 from
    /// one read (also a note), unknown per-token ITL split.
    fn collect(recs: &PointRecords<'_>, total_output: u64, lat: &LatencySamples) -> Self {
        let mut d = Self {
            warnings: Vec::new(),
            notes: Vec::new(),
        };
        let n = recs.ok.len();
        let n_usage_missing = recs.usage_missing(OutputSource::Chunks);
        if n_usage_missing > 0 {
            d.warnings.push(format!(
                "{n_usage_missing} of {n} successful requests carried no usage: output tokens counted from token events (output_tokens_source = chunks)"
            ));
        }
        // InferenceX reads completion_tokens only from a usage-only chunk (no choices); a
        // server that puts usage on a chunk with choices (llama.cpp) gets 0 output tokens there.
        let n_uncounted = recs.usage_missing(OutputSource::None);
        if n_uncounted > 0 {
            d.note(format!(
                "{n_uncounted} of {n} successful requests: InferenceX counting found no usage-only chunk (usage absent, or on a chunk with choices), so output tokens are 0 as InferenceX would record (output_tokens_source = none); output throughput and TPOT are not measured here — use --compat servebench"
            ));
        }
        let n_mismatch = recs.count_warning("output_tokens_mismatch")
            + recs.count_warning("output_tokens_below_request")
            + recs.count_warning("output_tokens_exceed_cap");
        if n_mismatch > 0 {
            let n_ok = n as f64;
            let req_mean = recs
                .ok
                .iter()
                .map(|r| f64::from(r.requested_output_tokens))
                .sum::<f64>()
                / n_ok;
            d.warnings.push(format!(
                "output-length check: {n_mismatch} of {n} successful requests returned a different completion_tokens than requested (mean OSL {:.1} vs requested {:.1}); the server may ignore the output-cap field or stop at EOS",
                total_output as f64 / n_ok,
                req_mean
            ));
        }
        let n_isl = recs.count_warning("isl_mismatch");
        if n_isl > 0 {
            d.warnings.push(format!(
                "{n_isl} of {n} successful requests: usage.prompt_tokens differs from the client-side prompt count by more than 5 %"
            ));
        }
        if lat.one_read(&recs.ok) {
            d.note(format!(
                "TPOT is 0.00 because every token of all {n} successful requests arrived in one read (TTFT = E2EL): the server or a proxy buffers the stream, so TPOT and ITL are not measured"
            ));
        }
        let unknown_split = lat.itl_token_split_unknown;
        if recs.opts.itl_mode == ItlMode::Token && unknown_split > 0 {
            d.warnings.push(format!(
                "--itl per-token: {unknown_split} requests had no per-chunk token counts (no continuous usage); their gaps count as one sample each"
            ));
        }
        d
    }

    /// Adds `w` as a warning and a table note.
    fn note(&mut self, w: String) {
        self.warnings.push(w.clone());
        self.notes.push(w);
    }
}

impl PointMetrics {
    /// Converts a measurement taken against a time-compressed simulator (wall time = modelled
    /// time / speedup) back to modelled time: latencies and the duration × `factor`, rates ÷
    /// `factor`. Token counts and percent values are unchanged. `factor` = the simulator's
    /// speedup; 1.0 is a no-op.
    pub fn rescale_time(&mut self, factor: f64) {
        if !(factor.is_finite() && factor > 0.0) || factor == 1.0 {
            return;
        }
        for s in [
            &mut self.ttft,
            &mut self.tpot,
            &mut self.itl,
            &mut self.e2el,
            &mut self.ttfo,
            &mut self.queue,
        ] {
            for v in [
                &mut s.mean,
                &mut s.median,
                &mut s.std,
                &mut s.p90,
                &mut s.p99,
                &mut s.p999,
                &mut s.min,
                &mut s.max,
            ]
            .into_iter()
            .flatten()
            {
                *v *= factor;
            }
        }
        self.duration_s *= factor;
        self.request_throughput /= factor;
        self.output_throughput /= factor;
        self.total_token_throughput /= factor;
        self.input_throughput /= factor;
    }
}
