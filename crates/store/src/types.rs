//! The store's typed values: runs, their metadata and status, stored rows, image provenance.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use servebench_contracts::{AggRow, EvalRow, ForeignRow, PointStatus};

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
    /// Git branch the run belongs to (`--branch`, default the checkout's branch, else
    /// `local`): `compare --baseline main` picks rows of branch `main` (schema ≥ 4; PostgreSQL
    /// `workflow_runs.head_branch`). `None` for runs stored before.
    #[serde(default)]
    pub branch: Option<String>,
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
            branch: None,
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
