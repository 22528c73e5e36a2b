//! Store: every run in SQLite (WAL, migrations): run metadata, points as InferenceX agg rows,
//! eval rows, provenance. Per-request records stay in files referenced by the run.
//!
//! Rows are typed: a run servebench measured holds [`AggRow`] points and [`EvalRow`] evals
//! ([`Store::add_point`], [`Store::add_eval`]); a baseline run holds the [`ForeignRow`]s that
//! `servebench_compare::import` made of a foreign file ([`Store::add_foreign_point`],
//! [`Store::add_foreign_eval`]). Reading gives them back as a [`StoredRow`]; the stored JSON
//! text (`row_json`) is the row's own JSON, byte for byte what earlier versions wrote.
//!
//! Must not know about: HTTP, how metrics are computed, comparisons, reports.
//!
//! The schema is documented in `docs/store.md` and versioned with `PRAGMA user_version`
//! (see [`SCHEMA_VERSION`]). Concurrency: the database runs in WAL mode with a busy timeout;
//! every write is its own `BEGIN IMMEDIATE` transaction, so two servebench processes can write
//! to one file at once, and a crash mid-sweep leaves every point added before it stored (the
//! run stays `running`).
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{err, fail, Context};
pub use crate::error::{Result, StoreError};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use servebench_contracts::{AggRow, EvalRow, ForeignRow, PointStatus};

pub mod error;
mod resume;

/// Schema version this build writes (`PRAGMA user_version`). Opening a newer database fails
/// with a clear message instead of guessing.
pub const SCHEMA_VERSION: i64 = 4;

/// How long a writer waits for another process's lock before failing (SQLite busy timeout).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Default database file (`./servebench.db`).
pub const DEFAULT_DB: &str = "servebench.db";

/// Migrations, index i upgrades user_version i → i+1. Append only; never edit a shipped one.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: initial schema.
    r#"
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at         TEXT NOT NULL,
    finished_at        TEXT,
    kind               TEXT NOT NULL CHECK (kind IN ('sweep','bench','eval','baseline')),
    status             TEXT NOT NULL CHECK (status IN ('running','ok','partial','failed','interrupted')),
    label              TEXT,
    endpoint           TEXT,
    image              TEXT,
    index_digest       TEXT,
    platform_digest    TEXT,
    config_key         TEXT,
    topology           TEXT,
    workload           TEXT,
    servebench_version TEXT NOT NULL,
    out_dir            TEXT,
    meta_json          TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_created ON runs(created_at);
CREATE INDEX runs_kind ON runs(kind, id);

CREATE TABLE points (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    created_at     TEXT NOT NULL,
    hw             TEXT,
    framework      TEXT,
    model_prefix   TEXT,
    precision      TEXT,
    spec_decoding  TEXT,
    disagg         INTEGER,
    is_multinode   INTEGER,
    tp             INTEGER,
    ep             INTEGER,
    dp_attention   INTEGER,
    benchmark_type TEXT,
    isl            INTEGER,
    osl            INTEGER,
    conc           INTEGER,
    image          TEXT,
    status         TEXT NOT NULL,
    records_file   TEXT,
    row_json       TEXT NOT NULL
);
CREATE INDEX points_run ON points(run_id, id);
CREATE INDEX points_identity ON points(hw, framework, model_prefix, precision, conc);

CREATE TABLE evals (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    created_at   TEXT NOT NULL,
    task         TEXT NOT NULL,
    score_name   TEXT,
    conc         INTEGER,
    score        REAL,
    n_eff        INTEGER,
    row_json     TEXT NOT NULL
);
CREATE INDEX evals_run ON evals(run_id, id);

