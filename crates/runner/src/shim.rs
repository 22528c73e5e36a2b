//! Real InferenceX recipes under `--simulate`: the host tools and engines a recipe calls are
//! replaced, for that job only, by shims on `PATH` (a per-attempt `shims/` folder of small
//! scripts that run `servebench engine-shim TOOL ARGS…`). Everything else in the recipe — its
//! `benchmark_lib.sh`, env checks, `set -euo pipefail`, result naming — runs for real.
//!
//! What each shim does ([`shimmed`], docs/run.md §Real recipes under `--simulate`):
//! * `hf download`, `huggingface-cli download`: make the model (or dataset) directory, print it,
//!   succeed. Other `hf` subcommands fail with one line.
//! * an engine launch (`servebench_engines::Engine::from_launch`: `python3 -m
//!   sglang.launch_server`, `sglang serve`, `vllm serve`, `python3 -m
//!   vllm.entrypoints.openai.api_server`, `trtllm-serve`, `python3 -m
//!   atom.entrypoints.openai_server`, …): check argv against the
//!   image's flag table (`servebench-engines`; a refused argv fails like the engine's
//!   argparse, exit 2) and serve the embedded simulator with the recipe's host, port, model,
//!   served model name, TP, context length and max running requests ([`EngineLaunch`], its
//!   [`LaunchArgs`] the engine profile's).
//! * `mpirun [OPTIONS] CMD ARGS…` (how every InferenceX TensorRT-LLM recipe starts
//!   `trtllm-serve`): the options are dropped and `CMD ARGS…` runs once, through the shims.
//! * `nvidia-smi` (NVIDIA runners), `rocm-smi` and `amd-smi` (AMD runners): the runner's GPUs
//!   (count, the real SKU's name and memory, idle), [`crate::smi`].
//! * the recipe's client steps — `benchmark_serving.py` (`run_benchmark_serving`), AIPerf
//!   `aiperf profile` (the AgentX harness), `lm_eval` — wait for servebench's own measurement
//!   of the point (the job measures the engine the recipe started) and return its outcome,
//!   leaving the result files where the recipe expects them.
//! * `uv venv` / `uv pip install` (AgentX client set-up): a venv whose `bin/` holds these shims;
//!   `pip install …` / `pip3 install …` / `python3 -m pip …`: skipped (nothing is installed on the
//!   host); other `pip` subcommands run the real tool.
//! * the AgentX post-processing modules run by the venv's python
//!   (`utils.agentic.aggregation.process_agentic_result`: servebench's AgentX aggregate written
//!   as `$AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json`; `power_adapter`: run for real as
//!   `servebench metrics agentx-power` with the same flags; `validate_agentic_result`, the plot
//!   scripts: said and skipped).
//! * any other `python3`/`python` invocation runs the real interpreter.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunnerError};
use servebench_engines::{Engine, LaunchArgs};

/// Host tools shimmed on the recipe's `PATH` besides the engines' launch programs; the GPU
/// tools are added per vendor ([`crate::smi::Vendor::tools`]).
const TOOLS: &[&str] = &[
    "hf",
    "huggingface-cli",
    "python3",
    "python",
    "mpirun",
    "aiperf",
    "uv",
    "lm_eval",
    "lm-eval",
    "pip",
    "pip3",
];

/// Commands shimmed on the recipe's `PATH`: the host tools and every engine launch program
/// (`servebench_engines::Engine::launch_programs`).
pub fn shimmed() -> Vec<&'static str> {
    let mut v = TOOLS.to_vec();
    v.extend(Engine::launch_programs());
    v
}

/// Environment variable: the attempt directory the shims report into (`engine.json`,
/// `client.json`) and read the measurement's outcome from (`measure-done.json`).
pub const ENV_STATE: &str = "SERVEBENCH_SHIM_STATE";
/// Environment variable: the shim folder (skipped when a shim looks for the real tool).
pub const ENV_DIR: &str = "SERVEBENCH_SHIM_DIR";
/// Environment variable: simulator GPU preset (from the runner).
pub const ENV_GPU: &str = "SERVEBENCH_SIM_GPU";
/// Environment variable: simulator model preset.
pub const ENV_MODEL: &str = "SERVEBENCH_SIM_MODEL";
/// Environment variable: the runner's GPU SKU (`mi355x`), which the GPU tools speak for.
pub const ENV_SKU: &str = "SERVEBENCH_SIM_SKU";
/// Environment variable: the point's GPU count (what `nvidia-smi` lists).
pub const ENV_GPUS: &str = "SERVEBENCH_SIM_GPUS";
/// Environment variable: `virtual` when the point is measured on the virtual clock (the
/// point's sweep embeds the simulator; the shimmed engine only answers readiness and the
/// recipe's own requests, and AIPerf's server-metrics export comes from the sweep).
pub const ENV_CLOCK: &str = "SERVEBENCH_SIM_CLOCK";
/// Environment variable: recorded GSM8K answers for eval jobs.
pub const ENV_ANSWERS: &str = "SERVEBENCH_SIM_ANSWERS";

