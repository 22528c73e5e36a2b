//! [`Identity`]: who and what a point measured (InferenceX `process_result.py` env inputs),
//! and [`BenchmarkType`]: which kind of workload it ran (InferenceX-app `benchmark_type`).

use serde::{Deserialize, Serialize};

/// Kind of benchmark a point ran: the agg row's `benchmark_type` string and InferenceX-app's
/// natural-key column (AUTOMATION.md §7.5). Points of different kinds never match in compare.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkType {
    /// Fixed-sequence single-turn requests (`isl`/`osl` set, e.g. 8192/1024).
    #[default]
    SingleTurn,
    /// AgentX agentic-coding trace replay (`scenario_type: agentic-coding`; `isl`/`osl` null).
    AgenticTraces,
    /// Multi-turn chat replay (`sweep --scenario multiturn`; `isl`/`osl` are the per-turn
    /// nominal lengths).
    MultiTurn,
}

impl BenchmarkType {
    /// Every kind, in declaration order.
    pub const ALL: [BenchmarkType; 3] = [
        BenchmarkType::SingleTurn,
        BenchmarkType::AgenticTraces,
        BenchmarkType::MultiTurn,
    ];

    /// The agg-row string: `single_turn`, `agentic_traces`, `multi_turn`.
    pub fn as_str(self) -> &'static str {
        match self {
            BenchmarkType::SingleTurn => "single_turn",
            BenchmarkType::AgenticTraces => "agentic_traces",
            BenchmarkType::MultiTurn => "multi_turn",
        }
    }

    /// Reads an agg-row string ([`BenchmarkType::as_str`]); `None` for anything else.
    pub fn parse(s: &str) -> Option<BenchmarkType> {
        BenchmarkType::ALL.into_iter().find(|b| b.as_str() == s)
    }
}

/// Where the KV cache may be offloaded beyond GPU memory: InferenceX's `kv_offloading`
/// (config `kv-offloading`, env `KV_OFFLOADING`; `none` or `dram` in its configs, written by
/// `utils/agentic/aggregation/process_agentic_result.py`). InferenceX-app keys points on it:
/// rows differing only by `none` vs `dram` are different points. A row without the key is
/// `none` (every single-turn row InferenceX writes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum KvOffload {
    /// No offload (`none`, also an empty or missing value).
    #[default]
    None,
    /// Host DRAM (`dram`).
    Dram,
    /// Another mode, as written (lowercase).
    Other(String),
}

impl KvOffload {
    /// The key rows carry it under.
    pub const KEY: &'static str = "kv_offloading";

    /// Reads a row's value: `none`/empty/missing → [`KvOffload::None`], `dram` → `Dram`,
    /// anything else kept lowercased.
    pub fn parse(s: Option<&str>) -> KvOffload {
        match s.map(|x| x.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("none") => KvOffload::None,
            Some("dram") => KvOffload::Dram,
            Some(o) => KvOffload::Other(o.to_string()),
        }
    }

    /// As written: `none`, `dram`, or the other mode.
    pub fn as_str(&self) -> &str {
        match self {
            KvOffload::None => "none",
            KvOffload::Dram => "dram",
            KvOffload::Other(s) => s,
        }
    }

    /// Whether it is `none` (serde `skip_serializing_if`: keys without offload keep their
    /// bytes).
    pub fn is_none(&self) -> bool {
        *self == KvOffload::None
    }
}

impl Serialize for KvOffload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for KvOffload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Option::<String>::deserialize(d)?;
        Ok(KvOffload::parse(v.as_deref()))
    }
}

/// The KV-offload backend a point ran with: InferenceX's `kv_offload_backend` (the search
/// space's `kv-offload-backend`, e.g. `{"name": "hicache"}` or `{"name": "lmcache", "version":
/// "aaf7c0d3"}`; `utils/agentic/aggregation/process_agentic_result.py` reads it from
/// `KV_OFFLOAD_BACKEND_METADATA` and writes it only with `name` and an optional `version`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KvOffloadBackend {
    /// Backend name (`hicache`, `lmcache`, `vllm-simple`, `mooncake`, …).
    pub name: String,
    /// Backend version or commit, when the config names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl KvOffloadBackend {
    /// The row key it is written under.
    pub const KEY: &'static str = "kv_offload_backend";

    /// Reads InferenceX's `KV_OFFLOAD_BACKEND_METADATA` form: a JSON object with a non-empty
    /// string `name` and an optional non-empty string `version`, nothing else (the rules of
    /// `optional_kv_offload_backend_metadata`); a bare name (`hicache`) is taken as `{"name":
    /// …}`. The error is one line saying what is wrong.
    pub fn parse(text: &str) -> Result<KvOffloadBackend, String> {
        let t = text.trim();
        if !t.starts_with('{') {
            if t.is_empty() {
                return Err("the backend name is empty".into());
            }
            return Ok(KvOffloadBackend {
                name: t.to_string(),
                version: None,
            });
        }
        let v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(t).map_err(|e| format!("not a JSON object: {e}"))?;
        if let Some(k) = v.keys().find(|k| *k != "name" && *k != "version") {
            return Err(format!("may contain only `name` and `version`, not `{k}`"));
        }
        let field = |k: &str| -> Result<Option<String>, String> {
            match v.get(k) {
                None => Ok(None),
                Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
                Some(_) => Err(format!("`{k}` must be a non-empty string")),
            }
        };
        Ok(KvOffloadBackend {
            name: field("name")?.ok_or("`name` is missing")?,
            version: field("version")?,
        })
    }
}

