//! The cost model: how long one engine step takes on a named GPU serving a named model.
//!
//! Formulas (docs/simulator.md explains and cites each one). For a step that processes chunks
//! `(c_i, n_i)` (n_i new tokens of a sequence that already has c_i tokens in its KV cache),
//! `T = Σ n_i` tokens, `S` sequences of which `s` sample a token, on TP degree `tp`:
//!
//! - FLOPs = 2·P_lin·T + 2·V·h·s + 4·L·H·d·Σ(n_i·c_i + n_i(n_i+1)/2), divided by `tp`;
//!   compute time = FLOPs / (peak · MFU).
//! - bytes = weights read (dense part + experts touched by T tokens) + KV read (Σ c_i) +
//!   KV written (T), per GPU; memory time = bytes / (HBM bandwidth · efficiency).
//! - all-reduce (tp > 1) = 2·L · (α + 2(tp−1)/tp · T·h·2 B / (link · efficiency)).
//! - step time = max(compute, memory) + all-reduce + step overhead + S · per-sequence overhead.
//!
//! DeepSeek-style models add (docs/simulator.md, "Validation against InferenceX"): linear-layer
//! FLOPs at the GPU's FP8/FP4 peak (`compute_dtype`), attention at the BF16 peak; MLA attention
//! FLOPs with the per-head width of the path a chunk takes (prefill: (qk_nope + rope + v)/2,
//! decode with the absorbed latent: (2·kv_lora + rope)/2); KV = one latent per token and layer,
//! replicated on every GPU under TP attention, split over the GPUs under DP attention; routed
//! experts sharded over the TP (= EP) GPUs, attention/dense weights replicated under DP
//! attention.

use std::sync::Arc;

use crate::error::SimError;
use crate::presets::{EngineDefaults, GpuSpec, ModelSpec, Presets};

/// How an engine spreads one model over its GPUs, as a serving recipe sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// GPUs of one engine (tensor-parallel degree of the dense parts), 1–8.
    pub tp: u32,
    /// Expert-parallel degree: 1 (experts tensor-sliced) or `tp` (whole experts per GPU).
    pub ep: u32,
    /// Data-parallel attention (SGLang `--enable-dp-attention`): each GPU runs attention for
    /// its own sequences, holding only their KV.
    pub dp_attention: bool,
}

impl Parallelism {
    /// Plain tensor parallelism of degree `tp`.
    pub fn tp(tp: u32) -> Self {
        Parallelism {
            tp,
            ep: 1,
            dp_attention: false,
        }
    }
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

pub use crate::power::MEMORY_BOUND_POWER_SHARE;

/// A GPU/model/TP combination with everything the scheduler and the cost model need, derived
/// once from the presets. Fields are public so tests and callers can override them (for
/// example a tiny `kv_blocks` to provoke queueing).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// GPU preset key, e.g. "h200".
    pub gpu_key: String,
    /// GPU spec.
    pub gpu: GpuSpec,
    /// Model preset key, e.g. "qwen3-8b".
    pub model_key: String,
    /// Model spec.
    pub model: ModelSpec,
    /// Tensor-parallel degree (GPUs serving one engine).
    pub tp: u32,
    /// Expert-parallel degree (1 or `tp`).
    pub ep: u32,
    /// Data-parallel attention (KV split over the GPUs, attention weights replicated).
    pub dp_attention: bool,
    /// Peak of the linear layers' matrix multiplies, TFLOP/s (the GPU's peak for the model's
    /// `compute_dtype`; BF16 otherwise).
    pub linear_peak_tflops: f64,
    /// Engine constants (efficiencies, overheads).
    pub consts: EngineDefaults,
    /// Max sequences in one step (vLLM `max_num_seqs`).
    pub max_num_seqs: u32,
    /// Token budget of one step (vLLM `max_num_batched_tokens`; prefill is chunked to it).
    pub max_num_batched_tokens: u32,
    /// Tokens per KV block.
    pub kv_block_size: u32,
    /// KV-cache blocks available (the KV token budget is `kv_blocks · kv_block_size`).
    pub kv_blocks: u32,
    /// Longest prompt + completion accepted, tokens: min(model context, KV budget).
    pub max_model_len: u32,
    /// Weight bytes resident per GPU.
    pub weight_bytes_per_gpu: f64,
    /// KV bytes per token per GPU (K and V, all layers, this GPU's share of KV heads).
    pub kv_bytes_per_token_per_gpu: f64,
    /// Whose Prometheus series `GET /metrics` exposes (default vLLM's `vllm:` names).
    pub metrics_dialect: MetricsDialect,
    /// SGLang `--scheduler-recv-interval`: while sequences run, the scheduler takes new
    /// requests from the front end only every this many decode steps (a step that prefills
    /// counts as the full interval, so requests are also taken right after one), as
    /// `sglang/srt/managers/scheduler_recv_skipper.py` does (decode weight 1, other forward
    /// modes 1000). 1 (the default, and vLLM's and TRT-LLM's behaviour): every step.
    pub scheduler_recv_interval: u32,
    /// A planted regression: every step's modelled time (each part of [`StepCost`]) is
    /// multiplied by this factor (`--sim-slowdown F`; 1.0 = the preset's engine). 1.1 makes
    /// every step 10 % slower, so a comparison against an unslowed run must find it.
    pub slowdown: f64,
    /// A host-DRAM KV tier (KV offload, [`crate::host_kv`]); `None`: GPU memory only.
    pub host_kv: Option<crate::host_kv::HostKvTier>,
}

