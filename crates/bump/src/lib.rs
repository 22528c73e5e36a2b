//! Bump: moving a catalog entry to a new engine image.
//!
//! Owns: OCI image references, registry resolution (index and per-platform digests, labels),
//! recipe flag migrations as data, the in-place catalog edit and the change-log entry.
//! Must not know about: measuring, metrics, the store, rendering, running engines (it reads the
//! catalog through `servebench-catalog` and talks only to OCI registries).
//!
//! Modules:
//! * [`reference`] — OCI/Docker and enroot image references, §6.3 conversions;
//! * [`registry`] — the OCI distribution API client (`servebench image inspect`);
//! * [`version`] — engine versions read from tags;
//! * [`rules`] — flag migrations as data (`flag-rules.toml`, every row of AUTOMATION.md §6.1);
//! * [`shell`] — shell-aware edits of recipe scripts;
//! * [`catalog_edit`] — the in-place `image:` edit of one master-config entry;
//! * [`recipe`] — which recipe a config runs (InferenceX naming) and who else runs it;
//! * [`srt`] — the srt-slurm recipe YAMLs a multinode config names (`CONFIG_FILE=`) and their
//!   engine flags;
//! * [`changelog`] — the append-only change-log entry;
//! * [`provenance`] — digests and labels, from the registry or a provenance file;
//! * [`error`] — [`BumpError`], one variant per way a bump fails (file, line, key, rule, URL).
//!
//! [`plan`] computes a whole bump without touching any file ([`BumpPlan`]: new file texts,
//! unified diffs, rule outcomes, provenance, the `Change:` line); [`BumpPlan::write`] writes it.
#![warn(missing_docs)]

pub mod catalog_edit;
pub mod changelog;
pub mod error;
pub mod flags;
pub mod provenance;
pub mod recipe;
pub mod reference;
pub mod registry;
pub mod rules;
pub mod shell;
pub mod srt;
pub mod version;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use error::{BumpError, IoOp, NotEditable, RuleProblem};
pub use provenance::Provenance;
pub use reference::{ImageRef, RefError, RefForm};
pub use registry::{ImageInfo, RegistryError, RegistryOptions};
pub use rules::{FlagRule, RuleOutcome, RuleSet};
pub use version::EngineVersion;

use rules::{Apply, Coverage};

/// Where the digests come from.
#[derive(Debug, Clone)]
pub enum Resolve {
    /// Resolve both images at their registries; an unreachable registry stops the bump.
    Registry(RegistryOptions),
    /// Read them from a provenance file (the shape of `scenario/images.json`).
    File(PathBuf),
    /// Do not resolve (`--no-resolve`): the bump proceeds and says so.
    Off,
}

/// What to bump.
#[derive(Debug, Clone)]
pub struct BumpOptions {
    /// Master-config key.
    pub key: String,
    /// New image reference.
    pub image: String,
    /// Master-config files (the key must be in exactly one).
    pub catalogs: Vec<PathBuf>,
    /// Recipes directory (`benchmarks/single_node`); `None`: recipes are not checked.
    pub recipes_dir: Option<PathBuf>,
    /// Change log to append to; `None`: no entry is appended.
    pub changelog: Option<PathBuf>,
    /// Digest resolution.
    pub resolve: Resolve,
    /// `pr-link` of the change-log entry.
    pub pr_link: String,
    /// Write `repo:tag@sha256:<index digest>` into the catalog instead of the bare tag.
    pub pin_digest: bool,
    /// Rules file replacing the embedded one.
    pub rules: Option<PathBuf>,
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// Text before.
    #[serde(skip)]
    pub old: String,
    /// Text after.
    #[serde(skip)]
    pub new: String,
    /// Unified diff (`--- a/… +++ b/…`, 3 lines of context).
    pub diff: String,
}

