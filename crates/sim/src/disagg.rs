//! A disaggregated deployment's shape and costs: prefill workers and decode workers as separate
//! engines ([`EngineConfig`] each), a router policy, and the KV transfer between them
//! (issue 32). The scheduler that runs them is [`crate::fleet::Fleet`].
//!
//! KV transfer time of a request with `L` prompt tokens (docs/simulator.md, "Multinode"):
//! `t = latency + L · kv_bytes_per_token / (bandwidth · efficiency)`, where
//! `kv_bytes_per_token` is one copy of the model's KV (MLA: `layers · (kv_lora_rank +
//! qk_rope_head_dim) · bytes`; GQA: `2 · layers · kv_heads · head_dim · bytes`) and the fabric
//! is NVLink inside an NVL72 domain (GB200/GB300: the GPU preset's `link_gb_s`, NVLink 5 900 GB/s
//! per direction) or RDMA between nodes ([`RDMA_GB_S`]: one 400 Gb/s NIC per GPU).
//!
//! Workers wider than the cost model's 8-GPU TP range (DEP16/DEP32 decode on NVL72) are modelled
//! as `width / 8` data-parallel TP8 replicas with the same EP/DP-attention; the notes say so.

use std::sync::Arc;

use crate::error::SimError;
use crate::model::{EngineConfig, Parallelism};
use crate::presets::Presets;

/// RDMA bandwidth per GPU between nodes, GB/s: one 400 Gb/s NIC per GPU = 50 GB/s. Sources:
/// NVIDIA DGX B200 / DGX H200 user guides (8× ConnectX-7 400 Gb/s InfiniBand/Ethernet compute
/// NICs, one per GPU); AMD Instinct MI355X platforms (8× AMD Pensando Pollara 400 AI NIC).
pub const RDMA_GB_S: f64 = 50.0;

/// Share of the link bandwidth a KV transfer achieves (NIXL / Mooncake / MoRI over UCX): an
/// assumption, not a measurement.
pub const TRANSFER_EFFICIENCY: f64 = 0.7;

/// Fixed cost of one request's KV transfer (handshake, descriptor exchange, completion
/// notification), s: an assumption, not a measurement.
pub const TRANSFER_LATENCY_S: f64 = 1.0e-3;

/// The fabric KV moves over between a prefill and a decode worker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fabric {
    /// NVLink inside one NVL72 domain (GB200/GB300): `gb_s` per direction per GPU.
    Nvlink {
        /// Bandwidth, GB/s.
        gb_s: f64,
    },
    /// RDMA between nodes: `gb_s` per GPU.
    Rdma {
        /// Bandwidth, GB/s.
        gb_s: f64,
    },
}

impl Fabric {
    /// NVLink for the NVL72 GPUs (`gb200`, `gb300`: the preset's `link_gb_s`), RDMA
    /// ([`RDMA_GB_S`]) for every other multinode SKU.
    pub fn for_gpu(gpu_key: &str, link_gb_s: f64) -> Fabric {
        if gpu_key.starts_with("gb") {
            Fabric::Nvlink { gb_s: link_gb_s }
        } else {
            Fabric::Rdma { gb_s: RDMA_GB_S }
        }
    }

    /// Bandwidth, GB/s.
    pub fn gb_s(&self) -> f64 {
        match self {
            Fabric::Nvlink { gb_s } | Fabric::Rdma { gb_s } => *gb_s,
        }
    }

    /// `NVLink 900 GB/s` / `RDMA 50 GB/s`.
    pub fn describe(&self) -> String {
        match self {
            Fabric::Nvlink { gb_s } => format!("NVLink (NVL72 domain) {gb_s} GB/s"),
            Fabric::Rdma { gb_s } => format!("RDMA {gb_s} GB/s per GPU"),
        }
    }
}

/// How the router picks a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterPolicy {
    /// Prefill and decode workers in turn.
    RoundRobin,
    /// KV-aware (Dynamo's KV router): the prefill worker holding the longest cached prefix of
    /// the prompt, ties to the least loaded; decode to the least loaded.
    KvAware,
}

impl RouterPolicy {
    /// `round-robin` / `kv` (also `kv-aware`).
    pub fn parse(s: &str) -> Option<RouterPolicy> {
        match s {
            "round-robin" | "rr" => Some(RouterPolicy::RoundRobin),
            "kv" | "kv-aware" => Some(RouterPolicy::KvAware),
            _ => None,
        }
    }

    /// `round-robin` / `kv-aware`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RouterPolicy::RoundRobin => "round-robin",
            RouterPolicy::KvAware => "kv-aware",
        }
    }
}

