//! [`AggRow`]: the aggregated point row (`agg.json`, a `summary.json` point, the store's point
//! row): InferenceX single-node keys (latencies in seconds, interactivity tok/s/user) followed
//! by the servebench keys (contract.md), and its JSON schema ([`agg_row_schema`]).
//!
//! Known keys are typed (an invalid point's `invalid_reasons` too: [`AggRow::invalid_reasons`],
//! written right after `records_file` when non-empty, where the metrics stage always put it);
//! keys this version does not know (a newer writer's, or a stage's additions) are kept in
//! [`AggRow::extra`], in order, after the known ones, so reading a row and writing it back
//! gives the same bytes.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};

use crate::identity::{BenchmarkType, Identity, KvOffload, KvOffloadBackend};
use crate::status::PointStatus;

/// The statistic prefixes of every latency family, in key order (`p99.9` keeps its dot).
pub const STAT_PREFIXES: [&str; 6] = ["mean", "median", "std", "p90", "p99", "p99.9"];

/// One statistic family (`mean_X` … `p99.9_X`); `None` is written as `null` (no samples, or
/// a non-finite value), never 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatRow {
    /// `mean_X`.
    pub mean: Option<f64>,
    /// `median_X`.
    pub median: Option<f64>,
    /// `std_X` (population).
    pub std: Option<f64>,
    /// `p90_X`.
    pub p90: Option<f64>,
    /// `p99_X`.
    pub p99: Option<f64>,
    /// `p99.9_X`.
    pub p99_9: Option<f64>,
}

impl StatRow {
    /// The values in [`STAT_PREFIXES`] order.
    pub fn values(&self) -> [Option<f64>; 6] {
        [
            self.mean,
            self.median,
            self.std,
            self.p90,
            self.p99,
            self.p99_9,
        ]
    }

    /// The value of a prefix of [`STAT_PREFIXES`].
    pub fn get(&self, prefix: &str) -> Option<f64> {
        STAT_PREFIXES
            .iter()
            .position(|p| *p == prefix)
            .and_then(|i| self.values()[i])
    }

    fn set(&mut self, i: usize, v: Option<f64>) {
        let slot = match i {
            0 => &mut self.mean,
            1 => &mut self.median,
            2 => &mut self.std,
            3 => &mut self.p90,
            4 => &mut self.p99,
            _ => &mut self.p99_9,
        };
        *slot = v;
    }
}

/// The aggregated row of one point. Units: throughputs tok/s (per GPU where named so),
/// latencies s, interactivity tok/s/user, `duration` s. Formulas: MEASUREMENT.md Part 2
/// §2.2–2.6 (`servebench_metrics::agg_row`).
#[derive(Debug, Clone, PartialEq)]
pub struct AggRow {
    /// Who and what the point measured: the one [`Identity`] (its keys are written where
    /// InferenceX writes them: `hw`, `conc`, `image` … `dp_attention` first, `benchmark_type`
    /// among the servebench keys, `kv_offloading` after the known keys when not `none`).
    pub identity: Identity,
    /// Concurrency (max requests in flight): the point's, written second (after `hw`).
    pub conc: Option<u64>,
    /// total_token_throughput / num_gpus, tok/s/GPU.
    pub tput_per_gpu: f64,
    /// output_throughput / num_gpus, tok/s/GPU.
    pub output_tput_per_gpu: f64,
    /// (total − output) / num_gpus, tok/s/GPU.
    pub input_tput_per_gpu: f64,
    /// TTFT, s.
    pub ttft: StatRow,
    /// TPOT, s.
    pub tpot: StatRow,
    /// ITL, s.
    pub itl: StatRow,
    /// E2EL, s.
    pub e2el: StatRow,
    /// Interactivity at each TPOT statistic: 1000 / tpot_ms, tok/s/user.
    pub intvty: StatRow,
    /// Schema version ([`crate::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// `completions` or `chat`.
    pub api: String,
    /// Engine profile.
    pub engine: String,
    /// Endpoint base URL.
    pub endpoint: String,
    /// `chunk` or `token`.
    pub itl_mode: String,
    /// `servebench` or `inferencex`.
    pub compat: String,
    /// TP × PP × PCP.
    pub num_gpus: u32,
    /// Measured requests (warmups and cancelled ones excluded).
    pub num_requests_total: u64,
    /// Successful requests.
    pub num_requests_successful: u64,
    /// Failed requests.
    pub num_requests_failed: u64,
    /// Failure category ([`crate::FailureKind`] string) → count.
    pub failure_reasons: BTreeMap<String, u64>,
    /// The point's outcome.
    pub point_status: PointStatus,
    /// First measured t0 → last response end, s.
    pub duration: f64,
    /// Successful requests / duration, req/s.
    pub request_throughput: f64,
    /// Output tokens / duration, tok/s.
    pub output_throughput: f64,
    /// (Input + output) tokens / duration, tok/s.
    pub total_token_throughput: f64,
    /// Input tokens / duration, tok/s.
    pub input_throughput: f64,
    /// Mean client-side prompt tokens of successful requests.
    pub mean_isl: Option<f64>,
    /// Mean `usage.prompt_tokens`.
    pub mean_isl_server: Option<f64>,
    /// Mean output tokens.
    pub mean_osl: Option<f64>,
    /// Per-request records, relative to the point directory.
    pub records_file: String,
    /// An invalid point's violated validity rules, one line each (the row key
    /// [`crate::status::INVALID_REASONS_KEY`], written only when non-empty); empty on a valid
    /// point.
    pub invalid_reasons: Vec<String>,
    /// The point's GPU energy (InferenceX power keys + `power_source`), written after the
    /// latency statistics where InferenceX writes its power keys; `None` on rows written
    /// before servebench measured energy (they keep their bytes).
    pub power: Option<crate::power::PowerFields>,
    /// A multinode (disaggregated) row's prefill/decode shape: written in place of `tp` …
    /// `dp_attention` in process_result.py's multinode shape ([`crate::multinode`]); the
    /// identity's `tp`, `ep`, `dp_attention` then hold its main side's (decode's) values and
    /// `is_multinode` is true. `None` on single-node rows.
    pub multinode: Option<crate::multinode::MultinodeFields>,
    /// Keys this version does not know, in order (written after the known keys).
    pub extra: IndexMap<String, Value>,
}

