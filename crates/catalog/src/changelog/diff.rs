//! The added lines of a change-log change, from git's own diff.
//!
//! InferenceX's `utils/process_changelog.py` (`get_added_lines`) runs
//! `git diff BASE HEAD -- FILE`, reads its stdout as text (universal newlines: `\r\n` and `\r`
//! become `\n`), and keeps every line that starts with `+` but not `+++` (so an added line whose
//! own text starts with `++` is dropped, as there); a line starting with `-` but not `---` whose
//! text is not blank is a deletion and an error. The added lines are joined with `\n`.
//!
//! git's diff slides a hunk to the position its compaction heuristics prefer (an entry inserted
//! in the middle of the file is shown as that entry, not as a shifted copy of its neighbours);
//! any other diff algorithm gives other added lines, which need not be valid YAML. So the same
//! `git diff` runs here: on two refs of a repository ([`added_text_git`]), on two files
//! ([`added_text_files`]: `git diff --no-index`, the same xdiff), or on two texts ([`added_text`],
//! written to a temporary directory first). git must be on `PATH`.

use std::path::Path;
use std::process::Command;

use crate::error::CatalogError;

/// The diff of two refs: `git -C REPO diff --no-color --no-ext-diff BASE HEAD -- FILE`, decoded
/// as Python's `text=True` does (universal newlines).
///
/// Errors: git cannot be started, or exits with an error (a ref or the repository is unknown),
/// naming the command and git's first stderr line.
pub fn git_diff_refs(
    repo: &Path,
    base_ref: &str,
    head_ref: &str,
    file: &str,
) -> Result<String, CatalogError> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo).args([
        "diff",
        "--no-color",
        "--no-ext-diff",
        base_ref,
        head_ref,
        "--",
        file,
    ]);
    run_git(
        cmd,
        &format!("git diff {base_ref} {head_ref} -- {file}"),
        &[0],
    )
}

/// The diff of two files: `git diff --no-index --no-color --no-ext-diff BASE HEAD` (exit status 1
/// means "they differ", as for `diff`).
pub fn git_diff_files(base: &Path, head: &Path) -> Result<String, CatalogError> {
    let mut cmd = Command::new("git");
    cmd.args(["diff", "--no-index", "--no-color", "--no-ext-diff", "--"])
        .arg(base)
        .arg(head);
    let what = format!("git diff --no-index {} {}", base.display(), head.display());
    run_git(cmd, &what, &[0, 1])
}

fn run_git(mut cmd: Command, what: &str, ok: &[i32]) -> Result<String, CatalogError> {
    let out = cmd
        .output()
        .map_err(|e| CatalogError::msg(format!("{what}: cannot run git: {e}")))?;
    if !out.status.code().is_some_and(|c| ok.contains(&c)) {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(CatalogError::msg(format!(
            "{what} failed: {}",
            err.lines().next().unwrap_or("no message")
        )));
    }
    let text = String::from_utf8(out.stdout)
        .map_err(|e| CatalogError::msg(format!("{what}: the diff is not UTF-8: {e}")))?;
    Ok(universal_newlines(&text))
}

/// Python's universal-newline decoding: `\r\n` and a lone `\r` both become `\n`.
fn universal_newlines(s: &str) -> String {
    if s.contains('\r') {
        s.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        s.to_string()
    }
}

/// The added lines of a unified diff (`get_added_lines`'s loop), joined with `\n`.
///
/// Errors: a deleted line that is not blank, with the reference's wording:
/// `Deletions are not allowed in FILE. Only additions to the changelog are permitted. Found
/// deleted line: LINE`.
pub fn added_lines(diff: &str, file_label: &str) -> Result<String, CatalogError> {
    let mut added = Vec::new();
    for line in diff.split('\n') {
        if let Some(deleted) = line.strip_prefix('-') {
            if line.starts_with("---") {
                continue;
            }
            if !py_strip(deleted).is_empty() {
                return Err(CatalogError::msg(format!(
                    "Deletions are not allowed in {file_label}. Only additions to the changelog are permitted. Found deleted line: {deleted}"
                )));
            }
        } else if let Some(new) = line.strip_prefix('+') {
            if !line.starts_with("+++") {
                added.push(new);
            }
        }
    }
    Ok(added.join("\n"))
}

/// Python's `str.strip()` with no argument: Unicode whitespace plus the ASCII separators
/// `\x1c`–`\x1f` that `str.isspace` also counts.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// Added lines between two refs of the repository at `repo` (what `process_changelog.py` sees
/// with `--base-ref BASE --head-ref HEAD --changelog-file FILE`, run in `repo`).
pub fn added_text_git(
    repo: &Path,
    base_ref: &str,
    head_ref: &str,
    file: &str,
) -> Result<String, CatalogError> {
    added_lines(&git_diff_refs(repo, base_ref, head_ref, file)?, file)
}

/// Added lines between two files (`git diff --no-index`); `file_label` names the change log in
/// the deletion message.
pub fn added_text_files(
    base: &Path,
    head: &Path,
    file_label: &str,
) -> Result<String, CatalogError> {
    added_lines(&git_diff_files(base, head)?, file_label)
}

