//! Flag migrations as data (`flag-rules.toml`, every row of AUTOMATION.md §6.1) and their
//! application to a recipe for one version crossing.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{BumpError, RuleProblem};
use crate::shell::{self, Edit, FlagForm};
use crate::version::{EngineVersion, Flavor, Release};

/// The embedded rules file.
pub const BUILTIN_RULES_TOML: &str = include_str!("../flag-rules.toml");

/// What a rule changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleKind {
    /// `--old v` → `--new v` (value kept).
    FlagRename,
    /// `--old [v]` deleted.
    FlagRemove,
    /// `--old [v]` → `new_text`.
    FlagReplace,
    /// `--flag old_value` → `--flag new_value`.
    FlagValue,
    /// Add `new_text` (advice).
    FlagAdd,
    /// Delete `OLD=…` assignments.
    EnvRemove,
    /// `OLD=v` → `NEW=v`.
    EnvRename,
    /// Delete `OLD=…`, add `new_text` (advice).
    EnvReplace,
}

/// Whether bump edits the recipe for this rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Apply {
    /// Edited automatically when crossed and present.
    Auto,
    /// Reported only.
    Advise,
}

/// Dates from which dated nightlies are covered, per stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NightlySince {
    /// CUDA nightlies on or after this date (`YYYY-MM-DD`).
    #[serde(default)]
    pub cuda: Option<String>,
    /// ROCm nightlies on or after this date.
    #[serde(default)]
    pub rocm: Option<String>,
}

/// One migration rule (see the header of `flag-rules.toml` for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagRule {
    /// Unique id.
    pub id: String,
    /// Row of AUTOMATION.md §6.1 (1–12).
    pub row: u32,
    /// Engine (`sglang`, `vllm`, `atom`, `trt`).
    pub engine: String,
    /// Only for this stack.
    #[serde(default)]
    pub flavor: Option<Flavor>,
    /// Only for these SKUs (empty: all).
    #[serde(default)]
    pub hardware: Vec<String>,
    /// First release needing the change (`""`: any release).
    #[serde(default)]
    pub since: String,
    /// First release where it no longer applies.
    #[serde(default)]
    pub until: Option<String>,
    /// Dated nightlies covered from these dates.
    #[serde(default)]
    pub nightly_since: Option<NightlySince>,
    /// What changes.
    pub kind: RuleKind,
    /// Old flag or variable.
    #[serde(default)]
    pub old: Option<String>,
    /// New flag or variable (renames).
    #[serde(default)]
    pub new: Option<String>,
    /// Replacement/added text.
    #[serde(default)]
    pub new_text: Option<String>,
    /// Value to change (flag-value).
    #[serde(default)]
    pub old_value: Option<String>,
    /// New value (flag-value).
    #[serde(default)]
    pub new_value: Option<String>,
    /// The old flag takes a value (`--flag v`).
    #[serde(default)]
    pub takes_value: bool,
    /// Edited or only advised.
    pub apply: Apply,
    /// Only relevant when the recipe contains this text.
    #[serde(default)]
    pub when_present: Option<String>,
    /// Evidence links.
    pub evidence: Vec<String>,
    /// Why.
    pub note: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    rule: Vec<FlagRule>,
}

/// The rules of one file.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// Rules in file order.
    pub rules: Vec<FlagRule>,
}