/// The engine whose `/metrics` series names the simulator exposes (same values either way;
/// docs/simulator.md lists the names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetricsDialect {
    /// vLLM's `vllm:` series (`vllm:prompt_tokens_total`, `vllm:prefix_cache_hits_total`, …).
    #[default]
    Vllm,
    /// SGLang's `sglang:` series (`sglang:prompt_tokens_total`,
    /// `sglang:cached_tokens_total{cache_source="device"}`, `sglang:token_usage`, …), as the
    /// shimmed `sglang serve` / `python3 -m sglang.launch_server` of a real recipe serves them.
    Sglang,
    /// AMD ATOM's `atom:` series: vLLM's names and values with the `atom:` prefix (the prefix
    /// InferenceX's ATOM agentic recipes require in AIPerf's server-metrics export).
    Atom,
}

/// Time of one engine step, split by cause. All in seconds of modelled time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepCost {
    /// FLOPs per GPU / (peak · MFU).
    pub compute_s: f64,
    /// Bytes read+written per GPU / (bandwidth · efficiency).
    pub memory_s: f64,
    /// TP all-reduce time (0 at TP 1).
    pub comm_s: f64,
    /// Fixed step overhead + per-sequence overhead.
    pub overhead_s: f64,
    /// Loading DRAM-tier prefix hits into GPU memory ([`crate::host_kv`]; 0 without offload).
    pub host_load_s: f64,
    /// max(compute, memory, host load) + comm + overhead.
    pub total_s: f64,
}

impl StepCost {
    /// Adds `load_s` of host→GPU KV loading, overlapped with the forward pass (layer by layer):
    /// the step takes max(compute, memory, load) + comm + overhead.
    pub fn with_host_load(mut self, load_s: f64) -> StepCost {
        if load_s > 0.0 {
            self.host_load_s = load_s;
            self.total_s =
                self.compute_s.max(self.memory_s).max(load_s) + self.comm_s + self.overhead_s;
        }
        self
    }
}

/// One sequence's share of a step: `tokens` new tokens after `context` cached ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Tokens already in this sequence's KV cache before the step.
    pub context: u32,
    /// Tokens processed in this step (1 for a decode step).
    pub tokens: u32,
    /// Whether the sequence samples a token at the end of this step.
    pub samples: bool,
}

impl EngineConfig {
    /// Resolves `gpu`/`model` names (keys, aliases or served names) at TP degree `tp` using the
    /// embedded presets.
    ///
    /// Errors (one line each): unknown GPU or model ([`SimError::UnknownGpu`],
    /// [`SimError::UnknownModel`]); `tp` not in 1..=8 ([`SimError::Tp`]); KV heads not divisible
    /// by TP or vice versa ([`SimError::TpSplit`]); weights not fitting in HBM at this TP
    /// ([`SimError::DoesNotFit`]).
    pub fn from_presets(gpu: &str, model: &str, tp: u32) -> Result<EngineConfig, SimError> {
        let p = Presets::embedded();
        let (gk, g) = p.gpu(gpu)?;
        let (mk, m) = p.model(model)?;
        Self::new(gk, g.clone(), mk, m.clone(), tp, p.engine.clone())
    }

