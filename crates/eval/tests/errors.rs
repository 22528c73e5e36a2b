//! [`EvalError`] from a real run: the variant a caller can match on and the exact line the
//! binary prints (through `anyhow`'s `{:#}`) for a refused option, an unwritable output folder,
//! an endpoint that is not ready, and a request refused by the server.

mod common;

use std::time::Duration;

use common::{start_mock, Fault, MockConfig};
use servebench_endpoint::{Endpoint, EndpointError, Target, TlsConfig};
use servebench_eval::{run_gsm8k, DocFailure, EvalError, EvalOptions, WriteOp};

fn target(url: &str) -> Target {
    Target::remote(Endpoint::new(url, None, &TlsConfig::default()).unwrap())
}

fn opts(out: &std::path::Path) -> EvalOptions {
    EvalOptions {
        model: Some("m".into()),
        out_dir: out.to_path_buf(),
        data_dir: Some(common::gsm8k_dir()),
        limit: Some(1),
        retry_backoff_min: Duration::from_millis(5),
        request_timeout: Duration::from_secs(20),
        ..Default::default()
    }
}

fn binary_text(e: EvalError) -> String {
    format!("{:#}", anyhow::Error::new(e))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn zero_concurrency_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.conc = 0;
    let e = run_gsm8k(&target("http://127.0.0.1:9"), o)
        .await
        .unwrap_err();
    assert!(matches!(e, EvalError::ZeroConcurrency));
    assert_eq!(binary_text(e), "--conc must be at least 1");
}

#[tokio::test]
async fn unwritable_output_folder_is_a_write_error_over_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("eval");
    let e = run_gsm8k(&target("http://127.0.0.1:9"), opts(&out))
        .await
        .unwrap_err();
    let EvalError::Write { op, path, source } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*op, WriteOp::CreateFolder);
    assert_eq!(path, &out);
    let os = source.to_string();
    let line = format!("cannot create output folder {}", out.display());
    assert_eq!(e.to_string(), line);
    assert_eq!(binary_text(e), format!("{line}: {os}"));
}

#[tokio::test]
async fn endpoint_errors_pass_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.ready_timeout = Some(Duration::from_millis(300));
    let port = free_port();
    let e = run_gsm8k(&target(&format!("http://127.0.0.1:{port}")), o)
        .await
        .unwrap_err();
    let EvalError::Endpoint(inner @ EndpointError::NotReady { .. }) = &e else {
        panic!("{e:?}")
    };
    let line = inner.to_string();
    assert!(
        line.starts_with(&format!("endpoint http://127.0.0.1:{port}")),
        "{line}"
    );
    assert_eq!(e.to_string(), line);
    assert_eq!(binary_text(e), line);
}

#[tokio::test]
async fn refused_request_is_a_doc_error_with_the_http_status() {
    let mock = start_mock(MockConfig {
        fault: Box::new(|_| Fault::Status(400)),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let e = run_gsm8k(&target(&mock.url()), opts(dir.path()))
        .await
        .unwrap_err();
    let EvalError::Doc {
        doc: 0,
        failure:
            DocFailure::Http {
                status: 400,
                url,
                body,
            },
        saved: 0,
        total: 1,
        samples_file,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(url, &format!("{}/v1/chat/completions", mock.url()));
    assert!(body.contains("injected 400"), "{body}");
    let line = format!(
        "doc 0: HTTP 400 from {url}: {body}; 0 of 1 samples are saved in {} — rerun with the same --out to resume",
        samples_file.display()
    );
    assert_eq!(samples_file, &dir.path().join("samples.jsonl"));
    assert_eq!(e.to_string(), line);
    assert_eq!(binary_text(e), line);
    mock.stop();
}
