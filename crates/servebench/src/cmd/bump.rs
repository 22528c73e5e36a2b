//! `servebench bump KEY --image REF`: move one master-config entry to a new engine image.
//!
//! Edits only the entry's `image:` value in place (shown as a unified diff), migrates the recipe
//! flags the version crossing requires in the config's own unshared recipe (flag-rules.toml,
//! AUTOMATION.md §6.1), resolves and records provenance (index + per-platform digests, labels),
//! prints the `Change:` line and appends the change-log entry (§3, append-only). The provenance
//! also goes into the results store (`image_provenance`, docs/store.md) unless `--no-store`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use servebench_bump::changelog::PR_LINK_PLACEHOLDER;
use servebench_bump::provenance::Provenance;
use servebench_bump::{plan, BumpOptions, ChangeRecord, RegistryOptions, Resolve};
use servebench_store::{ImageProvenance, Store};

/// Arguments of `servebench bump`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The master-config key to move.
    pub key: String,
    /// The new image reference (`repo:tag`, `repo:tag@sha256:…`, or enroot `registry#repo:tag`).
    #[arg(long, value_name = "REF")]
    pub image: String,
    /// Master-config files (default: configs/amd-master.yaml and configs/nvidia-master.yaml).
    #[arg(
        long = "catalog",
        visible_alias = "config-files",
        value_name = "FILE",
        num_args = 1..,
        value_delimiter = ','
    )]
    pub catalog: Vec<PathBuf>,
    /// Recipes directory (default: benchmarks/single_node when it exists). A directory given
    /// here must exist (error naming it otherwise).
    #[arg(long = "recipes", value_name = "DIR")]
    pub recipes: Option<PathBuf>,
    /// Change log to append to (default: perf-changelog.yaml in the current directory or next to
    /// the catalog file, when it exists; without one, the output says the entry was not written).
    #[arg(long = "changelog", value_name = "FILE")]
    pub changelog: Option<PathBuf>,
    /// Show the diffs and the Change line; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not contact the registry (offline): the bump proceeds and says digests were not resolved.
    #[arg(long = "no-resolve", conflicts_with = "provenance")]
    pub no_resolve: bool,
    /// Take digests and labels from this file instead of the registry (shape of
    /// shared/data/scenario/images.json).
    #[arg(long, value_name = "FILE")]
    pub provenance: Option<PathBuf>,
    /// Plain HTTP to a loopback registry (127.0.0.1, localhost).
    #[arg(long = "plain-http", alias = "insecure")]
    pub plain_http: bool,
    /// Write `repo:tag@sha256:<index digest>` instead of the bare tag.
    #[arg(long = "pin-digest")]
    pub pin_digest: bool,
    /// pr-link of the change-log entry.
    #[arg(long = "pr-link", default_value = PR_LINK_PLACEHOLDER)]
    pub pr_link: String,
    /// Flag-rules file replacing the embedded one (same format as crates/bump/flag-rules.toml).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Also append the provenance record to this file (`provenance.json` shape, what `run` and
    /// `attempt --provenance` read). Default: no file (one beside the catalog would be left
    /// untracked in the checkout); the record goes to the results store (`--db`).
    #[arg(long = "provenance-out", value_name = "FILE")]
    pub provenance_out: Option<PathBuf>,
    /// Registry request timeout in seconds.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    /// Print the change record (and diffs) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Results store: the old and new images' provenance (digests, labels, the change record)
    /// go into its `image_provenance` table, where later sweeps of the image find them.
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = servebench_store::DEFAULT_DB
    )]
    pub db: PathBuf,
    /// Do not record the provenance in the results store (then it is kept only with
    /// --provenance-out).
    #[arg(long)]
    pub no_store: bool,
}

/// The `image_provenance` rows of a bump: the new image (always; digests empty when not
/// resolved, `source` then says why) and the old one when it was resolved.
pub fn provenance_rows(record: &ChangeRecord) -> Vec<ImageProvenance> {
    let change = serde_json::to_value(record).unwrap_or(serde_json::Value::Null);
    let row = |image: &str, role: &str, p: Option<&Provenance>| ImageProvenance {
        image: image.to_string(),
        role: Some(role.to_string()),
        config_key: Some(record.config_key.clone()),
        index_digest: p.and_then(|p| p.index_digest.clone()),
        platform_digests: p.map(|p| p.platform_digests.clone()).unwrap_or_default(),
        labels: p.map(|p| p.labels.clone()).unwrap_or_default(),
        image_created: p.and_then(|p| p.created.clone()),
        source: p.map(|p| p.source.clone()).unwrap_or_else(|| {
            format!(
                "not resolved: {}",
                servebench_bump::why_not_resolved(&record.resolution)
            )
        }),
        change: change.clone(),
    };
    let mut out = vec![row(
        &record.new_image,
        "new",
        record.new_provenance.as_ref(),
    )];
    if let Some(p) = &record.old_provenance {
        out.push(row(&record.old_image, "old", Some(p)));
    }
    out
}

