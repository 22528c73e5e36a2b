//! `compare --baseline main`: per point, the row InferenceX's `utils/compare_results.py`
//! picks — the newest error-free stored row of the same config on branch `main`.
//!
//! The config is what `build_config_params` makes of a row ([`ConfigKey::of_row`]): hardware
//! = the runner name without a `-multinode`/`-trt`/`-disagg` suffix, lower-cased; framework,
//! precision lower-cased; model = `infmax_model_prefix` lower-cased, matched as a `LIKE`
//! prefix (`gptoss` matches `gptoss120b`); spec method (default `none`); disagg; multinode;
//! prefill/decode TP, EP, DP-attention (single-node rows: both from `tp`, `ep`,
//! `dp_attention`). The row must have the same ISL, OSL and concurrency, belong to a run on the
//! branch, and be error-free (point status `ok`). Among those: `ORDER BY date DESC` (the run's
//! UTC day), as the script; rows of one day are ordered by the run's creation time, then by
//! insertion (the script leaves that tie to PostgreSQL's scan order). Like the script, KV
//! offload mode is not part of the match, and AgentX (`scenario_type: agentic-coding`) points
//! get no baseline.

use serde_json::Value;

use crate::columns::{row_int, row_str};
use crate::error::Result;
use crate::{Store, StoredPoint};

/// InferenceX's config of a row (`configs` natural key; compare_results.py's lookup).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfigKey {
    /// Runner name less its `-multinode|-trt|-disagg` suffix, lower case.
    pub hardware: String,
    /// Framework, lower case.
    pub framework: String,
    /// Model prefix, lower case.
    pub model: String,
    /// Precision, lower case.
    pub precision: String,
    /// Speculative decoding method, lower case (`none` when absent).
    pub spec_method: String,
    /// Disaggregated prefill/decode.
    pub disagg: bool,
    /// Multinode row.
    pub is_multinode: bool,
    /// Prefill TP (single-node: `tp`).
    pub prefill_tp: i16,
    /// Prefill EP (single-node: `ep`).
    pub prefill_ep: i16,
    /// Prefill DP attention (single-node: `dp_attention`).
    pub prefill_dp_attention: bool,
    /// Prefill workers (0 unless disaggregated).
    pub prefill_num_workers: i16,
    /// Decode TP (single-node: `tp`).
    pub decode_tp: i16,
    /// Decode EP (single-node: `ep`).
    pub decode_ep: i16,
    /// Decode DP attention (single-node: `dp_attention`).
    pub decode_dp_attention: bool,
    /// Decode workers (0 unless disaggregated).
    pub decode_num_workers: i16,
    /// Prefill GPUs (single-node: `num_gpus`, else `tp`).
    pub num_prefill_gpu: i16,
    /// Decode GPUs.
    pub num_decode_gpu: i16,
}

/// `extract_hardware` of compare_results.py: `h200-multinode` → `h200`.
pub fn extract_hardware(runner: &str) -> String {
    let lower = runner;
    let base = ["-multinode", "-trt", "-disagg"]
        .iter()
        .find_map(|s| lower.strip_suffix(s))
        .unwrap_or(lower);
    base.to_lowercase()
}

/// Python's `parse_bool`: a JSON bool, else whether the value's text is `true` (any case).
fn parse_bool(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        Some(Value::Null) | None => false,
        Some(other) => other.to_string().eq_ignore_ascii_case("true"),
    }
}

/// Python truthiness of `result.get("is_multinode", False)`.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Null) | None => false,
    }
}

fn small(v: &Value, k: &str, default: i64) -> i16 {
    row_int(v, k).unwrap_or(default).clamp(0, i16::MAX as i64) as i16
}

impl ConfigKey {
    /// The config of an agg, foreign or eval row (eval rows name the model `model_prefix`).
    /// Missing keys take InferenceX's defaults: TP/EP 1, booleans false, spec method `none`,
    /// text `unknown`.
    pub fn of_row(v: &Value) -> ConfigKey {
        let text = |k: &str| row_str(v, k).map(|s| s.to_lowercase());
        let model = text("infmax_model_prefix")
            .or_else(|| text("model_prefix"))
            .unwrap_or_else(|| "unknown".into());
        let multinode = truthy(v.get("is_multinode"));
        let (ptp, pep, pdp, dtp, dep, ddp) = if multinode {
            (
                small(v, "prefill_tp", 1),
                small(v, "prefill_ep", 1),
                parse_bool(v.get("prefill_dp_attention")),
                small(v, "decode_tp", 1),
                small(v, "decode_ep", 1),
                parse_bool(v.get("decode_dp_attention")),
            )
        } else {
            let (tp, ep) = (small(v, "tp", 1), small(v, "ep", 1));
            let dp = parse_bool(v.get("dp_attention"));
            (tp, ep, dp, tp, ep, dp)
        };
        let gpus = small(v, "num_gpus", ptp.max(1) as i64).max(1);
        ConfigKey {
            hardware: row_str(v, "hw").map_or_else(|| "unknown".into(), |h| extract_hardware(&h)),
            framework: text("framework").unwrap_or_else(|| "unknown".into()),
            model,
            precision: text("precision").unwrap_or_else(|| "unknown".into()),
            spec_method: text("spec_decoding").unwrap_or_else(|| "none".into()),
            disagg: parse_bool(v.get("disagg")),
            is_multinode: multinode,
            prefill_tp: ptp.max(1),
            prefill_ep: pep.max(1),
            prefill_dp_attention: pdp,
            prefill_num_workers: small(v, "prefill_num_workers", 0),
            decode_tp: dtp.max(1),
            decode_ep: dep.max(1),
            decode_dp_attention: ddp,
            decode_num_workers: small(v, "decode_num_workers", 0),
            num_prefill_gpu: small(v, "num_prefill_gpu", gpus as i64).max(1),
            num_decode_gpu: small(v, "num_decode_gpu", gpus as i64).max(1),
        }
    }

