//! Engine versions read from image tags (AUTOMATION.md §6.2 tag conventions).
//!
//! `v0.5.20-cu130` → release 0.5.20; `v0.5.8.post1-cu130-runtime` → 0.5.8.post1;
//! `1.3.0rc14` → 1.3.0rc14 (before 1.3.0); `nightly-dev-cu13-20260628-da802ddc` → nightly of
//! 2026-06-28; `v0.5.9-rocm720-mi35x-20260901` → release 0.5.9 (ROCm, dated build);
//! `qwen38flashnext`, `deepseek-v4-hopper` → unknown (model-branch/custom builds).

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A release version `major.minor.patch[rcN][.postN]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Release {
    /// Major.
    pub major: u64,
    /// Minor.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
    /// Pre-release number (`rc14` → 14); a pre-release sorts before the release.
    pub rc: Option<u64>,
    /// Post-release number (`.post1` → 1).
    pub post: u64,
}

impl Ord for Release {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| match (self.rc, o.rc) {
                (None, None) => Ordering::Equal,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(a), Some(b)) => a.cmp(&b),
            })
            .then(self.post.cmp(&o.post))
    }
}
impl PartialOrd for Release {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(rc) = self.rc {
            write!(f, "rc{rc}")?;
        }
        if self.post > 0 {
            write!(f, ".post{}", self.post)?;
        }
        Ok(())
    }
}

impl Release {
    /// Parses `0.5.20`, `v0.5.20`, `1.3.0rc14`, `0.5.8.post1`, `0.8.1.post2`.
    pub fn parse(s: &str) -> Option<Release> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let (core, post) = match s.split_once(".post") {
            Some((c, p)) => (c, p.parse().ok()?),
            None => (s, 0),
        };
        let (core, rc) = match core.split_once("rc") {
            Some((c, r)) => (c, Some(r.parse().ok()?)),
            None => (core, None),
        };
        let mut it = core.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        let patch = it.next().map(|p| p.parse().ok()).unwrap_or(Some(0))?;
        if it.next().is_some() {
            return None;
        }
        Some(Release {
            major,
            minor,
            patch,
            rc,
            post,
        })
    }
}

/// GPU software stack a tag targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    /// NVIDIA CUDA.
    Cuda,
    /// AMD ROCm.
    Rocm,
}

/// What an image tag says about the engine version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineVersion {
    /// Release version, when the tag carries one.
    pub release: Option<Release>,
    /// Build date `YYYY-MM-DD` of a nightly or dated build.
    pub date: Option<String>,
    /// True for nightly/dev builds.
    pub nightly: bool,
    /// CUDA or ROCm.
    pub flavor: Flavor,
}

impl EngineVersion {
    /// Reads the version from a repository + tag (digest-only references give `None`).
    pub fn from_tag(repository: &str, tag: &str) -> EngineVersion {
        let flavor = if tag.contains("rocm") || repository.contains("rocm") || tag.contains("-mi3")
        {
            Flavor::Rocm
        } else {
            Flavor::Cuda
        };
        let nightly = tag.contains("nightly") || tag.starts_with("dev-") || tag.contains("-dev-");
        let mut release = None;
        let mut date = None;
        for part in tag.split('-') {
            if release.is_none() && !nightly {
                if let Some(r) = Release::parse(part) {
                    if part.starts_with('v') || part.contains('.') {
                        release = Some(r);
                        continue;
                    }
                }
            }
            if date.is_none() && part.len() == 8 && part.bytes().all(|b| b.is_ascii_digit()) {
                let (y, m, d) = (&part[0..4], &part[4..6], &part[6..8]);
                if y.starts_with("20") && ("01".."13").contains(&m) && ("01".."32").contains(&d) {
                    date = Some(format!("{y}-{m}-{d}"));
                }
            }
        }
        EngineVersion {
            release,
            date,
            nightly,
            flavor,
        }
    }

    /// True when nothing usable was read (no release, no date).
    pub fn is_unknown(&self) -> bool {
        self.release.is_none() && self.date.is_none()
    }
}

impl fmt::Display for EngineVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.release, &self.date, self.nightly) {
            (Some(r), Some(d), _) => write!(f, "v{r} ({d} build)"),
            (Some(r), None, _) => write!(f, "v{r}"),
            (None, Some(d), true) => write!(f, "nightly {d}"),
            (None, Some(d), false) => write!(f, "build {d}"),
            (None, None, true) => write!(f, "undated nightly"),
            (None, None, false) => write!(f, "unknown version"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Release {
        Release::parse(s).unwrap()
    }

    #[test]
    fn releases_order() {
        assert!(r("0.5.20") > r("0.5.19"));
        assert!(r("1.3.0rc14") < r("1.3.0"));
        assert!(r("0.5.8.post1") > r("0.5.8"));
        assert!(r("v0.14.0") == r("0.14.0"));
        assert!(r("0.5.12.post1") < r("0.5.13"));
    }

    #[test]
    fn tags() {
        let v = EngineVersion::from_tag("lmsysorg/sglang", "v0.5.20-cu130");
        assert_eq!(
            (v.release, v.flavor, v.nightly),
            (Some(r("0.5.20")), Flavor::Cuda, false)
        );
        let v = EngineVersion::from_tag("lmsysorg/sglang", "v0.5.8.post1-cu130-runtime");
        assert_eq!(v.release, Some(r("0.5.8.post1")));
        let v = EngineVersion::from_tag("lmsysorg/sglang", "nightly-dev-cu13-20260628-da802ddc");
        assert_eq!(
            (v.release, v.date.as_deref(), v.nightly),
            (None, Some("2026-06-28"), true)
        );
        let v = EngineVersion::from_tag("lmsysorg/sglang-rocm", "v0.5.9-rocm720-mi35x-20260901");
        assert_eq!(
            (v.release, v.date.as_deref(), v.flavor),
            (Some(r("0.5.9")), Some("2026-09-01"), Flavor::Rocm)
        );
        let v = EngineVersion::from_tag("lmsysorg/sglang", "qwen38flashnext");
        assert!(v.is_unknown());
        assert_eq!(v.to_string(), "unknown version");
        let v = EngineVersion::from_tag("nvidia/tensorrt-llm/release", "1.3.0rc14");
        assert_eq!(v.release, Some(r("1.3.0rc14")));
        let v = EngineVersion::from_tag("vllm/vllm-openai", "v0.25.0");
        assert_eq!(v.release, Some(r("0.25.0")));
        let v = EngineVersion::from_tag("vllm/vllm-openai", "nightly-dev-x86_64-cu13.0.1-426e59f");
        assert!(v.nightly && v.release.is_none() && v.date.is_none());
        let v = EngineVersion::from_tag("lmsysorg/sglang", "deepseek-v4-hopper");
        assert!(v.is_unknown());
    }
}
