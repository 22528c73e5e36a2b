//! [`EngineOverrides`]: the serving limits an engine's own launch flags set on top of a preset
//! (max running requests, context length, served model name, whose `/metrics` names it
//! speaks). The shimmed engine launch of a real recipe under `servebench run --simulate`
//! reads them from the recipe's argv; on the virtual clock the point's sweep gets the same
//! values as `--sim-*` flags, so the in-process simulator is the engine the recipe launched.

use crate::model::{EngineConfig, MetricsDialect};

/// Launch-flag values that replace a preset's defaults; `None` keeps the preset's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineOverrides {
    /// Max sequences in one step (SGLang `--max-running-requests`, vLLM `--max-num-seqs`,
    /// trtllm-serve `--max_batch_size`).
    pub max_num_seqs: Option<u32>,
    /// Longest prompt + completion accepted, tokens (SGLang `--context-length`, vLLM
    /// `--max-model-len`, trtllm-serve `--max_seq_len`). Taken as given, also above the
    /// model preset's context (as the engine would be started with it).
    pub max_model_len: Option<u32>,
    /// The model name `/v1/models` lists and requests must name (`--served-model-name`).
    pub served_name: Option<String>,
    /// Whose Prometheus series `/metrics` exposes.
    pub metrics_dialect: Option<MetricsDialect>,
}

impl EngineOverrides {
    /// Writes the given values into `cfg`.
    pub fn apply(&self, cfg: &mut EngineConfig) {
        if let Some(n) = self.max_num_seqs {
            cfg.max_num_seqs = n;
        }
        if let Some(c) = self.max_model_len {
            cfg.max_model_len = c;
        }
        if let Some(name) = &self.served_name {
            cfg.model.served_name = name.clone();
        }
        if let Some(d) = self.metrics_dialect {
            cfg.metrics_dialect = d;
        }
    }

    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        *self == EngineOverrides::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_values_replace_the_presets_and_none_keeps_them() {
        let base = EngineConfig::from_presets("b200", "qwen3-8b", 8).unwrap();
        let mut cfg = base.clone();
        EngineOverrides::default().apply(&mut cfg);
        assert_eq!(cfg.max_num_seqs, base.max_num_seqs);
        assert_eq!(cfg.model.served_name, base.model.served_name);
        let o = EngineOverrides {
            max_num_seqs: Some(77),
            max_model_len: Some(262_144),
            served_name: Some("Qwen/Qwen3.5-397B-A17B-FP8".into()),
            metrics_dialect: Some(MetricsDialect::Sglang),
        };
        o.apply(&mut cfg);
        assert_eq!(cfg.max_num_seqs, 77);
        assert_eq!(cfg.max_model_len, 262_144);
        assert_eq!(cfg.model.served_name, "Qwen/Qwen3.5-397B-A17B-FP8");
        assert_eq!(cfg.metrics_dialect, MetricsDialect::Sglang);
        assert_eq!(
            cfg.kv_blocks, base.kv_blocks,
            "the KV budget is the preset's"
        );
    }
}
