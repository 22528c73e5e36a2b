//! Hand-built request records for the metrics tests.

#![allow(dead_code)]

use servebench_client::{OutputSource, Phase, RequestRecord};

pub const MS: u64 = 1_000_000;

/// A successful measured request: `t0`/`end` in ms on the run clock, TTFT/E2EL in ms after t0,
/// `out` output tokens, 100 prompt tokens, ITL gaps evenly spread between TTFT and E2EL.
pub fn ok(id: u64, t0_ms: u64, end_ms: u64, ttft: f64, e2el: f64, out: u64) -> RequestRecord {
    let events = out.max(1) as usize;
    let gap = if events > 1 {
        (e2el - ttft) / (events - 1) as f64
    } else {
        0.0
    };
    RequestRecord {
        id,
        phase: Phase::Measured,
        session: None,
        response_id: None,
        scheduled_ns: t0_ms * MS,
        t0_ns: t0_ms * MS,
        end_ns: end_ms * MS,
        queue_ms: 0.0,
        connect_ms: None,
        redials: 0,
        ttft_ms: Some(ttft),
        ttfo_ms: Some(ttft),
        e2el_ms: Some(e2el),
        tpot_ms: (out > 1).then(|| (e2el - ttft) / (out - 1) as f64),
        itl_ms: vec![gap as f32; events - 1],
        tokens_per_chunk: None,
        token_events: events as u32,
        output_tokens: out,
        output_tokens_source: OutputSource::Usage,
        prompt_tokens_client: Some(100),
        prompt_tokens_server: Some(100),
        prompt_tokens_cached: None,
        requested_output_tokens: out as u32,
        http_status: Some(200),
        success: true,
        failure: None,
        error: None,
        warnings: vec![],
        phases: None,
        text: None,
    }
}

/// A failed measured request.
pub fn failed(id: u64, t0_ms: u64, end_ms: u64, why: &str) -> RequestRecord {
    let mut r = ok(id, t0_ms, end_ms, 0.0, 0.0, 0);
    r.success = false;
    r.failure = Some(why.into());
    r.ttft_ms = None;
    r.ttfo_ms = None;
    r.e2el_ms = None;
    r.tpot_ms = None;
    r.itl_ms.clear();
    r.token_events = 0;
    r.output_tokens = 0;
    r
}