/// Why a JSON value is not an [`AggRow`]: one line naming the key.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AggRowError {
    /// Not a JSON object.
    #[error("agg row is not a JSON object")]
    NotAnObject,
    /// A known key is missing or has the wrong type.
    #[error("agg row: `{key}` is missing or not {expected}")]
    Field {
        /// The key.
        key: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A known key holds a value this version does not know.
    #[error("agg row: `{key}` is {value}: expected {expected}")]
    Unknown {
        /// The key.
        key: String,
        /// The value, as JSON.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
}

/// A finite number, or `null`.
fn num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.is_finite() => json!(v),
        _ => Value::Null,
    }
}

/// Key of a servebench AgentX agg row saying whether InferenceX would accept the point.
pub const SUBMISSION_VALID_KEY: &str = "agentx_submission_valid";
/// Key of the harness's reason codes when it would not.
pub const SUBMISSION_REASONS_KEY: &str = "agentx_submission_invalid_reasons";

/// The reason codes of a point InferenceX would not accept: empty unless `valid` is
/// `Some(false)`; then the `reasons` array's strings (`unsafe_override`,
/// `context_overflow_rate_exceeded`, `run_cancelled`), or `["agentx_submission_valid false"]`
/// when it names none. The one rule for servebench agg rows ([`AggRow::submission_invalid_reasons`])
/// and imported foreign rows (compare's importer).
pub fn submission_invalid_reasons(valid: Option<bool>, reasons: Option<&Value>) -> Vec<String> {
    if valid != Some(false) {
        return Vec::new();
    }
    let r: Vec<String> = reasons
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if r.is_empty() {
        vec![format!("{SUBMISSION_VALID_KEY} false")]
    } else {
        r
    }
}

impl AggRow {
    /// Why InferenceX would not accept this (AgentX) point as a submission: empty unless the
    /// row says `agentx_submission_valid: false`; then the harness's reason codes
    /// (`agentx_submission_invalid_reasons`: `unsafe_override`, `context_overflow_rate_exceeded`,
    /// `run_cancelled`), or `["agentx_submission_valid false"]` when it names none. Unlike
    /// [`AggRow::invalid_reasons`] the point's numbers stand (compare still compares it), but
    /// the run is not a valid submission.
    pub fn submission_invalid_reasons(&self) -> Vec<String> {
        submission_invalid_reasons(
            self.extra
                .get(SUBMISSION_VALID_KEY)
                .and_then(Value::as_bool),
            self.extra.get(SUBMISSION_REASONS_KEY),
        )
    }