CREATE TABLE provenance (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
"#,
    // 1 → 2: image provenance recorded by `servebench bump` (digests and labels of an image
    // reference), independent of runs: a later sweep of that image finds its digests here.
    r#"
CREATE TABLE image_provenance (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at           TEXT NOT NULL,
    image                 TEXT NOT NULL,
    role                  TEXT CHECK (role IS NULL OR role IN ('old','new')),
    config_key            TEXT,
    index_digest          TEXT,
    platform_digests_json TEXT NOT NULL DEFAULT '{}',
    labels_json           TEXT NOT NULL DEFAULT '{}',
    image_created         TEXT,
    source                TEXT NOT NULL,
    change_json           TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX image_provenance_image ON image_provenance(image, id);
CREATE INDEX image_provenance_config ON image_provenance(config_key, id);
"#,
    // 2 → 3: invalid points (a validity rule of docs/measurement.md was violated): the point's
    // reasons, and on the run every invalid point's `conc N: reason` (NULL = none invalid).
    r#"
ALTER TABLE points ADD COLUMN invalid_reason TEXT;
ALTER TABLE runs ADD COLUMN invalid_reason TEXT;
"#,
    // 3 → 4: the point's GPU energy (MEASUREMENT.md Part 2 §2.5; docs/measurement.md "Energy"):
    // where it comes from (nvml, telemetry, modelled, none), InferenceX's power_valid, and the
    // numbers when they may be shown (measured and valid, or modelled); NULL = no number.
    r#"
ALTER TABLE points ADD COLUMN power_source TEXT;
ALTER TABLE points ADD COLUMN power_valid INTEGER;
ALTER TABLE points ADD COLUMN avg_power_w REAL;
ALTER TABLE points ADD COLUMN joules_per_output_token REAL;
ALTER TABLE points ADD COLUMN joules_per_total_token REAL;
"#,
];

/// A run's id in the store (`runs.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What produced a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `servebench sweep` (several concurrencies).
    Sweep,
    /// `servebench bench` (one point).
    Bench,
    /// `servebench eval`.
    Eval,
    /// `servebench baseline import` (InferenceX artifacts or a baseline table).
    Baseline,
}

impl RunKind {
    /// The stored spelling: `sweep|bench|eval|baseline`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Sweep => "sweep",
            RunKind::Bench => "bench",
            RunKind::Eval => "eval",
            RunKind::Baseline => "baseline",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<RunKind> {
        Some(match s {
            "sweep" => RunKind::Sweep,
            "bench" => RunKind::Bench,
            "eval" => RunKind::Eval,
            "baseline" => RunKind::Baseline,
            _ => return None,
        })
    }
}

/// Lifecycle status of a run. A run that never reached [`Store::finish_run`] (crash, kill)
/// stays `Running`; its finished points are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started, not finished (or the process died).
    Running,
    /// Every point ok.
    Ok,
    /// Some points failed.
    Partial,
    /// The run failed.
    Failed,
    /// Stopped by the user (Ctrl-C).
    Interrupted,
}

impl RunStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "ok" => RunStatus::Ok,
            "partial" => RunStatus::Partial,
            "failed" => RunStatus::Failed,
            "interrupted" => RunStatus::Interrupted,
            _ => return None,
        })
    }
}

/// What the caller knows about a run when it starts. Every field but `kind` is optional.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    /// Run kind.
    pub kind: RunKind,
    /// Short human label (`"baseline.json"`, `"sweep sim-h200"`).
    pub label: Option<String>,
    /// Endpoint URL (`http://127.0.0.1:8000`), or `sim://…` for the simulator.
    pub endpoint: Option<String>,
    /// Engine image reference (`lmsysorg/sglang:v0.5.20-cu130`).
    pub image: Option<String>,
    /// OCI index (multi-arch) digest, `sha256:…`, when known.
    pub index_digest: Option<String>,
    /// Per-platform manifest digest (e.g. linux/amd64), `sha256:…`, when known.
    pub platform_digest: Option<String>,
    /// Catalog config key.
    pub config_key: Option<String>,
    /// Topology label, e.g. `TP8/EP1`.
    pub topology: Option<String>,
    /// Workload label, e.g. `8k/1k`, `AgentX`.
    pub workload: Option<String>,
    /// servebench version that made the run (default: this crate's version).
    pub servebench_version: String,
    /// Output directory holding `summary.json`, per-point `agg.json` and `records.jsonl`.
    pub out_dir: Option<PathBuf>,
    /// Creation time override (RFC 3339 UTC); `None` = now. Baseline imports use the
    /// baseline's date.
    pub created_at: Option<String>,
    /// Anything else worth keeping about the run (`meta_json`, a JSON object). Open on
    /// purpose: each command records its own facts here (a sweep its concurrencies and flags,
    /// `eval` its task options, a baseline import its source file and statistic, `run` its
    /// executor), nothing in the store or compare reads them, and new keys must not need a
    /// schema change. Typed values (points, evals) never go here.
    pub meta: Value,
}