    /// compare_results.py's `WHERE` on `configs`: every field equal except the model, a
    /// `LIKE candidate || '%'` prefix match; workers and GPU counts are not compared.
    pub fn baseline_matches(&self, stored: &ConfigKey) -> bool {
        self.hardware == stored.hardware
            && self.framework == stored.framework
            && like_prefix(&stored.model, &self.model)
            && self.precision == stored.precision
            && self.spec_method == stored.spec_method
            && self.disagg == stored.disagg
            && self.is_multinode == stored.is_multinode
            && self.prefill_tp == stored.prefill_tp
            && self.prefill_ep == stored.prefill_ep
            && self.prefill_dp_attention == stored.prefill_dp_attention
            && self.decode_tp == stored.decode_tp
            && self.decode_ep == stored.decode_ep
            && self.decode_dp_attention == stored.decode_dp_attention
    }
}

/// SQL `value LIKE pattern || '%'`: `_` matches one character, `%` any run of them.
fn like_prefix(value: &str, pattern: &str) -> bool {
    fn m(v: &[char], p: &[char]) -> bool {
        match p.split_first() {
            None => true, // the trailing '%'
            Some(('%', rest)) => (0..=v.len()).any(|i| m(&v[i..], rest)),
            Some(('_', rest)) => !v.is_empty() && m(&v[1..], rest),
            Some((c, rest)) => v.first() == Some(c) && m(&v[1..], rest),
        }
    }
    let v: Vec<char> = value.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    m(&v, &p)
}

impl Store {
    /// The baseline of one candidate point on `branch` (compare_results.py's choice, module
    /// docs): `None` when no stored row matches, the candidate is an AgentX point, or it has no
    /// ISL/OSL/concurrency.
    pub fn baseline_point(&self, candidate: &Value, branch: &str) -> Result<Option<StoredPoint>> {
        if row_str(candidate, "scenario_type").as_deref() == Some("agentic-coding") {
            return Ok(None);
        }
        let (Some(isl), Some(osl), Some(conc)) = (
            row_int(candidate, "isl"),
            row_int(candidate, "osl"),
            row_int(candidate, "conc"),
        ) else {
            return Ok(None);
        };
        let want = ConfigKey::of_row(candidate);
        let mut best = None;
        for c in self.backend.baseline_candidates(branch, isl, osl, conc)? {
            let Ok(v) = serde_json::from_str::<Value>(&c.point.json) else {
                continue;
            };
            if !want.baseline_matches(&ConfigKey::of_row(&v)) {
                continue;
            }
            let key = (c.date.clone(), c.created_at.clone(), c.point.id);
            if best.as_ref().is_none_or(|(k, _, _)| &key > k) {
                best = Some((key, c.point, c.imported));
            }
        }
        best.map(|(_, p, imported)| self.parse_point(p, imported))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_of_a_row_follows_build_config_params() {
        let a = ConfigKey::of_row(&json!({"hw": "H200-trt", "framework": "SGLang",
            "infmax_model_prefix": "GPTOSS", "precision": "FP8", "tp": 8, "ep": "2",
            "dp_attention": "true", "disagg": 1}));
        assert_eq!(a.hardware, "h200");
        assert_eq!(
            (a.model.as_str(), a.spec_method.as_str()),
            ("gptoss", "none")
        );
        assert_eq!((a.prefill_tp, a.decode_ep), (8, 2));
        assert!(a.prefill_dp_attention && a.decode_dp_attention);
        assert!(!a.disagg, "parse_bool(1) is False in the script");
        let mut stored = a.clone();
        stored.model = "gptoss120b".into();
        assert!(a.baseline_matches(&stored));
        assert!(!stored.baseline_matches(&a), "prefix match, one way");
        stored.prefill_ep = 1;
        assert!(!a.baseline_matches(&stored));
        assert!(like_prefix("qwen3-8b", "qwen_"));
        assert!(!like_prefix("qwen", "qwen3"));
        assert_eq!(extract_hardware("mi355x-multinode"), "mi355x");
        assert_eq!(extract_hardware("b200-trt-disagg"), "b200-trt");
    }
}