    /// The row as an ordered JSON object: the InferenceX keys, the latency families (each
    /// TPOT statistic followed by its interactivity), the servebench keys, then `extra`.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        write_identity(&self.identity, self.conc, &mut o);
        if let Some(m) = &self.multinode {
            multinode_shape(&mut o, m);
        }
        o.insert("tput_per_gpu".into(), json!(self.tput_per_gpu));
        o.insert(
            "output_tput_per_gpu".into(),
            json!(self.output_tput_per_gpu),
        );
        o.insert("input_tput_per_gpu".into(), json!(self.input_tput_per_gpu));
        for (name, s) in [
            ("ttft", &self.ttft),
            ("tpot", &self.tpot),
            ("itl", &self.itl),
            ("e2el", &self.e2el),
        ] {
            for (i, prefix) in STAT_PREFIXES.iter().enumerate() {
                o.insert(format!("{prefix}_{name}"), num(s.values()[i]));
                if name == "tpot" {
                    o.insert(format!("{prefix}_intvty"), num(self.intvty.values()[i]));
                }
            }
        }
        if let Some(p) = &self.power {
            p.write(&mut o);
        }
        o.insert("schema_version".into(), json!(self.schema_version));
        o.insert(
            "benchmark_type".into(),
            json!(self.identity.benchmark_type.as_str()),
        );
        o.insert("api".into(), json!(self.api));
        o.insert("engine".into(), json!(self.engine));
        o.insert("endpoint".into(), json!(self.endpoint));
        o.insert("itl_mode".into(), json!(self.itl_mode));
        o.insert("compat".into(), json!(self.compat));
        o.insert("num_gpus".into(), json!(self.num_gpus));
        o.insert("num_requests_total".into(), json!(self.num_requests_total));
        o.insert(
            "num_requests_successful".into(),
            json!(self.num_requests_successful),
        );
        o.insert(
            "num_requests_failed".into(),
            json!(self.num_requests_failed),
        );
        o.insert("failure_reasons".into(), json!(self.failure_reasons));
        o.insert("point_status".into(), json!(self.point_status.as_str()));
        o.insert("duration".into(), json!(self.duration));
        o.insert("request_throughput".into(), json!(self.request_throughput));
        o.insert("output_throughput".into(), json!(self.output_throughput));
        o.insert(
            "total_token_throughput".into(),
            json!(self.total_token_throughput),
        );
        o.insert("input_throughput".into(), json!(self.input_throughput));
        o.insert("mean_isl".into(), num(self.mean_isl));
        o.insert("mean_isl_server".into(), num(self.mean_isl_server));
        o.insert("mean_osl".into(), num(self.mean_osl));
        o.insert("records_file".into(), json!(self.records_file));
        if !self.invalid_reasons.is_empty() {
            o.insert(
                crate::status::INVALID_REASONS_KEY.into(),
                json!(self.invalid_reasons),
            );
        }
        // the identity's KV-offload keys, only with offload, first after the known keys (where
        // they were always written); a key of that name kept in `extra` (read from a row this
        // version would not write so) wins
        let id = &self.identity;
        if !id.kv_offloading.is_none() && !self.extra.contains_key(KvOffload::KEY) {
            o.insert(KvOffload::KEY.into(), json!(id.kv_offloading.as_str()));
            o.insert(KvOffloadBackend::KEY.into(), json!(id.kv_offload_backend));
            o.insert(
                ALLOCATED_CPU_DRAM_GB_KEY.into(),
                json!(id.allocated_cpu_dram_gb),
            );
        }
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        Value::Object(o)
    }

    /// Reads a row servebench wrote (every known key present; numbers that were non-finite
    /// are `null`). Unknown keys go to [`AggRow::extra`], in order.
    pub fn from_value(v: &Value) -> Result<AggRow, AggRowError> {
        let m = v.as_object().ok_or(AggRowError::NotAnObject)?;
        if let Some(row) = multinode_from(m)? {
            return Ok(row);
        }
        let bad = |key: &str, expected: &'static str| AggRowError::Field {
            key: key.to_string(),
            expected,
        };
        let s = |k: &str| -> Result<String, AggRowError> {
            m.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(k, "a string"))
        };
        let opt_s = |k: &str| -> Result<Option<String>, AggRowError> {
            match m.get(k) {
                Some(Value::Null) => Ok(None),
                Some(Value::String(x)) => Ok(Some(x.clone())),
                _ => Err(bad(k, "a string or null")),
            }
        };
        let b = |k: &str| {
            m.get(k)
                .and_then(Value::as_bool)
                .ok_or_else(|| bad(k, "a boolean"))
        };
        let u = |k: &str| {
            m.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(k, "an integer"))
        };
        let u32_ = |k: &str| -> Result<u32, AggRowError> {
            u(k).and_then(|x| u32::try_from(x).map_err(|_| bad(k, "an integer < 2^32")))
        };
        let opt_u = |k: &str| -> Result<Option<u64>, AggRowError> {
            match m.get(k) {
                Some(Value::Null) => Ok(None),
                Some(x) => x
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| bad(k, "an integer or null")),
                None => Err(bad(k, "an integer or null")),
            }
        };
        let opt_u32 = |k: &str| -> Result<Option<u32>, AggRowError> {
            opt_u(k)?
                .map(|x| u32::try_from(x).map_err(|_| bad(k, "an integer < 2^32")))
                .transpose()
        };
        // a finite f64 written as a number, or NaN/inf written as null
        let f = |k: &str| -> Result<f64, AggRowError> {
            match m.get(k) {
                Some(Value::Null) => Ok(f64::NAN),
                Some(x) => x.as_f64().ok_or_else(|| bad(k, "a number")),
                None => Err(bad(k, "a number")),
            }
        };
        let opt_f = |k: &str| -> Result<Option<f64>, AggRowError> {
            match m.get(k) {
                Some(Value::Null) => Ok(None),
                Some(x) => x
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| bad(k, "a number or null")),
                None => Err(bad(k, "a number or null")),
            }
        };
        let fam = |name: &str| -> Result<StatRow, AggRowError> {
            let mut r = StatRow::default();
            for (i, p) in STAT_PREFIXES.iter().enumerate() {
                r.set(i, opt_f(&format!("{p}_{name}"))?);
            }
            Ok(r)
        };
        let failure_reasons = match m.get("failure_reasons") {
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| {
                    v.as_u64()
                        .map(|n| (k.clone(), n))
                        .ok_or_else(|| bad("failure_reasons", "an object of counts"))
                })
                .collect::<Result<BTreeMap<_, _>, _>>()?,
            _ => return Err(bad("failure_reasons", "an object of counts")),
        };
        let point_status = m
            .get("point_status")
            .and_then(Value::as_str)
            .and_then(PointStatus::parse)
            .ok_or_else(|| bad("point_status", "ok, failed, partial or invalid"))?;
        let known = known_keys();
        // typed only when it is what servebench writes (a non-empty array of strings);
        // anything else stays in `extra`, as read
        let invalid_reasons: Vec<String> = m
            .get(crate::status::INVALID_REASONS_KEY)
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty() && a.iter().all(Value::is_string))
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        // typed only when it reads back whole; otherwise the keys stay in `extra`, as read
        let power = crate::power::PowerFields::read(m);
        // typed only when writing them back gives the same bytes; otherwise in `extra`, as read
        let offload = read_offload(m, &known);
        let extra = m
            .iter()
            .filter(|(k, _)| !known.contains(k.as_str()))
            .filter(|(k, _)| offload.is_none() || !OFFLOAD_KEYS.contains(&k.as_str()))
            .filter(|(k, _)| power.is_none() || !crate::power::POWER_KEYS.contains(&k.as_str()))
            .filter(|(k, _)| {
                invalid_reasons.is_empty() || k.as_str() != crate::status::INVALID_REASONS_KEY
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let benchmark_type = match m.get("benchmark_type") {
            Some(Value::String(t)) => {
                BenchmarkType::parse(t).ok_or_else(|| AggRowError::Unknown {
                    key: "benchmark_type".into(),
                    value: format!("{t:?}"),
                    expected: "single_turn, agentic_traces or multi_turn",
                })?
            }
            _ => return Err(bad("benchmark_type", "a string")),
        };
        let mut identity = Identity {
            hw: s("hw")?,
            image: s("image")?,
            model: s("model")?,
            infmax_model_prefix: s("infmax_model_prefix")?,
            framework: s("framework")?,
            precision: s("precision")?,
            spec_decoding: s("spec_decoding")?,
            disagg: b("disagg")?,
            recipe_fingerprint: opt_s("recipe_fingerprint")?,
            isl: opt_u32("isl")?,
            osl: opt_u32("osl")?,
            is_multinode: b("is_multinode")?,
            tp: u32_("tp")?,
            pp: u32_("pp")?,
            dcp_size: u32_("dcp_size")?,
            pcp_size: u32_("pcp_size")?,
            ep: u32_("ep")?,
            dp_attention: b("dp_attention")?,
            benchmark_type,
            kv_offloading: Default::default(),
            kv_offload_backend: None,
            allocated_cpu_dram_gb: 0,
        };
        if let Some((mode, backend, gb)) = offload {
            identity.kv_offloading = mode;
            identity.kv_offload_backend = backend;
            identity.allocated_cpu_dram_gb = gb;
        }
        Ok(AggRow {
            identity,
            conc: opt_u("conc")?,
            tput_per_gpu: f("tput_per_gpu")?,
            output_tput_per_gpu: f("output_tput_per_gpu")?,
            input_tput_per_gpu: f("input_tput_per_gpu")?,
            ttft: fam("ttft")?,
            tpot: fam("tpot")?,
            itl: fam("itl")?,
            e2el: fam("e2el")?,
            intvty: fam("intvty")?,
            schema_version: u32_("schema_version")?,
            api: s("api")?,
            engine: s("engine")?,
            endpoint: s("endpoint")?,
            itl_mode: s("itl_mode")?,
            compat: s("compat")?,
            num_gpus: u32_("num_gpus")?,
            num_requests_total: u("num_requests_total")?,
            num_requests_successful: u("num_requests_successful")?,
            num_requests_failed: u("num_requests_failed")?,
            failure_reasons,
            point_status,
            duration: f("duration")?,
            request_throughput: f("request_throughput")?,
            output_throughput: f("output_throughput")?,
            total_token_throughput: f("total_token_throughput")?,
            input_throughput: f("input_throughput")?,
            mean_isl: opt_f("mean_isl")?,
            mean_isl_server: opt_f("mean_isl_server")?,
            mean_osl: opt_f("mean_osl")?,
            records_file: s("records_file")?,
            invalid_reasons,
            power,
            multinode: None,
            extra,
        })
    }

    /// The KV-offload mode of the row: its `kv_offloading` key (`none` when absent, as on
    /// every row without offload: the key is written only when set). A key of that name kept
    /// in [`AggRow::extra`] (read from a row this version would not write so) is read as
    /// [`KvOffload::parse`] reads it.
    pub fn kv_offloading(&self) -> KvOffload {
        match self.extra.get(KvOffload::KEY) {
            Some(v) => KvOffload::parse(v.as_str()),
            None => self.identity.kv_offloading.clone(),
        }
    }

    /// Sets the KV-offload mode ([`Identity::kv_offloading`]): `none` writes no offload key
    /// (rows without offload keep their bytes), another mode writes `kv_offloading` (with the
    /// identity's backend and DRAM budget) right after the known keys.
    pub fn set_kv_offloading(&mut self, mode: &KvOffload) {
        self.extra.shift_remove(KvOffload::KEY);
        self.identity.kv_offloading = mode.clone();
    }

    /// Sets the KV-offload keys InferenceX's agentic aggregate writes, from `id`:
    /// `kv_offloading`, `kv_offload_backend` (`{name, version?}` or `null`) and
    /// `allocated_cpu_dram_gb` (GB), written right after the known keys. Without offload
    /// (`none`) none of the three is written, so rows without offload keep their bytes.
    pub fn set_kv_offload(&mut self, id: &Identity) {
        for k in OFFLOAD_KEYS {
            self.extra.shift_remove(k);
        }
        self.identity.kv_offloading = id.kv_offloading.clone();
        self.identity.kv_offload_backend = id.kv_offload_backend.clone();
        self.identity.allocated_cpu_dram_gb = id.allocated_cpu_dram_gb;
    }

    /// The row's `kv_offload_backend` (`None` when absent, `null` or not `{name, version?}`).
    pub fn kv_offload_backend(&self) -> Option<KvOffloadBackend> {
        match self.extra.get(KvOffloadBackend::KEY) {
            Some(v) => serde_json::from_value(v.clone()).ok(),
            None => self.identity.kv_offload_backend.clone(),
        }
    }

    /// The row's `allocated_cpu_dram_gb`, GB (0 when absent: a row without offload).
    pub fn allocated_cpu_dram_gb(&self) -> u64 {
        match self.extra.get(ALLOCATED_CPU_DRAM_GB_KEY) {
            Some(v) => v.as_u64().unwrap_or(0),
            None => self.identity.allocated_cpu_dram_gb,
        }
    }

    /// The value of a key as written (`None` when the row has no such key), e.g.
    /// `row.get("num_gpus")`.
    pub fn get(&self, key: &str) -> Option<Value> {
        match self.to_value() {
            Value::Object(mut o) => o.remove(key),
            _ => None,
        }
    }
}

