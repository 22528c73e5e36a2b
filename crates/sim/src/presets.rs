//! GPU, model and engine presets, embedded from `crates/sim/presets.json`.
//!
//! Every number carries its source in the data file (`source` fields); docs/simulator.md
//! explains how each one is used.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::error::SimError;

/// The presets file, compiled into the binary.
pub const PRESETS_JSON: &str = include_str!("../presets.json");

/// A named accelerator: peak dense BF16 compute, HBM bandwidth and capacity, interconnect.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct GpuSpec {
    /// Display name, e.g. "H200 SXM 141GB".
    pub name: String,
    /// Other accepted spellings (lower case).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Peak dense BF16 tensor throughput, TFLOP/s (1e12 FLOP/s), no sparsity.
    pub peak_bf16_tflops: f64,
    /// HBM bandwidth, TB/s (1e12 B/s).
    pub hbm_tb_s: f64,
    /// HBM capacity, GiB.
    pub hbm_gib: f64,
    /// GPU-to-GPU link bandwidth per direction, GB/s (1e9 B/s); used for the TP all-reduce.
    pub link_gb_s: f64,
    /// Peak dense FP8 tensor throughput, TFLOP/s (absent: no FP8 tensor cores).
    #[serde(default)]
    pub peak_fp8_tflops: Option<f64>,
    /// Peak dense FP4 tensor throughput, TFLOP/s (absent: no FP4 tensor cores).
    #[serde(default)]
    pub peak_fp4_tflops: Option<f64>,
    /// Where the numbers come from.
    pub source: String,
    /// Host link (CPU DRAM ↔ GPU) bandwidth per direction, GB/s (1e9 B/s): the KV-offload
    /// DRAM tier's load bandwidth ([`crate::host_kv`]); absent: no DRAM tier can be modelled.
    #[serde(default)]
    pub host_link_gb_s: Option<f64>,
    /// Where `host_link_gb_s` comes from.
    #[serde(default)]
    pub host_link_source: Option<String>,
    /// Board power limit (TDP / TBP), W: the modelled power of a fully busy GPU (absent: no
    /// modelled energy).
    #[serde(default)]
    pub tdp_w: Option<f64>,
    /// Board power of an idle GPU with a model loaded, W.
    #[serde(default)]
    pub idle_w: Option<f64>,
    /// Share of (TDP − idle) drawn during a step's all-reduce and overhead time
    /// (docs/simulator.md "Energy"); fitted on measured power where a GPU has rows with it
    /// (`power_fit::fit_power`), absent (= 0) elsewhere.
    #[serde(default)]
    pub overhead_power_share: Option<f64>,
    /// Where `tdp_w`, `idle_w` and `overhead_power_share` come from.
    #[serde(default)]
    pub power_source: Option<String>,
}

/// Mixture-of-experts shape of a model.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct MoeSpec {
    /// Routed experts per layer.
    pub num_experts: u32,
    /// Experts each token is routed to (top-k).
    pub experts_per_token: u32,
    /// Parameters of all routed experts over all layers.
    pub expert_params: u64,
}

/// Multi-head latent attention (DeepSeek-V2/V3/R1): the KV cache holds one compressed latent
/// of `kv_lora_rank + qk_rope_head_dim` elements per token and layer, shared by all heads.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct MlaSpec {
    /// Rank of the compressed KV latent.
    pub kv_lora_rank: u32,
    /// Decoupled RoPE key dimension (cached beside the latent).
    pub qk_rope_head_dim: u32,
    /// Per-head query/key dimension without RoPE.
    pub qk_nope_head_dim: u32,
    /// Per-head value dimension.
    pub v_head_dim: u32,
}

/// Multi-token-prediction module (recorded; speculative decoding is not modelled).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct MtpSpec {
    /// Extra prediction layers (DeepSeek `num_nextn_predict_layers`).
    pub num_nextn_predict_layers: u32,
    /// Parameters of the module.
    pub params: u64,
}

/// Efficiency factors fitted for one model family (they replace the engine defaults of the
/// same name). Each is `None` when not fitted.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Calibration {
    /// Fraction of peak FLOP/s.
    #[serde(default)]
    pub mfu: Option<f64>,
    /// Fraction of peak HBM bandwidth.
    #[serde(default)]
    pub bandwidth_efficiency: Option<f64>,
    /// Fraction of link bandwidth.
    #[serde(default)]
    pub link_efficiency: Option<f64>,
    /// Fixed cost of every engine step, ms.
    #[serde(default)]
    pub step_overhead_ms: Option<f64>,
    /// Extra cost per sequence in a step, µs.
    #[serde(default)]
    pub per_seq_overhead_us: Option<f64>,
    /// Front-end latency, ms.
    #[serde(default)]
    pub request_overhead_ms: Option<f64>,
    /// Extra fixed cost of a prefill step, ms.
    #[serde(default)]
    pub prefill_step_overhead_ms: Option<f64>,
    /// How and on what the numbers were fitted.
    #[serde(default)]
    pub fit: String,
}

