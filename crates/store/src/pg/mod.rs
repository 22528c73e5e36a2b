//! The PostgreSQL backend (`--db postgres://…`): tokio-postgres through a deadpool pool, on a
//! small runtime of its own, so the store's API stays blocking (callers inside or outside an
//! async runtime alike: each call is spawned on this runtime and waited for on a channel).
//!
//! Faults: a dropped connection (or a server restarting) is retried with exponential backoff
//! ([`RETRIES`] tries, 100 ms doubling up to 2 s) and said in one line on stderr; every write
//! is idempotent (a token per call, InferenceX's point identity), so a write whose commit
//! reached the server before the connection dropped is not doubled by its retry. A wrong
//! URL, password or database, and a schema of another version, fail at open in one line
//! naming the URL with its password hidden.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::baseline::ConfigKey;
use crate::error::{err, Result, StoreError};
use crate::{RunId, RunKind};

mod read;
pub mod schema;
mod write;

pub use schema::PG_SCHEMA_VERSION;

/// Tries of one operation whose connection dropped (the first included).
pub const RETRIES: u32 = 8;

/// Connections one store keeps open at most.
const POOL_SIZE: usize = 4;

/// `url` with its password hidden: `postgres://user:***@host/db` (also a `password=` query
/// parameter).
pub fn redact_url(url: &str) -> String {
    let s = servebench_contracts::redact::url(url);
    match s.find("password=") {
        Some(i) => {
            let end = s[i..].find('&').map_or(s.len(), |e| i + e);
            format!("{}password=***{}", &s[..i], &s[end..])
        }
        None => s,
    }
}

/// Why one PostgreSQL operation failed: retryable (the connection) or not.
pub(crate) enum PgErr {
    /// From the driver or the pool.
    Pool(PoolError),
    /// From the driver on a connection.
    Pg(tokio_postgres::Error),
    /// A servebench error (e.g. the run does not exist): never retried.
    Store(StoreError),
}

impl From<tokio_postgres::Error> for PgErr {
    fn from(e: tokio_postgres::Error) -> PgErr {
        PgErr::Pg(e)
    }
}
impl From<PoolError> for PgErr {
    fn from(e: PoolError) -> PgErr {
        PgErr::Pool(e)
    }
}
impl From<StoreError> for PgErr {
    fn from(e: StoreError) -> PgErr {
        PgErr::Store(e)
    }
}
impl From<serde_json::Error> for PgErr {
    fn from(e: serde_json::Error) -> PgErr {
        PgErr::Store(e.into())
    }
}