    /// Builds the configuration from explicit specs (see [`EngineConfig::from_presets`]).
    pub fn new(
        gpu_key: &str,
        gpu: GpuSpec,
        model_key: &str,
        model: ModelSpec,
        tp: u32,
        consts: EngineDefaults,
    ) -> Result<EngineConfig, SimError> {
        Self::with_parallelism(gpu_key, gpu, model_key, model, Parallelism::tp(tp), consts)
    }

    /// Resolves `gpu`/`model` names with the embedded presets at the given parallelism (see
    /// [`EngineConfig::from_presets`]; also [`SimError::Ep`] for an EP other than 1 or TP).
    pub fn from_presets_with(
        gpu: &str,
        model: &str,
        par: Parallelism,
    ) -> Result<EngineConfig, SimError> {
        let p = Presets::embedded();
        let (gk, g) = p.gpu(gpu)?;
        let (mk, m) = p.model(model)?;
        Self::with_parallelism(gk, g.clone(), mk, m.clone(), par, p.engine.clone())
    }

    /// Builds the configuration from explicit specs at the given parallelism. The model's
    /// `calibration`, when present, replaces the engine constants of the same name.
    pub fn with_parallelism(
        gpu_key: &str,
        gpu: GpuSpec,
        model_key: &str,
        model: ModelSpec,
        par: Parallelism,
        mut consts: EngineDefaults,
    ) -> Result<EngineConfig, SimError> {
        let tp = par.tp;
        if !(1..=8).contains(&tp) {
            return Err(SimError::Tp { tp });
        }
        if par.ep != 1 && par.ep != tp {
            return Err(SimError::Ep { ep: par.ep, tp });
        }
        if !model.kv_heads.is_multiple_of(tp) && !tp.is_multiple_of(model.kv_heads) {
            return Err(SimError::TpSplit {
                model: model.name.clone(),
                kv_heads: model.kv_heads,
                tp,
            });
        }
        if let Some(c) = &model.calibration {
            let set = |v: &mut f64, o: Option<f64>| {
                if let Some(x) = o {
                    *v = x;
                }
            };
            set(&mut consts.mfu, c.mfu);
            set(&mut consts.bandwidth_efficiency, c.bandwidth_efficiency);
            set(&mut consts.link_efficiency, c.link_efficiency);
            set(&mut consts.step_overhead_ms, c.step_overhead_ms);
            set(&mut consts.per_seq_overhead_us, c.per_seq_overhead_us);
            set(&mut consts.request_overhead_ms, c.request_overhead_ms);
            set(
                &mut consts.prefill_step_overhead_ms,
                c.prefill_step_overhead_ms,
            );
        }
        let kv_bytes_per_token_per_gpu = match &model.mla {
            // one latent per token and layer; every GPU holds all of it under TP attention
            Some(mla) => {
                let full = model.layers as f64
                    * (mla.kv_lora_rank + mla.qk_rope_head_dim) as f64
                    * model.kv_bytes_per_elem;
                if par.dp_attention {
                    full / tp as f64
                } else {
                    full
                }
            }
            None => {
                let kv_heads_per_gpu = model.kv_heads.div_ceil(tp).max(1);
                2.0 * model.layers as f64
                    * kv_heads_per_gpu as f64
                    * model.head_dim as f64
                    * model.kv_bytes_per_elem
            }
        };
        let (dense_bytes, expert_bytes) = weight_split(&model);
        let weight_bytes_per_gpu = if par.dp_attention {
            dense_bytes + expert_bytes / tp as f64
        } else {
            (dense_bytes + expert_bytes) / tp as f64
        };
        let linear_peak_tflops = linear_peak(&gpu, model.compute_dtype.as_deref());
        let usable =
            gpu.hbm_gib * GIB * consts.gpu_memory_utilization - consts.activation_reserve_gib * GIB;
        let kv_bytes = usable - weight_bytes_per_gpu;
        let block = consts.kv_block_size.max(1);
        let kv_blocks = if kv_bytes > 0.0 {
            ((kv_bytes / kv_bytes_per_token_per_gpu) as u64 / block as u64).min(u32::MAX as u64)
                as u32
        } else {
            0
        };
        if kv_blocks < 64 {
            return Err(SimError::DoesNotFit {
                model: model.name.clone(),
                gpu: gpu.name.clone(),
                tp,
                weights_gib: weight_bytes_per_gpu / GIB,
                usable_gib: usable / GIB,
                utilization_pct: (consts.gpu_memory_utilization * 100.0).round(),
                hbm_gib: gpu.hbm_gib,
                reserve_gib: consts.activation_reserve_gib,
            });
        }
        let large = gpu.hbm_gib >= consts.large_gpu_min_gib && !gpu_key.starts_with("a100");
        let (max_num_seqs, mut max_num_batched_tokens) = if large {
            (
                consts.large_gpu_max_num_seqs,
                consts.large_gpu_max_num_batched_tokens,
            )
        } else {
            (
                consts.small_gpu_max_num_seqs,
                consts.small_gpu_max_num_batched_tokens,
            )
        };
        if par.dp_attention {
            // every attention rank chunks its own prefill
            max_num_batched_tokens = max_num_batched_tokens.saturating_mul(tp);
        }
        let kv_tokens = kv_blocks as u64 * block as u64;
        let max_model_len = (model.max_model_len as u64).min(kv_tokens) as u32;
        Ok(EngineConfig {
            gpu_key: gpu_key.to_string(),
            gpu,
            model_key: model_key.to_string(),
            model,
            tp,
            ep: par.ep,
            dp_attention: par.dp_attention,
            linear_peak_tflops,
            consts,
            max_num_seqs,
            max_num_batched_tokens,
            kv_block_size: block,
            kv_blocks,
            max_model_len,
            weight_bytes_per_gpu,
            kv_bytes_per_token_per_gpu,
            metrics_dialect: MetricsDialect::Vllm,
            scheduler_recv_interval: 1,
            slowdown: 1.0,
            host_kv: None,
        })
    }

