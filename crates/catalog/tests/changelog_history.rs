//! `changelog process` byte for byte against InferenceX's `utils/process_changelog.py` on the
//! last 150 change-log commits of InferenceX main (#2170 … #2707).
//!
//! `tests/data/changelog_history/history.bundle` (made by `scripts/changelog_goldens.py` from the
//! fetched repository) holds, on branch `history`, one commit per InferenceX commit with only
//! perf-changelog.yaml, configs/amd-master.yaml, configs/nvidia-master.yaml and
//! configs/runners.yaml, two commits per InferenceX commit: its parent's files, then its own
//! (message: the real SHA), and
//! on branch `goldens` the real script's output for each (run as run-sweep.yml runs it on a push
//! to main: `--base-ref BEFORE --head-ref AFTER`, no PR-label flags). Here the same `git diff`
//! runs on that repository and the real SHAs are the refs the output echoes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use servebench_catalog::changelog::diff::{added_lines, git_diff_refs};
use servebench_catalog::changelog::{process_added, ProcessOptions};
use servebench_catalog::{Catalog, Runners};

const BUNDLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/changelog_history/history.bundle"
);
const MASTERS: [&str; 2] = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"];
/// The file as run-sweep.yml names it (`--changelog-file "${GITHUB_WORKSPACE}/perf-changelog.yaml"`);
/// it appears in the processor's deletion message.
const LABEL: &str = "${GITHUB_WORKSPACE}/perf-changelog.yaml";

