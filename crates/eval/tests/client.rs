//! The eval client against a mock chat-completions server: retries (5xx, dropped
//! connections), give-up and fatal statuses, timeouts, requests in flight, resume after a
//! crash, the reasoning_content fallback, and the answer book recognising every test prompt.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{start_mock, Fault, MockConfig};
use servebench_endpoint::{Endpoint, Target, TlsConfig};
use servebench_eval::sim_answers::{load_from, DEFAULT_MODEL};
use servebench_eval::{run_gsm8k, EvalOptions, Profile, SampleRecord};

fn target(url: &str) -> Target {
    Target::remote(Endpoint::new(url, None, &TlsConfig::default()).unwrap())
}

fn opts(out: &std::path::Path) -> EvalOptions {
    EvalOptions {
        model: Some("m".into()),
        out_dir: out.to_path_buf(),
        data_dir: Some(common::gsm8k_dir()),
        retry_backoff_min: Duration::from_millis(5),
        request_timeout: Duration::from_secs(20),
        ..Default::default()
    }
}

fn book() -> Arc<servebench_eval::sim_answers::Gsm8kAnswers> {
    Arc::new(load_from(DEFAULT_MODEL, Some(&common::gsm8k_dir())).unwrap())
}

fn read_samples(path: &std::path::Path) -> Vec<SampleRecord> {
    let mut v: Vec<SampleRecord> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    v.sort_by_key(|r| r.doc_id);
    v
}

