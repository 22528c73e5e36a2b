//! The SQLite backend (the embedded default): one connection, WAL, busy timeout, every write
//! its own `BEGIN IMMEDIATE` transaction, migrations under `PRAGMA user_version`.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;

use crate::backend::RunFilter;
use crate::columns::now_utc;
use crate::error::{fail, Context, Result, StoreError};
use crate::{RunId, RunKind, RunMeta, RunRecord, RunStatus};

mod rows;
pub mod schema;

pub use schema::{BUSY_TIMEOUT, SCHEMA_VERSION};

/// One SQLite connection. Open one per thread/process; SQLite (WAL + busy timeout +
/// `BEGIN IMMEDIATE`) serialises writers.
pub(crate) struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating if needed) the file, switches it to WAL, migrates.
    pub(crate) fn open(path: &Path) -> Result<SqliteStore> {
        let path = path.to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.exists() {
                fail!(
                    "{}: directory {} does not exist",
                    path.display(),
                    parent.display()
                );
            }
        }
        let conn = Connection::open(&path)
            .with_context(|| format!("{}: cannot open the results store", path.display()))?;
        let mut store = SqliteStore { conn, path };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// An in-memory database.
    pub(crate) fn open_in_memory() -> Result<SqliteStore> {
        let conn = Connection::open_in_memory()?;
        let mut store = SqliteStore {
            conn,
            path: PathBuf::from(":memory:"),
        };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    fn configure(&mut self) -> Result<()> {
        let p = self.path.display().to_string();
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .with_context(|| format!("{p}: setting busy timeout"))?;
        // journal_mode returns a row; WAL persists in the file once set. Switching a new file
        // to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once (without the
        // busy handler) while another process is doing the same switch or creating the schema:
        // retry within the busy timeout so two servebench processes can open a new store at once.
        let started = std::time::Instant::now();
        let mode: String = loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(mode) => break mode,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    return Err(StoreError::context(
                        e,
                        format!("{p}: not a SQLite database, or it cannot be written"),
                    ))
                }
            }
        };
        if mode != "wal" && mode != "memory" {
            fail!("{p}: cannot switch the store to WAL (journal_mode is {mode})");
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;")
            .with_context(|| format!("{p}: configuring"))?;
        Ok(())
    }

    fn migrate(&mut self) -> Result<()> {
        let p = self.path.display().to_string();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .with_context(|| format!("{p}: locking for migration"))?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            fail!(
                "{p}: store schema version {version} is newer than this servebench \
                 understands ({SCHEMA_VERSION}); upgrade servebench"
            );
        }
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("{p}: migration {} → {}", i, i + 1))?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn run_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
        let kind_s: String = r.get("kind")?;
        let status_s: String = r.get("status")?;
        let meta_s: String = r.get("meta_json")?;
        let kind = RunKind::parse(&kind_s).unwrap_or(RunKind::Sweep);
        let created_at: String = r.get("created_at")?;
        Ok(RunRecord {
            id: RunId(r.get("id")?),
            created_at: created_at.clone(),
            finished_at: r.get("finished_at")?,
            kind,
            status: RunStatus::parse(&status_s).unwrap_or(RunStatus::Running),
            meta: RunMeta {
                kind,
                label: r.get("label")?,
                endpoint: r.get("endpoint")?,
                image: r.get("image")?,
                index_digest: r.get("index_digest")?,
                platform_digest: r.get("platform_digest")?,
                config_key: r.get("config_key")?,
                topology: r.get("topology")?,
                workload: r.get("workload")?,
                branch: r.get("branch")?,
                servebench_version: r.get("servebench_version")?,
                out_dir: r.get::<_, Option<String>>("out_dir")?.map(PathBuf::from),
                created_at: Some(created_at),
                meta: serde_json::from_str(&meta_s).unwrap_or(Value::Null),
            },
            n_points: r.get::<_, i64>("n_points")? as u64,
            n_evals: r.get::<_, i64>("n_evals")? as u64,
            invalid_reason: r.get("invalid_reason")?,
        })
    }

    pub(crate) fn location(&self) -> &Path {
        &self.path
    }

    pub(crate) fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    pub(crate) fn record_run(&mut self, meta: &RunMeta) -> Result<RunId> {
        let created = meta.created_at.clone().unwrap_or_else(now_utc);
        let meta_json = serde_json::to_string(&meta.meta)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (created_at, kind, status, label, endpoint, image, index_digest,
                platform_digest, config_key, topology, workload, servebench_version, out_dir,
                meta_json, branch)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                created,
                meta.kind.as_str(),
                meta.label,
                meta.endpoint,
                meta.image,
                meta.index_digest,
                meta.platform_digest,
                meta.config_key,
                meta.topology,
                meta.workload,
                meta.servebench_version,
                meta.out_dir.as_ref().map(|p| p.display().to_string()),
                meta_json,
                meta.branch,
            ],
        )
        .with_context(|| format!("{}: recording the run", self.path.display()))?;
        let id = RunId(tx.last_insert_rowid());
        tx.commit()?;
        Ok(id)
    }

    pub(crate) fn run_kind(&self, run: RunId) -> Result<Option<RunKind>> {
        let kind: Option<String> = self
            .conn
            .query_row("SELECT kind FROM runs WHERE id = ?1", [run.0], |r| r.get(0))
            .optional()?;
        Ok(kind.and_then(|k| RunKind::parse(&k)))
    }

    pub(crate) fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()> {
        if self.run_kind(run)?.is_none() {
            fail!("{}: run {run} does not exist", self.path.display());
        }
        self.conn.execute(
            "INSERT INTO provenance (run_id, key, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
            params![run.0, key, value],
        )?;
        Ok(())
    }

    pub(crate) fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT key, value FROM provenance WHERE run_id = ?1 ORDER BY key")?;
        let rows = st.query_map([run.0], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub(crate) fn set_status(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished: Option<String>,
    ) -> Result<()> {
        let n = self.conn.execute(
            "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
            params![status.as_str(), finished, run.0],
        )?;
        if n == 0 {
            fail!("{}: run {run} does not exist", self.path.display());
        }
        Ok(())
    }

    pub(crate) fn runs(&self, f: &RunFilter) -> Result<Vec<RunRecord>> {
        let sql = "SELECT runs.*,
                (SELECT COUNT(*) FROM points WHERE points.run_id = runs.id) AS n_points,
                (SELECT COUNT(*) FROM evals WHERE evals.run_id = runs.id) AS n_evals
             FROM runs
             WHERE (?1 IS NULL OR id = ?1) AND (?2 IS NULL OR kind = ?2)
               AND (?3 IS NULL OR out_dir = ?3)
             ORDER BY id DESC LIMIT ?4";
        let mut st = self.conn.prepare(sql)?;
        let lim = f.limit.map_or(-1, |l| l as i64);
        let rows = st.query_map(
            params![
                f.id.map(|r| r.0),
                f.kind.map(|k| k.as_str()),
                f.out_dir,
                lim
            ],
            Self::run_from_row,
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub(crate) fn integrity_check(&self) -> Result<()> {
        let r: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        if r != "ok" {
            fail!("{}: integrity check failed: {r}", self.path.display());
        }
        Ok(())
    }
}
