//! The value enums of the measuring flags (`--api`, `--compat`, `--itl`, `--stat`, `--eval`)
//! and the `--engine` parser, for [`super::measure_args::CommonArgs`].

use servebench_client::Engine;

/// `--eval`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalTask {
    /// GSM8K, scored as lm-evaluation-harness does (docs/eval.md).
    Gsm8k,
}

pub(crate) fn parse_engine(s: &str) -> std::result::Result<Engine, String> {
    Engine::parse(s)
}

/// `--api`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiArg {
    /// /v1/completions
    Completions,
    /// /v1/chat/completions
    Chat,
}

/// `--compat`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompatArg {
    /// MEASUREMENT.md Part 1.
    Servebench,
    /// InferenceX benchmark_serving.py counting.
    Inferencex,
}

/// `--itl`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItlArg {
    /// One sample per chunk gap.
    Chunk,
    /// k samples of gap/k for a k-token chunk.
    PerToken,
}

/// `--stat`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatArg {
    /// Mean.
    Mean,
    /// Median.
    Median,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
}
