//! Steady-state window (`--window steady`): the interval in which a closed loop actually holds
//! its target concurrency C, with ramp-up and drain excluded.
//!
//! Definitions (docs/measurement.md "Steady-state window"), on the measured records' `[t0, end]`
//! intervals (warmup and cancelled requests excluded):
//!
//! * **start** `ws` = the first instant at which C requests are in flight (at equal timestamps
//!   completions are applied before starts, so a lane refill never counts twice).
//! * **end** `we` = the first completion strictly after the last request start `L = max t0`: from
//!   then on a lane that finishes finds no work, so the drain has begun. (Before `L` every
//!   completion is followed by a refill of its lane.)
//! * A request is **inside** when `t0 ≥ ws` and `end ≤ we`; the others fell outside: in the
//!   ramp-up (`t0 < ws`) or in the drain (`t0 ≥ ws`, `end > we`).
//! * Latency statistics use the inside requests only. Throughput uses what happened inside the
//!   window: output tokens whose token event arrived in `[ws, we]` (an event carrying k tokens
//!   counts k, from per-chunk usage; without it `output_tokens` is spread evenly over the
//!   events), input tokens of requests whose first token arrived in `[ws, we]` (their prefill
//!   finished there), successful completions in `[ws, we]`; each ÷ `(we − ws)`. Successful
//!   requests only, as the point's throughput.
//! * Not defined when C is never reached (fewer requests than C, or requests too short to
//!   overlap) or for an open loop (`--request-rate`): the caller then keeps the full window and
//!   says why.

use serde::{Deserialize, Serialize};
use servebench_client::{Phase, RequestRecord};

use crate::point::{compute, PointMetrics, PointOptions};

/// Why there is no steady window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// In-flight requests never reached the target.
    #[error("target concurrency {target} was never held (peak {peak} in flight); steady window not defined")]
    NeverHeld {
        /// Target concurrency C.
        target: u64,
        /// Most requests in flight at once.
        peak: u64,
    },
    /// The target was reached only after the drain began.
    #[error(
        "target concurrency {target} was reached only after the drain began; steady window empty"
    )]
    Empty {
        /// Target concurrency C.
        target: u64,
    },
}

/// The steady window of one point. Times `*_ns` are on the run clock; `*_s` are seconds after
/// the first measured t0 (wall time: multiply by the simulator's speedup for modelled time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyWindow {
    /// Target concurrency C.
    pub target: u64,
    /// Window start `ws`, ns.
    pub start_ns: u64,
    /// Window end `we`, ns.
    pub end_ns: u64,
    /// `ws` − first measured t0, s.
    pub start_s: f64,
    /// `we` − first measured t0, s.
    pub end_s: f64,
    /// Requests inside the window.
    pub inside: u64,
    /// Requests started before `ws` (ramp-up).
    pub outside_rampup: u64,
    /// Requests started in the window that ended after `we` (drain).
    pub outside_drain: u64,
    /// Output tokens that arrived inside the window (fractional when spread evenly).
    pub output_tokens_in_window: f64,
    /// Input tokens of requests whose first token arrived inside the window.
    pub input_tokens_in_window: u64,
    /// Successful completions inside the window.
    pub completions_in_window: u64,
}

impl SteadyWindow {
    /// `we − ws`, s.
    pub fn duration_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }

    /// One line for the output: `steady window 1.20–9.80 s (8.60 s): 80 requests inside, 3 in
    /// ramp-up, 4 in drain excluded` (times × `time_scale`).
    pub fn describe(&self, time_scale: f64) -> String {
        format!(
            "steady window {:.2}–{:.2} s ({:.2} s) at concurrency {}: {} requests inside, {} in ramp-up and {} in drain excluded",
            self.start_s * time_scale,
            self.end_s * time_scale,
            self.duration_s() * time_scale,
            self.target,
            self.inside,
            self.outside_rampup,
            self.outside_drain
        )
    }
}

fn measured(records: &[RequestRecord]) -> Vec<&RequestRecord> {
    records
        .iter()
        .filter(|r| r.phase == Phase::Measured && r.counts_in_point())
        .collect()
}

/// Arrival times (ns) and token counts of one request's token events, reconstructed from
/// `t0 + ttft` and the ITL gaps. Counts from `tokens_per_chunk` when present, 1 each when
/// `output_tokens == token_events`, else `output_tokens / token_events` each.
pub fn token_arrivals(r: &RequestRecord) -> Vec<(u64, f64)> {
    let Some(ttft) = r.ttft_ms else {
        return Vec::new();
    };
    let n = r.itl_ms.len() + 1;
    let per = |i: usize| -> f64 {
        match &r.tokens_per_chunk {
            Some(k) if k.len() == n => f64::from(k[i]),
            _ if r.output_tokens == n as u64 => 1.0,
            _ => r.output_tokens as f64 / n as f64,
        }
    };
    let mut out = Vec::with_capacity(n);
    let mut t_ms = ttft;
    out.push((r.t0_ns + (t_ms * 1e6).round() as u64, per(0)));
    for (i, g) in r.itl_ms.iter().enumerate() {
        t_ms += f64::from(*g);
        out.push((r.t0_ns + (t_ms * 1e6).round() as u64, per(i + 1)));
    }
    out
}

