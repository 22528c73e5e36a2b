//! Schema version 2: `image_provenance` (what `servebench bump` resolved), and the 1 → 2
//! migration of an existing file.

mod common;

use std::collections::BTreeMap;

use serde_json::json;
use servebench_store::{ImageProvenance, RunKind, RunMeta, Store, SCHEMA_VERSION};

const IDX: &str = "sha256:06e4f2ed21afde4ff513cda65070124e727ba23ccaeff7712b8c40e1097d611f";
const AMD: &str = "sha256:b27f8c4e4ed0a6d8f0a3b7a4d0cf6b7f4a1b5f8e1e2f3a4b5c6d7e8f9a0b1c2d";
const ARM: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn prov(image: &str, role: Option<&str>, digest: Option<&str>) -> ImageProvenance {
    let mut plats = BTreeMap::new();
    if digest.is_some() {
        plats.insert("linux/arm64".to_string(), ARM.to_string());
        plats.insert("linux/amd64".to_string(), AMD.to_string());
    }
    ImageProvenance {
        image: image.into(),
        role: role.map(str::to_string),
        config_key: Some("qwen3.8next-fp4-b200-sglang-agentic-mtp".into()),
        index_digest: digest.map(str::to_string),
        platform_digests: plats,
        labels: [(
            "org.opencontainers.image.revision".to_string(),
            "abc123".to_string(),
        )]
        .into_iter()
        .collect(),
        image_created: Some("2026-09-18T10:00:00Z".into()),
        source: if digest.is_some() {
            "registry http://127.0.0.1:5000".into()
        } else {
            "not resolved (--no-resolve)".into()
        },
        change: json!({"config_key": "qwen3.8next-fp4-b200-sglang-agentic-mtp", "resolution": "x"}),
    }
}

#[test]
fn record_and_look_up_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("s.db")).unwrap();
    assert_eq!(SCHEMA_VERSION, 5);
    let img = "lmsysorg/sglang:v0.5.20-cu130";
    let a = s
        .record_image_provenance(&prov(img, Some("new"), Some(IDX)))
        .unwrap();
    let b = s
        .record_image_provenance(&prov(img, Some("new"), None))
        .unwrap();
    s.record_image_provenance(&prov("lmsysorg/sglang:old", Some("old"), Some(IDX)))
        .unwrap();
    assert!(b > a);

    let all = s.image_provenance(None).unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        all[0].provenance.image, "lmsysorg/sglang:old",
        "newest first"
    );

    let mine = s.image_provenance(Some(img)).unwrap();
    assert_eq!(mine.iter().map(|p| p.id).collect::<Vec<_>>(), vec![b, a]);
    // round trip of every field
    assert_eq!(mine[1].provenance, prov(img, Some("new"), Some(IDX)));
    assert!(mine[1].recorded_at.ends_with('Z'));

    // the newest row has no digest: the resolved lookup skips it
    let r = s.resolved_image_provenance(img).unwrap().unwrap();
    assert_eq!(r.id, a);
    assert_eq!(r.provenance.amd64_digest(), Some(AMD));
    assert!(s.resolved_image_provenance("nope:1").unwrap().is_none());
}

#[test]
fn bad_rows_are_refused_with_the_reason() {
    let mut s = Store::open_in_memory().unwrap();
    let e = s
        .record_image_provenance(&prov(" ", None, None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("without an image reference"), "{e}");
    let e = s
        .record_image_provenance(&prov("a:1", Some("candidate"), None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("role \"candidate\""), "{e}");
    assert!(s.image_provenance(None).unwrap().is_empty());
}

#[test]
fn version_1_file_migrates_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    {
        let mut s = Store::open(&db).unwrap();
        let mut m = RunMeta::new(RunKind::Sweep);
        m.label = Some("before".into());
        let run = s.record_run(&m).unwrap();
        s.add_point(run, &common::agg_row(1, "before")).unwrap();
    }
    // Turn the file back into a version-1 store (what servebench ≤ the previous build wrote).
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "DROP INDEX points_energy; ALTER TABLE points DROP COLUMN power_source;
             ALTER TABLE points DROP COLUMN power_valid; ALTER TABLE points DROP COLUMN avg_power_w;
             ALTER TABLE points DROP COLUMN total_gpu_energy_j;
             ALTER TABLE points DROP COLUMN joules_per_output_token;
             ALTER TABLE points DROP COLUMN joules_per_total_token;
             DROP TABLE image_provenance; ALTER TABLE points DROP COLUMN invalid_reason;
             ALTER TABLE runs DROP COLUMN invalid_reason; DROP INDEX runs_branch;
             ALTER TABLE runs DROP COLUMN branch; PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].meta.label.as_deref(), Some("before"));
    assert_eq!(runs[0].n_points, 1);
    s.record_image_provenance(&prov("x:1", None, Some(IDX)))
        .unwrap();
    assert_eq!(s.image_provenance(Some("x:1")).unwrap().len(), 1);
    s.integrity_check().unwrap();
}
