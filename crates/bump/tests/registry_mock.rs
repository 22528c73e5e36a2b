//! The registry client against a small in-process mock registry with a token server (fault
//! injection: bad token, failing token endpoint, 404, unreachable). The real registry is tested
//! in crates/servebench/tests/registry_real.rs.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use servebench_bump::registry::{inspect_blocking, RegistryOptions, MT_OCI_INDEX, MT_OCI_MANIFEST};
use servebench_bump::{ImageRef, RegistryError};
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, PartialEq)]
enum Auth {
    None,
    Good,
    BadToken,
    TokenServer500,
}

struct Mock {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
    index_digest: String,
    amd64: String,
    arm64: String,
}

fn digest(b: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(b)))
}

fn respond(s: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    let _ = s.write_all(r.as_bytes());
    let _ = s.write_all(body);
}

fn start(auth: Auth) -> Mock {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = br#"{"architecture":"amd64","os":"linux","created":"2026-09-19T10:11:12Z","config":{"Labels":{"ai.sglang.build.commit":"0123abcd","sgl-kernel":"0.4.7"}},"rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let cfg_arm = br#"{"architecture":"arm64","os":"linux","config":{"Labels":{"ai.sglang.build.commit":"0123abcd"}},"rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let man = |c: &[u8]| {
        format!(r#"{{"schemaVersion":2,"mediaType":"{MT_OCI_MANIFEST}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[]}}"#, digest(c), c.len()).into_bytes()
    };
    let m_amd = man(&config);
    let m_arm = man(&cfg_arm);
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"{MT_OCI_INDEX}","manifests":[{{"mediaType":"{MT_OCI_MANIFEST}","digest":"{}","size":{},"platform":{{"architecture":"amd64","os":"linux"}}}},{{"mediaType":"{MT_OCI_MANIFEST}","digest":"{}","size":{},"platform":{{"architecture":"arm64","os":"linux","variant":"v8"}}}},{{"mediaType":"{MT_OCI_MANIFEST}","digest":"sha256:{}","size":1,"platform":{{"architecture":"unknown","os":"unknown"}},"annotations":{{"vnd.docker.reference.type":"attestation-manifest"}}}}]}}"#,
        digest(&m_amd), m_amd.len(), digest(&m_arm), m_arm.len(), "0".repeat(64)
    )
    .into_bytes();
    let mut objects: HashMap<String, (String, Vec<u8>)> = HashMap::new();
    let idx_d = digest(&index);
    objects.insert(
        "/v2/org/engine/manifests/v1".into(),
        (MT_OCI_INDEX.into(), index.clone()),
    );
    objects.insert(
        format!("/v2/org/engine/manifests/{idx_d}"),
        (MT_OCI_INDEX.into(), index.clone()),
    );
    objects.insert(
        format!("/v2/org/engine/manifests/{}", digest(&m_amd)),
        (MT_OCI_MANIFEST.into(), m_amd.clone()),
    );
    objects.insert(
        "/v2/org/engine/manifests/single".into(),
        (MT_OCI_MANIFEST.into(), m_amd.clone()),
    );
    objects.insert(
        format!("/v2/org/engine/manifests/{}", digest(&m_arm)),
        (MT_OCI_MANIFEST.into(), m_arm.clone()),
    );
    objects.insert(
        format!("/v2/org/engine/blobs/{}", digest(&config)),
        ("application/octet-stream".into(), config.clone()),
    );
    objects.insert(
        format!("/v2/org/engine/blobs/{}", digest(&cfg_arm)),
        ("application/octet-stream".into(), cfg_arm.clone()),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let mut headers = HashMap::new();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let target = parts.next().unwrap_or("").to_string();
            let authz = headers.get("authorization").cloned().unwrap_or_default();
            log2.lock()
                .unwrap()
                .push(format!("{method} {target} {authz}"));
            let head = method == "HEAD";
            if target.starts_with("/token") {
                match auth {
                    Auth::TokenServer500 => {
                        respond(&mut s, "500 Internal Server Error", &[], b"boom")
                    }
                    Auth::BadToken => respond(
                        &mut s,
                        "200 OK",
                        &[("Content-Type", "application/json".into())],
                        br#"{"token":"bad"}"#,
                    ),
                    _ => respond(
                        &mut s,
                        "200 OK",
                        &[("Content-Type", "application/json".into())],
                        br#"{"access_token":"good-token"}"#,
                    ),
                }
                continue;
            }
            if auth != Auth::None && authz != "Bearer good-token" {
                let mut ch = format!(
                    r#"Bearer realm="http://127.0.0.1:{port}/token",service="mock",scope="repository:org/engine:pull""#
                );
                if !authz.is_empty() {
                    ch.push_str(r#",error="invalid_token""#);
                }
                respond(
                    &mut s,
                    "401 Unauthorized",
                    &[("WWW-Authenticate", ch)],
                    br#"{"errors":[{"code":"UNAUTHORIZED"}]}"#,
                );
                continue;
            }
            match objects.get(&target) {
                Some((ct, body)) => {
                    let hs = [
                        ("Content-Type", ct.clone()),
                        ("Docker-Content-Digest", digest(body)),
                    ];
                    if head {
                        let mut rr = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n",
                            body.len()
                        );
                        for (k, v) in hs {
                            rr.push_str(&format!("{k}: {v}\r\n"));
                        }
                        rr.push_str("\r\n");
                        let _ = s.write_all(rr.as_bytes());
                    } else {
                        respond(&mut s, "200 OK", &hs, body);
                    }
                }
                None => {
                    let body =
                        br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#;
                    if head {
                        let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    } else {
                        respond(
                            &mut s,
                            "404 Not Found",
                            &[("Content-Type", "application/json".into())],
                            body,
                        );
                    }
                }
            }
        }
    });
    Mock {
        port,
        log,
        index_digest: idx_d,
        amd64: digest(&m_amd),
        arm64: digest(&m_arm),
    }
}