impl RunMeta {
    /// A run of `kind` with every optional field empty and this servebench version.
    pub fn new(kind: RunKind) -> RunMeta {
        RunMeta {
            kind,
            label: None,
            endpoint: None,
            image: None,
            index_digest: None,
            platform_digest: None,
            config_key: None,
            topology: None,
            workload: None,
            servebench_version: env!("CARGO_PKG_VERSION").to_string(),
            out_dir: None,
            created_at: None,
            meta: Value::Object(Default::default()),
        }
    }
}

/// A stored run, with counts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Id.
    pub id: RunId,
    /// Creation time (RFC 3339 UTC, e.g. `2026-09-15T00:00:00Z`).
    pub created_at: String,
    /// Finish time, when finished.
    pub finished_at: Option<String>,
    /// Kind.
    pub kind: RunKind,
    /// Status.
    pub status: RunStatus,
    /// Run metadata as recorded (kind, created_at as stored).
    pub meta: RunMeta,
    /// Number of stored points.
    pub n_points: u64,
    /// Number of stored eval rows.
    pub n_evals: u64,
    /// Why the run is flagged invalid: `conc N: <violated rule>` of each invalid point, and
    /// `conc N: not a valid InferenceX submission (unsafe_override, …)` of each AgentX point
    /// InferenceX would not accept, `; ` joined; `None` when no point was (schema ≥ 3).
    #[serde(default)]
    pub invalid_reason: Option<String>,
}

/// A stored row: one servebench wrote, typed, or a foreign row of a baseline run. Which one
/// follows from the run's kind: every row of a [`RunKind::Baseline`] run is
/// [`StoredRow::Imported`], every row of any other run [`StoredRow::Servebench`] (the store
/// refuses the other pairings when adding). Serialises as the row's own JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StoredRow<T> {
    /// A row servebench wrote (sweep, bench, eval, `run`): an [`AggRow`] or an [`EvalRow`].
    Servebench(T),
    /// A row `servebench baseline import` took from a foreign file (InferenceX rows, a
    /// baseline table), as `servebench_compare::import` made it; only that module reads it.
    Imported(ForeignRow),
}

impl<T> StoredRow<T> {
    /// The typed row servebench wrote; `None` for an imported row.
    pub fn servebench(&self) -> Option<&T> {
        match self {
            StoredRow::Servebench(r) => Some(r),
            StoredRow::Imported(_) => None,
        }
    }

    /// The imported foreign row; `None` for a row servebench wrote.
    pub fn imported(&self) -> Option<&ForeignRow> {
        match self {
            StoredRow::Servebench(_) => None,
            StoredRow::Imported(r) => Some(r),
        }
    }
}

impl<T: Serialize> StoredRow<T> {
    /// The row's JSON as stored (`row_json`), e.g. to print or export it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a stored row serialises")
    }
}

/// A stored point: the agg row as written, plus the columns the store extracted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredPoint {
    /// Point id (`points.id`), increasing in insertion order.
    pub id: i64,
    /// Owning run.
    pub run_id: RunId,
    /// `point_status` of the row (`ok` when the row has none, e.g. InferenceX rows).
    pub status: PointStatus,
    /// Hardware (`hw` of the row), when present.
    #[serde(default)]
    pub hw: Option<String>,
    /// `records_file` of the row (relative to the point dir), when present.
    pub records_file: Option<String>,
    /// An invalid point's violated rules (`invalid_reasons` of the row, `; ` joined).
    #[serde(default)]
    pub invalid_reason: Option<String>,
    /// The energy columns (all `None` for rows stored without power keys).
    #[serde(default)]
    pub energy: EnergyColumns,
    /// The agg row, as added.
    pub row: StoredRow<AggRow>,
}

/// A stored eval row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredEval {
    /// Eval id (`evals.id`).
    pub id: i64,
    /// Owning run.
    pub run_id: RunId,
    /// The eval row, as added.
    pub row: StoredRow<EvalRow>,
}