impl RuleSet {
    /// The embedded rules (every row of §6.1).
    pub fn builtin() -> &'static RuleSet {
        static R: OnceLock<RuleSet> = OnceLock::new();
        R.get_or_init(|| {
            RuleSet::from_toml(BUILTIN_RULES_TOML, "flag-rules.toml")
                .expect("embedded flag-rules.toml is valid")
        })
    }

    /// Parses and checks a rules file. Errors name the file and the rule id.
    pub fn from_toml(text: &str, source: &str) -> Result<RuleSet, BumpError> {
        let raw: RawRules = toml::from_str(text).map_err(|e| BumpError::RulesSyntax {
            file: source.to_string(),
            detail: e.to_string().trim().to_string(),
        })?;
        let mut ids = std::collections::HashSet::new();
        for r in &raw.rule {
            let bad = |problem: RuleProblem| BumpError::Rule {
                file: source.to_string(),
                id: r.id.clone(),
                problem,
            };
            if !ids.insert(r.id.clone()) {
                return Err(bad(RuleProblem::DuplicateId));
            }
            if !r.since.is_empty() && Release::parse(&r.since).is_none() {
                return Err(bad(RuleProblem::BadSince(r.since.clone())));
            }
            if let Some(u) = &r.until {
                if Release::parse(u).is_none() {
                    return Err(bad(RuleProblem::BadUntil(u.clone())));
                }
            }
            let need = |f: &Option<String>, field: &'static str| {
                if f.as_deref().unwrap_or("").is_empty() {
                    Err(bad(RuleProblem::MissingField {
                        kind: r.kind,
                        field,
                    }))
                } else {
                    Ok(())
                }
            };
            match r.kind {
                RuleKind::FlagRename | RuleKind::EnvRename => {
                    need(&r.old, "old")?;
                    need(&r.new, "new")?;
                }
                RuleKind::FlagRemove | RuleKind::EnvRemove => need(&r.old, "old")?,
                RuleKind::FlagReplace | RuleKind::EnvReplace => {
                    need(&r.old, "old")?;
                    need(&r.new_text, "new_text")?;
                }
                RuleKind::FlagValue => {
                    need(&r.old, "old")?;
                    need(&r.old_value, "old_value")?;
                    need(&r.new_value, "new_value")?;
                }
                RuleKind::FlagAdd => need(&r.new_text, "new_text")?,
            }
            if r.evidence.is_empty() {
                return Err(bad(RuleProblem::NoEvidence));
            }
        }
        Ok(RuleSet { rules: raw.rule })
    }

    /// Rules for one engine.
    pub fn for_engine<'a>(&'a self, engine: &'a str) -> impl Iterator<Item = &'a FlagRule> + 'a {
        self.rules.iter().filter(move |r| r.engine == engine)
    }
}

/// Whether a version is inside a rule's range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Inside.
    Yes,
    /// Outside.
    No,
    /// Cannot tell from the tag (reason).
    Unknown(String),
}

impl FlagRule {
    /// Whether `v` is in this rule's range (release range, dated-nightly dates, stack).
    pub fn covers(&self, v: &EngineVersion) -> Coverage {
        if self.flavor.is_some_and(|f| f != v.flavor) {
            return Coverage::No;
        }
        let since = Release::parse(&self.since);
        let until = self.until.as_deref().and_then(Release::parse);
        if let Some(r) = v.release {
            return match since {
                Some(s) => {
                    if r >= s && until.is_none_or(|u| r < u) {
                        Coverage::Yes
                    } else {
                        Coverage::No
                    }
                }
                None if self.nightly_since.is_some() => Coverage::Unknown(format!(
                    "the first release with this change is not recorded (v{r})"
                )),
                None => Coverage::Yes,
            };
        }
        if let (Some(date), Some(ns)) = (&v.date, &self.nightly_since) {
            let d = match v.flavor {
                Flavor::Cuda => &ns.cuda,
                Flavor::Rocm => &ns.rocm,
            };
            if let Some(d) = d {
                return if date.as_str() >= d.as_str() {
                    Coverage::Yes
                } else {
                    Coverage::No
                };
            }
        }
        if since.is_none() && self.nightly_since.is_none() {
            return Coverage::Yes;
        }
        Coverage::Unknown(format!("{v} cannot be placed against v{}", self.since))
    }