fn opts() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

#[test]
fn resolves_index_platforms_and_labels_with_anonymous_token() {
    let m = start(Auth::Good);
    let r = ImageRef::parse(&format!("127.0.0.1:{}/org/engine:v1", m.port)).unwrap();
    let info = inspect_blocking(&r, &opts()).unwrap();
    assert!(info.is_index);
    assert_eq!(info.index_digest(), Some(m.index_digest.as_str()));
    let plats: Vec<(&str, &str)> = info
        .platforms
        .iter()
        .map(|p| (p.platform.as_str(), p.digest.as_str()))
        .collect();
    assert_eq!(
        plats,
        vec![
            ("linux/amd64", m.amd64.as_str()),
            ("linux/arm64/v8", m.arm64.as_str())
        ]
    );
    assert_eq!(info.attestations, 1);
    assert_eq!(info.platform_digest, m.amd64);
    assert_eq!(
        info.labels
            .get("ai.sglang.build.commit")
            .map(String::as_str),
        Some("0123abcd")
    );
    assert_eq!(info.created.as_deref(), Some("2026-09-19T10:11:12Z"));
    assert_eq!(
        info.pinned,
        format!("127.0.0.1:{}/org/engine:v1@{}", m.port, m.index_digest)
    );
    assert_eq!(
        info.enroot_uri,
        format!(
            "docker://127.0.0.1:{}#org/engine:{}",
            m.port, m.index_digest
        )
    );
    // The first request was challenged, a token fetched with the scope, then reused.
    let log = m.log.lock().unwrap().clone();
    assert!(
        log[0].starts_with("HEAD /v2/org/engine/manifests/v1"),
        "{log:?}"
    );
    assert!(
        log[1].starts_with("GET /token?service=mock&scope=repository%3Aorg%2Fengine%3Apull"),
        "{log:?}"
    );
    assert!(log[2].ends_with("Bearer good-token"), "{log:?}");
    assert_eq!(
        log.iter().filter(|l| l.starts_with("GET /token")).count(),
        1,
        "{log:?}"
    );
    // Another platform.
    let info = inspect_blocking(
        &r,
        &RegistryOptions {
            platform: "linux/arm64".into(),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(info.platform, "linux/arm64/v8");
    assert_eq!(info.platform_digest, m.arm64);
}

#[test]
fn by_digest_and_without_auth() {
    let m = start(Auth::None);
    let r = ImageRef::parse(&format!(
        "127.0.0.1:{}/org/engine@{}",
        m.port, m.index_digest
    ))
    .unwrap();
    let info = inspect_blocking(&r, &opts()).unwrap();
    assert_eq!(info.digest, m.index_digest);
}

#[test]
fn bad_token_is_one_line() {
    let m = start(Auth::BadToken);
    let r = ImageRef::parse(&format!("127.0.0.1:{}/org/engine:v1", m.port)).unwrap();
    let e = inspect_blocking(&r, &opts()).unwrap_err();
    assert!(matches!(e, RegistryError::Auth { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!("authorization failed: http://127.0.0.1:{0}/v2/org/engine/manifests/v1: the registry rejected the bearer token from http://127.0.0.1:{0}/token (invalid_token) (HTTP 401)", m.port)
    );
}

#[test]
fn failing_token_endpoint_is_one_line() {
    let m = start(Auth::TokenServer500);
    let r = ImageRef::parse(&format!("127.0.0.1:{}/org/engine:v1", m.port)).unwrap();
    let e = inspect_blocking(&r, &opts()).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "token request failed: http://127.0.0.1:{}/token: HTTP 500 (boom)",
            m.port
        )
    );
}

#[test]
fn missing_tag_is_404_with_the_code() {
    let m = start(Auth::Good);
    let r = ImageRef::parse(&format!("127.0.0.1:{}/org/engine:v2", m.port)).unwrap();
    let e = inspect_blocking(&r, &opts()).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("not found: `org/engine:v2` does not exist at http://127.0.0.1:{}/v2/org/engine/manifests/v2 (404 MANIFEST_UNKNOWN)", m.port)
    );
}

#[test]
fn unreachable_registry_names_the_url() {
    // A port with nothing listening.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = ImageRef::parse(&format!("127.0.0.1:{port}/org/engine:v1")).unwrap();
    let e = inspect_blocking(&r, &opts()).unwrap_err();
    let s = e.to_string();
    assert!(
        s.starts_with(&format!(
            "registry unreachable: http://127.0.0.1:{port}/v2/ ("
        )),
        "{s}"
    );
    assert!(!s.contains('\n'));
    // Without --plain-http on a loopback registry, the hint says what to do.
    let e = inspect_blocking(&r, &RegistryOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("https://127.0.0.1:{port}/v2/")) && e.contains("--plain-http"),
        "{e}"
    );
}

