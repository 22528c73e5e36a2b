//! `servebench catalog validate|show`: check the InferenceX master configs, show one entry.

use std::process::ExitCode;

use serde_json::{json, Map, Value};
use servebench_catalog::matrix::agentic_dram_offload_gb;
use servebench_catalog::schema::{ConfigEntry, SearchEntry, Topology};
use servebench_catalog::{Catalog, CatalogError, Runners};

const DEFAULT_FILES: [&str; 2] = ["configs/nvidia-master.yaml", "configs/amd-master.yaml"];
const DEFAULT_RUNNERS: &str = "configs/runners.yaml";

/// Subcommands of `servebench catalog`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Validate master configs (rules V1–V16 of AUTOMATION.md §2.1) and the runner config.
    ///
    /// Every problem is printed on its own line as FILE:LINE:COL: KEY: FIELD: MESSAGE; the exit
    /// status is 1 when there is any. Runner labels missing from runners.yaml are warnings
    /// (InferenceX does not enforce them either).
    Validate {
        /// Master config files (default: configs/nvidia-master.yaml configs/amd-master.yaml).
        files: Vec<String>,
        /// Master config files as a flag, like `catalog show` and `bump` (added after the
        /// positional ones).
        #[arg(long = "config-files", visible_alias = "catalog", num_args = 1.., value_name = "FILE")]
        config_files: Vec<String>,
        /// Runner config to validate and check labels against (default configs/runners.yaml when present).
        #[arg(long = "runner-config", value_name = "FILE")]
        runner_config: Option<String>,
    },
    /// Print one entry resolved: defaults applied, concurrencies expanded, runner facts attached.
    Show {
        /// The config key.
        key: String,
        /// Master config files (default: configs/nvidia-master.yaml configs/amd-master.yaml).
        #[arg(long = "config-files", visible_alias = "catalog", num_args = 1.., value_name = "FILE")]
        config_files: Option<Vec<String>>,
        /// Runner config (default: runners.yaml beside the first config file, as `run` finds
        /// it, else configs/runners.yaml).
        #[arg(long = "runner-config", visible_alias = "runners", value_name = "FILE")]
        runner_config: Option<String>,
    },
}

/// The runner config of a catalog: `runners.yaml` beside `catalog` when it exists (the
/// scenario's layout, as `servebench run` finds it), else [`DEFAULT_RUNNERS`].
fn runners_beside(catalog: &str) -> String {
    let beside = std::path::Path::new(catalog).with_file_name("runners.yaml");
    if beside.is_file() {
        beside.display().to_string()
    } else {
        DEFAULT_RUNNERS.to_string()
    }
}

fn default_files(files: Option<Vec<String>>) -> Vec<String> {
    match files {
        Some(f) if !f.is_empty() => f,
        _ => DEFAULT_FILES.iter().map(|s| s.to_string()).collect(),
    }
}

fn print_invalid(e: CatalogError) -> anyhow::Result<ExitCode> {
    match e {
        CatalogError::Invalid(diags) => {
            for d in &diags {
                eprintln!("error: {d}");
            }
            eprintln!(
                "{} problem{} found",
                diags.len(),
                if diags.len() == 1 { "" } else { "s" }
            );
            Ok(ExitCode::from(1))
        }
        other => Err(other.into()),
    }
}

/// Runs `servebench catalog`.
pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Validate {
            mut files,
            config_files,
            runner_config,
        } => {
            files.extend(config_files);
            validate(default_files(Some(files)), runner_config)
        }
        Command::Show {
            key,
            config_files,
            runner_config,
        } => {
            let files = default_files(config_files);
            let runners = runner_config.unwrap_or_else(|| runners_beside(&files[0]));
            show(&key, files, &runners)
        }
    }
}