/// One side's workers as the catalog writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerShape {
    /// Workers (0 on the decode side: aggregated, prefill workers serve both phases).
    pub workers: u32,
    /// GPUs per worker (TP).
    pub tp: u32,
    /// Expert parallelism.
    pub ep: u32,
    /// DP attention.
    pub dp_attention: bool,
}

impl WorkerShape {
    /// Parses `WxT[/epE][/dpa]` (`1x4/ep4/dpa`, `4x8/ep8`, `0x8`).
    pub fn parse(s: &str) -> Result<WorkerShape, SimError> {
        let bad = |why: &str| SimError::Disagg {
            spec: s.to_string(),
            why: why.to_string(),
        };
        let mut parts = s.split('/');
        let head = parts.next().unwrap_or("");
        let (w, t) = head
            .split_once('x')
            .ok_or_else(|| bad("expected WORKERSxTP, e.g. 4x8/ep8/dpa"))?;
        let workers = w.parse().map_err(|_| bad("workers is not a number"))?;
        let tp: u32 = t.parse().map_err(|_| bad("TP is not a number"))?;
        let mut shape = WorkerShape {
            workers,
            tp: tp.max(1),
            ep: 1,
            dp_attention: false,
        };
        for p in parts {
            if p == "dpa" {
                shape.dp_attention = true;
            } else if let Some(e) = p.strip_prefix("ep") {
                shape.ep = e.parse().map_err(|_| bad("EP is not a number"))?;
            } else {
                return Err(bad(&format!("unknown part `{p}` (epN or dpa)")));
            }
        }
        Ok(shape)
    }

    /// GPUs of the side.
    pub fn gpus(&self) -> u32 {
        self.workers * self.tp
    }
}

/// The whole fleet: one engine configuration per side (all workers of a side are alike).
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// A prefill worker (in aggregated mode: a full engine).
    pub prefill: Arc<EngineConfig>,
    /// Prefill engines (workers × replicas of a worker wider than 8 GPUs).
    pub prefill_engines: u32,
    /// A decode worker; `None` when aggregated.
    pub decode: Option<Arc<EngineConfig>>,
    /// Decode engines.
    pub decode_engines: u32,
    /// The shapes as given (for identity and descriptions).
    pub shapes: (WorkerShape, WorkerShape),
    /// One copy of the model's KV per token, bytes.
    pub kv_bytes_per_token: f64,
    /// Where KV moves.
    pub fabric: Fabric,
    /// Worker choice.
    pub router: RouterPolicy,
    /// What is approximated.
    pub notes: Vec<String>,
}

/// An engine configuration for a worker of `shape` and the number of engines standing for the
/// side (workers × TP8 replicas when a worker is wider than 8 GPUs).
fn side(
    p: &Presets,
    gpu: &str,
    model: &str,
    shape: WorkerShape,
    role: &str,
    notes: &mut Vec<String>,
) -> Result<(EngineConfig, u32), SimError> {
    let (tp, replicas) = if shape.tp > 8 {
        if shape.tp % 8 != 0 {
            return Err(SimError::Disagg {
                spec: format!("{}x{}", shape.workers, shape.tp),
                why: "a worker wider than 8 GPUs must be whole TP8 replicas".into(),
            });
        }
        notes.push(format!(
            "{role} worker TP{} modelled as {} data-parallel TP8 replicas (experts over 8 GPUs, not {})",
            shape.tp,
            shape.tp / 8,
            shape.tp
        ));
        (8, shape.tp / 8)
    } else {
        (shape.tp, 1)
    };
    let par = Parallelism {
        tp,
        ep: if shape.ep >= shape.tp { tp } else { 1 },
        dp_attention: shape.dp_attention,
    };
    let (gk, g) = p.gpu(gpu)?;
    let (mk, m) = p.model(model)?;
    match EngineConfig::with_parallelism(gk, g.clone(), mk, m.clone(), par, p.engine.clone()) {
        // The model does not fit a TP8 replica, but the real worker shards its weights over
        // all its GPUs (DeepSeek-R1 FP8 as TP16 over two H100 nodes): one TP8 engine whose
        // every GPU stands for `replicas` GPUs (their HBM, bandwidth, compute and power summed).
        Err(SimError::DoesNotFit { .. }) if replicas > 1 => {
            let g = gpu_group(g.clone(), replicas);
            notes.pop();
            notes.push(format!(
                "{role} worker TP{} modelled as one TP8 engine whose every GPU stands for {replicas} GPUs \
                 (their HBM, bandwidth, compute and power summed; all-reduce at one GPU's link): \
                 the model does not fit a TP8 replica",
                shape.tp
            ));
            let cfg = EngineConfig::with_parallelism(gk, g, mk, m.clone(), par, p.engine.clone())?;
            Ok((cfg, shape.workers))
        }
        r => Ok((r?, shape.workers * replicas)),
    }
}

