//! The value enums of the measuring flags (`--api`, `--compat`, `--itl`, `--stat`, `--eval`,
//! `--sim-clock`) and the `--engine` parser, for [`super::measure_args::CommonArgs`]; the
//! usage error a command returns for a flag combination clap cannot express.

use servebench_client::Engine;

/// `--sim-clock` (sweep, bench, search, sim, run --simulate).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimClockArg {
    /// Discrete-event clock: client and simulator in one process, time advances only when
    /// every task waits; host-independent, reproducible, fast (the default without
    /// --sim-speedup or --eval).
    Virtual,
    /// Wall clock: the simulator plays modelled time back ÷ --sim-speedup over TCP; for
    /// testing the network path (numbers move with host load).
    Wall,
}

impl From<SimClockArg> for servebench_contracts::SimClock {
    fn from(c: SimClockArg) -> Self {
        match c {
            SimClockArg::Virtual => servebench_contracts::SimClock::Virtual,
            SimClockArg::Wall => servebench_contracts::SimClock::Wall,
        }
    }
}

/// A command line the parser accepted but whose flags cannot go together (`--sim-clock
/// virtual --sim-speedup 10`): `main` prints it in one line and exits 64 (EX_USAGE), like a
/// clap error.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

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

/// The flags of `--scenario multiturn` (multi-turn chat replay, docs/measurement.md).
#[derive(clap::Args, Debug, Clone)]
pub struct MultiturnArgs {
    /// ShareGPT-style conversations to replay turn by turn, JSON array or JSONL of
    /// {"conversations": [{"from": "human", "value": …}, {"from": "gpt", "value": …}, …]}
    /// (--scenario multiturn; given alone it implies it). --conc is then the number of
    /// concurrent conversations.
    #[arg(long, value_name = "FILE")]
    pub conversations: Option<std::path::PathBuf>,
    /// Multi-turn: factor on the recorded think times between turns (human messages'
    /// think_time_s) [default: 1; 0 = no waiting].
    #[arg(long, value_name = "F")]
    pub think_time_scale: Option<f64>,
    /// Multi-turn: cap on one (scaled) think time, seconds [default: none].
    #[arg(long, value_name = "S")]
    pub max_think_time: Option<f64>,
}

impl MultiturnArgs {
    /// The multi-turn plan of these flags and `--scenario`, `None` for another workload;
    /// `others` names the other workloads' flags given (refused with multiturn).
    ///
    /// # Errors
    /// One line naming the flag ([`servebench_pipeline::multiturn::MultiturnPlan::from_flags`]).
    pub(crate) fn plan(
        &self,
        scenario: Option<&str>,
        others: &[&str],
    ) -> anyhow::Result<Option<servebench_pipeline::multiturn::MultiturnPlan>> {
        servebench_pipeline::multiturn::MultiturnPlan::from_flags(
            scenario,
            self.conversations.clone(),
            self.think_time_scale,
            self.max_think_time,
            others,
        )
        .map_err(anyhow::Error::msg)
    }
}
