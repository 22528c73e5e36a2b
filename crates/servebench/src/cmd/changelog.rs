//! `servebench changelog validate|process|append`: the append-only `perf-changelog.yaml`.
//!
//! Two versions of the file are given either as files (`--base FILE --head FILE`) or as git refs
//! (`--base-ref R --head-ref R [--changelog-file perf-changelog.yaml]`, read with `git show`).

use std::process::ExitCode;

use std::path::Path;

use servebench_catalog::changelog::{
    added_text_files, added_text_git, append_entry, process_added, validate, NewEntry,
    ProcessOptions,
};
use servebench_catalog::matrix::ScenarioType;
use servebench_catalog::{Catalog, Runners};

const DEFAULT_MASTERS: [&str; 2] = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"];

/// Where the two versions come from.
#[derive(clap::Args, Debug, Clone)]
pub struct Versions {
    /// Base version of the change log (file).
    #[arg(
        long,
        value_name = "FILE",
        requires = "head",
        conflicts_with = "base_ref"
    )]
    pub base: Option<String>,
    /// Head version of the change log (file).
    #[arg(long, value_name = "FILE", requires = "base")]
    pub head: Option<String>,
    /// Base git ref (with --head-ref; the file is read with `git show REF:FILE`).
    #[arg(long = "base-ref", value_name = "REF", requires = "head_ref")]
    pub base_ref: Option<String>,
    /// Head git ref.
    #[arg(long = "head-ref", value_name = "REF", requires = "base_ref")]
    pub head_ref: Option<String>,
    /// The change-log path (git-ref mode, and the name used in messages).
    #[arg(long = "changelog-file", default_value = "perf-changelog.yaml")]
    pub changelog_file: String,
    /// Master configs the entries resolve against (order: amd, nvidia, like InferenceX).
    #[arg(long = "config-files", num_args = 1.., value_name = "FILE")]
    pub config_files: Option<Vec<String>>,
    /// Runner config.
    #[arg(
        long = "runner-config",
        default_value = "configs/runners.yaml",
        value_name = "FILE"
    )]
    pub runner_config: String,
    /// Master configs at the base revision (file mode; needed by append-only entries). In
    /// git-ref mode they are read with `git show BASE_REF:FILE` for each --config-files path.
    #[arg(long = "base-config-files", num_args = 1.., value_name = "FILE")]
    pub base_config_files: Option<Vec<String>>,
}

/// Subcommands of `servebench changelog`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Check a change of the change log as InferenceX's gate does (validate_perf_changelog.py:
    /// final newline, the processor makes a matrix); with --strict also that head only appends
    /// entries to base (or only fixes pr-links), byte for byte (AUTOMATION.md §3.2, F-1…F-4).
    Validate {
        /// The two versions.
        #[command(flatten)]
        versions: Versions,
        /// Also the stricter rules the gate does not run: `git diff --check`, no CR/tab/NUL,
        /// history immutable except canonical pr-link corrections, canonical links on new
        /// entries (or this PR's / XXX with --pr-number), appended at the end with one blank line.
        #[arg(long)]
        strict: bool,
        /// With --strict, inside this PR: its link or an XXX placeholder is accepted for new
        /// entries.
        #[arg(long = "pr-number")]
        pr_number: Option<u64>,
        /// Expand evals for every entry (PR label all-evals).
        #[arg(long = "all-evals")]
        all_evals: bool,
        /// Suppress throughput for every entry (PR label evals-only).
        #[arg(long = "evals-only")]
        evals_only: bool,
    },
    /// Print the sweep matrix of the change (InferenceX process_changelog.py output).
    Process {
        /// The two versions.
        #[command(flatten)]
        versions: Versions,
        /// Keep only the lowest concurrency per deployment.
        #[arg(long = "trim-conc")]
        trim_conc: bool,
        /// Expand evals for every entry.
        #[arg(long = "all-evals")]
        all_evals: bool,
        /// Suppress throughput for every entry.
        #[arg(long = "evals-only")]
        evals_only: bool,
    },
    /// Append one entry at the end of the change log without touching any historical byte.
    Append {
        /// Config key (repeat for several; `*` globs allowed).
        #[arg(long = "key", required = true, value_name = "KEY")]
        keys: Vec<String>,
        /// Description line (repeat for several).
        #[arg(long = "description", required = true, value_name = "TEXT")]
        descriptions: Vec<String>,
        /// PR link (`https://github.com/SemiAnalysisAI/InferenceX/pull/N` or `…/pull/XXX`); checked
        /// like `validate` before anything is written (an XXX placeholder then validates with
        /// `--pr-number N`).
        #[arg(long = "pr-link", required = true, value_name = "URL")]
        pr_link: String,
        /// Restrict to scenario type(s).
        #[arg(long = "scenario-type", value_parser = ["fixed-seq-len", "agentic-coding"])]
        scenario_type: Vec<String>,
        /// Mark the entry evals-only.
        #[arg(long = "evals-only")]
        evals_only: bool,
        /// Mark the entry all-evals.
        #[arg(long = "all-evals")]
        all_evals: bool,
        /// The change-log file to append to.
        #[arg(long, default_value = "perf-changelog.yaml", value_name = "FILE")]
        file: String,
    },
}