/// Added lines between two texts of the change log (each written to a temporary file, then
/// [`added_text_files`]), joined with `\n`.
pub fn added_text(base: &str, head: &str, file_label: &str) -> Result<String, CatalogError> {
    let dir = tempfile::tempdir()
        .map_err(|e| CatalogError::msg(format!("cannot create a temporary directory: {e}")))?;
    let (b, h) = (dir.path().join("base"), dir.path().join("head"));
    for (p, t) in [(&b, base), (&h, head)] {
        std::fs::write(p, t)
            .map_err(|e| CatalogError::msg(format!("cannot write {}: {e}", p.display())))?;
    }
    added_text_files(&b, &h, file_label)
}

/// One line added by a diff: its 1-based line number in the new version and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedLine {
    /// Line number in the new version (1-based), from the hunk header `@@ -a,b +c,d @@`.
    pub line: usize,
    /// The line's text without the leading `+`.
    pub text: String,
}

/// Every added line of a unified diff with its line number in the new version.
pub fn added_with_numbers(diff: &str) -> Vec<AddedLine> {
    let mut out = Vec::new();
    let mut next: Option<usize> = None;
    for line in diff.split('\n') {
        if let Some(rest) = line.strip_prefix("@@ ") {
            // "-a[,b] +c[,d] @@"
            next = rest
                .split_whitespace()
                .find_map(|w| w.strip_prefix('+'))
                .and_then(|w| w.split(',').next())
                .and_then(|n| n.parse().ok());
            continue;
        }
        let Some(n) = next.as_mut() else { continue };
        match line.as_bytes().first() {
            Some(b'+') => {
                out.push(AddedLine {
                    line: *n,
                    text: line[1..].to_string(),
                });
                *n += 1;
            }
            Some(b' ') => *n += 1,
            _ => {}
        }
    }
    out
}

/// `git diff --check` on the added lines of `base → head`: trailing whitespace, and a blank
/// line added at the end of the file. `path` names the file in the messages
/// (`PATH:LINE: trailing whitespace.` / `PATH:LINE: new blank line at EOF.`, git's wording).
pub fn diff_check(base: &str, head: &str, path: &str) -> Result<(), CatalogError> {
    let dir = tempfile::tempdir()
        .map_err(|e| CatalogError::msg(format!("cannot create a temporary directory: {e}")))?;
    let (b, h) = (dir.path().join("base"), dir.path().join("head"));
    for (p, t) in [(&b, base), (&h, head)] {
        std::fs::write(p, t)
            .map_err(|e| CatalogError::msg(format!("cannot write {}: {e}", p.display())))?;
    }
    let added = added_with_numbers(&git_diff_files(&b, &h)?);
    let mut problems = Vec::new();
    for a in &added {
        if a.text.ends_with(' ') || a.text.ends_with('\t') {
            problems.push(format!(
                "{path}:{}: trailing whitespace.\n+{}",
                a.line, a.text
            ));
        }
    }
    let total = head.lines().count();
    if let Some(last) = added.last() {
        if last.line == total && last.text.trim().is_empty() {
            problems.push(format!("{path}:{total}: new blank line at EOF."));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CatalogError::msg(format!(
            "git diff --check failed for {path}:\n{}",
            problems.join("\n")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_message_matches_reference() {
        if servebench_testkit::git().is_none() {
            return;
        }
        let e = added_text("a\nb\nc\n", "a\nc\nd\n", "perf-changelog.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Deletions are not allowed in perf-changelog.yaml. Only additions to the changelog are permitted. Found deleted line: b"
        );
        assert_eq!(added_text("a\n", "a\n\nb\n", "f").unwrap(), "\nb");
    }

    #[test]
    fn a_mid_file_insertion_is_shown_as_git_slides_it() {
        if servebench_testkit::git().is_none() {
            return;
        }
        // An entry inserted between two entries that end alike: a diff that does not slide
        // hunks can show the tail of the previous entry plus the head of the new one as added.
        let entry = |k: &str| format!("- config-keys:\n    - {k}\n  pr-link: x\n\n");
        let base = format!("{}{}", entry("a"), entry("c"));
        let head = format!("{}{}{}", entry("a"), entry("b"), entry("c"));
        assert_eq!(
            added_text(&base, &head, "f").unwrap(),
            "- config-keys:\n    - b\n  pr-link: x\n"
        );
    }

    #[test]
    fn lines_starting_with_plus_plus_are_dropped_as_in_the_reference() {
        let diff = "--- a/f\n+++ b/f\n@@ -1 +1,3 @@\n a\n+++x\n+b\n-   \n";
        assert_eq!(added_lines(diff, "f").unwrap(), "b");
        let n = added_with_numbers(diff);
        assert_eq!(
            n[1],
            AddedLine {
                line: 3,
                text: "b".into()
            }
        );
    }

    #[test]
    fn an_unknown_ref_names_the_command() {
        if servebench_testkit::git().is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let e = added_text_git(dir.path(), "nope1", "nope2", "f").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("git diff nope1 nope2 -- f failed: "),
            "{e}"
        );
    }
}
