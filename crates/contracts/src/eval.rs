//! [`EvalRow`]: the eval result row (GSM8K), with the fields of InferenceX's
//! `agg_eval_<exp>.json` (MEASUREMENT.md Part 2 §4.4, `utils/collect_eval_results.py`), as
//! `eval` writes it into `result.json` and the pipeline adds it to the store.
//!
//! Known fields are typed, in file order, then the keys the eval stage adds (the gate's
//! `threshold`, `threshold_source`, `passed`, the `image`, the `target`, `identity_defaults`;
//! each written only when set, in that order, as the eval stage always wrote them); keys of a
//! newer writer are kept in [`EvalRow::extra`], in order, after those, so a row read and
//! written back keeps its bytes.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::identity::Identity;

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
    /// The gate's minimum score, a fraction in [0, 1] (set by the eval stage; compare and
    /// `run --status` read it). Absent on a bare InferenceX row; read from a number or a
    /// numeric string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::f64_opt"
    )]
    pub threshold: Option<f64>,
    /// Where the threshold came from (`thresholds.yaml models.qwen3.5.gsm8k`, `--threshold`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_source: Option<String>,
    /// The gate's verdict (every present `em_*` ≥ `threshold`); read from a bool or a
    /// `"true"`/`"false"` string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::bool_opt"
    )]
    pub passed: Option<bool>,
    /// The engine image the eval ran against, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The endpoint the eval ran against, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Identity fields filled with defaults because nothing named them (standalone `eval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_defaults: Option<Vec<String>>,
    /// Keys this type does not know (a newer writer's), in order, written after the known
    /// ones.
    #[serde(flatten)]
    pub extra: IndexMap<String, Value>,
}

impl EvalRow {
    /// The row as an ordered JSON object (the known fields, then `extra`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("an eval row serialises")
    }

    /// Fills the identity keys this row left `null` from the one [`Identity`] (InferenceX's
    /// eval rows spell `hw` upper-case, MEASUREMENT.md §4.4, and name the model prefix
    /// `model_prefix`) and returns the keys filled, in the order `hw`, `framework`,
    /// `precision`, `model_prefix`, `spec_decoding`, `tp`, `ep`, `dp_attention` (what
    /// `identity_defaults` lists). `isl`/`osl` are left as they are: an eval's lengths are its
    /// own, not the identity's nominal ones.
    pub fn fill_identity(&mut self, id: &Identity) -> Vec<&'static str> {
        let mut filled = Vec::new();
        fn fill<T>(slot: &mut Option<T>, v: T, key: &'static str, filled: &mut Vec<&'static str>) {
            if slot.is_none() {
                *slot = Some(v);
                filled.push(key);
            }
        }
        fill(&mut self.hw, id.hw.to_uppercase(), "hw", &mut filled);
        fill(
            &mut self.framework,
            id.framework.clone(),
            "framework",
            &mut filled,
        );
        fill(
            &mut self.precision,
            id.precision.clone(),
            "precision",
            &mut filled,
        );
        let prefix = id.infmax_model_prefix.clone();
        fill(&mut self.model_prefix, prefix, "model_prefix", &mut filled);
        let spec = id.spec_decoding.clone();
        fill(&mut self.spec_decoding, spec, "spec_decoding", &mut filled);
        fill(&mut self.tp, id.tp, "tp", &mut filled);
        fill(&mut self.ep, id.ep, "ep", &mut filled);
        fill(
            &mut self.dp_attention,
            id.dp_attention,
            "dp_attention",
            &mut filled,
        );
        filled
    }

    /// Sets (or replaces, keeping its place) a key of [`EvalRow::extra`].
    pub fn set_extra(&mut self, key: &str, value: Value) {
        self.extra.insert(key.to_string(), value);
    }
}

/// Lenient readers of the gate's keys, as compare read them when they were untyped: a
/// number or numeric string for `threshold`, a bool or `true`/`false`/`1`/`0`/`yes`/`no`
/// string for `passed`; `null` is absent.
mod lenient {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    pub fn f64_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(None),
            Value::Number(n) => Ok(n.as_f64()),
            Value::String(s) => {
                s.trim().parse().map(Some).map_err(|_| {
                    D::Error::custom(format!("`threshold` is {s:?}, expected a number"))
                })
            }
            other => Err(D::Error::custom(format!(
                "`threshold` is {other}, expected a number"
            ))),
        }
    }

    pub fn bool_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(b)),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Ok(Some(true)),
                "false" | "0" | "no" | "" => Ok(Some(false)),
                _ => Err(D::Error::custom(format!(
                    "`passed` is {s:?}, expected true or false"
                ))),
            },
            other => Err(D::Error::custom(format!(
                "`passed` is {other}, expected true or false"
            ))),
        }
    }
}