    /// KV-cache budget in tokens (`kv_blocks · kv_block_size`).
    pub fn kv_capacity_tokens(&self) -> u64 {
        self.kv_blocks as u64 * self.kv_block_size as u64
    }

    /// Parameters touched per token (all of a dense model; shared part + top-k experts of a MoE).
    pub fn active_params(&self) -> f64 {
        let m = &self.model;
        match &m.moe {
            None => m.params as f64,
            Some(moe) => {
                let e = moe.expert_params as f64;
                m.params as f64 - e + e * moe.experts_per_token as f64 / moe.num_experts as f64
            }
        }
    }

    /// Parameters of the embedding matrix (vocab × hidden).
    fn embed_params(&self) -> f64 {
        self.model.vocab as f64 * self.model.hidden as f64
    }

    /// Per-token linear-layer parameters: active params without the input embedding and the
    /// LM head (the LM head is charged only to sampling positions).
    pub fn linear_params_per_token(&self) -> f64 {
        let heads = if self.model.tie_embeddings { 1.0 } else { 2.0 };
        self.active_params() - heads * self.embed_params()
    }

    /// Weight bytes a step reads (whole engine, all GPUs) when it processes `tokens` tokens:
    /// every dense weight except the input embedding (only gathered rows are read), plus for a
    /// MoE the experts that at least one token is routed to, E·(1 − (1 − k/E)^T) per layer.
    pub fn weight_bytes_read(&self, tokens: u32) -> f64 {
        let (dense, experts) = self.weight_bytes_read_split(tokens);
        dense + experts
    }

    /// [`EngineConfig::weight_bytes_read`] as (dense part, routed experts touched).
    fn weight_bytes_read_split(&self, tokens: u32) -> (f64, f64) {
        let m = &self.model;
        let input_embed = if m.tie_embeddings {
            0.0
        } else {
            self.embed_params()
        };
        match &m.moe {
            None => ((m.params as f64 - input_embed) * m.bytes_per_param, 0.0),
            Some(moe) => {
                let e = moe.expert_params as f64;
                let k_over_e = moe.experts_per_token as f64 / moe.num_experts as f64;
                let touched = 1.0 - (1.0 - k_over_e).powf(tokens.max(1) as f64);
                let eb = m.expert_bytes_per_param.unwrap_or(m.bytes_per_param);
                (
                    (m.params as f64 - e - input_embed) * m.bytes_per_param,
                    e * touched * eb,
                )
            }
        }
    }

