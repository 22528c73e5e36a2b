//! The scenario bump on copies of shared/data/scenario (lib level; the CLI end to end is in
//! crates/servebench/tests/bump_scenario.rs).

use std::path::{Path, PathBuf};

use servebench_bump::{plan, BumpError, BumpOptions, IoOp, Resolve};

const SCEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/scenario");
const CHANGELOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex/perf-changelog.yaml"
);
const KEY: &str = "qwen3.8next-fp4-b200-sglang-agentic-mtp";
const RECIPE: &str = "qwen3.8next_fp4_b200_sglang_mtp.sh";

fn copy_scenario(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    std::fs::create_dir_all(dir.join("recipes")).unwrap();
    std::fs::copy(format!("{SCEN}/master.yaml"), dir.join("master.yaml")).unwrap();
    std::fs::copy(
        format!("{SCEN}/recipes/{RECIPE}"),
        dir.join("recipes").join(RECIPE),
    )
    .unwrap();
    std::fs::copy(CHANGELOG, dir.join("perf-changelog.yaml")).unwrap();
    for f in ["master.yaml", "perf-changelog.yaml"] {
        make_writable(dir.join(f));
    }
    make_writable(dir.join("recipes").join(RECIPE));
    (
        dir.join("master.yaml"),
        dir.join("recipes"),
        dir.join("perf-changelog.yaml"),
    )
}

fn opts(cat: &Path, rec: &Path, cl: &Path, resolve: Resolve) -> BumpOptions {
    BumpOptions {
        key: KEY.into(),
        image: "lmsysorg/sglang:v0.5.20-cu130".into(),
        catalogs: vec![cat.to_path_buf()],
        recipes_dir: Some(rec.to_path_buf()),
        changelog: Some(cl.to_path_buf()),
        resolve,
        pr_link: "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX".into(),
        pin_digest: false,
        rules: None,
    }
}

#[test]
fn scenario_bump_with_offline_provenance() {
    let tmp = tempfile::tempdir().unwrap();
    let (cat, rec, cl) = copy_scenario(tmp.path());
    let p = plan(&opts(
        &cat,
        &rec,
        &cl,
        Resolve::File(format!("{SCEN}/images.json").into()),
    ))
    .unwrap();

    // Catalog: exactly the image line.
    let (minus, plus) = p.catalog.as_ref().unwrap().changed_lines();
    assert_eq!(minus, vec!["  image: lmsysorg/sglang:qwen38flashnext"]);
    assert_eq!(plus, vec!["  image: lmsysorg/sglang:v0.5.20-cu130"]);

    // Recipe: exactly the flag rename, same value.
    assert_eq!(p.record.recipes.len(), 1);
    let r = &p.record.recipes[0];
    assert!(r.shared_with.is_empty());
    let (minus, plus) = r.change.as_ref().unwrap().changed_lines();
    assert_eq!(minus, vec!["  --cuda-graph-max-bs 64 \\"]);
    assert_eq!(plus, vec!["  --cuda-graph-max-bs-decode 64 \\"]);
    let applied: Vec<_> = r
        .outcomes
        .iter()
        .filter(|o| o.status == "applied")
        .collect();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].rule, "sglang-cuda-graph-max-bs-decode");
    assert_eq!(
        applied[0].summary,
        "renamed `--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode` (value `64` kept)"
    );

    // Provenance in the Change line (index + amd64 of the new image, old index, labels).
    let c = &p.record.change_line;
    assert!(c.starts_with("Change: `lmsysorg/sglang:qwen38flashnext` → `lmsysorg/sglang:v0.5.20-cu130` (index sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f; linux/amd64 sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4; was index sha256:5ae5816783d58e2e56e84d2e863f5441425056f500b7fbd7448c4aae017a2521)"), "{c}");
    assert!(
        c.contains("sgl-kernel 0.4.6.post1 → 0.4.7") && c.contains("sgl-deep-gemm 0.2.0 (new)"),
        "{c}"
    );
    assert!(c.ends_with("Recipe `qwen3.8next_fp4_b200_sglang_mtp.sh`: renamed `--cuda-graph-max-bs` → `--cuda-graph-max-bs-decode` (value `64` kept)."), "{c}");

    // Change log: appended, every historical byte kept.
    let clc = p.changelog.as_ref().unwrap();
    assert!(clc.new.starts_with(&clc.old));
    let tail = &clc.new[clc.old.len()..];
    // InferenceX's own style: scenario-type for an agentic-only key, plain text, no backticks.
    assert!(tail.starts_with(&format!("\n- config-keys:\n    - {KEY}\n  scenario-type:\n    - agentic-coding\n  description:\n    - \"Bump SGLang image from lmsysorg/sglang:qwen38flashnext to lmsysorg/sglang:v0.5.20-cu130\"\n")), "{tail}");
    assert!(!tail.contains('`'), "{tail}");
    assert!(tail.contains("    - \"qwen3.8next_fp4_b200_sglang_mtp.sh: renamed --cuda-graph-max-bs → --cuda-graph-max-bs-decode (value 64 kept)"), "{tail}");
    assert!(
        tail.ends_with("  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX\n"),
        "{tail}"
    );
    assert!(tail.contains("New image digests: index sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f; linux/amd64 sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4"));

    // The catalog crate's own change-log gates accept it (F-3 bytes, git diff --check, schema).
    use servebench_catalog::changelog as cc;
    cc::validate_raw_change(clc.old.as_bytes(), clc.new.as_bytes(), 1, 0).unwrap();
    cc::diff_check(&clc.old, &clc.new, "perf-changelog.yaml").unwrap();
    let added = cc::added_text(&clc.old, &clc.new, "perf-changelog.yaml").unwrap();
    assert_eq!(cc::parse_added_entries(&added).unwrap().len(), 1);
    // InferenceX's gate (validate's default) accepts bump's entry with its XXX pr-link as is.
    let catalog = servebench_catalog::Catalog::load(&[cat.display().to_string()]).unwrap();
    let runners = servebench_catalog::Runners::load(&format!("{SCEN}/runners.yaml")).unwrap();
    assert_eq!(
        cc::validate(
            clc.old.as_bytes(),
            clc.new.as_bytes(),
            "perf-changelog.yaml",
            "base",
            "head",
            None,
            false,
            &cc::ProcessOptions::default(),
            &catalog,
            &runners,
            None,
        )
        .map_err(|e| e.to_string()),
        Ok(cc::Validated::Gate)
    );

    // Nothing written before write().
    assert_eq!(
        std::fs::read_to_string(&cat).unwrap(),
        std::fs::read_to_string(format!("{SCEN}/master.yaml")).unwrap()
    );
    // catalog, recipe, change log, and the provenance file asked for (none without one: the
    // CLI default, wiring_bump's test)
    let prov = tmp.path().join("run-provenance.json");
    let written = p.write(Some(&prov)).unwrap();
    assert_eq!(written.len(), 4);
    assert_eq!(written[3], prov);
    let recipe_now = std::fs::read_to_string(rec.join(RECIPE)).unwrap();
    let recipe_orig = std::fs::read_to_string(format!("{SCEN}/recipes/{RECIPE}")).unwrap();
    assert_eq!(
        recipe_now,
        recipe_orig.replace("--cuda-graph-max-bs 64", "--cuda-graph-max-bs-decode 64")
    );
    // Executable bit kept.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_ne!(
            std::fs::metadata(rec.join(RECIPE))
                .unwrap()
                .permissions()
                .mode()
                & 0o111,
            0
        );
    }
    let records = servebench_bump::load_change_records(&prov).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].new_provenance.as_ref().unwrap().amd64_digest(),
        Some("sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4")
    );

    // A second bump to the same image: already-updated, nothing changes.
    let p2 = plan(&opts(&cat, &rec, &cl, Resolve::Off)).unwrap();
    assert!(p2.already_updated);
    assert!(p2.write(None).unwrap().is_empty());
}

