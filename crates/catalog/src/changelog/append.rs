//! Appending one entry to the change log without touching any historical byte.

use super::entry::ChangelogEntry;
use super::validate::{compare_entries, parse_changelog, PR_LINK_PLACEHOLDERS};
use crate::error::CatalogError;
use crate::matrix::ScenarioType;
use crate::yaml::{self, Kind};

/// A new change-log entry to append.
#[derive(Debug, Clone, Default)]
pub struct NewEntry {
    /// Config keys (or `*` globs).
    pub config_keys: Vec<String>,
    /// Description lines.
    pub description: Vec<String>,
    /// PR link.
    pub pr_link: String,
    /// `scenario-type` restriction.
    pub scenario_type: Vec<ScenarioType>,
    /// `evals-only: true`.
    pub evals_only: bool,
    /// `all-evals: true`.
    pub all_evals: bool,
}

/// Double-quoted YAML scalar (escapes `"`, `\` and control characters).
pub fn yaml_double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20
                || c == '\u{7f}'
                || c == '\u{85}'
                || c == '\u{2028}'
                || c == '\u{2029}'
                || c == '\u{feff}' =>
            {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn yaml_scalar(s: &str) -> String {
    let plain_ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-:*+".contains(c))
        && !s.starts_with(['-', ':', '*', '.'])
        && !s.contains(": ")
        && !s.ends_with(':')
        && matches!(yaml::resolve_plain(s), Kind::Str(_));
    if plain_ok {
        s.to_string()
    } else {
        yaml_double_quoted(s)
    }
}

/// The YAML text of one entry in the file's house style (two-space indent, quoted descriptions).
pub fn render_entry(e: &NewEntry) -> String {
    let mut s = String::from("- config-keys:\n");
    for k in &e.config_keys {
        s.push_str(&format!("    - {}\n", yaml_scalar(k)));
    }
    if !e.scenario_type.is_empty() {
        s.push_str("  scenario-type:\n");
        for t in &e.scenario_type {
            s.push_str(&format!("    - {}\n", t.as_str()));
        }
    }
    if e.evals_only {
        s.push_str("  evals-only: true\n");
    }
    if e.all_evals {
        s.push_str("  all-evals: true\n");
    }
    s.push_str("  description:\n");
    for d in &e.description {
        s.push_str(&format!("    - {}\n", yaml_double_quoted(d)));
    }
    s.push_str(&format!("  pr-link: {}\n", yaml_scalar(&e.pr_link)));
    s
}

/// Appends `entry` to the change log `base`, keeping every historical byte: the result starts
/// with `base`, has exactly one empty line before the new entry and ends with one newline.
///
/// Errors: `base` does not end with a newline (it cannot be extended safely), the entry is
/// empty/invalid, the rendered entry does not read back as the same values, or `validate` would
/// reject the entry (same message), e.g. `new main-branch entry has invalid pr-link: 'notalink'`
/// (the link must match [`CANONICAL_PR_LINK`] or be an `XXX` placeholder).
pub fn append_entry(base: &[u8], entry: &NewEntry) -> Result<Vec<u8>, CatalogError> {
    if entry.config_keys.is_empty() {
        return Err(CatalogError::msg(
            "an entry needs at least one config key (--key)",
        ));
    }
    if entry.description.is_empty() {
        return Err(CatalogError::msg(
            "an entry needs at least one description line (--description)",
        ));
    }
    if !base.is_empty() && !base.ends_with(b"\n") {
        return Err(CatalogError::msg(
            "the change log does not end with a newline; fix the file before appending",
        ));
    }
    let text = render_entry(entry);
    // Read the rendered entry back: the same values must come out.
    let node = yaml::parse(&text)
        .map_err(|e| CatalogError::msg(format!("rendered entry is not valid YAML: {e}")))?;
    let item = node
        .idx(0)
        .ok_or_else(|| CatalogError::msg("rendered entry did not parse as a list"))?;
    let parsed = ChangelogEntry::from_node(item)
        .map_err(|m| CatalogError::msg(format!("new entry is invalid: {m}")))?;
    if parsed.config_keys.0 != entry.config_keys
        || parsed.description.0 != entry.description
        || parsed.pr_link != entry.pr_link
    {
        return Err(CatalogError::msg(
            "rendered entry does not read back to the same values",
        ));
    }
    // The rules `validate` applies to an appended entry (F-2, F-3), with its messages, so that
    // append-then-validate passes: a canonical link, or an XXX placeholder (valid inside a PR,
    // `validate --pr-number N`).
    let entries = parse_changelog(text.as_bytes(), "new entry")?;
    let in_pr = PR_LINK_PLACEHOLDERS
        .contains(&entry.pr_link.as_str())
        .then_some(0);
    compare_entries(&[], &entries, in_pr)?;
    let mut out = base.to_vec();
    if !base.is_empty() && !base.ends_with(b"\n\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(text.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_keeps_bytes_and_separator() {
        let e = NewEntry {
            config_keys: vec!["k1".into()],
            description: vec!["say \"hi\"".into()],
            pr_link: "https://github.com/SemiAnalysisAI/InferenceX/pull/7".into(),
            ..Default::default()
        };
        let out = append_entry(
            b"- config-keys:\n    - a\n  description:\n    - x\n  pr-link: y\n",
            &e,
        )
        .unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("- config-keys:\n    - a\n  description:\n    - x\n  pr-link: y\n\n- config-keys:\n    - k1\n"));
        assert!(s.ends_with("    - \"say \\\"hi\\\"\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/7\n"));
    }

    #[test]
    fn append_refuses_a_link_validate_refuses_with_its_message() {
        let mut e = NewEntry {
            config_keys: vec!["k1".into()],
            description: vec!["d".into()],
            pr_link: "notalink".into(),
            ..Default::default()
        };
        let err = append_entry(b"", &e).unwrap_err();
        assert_eq!(
            err.to_string(),
            "new main-branch entry has invalid pr-link: 'notalink'"
        );
        e.pr_link = "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX".into();
        assert!(append_entry(b"", &e).is_ok());
        e.pr_link = "XXX".into();
        assert!(append_entry(b"", &e).is_ok());
        e.pr_link = "https://github.com/SemiAnalysisAI/InferenceX/pull/12".into();
        assert!(append_entry(b"", &e).is_ok());
    }
}
