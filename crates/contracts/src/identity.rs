//! [`Identity`]: who and what a point measured (InferenceX `process_result.py` env inputs),
//! and [`BenchmarkType`]: which kind of workload it ran (InferenceX-app `benchmark_type`).

use serde::{Deserialize, Serialize};

/// Kind of benchmark a point ran: the agg row's `benchmark_type` string and InferenceX-app's
/// natural-key column (AUTOMATION.md §7.5). Points of different kinds never match in compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkType {
    /// Fixed-sequence single-turn requests (`isl`/`osl` set, e.g. 8192/1024).
    SingleTurn,
    /// AgentX agentic-coding trace replay (`scenario_type: agentic-coding`; `isl`/`osl` null).
    AgenticTraces,
    /// Multi-turn chat replay (`sweep --scenario multiturn`; `isl`/`osl` are the per-turn
    /// nominal lengths).
    MultiTurn,
}

impl BenchmarkType {
    /// Every kind, in declaration order.
    pub const ALL: [BenchmarkType; 3] = [
        BenchmarkType::SingleTurn,
        BenchmarkType::AgenticTraces,
        BenchmarkType::MultiTurn,
    ];

    /// The agg-row string: `single_turn`, `agentic_traces`, `multi_turn`.
    pub fn as_str(self) -> &'static str {
        match self {
            BenchmarkType::SingleTurn => "single_turn",
            BenchmarkType::AgenticTraces => "agentic_traces",
            BenchmarkType::MultiTurn => "multi_turn",
        }
    }

    /// Reads an agg-row string ([`BenchmarkType::as_str`]); `None` for anything else.
    pub fn parse(s: &str) -> Option<BenchmarkType> {
        BenchmarkType::ALL.into_iter().find(|b| b.as_str() == s)
    }
}

impl std::fmt::Display for BenchmarkType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identity and topology of a point, written into its agg row. (compare derives its
/// normalised match key, `servebench_compare::Identity`, from the row.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// Runner/hardware name (`hw`).
    pub hw: String,
    /// Engine container image.
    pub image: String,
    /// Model name as served.
    pub model: String,
    /// `infmax_model_prefix` (e.g. `dsr1`, `qwen3.5`).
    pub infmax_model_prefix: String,
    /// Framework (`sglang`, `vllm`, …).
    pub framework: String,
    /// Precision (`fp8`, `fp4`, `bf16`).
    pub precision: String,
    /// Speculative decoding (`none`, `mtp`, …).
    pub spec_decoding: String,
    /// Disaggregated prefill/decode.
    pub disagg: bool,
    /// Recipe fingerprint (config key), if any.
    pub recipe_fingerprint: Option<String>,
    /// Nominal ISL, tokens.
    pub isl: Option<u32>,
    /// Nominal OSL, tokens.
    pub osl: Option<u32>,
    /// Tensor parallel size.
    pub tp: u32,
    /// Pipeline parallel size.
    pub pp: u32,
    /// Decode context parallel size.
    pub dcp_size: u32,
    /// Prefill context parallel size.
    pub pcp_size: u32,
    /// Expert parallel size.
    pub ep: u32,
    /// DP attention.
    pub dp_attention: bool,
}

impl Identity {
    /// GPUs of a single-node point: TP × PP × PCP (EP, DP-attention and DCP do not multiply;
    /// InferenceX `process_result.py`, MEASUREMENT.md Part 2 §2.2).
    pub fn num_gpus(&self) -> u32 {
        self.tp.max(1) * self.pp.max(1) * self.pcp_size.max(1)
    }
}
