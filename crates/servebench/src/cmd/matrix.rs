//! `servebench matrix full-sweep|test-config …`: InferenceX's sweep generator, flags verbatim.
//!
//! `servebench matrix ARGS` prints exactly what `generate_sweep_configs.py ARGS` prints
//! (`json.dumps(rows)` + newline), so CI command lines port unchanged. Argument errors that the
//! reference raises through argparse exit with status 2 and the same message; generation errors
//! (unknown key, bad runner type, DRAM budget) exit 1 with one line naming the problem.

use std::process::ExitCode;

use servebench_catalog::matrix::{
    check_args, generate, seq_len_from_str, to_stdout, Common, FullSweep, Mode, ScenarioType,
    TestConfig,
};
use servebench_catalog::{Catalog, Runners};

/// Arguments of `servebench matrix`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Generator mode.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by `full-sweep` and `test-config` (the generator's parent parser).
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// One or more master config files (YAML), merged in order.
    #[arg(long = "config-files", num_args = 1.., required = true, value_name = "FILE")]
    pub config_files: Vec<String>,
    /// Runner config (labels → runner names, hardware facts).
    #[arg(
        long = "runner-config",
        default_value = "configs/runners.yaml",
        value_name = "FILE"
    )]
    pub runner_config: String,
    /// Skip evals (throughput rows only).
    #[arg(long = "no-evals")]
    pub no_evals: bool,
    /// Only the eval subset (rows get `eval-only: true`).
    #[arg(long = "evals-only")]
    pub evals_only: bool,
    /// Every generated 8k1k config becomes an eval row (implies eval-only output).
    #[arg(long = "all-evals")]
    pub all_evals: bool,
    /// Expand each config to the concrete runner nodes whose name contains SUBSTR.
    #[arg(long = "runner-node-filter", value_name = "SUBSTR")]
    pub runner_node_filter: Option<String>,
    /// Scenario type(s) to include (default: all).
    #[arg(long = "scenario-type", num_args = 1.., value_parser = ["fixed-seq-len", "agentic-coding"])]
    pub scenario_type: Option<Vec<String>>,
}

/// Generator subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Full sweep with optional filters (model prefix, precision, framework, runner type, …).
    #[command(name = "full-sweep")]
    FullSweep {
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Config-key prefix(es).
        #[arg(long = "model-prefix", num_args = 1..)]
        model_prefix: Option<Vec<String>>,
        /// Precision(s).
        #[arg(long, num_args = 1..)]
        precision: Option<Vec<String>>,
        /// Framework(s).
        #[arg(long, num_args = 1..)]
        framework: Option<Vec<String>>,
        /// Runner label(s) (must exist in the runner config).
        #[arg(long = "runner-type", num_args = 1..)]
        runner_type: Option<Vec<String>>,
        /// Sequence lengths to include.
        #[arg(long = "seq-lens", num_args = 1.., value_parser = ["1k1k", "8k1k"])]
        seq_lens: Option<Vec<String>>,
        /// Concurrency range step factor (> 1).
        #[arg(long = "step-size", default_value_t = 2, allow_negative_numbers = true)]
        step_size: i64,
        /// Minimum concurrency.
        #[arg(long = "min-conc", allow_negative_numbers = true)]
        min_conc: Option<i64>,
        /// Maximum concurrency.
        #[arg(long = "max-conc", allow_negative_numbers = true)]
        max_conc: Option<i64>,
        /// Skip single-node rows with a larger TP.
        #[arg(long = "max-tp", allow_negative_numbers = true)]
        max_tp: Option<i64>,
        /// Clamp single-node EP to this value.
        #[arg(long = "max-ep", allow_negative_numbers = true)]
        max_ep: Option<i64>,
        /// Only single-node configs (neither flag: both).
        #[arg(long = "single-node")]
        single_node: bool,
        /// Only multinode configs (neither flag: both).
        #[arg(long = "multi-node")]
        multi_node: bool,
    },
    /// Every point of specific config keys (globs allowed); step 2, no other filters.
    #[command(name = "test-config")]
    TestConfig {
        /// Shared options.
        #[command(flatten)]
        common: CommonArgs,
        /// Config keys or fnmatch globs.
        #[arg(long = "config-keys", num_args = 1.., required = true)]
        config_keys: Vec<String>,
        /// Keep only these concurrencies (values must exist in the config).
        #[arg(long, num_args = 1..)]
        conc: Option<Vec<i64>>,
        /// Sequence lengths to include.
        #[arg(long = "seq-lens", num_args = 1.., value_parser = ["1k1k", "8k1k"])]
        seq_lens: Option<Vec<String>>,
    },
}

fn common_of(c: &CommonArgs) -> Common {
    Common {
        no_evals: c.no_evals,
        evals_only: c.evals_only,
        all_evals: c.all_evals,
        runner_node_filter: c.runner_node_filter.clone(),
        scenario_type: c
            .scenario_type
            .as_ref()
            .map(|v| v.iter().filter_map(|s| ScenarioType::parse(s)).collect()),
    }
}

fn seqs(v: &Option<Vec<String>>) -> Option<Vec<(i64, i64)>> {
    v.as_ref()
        .map(|v| v.iter().filter_map(|s| seq_len_from_str(s)).collect())
}

/// Prints an argparse-style usage error and returns exit status 2.
pub fn usage_error(msg: &str) -> ExitCode {
    eprintln!("usage: servebench matrix [-h] {{full-sweep,test-config}} ...");
    eprintln!("servebench matrix: error: {msg}");
    ExitCode::from(2)
}

/// Runs `servebench matrix`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (mode, common, full, c) = match &args.command {
        Command::FullSweep {
            common,
            model_prefix,
            precision,
            framework,
            runner_type,
            seq_lens,
            step_size,
            min_conc,
            max_conc,
            max_tp,
            max_ep,
            single_node,
            multi_node,
        } => {
            let both = !single_node && !multi_node;
            let fs = FullSweep {
                model_prefix: model_prefix.clone(),
                precision: precision.clone(),
                framework: framework.clone(),
                runner_type: runner_type.clone(),
                seq_lens: seqs(seq_lens),
                step_size: *step_size,
                min_conc: *min_conc,
                max_conc: *max_conc,
                max_tp: *max_tp,
                max_ep: *max_ep,
                single_node: *single_node || both,
                multi_node: *multi_node || both,
            };
            (
                Mode::FullSweep(fs.clone()),
                common_of(common),
                Some(fs),
                common,
            )
        }
        Command::TestConfig {
            common,
            config_keys,
            conc,
            seq_lens,
        } => {
            let tc = TestConfig {
                config_keys: config_keys.clone(),
                conc: conc.clone(),
                seq_lens: seqs(seq_lens),
            };
            (Mode::TestConfig(tc), common_of(common), None, common)
        }
    };
    if let Err(msg) = check_args(full.as_ref(), &common) {
        return Ok(usage_error(&msg));
    }
    let catalog = Catalog::load(&c.config_files)?;
    let runners = Runners::load(&c.runner_config)?;
    let rows = generate(&mode, &common, &catalog, &runners)?;
    crate::write_stdout(&to_stdout(&rows))?;
    Ok(ExitCode::SUCCESS)
}
