//! `servebench bump` records image provenance in the store (`image_provenance`, schema v2) in
//! addition to provenance.json, and a later sweep of that image records those digests with its
//! run. Runs on copies of shared/data/scenario in a temp dir; digests come from its images.json.

use crate::common;
use common::{copy_rw, ok, servebench_in, SCENARIO as SCEN};

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use servebench_store::Store;

const CHANGELOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex/perf-changelog.yaml"
);
const KEY: &str = "qwen3.8next-fp4-b200-sglang-agentic-mtp";
const RECIPE: &str = "qwen3.8next_fp4_b200_sglang_mtp.sh";
const NEW: &str = "lmsysorg/sglang:v0.5.20-cu130";

/// A writable copy of the scenario's catalog, recipe and change log in `d`.
fn scenario_copy(d: &Path) {
    std::fs::create_dir_all(d.join("recipes")).unwrap();
    copy_rw(&format!("{SCEN}/master.yaml"), &d.join("master.yaml"));
    copy_rw(
        &format!("{SCEN}/recipes/{RECIPE}"),
        &d.join("recipes").join(RECIPE),
    );
    copy_rw(CHANGELOG, &d.join("perf-changelog.yaml"));
}

fn bump(d: &Path, extra: &[&str]) -> Output {
    servebench_in(d)
        .args(["bump", KEY, "--image", NEW, "--catalog", "master.yaml"])
        .args(["--recipes", "recipes", "--changelog", "perf-changelog.yaml"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn bump_records_provenance_and_a_sweep_of_the_image_uses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    scenario_copy(d);
    let images_file = format!("{SCEN}/images.json");
    let images: Value =
        serde_json::from_str(&std::fs::read_to_string(&images_file).unwrap()).unwrap();

    let out = ok(&bump(d, &["--provenance", &images_file, "--db", "p.db"]));
    // By default the record goes to the store only: nothing untracked is left in the checkout.
    assert!(!d.join("provenance.json").exists(), "{out}");
    assert!(
        out.contains("Stored: image provenance in p.db (image_provenance 1, 2)"),
        "{out}"
    );

    let store = Store::open(d.join("p.db")).unwrap();
    let all = store.image_provenance(None).unwrap();
    assert_eq!(all.len(), 2);
    for (role, side) in [("new", "new"), ("old", "old")] {
        let want = &images[side];
        let p = &all
            .iter()
            .find(|p| p.provenance.role.as_deref() == Some(role))
            .unwrap_or_else(|| panic!("no {role} row"))
            .provenance;
        assert_eq!(p.image, want["ref"].as_str().unwrap());
        assert_eq!(p.config_key.as_deref(), Some(KEY));
        assert_eq!(p.index_digest.as_deref(), want["index_digest"].as_str());
        let plats: std::collections::BTreeMap<String, String> =
            serde_json::from_value(want.get("platform_digests").cloned().unwrap_or_default())
                .unwrap_or_default();
        assert_eq!(p.platform_digests, plats);
        let labels: std::collections::BTreeMap<String, String> =
            serde_json::from_value(want["labels"].clone()).unwrap();
        assert_eq!(p.labels, labels);
        assert!(p.source.contains("images.json"), "{}", p.source);
        assert_eq!(p.change["config_key"], KEY);
        assert_eq!(p.change["new_image"], NEW);
    }

    // a sweep of the new image finds its digests in the store
    let o = servebench_in(d)
        .args(["sweep", "--conc", "1", "--num-prompts", "2", "--isl", "32"])
        .args([
            "--osl",
            "16",
            "--sim-speedup",
            "20",
            "--out",
            "s",
            "--db",
            "p.db",
        ])
        .args(["--image", NEW, "--config-key", KEY])
        .output()
        .unwrap();
    let out = ok(&o);
    assert!(
        out.contains(&format!("image {NEW}: digests from the store")),
        "{out}"
    );
    let run = store.latest_run(None).unwrap().unwrap();
    assert_eq!(run.meta.image.as_deref(), Some(NEW));
    assert_eq!(run.meta.config_key.as_deref(), Some(KEY));
    assert_eq!(
        run.meta.index_digest.as_deref(),
        images["new"]["index_digest"].as_str()
    );
    assert_eq!(
        run.meta.platform_digest.as_deref(),
        images["new"]["platform_digests"]["linux/amd64"].as_str()
    );
    let facts: std::collections::BTreeMap<String, String> =
        store.provenance(run.id).unwrap().into_iter().collect();
    assert_eq!(
        facts.get("image.label.sgl-kernel").map(String::as_str),
        images["new"]["labels"]["sgl-kernel"].as_str()
    );
    assert!(facts["image.provenance"].starts_with("store image_provenance 1 "));
    assert_eq!(
        store.points(run.id).unwrap()[0]
            .row
            .servebench()
            .unwrap()
            .identity
            .image,
        NEW
    );
}

#[test]
fn unresolved_bump_records_why_and_dry_run_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    scenario_copy(d);

    let out = ok(&bump(d, &["--dry-run", "--no-resolve"]));
    assert!(out.contains("Dry run: nothing written."), "{out}");
    assert!(!d.join("servebench.db").exists(), "dry run: no store");

    let out = ok(&bump(d, &["--no-resolve", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["store"]["db"], "servebench.db");
    assert_eq!(v["store"]["image_provenance_ids"], serde_json::json!([1]));
    let store = Store::open(d.join("servebench.db")).unwrap();
    let all = store.image_provenance(None).unwrap();
    assert_eq!(
        all.len(),
        1,
        "no old row: the old image was not resolved either"
    );
    let p = &all[0].provenance;
    assert_eq!((p.image.as_str(), p.role.as_deref()), (NEW, Some("new")));
    assert!(p.index_digest.is_none() && p.platform_digests.is_empty());
    assert!(p.source.starts_with("not resolved: "), "{}", p.source);
    assert!(store.resolved_image_provenance(NEW).unwrap().is_none());
}

#[test]
fn bad_store_path_stops_the_bump_before_any_file_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    scenario_copy(d);
    let before = std::fs::read_to_string(d.join("master.yaml")).unwrap();
    let o = bump(d, &["--no-resolve", "--db", "missing-dir/x.db"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("missing-dir/x.db") && err.contains("does not exist"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("master.yaml")).unwrap(),
        before
    );
    assert!(!d.join("provenance.json").exists());
}
