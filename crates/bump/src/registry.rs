//! OCI distribution API client: resolve a tag to its index digest, per-platform manifest
//! digests, and the image config (labels, creation time).
//!
//! Protocol (OCI distribution spec; Docker registry API v2):
//! 1. `HEAD /v2/<repo>/manifests/<tag>` with the index/manifest-list Accept types → digest
//!    (`Docker-Content-Digest`), media type.
//! 2. `GET /v2/<repo>/manifests/<digest>` → the index (or single manifest); its sha256 must
//!    equal the digest.
//! 3. For the selected platform (default `linux/amd64`): `GET` its manifest, then
//!    `GET /v2/<repo>/blobs/<config digest>` → `created`, `config.Labels` (digest verified).
//!
//! Auth: anonymous bearer tokens as registries do it. A `401` with
//! `WWW-Authenticate: Bearer realm="…",service="…",scope="…"` → `GET realm?service=&scope=` →
//! JSON `token` (or `access_token`) → the request is retried with `Authorization: Bearer`. A
//! second `401` is a bad token. Basic auth (credentials) is not supported.
//!
//! Built on reqwest (workspace HTTP client, rustls); `oci-client` was considered but it hides
//! the HEAD-then-GET sequence and the per-step errors this command has to report.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::reference::ImageRef;

/// OCI image index.
pub const MT_OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker manifest list.
pub const MT_DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// OCI image manifest.
pub const MT_OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker image manifest v2.
pub const MT_DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

const ACCEPT_ALL: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// How to talk to the registry.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Use `http://` (allowed only for loopback registries: 127.0.0.1, localhost, ::1).
    pub plain_http: bool,
    /// Platform whose manifest and config are read (`os/arch[/variant]`).
    pub platform: String,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            plain_http: false,
            platform: "linux/amd64".into(),
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// One platform manifest of an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformManifest {
    /// `os/arch[/variant]`, e.g. `linux/amd64`, `linux/arm64/v8`.
    pub platform: String,
    /// Manifest digest.
    pub digest: String,
    /// Manifest media type.
    pub media_type: String,
    /// Manifest size in bytes.
    pub size: u64,
}

/// What `image inspect` resolves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// The reference as given.
    pub reference: String,
    /// Fully-qualified reference.
    pub canonical: String,
    /// Registry API base URL (`https://registry-1.docker.io`).
    pub registry_url: String,
    /// Media type of what the tag points at.
    pub media_type: String,
    /// Digest the tag points at (the index digest for multi-platform images).
    pub digest: String,
    /// True when the tag points at an index / manifest list.
    pub is_index: bool,
    /// Per-platform manifests (attestation manifests excluded).
    pub platforms: Vec<PlatformManifest>,
    /// Attestation manifests in the index (`unknown/unknown`), not counted as platforms.
    pub attestations: usize,
    /// Platform whose config was read.
    pub platform: String,
    /// Manifest digest of that platform.
    pub platform_digest: String,
    /// Config blob digest.
    pub config_digest: String,
    /// Image creation time (config `created`, RFC 3339), if set.
    pub created: Option<String>,
    /// Image config labels (e.g. `ai.sglang.build.commit`).
    pub labels: BTreeMap<String, String>,
    /// `repo:tag@<digest>` in the written form.
    pub pinned: String,
    /// Enroot import URI pinned to the digest (§6.3).
    pub enroot_uri: String,
}

impl ImageInfo {
    /// The index digest when the tag points at an index.
    pub fn index_digest(&self) -> Option<&str> {
        self.is_index.then_some(self.digest.as_str())
    }
}

