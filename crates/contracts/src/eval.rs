//! [`EvalRow`]: the eval result row (GSM8K), with the fields of InferenceX's
//! `agg_eval_<exp>.json` (MEASUREMENT.md Part 2 §4.4, `utils/collect_eval_results.py`), as
//! `eval` writes it into `result.json` and the pipeline adds it to the store.
//!
//! Known fields are typed, in file order; keys a stage adds (the gate's `threshold`,
//! `threshold_source`, `passed`, `image`, `target`, `identity_defaults`) or a newer writer's
//! are kept in [`EvalRow::extra`], in order, after the known ones, so a row read and written
//! back keeps its bytes.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One eval row, field for field (§4.4). Scores are fractions in [0, 1]; `*_se` are lm-eval's
/// standard error of the mean (`null` when n < 2).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EvalRow {
    /// Always `false` here (single endpoint).
    pub is_multinode: bool,
    /// InferenceX model prefix (`qwen3.5`, `dsr1`, …); also the thresholds lookup key.
    pub model_prefix: Option<String>,
    /// The `model` sent in requests.
    pub model: String,
    /// Upper-case hardware name.
    pub hw: Option<String>,
    /// Serving framework.
    pub framework: Option<String>,
    /// Precision.
    pub precision: Option<String>,
    /// Speculative decoding.
    pub spec_decoding: Option<String>,
    /// Input length of the point, tokens.
    pub isl: Option<u32>,
    /// Output length of the point, tokens.
    pub osl: Option<u32>,
    /// Tensor parallelism.
    pub tp: Option<u32>,
    /// Expert parallelism.
    pub ep: Option<u32>,
    /// Multi-node prefill fields (null for single-node).
    pub prefill_tp: Option<u32>,
    /// See `prefill_tp`.
    pub prefill_ep: Option<u32>,
    /// See `prefill_tp`.
    pub prefill_num_workers: Option<u32>,
    /// Multi-node decode fields (null for single-node).
    pub decode_tp: Option<u32>,
    /// See `decode_tp`.
    pub decode_ep: Option<u32>,
    /// See `decode_tp`.
    pub decode_num_workers: Option<u32>,
    /// Requests in flight during the eval.
    pub conc: u32,
    /// DP-attention.
    pub dp_attention: Option<bool>,
    /// Multi-node only.
    pub prefill_dp_attention: Option<bool>,
    /// Multi-node only.
    pub decode_dp_attention: Option<bool>,
    /// `gsm8k`.
    pub task: String,
    /// `exact_match,strict-match`, fraction.
    pub em_strict: Option<f64>,
    /// `exact_match_stderr,strict-match`.
    pub em_strict_se: Option<f64>,
    /// `exact_match,flexible-extract`, fraction.
    pub em_flexible: Option<f64>,
    /// `exact_match_stderr,flexible-extract`.
    pub em_flexible_se: Option<f64>,
    /// `n-samples.gsm8k.effective`: documents scored.
    pub n_eff: usize,
    /// Where the numbers come from (the result file, relative to the output folder).
    pub source: String,
    /// `em_strict`.
    pub score: Option<f64>,
    /// `"em_strict"`.
    pub score_name: String,
    /// `em_strict_se`.
    pub score_se: Option<f64>,
    /// Keys this type does not know, in order, written after the known ones (stage
    /// additions such as `threshold`, `passed`, `image`).
    #[serde(flatten)]
    pub extra: IndexMap<String, Value>,
}

impl EvalRow {
    /// The row as an ordered JSON object (the known fields, then `extra`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("an eval row serialises")
    }

    /// Sets (or replaces, keeping its place) a key of [`EvalRow::extra`].
    pub fn set_extra(&mut self, key: &str, value: Value) {
        self.extra.insert(key.to_string(), value);
    }
}
