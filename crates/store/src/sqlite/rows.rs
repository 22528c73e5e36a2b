//! SQLite: points, evals and image provenance in and out, and the [`Backend`] impl.

use std::path::Path;

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::SqliteStore;
use crate::backend::{Backend, BaselineCandidate, RunFilter};
use crate::columns::{now_utc, EvalColumns, PointColumns, RawPoint};
use crate::error::{fail, Context, Result};
use crate::{
    ImageProvenance, RunId, RunKind, RunMeta, RunRecord, RunStatus, StoredImageProvenance,
};

/// Checks inside `tx` that `run` exists and holds rows of the right origin: imported rows
/// (`foreign`) in baseline runs only, servebench rows in every other run.
fn check_origin(
    path: &Path,
    tx: &rusqlite::Transaction<'_>,
    run: RunId,
    foreign: bool,
) -> Result<()> {
    let kind: Option<String> = tx
        .query_row("SELECT kind FROM runs WHERE id = ?1", [run.0], |r| r.get(0))
        .optional()?;
    let Some(kind) = kind else {
        fail!("{}: run {run} does not exist", path.display());
    };
    crate::columns::check_origin_kind(path, run, &kind, foreign)
}

fn raw_point(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawPoint> {
    Ok(RawPoint {
        id: r.get(0)?,
        run_id: RunId(r.get(1)?),
        status: r.get(2)?,
        records_file: r.get(3)?,
        json: r.get(4)?,
        invalid_reason: r.get(5)?,
        hw: r.get(6)?,
    })
}

impl SqliteStore {
    fn insert_point(&mut self, run: RunId, foreign: bool, c: &PointColumns) -> Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        check_origin(&self.path, &tx, run, foreign)?;
        // an invalid point flags its run too, in the same transaction (a crash later keeps both)
        if let Some(tag) = c.run_flag() {
            tx.execute(
                "UPDATE runs SET invalid_reason = CASE WHEN invalid_reason IS NULL THEN ?1
                     ELSE invalid_reason || '; ' || ?1 END
                 WHERE id = ?2",
                params![tag, run.0],
            )?;
        }
        tx.execute(
            "INSERT INTO points (run_id, created_at, hw, framework, model_prefix, precision,
                spec_decoding, disagg, is_multinode, tp, ep, dp_attention, benchmark_type, isl,
                osl, conc, image, status, records_file, row_json, invalid_reason, power_source,
                power_valid, avg_power_w, total_gpu_energy_j, joules_per_output_token,
                joules_per_total_token)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)",
            params![
                run.0,
                now_utc(),
                c.hw,
                c.framework,
                c.model_prefix,
                c.precision,
                c.spec_decoding,
                c.disagg,
                c.is_multinode,
                c.tp,
                c.ep,
                c.dp_attention,
                c.benchmark_type,
                c.isl,
                c.osl,
                c.conc,
                c.image,
                c.status,
                c.records_file,
                c.json,
                c.invalid(),
                c.energy.source,
                c.energy.valid,
                c.energy.avg_power_w,
                c.energy.total_gpu_energy_j,
                c.energy.joules_per_output_token,
                c.energy.joules_per_total_token,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    fn insert_eval(&mut self, run: RunId, foreign: bool, c: &EvalColumns) -> Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        check_origin(&self.path, &tx, run, foreign)?;
        tx.execute(
            "INSERT INTO evals (run_id, created_at, task, score_name, conc, score, n_eff, row_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run.0,
                now_utc(),
                c.task,
                c.score_name,
                c.conc,
                c.score,
                c.n_eff,
                c.json,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    fn point_rows(&self, run: RunId) -> Result<Vec<RawPoint>> {
        let mut st = self.conn.prepare(
            "SELECT id, run_id, status, records_file, row_json, invalid_reason, hw FROM points
             WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = st.query_map([run.0], raw_point)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn eval_rows(&self, run: RunId) -> Result<Vec<(i64, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT id, row_json FROM evals WHERE run_id = ?1 ORDER BY id")?;
        let rows = st.query_map([run.0], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn baseline_candidates(
        &self,
        branch: &str,
        isl: i64,
        osl: i64,
        conc: i64,
    ) -> Result<Vec<BaselineCandidate>> {
        let mut st = self.conn.prepare(
            "SELECT p.id, p.run_id, p.status, p.records_file, p.row_json, p.invalid_reason, p.hw,
                    substr(r.created_at, 1, 10), r.created_at, r.kind
             FROM points p JOIN runs r ON r.id = p.run_id
             WHERE r.branch = ?1 AND p.isl = ?2 AND p.osl = ?3 AND p.conc = ?4
               AND p.status = 'ok'",
        )?;
        let rows = st.query_map(params![branch, isl, osl, conc], |r| {
            Ok(BaselineCandidate {
                point: raw_point(r)?,
                date: r.get(7)?,
                created_at: r.get(8)?,
                imported: r.get::<_, String>(9)? == RunKind::Baseline.as_str(),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub(crate) fn record_image_provenance(&mut self, p: &ImageProvenance, at: &str) -> Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO image_provenance (recorded_at, image, role, config_key, index_digest,
                platform_digests_json, labels_json, image_created, source, change_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                at,
                p.image,
                p.role,
                p.config_key,
                p.index_digest,
                serde_json::to_string(&p.platform_digests)?,
                serde_json::to_string(&p.labels)?,
                p.image_created,
                p.source,
                serde_json::to_string(&p.change)?,
            ],
        )
        .with_context(|| format!("{}: recording image provenance", self.path.display()))?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Image provenance rows, newest first: all of them, or those of one image reference.
    pub(crate) fn image_provenance(
        &self,
        image: Option<&str>,
    ) -> Result<Vec<StoredImageProvenance>> {
        let mut st = self.conn.prepare(
            "SELECT id, recorded_at, image, role, config_key, index_digest, platform_digests_json,
                    labels_json, image_created, source, change_json
             FROM image_provenance WHERE (?1 IS NULL OR image = ?1) ORDER BY id DESC",
        )?;
        let rows = st.query_map(params![image], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, Option<String>>(8)?,
                r.get::<_, String>(9)?,
                r.get::<_, String>(10)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (
                id,
                recorded_at,
                image,
                role,
                config_key,
                index_digest,
                plat,
                labels,
                created,
                source,
                change,
            ) = row?;
            let corrupt = |what: &str| {
                format!(
                    "{}: image provenance {id} has corrupt {what}",
                    self.path.display()
                )
            };
            out.push(StoredImageProvenance {
                id,
                recorded_at,
                provenance: ImageProvenance {
                    image,
                    role,
                    config_key,
                    index_digest,
                    platform_digests: serde_json::from_str(&plat)
                        .with_context(|| corrupt("platform digests"))?,
                    labels: serde_json::from_str(&labels).with_context(|| corrupt("labels"))?,
                    image_created: created,
                    source,
                    change: serde_json::from_str(&change)
                        .with_context(|| corrupt("change record"))?,
                },
            });
        }
        Ok(out)
    }
}

impl Backend for SqliteStore {
    fn location(&self) -> &Path {
        SqliteStore::location(self)
    }
    fn schema_version(&self) -> Result<i64> {
        SqliteStore::schema_version(self)
    }
    fn record_run(&mut self, meta: &RunMeta) -> Result<RunId> {
        SqliteStore::record_run(self, meta)
    }
    fn run_kind(&self, run: RunId) -> Result<Option<RunKind>> {
        SqliteStore::run_kind(self, run)
    }
    fn insert_point(&mut self, run: RunId, foreign: bool, c: &PointColumns) -> Result<i64> {
        SqliteStore::insert_point(self, run, foreign, c)
    }
    fn insert_eval(&mut self, run: RunId, foreign: bool, c: &EvalColumns) -> Result<i64> {
        SqliteStore::insert_eval(self, run, foreign, c)
    }
    fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()> {
        SqliteStore::set_provenance(self, run, key, value)
    }
    fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>> {
        SqliteStore::provenance(self, run)
    }
    fn set_status(&mut self, run: RunId, status: RunStatus, at: Option<String>) -> Result<()> {
        SqliteStore::set_status(self, run, status, at)
    }
    fn runs(&self, f: &RunFilter) -> Result<Vec<RunRecord>> {
        SqliteStore::runs(self, f)
    }
    fn point_rows(&self, run: RunId) -> Result<Vec<RawPoint>> {
        SqliteStore::point_rows(self, run)
    }
    fn eval_rows(&self, run: RunId) -> Result<Vec<(i64, String)>> {
        SqliteStore::eval_rows(self, run)
    }
    fn delete_point(&mut self, run: RunId, point_id: i64) -> Result<bool> {
        let n = self.conn.execute(
            "DELETE FROM points WHERE id = ?1 AND run_id = ?2",
            params![point_id, run.0],
        )?;
        Ok(n > 0)
    }
    fn delete_evals(&mut self, run: RunId) -> Result<usize> {
        Ok(self
            .conn
            .execute("DELETE FROM evals WHERE run_id = ?1", [run.0])?)
    }
    fn record_image_provenance(&mut self, p: &ImageProvenance, at: &str) -> Result<i64> {
        SqliteStore::record_image_provenance(self, p, at)
    }
    fn image_provenance(&self, image: Option<&str>) -> Result<Vec<StoredImageProvenance>> {
        SqliteStore::image_provenance(self, image)
    }
    fn integrity_check(&self) -> Result<()> {
        SqliteStore::integrity_check(self)
    }
    fn baseline_candidates(
        &self,
        branch: &str,
        isl: i64,
        osl: i64,
        conc: i64,
    ) -> Result<Vec<BaselineCandidate>> {
        SqliteStore::baseline_candidates(self, branch, isl, osl, conc)
    }
}