/// The line prefix of everything a shim prints about itself.
pub const SAY: &str = "servebench-shim:";

/// Writes the shim scripts into `dir` (created), each running `exe engine-shim NAME "$@"`:
/// [`shimmed`] and the GPU tools of `sku`'s vendor (`nvidia-smi`, or `rocm-smi` and `amd-smi`).
///
/// Errors: the folder or a script cannot be written.
pub fn install(dir: &Path, exe: &Path, sku: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).map_err(|e| RunnerError::io(dir, e))?;
    let vendor = crate::smi::gpu_sku(sku).vendor;
    for name in shimmed().into_iter().chain(vendor.tools().iter().copied()) {
        let p = dir.join(name);
        let text = format!(
            "#!/bin/sh\n# servebench --simulate shim (docs/run.md)\nexec {} engine-shim {} \"$@\"\n",
            crate::recipe::shell_quote(&exe.display().to_string()),
            name
        );
        std::fs::write(&p, text).map_err(|e| RunnerError::io(&p, e))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| RunnerError::io(&p, e))?;
    }
    Ok(())
}

/// An engine launch as the recipe wrote it: what the simulator honours. Written as
/// `engine.json` in the attempt directory once the simulator listens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineLaunch {
    /// The engine (its profile name in `engine.json`).
    pub engine: Engine,
    /// The engine's own argv (after `-m MODULE` / `serve`).
    pub argv: Vec<String>,
    /// What servebench reads of it — host, port, model, served model name, TP/EP/DP, context
    /// length, max running requests — with the engine's defaults: the engine profile's one
    /// parse ([`LaunchArgs::parse`]), flattened into `engine.json` (same keys as before).
    #[serde(flatten)]
    pub args: LaunchArgs,
    /// The simulator's one-line description, once it serves.
    #[serde(default)]
    pub describe: Option<String>,
}

/// What one shim call is.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation {
    /// Start an engine (the simulator).
    Engine(EngineLaunch),
    /// A client step handed over to servebench's measurement.
    Client(ClientStep),
    /// `hf download` / `huggingface-cli download`.
    Download {
        /// Repository id.
        repo: String,
        /// `--local-dir`.
        local_dir: Option<String>,
        /// `--repo-type` (model, dataset).
        repo_type: String,
    },
    /// `nvidia-smi …` / `rocm-smi …` / `amd-smi …` ([`crate::smi::smi`]).
    Smi {
        /// `nvidia-smi`, `rocm-smi` or `amd-smi`.
        tool: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// `uv venv [--python V] DIR`.
    UvVenv(PathBuf),
    /// A step skipped with a line (installs, plots, power, validation): exit status to return.
    Skip {
        /// What is said.
        say: String,
        /// Exit status.
        status: i32,
    },
    /// AgentX post-processing: servebench's aggregate as InferenceX's result file.
    AgentxAggregate,
    /// `python -m utils.agentic.aggregation.power_adapter ARGS`: run for real as
    /// `servebench metrics agentx-power ARGS` (same flags, same files).
    AgentxPower(Vec<String>),
    /// Run the real tool (found on `PATH` past the shim folder).
    Real(String),
    /// `mpirun [OPTIONS] CMD ARGS…`: run `CMD ARGS…` once (found on `PATH`, shims first),
    /// after saying `say`.
    Exec {
        /// The command and its arguments, the launcher's options dropped.
        argv: Vec<String>,
        /// What is said first.
        say: String,
    },
    /// Not shimmed: fail with this line (exit 127 when the tool itself is missing).
    Fail {
        /// The line.
        say: String,
        /// Exit status.
        status: i32,
    },
}