#[test]
fn no_resolve_proceeds_and_says_so_and_unreachable_registry_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let (cat, rec, cl) = copy_scenario(tmp.path());
    let p = plan(&opts(&cat, &rec, &cl, Resolve::Off)).unwrap();
    assert!(
        p.record
            .change_line
            .contains("(digests not resolved: --no-resolve)"),
        "{}",
        p.record.change_line
    );
    assert!(p
        .notes
        .iter()
        .any(|n| n.contains("digests were not resolved (--no-resolve)")));
    assert!(p.catalog.is_some() && p.record.recipes[0].change.is_some());

    // A registry that does not answer stops the bump with one line naming the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = opts(
        &cat,
        &rec,
        &cl,
        Resolve::Registry(servebench_bump::RegistryOptions {
            plain_http: true,
            ..Default::default()
        }),
    );
    o.image = format!("127.0.0.1:{port}/lmsysorg/sglang:v0.5.20-cu130");
    let e = plan(&o).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "registry unreachable: http://127.0.0.1:{port}/v2/"
        )),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn bad_inputs_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (cat, rec, cl) = copy_scenario(tmp.path());
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.image = "LMSYSORG/sglang:v0.5.20".into();
    assert_eq!(plan(&o).unwrap_err().to_string(), "invalid image reference `LMSYSORG/sglang:v0.5.20`: repository name `LMSYSORG/sglang` must be lowercase");
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.key = "nope".into();
    assert_eq!(
        plan(&o).unwrap_err().to_string(),
        format!("config key `nope` not found in {}", cat.display())
    );
    let mut o = opts(
        &cat,
        &rec,
        &cl,
        Resolve::File(format!("{SCEN}/images.json").into()),
    );
    o.image = "lmsysorg/sglang:v0.5.21-cu130".into();
    assert!(plan(&o)
        .unwrap_err()
        .to_string()
        .ends_with("images.json: no record for `lmsysorg/sglang:v0.5.21-cu130`"));
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.pr_link = "https://example.com/1".into();
    assert!(plan(&o).unwrap_err().to_string().contains("pr-link"));
}

