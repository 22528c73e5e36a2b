//! The shared data folder (`shared/`, beside the servebench checkout): where servebench finds
//! the data it reads by default (GSM8K's `data/gsm8k`). The one place its default is resolved.
//!
//! Order: `$SERVEBENCH_SHARED` when set (taken as given); else `../shared` from the working
//! directory when that folder exists; else `shared/` beside the checkout the running binary was
//! built in (the folder above the first ancestor of the executable that holds the workspace's
//! `Cargo.toml`, e.g. `/work/main/target/debug/servebench` → `/work/shared`). Otherwise an
//! error naming every place tried, on one line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::EvalError;

/// The environment variable that names the shared data folder.
pub const ENV: &str = "SERVEBENCH_SHARED";

/// The shared data folder of this process: [`shared_dir_from`] with `$SERVEBENCH_SHARED`, the
/// working directory and [`std::env::current_exe`].
///
/// # Errors
/// [`EvalError::NoSharedDir`] when none of the places exists (one line naming each).
pub fn shared_dir() -> Result<PathBuf, EvalError> {
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    shared_dir_from(std::env::var_os(ENV), cwd.as_deref(), exe.as_deref())
}

/// The shared data folder from explicit inputs (see the module docs for the order): `env` is
/// the value of `SERVEBENCH_SHARED` (empty counts as unset), `cwd` the working directory, `exe`
/// the running executable. A folder found through `cwd` or `exe` comes back absolute and
/// canonical, so it can be handed to a child process that runs elsewhere.
///
/// # Errors
/// [`EvalError::NoSharedDir`] listing each place tried (`SERVEBENCH_SHARED is not set`, the
/// `../shared` folder, the folder beside the checkout or "no checkout above EXE").
pub fn shared_dir_from(
    env: Option<OsString>,
    cwd: Option<&Path>,
    exe: Option<&Path>,
) -> Result<PathBuf, EvalError> {
    if let Some(v) = env.filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(v));
    }
    let mut tried = vec![format!("{ENV} is not set")];
    match cwd {
        Some(cwd) => {
            let c = cwd.join("../shared");
            if c.is_dir() {
                return Ok(std::fs::canonicalize(&c).unwrap_or(c));
            }
            tried.push(format!("{}: no such folder", c.display()));
        }
        None => tried.push("../shared: the working directory is unknown".into()),
    }
    match exe.and_then(|e| checkout_of(e).map(|root| (e, root))) {
        Some((_, root)) => {
            let c = root.parent().unwrap_or(&root).join("shared");
            if c.is_dir() {
                return Ok(std::fs::canonicalize(&c).unwrap_or(c));
            }
            tried.push(format!(
                "{} (beside the checkout {}): no such folder",
                c.display(),
                root.display()
            ));
        }
        None => tried.push(match exe {
            Some(e) => format!("no servebench checkout above {}", e.display()),
            None => "the servebench binary's path is unknown".into(),
        }),
    }
    Err(EvalError::NoSharedDir { tried })
}

/// The first ancestor of `exe` holding a workspace `Cargo.toml` (the checkout the binary was
/// built in), or None (an installed binary).
fn checkout_of(exe: &Path) -> Option<PathBuf> {
    exe.ancestors().skip(1).find_map(|d| {
        let toml = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
        toml.lines()
            .any(|l| l.trim() == "[workspace]")
            .then(|| d.to_path_buf())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkout `root/repo` (workspace Cargo.toml, binary in target/debug) with optional
    /// `root/shared`, and a working directory `root/work/sub` (no `../shared`).
    fn layout(with_shared: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join("target/debug")).unwrap();
        std::fs::create_dir_all(repo.join("crates/x")).unwrap();
        std::fs::write(repo.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
        // a member crate's manifest is not the checkout
        std::fs::write(repo.join("crates/x/Cargo.toml"), "[package]\n").unwrap();
        if with_shared {
            std::fs::create_dir_all(t.path().join("shared/data")).unwrap();
        }
        let cwd = t.path().join("work/sub");
        std::fs::create_dir_all(&cwd).unwrap();
        let exe = repo.join("target/debug/servebench");
        (t, cwd, exe)
    }

    #[test]
    fn env_wins_then_cwd_then_beside_the_checkout() {
        let (t, cwd, exe) = layout(true);
        let root = std::fs::canonicalize(t.path()).unwrap();
        // the variable is taken as given, even when the other places exist
        assert_eq!(
            shared_dir_from(Some("/elsewhere".into()), Some(&cwd), Some(&exe)).unwrap(),
            PathBuf::from("/elsewhere")
        );
        // an empty variable is unset; ../shared of work/sub does not exist: beside the checkout
        assert_eq!(
            shared_dir_from(Some("".into()), Some(&cwd), Some(&exe)).unwrap(),
            root.join("shared")
        );
        // ../shared of the working directory comes before the checkout
        let near = t.path().join("work/shared");
        std::fs::create_dir_all(&near).unwrap();
        assert_eq!(
            shared_dir_from(None, Some(&cwd), Some(&exe)).unwrap(),
            root.join("work/shared")
        );
        // a test binary deeper in target/ finds the same checkout
        std::fs::remove_dir(&near).unwrap();
        let deps = t.path().join("repo/target/debug/deps/group_x-0123");
        assert_eq!(
            shared_dir_from(None, Some(&cwd), Some(&deps)).unwrap(),
            root.join("shared")
        );
    }

    #[test]
    fn none_found_names_every_place_on_one_line() {
        let (t, cwd, exe) = layout(false);
        let e = shared_dir_from(None, Some(&cwd), Some(&exe))
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains("SERVEBENCH_SHARED is not set"), "{e}");
        assert!(
            e.contains(&format!(
                "{}: no such folder",
                cwd.join("../shared").display()
            )),
            "{e}"
        );
        assert!(
            e.contains(&format!(
                "{} (beside the checkout {}): no such folder",
                t.path().join("shared").display(),
                t.path().join("repo").display()
            )),
            "{e}"
        );
        // an installed binary (no checkout above it)
        let e = shared_dir_from(None, Some(&cwd), Some(Path::new("/nonexistent/bin/sb")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no servebench checkout above /nonexistent/bin/sb"),
            "{e}"
        );
    }
}
