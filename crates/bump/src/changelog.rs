//! The bump's change-log entry: the pr-link check made before any file is read (AUTOMATION.md
//! §3.1), and what the entry says, in the style of InferenceX's own entries (`Bump … image from
//! OLD to NEW`, plain text without Markdown backticks, `scenario-type: [agentic-coding]` for a
//! config that has only agentic scenarios). Rendering and appending the entry (append-only,
//! every historical byte kept) belong to `servebench_catalog::changelog::append_entry`, which
//! `plan` calls.

use servebench_catalog::matrix::ScenarioType;
use servebench_catalog::schema::ConfigEntry;

use crate::provenance::Provenance;
use crate::RecipeReport;

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

/// The entry's `scenario-type`: `[agentic-coding]` when the config has agentic scenarios only
/// (InferenceX's own entries for agentic keys say so: 60 of the 67 `scenario-type` lines of its
/// change log at 843c6254f), none otherwise (a fixed-sequence-only config needs no restriction,
/// and InferenceX's entries for them rarely give one).
pub fn entry_scenarios(entry: &ConfigEntry) -> Vec<ScenarioType> {
    if entry.fixed.is_empty() && !entry.agentic.is_empty() {
        vec![ScenarioType::AgenticCoding]
    } else {
        Vec::new()
    }
}

/// Markdown code spans do not belong in the change log's plain-text descriptions.
fn plain(s: &str) -> String {
    s.replace('`', "")
}

/// The entry's description lines: `Bump ENGINE image from OLD to NEW`, one line per applied
/// recipe rule (`FILE: SUMMARY (EVIDENCE)`), and the new image's digests when resolved.
pub fn entry_description(
    engine: &str,
    old_image: &str,
    new_image: &str,
    recipes: &[RecipeReport],
    new_prov: Option<&Provenance>,
) -> Vec<String> {
    let mut desc = vec![format!(
        "Bump {engine} image from {old_image} to {new_image}"
    )];
    for r in recipes {
        let file = r
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        for o in r.outcomes.iter().filter(|o| o.status == "applied") {
            let first = o
                .evidence
                .first()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            desc.push(plain(&format!("{file}: {}{first}", o.summary)));
        }
    }
    if let Some(np) = new_prov {
        let mut d = vec![];
        if let Some(i) = &np.index_digest {
            d.push(format!("index {i}"));
        }
        if let Some(a) = np.amd64_digest() {
            d.push(format!("linux/amd64 {a}"));
        }
        if !d.is_empty() {
            desc.push(format!("New image digests: {}", d.join("; ")));
        }
    }
    desc
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
