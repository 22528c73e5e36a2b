//! The endpoint layer against real sockets: readiness and model discovery send the API key
//! (a server that answers 401 without it), over plain http and over TLS (a local terminator
//! with a self-signed certificate made here, trusted through `--ca-cert`); the measuring
//! client streams through TLS on one kept-alive connection; an untrusted certificate and a
//! dead port are one-line errors naming the URL within the readiness bound; Ctrl-C's token
//! ends the wait early.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tls_proxy::{socket_of, TlsProxy};
use servebench_client::http::execute;
use servebench_client::mock::{event, Captured, MockServer, Reply};
use servebench_client::{Api, BodyBuilder, ClientCtx, Clock, Compat, Engine, Phase};
use servebench_endpoint::{
    discover_model, model_not_served_warning, CancelToken, Endpoint, EndpointError, Readiness,
    Target, TlsConfig,
};
use servebench_workload::{Prompt, RequestSpec};

const KEY: &str = "sk-endpoint-test";

fn json(status: u16, v: &str) -> Reply {
    Reply::Body {
        status,
        body: v.as_bytes().to_vec(),
        content_type: "application/json",
    }
}

/// A server that rejects every request without `Authorization: Bearer sk-endpoint-test`.
async fn keyed_server() -> MockServer {
    MockServer::start(
        Arc::new(|c: &Captured| {
            let authorised = c
                .headers
                .lines()
                .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {KEY}")));
            if !authorised {
                return json(401, r#"{"error":"missing API key"}"#);
            }
            match c.path.as_str() {
                "/health" => json(200, r#"{"status":"ok"}"#),
                "/v1/models" => json(200, r#"{"data":[{"id":"keyed-model"}]}"#),
                "/v1/chat/completions" => {
                    let tok = r#"{"choices":[{"index":0,"delta":{"content":"t"}}]}"#;
                    Reply::Stream {
                        status: 200,
                        steps: vec![
                            event(5, tok),
                            event(10, tok),
                            event(15, tok),
                            event(16, r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}"#),
                            event(17, "[DONE]"),
                        ],
                    }
                }
                _ => json(404, r#"{"error":"not found"}"#),
            }
        }),
        false,
    )
    .await
    .unwrap()
}

fn ready(s: f64) -> Readiness {
    Readiness::seconds(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_and_discovery_send_the_api_key_over_http() {
    let srv = keyed_server().await;
    let tls = TlsConfig::default();
    let with_key = Endpoint::new(&srv.base_url(), Some(KEY.into()), &tls).unwrap();
    ready(5.0)
        .wait(&with_key, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(discover_model(&with_key).await.unwrap(), "keyed-model");
    let probes: Vec<String> = srv.captured().iter().map(|c| c.path.clone()).collect();
    assert_eq!(probes, ["/health", "/v1/models"], "{probes:?}");
    assert_eq!(
        model_not_served_warning(&with_key, "keyed-model").await,
        None
    );
    assert_eq!(
        model_not_served_warning(&with_key, "other").await.unwrap(),
        format!(
            "warning: --model other is not among the models {}/v1/models serves (keyed-model): the server may reject the requests, or ignore the name and answer with its own model",
            srv.base_url()
        )
    );

    let without = Endpoint::new(&srv.base_url(), None, &tls).unwrap();
    let t = Instant::now();
    let e = ready(0.6)
        .wait(&without, &CancelToken::new())
        .await
        .unwrap_err();
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "bounded: {:?}",
        t.elapsed()
    );
    let msg = e.to_string();
    assert!(matches!(e, EndpointError::NotReady { .. }), "{msg}");
    assert!(
        msg.starts_with(&format!(
            "endpoint {} is not ready after 1 s",
            srv.base_url()
        )) && msg.ends_with("/v1/models answered HTTP 401"),
        "{msg}"
    );
    let e = discover_model(&without).await.unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}/v1/models answered HTTP 401; pass --model NAME",
            srv.base_url()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_through_a_tls_proxy_with_ca_cert_and_api_key() {
    let srv = keyed_server().await;
    let proxy = TlsProxy::start(socket_of(&srv.base_url())).await;
    let tls = TlsConfig::with_ca_cert(Some(proxy.ca_file.clone()));
    let ep = Endpoint::new(&format!("{}/v1/", proxy.url()), Some(KEY.into()), &tls).unwrap();
    assert!(ep.is_https());
    assert_eq!(ep.base_url(), proxy.url());
    let target = Target::remote(ep);
    target
        .wait_ready(&ready(5.0), &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(
        discover_model(target.endpoint()).await.unwrap(),
        "keyed-model"
    );
    assert!(proxy.handshakes() >= 2, "probes went through TLS");

    // the measuring client: three streamed requests on one kept-alive TLS connection
    let ep = target.endpoint();
    let ctx = ClientCtx {
        endpoint: ep.client().clone(),
        builder: BodyBuilder::new(
            "keyed-model",
            Api::Chat,
            Engine::Vllm,
            Compat::Servebench,
            false,
        ),
        compat: Compat::Servebench,
        new_connection_per_request: false,
        timeout: Duration::from_secs(20),
        clock: Clock::start(),
        capture_text: true,
        api_key: ep.api_key().map(str::to_string),
    };
    let before = proxy.handshakes();
    let mut slot = None;
    let mut cancel = CancelToken::new();
    for id in 0..3u64 {
        let spec = RequestSpec {
            id,
            session: None,
            prompt: Prompt::Text(Arc::from("hello")),
            prompt_tokens: Some(3),
            max_tokens: 3,
            delay: Duration::ZERO,
        };
        let r = execute(&ctx, &mut slot, &spec, Phase::Measured, 0, &mut cancel).await;
        assert!(r.success, "request {id}: {:?} {:?}", r.failure, r.error);
        assert_eq!(r.output_tokens, 3);
        assert_eq!(r.text.as_deref(), Some("ttt"));
        assert_eq!(r.itl_ms.len(), 2, "three chunks, two gaps");
        assert!(r.ttft_ms.unwrap() > 0.0);
        assert_eq!(r.redials, 0);
        if id == 0 {
            assert!(
                r.connect_ms.is_some(),
                "the first request dials (TCP + TLS)"
            );
        } else {
            assert!(r.connect_ms.is_none(), "request {id} reused the connection");
        }
    }
    assert_eq!(
        proxy.handshakes() - before,
        1,
        "one TLS session for three requests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_a_one_line_not_ready_error() {
    let srv = keyed_server().await;
    let proxy = TlsProxy::start(socket_of(&srv.base_url())).await;
    // Mozilla's roots only: the self-signed certificate is not trusted
    let ep = Endpoint::new(&proxy.url(), Some(KEY.into()), &TlsConfig::default()).unwrap();
    let e = ready(0.0)
        .wait(&ep, &CancelToken::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("endpoint {} is not ready", proxy.url())),
        "{e}"
    );
    assert!(e.contains("certificate"), "names the TLS problem: {e}");
    assert!(!e.contains('\n'), "{e}");
    assert_eq!(proxy.handshakes(), 0);
    assert!(srv.captured().is_empty(), "nothing reached the server");

    // plain http to the TLS port is not mistaken for a server either
    let plain = Endpoint::new(
        &proxy.url().replace("https://", "http://"),
        None,
        &TlsConfig::default(),
    )
    .unwrap();
    ready(0.0)
        .wait(&plain, &CancelToken::new())
        .await
        .unwrap_err();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_port_waits_at_most_the_timeout_and_cancel_ends_it_early() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let ep = Endpoint::new(&url, None, &TlsConfig::default()).unwrap();
    let t = Instant::now();
    let e = ready(1.0)
        .wait(&ep, &CancelToken::new())
        .await
        .unwrap_err()
        .to_string();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(
        e.starts_with(&format!("endpoint {url} is not ready after 1 s")),
        "{e}"
    );
    assert!(e.contains("cannot connect"), "{e}");

    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let t = Instant::now();
    ready(60.0).wait(&ep, &cancel).await.unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(cancel.is_cancelled());
}