    /// Weight bytes one GPU reads in a step of `tokens` tokens: the dense part is split over
    /// the GPUs (replicated under DP attention), the experts touched always are.
    fn weight_bytes_read_per_gpu(&self, tokens: u32) -> f64 {
        let (dense, experts) = self.weight_bytes_read_split(tokens);
        let tp = self.tp as f64;
        if self.dp_attention {
            dense + experts / tp
        } else {
            (dense + experts) / tp
        }
    }

    /// The GPU's power parameters (`tdp_w`, `idle_w`, `overhead_power_share` of its preset;
    /// an absent share is 0). `None` when the preset has no power figures.
    pub fn power_params(&self) -> Option<crate::power::PowerParams> {
        Some(crate::power::PowerParams {
            tdp_w: self.gpu.tdp_w?,
            idle_w: self.gpu.idle_w?,
            overhead_power_share: self.gpu.overhead_power_share.unwrap_or(0.0),
        })
    }

    /// Modelled board power of one GPU during a step of cost `cost`, W
    /// ([`crate::power::step_power_w`], docs/simulator.md "Energy"): `idle_w + (tdp_w − idle_w)
    /// · u`, `u` from the step's compute, memory and overhead time. `None` when the GPU preset
    /// has no power figures.
    pub fn step_power_w(&self, cost: &StepCost) -> Option<f64> {
        Some(crate::power::step_power_w(&self.power_params()?, cost))
    }

    /// Modelled energy of a step from `start_s` to `end_s` (modelled s) on all the engine's
    /// GPUs, J: [`EngineConfig::step_power_w`] × duration × TP.
    pub fn step_energy_j(&self, start_s: f64, end_s: f64, cost: &StepCost) -> Option<f64> {
        Some(self.step_power_w(cost)? * (end_s - start_s).max(0.0) * self.tp as f64)
    }

    /// Modelled duration of one step processing `chunks` (see the module docs for the formula),
    /// × [`EngineConfig::slowdown`].
    pub fn step_cost(&self, chunks: &[Chunk]) -> StepCost {
        let m = &self.model;
        let tp = self.tp as f64;
        let mut tokens: u64 = 0;
        let mut sampled: u64 = 0;
        let mut pairs: f64 = 0.0;
        let mut ctx: f64 = 0.0;
        for c in chunks {
            let n = c.tokens as f64;
            tokens += c.tokens as u64;
            sampled += c.samples as u64;
            pairs += n * c.context as f64 + n * (n + 1.0) / 2.0;
            ctx += c.context as f64;
        }
        let t = tokens as f64;
        // attention: 4·L·H·d per (query, key) pair; MLA's d depends on the path (module docs)
        let attn = match &m.mla {
            None => 4.0 * m.layers as f64 * m.heads as f64 * m.head_dim as f64 * pairs,
            Some(mla) => {
                let prefill_d =
                    (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim) as f64 / 2.0;
                let decode_d = (2 * mla.kv_lora_rank + mla.qk_rope_head_dim) as f64 / 2.0;
                let decode_pairs: f64 = chunks
                    .iter()
                    .filter(|c| c.tokens == 1)
                    .map(|c| c.context as f64 + 1.0)
                    .sum();
                4.0 * m.layers as f64
                    * m.heads as f64
                    * (prefill_d * (pairs - decode_pairs) + decode_d * decode_pairs)
            }
        };
        let linear = 2.0 * self.linear_params_per_token() * t;
        let other = 2.0 * self.embed_params() * sampled as f64 + attn;
        let bf16 = self.gpu.peak_bf16_tflops * 1e12 * self.consts.mfu;
        let compute_s =
            (linear / (self.linear_peak_tflops * 1e12 * self.consts.mfu) + other / bf16) / tp;
        let bytes = self.weight_bytes_read_per_gpu(tokens.min(u32::MAX as u64) as u32)
            + (ctx + t) * self.kv_bytes_per_token_per_gpu;
        let memory_s = bytes / (self.gpu.hbm_tb_s * 1e12 * self.consts.bandwidth_efficiency);
        let comm_s = if self.tp > 1 {
            let msg = t * m.hidden as f64 * 2.0;
            2.0 * m.layers as f64
                * (self.consts.allreduce_latency_us * 1e-6
                    + 2.0 * (tp - 1.0) / tp * msg
                        / (self.gpu.link_gb_s * 1e9 * self.consts.link_efficiency))
        } else {
            0.0
        };
        let prefills = chunks.iter().any(|c| c.tokens > 1);
        let overhead_s = self.consts.step_overhead_ms * 1e-3
            + chunks.len() as f64 * self.consts.per_seq_overhead_us * 1e-6
            + if prefills {
                self.consts.prefill_step_overhead_ms * 1e-3
            } else {
                0.0
            };
        // A planted regression (`--sim-slowdown F`) scales every part alike, so the parts
        // still add up to the total.
        let f = self.slowdown;
        let (compute_s, memory_s, comm_s, overhead_s) =
            (compute_s * f, memory_s * f, comm_s * f, overhead_s * f);
        StepCost {
            compute_s,
            memory_s,
            comm_s,
            overhead_s,
            host_load_s: 0.0,
            total_s: compute_s.max(memory_s) + comm_s + overhead_s,
        }
    }

