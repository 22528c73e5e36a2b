//! The sweep's output directory: a new timestamped one by default, an existing one only when
//! it holds no earlier results (or `overwrite`).

use std::path::{Path, PathBuf};

use crate::error::{io, IoOp, PipelineError, Result};

/// Whether `dir` holds a sweep's results: `summary.json`, or a `conc*` directory with files.
pub fn holds_results(dir: &Path) -> bool {
    if dir.join("summary.json").exists() {
        return true;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("conc")
            && e.path().is_dir()
            && std::fs::read_dir(e.path()).is_ok_and(|mut r| r.next().is_some())
    })
}

/// Refuses an `--out` directory that already holds a sweep's results (the store's earlier run
/// still points there), unless `--overwrite`, which is said once.
pub fn check_out_dir(dir: &Path, overwrite: bool) -> Result<()> {
    if !holds_results(dir) {
        return Ok(());
    }
    if !overwrite {
        return Err(PipelineError::OutDirTaken {
            dir: dir.to_path_buf(),
        });
    }
    eprintln!(
        "warning: --overwrite: replacing the earlier results in {}",
        dir.display()
    );
    Ok(())
}

/// `servebench-out/<UTC timestamp>`, created atomically: a second sweep started in the same
/// second (two processes writing one store) gets `<timestamp>-2`, `-3`, … instead of sharing it.
pub fn new_default_out_dir() -> Result<PathBuf> {
    let base = PathBuf::from("servebench-out");
    std::fs::create_dir_all(&base).map_err(io(IoOp::CreateOutDir, &base))?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    for k in 1..1000 {
        let d = if k == 1 {
            base.join(&stamp)
        } else {
            base.join(format!("{stamp}-{k}"))
        };
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(PipelineError::io(IoOp::CreateOutDir, &d, e)),
        }
    }
    Err(PipelineError::Msg(format!(
        "{}: 999 output directories for {stamp} already exist; pass --out DIR",
        base.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_directory_with_results_is_refused() {
        let d = tempfile::tempdir().unwrap();
        check_out_dir(d.path(), false).unwrap();
        std::fs::create_dir(d.path().join("conc4")).unwrap();
        assert!(
            !holds_results(d.path()),
            "an empty conc dir is not a result"
        );
        std::fs::write(d.path().join("conc4/records.jsonl"), "").unwrap();
        assert!(holds_results(d.path()));
        let e = check_out_dir(d.path(), false).unwrap_err().to_string();
        assert!(e.contains("already holds a sweep's results"), "{e}");
        check_out_dir(d.path(), true).unwrap();
    }
}
