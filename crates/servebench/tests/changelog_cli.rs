//! `servebench changelog process|validate|append`: the golden processor cases through real git
//! refs (the reference's own setup), file mode, and an append → validate round trip.

use crate::common;
use common::output_in;

use std::path::Path;
use std::process::Command;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex"
);

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn layout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("configs")).unwrap();
    for f in ["nvidia-master.yaml", "amd-master.yaml", "runners.yaml"] {
        std::fs::copy(Path::new(DATA).join(f), dir.path().join("configs").join(f)).unwrap();
    }
    std::fs::copy(
        Path::new(DATA).join("perf-changelog.yaml"),
        dir.path().join("perf-changelog.yaml"),
    )
    .unwrap();
    dir
}

#[test]
fn golden_processor_cases_through_git_refs() {
    if servebench_testkit::git().is_none() {
        return;
    }
    let dir = layout();
    let d = dir.path();
    let base = std::fs::read_to_string(d.join("perf-changelog.yaml")).unwrap();
    git(d, &["init", "-q", "-b", "base"]);
    git(d, &["add", "."]);
    git(d, &["commit", "-qm", "base"]);
    for (branch, add) in [
        ("head-c1", "C1-head-additions.yaml"),
        ("head-c3", "C3-head-additions.yaml"),
    ] {
        git(d, &["checkout", "-q", "-b", branch, "base"]);
        let text = std::fs::read_to_string(format!("{DATA}/golden/changelog/{add}")).unwrap();
        std::fs::write(d.join("perf-changelog.yaml"), format!("{base}{text}")).unwrap();
        git(d, &["commit", "-qam", branch]);
    }
    git(d, &["checkout", "-q", "-b", "head-del", "base"]);
    let mut lines: Vec<&str> = base.split_inclusive('\n').collect();
    lines.remove(4);
    let c1 =
        std::fs::read_to_string(format!("{DATA}/golden/changelog/C1-head-additions.yaml")).unwrap();
    std::fs::write(
        d.join("perf-changelog.yaml"),
        format!("{}{c1}", lines.concat()),
    )
    .unwrap();
    git(d, &["commit", "-qam", "head-del"]);
    git(d, &["checkout", "-q", "base"]);

    let mut n = 0;
    for e in std::fs::read_dir(format!("{DATA}/golden/changelog")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".args.json") else {
            continue;
        };
        n += 1;
        let args: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let argv: Vec<&str> = args["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut full = vec!["changelog", "process"];
        full.extend(argv);
        let out = output_in(d, &full);
        let code = args["exit_code"].as_i64().unwrap() as i32;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{stem}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if code == 0 {
            let want = std::fs::read(format!(
                "{DATA}/golden/changelog/{}",
                args["stdout_file"].as_str().unwrap()
            ))
            .unwrap();
            assert!(
                out.stdout == want,
                "{stem}: stdout differs from the golden file"
            );
        } else {
            let want = std::fs::read_to_string(format!(
                "{DATA}/golden/changelog/{}",
                args["error_last_line_file"].as_str().unwrap()
            ))
            .unwrap();
            let want = want.trim_end().strip_prefix("ValueError: ").unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stderr).trim_end(),
                format!("error: {want}"),
                "{stem}"
            );
        }
    }
    assert_eq!(n, 5);
}

#[test]
fn append_then_validate_keeps_history() {
    let dir = layout();
    let d = dir.path();
    let orig = std::fs::read(d.join("perf-changelog.yaml")).unwrap();
    std::fs::write(d.join("base.yaml"), &orig).unwrap();
    let out = output_in(
        d,
        &[
            "changelog",
            "append",
            "--key",
            "qwen3.5-fp4-b200-sglang-mtp",
            "--description",
            "Bump to \"v0.5.20\": --cuda-graph-max-bs → --cuda-graph-max-bs-decode",
            "--pr-link",
            "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = std::fs::read(d.join("perf-changelog.yaml")).unwrap();
    assert!(head.starts_with(&orig), "historical bytes changed");
    let tail = String::from_utf8_lossy(&head[orig.len()..]).to_string();
    assert_eq!(
        tail,
        "\n- config-keys:\n    - qwen3.5-fp4-b200-sglang-mtp\n  description:\n    - \"Bump to \\\"v0.5.20\\\": --cuda-graph-max-bs → --cuda-graph-max-bs-decode\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX\n"
    );
    // By default validate is InferenceX's gate: final newline, and the processor makes a
    // matrix; the XXX placeholder bump and append write is accepted there.
    let validate = |extra: &[&str], head: &str| {
        let mut a = vec![
            "changelog",
            "validate",
            "--base",
            "base.yaml",
            "--head",
            head,
        ];
        a.extend_from_slice(extra);
        let out = output_in(d, &a);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(
        validate(&[], "perf-changelog.yaml"),
        (
            Some(0),
            "Validated perf-changelog.yaml: final newline present and matrix generated\n".into(),
            String::new()
        )
    );
    // --strict: inside PR 3363 the placeholder is accepted …
    let (code, out, err) = validate(&["--strict", "--pr-number", "3363"], "perf-changelog.yaml");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "Validated perf-changelog.yaml: 1 appended entry, 0 pr-link corrections\n"
    );
    // … on main it is not.
    let (code, _, err) = validate(&["--strict"], "perf-changelog.yaml");
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "ERROR: new main-branch entry has invalid pr-link: 'https://github.com/SemiAnalysisAI/InferenceX/pull/XXX'\n"
    );
    // Touching one historical byte is caught: as a deleted line by the gate's processor, as a
    // changed entry by --strict.
    let mut edited = head.clone();
    let pos = edited.windows(4).position(|w| w == b"6-7%").unwrap();
    edited[pos] = b'5';
    std::fs::write(d.join("edited.yaml"), &edited).unwrap();
    let (code, _, err) = validate(&[], "edited.yaml");
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("ERROR: the change-log processor rejected the diff:\nDeletions are not allowed in edited.yaml. Only additions to the changelog are permitted. Found deleted line: "),
        "{err}"
    );
    let (code, _, err) = validate(&["--strict", "--pr-number", "3363"], "edited.yaml");
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "ERROR: entry 1 changed; existing entries are immutable except for pr-link-only corrections\n"
    );
    // No change at all.
    let (_, _, err) = validate(&[], "base.yaml");
    assert_eq!(
        err,
        "ERROR: the change-log processor rejected the diff:\nNo additions found in the changelog file.\n"
    );
    let (_, _, err) = validate(&["--strict"], "base.yaml");
    assert_eq!(err, "ERROR: base.yaml has no changes\n");
}

#[test]
fn append_refuses_a_link_that_validate_would_refuse() {
    let dir = layout();
    let d = dir.path();
    let orig = std::fs::read(d.join("perf-changelog.yaml")).unwrap();
    let out = output_in(
        d,
        &[
            "changelog",
            "append",
            "--key",
            "qwen3.5-fp4-b200-sglang-mtp",
            "--description",
            "x",
            "--pr-link",
            "notalink",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: new main-branch entry has invalid pr-link: 'notalink'\n"
    );
    assert_eq!(std::fs::read(d.join("perf-changelog.yaml")).unwrap(), orig);
}
