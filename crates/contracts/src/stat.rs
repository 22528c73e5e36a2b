//! [`Stat`]: the latency statistic a table, comparison or report reads (`--stat`; the agg-row
//! key prefix `mean_`, `median_`, `p90_`, `p99_`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Latency statistic selected with `--stat` (the agg-row key prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// `mean_*`.
    Mean,
    /// `median_*` (AgentX rows: `p50`).
    Median,
    /// `p90_*`.
    P90,
    /// `p99_*` (AgentX rows have none: `null`).
    P99,
}

impl Stat {
    /// Parses `mean|median|p50|p90|p99` (case-insensitive).
    pub fn parse(s: &str) -> Option<Stat> {
        match s.to_ascii_lowercase().as_str() {
            "mean" => Some(Stat::Mean),
            "median" | "p50" => Some(Stat::Median),
            "p90" => Some(Stat::P90),
            "p99" => Some(Stat::P99),
            _ => None,
        }
    }

    /// Whether this is a tail percentile (p90, p99): the noise rule needs more repeats.
    pub fn is_tail(self) -> bool {
        matches!(self, Stat::P90 | Stat::P99)
    }

    /// Header label: `"Mean latency"`, `"Median latency"`, `"P90 latency"`, `"P99 latency"`.
    pub fn latency_label(self) -> &'static str {
        match self {
            Stat::Mean => "Mean latency",
            Stat::Median => "Median latency",
            Stat::P90 => "P90 latency",
            Stat::P99 => "P99 latency",
        }
    }
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stat::Mean => "mean",
            Stat::Median => "median",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
        })
    }
}
