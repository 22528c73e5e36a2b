//! A local TLS terminator for tests: accepts `https://127.0.0.1:PORT` with a self-signed
//! certificate made here (rcgen, SAN `127.0.0.1` and `localhost`) and forwards the plain bytes
//! to an upstream `http` server (the simulator or a mock). The certificate's PEM is written to
//! a file for `--ca-cert`. Shared by the endpoint crate's tests and the servebench e2e tests
//! (`#[path]`-included there).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A running TLS proxy (stops when dropped).
pub struct TlsProxy {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The self-signed certificate (PEM) the proxy presents.
    pub cert_pem: String,
    /// A file holding `cert_pem` (pass it as `--ca-cert`).
    pub ca_file: PathBuf,
    /// TLS handshakes completed so far.
    pub handshakes: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl TlsProxy {
    /// Starts a proxy in front of `upstream` (`host:port` of a plain-http server).
    pub async fn start(upstream: SocketAddr) -> TlsProxy {
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("self-signed certificate");
        let cert_pem = ck.cert.pem();
        let cert: CertificateDer<'static> = ck.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handshakes = Arc::new(AtomicUsize::new(0));
        let count = handshakes.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let count = count.clone();
                tokio::spawn(async move {
                    let _ = tcp.set_nodelay(true);
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    count.fetch_add(1, Ordering::SeqCst);
                    let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = up.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("proxy-ca.pem");
        std::fs::write(&ca_file, &cert_pem).unwrap();
        TlsProxy {
            addr,
            cert_pem,
            ca_file,
            handshakes,
            _dir: dir,
            task,
        }
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.addr.port())
    }

    /// TLS handshakes completed so far.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `host:port` of an `http://host:port` URL.
pub fn socket_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("http://IP:PORT")
}