#[test]
fn single_platform_manifest_has_no_index_digest() {
    let m = start(Auth::Good);
    let r = ImageRef::parse(&format!("127.0.0.1:{}/org/engine:single", m.port)).unwrap();
    let info = inspect_blocking(&r, &opts()).unwrap();
    assert!(!info.is_index);
    assert_eq!(info.index_digest(), None);
    assert_eq!(info.digest, m.amd64);
    assert_eq!(info.platform, "linux/amd64");
    assert_eq!(info.platforms.len(), 1);
    let p = servebench_bump::Provenance::from_info(&info);
    assert_eq!(p.index_digest, None);
    assert_eq!(p.amd64_digest(), Some(m.amd64.as_str()));
}

#[test]
fn a_platform_the_index_lacks_is_one_line_listing_its_platforms() {
    let m = start(Auth::Good);
    let r = ImageRef::parse(&format!("127.0.0.1:{}/org/engine:v1", m.port)).unwrap();
    let e = inspect_blocking(
        &r,
        &RegistryOptions {
            platform: "linux/s390x".into(),
            ..opts()
        },
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("registry error: http://127.0.0.1:{}/v2/org/engine/manifests/v1: no linux/s390x manifest in the index (platforms: linux/amd64, linux/arm64/v8)", m.port)
    );
    // The platform manifests and config blob were not fetched.
    let log = m.log.lock().unwrap().clone();
    assert!(
        !log.iter()
            .any(|l| l.contains(&m.amd64) || l.contains("/blobs/")),
        "{log:?}"
    );
}