fn store_provenance(store: &mut Store, record: &ChangeRecord) -> anyhow::Result<Vec<i64>> {
    provenance_rows(record)
        .iter()
        .map(|r| store.record_image_provenance(r))
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

fn default_if_exists(p: &str) -> Option<PathBuf> {
    Path::new(p).exists().then(|| PathBuf::from(p))
}

/// The change-log file name looked for when `--changelog` is not given.
const CHANGELOG_FILE: &str = "perf-changelog.yaml";

/// The default change log: `perf-changelog.yaml` in the current directory (the InferenceX
/// repository root), else next to the first catalog file; `None` when neither exists.
fn default_changelog(catalogs: &[PathBuf]) -> Option<PathBuf> {
    default_if_exists(CHANGELOG_FILE).or_else(|| {
        let next = catalogs.first()?.parent()?.join(CHANGELOG_FILE);
        next.exists().then_some(next)
    })
}

/// The line said when no change-log entry is written because no change log was found.
pub const CHANGELOG_SKIPPED: &str = "Change log: not written (no perf-changelog.yaml here or next to the catalog; pass --changelog FILE)";

/// Runs `servebench bump`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let catalogs = if args.catalog.is_empty() {
        let d: Vec<PathBuf> = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"]
            .iter()
            .filter_map(|p| default_if_exists(p))
            .collect();
        if d.is_empty() {
            anyhow::bail!(
                "no --catalog given and configs/{{amd,nvidia}}-master.yaml not found here"
            );
        }
        d
    } else {
        args.catalog.clone()
    };
    if let Some(dir) = &args.recipes {
        if !dir.is_dir() {
            anyhow::bail!(
                "--recipes {}: {}",
                dir.display(),
                if dir.exists() {
                    "not a directory"
                } else {
                    "no such directory"
                }
            );
        }
    }
    let changelog = args
        .changelog
        .clone()
        .or_else(|| default_changelog(&catalogs));
    let resolve = if args.no_resolve {
        Resolve::Off
    } else if let Some(p) = &args.provenance {
        Resolve::File(p.clone())
    } else {
        Resolve::Registry(RegistryOptions {
            plain_http: args.plain_http,
            timeout: Duration::from_secs(args.timeout),
            ..Default::default()
        })
    };
    let opts = BumpOptions {
        key: args.key.clone(),
        image: args.image.clone(),
        catalogs,
        recipes_dir: args
            .recipes
            .clone()
            .or_else(|| default_if_exists("benchmarks/single_node")),
        changelog: changelog.clone(),
        resolve,
        pr_link: args.pr_link.clone(),
        pin_digest: args.pin_digest,
        rules: args.rules.clone(),
    };
    let p = plan(&opts)?;
    // The store is opened before anything is written: a bad --db stops the bump untouched.
    let mut store = if args.dry_run || args.no_store {
        None
    } else {
        Some(Store::open(&args.db)?)
    };
    let written = if args.dry_run {
        vec![]
    } else {
        p.write(args.provenance_out.as_deref())?
    };
    let stored: Option<Vec<i64>> = match store.as_mut() {
        None => None,
        Some(st) => Some(store_provenance(st, &p.record).with_context(|| {
            format!(
                "{}: files written ({}), but the provenance was not stored",
                args.db.display(),
                written
                    .iter()
                    .map(|w| w.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?),
    };
    if args.json {
        let v = serde_json::json!({
            "record": p.record,
            "already_updated": p.already_updated,
            "diff": p.diffs(),
            "notes": p.notes,
            "changelog": changelog.as_ref().map(|c| c.display().to_string()),
            "changelog_skipped": (changelog.is_none() && !p.already_updated)
                .then_some(CHANGELOG_SKIPPED),
            "dry_run": args.dry_run,
            "written": written,
            "store": stored.as_ref().map(|ids| serde_json::json!({
                "db": args.db.display().to_string(),
                "image_provenance_ids": ids,
            })),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    // the engine flags first: what the target release deleted or renamed
    for r in &p.record.recipes {
        let f = &r.flags;
        match (&f.table, &f.unchecked) {
            (_, Some(why)) => println!("Flags {}: not checked: {why}", r.path.display()),
            (Some(t), None) => println!(
                "Flags {}: {} engine flag(s) checked against {t}: {}",
                r.path.display(),
                f.checked,
                if f.findings.is_empty() {
                    "all accepted"
                } else {
                    "see below"
                }
            ),
            _ => {}
        }
        for x in &f.findings {
            println!(
                "Flag {}:{} [{}] {}{}",
                r.path.display(),
                x.line,
                x.status,
                x.message,
                match (x.still_in_recipe, x.status.as_str()) {
                    (true, "deprecated") => String::new(),
                    (true, _) => " — still in the bumped recipe: its launch will fail".into(),
                    (false, _) => " — replaced by this bump's recipe edit".into(),
                }
            );
        }
    }
    print!("{}", p.diffs());
    println!("{}", p.record.change_line);
    for r in &p.record.recipes {
        for o in &r.outcomes {
            let lines = o
                .lines
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(",");
            println!(
                "Recipe {}{}: [{}] {} ({})",
                r.path.display(),
                if lines.is_empty() {
                    String::new()
                } else {
                    format!(":{lines}")
                },
                o.status,
                o.message,
                o.evidence.first().map(String::as_str).unwrap_or("")
            );
        }
    }
    for n in &p.notes {
        println!("Note: {n}");
    }
    if changelog.is_none() && !p.already_updated {
        println!("{CHANGELOG_SKIPPED}");
    }
    if p.already_updated {
        println!("Nothing to do.");
    } else if args.dry_run {
        println!("Dry run: nothing written.");
    } else {
        println!(
            "Wrote: {}",
            written
                .iter()
                .map(|w| w.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(ids) = &stored {
        println!(
            "Stored: image provenance in {} (image_provenance {})",
            args.db.display(),
            ids.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else if args.provenance_out.is_none() && !args.dry_run && !p.already_updated {
        println!("Provenance: not kept (--no-store without --provenance-out FILE)");
    }
    Ok(ExitCode::SUCCESS)
}
