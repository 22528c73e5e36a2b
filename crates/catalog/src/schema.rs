//! The master-config schema (AUTOMATION.md §1.3–1.5) and its validation rules V1–V16 (§2.1).
//!
//! Two layers:
//! 1. `*Raw` structs derive `Deserialize` with `deny_unknown_fields` (V1) and are read from the
//!    positioned YAML tree by [`crate::de`], so type errors and unknown fields name line:column
//!    and the field path;
//! 2. [`build_entry`] checks the cross-field rules (V2–V15) and produces the resolved model
//!    ([`ConfigEntry`]) that the matrix generator walks. Pass-through mappings (workers, router,
//!    KV-offload backend) keep their YAML key order as JSON, because the generator's output rows
//!    carry them verbatim.
//!
//! Rules, with the message each one produces (path and position are added by the caller):
//! * V1 unknown field: `unknown field 'x' (allowed: …)`; missing: `missing required field 'x'`;
//!   wrong type: `expected an integer, got string "4"` (stricter than pydantic's lax coercion).
//! * V2 `conc-start and conc-list are mutually exclusive`, `give either conc-list or both
//!   conc-start and conc-end`, `conc-start requires conc-end`, `conc-start and conc-end must be
//!   greater than 0`, `conc-start (64) must be <= conc-end (4)`, `conc-list must not be empty`,
//!   `conc-list entries must be greater than 0`.
//! * V3 `tp (6) must be divisible by dcp-size (4)`.
//! * V4 `must be greater than 0, got 0` (pp, dcp-size, pcp-size; strict integers).
//! * V5 `hardware must be specified for both prefill and decode, or neither`.
//! * V6 `disagg=true requires kv-p2p-transfer at the top level or in every search-space entry`.
//! * V7 `router must be declared either at the top level or in search-space entries, not both`
//!   (same for kv-p2p-transfer).
//! * V8 `kv-p2p-transfer is only valid when multinode=true`.
//! * V9 `agentic configs must use a 'cluster:<name>' runner, got 'b200'`.
//! * V10 `kv-offload-backend is required when kv-offloading is 'dram'` /
//!   `kv-offload-backend can only be set when kv-offloading is not 'none'`.
//! * V11 `kv-offloading='dram' requires dram-utilization`.
//! * V12 `agentic search-space entries must specify exactly one of tp, or both prefill and decode`,
//!   `single-node agentic search-space entries must specify kv-offloading`,
//!   `multinode agentic search-space entries cannot specify 'pp', 'dcp-size', 'pcp-size'`,
//!   `agentic search-space entries of a single-node config must use tp` (and the multinode twin).
//! * V13 `at least one scenario type must be specified`.
//! * V14 `disagg: true requires multinode: true`.
//! * V15 `version must be a release, package version, or source commit, not an image reference`.
//! * V16 (file level, see [`crate::catalog`]) no `*` in keys, no key defined twice.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::de::{path_string, Seg};
use crate::yaml::{Mark, Node};

/// A string that must not be empty (pydantic `min_length=1`).
#[derive(Debug, Clone, PartialEq)]
pub struct NonEmpty(pub String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(serde::de::Error::custom("must not be empty"));
        }
        Ok(NonEmpty(s))
    }
}

/// A strictly positive integer (pydantic `Field(gt=0, strict=True)`), default 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PosInt(pub i64);

impl Default for PosInt {
    fn default() -> Self {
        PosInt(1)
    }
}

impl<'de> Deserialize<'de> for PosInt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        if v <= 0 {
            return Err(serde::de::Error::custom(format!(
                "must be greater than 0, got {v}"
            )));
        }
        Ok(PosInt(v))
    }
}

/// `spec-decoding` values accepted by InferenceX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecDecoding {
    /// Multi-token prediction.
    Mtp,
    /// Draft-model speculation.
    DraftModel,
    /// No speculation (default).
    #[default]
    None,
}

impl SpecDecoding {
    /// The YAML/JSON spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            SpecDecoding::Mtp => "mtp",
            SpecDecoding::DraftModel => "draft_model",
            SpecDecoding::None => "none",
        }
    }
}

/// `kv-offloading` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvOffloading {
    /// No KV offload.
    None,
    /// Offload KV cache to host DRAM.
    Dram,
}

impl KvOffloading {
    /// The YAML/JSON spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            KvOffloading::None => "none",
            KvOffloading::Dram => "dram",
        }
    }
}

/// `router: {name, version}` (ComponentMetadata).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRaw {
    /// Component name.
    pub name: NonEmpty,
    /// Release / package version / commit (never `image:…`).
    pub version: NonEmpty,
}

/// `kv-offload-backend: {name, version?}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvBackendRaw {
    /// Backend name (`hicache`, `native`, `mooncake`, …).
    pub name: NonEmpty,
    /// Optional independent version.
    #[serde(default)]
    pub version: Option<NonEmpty>,
}