/// Registry failures, one clear line each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// Connection refused, DNS failure, TLS failure or timeout.
    Unreachable {
        /// The URL that could not be reached.
        url: String,
        /// Underlying error.
        detail: String,
    },
    /// 404 for the manifest (tag or repository unknown).
    NotFound {
        /// The reference.
        reference: String,
        /// The URL.
        url: String,
        /// Registry error code(s), e.g. `MANIFEST_UNKNOWN`.
        code: String,
    },
    /// The token endpoint failed or returned no token.
    TokenEndpoint {
        /// The token URL (realm).
        realm: String,
        /// What went wrong.
        detail: String,
    },
    /// The registry rejected the (anonymous) token, or needs credentials.
    Auth {
        /// The URL.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// Any other unexpected status or malformed response.
    Protocol {
        /// The URL.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// `--plain-http` asked for a non-loopback registry.
    PlainHttpRefused {
        /// The registry host.
        host: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Unreachable { url, detail } => write!(f, "registry unreachable: {url} ({detail})"),
            RegistryError::NotFound { reference, url, code } => {
                write!(f, "not found: `{reference}` does not exist at {url} (404 {code})")
            }
            RegistryError::TokenEndpoint { realm, detail } => write!(f, "token request failed: {realm}: {detail}"),
            RegistryError::Auth { url, detail } => write!(f, "authorization failed: {url}: {detail}"),
            RegistryError::Protocol { url, detail } => write!(f, "registry error: {url}: {detail}"),
            RegistryError::PlainHttpRefused { host } => write!(
                f,
                "--plain-http is only allowed for loopback registries (127.0.0.1, localhost, ::1), not `{host}`"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// `Bearer` or `Basic`.
    pub scheme: String,
    /// Parameters (`realm`, `service`, `scope`, `error`, …), keys lowercased.
    pub params: BTreeMap<String, String>,
}

/// Parses `Bearer realm="…",service="…",scope="repository:x:pull"` (quoted values may contain
/// commas).
pub fn parse_challenge(h: &str) -> Option<Challenge> {
    let h = h.trim();
    let (scheme, rest) = match h.split_once(' ') {
        Some((s, r)) => (s, r),
        None => (h, ""),
    };
    if scheme.is_empty() {
        return None;
    }
    let mut params = BTreeMap::new();
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b' ' || b[i] == b',') {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] != b'=' {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let key = rest[ks..i].trim().to_ascii_lowercase();
        i += 1;
        let val = if i < b.len() && b[i] == b'"' {
            i += 1;
            let mut v = String::new();
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                let ch = rest[i..].chars().next().unwrap_or('?');
                v.push(ch);
                i += ch.len_utf8();
            }
            i += 1;
            v
        } else {
            let vs = i;
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            rest[vs..i].trim().to_string()
        };
        params.insert(key, val);
    }
    Some(Challenge {
        scheme: scheme.to_string(),
        params,
    })
}

struct Client {
    http: reqwest::Client,
    base: String,
    repo: String,
    token: Option<String>,
}

fn short(s: &str) -> String {
    let s = s.trim().replace(['\n', '\r'], " ");
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

fn reqwest_detail(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    let d = parts.join(": ");
    if e.is_timeout() {
        format!("timed out: {d}")
    } else {
        d
    }
}

fn error_codes(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct E {
        code: Option<String>,
    }
    #[derive(Deserialize)]
    struct Es {
        errors: Vec<E>,
    }
    serde_json::from_slice::<Es>(body)
        .ok()
        .map(|e| {
            e.errors
                .into_iter()
                .filter_map(|x| x.code)
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "no error code".into())
}

impl Client {
    fn url(&self, kind: &str, reference: &str) -> String {
        format!("{}/v2/{}/{kind}/{reference}", self.base, self.repo)
    }

    async fn token_for(&mut self, ch: &Challenge, url: &str) -> Result<(), RegistryError> {
        let realm = ch
            .params
            .get("realm")
            .cloned()
            .ok_or_else(|| RegistryError::Auth {
                url: url.to_string(),
                detail: "401 with a Bearer challenge that has no realm".into(),
            })?;
        let mut q: Vec<(&str, String)> = Vec::new();
        if let Some(s) = ch.params.get("service") {
            q.push(("service", s.clone()));
        }
        q.push((
            "scope",
            ch.params
                .get("scope")
                .cloned()
                .unwrap_or_else(|| format!("repository:{}:pull", self.repo)),
        ));
        let resp = self.http.get(&realm).query(&q).send().await.map_err(|e| {
            RegistryError::TokenEndpoint {
                realm: realm.clone(),
                detail: format!("unreachable ({})", reqwest_detail(&e)),
            }
        })?;
        let status = resp.status();
        let body = resp.bytes().await.unwrap_or_default();
        if !status.is_success() {
            return Err(RegistryError::TokenEndpoint {
                realm,
                detail: format!(
                    "HTTP {} ({})",
                    status.as_u16(),
                    short(&String::from_utf8_lossy(&body))
                ),
            });
        }
        #[derive(Deserialize)]
        struct Tok {
            token: Option<String>,
            access_token: Option<String>,
        }
        let t: Tok = serde_json::from_slice(&body).map_err(|e| RegistryError::TokenEndpoint {
            realm: realm.clone(),
            detail: format!("response is not token JSON ({e})"),
        })?;
        match t.token.or(t.access_token).filter(|s| !s.is_empty()) {
            Some(tok) => {
                self.token = Some(tok);
                Ok(())
            }
            None => Err(RegistryError::TokenEndpoint {
                realm,
                detail: "response has no `token` field".into(),
            }),
        }
    }

    /// Sends a request, handling one bearer challenge. Returns status, headers, body.
    async fn send(
        &mut self,
        head: bool,
        url: &str,
        accept: &str,
    ) -> Result<(StatusCode, HeaderMap, Vec<u8>), RegistryError> {
        let mut tried_token = false;
        loop {
            let mut req = if head {
                self.http.head(url)
            } else {
                self.http.get(url)
            };
            req = req.header(ACCEPT, accept);
            if let Some(t) = &self.token {
                req = req.header(AUTHORIZATION, format!("Bearer {t}"));
            }
            let resp = req.send().await.map_err(|e| RegistryError::Unreachable {
                url: format!("{}/v2/", self.base),
                detail: reqwest_detail(&e),
            })?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = if head {
                Vec::new()
            } else {
                resp.bytes().await.map(|b| b.to_vec()).unwrap_or_default()
            };
            if status == StatusCode::UNAUTHORIZED {
                let ch = headers
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_challenge);
                match ch {
                    Some(ch) if ch.scheme.eq_ignore_ascii_case("bearer") => {
                        if tried_token || self.token.is_some() {
                            let why = ch.params.get("error").map(|e| format!(" ({e})")).unwrap_or_default();
                            return Err(RegistryError::Auth {
                                url: url.to_string(),
                                detail: format!("the registry rejected the bearer token from {}{why} (HTTP 401)", ch.params.get("realm").map(String::as_str).unwrap_or("?")),
                            });
                        }
                        self.token_for(&ch, url).await?;
                        tried_token = true;
                        continue;
                    }
                    Some(ch) => {
                        return Err(RegistryError::Auth {
                            url: url.to_string(),
                            detail: format!("the registry requires {} credentials; only anonymous access is supported", ch.scheme),
                        })
                    }
                    None => {
                        return Err(RegistryError::Auth { url: url.to_string(), detail: "HTTP 401 without a WWW-Authenticate challenge".into() })
                    }
                }
            }
            return Ok((status, headers, body));
        }
    }

    async fn get_verified(
        &mut self,
        kind: &str,
        digest: &str,
        accept: &str,
    ) -> Result<(Vec<u8>, String), RegistryError> {
        let url = self.url(kind, digest);
        let (status, headers, body) = self.send(false, &url, accept).await?;
        if status == StatusCode::NOT_FOUND {
            return Err(RegistryError::NotFound {
                reference: digest.to_string(),
                url,
                code: error_codes(&body),
            });
        }
        if !status.is_success() {
            return Err(RegistryError::Protocol {
                url,
                detail: format!("HTTP {} ({})", status.as_u16(), error_codes(&body)),
            });
        }
        let got = format!("sha256:{}", hex::encode(Sha256::digest(&body)));
        if digest.starts_with("sha256:") && got != digest {
            return Err(RegistryError::Protocol {
                url,
                detail: format!("content digest {got} does not match {digest}"),
            });
        }
        Ok((body, content_type(&headers)))
    }
}

#[derive(Deserialize)]
struct Platform {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: Option<String>,
    digest: String,
    #[serde(default)]
    size: u64,
    platform: Option<Platform>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyManifest {
    media_type: Option<String>,
    manifests: Option<Vec<Descriptor>>,
    config: Option<Descriptor>,
}

#[derive(Deserialize, Default)]
struct ImageConfig {
    created: Option<String>,
    #[serde(default)]
    config: Option<ConfigInner>,
    architecture: Option<String>,
    os: Option<String>,
    variant: Option<String>,
}

#[derive(Deserialize, Default)]
struct ConfigInner {
    #[serde(rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
}

fn platform_matches(p: &str, want: &str) -> bool {
    // `linux/arm64` matches `linux/arm64/v8`; an exact variant must match exactly.
    p == want || (want.matches('/').count() == 1 && p.starts_with(&format!("{want}/")))
}

/// The manifest a reference points at (protocol steps 1 and 2), its bytes verified.
struct TopManifest {
    /// The manifest URL by tag (or by the digest the reference pins).
    url: String,
    /// Its digest (`Docker-Content-Digest`, or the sha256 of the bytes).
    digest: String,
    /// The manifest bytes.
    body: Vec<u8>,
    /// Its media type (from the manifest, else the `Content-Type`).
    media_type: String,
    manifest: AnyManifest,
}

impl TopManifest {
    /// An OCI index or Docker manifest list (one manifest per platform).
    fn is_index(&self) -> bool {
        self.manifest.manifests.is_some()
            || self.media_type == MT_OCI_INDEX
            || self.media_type == MT_DOCKER_LIST
    }
}

/// The `Content-Type` of a response (empty when absent).
fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

impl Client {
    /// A client for the registry of `r` (`http://` only for a loopback registry with
    /// `--plain-http`).
    fn open(r: &ImageRef, opts: &RegistryOptions) -> Result<Client, RegistryError> {
        if opts.plain_http && !r.is_loopback() {
            return Err(RegistryError::PlainHttpRefused {
                host: r.registry.clone(),
            });
        }
        let scheme = if opts.plain_http { "http" } else { "https" };
        let http = reqwest::Client::builder()
            .timeout(opts.timeout)
            .connect_timeout(opts.connect_timeout)
            .user_agent(concat!("servebench/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RegistryError::Protocol {
                url: String::new(),
                detail: e.to_string(),
            })?;
        Ok(Client {
            http,
            base: format!("{scheme}://{}", r.api_host()),
            repo: r.repository.clone(),
            token: None,
        })
    }

    /// Steps 1 and 2: the digest the reference points at (`HEAD`), then that manifest (`GET`
    /// by digest, verified; by tag when the registry sent no digest), checked against a digest
    /// the reference pins.
    async fn top_manifest(
        &mut self,
        r: &ImageRef,
        opts: &RegistryOptions,
    ) -> Result<TopManifest, RegistryError> {
        let reference = r.reference().to_string();
        let url = self.url("manifests", &reference);
        let shown = format!("{}:{}", r.repository, reference).replace(":sha256:", "@sha256:");
        let hint_plain_http = r.is_loopback() && !opts.plain_http;
        let (body, ct, digest) = match self.head_digest(&url, shown, hint_plain_http).await? {
            Some(d) => {
                let (b, ct) = self.get_verified("manifests", &d, ACCEPT_ALL).await?;
                (b, ct, d)
            }
            None => self.get_by_tag(&url).await?,
        };
        if let Some(want) = &r.digest {
            if want != &digest {
                return Err(RegistryError::Protocol {
                    url,
                    detail: format!("registry returned {digest} for {want}"),
                });
            }
        }
        let manifest: AnyManifest =
            serde_json::from_slice(&body).map_err(|e| RegistryError::Protocol {
                url: url.clone(),
                detail: format!("manifest is not JSON ({e})"),
            })?;
        let media_type = manifest
            .media_type
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| ct.split(';').next().unwrap_or("").trim().to_string());
        Ok(TopManifest {
            url,
            digest,
            body,
            media_type,
            manifest,
        })
    }

    /// Step 1: `HEAD url` → `Docker-Content-Digest` (`None` when the registry sends none). A
    /// 404 is [`RegistryError::NotFound`] for `shown` with the registry's error code (one `GET`
    /// reads it: `HEAD` has no body). `hint_plain_http`: an unreachable loopback registry
    /// reached over https gets the `--plain-http` hint.
    async fn head_digest(
        &mut self,
        url: &str,
        shown: String,
        hint_plain_http: bool,
    ) -> Result<Option<String>, RegistryError> {
        let (status, headers, _) = self
            .send(true, url, ACCEPT_ALL)
            .await
            .map_err(|e| match e {
                RegistryError::Unreachable { url, detail } if hint_plain_http => {
                    RegistryError::Unreachable {
                        url,
                        detail: format!(
                            "{detail}; for a plain-HTTP loopback registry add --plain-http"
                        ),
                    }
                }
                e => e,
            })?;
        if status == StatusCode::NOT_FOUND {
            let (_, _, body) = self.send(false, url, ACCEPT_ALL).await?;
            return Err(RegistryError::NotFound {
                reference: shown,
                url: url.to_string(),
                code: error_codes(&body),
            });
        }
        if !status.is_success() {
            return Err(RegistryError::Protocol {
                url: url.to_string(),
                detail: format!("HEAD returned HTTP {}", status.as_u16()),
            });
        }
        Ok(headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string))
    }

    /// Step 2 without a digest from `HEAD`: `GET url` by tag → (bytes, content type, digest =
    /// sha256 of the bytes).
    async fn get_by_tag(&mut self, url: &str) -> Result<(Vec<u8>, String, String), RegistryError> {
        let (st, h, b) = self.send(false, url, ACCEPT_ALL).await?;
        if !st.is_success() {
            return Err(RegistryError::Protocol {
                url: url.to_string(),
                detail: format!("GET returned HTTP {}", st.as_u16()),
            });
        }
        let d = format!("sha256:{}", hex::encode(Sha256::digest(&b)));
        Ok((b, content_type(&h), d))
    }

    /// The config descriptor of the platform manifest `digest` (an index entry).
    async fn platform_config(&mut self, digest: &str) -> Result<Descriptor, RegistryError> {
        let (mb, _) = self.get_verified("manifests", digest, ACCEPT_ALL).await?;
        let pm: AnyManifest = serde_json::from_slice(&mb).map_err(|e| RegistryError::Protocol {
            url: self.url("manifests", digest),
            detail: format!("platform manifest is not JSON ({e})"),
        })?;
        pm.config.ok_or_else(|| RegistryError::Protocol {
            url: self.url("manifests", digest),
            detail: "platform manifest has no config".into(),
        })
    }
}

impl Descriptor {
    /// `os/arch[/variant]` of an index entry; `None` for an attestation manifest
    /// (`vnd.docker.reference.type = attestation-manifest`, or `unknown/unknown`).
    fn platform_name(&self) -> Option<String> {
        let p = self.platform.as_ref();
        let os = p
            .and_then(|p| p.os.clone())
            .unwrap_or_else(|| "unknown".into());
        let arch = p
            .and_then(|p| p.architecture.clone())
            .unwrap_or_else(|| "unknown".into());
        if self
            .annotations
            .get("vnd.docker.reference.type")
            .is_some_and(|t| t == "attestation-manifest")
            || (os == "unknown" && arch == "unknown")
        {
            return None;
        }
        let mut plat = format!("{os}/{arch}");
        if let Some(v) = p.and_then(|p| p.variant.clone()).filter(|v| !v.is_empty()) {
            plat.push('/');
            plat.push_str(&v);
        }
        Some(plat)
    }
}

/// The platform manifests of an index, and how many attestation manifests it holds besides.
fn index_platforms(manifests: Vec<Descriptor>) -> (Vec<PlatformManifest>, usize) {
    let mut platforms = Vec::new();
    let mut attestations = 0;
    for d in manifests {
        let Some(platform) = d.platform_name() else {
            attestations += 1;
            continue;
        };
        platforms.push(PlatformManifest {
            platform,
            digest: d.digest,
            media_type: d.media_type.unwrap_or_default(),
            size: d.size,
        });
    }
    (platforms, attestations)
}

/// The manifest of platform `want` ([`platform_matches`]); the error lists the index's
/// platforms (`url`: the index).
fn select_platform(
    platforms: &[PlatformManifest],
    want: &str,
    url: &str,
) -> Result<PlatformManifest, RegistryError> {
    platforms
        .iter()
        .find(|p| platform_matches(&p.platform, want))
        .cloned()
        .ok_or_else(|| RegistryError::Protocol {
            url: url.to_string(),
            detail: format!(
                "no {want} manifest in the index (platforms: {})",
                platforms
                    .iter()
                    .map(|p| p.platform.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

impl ImageConfig {
    /// `os/arch[/variant]` from the config (`unknown` for a missing field).
    fn platform(&self) -> String {
        let mut p = format!(
            "{}/{}",
            self.os.clone().unwrap_or_else(|| "unknown".into()),
            self.architecture
                .clone()
                .unwrap_or_else(|| "unknown".into())
        );
        if let Some(v) = &self.variant {
            p.push('/');
            p.push_str(v);
        }
        p
    }
}

/// Resolves a reference (see the module docs). Errors: [`RegistryError`], one line each.
pub async fn inspect(r: &ImageRef, opts: &RegistryOptions) -> Result<ImageInfo, RegistryError> {
    let mut c = Client::open(r, opts)?;
    let mut top = c.top_manifest(r, opts).await?;
    let is_index = top.is_index();
    let (mut platforms, attestations, selected, config_desc) = if is_index {
        let (platforms, attestations) =
            index_platforms(top.manifest.manifests.take().unwrap_or_default());
        let sel = select_platform(&platforms, &opts.platform, &top.url)?;
        let cfg = c.platform_config(&sel.digest).await?;
        (platforms, attestations, Some(sel), cfg)
    } else {
        let cfg = top
            .manifest
            .config
            .take()
            .ok_or_else(|| RegistryError::Protocol {
                url: top.url.clone(),
                detail: "manifest has no config".into(),
            })?;
        (Vec::new(), 0, None, cfg)
    };
    // 3. The config blob.
    let (cb, _) = c
        .get_verified("blobs", &config_desc.digest, "application/json, */*")
        .await?;
    let cfg: ImageConfig = serde_json::from_slice(&cb).unwrap_or_default();
    // A single manifest: its platform is the config's, listed as the one platform.
    let (platform, platform_digest) = match selected {
        Some(sel) => (sel.platform, sel.digest),
        None => {
            let p = cfg.platform();
            platforms.push(PlatformManifest {
                platform: p.clone(),
                digest: top.digest.clone(),
                media_type: top.media_type.clone(),
                size: top.body.len() as u64,
            });
            (p, top.digest.clone())
        }
    };
    let digest = top.digest;
    let pinned_ref = ImageRef {
        digest: Some(digest.clone()),
        ..r.clone()
    };
    Ok(ImageInfo {
        reference: r.original.clone(),
        canonical: r.canonical(),
        registry_url: c.base.clone(),
        media_type: top.media_type,
        digest: digest.clone(),
        is_index,
        platforms,
        attestations,
        platform,
        platform_digest,
        config_digest: config_desc.digest,
        created: cfg.created,
        labels: cfg.config.and_then(|c| c.labels).unwrap_or_default(),
        pinned: r.pinned(&digest),
        enroot_uri: pinned_ref.to_enroot_uri(),
    })
}

/// [`inspect`] on a private current-thread runtime (for synchronous callers; must not be called
/// from inside a tokio runtime).
pub fn inspect_blocking(r: &ImageRef, opts: &RegistryOptions) -> Result<ImageInfo, RegistryError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RegistryError::Protocol {
            url: String::new(),
            detail: format!("runtime: {e}"),
        })?;
    rt.block_on(inspect(r, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        let c = parse_challenge(r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:lmsysorg/sglang:pull,push""#).unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(c.params["realm"], "https://auth.docker.io/token");
        assert_eq!(c.params["service"], "registry.docker.io");
        assert_eq!(c.params["scope"], "repository:lmsysorg/sglang:pull,push");
        let c = parse_challenge(r#"Basic realm="Registry Realm""#).unwrap();
        assert_eq!(
            (c.scheme.as_str(), c.params["realm"].as_str()),
            ("Basic", "Registry Realm")
        );
        let c = parse_challenge(r#"Bearer realm=http://127.0.0.1:1/token, error="invalid_token""#)
            .unwrap();
        assert_eq!(c.params["realm"], "http://127.0.0.1:1/token");
        assert_eq!(c.params["error"], "invalid_token");
    }

    #[test]
    fn platform_matching() {
        assert!(platform_matches("linux/arm64/v8", "linux/arm64"));
        assert!(platform_matches("linux/amd64", "linux/amd64"));
        assert!(!platform_matches("linux/arm64/v8", "linux/arm64/v7"));
        assert!(!platform_matches("linux/amd64", "linux/arm64"));
    }

    #[test]
    fn plain_http_only_for_loopback() {
        let r = ImageRef::parse("lmsysorg/sglang:v1").unwrap();
        let e = inspect_blocking(
            &r,
            &RegistryOptions {
                plain_http: true,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "--plain-http is only allowed for loopback registries (127.0.0.1, localhost, ::1), not `docker.io`");
    }
}
