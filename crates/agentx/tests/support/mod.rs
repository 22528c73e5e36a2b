//! Helpers shared by the AgentX replay tests against a scripted mock engine (`mod support;`).
#![allow(dead_code)]

use std::time::Duration;

use servebench_client::mock::{event, Reply, Step};
use servebench_client::{Api, BodyBuilder, ClientCtx, Clock, Compat, Endpoint, Engine};

/// A streaming chat client for the mock at `base_url` (keep-alive, `timeout` per request).
pub fn client(base_url: &str, timeout: Duration) -> ClientCtx {
    ClientCtx {
        endpoint: Endpoint::parse(base_url).unwrap(),
        builder: BodyBuilder::new("m", Api::Chat, Engine::Openai, Compat::Servebench, false),
        compat: Compat::Servebench,
        new_connection_per_request: false,
        timeout,
        clock: Clock::start(),
        capture_text: false,
        api_key: None,
    }
}

/// A 2-token stream: content at `first_ms` and `second_ms` after the request was read, then the
/// usage chunk (200 prompt / 2 completion tokens) and `[DONE]` 1 ms later.
pub fn two_token_reply(first_ms: u64, second_ms: u64) -> Reply {
    let chunk =
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}]}"#;
    let usage = r#"{"id":"c","choices":[],"usage":{"prompt_tokens":200,"completion_tokens":2,"total_tokens":202}}"#;
    Reply::Stream {
        status: 200,
        steps: vec![
            event(first_ms, chunk),
            event(second_ms, chunk),
            event(second_ms + 1, usage),
            Step {
                at_ms: second_ms + 1,
                bytes: b"data: [DONE]\n\n".to_vec(),
            },
        ],
    }
}
