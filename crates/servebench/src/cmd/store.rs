//! `servebench store migrate --from STORE --to STORE`: every run, point, eval, provenance fact
//! and image provenance row of one results store copied into another (SQLite ↔ PostgreSQL),
//! with the counts and a checksum of each side printed (docs/store-postgres.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use servebench_store::{redact_url, Store};

/// Subcommands of `servebench store`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Copy a whole store into another (best an empty one): `--from sqlite:servebench.db --to
    /// postgres://user@host/db`. Prints what was copied and the SHA-256 of both sides; exits 1
    /// when they differ.
    Migrate(MigrateArgs),
}

/// Arguments of `servebench store migrate`.
#[derive(clap::Args, Debug)]
pub struct MigrateArgs {
    /// The store to read: `sqlite:PATH`, a file path, or `postgres://…`.
    #[arg(long, value_name = "STORE")]
    pub from: PathBuf,
    /// The store to write (created if missing): `sqlite:PATH`, a path, or `postgres://…`.
    #[arg(long, value_name = "STORE")]
    pub to: PathBuf,
}

/// Runs `servebench store`.
pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Migrate(a) => migrate(a),
    }
}

fn migrate(a: MigrateArgs) -> Result<ExitCode> {
    let name = |p: &PathBuf| redact_url(&p.display().to_string());
    let src = a.from.display().to_string();
    let src_path = src.strip_prefix("sqlite:").unwrap_or(&src);
    if !servebench_store::is_postgres_url(&a.from) && !std::path::Path::new(src_path).exists() {
        anyhow::bail!("--from {src_path}: no results store here");
    }
    let from = Store::open(&a.from).with_context(|| format!("--from {}", name(&a.from)))?;
    let mut to = Store::open(&a.to).with_context(|| format!("--to {}", name(&a.to)))?;
    let r = servebench_store::migrate::migrate(&from, &mut to)
        .with_context(|| format!("migrating {} → {}", name(&a.from), name(&a.to)))?;
    println!(
        "copied {} runs, {} points, {} evals, {} provenance facts, {} image provenance rows",
        r.runs, r.points, r.evals, r.provenance, r.images
    );
    println!("sha256 {}  {}", r.source_sha256, name(&a.from));
    println!("sha256 {}  {}", r.target_sha256, name(&a.to));
    if r.source_sha256 != r.target_sha256 {
        eprintln!("error: the checksums differ: the target does not hold what the source holds");
        return Ok(ExitCode::from(1));
    }
    println!("checksums equal");
    Ok(ExitCode::SUCCESS)
}
