//! Token events per second of the hot path: SSE framing + chunk scan + stream rules
//! ([`servebench_client::parse_stream`]), on realistic vLLM-shaped chat and completions chunks
//! delivered in 16 KiB network reads and, for the worst case, one event per read.
//!
//! `cargo bench -p servebench-client --bench sse_parse`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use servebench_client::{parse_stream, Api, Compat};

const EVENTS: usize = 4096;

fn chat_stream(n: usize) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(br#"data: {"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767225600,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#);
    s.extend_from_slice(b"\n\n");
    for i in 0..n {
        let fin = if i + 1 == n { r#""length""# } else { "null" };
        s.extend_from_slice(format!(r#"data: {{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767225600,"model":"Qwen/Qwen3-8B","choices":[{{"index":0,"delta":{{"content":" tok{i}"}},"logprobs":null,"finish_reason":{fin}}}]}}"#).as_bytes());
        s.extend_from_slice(b"\n\n");
    }
    s.extend_from_slice(format!(r#"data: {{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767225600,"model":"Qwen/Qwen3-8B","choices":[],"usage":{{"prompt_tokens":1000,"total_tokens":{},"completion_tokens":{n}}}}}"#, n + 1000).as_bytes());
    s.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    s
}

fn completions_stream(n: usize) -> Vec<u8> {
    let mut s = Vec::new();
    for i in 0..n {
        s.extend_from_slice(format!(r#"data: {{"id":"cmpl-8f2a","object":"text_completion","created":1767225600,"model":"Qwen/Qwen3-8B","choices":[{{"index":0,"text":" tok{i}","logprobs":null,"finish_reason":null,"stop_reason":null}}],"usage":null}}"#).as_bytes());
        s.extend_from_slice(b"\n\n");
    }
    s.extend_from_slice(format!(r#"data: {{"id":"cmpl-8f2a","object":"text_completion","created":1767225600,"model":"Qwen/Qwen3-8B","choices":[],"usage":{{"prompt_tokens":1000,"total_tokens":{},"completion_tokens":{n}}}}}"#, n + 1000).as_bytes());
    s.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_stream");
    g.throughput(Throughput::Elements(EVENTS as u64));
    for (name, api, bytes) in [
        ("chat_16k_reads", Api::Chat, chat_stream(EVENTS)),
        (
            "completions_16k_reads",
            Api::Completions,
            completions_stream(EVENTS),
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let reads = bytes
                    .chunks(16 * 1024)
                    .enumerate()
                    .map(|(i, r)| (r, i as u64));
                let st = parse_stream(reads, api, Compat::Servebench, false);
                assert_eq!(st.token_times.len(), EVENTS);
                black_box(st.usage_completion)
            })
        });
    }
    // one event per read: the framing worst case (every event crosses a read boundary)
    let bytes = chat_stream(EVENTS);
    let mut cuts = Vec::new();
    let mut start = 0;
    for (i, w) in bytes.windows(2).enumerate() {
        if w == b"\n\n" {
            cuts.push(&bytes[start..i + 2]);
            start = i + 2;
        }
    }
    g.bench_function("chat_event_per_read", |b| {
        b.iter(|| {
            let st = parse_stream(
                cuts.iter().enumerate().map(|(i, r)| (*r, i as u64)),
                Api::Chat,
                Compat::Servebench,
                false,
            );
            assert_eq!(st.token_times.len(), EVENTS);
            black_box(st.usage_completion)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
