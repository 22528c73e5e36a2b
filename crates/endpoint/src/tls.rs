//! [`TlsConfig`]: the TLS client settings of `https://` endpoints.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::EndpointError;

/// TLS client settings (`--ca-cert`). Trusted roots: Mozilla's root store compiled in
/// (`webpki-roots`, the same list reqwest uses), plus every certificate of `ca_cert` (a PEM
/// file: a private CA, or a self-signed server certificate). rustls with the `ring` provider,
/// TLS 1.2 and 1.3, ALPN `http/1.1` (the client speaks HTTP/1.1 only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// `--ca-cert FILE`: extra trusted certificates (PEM).
    pub ca_cert: Option<PathBuf>,
}

impl TlsConfig {
    /// Settings trusting also the certificates in `ca_cert`.
    pub fn with_ca_cert(ca_cert: Option<PathBuf>) -> Self {
        Self { ca_cert }
    }

    /// The `rustls` client configuration.
    ///
    /// # Errors
    /// [`EndpointError::CaCert`] when the file cannot be read, holds no PEM certificate, or a
    /// certificate in it is rejected (each naming the file).
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, EndpointError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &self.ca_cert {
            let bad = |reason: String| EndpointError::CaCert {
                path: path.clone(),
                reason,
            };
            let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
            let mut n = 0;
            for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
                let cert = cert.map_err(|e| bad(format!("certificate {}: {e}", i + 1)))?;
                roots
                    .add(cert)
                    .map_err(|e| bad(format!("certificate {} is not usable: {e}", i + 1)))?;
                n += 1;
            }
            if n == 0 {
                return Err(bad(
                    "no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)".into(),
                ));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| EndpointError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_cert_errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none.pem");
        let e = TlsConfig::with_ca_cert(Some(missing.clone()))
            .client_config()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("--ca-cert {}: cannot read it", missing.display())),
            "{e}"
        );
        let empty = d.path().join("empty.pem");
        std::fs::write(&empty, "hello\n").unwrap();
        let e = TlsConfig::with_ca_cert(Some(empty))
            .client_config()
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let junk = d.path().join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = TlsConfig::with_ca_cert(Some(junk))
            .client_config()
            .unwrap_err()
            .to_string();
        assert!(e.contains("certificate 1"), "{e}");
    }

    #[test]
    fn self_signed_certificate_is_added_to_the_roots() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("ca.pem");
        std::fs::write(&p, ck.cert.pem()).unwrap();
        let cfg = TlsConfig::with_ca_cert(Some(p)).client_config().unwrap();
        assert_eq!(cfg.alpn_protocols, vec![b"http/1.1".to_vec()]);
        // without the file the same config builds too (Mozilla roots only)
        TlsConfig::default().client_config().unwrap();
    }
}