impl Serialize for AggRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AggRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(deserializer)?;
        AggRow::from_value(&v).map_err(serde::de::Error::custom)
    }
}

/// The identity's keys of an agg row, in InferenceX's order (`process_result.py`: `hw`, the
/// point's `conc`, `image`, `model`, `infmax_model_prefix`, `framework`, `precision`,
/// `spec_decoding`, `disagg`, `recipe_fingerprint`, `isl`, `osl`, then `is_multinode` and the
/// topology). `benchmark_type` and `kv_offloading` are written by [`AggRow::to_value`] where
/// the row has always carried them.
fn write_identity(id: &Identity, conc: Option<u64>, o: &mut Map<String, Value>) {
    o.insert("hw".into(), json!(id.hw));
    o.insert("conc".into(), json!(conc));
    o.insert("image".into(), json!(id.image));
    o.insert("model".into(), json!(id.model));
    o.insert("infmax_model_prefix".into(), json!(id.infmax_model_prefix));
    o.insert("framework".into(), json!(id.framework));
    o.insert("precision".into(), json!(id.precision));
    o.insert("spec_decoding".into(), json!(id.spec_decoding));
    o.insert("disagg".into(), json!(id.disagg));
    o.insert("recipe_fingerprint".into(), json!(id.recipe_fingerprint));
    o.insert("isl".into(), json!(id.isl));
    o.insert("osl".into(), json!(id.osl));
    o.insert("is_multinode".into(), json!(id.is_multinode));
    o.insert("tp".into(), json!(id.tp));
    o.insert("pp".into(), json!(id.pp));
    o.insert("dcp_size".into(), json!(id.dcp_size));
    o.insert("pcp_size".into(), json!(id.pcp_size));
    o.insert("ep".into(), json!(id.ep));
    o.insert("dp_attention".into(), json!(id.dp_attention));
}