/// One line for a driver error: the server's message and SQLSTATE, or the I/O cause.
pub(crate) fn pg_msg(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

impl PgErr {
    /// Whether trying again on a fresh connection may succeed: the connection closed or failed
    /// on I/O, the server is starting or shutting down, a serialization failure or deadlock.
    fn retryable(&self) -> bool {
        let pg = match self {
            PgErr::Pool(PoolError::Backend(e)) => e,
            PgErr::Pool(PoolError::Timeout(_)) => return true,
            PgErr::Pool(_) | PgErr::Store(_) => return false,
            PgErr::Pg(e) => e,
        };
        match pg.as_db_error() {
            Some(db) => {
                let c = db.code().code();
                c.starts_with("08") || ["57P01", "57P02", "57P03", "40001", "40P01"].contains(&c)
            }
            None => {
                pg.is_closed()
                    || std::error::Error::source(pg).is_some_and(|s| s.is::<std::io::Error>())
            }
        }
    }

    fn into_store(self, loc: &str, what: &str) -> StoreError {
        match self {
            PgErr::Store(e) => e,
            PgErr::Pg(e) => err!("{loc}: {what}: {}", pg_msg(&e)),
            PgErr::Pool(PoolError::Backend(e)) => err!("{loc}: {what}: {}", pg_msg(&e)),
            PgErr::Pool(e) => err!("{loc}: {what}: {e}"),
        }
    }
}

/// A PostgreSQL store: a connection pool on a runtime of its own.
pub(crate) struct PgStore {
    rt: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// The URL, password hidden.
    loc: PathBuf,
    /// Kinds of runs seen (a run's kind never changes): the origin check without a query.
    kinds: Mutex<HashMap<RunId, RunKind>>,
    /// `configs.id` of configs written or read.
    configs: std::sync::Arc<Mutex<HashMap<ConfigKey, i32>>>,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // dropping a runtime blocks; inside an async caller that panics, so let it go instead
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl PgStore {
    /// Connects, checks the server (PostgreSQL ≥ 15) and the schema, migrates.
    pub(crate) fn open(url: &str) -> Result<PgStore> {
        let loc = redact_url(url);
        let cfg: tokio_postgres::Config = url
            .parse()
            .map_err(|e| err!("{loc}: not a valid PostgreSQL URL: {e}"))?;
        if cfg.get_dbname().is_none() {
            return Err(err!(
                "{loc}: the URL names no database (postgres://user@host:port/DATABASE)"
            ));
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("servebench-store-pg")
            .enable_all()
            .build()
            .map_err(|e| err!("{loc}: cannot start the PostgreSQL client runtime: {e}"))?;
        let mgr = Manager::from_config(
            cfg,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = {
            let _guard = rt.enter();
            Pool::builder(mgr)
                .max_size(POOL_SIZE)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .create_timeout(Some(Duration::from_secs(10)))
                .build()
                .map_err(|e| err!("{loc}: cannot create the connection pool: {e}"))?
        };
        let store = PgStore {
            rt: Some(rt),
            pool,
            loc: PathBuf::from(&loc),
            kinds: Mutex::new(HashMap::new()),
            configs: Default::default(),
        };
        store.block(schema_open(store.pool.clone(), loc))?;
        Ok(store)
    }

    /// Runs `fut` on the store's runtime and waits for it (from any thread, async or not).
    fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        let rt = self.rt.as_ref().expect("runtime lives until drop");
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| err!("{}: the PostgreSQL client stopped", self.loc.display()))?
    }

    /// Runs `op` on a pooled connection; a dropped connection is retried with backoff (one
    /// line on stderr at the first retry). `what` names the operation in errors.
    pub(crate) fn call<T, F, Fut>(&self, what: &'static str, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(Object) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<T, PgErr>> + Send + 'static,
    {
        let pool = self.pool.clone();
        let loc = self.loc.display().to_string();
        self.block(async move {
            let mut delay = Duration::from_millis(100);
            for attempt in 1..=RETRIES {
                let r = match pool.get().await {
                    Ok(c) => op(c).await,
                    Err(e) => Err(PgErr::Pool(e)),
                };
                match r {
                    Ok(v) => return Ok(v),
                    Err(e) if e.retryable() && attempt < RETRIES => {
                        if attempt == 1 {
                            let why = match &e {
                                PgErr::Pg(p) | PgErr::Pool(PoolError::Backend(p)) => pg_msg(p),
                                PgErr::Pool(p) => p.to_string(),
                                PgErr::Store(s) => s.to_string(),
                            };
                            eprintln!(
                                "{loc}: {what}: connection lost ({why}); retrying with backoff \
                                 (up to {RETRIES} tries, ~10 s)"
                            );
                        }
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(2));
                    }
                    Err(e) => return Err(e.into_store(&loc, what)),
                }
            }
            unreachable!("the last attempt returns")
        })
    }

    pub(crate) fn location(&self) -> &Path {
        &self.loc
    }

    /// The kind of `run`, cached.
    pub(crate) fn kind_of(&self, run: RunId) -> Result<Option<RunKind>> {
        if let Some(k) = self.kinds.lock().unwrap().get(&run) {
            return Ok(Some(*k));
        }
        let kind = self.call("reading a run", move |c| async move {
            let row = c
                .query_opt(
                    "SELECT kind FROM servebench_runs WHERE workflow_run_id = $1",
                    &[&run.0],
                )
                .await?;
            Ok(row.and_then(|r| RunKind::parse(r.get::<_, &str>(0))))
        })?;
        if let Some(k) = kind {
            self.kinds.lock().unwrap().insert(run, k);
        }
        Ok(kind)
    }
}

/// At open: one connection (errors said plainly, not retried), server version, schema check
/// and migrations under an advisory lock.
async fn schema_open(pool: Pool, loc: String) -> Result<()> {
    let mut c = pool.get().await.map_err(|e| match e {
        PoolError::Backend(p) => err!("{loc}: cannot connect: {}", pg_msg(&p)),
        other => err!("{loc}: cannot connect: {other}"),
    })?;
    let q = |e: tokio_postgres::Error| err!("{loc}: checking the schema: {}", pg_msg(&e));
    let ver: i32 = c
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .map_err(q)?
        .get(0);
    if ver < 150000 {
        return Err(err!(
            "{loc}: PostgreSQL {}.{} is too old: the store needs 15 or newer (UNIQUE NULLS NOT \
             DISTINCT on the point identity)",
            ver / 10000,
            ver % 10000 / 100
        ));
    }
    let tx = c.transaction().await.map_err(q)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&schema::MIGRATION_LOCK],
    )
    .await
    .map_err(q)?;
    let row = tx
        .query_one(
            "SELECT to_regclass('servebench_schema') IS NOT NULL,
                    to_regclass('workflow_runs') IS NOT NULL",
            &[],
        )
        .await
        .map_err(q)?;
    let (ours, theirs): (bool, bool) = (row.get(0), row.get(1));
    let version: i64 = if ours {
        let v: i32 = tx
            .query_one("SELECT max(version) FROM servebench_schema", &[])
            .await
            .map_err(q)?
            .get::<_, Option<i32>>(0)
            .unwrap_or(0);
        v as i64
    } else if theirs {
        return Err(err!(
            "{loc}: holds InferenceX tables (workflow_runs) that servebench did not create (no \
             servebench_schema table); give servebench its own database"
        ));
    } else {
        0
    };
    if version > PG_SCHEMA_VERSION {
        return Err(err!(
            "{loc}: store schema version {version} is newer than this servebench understands \
             ({PG_SCHEMA_VERSION}); upgrade servebench"
        ));
    }
    for (i, sql) in schema::PG_MIGRATIONS
        .iter()
        .enumerate()
        .skip(version as usize)
    {
        tx.batch_execute(sql)
            .await
            .map_err(|e| err!("{loc}: migration {} → {}: {}", i, i + 1, pg_msg(&e)))?;
        tx.execute(
            "UPDATE servebench_schema SET version = $1",
            &[&((i + 1) as i32)],
        )
        .await
        .map_err(q)?;
    }
    tx.commit().await.map_err(q)?;
    Ok(())
}
