//! PostgreSQL reads, and the [`Backend`] impl.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_postgres::Row;

use super::PgStore;
use crate::backend::{Backend, BaselineCandidate, RunFilter};
use crate::columns::{EvalColumns, PointColumns, RawPoint};
use crate::error::{err, Result};
use crate::{
    ImageProvenance, RunId, RunKind, RunMeta, RunRecord, RunStatus, StoredImageProvenance,
};

fn run_from_row(r: &Row) -> RunRecord {
    let kind = RunKind::parse(r.get("kind")).unwrap_or(RunKind::Sweep);
    let created_at: String = r.get("created_at");
    let meta_s: String = r.get("meta_json");
    RunRecord {
        id: RunId(r.get("workflow_run_id")),
        created_at: created_at.clone(),
        finished_at: r.get("finished_at"),
        kind,
        status: RunStatus::parse(r.get("status")).unwrap_or(RunStatus::Running),
        meta: RunMeta {
            kind,
            label: r.get("label"),
            endpoint: r.get("endpoint"),
            image: r.get("image"),
            index_digest: r.get("index_digest"),
            platform_digest: r.get("platform_digest"),
            config_key: r.get("config_key"),
            topology: r.get("topology"),
            workload: r.get("workload"),
            branch: r.get("head_branch"),
            servebench_version: r.get("servebench_version"),
            out_dir: r.get::<_, Option<String>>("out_dir").map(PathBuf::from),
            created_at: Some(created_at),
            meta: serde_json::from_str(&meta_s).unwrap_or(Value::Null),
        },
        n_points: r.get::<_, i64>("n_points") as u64,
        n_evals: r.get::<_, i64>("n_evals") as u64,
        invalid_reason: r.get("invalid_reason"),
    }
}

fn raw_point(r: &Row) -> RawPoint {
    RawPoint {
        id: r.get("id"),
        run_id: RunId(r.get("workflow_run_id")),
        status: r.get("status"),
        records_file: r.get("records_file"),
        json: r.get("row_json"),
        invalid_reason: r.get("invalid_reason"),
        hw: r.get("hw"),
    }
}

const POINT_COLS: &str =
    "p.id, p.workflow_run_id, p.status, p.records_file, p.row_json, p.invalid_reason, p.hw";

impl PgStore {
    fn runs(&self, f: &RunFilter) -> Result<Vec<RunRecord>> {
        let (id, kind, dir) = (
            f.id.map(|r| r.0),
            f.kind.map(|k| k.as_str()),
            f.out_dir.clone(),
        );
        let limit = f.limit.map(|l| l as i64);
        self.call("listing runs", move |c| {
            let dir = dir.clone();
            async move {
                let rows = c
                    .query(
                        "SELECT r.*, wr.head_branch,
                           (SELECT count(*) FROM servebench_points p
                             WHERE p.workflow_run_id = r.workflow_run_id) AS n_points,
                           (SELECT count(*) FROM servebench_evals e
                             WHERE e.workflow_run_id = r.workflow_run_id) AS n_evals
                         FROM servebench_runs r JOIN workflow_runs wr ON wr.id = r.workflow_run_id
                         WHERE ($1::bigint IS NULL OR r.workflow_run_id = $1)
                           AND ($2::text IS NULL OR r.kind = $2)
                           AND ($3::text IS NULL OR r.out_dir = $3)
                         ORDER BY r.workflow_run_id DESC LIMIT $4",
                        &[&id, &kind, &dir, &limit],
                    )
                    .await?;
                Ok(rows.iter().map(run_from_row).collect())
            }
        })
    }

    fn point_rows(&self, run: RunId) -> Result<Vec<RawPoint>> {
        self.call("reading points", move |c| async move {
            let sql = format!(
                "SELECT {POINT_COLS} FROM servebench_points p WHERE p.workflow_run_id = $1
                 ORDER BY p.id"
            );
            let rows = c.query(&sql, &[&run.0]).await?;
            Ok(rows.iter().map(raw_point).collect())
        })
    }

