//! What resuming a killed or interrupted run needs from the store: find the earlier run that
//! wrote into the same output directory, reopen it (status back to `running`), and drop the rows
//! of points or evals that will be measured again, so that a resumed run ends with exactly one
//! row per point (docs/reliability.md, crash safety).

use std::path::Path;

use crate::backend::RunFilter;
use crate::error::Result;
use crate::{RunId, RunKind, RunRecord, Store};

impl Store {
    /// Runs of `kind` whose output directory (`runs.out_dir`, stored canonicalised) is
    /// `out_dir`, newest first. `out_dir` is canonicalised here when it exists.
    pub fn runs_in_out_dir(&self, out_dir: &Path, kind: RunKind) -> Result<Vec<RunRecord>> {
        let dir = std::fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.to_path_buf());
        self.backend.runs(&RunFilter {
            kind: Some(kind),
            out_dir: Some(dir.display().to_string()),
            ..RunFilter::default()
        })
    }

    /// Sets a run's status back to `running` (and clears `finished_at`): a resumed run is
    /// recorded again when it ends.
    pub fn reopen_run(&mut self, run: RunId) -> Result<()> {
        self.backend
            .set_status(run, crate::RunStatus::Running, None)
    }

    /// Deletes one point row (`points.id`) of `run`; returns whether it existed.
    pub fn delete_point(&mut self, run: RunId, point_id: i64) -> Result<bool> {
        self.backend.delete_point(run, point_id)
    }

    /// Deletes every eval row of `run` (a resumed run scores its eval again); returns how many.
    pub fn delete_evals(&mut self, run: RunId) -> Result<usize> {
        self.backend.delete_evals(run)
    }
}

#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod rows;

#[cfg(test)]
mod tests {
    use super::rows::{agg_row, eval_row};
    use super::*;
    use crate::{RunMeta, RunStatus};

    #[test]
    fn a_run_is_found_by_its_out_dir_reopened_and_its_rows_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let mut st = Store::open(tmp.path().join("s.db")).unwrap();
        let mut m = RunMeta::new(RunKind::Sweep);
        m.out_dir = Some(std::fs::canonicalize(&out).unwrap());
        let a = st.record_run(&m).unwrap();
        let b = st.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
        let p1 = st.add_point(a, &agg_row(1, "a")).unwrap();
        st.add_point(a, &agg_row(2, "a")).unwrap();
        st.add_eval(a, &eval_row(1, 0.5)).unwrap();
        st.finish_run(a, RunStatus::Interrupted).unwrap();

        // found through a non-canonical spelling of the same directory
        let found = st
            .runs_in_out_dir(&tmp.path().join("out/../out"), RunKind::Sweep)
            .unwrap();
        assert_eq!(found.iter().map(|r| r.id).collect::<Vec<_>>(), vec![a]);
        assert!(st.runs_in_out_dir(&out, RunKind::Eval).unwrap().is_empty());

        st.reopen_run(a).unwrap();
        let r = st.get_run(a).unwrap().unwrap();
        assert_eq!(r.status, RunStatus::Running);
        assert!(r.finished_at.is_none());

        assert!(!st.delete_point(b, p1).unwrap(), "another run's point");
        assert!(st.delete_point(a, p1).unwrap());
        assert_eq!(st.points(a).unwrap().len(), 1);
        assert_eq!(st.delete_evals(a).unwrap(), 1);
        assert!(st.evals(a).unwrap().is_empty());
        assert!(st.reopen_run(RunId(999)).is_err());
        st.integrity_check().unwrap();
    }
}
