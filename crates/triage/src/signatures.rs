//! The signature table: data (`signatures.toml`, embedded) compiled into one `RegexSet`.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use crate::error::TriageError;
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
    /// Decided by the shell rules ([`crate::shell::attribute`]) from the extracted script,
    /// command or path and what the log showed before the line (`layer = "shell"`). Such a
    /// row counts as the first error only before the log's first generic wrapper line.
    Shell,
    /// A required-variable check (`layer = "env"`): the launcher when every variable the check
    /// names (field `var`, `, `-separated) belongs to the launcher's environment contract
    /// ([`SignatureTable::launcher_env`]: whatever stage ran the check, the launcher is the
    /// one that must pass it); otherwise the stage the log was in, else `fallback`.
    Env {
        /// Layer used when a variable is outside the contract and no stage marker was seen.
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
    /// Never matched by a pattern: the scanner builds it from the log's structure (the
    /// `set -e` stop after the last `set -x` trace); `patterns` is empty.
    pub synthetic: bool,
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
    /// Words for a template field the log may not give (e.g. `var` of check_env_vars' header
    /// when its list is not in the log): used when the field was not extracted, so no
    /// rendered text ever shows a placeholder. Every `{field}` of `fix`/`next` is either
    /// captured by every pattern, given by the rules (`layer`, the shell rows' fields) or has
    /// a default here (checked when the table loads).
    pub defaults: BTreeMap<String, String>,
    /// A real-shaped example line (self-test).
    pub example: String,
    /// Where the error text comes from: an `https://` address (issue, pull request or the
    /// source line that prints it), `shared: <path>` (this project's recorded cases) or
    /// `spec: <why>` when no public log text exists for the class.
    pub source: String,
    /// The error line as published at `source` (variables filled where the source prints a
    /// template); `None` only for `spec:` rows. Tests classify it.
    pub source_text: Option<String>,
    /// Patterns that match the exception line only when the traceback right above it
    /// contains a line matching [`Signature::traceback_context`] (Python prints the frame
    /// and the echoed source on their own lines, the exception line alone is generic).
    pub traceback_patterns: Vec<Regex>,
    /// See [`Signature::traceback_patterns`].
    pub traceback_context: Option<Regex>,
}

impl Signature {
    /// True when the id is one of the 43 classes of AUTOMATION.md §5.4.
    pub fn is_section_class(&self) -> bool {
        matches!(self.group.as_str(), "A" | "B" | "C" | "D" | "E" | "F")
    }

    /// Renders `template` (this row's `fix` or `next`) with the extracted `fields`, this row's
    /// [`Signature::defaults`] for the fields the log did not give, and `layer`.
    pub fn render(
        &self,
        template: &str,
        fields: &BTreeMap<String, String>,
        layer: Layer,
    ) -> String {
        render_with_defaults(template, fields, &self.defaults, layer)
    }

    /// The fields a line of this row always carries: the named groups common to every
    /// pattern, plus what the scanner adds (the shell rules' template fields for a shell
    /// row, the traced `command` and `exit_status` of the synthetic `set -e` row).
    pub fn guaranteed_fields(&self) -> HashSet<String> {
        let mut out: Option<HashSet<String>> = None;
        for re in self.patterns.iter().chain(&self.traceback_patterns) {
            let names: HashSet<String> = re.capture_names().flatten().map(String::from).collect();
            out = Some(match out {
                None => names,
                Some(o) => o.intersection(&names).cloned().collect(),
            });
        }
        let mut out = out.unwrap_or_default();
        if self.layer == LayerSpec::Shell {
            out.extend(crate::shell::TEMPLATE_FIELDS.iter().map(|s| s.to_string()));
        }
        if self.synthetic {
            out.extend(["command".to_string(), "exit_status".to_string()]);
        }
        out
    }

