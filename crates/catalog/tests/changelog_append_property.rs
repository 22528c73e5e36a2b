//! Property: `append_entry` followed by `validate` (F-1…F-4) always passes, and the appended
//! file starts with every historical byte of the base. Bases are the real `perf-changelog.yaml`
//! and prefixes of it cut at entry boundaries; entries have random keys, flags, links and
//! descriptions full of YAML-hostile characters.

use crate::common;

use common::DATA;
use proptest::prelude::*;
use servebench_catalog::changelog::{append_entry, validate, NewEntry, ProcessOptions, Validated};
use servebench_catalog::matrix::ScenarioType;
use servebench_catalog::{Catalog, Runners};
use std::sync::OnceLock;

struct World {
    base: Vec<u8>,
    boundaries: Vec<usize>,
    catalog: Catalog,
    runners: Runners,
    keys: Vec<String>,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let base = std::fs::read(format!("{DATA}/perf-changelog.yaml")).unwrap();
        // Byte offsets just before each "\n- config-keys:" (an entry boundary), ending with "\n".
        let text = String::from_utf8(base.clone()).unwrap();
        let boundaries: Vec<usize> = text
            .match_indices("\n\n- config-keys:")
            .map(|(i, _)| i + 1)
            .collect();
        let catalog = Catalog::load(&[
            format!("{DATA}/amd-master.yaml"),
            format!("{DATA}/nvidia-master.yaml"),
        ])
        .unwrap();
        let runners = Runners::load(&format!("{DATA}/runners.yaml")).unwrap();
        let keys = catalog.entries.keys().cloned().collect();
        World {
            base,
            boundaries,
            catalog,
            runners,
            keys,
        }
    })
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{1,60}",
        "\\PC{1,40}",
        Just("a: b # not a comment \"quoted\" \\ back\\slash".to_string()),
        Just("- looks like a list item".to_string()),
        Just("{flow: map}, [seq], &anchor *alias !tag %".to_string()),
        Just("tab\there\nnewline\rcr".to_string()),
        Just("yes".to_string()),
        Just("1.0e5".to_string()),
    ]
}

fn entry_strategy(nkeys: usize) -> impl Strategy<Value = (NewEntry, Option<u64>)> {
    (
        proptest::collection::vec(0..nkeys, 1..3),
        proptest::collection::vec(text_strategy(), 1..3),
        0u8..4,
        0u8..3,
        1u64..100_000,
    )
        .prop_map(|(key_idx, description, flags, link_kind, pr)| {
            let w = world();
            let mut config_keys: Vec<String> = Vec::new();
            for i in key_idx {
                if !config_keys.contains(&w.keys[i]) {
                    config_keys.push(w.keys[i].clone());
                }
            }
            let (pr_link, pr_number) = match link_kind {
                0 => (
                    format!("https://github.com/SemiAnalysisAI/InferenceX/pull/{pr}"),
                    None,
                ),
                1 => (
                    "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX".to_string(),
                    Some(pr),
                ),
                _ => (
                    format!("https://github.com/SemiAnalysisAI/InferenceX/pull/{pr}"),
                    Some(pr),
                ),
            };
            let scenario_type = match flags {
                1 => vec![ScenarioType::FixedSeqLen],
                2 => vec![ScenarioType::AgenticCoding],
                _ => vec![],
            };
            let entry = NewEntry {
                config_keys,
                description,
                pr_link,
                scenario_type,
                evals_only: flags == 3,
                all_evals: false,
            };
            (entry, pr_number)
        })
}

fn check(base: &[u8], entries: &[(NewEntry, Option<u64>)]) -> Result<(), TestCaseError> {
    let w = world();
    let mut head = base.to_vec();
    for (e, _) in entries {
        let before = head.clone();
        head = append_entry(&head, e).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(head.starts_with(&before), "append changed an earlier byte");
    }
    prop_assert!(head.starts_with(base), "a historical byte changed");
    // One PR number for the whole change: the first entry's (placeholders need one).
    let pr = entries.iter().find_map(|(_, p)| *p);
    let ok_links = entries.iter().all(|(e, _)| match pr {
        None => !e.pr_link.ends_with("XXX"),
        Some(n) => e.pr_link.ends_with("XXX") || e.pr_link.ends_with(&format!("/{n}")),
    });
    prop_assume!(ok_links);
    let v = validate(
        base,
        &head,
        "perf-changelog.yaml",
        "base",
        "head",
        pr,
        true,
        &ProcessOptions::default(),
        &w.catalog,
        &w.runners,
        None,
    )
    .map_err(|e| {
        TestCaseError::fail(format!(
            "validate failed: {e}\n--- appended ---\n{}",
            String::from_utf8_lossy(&head[base.len()..])
        ))
    })?;
    prop_assert_eq!(
        v,
        Validated::Strict {
            additions: entries.len(),
            corrections: 0
        }
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn append_then_validate_on_the_real_changelog(e in entry_strategy(208)) {
        let w = world();
        check(&w.base, &[e])?;
    }

    #[test]
    fn append_then_validate_on_prefixes(cut in 0usize..1000, es in proptest::collection::vec(entry_strategy(208), 1..3)) {
        let w = world();
        let at = w.boundaries[cut % w.boundaries.len()];
        let base = &w.base[..at];
        // Bases that end with one newline and with a blank line both occur.
        let blank = cut % 2 == 0;
        let base: Vec<u8> = if blank { [base, b"\n"].concat() } else { base.to_vec() };
        check(&base, &es)?;
    }

    /// Any link: append refuses it (naming the pr-link) or validate accepts the result, so an
    /// append is never followed by a failing validate.
    #[test]
    fn append_refuses_what_validate_would_refuse(link in prop_oneof![
        "[ -~]{0,40}",
        "https://github\\.com/SemiAnalysisAI/InferenceX/pull/[0-9X]{0,4}[ /a#]?",
        Just("https://github.com/SemiAnalysisAI/InferenceX/pull/XXX".to_string()),
        Just("XXX".to_string()),
    ]) {
        let w = world();
        let e = NewEntry {
            config_keys: vec![w.keys[0].clone()],
            description: vec!["d".to_string()],
            pr_link: link.clone(),
            ..Default::default()
        };
        match append_entry(&w.base, &e) {
            Ok(head) => {
                let pr = link.ends_with("XXX").then_some(1);
                let v = validate(
                    &w.base,
                    &head,
                    "perf-changelog.yaml",
                    "base",
                    "head",
                    pr,
                    true,
                    &ProcessOptions::default(),
                    &w.catalog,
                    &w.runners,
                    None,
                );
                prop_assert!(v.is_ok(), "appended {link:?} but validate said {:?}", v.err().map(|e| e.to_string()));
            }
            Err(err) => {
                let m = err.to_string();
                prop_assert!(m.contains("pr-link"), "{link:?}: {m}");
            }
        }
    }
}
