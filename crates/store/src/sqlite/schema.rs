//! The SQLite schema: versioned with `PRAGMA user_version`, one migration per version.

use std::time::Duration;

/// Schema version this build writes (`PRAGMA user_version`). Opening a newer database fails
/// with a clear message instead of guessing.
pub const SCHEMA_VERSION: i64 = 5;

/// How long a writer waits for another process's lock before failing (SQLite busy timeout).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Migrations, index i upgrades user_version i → i+1. Append only; never edit a shipped one.
pub(crate) const MIGRATIONS: &[&str] = &[
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
    // 3 → 4: the git branch of a run (`--branch`), for `compare --baseline main`.
    r#"
ALTER TABLE runs ADD COLUMN branch TEXT;
CREATE INDEX runs_branch ON runs(branch, id);
"#,
    // 4 → 5: a point's GPU energy in columns (issue 30; `crate::energy`), filled from the
    // stored row for points stored before; NULL where the row has no power keys or numbers.
    r#"
ALTER TABLE points ADD COLUMN power_source TEXT;
ALTER TABLE points ADD COLUMN power_valid INTEGER;
ALTER TABLE points ADD COLUMN avg_power_w REAL;
ALTER TABLE points ADD COLUMN total_gpu_energy_j REAL;
ALTER TABLE points ADD COLUMN joules_per_output_token REAL;
ALTER TABLE points ADD COLUMN joules_per_total_token REAL;
UPDATE points SET
    power_source            = json_extract(row_json, '$.power_source'),
    power_valid             = CASE json_type(row_json, '$.power_valid')
                                WHEN 'true' THEN 1 WHEN 'false' THEN 0
                                ELSE CAST(json_extract(row_json, '$.power_valid') AS INTEGER) END,
    avg_power_w             = json_extract(row_json, '$.avg_power_w'),
    total_gpu_energy_j      = json_extract(row_json, '$.total_gpu_energy_j'),
    joules_per_output_token = json_extract(row_json, '$.joules_per_output_token'),
    joules_per_total_token  = json_extract(row_json, '$.joules_per_total_token')
WHERE json_valid(row_json)
  AND (json_type(row_json, '$.power_valid') IS NOT NULL
       OR json_type(row_json, '$.power_source') IS NOT NULL);
CREATE INDEX points_energy ON points(power_source, joules_per_output_token);
"#,
];
