//! `servebench image inspect` and `servebench bump` against a REAL registry: Debian's
//! `docker-registry` (distribution v2), started by scripts/services/registry.sh, which exports
//! SERVEBENCH_REGISTRY=127.0.0.1:PORT. The test writes an OCI layout with a multi-platform index
//! (linux/amd64 + linux/arm64/v8, tiny tar layers, configs with labels), pushes it with
//! `skopeo copy --all --preserve-digests`, and checks servebench resolves exactly the digests it
//! wrote. Also: the 404 line for a missing tag and the unreachable-registry line.

use crate::common;
use common::run_in;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

fn registry() -> Option<String> {
    match std::env::var("SERVEBENCH_REGISTRY") {
        Ok(r) if !r.is_empty() => Some(r),
        _ => {
            servebench_testkit::skip_or_fail(
                "SERVEBENCH_REGISTRY is not set (run `eval $(bash scripts/services/registry.sh)` first)",
            );
            None
        }
    }
}

fn sha(b: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(b)))
}

/// A one-file ustar archive.
fn tar_of(name: &str, content: &[u8]) -> Vec<u8> {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{:011o}\0", content.len()).as_bytes());
    h[136..148].copy_from_slice(b"14712345670\0");
    h[148..156].copy_from_slice(b"        ");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(content);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

struct Layout {
    index: String,
    platforms: Vec<(String, String)>,
    labels: BTreeMap<String, String>,
    created: String,
}

fn put(dir: &Path, bytes: &[u8]) -> String {
    let d = sha(bytes);
    std::fs::write(dir.join("blobs/sha256").join(&d[7..]), bytes).unwrap();
    d
}

/// Writes an OCI image layout at `dir` whose `tag` is a two-platform index.
fn write_layout(dir: &Path, tag: &str, commit: &str) -> Layout {
    std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let created = "2026-09-19T10:11:12Z".to_string();
    let mut labels = BTreeMap::new();
    labels.insert("ai.sglang.build.commit".to_string(), commit.to_string());
    labels.insert("sgl-kernel".to_string(), "0.4.7".to_string());
    let mut manifests = Vec::new();
    let mut platforms = Vec::new();
    for (arch, variant) in [("amd64", None), ("arm64", Some("v8"))] {
        let layer = tar_of(
            "hello.txt",
            format!("hello from {arch} {commit}\n").as_bytes(),
        );
        let ld = put(dir, &layer);
        let config = serde_json::json!({
            "created": created,
            "architecture": arch,
            "os": "linux",
            "variant": variant,
            "config": {"Labels": labels, "Env": ["PATH=/usr/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [ld]},
        });
        let cb = serde_json::to_vec(&config).unwrap();
        let cd = put(dir, &cb);
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cb.len()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ld, "size": layer.len()}],
        });
        let mb = serde_json::to_vec(&manifest).unwrap();
        let md = put(dir, &mb);
        let mut platform = serde_json::json!({"architecture": arch, "os": "linux"});
        let mut name = format!("linux/{arch}");
        if let Some(v) = variant {
            platform["variant"] = v.into();
            name.push('/');
            name.push_str(v);
        }
        manifests.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": mb.len(), "platform": platform,
        }));
        platforms.push((name, md));
    }
    let index = serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests,
    });
    let ib = serde_json::to_vec(&index).unwrap();
    let id = put(dir, &ib);
    let top = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.index.v1+json", "digest": id, "size": ib.len(),
            "annotations": {"org.opencontainers.image.ref.name": tag},
        }],
    });
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&top).unwrap()).unwrap();
    Layout {
        index: id,
        platforms,
        labels,
        created,
    }
}