/// Provenance of one engine image reference, as `servebench bump` resolved it (OCI registry,
/// a provenance file, or not at all with `--no-resolve`). Stored in `image_provenance`
/// (schema version 2), one row per image per bump; the newest row of a reference wins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageProvenance {
    /// The image reference as written in the catalog (`lmsysorg/sglang:v0.5.20-cu130`).
    pub image: String,
    /// `old` (the image a bump moved away from) or `new` (the image it moved to); `None` for
    /// a reference recorded outside a bump.
    pub role: Option<String>,
    /// Catalog config key of the bump.
    pub config_key: Option<String>,
    /// OCI index (multi-arch) digest `sha256:…`; `None` when not resolved or single-platform.
    pub index_digest: Option<String>,
    /// Per-platform manifest digests (`linux/amd64` → `sha256:…`).
    pub platform_digests: BTreeMap<String, String>,
    /// Image config labels (build commit, library versions).
    pub labels: BTreeMap<String, String>,
    /// Image creation time (RFC 3339), when known.
    pub image_created: Option<String>,
    /// Where the facts came from: `registry https://…`, `file images.json`, or why they were
    /// not resolved (`not resolved (--no-resolve)`).
    pub source: String,
    /// The whole change record of the bump (free JSON; `{}` when none).
    pub change: Value,
}

impl ImageProvenance {
    /// The `linux/amd64` digest (or the only platform's), when known.
    pub fn amd64_digest(&self) -> Option<&str> {
        self.platform_digests
            .iter()
            .find(|(p, _)| p.as_str() == "linux/amd64" || p.starts_with("linux/amd64/"))
            .or_else(|| {
                (self.platform_digests.len() == 1)
                    .then(|| self.platform_digests.iter().next())
                    .flatten()
            })
            .map(|(_, d)| d.as_str())
    }
}

/// A stored [`ImageProvenance`] row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredImageProvenance {
    /// Row id (`image_provenance.id`), increasing in insertion order.
    pub id: i64,
    /// When it was recorded (RFC 3339 UTC, ms).
    pub recorded_at: String,
    /// The facts.
    pub provenance: ImageProvenance,
}

/// The results store: one SQLite connection. Open one per thread/process; SQLite (WAL +
/// busy timeout + `BEGIN IMMEDIATE`) serialises writers.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn now_utc() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// Column extraction of foreign rows (baseline runs), whose keys and value types are not fixed:
// numbers written as strings, `"true"` for booleans, multinode `prefill_*` keys. Rows
// servebench wrote are read through their types instead ([`point_columns`]).

fn row_str(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn row_int(v: &Value, k: &str) -> Option<i64> {
    match v.get(k)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn row_bool(v: &Value, k: &str) -> Option<i64> {
    match v.get(k)? {
        Value::Bool(b) => Some(*b as i64),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" => Some(1),
            "false" => Some(0),
            _ => None,
        },
        Value::Number(n) => n.as_i64().map(|i| (i != 0) as i64),
        _ => None,
    }
}

/// The columns of one `points` row (besides ids and times).
struct PointColumns {
    hw: Option<String>,
    framework: Option<String>,
    model_prefix: Option<String>,
    precision: Option<String>,
    spec_decoding: Option<String>,
    disagg: Option<i64>,
    is_multinode: Option<i64>,
    tp: Option<i64>,
    ep: Option<i64>,
    dp_attention: Option<i64>,
    benchmark_type: Option<String>,
    isl: Option<i64>,
    osl: Option<i64>,
    conc: Option<i64>,
    image: Option<String>,
    status: String,
    records_file: Option<String>,
    invalid_reasons: Vec<String>,
    /// Flags the run only (not the point's status or column): an AgentX point that is not a
    /// valid InferenceX submission.
    run_reasons: Option<String>,
    /// `power_source`, `power_valid`, `avg_power_w`, `joules_per_output_token`,
    /// `joules_per_total_token` (migration 3 → 4).
    energy: EnergyColumns,
    /// `row_json`.
    json: String,
}

/// A point's energy columns: where the numbers come from, InferenceX's `power_valid`, and
/// the numbers when they may be shown (measured and valid, or modelled).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyColumns {
    /// `nvml`, `telemetry`, `modelled` or `none`; `None` for rows without power keys.
    pub power_source: Option<String>,
    /// InferenceX `power_valid` (1 measured and valid, 0 not).
    pub power_valid: Option<i64>,
    /// Mean board power per GPU over the benchmark window, W.
    pub avg_power_w: Option<f64>,
    /// GPU energy / output tokens, J/token.
    pub joules_per_output_token: Option<f64>,
    /// GPU energy / (input + output tokens), J/token.
    pub joules_per_total_token: Option<f64>,
}

