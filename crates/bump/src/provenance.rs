//! Image provenance: what an image tag resolved to (index digest, per-platform digests, labels,
//! creation time) and where that came from (registry, a provenance file, or nothing).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{BumpError, Result};
use crate::reference::ImageRef;
use crate::registry::ImageInfo;

/// Provenance of one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The reference as written in the catalog.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Multi-arch index digest (`None`: single-platform image or unknown).
    pub index_digest: Option<String>,
    /// Per-platform manifest digests (`linux/amd64` → `sha256:…`).
    #[serde(default)]
    pub platform_digests: BTreeMap<String, String>,
    /// Image config labels (build commit, library versions).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Image creation time (RFC 3339), when known.
    #[serde(default)]
    pub created: Option<String>,
    /// Where it came from: `registry <url>`, `file <path>`.
    pub source: String,
}

impl Provenance {
    /// From a registry resolution.
    pub fn from_info(info: &ImageInfo) -> Provenance {
        Provenance {
            reference: info.reference.clone(),
            index_digest: info.index_digest().map(str::to_string),
            platform_digests: info
                .platforms
                .iter()
                .map(|p| (p.platform.clone(), p.digest.clone()))
                .collect(),
            labels: info.labels.clone(),
            created: info.created.clone(),
            source: format!("registry {}", info.registry_url),
        }
    }

    /// The amd64 (or only) platform digest.
    pub fn amd64_digest(&self) -> Option<&str> {
        self.platform_digests
            .iter()
            .find(|(p, _)| p.as_str() == "linux/amd64" || p.starts_with("linux/amd64/"))
            .map(|(_, d)| d.as_str())
    }

    /// Finds `image` in a provenance file: a JSON object or array whose records carry `ref`,
    /// `index_digest`, optional `platform_digests`, `labels`, `created` (the shape of
    /// `shared/data/scenario/images.json`). References match after normalisation
    /// (`ImageRef::same_image`). `Ok(None)` when absent.
    pub fn from_file(path: &Path, image: &ImageRef) -> Result<Option<Provenance>> {
        let text = crate::read(path)?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|err| BumpError::ProvenanceNotJson {
                path: path.to_path_buf(),
                err,
            })?;
        let records: Vec<&serde_json::Value> = match &v {
            serde_json::Value::Object(m) if m.contains_key("ref") => vec![&v],
            serde_json::Value::Object(m) => m.values().collect(),
            serde_json::Value::Array(a) => a.iter().collect(),
            _ => vec![],
        };
        for r in records {
            let Some(rs) = r.get("ref").and_then(|x| x.as_str()) else {
                continue;
            };
            let Ok(parsed) = ImageRef::parse(rs) else {
                continue;
            };
            if !parsed.same_image(image) {
                continue;
            }
            let map = |k: &str| -> BTreeMap<String, String> {
                r.get(k)
                    .and_then(|x| x.as_object())
                    .map(|o| {
                        o.iter()
                            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            return Ok(Some(Provenance {
                reference: image.original.clone(),
                index_digest: r
                    .get("index_digest")
                    .and_then(|x| x.as_str())
                    .map(str::to_string),
                platform_digests: map("platform_digests"),
                labels: map("labels"),
                created: r
                    .get("created")
                    .and_then(|x| x.as_str())
                    .map(str::to_string),
                source: format!("file {}", path.display()),
            }));
        }
        Ok(None)
    }
}

/// Label changes old → new, e.g. `sgl-kernel 0.4.6.post1 → 0.4.7`, `sgl-deep-gemm 0.2.0 (new)`,
/// `cuda 13.0.3` (unchanged).
pub fn label_changes(old: Option<&Provenance>, new: &Provenance) -> Vec<String> {
    let empty = BTreeMap::new();
    let o = old.map(|p| &p.labels).unwrap_or(&empty);
    let mut keys: Vec<&String> = new.labels.keys().chain(o.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| match (o.get(k), new.labels.get(k)) {
            (Some(a), Some(b)) if a == b => format!("{k} {b}"),
            (Some(a), Some(b)) => format!("{k} {a} → {b}"),
            (None, Some(b)) if old.is_some() => format!("{k} {b} (new)"),
            (None, Some(b)) => format!("{k} {b}"),
            (Some(a), None) => format!("{k} {a} (removed)"),
            (None, None) => unreachable!(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMAGES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/scenario/images.json"
    );

    #[test]
    fn scenario_images_json() {
        let new = ImageRef::parse("lmsysorg/sglang:v0.5.20-cu130").unwrap();
        let p = Provenance::from_file(Path::new(IMAGES), &new)
            .unwrap()
            .unwrap();
        assert_eq!(
            p.index_digest.as_deref(),
            Some("sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f")
        );
        assert_eq!(
            p.amd64_digest(),
            Some("sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4")
        );
        let old = ImageRef::parse("docker.io/lmsysorg/sglang:qwen38flashnext").unwrap();
        let o = Provenance::from_file(Path::new(IMAGES), &old)
            .unwrap()
            .unwrap();
        assert_eq!(
            o.index_digest.as_deref(),
            Some("sha256:5ae5816783d58e2e56e84d2e863f5441425056f500b7fbd7448c4aae017a2521")
        );
        assert_eq!(o.amd64_digest(), None);
        assert_eq!(
            label_changes(Some(&o), &p),
            vec![
                "cuda 13.0.3",
                "flashinfer 0.6.18",
                "sgl-deep-gemm 0.2.0 (new)",
                "sgl-kernel 0.4.6.post1 → 0.4.7"
            ]
        );
        let missing = ImageRef::parse("lmsysorg/sglang:v9").unwrap();
        assert!(Provenance::from_file(Path::new(IMAGES), &missing)
            .unwrap()
            .is_none());
    }
}
