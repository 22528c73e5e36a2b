//! The bump's change-log rule: the pr-link check made before any file is read (AUTOMATION.md
//! §3.1). Rendering and appending the entry (append-only, every historical byte kept, F-1..F-3)
//! belong to `servebench_catalog::changelog::append_entry`, which `plan` calls.

/// The placeholder link for an entry whose PR does not exist yet (§3.1).
pub const PR_LINK_PLACEHOLDER: &str = "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX";

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

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_catalog::changelog::{append_entry, NewEntry};

    #[test]
    fn real_changelog_tail_is_kept_by_the_catalog_append() {
        let old = include_str!("../../../../shared/data/inferencex/perf-changelog.yaml");
        let e = NewEntry {
            config_keys: vec!["qwen3.8next-fp4-b200-sglang-agentic-mtp".into()],
            description: vec!["Update \"x\" `a` → `b`".into()],
            pr_link: PR_LINK_PLACEHOLDER.into(),
            scenario_type: vec![],
            evals_only: false,
            all_evals: false,
        };
        let out = String::from_utf8(append_entry(old.as_bytes(), &e).unwrap()).unwrap();
        assert!(out.starts_with(old));
        assert!(out[old.len()..]
            .starts_with("\n- config-keys:\n    - qwen3.8next-fp4-b200-sglang-agentic-mtp\n"));
        assert!(!out.ends_with("\n\n"));
        assert!(check_pr_link(PR_LINK_PLACEHOLDER).is_ok());
    }

    #[test]
    fn pr_links() {
        assert!(check_pr_link("XXX").is_ok());
        assert!(check_pr_link(PR_LINK_PLACEHOLDER).is_ok());
        assert!(check_pr_link("https://github.com/SemiAnalysisAI/InferenceX/pull/3363").is_ok());
        assert!(check_pr_link("https://github.com/x/y/pull/1").is_err());
    }
}
