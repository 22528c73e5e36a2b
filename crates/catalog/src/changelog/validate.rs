//! `changelog validate`: InferenceX's gate `utils/validate_perf_changelog.py` and, behind
//! `strict`, its stricter file rules (F-1…F-3) and `git diff --check`.

use regex::Regex;
use serde_json::Value;

use super::diff::diff_check;
use super::entry::ChangelogEntry;
use super::process::{process_with_base, ProcessOptions};
use crate::catalog::{Catalog, Runners};
use crate::error::CatalogError;
use crate::yaml::{self, Kind};

/// The canonical merged-PR link form.
pub const CANONICAL_PR_LINK: &str = r"^https://github\.com/SemiAnalysisAI/InferenceX/pull/\d+$";
pub(super) const PR_LINK_PLACEHOLDERS: [&str; 2] = [
    "XXX",
    "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX",
];

fn canonical_link(s: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(CANONICAL_PR_LINK).expect("regex"))
        .is_match(s)
}

/// F-1 / F-2: file-level invariants, then every entry validates. Returns the raw entries as JSON
/// (for equality comparisons). `label` names the version in messages (`FILE at REF`).
pub fn parse_changelog(raw: &[u8], label: &str) -> Result<Vec<Value>, CatalogError> {
    let e = |m: String| Err(CatalogError::msg(m));
    if !raw.ends_with(b"\n") {
        return e(format!("{label} does not end with a newline"));
    }
    if raw.contains(&b'\r') {
        return e(format!("{label} contains CR characters"));
    }
    if raw.contains(&b'\t') {
        return e(format!("{label} contains tabs"));
    }
    if raw.contains(&0) {
        return e(format!("{label} contains NUL bytes"));
    }
    let text = match std::str::from_utf8(raw) {
        Ok(t) => t,
        Err(err) => return e(format!("{label} is not UTF-8: {err}")),
    };
    let node = match yaml::parse(text) {
        Ok(n) => n,
        Err(err) => return e(format!("{label} is not valid YAML: {err}")),
    };
    let Kind::Seq(items) = &node.kind else {
        return e(format!("{label} root must be a YAML list"));
    };
    let top = text
        .lines()
        .filter(|l| l.starts_with("- config-keys:"))
        .count();
    if top != items.len() {
        return e(format!(
            "{label} has {top} top-level config entries but YAML parsed {} entries",
            items.len()
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if !matches!(item.kind, Kind::Map(_)) {
            return e(format!("{label} entry {} is not a mapping", i + 1));
        }
        if let Err(m) = ChangelogEntry::from_node(item) {
            return e(format!(
                "{label} entry {} fails ChangelogEntry validation: {m}",
                i + 1
            ));
        }
        out.push(
            item.to_json()
                .map_err(|err| CatalogError::msg(format!("{label}: {err}")))?,
        );
    }
    Ok(out)
}

fn without_pr_link(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "pr-link")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn link_of(v: &Value) -> String {
    match v.get("pr-link") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn py_repr_str(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// F-3 (entries): head keeps every base entry, changed only in a canonical `pr-link`; new
/// entries need a canonical link, or inside PR `pr_number` that PR's link or an `XXX` placeholder.
/// Returns (number of appended entries, number of pr-link corrections).
pub fn compare_entries(
    base: &[Value],
    head: &[Value],
    pr_number: Option<u64>,
) -> Result<(usize, usize), CatalogError> {
    if head.len() < base.len() {
        return Err(CatalogError::msg(
            "perf-changelog.yaml entries were deleted",
        ));
    }
    let mut corrections = 0;
    for (i, (b, h)) in base.iter().zip(head.iter()).enumerate() {
        if b == h {
            continue;
        }
        if without_pr_link(b) != without_pr_link(h) {
            return Err(CatalogError::msg(format!(
                "entry {} changed; existing entries are immutable except for pr-link-only corrections",
                i + 1
            )));
        }
        let (old, new) = (link_of(b), link_of(h));
        if old == new {
            return Err(CatalogError::msg(format!(
                "entry {} was reformatted without a semantic change",
                i + 1
            )));
        }
        if !canonical_link(&new) {
            return Err(CatalogError::msg(format!(
                "entry {} pr-link correction is not canonical: {}",
                i + 1,
                py_repr_str(&new)
            )));
        }
        corrections += 1;
    }
    let additions = &head[base.len()..];
    if corrections > 0 && !additions.is_empty() {
        return Err(CatalogError::msg(
            "do not mix historical pr-link corrections with new changelog entries",
        ));
    }
    for a in additions {
        let link = link_of(a);
        match pr_number {
            None => {
                if !canonical_link(&link) {
                    return Err(CatalogError::msg(format!(
                        "new main-branch entry has invalid pr-link: {}",
                        py_repr_str(&link)
                    )));
                }
            }
            Some(n) => {
                let expected = format!("https://github.com/SemiAnalysisAI/InferenceX/pull/{n}");
                if !PR_LINK_PLACEHOLDERS.contains(&link.as_str()) && link != expected {
                    return Err(CatalogError::msg(format!(
                        "new PR entry must use {} or an XXX placeholder; found {}",
                        py_repr_str(&expected),
                        py_repr_str(&link)
                    )));
                }
            }
        }
    }
    Ok((additions.len(), corrections))
}

fn split_keepends(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in b.iter().enumerate() {
        if *c == b'\n' {
            out.push(&b[start..=i]);
            start = i + 1;
        }
    }
    if start < b.len() {
        out.push(&b[start..]);
    }
    out
}

/// F-3 (bytes): appends keep every historical byte (head starts with base, one blank line
/// before each appended entry, no trailing blank line); pr-link corrections change only
/// `  pr-link:` lines; otherwise the bytes are identical.
pub fn validate_raw_change(
    base: &[u8],
    head: &[u8],
    additions: usize,
    corrections: usize,
) -> Result<(), CatalogError> {
    let e = |m: &str| Err(CatalogError::msg(m));
    if additions > 0 {
        if !head.starts_with(base) {
            return e("appended entries changed historical perf-changelog.yaml bytes; restore the base file byte-for-byte and append at the end");
        }
        let suffix = &head[base.len()..];
        let expected: &[u8] = if base.ends_with(b"\n\n") {
            b"- config-keys:"
        } else {
            b"\n- config-keys:"
        };
        if !suffix.starts_with(expected) {
            return e("new changelog entries must be separated from history by one empty line and appended at the end");
        }
        let re = regex::bytes::Regex::new(r"(?m)^- config-keys:[^\r\n]*\n").expect("regex");
        let starts: Vec<usize> = re.find_iter(head).map(|m| m.start()).collect();
        let appended = &starts[starts.len().saturating_sub(additions)..];
        for &s in appended.iter().skip(1) {
            let prefix = &head[..s];
            if !prefix.ends_with(b"\n\n") || prefix.ends_with(b"\n\n\n") {
                return e("appended changelog entries must have exactly one empty separator line");
            }
        }
        if head.ends_with(b"\n\n") {
            return e("the final appended changelog entry must end with one newline");
        }
        return Ok(());
    }
    if corrections > 0 {
        let (bl, hl) = (split_keepends(base), split_keepends(head));
        if bl.len() != hl.len() {
            return e("pr-link corrections may not add or delete lines");
        }
        let mut changed = 0;
        for (n, (b, h)) in bl.iter().zip(hl.iter()).enumerate() {
            if b == h {
                continue;
            }
            changed += 1;
            if !(b.starts_with(b"  pr-link:")
                && h.starts_with(b"  pr-link:")
                && b.ends_with(b"\n")
                && h.ends_with(b"\n"))
            {
                return Err(CatalogError::msg(format!(
                    "historical bytes changed outside a pr-link line at line {}",
                    n + 1
                )));
            }
        }
        if changed != corrections {
            return Err(CatalogError::msg(format!(
                "expected {corrections} changed pr-link line(s), found {changed}"
            )));
        }
        return Ok(());
    }
    if base != head {
        return e("changelog diff has no appended entry or pr-link correction; historical whitespace and formatting are immutable");
    }
    Ok(())
}

/// Outcome of [`validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validated {
    /// InferenceX's gate passed: the head ends with a newline and the processor made a matrix.
    Gate,
    /// The strict checks passed as well.
    Strict {
        /// Appended entries.
        additions: usize,
        /// pr-link corrections.
        corrections: usize,
    },
}

impl Validated {
    /// The line printed on success. Gate: `Validated FILE: final newline present and matrix
    /// generated` (validate_perf_changelog.py's wording); strict: `Validated FILE: N appended
    /// entries, M pr-link corrections`.
    pub fn summary(&self, path: &str) -> String {
        match self {
            Validated::Gate => {
                format!("Validated {path}: final newline present and matrix generated")
            }
            Validated::Strict {
                additions,
                corrections,
            } => format!(
                "Validated {path}: {additions} appended entr{}, {corrections} pr-link correction{}",
                if *additions == 1 { "y" } else { "ies" },
                if *corrections == 1 { "" } else { "s" }
            ),
        }
    }
}

/// Checks a change of the change log, on two versions of the file.
///
/// By default exactly what InferenceX's gate (`utils/validate_perf_changelog.py`, run by
/// run-sweep.yml on every PR) checks: the head ends with a newline (`PATH at HEAD does not end
/// with a newline`), and the change-log processor ([`process_with_base`], with `opts`) accepts
/// the diff. Whitespace-only lines, any pr-link (an `…/pull/XXX` placeholder included) and
/// entries inserted mid-file pass, as there.
///
/// `strict` adds the rules the reference file defines but its gate does not run: `git diff
/// --check` on the added lines, F-1/F-2 ([`parse_changelog`]: no CR/tab/NUL, unique keys,
/// every entry valid), F-3 ([`compare_entries`]: history unchanged except canonical pr-link
/// corrections, new links canonical, or inside PR `pr_number` its link or `XXX`;
/// [`validate_raw_change`]: appended at the end, byte for byte). `base_label`/`head_label` name
/// the versions in messages.
#[allow(clippy::too_many_arguments)]
pub fn validate(
    base: &[u8],
    head: &[u8],
    path: &str,
    base_label: &str,
    head_label: &str,
    pr_number: Option<u64>,
    strict: bool,
    opts: &ProcessOptions,
    catalog: &Catalog,
    runners: &Runners,
    base_catalog: Option<&Catalog>,
) -> Result<Validated, CatalogError> {
    let base_text = String::from_utf8_lossy(base);
    let head_text = String::from_utf8_lossy(head);
    let run_processor = || {
        process_with_base(
            &base_text,
            &head_text,
            path,
            base_label,
            head_label,
            opts,
            catalog,
            runners,
            base_catalog,
        )
        .map(|_| ())
        .map_err(|e| CatalogError::msg(format!("the change-log processor rejected the diff:\n{e}")))
    };
    if !strict {
        if !head.ends_with(b"\n") {
            return Err(CatalogError::msg(format!(
                "{head_label} does not end with a newline"
            )));
        }
        run_processor()?;
        return Ok(Validated::Gate);
    }
    diff_check(&base_text, &head_text, path)?;
    let b = parse_changelog(base, base_label)?;
    let h = parse_changelog(head, head_label)?;
    let (additions, corrections) = compare_entries(&b, &h, pr_number)?;
    validate_raw_change(base, head, additions, corrections)?;
    if additions > 0 {
        run_processor()?;
    } else if corrections == 0 {
        return Err(CatalogError::msg(format!("{path} has no changes")));
    }
    Ok(Validated::Strict {
        additions,
        corrections,
    })
}

// ------------------------------------------------------------------------------------------------
