//! `servebench metrics process-result`: InferenceX's result processor (`utils/process_result.py`)
//! on a raw `bench_serving` result — the `agg_<RESULT_FILENAME>.json` row and the
//! `power_validation_<RESULT_FILENAME>.json` sidecar, byte-identical to the reference's files.
//!
//! The environment is the reference's (`RUNNER_TYPE`, `FRAMEWORK`, `TP`, `EP_SIZE`,
//! `IS_MULTINODE`, `PREFILL_GPUS`, …): taken from this process, or from `--env-file` (a JSON
//! object of strings, e.g. a golden `Rn-env.json`), in which case the process environment is
//! ignored. Single-node GPU power telemetry is integrated where the reference finds it
//! (`GPU_METRICS_CSV`, `gpu_metrics.csv`, `/workspace/gpu_metrics.csv`, relative to the current
//! directory); multinode power packages (`POWER_ARTIFACT_DIR` or `LOGS/power`) are not read, so
//! the command stops when one exists instead of writing `power_valid: 0`.
//!
//! `servebench metrics aggregate-power` and `agentx-power`: InferenceX
//! `utils/aggregate_power.py` and `utils/agentic/aggregation/power_adapter.py` with their flags
//! (the logic is `servebench_metrics::power`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use servebench_metrics::inferencex::{process_result, py_int_str, DEFAULT_POWER_ARTIFACT_DIR};
use servebench_metrics::power::{
    agentx_power, aggregate_power, AgentxOutcome, AgentxPowerArgs, AggregatePowerArgs,
};

/// `servebench metrics …`
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// InferenceX result processor: raw bench_serving JSON + its environment →
    /// agg_<RESULT_FILENAME>.json and the power-validation sidecar (byte-identical to
    /// utils/process_result.py).
    ProcessResult(ProcessResultArgs),
    /// InferenceX power step: gpu_metrics.csv (nvidia-smi/amd-smi monitor) integrated per GPU
    /// over the benchmark window → the agg row patched with avg_power_w, joules_per_* and
    /// power_valid, and the validation sidecar (byte-identical to utils/aggregate_power.py).
    AggregatePower(AggregatePowerCli),
    /// InferenceX AgentX power adapter: the AIPerf profiling window and successful records →
    /// agentic_power_window.json, then aggregate-power on <result-dir>/gpu_metrics.csv
    /// (utils/agentic/aggregation/power_adapter.py).
    AgentxPower(AgentxPowerCli),
}

/// `REQUIRE_POWER` as the tools read it: 1, true or yes (any case).
fn require_power_env() -> bool {
    std::env::var("REQUIRE_POWER")
        .is_ok_and(|v| ["1", "true", "yes"].contains(&v.to_lowercase().as_str()))
}

/// Python `int()` of a flag value (`08`, ` 8 `, `1_0` are accepted as argparse does).
fn py_int_arg(s: &str) -> Result<i64, String> {
    py_int_str(s)
}

/// Arguments of `servebench metrics aggregate-power` (utils/aggregate_power.py's flags).
#[derive(clap::Args, Debug)]
pub struct AggregatePowerCli {
    /// Path to gpu_metrics.csv from start_gpu_monitor.
    #[arg(long, value_name = "CSV", default_value = "/workspace/gpu_metrics.csv")]
    pub csv: PathBuf,
    /// The raw bench_serving result JSON (benchmark window and token counts).
    #[arg(long = "bench-result", value_name = "JSON")]
    pub bench_result: PathBuf,
    /// The agg_<run>.json row of process_result (patched in place).
    #[arg(long = "agg-result", value_name = "JSON")]
    pub agg_result: PathBuf,
    /// Expected single-node GPU count (TP × PP × PCP).
    #[arg(long = "expected-num-gpus", value_name = "N", value_parser = py_int_arg)]
    pub expected_num_gpus: i64,
    /// Path for the power validation sidecar [default: power_validation_<bench stem>.json next
    /// to the bench result].
    #[arg(long = "validation-result", value_name = "JSON")]
    pub validation_result: Option<PathBuf>,
    /// Exit 1 when the power telemetry is invalid (also REQUIRE_POWER=1/true/yes).
    #[arg(long = "require-power")]
    pub require_power: bool,
}

/// Arguments of `servebench metrics agentx-power` (power_adapter.py's flags).
#[derive(clap::Args, Debug)]
pub struct AgentxPowerCli {
    /// Result directory holding aiperf_artifacts/, gpu_metrics.csv and
    /// agentic_power_timezone_offset.txt.
    #[arg(long = "result-dir", value_name = "DIR")]
    pub result_dir: PathBuf,
    /// The AgentX agg row (patched in place).
    #[arg(long = "agg-result", value_name = "JSON")]
    pub agg_result: PathBuf,
    /// Expected single-node GPU count (TP × PP × PCP).
    #[arg(long = "expected-num-gpus", value_name = "N", value_parser = py_int_arg)]
    pub expected_num_gpus: Option<i64>,
    /// Exit 1 when the power telemetry is invalid (also REQUIRE_POWER=1/true/yes).
    #[arg(long = "require-power")]
    pub require_power: bool,
}

fn print_lines(stdout: &[String], stderr: &[String]) {
    for l in stdout {
        println!("{l}");
    }
    for l in stderr {
        eprintln!("{l}");
    }
}

fn run_aggregate_power(a: AggregatePowerCli) -> Result<ExitCode> {
    let out = aggregate_power(&AggregatePowerArgs {
        csv: a.csv,
        bench_result: a.bench_result,
        agg_result: a.agg_result,
        expected_num_gpus: Some(a.expected_num_gpus),
        validation_result: a.validation_result,
        require_power: a.require_power || require_power_env(),
        dir: None,
    })?;
    print_lines(&out.stdout, &out.stderr);
    Ok(ExitCode::from(out.exit_code))
}

fn run_agentx_power(a: AgentxPowerCli) -> Result<ExitCode> {
    let out = agentx_power(&AgentxPowerArgs {
        result_dir: a.result_dir,
        agg_result: a.agg_result,
        expected_num_gpus: a.expected_num_gpus,
        require_power: a.require_power || require_power_env(),
        dir: None,
    })?;
    match &out {
        AgentxOutcome::Ran(o) => print_lines(&o.stdout, &o.stderr),
        AgentxOutcome::Failed(f) => print_lines(&[], &f.stderr),
    }
    Ok(ExitCode::from(out.exit_code()))
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
        Command::AggregatePower(a) => run_aggregate_power(a),
        Command::AgentxPower(a) => run_agentx_power(a),
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
    refuse_present_power_packages(&env)?;

    let processed = process_result(&raw, &env, Some(Path::new(".")))?;
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
    // process_result.py exits with the power step's status: 1 when invalid under REQUIRE_POWER.
    let require = env
        .get("REQUIRE_POWER")
        .is_some_and(|v| ["1", "true", "yes"].contains(&v.to_lowercase().as_str()));
    if require && processed.power_validation["power_valid"] != Value::Bool(true) {
        eprintln!(
            "power validation failed: {} (REQUIRE_POWER)",
            processed.power_validation["reasons"]
        );
        return Ok(ExitCode::from(1));
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

/// Multinode srt-slurm power packages are not read, so a present one stops the command rather
/// than be reported `power_valid: 0`.
fn refuse_present_power_packages(env: &BTreeMap<String, String>) -> Result<()> {
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
    }
    Ok(())
}
