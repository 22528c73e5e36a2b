//! `servebench bump KEY --image REF`: move one master-config entry to a new engine image.
//!
//! Edits only the entry's `image:` value in place (shown as a unified diff), migrates the recipe
//! flags the version crossing requires in the config's own unshared recipe (flag-rules.toml,
//! AUTOMATION.md §6.1), resolves and records provenance (index + per-platform digests, labels),
//! prints the `Change:` line and appends the change-log entry (§3, append-only).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use servebench_bump::changelog::PR_LINK_PLACEHOLDER;
use servebench_bump::{plan, BumpOptions, RegistryOptions, Resolve};

/// Arguments of `servebench bump`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The master-config key to move.
    pub key: String,
    /// The new image reference (`repo:tag`, `repo:tag@sha256:…`, or enroot `registry#repo:tag`).
    #[arg(long, value_name = "REF")]
    pub image: String,
    /// Master-config files (default: configs/amd-master.yaml and configs/nvidia-master.yaml).
    #[arg(long = "catalog", value_name = "FILE", num_args = 1.., value_delimiter = ',')]
    pub catalog: Vec<PathBuf>,
    /// Recipes directory (default: benchmarks/single_node when it exists).
    #[arg(long = "recipes", value_name = "DIR")]
    pub recipes: Option<PathBuf>,
    /// Change log to append to (default: perf-changelog.yaml when it exists).
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
    /// Where to append the provenance record (default: provenance.json next to the catalog file).
    #[arg(long = "provenance-out", value_name = "FILE")]
    pub provenance_out: Option<PathBuf>,
    /// Registry request timeout in seconds.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    /// Print the change record (and diffs) as JSON.
    #[arg(long)]
    pub json: bool,
}

fn default_if_exists(p: &str) -> Option<PathBuf> {
    Path::new(p).exists().then(|| PathBuf::from(p))
}

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
        changelog: args
            .changelog
            .clone()
            .or_else(|| default_if_exists("perf-changelog.yaml")),
        resolve,
        pr_link: args.pr_link.clone(),
        pin_digest: args.pin_digest,
        rules: args.rules.clone(),
    };
    let p = plan(&opts)?;
    let written = if args.dry_run {
        vec![]
    } else {
        p.write(args.provenance_out.as_deref())?
    };
    if args.json {
        let v = serde_json::json!({
            "record": p.record,
            "already_updated": p.already_updated,
            "diff": p.diffs(),
            "notes": p.notes,
            "dry_run": args.dry_run,
            "written": written,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
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
    Ok(ExitCode::SUCCESS)
}
