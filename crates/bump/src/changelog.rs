//! Appending the bump's entry to `perf-changelog.yaml` (AUTOMATION.md §3).
//!
//! Append-only: the new bytes start with every old byte; the entry is preceded by exactly one
//! empty line (none added when the file already ends with a blank line), and the file ends with
//! one `\n`, never a blank line (§3.2 F-1, F-3). The result is checked to parse as a list whose
//! length equals the number of `- config-keys:` lines (F-2).

use saphyr_parser::{Event, Parser};

/// The placeholder link for an entry whose PR does not exist yet (§3.1).
pub const PR_LINK_PLACEHOLDER: &str = "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX";

fn yaml_double_quoted(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// One entry in the file's style: `- config-keys:` / 4-space list items / `description:` lines
/// double-quoted / `pr-link:`. Ends with `\n`.
pub fn entry_text(config_keys: &[String], description: &[String], pr_link: &str) -> String {
    let mut s = String::from("- config-keys:\n");
    for k in config_keys {
        s.push_str("    - ");
        s.push_str(k);
        s.push('\n');
    }
    s.push_str("  description:\n");
    for d in description {
        s.push_str("    - ");
        s.push_str(&yaml_double_quoted(d));
        s.push('\n');
    }
    s.push_str("  pr-link: ");
    s.push_str(pr_link);
    s.push('\n');
    s
}

/// Checks §3.1's pr-link rule for a new entry: the canonical PR URL or an `XXX` placeholder.
pub fn check_pr_link(link: &str) -> Result<(), String> {
    let base = "https://github.com/SemiAnalysisAI/InferenceX/pull/";
    let ok = link == "XXX"
        || link.strip_prefix(base).is_some_and(|n| {
            n == "XXX" || (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "pr-link `{link}` must be {base}<number> or an XXX placeholder"
        ))
    }
}

/// Counts top-level list items (F-2), or the YAML error.
fn count_entries(text: &str, file: &str) -> anyhow::Result<usize> {
    let mut depth = 0usize;
    let mut items = 0usize;
    let mut root_is_seq = None;
    for ev in Parser::new_from_str(text) {
        let (e, _) = ev.map_err(|e| {
            anyhow::anyhow!(
                "{file}:{}:{}: YAML error: {}",
                e.marker().line(),
                e.marker().col() + 1,
                e.info()
            )
        })?;
        match e {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if depth == 0 {
                    root_is_seq = Some(matches!(e, Event::SequenceStart(..)));
                } else if depth == 1 {
                    items += 1;
                }
                depth += 1;
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::Scalar(..) | Event::Alias(..) if depth == 1 => items += 1,
            _ => {}
        }
    }
    match root_is_seq {
        Some(false) => anyhow::bail!("{file}: the change log's root is not a list"),
        _ => Ok(items),
    }
}

/// Returns `old` with `entry` appended per §3.2 (see the module docs).
///
/// Errors: `old` not ending with a newline (F-1), not parsing, or the result failing F-2.
pub fn append_entry(old: &str, entry: &str, file: &str) -> anyhow::Result<String> {
    if !old.is_empty() && !old.ends_with('\n') {
        anyhow::bail!("{file}: does not end with a newline (F-1); fix the file before appending");
    }
    let before = if old.trim().is_empty() {
        0
    } else {
        count_entries(old, file)?
    };
    let mut out = String::with_capacity(old.len() + entry.len() + 1);
    out.push_str(old);
    if !old.trim().is_empty() && !old.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(entry);
    debug_assert!(out.starts_with(old));
    let after = count_entries(&out, file)?;
    let marker_lines = out
        .lines()
        .filter(|l| l.starts_with("- config-keys:"))
        .count();
    if after != before + 1 || marker_lines != after {
        anyhow::bail!(
            "{file}: after appending, {after} entries parse but {marker_lines} lines start with `- config-keys:` (F-2)"
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_keeps_every_byte_and_one_separator() {
        let e = entry_text(
            &["k".into()],
            &["Update \"x\" `a` → `b`".into()],
            PR_LINK_PLACEHOLDER,
        );
        assert_eq!(
            e,
            "- config-keys:\n    - k\n  description:\n    - \"Update \\\"x\\\" `a` → `b`\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX\n"
        );
        let old = "- config-keys:\n    - a\n  description:\n    - \"x\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n";
        let out = append_entry(old, &e, "c.yaml").unwrap();
        assert_eq!(out, format!("{old}\n{e}"));
        // A base that already ends with a blank line gets no second one.
        let old2 = format!("{old}\n");
        assert_eq!(
            append_entry(&old2, &e, "c.yaml").unwrap(),
            format!("{old2}{e}")
        );
        // Empty / missing file.
        assert_eq!(append_entry("", &e, "c.yaml").unwrap(), e);
        assert!(append_entry("- config-keys: [a]", &e, "c.yaml")
            .unwrap_err()
            .to_string()
            .contains("F-1"));
    }

    #[test]
    fn real_changelog_tail_is_kept() {
        let old = include_str!("../../../../shared/data/inferencex/perf-changelog.yaml");
        let e = entry_text(
            &["qwen3.8next-fp4-b200-sglang-agentic-mtp".into()],
            &["x".into()],
            PR_LINK_PLACEHOLDER,
        );
        let out = append_entry(old, &e, "perf-changelog.yaml").unwrap();
        assert!(out.starts_with(old));
        assert_eq!(&out[old.len()..], format!("\n{e}"));
        assert!(!out.ends_with("\n\n"));
    }

    #[test]
    fn pr_links() {
        assert!(check_pr_link("XXX").is_ok());
        assert!(check_pr_link(PR_LINK_PLACEHOLDER).is_ok());
        assert!(check_pr_link("https://github.com/SemiAnalysisAI/InferenceX/pull/3363").is_ok());
        assert!(check_pr_link("https://github.com/x/y/pull/1").is_err());
    }
}
