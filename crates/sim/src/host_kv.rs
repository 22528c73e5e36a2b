//! The host-DRAM tier of the KV cache (KV offload: SGLang HiCache, vLLM's CPU offloading
//! connector, LMCache), as the simulator models it.
//!
//! Capacity: the point's DRAM budget (InferenceX `total-cpu-dram-gb`, `TOTAL_CPU_DRAM_GB`) in KV
//! blocks: `dram_gb · 1e9 / (kv_bytes_per_token_per_gpu · tp · kv_block_size)` — every GPU
//! offloads the share of each block it holds, and the budget is the node's. Policy: write-through
//! (a prompt's full blocks are copied to DRAM when its prefill completes; the GPU→host copy is
//! asynchronous and not charged), least-recently-used eviction within the capacity, and a flush
//! (`/reset_prefix_cache`, `/flush_cache`) empties both tiers. On admission the leading blocks
//! found in GPU memory are hits as before; the blocks after them found in DRAM are hits too, not
//! prefilled but loaded host→GPU: `tokens · kv_bytes_per_token_per_gpu / (host_link_gb_s · 1e9)`
//! seconds, each GPU over its own host link. The load overlaps the step's forward pass
//! (SGLang HiCache's layer-wise overlap): a step takes `max(compute, memory, host load) + comm +
//! overhead`. Not modelled: the backends' own policies (HiCache write-back/selective writes,
//! page sizes, prefetch from storage), vLLM's asynchronous load that holds only the loading
//! request, host-memory bandwidth limits beyond the link.
//!
//! The link bandwidth is the GPU preset's `host_link_gb_s` (per direction; `presets.json` cites
//! the datasheets).

use crate::error::SimError;
use crate::model::EngineConfig;

/// A host-DRAM KV tier ([`EngineConfig::host_kv`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostKvTier {
    /// DRAM budget, GB (1e9 B): InferenceX `total-cpu-dram-gb`.
    pub dram_gb: f64,
    /// Capacity, KV blocks (see the module docs).
    pub blocks: u64,
    /// Host→GPU bandwidth of one GPU's link, GB/s per direction (the GPU preset's
    /// `host_link_gb_s`).
    pub link_gb_s: f64,
}

impl EngineConfig {
    /// Adds a host-DRAM tier of `dram_gb` GB (module docs). Errors: a budget that is not a
    /// positive number, or a GPU preset without a host-link figure.
    pub fn set_host_kv(&mut self, dram_gb: f64) -> Result<(), SimError> {
        let link_gb_s = self.gpu.host_link_gb_s.ok_or_else(|| SimError::HostKv {
            what: format!(
                "GPU preset {} has no host_link_gb_s (presets.json): the DRAM tier cannot be modelled",
                self.gpu_key
            ),
        })?;
        if !(dram_gb.is_finite() && dram_gb > 0.0) {
            return Err(SimError::HostKv {
                what: format!("DRAM budget {dram_gb} GB is not a positive number"),
            });
        }
        let block_bytes = self.kv_bytes_per_token_per_gpu
            * self.tp.max(1) as f64
            * self.kv_block_size.max(1) as f64;
        self.host_kv = Some(HostKvTier {
            dram_gb,
            blocks: (dram_gb * 1e9 / block_bytes) as u64,
            link_gb_s,
        });
        Ok(())
    }

    /// Modelled time to load `tokens` of KV from the DRAM tier into GPU memory, s (0 without a
    /// tier): each GPU loads its share over its own host link.
    pub fn host_load_s(&self, tokens: u64) -> f64 {
        match &self.host_kv {
            Some(t) if tokens > 0 => {
                tokens as f64 * self.kv_bytes_per_token_per_gpu / (t.link_gb_s * 1e9)
            }
            _ => 0.0,
        }
    }

    /// The DRAM tier's capacity in tokens (0 without one).
    pub fn host_kv_capacity_tokens(&self) -> u64 {
        self.host_kv
            .map_or(0, |t| t.blocks * self.kv_block_size as u64)
    }
}