fn git_show(r: &str, path: &str) -> anyhow::Result<Vec<u8>> {
    let out = std::process::Command::new("git")
        .args(["show", &format!("{r}:{path}")])
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "could not read {path} at {r}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// (base bytes, head bytes, base label, head label, base name, head name).
type Loaded = (Vec<u8>, Vec<u8>, String, String, String, String);

fn load(v: &Versions) -> anyhow::Result<Loaded> {
    if let (Some(b), Some(h)) = (&v.base, &v.head) {
        let rb = std::fs::read(b).map_err(|e| anyhow::anyhow!("{b}: {e}"))?;
        let rh = std::fs::read(h).map_err(|e| anyhow::anyhow!("{h}: {e}"))?;
        return Ok((rb, rh, b.clone(), h.clone(), b.clone(), h.clone()));
    }
    if let (Some(b), Some(h)) = (&v.base_ref, &v.head_ref) {
        let f = &v.changelog_file;
        return Ok((
            git_show(b, f)?,
            git_show(h, f)?,
            format!("{f} at {b}"),
            format!("{f} at {h}"),
            b.clone(),
            h.clone(),
        ));
    }
    anyhow::bail!("give either --base FILE --head FILE or --base-ref REF --head-ref REF")
}

fn masters(v: &Versions) -> anyhow::Result<(Catalog, Runners, Option<Catalog>)> {
    let files: Vec<String> = match &v.config_files {
        Some(f) if !f.is_empty() => f.clone(),
        _ => DEFAULT_MASTERS.iter().map(|s| s.to_string()).collect(),
    };
    let base = match (&v.base_config_files, &v.base_ref) {
        (Some(b), _) => Some(Catalog::load(b)?),
        (None, Some(r)) => {
            // The base revision's configs, when they are readable there (append-only entries).
            let mut sources = Vec::new();
            for f in &files {
                match git_show(r, f) {
                    Ok(bytes) => {
                        sources.push((f.clone(), String::from_utf8_lossy(&bytes).to_string()))
                    }
                    Err(_) => {
                        sources.clear();
                        break;
                    }
                }
            }
            if sources.is_empty() {
                None
            } else {
                Some(Catalog::from_sources(&sources)?)
            }
        }
        _ => None,
    };
    Ok((
        Catalog::load(&files)?,
        Runners::load(&v.runner_config)?,
        base,
    ))
}

/// Runs `servebench changelog`.
pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Validate {
            versions,
            strict,
            pr_number,
            all_evals,
            evals_only,
        } => {
            let (base, head, bl, hl, _, _) = load(&versions)?;
            let (catalog, runners, base_catalog) = masters(&versions)?;
            let opts = ProcessOptions {
                trim_conc: false,
                all_evals,
                evals_only,
            };
            let path = versions
                .head
                .clone()
                .unwrap_or(versions.changelog_file.clone());
            match validate(
                &base,
                &head,
                &path,
                &bl,
                &hl,
                pr_number,
                strict,
                &opts,
                &catalog,
                &runners,
                base_catalog.as_ref(),
            ) {
                Ok(v) => {
                    println!("{}", v.summary(&path));
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("ERROR: {e}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Process {
            versions,
            trim_conc,
            all_evals,
            evals_only,
        } => {
            let (catalog, runners, base_catalog) = masters(&versions)?;
            let opts = ProcessOptions {
                trim_conc,
                all_evals,
                evals_only,
            };
            // git's own diff, as process_changelog.py runs it (`git diff BASE HEAD -- FILE` in the
            // checkout; two files: `git diff --no-index`).
            let (added, bn, hn) = match (&versions.base, &versions.head) {
                (Some(b), Some(h)) => (
                    added_text_files(Path::new(b), Path::new(h), &versions.changelog_file)?,
                    b.clone(),
                    h.clone(),
                ),
                _ => {
                    let (Some(b), Some(h)) = (&versions.base_ref, &versions.head_ref) else {
                        anyhow::bail!(
                            "give either --base FILE --head FILE or --base-ref REF --head-ref REF"
                        );
                    };
                    (
                        added_text_git(Path::new("."), b, h, &versions.changelog_file)?,
                        b.clone(),
                        h.clone(),
                    )
                }
            };
            let m = process_added(
                &added,
                &bn,
                &hn,
                &opts,
                &catalog,
                &runners,
                base_catalog.as_ref(),
            )?;
            crate::write_stdout(&m.to_json_text()?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Append {
            keys,
            descriptions,
            pr_link,
            scenario_type,
            evals_only,
            all_evals,
            file,
        } => {
            let base = std::fs::read(&file).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
            let entry = NewEntry {
                config_keys: keys,
                description: descriptions,
                pr_link,
                scenario_type: scenario_type
                    .iter()
                    .filter_map(|s| ScenarioType::parse(s))
                    .collect(),
                evals_only,
                all_evals,
            };
            let out = append_entry(&base, &entry)?;
            // Write next to the file, then rename: the change log is never half-written.
            let tmp = format!("{file}.servebench-tmp");
            std::fs::write(&tmp, &out).map_err(|e| anyhow::anyhow!("{tmp}: {e}"))?;
            std::fs::rename(&tmp, &file).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
            println!(
                "appended 1 entry to {file} ({} bytes kept, {} added)",
                base.len(),
                out.len() - base.len()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