/// A multinode worker pool (`prefill` / `decode`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkerRaw {
    /// Number of worker replicas.
    pub num_worker: i64,
    /// Tensor parallel size.
    pub tp: i64,
    /// Pipeline parallel size (default 1).
    #[serde(default)]
    pub pp: PosInt,
    /// Decode context parallel (default 1; reuses TP GPUs).
    #[serde(default)]
    pub dcp_size: PosInt,
    /// Prefill context parallel (default 1).
    #[serde(default)]
    pub pcp_size: PosInt,
    /// Expert parallel size (required).
    pub ep: i64,
    /// DP attention (required).
    pub dp_attn: bool,
    /// Result label only.
    #[serde(default)]
    pub hardware: Option<NonEmpty>,
    /// `KEY=VALUE` strings for the launcher.
    #[serde(default)]
    pub additional_settings: Option<Vec<String>>,
}

/// Single-node fixed-seq-len search-space entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SingleSearchRaw {
    /// Tensor parallel size.
    pub tp: i64,
    /// Pipeline parallel.
    #[serde(default)]
    pub pp: PosInt,
    /// Decode context parallel.
    #[serde(default)]
    pub dcp_size: PosInt,
    /// Prefill context parallel.
    #[serde(default)]
    pub pcp_size: PosInt,
    /// Expert parallel (emitted as 1 when absent).
    #[serde(default)]
    pub ep: Option<i64>,
    /// Speculative decoding.
    #[serde(default)]
    pub spec_decoding: SpecDecoding,
    /// DP attention (emitted as false when absent).
    #[serde(default)]
    pub dp_attn: Option<bool>,
    /// Router metadata.
    #[serde(default)]
    pub router: Option<ComponentRaw>,
    /// Accepted only to report V8 clearly.
    #[serde(default)]
    pub kv_p2p_transfer: Option<NonEmpty>,
    /// Range start.
    #[serde(default)]
    pub conc_start: Option<i64>,
    /// Range end.
    #[serde(default)]
    pub conc_end: Option<i64>,
    /// Explicit list.
    #[serde(default)]
    pub conc_list: Option<Vec<i64>>,
}

/// Multinode fixed-seq-len search-space entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MultiSearchRaw {
    /// Speculative decoding.
    #[serde(default)]
    pub spec_decoding: SpecDecoding,
    /// Prefill pool.
    pub prefill: WorkerRaw,
    /// Decode pool.
    pub decode: WorkerRaw,
    /// Router metadata.
    #[serde(default)]
    pub router: Option<ComponentRaw>,
    /// KV transfer name.
    #[serde(default)]
    pub kv_p2p_transfer: Option<NonEmpty>,
    /// Range start.
    #[serde(default)]
    pub conc_start: Option<i64>,
    /// Range end.
    #[serde(default)]
    pub conc_end: Option<i64>,
    /// Explicit list.
    #[serde(default)]
    pub conc_list: Option<Vec<i64>>,
}

/// Agentic-coding search-space entry (single-node `tp` or multinode `prefill`+`decode`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AgenticSearchRaw {
    /// Single-node TP.
    #[serde(default)]
    pub tp: Option<i64>,
    /// Pipeline parallel (single-node only).
    #[serde(default)]
    pub pp: Option<PosInt>,
    /// Decode context parallel (single-node only).
    #[serde(default)]
    pub dcp_size: Option<PosInt>,
    /// Prefill context parallel (single-node only).
    #[serde(default)]
    pub pcp_size: Option<PosInt>,
    /// Expert parallel.
    #[serde(default)]
    pub ep: Option<i64>,
    /// DP attention.
    #[serde(default)]
    pub dp_attn: Option<bool>,
    /// Speculative decoding.
    #[serde(default)]
    pub spec_decoding: SpecDecoding,
    /// Prefill pool.
    #[serde(default)]
    pub prefill: Option<WorkerRaw>,
    /// Decode pool.
    #[serde(default)]
    pub decode: Option<WorkerRaw>,
    /// KV offload mode.
    #[serde(default)]
    pub kv_offloading: Option<KvOffloading>,
    /// KV offload backend.
    #[serde(default)]
    pub kv_offload_backend: Option<KvBackendRaw>,
    /// Router metadata.
    #[serde(default)]
    pub router: Option<ComponentRaw>,
    /// KV transfer name.
    #[serde(default)]
    pub kv_p2p_transfer: Option<NonEmpty>,
    /// Range start.
    #[serde(default)]
    pub conc_start: Option<i64>,
    /// Range end.
    #[serde(default)]
    pub conc_end: Option<i64>,
    /// Explicit list.
    #[serde(default)]
    pub conc_list: Option<Vec<i64>>,
}

/// One `fixed-seq-len` block.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FixedRaw<S> {
    /// Input sequence length (tokens).
    pub isl: i64,
    /// Output sequence length (tokens).
    pub osl: i64,
    /// The search space.
    pub search_space: Vec<S>,
}

/// One `agentic-coding` block.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AgenticRaw {
    /// The search space.
    pub search_space: Vec<AgenticSearchRaw>,
    /// Fraction of the node's DRAM budget for KV offload, in (0, 1].
    #[serde(default)]
    pub dram_utilization: Option<f64>,
}

