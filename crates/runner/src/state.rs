//! The run directory: everything a run did, kept on disk so nothing is lost and a killed run
//! resumes.
//!
//! ```text
//! OUT/run.json                          the run: plan, measurement flags, executor, store,
//!                                       runner pid
//! OUT/points/<point>/attempt-<n>/       one attempt: point.json (job spec), job.sh, job.log,
//!                                       submit.json (job id), status.json, point.db, sweep/|eval/
//! OUT/points/<point>/result.json        the point's final state (stored | failed | interrupted)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunnerError};
use crate::plan::Point;

/// `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState {
    /// Run name (the directory's name).
    pub name: String,
    /// Creation time (RFC 3339 UTC).
    pub created_at: String,
    /// `local` or `slurm`.
    pub executor: String,
    /// Simulated engines.
    pub simulate: bool,
    /// The results store.
    pub db: PathBuf,
    /// The store run holding this run's points, once the first point was stored.
    pub store_run: Option<i64>,
    /// Pid of the `servebench run` process that last worked on the run.
    pub pid: u32,
    /// The plan.
    pub points: Vec<Point>,
    /// The flags that decide which points the run has and what each measures (`--isl`,
    /// `--num-prompts`, `--conc`, …; [`crate::Runner::run_flags`]), as `flag → value`, recorded
    /// when the run started: a resume with other values is refused ([`flag_diffs`]). `None` in
    /// a `run.json` written by an older servebench (resumed unchecked, with a warning).
    #[serde(default)]
    pub flags: Option<BTreeMap<String, String>>,
}

/// The flags whose values differ between the run's start (`then`) and this invocation (`now`),
/// each as `--isl 512 → 128` (a flag absent on one side reads `(not set)`), in flag order.
pub fn flag_diffs(then: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let unset = "(not set)";
    let keys: std::collections::BTreeSet<&String> = then.keys().chain(now.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let was = then.get(k).map(String::as_str).unwrap_or(unset);
            let is = now.get(k).map(String::as_str).unwrap_or(unset);
            (was != is).then(|| format!("{k} {was} → {is}"))
        })
        .collect()
}

/// Path of `run.json` in `dir`.
pub fn run_file(dir: &Path) -> PathBuf {
    dir.join("run.json")
}

/// Reads `run.json`.
pub fn load(dir: &Path) -> Result<RunState> {
    let p = run_file(dir);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        RunnerError::Invalid(format!(
            "{}: not a servebench run directory ({e})",
            dir.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        RunnerError::Invalid(format!(
            "{}: line {}, column {}: {e}",
            p.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Writes `run.json` (whole file, then rename).
pub fn save(dir: &Path, s: &RunState) -> Result<()> {
    write_json(&run_file(dir), s)
}

/// Writes JSON atomically (temp file + rename).
pub fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| RunnerError::io(path, e))?;
    if let Some(dir) = path.parent() {
        // a point that failed before its first attempt directory was made still gets its
        // result.json
        std::fs::create_dir_all(dir).map_err(|e| RunnerError::io(dir, e))?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|e| RunnerError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| RunnerError::io(path, e))
}

/// Reads JSON, `None` when the file is absent or unreadable.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// `OUT/points/<id>`.
pub fn point_dir(dir: &Path, id: &str) -> PathBuf {
    dir.join("points").join(id)
}

/// Attempt directories of a point, in order.
pub fn attempts(dir: &Path, id: &str) -> Vec<PathBuf> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(point_dir(dir, id))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e
                .file_name()
                .to_str()?
                .strip_prefix("attempt-")?
                .parse::<u32>()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}
