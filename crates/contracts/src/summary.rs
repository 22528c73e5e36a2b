//! [`SummaryDoc`]: a sweep's `summary.json`: run metadata, one [`AggRow`] per point, note
//! lines, and (with `--slo`, `--window steady` or `--ci`) the [`SummaryExtras`] the slo
//! observer contributes before the pipeline's file output writes the file (its one writer). Its schema (`docs/schema/summary.schema.json`) is generated from these
//! fields ([`crate::schema::summary_schema`]).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::doc::FieldSchema;
use crate::json_doc;
use crate::result::SimulatorInfo;
use crate::AggRow;

json_doc! {
    /// Where a run was recorded in the results store.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct StoreRef {
        /// Path of the SQLite database.
        #[key("db", required)]
        pub db: String,
        /// The run's id in it.
        #[key("run_id", required)]
        pub run_id: i64,
    }
}

json_doc! {
    /// The bootstrap settings of a `--ci` sweep.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ConfidenceSettings {
        /// Confidence level (0.95).
        #[key("level", required)]
        pub level: f64,
        /// Bootstrap resamples per statistic.
        #[key("bootstrap_resamples", required)]
        pub bootstrap_resamples: u64,
        /// Seed of the resampling.
        #[key("seed", required)]
        pub seed: u64,
    }
}

/// One point of [`SummaryExtras::points`]: its label, concurrency and repeat, then what the
/// slo observer computed (`goodput`, `steady`, `steady_error`, `bootstrap`, `small_sample`,
/// `reasoning`: open-ended, kept in order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtrasPoint {
    /// `conc 4` / `conc 4 repeat 2/3`.
    #[serde(default)]
    pub label: String,
    /// Concurrency.
    pub conc: u64,
    /// Repeat (1-based).
    #[serde(default = "one")]
    pub repeat: u32,
    /// The other keys, in order.
    #[serde(flatten)]
    pub rest: IndexMap<String, Value>,
}

fn one() -> u32 {
    1
}

impl ExtrasPoint {
    /// The request-bootstrap half-widths (`bootstrap[].key` → `ci.half_width`; keys are raw
    /// result keys such as `mean_ttft_ms`, half-widths in the key's unit), in order.
    pub fn bootstrap_half_widths(&self) -> Vec<(String, f64)> {
        self.rest
            .get("bootstrap")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|b| {
                let key = b.get("key")?.as_str()?;
                let h = b.get("ci")?.get("half_width")?.as_f64()?;
                Some((key.to_string(), h))
            })
            .collect()
    }
}

impl FieldSchema for ExtrasPoint {
    fn field_schema() -> Value {
        json!({
            "type": "object",
            "required": ["label", "conc"],
            "properties": {
                "label": {"type": "string"},
                "conc": {"type": "integer"},
                "repeat": {"type": "integer", "minimum": 1},
            },
            "description": "then, as computed: goodput, steady, steady_error, bootstrap [{key, ci {half_width, …}}], small_sample, reasoning",
        })
    }
}

/// The `extras` of a `summary.json` text, the rest of the summary unread: `None` when the
/// summary has none. Readers of extras only (the pipeline's confidence intervals and chart
/// SLO) use this, so a summary whose points this version cannot read still gives its extras.
pub fn summary_extras(text: &str) -> Result<Option<SummaryExtras>, serde_json::Error> {
    #[derive(Deserialize)]
    struct ExtrasOnly {
        #[serde(default)]
        extras: Option<SummaryExtras>,
    }
    Ok(serde_json::from_str::<ExtrasOnly>(text)?.extras)
}

json_doc! {
    /// `summary.json` `extras` (docs/measurement.md 12): the slo observer's contribution to the
    /// summary (pipeline `Observer::summary_extras`), written with the rest of the file in one
    /// write, only with `--slo`, `--window steady` or `--ci`. Read leniently: a missing
    /// `slo`, `window`, `confidence` or `repeats` is null / empty.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct SummaryExtras {
        /// The `--slo` of the sweep, as given, or null.
        #[key("slo", required)]
        pub slo: Option<String>,
        /// `steady` or `full`.
        #[key("window", required, r#"{"enum": ["steady", "full"]}"#)]
        #[serde(default)]
        pub window: String,
        /// The bootstrap settings with `--ci`, else null.
        #[key("confidence", required)]
        pub confidence: Option<ConfidenceSettings>,
        /// Per point: goodput, steady window, bootstrap intervals, small-sample keys, reasoning.
        #[key("points", required)]
        pub points: Vec<ExtrasPoint>,
        /// Per concurrency with `--repeats`: t-intervals across the repeats.
        #[key("repeats", required)]
        #[serde(default)]
        pub repeats: Vec<Value>,
    }
}