/// The single-node shape keys a multinode row replaces with [`crate::multinode::MULTINODE_KEYS`].
pub const SINGLE_NODE_SHAPE: [&str; 6] = ["tp", "pp", "dcp_size", "pcp_size", "ep", "dp_attention"];

/// Rewrites a written row into process_result.py's multinode shape: `router` and
/// `kv_p2p_transfer` before `is_multinode: true`, the multinode keys in place of
/// [`SINGLE_NODE_SHAPE`].
fn multinode_shape(o: &mut Map<String, Value>, m: &crate::multinode::MultinodeFields) {
    let old = std::mem::take(o);
    for (k, v) in old {
        if SINGLE_NODE_SHAPE.contains(&k.as_str()) {
            continue;
        }
        if k == "is_multinode" {
            m.write_components(o);
            o.insert(k, json!(true));
            m.write(o);
            continue;
        }
        o.insert(k, v);
    }
}

/// A multinode row read back: the row without its multinode keys, the main side's shape as
/// the single-node keys, then the shape set. `None` when the row is not multinode.
fn multinode_from(m: &Map<String, Value>) -> Result<Option<AggRow>, AggRowError> {
    if m.get("is_multinode").and_then(Value::as_bool) != Some(true) {
        return Ok(None);
    }
    let mn = crate::multinode::MultinodeFields::read(m).ok_or_else(|| AggRowError::Field {
        key: "prefill_tp".into(),
        expected: "a multinode row's prefill/decode fields",
    })?;
    let w = *mn.main_side();
    let mut single = Map::new();
    for (k, v) in m {
        if crate::multinode::MULTINODE_KEYS.contains(&k.as_str())
            || k == "router"
            || k == "kv_p2p_transfer"
        {
            continue;
        }
        if k == "is_multinode" {
            single.insert(k.clone(), json!(false));
            single.insert("tp".into(), json!(w.tp));
            single.insert("pp".into(), json!(w.pp));
            single.insert("dcp_size".into(), json!(w.dcp_size));
            single.insert("pcp_size".into(), json!(w.pcp_size));
            single.insert("ep".into(), json!(w.ep));
            single.insert("dp_attention".into(), json!(w.dp_attention));
            continue;
        }
        single.insert(k.clone(), v.clone());
    }
    let mut row = AggRow::from_value(&Value::Object(single))?;
    row.identity.is_multinode = true;
    row.multinode = Some(mn);
    Ok(Some(row))
}