/// `scenarios:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[serde(bound(deserialize = "S: Deserialize<'de>"))]
pub struct ScenariosRaw<S> {
    /// Fixed sequence-length sweeps.
    #[serde(default = "Option::default")]
    pub fixed_seq_len: Option<Vec<FixedRaw<S>>>,
    /// AgentX trace replay.
    #[serde(default = "Option::default")]
    pub agentic_coding: Option<Vec<AgenticRaw>>,
}

/// A master-config entry (generic over the fixed search-space shape).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EntryRaw<S> {
    /// Container image reference.
    pub image: String,
    /// HF model id or launcher alias.
    pub model: String,
    /// Canonical model code.
    pub model_prefix: String,
    /// Precision (`fp4`, `fp8`, …).
    pub precision: String,
    /// Framework (`sglang`, `dynamo-trt`, …).
    pub framework: String,
    /// Runner label.
    pub runner: String,
    /// Multinode schema switch.
    pub multinode: bool,
    /// Disaggregated prefill/decode.
    #[serde(default)]
    pub disagg: bool,
    /// Router metadata.
    #[serde(default)]
    pub router: Option<ComponentRaw>,
    /// KV transfer name (multinode only).
    #[serde(default)]
    pub kv_p2p_transfer: Option<NonEmpty>,
    /// The scenarios.
    pub scenarios: ScenariosRaw<S>,
}

// ------------------------------------------------------------------------------------------------
// Resolved model
// ------------------------------------------------------------------------------------------------

/// Concurrency of one search-space entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Conc {
    /// `conc-start`..`conc-end`, multiplied by the step, end always included.
    Range {
        /// First value.
        start: i64,
        /// Last value (always emitted).
        end: i64,
    },
    /// `conc-list`, emitted as written.
    List(Vec<i64>),
}

impl Conc {
    /// Expands with `step` (2 by default): `4..100` step 2 → 4, 8, 16, 32, 64, 100.
    ///
    /// Source: InferenceX `generate_sweep_configs.py` (multiply, clamp the last value to the end).
    pub fn expand(&self, step: i64) -> Vec<i64> {
        match self {
            Conc::List(v) => v.clone(),
            Conc::Range { start, end } => expand_range(*start, *end, step),
        }
    }
}

/// Range expansion: multiply by `step`, clamp to `end`, always include `end`.
pub fn expand_range(start: i64, end: i64, step: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut c = start;
    while c <= end {
        out.push(c);
        if c == end {
            break;
        }
        c = c.saturating_mul(step);
        if c > end {
            c = end;
        }
        if out.len() > 1_000_000 {
            break;
        }
    }
    out
}

/// A multinode worker pool with its original YAML mapping (for verbatim output).
#[derive(Debug, Clone)]
pub struct Worker {
    /// Replicas.
    pub num_worker: i64,
    /// TP.
    pub tp: i64,
    /// PP.
    pub pp: i64,
    /// DCP.
    pub dcp_size: i64,
    /// PCP.
    pub pcp_size: i64,
    /// EP.
    pub ep: i64,
    /// DP attention.
    pub dp_attn: bool,
    /// Result label.
    pub hardware: Option<String>,
    /// Launcher settings.
    pub additional_settings: Option<Vec<String>>,
    /// The YAML mapping as written (key order kept, no defaults added).
    pub json: Map<String, Value>,
}

impl Worker {
    /// The matrix form: the YAML mapping with `pp`, `dcp-size`, `pcp-size` appended when absent
    /// (InferenceX `with_worker_parallelism_defaults`).
    pub fn matrix_json(&self) -> Map<String, Value> {
        let mut m = self.json.clone();
        for k in ["pp", "dcp-size", "pcp-size"] {
            if !m.contains_key(k) {
                m.insert(k.to_string(), Value::from(1));
            }
        }
        m
    }

    /// GPUs of one replica: `tp × pp × pcp` (DCP reuses TP GPUs).
    pub fn gpus_per_replica(&self) -> i64 {
        self.tp * self.pp * self.pcp_size
    }
}

/// Topology of a search-space entry.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Topology {
    /// One node: TP×PP×PCP GPUs.
    Single {
        /// TP.
        tp: i64,
        /// PP.
        pp: i64,
        /// DCP.
        dcp_size: i64,
        /// PCP.
        pcp_size: i64,
        /// EP when given (matrix default 1).
        ep: Option<i64>,
        /// DP attention when given (matrix default false).
        dp_attn: Option<bool>,
    },
    /// Prefill + decode pools.
    Disagg {
        /// Prefill pool.
        prefill: Worker,
        /// Decode pool.
        decode: Worker,
    },
}