/// A recipe's client step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStep {
    /// `benchmark_serving`, `aiperf`, `lm_eval`.
    pub kind: String,
    /// Where the recipe expects its result file (`--result-dir`/`--result-filename`,
    /// `--output-artifact-dir`, `--output_path`).
    pub result_dir: Option<String>,
    /// The result file name, if the step names one.
    pub result_file: Option<String>,
}

/// The value of the last `--flag V` / `--flag=V` among `names`.
pub fn flag_value(args: &[String], names: &[&str]) -> Option<String> {
    let mut out = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        for n in names {
            if a == n {
                if let Some(v) = args.get(i + 1) {
                    out = Some(v.clone());
                }
            } else if let Some(v) = a.strip_prefix(&format!("{n}=")) {
                out = Some(v.to_string());
            }
        }
        i += 1;
    }
    out
}

/// Reads an engine launch from its argv (after the module / `serve`): the engine's argument
/// spellings and defaults are its profile's (`servebench_engines::LaunchArgs`).
pub fn engine_launch(engine: Engine, argv: &[String]) -> EngineLaunch {
    EngineLaunch {
        engine,
        argv: argv.to_vec(),
        args: LaunchArgs::parse(engine, argv),
        describe: None,
    }
}

fn module_arg(args: &[String]) -> Option<(&str, &[String])> {
    if args.first().map(String::as_str) == Some("-m") {
        args.get(1).map(|m| (m.as_str(), &args[2..]))
    } else {
        None
    }
}

/// The interpreter's own options before the script or `-m MODULE` (`python3 -u -m atom…`, as
/// `dsv4_fp4_mi355x_atom_mtp.sh` launches ATOM): `-u -B -E -I -O -OO -q -s -S -b -d -v`, and
/// `-X OPT` / `-W ARG` with their value. Returns the arguments after them.
fn python_options(args: &[String]) -> &[String] {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-X" || a == "-W" {
            i += 2;
        } else if a.len() > 1
            && a.starts_with('-')
            && !a.starts_with("--")
            && a != "-m"
            && a != "-c"
            && a[1..].chars().all(|c| "uBEIOqsSbdvX".contains(c))
        {
            i += 1;
        } else {
            break;
        }
    }
    &args[i.min(args.len())..]
}

/// Classifies a shim call: `tool` is the shimmed command's name, `args` its arguments.
pub fn classify(tool: &str, args: &[String]) -> Invocation {
    let args = if matches!(tool, "python" | "python3") {
        python_options(args)
    } else {
        args
    };
    if let Some((engine, rest)) = Engine::from_launch(tool, args) {
        return Invocation::Engine(engine_launch(engine, rest));
    }
    let sub = args.first().map(String::as_str);
    match tool {
        "hf" | "huggingface-cli" => match sub {
            Some("download") => {
                let rest = &args[1..];
                let repo = rest
                    .iter()
                    .enumerate()
                    .find(|(i, a)| !a.starts_with('-') && (*i == 0 || !takes_value(&rest[i - 1])))
                    .map(|(_, a)| a.clone())
                    .unwrap_or_default();
                Invocation::Download {
                    repo,
                    local_dir: flag_value(rest, &["--local-dir"]),
                    repo_type: flag_value(rest, &["--repo-type"]).unwrap_or_else(|| "model".into()),
                }
            }
            _ => Invocation::Fail {
                say: format!(
                    "{SAY} `{tool} {}` is not simulated (only `{tool} download` is)",
                    args.join(" ")
                ),
                status: 1,
            },
        },
        "nvidia-smi" | "rocm-smi" | "amd-smi" => Invocation::Smi {
            tool: tool.into(),
            args: args.to_vec(),
        },
        "aiperf" if sub == Some("profile") => Invocation::Client(ClientStep {
            kind: "aiperf".into(),
            result_dir: flag_value(args, &["--output-artifact-dir"]),
            result_file: None,
        }),
        "lm_eval" | "lm-eval" => Invocation::Client(ClientStep {
            kind: "lm_eval".into(),
            result_dir: flag_value(args, &["--output_path", "--output-path"]),
            result_file: None,
        }),
        "uv" => match sub {
            Some("venv") => {
                let rest = &args[1..];
                let dir = rest
                    .iter()
                    .enumerate()
                    .rev()
                    .find(|(i, a)| !a.starts_with('-') && (*i == 0 || !takes_value(&rest[i - 1])))
                    .map(|(_, a)| PathBuf::from(a))
                    .unwrap_or_else(|| PathBuf::from(".venv"));
                Invocation::UvVenv(dir)
            }
            Some("pip") => Invocation::Skip {
                say: format!(
                    "{SAY} `uv {}` skipped: the client steps are servebench's own under --simulate",
                    args.join(" ")
                ),
                status: 0,
            },
            _ => Invocation::Fail {
                say: format!("{SAY} `uv {}` is not simulated", args.join(" ")),
                status: 1,
            },
        },
        "pip" | "pip3" if sub == Some("install") => Invocation::Skip {
            say: format!(
                "{SAY} `{tool} {}` skipped under --simulate (nothing is installed on the host)",
                args.join(" ")
            ),
            status: 0,
        },
        "python3" | "python" => classify_python(tool, args),
        "mpirun" => mpirun(args),
        _ => Invocation::Real(tool.into()),
    }
}

