//! Reasoning span, thinking time and time to first tool call over a point, by hand.

use crate::support;

use servebench_client::OutputPhases;
use servebench_metrics::reasoning::reasoning_stats;

fn phases(
    first_r: Option<f64>,
    last_r: Option<f64>,
    n_r: u32,
    tool: Option<f64>,
    n_t: u32,
    content: Option<f64>,
) -> OutputPhases {
    OutputPhases {
        first_reasoning_ms: first_r,
        last_reasoning_ms: last_r,
        reasoning_events: n_r,
        reasoning_tokens: None,
        first_content_ms: content,
        first_tool_call_ms: tool,
        tool_call_events: n_t,
    }
}

#[test]
fn spans_thinking_time_and_tool_calls() {
    // A: reasoning 40..70, content at 300 → span 30, thinking 260
    let mut a = support::ok(0, 0, 1000, 40.0, 330.0, 8);
    a.ttfo_ms = Some(300.0);
    a.phases = Some(phases(Some(40.0), Some(70.0), 3, None, 0, Some(300.0)));
    // B: reasoning 30..60, tool call at 400 → span 30, thinking 370, tool 400; 5 reasoning tokens
    let mut b = support::ok(1, 0, 1000, 30.0, 440.0, 9);
    b.ttfo_ms = Some(400.0);
    let mut pb = phases(Some(30.0), Some(60.0), 3, Some(400.0), 3, None);
    pb.reasoning_tokens = Some(5);
    b.phases = Some(pb);
    // C: reasoning only (cut by max_tokens) 50..90 → span 40, no TTFO
    let mut c = support::ok(2, 0, 1000, 50.0, 90.0, 3);
    c.ttfo_ms = None;
    c.phases = Some(phases(Some(50.0), Some(90.0), 3, None, 0, None));
    // D: plain request (no phases) and E: failed with phases — both ignored
    let d = support::ok(3, 0, 1000, 10.0, 20.0, 2);
    let mut e = support::failed(4, 0, 10, "stream_error_after_tokens");
    e.phases = Some(phases(Some(5.0), Some(9.0), 2, None, 0, None));

    let s = reasoning_stats(&[a, b, c, d, e], 1.0).unwrap();
    assert_eq!(
        (
            s.requests_with_reasoning,
            s.requests_with_tool_calls,
            s.reasoning_without_output
        ),
        (3, 1, 1)
    );
    assert_eq!(s.reasoning_span.n, 3);
    assert!(
        (s.reasoning_span.mean.unwrap() - 100.0 / 3.0).abs() < 1e-12,
        "(30+30+40)/3"
    );
    assert_eq!(s.reasoning_span.median, Some(30.0));
    assert_eq!((s.thinking_time.n, s.thinking_time.mean), (2, Some(315.0)));
    assert_eq!(
        (s.first_tool_call.n, s.first_tool_call.max),
        (1, Some(400.0))
    );
    assert_eq!(s.mean_reasoning_tokens, Some(5.0));
    // the simulator's speedup scales every latency
    let s2 = reasoning_stats(&[support::ok(0, 0, 1, 1.0, 2.0, 2)], 1.0);
    assert!(s2.is_none(), "no phases anywhere → no reasoning block");
}