/// One resolved search-space entry.
#[derive(Debug, Clone)]
pub struct SearchEntry {
    /// Topology.
    pub topology: Topology,
    /// `mtp` / `draft_model` / `none`.
    pub spec_decoding: SpecDecoding,
    /// Router metadata declared on the entry (JSON as written).
    pub router: Option<Value>,
    /// KV transfer declared on the entry.
    pub kv_p2p_transfer: Option<String>,
    /// Concurrency.
    pub conc: Conc,
    /// Agentic only: KV offload mode (None when not given).
    pub kv_offloading: Option<KvOffloading>,
    /// Agentic only: backend mapping as written.
    pub kv_offload_backend: Option<Value>,
    /// Position of the entry.
    pub mark: Mark,
}

/// One `fixed-seq-len` block, resolved.
#[derive(Debug, Clone)]
pub struct FixedScenario {
    /// ISL (tokens).
    pub isl: i64,
    /// OSL (tokens).
    pub osl: i64,
    /// Entries in source order.
    pub search_space: Vec<SearchEntry>,
}

/// One `agentic-coding` block, resolved.
#[derive(Debug, Clone)]
pub struct AgenticScenario {
    /// DRAM utilization in (0, 1].
    pub dram_utilization: Option<f64>,
    /// Entries in source order.
    pub search_space: Vec<SearchEntry>,
}

/// A validated master-config entry.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    /// The config key.
    pub key: String,
    /// The file it came from.
    pub file: String,
    /// Position of the key.
    pub mark: Mark,
    /// Image reference.
    pub image: String,
    /// Model id.
    pub model: String,
    /// Model prefix.
    pub model_prefix: String,
    /// Precision.
    pub precision: String,
    /// Framework.
    pub framework: String,
    /// Runner label.
    pub runner: String,
    /// Multinode schema.
    pub multinode: bool,
    /// Disaggregated.
    pub disagg: bool,
    /// Top-level router (JSON as written).
    pub router: Option<Value>,
    /// Top-level KV transfer.
    pub kv_p2p_transfer: Option<String>,
    /// Fixed-seq-len blocks.
    pub fixed: Vec<FixedScenario>,
    /// Agentic blocks.
    pub agentic: Vec<AgenticScenario>,
    /// The entry's YAML mapping as JSON (for `catalog show`).
    pub json: Value,
}

/// A rule violation inside one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Position.
    pub mark: Mark,
    /// Field path inside the entry.
    pub path: String,
    /// Message.
    pub message: String,
}

struct Ctx<'a> {
    issues: Vec<Issue>,
    root: &'a Node,
}

impl Ctx<'_> {
    fn push(&mut self, mark: Mark, path: &[Seg], message: impl Into<String>) {
        self.issues.push(Issue {
            mark,
            path: path_string(path),
            message: message.into(),
        });
    }
}

fn node_at<'n>(root: &'n Node, path: &[Seg]) -> Option<&'n Node> {
    let mut n = root;
    for seg in path {
        n = match seg {
            Seg::Key(k) => n.get(k)?,
            Seg::Index(i) => n.idx(*i)?,
        };
    }
    Some(n)
}

fn mark_at(root: &Node, path: &[Seg]) -> Mark {
    // Nearest existing ancestor.
    for cut in (0..=path.len()).rev() {
        if let Some(n) = node_at(root, &path[..cut]) {
            return n.mark;
        }
    }
    root.mark
}

fn key_mark(root: &Node, path: &[Seg], key: &str) -> Mark {
    node_at(root, path)
        .and_then(|n| n.key_node(key))
        .map(|k| k.mark)
        .unwrap_or_else(|| mark_at(root, path))
}

