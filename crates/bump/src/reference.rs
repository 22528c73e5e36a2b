//! Container image references: the OCI/Docker grammar and the enroot form.
//!
//! Grammar (distribution/reference, the one Docker and registries use):
//! ```text
//! reference  := name [ ":" tag ] [ "@" digest ]
//! name       := [ domain "/" ] path
//! domain     := host [ ":" port ]            host = DNS name | IPv4 | "[" IPv6 "]"
//! path       := component ( "/" component )*
//! component  := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
//! tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//! digest     := algorithm ":" hex          sha256 → 64 lowercase hex, sha512 → 128
//! ```
//! The first path element is a registry host only when it contains `.` or `:` or is
//! `localhost` (Docker's rule); otherwise the registry is Docker Hub: `docker.io`, API host
//! `registry-1.docker.io`, and single-component names get `library/`.
//!
//! Enroot form (AUTOMATION.md §1.3, §6.3): `[docker://][user@]registry#repo[:tag]`, where the
//! tag may be a digest written `sha256:…` (enroot 3.x cannot parse `tag@digest`). Conversion to
//! enroot strips the tag when a digest is present, defaults the registry to
//! `registry-1.docker.io`, prefixes `library/` for single-segment Docker Hub names and never
//! re-splits a reference that is already in `registry#repo` form (the double-`#` bug, #3363).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Docker Hub's canonical registry name.
pub const DOCKER_HUB: &str = "docker.io";
/// Docker Hub's distribution API host.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// How the reference was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefForm {
    /// `[registry/]repo[:tag][@digest]`.
    Oci,
    /// `[docker://]registry#repo[:tag]`.
    Enroot,
}

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRef {
    /// The text as given.
    pub original: String,
    /// How it was written.
    pub form: RefForm,
    /// Registry as written (`nvcr.io`, `127.0.0.1:5000`), or `docker.io` when implicit.
    pub registry: String,
    /// True when the registry was written in the reference.
    pub registry_explicit: bool,
    /// Repository path, normalised (`library/` added for single-segment Docker Hub names).
    pub repository: String,
    /// Tag, if any.
    pub tag: Option<String>,
    /// Digest (`sha256:<64 hex>`), if any.
    pub digest: Option<String>,
}

/// A malformed reference: what was given and why it was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefError {
    /// The reference as given.
    pub reference: String,
    /// Why it is malformed.
    pub reason: String,
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid image reference `{}`: {}",
            // control characters escaped: the error stays one line (fuzzing found `\n`)
            self.reference.escape_debug(),
            self.reason
        )
    }
}

impl std::error::Error for RefError {}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Checks one path component: `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn check_component(c: &str) -> Result<(), String> {
    let b = c.as_bytes();
    if b.is_empty() {
        return Err("empty path component (`//` or a leading/trailing `/`)".into());
    }
    if b.iter().any(|x| x.is_ascii_uppercase()) {
        return Err(format!("repository path `{c}` must be lowercase"));
    }
    if !is_lower_alnum(b[0]) || !is_lower_alnum(b[b.len() - 1]) {
        return Err(format!(
            "path component `{c}` must start and end with a lowercase letter or digit"
        ));
    }
    let mut i = 0;
    while i < b.len() {
        if is_lower_alnum(b[i]) {
            i += 1;
            continue;
        }
        // separator run
        let start = i;
        while i < b.len() && !is_lower_alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
        if !ok {
            return Err(format!(
                "path component `{c}` has an invalid separator `{sep}`"
            ));
        }
    }
    Ok(())
}

fn check_tag(t: &str) -> Result<(), String> {
    let b = t.as_bytes();
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    if b.is_empty() {
        return Err("empty tag after `:`".into());
    }
    if b.len() > 128 {
        return Err(format!("tag is {} characters (at most 128)", b.len()));
    }
    if !word(b[0]) {
        return Err(format!("tag `{t}` must start with a letter, digit or `_`"));
    }
    if let Some(bad) = b.iter().find(|&&x| !(word(x) || x == b'.' || x == b'-')) {
        return Err(format!(
            "tag `{t}` contains `{}` (allowed: letters, digits, `_`, `.`, `-`)",
            *bad as char
        ));
    }
    Ok(())
}