impl FileChange {
    fn new(path: &Path, old: String, new: String) -> FileChange {
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{name}"), &format!("b/{name}"))
            .to_string();
        FileChange {
            path: path.to_path_buf(),
            old,
            new,
            diff,
        }
    }
    /// Lines removed and added (`-`/`+` lines of the diff, headers excluded).
    pub fn changed_lines(&self) -> (Vec<String>, Vec<String>) {
        let mut minus = vec![];
        let mut plus = vec![];
        for l in self.diff.lines() {
            if l.starts_with("---") || l.starts_with("+++") {
                continue;
            }
            if let Some(x) = l.strip_prefix('-') {
                minus.push(x.to_string());
            } else if let Some(x) = l.strip_prefix('+') {
                plus.push(x.to_string());
            }
        }
        (minus, plus)
    }
}

/// What happened to one recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecipeReport {
    /// The recipe file.
    pub path: PathBuf,
    /// `agentic-coding` / `fixed-seq-len`.
    pub scenario: String,
    /// Other configs using the same file (non-empty: shared, never edited).
    pub shared_with: Vec<String>,
    /// Rule outcomes (applied, advice, not-applied).
    pub outcomes: Vec<RuleOutcome>,
    /// The edit, when the recipe changed.
    pub change: Option<FileChange>,
    /// The recipe's engine flags checked against the target image's flag table.
    #[serde(default)]
    pub flags: flags::FlagCheck,
}

/// The record kept for provenance (`provenance.json`, and the attempt comment's Change line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// Config key.
    pub config_key: String,
    /// Catalog file edited.
    pub catalog: PathBuf,
    /// Image before.
    pub old_image: String,
    /// Image after (as written into the catalog).
    pub new_image: String,
    /// Engine (`sglang`, `vllm`, …).
    pub engine: String,
    /// Versions read from the tags.
    pub old_version: String,
    /// Versions read from the tags.
    pub new_version: String,
    /// Provenance of the old image (if resolved).
    pub old_provenance: Option<Provenance>,
    /// Provenance of the new image (if resolved).
    pub new_provenance: Option<Provenance>,
    /// How digests were obtained (or why not).
    pub resolution: String,
    /// Recipe outcomes.
    pub recipes: Vec<RecipeReport>,
    /// The `Change:` line.
    pub change_line: String,
    /// When the bump was planned (UTC, RFC 3339).
    pub at: String,
}

/// A computed bump: nothing written yet.
#[derive(Debug, Clone)]
pub struct BumpPlan {
    /// The record (also what goes into `provenance.json`).
    pub record: ChangeRecord,
    /// True when the entry is already on the target image: nothing to change.
    pub already_updated: bool,
    /// The catalog change.
    pub catalog: Option<FileChange>,
    /// The change-log change.
    pub changelog: Option<FileChange>,
    /// Notes for the user (recipe not found, multinode, old version unknown, …).
    pub notes: Vec<String>,
}

fn engine_display(engine: &str) -> String {
    servebench_engines::display_name(engine)
}

/// Reads a file, naming it on failure (`cannot read PATH: <OS error>`).
pub(crate) fn read(path: &Path) -> Result<String, BumpError> {
    std::fs::read_to_string(path).map_err(|err| BumpError::Io {
        op: IoOp::Read,
        path: path.to_path_buf(),
        err,
    })
}

