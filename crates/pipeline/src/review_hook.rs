//! The one seam between measuring and reviewing: a sweep's `--baseline` (loaded once before
//! measuring, so a missing run or a bad file fails in seconds) and `--report` (the run's report,
//! read back from the store at the end) are done by the review side, which this crate does not
//! depend on. The binary installs it once at start-up ([`install`]; `servebench-review`
//! implements [`RunReview`]); without one, a sweep that asks for either fails with one line.

use std::path::Path;
use std::sync::OnceLock;

use servebench_contracts::Stat;
use servebench_store::RunId;

use crate::error::BoxError;

/// What a sweep asks of the review side.
pub trait RunReview: Send + Sync {
    /// Loads `baseline` (a run id, `latest-baseline`, or a baseline file) from the store at
    /// `db`, only to check that it can be loaded; the error is the loading's line.
    fn check_baseline(&self, db: &Path, baseline: &str) -> Result<(), BoxError>;

    /// Writes the report of run `run` of the store at `db` to `path` (format from the
    /// extension), compared with `baseline` if given, latencies at `stat`.
    fn write_run_report(
        &self,
        path: &Path,
        db: &Path,
        run: RunId,
        baseline: Option<&str>,
        stat: Stat,
    ) -> Result<(), BoxError>;
}

static REVIEW: OnceLock<Box<dyn RunReview>> = OnceLock::new();

/// Installs the review side for every sweep of this process; a second call is ignored (the
/// first stays).
pub fn install(review: Box<dyn RunReview>) {
    let _ = REVIEW.set(review);
}

/// The installed review side, or the one-line error naming `flag` (`--report`, `--baseline`)
/// when none was installed.
pub(crate) fn get(flag: &str) -> Result<&'static dyn RunReview, BoxError> {
    REVIEW.get().map(|r| &**r).ok_or_else(|| {
        format!("{flag}: this build has no review side (servebench_pipeline::review_hook::install was not called)").into()
    })
}