#[derive(Deserialize)]
struct Golden {
    sha: String,
    parent: String,
    subject: String,
    rc: i32,
    stdout: Option<String>,
    error: Option<String>,
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn catalog_at(repo: &Path, rev: &str) -> Catalog {
    let sources: Vec<(String, String)> = MASTERS
        .iter()
        .map(|f| (f.to_string(), git(repo, &["show", &format!("{rev}:{f}")])))
        .collect();
    Catalog::from_sources(&sources).unwrap_or_else(|e| panic!("master configs at {rev}: {e}"))
}

/// What servebench prints for one commit: stdout, or `Err(message)`.
fn servebench_output(repo: &Path, base: &str, head: &str, g: &Golden) -> Result<String, String> {
    let diff = git_diff_refs(repo, base, head, "perf-changelog.yaml").map_err(|e| e.to_string())?;
    let added = added_lines(&diff, LABEL).map_err(|e| e.to_string())?;
    let catalog = catalog_at(repo, head);
    let runners_text = git(repo, &["show", &format!("{head}:configs/runners.yaml")]);
    let runners = Runners::from_source("configs/runners.yaml", &runners_text)
        .map_err(|e| format!("runners.yaml: {e}"))?;
    // The base revision's configs only matter for append-only entries.
    let base_catalog = added
        .contains("append-only")
        .then(|| catalog_at(repo, base));
    let m = process_added(
        &added,
        &g.parent,
        &g.sha,
        &ProcessOptions::default(),
        &catalog,
        &runners,
        base_catalog.as_ref(),
    )
    .map_err(|e| e.to_string())?;
    m.to_json_text().map_err(|e| e.to_string())
}

/// The first difference of two texts, with some context.
fn first_difference(want: &str, got: &str) -> String {
    let at = want
        .bytes()
        .zip(got.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let from = at.saturating_sub(150);
    let cut = |s: &str| {
        let mut end = (at + 150).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut start = from.min(end);
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        s[start..end].to_string()
    };
    format!(
        "first difference at byte {at} (lengths {} vs {}):\n  python:     …{}…\n  servebench: …{}…",
        want.len(),
        got.len(),
        cut(want),
        cut(got)
    )
}

/// The bundle cloned into a temporary directory: (dir guard, repository, goldens, commits as
/// (bundle SHA, real SHA), two per golden: parent, then the commit). `None`: git is missing.
fn history() -> Option<(
    tempfile::TempDir,
    PathBuf,
    Vec<Golden>,
    Vec<(String, String)>,
)> {
    servebench_testkit::git()?;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("history.git");
    let out = Command::new("git")
        .args(["clone", "-q", "--bare", BUNDLE])
        .arg(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git clone {BUNDLE}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let goldens: Vec<Golden> = git(&repo, &["show", "goldens:goldens.jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("golden line"))
        .collect();
    let commits: Vec<(String, String)> =
        git(&repo, &["log", "--reverse", "--format=%H %s", "history"])
            .lines()
            .map(|l| {
                let (a, b) = l.split_once(' ').expect("sha and subject");
                (a.to_string(), b.to_string())
            })
            .collect();
    assert_eq!(goldens.len(), 150, "goldens");
    assert_eq!(commits.len(), 2 * goldens.len(), "history commits");
    Some((dir, repo, goldens, commits))
}

#[test]
fn the_last_150_changelog_commits_of_inferencex_main_are_byte_identical() {
    let Some((_dir, repo, goldens, commits)) = history() else {
        return;
    };
    let mut same = 0;
    let mut differing: Vec<String> = Vec::new();
    for (i, g) in goldens.iter().enumerate() {
        let (base, head) = (&commits[2 * i], &commits[2 * i + 1]);
        assert_eq!((&base.1, &head.1), (&g.parent, &g.sha), "bundle order");
        let got = servebench_output(&repo, &base.0, &head.0, g);
        let verdict = match (g.rc, &g.stdout, &g.error, &got) {
            (0, Some(want), _, Ok(got)) if want == got => None,
            (0, Some(want), _, Ok(got)) => Some(first_difference(want, got)),
            (0, _, _, Err(e)) => Some(format!("python printed the matrix; servebench: {e}")),
            (_, _, Some(want), Err(got)) => {
                // The exception's text after its class name (`ValueError: …`).
                let msg = want.split_once(": ").map_or(want.as_str(), |(_, m)| m);
                (!got.contains(msg)).then(|| format!("python: {want}\n  servebench: {got}"))
            }
            (_, _, None, Err(e)) => Some(format!("no golden error recorded; servebench: {e}")),
            (_, _, want, Ok(_)) => Some(format!(
                "python failed ({}); servebench printed a matrix",
                want.as_deref().unwrap_or("?")
            )),
        };
        match verdict {
            None => same += 1,
            Some(why) => differing.push(format!(
                "{} ({}): {why}",
                &g.sha[..9],
                g.subject.chars().take(70).collect::<String>()
            )),
        }
    }
    println!("byte-identical: {same}/{}", goldens.len());
    assert!(
        differing.is_empty(),
        "{same}/{} byte-identical; {} differ, the first:\n{}",
        goldens.len(),
        differing.len(),
        differing[0]
    );
}

/// `changelog validate` on real changes: by default it accepts what InferenceX's gate accepts
/// (whitespace-only lines, entries inserted mid-file), `strict` names the rule each breaks.
#[test]
fn real_changes_pass_the_gate_and_strict_names_the_rule_they_break() {
    use servebench_catalog::changelog::{validate, Validated};
    let Some((_dir, repo, goldens, commits)) = history() else {
        return;
    };
    let run = |sha: &str, strict: bool| {
        let i = goldens
            .iter()
            .position(|g| g.sha.starts_with(sha))
            .expect(sha);
        let (base, head) = (&commits[2 * i].0, &commits[2 * i + 1].0);
        let text = |rev: &str| git(&repo, &["show", &format!("{rev}:perf-changelog.yaml")]);
        let runners = Runners::from_source(
            "configs/runners.yaml",
            &git(&repo, &["show", &format!("{head}:configs/runners.yaml")]),
        )
        .unwrap();
        validate(
            text(base).as_bytes(),
            text(head).as_bytes(),
            "perf-changelog.yaml",
            &format!("perf-changelog.yaml at {sha}~1"),
            &format!("perf-changelog.yaml at {sha}"),
            None,
            strict,
            &ProcessOptions::default(),
            &catalog_at(&repo, head),
            &runners,
            None,
        )
        .map_err(|e| e.to_string())
    };
    // #2170: appended with a whitespace-only line ("  ") after its pr-link, as many entries are.
    assert_eq!(run("a141bfcb0", false), Ok(Validated::Gate));
    let e = run("a141bfcb0", true).unwrap_err();
    assert!(
        e.starts_with("git diff --check failed for perf-changelog.yaml:\nperf-changelog.yaml:4897: trailing whitespace.\n+ "),
        "{e}"
    );
    // #2601: an entry inserted mid-file (git shows it as one added entry).
    assert_eq!(run("c5f3f82b2", false), Ok(Validated::Gate));
    assert_eq!(
        run("c5f3f82b2", true).unwrap_err(),
        "entry 727 changed; existing entries are immutable except for pr-link-only corrections"
    );
    // #2281: a plain append passes both.
    assert_eq!(run("608b04358", false), Ok(Validated::Gate));
    assert_eq!(
        run("608b04358", true),
        Ok(Validated::Strict {
            additions: 1,
            corrections: 0
        })
    );
    // 69af6a4e1 deleted an entry: the gate's processor refuses it, as InferenceX's did.
    let e = run("69af6a4e1", false).unwrap_err();
    assert!(
        e.starts_with("the change-log processor rejected the diff:\nDeletions are not allowed in perf-changelog.yaml."),
        "{e}"
    );
    assert_eq!(
        run("69af6a4e1", true).unwrap_err(),
        "perf-changelog.yaml entries were deleted"
    );
}