fn validate(files: Vec<String>, runner_config: Option<String>) -> anyhow::Result<ExitCode> {
    let catalog = match Catalog::load(&files) {
        Ok(c) => c,
        Err(e) => return print_invalid(e),
    };
    let runner_file = runner_config.or_else(|| {
        std::path::Path::new(DEFAULT_RUNNERS)
            .exists()
            .then(|| DEFAULT_RUNNERS.to_string())
    });
    let mut runner_note = String::new();
    if let Some(rf) = runner_file {
        let runners = match Runners::load(&rf) {
            Ok(r) => r,
            Err(e) => return print_invalid(e),
        };
        for e in catalog.entries.values() {
            if !runners.labels.contains_key(&e.runner) {
                eprintln!(
                    "warning: {}:{}:{}: {}: runner: label '{}' is not defined in {} labels (not enforced by InferenceX)",
                    e.file, e.mark.line, e.mark.col, e.key, e.runner, rf
                );
            }
        }
        runner_note = format!(
            "; {rf}: {} labels, {} hardware entries",
            runners.labels.len(),
            runners.hardware.len()
        );
    }
    let per_file: Vec<String> = catalog
        .files
        .iter()
        .map(|f| {
            format!(
                "{f}: {}",
                catalog.entries.values().filter(|e| &e.file == f).count()
            )
        })
        .collect();
    println!(
        "ok: {} configs ({}){runner_note}",
        catalog.entries.len(),
        per_file.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

fn search_json(
    s: &SearchEntry,
    runner: &str,
    dram_utilization: Option<f64>,
    agentic: bool,
    runners: &Runners,
) -> Value {
    let mut m = Map::new();
    match &s.topology {
        Topology::Single {
            tp,
            pp,
            dcp_size,
            pcp_size,
            ep,
            dp_attn,
        } => {
            m.insert("tp".into(), json!(tp));
            m.insert("pp".into(), json!(pp));
            m.insert("dcp-size".into(), json!(dcp_size));
            m.insert("pcp-size".into(), json!(pcp_size));
            m.insert("ep".into(), json!(ep.unwrap_or(1)));
            m.insert("dp-attn".into(), json!(dp_attn.unwrap_or(false)));
            m.insert("gpus".into(), json!(tp * pp * pcp_size));
        }
        Topology::Disagg { prefill, decode } => {
            m.insert("prefill".into(), Value::Object(prefill.matrix_json()));
            m.insert("decode".into(), Value::Object(decode.matrix_json()));
            m.insert(
                "gpus".into(),
                json!(
                    prefill.num_worker * prefill.gpus_per_replica()
                        + decode.num_worker * decode.gpus_per_replica()
                ),
            );
        }
    }
    m.insert("spec-decoding".into(), json!(s.spec_decoding.as_str()));
    m.insert("conc".into(), json!(s.conc.expand(2)));
    if let Some(r) = &s.router {
        m.insert("router".into(), r.clone());
    }
    if let Some(t) = &s.kv_p2p_transfer {
        m.insert("kv-p2p-transfer".into(), json!(t));
    }
    if agentic {
        m.insert(
            "kv-offloading".into(),
            json!(s.kv_offloading.map(|k| k.as_str()).unwrap_or("none")),
        );
        if let Some(b) = &s.kv_offload_backend {
            m.insert("kv-offload-backend".into(), b.clone());
        }
        match agentic_dram_offload_gb(dram_utilization, s, runner, runners) {
            Ok(gb) => m.insert("total-cpu-dram-gb".into(), json!(gb)),
            Err(e) => m.insert("total-cpu-dram-gb-error".into(), json!(e.to_string())),
        };
    }
    Value::Object(m)
}

fn resolved(e: &ConfigEntry, runners: &Runners) -> Value {
    let hw = runners.hardware.get(&e.runner).map(|h| {
        json!({"available-cpu-dram-mib": h.available_cpu_dram_mib.0, "gpus-per-node": h.gpus_per_node.0})
    });
    let fixed: Vec<Value> = e
        .fixed
        .iter()
        .map(|b| {
            json!({
                "isl": b.isl, "osl": b.osl, "max-model-len": b.isl + b.osl + 256,
                "search-space": b.search_space.iter().map(|s| search_json(s, &e.runner, None, false, runners)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let agentic: Vec<Value> = e
        .agentic
        .iter()
        .map(|b| {
            json!({
                "dram-utilization": b.dram_utilization,
                "duration": servebench_catalog::matrix::DEFAULT_AGENTIC_DURATION_SECONDS,
                "search-space": b.search_space.iter().map(|s| search_json(s, &e.runner, b.dram_utilization, true, runners)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "key": e.key,
        "source": format!("{}:{}:{}", e.file, e.mark.line, e.mark.col),
        "image": e.image, "model": e.model, "model-prefix": e.model_prefix,
        "precision": e.precision, "framework": e.framework,
        "runner": {"label": e.runner, "nodes": runners.nodes(&e.runner), "hardware": hw},
        "multinode": e.multinode, "disagg": e.disagg,
        "router": e.router, "kv-p2p-transfer": e.kv_p2p_transfer,
        "scenarios": {"fixed-seq-len": fixed, "agentic-coding": agentic},
    })
}

fn show(key: &str, files: Vec<String>, runner_config: &str) -> anyhow::Result<ExitCode> {
    let catalog = match Catalog::load(&files) {
        Ok(c) => c,
        Err(e) => return print_invalid(e),
    };
    let runners = Runners::load(runner_config)?;
    let Some(e) = catalog.get(key) else {
        anyhow::bail!("config key '{key}' not found in {}", files.join(", "));
    };
    crate::write_stdout(&format!(
        "{}\n",
        serde_json::to_string_pretty(&resolved(e, &runners))?
    ))?;
    Ok(ExitCode::SUCCESS)
}