/// `mpirun` options that take one value (Open MPI's `-n`, `-x VAR`, …); `--mca`/`-mca` take two.
const MPIRUN_VALUED: &[&str] = &[
    "-n",
    "-np",
    "-c",
    "-N",
    "--n",
    "--np",
    "-x",
    "-H",
    "--host",
    "-host",
    "--hostfile",
    "-hostfile",
    "--machinefile",
    "--bind-to",
    "--map-by",
    "--rank-by",
    "--npernode",
    "--wdir",
    "-wdir",
    "--prefix",
    "--report-bindings-file",
];

fn mpirun(args: &[String]) -> Invocation {
    let mut i = 0;
    let mut ranks = 1u32;
    while i < args.len() && args[i].starts_with('-') {
        let a = args[i].as_str();
        if matches!(a, "--mca" | "-mca" | "--gmca" | "-gmca") {
            i += 3;
        } else if MPIRUN_VALUED.contains(&a) {
            if matches!(a, "-n" | "-np" | "--n" | "--np" | "-c") {
                ranks = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(1);
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    let argv = args.get(i..).map(<[String]>::to_vec).unwrap_or_default();
    if argv.is_empty() {
        return Invocation::Fail {
            say: format!(
                "{SAY} `mpirun {}`: no command to run (mpirun's own options only)",
                args.join(" ")
            ),
            status: 1,
        };
    }
    Invocation::Exec {
        say: format!(
            "{SAY} mpirun ({ranks} rank(s)) simulated: running `{}` once",
            argv[0]
        ),
        argv,
    }
}

fn takes_value(flag: &str) -> bool {
    flag.starts_with("--")
        && !flag.contains('=')
        && !matches!(
            flag,
            "--quiet" | "--force-download" | "--resume-download" | "--seed" | "--no-progress"
        )
        || flag == "-p"
}

fn classify_python(tool: &str, args: &[String]) -> Invocation {
    if let Some((m, rest)) = module_arg(args) {
        return match m {
            "lm_eval" => Invocation::Client(ClientStep {
                kind: "lm_eval".into(),
                result_dir: flag_value(rest, &["--output_path", "--output-path"]),
                result_file: None,
            }),
            "utils.agentic.aggregation.process_agentic_result" => Invocation::AgentxAggregate,
            "utils.agentic.aggregation.power_adapter" => Invocation::AgentxPower(rest.to_vec()),
            "utils.agentic.validation.validate_agentic_result" => Invocation::Skip {
                say: format!("{SAY} AgentX result validation skipped: servebench judges the point itself (agentx_submission_valid and its reasons in agentx.json, and the run table)"),
                status: 0,
            },
            "pip" => Invocation::Skip {
                say: format!("{SAY} `{tool} -m pip {}` skipped under --simulate", rest.join(" ")),
                status: 0,
            },
            _ => Invocation::Real(tool.into()),
        };
    }
    if let Some(script) = args.first() {
        if script.ends_with("benchmark_serving.py") {
            let rest = &args[1..];
            return Invocation::Client(ClientStep {
                kind: "benchmark_serving".into(),
                result_dir: flag_value(rest, &["--result-dir"]),
                result_file: flag_value(rest, &["--result-filename"]),
            });
        }
        if script.ends_with("generate_aiperf_plots.py")
            || script.ends_with("analyze_benchmark_distributions.py")
        {
            return Invocation::Skip {
                say: format!("{SAY} {script} skipped: no AIPerf artifacts under --simulate"),
                status: 0,
            };
        }
    }
    Invocation::Real(tool.into())
}

/// The real `tool` on `PATH`, skipping the shim folder (`$SERVEBENCH_SHIM_DIR`).
pub fn real_tool(tool: &str) -> Option<PathBuf> {
    let shim_dir = std::env::var_os(ENV_DIR).map(PathBuf::from);
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| Some(d) != shim_dir.as_ref())
        .map(|d| d.join(tool))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// The measurement's outcome as the job hands it to a waiting client shim
/// (`measure-done.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasureDone {
    /// The point was measured.
    pub ok: bool,
    /// One line: what happened.
    pub message: String,
    /// The measurement's output folder (`sweep/` or `eval/` of the attempt).
    pub out_dir: PathBuf,
}

/// File names in the attempt directory.
pub const ENGINE_FILE: &str = "engine.json";
/// The client step the recipe reached (`client.json`).
pub const CLIENT_FILE: &str = "client.json";
/// The measurement's outcome (`measure-done.json`).
pub const DONE_FILE: &str = "measure-done.json";

/// Writes `value` as JSON to `state/name` (atomically: temp file then rename).
pub fn write_state<T: Serialize>(state: &Path, name: &str, value: &T) -> Result<()> {
    let p = state.join(name);
    let tmp = state.join(format!(".{name}.tmp"));
    let text = serde_json::to_string_pretty(value).map_err(|e| RunnerError::io(&p, e))?;
    std::fs::write(&tmp, text).map_err(|e| RunnerError::io(&tmp, e))?;
    std::fs::rename(&tmp, &p).map_err(|e| RunnerError::io(&p, e))
}

/// Reads `state/name` if it is there and parses.
pub fn read_state<T: for<'de> Deserialize<'de>>(state: &Path, name: &str) -> Option<T> {
    let text = std::fs::read_to_string(state.join(name)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Waits (polling every 200 ms, up to `timeout`) for the job's `measure-done.json`.
pub fn wait_for_measurement(state: &Path, timeout: Duration) -> Option<MeasureDone> {
    let t0 = Instant::now();
    loop {
        if let Some(d) = read_state::<MeasureDone>(state, DONE_FILE) {
            return Some(d);
        }
        if t0.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The first file named `name` under `dir` (depth-first, sorted), e.g. the sweep's
/// `result.json` or `agentx.json`.
pub fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in &entries {
        if p.is_file() && p.file_name().is_some_and(|n| n == name) {
            return Some(p.clone());
        }
    }
    entries
        .iter()
        .filter(|p| p.is_dir())
        .find_map(|p| find_file(p, name))
}

/// Hands a client step over: records it (`client.json`), waits for servebench's measurement
/// of the point, then puts its result where the recipe expects it. Returns the exit status
/// for the recipe (0 when the point was measured) and the lines to print.
pub fn client_handover(state: &Path, step: &ClientStep, timeout: Duration) -> (i32, Vec<String>) {
    let mut say = vec![format!(
        "{SAY} {} handed over to servebench's measurement of this point; waiting for it",
        step.kind
    )];
    if let Err(e) = write_state(state, CLIENT_FILE, step) {
        say.push(format!("{SAY} {e}"));
        return (1, say);
    }
    let Some(done) = wait_for_measurement(state, timeout) else {
        say.push(format!(
            "{SAY} no measurement outcome after {:.0} s",
            timeout.as_secs_f64()
        ));
        return (1, say);
    };
    if !done.ok {
        say.push(format!(
            "{SAY} servebench's measurement failed: {}",
            done.message
        ));
        return (1, say);
    }
    say.push(format!("{SAY} {}", done.message));
    let copied = match step.kind.as_str() {
        "benchmark_serving" => step.result_dir.as_ref().map(|d| {
            let name = step
                .result_file
                .clone()
                .unwrap_or_else(|| "result.json".into());
            (
                find_file(&done.out_dir, "result.json"),
                PathBuf::from(d).join(name),
            )
        }),
        "aiperf" => step.result_dir.as_ref().map(|d| {
            (
                find_file(&done.out_dir, "agentx.json"),
                PathBuf::from(d).join("servebench_agentx.json"),
            )
        }),
        _ => step.result_dir.as_ref().map(|d| {
            (
                find_file(&done.out_dir, "result.json"),
                PathBuf::from(d).join("servebench_eval.json"),
            )
        }),
    };
    if let Some((src, dst)) = copied {
        let Some(src) = src else {
            say.push(format!(
                "{SAY} the measurement left no result file under {}",
                done.out_dir.display()
            ));
            return (1, say);
        };
        if let Some(parent) = dst.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                say.push(format!("{SAY} {}: {e}", parent.display()));
                return (1, say);
            }
        }
        if let Err(e) = std::fs::copy(&src, &dst) {
            say.push(format!("{SAY} {} → {}: {e}", src.display(), dst.display()));
            return (1, say);
        }
        say.push(format!(
            "{SAY} result: {} (from {})",
            dst.display(),
            src.display()
        ));
    }
    (0, say)
}

/// `process_agentic_result`: servebench's AgentX aggregate (`agentx.json` of the measured
/// point) written as `$AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json`, where the InferenceX workflow
/// looks for it. Returns the exit status and the lines to print.
pub fn agentx_aggregate(state: &Path) -> (i32, Vec<String>) {
    let Some(done) = read_state::<MeasureDone>(state, DONE_FILE) else {
        return (
            1,
            vec![format!(
                "{SAY} process_agentic_result: no measurement of this point yet"
            )],
        );
    };
    let Some(src) = find_file(&done.out_dir, "agentx.json") else {
        return (
            1,
            vec![format!(
                "{SAY} process_agentic_result: no agentx.json under {}",
                done.out_dir.display()
            )],
        );
    };
    let out_dir = std::env::var("AGENTIC_OUTPUT_DIR")
        .or_else(|_| std::env::var("INFMAX_CONTAINER_WORKSPACE"))
        .unwrap_or_else(|_| ".".into());
    let name = std::env::var("RESULT_FILENAME").unwrap_or_else(|_| "agentx".into());
    let dst = PathBuf::from(out_dir).join(format!("{name}.json"));
    match std::fs::copy(&src, &dst) {
        Ok(_) => (
            0,
            vec![format!(
                "{SAY} AgentX aggregate: {} (servebench's {})",
                dst.display(),
                src.display()
            )],
        ),
        Err(e) => (1, vec![format!("{SAY} {}: {e}", dst.display())]),
    }
}

/// `hf download`: makes the directory (`--local-dir`, else the hub cache layout under
/// `$HF_HUB_CACHE`/`$HF_HOME/hub`: `models--org--name/refs/main` naming the revision
/// `simulated`, `snapshots/simulated/`) and returns it. A model gets the files recipes check a
/// checkpoint for before they start the engine — `config.json`, `tokenizer_config.json`,
/// `model.safetensors.index.json` and the one shard its `weight_map` names — each marked as
/// made by servebench, holding no weights ([`SIMULATED_SHARD`] is empty).
pub fn download(repo: &str, local_dir: Option<&str>, repo_type: &str) -> Result<PathBuf> {
    if repo.is_empty() {
        return Err(RunnerError::Invalid(
            "hf download: missing the repository id".into(),
        ));
    }
    let io = |p: &Path, e: std::io::Error| RunnerError::io(p, e);
    let dir = match local_dir {
        Some(d) => PathBuf::from(d),
        None => {
            let hub = std::env::var_os("HF_HUB_CACHE")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
                .unwrap_or_else(|| std::env::temp_dir().join("servebench-hf-hub"));
            let kind = if repo_type == "dataset" {
                "datasets"
            } else {
                "models"
            };
            let cache = hub.join(format!("{kind}--{}", repo.replace('/', "--")));
            let refs = cache.join("refs");
            std::fs::create_dir_all(&refs).map_err(|e| io(&refs, e))?;
            std::fs::write(refs.join("main"), "simulated").map_err(|e| io(&refs, e))?;
            cache.join("snapshots").join("simulated")
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let note = format!("{repo}: made by servebench --simulate (no weights downloaded)");
    let mut files = vec![("SERVEBENCH_SIMULATED".to_string(), format!("{note}\n"))];
    if repo_type != "dataset" {
        files.extend([
            (
                "config.json".to_string(),
                format!("{{\"servebench_simulated\": \"{note}\"}}\n"),
            ),
            (
                "tokenizer_config.json".to_string(),
                format!("{{\"servebench_simulated\": \"{note}\"}}\n"),
            ),
            (
                "model.safetensors.index.json".to_string(),
                format!(
                    "{{\"metadata\": {{\"servebench_simulated\": \"{note}\"}}, \"weight_map\": {{\"simulated\": \"{SIMULATED_SHARD}\"}}}}\n"
                ),
            ),
            (SIMULATED_SHARD.to_string(), String::new()),
        ]);
    }
    for (name, text) in files {
        let p = dir.join(&name);
        // a real checkout's files are kept (a --local-dir that already holds the model)
        if name == "SERVEBENCH_SIMULATED" || !p.exists() {
            std::fs::write(&p, text).map_err(|e| io(&p, e))?;
        }
    }
    Ok(dir)
}

/// The one (empty) shard a simulated checkpoint's index names.
pub const SIMULATED_SHARD: &str = "model-00001-of-00001.safetensors";

/// `uv venv DIR`: a venv whose `bin/` holds the shims (`aiperf`, `hf`, `python`, `python3`,
/// `lm_eval`), so `$AIPERF_VENV/bin/aiperf profile …` is handed over too.
pub fn uv_venv(dir: &Path, exe: &Path) -> Result<()> {
    let sku = std::env::var(ENV_SKU).unwrap_or_default();
    install(&dir.join("bin"), exe, &sku)
}

/// Checks an engine launch's argv against the flag table of the image's engine release.
///
/// Returns the line to print: which table accepted it, or that the image has no table (said once by the caller: the flags are then not checked). Errors:
/// the engine's own argparse output (`usage: …` then `sglang serve: error: …`), for stderr and
/// exit status 2.
pub fn check_engine_flags(
    launch: &EngineLaunch,
    image: &str,
) -> std::result::Result<String, String> {
    let Some(engine) = launch.engine.profile().flag_tables else {
        return Ok(format!(
            "{SAY} no {} flag table (image {image}): the engine flags are not checked",
            launch.engine.name()
        ));
    };
    match servebench_engines::table_for_image(engine, image) {
        Ok(t) => match t.parse(&launch.argv) {
            Ok(_) => Ok(format!(
                "{SAY} {} flags checked against the {} {} table ({})",
                launch.argv.iter().filter(|a| a.starts_with("--")).count(),
                t.engine,
                t.version,
                t.source
            )),
            Err(e) => Err(format!("{}\n{e}", t.usage())),
        },
        Err(line) => Ok(format!("{SAY} {line}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn engine_launches_are_recognised_with_their_arguments() {
        let Invocation::Engine(e) = classify(
            "python3",
            &a("-m sglang.launch_server --model-path /m --served-model-name Q/M --host 0.0.0.0 --port 8123 --tp 8 --dp 1 --ep-size 2 --max-running-requests 8 --context-length 4096"),
        ) else {
            panic!()
        };
        assert_eq!(e.engine, Engine::Sglang);
        assert_eq!(
            (e.args.port, e.args.tp, e.args.ep, e.args.dp),
            (8123, 8, 2, 1)
        );
        assert_eq!(e.args.model.as_deref(), Some("/m"));
        assert_eq!(e.args.served_model_name.as_deref(), Some("Q/M"));
        assert_eq!(e.args.max_running_requests, Some(8));
        assert_eq!(e.args.context_length, Some(4096));
        let Invocation::Engine(v) = classify(
            "vllm",
            &a("serve org/m --host 0.0.0.0 --port=9000 --tensor-parallel-size 4 --max-num-seqs 16 --max-model-len 9472"),
        ) else {
            panic!()
        };
        assert_eq!(v.engine, Engine::Vllm);
        assert_eq!((v.args.port, v.args.tp), (9000, 4));
        assert_eq!(v.args.model.as_deref(), Some("org/m"));
        assert_eq!(v.args.context_length, Some(9472));
        assert_eq!(v.args.max_running_requests, Some(16));
        assert!(matches!(
            classify("sglang", &a("serve --model-path m")),
            Invocation::Engine(_)
        ));
        assert!(matches!(
            classify("trtllm-serve", &a("m --port 1")),
            Invocation::Engine(_)
        ));
        // `python3 -u -m …` (dsv4_fp4_mi355x_atom_mtp.sh): the interpreter's options first
        let Invocation::Engine(u) = classify(
            "python3",
            &a("-u -X dev -m atom.entrypoints.openai_server --model m/M --server-port 8124"),
        ) else {
            panic!("python3 -u -m is not recognised")
        };
        assert_eq!((u.engine, u.args.port), (Engine::Atom, 8124));
        // AMD's ATOM (dsr1_fp8_mi355x_atom.sh): `--server-port`, `-tp`, vLLM's API
        let Invocation::Engine(at) = classify(
            "python3",
            &a("-m atom.entrypoints.openai_server --model m/M --server-port 8123 -tp 8 --kv_cache_dtype fp8 --max-model-len 10240"),
        ) else {
            panic!()
        };
        assert_eq!(
            (at.engine, at.args.port, at.args.tp),
            (Engine::Atom, 8123, 8)
        );
        assert_eq!(at.args.context_length, Some(10240));
    }

    #[test]
    fn a_simulated_checkpoint_has_what_recipes_check_before_the_engine_starts() {
        // minimaxm3_fp4_b200_mtp.sh: `[[ -f $dir/config.json ]]` and every shard of
        // model.safetensors.index.json present, else "incomplete after hf download"
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("m");
        let got = download("org/M", Some(m.to_str().unwrap()), "model").unwrap();
        assert_eq!(got, m);
        let index: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(m.join("model.safetensors.index.json")).unwrap(),
        )
        .unwrap();
        for shard in index["weight_map"].as_object().unwrap().values() {
            assert!(m.join(shard.as_str().unwrap()).is_file());
        }
        assert!(m.join("config.json").is_file() && m.join("tokenizer_config.json").is_file());
        let ds = d.path().join("ds");
        download("org/D", Some(ds.to_str().unwrap()), "dataset").unwrap();
        assert!(!ds.join("config.json").exists());
    }

    #[test]
    fn mpirun_runs_its_command_once_through_the_shims() {
        // As every InferenceX TensorRT-LLM recipe launches (dsr1_fp8_b200_trt.sh line 117).
        let Invocation::Exec { argv, say } = classify(
            "mpirun",
            &a("-n 1 --oversubscribe --allow-run-as-root -x FOO --mca btl tcp trtllm-serve /m --port=8888 --tp_size=8"),
        ) else {
            panic!("mpirun is not shimmed")
        };
        assert_eq!(argv, a("trtllm-serve /m --port=8888 --tp_size=8"));
        assert!(say.contains("1 rank(s)"), "{say}");
        let Invocation::Engine(e) = classify(&argv[0], &argv[1..]) else {
            panic!()
        };
        assert_eq!(
            (e.engine, e.args.port, e.args.tp),
            (Engine::Trtllm, 8888, 8)
        );
        assert!(shimmed().contains(&"mpirun") && shimmed().contains(&"trtllm-serve"));
        assert!(matches!(
            classify("mpirun", &a("-n 2")),
            Invocation::Fail { status: 1, .. }
        ));
    }

    #[test]
    fn client_steps_downloads_and_the_rest() {
        let Invocation::Client(c) = classify(
            "python3",
            &a("/w/utils/bench_serving/benchmark_serving.py --model m --result-dir /r --result-filename x.json"),
        ) else {
            panic!()
        };
        assert_eq!(c.kind, "benchmark_serving");
        assert_eq!(c.result_dir.as_deref(), Some("/r"));
        assert_eq!(c.result_file.as_deref(), Some("x.json"));
        assert!(matches!(
            classify("aiperf", &a("profile --scenario x --output-artifact-dir /r/a")),
            Invocation::Client(ClientStep { ref kind, .. }) if kind == "aiperf"
        ));
        assert_eq!(
            classify("hf", &a("download --repo-type dataset org/d")),
            Invocation::Download {
                repo: "org/d".into(),
                local_dir: None,
                repo_type: "dataset".into()
            }
        );
        assert_eq!(
            classify("hf", &a("download org/m --local-dir /x")),
            Invocation::Download {
                repo: "org/m".into(),
                local_dir: Some("/x".into()),
                repo_type: "model".into()
            }
        );
        assert!(matches!(
            classify("hf", &a("upload x")),
            Invocation::Fail { .. }
        ));
        assert_eq!(
            classify("python3", &a("-c print(1)")),
            Invocation::Real("python3".into())
        );
        assert_eq!(
            classify("uv", &a("venv --python 3.11 /tmp/v")),
            Invocation::UvVenv(PathBuf::from("/tmp/v"))
        );
        assert_eq!(
            classify(
                "python3",
                &a("-m utils.agentic.aggregation.process_agentic_result")
            ),
            Invocation::AgentxAggregate
        );
        assert_eq!(
            classify(
                "python",
                &a("-m utils.agentic.aggregation.power_adapter --result-dir r --agg-result a.json --require-power")
            ),
            Invocation::AgentxPower(a("--result-dir r --agg-result a.json --require-power"))
        );
    }
}
