//! Helpers of the `servebench run` / `coverage` tests: the real InferenceX repository
//! (`shared/data/inferencex/repo-843c6254f.tar.gz`) and the arguments that run it, what a run
//! stored read back, the files a run wrote found, and the one-node Slurm cluster's check.

use std::path::{Path, PathBuf};
use std::process::Command;

use servebench_contracts::AggRow;

/// Extracts the real repository into `dir` and returns `dir/InferenceX`; `None` when the tarball
/// is missing (the test is skipped, or fails under `SERVEBENCH_REQUIRE_SERVICES=1`).
pub fn real_repo(dir: &Path) -> Option<PathBuf> {
    let tarball = super::shared().join("data/inferencex/repo-843c6254f.tar.gz");
    if !tarball.is_file() {
        servebench_testkit::skip_or_fail(&format!("{} not found", tarball.display()));
        return None;
    }
    let st = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success(), "tar xzf {}", tarball.display());
    Some(dir.join("InferenceX"))
}

/// `CMD KEYS… --catalog <NVIDIA's and AMD's master.yaml> --runners <runners.yaml>` of the real
/// repository [`real_repo`] extracted into the working directory, then `rest`.
pub fn real_args(cmd: &str, keys: &[&str], rest: &[&str]) -> Vec<String> {
    let mut a = vec![cmd];
    a.extend_from_slice(keys);
    a.extend_from_slice(&[
        "--catalog",
        "InferenceX/configs/nvidia-master.yaml",
        "InferenceX/configs/amd-master.yaml",
        "--runners",
        "InferenceX/configs/runners.yaml",
    ]);
    a.extend_from_slice(rest);
    a.into_iter().map(String::from).collect()
}

/// The point rows servebench stored in the SQLite store `db`: one list per run, oldest run
/// first, each in insertion order (panics on an imported row).
pub fn stored_rows(db: &Path) -> Vec<Vec<AggRow>> {
    let store = servebench_store::Store::open(db).unwrap_or_else(|e| panic!("{e}"));
    let mut runs = store.list_runs(None, None).unwrap();
    runs.reverse();
    runs.iter()
        .map(|run| {
            store
                .points(run.id)
                .unwrap()
                .iter()
                .map(|p| {
                    p.row
                        .servebench()
                        .unwrap_or_else(|| panic!("run {}: an imported row", run.id))
                        .clone()
                })
                .collect()
        })
        .collect()
}

/// `servebench runs --db DB --json` in `dir`, asserting exit 0 (the panic shows stderr).
pub fn runs_json(dir: &Path, db: &str) -> serde_json::Value {
    let (rc, out, err) = super::run_in(dir, &["runs", "--db", db, "--json"]);
    assert_eq!(rc, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Every file named `name` under `dir` (recursively; none when `dir` is missing), sorted.
pub fn find_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = p.path();
        if p.is_dir() {
            out.extend(find_files(&p, name));
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Whether the one-node Slurm cluster of scripts/services/slurm.sh answers `sinfo`; when not,
/// the test is skipped (or fails under `SERVEBENCH_REQUIRE_SERVICES=1`).
pub fn slurm_up() -> bool {
    let ok = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !ok {
        servebench_testkit::skip_or_fail("Slurm is not running (scripts/services/slurm.sh)");
    }
    ok
}