    /// Human-readable range, e.g. `SGLang ≥ v0.5.20 (nightlies from 2026-09-15 cu13 / 2026-09-08 ROCm)`.
    pub fn range_text(&self) -> String {
        let mut s = self.engine.clone();
        if !self.since.is_empty() {
            s.push_str(&format!(" ≥ v{}", self.since));
        }
        if let Some(u) = &self.until {
            s.push_str(&format!(" < v{u}"));
        }
        if let Some(ns) = &self.nightly_since {
            let mut parts = vec![];
            if let Some(c) = &ns.cuda {
                parts.push(format!("CUDA nightlies from {c}"));
            }
            if let Some(r) = &ns.rocm {
                parts.push(format!("ROCm nightlies from {r}"));
            }
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s
    }
}

/// What a rule did to (or says about) a recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleOutcome {
    /// Rule id.
    pub rule: String,
    /// §6.1 row.
    pub row: u32,
    /// `applied` (recipe edited), `advice` (reported, not edited), `not-applied` (auto rule
    /// whose crossing could not be established), `already-migrated` (new form present).
    pub status: String,
    /// Short form for the Change line, e.g. `` `--a` → `--b` (value `64` kept) ``.
    pub summary: String,
    /// One line for the user: the summary and why.
    pub message: String,
    /// Lines of the recipe involved (1-based).
    pub lines: Vec<usize>,
    /// Evidence links.
    pub evidence: Vec<String>,
}

