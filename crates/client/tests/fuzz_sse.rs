//! Fuzzing the SSE scanner and the stream accounting (issue 12, item 5): byte mutations of the
//! SSE streams of the measurement cases (`shared/cases/README.md`). Bounded run in CI
//! (`FUZZ_SECONDS`, default 2 s); the long run's figures are in docs/reliability.md.
//!
//! Invariants besides "no panic": the outcome does not depend on how the bytes are split into
//! reads (the scanner must give the same events for any delivery pattern), and a success has a
//! token and no failure category.

#[path = "../../triage/tests/fuzz_support/mutate.rs"]
mod mutate;

use servebench_client::{parse_stream, Api, Compat};

/// The `data:` lines of each example stream in the cases file, as SSE bodies.
fn seeds() -> Vec<Vec<u8>> {
    let shared = mutate::shared_dir(env!("CARGO_MANIFEST_DIR"));
    let p = shared.join("cases/README.md");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut seeds = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let l = line.trim_start();
        // `@214  data: {…}` (arrival-time prefixed) or a bare `data: …` line
        let l = match l.strip_prefix('@') {
            Some(r) => r
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start(),
            None => l,
        };
        if let Some(d) = l.strip_prefix("data: ") {
            cur.push_str("data: ");
            cur.push_str(d);
            cur.push_str("\n\n");
        } else if !cur.is_empty() {
            seeds.push(std::mem::take(&mut cur).into_bytes());
        }
        // inline examples: `… `data: {"error":…}` …`
        if let Some(i) = line.find("`data: {") {
            let rest = &line[i + 1..];
            if let Some(j) = rest.find('`') {
                seeds.push(format!("{}\n\n", &rest[..j]).into_bytes());
            }
        }
    }
    if !cur.is_empty() {
        seeds.push(cur.into_bytes());
    }
    // CRLF and comment variants of the first stream (servers differ).
    if let Some(first) = seeds.first().cloned() {
        let s = String::from_utf8(first).unwrap();
        seeds.push(s.replace('\n', "\r\n").into_bytes());
        seeds.push(format!(": ping\n\n{s}").into_bytes());
    }
    seeds
}

#[test]
fn fuzz_sse_scanner() {
    let dict: &[&[u8]] = &[
        b"data: ",
        b"data:",
        b"data: [DONE]\n\n",
        b"\n\n",
        b"\r\n\r\n",
        b": comment\n",
        b"event: error\n",
        b"id: 7\n",
        b"retry: 10\n",
        br#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
        br#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":99999999999,"total_tokens":2}}"#,
        br#"{"error":{"message":"boom","code":500}}"#,
        br#""reasoning_content":"#,
        br#""tool_calls":[{"index":0}]"#,
        br#""text":"#,
    ];
    let mut k = 0usize;
    mutate::fuzz("sse_scanner", &seeds(), dict, 256 * 1024, |input| {
        k = k.wrapping_add(1);
        let (api, compat) = match k % 4 {
            0 => (Api::Chat, Compat::Servebench),
            1 => (Api::Completions, Compat::Servebench),
            2 => (Api::Chat, Compat::InferenceX),
            _ => (Api::Completions, Compat::InferenceX),
        };
        let whole = parse_stream([(input, 0u64)], api, compat, true).outcome(0, None);
        // the same bytes in pieces of 1..=17 bytes
        let step = 1 + k % 17;
        let pieces = input.chunks(step).map(|c| (c, 0u64));
        let split = parse_stream(pieces, api, compat, true).outcome(0, None);
        assert_eq!(whole, split, "outcome depends on the read size {step}");
        if whole.success {
            assert!(whole.failure.is_none());
            assert!(whole.token_events > 0 || compat == Compat::InferenceX);
        } else {
            assert!(whole.failure.is_some());
        }
        format!("{:?}", whole.failure)
    });
}
