//! `servebench store migrate`: every run (with its points, evals, provenance, status and
//! times), and every image provenance row, from one store into another (SQLite ↔ PostgreSQL),
//! oldest first; then the same checksum computed over what each side holds.
//!
//! The checksum is SHA-256 over, per run in order: its metadata (kind, created and finished
//! times, status, label, endpoint, image and digests, config key, topology, workload, branch,
//! version, output directory, `meta_json`, invalid reason), each point's status, hardware,
//! records file, invalid reason and verbatim `row_json`, each eval's `row_json`, each
//! provenance fact; then every image provenance row. Ids are not part of it (the target numbers
//! its runs itself), so equal checksums mean nothing was lost or altered.

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::{RunMeta, RunStatus, Store};

/// What a migration moved, and the two checksums (equal when nothing was lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateReport {
    /// Runs copied.
    pub runs: u64,
    /// Points copied.
    pub points: u64,
    /// Eval rows copied.
    pub evals: u64,
    /// Provenance facts copied.
    pub provenance: u64,
    /// Image provenance rows copied.
    pub images: u64,
    /// Checksum of the source (hex SHA-256, module docs).
    pub source_sha256: String,
    /// Checksum of the copied runs as the target holds them.
    pub target_sha256: String,
}

/// Counts and the checksum of a set of runs (all when `only` is `None`) of `store`.
pub fn checksum(
    store: &Store,
    only: Option<&[crate::RunId]>,
) -> Result<(u64, u64, u64, u64, u64, String)> {
    let mut h = Sha256::new();
    let (mut runs, mut points, mut evals, mut prov) = (0, 0, 0, 0);
    let mut list = store.list_runs(None, None)?;
    list.reverse();
    for r in list {
        if only.is_some_and(|ids| !ids.contains(&r.id)) {
            continue;
        }
        runs += 1;
        let m = &r.meta;
        let head = json!([
            m.kind.as_str(),
            r.created_at,
            r.finished_at,
            r.status.as_str(),
            m.label,
            m.endpoint,
            m.image,
            m.index_digest,
            m.platform_digest,
            m.config_key,
            m.topology,
            m.workload,
            m.branch,
            m.servebench_version,
            m.out_dir.as_ref().map(|p| p.display().to_string()),
            m.meta,
            r.invalid_reason
        ]);
        h.update(head.to_string().as_bytes());
        for p in store.points(r.id)? {
            points += 1;
            let cols = json!([p.status.as_str(), p.hw, p.records_file, p.invalid_reason]);
            h.update(cols.to_string().as_bytes());
            h.update(serde_json::to_string(&p.row)?.as_bytes());
        }
        for e in store.evals(r.id)? {
            evals += 1;
            h.update(serde_json::to_string(&e.row)?.as_bytes());
        }
        for (k, v) in store.provenance(r.id)? {
            prov += 1;
            h.update(json!([k, v]).to_string().as_bytes());
        }
    }
    let mut images = 0;
    let mut imgs = store.image_provenance(None)?;
    imgs.reverse();
    for i in imgs {
        images += 1;
        h.update(i.recorded_at.as_bytes());
        h.update(serde_json::to_string(&i.provenance)?.as_bytes());
    }
    Ok((runs, points, evals, prov, images, hex::encode(h.finalize())))
}

/// Copies every run and image provenance row of `from` into `to` (module docs).
///
/// Errors: reading or writing either store; a half-copied run stays in `to` with status
/// `running` (migrate into an empty store and start again).
pub fn migrate(from: &Store, to: &mut Store) -> Result<MigrateReport> {
    let (runs, points, evals, provenance, images, source_sha256) = checksum(from, None)?;
    let mut list = from.list_runs(None, None)?;
    list.reverse();
    let mut copied = Vec::new();
    for r in list {
        let meta = RunMeta {
            created_at: Some(r.created_at.clone()),
            ..r.meta.clone()
        };
        let id = to.record_run(&meta)?;
        for p in from.points(r.id)? {
            to.copy_point(id, &p)?;
        }
        for e in from.evals(r.id)? {
            to.copy_eval(id, &e)?;
        }
        for (k, v) in from.provenance(r.id)? {
            to.set_provenance(id, &k, &v)?;
        }
        if r.status != RunStatus::Running || r.finished_at.is_some() {
            to.backend.set_status(id, r.status, r.finished_at.clone())?;
        }
        copied.push(id);
    }
    let mut imgs = from.image_provenance(None)?;
    imgs.reverse();
    for i in imgs {
        to.backend
            .record_image_provenance(&i.provenance, &i.recorded_at)?;
    }
    let (.., target_sha256) = checksum(to, Some(&copied))?;
    Ok(MigrateReport {
        runs,
        points,
        evals,
        provenance,
        images,
        source_sha256,
        target_sha256,
    })
}