impl EnergyColumns {
    /// Of a servebench row: its [`servebench_contracts::PowerFields`].
    pub fn of_row(row: &AggRow) -> EnergyColumns {
        let Some(p) = &row.power else {
            return EnergyColumns::default();
        };
        let m = p.usable();
        EnergyColumns {
            power_source: Some(p.source.as_str().to_string()),
            power_valid: Some(i64::from(p.valid)),
            avg_power_w: m.map(|m| m.avg_power_w),
            joules_per_output_token: m.map(|m| m.joules_per_output_token),
            joules_per_total_token: m.map(|m| m.joules_per_total_token),
        }
    }

    /// Of an imported row: InferenceX's keys, numbers only when `power_valid` is 1 (an
    /// InferenceX row's energy comes from its nvidia-smi / amd-smi telemetry).
    pub fn of_value(row: &Value) -> EnergyColumns {
        let valid = row
            .get("power_valid")
            .and_then(|v| v.as_i64().or_else(|| v.as_bool().map(i64::from)));
        let num = |k: &str| {
            (valid == Some(1))
                .then(|| row.get(k).and_then(Value::as_f64))
                .flatten()
        };
        EnergyColumns {
            power_source: valid
                .map(|_| row_str(row, "power_source").unwrap_or_else(|| "telemetry".to_string())),
            power_valid: valid,
            avg_power_w: num("avg_power_w"),
            joules_per_output_token: num("joules_per_output_token"),
            joules_per_total_token: num("joules_per_total_token"),
        }
    }
}

