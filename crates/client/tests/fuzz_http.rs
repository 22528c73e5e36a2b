//! Fuzzing the HTTP/1.1 response head parser and body (chunked / length / EOF) decoder through
//! the client's public path (issue 12, item 5): a loopback server answers each request with a
//! mutated response, written in pieces; `execute` must return a record, never panic, never
//! hang. Seeds: well-formed answers (chunked, `content-length`, until-EOF, `503` JSON) built
//! around the SSE streams of `shared/cases/README.md`. Bounded run in CI (`FUZZ_SECONDS`,
//! default 2 s); the long run's figures are in docs/reliability.md.

#[path = "../../triage/tests/fuzz_support/mutate.rs"]
mod mutate;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use servebench_client::http::execute;
use servebench_client::{
    Api, BodyBuilder, Cancel, ClientCtx, Clock, Compat, Endpoint, Engine, Phase,
};
use servebench_workload::{Prompt, RequestSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KNOWN_FAILURES: &[&str] = &[
    "no_token",
    "stream_error_after_tokens",
    "disconnected",
    "disconnected_after_tokens",
    "bad_event",
    "timeout",
    "connect",
];

fn sse_seeds() -> Vec<String> {
    let shared = mutate::shared_dir(env!("CARGO_MANIFEST_DIR"));
    let p = shared.join("cases/README.md");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let l = line.trim_start();
        let l = match l.strip_prefix('@') {
            Some(r) => r
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start(),
            None => l,
        };
        if let Some(d) = l.strip_prefix("data: ") {
            cur.push_str(&format!("data: {d}\n\n"));
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for body in sse_seeds() {
        // chunked, one chunk per event
        let mut c = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
        for ev in body.split_inclusive("\n\n") {
            c.push_str(&format!("{:x};ext=1\r\n{ev}\r\n", ev.len()));
        }
        c.push_str("0\r\nx-trailer: 1\r\n\r\n");
        seeds.push(c.into_bytes());
        // content-length
        seeds.push(
            format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}", body.len())
                .into_bytes(),
        );
        // until EOF, HTTP/1.0, with an interim 100
        seeds.push(format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n{body}").into_bytes());
    }
    let e = r#"{"error":{"message":"Service Unavailable","code":503}}"#;
    seeds.push(format!("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{e}", e.len()).into_bytes());
    seeds
}

#[test]
fn fuzz_http_decoder() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let reply: Arc<Mutex<(Vec<u8>, usize)>> = Arc::new(Mutex::new((Vec::new(), 1)));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let r2 = reply.clone();
    rt.spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let r = r2.clone();
            tokio::spawn(async move {
                // read the request head and body (the client sends content-length)
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                loop {
                    let Ok(n) = s.read(&mut tmp).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..p]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if buf.len() >= p + 4 + len {
                            break;
                        }
                    }
                }
                let (bytes, step) = r.lock().unwrap().clone();
                for piece in bytes.chunks(step.max(1)) {
                    if s.write_all(piece).await.is_err() {
                        return;
                    }
                    let _ = s.flush().await;
                }
                let _ = s.shutdown().await;
            });
        }
    });
    let ctx = ClientCtx {
        endpoint: Endpoint::parse(&url).unwrap(),
        builder: BodyBuilder::new("m", Api::Chat, Engine::Vllm, Compat::Servebench, false),
        compat: Compat::Servebench,
        new_connection_per_request: true,
        timeout: Duration::from_secs(3),
        clock: Clock::start(),
        capture_text: false,
        api_key: None,
    };
    let spec = RequestSpec {
        id: 0,
        session: None,
        prompt: Prompt::Text(Arc::from("hi")),
        prompt_tokens: Some(3),
        max_tokens: 3,
        delay: Duration::ZERO,
    };
    let dict: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.0 ",
        b"transfer-encoding: chunked\r\n",
        b"transfer-encoding: gzip, chunked\r\n",
        b"content-length: 5\r\n",
        b"content-length: 99999999999999999999\r\n",
        b"connection: close\r\n",
        b"connection: keep-alive\r\n",
        b"\r\n\r\n",
        b"0\r\n\r\n",
        b"ffffffffffffffff\r\n",
        b";a=b",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n\r\n",
    ];
    let mut k = 0usize;
    mutate::fuzz("http_decoder", &seeds(), dict, 64 * 1024, |input| {
        k = k.wrapping_add(1);
        *reply.lock().unwrap() = (input.to_vec(), [1, 3, 7, 64, 4096][k % 5]);
        let rec = rt.block_on(async {
            let mut slot = None;
            tokio::time::timeout(
                Duration::from_secs(10),
                execute(
                    &ctx,
                    &mut slot,
                    &spec,
                    Phase::Measured,
                    0,
                    &mut Cancel::never(),
                ),
            )
            .await
            .expect("execute hung past its own timeout")
        });
        match rec.failure.as_ref().map(|f| f.as_str()).as_deref() {
            None => {
                assert!(rec.success);
                assert!(matches!(rec.http_status, Some(200..=299)), "{rec:?}");
                "ok".to_string()
            }
            Some(f) => {
                assert!(!rec.success);
                assert!(
                    KNOWN_FAILURES.contains(&f)
                        || f.starts_with("http_")
                        || f.starts_with("stream_error"),
                    "unknown failure category {f}"
                );
                assert!(
                    rec.error.as_deref().is_some_and(|e| !e.is_empty()),
                    "{rec:?}"
                );
                f.split(':').next().unwrap().to_string()
            }
        }
    });
}