/// Edits for one rule on one recipe text; `edit` false gives advice only.
pub(crate) fn plan_rule(
    rule: &FlagRule,
    text: &str,
    edit: bool,
) -> (Vec<Edit>, Option<RuleOutcome>) {
    let mut edits = Vec::new();
    let oc = |status: &str, summary: String, lines: Vec<usize>| RuleOutcome {
        rule: rule.id.clone(),
        row: rule.row,
        status: status.into(),
        message: format!("{summary}: {}", rule.note),
        summary,
        lines,
        evidence: rule.evidence.clone(),
    };
    if let Some(w) = &rule.when_present {
        if !text.contains(w.as_str()) {
            return (edits, None);
        }
    }
    let old = rule.old.as_deref().unwrap_or("");
    let status = if edit { "applied" } else { "advice" };
    match rule.kind {
        RuleKind::FlagRename => {
            let new = rule.new.as_deref().unwrap_or("");
            let uses = shell::find_flag(text, old, rule.takes_value);
            if uses.is_empty() {
                return (edits, None);
            }
            let mut lines = vec![];
            let mut vals = vec![];
            for u in &uses {
                lines.push(u.line);
                vals.push(u.value.clone().unwrap_or_default());
                edits.push(Edit {
                    start: u.name.0,
                    end: u.name.1,
                    text: new.to_string(),
                });
            }
            let vals: Vec<String> = vals
                .into_iter()
                .filter(|v| !v.is_empty())
                .map(|v| format!("`{v}`"))
                .collect();
            let kept = if vals.is_empty() {
                String::new()
            } else {
                format!(" (value {} kept)", vals.join(", "))
            };
            let verb = if edit { "renamed" } else { "rename" };
            (
                edits,
                Some(oc(status, format!("{verb} `{old}` → `{new}`{kept}"), lines)),
            )
        }
        RuleKind::FlagRemove | RuleKind::FlagReplace => {
            let uses = shell::find_flag(text, old, rule.takes_value);
            if uses.is_empty() {
                return (edits, None);
            }
            let lines = uses.iter().map(|u| u.line).collect();
            let replacement = rule.new_text.clone().unwrap_or_default();
            for u in &uses {
                if rule.kind == RuleKind::FlagReplace {
                    edits.push(Edit {
                        start: u.whole.0,
                        end: u.whole.1,
                        text: replacement.clone(),
                    });
                } else if u.form == FlagForm::InString {
                    edits.push(shell::removal_edit_in_string(text, u.whole));
                } else {
                    edits.push(shell::removal_edit(text, u.whole));
                }
            }
            let what = if rule.kind == RuleKind::FlagReplace {
                format!("`{old}` → `{replacement}`")
            } else {
                format!("removed `{old}`")
            };
            let what = if edit {
                what
            } else {
                format!("advice: {what}")
            };
            (edits, Some(oc(status, what, lines)))
        }
        RuleKind::FlagValue => {
            let (ov, nv) = (
                rule.old_value.as_deref().unwrap_or(""),
                rule.new_value.as_deref().unwrap_or(""),
            );
            let uses: Vec<_> = shell::find_flag(text, old, true)
                .into_iter()
                .filter(|u| u.value.as_deref() == Some(ov))
                .collect();
            if uses.is_empty() {
                return (edits, None);
            }
            let lines = uses.iter().map(|u| u.line).collect();
            for u in &uses {
                let (a, b) = u.value_span.expect("value");
                // Keep any quoting: replace the value text inside the span.
                let raw = &text[a..b];
                let off = raw.find(ov).unwrap_or(0);
                edits.push(Edit {
                    start: a + off,
                    end: a + off + ov.len(),
                    text: nv.to_string(),
                });
            }
            let verb = if edit { "changed" } else { "consider changing" };
            (
                edits,
                Some(oc(
                    status,
                    format!("{verb} `{old} {ov}` → `{old} {nv}`"),
                    lines,
                )),
            )
        }
        RuleKind::FlagAdd => {
            let nt = rule.new_text.as_deref().unwrap_or("");
            let first = nt.split_whitespace().next().unwrap_or(nt);
            if !shell::find_flag(text, first, false).is_empty() {
                return (edits, None);
            }
            (
                edits,
                Some(oc("advice", format!("consider adding `{nt}`"), vec![])),
            )
        }
        RuleKind::EnvRemove | RuleKind::EnvRename | RuleKind::EnvReplace => {
            let uses = shell::find_env(text, old);
            if uses.is_empty() {
                return (edits, None);
            }
            let lines = uses.iter().map(|u| u.line).collect();
            for u in &uses {
                match rule.kind {
                    RuleKind::EnvRename => edits.push(Edit {
                        start: u.name.0,
                        end: u.name.1,
                        text: rule.new.clone().unwrap_or_default(),
                    }),
                    _ => edits.push(shell::removal_edit(text, u.command.unwrap_or(u.word))),
                }
            }
            let msg = match rule.kind {
                RuleKind::EnvRename => format!(
                    "{} `{old}` → `{}` (value kept)",
                    if edit { "renamed" } else { "rename" },
                    rule.new.as_deref().unwrap_or("")
                ),
                RuleKind::EnvRemove => {
                    format!("{} `{old}`", if edit { "removed" } else { "remove" })
                }
                _ => format!(
                    "replace `{old}` with `{}`",
                    rule.new_text.as_deref().unwrap_or("")
                ),
            };
            (edits, Some(oc(status, msg, lines)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_cover_every_row_of_6_1() {
        let r = RuleSet::builtin();
        let mut rows: Vec<u32> = r.rules.iter().map(|x| x.row).collect();
        rows.dedup();
        assert_eq!(rows, (1..=12).collect::<Vec<_>>());
        for x in &r.rules {
            assert!(
                x.evidence.iter().all(|e| e.starts_with("https://")),
                "{}",
                x.id
            );
        }
    }

    #[test]
    fn coverage() {
        let r = RuleSet::builtin();
        let rule = r
            .rules
            .iter()
            .find(|x| x.id == "sglang-cuda-graph-max-bs-decode")
            .unwrap();
        let v = |t: &str| EngineVersion::from_tag("lmsysorg/sglang", t);
        assert_eq!(rule.covers(&v("v0.5.20-cu130")), Coverage::Yes);
        assert_eq!(rule.covers(&v("v0.5.19-cu130")), Coverage::No);
        assert_eq!(
            rule.covers(&v("nightly-dev-cu13-20260916-abcdef12")),
            Coverage::Yes
        );
        assert_eq!(
            rule.covers(&v("nightly-dev-cu13-20260910-abcdef12")),
            Coverage::No
        );
        assert!(matches!(
            rule.covers(&v("qwen38flashnext")),
            Coverage::Unknown(_)
        ));
        let mori = r
            .rules
            .iter()
            .find(|x| x.id == "vllm-rocm-0.24-mori-low-latency")
            .unwrap();
        assert_eq!(
            mori.covers(&EngineVersion::from_tag("vllm/vllm-openai", "v0.24.0")),
            Coverage::No
        );
        assert_eq!(
            mori.covers(&EngineVersion::from_tag("vllm/vllm-openai-rocm", "v0.24.0")),
            Coverage::Yes
        );
        let b300 = r
            .rules
            .iter()
            .find(|x| x.id == "sglang-b300-deepgemm-cutlass")
            .unwrap();
        assert_eq!(b300.covers(&v("v0.5.12-cu130")), Coverage::Yes);
        assert_eq!(b300.covers(&v("v0.5.13-cu130")), Coverage::No);
    }

    #[test]
    fn bad_rules_are_refused() {
        let t = "[[rule]]\nid='x'\nrow=1\nengine='sglang'\nsince='abc'\nkind='flag-remove'\nold='--a'\napply='auto'\nevidence=['https://x']\nnote=''\n";
        let e = RuleSet::from_toml(t, "r.toml").unwrap_err().to_string();
        assert!(e.contains("r.toml: rule `x`: since `abc`"), "{e}");
        let t = t.replace("since='abc'\n", "").replace("old='--a'\n", "");
        let e = RuleSet::from_toml(&t, "r.toml").unwrap_err().to_string();
        assert!(e.contains("needs `old`"), "{e}");
    }

    /// The refusals as typed errors, with their exact lines (plain and `{:#}`).
    #[test]
    fn bad_rules_are_typed() {
        let t = "[[rule]]\nid='x'\nrow=1\nengine='sglang'\nsince='abc'\nkind='flag-remove'\nold='--a'\napply='auto'\nevidence=['https://x']\nnote=''\n";
        let e = RuleSet::from_toml(t, "r.toml").unwrap_err();
        assert!(matches!(
            &e,
            BumpError::Rule { id, problem: RuleProblem::BadSince(s), .. } if id == "x" && s == "abc"
        ));
        assert_eq!(
            e.to_string(),
            "r.toml: rule `x`: since `abc` is not a version"
        );
        assert_eq!(format!("{e:#}"), e.to_string());
        let t2 = t.replace("since='abc'\n", "").replace("old='--a'\n", "");
        let e = RuleSet::from_toml(&t2, "r.toml").unwrap_err();
        assert!(matches!(
            e,
            BumpError::Rule {
                problem: RuleProblem::MissingField {
                    kind: RuleKind::FlagRemove,
                    field: "old"
                },
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "r.toml: rule `x`: kind FlagRemove needs `old`"
        );
        let t3 = format!(
            "{}{}",
            t.replace("since='abc'\n", ""),
            t.replace("since='abc'\n", "")
        );
        let e = RuleSet::from_toml(&t3, "r.toml").unwrap_err();
        assert!(matches!(
            e,
            BumpError::Rule {
                problem: RuleProblem::DuplicateId,
                ..
            }
        ));
        assert_eq!(e.to_string(), "r.toml: rule `x`: duplicate id");
        let e = RuleSet::from_toml("[[rule]]\nid=\n", "r.toml").unwrap_err();
        assert!(matches!(e, BumpError::RulesSyntax { .. }));
        assert!(e.to_string().starts_with("r.toml: "), "{e}");
        assert!(!e.to_string().ends_with('\n'));
    }
}
