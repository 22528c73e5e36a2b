//! Offline CLI tests: catalog, matrix, changelog, compare, report, store, triage, bump (mock registry), docs and wiring; no simulator load, no services. Fast.
//!
//! One test binary for several test files (fewer binaries link faster): each file stays
//! where it was and becomes a module here, so `cargo test -p servebench --test group_cli <file>::`
//! runs one file's tests.

/// Helpers the files share, compiled once for the binary (each file: `use crate::common;`).
mod common;

#[path = "attempt_scenario.rs"]
mod attempt_scenario;
#[path = "attempt_simulated.rs"]
mod attempt_simulated;
#[path = "bump_cli.rs"]
mod bump_cli;
#[path = "bump_scenario.rs"]
mod bump_scenario;
#[path = "catalog_cli.rs"]
mod catalog_cli;
#[path = "changelog_cli.rs"]
mod changelog_cli;
#[path = "compare_cli.rs"]
mod compare_cli;
#[path = "matrix_golden_cli.rs"]
mod matrix_golden_cli;
#[path = "process_result_cli.rs"]
mod process_result_cli;
#[path = "report_cli.rs"]
mod report_cli;
#[path = "store_cli.rs"]
mod store_cli;
#[path = "sweep_guards.rs"]
mod sweep_guards;
#[path = "sweep_notes.rs"]
mod sweep_notes;
#[path = "tls_endpoint.rs"]
mod tls_endpoint;
#[path = "triage_cli.rs"]
mod triage_cli;
#[path = "typed_docs.rs"]
mod typed_docs;
#[path = "wiring_bump.rs"]
mod wiring_bump;
#[path = "wiring_endpoint.rs"]
mod wiring_endpoint;

/// With `autotests = false` a test file that no group includes would never run: every
/// `tests/*.rs` file must be in exactly one group file's `#[path]` list.
#[test]
fn every_test_file_is_in_exactly_one_group() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let groups = ["group_cli", "group_sim", "group_services", "group_timing"];
    let mut seen = std::collections::BTreeMap::<String, Vec<&str>>::new();
    for g in groups {
        let text = std::fs::read_to_string(dir.join(format!("{g}.rs"))).unwrap();
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("#[path = \"") {
                let file = rest.split('"').next().unwrap().to_string();
                seen.entry(file).or_default().push(g);
            }
        }
    }
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rs") && !n.starts_with("group_"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "test files found: {files:?}");
    for f in &files {
        let gs = seen.get(f).cloned().unwrap_or_default();
        assert_eq!(
            gs.len(),
            1,
            "tests/{f} is in groups {gs:?}: add it to exactly one of {groups:?}"
        );
    }
    for f in seen.keys() {
        assert!(
            files.contains(f),
            "a group includes tests/{f}, which does not exist"
        );
    }
    let toml = std::fs::read_to_string(dir.join("../Cargo.toml")).unwrap();
    assert!(toml.contains("autotests = false"));
    for g in groups {
        assert!(
            toml.contains(&format!("path = \"tests/{g}.rs\"")),
            "{g} is not a [[test]] target"
        );
    }
}

/// The same for every other crate whose tests are grouped (`autotests = false` in its
/// Cargo.toml): each `tests/*.rs` file is listed in its `tests/group.rs` (a `[[test]]` target)
/// or is a `[[test]]` of its own (the wall-clock timing files), never both.
#[test]
fn every_grouped_crate_lists_all_its_test_files() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut grouped = 0;
    for e in std::fs::read_dir(&crates).unwrap() {
        let dir = e.unwrap().path();
        let Ok(toml) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if !toml.contains("autotests = false") || dir.ends_with("servebench") {
            continue;
        }
        grouped += 1;
        let group = std::fs::read_to_string(dir.join("tests/group.rs")).unwrap_or_else(|e| {
            panic!(
                "{}: autotests = false but no tests/group.rs: {e}",
                dir.display()
            )
        });
        assert!(
            toml.contains("path = \"tests/group.rs\""),
            "{}: tests/group.rs is no [[test]] target",
            dir.display()
        );
        for f in std::fs::read_dir(dir.join("tests")).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".rs") && name != "group.rs" {
                let listed = group.contains(&format!("#[path = \"{name}\"]"));
                let own_target = toml.contains(&format!("path = \"tests/{name}\""));
                assert!(
                    listed ^ own_target,
                    "{}/tests/{name}: list it in tests/group.rs or give it its own [[test]] (one of them)",
                    dir.display()
                );
            }
        }
    }
    assert!(grouped >= 3, "grouped crates found: {grouped}");
}

/// docs/ARCHITECTURE.md "Function length": no non-test function under `crates/*/src` is over
/// 200 lines (`scripts/fn-lengths.py --over 200` exits 1 and lists them otherwise).
#[test]
fn no_function_is_over_200_lines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = std::process::Command::new("python3")
        .arg(root.join("scripts/fn-lengths.py"))
        .args(["--over", "200"])
        .current_dir(&root)
        .output()
        .expect("python3 runs scripts/fn-lengths.py");
    assert!(
        o.status.success(),
        "functions over 200 lines:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