/// `k` GPUs of `g` as one: HBM capacity and bandwidth, peak compute, host link and board
/// power times `k` (link bandwidth and the power share unchanged).
fn gpu_group(mut g: crate::presets::GpuSpec, k: u32) -> crate::presets::GpuSpec {
    let k = k as f64;
    g.peak_bf16_tflops *= k;
    g.hbm_tb_s *= k;
    g.hbm_gib *= k;
    g.peak_fp8_tflops = g.peak_fp8_tflops.map(|v| v * k);
    g.peak_fp4_tflops = g.peak_fp4_tflops.map(|v| v * k);
    g.host_link_gb_s = g.host_link_gb_s.map(|v| v * k);
    g.tdp_w = g.tdp_w.map(|v| v * k);
    g.idle_w = g.idle_w.map(|v| v * k);
    g
}

/// One copy of a model's KV per token, bytes (MLA latent, or K and V of every KV head).
pub fn kv_bytes_per_token(m: &crate::presets::ModelSpec) -> f64 {
    match &m.mla {
        Some(mla) => {
            m.layers as f64 * (mla.kv_lora_rank + mla.qk_rope_head_dim) as f64 * m.kv_bytes_per_elem
        }
        None => 2.0 * m.layers as f64 * m.kv_heads as f64 * m.head_dim as f64 * m.kv_bytes_per_elem,
    }
}

impl FleetConfig {
    /// The fleet of `gpu`/`model` presets with `prefill` and `decode` workers (decode 0 workers:
    /// aggregated), KV over `fabric` (default: [`Fabric::for_gpu`]) and the `router`.
    /// `adjust` may change each engine configuration (calibration, recv interval).
    pub fn from_presets(
        gpu: &str,
        model: &str,
        prefill: WorkerShape,
        decode: WorkerShape,
        fabric: Option<Fabric>,
        router: RouterPolicy,
        adjust: impl Fn(&mut EngineConfig),
    ) -> Result<FleetConfig, SimError> {
        let p = Presets::embedded();
        let mut notes = Vec::new();
        if prefill.workers == 0 {
            return Err(SimError::Disagg {
                spec: format!("0x{}", prefill.tp),
                why: "at least one prefill worker is needed".into(),
            });
        }
        let (mut pc, pn) = side(p, gpu, model, prefill, "prefill", &mut notes)?;
        adjust(&mut pc);
        let decode_side = if decode.workers > 0 {
            let (mut dc, dn) = side(p, gpu, model, decode, "decode", &mut notes)?;
            adjust(&mut dc);
            Some((Arc::new(dc), dn))
        } else {
            notes.push("aggregated: the prefill workers serve both phases (no KV transfer)".into());
            None
        };
        let fabric = fabric.unwrap_or_else(|| Fabric::for_gpu(&pc.gpu_key, pc.gpu.link_gb_s));
        Ok(FleetConfig {
            kv_bytes_per_token: kv_bytes_per_token(&pc.model),
            prefill: Arc::new(pc),
            prefill_engines: pn,
            decode_engines: decode_side.as_ref().map_or(0, |d| d.1),
            decode: decode_side.map(|d| d.0),
            shapes: (prefill, decode),
            fabric,
            router,
            notes,
        })
    }

    /// Modelled KV transfer time of a prompt of `tokens`, s (module docs).
    pub fn transfer_s(&self, tokens: u32) -> f64 {
        TRANSFER_LATENCY_S
            + tokens as f64 * self.kv_bytes_per_token
                / (self.fabric.gb_s() * 1e9 * TRANSFER_EFFICIENCY)
    }

    /// GPUs of the deployment: prefill + decode.
    pub fn gpus(&self) -> u32 {
        self.shapes.0.gpus() + self.shapes.1.gpus()
    }