/// Computes a bump (see [`BumpPlan`]); reads files and (with [`Resolve::Registry`]) the
/// registry, writes nothing.
///
/// Errors, one line each: malformed new reference; key not found (naming the files) or found in
/// two files; catalog invalid; registry failure for the new image (unreachable, 404, bad token);
/// no record in the provenance file; change log not appendable; invalid pr-link; rules file
/// invalid.
pub fn plan(opts: &BumpOptions) -> Result<BumpPlan, BumpError> {
    let new_ref = ImageRef::parse(&opts.image)?;
    changelog::check_pr_link(&opts.pr_link).map_err(BumpError::PrLink)?;
    if opts.catalogs.is_empty() {
        return Err(BumpError::NoCatalog);
    }
    // The file holding the key.
    let (cat_file, cat_text, loc) = locate_key(opts)?;
    let catalog = servebench_catalog::Catalog::load(
        &opts
            .catalogs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>(),
    )
    .map_err(|err| BumpError::CatalogInvalid { err })?;
    let entry = catalog
        .get(&opts.key)
        .ok_or_else(|| BumpError::KeyNotLoaded {
            key: opts.key.clone(),
        })?;
    let mut notes = Vec::new();
    let old_image = loc.value.clone();
    let old_ref = match ImageRef::parse(&old_image) {
        Ok(r) => Some(r),
        Err(e) => {
            notes.push(format!(
                "the current image is malformed ({e}); its version and provenance are unknown"
            ));
            None
        }
    };
    let engine = recipe::engine_of(&entry.framework, &new_ref.repository);
    let tag_version =
        |r: &ImageRef| EngineVersion::from_tag(&r.repository, r.tag.as_deref().unwrap_or(""));
    let new_version = tag_version(&new_ref);
    let old_version = old_ref
        .as_ref()
        .map(tag_version)
        .unwrap_or_else(|| EngineVersion::from_tag("", ""));
    let at = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();

    if old_ref.as_ref().is_some_and(|o| o.same_image(&new_ref)) {
        let change_line = format!("Change: none; `{old_image}` is already the target image.");
        return Ok(BumpPlan {
            record: ChangeRecord {
                config_key: opts.key.clone(),
                catalog: cat_file,
                old_image: old_image.clone(),
                new_image: old_image,
                engine,
                old_version: old_version.to_string(),
                new_version: new_version.to_string(),
                old_provenance: None,
                new_provenance: None,
                resolution: "not needed".into(),
                recipes: vec![],
                change_line,
                at,
            },
            already_updated: true,
            catalog: None,
            changelog: None,
            notes: vec![
                "already-updated: the entry is already on the target image; nothing changed".into(),
            ],
        });
    }

    // Provenance.
    let (old_prov, new_prov, resolution) =
        resolve_provenance(opts, &new_ref, old_ref.as_ref(), &mut notes)?;

    // Catalog edit.
    let written_image = image_to_write(
        opts,
        &new_ref,
        old_ref.as_ref(),
        new_prov.as_ref(),
        &mut notes,
    )?;
    let (new_cat, _) = catalog_edit::set_image(
        &cat_text,
        &opts.key,
        &written_image,
        &cat_file.display().to_string(),
    )?;
    let catalog_change = FileChange::new(&cat_file, cat_text, new_cat);

    // Recipes.
    let recipes = check_recipes(
        opts,
        RecipeCheck {
            entry,
            catalog: &catalog,
            engine: &engine,
            old_version: &old_version,
            new_version: &new_version,
            new_ref: &new_ref,
            old_ref: old_ref.as_ref(),
        },
        &mut notes,
    )?;

    // Change line.
    let change_line = change_line(
        &old_image,
        &written_image,
        old_prov.as_ref(),
        new_prov.as_ref(),
        &recipes,
        &resolution,
    );

    // Change-log entry.
    let changelog_change = changelog_change(
        opts,
        &engine,
        &old_image,
        &written_image,
        &recipes,
        new_prov.as_ref(),
        changelog::entry_scenarios(entry),
    )?;

    Ok(BumpPlan {
        record: ChangeRecord {
            config_key: opts.key.clone(),
            catalog: cat_file,
            old_image,
            new_image: written_image,
            engine,
            old_version: old_version.to_string(),
            new_version: new_version.to_string(),
            old_provenance: old_prov,
            new_provenance: new_prov,
            resolution,
            recipes,
            change_line,
            at,
        },
        already_updated: false,
        catalog: Some(catalog_change),
        changelog: changelog_change,
        notes,
    })
}

/// The catalog file holding `opts.key`: (file, its text, the image's location). Errors: the
/// key in no file ([`BumpError::KeyNotFound`]) or in several ([`BumpError::KeyInSeveralFiles`]).
fn locate_key(
    opts: &BumpOptions,
) -> Result<(PathBuf, String, catalog_edit::ImageLocation), BumpError> {
    let mut hits = Vec::new();
    for f in &opts.catalogs {
        let text = read(f)?;
        if let Some(loc) = catalog_edit::locate_image(&text, &opts.key, &f.display().to_string())? {
            hits.push((f.clone(), text, loc));
        }
    }
    let found = match hits.len() {
        0 => {
            return Err(BumpError::KeyNotFound {
                key: opts.key.clone(),
                files: opts.catalogs.clone(),
            })
        }
        1 => hits.pop().expect("one"),
        _ => {
            return Err(BumpError::KeyInSeveralFiles {
                key: opts.key.clone(),
                files: hits.into_iter().map(|h| h.0).collect(),
            })
        }
    };
    Ok(found)
}