fn push(layout: &Path, tag: &str, dest: &str) {
    let o = Command::new("skopeo")
        .args([
            "copy",
            "--all",
            "--preserve-digests",
            "--insecure-policy",
            "--dest-tls-verify=false",
            &format!("oci:{}:{tag}", layout.display()),
            &format!("docker://{dest}"),
        ])
        .output()
        .expect("skopeo runs (scripts/services/registry.sh installs it)");
    assert!(
        o.status.success(),
        "skopeo copy failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn real_registry_resolves_exactly_the_pushed_digests() {
    let Some(reg) = registry() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let uniq = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let tag = format!("t{uniq}");
    let lay = write_layout(&tmp.path().join("layout"), &tag, &format!("c0ffee{uniq}"));
    let reference = format!("{reg}/servebench/engine:{tag}");
    push(&tmp.path().join("layout"), &tag, &reference);

    // JSON: exactly the digests written.
    let (rc, out, err) = run_in(
        Path::new("."),
        &["image", "inspect", &reference, "--json", "--plain-http"],
    );
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["digest"], lay.index);
    assert_eq!(v["is_index"], true);
    let plats: Vec<(String, String)> = v["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["platform"].as_str().unwrap().to_string(),
                p["digest"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(plats, lay.platforms);
    assert_eq!(v["platform_digest"], lay.platforms[0].1);
    let labels: BTreeMap<String, String> = serde_json::from_value(v["labels"].clone()).unwrap();
    assert_eq!(labels, lay.labels);
    assert_eq!(v["created"], lay.created);
    assert_eq!(v["pinned"], format!("{reference}@{}", lay.index));
    assert_eq!(
        v["enroot_uri"],
        format!("docker://{reg}#servebench/engine:{}", lay.index)
    );

    // Text output, arm64 selected.
    let (rc, out, err) = run_in(
        Path::new("."),
        &[
            "image",
            "inspect",
            &reference,
            "--plain-http",
            "--platform",
            "linux/arm64",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains(&format!("Index:     {}", lay.index)), "{out}");
    assert!(
        out.contains(&format!("  linux/arm64/v8   {}", lay.platforms[1].1)),
        "{out}"
    );
    assert!(
        out.contains(&format!("ai.sglang.build.commit = c0ffee{uniq}")),
        "{out}"
    );

    // By digest.
    let (rc, out, err) = run_in(
        Path::new("."),
        &[
            "image",
            "inspect",
            &format!("{reg}/servebench/engine@{}", lay.index),
            "--json",
            "--plain-http",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains(&lay.platforms[1].1));

    // 404: one line naming the tag, the URL and the registry's code.
    let (rc, out, err) = run_in(
        Path::new("."),
        &[
            "image",
            "inspect",
            &format!("{reg}/servebench/engine:missing-{uniq}"),
            "--plain-http",
        ],
    );
    assert_eq!(rc, 1);
    assert!(out.is_empty());
    assert_eq!(
        err.trim_end(),
        format!("error: not found: `servebench/engine:missing-{uniq}` does not exist at http://{reg}/v2/servebench/engine/manifests/missing-{uniq} (404 MANIFEST_UNKNOWN)")
    );
    assert_eq!(err.trim_end().lines().count(), 1);

    // Bump against the real registry: the Change line carries the resolved digests.
    let dir = tmp.path().join("cat");
    std::fs::create_dir_all(&dir).unwrap();
    let cat = dir.join("master.yaml");
    std::fs::write(
        &cat,
        format!("k-fp8-h200-sglang:\n  image: {reg}/servebench/engine:old-{uniq}\n  model: org/m\n  model-prefix: k\n  runner: h200-cw\n  precision: fp8\n  framework: sglang\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n      search-space:\n      - {{ tp: 8, conc-list: [4] }}\n"),
    )
    .unwrap();
    let (rc, out, err) = run_in(
        Path::new("."),
        &[
            "bump",
            "k-fp8-h200-sglang",
            "--image",
            &reference,
            "--catalog",
            cat.to_str().unwrap(),
            "--plain-http",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.contains(&format!(
            "(index {}; linux/amd64 {})",
            lay.index, lay.platforms[0].1
        )),
        "{out}"
    );
    assert!(out.contains(&format!("build commit c0ffee{uniq}")), "{out}");
    assert!(
        out.contains("Note: old image not resolved: not found:"),
        "{out}"
    );
    assert!(out.contains("Dry run: nothing written."));
}

#[test]
fn unreachable_registry_is_one_line_naming_the_url() {
    // Runs without the service: a loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (rc, out, err) = run_in(
        Path::new("."),
        &[
            "image",
            "inspect",
            &format!("127.0.0.1:{port}/x/y:1"),
            "--plain-http",
        ],
    );
    assert_eq!(rc, 1);
    assert!(out.is_empty());
    assert!(
        err.starts_with(&format!(
            "error: registry unreachable: http://127.0.0.1:{port}/v2/ ("
        )),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1);
    // Malformed reference: the reason, one line.
    let (rc, _, err) = run_in(Path::new("."), &["image", "inspect", "Foo/Bar:1"]);
    assert_eq!(rc, 1);
    assert_eq!(
        err.trim_end(),
        "error: invalid image reference `Foo/Bar:1`: repository name `Foo/Bar` must be lowercase"
    );
}
