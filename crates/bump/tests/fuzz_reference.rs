//! Fuzzing the OCI / enroot image-reference parser (issue 12, item 5): byte mutations of every
//! `image:` of the master configs in `shared/data` (plus enroot and digest forms of them).
//! Bounded run in CI (`FUZZ_SECONDS`, default 2 s); the long run's figures are in
//! docs/reliability.md.
//!
//! Invariants besides "no panic": an accepted reference's canonical form parses again to the
//! same canonical form; its enroot URI parses to the same registry and repository, and keeps
//! the digest (or the tag when there is none); an error is one line.

#[path = "../../triage/tests/fuzz_support/mutate.rs"]
mod mutate;

use servebench_bump::reference::ImageRef;

fn seeds() -> Vec<Vec<u8>> {
    let shared = mutate::shared_dir(env!("CARGO_MANIFEST_DIR"));
    let mut refs = std::collections::BTreeSet::new();
    for f in [
        "data/inferencex/nvidia-master.yaml",
        "data/inferencex/amd-master.yaml",
        "data/inferencex/perf-changelog.yaml",
        "data/scenario/master.yaml",
    ] {
        let p = shared.join(f);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        for line in text.lines() {
            if let Some(v) = line.trim_start().strip_prefix("image:") {
                let v = v.trim().trim_matches(['"', '\'']);
                if !v.is_empty() {
                    refs.insert(v.to_string());
                }
            }
        }
    }
    let digest = "sha256:987c7e4bd26918647211a5dcad72a2bdf2a5f394ac1469eff730e7517fc139be";
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for r in &refs {
        seeds.push(r.clone().into_bytes());
        if let Ok(parsed) = ImageRef::parse(r) {
            seeds.push(parsed.to_enroot_uri().into_bytes());
            seeds.push(format!("{}@{digest}", r.split('@').next().unwrap()).into_bytes());
        }
    }
    seeds
}

#[test]
fn fuzz_oci_reference_parser() {
    let dict: &[&[u8]] = &[
        b"docker://",
        b"#",
        b"@sha256:",
        b":",
        b"/",
        b"localhost:5000/",
        b"[::1]:5000/",
        b"nvcr.io/",
        b"registry-1.docker.io/",
        b"library/",
        b"sha512:",
        b"latest",
        b"..",
        b"__",
        b"-",
        b"A",
    ];
    mutate::fuzz("oci_reference", &seeds(), dict, 4096, |input| {
        let s = String::from_utf8_lossy(input);
        match ImageRef::parse(&s) {
            Ok(r) => {
                let c = r.canonical();
                let again = ImageRef::parse(&c).unwrap_or_else(|e| {
                    panic!("canonical form {c:?} of {s:?} does not parse: {e}")
                });
                assert_eq!(
                    again.canonical(),
                    c,
                    "canonical form of {s:?} is not stable"
                );
                let uri = r.to_enroot_uri();
                let e = ImageRef::parse(&uri)
                    .unwrap_or_else(|e| panic!("enroot URI {uri:?} of {s:?} does not parse: {e}"));
                // the enroot URI drops the tag when a digest pins the image (§6.3)
                assert_eq!(
                    (&e.registry, &e.repository),
                    (&r.registry, &r.repository),
                    "{uri:?} names another repository than {s:?}"
                );
                match &r.digest {
                    Some(d) => assert_eq!(
                        e.digest.as_ref(),
                        Some(d),
                        "{uri:?} lost the digest of {s:?}"
                    ),
                    None => assert_eq!(e.tag_or_latest(), r.tag_or_latest(), "{uri:?} vs {s:?}"),
                }
                let _ = r.squash_filename();
                let _ = r.pinned(
                    "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                );
                "ok".into()
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
                format!(
                    "err:{}",
                    e.reason
                        .split(|c: char| !c.is_alphabetic() && c != ' ')
                        .next()
                        .unwrap_or("")
                )
            }
        }
    });
}

/// Regression (found by the fuzzer, execution 299): a reference with a newline produced a
/// two-line error. Control characters are now escaped in the message.
#[test]
fn regression_error_for_a_reference_with_a_newline_is_one_line() {
    let e = ImageRef::parse("[::1]\n:5000/").unwrap_err();
    assert_eq!(e.reason, "contains whitespace");
    assert_eq!(
        e.to_string(),
        "invalid image reference `[::1]\\n:5000/`: contains whitespace"
    );
}

/// Regression (found by the fuzzer, execution 566): a reference pinned with a digest of
/// another algorithm than sha256 was accepted in OCI form, but its own enroot URI was refused.
#[test]
fn regression_enroot_uri_of_a_non_sha256_digest_parses_back() {
    let sha512 = format!("sha512:{}", "ab".repeat(64));
    for d in [
        sha512.as_str(),
        "sha2ad72a2bd:987c7e4bd26918647211a5dcad72a2bdf2a5f394ac1469eff730e7517fc139be",
    ] {
        let r = ImageRef::parse(&format!("lmsysorg/sglang-rocm:v0.5.14@{d}")).unwrap();
        let uri = r.to_enroot_uri();
        assert_eq!(
            uri,
            format!("docker://registry-1.docker.io#lmsysorg/sglang-rocm:{d}")
        );
        let back = ImageRef::parse(&uri).unwrap();
        assert_eq!(back.digest.as_deref(), Some(d));
        assert_eq!(back.repository, "lmsysorg/sglang-rocm");
    }
    // a malformed digest in the enroot form is still refused
    assert!(ImageRef::parse("docker://nvcr.io#nvidia/x:sha256:abc").is_err());
}

/// Regression (found by the fuzzer, execution 781): an enroot reference whose registry is not
/// a host name (`…@sha256#987…` read as `user@registry#repo`) was accepted, and its canonical
/// form named a Docker Hub repository instead. Such a registry is now refused.
#[test]
fn regression_enroot_registry_must_be_a_host() {
    let e =
        ImageRef::parse("docker://sha256#987c7e4bd26918647211a5dcad72a2bdf2a5f139be").unwrap_err();
    assert!(e.reason.contains("is not a host name"), "{e}");
    let e = ImageRef::parse(
        "lmsyso..rg/sglang:nightly@sha256#987c7e4bd26918647211a5dcad72a2bdf2a5f139be",
    )
    .unwrap_err();
    assert!(!e.to_string().contains('\n'));
    for ok in [
        "docker://nvcr.io#nvidia/pytorch:24.05-py3",
        "docker://localhost:5000#a/b:c",
        "docker://localhost#a/b",
    ] {
        let r = ImageRef::parse(ok).unwrap();
        assert_eq!(
            ImageRef::parse(&r.canonical()).unwrap().canonical(),
            r.canonical(),
            "{ok}"
        );
    }
}

/// Regression (found by the fuzzer, execution 2430): `registry-1.docker.io/…` (Docker Hub's
/// API host) stayed a registry of its own in the OCI form while the enroot form normalises it
/// to Docker Hub, so a reference and its own enroot URI named different images.
#[test]
fn regression_docker_hub_api_host_is_docker_hub() {
    let r = ImageRef::parse("registry-1.docker.io/lmsysorg/sglang:v0.5.8.post1-cu130").unwrap();
    let hub = ImageRef::parse("lmsysorg/sglang:v0.5.8.post1-cu130").unwrap();
    assert!(r.same_image(&hub));
    let e = ImageRef::parse(&r.to_enroot_uri()).unwrap();
    assert!(e.same_image(&r));
}
