//! Result shapes: the per-sample record (one JSONL line per document) and the eval row with
//! the fields of InferenceX's `agg_eval_<exp>.json` (MEASUREMENT.md Part 2 §4.4,
//! `utils/collect_eval_results.py`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::task::{Message, Profile, Verdict};
use crate::thresholds::GateVerdict;

/// Benchmark-point metadata copied into the eval row (what InferenceX reads from
/// `meta_env.json`): the flags of a standalone eval (unknown fields stay `null` in
/// `result.json`), or the one [`servebench_contracts::Identity`] of a sweep (`From`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EvalMeta {
    /// Model prefix (`qwen3.5`, `dsr1`, …); also the thresholds lookup key.
    pub model_prefix: Option<String>,
    /// Hardware (written upper-case, as collect_eval_results does).
    pub hw: Option<String>,
    /// Serving framework (`sglang`, `vllm`, …).
    pub framework: Option<String>,
    /// Precision (`fp4`, `fp8`, …).
    pub precision: Option<String>,
    /// Speculative decoding (`mtp`, `none`, …).
    pub spec_decoding: Option<String>,
    /// Nominal input length of the benchmark point the eval belongs to (tokens).
    pub isl: Option<u32>,
    /// Nominal output length (tokens).
    pub osl: Option<u32>,
    /// Tensor parallelism.
    pub tp: Option<u32>,
    /// Expert parallelism.
    pub ep: Option<u32>,
    /// DP-attention.
    pub dp_attention: Option<bool>,
}

impl From<&servebench_contracts::Identity> for EvalMeta {
    /// Every field from the one identity (a `sweep --eval` row: nothing is left unknown).
    fn from(id: &servebench_contracts::Identity) -> EvalMeta {
        EvalMeta {
            model_prefix: Some(id.infmax_model_prefix.clone()),
            hw: Some(id.hw.clone()),
            framework: Some(id.framework.clone()),
            precision: Some(id.precision.clone()),
            spec_decoding: Some(id.spec_decoding.clone()),
            isl: id.isl,
            osl: id.osl,
            tp: Some(id.tp),
            ep: Some(id.ep),
            dp_attention: Some(id.dp_attention),
        }
    }
}

/// The eval row (InferenceX `agg_eval` fields, §4.4): defined in `servebench-contracts`, the
/// one definition the pipeline, store and compare read.
pub use servebench_contracts::EvalRow;

/// One document's outcome: a line of `samples.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleRecord {
    /// 0-based index in `test.jsonl` (lm-eval's `doc_id`).
    pub doc_id: usize,
    /// Task profile.
    pub profile: Profile,
    /// Request parameters other than `messages` (`model`, `max_tokens`, `temperature`, `stop`,
    /// `seed`, `top_p`), as sent.
    pub request: serde_json::Value,
    /// The `messages` sent.
    pub messages: Vec<Message>,
    /// The response body as received (JSON when it parsed, else a string).
    pub response: serde_json::Value,
    /// The text scored: `message.content`, or `message.reasoning_content` when content was
    /// empty or null (InferenceX's lm-eval patch), or `""`.
    pub text: String,
    /// `content`, `reasoning_content` or `none`.
    pub text_source: String,
    /// The reference answer (`answer` field).
    pub target: String,
    /// Reference after normalisation.
    pub target_normalised: String,
    /// strict-match outcome.
    pub strict: Verdict,
    /// flexible-extract outcome.
    pub flexible: Verdict,
    /// HTTP attempts made (1 = no retry).
    pub attempts: u32,
    /// Time from sending the first attempt to the full response (ms).
    pub latency_ms: f64,
}

/// What [`crate::run_gsm8k`] returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvalResult {
    /// The InferenceX-shaped row.
    pub row: EvalRow,
    /// Threshold gate outcome.
    pub gate: GateVerdict,
    /// Task profile.
    pub profile: Profile,
    /// The chat-completions URL used.
    pub url: String,
    /// One line describing what was evaluated (the endpoint, or the simulator's description).
    pub target: String,
    /// Set when the target was the embedded simulator: says the score is a replay of a recorded
    /// model's outputs.
    pub replay_note: Option<String>,
    /// `result.json`.
    pub result_file: PathBuf,
    /// `samples.jsonl`.
    pub samples_file: PathBuf,
    /// Samples reused from an earlier, interrupted run of the same eval.
    pub resumed: usize,
    /// Requests sent by this run.
    pub requests_sent: usize,
    /// Wall time of this run (s), from the first request to the last response.
    pub duration_s: f64,
    /// `max_tokens` sent.
    pub max_tokens: u32,
    /// Stopped early by an [`crate::Interrupt`] (Ctrl-C): the scores cover only `row.n_eff`
    /// documents and `result.json` says `"partial": true`.
    #[serde(default)]
    pub interrupted: bool,
}