    /// A `{field}` of `fix` or `next` that a log line of this row may not give and that has
    /// no default: `Some(problem)` (the table is refused), `None` when every field is filled.
    fn unfilled_template_field(&self) -> Option<String> {
        let have = self.guaranteed_fields();
        for (which, t) in [("fix", &self.fix), ("next", &self.next)] {
            for name in template_fields(t) {
                if name != "layer" && !have.contains(name) && !self.defaults.contains_key(name) {
                    return Some(format!(
                        "`{which}` uses {{{name}}}, which not every pattern captures: capture it in every pattern or give it in `defaults`"
                    ));
                }
            }
        }
        None
    }
}

/// [`render_template`] with `defaults` for the fields missing from `fields` (or empty there).
pub fn render_with_defaults(
    template: &str,
    fields: &BTreeMap<String, String>,
    defaults: &BTreeMap<String, String>,
    layer: Layer,
) -> String {
    if defaults.is_empty() {
        return render_template(template, fields, layer);
    }
    let mut all = defaults.clone();
    all.extend(
        fields
            .iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    render_template(template, &all, layer)
}

/// What a pattern refers to the launcher's environment contract as (`(?P<var>{launcher_env})`).
pub const LAUNCHER_ENV_REF: &str = "{launcher_env}";

/// The `{name}` fields a template refers to, in order (the same parse as [`render_template`]).
pub fn template_fields(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_field_name(&after[..close]) => {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn is_field_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    /// The launcher's environment contract (see [`SignatureTable::launcher_env`]); patterns
    /// refer to it as `{launcher_env}`.
    #[serde(default)]
    launcher_env: Vec<String>,
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
    synthetic: bool,
    #[serde(default)]
    related: Option<String>,
    patterns: Vec<String>,
    #[serde(default)]
    continuation: Option<String>,
    fix: String,
    next: String,
    #[serde(default)]
    defaults: BTreeMap<String, String>,
    example: String,
    source: String,
    #[serde(default)]
    source_text: Option<String>,
    #[serde(default)]
    traceback_patterns: Vec<String>,
    #[serde(default)]
    traceback_context: Option<String>,
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
    /// Variable names of the launcher's environment contract.
    launcher_env: Vec<String>,
    set: RegexSet,
    /// pattern index in `set` → (signature index, pattern index in the signature, whether it
    /// is a traceback pattern that needs the signature's traceback context).
    owner: Vec<(usize, usize, bool)>,
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
    /// names the signature id and the pattern): [`TriageError::TableSyntax`],
    /// [`TriageError::Signature`], [`TriageError::PatternSet`].
    pub fn from_toml(text: &str, source: &str) -> Result<SignatureTable, TriageError> {
        let raw: RawTable = toml::from_str(text).map_err(|e| TriageError::TableSyntax {
            file: source.to_string(),
            message: e.to_string().trim().to_string(),
        })?;
        let launcher_env_alt = raw
            .launcher_env
            .iter()
            .map(|v| regex::escape(v))
            .collect::<Vec<_>>()
            .join("|");
        let mut seen = HashSet::new();
        let mut sigs = Vec::with_capacity(raw.signature.len());
        let mut all_patterns = Vec::new();
        let mut owner = Vec::new();
        for r in raw.signature {
            let ctx = |what: &str| TriageError::Signature {
                file: source.to_string(),
                id: r.id.clone(),
                problem: what.to_string(),
            };
            if !seen.insert(r.id.clone()) {
                return Err(ctx("duplicate id"));
            }
            if r.patterns.is_empty() != r.synthetic {
                return Err(ctx(if r.synthetic {
                    "a synthetic row has no patterns"
                } else {
                    "no patterns"
                }));
            }
            let layer = if r.layer == "shell" {
                LayerSpec::Shell
            } else if r.layer == "context" || r.layer == "env" {
                let fb = r.fallback_layer.as_deref().unwrap_or("unknown");
                let fallback = fb.parse().map_err(|e: String| ctx(&e))?;
                if r.layer == "env" {
                    LayerSpec::Env { fallback }
                } else {
                    LayerSpec::Context { fallback }
                }
            } else {
                LayerSpec::Fixed(r.layer.parse().map_err(|e: String| ctx(&e))?)
            };
            let persistence: Persistence = r.persistence.parse().map_err(|e: String| ctx(&e))?;
            let action: Action = r.action.parse().map_err(|e: String| ctx(&e))?;
            let outcome: Option<Outcome> = match r.outcome.as_deref() {
                None | Some("") => None,
                Some(s) => Some(s.parse().map_err(|e: String| ctx(&e))?),
            };
            if outcome.is_some() && action != Action::Stop {
                return Err(ctx("`outcome` is only meaningful with action = \"stop\""));
            }
            let phase: Option<Phase> = match r.phase.as_deref() {
                None | Some("") => None,
                Some(s) => Some(s.parse().map_err(|e: String| ctx(&e))?),
            };
            let source = r.source.trim().to_string();
            if !(source.starts_with("https://")
                || source.starts_with("shared: ")
                || source.starts_with("spec: "))
            {
                return Err(ctx(
                    "`source` must be an https:// address, `shared: <path>` or `spec: <why>`",
                ));
            }
            if source.starts_with("https://") && r.source_text.is_none() {
                return Err(ctx("`source_text` (the published error line) is missing"));
            }
            let sig_idx = sigs.len();
            let mut patterns = Vec::new();
            for (pi, p) in r.patterns.iter().enumerate() {
                let ascii = ascii_word_boundaries(&p.replace(LAUNCHER_ENV_REF, &launcher_env_alt));
                let re = Regex::new(&ascii).map_err(|e| ctx(&format!("pattern `{p}`: {e}")))?;
                patterns.push(re);
                all_patterns.push(ascii);
                owner.push((sig_idx, pi, false));
            }
            let traceback_context = match r.traceback_context.as_deref() {
                None | Some("") => None,
                Some(p) => Some(
                    Regex::new(&ascii_word_boundaries(p))
                        .map_err(|e| ctx(&format!("traceback_context `{p}`: {e}")))?,
                ),
            };
            if traceback_context.is_none() != r.traceback_patterns.is_empty() {
                return Err(ctx(
                    "`traceback_patterns` and `traceback_context` go together",
                ));
            }
            let mut traceback_patterns = Vec::new();
            for (pi, p) in r.traceback_patterns.iter().enumerate() {
                let ascii = ascii_word_boundaries(p);
                let re = Regex::new(&ascii).map_err(|e| ctx(&format!("pattern `{p}`: {e}")))?;
                traceback_patterns.push(re);
                all_patterns.push(ascii);
                owner.push((sig_idx, pi, true));
            }
            let continuation = match r.continuation.as_deref() {
                None | Some("") => None,
                Some(p) => Some(
                    Regex::new(&ascii_word_boundaries(p))
                        .map_err(|e| ctx(&format!("continuation `{p}`: {e}")))?,
                ),
            };
            let sig = Signature {
                id: r.id.clone(),
                group: r.group,
                category: r.category,
                class: r.class,
                layer,
                persistence,
                action,
                outcome,
                phase,
                generic: r.generic,
                synthetic: r.synthetic,
                related: r.related,
                patterns,
                continuation,
                fix: r.fix,
                next: r.next,
                defaults: r.defaults,
                example: r.example,
                source,
                source_text: r.source_text,
                traceback_patterns,
                traceback_context,
            };
            if let Some(problem) = sig.unfilled_template_field() {
                return Err(ctx(&problem));
            }
            sigs.push(sig);
        }
        let set = RegexSet::new(&all_patterns).map_err(|error| TriageError::PatternSet {
            file: source.to_string(),
            error,
        })?;
        Ok(SignatureTable {
            sigs,
            launcher_env: raw.launcher_env,
            set,
            owner,
        })
    }

    /// The launcher's environment contract: the variables InferenceX's workflows pass to the
    /// launcher and from it to the recipe (`env:` of benchmark-tmpl.yml and
    /// benchmark-multinode-tmpl.yml, the launch step's own `RUNNER_NAME`, `RESULT_FILENAME`,
    /// `PORT`) and `MODEL_PATH` (the launcher's weights staging). A recipe check that finds
    /// one of them missing is the launcher's to fix (`layer = "env"`).
    pub fn launcher_env(&self) -> &[String] {
        &self.launcher_env
    }

    /// The owning layer of a `layer = "env"` row for the variables `vars` (`, `-separated,
    /// as the continuation collects them): the launcher when every one is in
    /// [`Self::launcher_env`], else `None` (the caller takes the stage).
    pub fn env_owner(&self, vars: &str) -> Option<Layer> {
        let mut names = vars.split(',').map(str::trim).filter(|v| !v.is_empty());
        let mut any = false;
        let all = names.all(|v| {
            any = true;
            self.launcher_env.iter().any(|c| c == v)
        });
        (any && all).then_some(Layer::Launcher)
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
    /// groups of its first matching pattern, or `None`. Traceback patterns never match here
    /// (see [`SignatureTable::match_line_in_traceback`]).
    pub fn match_line(&self, line: &str) -> Option<LineMatch> {
        self.match_line_in_traceback(line, &[])
    }

    /// Like [`SignatureTable::match_line`] for the exception line that ends a traceback:
    /// `traceback` holds the traceback's lines (frames, echoed source), so signatures with a
    /// [`Signature::traceback_context`] can match the otherwise generic exception line.
    pub fn match_line_in_traceback(&self, line: &str, traceback: &[String]) -> Option<LineMatch> {
        // `is_match` first (no allocation, stops at the first match): most lines match nothing.
        if !self.set.is_match(line) {
            return None;
        }
        let m = self.set.matches(line);
        // Pattern indices are in table order, so the first usable matched pattern belongs to
        // the first-listed matching signature.
        let usable = |&(s, _, tb): &(usize, usize, bool)| {
            !tb || self.sigs[s]
                .traceback_context
                .as_ref()
                .is_some_and(|c| traceback.iter().any(|l| c.is_match(l)))
        };
        let first = m.iter().find(|&pi| usable(&self.owner[pi]))?;
        let (sig, _, _) = self.owner[first];
        // Extract fields from the first usable pattern of that signature that captures.
        let mut fields = BTreeMap::new();
        for pi in m.iter().filter(|&pi| pi >= first) {
            let o = self.owner[pi];
            if o.0 != sig {
                break;
            }
            if !usable(&o) {
                continue;
            }
            let (s, p, tb) = o;
            let re = if tb {
                &self.sigs[s].traceback_patterns[p]
            } else {
                &self.sigs[s].patterns[p]
            };
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

/// The pattern with every word boundary `\b`/`\B` made ASCII (`(?-u:\b)`).
///
/// A Unicode word boundary stops the regex crate's lazy DFA at the first non-ASCII byte of a
/// line (it cannot decide Unicode word characters byte by byte), and the search falls back to
/// an NFA engine: with the whole table in one set, a log whose lines carry `→`, `✓` or a
/// progress bar was scanned at 1 MB/s instead of 200 MB/s. Error signatures are ASCII words,
/// so an ASCII boundary means the same for them.
pub fn ascii_word_boundaries(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(b @ ('b' | 'B')) => {
                out.push_str("(?-u:\\");
                out.push(b);
                out.push(')');
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Replaces `{name}` with `fields[name]` (and `{layer}` with the layer). A name with no field
/// is written in words (`{var}` → `the var named in the log`), never as a placeholder; a
/// table row gives its own words for such fields ([`Signature::defaults`],
/// [`Signature::render`]), so this is the last resort of a caller without a row.
pub fn render_template(t: &str, fields: &BTreeMap<String, String>, layer: Layer) -> String {
    let mut out = String::with_capacity(t.len() + 16);
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_field_name(&after[..close]) => {
                let name = &after[..close];
                if name == "layer" {
                    out.push_str(layer.as_str());
                } else if let Some(v) = fields.get(name).filter(|v| !v.trim().is_empty()) {
                    out.push_str(v);
                } else {
                    out.push_str("the ");
                    out.push_str(&name.replace('_', " "));
                    out.push_str(" named in the log");
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
            if s.synthetic {
                // Built from the log's structure, never matched (tests/classes.rs tests it).
                assert!(t.match_line(&s.example).is_none(), "{}", s.id);
                continue;
            }
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
        let bad = "[[signature]]\nid='x'\ngroup='extra'\ncategory='x'\nclass='x'\nlayer='nowhere'\npersistence='mixed'\naction='inspect'\npatterns=['a']\nfix=''\nnext=''\nexample='a'\nsource='spec: x'\n";
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
    fn sources_are_addresses_and_every_published_line_is_claimed_by_its_own_row() {
        let t = SignatureTable::builtin();
        let mut spec_only = Vec::new();
        for s in t.signatures() {
            if s.source.starts_with("spec: ") && s.is_section_class() {
                spec_only.push(s.id.as_str());
            }
            let Some(text) = &s.source_text else {
                assert!(!s.source.starts_with("https://"), "{}", s.id);
                continue;
            };
            // Rows whose published line needs its traceback: the example carries the context.
            let ctx = vec![s.example.clone()];
            let m = t
                .match_line_in_traceback(text, &ctx)
                .unwrap_or_else(|| panic!("{}: published line does not match: {text}", s.id));
            assert_eq!(
                t.signatures()[m.sig].id,
                s.id,
                "{}: published line is claimed by another row",
                s.id
            );
        }
        // The classes with no public log text, said in docs/triage.md.
        assert_eq!(spec_only, ["B7", "B11", "E4", "F1", "F2", "F6"]);
    }

    #[test]
    fn traceback_patterns_need_their_context() {
        let t = SignatureTable::builtin();
        let line = "RuntimeError: CUDA error: out of memory";
        assert!(t.match_line(line).is_none());
        let frames = vec![
            "File \"/usr/local/lib/python3.12/dist-packages/vllm/compilation/breakable_cudagraph.py\", line 212, in __exit__".to_string(),
        ];
        let m = t.match_line_in_traceback(line, &frames).unwrap();
        assert_eq!(t.signatures()[m.sig].id, "D4");
        let other = vec!["File \"/x/torch/cuda/graphs.py\", line 84, in capture_end".to_string()];
        assert!(t.match_line_in_traceback(line, &other).is_none());
        let bad = "[[signature]]\nid='x'\ngroup='extra'\ncategory='x'\nclass='x'\nlayer='engine'\npersistence='mixed'\naction='inspect'\npatterns=['a']\ntraceback_patterns=['b']\nfix=''\nnext=''\nexample='a'\nsource='https://x'\nsource_text='a'\n";
        let e = SignatureTable::from_toml(bad, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("go together"), "{e}");
        let bad = bad
            .replace("traceback_patterns=['b']\n", "")
            .replace("source_text='a'\n", "");
        let e = SignatureTable::from_toml(&bad, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`source_text`"), "{e}");
    }

    #[test]
    fn word_boundaries_are_ascii_in_every_compiled_pattern() {
        assert_eq!(
            ascii_word_boundaries(r"\bNO_SWEEP\b and \\b and \B"),
            r"(?-u:\b)NO_SWEEP(?-u:\b) and \\b and (?-u:\B)"
        );
        // The guard: no pattern of the compiled set keeps a Unicode boundary (each one made
        // the lazy DFA give up on non-ASCII lines).
        let t = SignatureTable::builtin();
        let mut boundaries = 0;
        for p in t.set.patterns() {
            let unicode = p.replace("(?-u:\\b)", "").replace("(?-u:\\B)", "");
            assert!(
                !unicode.replace("\\\\", "").contains("\\b")
                    && !unicode.replace("\\\\", "").contains("\\B"),
                "{p}"
            );
            boundaries += p.matches("(?-u:\\b)").count();
        }
        assert!(boundaries > 10, "{boundaries}");
        // Still matched by their rows.
        let m = t
            .match_line("| #3363 | NO_SUCCESS | Run Sweep: SKIPPED → retry |")
            .unwrap();
        assert_eq!(t.signatures()[m.sig].id, "A7");
    }

    #[test]
    fn templates() {
        let mut f = BTreeMap::new();
        f.insert("var".to_string(), "MODEL_PATH".to_string());
        assert_eq!(
            render_template("set {var} in the {layer} {x} {}", &f, Layer::Launcher),
            "set MODEL_PATH in the launcher the x named in the log {}"
        );
    }
}