/// The same refusals as typed errors a caller can match, with their exact one-line text,
/// plain and `{:#}` (what the binary prints once `?` has made it an `anyhow::Error`).
#[test]
fn bad_inputs_are_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let (cat, rec, cl) = copy_scenario(tmp.path());
    let line = |e: BumpError| {
        let plain = e.to_string();
        assert_eq!(format!("{e:#}"), plain);
        assert_eq!(format!("{:#}", anyhow::Error::new(e)), plain);
        plain
    };
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.image = "LMSYSORG/sglang:v0.5.20".into();
    let e = plan(&o).unwrap_err();
    assert!(matches!(&e, BumpError::Reference(r) if r.reference == "LMSYSORG/sglang:v0.5.20"));
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.key = "nope".into();
    let e = plan(&o).unwrap_err();
    assert!(
        matches!(&e, BumpError::KeyNotFound { key, files } if key == "nope" && files == std::slice::from_ref(&cat))
    );
    assert_eq!(
        line(e),
        format!("config key `nope` not found in {}", cat.display())
    );
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.catalogs = vec![cat.clone(), cat.clone()];
    let e = plan(&o).unwrap_err();
    assert!(matches!(e, BumpError::KeyInSeveralFiles { .. }));
    assert_eq!(
        line(e),
        format!(
            "config key `{KEY}` is defined in 2 files: {0}, {0}",
            cat.display()
        )
    );
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.catalogs = vec![];
    let e = plan(&o).unwrap_err();
    assert!(matches!(e, BumpError::NoCatalog));
    assert_eq!(line(e), "no catalog file given (--catalog)");
    let missing = tmp.path().join("missing.yaml");
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.catalogs = vec![missing.clone()];
    let e = plan(&o).unwrap_err();
    assert!(matches!(&e, BumpError::Io { op: IoOp::Read, path, .. } if path == &missing));
    assert_eq!(
        line(e),
        format!(
            "cannot read {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.pin_digest = true;
    let e = plan(&o).unwrap_err();
    assert!(matches!(e, BumpError::PinWithoutDigest));
    assert_eq!(line(e), "--pin-digest needs the digest: drop --no-resolve");
    let mut o = opts(
        &cat,
        &rec,
        &cl,
        Resolve::File(format!("{SCEN}/images.json").into()),
    );
    o.image = "lmsysorg/sglang:v0.5.21-cu130".into();
    let e = plan(&o).unwrap_err();
    assert!(
        matches!(&e, BumpError::NoProvenanceRecord { image, .. } if image == "lmsysorg/sglang:v0.5.21-cu130")
    );
    assert_eq!(
        line(e),
        format!("{SCEN}/images.json: no record for `lmsysorg/sglang:v0.5.21-cu130`")
    );
    let mut o = opts(&cat, &rec, &cl, Resolve::Off);
    o.pr_link = "https://example.com/1".into();
    let e = plan(&o).unwrap_err();
    assert!(matches!(e, BumpError::PrLink(_)));
    assert_eq!(line(e), "pr-link `https://example.com/1` must be https://github.com/SemiAnalysisAI/InferenceX/pull/<number> or an XXX placeholder");
    // A provenance file that is not JSON.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{ nope").unwrap();
    let e = plan(&opts(&cat, &rec, &cl, Resolve::File(bad.clone()))).unwrap_err();
    assert!(matches!(e, BumpError::ProvenanceNotJson { .. }));
    assert_eq!(
        line(e),
        format!(
            "{}: not JSON: key must be a string at line 1 column 3",
            bad.display()
        )
    );
}

/// A file changed between `plan` and `write`: refused, typed, nothing more written.
#[test]
fn write_refuses_a_file_changed_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let (cat, rec, cl) = copy_scenario(tmp.path());
    let p = plan(&opts(&cat, &rec, &cl, Resolve::Off)).unwrap();
    std::fs::write(&cat, "changed: {}\n").unwrap();
    let e = p.write(None).unwrap_err();
    assert!(matches!(&e, BumpError::ChangedMeanwhile { path } if path == &cat));
    assert_eq!(
        e.to_string(),
        format!(
            "{} changed while the bump was computed; nothing more written",
            cat.display()
        )
    );
    assert!(!tmp.path().join("provenance.json").exists());
}

#[test]
fn pin_digest_writes_tag_at_index_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let (cat, rec, cl) = copy_scenario(tmp.path());
    let mut o = opts(
        &cat,
        &rec,
        &cl,
        Resolve::File(format!("{SCEN}/images.json").into()),
    );
    o.pin_digest = true;
    let p = plan(&o).unwrap();
    let (_, plus) = p.catalog.as_ref().unwrap().changed_lines();
    assert_eq!(plus, vec!["  image: lmsysorg/sglang:v0.5.20-cu130@sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f"]);
}

/// Copies of the read-only shared files must be writable by the owner.
fn make_writable(p: impl AsRef<std::path::Path>) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(p.as_ref()).unwrap().permissions().mode();
    std::fs::set_permissions(p.as_ref(), std::fs::Permissions::from_mode(mode | 0o200)).unwrap();
}