/// The old and new images' provenance and how it was resolved (registry, provenance file,
/// or not at all); an old image that cannot be resolved is a note, the new one an error.
fn resolve_provenance(
    opts: &BumpOptions,
    new_ref: &ImageRef,
    old_ref: Option<&ImageRef>,
    notes: &mut Vec<String>,
) -> Result<(Option<Provenance>, Option<Provenance>, String), BumpError> {
    let resolved = match &opts.resolve {
        Resolve::Registry(ro) => {
            let info = registry::inspect_blocking(new_ref, ro)?;
            let newp = Provenance::from_info(&info);
            let oldp = match old_ref {
                Some(o) => match registry::inspect_blocking(
                    o,
                    &RegistryOptions {
                        plain_http: ro.plain_http && o.is_loopback(),
                        ..ro.clone()
                    },
                ) {
                    Ok(i) => Some(Provenance::from_info(&i)),
                    Err(e) => {
                        notes.push(format!("old image not resolved: {e}"));
                        None
                    }
                },
                None => None,
            };
            (
                oldp,
                Some(newp),
                format!("resolved at {}", info.registry_url),
            )
        }
        Resolve::File(p) => {
            let newp = Provenance::from_file(p, new_ref)?.ok_or_else(|| {
                BumpError::NoProvenanceRecord {
                    path: p.clone(),
                    image: new_ref.to_string(),
                }
            })?;
            let oldp = match old_ref {
                Some(o) => {
                    let r = Provenance::from_file(p, o)?;
                    if r.is_none() {
                        notes.push(format!(
                            "{}: no record for the old image `{o}`",
                            p.display()
                        ));
                    }
                    r
                }
                None => None,
            };
            (oldp, Some(newp), format!("from {} (offline)", p.display()))
        }
        Resolve::Off => {
            notes.push(
                "digests were not resolved (--no-resolve): no index or platform digest is recorded"
                    .into(),
            );
            (None, None, "not resolved (--no-resolve)".into())
        }
    };
    Ok(resolved)
}

/// The image written into the catalog: the given one, pinned to its digest with
/// `--pin-digest`, in enroot form when the entry writes its image that way.
fn image_to_write(
    opts: &BumpOptions,
    new_ref: &ImageRef,
    old_ref: Option<&ImageRef>,
    new_prov: Option<&Provenance>,
    notes: &mut Vec<String>,
) -> Result<String, BumpError> {
    let written_image = match (new_prov, opts.pin_digest) {
        (Some(p), true) => match p.index_digest.as_deref().or(p.amd64_digest()) {
            Some(d) if new_ref.digest.is_none() => new_ref.pinned(d),
            _ => opts.image.clone(),
        },
        (None, true) => return Err(BumpError::PinWithoutDigest),
        _ => opts.image.clone(),
    };
    // An entry written in enroot form (`nvcr.io#nvidia/…`, imported as `docker://$IMAGE`)
    // keeps that form: `nvcr.io/nvidia/…` there would be looked up on Docker Hub.
    let written_image = match old_ref {
        Some(o)
            if o.form == reference::RefForm::Enroot
                && new_ref.form == reference::RefForm::Oci
                && new_ref.registry_explicit =>
        {
            let e = ImageRef::parse(&written_image)?.enroot_form();
            notes.push(format!(
                "the catalog entry writes its image in enroot form (`{}`): `{e}` written for `{written_image}` (enroot imports `docker://{written_image}` from Docker Hub)",
                o.original
            ));
            e
        }
        _ => written_image,
    };
    Ok(written_image)
}

/// What [`check_recipes`] checks the entry's recipes against.
struct RecipeCheck<'a> {
    entry: &'a servebench_catalog::schema::ConfigEntry,
    catalog: &'a servebench_catalog::Catalog,
    engine: &'a str,
    old_version: &'a EngineVersion,
    new_version: &'a EngineVersion,
    new_ref: &'a ImageRef,
    old_ref: Option<&'a ImageRef>,
}

