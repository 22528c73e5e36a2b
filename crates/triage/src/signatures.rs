//! The signature table: data (`signatures.toml`, embedded) compiled into one `RegexSet`.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use crate::types::{Action, Layer, Outcome, Persistence, Phase};

/// The embedded table (AUTOMATION.md §5.4 + cases/README.md triage categories).
pub const BUILTIN_SIGNATURES_TOML: &str = include_str!("../signatures.toml");

/// Where the owning layer of a signature comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerSpec {
    /// Always this layer.
    Fixed(Layer),
    /// The stage the log was in when the line appeared (launcher, recipe, engine, client);
    /// `fallback` when no stage marker was seen before the line.
    Context {
        /// Layer used when the log carries no stage marker before the line.
        fallback: Layer,
    },
}

/// One compiled signature (a row of the table).
#[derive(Debug, Clone)]
pub struct Signature {
    /// Unique id: the §5.4 number (`"D1"`) or the category name for extra rows.
    pub id: String,
    /// §5.4 group letter (`"A"`…`"F"`) or `"extra"`.
    pub group: String,
    /// snake_case category (e.g. `missing_env_var`, `cuda_oom`).
    pub category: String,
    /// One-line class description.
    pub class: String,
    /// Where the owning layer comes from.
    pub layer: LayerSpec,
    /// T / T(node) / D / M / symptom / tooling.
    pub persistence: Persistence,
    /// What to do next.
    pub action: Action,
    /// Outcome implied when `action` is `stop`.
    pub outcome: Option<Outcome>,
    /// Phase override (e.g. F2 → `baseline`).
    pub phase: Option<Phase>,
    /// Generic wrapper/symptom: first error only when nothing specific matched.
    pub generic: bool,
    /// Related §5.4 class id, if this extra row refines one (e.g. `missing_env_var` → `F3`).
    pub related: Option<String>,
    /// Patterns (matched against the de-prefixed line).
    pub patterns: Vec<Regex>,
    /// Lines following a match that belong to it (e.g. `  - MODEL_PATH`).
    pub continuation: Option<Regex>,
    /// The fix (template).
    pub fix: String,
    /// The next step (template: `{field}`, `{layer}`).
    pub next: String,
    /// A real-shaped example line (self-test).
    pub example: String,
}

impl Signature {
    /// True when the id is one of the 43 classes of AUTOMATION.md §5.4.
    pub fn is_section_class(&self) -> bool {
        matches!(self.group.as_str(), "A" | "B" | "C" | "D" | "E" | "F")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    signature: Vec<RawSignature>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    id: String,
    group: String,
    category: String,
    class: String,
    layer: String,
    #[serde(default)]
    fallback_layer: Option<String>,
    persistence: String,
    action: String,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    generic: bool,
    #[serde(default)]
    related: Option<String>,
    patterns: Vec<String>,
    #[serde(default)]
    continuation: Option<String>,
    fix: String,
    next: String,
    example: String,
}

/// A line matched against the table.
#[derive(Debug, Clone)]
pub struct LineMatch {
    /// Index of the winning signature in [`SignatureTable::signatures`].
    pub sig: usize,
    /// Named groups of the winning pattern.
    pub fields: BTreeMap<String, String>,
}

/// The compiled table: every pattern of every signature in one `RegexSet` (one pass per line).
#[derive(Debug)]
pub struct SignatureTable {
    sigs: Vec<Signature>,
    set: RegexSet,
    /// pattern index in `set` → (signature index, pattern index in the signature).
    owner: Vec<(usize, usize)>,
}

impl SignatureTable {
    /// The embedded table, compiled once.
    pub fn builtin() -> &'static SignatureTable {
        static T: OnceLock<SignatureTable> = OnceLock::new();
        T.get_or_init(|| {
            SignatureTable::from_toml(BUILTIN_SIGNATURES_TOML, "signatures.toml")
                .expect("embedded signatures.toml is valid (checked by tests)")
        })
    }

    /// Parses and compiles a table. `source` names the file in errors.
    ///
    /// Errors: TOML syntax, unknown fields, duplicate ids, unknown layer/persistence/action/
    /// outcome/phase words, `outcome` without `action = "stop"`, invalid regexes (each error
    /// names the signature id and the pattern).
    pub fn from_toml(text: &str, source: &str) -> anyhow::Result<SignatureTable> {
        let raw: RawTable = toml::from_str(text)
            .map_err(|e| anyhow::anyhow!("{source}: {}", e.to_string().trim()))?;
        let mut seen = HashSet::new();
        let mut sigs = Vec::with_capacity(raw.signature.len());
        let mut all_patterns = Vec::new();
        let mut owner = Vec::new();
        for r in raw.signature {
            let ctx = |what: &str| format!("{source}: signature `{}`: {what}", r.id);
            if !seen.insert(r.id.clone()) {
                anyhow::bail!(ctx("duplicate id"));
            }
            if r.patterns.is_empty() {
                anyhow::bail!(ctx("no patterns"));
            }
            let layer = if r.layer == "context" {
                let fb = r.fallback_layer.as_deref().unwrap_or("unknown");
                LayerSpec::Context {
                    fallback: fb.parse().map_err(|e: String| anyhow::anyhow!(ctx(&e)))?,
                }
            } else {
                LayerSpec::Fixed(
                    r.layer
                        .parse()
                        .map_err(|e: String| anyhow::anyhow!(ctx(&e)))?,
                )
            };
            let persistence: Persistence = r
                .persistence
                .parse()
                .map_err(|e: String| anyhow::anyhow!(ctx(&e)))?;
            let action: Action = r
                .action
                .parse()
                .map_err(|e: String| anyhow::anyhow!(ctx(&e)))?;
            let outcome: Option<Outcome> = match r.outcome.as_deref() {
                None | Some("") => None,
                Some(s) => Some(s.parse().map_err(|e: String| anyhow::anyhow!(ctx(&e)))?),
            };
            if outcome.is_some() && action != Action::Stop {
                anyhow::bail!(ctx("`outcome` is only meaningful with action = \"stop\""));
            }
            let phase: Option<Phase> = match r.phase.as_deref() {
                None | Some("") => None,
                Some(s) => Some(s.parse().map_err(|e: String| anyhow::anyhow!(ctx(&e)))?),
            };
            let sig_idx = sigs.len();
            let mut patterns = Vec::new();
            for (pi, p) in r.patterns.iter().enumerate() {
                let re = Regex::new(p)
                    .map_err(|e| anyhow::anyhow!(ctx(&format!("pattern `{p}`: {e}"))))?;
                patterns.push(re);
                all_patterns.push(p.clone());
                owner.push((sig_idx, pi));
            }
            let continuation = match r.continuation.as_deref() {
                None | Some("") => None,
                Some(p) => Some(
                    Regex::new(p)
                        .map_err(|e| anyhow::anyhow!(ctx(&format!("continuation `{p}`: {e}"))))?,
                ),
            };
            sigs.push(Signature {
                id: r.id,
                group: r.group,
                category: r.category,
                class: r.class,
                layer,
                persistence,
                action,
                outcome,
                phase,
                generic: r.generic,
                related: r.related,
                patterns,
                continuation,
                fix: r.fix,
                next: r.next,
                example: r.example,
            });
        }
        let set = RegexSet::new(&all_patterns)
            .map_err(|e| anyhow::anyhow!("{source}: compiling the pattern set: {e}"))?;
        Ok(SignatureTable { sigs, set, owner })
    }

