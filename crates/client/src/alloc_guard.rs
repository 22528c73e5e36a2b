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

/// A `servebench sim`-shaped streamed body (completions or chat, no per-chunk usage): `n`
/// one-token events (plain and non-ASCII tokens), the finish chunk, the usage chunk, `[DONE]`;
/// as events, each `data: …\n\n`.
fn sim_events(n: usize, chat: bool) -> Vec<Vec<u8>> {
    let toks = [" every", "é", "中", "😀", " a b", "x", " the", "1"];
    let o = if chat {
        "chat.completion.chunk"
    } else {
        "text_completion"
    };
    let head = format!("data: {{\"id\":\"cmpl-00f3a9c2b4e1d7a8\",\"object\":\"{o}\",\"created\":1796197963,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[");
    let mut events = Vec::with_capacity(n + 3);
    if chat {
        events.push(format!("{head}{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"));
    }
    for i in 0..n {
        let fin = if i + 1 == n { "\"length\"" } else { "null" };
        let t = toks[i % toks.len()];
        events.push(if chat {
            format!("{head}{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"logprobs\":null,\"finish_reason\":{fin}}}]}}\n\n")
        } else {
            format!("{head}{{\"index\":0,\"text\":\"{t}\",\"logprobs\":null,\"finish_reason\":{fin},\"stop_reason\":null}}]}}\n\n")
        });
    }
    events.push(format!(
        "{head}],\"usage\":{{\"prompt_tokens\":128,\"total_tokens\":{},\"completion_tokens\":{n}}}}}\n\n",
        128 + n
    ));
    events.push("data: [DONE]\n\n".into());
    events.into_iter().map(String::into_bytes).collect()
}

/// The template path (issue 21), counted: in a 1,024-token stream shaped as the simulator
/// sends it, every token chunk after the first (completions) or after the role chunk and the
/// first content chunk (chat) is answered from the stream's chunk template; the full byte-level
/// scan reads at most 3 chunks (first, the role chunk, the finish chunk) and serde only the usage
/// chunk. Allocations stay below one per 25 token events on this path too.
#[test]
fn template_answers_all_but_a_handful_of_chunks() {
    use crate::chunk::counts;
    use crate::{parse_stream, Api, Compat};
    const N: usize = 1024;
    for (chat, compat) in [
        (false, Compat::Servebench),
        (true, Compat::Servebench),
        (false, Compat::InferenceX),
        (true, Compat::InferenceX),
    ] {
        let events = sim_events(N, chat);
        let reads: Vec<Vec<u8>> = events.chunks(64).map(|c| c.concat()).collect();
        let feed = || reads.iter().map(|r| (r.as_slice(), 1_000u64));
        let api = if chat { Api::Chat } else { Api::Completions };
        let _ = parse_stream(feed(), api, compat, false);
        counts::take();
        let mut st = None;
        let allocs = allocation_counter::measure(|| {
            st = Some(parse_stream(feed(), api, compat, false));
        })
        .count_total;
        let [template, fast, serde] = counts::take();
        let st = st.unwrap();
        let want_events = if compat == Compat::InferenceX && chat {
            N + 1 // InferenceX counts the role chunk (non-empty choices)
        } else {
            N
        };
        assert_eq!(st.token_times.len(), want_events, "{api:?} {compat:?}");
        assert_eq!(st.usage_completion, Some(N as u64));
        assert_eq!(st.response_id.as_deref(), Some("cmpl-00f3a9c2b4e1d7a8"));
        eprintln!(
            "{api:?} {compat:?}: template {template}, full scan {fast}, serde {serde}, {allocs} allocations"
        );
        assert!(fast <= 3 && serde <= 1, "full scan {fast}, serde {serde}");
        assert_eq!(
            template + fast + serde,
            events.len() as u64 - 1,
            "every chunk but [DONE]"
        );
        // growth of up to three per-request vectors (~11 doublings each), the id, the framer's
        // buffer, the template's buffer: far fewer than one per 25 events (1,024 if per event)
        assert!((allocs as usize) < N / 25, "{allocs} allocations");
    }
}

/// The same count through the live client: a mock server sends the 1,024-token simulator-shaped
/// stream in writes of 64 events; the request goes through the driver, our HTTP/1.1 transport
/// and the stream rules (`execute_with` → `StreamState::on_item`), on this test's thread (the
/// current-thread runtime), where the per-thread counts are kept.
#[tokio::test]
async fn template_answers_the_live_path() {
    use crate::chunk::counts;
    use crate::mock::{Captured, MockServer, Reply, Step};
    use crate::{
        run_phase, Api, BodyBuilder, Cancel, ClientCtx, Clock, Compat, Endpoint, Engine, Load,
        Phase, RequestRecord,
    };
    use servebench_workload::{DatasetSource, Prompt, RequestSpec};
    use std::sync::Arc;
    use std::time::Duration;
    const N: usize = 1024;
    for chat in [false, true] {
        let events = sim_events(N, chat);
        let steps: Vec<Step> = events
            .chunks(64)
            .map(|c| Step {
                at_ms: 0,
                bytes: c.concat(),
            })
            .collect();
        let srv = MockServer::start(
            Arc::new(move |_: &Captured| Reply::Stream {
                status: 200,
                steps: steps.clone(),
            }),
            false,
        )
        .await
        .unwrap();
        let api = if chat { Api::Chat } else { Api::Completions };
        let ctx = ClientCtx {
            endpoint: Endpoint::parse(&srv.base_url()).unwrap(),
            builder: BodyBuilder::new("m", api, Engine::Vllm, Compat::Servebench, false),
            compat: Compat::Servebench,
            new_connection_per_request: false,
            timeout: Duration::from_secs(30),
            clock: Clock::start(),
            capture_text: false,
            api_key: None,
        };
        let specs = vec![RequestSpec {
            id: 0,
            session: None,
            prompt: Prompt::Text(Arc::from("hello world")),
            prompt_tokens: Some(2),
            max_tokens: N as u32,
            delay: Duration::ZERO,
        }];
        counts::take();
        let res = run_phase(
            ctx,
            Phase::Measured,
            Box::new(DatasetSource::new(specs)),
            Load::Closed { concurrency: 1 },
            Arc::new(|_: &RequestRecord| {}),
            Cancel::never(),
        )
        .await;
        let [template, fast, serde] = counts::take();
        let r = &res.records[0];
        assert!(r.success, "{:?}", r.error);
        assert_eq!(r.token_events, N as u32);
        eprintln!("live {api:?}: template {template}, full scan {fast}, serde {serde}");
        assert!(fast <= 3 && serde <= 1, "full scan {fast}, serde {serde}");
        assert!(template >= N as u64 - 2, "template {template}");
    }
}
