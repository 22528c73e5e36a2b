//! [`ForeignRow`]: a row of a file servebench did not write (an InferenceX `agg_bmk.json` or
//! `agg_eval_all.json` row, AgentX aggregates included, or a row built from a servebench
//! baseline table), as `servebench baseline import` stores it.
//!
//! Such rows have no fixed key set (multinode pools, nested `request_metrics`, `"true"` strings
//! for booleans, a single latency statistic), so they are not [`crate::AggRow`]s: turning them
//! into one would invent values (API kind, request counts) that compare then gates on. They are
//! kept as the JSON object they were imported as (so the store keeps their bytes), and exactly
//! one module reads their keys: `servebench_compare::import`, which builds them and turns them
//! into compare's typed points. Every other stage passes them along unread.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One foreign row: a JSON object, keys in file order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ForeignRow(Map<String, Value>);

impl ForeignRow {
    /// Wraps a JSON object.
    pub fn new(object: Map<String, Value>) -> ForeignRow {
        ForeignRow(object)
    }

    /// A JSON object as a row; `None` for any other JSON value.
    pub fn from_value(v: Value) -> Option<ForeignRow> {
        match v {
            Value::Object(m) => Some(ForeignRow(m)),
            _ => None,
        }
    }

    /// The row's keys and values, in order (for the import module and the store's columns).
    pub fn as_object(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The row as a JSON value (a copy).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}
