//! A counted regression guard for the client's per-chunk path (not a timed test; issue 21):
//! the number of heap allocations while a 4,096-event completions stream, delivered in reads
//! of 64 events (what `servebench sim --zero-delay` writes at once), goes through the SSE framer
//! and the stream rules ([`crate::parse_stream`], the code the live client runs per read).
//! Per event the path borrows the event's bytes and parses the chunk in place; the only
//! allocations are the growth of the per-request vectors (token times, tokens per chunk:
//! amortised doubling) and the first chunk's id. A change that allocates per event (a `String`
//! per line, an owned `serde_json::Value` per chunk, a `Vec` per read) shows up here as
//! thousands.
//!
//! Counted per thread by `allocation_counter::measure` (the test harness runs tests in
//! parallel), the counting allocator of the `allocation-counter` crate.

/// A vLLM-shaped streamed completions body: `n` one-token events, a usage event, `[DONE]`.
fn completions_body(n: usize) -> Vec<Vec<u8>> {
    let mut events = Vec::with_capacity(n + 2);
    for i in 0..n {
        events.push(format!("data: {{\"id\":\"cmpl-8f2a\",\"object\":\"text_completion\",\"created\":1767225600,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{{\"index\":0,\"text\":\" tok{i}\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}}],\"usage\":{{\"prompt_tokens\":128,\"total_tokens\":{},\"completion_tokens\":{}}}}}\n\n", 129 + i, i + 1).into_bytes());
    }
    events.push(format!("data: {{\"id\":\"cmpl-8f2a\",\"object\":\"text_completion\",\"created\":1767225600,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[],\"usage\":{{\"prompt_tokens\":128,\"total_tokens\":{},\"completion_tokens\":{n}}}}}\n\n", n + 128).into_bytes());
    events.push(b"data: [DONE]\n\n".to_vec());
    // reads of 64 events each
    events.chunks(64).map(|c| c.concat()).collect()
}

#[test]
fn per_chunk_path_allocates_less_than_once_per_50_token_events() {
    use crate::{parse_stream, Api, Compat};
    const N: usize = 4096;
    let reads = completions_body(N);
    let feed = || {
        reads
            .iter()
            .enumerate()
            .map(|(k, r)| (r.as_slice(), 1_000 + k as u64))
    };
    // warm up (lazy statics, thread-locals)
    let warm = parse_stream(feed(), Api::Completions, Compat::Servebench, false);
    assert_eq!(warm.token_times.len(), N);

    let mut st = None;
    let n = allocation_counter::measure(|| {
        st = Some(parse_stream(
            feed(),
            Api::Completions,
            Compat::Servebench,
            false,
        ));
    })
    .count_total;
    let st = st.unwrap();
    assert_eq!(st.token_times.len(), N, "every token event counted");
    assert_eq!(st.usage_completion, Some(N as u64));
    assert!(st.done);
    eprintln!("alloc_guard: {n} allocations for {N} token events");
    // amortised growth of the per-request vectors (~2 × log2(4096)) plus the id and the
    // framer's line buffer: 4,096 events must cost far fewer than 4,096 / 50 allocations
    assert!(
        (n as usize) < N / 50,
        "{n} allocations for {N} token events on the per-chunk path"
    );
}