/// A named model: transformer shape, parameter count and bytes per parameter.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ModelSpec {
    /// Display name, e.g. "Qwen3-8B".
    pub name: String,
    /// The id served in `/v1/models` and accepted in the `model` field.
    pub served_name: String,
    /// Other accepted spellings (lower case).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Total parameters (including embeddings and all experts).
    pub params: u64,
    /// Bytes per weight parameter (2 = BF16).
    pub bytes_per_param: f64,
    /// Bytes per KV-cache element (2 = BF16).
    pub kv_bytes_per_elem: f64,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u32,
    /// Query heads.
    pub heads: u32,
    /// Key/value heads (GQA).
    pub kv_heads: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Vocabulary size (also the simulator's token-id range).
    pub vocab: u32,
    /// Whether the LM head shares the input embedding matrix.
    pub tie_embeddings: bool,
    /// Model context length, tokens (capped by the KV budget at run time).
    pub max_model_len: u32,
    /// Present for mixture-of-experts models.
    #[serde(default)]
    pub moe: Option<MoeSpec>,
    /// Bytes per routed-expert parameter when it differs from `bytes_per_param` (FP4 experts
    /// of an otherwise FP8 checkpoint).
    #[serde(default)]
    pub expert_bytes_per_param: Option<f64>,
    /// Data type of the linear layers' matrix multiplies: "bf16" (default), "fp8" or "fp4";
    /// picks the GPU peak (falling back to the next wider type the GPU has).
    #[serde(default)]
    pub compute_dtype: Option<String>,
    /// Multi-head latent attention (DeepSeek); `kv_heads`/`head_dim` are then 1 and the latent
    /// width.
    #[serde(default)]
    pub mla: Option<MlaSpec>,
    /// Multi-token-prediction module, if the checkpoint has one (not modelled).
    #[serde(default)]
    pub mtp: Option<MtpSpec>,
    /// Efficiency factors fitted for this model (override the engine defaults).
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Where the numbers come from.
    pub source: String,
}

/// Engine behaviour constants (see docs/simulator.md, "Constants").
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct EngineDefaults {
    /// Fraction of peak FLOP/s reached by prefill and compute-bound steps.
    pub mfu: f64,
    /// Fraction of peak HBM bandwidth reached by weight/KV reads.
    pub bandwidth_efficiency: f64,
    /// Fraction of link bandwidth reached by the TP all-reduce.
    pub link_efficiency: f64,
    /// Fixed latency of one all-reduce, µs.
    pub allreduce_latency_us: f64,
    /// Fixed cost of every engine step (scheduling, sampling, launch gaps), ms.
    pub step_overhead_ms: f64,
    /// Extra cost per sequence in a step, µs.
    pub per_seq_overhead_us: f64,
    /// Extra fixed cost of a step that prefills (a chunk of more than one token), ms: prefill
    /// runs without CUDA graphs, so its kernel launches are not amortised (0 unless fitted).
    #[serde(default)]
    pub prefill_step_overhead_ms: f64,
    /// Front-end latency before a request reaches the scheduler (HTTP, template, tokenize), ms.
    pub request_overhead_ms: f64,
    /// Fraction of HBM the engine may use (vLLM `--gpu-memory-utilization`).
    pub gpu_memory_utilization: f64,
    /// HBM kept for activations, CUDA graphs and runtime, GiB per GPU.
    pub activation_reserve_gib: f64,
    /// Tokens per KV-cache block.
    pub kv_block_size: u32,
    /// GPUs with at least this much HBM (GiB), other than A100, get the large batch defaults.
    pub large_gpu_min_gib: f64,
    /// `max_num_seqs` on large GPUs.
    pub large_gpu_max_num_seqs: u32,
    /// `max_num_batched_tokens` on large GPUs.
    pub large_gpu_max_num_batched_tokens: u32,
    /// `max_num_seqs` on other GPUs.
    pub small_gpu_max_num_seqs: u32,
    /// `max_num_batched_tokens` on other GPUs.
    pub small_gpu_max_num_batched_tokens: u32,
    /// Where the numbers come from.
    pub source: String,
}