/// Validates a digest `algorithm:hex`; returns it unchanged.
pub fn check_digest(d: &str) -> Result<(), String> {
    let Some((alg, hex)) = d.split_once(':') else {
        return Err(format!("digest `{d}` has no `algorithm:` prefix"));
    };
    let alg_ok = !alg.is_empty()
        && alg.split(['+', '.', '-', '_']).all(|p| {
            let b = p.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphabetic()
                && b.iter().all(|x| x.is_ascii_alphanumeric())
        });
    if !alg_ok {
        return Err(format!("digest algorithm `{alg}` is invalid"));
    }
    let want = match alg {
        "sha256" => Some(64),
        "sha512" => Some(128),
        _ => None,
    };
    let hex_ok = |h: &str| {
        h.bytes()
            .all(|x| x.is_ascii_digit() || (b'a'..=b'f').contains(&x))
    };
    match want {
        Some(n) if hex.len() != n || !hex_ok(hex) => Err(format!(
            "{alg} digest needs {n} lowercase hex digits, got `{hex}` ({} characters)",
            hex.len()
        )),
        None if hex.len() < 32 || !hex.bytes().all(|x| x.is_ascii_hexdigit()) => {
            Err(format!("digest `{d}` needs at least 32 hex digits"))
        }
        _ => Ok(()),
    }
}

fn check_host(h: &str) -> Result<(), String> {
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err(format!("registry `{h}`: unterminated IPv6 address"));
        };
        let ip = &rest[..end];
        if ip.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("registry `{h}`: `{ip}` is not an IPv6 address"));
        }
        let after = &rest[end + 1..];
        (
            None,
            if after.is_empty() {
                None
            } else {
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| format!("registry `{h}`: junk after `]`"))?,
                )
            },
        )
    } else {
        match h.rsplit_once(':') {
            Some((a, p)) => (Some(a), Some(p)),
            None => (Some(h), None),
        }
    };
    if let Some(host) = host {
        if host.is_empty() {
            return Err(format!("registry `{h}` has no host"));
        }
        for label in host.split('.') {
            let b = label.as_bytes();
            let ok = !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-');
            if !ok {
                return Err(format!("registry host `{host}` is not a valid host name"));
            }
        }
    }
    if let Some(p) = port {
        if p.is_empty()
            || !p.bytes().all(|x| x.is_ascii_digit())
            || p.parse::<u32>().map_or(true, |v| v > 65535)
        {
            return Err(format!(
                "registry `{h}`: port `{p}` is not a number in 0..65535"
            ));
        }
    }
    Ok(())
}

fn looks_like_host(first: &str) -> bool {
    first.contains('.') || first.contains(':') || first == "localhost" || first.starts_with('[')
}

impl ImageRef {
    /// Parses an OCI/Docker reference or an enroot reference (`[docker://]registry#repo[:tag]`).
    ///
    /// Errors: one [`RefError`] naming the reference and the first problem found (empty,
    /// whitespace, uppercase repository, bad tag/digest/host/port, two `#`, `tag@digest` in the
    /// enroot form, over-long name).
    pub fn parse(s: &str) -> Result<ImageRef, RefError> {
        let err = |reason: String| RefError {
            reference: s.to_string(),
            reason,
        };
        if s.is_empty() {
            return Err(err("empty reference".into()));
        }
        if s.chars().any(|c| c.is_whitespace()) {
            return Err(err("contains whitespace".into()));
        }
        let body = s.strip_prefix("docker://");
        if body.is_some() || s.contains('#') {
            return Self::parse_enroot(s, body.unwrap_or(s)).map_err(err);
        }
        Self::parse_oci(s).map_err(err)
    }