/// The entry's single-node recipes checked against the engine's flag rules (edited where a
/// rule applies automatically and the recipe is not shared) and the engine's flag tables.
fn check_recipes(
    opts: &BumpOptions,
    c: RecipeCheck,
    notes: &mut Vec<String>,
) -> Result<Vec<RecipeReport>, BumpError> {
    let RecipeCheck {
        entry,
        catalog,
        engine,
        old_version,
        new_version,
        new_ref,
        old_ref,
    } = c;
    let rules_owned;
    let ruleset: &RuleSet = match &opts.rules {
        Some(p) => {
            rules_owned = RuleSet::from_toml(&read(p)?, &p.display().to_string())?;
            &rules_owned
        }
        None => RuleSet::builtin(),
    };
    let sku = recipe::sku_of_runner(&entry.runner);
    let mut recipes = Vec::new();
    if old_version.is_unknown() {
        if let Some(o) = old_ref {
            notes.push(format!(
                "the current tag `{}` carries no {} version ({}); every rule up to {} was checked",
                o.tag.as_deref().unwrap_or(o.reference()),
                engine_display(engine),
                old_version,
                new_version
            ));
        }
    }
    match &opts.recipes_dir {
        None => notes.push("no --recipes directory: recipe flags were not checked".into()),
        Some(dir) if entry.multinode => {
            let multi_dir = srt::multi_node_dir(dir);
            let check = srt::SrtCheck {
                key: &opts.key,
                image: &opts.image,
                multi_dir: &multi_dir,
            };
            recipes = srt::check_srt_recipes(entry, &check, notes)?;
        }
        Some(dir) => {
            let uses = recipe::recipe_uses(entry, dir);
            if uses.is_empty() {
                notes.push(format!(
                    "`{}` has no single-node scenario: no recipe to check",
                    opts.key
                ));
            }
            for u in uses {
                let Some(path) = u.path.clone() else {
                    notes.push(format!(
                        "recipe for {} ({}) not found in {}: looked for {}",
                        u.scenario,
                        u.spec,
                        dir.display(),
                        u.candidates.join(", ")
                    ));
                    continue;
                };
                let shared = recipe::other_users(&path, &opts.key, catalog, dir);
                let original = read(&path)?;
                let mut text = original.clone();
                let mut outcomes = Vec::new();
                for rule in ruleset.for_engine(engine) {
                    if !rule.hardware.is_empty() && !rule.hardware.contains(&sku) {
                        continue;
                    }
                    let cov_new = rule.covers(new_version);
                    if cov_new == Coverage::No {
                        continue;
                    }
                    let old_cov = rule.covers(old_version);
                    let can_edit =
                        rule.apply == Apply::Auto && cov_new == Coverage::Yes && shared.is_empty();
                    let (edits, oc) = rules::plan_rule(rule, &text, can_edit);
                    let Some(mut oc) = oc else { continue };
                    if can_edit {
                        text = shell::apply_edits(&text, &edits).map_err(|detail| {
                            BumpError::RecipeEdit {
                                path: path.clone(),
                                detail,
                            }
                        })?;
                        if old_cov == Coverage::Yes {
                            oc.message.push_str(" (already required by the old image)");
                        }
                    } else if rule.apply == Apply::Auto && !shared.is_empty() {
                        oc.status = "not-applied".into();
                        oc.message = format!(
                            "shared recipe (also used by {}): not edited; needed: {}",
                            shared.join(", "),
                            oc.message
                        );
                    } else if rule.apply == Apply::Auto {
                        if let Coverage::Unknown(why) = &cov_new {
                            oc.status = "not-applied".into();
                            oc.message = format!("cannot tell whether `{new_ref}` is in {} ({why}): not edited; would be: {}", rule.range_text(), oc.message);
                        }
                    }
                    outcomes.push(oc);
                }
                if !shared.is_empty() {
                    notes.push(format!(
                        "recipe {} is shared with {}: reported, not edited",
                        path.display(),
                        shared.join(", ")
                    ));
                }
                let flag_engine =
                    servebench_engines::engine_of_image(&opts.image).unwrap_or(engine);
                let flags = flags::check_recipe(flag_engine, &opts.image, &original, &text);
                let change = (text != original).then(|| FileChange::new(&path, original, text));
                recipes.push(RecipeReport {
                    path,
                    scenario: u.scenario,
                    shared_with: shared,
                    outcomes,
                    change,
                    flags,
                });
            }
        }
    }
    Ok(recipes)
}

