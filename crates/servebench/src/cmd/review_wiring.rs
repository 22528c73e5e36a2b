//! Wires the review side into the measuring side: a sweep's `--baseline` check and `--report`
//! (`servebench_pipeline::review_hook`) are done by `servebench-review`, which the pipeline does
//! not depend on. [`install`] is called once at start-up.

use std::path::Path;

use servebench_contracts::Stat;
use servebench_pipeline::error::BoxError;
use servebench_pipeline::review_hook::{self, RunReview};
use servebench_store::RunId;

/// [`RunReview`] by `servebench-review`: the same functions `compare` and `report` use.
struct Review;

impl RunReview for Review {
    fn check_baseline(&self, db: &Path, baseline: &str) -> Result<(), BoxError> {
        servebench_review::sides::load_side(db, baseline)
            .map(|_| ())
            .map_err(Into::into)
    }

    fn write_run_report(
        &self,
        path: &Path,
        db: &Path,
        run: RunId,
        baseline: Option<&str>,
        stat: Stat,
    ) -> Result<(), BoxError> {
        servebench_review::report::write_run_report(path, db, run, baseline, stat)
            .map_err(Into::into)
    }
}

/// Installs the review side for every sweep of this process (`sweep`, `bench`, `search`).
pub fn install() {
    review_hook::install(Box::new(Review));
}