json_doc! {
    /// A sweep's `summary.json` (written by the pipeline's file output when the sweep ends,
    /// also after Ctrl-C). `summary.csv` has one row per point with the agg-row keys as
    /// columns.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct SummaryDoc {
        /// Schema version ([`crate::SCHEMA_VERSION`]).
        #[key("schema_version", required, r#"{"const": 1}"#)]
        pub schema_version: u32,
        /// `servebench <version>`.
        #[key("tool", required)]
        pub tool: String,
        /// When the sweep started, RFC 3339.
        #[key("started", required, r#"{"format": "date-time"}"#)]
        pub started: String,
        /// When the summary was written, RFC 3339.
        #[key("finished", required, r#"{"format": "date-time"}"#)]
        pub finished: String,
        /// Endpoint base URL measured.
        #[key("endpoint", required)]
        pub endpoint: String,
        /// Model name.
        #[key("model", required)]
        pub model: String,
        /// `completions` or `chat`.
        #[key("api", required, r#"{"enum": ["completions", "chat"]}"#)]
        pub api: String,
        /// Engine profile name.
        #[key("engine", required)]
        pub engine: String,
        /// `servebench` or `inferencex`.
        #[key("compat", required, r#"{"enum": ["servebench", "inferencex"]}"#)]
        pub compat: String,
        /// `chunk` or `token`.
        #[key("itl_mode", required, r#"{"enum": ["chunk", "token"]}"#)]
        pub itl_mode: String,
        /// Nominal input length, tokens (null for an AgentX sweep: the traces set it).
        #[key("isl", required)]
        pub isl: Option<u32>,
        /// Nominal output length, tokens (null for an AgentX sweep).
        #[key("osl", required)]
        pub osl: Option<u32>,
        /// `--random-range-ratio`: lengths drawn from [ratio × nominal, nominal] (null for an
        /// AgentX sweep).
        #[key("range_ratio", required)]
        pub range_ratio: Option<f64>,
        /// Dataset seed (null for an AgentX sweep).
        #[key("seed", required)]
        pub seed: Option<u64>,
        /// The concurrencies swept, in order.
        #[key("concurrencies", required)]
        pub concurrencies: Vec<u64>,
        /// Request rate, req/s (null: unlimited).
        #[key("request_rate", required)]
        pub request_rate: Option<f64>,
        /// Gamma shape of the inter-arrival times (1 = Poisson; null for an AgentX sweep).
        #[key("burstiness", required)]
        pub burstiness: Option<f64>,
        /// One workload description per concurrency.
        #[key("datasets", required)]
        pub datasets: Vec<String>,
        /// The embedded simulator, or null against an endpoint.
        #[key("simulator", required)]
        pub simulator: Option<SimulatorInfo>,
        /// Whether Ctrl-C stopped the sweep.
        #[key("interrupted", required)]
        pub interrupted: bool,
        /// Measurements per concurrency (`--repeats`).
        #[key("repeats", optional, r#"{"minimum": 1, "description": "measurements per concurrency (--repeats); with N > 1 the points are conc<C>-r<k>/ and `points` holds N rows per concurrency, in order"}"#)]
        #[serde(default = "one")]
        pub repeats: u32,
        /// Where the run was recorded (null with `--no-store`).
        #[key("store", optional, r#"{"description": "where the run was recorded (null with --no-store)"}"#)]
        #[serde(default)]
        pub store: Option<StoreRef>,
        /// One agg row per finished point, in order.
        #[key("points", required)]
        pub points: Vec<AggRow>,
        /// Note lines printed under the table.
        #[key("notes", optional, r#"{"description": "notes printed under the table, one line each (e.g. InferenceX counting found no usage so output tokens are 0; TPOT 0 because every token arrived in one read); empty when there is nothing to note"}"#)]
        #[serde(default)]
        pub notes: Vec<String>,
        /// Goodput, steady window and confidence intervals (only with `--slo`, `--window
        /// steady` or `--ci`; contributed by the slo observer, written with the rest).
        #[key("extras", optional, r#"{"description": "only with --slo, --window steady or --ci (docs/measurement.md 12): per point goodput / steady window / bootstrap intervals / small_sample keys / reasoning; per concurrency t-intervals across repeats"}"#)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub extras: Option<SummaryExtras>,
    }
}

impl SummaryDoc {
    /// The file's text as the sweep writes it, `extras` included: pretty JSON and a final
    /// newline ([`crate::doc::file_text`]).
    pub fn file_text(&self) -> String {
        crate::doc::file_text(self)
    }
}