/// Every key [`AggRow`] types, in schema order (the `required` list of the schema).
pub fn agg_row_keys() -> Vec<String> {
    let mut keys: Vec<String> = schema::HEAD.iter().map(|(k, _)| k.to_string()).collect();
    for (name, _) in FAMILIES {
        for p in STAT_PREFIXES {
            keys.push(format!("{p}_{name}"));
        }
    }
    keys.extend(schema::TAIL.iter().map(|(k, _)| k.to_string()));
    keys
}

fn known_keys() -> std::collections::HashSet<String> {
    agg_row_keys().into_iter().collect()
}

/// The latency families in schema order, with the description pattern of their statistics.
const FAMILIES: [(&str, &str); 5] = [
    ("ttft", "TTFT"),
    ("tpot", "TPOT"),
    ("itl", "ITL"),
    ("e2el", "E2EL"),
    ("intvty", ""),
];

/// The row key of the host DRAM budget for KV offload, GB (InferenceX
/// `allocated_cpu_dram_gb`; [`AggRow::set_kv_offload`]).
pub const ALLOCATED_CPU_DRAM_GB_KEY: &str = "allocated_cpu_dram_gb";

/// The identity's KV-offload keys, in the order a row carries them.
const OFFLOAD_KEYS: [&str; 3] = [
    KvOffload::KEY,
    KvOffloadBackend::KEY,
    ALLOCATED_CPU_DRAM_GB_KEY,
];

/// The identity's KV-offload keys of a row, typed only when writing them back gives the same
/// bytes: `kv_offloading` a mode other than `none` as written, then `kv_offload_backend`
/// (`null` or `{name, version?}` as written) and `allocated_cpu_dram_gb` (an integer), the
/// three in that order with no key unknown to this version before them (where
/// [`AggRow::to_value`] writes them). `None`: they stay in [`AggRow::extra`], as read.
fn read_offload(
    m: &Map<String, Value>,
    known: &std::collections::HashSet<String>,
) -> Option<(KvOffload, Option<KvOffloadBackend>, u64)> {
    let keys: Vec<&str> = m.keys().map(String::as_str).collect();
    let at = keys.iter().position(|k| *k == KvOffload::KEY)?;
    if keys.get(at..at + 3)? != OFFLOAD_KEYS {
        return None;
    }
    let typed_before = keys[..at].iter().all(|k| {
        known.contains(*k)
            || crate::power::POWER_KEYS.contains(k)
            || *k == crate::status::INVALID_REASONS_KEY
    });
    if !typed_before {
        return None;
    }
    let raw = m[KvOffload::KEY].as_str()?;
    let mode = KvOffload::parse(Some(raw));
    if mode.is_none() || mode.as_str() != raw {
        return None;
    }
    let backend = match &m[KvOffloadBackend::KEY] {
        Value::Null => None,
        v => {
            let b: KvOffloadBackend = serde_json::from_value(v.clone()).ok()?;
            if serde_json::to_string(&b).ok()? != serde_json::to_string(v).ok()? {
                return None;
            }
            Some(b)
        }
    };
    let gb = m[ALLOCATED_CPU_DRAM_GB_KEY].as_u64()?;
    Some((mode, backend, gb))
}

