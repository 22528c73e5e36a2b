//! One change-log entry (`ChangelogEntry` of InferenceX `utils/matrix_logic/validation.py`,
//! extra fields forbidden) and the added YAML text of a change read as entries.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::de::{from_node, path_string};
use crate::error::CatalogError;
use crate::matrix::ScenarioType;
use crate::yaml::{self, Kind, Node};

/// Scenario literal of `scenario-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScenarioLit {
    /// `fixed-seq-len`.
    FixedSeqLen,
    /// `agentic-coding`.
    AgenticCoding,
}

impl ScenarioLit {
    fn to_type(self) -> ScenarioType {
        match self {
            ScenarioLit::FixedSeqLen => ScenarioType::FixedSeqLen,
            ScenarioLit::AgenticCoding => ScenarioType::AgenticCoding,
        }
    }
}

/// A list with at least one element (pydantic `min_length=1`).
#[derive(Debug, Clone, PartialEq)]
pub struct NonEmptyList<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NonEmptyList<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        if v.is_empty() {
            return Err(serde::de::Error::custom("must contain at least one item"));
        }
        Ok(NonEmptyList(v))
    }
}

/// One change-log entry (`ChangelogEntry`, extra fields forbidden).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ChangelogEntry {
    /// Exact keys or `*` globs.
    pub config_keys: NonEmptyList<String>,
    /// What changed.
    pub description: NonEmptyList<String>,
    /// The PR URL (or `…/pull/XXX` placeholder inside a PR).
    pub pr_link: String,
    /// Suppress throughput for this entry.
    #[serde(default)]
    pub evals_only: bool,
    /// Expand evals and suppress throughput.
    #[serde(default)]
    pub all_evals: bool,
    /// Run only the newly added points.
    #[serde(default)]
    pub append_only: bool,
    /// Drop multinode eval rows whose prefill EP is below this.
    #[serde(default)]
    pub eval_min_prefill_ep: Option<i64>,
    /// Restrict the entry to these scenarios.
    #[serde(default)]
    pub scenario_type: Option<NonEmptyList<ScenarioLit>>,
}

impl ChangelogEntry {
    /// Reads and checks one entry node; the message names the field path.
    pub fn from_node(node: &Node) -> Result<ChangelogEntry, String> {
        let e: ChangelogEntry = from_node(node).map_err(|e| {
            let p = path_string(&e.path);
            let line = e
                .mark
                .map(|m| format!("line {}: ", m.line))
                .unwrap_or_default();
            if p.is_empty() {
                format!("{line}{}", e.message)
            } else {
                format!("{line}{p}: {}", e.message)
            }
        })?;
        if let Some(ep) = e.eval_min_prefill_ep {
            if ep < 1 {
                return Err(format!(
                    "eval-min-prefill-ep: must be greater than or equal to 1, got {ep}"
                ));
            }
        }
        if e.append_only && (e.evals_only || e.all_evals || e.eval_min_prefill_ep.is_some()) {
            return Err("append-only cannot be combined with eval selection fields".into());
        }
        Ok(e)
    }

    /// The pydantic dump (`by_alias=True, exclude_none=True`) of this entry, in field order.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("config-keys".into(), self.config_keys.0.clone().into());
        m.insert("description".into(), self.description.0.clone().into());
        m.insert("pr-link".into(), self.pr_link.clone().into());
        m.insert("evals-only".into(), self.evals_only.into());
        m.insert("all-evals".into(), self.all_evals.into());
        m.insert("append-only".into(), self.append_only.into());
        if let Some(ep) = self.eval_min_prefill_ep {
            m.insert("eval-min-prefill-ep".into(), ep.into());
        }
        if let Some(s) = &self.scenario_type {
            let v: Vec<Value> =
                s.0.iter()
                    .map(|x| Value::from(x.to_type().as_str()))
                    .collect();
            m.insert("scenario-type".into(), Value::Array(v));
        }
        Value::Object(m)
    }

    pub(super) fn scenarios(&self) -> Vec<ScenarioType> {
        match &self.scenario_type {
            Some(s) => s.0.iter().map(|x| x.to_type()).collect(),
            None => vec![ScenarioType::FixedSeqLen, ScenarioType::AgenticCoding],
        }
    }
}

/// Parses the added YAML text into entries (`yaml.safe_load` + `ChangelogEntry` validation).
pub fn parse_added_entries(added: &str) -> Result<Vec<ChangelogEntry>, CatalogError> {
    if added.trim().is_empty() {
        return Err(CatalogError::msg(
            "No additions found in the changelog file.",
        ));
    }
    let node = yaml::parse(added)
        .map_err(|e| CatalogError::msg(format!("changelog additions are not valid YAML: {e}")))?;
    let items = match &node.kind {
        Kind::Null => {
            return Err(CatalogError::msg(
                "No valid YAML entries found in the changelog additions.",
            ))
        }
        Kind::Seq(items) if items.is_empty() => {
            return Err(CatalogError::msg(
                "No valid YAML entries found in the changelog additions.",
            ))
        }
        Kind::Seq(items) => items,
        _ => {
            return Err(CatalogError::msg(
                "changelog additions must be a YAML list of entries",
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, n)| {
            ChangelogEntry::from_node(n)
                .map_err(|m| CatalogError::msg(format!("added changelog entry {}: {m}", i + 1)))
        })
        .collect()
}
