//! Test support shared by every crate's tests (a dev-dependency only): the one rule for a test
//! whose prerequisite is missing — python3, git, the shared data folder, a system limit, a
//! service. Without `SERVEBENCH_REQUIRE_SERVICES=1` such a test prints `skipped: <why>` and
//! passes; with it (set by `scripts/test.sh`, i.e. CI) it fails, so CI cannot pass by skipping.
//!
//! Owns: that rule ([`skip_or_fail`]) and the look-ups built on it ([`python3`], [`git`],
//! [`shared_path`]). Must not know about: any servebench crate (it depends on none).
#![warn(missing_docs)]

use std::path::PathBuf;
use std::process::Command;

/// The variable that turns a skip into a failure.
pub const REQUIRE_VAR: &str = "SERVEBENCH_REQUIRE_SERVICES";

/// Whether missing prerequisites must fail the test (`SERVEBENCH_REQUIRE_SERVICES=1`).
pub fn services_required() -> bool {
    std::env::var(REQUIRE_VAR).as_deref() == Ok("1")
}

/// A prerequisite is missing: panics with `why` under `SERVEBENCH_REQUIRE_SERVICES=1`, else
/// prints `skipped: <why>` (the caller then returns without asserting anything).
///
/// # Panics
/// When services are required ([`services_required`]).
pub fn skip_or_fail(why: &str) {
    if services_required() {
        panic!("{why} ({REQUIRE_VAR}=1: a missing prerequisite fails the test)");
    }
    println!("skipped: {why}");
}

/// `Some(value)` when `have` holds one, else [`skip_or_fail`] with `why` and `None`.
pub fn require<T>(have: Option<T>, why: &str) -> Option<T> {
    if have.is_none() {
        skip_or_fail(why);
    }
    have
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `python3` when it runs (else skipped, or a failure under `SERVEBENCH_REQUIRE_SERVICES=1`).
pub fn python3() -> Option<PathBuf> {
    require(
        runs("python3").then(|| PathBuf::from("python3")),
        "python3 is not installed",
    )
}

/// `git` when it runs (else skipped, or a failure under `SERVEBENCH_REQUIRE_SERVICES=1`).
pub fn git() -> Option<PathBuf> {
    require(
        runs("git").then(|| PathBuf::from("git")),
        "git is not installed",
    )
}

/// The shared data folder: `SERVEBENCH_SHARED`, else `../shared` beside the workspace
/// (`crate_dir` is the calling crate's `CARGO_MANIFEST_DIR`, two levels under the workspace).
pub fn shared_dir(crate_dir: &str) -> PathBuf {
    match std::env::var_os("SERVEBENCH_SHARED") {
        Some(s) => PathBuf::from(s),
        None => PathBuf::from(crate_dir).join("../../../shared"),
    }
}

/// `rel` under the shared data folder ([`shared_dir`]) when it exists (else skipped, or a
/// failure under `SERVEBENCH_REQUIRE_SERVICES=1`, or when `SERVEBENCH_SHARED` is set: a set
/// folder that lacks the file is a broken setup, not a missing one).
///
/// # Panics
/// When the path is missing and services are required or `SERVEBENCH_SHARED` is set.
pub fn shared_path(crate_dir: &str, rel: &str) -> Option<PathBuf> {
    let p = shared_dir(crate_dir).join(rel);
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("SERVEBENCH_SHARED").is_some() {
        panic!("{}: missing (SERVEBENCH_SHARED is set)", p.display());
    }
    skip_or_fail(&format!(
        "{} not found (set SERVEBENCH_SHARED to the shared data folder)",
        p.display()
    ));
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_value_passes_through() {
        assert_eq!(require(Some(3), "never said"), Some(3));
    }

    #[test]
    fn a_missing_prerequisite_fails_only_when_required() {
        // the variable is read at the call: both outcomes in one test (tests of this crate do
        // not run anything else that reads it)
        let was = std::env::var_os(REQUIRE_VAR);
        std::env::remove_var(REQUIRE_VAR);
        assert_eq!(require::<u8>(None, "x missing"), None);
        std::env::set_var(REQUIRE_VAR, "1");
        let e = std::panic::catch_unwind(|| require::<u8>(None, "x missing")).unwrap_err();
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.starts_with("x missing (SERVEBENCH_REQUIRE_SERVICES=1"),
            "{msg}"
        );
        match was {
            Some(v) => std::env::set_var(REQUIRE_VAR, v),
            None => std::env::remove_var(REQUIRE_VAR),
        }
    }
}
