//! `records.jsonl` lines keep their bytes with the typed [`RequestRecord`]: lines written by
//! servebench before the record moved into contracts (failure as a plain string) read back and
//! write out identically, and every [`FailureKind`] is written as its old string.

use servebench_contracts::{FailureKind, OutputPhases, Phase, RequestRecord};

const LINES: &str = include_str!("data/records.jsonl");

#[test]
fn lines_written_before_the_typed_record_round_trip_byte_for_byte() {
    let mut n = 0;
    for (i, line) in LINES.lines().enumerate() {
        let r: RequestRecord = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("data/records.jsonl:{}: {e}", i + 1));
        assert_eq!(serde_json::to_string(&r).unwrap(), line, "line {}", i + 1);
        n += 1;
    }
    assert_eq!(n, 5);
    let failed: RequestRecord = serde_json::from_str(LINES.lines().nth(1).unwrap()).unwrap();
    assert_eq!(failed.failure, Some(FailureKind::Http(400)));
    assert!(!failed.is_cancelled());
    let warmup: RequestRecord = serde_json::from_str(LINES.lines().nth(4).unwrap()).unwrap();
    assert_eq!(warmup.phase, Phase::Warmup);
}

#[test]
fn every_failure_kind_is_written_as_its_string() {
    let base: RequestRecord = serde_json::from_str(LINES.lines().next().unwrap()).unwrap();
    let cases = [
        (FailureKind::NoToken, "no_token"),
        (
            FailureKind::StreamError(Some("400".into())),
            "stream_error:400",
        ),
        (FailureKind::StreamError(None), "stream_error"),
        (
            FailureKind::StreamErrorAfterTokens,
            "stream_error_after_tokens",
        ),
        (FailureKind::Http(503), "http_503"),
        (FailureKind::Timeout, "timeout"),
        (FailureKind::Connect, "connect"),
        (FailureKind::Disconnected, "disconnected"),
        (
            FailureKind::DisconnectedAfterTokens,
            "disconnected_after_tokens",
        ),
        (FailureKind::BadEvent, "bad_event"),
        (FailureKind::Cancelled, "cancelled"),
        (FailureKind::ContextOverflow, "context_overflow"),
        (FailureKind::Exception, "exception"),
        (
            FailureKind::Other("from_a_newer_writer".into()),
            "from_a_newer_writer",
        ),
    ];
    for (kind, text) in cases {
        let mut r = base.clone();
        r.success = false;
        r.failure = Some(kind.clone());
        let line = serde_json::to_string(&r).unwrap();
        let want = format!(",\"failure\":\"{text}\",");
        assert!(line.contains(&want), "{kind:?}: {line}");
        let back: RequestRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back.failure, Some(kind.clone()));
        assert_eq!(back.is_cancelled(), kind == FailureKind::Cancelled);
    }
}

#[test]
fn optional_keys_are_written_only_when_present_and_in_order() {
    let mut r: RequestRecord = serde_json::from_str(LINES.lines().next().unwrap()).unwrap();
    let plain = serde_json::to_string(&r).unwrap();
    for k in ["session", "tokens_per_chunk", "warnings", "phases", "text"] {
        assert!(!plain.contains(&format!("\"{k}\"")), "{k} in {plain}");
    }
    r.session = Some((3, 1));
    r.tokens_per_chunk = Some(vec![1, 2]);
    r.warnings = vec!["usage_missing".into()];
    r.phases = Some(OutputPhases {
        first_reasoning_ms: Some(1.5),
        last_reasoning_ms: Some(4.0),
        reasoning_events: 3,
        reasoning_tokens: None,
        first_content_ms: Some(5.0),
        first_tool_call_ms: None,
        tool_call_events: 0,
    });
    r.text = Some("hi".into());
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert_eq!(pos("session"), 2, "session right after phase");
    assert_eq!(pos("tokens_per_chunk"), pos("itl_ms") + 1);
    assert_eq!(&keys[keys.len() - 3..], ["warnings", "phases", "text"]);
    assert_eq!(v["session"], serde_json::json!([3, 1]));
    assert!(v["phases"].get("reasoning_tokens").is_none());
    assert_eq!(r.phases.as_ref().unwrap().reasoning_span_ms(), Some(2.5));
}