/// The JSON schema (draft 2020-12) of [`AggRow`], generated from its key table: what
/// `docs/schema/agg-row.schema.json` holds (a test fails when the checked-in file differs).
pub fn agg_row_schema() -> Value {
    let frag = |text: &str| -> Value {
        serde_json::from_str(text).expect("schema fragments in agg.rs are valid JSON")
    };
    let mut props = Map::new();
    for (k, f) in schema::HEAD {
        props.insert(k.to_string(), frag(f));
    }
    for (name, upper) in FAMILIES {
        for p in STAT_PREFIXES {
            let description = if name == "intvty" {
                format!("interactivity at the {p} TPOT: 1000 / {p}_tpot_ms (tok/s/user); std_intvty = 1000/std_tpot_ms as InferenceX emits it; null when TPOT is null or 0")
            } else {
                format!("{p} of {upper} in seconds (raw ms / 1000); null when there are no samples")
            };
            props.insert(
                format!("{p}_{name}"),
                json!({"type": ["number", "null"], "description": description}),
            );
        }
    }
    for (k, f) in schema::TAIL {
        props.insert(k.to_string(), frag(f));
    }
    // optional: present only when energy was measured, modelled or found missing
    for (k, f) in crate::power::PowerFields::schema_properties() {
        props.insert(k.to_string(), f);
    }
    // optional: present only with KV offload (AggRow::set_kv_offload)
    props.insert(
        crate::KvOffload::KEY.to_string(),
        json!({"type": "string", "description": "KV-cache offload mode (InferenceX kv_offloading: dram, …); absent means none"}),
    );
    props.insert(
        crate::KvOffloadBackend::KEY.to_string(),
        json!({"type": ["object", "null"], "description": "KV-offload backend (InferenceX kv_offload_backend, the config's kv-offload-backend)", "properties": {"name": {"type": "string"}, "version": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
    );
    props.insert(
        ALLOCATED_CPU_DRAM_GB_KEY.to_string(),
        json!({"type": "integer", "minimum": 0, "description": "host DRAM budget for the offloaded KV cache, GB (InferenceX allocated_cpu_dram_gb = the matrix row's total-cpu-dram-gb)"}),
    );
    // multinode rows: their shape in place of tp … dp_attention (process_result.py)
    for (k, f) in crate::multinode::MultinodeFields::schema_properties() {
        props.insert(k, f);
    }
    // optional: present only on an invalid point
    props.insert(
        crate::status::INVALID_REASONS_KEY.to_string(),
        json!({"type": "array", "items": {"type": "string"}, "description": "point_status invalid only: the violated validity rules, one line each (docs/measurement.md \"Validity rules\"), e.g. \"fixed length violated: 2/4 short (min 5, want 128)\""}),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://servebench.dev/schema/agg-row.v1.json",
        "title": "servebench aggregated point row (agg.json), schema_version 1",
        "description": "InferenceX agg_*.json single-node row (MEASUREMENT.md Part 2 §2.6; latencies in seconds, interactivity tok/s/user) followed by servebench keys (notes/contract.md). Missing statistics are null, never 0 (except under compat inferencex, which reproduces InferenceX's 0).",
        "type": "object",
        "required": agg_row_keys().into_iter().filter(|k| !SINGLE_NODE_SHAPE.contains(&k.as_str())).collect::<Vec<_>>(),
        "properties": props,
        "if": {"properties": {"is_multinode": {"const": true}}},
        "then": {"required": crate::multinode::MULTINODE_KEYS},
        "else": {"required": SINGLE_NODE_SHAPE},
        "additionalProperties": false,
    })
}

/// The schema as checked in: pretty JSON and a final newline.
pub fn agg_row_schema_text() -> String {
    let mut s = serde_json::to_string_pretty(&agg_row_schema()).expect("a JSON value prints");
    s.push('\n');
    s
}

mod schema {
    /// Schema fragments of the keys before the latency statistics, in file order.
    pub(crate) const HEAD: &[(&str, &str)] = &[
        (
            "hw",
            r#"{"type": "string", "description": "runner / hardware name (`--hw`; sim-<gpu> for the simulator)"}"#,
        ),
        (
            "conc",
            r#"{"type": ["integer", "null"], "description": "concurrency (max requests in flight)"}"#,
        ),
        ("image", r#"{"type": "string"}"#),
        (
            "model",
            r#"{"type": "string", "description": "model name as served"}"#,
        ),
        ("infmax_model_prefix", r#"{"type": "string"}"#),
        ("framework", r#"{"type": "string"}"#),
        ("precision", r#"{"type": "string"}"#),
        ("spec_decoding", r#"{"type": "string"}"#),
        ("disagg", r#"{"type": "boolean"}"#),
        (
            "recipe_fingerprint",
            r#"{"type": ["string", "null"], "description": "catalog config key (`--config-key`)"}"#,
        ),
        (
            "isl",
            r#"{"type": ["integer", "null"], "description": "nominal input length (tokens); null for agentic traces"}"#,
        ),
        (
            "osl",
            r#"{"type": ["integer", "null"], "description": "nominal output length (tokens)"}"#,
        ),
        ("is_multinode", r#"{"type": "boolean"}"#),
        ("tp", r#"{"type": "integer"}"#),
        ("pp", r#"{"type": "integer"}"#),
        ("dcp_size", r#"{"type": "integer"}"#),
        ("pcp_size", r#"{"type": "integer"}"#),
        ("ep", r#"{"type": "integer"}"#),
        ("dp_attention", r#"{"type": "boolean"}"#),
        (
            "tput_per_gpu",
            r#"{"type": "number", "description": "total_token_throughput / num_gpus (tok/s/GPU)"}"#,
        ),
        (
            "output_tput_per_gpu",
            r#"{"type": "number", "description": "output_throughput / num_gpus"}"#,
        ),
        (
            "input_tput_per_gpu",
            r#"{"type": "number", "description": "(total_token_throughput − output_throughput) / num_gpus"}"#,
        ),
    ];
    /// Schema fragments of the servebench keys after the statistics, in file order.
    pub(crate) const TAIL: &[(&str, &str)] = &[
        ("schema_version", r#"{"type": "integer", "const": 1}"#),
        (
            "benchmark_type",
            r#"{"enum": ["single_turn", "agentic_traces", "multi_turn"]}"#,
        ),
        ("api", r#"{"enum": ["completions", "chat"]}"#),
        (
            "engine",
            r#"{"type": "string", "description": "engine profile: sglang, vllm, trtllm, llama.cpp, transformers, openai"}"#,
        ),
        ("endpoint", r#"{"type": "string"}"#),
        ("itl_mode", r#"{"enum": ["chunk", "token"]}"#),
        ("compat", r#"{"enum": ["servebench", "inferencex"]}"#),
        (
            "num_gpus",
            r#"{"type": "integer", "description": "TP × PP × PCP"}"#,
        ),
        (
            "num_requests_total",
            r#"{"type": "integer", "description": "measured requests (warmups and Ctrl-C-cancelled ones excluded)"}"#,
        ),
        ("num_requests_successful", r#"{"type": "integer"}"#),
        ("num_requests_failed", r#"{"type": "integer"}"#),
        (
            "failure_reasons",
            r#"{"type": "object", "additionalProperties": {"type": "integer"}, "description": "failure category → count (no_token, stream_error:<code>, stream_error_after_tokens, http_<status>, timeout, connect, disconnected, disconnected_after_tokens, bad_event, exception)"}"#,
        ),
        (
            "point_status",
            r#"{"enum": ["ok", "failed", "partial", "invalid"], "description": "failed: more than 5 % of requests failed; partial: interrupted; invalid: a validity rule was violated (reasons under invalid_reasons)"}"#,
        ),
        (
            "duration",
            r#"{"type": "number", "description": "seconds: first measured t0 → last response end (compat inferencex: the driver's phase window); modelled seconds against the simulator"}"#,
        ),
        (
            "request_throughput",
            r#"{"type": "number", "description": "successful requests / duration (req/s)"}"#,
        ),
        (
            "output_throughput",
            r#"{"type": "number", "description": "tok/s, not per GPU"}"#,
        ),
        ("total_token_throughput", r#"{"type": "number"}"#),
        ("input_throughput", r#"{"type": "number"}"#),
        (
            "mean_isl",
            r#"{"type": ["number", "null"], "description": "mean client-side prompt tokens of successful requests"}"#,
        ),
        (
            "mean_isl_server",
            r#"{"type": ["number", "null"], "description": "mean usage.prompt_tokens, null without usage"}"#,
        ),
        (
            "mean_osl",
            r#"{"type": ["number", "null"], "description": "mean output tokens (usage.completion_tokens or counted events)"}"#,
        ),
        (
            "records_file",
            r#"{"type": "string", "description": "per-request records, relative to the point directory"}"#,
        ),
    ];
}
