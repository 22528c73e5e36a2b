//! `servebench metrics process-result`: InferenceX's result processor (`utils/process_result.py`)
//! on a raw `bench_serving` result — the `agg_<RESULT_FILENAME>.json` row and the
//! `power_validation_<RESULT_FILENAME>.json` sidecar, byte-identical to the reference's files.
//!
//! The environment is the reference's (`RUNNER_TYPE`, `FRAMEWORK`, `TP`, `EP_SIZE`,
//! `IS_MULTINODE`, `PREFILL_GPUS`, …): taken from this process, or from `--env-file` (a JSON
//! object of strings, e.g. a golden `Rn-env.json`), in which case the process environment is
//! ignored. GPU power telemetry is not integrated: when the reference would find some
//! (`GPU_METRICS_CSV`, `gpu_metrics.csv`, `/workspace/gpu_metrics.csv`; multinode
//! `POWER_ARTIFACT_DIR` or `LOGS/power`) the command stops instead of writing `power_valid: 0`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use servebench_metrics::inferencex::{
    process_result, DEFAULT_GPU_METRICS_CSV, DEFAULT_POWER_ARTIFACT_DIR,
};

/// `servebench metrics …`
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// InferenceX result processor: raw bench_serving JSON + its environment →
    /// agg_<RESULT_FILENAME>.json and the power-validation sidecar (byte-identical to
    /// utils/process_result.py).
    ProcessResult(ProcessResultArgs),
}

/// Arguments of `servebench metrics process-result`.
#[derive(clap::Args, Debug)]
pub struct ProcessResultArgs {
    /// Raw bench_serving result JSON [default: <RESULT_FILENAME>.json in the current directory,
    /// where the reference reads it].
    #[arg(long, value_name = "RAW.json")]
    pub input: Option<PathBuf>,
    /// The reference's whole environment as a JSON object of strings (e.g. a golden
    /// Rn-env.json) [default: this process's environment].
    #[arg(long = "env-file", value_name = "ENV.json")]
    pub env_file: Option<PathBuf>,
    /// Write the agg row to this file (exact bytes, no trailing newline) and the sidecar next
    /// to it; without it the agg row goes to stdout followed by a newline, as the reference
    /// prints it.
    #[arg(short = 'o', long = "output", value_name = "agg.json")]
    pub output: Option<PathBuf>,
    /// Where to write the power-validation sidecar [default with -o:
    /// power_validation_<RESULT_FILENAME>.json in the directory of -o; without -o: not written].
    #[arg(long = "power-validation", value_name = "FILE")]
    pub power_validation: Option<PathBuf>,
}

/// Runs a `metrics` subcommand.
pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::ProcessResult(a) => run_process_result(a),
    }
}

fn run_process_result(a: ProcessResultArgs) -> Result<ExitCode> {
    let env = match &a.env_file {
        Some(path) => read_env_file(path)?,
        None => std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
    };
    let input = match (&a.input, env.get("RESULT_FILENAME")) {
        (Some(p), _) => p.clone(),
        (None, Some(name)) => PathBuf::from(format!("{name}.json")),
        (None, None) => bail!(
            "no --input and RESULT_FILENAME is not set (the reference reads <RESULT_FILENAME>.json)"
        ),
    };
    let text =
        std::fs::read_to_string(&input).with_context(|| format!("reading {}", input.display()))?;
    let raw: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{}: invalid JSON: {e}", input.display()))?;
    refuse_present_telemetry(&env)?;

    let processed = process_result(&raw, &env, None)?;
    match &a.output {
        None => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", processed.agg_json())?;
            out.flush()?;
        }
        Some(path) => {
            write_file(path, &processed.agg_json())?;
            eprintln!("wrote {}", path.display());
        }
    }
    let sidecar = match (&a.power_validation, &a.output) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(o)) => Some(
            o.parent()
                .unwrap_or(Path::new(""))
                .join(processed.power_validation_file_name()),
        ),
        (None, None) => None,
    };
    if let Some(path) = sidecar {
        write_file(&path, &processed.power_validation_json())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// A JSON object whose values are all strings.
fn read_env_file(path: &Path) -> Result<BTreeMap<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{}: invalid JSON: {e}", path.display()))?;
    let Value::Object(map) = value else {
        bail!(
            "{}: expected a JSON object of environment variables",
            path.display()
        );
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => bail!(
                "{}: \"{k}\": environment values must be strings, got {other}",
                path.display()
            ),
        })
        .collect()
}

/// The reference integrates telemetry when it finds some; servebench does not, so it stops
/// rather than write `power_valid: 0` for a run that had power data.
fn refuse_present_telemetry(env: &BTreeMap<String, String>) -> Result<()> {
    let multinode = env
        .get("IS_MULTINODE")
        .is_some_and(|v| v.to_lowercase() == "true");
    if multinode {
        let dir = env
            .get("POWER_ARTIFACT_DIR")
            .map_or(DEFAULT_POWER_ARTIFACT_DIR, String::as_str);
        if Path::new(dir).is_dir() {
            bail!(
                "{dir} exists: reading srt-slurm power packages (utils/aggregate_power_multinode.py) \
                 is not implemented, so the row would wrongly say power_valid 0; move it away or \
                 set POWER_ARTIFACT_DIR to a missing path"
            );
        }
    } else {
        let candidates = [
            env.get("GPU_METRICS_CSV").map(String::as_str),
            Some(DEFAULT_GPU_METRICS_CSV),
            Some("/workspace/gpu_metrics.csv"),
        ];
        for p in candidates.into_iter().flatten().filter(|p| !p.is_empty()) {
            if Path::new(p).is_file() {
                bail!(
                    "{p} exists: integrating GPU power telemetry (utils/aggregate_power.py) is not \
                     implemented, so the row would wrongly say power_valid 0; move it away to \
                     process the result without power"
                );
            }
        }
    }
    Ok(())
}