impl std::fmt::Display for BenchmarkType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who and what a point measured, and how it was deployed: the ONE identity of servebench's
/// rows. The agg row holds it ([`crate::AggRow::identity`], its keys written where InferenceX's
/// `process_result.py` writes them: `hw`, then the point's `conc`, then `image` … `dp_attention`;
/// `benchmark_type` among the servebench keys; `kv_offloading`, `kv_offload_backend` and
/// `allocated_cpu_dram_gb` after the known keys, only with offload), an eval row is filled from it ([`crate::EvalRow::fill_identity`]), the store's
/// point columns are copied from it, and compare's match key (`servebench_compare::PointKey`)
/// is its normalised projection plus `conc`.
///
/// Why the agg row does not `#[serde(flatten)]` it: InferenceX writes the point's `conc`
/// between `hw` and `image`, `benchmark_type` after `schema_version`, and the KV-offload keys
/// (AgentX keys) after every single-node key; a flattened struct writes its fields in one run,
/// so every row's bytes would move (docs/ARCHITECTURE.md, "One identity").
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
    /// Multinode deployment (servebench measures single-node points: always `false` in the
    /// rows it writes).
    #[serde(default)]
    pub is_multinode: bool,
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
    /// Which kind of workload ran (`benchmark_type`).
    #[serde(default)]
    pub benchmark_type: BenchmarkType,
    /// KV-cache offload mode (InferenceX `kv_offloading`); written into the agg row only when
    /// not `none`, so rows without offload keep their bytes.
    #[serde(default, skip_serializing_if = "KvOffload::is_none")]
    pub kv_offloading: KvOffload,
    /// KV-offload backend (InferenceX `kv_offload_backend`); `None` without offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_offload_backend: Option<KvOffloadBackend>,
    /// Host DRAM budget for the offloaded KV cache, GB: InferenceX `allocated_cpu_dram_gb`
    /// (`TOTAL_CPU_DRAM_GB`, the matrix row's `total-cpu-dram-gb`: runner DRAM × the config's
    /// `dram-utilization`, `generate_sweep_configs.py agentic_dram_offload_gb`); 0 without
    /// offload.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub allocated_cpu_dram_gb: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Identity {
    /// A single-node, single-turn point on one GPU's worth of parallelism: TP/PP/DCP/PCP/EP 1,
    /// no DP-attention, no speculative decoding, no KV offload, no recipe fingerprint, ISL/OSL
    /// unknown. The start of fixtures and examples, which override what they vary with struct
    /// update syntax (`Identity { isl: Some(1024), ..Identity::single_node(…) }`).
    pub fn single_node(
        hw: &str,
        image: &str,
        model: &str,
        infmax_model_prefix: &str,
        framework: &str,
        precision: &str,
    ) -> Identity {
        Identity {
            hw: hw.into(),
            image: image.into(),
            model: model.into(),
            infmax_model_prefix: infmax_model_prefix.into(),
            framework: framework.into(),
            precision: precision.into(),
            spec_decoding: "none".into(),
            disagg: false,
            recipe_fingerprint: None,
            isl: None,
            osl: None,
            is_multinode: false,
            tp: 1,
            pp: 1,
            dcp_size: 1,
            pcp_size: 1,
            ep: 1,
            dp_attention: false,
            benchmark_type: BenchmarkType::SingleTurn,
            kv_offloading: Default::default(),
            kv_offload_backend: None,
            allocated_cpu_dram_gb: 0,
        }
    }

    /// GPUs of a single-node point: TP × PP × PCP (EP, DP-attention and DCP do not multiply;
    /// InferenceX `process_result.py`, MEASUREMENT.md Part 2 §2.2).
    pub fn num_gpus(&self) -> u32 {
        self.tp.max(1) * self.pp.max(1) * self.pcp_size.max(1)
    }
}
