//! Store: every run in SQLite (the embedded default: WAL, migrations) or in PostgreSQL
//! (`--db postgres://…`: InferenceX-app's tables `workflow_runs`, `configs`,
//! `benchmark_results`, `eval_results`, servebench's extra data in `servebench_*` tables; a
//! connection pool, retries with backoff): run metadata, points as InferenceX agg rows, eval
//! rows, provenance, and the baseline row choice of InferenceX's compare_results.py.
//! Per-request records stay in files referenced by the run.
//!
//! Rows are typed: a run servebench measured holds [`AggRow`] points and [`EvalRow`] evals
//! ([`Store::add_point`], [`Store::add_eval`]); a baseline run holds the [`ForeignRow`]s that
//! `servebench_compare::import` made of a foreign file ([`Store::add_foreign_point`],
//! [`Store::add_foreign_eval`]). Reading gives them back as a [`StoredRow`]; the stored JSON
//! text (`row_json`) is the row's own JSON, byte for byte what earlier versions wrote, on
//! both backends.
//!
//! Must not know about: HTTP, how metrics are computed, comparisons, reports, git (the branch
//! of a run is given to it).
//!
//! SQLite's schema is documented in `docs/store.md` and versioned with `PRAGMA user_version`
//! (see [`SCHEMA_VERSION`]); PostgreSQL's in `docs/store-postgres.md`, versioned in
//! `servebench_schema` ([`PG_SCHEMA_VERSION`]). Concurrency: SQLite runs in WAL mode with a busy
//! timeout, every write its own `BEGIN IMMEDIATE` transaction; PostgreSQL writes each point in
//! one statement, idempotent on InferenceX's point identity. On both, a crash mid-sweep leaves
//! every point added before it stored (the run stays `running`).
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use servebench_contracts::{AggRow, EvalRow, ForeignRow, PointStatus};

use crate::backend::{Backend, RunFilter};
use crate::columns::{EvalColumns, PointColumns, RawPoint};
use crate::error::{err, fail, Context};
pub use crate::error::{Result, StoreError};

mod backend;
pub mod baseline;
mod columns;
mod energy;
pub mod error;
pub mod migrate;
mod pg;
mod resume;
mod sqlite;
mod types;

pub use pg::{redact_url, PG_SCHEMA_VERSION};
pub use sqlite::{BUSY_TIMEOUT, SCHEMA_VERSION};
pub use types::*;

/// Default database file (`./servebench.db`).
pub const DEFAULT_DB: &str = "servebench.db";