/// The change-log entry (the catalog crate's format): the image update, each applied rule,
/// the new provenance; `None` without `--changelog`.
fn changelog_change(
    opts: &BumpOptions,
    engine: &str,
    old_image: &str,
    written_image: &str,
    recipes: &[RecipeReport],
    new_prov: Option<&Provenance>,
    scenario_type: Vec<servebench_catalog::matrix::ScenarioType>,
) -> Result<Option<FileChange>, BumpError> {
    let change = match &opts.changelog {
        None => None,
        Some(p) => {
            let old = if p.exists() { read(p)? } else { String::new() };
            let desc = changelog::entry_description(
                &engine_display(engine),
                old_image,
                written_image,
                recipes,
                new_prov,
            );
            // The catalog crate owns the change-log format and its append-only rules.
            let entry = servebench_catalog::changelog::NewEntry {
                config_keys: vec![opts.key.clone()],
                description: desc,
                pr_link: opts.pr_link.clone(),
                scenario_type,
                evals_only: false,
                all_evals: false,
            };
            let new = servebench_catalog::changelog::append_entry(old.as_bytes(), &entry).map_err(
                |err| BumpError::ChangelogAppend {
                    path: p.clone(),
                    err,
                },
            )?;
            let new = String::from_utf8(new)
                .map_err(|_| BumpError::ChangelogNotUtf8 { path: p.clone() })?;
            Some(FileChange::new(p, old, new))
        }
    };
    Ok(change)
}

/// Why the digests were not resolved, from a [`ChangeRecord::resolution`] of the form
/// `not resolved (<why>)` (e.g. `--no-resolve`); any other text is returned as is. Lets the
/// Change line say `digests not resolved: --no-resolve` without repeating "not resolved".
pub fn why_not_resolved(resolution: &str) -> &str {
    resolution
        .strip_prefix("not resolved (")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(resolution)
}

/// The `Change:` line (AUTOMATION.md §5.6): images, digests, label changes, recipe edits.
pub fn change_line(
    old_image: &str,
    new_image: &str,
    old: Option<&Provenance>,
    new: Option<&Provenance>,
    recipes: &[RecipeReport],
    resolution: &str,
) -> String {
    let mut s = format!("Change: `{old_image}` → `{new_image}`");
    match new {
        Some(n) => {
            let mut d = vec![];
            if let Some(i) = &n.index_digest {
                d.push(format!("index {i}"));
            }
            if let Some(a) = n.amd64_digest() {
                d.push(format!("linux/amd64 {a}"));
            } else if n.index_digest.is_none() {
                if let Some((p, dg)) = n.platform_digests.iter().next() {
                    d.push(format!("{p} {dg}"));
                }
            }
            if let Some(o) = old {
                let mut od = vec![];
                if let Some(i) = &o.index_digest {
                    od.push(format!("index {i}"));
                }
                if let Some(a) = o.amd64_digest() {
                    od.push(format!("linux/amd64 {a}"));
                }
                if !od.is_empty() {
                    d.push(format!("was {}", od.join(", ")));
                }
            }
            if !d.is_empty() {
                s.push_str(&format!(" ({})", d.join("; ")));
            }
            if let Some(c) = n
                .labels
                .get("ai.sglang.build.commit")
                .or(n.labels.get("org.opencontainers.image.revision"))
            {
                s.push_str(&format!(", build commit {c}"));
            }
            let labels: Vec<String> = provenance::label_changes(old, n)
                .into_iter()
                .filter(|l| {
                    !l.starts_with("ai.sglang.build.commit ")
                        && !l.starts_with("org.opencontainers.image.revision ")
                })
                .collect();
            if !labels.is_empty() {
                s.push_str(&format!("; {}", labels.join(", ")));
            }
            if let Some(c) = &n.created {
                s.push_str(&format!("; built {c}"));
            }
        }
        None => s.push_str(&format!(
            " (digests not resolved: {})",
            why_not_resolved(resolution)
        )),
    }
    s.push('.');
    for r in recipes {
        let applied: Vec<&str> = r
            .outcomes
            .iter()
            .filter(|o| o.status == "applied")
            .map(|o| o.summary.as_str())
            .collect();
        let name = r
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if !applied.is_empty() {
            s.push_str(&format!(" Recipe `{name}`: {}.", applied.join("; ")));
        } else if !r.shared_with.is_empty() {
            s.push_str(&format!(
                " Recipe `{name}` is shared ({}): not edited.",
                r.shared_with.join(", ")
            ));
        }
    }
    s
}