/// The columns of one `evals` row (besides ids and times).
struct EvalColumns {
    task: String,
    score_name: Option<String>,
    conc: Option<i64>,
    score: Option<f64>,
    n_eff: Option<i64>,
    /// `row_json`.
    json: String,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, switches it to WAL, sets the busy
    /// timeout and foreign keys, and runs pending migrations inside one `BEGIN IMMEDIATE`
    /// transaction (safe when several processes open a fresh file at once).
    ///
    /// Errors: the file cannot be opened (`<path>: …`), is not a SQLite database, or has a
    /// schema newer than this build ([`SCHEMA_VERSION`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
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
        let mut store = Store { conn, path };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// An in-memory store (tests, `--db :memory:`).
    pub fn open_in_memory() -> Result<Store> {
        let conn = Connection::open_in_memory()?;
        let mut store = Store {
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
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("{p}: migration {} → {}", i, i + 1))?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The database file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Records a new run with status `running` and returns its id (one transaction).
    pub fn record_run(&mut self, meta: &RunMeta) -> Result<RunId> {
        let created = meta.created_at.clone().unwrap_or_else(now_utc);
        let meta_json = serde_json::to_string(&meta.meta)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (created_at, kind, status, label, endpoint, image, index_digest,
                platform_digest, config_key, topology, workload, servebench_version, out_dir, meta_json)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
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
            ],
        )
        .with_context(|| format!("{}: recording the run", self.path.display()))?;
        let id = RunId(tx.last_insert_rowid());
        tx.commit()?;
        Ok(id)
    }

    fn check_run(&self, run: RunId) -> Result<()> {
        let exists: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [run.0], |r| r.get(0))
            .optional()?;
        if exists.is_none() {
            fail!("{}: run {run} does not exist", self.path.display());
        }
        Ok(())
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
        let reasons = row.invalid_reasons.clone();
        // an AgentX point InferenceX would not accept as a submission keeps its status (its
        // numbers stand) but flags its run, as `servebench run` calls such a run invalid
        let submission = row.submission_invalid_reasons();
        let run_reasons = (!submission.is_empty()).then(|| {
            format!(
                "not a valid InferenceX submission ({})",
                submission.join(", ")
            )
        });
        let cols = PointColumns {
            hw: Some(row.hw.clone()),
            framework: Some(row.framework.clone()),
            model_prefix: Some(row.infmax_model_prefix.clone()),
            precision: Some(row.precision.clone()),
            spec_decoding: Some(row.spec_decoding.clone()),
            disagg: Some(row.disagg.into()),
            is_multinode: Some(row.is_multinode.into()),
            tp: Some(row.tp.into()),
            ep: Some(row.ep.into()),
            dp_attention: Some(row.dp_attention.into()),
            benchmark_type: Some(row.benchmark_type.clone()),
            isl: row.isl.map(i64::from),
            osl: row.osl.map(i64::from),
            conc: row.conc.map(|c| c as i64),
            image: Some(row.image.clone()),
            status: row.point_status.as_str().to_string(),
            records_file: Some(row.records_file.clone()),
            invalid_reasons: reasons,
            run_reasons,
            energy: EnergyColumns::of_row(row),
            json: serde_json::to_string(&row.to_value())?,
        };
        self.insert_point(run, false, cols)
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
        let v = row.to_value();
        let row = &v;
        let benchmark_type = row_str(row, "benchmark_type").or_else(|| {
            (row_str(row, "scenario_type").as_deref() == Some("agentic-coding"))
                .then(|| "agentic_traces".to_string())
        });
        let cols = PointColumns {
            hw: row_str(row, "hw"),
            framework: row_str(row, "framework"),
            model_prefix: row_str(row, "infmax_model_prefix")
                .or_else(|| row_str(row, "model_prefix")),
            precision: row_str(row, "precision"),
            spec_decoding: row_str(row, "spec_decoding"),
            disagg: row_bool(row, "disagg"),
            is_multinode: row_bool(row, "is_multinode"),
            tp: row_int(row, "tp").or_else(|| row_int(row, "prefill_tp")),
            ep: row_int(row, "ep").or_else(|| row_int(row, "prefill_ep")),
            dp_attention: row_bool(row, "dp_attention")
                .or_else(|| row_bool(row, "prefill_dp_attention")),
            benchmark_type,
            isl: row_int(row, "isl"),
            osl: row_int(row, "osl"),
            conc: row_int(row, "conc"),
            image: row_str(row, "image"),
            status: row_str(row, "point_status").unwrap_or_else(|| "ok".into()),
            records_file: row_str(row, "records_file"),
            invalid_reasons: servebench_contracts::status::invalid_reasons_of(row),
            run_reasons: None,
            energy: EnergyColumns::of_value(row),
            json: serde_json::to_string(row)?,
        };
        self.insert_point(run, true, cols)
    }

    /// Adds a point read from a store (another file, e.g. a job's `point.db`) to `run`, as it
    /// was stored: [`Store::add_point`] or [`Store::add_foreign_point`].
    pub fn copy_point(&mut self, run: RunId, point: &StoredPoint) -> Result<i64> {
        match &point.row {
            StoredRow::Servebench(r) => self.add_point(run, r),
            StoredRow::Imported(r) => self.add_foreign_point(run, r),
        }
    }

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
        let baseline = kind == RunKind::Baseline.as_str();
        if foreign && !baseline {
            fail!(
                "{}: run {run} is a {kind} run: imported rows belong to baseline runs",
                path.display()
            );
        }
        if !foreign && baseline {
            fail!(
                "{}: run {run} is a baseline run: its rows are imported ones",
                path.display()
            );
        }
        Ok(())
    }

    fn insert_point(&mut self, run: RunId, foreign: bool, c: PointColumns) -> Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        Self::check_origin(&self.path, &tx, run, foreign)?;
        // an invalid point flags its run too, in the same transaction (a crash later keeps both)
        let invalid = (!c.invalid_reasons.is_empty()).then(|| c.invalid_reasons.join("; "));
        let run_flag = match (&invalid, &c.run_reasons) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.clone().or(b.clone()),
        };
        if let Some(reason) = &run_flag {
            let tag = match c.conc {
                Some(conc) => format!("conc {conc}: {reason}"),
                None => reason.clone(),
            };
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
                power_valid, avg_power_w, joules_per_output_token, joules_per_total_token)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
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
                invalid,
                c.energy.power_source,
                c.energy.power_valid,
                c.energy.avg_power_w,
                c.energy.joules_per_output_token,
                c.energy.joules_per_total_token,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Adds one eval row servebench wrote ([`EvalRow`], MEASUREMENT §4.4 fields with the
    /// stage's extra keys) to `run`, in its own transaction. Stored as its JSON (`row_json`);
    /// `task`, `score_name`, `conc`, `score` (`em_strict` when there is no score) and `n_eff`
    /// are copied into columns.
    ///
    /// Errors: the run does not exist, or is a baseline run ([`Store::add_foreign_eval`]).
    pub fn add_eval(&mut self, run: RunId, row: &EvalRow) -> Result<i64> {
        let finite = |x: Option<f64>| x.filter(|v| v.is_finite());
        let cols = EvalColumns {
            task: row.task.clone(),
            score_name: Some(row.score_name.clone()),
            conc: Some(row.conc.into()),
            score: finite(row.score).or(finite(row.em_strict)),
            n_eff: Some(row.n_eff as i64),
            json: serde_json::to_string(&row.to_value())?,
        };
        self.insert_eval(run, false, cols)
    }

    /// Adds one imported eval row (a [`ForeignRow`] `servebench_compare::import` made of an
    /// InferenceX `agg_eval_all.json` row or a baseline-table eval) to the baseline run `run`,
    /// like [`Store::add_eval`]; columns from `task`, `score_name` (or `metric`), `conc`,
    /// `score` (or `em_strict`), `n_eff` (or `samples`).
    ///
    /// Errors: the row has no `task`; the run does not exist or is not a baseline run.
    pub fn add_foreign_eval(&mut self, run: RunId, row: &ForeignRow) -> Result<i64> {
        let v = row.to_value();
        let row = &v;
        let task = row_str(row, "task")
            .ok_or_else(|| err!("eval row for run {run}: missing field `task`"))?;
        let cols = EvalColumns {
            task,
            score_name: row_str(row, "score_name").or_else(|| row_str(row, "metric")),
            conc: row_int(row, "conc"),
            score: row
                .get("score")
                .and_then(Value::as_f64)
                .or_else(|| row.get("em_strict").and_then(Value::as_f64)),
            n_eff: row_int(row, "n_eff").or_else(|| row_int(row, "samples")),
            json: serde_json::to_string(row)?,
        };
        self.insert_eval(run, true, cols)
    }

    /// Adds an eval row read from a store to `run`, as it was stored: [`Store::add_eval`] or
    /// [`Store::add_foreign_eval`].
    pub fn copy_eval(&mut self, run: RunId, eval: &StoredEval) -> Result<i64> {
        match &eval.row {
            StoredRow::Servebench(r) => self.add_eval(run, r),
            StoredRow::Imported(r) => self.add_foreign_eval(run, r),
        }
    }

    fn insert_eval(&mut self, run: RunId, foreign: bool, c: EvalColumns) -> Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        Self::check_origin(&self.path, &tx, run, foreign)?;
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

    /// Records (or replaces) one provenance fact of a run, e.g. `image.index_digest`,
    /// `image.platform_digest.linux/amd64`, `source.file`, `source.sha256`, `git.commit`.
    pub fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()> {
        self.check_run(run)?;
        self.conn.execute(
            "INSERT INTO provenance (run_id, key, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
            params![run.0, key, value],
        )?;
        Ok(())
    }

    /// A run's provenance facts, sorted by key.
    pub fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT key, value FROM provenance WHERE run_id = ?1 ORDER BY key")?;
        let rows = st.query_map([run.0], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Marks a run finished with `status` and the current time.
    pub fn finish_run(&mut self, run: RunId, status: RunStatus) -> Result<()> {
        let n = self.conn.execute(
            "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
            params![status.as_str(), now_utc(), run.0],
        )?;
        if n == 0 {
            fail!("{}: run {run} does not exist", self.path.display());
        }
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

    const RUN_SELECT: &'static str = "SELECT runs.*,
            (SELECT COUNT(*) FROM points WHERE points.run_id = runs.id) AS n_points,
            (SELECT COUNT(*) FROM evals WHERE evals.run_id = runs.id) AS n_evals
         FROM runs";

    /// Runs, newest first (by id), optionally only of `kind`, at most `limit` (`None` = all).
    pub fn list_runs(&self, kind: Option<RunKind>, limit: Option<usize>) -> Result<Vec<RunRecord>> {
        let sql = format!(
            "{} WHERE (?1 IS NULL OR kind = ?1) ORDER BY id DESC LIMIT ?2",
            Self::RUN_SELECT
        );
        let mut st = self.conn.prepare(&sql)?;
        let lim = limit.map_or(-1, |l| l as i64);
        let rows = st.query_map(params![kind.map(|k| k.as_str()), lim], Self::run_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// One run, or `None`.
    pub fn get_run(&self, run: RunId) -> Result<Option<RunRecord>> {
        let sql = format!("{} WHERE id = ?1", Self::RUN_SELECT);
        Ok(self
            .conn
            .query_row(&sql, [run.0], Self::run_from_row)
            .optional()?)
    }

    /// The newest run (highest id), optionally of `kind`.
    pub fn latest_run(&self, kind: Option<RunKind>) -> Result<Option<RunRecord>> {
        Ok(self.list_runs(kind, Some(1))?.into_iter().next())
    }

    /// Whether `run` is a baseline run (its rows are imported ones); `None` when it does not
    /// exist.
    fn holds_imported_rows(&self, run: RunId) -> Result<Option<bool>> {
        let kind: Option<String> = self
            .conn
            .query_row("SELECT kind FROM runs WHERE id = ?1", [run.0], |r| r.get(0))
            .optional()?;
        Ok(kind.map(|k| k == RunKind::Baseline.as_str()))
    }

    /// A run's points in insertion order (none for a run that does not exist).
    ///
    /// Errors: a stored row is not what its run holds, e.g. `servebench.db: run 3, point 12:
    /// stored row is not an agg row: agg row: `api` is missing or not a string`.
    pub fn points(&self, run: RunId) -> Result<Vec<StoredPoint>> {
        let Some(imported) = self.holds_imported_rows(run)? else {
            return Ok(Vec::new());
        };
        let mut st = self.conn.prepare(
            "SELECT id, status, records_file, row_json, invalid_reason, hw, power_source,
                power_valid, avg_power_w, joules_per_output_token, joules_per_total_token
             FROM points WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = st.query_map([run.0], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                EnergyColumns {
                    power_source: r.get(6)?,
                    power_valid: r.get(7)?,
                    avg_power_w: r.get(8)?,
                    joules_per_output_token: r.get(9)?,
                    joules_per_total_token: r.get(10)?,
                },
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, status, records_file, json, invalid_reason, hw, energy) = row?;
            let at = || format!("{}: run {run}, point {id}", self.path.display());
            let v: Value = serde_json::from_str(&json)
                .with_context(|| format!("{} has a corrupt row", at()))?;
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
            let status = PointStatus::parse(&status).ok_or_else(|| {
                err!(
                    "{}: column `status` is {status:?}, expected ok, failed, partial or invalid",
                    at()
                )
            })?;
            out.push(StoredPoint {
                id,
                run_id: run,
                status,
                hw,
                records_file,
                invalid_reason,
                energy,
                row,
            });
        }
        Ok(out)
    }

    /// A run's eval rows in insertion order (none for a run that does not exist).
    ///
    /// Errors: a stored row is not what its run holds, e.g. `servebench.db: run 3, eval 2:
    /// stored row is not an eval row: missing field `n_eff``.
    pub fn evals(&self, run: RunId) -> Result<Vec<StoredEval>> {
        let Some(imported) = self.holds_imported_rows(run)? else {
            return Ok(Vec::new());
        };
        let mut st = self
            .conn
            .prepare("SELECT id, row_json FROM evals WHERE run_id = ?1 ORDER BY id")?;
        let rows = st.query_map([run.0], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row?;
            let at = || format!("{}: run {run}, eval {id}", self.path.display());
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
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO image_provenance (recorded_at, image, role, config_key, index_digest,
                platform_digests_json, labels_json, image_created, source, change_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                now_utc(),
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
    pub fn image_provenance(&self, image: Option<&str>) -> Result<Vec<StoredImageProvenance>> {
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

    /// The newest provenance of `image` that has at least one digest (index or platform), if
    /// any: what a sweep of that image records as its digests.
    pub fn resolved_image_provenance(&self, image: &str) -> Result<Option<StoredImageProvenance>> {
        Ok(self.image_provenance(Some(image))?.into_iter().find(|p| {
            p.provenance.index_digest.is_some() || !p.provenance.platform_digests.is_empty()
        }))
    }

    /// Runs `PRAGMA integrity_check`; `Ok(())` when the file is sound.
    pub fn integrity_check(&self) -> Result<()> {
        let r: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        if r != "ok" {
            fail!("{}: integrity check failed: {r}", self.path.display());
        }
        Ok(())
    }
}