/// The whole presets file.
#[derive(Debug, Clone, Deserialize)]
pub struct Presets {
    /// File format version (1).
    pub schema_version: u32,
    /// GPUs by key (lower case, e.g. "h200").
    pub gpus: BTreeMap<String, GpuSpec>,
    /// Models by key (lower case, e.g. "qwen3-8b").
    pub models: BTreeMap<String, ModelSpec>,
    /// Engine constants.
    pub engine: EngineDefaults,
}

impl Presets {
    /// The embedded presets (parsed once).
    ///
    /// Panics only if the embedded file is malformed, which the unit tests rule out.
    pub fn embedded() -> &'static Presets {
        static P: OnceLock<Presets> = OnceLock::new();
        P.get_or_init(|| {
            serde_json::from_str(PRESETS_JSON).expect("crates/sim/presets.json is valid")
        })
    }

    /// Finds a GPU by key or alias, case-insensitively. Returns `(key, spec)`.
    ///
    /// Errors: [`SimError::UnknownGpu`], one line naming the unknown GPU and listing the known
    /// keys.
    pub fn gpu(&self, name: &str) -> Result<(&str, &GpuSpec), SimError> {
        let want = name.trim().to_ascii_lowercase();
        for (k, g) in &self.gpus {
            if *k == want || g.aliases.contains(&want) {
                return Ok((k.as_str(), g));
            }
        }
        Err(SimError::UnknownGpu {
            name: name.to_string(),
            known: self.gpus.keys().cloned().collect(),
        })
    }

    /// Finds a model by key, served name or alias, case-insensitively. Returns `(key, spec)`.
    ///
    /// Errors: [`SimError::UnknownModel`], one line naming the unknown model and listing the
    /// known keys.
    pub fn model(&self, name: &str) -> Result<(&str, &ModelSpec), SimError> {
        let want = name.trim().to_ascii_lowercase();
        for (k, m) in &self.models {
            if *k == want || m.served_name.to_ascii_lowercase() == want || m.aliases.contains(&want)
            {
                return Ok((k.as_str(), m));
            }
        }
        Err(SimError::UnknownModel {
            name: name.to_string(),
            known: self.models.keys().cloned().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_presets_parse_and_cover_the_required_names() {
        let p = Presets::embedded();
        assert_eq!(p.schema_version, 1);
        for g in ["h100", "h200", "b200"] {
            let (k, spec) = p.gpu(g).unwrap();
            assert_eq!(k, g);
            assert!(spec.peak_bf16_tflops > 100.0 && spec.hbm_tb_s > 1.0 && spec.hbm_gib >= 40.0);
        }
        for m in ["qwen3-8b", "llama-3.1-8b", "qwen3-30b-a3b"] {
            let (k, spec) = p.model(m).unwrap();
            assert_eq!(k, m);
            assert_eq!(spec.heads % spec.kv_heads, 0, "{m}: GQA groups");
        }
        assert!(p.model("qwen3-30b-a3b").unwrap().1.moe.is_some());
        assert!(p.model("qwen3-8b").unwrap().1.moe.is_none());
    }

    #[test]
    fn lookups_accept_aliases_and_served_names_case_insensitively() {
        let p = Presets::embedded();
        assert_eq!(p.gpu("H200").unwrap().0, "h200");
        assert_eq!(p.gpu("nvidia-b200").unwrap().0, "b200");
        assert_eq!(p.model("Qwen/Qwen3-8B").unwrap().0, "qwen3-8b");
        assert_eq!(
            p.model("meta-llama/Llama-3.1-8B-Instruct").unwrap().0,
            "llama-3.1-8b"
        );
    }

    #[test]
    fn unknown_names_give_one_line_listing_known_keys() {
        let p = Presets::embedded();
        let e = p.gpu("tpu-v5").unwrap_err().to_string();
        assert!(
            e.contains("unknown GPU `tpu-v5`") && e.contains("h200"),
            "{e}"
        );
        let e = p.model("gpt-9").unwrap_err().to_string();
        assert!(
            e.contains("unknown model `gpt-9`") && e.contains("qwen3-8b"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn moe_expert_params_match_the_config_shape() {
        // 48 layers x 128 experts x (gate + up + down = 3 x hidden x moe_intermediate 768).
        let m = Presets::embedded().model("qwen3-30b-a3b").unwrap().1;
        let moe = m.moe.as_ref().unwrap();
        assert_eq!(
            moe.expert_params,
            48 * 128 * 3 * m.hidden as u64 * 768,
            "expert_params in presets.json"
        );
    }
}