fn write_atomic(path: &Path, text: &str) -> Result<(), BumpError> {
    let io = |op: IoOp, p: &Path| {
        let path = p.to_path_buf();
        move |err: std::io::Error| BumpError::Io { op, path, err }
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(IoOp::WriteIn, dir))?;
    tmp.write_all(text.as_bytes())
        .map_err(io(IoOp::Write, path))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    } else {
        // a new file (provenance.json) is 0644 like the catalog and recipes beside it, not
        // the temp file's 0600
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(path)
        .map_err(|e| e.error)
        .map_err(io(IoOp::Replace, path))?;
    Ok(())
}

/// The provenance file name bump writes with `--provenance-out` (the store's
/// `image_provenance` table holds the same record by default): `{"schema_version": 1, "changes": [ChangeRecord, …]}`, appended.
pub const PROVENANCE_FILE: &str = "provenance.json";

#[derive(Serialize, Deserialize)]
struct ProvenanceFile {
    schema_version: u32,
    changes: Vec<ChangeRecord>,
}

/// Reads the change records of a provenance file (empty when the file does not exist).
pub fn load_change_records(path: &Path) -> Result<Vec<ChangeRecord>, BumpError> {
    if !path.exists() {
        return Ok(vec![]);
    }
    let f: ProvenanceFile =
        serde_json::from_str(&read(path)?).map_err(|err| BumpError::ProvenanceFile {
            path: path.to_path_buf(),
            err,
        })?;
    Ok(f.changes)
}

impl BumpPlan {
    /// Every diff, catalog first, then recipes, then the change log.
    pub fn diffs(&self) -> String {
        let mut s = String::new();
        for c in self
            .catalog
            .iter()
            .chain(self.record.recipes.iter().filter_map(|r| r.change.as_ref()))
            .chain(self.changelog.iter())
        {
            s.push_str(&c.diff);
        }
        s
    }

    /// Writes the catalog, recipes and change log (each atomically, permissions kept) and, when
    /// `provenance_out` is given, appends the record to that file (`provenance.json` shape).
    /// Without it no provenance file is written: a file beside the catalog would be left
    /// untracked in the InferenceX checkout (the record goes to the results store instead,
    /// `servebench bump` without `--no-store`). Returns the files written.
    pub fn write(&self, provenance_out: Option<&Path>) -> Result<Vec<PathBuf>, BumpError> {
        let mut written = Vec::new();
        if self.already_updated {
            return Ok(written);
        }
        for c in self
            .catalog
            .iter()
            .chain(self.record.recipes.iter().filter_map(|r| r.change.as_ref()))
            .chain(self.changelog.iter())
        {
            // Refuse to overwrite a file that changed since it was read.
            let now = if c.path.exists() {
                read(&c.path)?
            } else {
                String::new()
            };
            if now != c.old {
                return Err(BumpError::ChangedMeanwhile {
                    path: c.path.clone(),
                });
            }
            write_atomic(&c.path, &c.new)?;
            written.push(c.path.clone());
        }
        let Some(prov_path) = provenance_out else {
            return Ok(written);
        };
        let mut changes = load_change_records(prov_path)?;
        changes.push(self.record.clone());
        let text = serde_json::to_string_pretty(&ProvenanceFile {
            schema_version: 1,
            changes,
        })? + "\n";
        write_atomic(prov_path, &text)?;
        written.push(prov_path.to_path_buf());
        Ok(written)
    }
}
