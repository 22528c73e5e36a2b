//! The one interface both backends (SQLite, PostgreSQL) implement. The facade ([`crate::Store`])
//! turns typed rows into [`PointColumns`]/[`EvalColumns`] and parses what comes back, so a
//! backend only moves columns and JSON text in and out of its tables.

use std::path::Path;

use crate::columns::{EvalColumns, PointColumns, RawPoint};
use crate::error::Result;
use crate::{
    ImageProvenance, RunId, RunKind, RunMeta, RunRecord, RunStatus, StoredImageProvenance,
};

/// Which runs [`Backend::runs`] returns (all conditions together), newest (highest id) first.
#[derive(Debug, Default, Clone)]
pub(crate) struct RunFilter {
    /// One run.
    pub(crate) id: Option<RunId>,
    /// Runs of one kind.
    pub(crate) kind: Option<RunKind>,
    /// Runs whose `out_dir` is this (canonical) path.
    pub(crate) out_dir: Option<String>,
    /// At most this many.
    pub(crate) limit: Option<usize>,
}

/// A stored point that `compare --baseline BRANCH` may pick: its raw row and what orders it
/// (the run's date, then its creation time, then insertion order; newest wins).
pub(crate) struct BaselineCandidate {
    /// The run's date, `YYYY-MM-DD` (InferenceX `benchmark_results.date`).
    pub(crate) date: String,
    /// The run's `created_at` (RFC 3339).
    pub(crate) created_at: String,
    /// The point.
    pub(crate) point: RawPoint,
    /// Whether the point's run is a baseline run (the row is an imported one).
    pub(crate) imported: bool,
}

/// What a backend does. Every write is its own transaction; `Send` so a store can move to a
/// worker thread.
pub(crate) trait Backend: Send {
    /// Where the store is: the SQLite file, or the PostgreSQL URL with its password hidden.
    fn location(&self) -> &Path;
    /// Schema version of the open database.
    fn schema_version(&self) -> Result<i64>;
    /// Records a run (`running`).
    fn record_run(&mut self, meta: &RunMeta) -> Result<RunId>;
    /// The run's kind; `None` when it does not exist.
    fn run_kind(&self, run: RunId) -> Result<Option<RunKind>>;
    /// Adds a point; checks the run exists and holds rows of this origin (`foreign`: imported
    /// rows, baseline runs only); flags the run when the point is invalid, in one transaction.
    fn insert_point(&mut self, run: RunId, foreign: bool, c: &PointColumns) -> Result<i64>;
    /// Adds an eval row, with the same checks.
    fn insert_eval(&mut self, run: RunId, foreign: bool, c: &EvalColumns) -> Result<i64>;
    /// Sets one provenance fact.
    fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()>;
    /// A run's provenance facts by key.
    fn provenance(&self, run: RunId) -> Result<Vec<(String, String)>>;
    /// Sets a run's status and finish time (`None`: not finished).
    fn set_status(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: Option<String>,
    ) -> Result<()>;
    /// Runs, newest first.
    fn runs(&self, f: &RunFilter) -> Result<Vec<RunRecord>>;
    /// A run's points in insertion order.
    fn point_rows(&self, run: RunId) -> Result<Vec<RawPoint>>;
    /// A run's eval rows `(id, row_json)` in insertion order.
    fn eval_rows(&self, run: RunId) -> Result<Vec<(i64, String)>>;
    /// Deletes one point of a run.
    fn delete_point(&mut self, run: RunId, point_id: i64) -> Result<bool>;
    /// Deletes a run's eval rows.
    fn delete_evals(&mut self, run: RunId) -> Result<usize>;
    /// Records image provenance at `recorded_at` (RFC 3339).
    fn record_image_provenance(&mut self, p: &ImageProvenance, recorded_at: &str) -> Result<i64>;
    /// Image provenance rows, newest first.
    fn image_provenance(&self, image: Option<&str>) -> Result<Vec<StoredImageProvenance>>;
    /// The backend's own consistency check.
    fn integrity_check(&self) -> Result<()>;
    /// Error-free points of runs on `branch` with this ISL, OSL and concurrency (the facade
    /// applies the config match of compare_results.py).
    fn baseline_candidates(
        &self,
        branch: &str,
        isl: i64,
        osl: i64,
        conc: i64,
    ) -> Result<Vec<BaselineCandidate>>;
}