/// Whether `db` (a `--db` value) names a PostgreSQL database (`postgres://…` or
/// `postgresql://…`) rather than a SQLite file.
pub fn is_postgres_url(db: &Path) -> bool {
    db.to_str()
        .is_some_and(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// The results store: a SQLite file or a PostgreSQL database behind one API. Open one per
/// thread/process (PostgreSQL: each store has its own small connection pool).
pub struct Store {
    backend: Box<dyn Backend>,
}

impl Store {
    /// Opens the store `db`: a PostgreSQL URL (`postgres://user:pass@host:port/db`, see
    /// [`is_postgres_url`]) or a SQLite file (`sqlite:PATH` or a plain path), creating and
    /// migrating it if needed (SQLite: WAL, busy timeout, migrations in one `BEGIN IMMEDIATE`
    /// transaction, safe when several processes open a fresh file at once; PostgreSQL: DDL under
    /// an advisory lock).
    ///
    /// Errors (one line naming the file or the URL, its password hidden): the file cannot be
    /// opened or is not SQLite; the URL is malformed, the server cannot be reached, the password
    /// is wrong, the database does not exist; a schema newer than this build or not made by
    /// servebench.
    pub fn open(db: impl AsRef<Path>) -> Result<Store> {
        let db = db.as_ref();
        if is_postgres_url(db) {
            let url = db.to_str().expect("checked above");
            return Ok(Store {
                backend: Box::new(pg::PgStore::open(url)?),
            });
        }
        let path = match db.to_str() {
            Some(s) => match s.strip_prefix("sqlite://").or(s.strip_prefix("sqlite:")) {
                Some(p) => PathBuf::from(p),
                None => db.to_path_buf(),
            },
            None => db.to_path_buf(),
        };
        Ok(Store {
            backend: Box::new(sqlite::SqliteStore::open(&path)?),
        })
    }

    /// An in-memory SQLite store (tests, `--db :memory:`).
    pub fn open_in_memory() -> Result<Store> {
        Ok(Store {
            backend: Box::new(sqlite::SqliteStore::open_in_memory()?),
        })
    }

    /// The database: its file path, or its PostgreSQL URL with the password hidden
    /// (`postgres://user:***@host/db`).
    pub fn path(&self) -> &Path {
        self.backend.location()
    }

    /// The schema version of the open database (SQLite `PRAGMA user_version`; PostgreSQL
    /// `servebench_schema.version`).
    pub fn schema_version(&self) -> Result<i64> {
        self.backend.schema_version()
    }

    /// Records a new run with status `running` and returns its id (one transaction).
    pub fn record_run(&mut self, meta: &RunMeta) -> Result<RunId> {
        self.backend.record_run(meta)
    }

    /// Adds one point servebench measured (an [`AggRow`], contract.md) to `run`, in its own
    /// transaction, so a crash later in the sweep keeps it. The row is stored as its JSON
    /// (`row_json`, byte for byte what `agg.json` holds); identity columns (`hw`, `framework`,
    /// `infmax_model_prefix`, `precision`, `spec_decoding`, `disagg`, `is_multinode`, `tp`,
    /// `ep`, `dp_attention`, `benchmark_type`, `isl`, `osl`, `conc`, `image`, `point_status`,
    /// `records_file`) are copied into columns for queries. An invalid point (its row's
    /// `invalid_reasons`) flags its run in the same transaction. Per-request records are NOT
    /// stored: only the `records_file` path.
    ///
    /// Errors: the run does not exist, or is a baseline run (its points are imported rows:
    /// [`Store::add_foreign_point`]).
    pub fn add_point(&mut self, run: RunId, row: &AggRow) -> Result<i64> {
        let cols = PointColumns::of_agg(row)?;
        self.backend.insert_point(run, false, &cols)
    }

    /// Adds one imported point (a [`ForeignRow`] that `servebench_compare::import` made of an
    /// InferenceX row or a baseline-table point) to the baseline run `run`, like
    /// [`Store::add_point`]: the row's JSON stored as it is, identity columns read from its keys
    /// (`infmax_model_prefix` or `model_prefix`; multinode rows: `prefill_tp`, `prefill_ep`,
    /// `prefill_dp_attention`; AgentX rows: `scenario_type: agentic-coding` →
    /// `agentic_traces`).
    ///
    /// Errors: the run does not exist or is not a baseline run.
    pub fn add_foreign_point(&mut self, run: RunId, row: &ForeignRow) -> Result<i64> {
        let cols = PointColumns::of_foreign(row)?;
        self.backend.insert_point(run, true, &cols)
    }

    /// Adds a point read from a store (another file, e.g. a job's `point.db`) to `run`, as it
    /// was stored: [`Store::add_point`] or [`Store::add_foreign_point`].
    pub fn copy_point(&mut self, run: RunId, point: &StoredPoint) -> Result<i64> {
        match &point.row {
            StoredRow::Servebench(r) => self.add_point(run, r),
            StoredRow::Imported(r) => self.add_foreign_point(run, r),
        }
    }

    /// Adds one eval row servebench wrote ([`EvalRow`], MEASUREMENT §4.4 fields with the
    /// stage's extra keys) to `run`, in its own transaction. Stored as its JSON (`row_json`);
    /// `task`, `score_name`, `conc`, `score` (`em_strict` when there is no score) and `n_eff`
    /// are copied into columns.
    ///
    /// Errors: the run does not exist, or is a baseline run ([`Store::add_foreign_eval`]).
    pub fn add_eval(&mut self, run: RunId, row: &EvalRow) -> Result<i64> {
        let cols = EvalColumns::of_eval(row)?;
        self.backend.insert_eval(run, false, &cols)
    }

    /// Adds one imported eval row (a [`ForeignRow`] `servebench_compare::import` made of an
    /// InferenceX `agg_eval_all.json` row or a baseline-table eval) to the baseline run `run`,
    /// like [`Store::add_eval`]; columns from `task`, `score_name` (or `metric`), `conc`,
    /// `score` (or `em_strict`), `n_eff` (or `samples`).
    ///
    /// Errors: the row has no `task`; the run does not exist or is not a baseline run.
    pub fn add_foreign_eval(&mut self, run: RunId, row: &ForeignRow) -> Result<i64> {
        let cols = EvalColumns::of_foreign(run, row)?;
        self.backend.insert_eval(run, true, &cols)
    }

    /// Adds an eval row read from a store to `run`, as it was stored: [`Store::add_eval`] or
    /// [`Store::add_foreign_eval`].
    pub fn copy_eval(&mut self, run: RunId, eval: &StoredEval) -> Result<i64> {
        match &eval.row {
            StoredRow::Servebench(r) => self.add_eval(run, r),
            StoredRow::Imported(r) => self.add_foreign_eval(run, r),
        }
    }

    /// Records (or replaces) one provenance fact of a run, e.g. `image.index_digest`,
    /// `image.platform_digest.linux/amd64`, `source.file`, `source.sha256`, `git.commit`.
    pub fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()> {
        self.backend.set_provenance(run, key, value)
    }

    /// A run's provenance facts, sorted by key.
    pub fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>> {
        self.backend.provenance(run)
    }

    /// Marks a run finished with `status` and the current time.
    pub fn finish_run(&mut self, run: RunId, status: RunStatus) -> Result<()> {
        self.backend
            .set_status(run, status, Some(columns::now_utc()))
    }

    /// Runs, newest first (by id), optionally only of `kind`, at most `limit` (`None` = all).
    pub fn list_runs(&self, kind: Option<RunKind>, limit: Option<usize>) -> Result<Vec<RunRecord>> {
        self.backend.runs(&RunFilter {
            kind,
            limit,
            ..RunFilter::default()
        })
    }

    /// One run, or `None`.
    pub fn get_run(&self, run: RunId) -> Result<Option<RunRecord>> {
        let f = RunFilter {
            id: Some(run),
            ..RunFilter::default()
        };
        Ok(self.backend.runs(&f)?.into_iter().next())
    }

    /// The newest run (highest id), optionally of `kind`.
    pub fn latest_run(&self, kind: Option<RunKind>) -> Result<Option<RunRecord>> {
        Ok(self.list_runs(kind, Some(1))?.into_iter().next())
    }

    /// Parses a stored point; `imported` when its run is a baseline run.
    pub(crate) fn parse_point(&self, p: RawPoint, imported: bool) -> Result<StoredPoint> {
        let (run, id) = (p.run_id, p.id);
        let at = || format!("{}: run {run}, point {id}", self.path().display());
        let v: Value =
            serde_json::from_str(&p.json).with_context(|| format!("{} has a corrupt row", at()))?;
        let row = if imported {
            StoredRow::Imported(
                ForeignRow::from_value(v)
                    .ok_or_else(|| err!("{}: stored row is not a JSON object", at()))?,
            )
        } else {
            StoredRow::Servebench(
                AggRow::from_value(&v)
                    .map_err(|e| err!("{}: stored row is not an agg row: {e}", at()))?,
            )
        };
        let status = PointStatus::parse(&p.status).ok_or_else(|| {
            err!(
                "{}: column `status` is {:?}, expected ok, failed, partial or invalid",
                at(),
                p.status
            )
        })?;
        Ok(StoredPoint {
            id,
            run_id: run,
            status,
            hw: p.hw,
            records_file: p.records_file,
            invalid_reason: p.invalid_reason,
            row,
        })
    }

    /// A run's points in insertion order (none for a run that does not exist).
    ///
    /// Errors: a stored row is not what its run holds, e.g. `servebench.db: run 3, point 12:
    /// stored row is not an agg row: agg row: `api` is missing or not a string`.
    pub fn points(&self, run: RunId) -> Result<Vec<StoredPoint>> {
        let Some(kind) = self.backend.run_kind(run)? else {
            return Ok(Vec::new());
        };
        let imported = kind == RunKind::Baseline;
        let rows = self.backend.point_rows(run)?;
        rows.into_iter()
            .map(|p| self.parse_point(p, imported))
            .collect()
    }

    /// A run's eval rows in insertion order (none for a run that does not exist).
    ///
    /// Errors: a stored row is not what its run holds, e.g. `servebench.db: run 3, eval 2:
    /// stored row is not an eval row: missing field `n_eff``.
    pub fn evals(&self, run: RunId) -> Result<Vec<StoredEval>> {
        let Some(kind) = self.backend.run_kind(run)? else {
            return Ok(Vec::new());
        };
        let imported = kind == RunKind::Baseline;
        let mut out = Vec::new();
        for (id, json) in self.backend.eval_rows(run)? {
            let at = || format!("{}: run {run}, eval {id}", self.path().display());
            let v: Value = serde_json::from_str(&json)
                .with_context(|| format!("{} has a corrupt row", at()))?;
            let row = if imported {
                StoredRow::Imported(
                    ForeignRow::from_value(v)
                        .ok_or_else(|| err!("{}: stored row is not a JSON object", at()))?,
                )
            } else {
                StoredRow::Servebench(
                    serde_json::from_value::<EvalRow>(v)
                        .map_err(|e| err!("{}: stored row is not an eval row: {e}", at()))?,
                )
            };
            out.push(StoredEval {
                id,
                run_id: run,
                row,
            });
        }
        Ok(out)
    }

    /// Records one image's provenance (`image_provenance`, one transaction) and returns the
    /// row id. Nothing is deduplicated: every bump adds its rows, the newest wins on lookup.
    ///
    /// Errors: empty image reference; the database cannot be written.
    pub fn record_image_provenance(&mut self, p: &ImageProvenance) -> Result<i64> {
        if p.image.trim().is_empty() {
            fail!("image provenance without an image reference");
        }
        if let Some(r) = p.role.as_deref() {
            if r != "old" && r != "new" {
                fail!("image provenance role {r:?}: expected `old` or `new`");
            }
        }
        self.backend.record_image_provenance(p, &columns::now_utc())
    }

    /// Image provenance rows, newest first: all of them, or those of one image reference.
    pub fn image_provenance(&self, image: Option<&str>) -> Result<Vec<StoredImageProvenance>> {
        self.backend.image_provenance(image)
    }

    /// The newest provenance of `image` that has at least one digest (index or platform), if
    /// any: what a sweep of that image records as its digests.
    pub fn resolved_image_provenance(&self, image: &str) -> Result<Option<StoredImageProvenance>> {
        Ok(self.image_provenance(Some(image))?.into_iter().find(|p| {
            p.provenance.index_digest.is_some() || !p.provenance.platform_digests.is_empty()
        }))
    }

    /// Checks the database: SQLite `PRAGMA integrity_check`; PostgreSQL: no point row without
    /// its `benchmark_results` row, no identity twice. `Ok(())` when sound.
    pub fn integrity_check(&self) -> Result<()> {
        self.backend.integrity_check()
    }
}