fn with(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

fn k(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

fn json_at(ctx: &Ctx, path: &[Seg]) -> Value {
    node_at(ctx.root, path)
        .and_then(|n| n.to_json().ok())
        .unwrap_or(Value::Null)
}

fn check_component(ctx: &mut Ctx, c: &ComponentRaw, path: &[Seg]) {
    if c.version.0.starts_with("image:") {
        let p = with(path, k("version"));
        ctx.push(
            mark_at(ctx.root, &p),
            &p,
            "version must be a release, package version, or source commit, not an image reference",
        );
    }
}

fn check_backend(ctx: &mut Ctx, c: &KvBackendRaw, path: &[Seg]) {
    if let Some(v) = &c.version {
        if v.0.starts_with("image:") {
            let p = with(path, k("version"));
            ctx.push(
                mark_at(ctx.root, &p),
                &p,
                "version must be a release, package version, or source commit, not an image reference",
            );
        }
    }
}

fn check_conc(
    ctx: &mut Ctx,
    path: &[Seg],
    start: Option<i64>,
    end: Option<i64>,
    list: &Option<Vec<i64>>,
) -> Option<Conc> {
    let mark = mark_at(ctx.root, path);
    if let Some(list) = list {
        if start.is_some() || end.is_some() {
            let which = if start.is_some() {
                "conc-start"
            } else {
                "conc-end"
            };
            ctx.push(
                mark,
                path,
                format!("{which} and conc-list are mutually exclusive"),
            );
            return None;
        }
        if list.is_empty() {
            ctx.push(mark, path, "conc-list must not be empty");
            return None;
        }
        if list.iter().any(|c| *c <= 0) {
            ctx.push(mark, path, "conc-list entries must be greater than 0");
            return None;
        }
        return Some(Conc::List(list.clone()));
    }
    match (start, end) {
        (None, None) => {
            ctx.push(
                mark,
                path,
                "give either conc-list or both conc-start and conc-end",
            );
            None
        }
        (Some(_), None) => {
            ctx.push(mark, path, "conc-start requires conc-end");
            None
        }
        (None, Some(_)) => {
            ctx.push(mark, path, "conc-end requires conc-start");
            None
        }
        (Some(s), Some(e)) => {
            if s <= 0 || e <= 0 {
                ctx.push(mark, path, "conc-start and conc-end must be greater than 0");
                None
            } else if s > e {
                ctx.push(
                    mark,
                    path,
                    format!("conc-start ({s}) must be <= conc-end ({e})"),
                );
                None
            } else {
                Some(Conc::Range { start: s, end: e })
            }
        }
    }
}

fn check_tp_dcp(ctx: &mut Ctx, path: &[Seg], tp: i64, dcp: i64) {
    if tp % dcp != 0 {
        let p = with(path, k("dcp-size"));
        ctx.push(
            mark_at(ctx.root, &p),
            path,
            format!("tp ({tp}) must be divisible by dcp-size ({dcp})"),
        );
    }
}

fn worker(ctx: &mut Ctx, w: &WorkerRaw, path: &[Seg]) -> Worker {
    check_tp_dcp(ctx, path, w.tp, w.dcp_size.0);
    let json = match json_at(ctx, path) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Worker {
        num_worker: w.num_worker,
        tp: w.tp,
        pp: w.pp.0,
        dcp_size: w.dcp_size.0,
        pcp_size: w.pcp_size.0,
        ep: w.ep,
        dp_attn: w.dp_attn,
        hardware: w.hardware.as_ref().map(|h| h.0.clone()),
        additional_settings: w.additional_settings.clone(),
        json,
    }
}

fn check_hardware_pair(ctx: &mut Ctx, path: &[Seg], p: &WorkerRaw, d: &WorkerRaw) {
    if p.hardware.is_some() != d.hardware.is_some() {
        ctx.push(
            mark_at(ctx.root, path),
            path,
            "hardware must be specified for both prefill and decode, or neither",
        );
    }
}

/// The search-space entries of an entry in a shape-independent form, for the scope rules.
struct ScopeView {
    path: Vec<Seg>,
    has_router: bool,
    kv_p2p: bool,
}

/// Validates one entry (already deserialized) and resolves it.
///
/// `raw_multi` / `raw_single` is the deserialized form matching the entry's `multinode` flag.
/// Returns the resolved entry, or the list of rule violations. The entry's `json` is left
/// `Null`: the caller owns the node and moves it in with [`Node::into_json`] (no copy).
pub fn build_entry(
    key: &str,
    file: &str,
    node: &Node,
    entry_mark: Mark,
    single: Option<&EntryRaw<SingleSearchRaw>>,
    multi: Option<&EntryRaw<MultiSearchRaw>>,
) -> Result<ConfigEntry, Vec<Issue>> {
    let mut ctx = Ctx {
        issues: Vec::new(),
        root: node,
    };
    let root: Vec<Seg> = Vec::new();

    // Common top-level view.
    let (
        image,
        model,
        model_prefix,
        precision,
        framework,
        runner,
        multinode,
        disagg,
        router,
        kvp2p,
        agentic_raw,
        fixed_len,
    ) = match (single, multi) {
        (Some(e), _) => (
            &e.image,
            &e.model,
            &e.model_prefix,
            &e.precision,
            &e.framework,
            &e.runner,
            e.multinode,
            e.disagg,
            &e.router,
            &e.kv_p2p_transfer,
            &e.scenarios.agentic_coding,
            e.scenarios
                .fixed_seq_len
                .as_ref()
                .map(|v| v.len())
                .unwrap_or(0),
        ),
        (None, Some(e)) => (
            &e.image,
            &e.model,
            &e.model_prefix,
            &e.precision,
            &e.framework,
            &e.runner,
            e.multinode,
            e.disagg,
            &e.router,
            &e.kv_p2p_transfer,
            &e.scenarios.agentic_coding,
            e.scenarios
                .fixed_seq_len
                .as_ref()
                .map(|v| v.len())
                .unwrap_or(0),
        ),
        (None, None) => unreachable!("one schema is given"),
    };

    check_top_level(
        &mut ctx,
        &root,
        TopLevel {
            multinode,
            disagg,
            runner,
            router,
            kvp2p,
            fixed_len,
            agentic_len: agentic_raw.as_ref().map(|v| v.len()).unwrap_or(0),
        },
    );

    let mut scope: Vec<ScopeView> = Vec::new();
    let mut fixed = Vec::new();

    // Fixed-seq-len blocks.
    if let Some(e) = single {
        fixed_single(&mut ctx, e, &mut scope, &mut fixed);
    }
    if let Some(e) = multi {
        fixed_multi(&mut ctx, e, &mut scope, &mut fixed);
    }

    // Agentic blocks.
    let agentic = agentic_blocks(&mut ctx, agentic_raw, multinode, &mut scope);

    check_scopes(
        &mut ctx,
        router.is_some(),
        kvp2p.is_some(),
        multinode,
        disagg,
        &scope,
    );

    if !ctx.issues.is_empty() {
        return Err(ctx.issues);
    }
    Ok(ConfigEntry {
        key: key.to_string(),
        file: file.to_string(),
        mark: entry_mark,
        image: image.clone(),
        model: model.clone(),
        model_prefix: model_prefix.clone(),
        precision: precision.clone(),
        framework: framework.clone(),
        runner: runner.clone(),
        multinode,
        disagg,
        router: router.as_ref().map(|_| json_at(&ctx, &[k("router")])),
        kv_p2p_transfer: kvp2p.as_ref().map(|x| x.0.clone()),
        fixed,
        agentic,
        // Filled by the loader, which moves the node into it ([`crate::catalog::load_entry`]).
        json: Value::Null,
    })
}

/// The top-level facts [`check_top_level`] checks (taken from either schema's entry).
struct TopLevel<'a> {
    multinode: bool,
    disagg: bool,
    runner: &'a str,
    router: &'a Option<ComponentRaw>,
    kvp2p: &'a Option<NonEmpty>,
    fixed_len: usize,
    agentic_len: usize,
}

/// Rules on the entry's top level: V14 (disagg needs multinode), V13 (a scenario), V9
/// (agentic on a cluster runner), the top-level router, V8 (kv-p2p-transfer multinode only).
fn check_top_level(ctx: &mut Ctx, root: &[Seg], t: TopLevel) {
    let node = ctx.root;
    let TopLevel {
        multinode,
        disagg,
        runner,
        router,
        kvp2p,
        fixed_len,
        agentic_len,
    } = t;
    // V14
    if !multinode && disagg {
        ctx.push(
            mark_at(node, &[k("disagg")]),
            &[k("disagg")],
            "disagg: true requires multinode: true",
        );
    }
    // V13
    if fixed_len == 0 && agentic_len == 0 {
        ctx.push(
            mark_at(node, &[k("scenarios")]),
            &[k("scenarios")],
            "at least one scenario type must be specified",
        );
    }
    // V9
    if agentic_len > 0 && !runner.starts_with("cluster:") {
        ctx.push(
            mark_at(node, &[k("runner")]),
            &[k("runner")],
            format!("agentic configs must use a 'cluster:<name>' runner, got '{runner}'"),
        );
    }
    if let Some(r) = router {
        check_component(ctx, r, &[k("router")]);
    }
    // V8 (top level)
    if !multinode && kvp2p.is_some() {
        ctx.push(
            key_mark(node, root, "kv-p2p-transfer"),
            &[k("kv-p2p-transfer")],
            "kv-p2p-transfer is only valid when multinode=true",
        );
    }
}

/// The single-node fixed-seq-len blocks: each search-space entry checked (conc, TP×DCP,
/// router, no kv-p2p-transfer) and resolved; its scope view recorded for V6/V7.
fn fixed_single(
    ctx: &mut Ctx,
    e: &EntryRaw<SingleSearchRaw>,
    scope: &mut Vec<ScopeView>,
    fixed: &mut Vec<FixedScenario>,
) {
    let node = ctx.root;
    for (i, blk) in e.scenarios.fixed_seq_len.iter().flatten().enumerate() {
        let bpath = vec![k("scenarios"), k("fixed-seq-len"), Seg::Index(i)];
        let mut entries = Vec::new();
        for (j, s) in blk.search_space.iter().enumerate() {
            let p = with(&with(&bpath, k("search-space")), Seg::Index(j));
            let conc = check_conc(ctx, &p, s.conc_start, s.conc_end, &s.conc_list);
            check_tp_dcp(ctx, &p, s.tp, s.dcp_size.0);
            if let Some(r) = &s.router {
                check_component(ctx, r, &with(&p, k("router")));
            }
            if s.kv_p2p_transfer.is_some() {
                ctx.push(
                    key_mark(node, &p, "kv-p2p-transfer"),
                    &p,
                    "kv-p2p-transfer is only valid when multinode=true",
                );
            }
            scope.push(ScopeView {
                path: p.clone(),
                has_router: s.router.is_some(),
                kv_p2p: s.kv_p2p_transfer.is_some(),
            });
            if let Some(conc) = conc {
                entries.push(SearchEntry {
                    topology: Topology::Single {
                        tp: s.tp,
                        pp: s.pp.0,
                        dcp_size: s.dcp_size.0,
                        pcp_size: s.pcp_size.0,
                        ep: s.ep,
                        dp_attn: s.dp_attn,
                    },
                    spec_decoding: s.spec_decoding,
                    router: s
                        .router
                        .as_ref()
                        .map(|_| json_at(ctx, &with(&p, k("router")))),
                    kv_p2p_transfer: s.kv_p2p_transfer.as_ref().map(|x| x.0.clone()),
                    conc,
                    kv_offloading: None,
                    kv_offload_backend: None,
                    mark: mark_at(node, &p),
                });
            }
        }
        fixed.push(FixedScenario {
            isl: blk.isl,
            osl: blk.osl,
            search_space: entries,
        });
    }
}

/// The multinode fixed-seq-len blocks: each search-space entry checked (conc, the
/// prefill/decode pair and workers, router) and resolved; its scope view recorded for V6/V7.
fn fixed_multi(
    ctx: &mut Ctx,
    e: &EntryRaw<MultiSearchRaw>,
    scope: &mut Vec<ScopeView>,
    fixed: &mut Vec<FixedScenario>,
) {
    let node = ctx.root;
    for (i, blk) in e.scenarios.fixed_seq_len.iter().flatten().enumerate() {
        let bpath = vec![k("scenarios"), k("fixed-seq-len"), Seg::Index(i)];
        let mut entries = Vec::new();
        for (j, s) in blk.search_space.iter().enumerate() {
            let p = with(&with(&bpath, k("search-space")), Seg::Index(j));
            let conc = check_conc(ctx, &p, s.conc_start, s.conc_end, &s.conc_list);
            check_hardware_pair(ctx, &p, &s.prefill, &s.decode);
            let prefill = worker(ctx, &s.prefill, &with(&p, k("prefill")));
            let decode = worker(ctx, &s.decode, &with(&p, k("decode")));
            if let Some(r) = &s.router {
                check_component(ctx, r, &with(&p, k("router")));
            }
            scope.push(ScopeView {
                path: p.clone(),
                has_router: s.router.is_some(),
                kv_p2p: s.kv_p2p_transfer.is_some(),
            });
            if let Some(conc) = conc {
                entries.push(SearchEntry {
                    topology: Topology::Disagg { prefill, decode },
                    spec_decoding: s.spec_decoding,
                    router: s
                        .router
                        .as_ref()
                        .map(|_| json_at(ctx, &with(&p, k("router")))),
                    kv_p2p_transfer: s.kv_p2p_transfer.as_ref().map(|x| x.0.clone()),
                    conc,
                    kv_offloading: None,
                    kv_offload_backend: None,
                    mark: mark_at(node, &p),
                });
            }
        }
        fixed.push(FixedScenario {
            isl: blk.isl,
            osl: blk.osl,
            search_space: entries,
        });
    }
}

/// The agentic-coding blocks: dram-utilization, then each search-space entry checked (V10
/// offload backend, V11 dram, router, kv-p2p-transfer, V12 topology) and resolved; its scope
/// view recorded for V6/V7.
fn agentic_blocks(
    ctx: &mut Ctx,
    agentic_raw: &Option<Vec<AgenticRaw>>,
    multinode: bool,
    scope: &mut Vec<ScopeView>,
) -> Vec<AgenticScenario> {
    let node = ctx.root;
    let mut agentic = Vec::new();
    for (i, blk) in agentic_raw.iter().flatten().enumerate() {
        let bpath = vec![k("scenarios"), k("agentic-coding"), Seg::Index(i)];
        if let Some(u) = blk.dram_utilization {
            if !(u > 0.0 && u <= 1.0) {
                let p = with(&bpath, k("dram-utilization"));
                ctx.push(
                    mark_at(node, &p),
                    &p,
                    format!("must be in (0, 1], got {}", crate::pyjson::py_float_repr(u)),
                );
            }
        }
        let mut entries = Vec::new();
        for (j, s) in blk.search_space.iter().enumerate() {
            let p = with(&with(&bpath, k("search-space")), Seg::Index(j));
            let emark = mark_at(node, &p);
            let conc = check_conc(ctx, &p, s.conc_start, s.conc_end, &s.conc_list);
            // V10
            match (s.kv_offloading, &s.kv_offload_backend) {
                (None, Some(_)) => ctx.push(emark, &p, "kv-offload-backend requires kv-offloading"),
                (Some(KvOffloading::None), Some(_)) => ctx.push(
                    emark,
                    &p,
                    "kv-offload-backend can only be set when kv-offloading is not 'none'",
                ),
                (Some(KvOffloading::Dram), None) => ctx.push(
                    emark,
                    &p,
                    "kv-offload-backend is required when kv-offloading is 'dram'",
                ),
                _ => {}
            }
            if let Some(b) = &s.kv_offload_backend {
                check_backend(ctx, b, &with(&p, k("kv-offload-backend")));
            }
            // V11
            if s.kv_offloading == Some(KvOffloading::Dram) && blk.dram_utilization.is_none() {
                ctx.push(emark, &p, "kv-offloading='dram' requires dram-utilization");
            }
            if let Some(r) = &s.router {
                check_component(ctx, r, &with(&p, k("router")));
            }
            if !multinode && s.kv_p2p_transfer.is_some() {
                ctx.push(
                    key_mark(node, &p, "kv-p2p-transfer"),
                    &p,
                    "kv-p2p-transfer is only valid when multinode=true",
                );
            }
            scope.push(ScopeView {
                path: p.clone(),
                has_router: s.router.is_some(),
                kv_p2p: s.kv_p2p_transfer.is_some(),
            });
            // V12
            let has_single = s.tp.is_some();
            let any_multi = s.prefill.is_some() || s.decode.is_some();
            let full_multi = s.prefill.is_some() && s.decode.is_some();
            let mut topology = None;
            if has_single == any_multi || (any_multi && !full_multi) {
                ctx.push(emark, &p, "agentic search-space entries must specify exactly one of tp, or both prefill and decode");
            } else if let Some(tp) = s.tp {
                if multinode {
                    ctx.push(emark, &p, "agentic search-space entries of a multinode config must use prefill and decode, not tp");
                } else if s.kv_offloading.is_none() {
                    ctx.push(
                        emark,
                        &p,
                        "single-node agentic search-space entries must specify kv-offloading",
                    );
                } else {
                    let dcp = s.dcp_size.unwrap_or_default().0;
                    check_tp_dcp(ctx, &p, tp, dcp);
                    topology = Some(Topology::Single {
                        tp,
                        pp: s.pp.unwrap_or_default().0,
                        dcp_size: dcp,
                        pcp_size: s.pcp_size.unwrap_or_default().0,
                        ep: s.ep,
                        dp_attn: s.dp_attn,
                    });
                }
            } else if let (Some(pw), Some(dw)) = (&s.prefill, &s.decode) {
                if !multinode {
                    ctx.push(emark, &p, "agentic search-space entries of a single-node config must use tp, not prefill and decode");
                } else if s.pp.is_some() || s.dcp_size.is_some() || s.pcp_size.is_some() {
                    ctx.push(emark, &p, "multinode agentic search-space entries cannot specify 'pp', 'dcp-size', 'pcp-size'");
                } else {
                    check_hardware_pair(ctx, &p, pw, dw);
                    let prefill = worker(ctx, pw, &with(&p, k("prefill")));
                    let decode = worker(ctx, dw, &with(&p, k("decode")));
                    topology = Some(Topology::Disagg { prefill, decode });
                }
            }
            if let (Some(conc), Some(topology)) = (conc, topology) {
                entries.push(SearchEntry {
                    topology,
                    spec_decoding: s.spec_decoding,
                    router: s
                        .router
                        .as_ref()
                        .map(|_| json_at(ctx, &with(&p, k("router")))),
                    kv_p2p_transfer: s.kv_p2p_transfer.as_ref().map(|x| x.0.clone()),
                    conc,
                    kv_offloading: s.kv_offloading,
                    kv_offload_backend: s
                        .kv_offload_backend
                        .as_ref()
                        .map(|_| json_at(ctx, &with(&p, k("kv-offload-backend")))),
                    mark: emark,
                });
            }
        }
        agentic.push(AgenticScenario {
            dram_utilization: blk.dram_utilization,
            search_space: entries,
        });
    }
    agentic
}

/// V7 (router and kv-p2p-transfer declared at one scope only) and V6 (a disaggregated
/// multinode entry has kv-p2p-transfer everywhere).
fn check_scopes(
    ctx: &mut Ctx,
    top_router: bool,
    top_kvp2p: bool,
    multinode: bool,
    disagg: bool,
    scope: &[ScopeView],
) {
    let node = ctx.root;
    // V7: single scope for router and kv-p2p-transfer.
    if top_router {
        if let Some(v) = scope.iter().find(|v| v.has_router) {
            ctx.push(
                key_mark(node, &v.path, "router"),
                &v.path,
                "router must be declared either at the top level or in search-space entries, not both",
            );
        }
    }
    if top_kvp2p {
        if let Some(v) = scope.iter().find(|v| v.kv_p2p) {
            ctx.push(
                key_mark(node, &v.path, "kv-p2p-transfer"),
                &v.path,
                "kv-p2p-transfer must be declared either at the top level or in search-space entries, not both",
            );
        }
    }
    // V6
    if multinode && disagg && !top_kvp2p && (scope.is_empty() || scope.iter().any(|v| !v.kv_p2p)) {
        ctx.push(
            mark_at(node, &[k("disagg")]),
            &[k("disagg")],
            "disagg=true requires kv-p2p-transfer at the top level or in every search-space entry",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_expansion_matches_spec_examples() {
        assert_eq!(expand_range(4, 128, 2), vec![4, 8, 16, 32, 64, 128]);
        assert_eq!(expand_range(4, 100, 2), vec![4, 8, 16, 32, 64, 100]);
        assert_eq!(expand_range(4, 4, 2), vec![4]);
        assert_eq!(expand_range(1, 64, 4), vec![1, 4, 16, 64]);
        assert_eq!(expand_range(1, 100, 4), vec![1, 4, 16, 64, 100]);
    }
}
