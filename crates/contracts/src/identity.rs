//! [`Identity`]: who and what a point measured (InferenceX `process_result.py` env inputs).

use serde::{Deserialize, Serialize};

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