    /// One line: "simulated 1× H200 SXM 141GB (TP1; 989.4 TFLOP/s BF16, 4.8 TB/s, 141 GiB each)
    /// serving Qwen3-8B (8.19B params, 2 bytes/param, 36 layers); KV budget N tokens, max batch
    /// M, chunk C tokens".
    pub fn describe(&self) -> String {
        let m = &self.model;
        let kind = match &m.moe {
            Some(moe) => format!(
                ", MoE {}/{} experts, {:.2}B active",
                moe.experts_per_token,
                moe.num_experts,
                self.active_params() / 1e9
            ),
            None => String::new(),
        };
        format!(
            "simulated {}× {} (TP{}{}; {} TFLOP/s BF16, {} TB/s, {} GiB each) serving {} ({:.2}B params{}, {} bytes/param, {} layers); KV budget {} tokens, max batch {}, chunk {} tokens",
            self.tp,
            self.gpu.name,
            self.tp,
            match (self.ep, self.dp_attention) {
                (1, false) => String::new(),
                (ep, dp) => format!(" EP{ep}{}", if dp { " DP-attention" } else { "" }),
            },
            self.gpu.peak_bf16_tflops,
            self.gpu.hbm_tb_s,
            self.gpu.hbm_gib,
            m.name,
            m.params as f64 / 1e9,
            kind,
            m.bytes_per_param,
            m.layers,
            self.kv_capacity_tokens(),
            self.max_num_seqs,
            self.max_num_batched_tokens
        ) + &match &self.host_kv {
            Some(t) => format!(
                "; KV offload to a {} GB DRAM tier ({} tokens) at {} GB/s host link",
                t.dram_gb,
                self.host_kv_capacity_tokens(),
                t.link_gb_s
            ),
            None => String::new(),
        }
    }
}

/// Bytes of (non-expert, routed-expert) weights of the whole model.
fn weight_split(m: &ModelSpec) -> (f64, f64) {
    let e = m
        .moe
        .as_ref()
        .map(|x| x.expert_params as f64)
        .unwrap_or(0.0);
    let eb = m.expert_bytes_per_param.unwrap_or(m.bytes_per_param);
    ((m.params as f64 - e) * m.bytes_per_param, e * eb)
}

/// The GPU's peak for a matrix-multiply data type, TFLOP/s: FP4 falls back to FP8, FP8 to
/// BF16, when the GPU lacks the narrower tensor cores.
fn linear_peak(g: &GpuSpec, dtype: Option<&str>) -> f64 {
    match dtype {
        Some("fp4") => g
            .peak_fp4_tflops
            .or(g.peak_fp8_tflops)
            .unwrap_or(g.peak_bf16_tflops),
        Some("fp8") => g.peak_fp8_tflops.unwrap_or(g.peak_bf16_tflops),
        _ => g.peak_bf16_tflops,
    }
}