/// The steady window of a closed loop at `target` concurrency (see the module docs).
pub fn steady_window(records: &[RequestRecord], target: u64) -> Result<SteadyWindow, WindowError> {
    let m = measured(records);
    let mut edges: Vec<(u64, i64)> = Vec::with_capacity(m.len() * 2);
    for r in &m {
        edges.push((r.t0_ns, 1));
        edges.push((r.end_ns, -1));
    }
    // completions before starts at the same instant
    edges.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut cur, mut peak) = (0i64, 0i64);
    let mut ws = None;
    for (t, d) in edges {
        cur += d;
        peak = peak.max(cur);
        if ws.is_none() && cur >= target as i64 {
            ws = Some(t);
        }
    }
    let Some(ws) = ws.filter(|_| target > 0) else {
        return Err(WindowError::NeverHeld {
            target,
            peak: peak.max(0) as u64,
        });
    };
    let last_start = m.iter().map(|r| r.t0_ns).max().unwrap_or(0);
    let we = m
        .iter()
        .map(|r| r.end_ns)
        .filter(|&e| e > last_start)
        .min()
        .unwrap_or(last_start);
    if we <= ws {
        return Err(WindowError::Empty { target });
    }
    let first_t0 = m.iter().map(|r| r.t0_ns).min().unwrap_or(0);
    let (mut inside, mut ramp, mut drain) = (0, 0, 0);
    let (mut out_tok, mut in_tok, mut done) = (0.0, 0u64, 0u64);
    for r in &m {
        if r.t0_ns < ws {
            ramp += 1;
        } else if r.end_ns > we {
            drain += 1;
        } else {
            inside += 1;
        }
        if !r.success {
            continue;
        }
        if (ws..=we).contains(&r.end_ns) {
            done += 1;
        }
        let arr = token_arrivals(r);
        if arr.first().is_some_and(|(t, _)| (ws..=we).contains(t)) {
            in_tok += r
                .prompt_tokens_client
                .map(u64::from)
                .or(r.prompt_tokens_server)
                .unwrap_or(0);
        }
        out_tok += arr
            .iter()
            .filter(|(t, _)| (ws..=we).contains(t))
            .map(|(_, k)| k)
            .sum::<f64>();
    }
    Ok(SteadyWindow {
        target,
        start_ns: ws,
        end_ns: we,
        start_s: ws.saturating_sub(first_t0) as f64 / 1e9,
        end_s: we.saturating_sub(first_t0) as f64 / 1e9,
        inside,
        outside_rampup: ramp,
        outside_drain: drain,
        output_tokens_in_window: out_tok,
        input_tokens_in_window: in_tok,
        completions_in_window: done,
    })
}

/// The records inside the window (measured phase, `t0 ≥ ws`, `end ≤ we`).
pub fn inside_records(records: &[RequestRecord], w: &SteadyWindow) -> Vec<RequestRecord> {
    measured(records)
        .into_iter()
        .filter(|r| r.t0_ns >= w.start_ns && r.end_ns <= w.end_ns)
        .cloned()
        .collect()
}

/// Point metrics over the steady window: latency statistics from the inside requests,
/// throughput from what happened inside `[ws, we]`, duration `we − ws`; request counts are
/// those of the inside requests. The status (5 % gate), peak concurrency, warnings and notes
/// stay those of the whole point, which `full` must be (computed with the same options over all
/// records). Times are wall time, like [`compute`]'s: rescale after.
pub fn steady_point(
    records: &[RequestRecord],
    opts: &PointOptions,
    full: &PointMetrics,
    target: u64,
) -> Result<(PointMetrics, SteadyWindow), WindowError> {
    let w = steady_window(records, target)?;
    let inside = inside_records(records, &w);
    let mut m = compute(&inside, opts);
    let d = w.duration_s();
    m.duration_s = d;
    m.request_throughput = w.completions_in_window as f64 / d;
    m.output_throughput = w.output_tokens_in_window / d;
    m.input_throughput = w.input_tokens_in_window as f64 / d;
    m.total_token_throughput = m.input_throughput + m.output_throughput;
    m.point_status = full.point_status;
    m.peak_concurrency = full.peak_concurrency;
    m.warnings = full.warnings.clone();
    m.notes = full.notes.clone();
    Ok((m, w))
}