    /// All signatures, in table order (the order is the tie-break: first listed wins).
    pub fn signatures(&self) -> &[Signature] {
        &self.sigs
    }

    /// The signature with this id.
    pub fn get(&self, id: &str) -> Option<&Signature> {
        self.sigs.iter().find(|s| s.id == id)
    }

    /// Matches one de-prefixed line; returns the first-listed matching signature and the named
    /// groups of its first matching pattern, or `None`.
    pub fn match_line(&self, line: &str) -> Option<LineMatch> {
        let m = self.set.matches(line);
        if !m.matched_any() {
            return None;
        }
        // Pattern indices are in table order, so the first matched pattern belongs to the
        // first-listed matching signature.
        let first = m.iter().next()?;
        let (sig, _) = self.owner[first];
        // Extract fields from the first pattern of that signature that matches with captures.
        let mut fields = BTreeMap::new();
        for pi in m.iter() {
            let (s, p) = self.owner[pi];
            if s != sig {
                break;
            }
            let re = &self.sigs[s].patterns[p];
            if let Some(caps) = re.captures(line) {
                for name in re.capture_names().flatten() {
                    if let Some(v) = caps.name(name) {
                        fields.insert(name.to_string(), v.as_str().to_string());
                    }
                }
                break;
            }
        }
        Some(LineMatch { sig, fields })
    }
}

/// Replaces `{name}` with `fields[name]` (and `{layer}` with the layer); unknown names are
/// written as `<name>`.
pub fn render_template(t: &str, fields: &BTreeMap<String, String>, layer: Layer) -> String {
    let mut out = String::with_capacity(t.len() + 16);
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if after[..close]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && close > 0 =>
            {
                let name = &after[..close];
                if name == "layer" {
                    out.push_str(layer.as_str());
                } else if let Some(v) = fields.get(name) {
                    out.push_str(v);
                } else {
                    out.push('<');
                    out.push_str(name);
                    out.push('>');
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_compiles_and_has_the_43_section_classes() {
        let t = SignatureTable::builtin();
        let ids: Vec<&str> = t
            .signatures()
            .iter()
            .filter(|s| s.is_section_class())
            .map(|s| s.id.as_str())
            .collect();
        let mut want = Vec::new();
        for (g, n) in [("A", 7), ("B", 11), ("C", 3), ("D", 12), ("E", 4), ("F", 6)] {
            for i in 1..=n {
                want.push(format!("{g}{i}"));
            }
        }
        assert_eq!(want.len(), 43);
        let mut got: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn every_example_matches_its_own_signature() {
        let t = SignatureTable::builtin();
        for (i, s) in t.signatures().iter().enumerate() {
            let m = t
                .match_line(&s.example)
                .unwrap_or_else(|| panic!("{}: example does not match", s.id));
            assert_eq!(
                m.sig,
                i,
                "{}: example is claimed by {}",
                s.id,
                t.signatures()[m.sig].id
            );
        }
    }

    #[test]
    fn bad_tables_are_refused_with_the_signature_named() {
        let bad = "[[signature]]\nid='x'\ngroup='extra'\ncategory='x'\nclass='x'\nlayer='nowhere'\npersistence='mixed'\naction='inspect'\npatterns=['a']\nfix=''\nnext=''\nexample='a'\n";
        let e = SignatureTable::from_toml(bad, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.toml: signature `x`") && e.contains("nowhere"),
            "{e}"
        );
        let bad_re = bad
            .replace("'nowhere'", "'engine'")
            .replace("['a']", "['(']");
        let e = SignatureTable::from_toml(&bad_re, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pattern `(`"), "{e}");
    }

    #[test]
    fn templates() {
        let mut f = BTreeMap::new();
        f.insert("var".to_string(), "MODEL_PATH".to_string());
        assert_eq!(
            render_template("set {var} in the {layer} {x} {}", &f, Layer::Launcher),
            "set MODEL_PATH in the launcher <x> {}"
        );
    }
}