    /// `disaggregated 1×TP4 prefill + 4×TP8 decode, KV over NVLink …, router kv-aware`.
    pub fn describe(&self) -> String {
        let (p, d) = self.shapes;
        let side = |s: WorkerShape| {
            format!(
                "{}×TP{}{}{}",
                s.workers,
                s.tp,
                if s.ep > 1 {
                    format!("/EP{}", s.ep)
                } else {
                    String::new()
                },
                if s.dp_attention { "/DPA" } else { "" }
            )
        };
        let mut s = if self.decode.is_some() {
            format!(
                "disaggregated {} prefill + {} decode ({} GPUs), KV {:.0} KB/token over {}, router {}",
                side(p),
                side(d),
                self.gpus(),
                self.kv_bytes_per_token / 1e3,
                self.fabric.describe(),
                self.router.as_str()
            )
        } else {
            format!(
                "aggregated multinode {} ({} GPUs), router {}",
                side(p),
                self.gpus(),
                self.router.as_str()
            )
        };
        for n in &self.notes {
            s.push_str(&format!("; {n}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_refuse_with_the_spec() {
        let s = WorkerShape::parse("4x8/ep8/dpa").unwrap();
        assert_eq!((s.workers, s.tp, s.ep, s.dp_attention), (4, 8, 8, true));
        assert_eq!(s.gpus(), 32);
        let e = WorkerShape::parse("4x8/pp2").unwrap_err().to_string();
        assert!(e.contains("`4x8/pp2`") && e.contains("pp2"), "{e}");
        assert!(WorkerShape::parse("48").is_err());
    }

    #[test]
    fn kv_transfer_follows_bytes_per_token_and_the_fabric() {
        let shape = |w, tp| WorkerShape {
            workers: w,
            tp,
            ep: tp,
            dp_attention: false,
        };
        let f = FleetConfig::from_presets(
            "b200",
            "deepseek-r1-fp8",
            shape(1, 8),
            shape(1, 8),
            None,
            RouterPolicy::RoundRobin,
            |_| {},
        )
        .unwrap();
        // DeepSeek-R1: 61 layers × (512 + 64) latent × 1 byte (FP8 KV)
        let m = &f.prefill.model;
        let want = 61.0 * 576.0 * m.kv_bytes_per_elem;
        assert_eq!(f.kv_bytes_per_token, want);
        assert_eq!(f.fabric, Fabric::Rdma { gb_s: RDMA_GB_S });
        let t = f.transfer_s(8192) - TRANSFER_LATENCY_S;
        assert!((t - 8192.0 * want / (50e9 * TRANSFER_EFFICIENCY)).abs() < 1e-12);
        // a 32-GPU decode worker is four TP8 replicas
        let f = FleetConfig::from_presets(
            "b200",
            "deepseek-r1-fp8",
            shape(3, 4),
            shape(1, 32),
            None,
            RouterPolicy::KvAware,
            |_| {},
        )
        .unwrap();
        assert_eq!((f.prefill_engines, f.decode_engines, f.gpus()), (3, 4, 44));
        assert!(
            f.describe().contains("4 data-parallel TP8 replicas"),
            "{}",
            f.describe()
        );
    }

    /// DeepSeek-R1 FP8 (~78 GiB of weights per GPU at TP8) does not fit a TP8 replica on the
    /// 80 GB H100, but InferenceX's H100 TP16 workers shard it over two nodes: such a worker is
    /// one TP8 engine over GPU pairs, with the pair's memory, compute and power.
    #[test]
    fn a_worker_whose_model_does_not_fit_a_tp8_replica_is_one_engine_over_gpu_groups() {
        let shape = |tp| WorkerShape {
            workers: 1,
            tp,
            ep: 1,
            dp_attention: false,
        };
        let tp8 = EngineConfig::from_presets("h100", "deepseek-r1-fp8", 8);
        assert!(
            matches!(tp8, Err(SimError::DoesNotFit { tp: 8, .. })),
            "{tp8:?}"
        );
        let f = FleetConfig::from_presets(
            "h100",
            "deepseek-r1-fp8",
            shape(16),
            shape(16),
            None,
            RouterPolicy::RoundRobin,
            |_| {},
        )
        .unwrap();
        assert_eq!((f.prefill_engines, f.decode_engines, f.gpus()), (1, 1, 32));
        let one = Presets::embedded().gpu("h100").unwrap().1.clone();
        let e = &f.prefill;
        assert_eq!(e.tp, 8);
        assert_eq!(e.gpu.hbm_gib, 2.0 * one.hbm_gib);
        assert_eq!(e.gpu.hbm_tb_s, 2.0 * one.hbm_tb_s);
        assert_eq!(e.gpu.tdp_w, one.tdp_w.map(|w| 2.0 * w));
        assert!(e.kv_blocks >= 64);
        let d = f.describe();
        assert!(d.contains("every GPU stands for 2 GPUs"), "{d}");
        assert!(!d.contains("data-parallel TP8 replicas"), "{d}");
    }
}
