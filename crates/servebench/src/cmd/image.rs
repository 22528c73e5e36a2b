//! `servebench image inspect REF`: resolve a tag through the OCI distribution API (index digest,
//! per-platform digests, config labels, creation time), with anonymous bearer-token auth.

use std::process::ExitCode;
use std::time::Duration;

use servebench_bump::registry::{inspect_blocking, RegistryOptions};
use servebench_bump::ImageRef;

/// Subcommands of `servebench image`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Resolve an image reference: index digest, per-platform digests, labels, created time,
    /// the digest-pinned reference and the enroot import URI.
    ///
    /// Accepts `[registry[:port]/]repo[:tag][@sha256:…]` (Docker Hub by default) and the enroot
    /// form `[docker://]registry#repo[:tag]`.
    Inspect(InspectArgs),
}

/// Arguments of `servebench image inspect`.
#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// The image reference.
    pub reference: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Talk plain HTTP (only for loopback registries: 127.0.0.1, localhost, ::1).
    #[arg(long = "plain-http", alias = "insecure")]
    pub plain_http: bool,
    /// Platform whose manifest and config labels are read.
    #[arg(long, default_value = "linux/amd64")]
    pub platform: String,
    /// Request timeout in seconds.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

/// Runs `servebench image`.
pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Inspect(a) => inspect(a),
    }
}

fn inspect(a: InspectArgs) -> anyhow::Result<ExitCode> {
    let r = ImageRef::parse(&a.reference)?;
    let opts = RegistryOptions {
        plain_http: a.plain_http,
        platform: a.platform,
        timeout: Duration::from_secs(a.timeout),
        ..Default::default()
    };
    let info = inspect_blocking(&r, &opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Image:     {} ({} via {})",
        info.reference, info.canonical, info.registry_url
    );
    if info.is_index {
        println!(
            "Index:     {} ({}, {} platform{}{})",
            info.digest,
            info.media_type,
            info.platforms.len(),
            if info.platforms.len() == 1 { "" } else { "s" },
            if info.attestations > 0 {
                format!(", {} attestation manifests", info.attestations)
            } else {
                String::new()
            }
        );
    } else {
        println!(
            "Manifest:  {} ({}, single platform)",
            info.digest, info.media_type
        );
    }
    for p in &info.platforms {
        println!("  {:<16} {}", p.platform, p.digest);
    }
    println!("Config:    {} ({})", info.config_digest, info.platform);
    println!(
        "Created:   {}",
        info.created.as_deref().unwrap_or("(not set)")
    );
    if info.labels.is_empty() {
        println!("Labels:    (none)");
    } else {
        println!("Labels:");
        for (k, v) in &info.labels {
            println!("  {k} = {v}");
        }
    }
    println!("Pinned:    {}", info.pinned);
    println!("Enroot:    {}", info.enroot_uri);
    Ok(ExitCode::SUCCESS)
}