    fn eval_rows(&self, run: RunId) -> Result<Vec<(i64, String)>> {
        self.call("reading eval rows", move |c| async move {
            let rows = c
                .query(
                    "SELECT id, row_json FROM servebench_evals WHERE workflow_run_id = $1
                     ORDER BY id",
                    &[&run.0],
                )
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>> {
        self.call("reading provenance", move |c| async move {
            let rows = c
                .query(
                    "SELECT key, value FROM servebench_provenance WHERE workflow_run_id = $1
                     ORDER BY key",
                    &[&run.0],
                )
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn image_provenance(&self, image: Option<&str>) -> Result<Vec<StoredImageProvenance>> {
        let image = image.map(str::to_string);
        let loc = self.loc.display().to_string();
        self.call("reading image provenance", move |c| {
            let (image, loc) = (image.clone(), loc.clone());
            async move {
                let rows = c
                    .query(
                        "SELECT id, recorded_at, image, role, config_key, index_digest,
                                platform_digests_json, labels_json, image_created, source,
                                change_json
                         FROM servebench_image_provenance
                         WHERE ($1::text IS NULL OR image = $1) ORDER BY id DESC",
                        &[&image],
                    )
                    .await?;
                let mut out = Vec::new();
                for r in &rows {
                    let id: i64 = r.get(0);
                    let bad = |w: &str| err!("{loc}: image provenance {id} has corrupt {w}");
                    let json = |i: usize| r.get::<_, String>(i);
                    out.push(StoredImageProvenance {
                        id,
                        recorded_at: r.get(1),
                        provenance: ImageProvenance {
                            image: r.get(2),
                            role: r.get(3),
                            config_key: r.get(4),
                            index_digest: r.get(5),
                            platform_digests: serde_json::from_str(&json(6))
                                .map_err(|_| bad("platform digests"))?,
                            labels: serde_json::from_str(&json(7)).map_err(|_| bad("labels"))?,
                            image_created: r.get(8),
                            source: r.get(9),
                            change: serde_json::from_str(&json(10))
                                .map_err(|_| bad("change record"))?,
                        },
                    });
                }
                Ok(out)
            }
        })
    }

    fn schema_version(&self) -> Result<i64> {
        self.call("reading the schema version", |c| async move {
            let v: i32 = c
                .query_one("SELECT max(version) FROM servebench_schema", &[])
                .await?
                .get(0);
            Ok(v as i64)
        })
    }

    /// No point without its InferenceX row or with another run's; no identity twice.
    fn integrity_check(&self) -> Result<()> {
        let bad: i64 = self.call("checking integrity", |c| async move {
            let n: i64 = c
                .query_one(
                    "SELECT (SELECT count(*) FROM servebench_points p
                               JOIN benchmark_results b ON b.id = p.benchmark_result_id
                              WHERE b.workflow_run_id <> p.workflow_run_id)
                          + (SELECT count(*) FROM (SELECT 1 FROM benchmark_results
                               GROUP BY workflow_run_id, config_id, benchmark_type, isl, osl,
                                        conc, offload_mode HAVING count(*) > 1) d)
                          + (SELECT count(*) FROM benchmark_results b WHERE NOT EXISTS
                               (SELECT 1 FROM servebench_points p WHERE p.benchmark_result_id = b.id))",
                    &[],
                )
                .await?
                .get(0);
            Ok(n)
        })?;
        if bad != 0 {
            return Err(err!(
                "{}: integrity check failed: {bad} point rows without their own benchmark_results \
                 row, duplicated identities or orphan results",
                self.loc.display()
            ));
        }
        Ok(())
    }

    fn baseline_candidates(
        &self,
        branch: &str,
        isl: i64,
        osl: i64,
        conc: i64,
    ) -> Result<Vec<BaselineCandidate>> {
        let branch = branch.to_string();
        let (isl, osl, conc) = (isl as i32, osl as i32, conc as i32);
        self.call("choosing baseline rows", move |c| {
            let branch = branch.clone();
            async move {
                let sql = format!(
                    "SELECT {POINT_COLS}, to_char(br.date, 'YYYY-MM-DD') AS day, r.created_at AS rc,
                            r.kind
                     FROM benchmark_results br
                     JOIN workflow_runs wr ON wr.id = br.workflow_run_id
                     JOIN servebench_points p ON p.benchmark_result_id = br.id
                     JOIN servebench_runs r ON r.workflow_run_id = wr.id
                     WHERE wr.head_branch = $1 AND br.isl = $2 AND br.osl = $3 AND br.conc = $4
                       AND br.error IS NULL"
                );
                let rows = c.query(&sql, &[&branch, &isl, &osl, &conc]).await?;
                Ok(rows
                    .iter()
                    .map(|r| BaselineCandidate {
                        point: raw_point(r),
                        date: r.get("day"),
                        created_at: r.get("rc"),
                        imported: r.get::<_, &str>("kind") == RunKind::Baseline.as_str(),
                    })
                    .collect())
            }
        })
    }
}

impl Backend for PgStore {
    fn location(&self) -> &Path {
        PgStore::location(self)
    }
    fn schema_version(&self) -> Result<i64> {
        PgStore::schema_version(self)
    }
    fn record_run(&mut self, meta: &RunMeta) -> Result<RunId> {
        PgStore::record_run(self, meta)
    }
    fn run_kind(&self, run: RunId) -> Result<Option<RunKind>> {
        self.kind_of(run)
    }
    fn insert_point(&mut self, run: RunId, foreign: bool, c: &PointColumns) -> Result<i64> {
        PgStore::insert_point(self, run, foreign, c)
    }
    fn insert_eval(&mut self, run: RunId, foreign: bool, c: &EvalColumns) -> Result<i64> {
        PgStore::insert_eval(self, run, foreign, c)
    }
    fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()> {
        PgStore::set_provenance(self, run, key, value)
    }
    fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>> {
        PgStore::provenance(self, run)
    }
    fn set_status(&mut self, run: RunId, status: RunStatus, at: Option<String>) -> Result<()> {
        PgStore::set_status(self, run, status, at)
    }
    fn runs(&self, f: &RunFilter) -> Result<Vec<RunRecord>> {
        PgStore::runs(self, f)
    }
    fn point_rows(&self, run: RunId) -> Result<Vec<RawPoint>> {
        PgStore::point_rows(self, run)
    }
    fn eval_rows(&self, run: RunId) -> Result<Vec<(i64, String)>> {
        PgStore::eval_rows(self, run)
    }
    fn delete_point(&mut self, run: RunId, point_id: i64) -> Result<bool> {
        PgStore::delete_point(self, run, point_id)
    }
    fn delete_evals(&mut self, run: RunId) -> Result<usize> {
        PgStore::delete_evals(self, run)
    }
    fn record_image_provenance(&mut self, p: &ImageProvenance, at: &str) -> Result<i64> {
        PgStore::record_image_provenance(self, p, at)
    }
    fn image_provenance(&self, image: Option<&str>) -> Result<Vec<StoredImageProvenance>> {
        PgStore::image_provenance(self, image)
    }
    fn integrity_check(&self) -> Result<()> {
        PgStore::integrity_check(self)
    }
    fn baseline_candidates(
        &self,
        branch: &str,
        isl: i64,
        osl: i64,
        conc: i64,
    ) -> Result<Vec<BaselineCandidate>> {
        PgStore::baseline_candidates(self, branch, isl, osl, conc)
    }
}