#[tokio::test]
async fn retries_on_503_and_dropped_connections_then_succeeds() {
    let mock = start_mock(MockConfig {
        book: Some(book()),
        fault: Box::new(|i| match i {
            0 | 1 => Fault::Status(503),
            2 => Fault::Drop,
            _ => Fault::None,
        }),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(10);
    o.conc = 1;
    let r = run_gsm8k(&target(&mock.url()), o).await.unwrap();
    assert_eq!(r.row.n_eff, 10);
    let s = read_samples(&r.samples_file);
    assert_eq!(s.len(), 10);
    assert_eq!(s[0].attempts, 4, "doc 0: 503, 503, dropped, ok");
    assert!(s[1..].iter().all(|x| x.attempts == 1));
    assert_eq!(mock.bodies.lock().unwrap().len(), 13);
    // Retried bodies are identical to the first attempt.
    {
        let b = mock.bodies.lock().unwrap();
        assert_eq!(b[0], b[3]);
    }
    mock.stop();
}

#[tokio::test]
async fn gives_up_after_five_retries_and_keeps_finished_samples() {
    let mock = start_mock(MockConfig {
        book: Some(book()),
        fault: Box::new(|i| {
            if i >= 3 {
                Fault::Status(502)
            } else {
                Fault::None
            }
        }),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(10);
    o.conc = 1;
    let e = run_gsm8k(&target(&mock.url()), o)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("doc 3: HTTP 502 from http://"), "{e}");
    assert!(e.contains("gave up after 6 attempts"), "{e}");
    assert!(e.contains("3 of 10 samples are saved in"), "{e}");
    assert!(e.contains("rerun with the same --out to resume"), "{e}");
    assert_eq!(mock.bodies.lock().unwrap().len(), 3 + 6);
    assert_eq!(read_samples(&dir.path().join("samples.jsonl")).len(), 3);
    mock.stop();
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let mock = start_mock(MockConfig {
        fault: Box::new(|_| Fault::Status(400)),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(3);
    o.conc = 1;
    let e = run_gsm8k(&target(&mock.url()), o)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("doc 0: HTTP 400 from http://127.0.0.1:"),
        "{e}"
    );
    assert!(e.contains("injected 400"), "{e}");
    assert_eq!(mock.bodies.lock().unwrap().len(), 1);
    mock.stop();
}

#[tokio::test]
async fn unreachable_endpoint_is_a_connect_error_after_retries() {
    // Bind and drop to get a free port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(2);
    o.conc = 1;
    o.max_retries = 2;
    let e = run_gsm8k(&target(&format!("http://127.0.0.1:{port}")), o)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "doc 0: connection to http://127.0.0.1:{port}/v1/chat/completions failed"
        )),
        "{e}"
    );
    assert!(e.contains("gave up after 3 attempts"), "{e}");
}

#[tokio::test]
async fn per_request_timeout() {
    let mock = start_mock(MockConfig {
        delay: Duration::from_secs(3),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(1);
    o.request_timeout = Duration::from_millis(300);
    let t = std::time::Instant::now();
    let e = run_gsm8k(&target(&mock.url()), o)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("timed out after 0.3 s"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
    mock.stop();
}

#[tokio::test]
async fn conc_requests_in_flight_and_pool_sized_to_it() {
    let mock = start_mock(MockConfig {
        book: Some(book()),
        delay: Duration::from_millis(40),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(48);
    o.conc = 8;
    let r = run_gsm8k(&target(&mock.url()), o).await.unwrap();
    assert_eq!(r.row.n_eff, 48);
    assert_eq!(r.row.conc, 8);
    assert_eq!(mock.max_open.load(std::sync::atomic::Ordering::SeqCst), 8);
    let conns = mock.connections.load(std::sync::atomic::Ordering::SeqCst);
    // `--model m` is checked against GET /v1/models once, on a connection of its own
    let lists = mock.model_lists.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(lists, 1, "one model check");
    assert!(
        (1..=8).contains(&(conns - lists)),
        "pool connections {} (+ {lists} model check)",
        conns - lists
    );
    mock.stop();
}

#[tokio::test]
async fn resumes_after_a_crash_and_matches_a_fresh_run() {
    let b = book();
    // Run 1: the server starts failing (400, not retried) after 20 answers.
    let failing = start_mock(MockConfig {
        book: Some(b.clone()),
        fault: Box::new(|i| {
            if i >= 20 {
                Fault::Status(400)
            } else {
                Fault::None
            }
        }),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.limit = Some(40);
    o.conc = 1;
    run_gsm8k(&target(&failing.url()), o.clone())
        .await
        .unwrap_err();
    failing.stop();
    let samples = dir.path().join("samples.jsonl");
    assert_eq!(read_samples(&samples).len(), 20);
    // A torn last line, as a kill mid-write leaves it.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&samples)
            .unwrap();
        f.write_all(b"{\"doc_id\": 20, \"prof").unwrap();
    }

    // Run 2: healthy server, same --out: only the 20 missing docs are sent.
    let healthy = start_mock(MockConfig {
        book: Some(b.clone()),
        ..Default::default()
    })
    .await;
    o.conc = 4;
    let r = run_gsm8k(&target(&healthy.url()), o.clone()).await.unwrap();
    assert_eq!(r.resumed, 20);
    assert_eq!(r.requests_sent, 20);
    assert_eq!(healthy.bodies.lock().unwrap().len(), 20);
    assert_eq!(r.row.n_eff, 40);
    let resumed = read_samples(&samples);
    assert_eq!(resumed.len(), 40);
    assert_eq!(
        resumed.iter().map(|r| r.doc_id).collect::<Vec<_>>(),
        (0..40).collect::<Vec<_>>()
    );

    // A fresh run gives the same samples and scores.
    let dir2 = tempfile::tempdir().unwrap();
    let mut o2 = o.clone();
    o2.out_dir = dir2.path().to_path_buf();
    let f = run_gsm8k(&target(&healthy.url()), o2).await.unwrap();
    let fresh = read_samples(&f.samples_file);
    for (a, b) in resumed.iter().zip(&fresh) {
        assert_eq!(
            (a.doc_id, &a.messages, &a.text, &a.strict, &a.flexible),
            (b.doc_id, &b.messages, &b.text, &b.strict, &b.flexible)
        );
    }
    assert_eq!(
        (r.row.em_strict, r.row.em_flexible),
        (f.row.em_strict, f.row.em_flexible)
    );
    assert_eq!(
        (r.row.em_strict_se, r.row.em_flexible_se),
        (f.row.em_strict_se, f.row.em_flexible_se)
    );

    // A run with different settings (another max_tokens) does not reuse these samples.
    let mut o3 = o.clone();
    o3.max_tokens = Some(77);
    let r3 = run_gsm8k(&target(&healthy.url()), o3).await.unwrap();
    assert_eq!(r3.resumed, 0);
    assert_eq!(r3.requests_sent, 40);
    healthy.stop();
}

#[tokio::test]
async fn empty_content_falls_back_to_reasoning_content() {
    let b = book();
    let plain = start_mock(MockConfig {
        book: Some(b.clone()),
        ..Default::default()
    })
    .await;
    let reasoning = start_mock(MockConfig {
        book: Some(b.clone()),
        fault: Box::new(|_| Fault::Reasoning),
        ..Default::default()
    })
    .await;
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut o1 = opts(d1.path());
    o1.limit = Some(25);
    let mut o2 = opts(d2.path());
    o2.limit = Some(25);
    let r1 = run_gsm8k(&target(&plain.url()), o1).await.unwrap();
    let r2 = run_gsm8k(&target(&reasoning.url()), o2).await.unwrap();
    let s2 = read_samples(&r2.samples_file);
    assert!(s2
        .iter()
        .all(|s| s.text_source == "reasoning_content" && !s.text.is_empty()));
    assert!(read_samples(&r1.samples_file)
        .iter()
        .all(|s| s.text_source == "content"));
    assert_eq!(
        (r1.row.em_strict, r1.row.em_flexible),
        (r2.row.em_strict, r2.row.em_flexible)
    );
    plain.stop();
    reasoning.stop();
}

#[tokio::test]
async fn model_is_discovered_from_v1_models() {
    let mock = start_mock(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.model = None;
    o.limit = Some(2);
    let r = run_gsm8k(&target(&mock.url()), o).await.unwrap();
    assert_eq!(r.row.model, "mock-model");
    assert!(mock
        .bodies
        .lock()
        .unwrap()
        .iter()
        .all(|b| b["model"] == "mock-model"));
    // "I do not know." has no number: both filters give [invalid], score 0.
    assert_eq!((r.row.em_strict, r.row.em_flexible), (Some(0.0), Some(0.0)));
    mock.stop();
}

#[tokio::test]
async fn every_test_prompt_is_recognised_by_the_answer_book_in_both_profiles() {
    let b = book();
    for profile in [Profile::InferenceX, Profile::LmEval] {
        let mock = start_mock(MockConfig {
            book: Some(b.clone()),
            ..Default::default()
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path());
        o.profile = profile;
        o.conc = 64;
        let r = run_gsm8k(&target(&mock.url()), o).await.unwrap();
        assert_eq!(r.row.n_eff, 1319);
        let s = read_samples(&r.samples_file);
        assert!(
            s.iter().all(|x| x.text != "I do not know."),
            "{profile}: an unrecognised prompt"
        );
        // The replayed text is the recorded solution with `A: n` turned into `#### n`.
        let direct = servebench_eval::sim_answers::read_solutions(
            &common::gsm8k_dir().join("example_model_solutions.jsonl"),
            DEFAULT_MODEL,
        )
        .unwrap();
        for (rec, sol) in s.iter().zip(&direct) {
            assert_eq!(
                rec.text,
                servebench_eval::sim_answers::to_gsm8k_format(&sol.solution)
            );
        }
        let strict_ok = s.iter().filter(|x| x.strict.correct).count();
        assert_eq!(r.row.em_strict, Some(strict_ok as f64 / 1319.0));
        mock.stop();
    }
}