/// Shared handle to a configuration.
pub type SharedConfig = Arc<EngineConfig>;

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(g: &str, m: &str, tp: u32) -> EngineConfig {
        EngineConfig::from_presets(g, m, tp).unwrap()
    }

    #[test]
    fn kv_bytes_per_token_follow_the_gqa_shape() {
        // 2 (K,V) × 36 layers × 8 KV heads × 128 × 2 bytes = 147,456 B.
        assert_eq!(
            cfg("h200", "qwen3-8b", 1).kv_bytes_per_token_per_gpu,
            147_456.0
        );
        // Llama-3.1-8B: 2 × 32 × 8 × 128 × 2 = 131,072 B; TP2 halves it.
        assert_eq!(
            cfg("h100", "llama-3.1-8b", 1).kv_bytes_per_token_per_gpu,
            131_072.0
        );
        assert_eq!(
            cfg("h100", "llama-3.1-8b", 2).kv_bytes_per_token_per_gpu,
            65_536.0
        );
        // Qwen3-30B-A3B at TP8 has 4 KV heads: replicated, one per GPU.
        assert_eq!(
            cfg("h100", "qwen3-30b-a3b", 8).kv_bytes_per_token_per_gpu,
            24_576.0
        );
    }

    #[test]
    fn step_power_lies_between_idle_and_tdp_by_utilisation() {
        let c = cfg("h200", "qwen3-8b", 1);
        let decode = c.step_cost(&[Chunk {
            context: 1024,
            tokens: 1,
            samples: true,
        }]);
        let prefill = c.step_cost(&[Chunk {
            context: 0,
            tokens: 8192,
            samples: true,
        }]);
        let (idle, tdp) = (77.0, 700.0);
        let pd = c.step_power_w(&decode).unwrap();
        let pp = c.step_power_w(&prefill).unwrap();
        // a batch-1 decode step streams the weights: memory-bound, part of the dynamic range
        let u = MEMORY_BOUND_POWER_SHARE * decode.memory_s / decode.total_s;
        assert!((pd - (idle + (tdp - idle) * u)).abs() < 1e-9, "{pd}");
        assert!(idle < pd && pd < idle + (tdp - idle) * MEMORY_BOUND_POWER_SHARE);
        // a large prefill is compute-bound: close to the board limit, never above it
        assert!(pp > pd && pp <= tdp, "{pp} vs {pd}");
        // an idle wait draws idle power; energy = power × time × TP
        assert_eq!(c.step_power_w(&StepCost::default()), Some(idle));
        let c2 = cfg("h200", "qwen3-8b", 2);
        assert_eq!(
            c2.step_energy_j(1.0, 3.0, &StepCost::default()),
            Some(idle * 2.0 * 2.0)
        );
        // every GPU preset carries its power figures and their source
        for g in [
            "h100",
            "h200",
            "b200",
            "b300",
            "a100",
            "a100-40gb",
            "mi300x",
            "mi325x",
            "mi355x",
        ] {
            let gpu = cfg(g, "qwen3-8b", 8).gpu;
            let (t, i) = (gpu.tdp_w.unwrap(), gpu.idle_w.unwrap());
            assert!(0.0 < i && i < t, "{g}");
            assert!(
                gpu.power_source.unwrap().contains(" W"),
                "{g}: a source naming the watts"
            );
        }
    }

    #[test]
    fn slowdown_multiplies_every_part_of_the_step() {
        let base = cfg("h200", "qwen3-8b", 2);
        let mut slow = base.clone();
        slow.slowdown = 1.1;
        let chunks = [
            Chunk {
                context: 0,
                tokens: 512,
                samples: true,
            },
            Chunk {
                context: 900,
                tokens: 1,
                samples: true,
            },
        ];
        let (a, b) = (base.step_cost(&chunks), slow.step_cost(&chunks));
        for (x, y) in [
            (a.compute_s, b.compute_s),
            (a.memory_s, b.memory_s),
            (a.comm_s, b.comm_s),
            (a.overhead_s, b.overhead_s),
            (a.total_s, b.total_s),
        ] {
            assert!(x > 0.0 && (y / x - 1.1).abs() < 1e-12, "{x} → {y}");
        }
        // A closed-loop point: every modelled latency 10 % longer, throughput 1/1.1.
        let w = crate::Workload {
            concurrency: 4,
            num_requests: 16,
            input_tokens: 512,
            output_tokens: 64,
            request_overhead: false,
        };
        let s0 = crate::simulate_closed_loop(Arc::new(base), &w);
        let s1 = crate::simulate_closed_loop(Arc::new(slow), &w);
        assert!((s1.mean_tpot_ms / s0.mean_tpot_ms - 1.1).abs() < 1e-9);
        assert!((s1.mean_ttft_ms / s0.mean_ttft_ms - 1.1).abs() < 1e-9);
        assert!((s0.output_throughput / s1.output_throughput - 1.1).abs() < 1e-9);
    }

    #[test]
    fn kv_budget_is_memory_left_after_weights() {
        let c = cfg("h100", "llama-3.1-8b", 1);
        // 80 GiB × 0.9 − 2 GiB − 16.06 GB of weights ≈ 54.0 GiB → ≈ 442k tokens.
        let tokens = c.kv_capacity_tokens();
        assert!((430_000..455_000).contains(&tokens), "{tokens}");
        // H200 has more memory, so more KV; B200 more still.
        assert!(cfg("h200", "llama-3.1-8b", 1).kv_capacity_tokens() > tokens);
        assert!(
            cfg("b200", "llama-3.1-8b", 1).kv_capacity_tokens()
                > cfg("h200", "llama-3.1-8b", 1).kv_capacity_tokens()
        );
        assert_eq!(c.max_model_len, 131_072);
    }

    #[test]
    fn batch_defaults_follow_vllm_rule() {
        let h = cfg("h100", "qwen3-8b", 1);
        assert_eq!((h.max_num_seqs, h.max_num_batched_tokens), (1024, 8192));
        let a = cfg("a100", "qwen3-8b", 1);
        assert_eq!((a.max_num_seqs, a.max_num_batched_tokens), (256, 2048));
    }

    #[test]
    fn models_that_do_not_fit_are_refused_with_one_line() {
        let e = EngineConfig::from_presets("h100", "llama-3.1-70b", 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not fit on H100") && e.contains("TP 1"),
            "{e}"
        );
        assert!(EngineConfig::from_presets("h100", "llama-3.1-70b", 4).is_ok());
        let e = EngineConfig::from_presets("h100", "qwen3-8b", 3)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("tp:"), "{e}");
        let e = EngineConfig::from_presets("h100", "qwen3-8b", 16)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("tp:"), "{e}");
    }

    #[test]
    fn moe_active_params_and_expert_reads() {
        let c = cfg("h100", "qwen3-30b-a3b", 1);
        let active = c.active_params() / 1e9;
        assert!((3.2..3.45).contains(&active), "{active}"); // model card: 3.3B activated
                                                            // One token touches 8 of 128 experts per layer; 8192 tokens touch essentially all.
        let one = c.weight_bytes_read(1);
        let many = c.weight_bytes_read(8192);
        assert!(one < 7e9, "{one}");
        assert!(many > 55e9 && many < 61.1e9, "{many}");
        // Dense models read the same weights whatever the batch.
        let d = cfg("h100", "qwen3-8b", 1);
        assert_eq!(d.weight_bytes_read(1), d.weight_bytes_read(512));
        // 8.19B − 0.62B input embedding = 7.57B params × 2 bytes.
        assert!((d.weight_bytes_read(1) / 1e9 - 15.14).abs() < 0.05);
    }

    #[test]
    fn decode_is_memory_bound_and_long_prefill_compute_bound() {
        let c = cfg("h100", "qwen3-8b", 1);
        let decode = c.step_cost(&[Chunk {
            context: 1000,
            tokens: 1,
            samples: true,
        }]);
        assert!(decode.memory_s > 10.0 * decode.compute_s, "{decode:?}");
        let prefill = c.step_cost(&[Chunk {
            context: 0,
            tokens: 8192,
            samples: true,
        }]);
        assert!(prefill.compute_s > 10.0 * prefill.memory_s, "{prefill:?}");
        // 2 × 6.95e9 × 8192 ≈ 114 TFLOP (+ attention) at 989.4 × 0.55 TFLOP/s ≈ 0.22 s.
        assert!((0.2..0.26).contains(&prefill.total_s), "{prefill:?}");
        assert_eq!(decode.comm_s, 0.0);
        let tp2 = cfg("h100", "qwen3-8b", 2).step_cost(&[Chunk {
            context: 1000,
            tokens: 1,
            samples: true,
        }]);
        assert!(
            tp2.comm_s > 0.0 && tp2.total_s < decode.total_s,
            "{tp2:?} vs {decode:?}"
        );
    }
}