    fn parse_oci(s: &str) -> Result<ImageRef, String> {
        let (name_tag, digest) = match s.split_once('@') {
            Some((a, d)) => {
                check_digest(d)?;
                (a, Some(d.to_string()))
            }
            None => (s, None),
        };
        // The tag is after the last ':' that follows the last '/'.
        let last_slash = name_tag.rfind('/').map(|i| i + 1).unwrap_or(0);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => {
                let t = &name_tag[last_slash + i + 1..];
                check_tag(t)?;
                (&name_tag[..last_slash + i], Some(t.to_string()))
            }
            None => (name_tag, None),
        };
        if name.is_empty() {
            return Err("no repository name".into());
        }
        if name.len() > 255 {
            return Err(format!(
                "repository name is {} characters (at most 255)",
                name.len()
            ));
        }
        let (registry, explicit, path) = match name.split_once('/') {
            Some((first, rest)) if looks_like_host(first) => {
                check_host(first)?;
                (first.to_string(), true, rest)
            }
            _ => (DOCKER_HUB.to_string(), false, name),
        };
        if path.bytes().any(|x| x.is_ascii_uppercase()) {
            return Err(format!("repository name `{path}` must be lowercase"));
        }
        for c in path.split('/') {
            check_component(c)?;
        }
        // Docker Hub's API host names Docker Hub too, as in the enroot form (fuzzing found
        // `registry-1.docker.io/x` and its own enroot URI naming different registries)
        let registry = if registry == "index.docker.io" || registry == DOCKER_HUB_API {
            DOCKER_HUB.to_string()
        } else {
            registry
        };
        let repository = if registry == DOCKER_HUB && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_string()
        };
        Ok(ImageRef {
            original: s.to_string(),
            form: RefForm::Oci,
            registry,
            registry_explicit: explicit,
            repository,
            tag,
            digest,
        })
    }

    fn parse_enroot(orig: &str, body: &str) -> Result<ImageRef, String> {
        if body.matches('#').count() > 1 {
            return Err(
                "two `#` separators (an enroot reference has at most one `registry#`)".into(),
            );
        }
        // Optional user@ before the registry.
        let body = match (body.find('@'), body.find('#')) {
            (Some(at), Some(hash)) if at < hash => &body[at + 1..],
            _ => body,
        };
        if body.contains('@') {
            return Err(
                "enroot cannot parse `tag@digest`; write `registry#repo:sha256:<hex>`".into(),
            );
        }
        let (registry, explicit, rest) = match body.split_once('#') {
            Some((r, rest)) => {
                if r.is_empty() {
                    return Err("empty registry before `#`".into());
                }
                check_host(r)?;
                // without a `.`, a `:port` or `localhost` the OCI form (and `canonical`) would
                // read the name as a Docker Hub namespace (fuzzing found `docker://sha256#x`)
                if !looks_like_host(r) {
                    return Err(format!(
                        "registry `{r}` before `#` is not a host name (needs a `.`, a `:port` or `localhost`)"
                    ));
                }
                (r.to_string(), true, rest)
            }
            None => (DOCKER_HUB.to_string(), false, body),
        };
        // repo[:tag] where tag may be a digest `algorithm:<hex>` (any digest the OCI form
        // accepts, so that `to_enroot_uri` always parses back; fuzzing found `sha512`/other
        // algorithms refused here).
        let (path, tag, digest) = match rest.split_once(':') {
            None => (rest, None, None),
            Some((p, t)) => {
                if t.contains(':') {
                    check_digest(t)?;
                    (p, None, Some(t.to_string()))
                } else {
                    check_tag(t)?;
                    (p, Some(t.to_string()), None)
                }
            }
        };
        if path.is_empty() {
            return Err("no repository name".into());
        }
        if path.contains('.') && path.split('/').next().is_some_and(looks_like_host) && !explicit {
            return Err(format!(
                "`{path}` starts with a registry host; write `host#repo`"
            ));
        }
        for c in path.split('/') {
            check_component(c)?;
        }
        let registry = if registry == DOCKER_HUB_API || registry == "index.docker.io" {
            DOCKER_HUB.to_string()
        } else {
            registry
        };
        let repository = if registry == DOCKER_HUB && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_string()
        };
        Ok(ImageRef {
            original: orig.to_string(),
            form: RefForm::Enroot,
            registry,
            registry_explicit: explicit,
            repository,
            tag,
            digest,
        })
    }

    /// The host to talk to for the distribution API (`registry-1.docker.io` for Docker Hub).
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// What to ask the registry for: the digest if pinned, else the tag, else `latest`.
    pub fn reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// Tag shown to users (`latest` when none was written and there is no digest).
    pub fn tag_or_latest(&self) -> Option<&str> {
        match (&self.tag, &self.digest) {
            (Some(t), _) => Some(t),
            (None, None) => Some("latest"),
            (None, Some(_)) => None,
        }
    }

    /// Fully-qualified OCI form: `docker.io/library/ubuntu:24.04@sha256:…`.
    pub fn canonical(&self) -> String {
        let mut s = format!("{}/{}", self.registry, self.repository);
        if let Some(t) = self
            .tag_or_latest()
            .filter(|_| self.tag.is_some() || self.digest.is_none())
        {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = &self.digest {
            s.push('@');
            s.push_str(d);
        }
        s
    }

    /// The same image pinned to `digest`, in the form it was written (OCI: `repo:tag@digest`;
    /// enroot: `registry#repo:sha256:…`, since enroot cannot parse `tag@digest`).
    pub fn pinned(&self, digest: &str) -> String {
        match self.form {
            RefForm::Oci => {
                let base = self.original.split('@').next().unwrap_or(&self.original);
                format!("{base}@{digest}")
            }
            RefForm::Enroot => {
                let prefix = if self.original.starts_with("docker://") {
                    "docker://"
                } else {
                    ""
                };
                format!(
                    "{prefix}{}#{}:{digest}",
                    self.registry_for_enroot(),
                    self.repository_for_enroot()
                )
            }
        }
    }

    /// This reference written in enroot form for a catalog entry (`registry#repo:tag`, or
    /// `registry#repo:sha256:…` when a digest is given, since enroot cannot parse
    /// `tag@digest`); an enroot-form reference is returned as written.
    pub fn enroot_form(&self) -> String {
        if self.form == RefForm::Enroot {
            return self.original.clone();
        }
        let r = format!(
            "{}#{}",
            self.registry_for_enroot(),
            self.repository_for_enroot()
        );
        match (&self.digest, &self.tag) {
            (Some(d), _) => format!("{r}:{d}"),
            (None, Some(t)) => format!("{r}:{t}"),
            (None, None) => r,
        }
    }

    fn registry_for_enroot(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    fn repository_for_enroot(&self) -> &str {
        &self.repository
    }

    /// The enroot import URI (`docker://registry#repo:tag` or `docker://registry#repo:sha256:…`),
    /// per §6.3: tag dropped when a digest is present, Docker Hub → `registry-1.docker.io`,
    /// `library/` for single-segment Hub names; an enroot-form input is not re-split.
    pub fn to_enroot_uri(&self) -> String {
        let r = format!(
            "docker://{}#{}",
            self.registry_for_enroot(),
            self.repository_for_enroot()
        );
        match (&self.digest, &self.tag) {
            (Some(d), _) => format!("{r}:{d}"),
            (None, Some(t)) => format!("{r}:{t}"),
            (None, None) => r,
        }
    }

    /// The squash-file name the launchers use: the reference with `/ : @ #` replaced by `_`,
    /// plus `.sqsh` (AUTOMATION.md §4.4, §6.3).
    pub fn squash_filename(&self) -> String {
        let s: String = self
            .original
            .chars()
            .map(|c| {
                if matches!(c, '/' | ':' | '@' | '#') {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        format!("{s}.sqsh")
    }

    /// True when both name the same image (registry/`#` spelling and Hub defaults normalised,
    /// #3319): same registry, repository, tag and digest.
    pub fn same_image(&self, other: &ImageRef) -> bool {
        self.registry == other.registry
            && self.repository == other.repository
            && self.tag_or_latest() == other.tag_or_latest()
            && self.digest == other.digest
    }

    /// True for loopback registries (`127.0.0.1`, `localhost`, `[::1]`), where plain HTTP is
    /// allowed on request.
    pub fn is_loopback(&self) -> bool {
        let host = self
            .registry
            .rsplit_once(':')
            .map(|(h, p)| {
                if p.bytes().all(|b| b.is_ascii_digit()) {
                    h
                } else {
                    self.registry.as_str()
                }
            })
            .unwrap_or(&self.registry);
        matches!(host, "localhost" | "[::1]")
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.original)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f";

    fn ok(s: &str) -> ImageRef {
        ImageRef::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }
    fn bad(s: &str) -> String {
        ImageRef::parse(s).expect_err(s).to_string()
    }

    #[test]
    fn docker_hub_defaults() {
        let r = ok("lmsysorg/sglang:v0.5.20-cu130");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("docker.io", "lmsysorg/sglang", Some("v0.5.20-cu130"))
        );
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert!(!r.registry_explicit);
        let r = ok("ubuntu");
        assert_eq!(r.repository, "library/ubuntu");
        assert_eq!(r.reference(), "latest");
        assert_eq!(r.canonical(), "docker.io/library/ubuntu:latest");
        assert_eq!(ok("docker.io/ubuntu:24.04").repository, "library/ubuntu");
        assert_eq!(ok("index.docker.io/library/ubuntu").registry, "docker.io");
    }

    #[test]
    fn registries_ports_nested_paths_tag_and_digest() {
        let r = ok("127.0.0.1:5000/a/b/c:1.0");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "a/b/c", Some("1.0"))
        );
        assert!(r.is_loopback());
        let r = ok("localhost/x");
        assert_eq!(r.registry, "localhost");
        let r = ok("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14");
        assert_eq!(r.repository, "nvidia/tensorrt-llm/release");
        let r = ok(&format!("lmsysorg/sglang:v0.5.14-cu130@{D}"));
        assert_eq!(
            (r.tag.as_deref(), r.digest.as_deref()),
            (Some("v0.5.14-cu130"), Some(D))
        );
        assert_eq!(r.reference(), D);
        let r = ok(&format!("ghcr.io/org/img@{D}"));
        assert_eq!((r.tag.as_deref(), r.digest.as_deref()), (None, Some(D)));
        assert_eq!(r.canonical(), format!("ghcr.io/org/img@{D}"));
        let r = ok("[::1]:5000/repo:tag");
        assert!(r.is_loopback());
        assert_eq!(
            ok("x/a__b.c-d---e/f_g:T_1.x-y").repository,
            "x/a__b.c-d---e/f_g"
        );
        assert!(bad("a__b.c/x:1").contains("not a valid host name"));
    }

    #[test]
    fn malformed_refs_say_why() {
        assert!(bad("").contains("empty reference"));
        assert_eq!(bad("LmsysOrg/sglang:v1"), "invalid image reference `LmsysOrg/sglang:v1`: repository name `LmsysOrg/sglang` must be lowercase");
        assert!(bad("lmsysorg/sglang:").contains("empty tag"));
        assert!(bad("lmsysorg/sglang:v1@sha256:abc").contains("64 lowercase hex"));
        assert!(bad("lmsysorg/sglang:-bad").contains("must start with"));
        assert!(bad("lmsysorg//sglang").contains("empty path component"));
        assert!(bad("host:99999/x").contains("port `99999`"));
        assert!(bad("lmsysorg/sg lang").contains("whitespace"));
        assert!(bad("a/b:c:d").contains("contains `:`") || bad("a/b:c:d").contains("invalid"));
        assert!(bad(&format!("nvcr.io#nvidia/x#y:{}", "1")).contains("two `#`"));
        assert!(bad(&format!("docker://nvcr.io#nvidia/x:1.0@{D}")).contains("tag@digest"));
        assert!(
            bad("lmsysorg/sglang@md5:00").contains("md5")
                || bad("lmsysorg/sglang@md5:00").contains("32 hex")
        );
        let long = format!("{}:1", "a".repeat(300));
        assert!(bad(&long).contains("at most 255"));
    }

    #[test]
    fn enroot_form_and_conversion() {
        let r = ok("nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14");
        assert_eq!(r.form, RefForm::Enroot);
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("nvcr.io", "nvidia/tensorrt-llm/release", Some("1.3.0rc14"))
        );
        // Already enroot form: no double '#'.
        assert_eq!(
            r.to_enroot_uri(),
            "docker://nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14"
        );
        // tag@digest → strip the tag, Hub → registry-1.docker.io.
        let r = ok(&format!("lmsysorg/sglang:v0.5.14-cu130@{D}"));
        assert_eq!(
            r.to_enroot_uri(),
            format!("docker://registry-1.docker.io#lmsysorg/sglang:{D}")
        );
        // single-segment Hub name → library/.
        assert_eq!(
            ok("nginx:1.27.4").to_enroot_uri(),
            "docker://registry-1.docker.io#library/nginx:1.27.4"
        );
        // Enroot with a digest in the tag position.
        let r = ok(&format!(
            "docker://registry-1.docker.io#lmsysorg/sglang:{D}"
        ));
        assert_eq!(
            (r.registry.as_str(), r.digest.as_deref(), r.tag.as_deref()),
            ("docker.io", Some(D), None)
        );
        assert_eq!(
            r.to_enroot_uri(),
            format!("docker://registry-1.docker.io#lmsysorg/sglang:{D}")
        );
        // user@registry#repo
        let r = ok("docker://me@nvcr.io#nvidia/pytorch:24.01-py3");
        assert_eq!(r.registry, "nvcr.io");
        // Same image in both spellings (#3319).
        assert!(ok("nvcr.io/nvidia/x:1").same_image(&ok("nvcr.io#nvidia/x:1")));
        assert!(!ok("nvcr.io/nvidia/x:1").same_image(&ok("nvcr.io#nvidia/x:2")));
        // Pinning keeps the written form.
        assert_eq!(
            ok("lmsysorg/sglang:v0.5.20-cu130").pinned(D),
            format!("lmsysorg/sglang:v0.5.20-cu130@{D}")
        );
        assert_eq!(
            ok("nvcr.io#nvidia/x:1").pinned(D),
            format!("nvcr.io#nvidia/x:{D}")
        );
        assert_eq!(
            ok("ghcr.io#semianalysisai/trtllm-deepseek-v4:feat-deepseek_v4-c185066")
                .squash_filename(),
            "ghcr.io_semianalysisai_trtllm-deepseek-v4_feat-deepseek_v4-c185066.sqsh"
        );
    }
}
