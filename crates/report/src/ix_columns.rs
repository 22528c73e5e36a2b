//! InferenceX's PR-check columns: the twelve latency columns `utils/compare_results.py` prints
//! beside `TPUT/GPU` (its `METRIC_DEFS`, InferenceX HEAD 843c6254) — median, P90, P99 and
//! P99.9 of TTFT (stored in s, shown in ms), of interactivity (`*_intvty`, tok/s/user; the
//! script's `Intvty@P90 TPOT` is the row's `p90_intvty`) and of E2EL (shown in s) — with the
//! script's headers. Each column is a fixed statistic, whatever the comparison's `--stat`,
//! and its delta is the script's: `(new / old − 1) × 100`, coloured by direction alone (no
//! gate, no noise rule). The attempt comment (the PR comment) shows them after its own
//! columns ([`crate::attempt::build_attempt`]).

use serde::{Deserialize, Serialize};
use servebench_compare as cmp;

/// One InferenceX PR-check column (module docs).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[serde(rename_all = "snake_case")]
pub enum IxColumn {
    /// `median_ttft`, ms.
    TtftMedian,
    /// `p90_ttft`, ms.
    TtftP90,
    /// `p99_ttft`, ms.
    TtftP99,
    /// `p99.9_ttft`, ms.
    TtftP999,
    /// `median_intvty`, tok/s/user.
    IntvtyMedian,
    /// `p90_intvty`, tok/s/user.
    IntvtyP90,
    /// `p99_intvty`, tok/s/user.
    IntvtyP99,
    /// `p99.9_intvty`, tok/s/user.
    IntvtyP999,
    /// `median_e2el`, s.
    E2elMedian,
    /// `p90_e2el`, s.
    E2elP90,
    /// `p99_e2el`, s.
    E2elP99,
    /// `p99.9_e2el`, s.
    E2elP999,
}

impl IxColumn {
    /// The twelve columns in compare_results.py's order.
    pub const ALL: [IxColumn; 12] = [
        IxColumn::TtftMedian,
        IxColumn::TtftP90,
        IxColumn::TtftP99,
        IxColumn::TtftP999,
        IxColumn::IntvtyMedian,
        IxColumn::IntvtyP90,
        IxColumn::IntvtyP99,
        IxColumn::IntvtyP999,
        IxColumn::E2elMedian,
        IxColumn::E2elP90,
        IxColumn::E2elP99,
        IxColumn::E2elP999,
    ];

    /// The agg-row key (`p99.9_ttft`).
    pub fn key(self) -> &'static str {
        match self {
            IxColumn::TtftMedian => "median_ttft",
            IxColumn::TtftP90 => "p90_ttft",
            IxColumn::TtftP99 => "p99_ttft",
            IxColumn::TtftP999 => "p99.9_ttft",
            IxColumn::IntvtyMedian => "median_intvty",
            IxColumn::IntvtyP90 => "p90_intvty",
            IxColumn::IntvtyP99 => "p99_intvty",
            IxColumn::IntvtyP999 => "p99.9_intvty",
            IxColumn::E2elMedian => "median_e2el",
            IxColumn::E2elP90 => "p90_e2el",
            IxColumn::E2elP99 => "p99_e2el",
            IxColumn::E2elP999 => "p99.9_e2el",
        }
    }

    /// compare_results.py's header (`TTFT P99.9 (ms)`, `Intvty@P90 TPOT`, `E2EL Median (s)`).
    pub fn label(self) -> &'static str {
        match self {
            IxColumn::TtftMedian => "TTFT Median (ms)",
            IxColumn::TtftP90 => "TTFT P90 (ms)",
            IxColumn::TtftP99 => "TTFT P99 (ms)",
            IxColumn::TtftP999 => "TTFT P99.9 (ms)",
            IxColumn::IntvtyMedian => "Intvty Median",
            IxColumn::IntvtyP90 => "Intvty@P90 TPOT",
            IxColumn::IntvtyP99 => "Intvty@P99 TPOT",
            IxColumn::IntvtyP999 => "Intvty@P99.9 TPOT",
            IxColumn::E2elMedian => "E2EL Median (s)",
            IxColumn::E2elP90 => "E2EL P90 (s)",
            IxColumn::E2elP99 => "E2EL P99 (s)",
            IxColumn::E2elP999 => "E2EL P99.9 (s)",
        }
    }

    /// Interactivity is better higher; TTFT and E2EL lower.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            IxColumn::IntvtyMedian
                | IxColumn::IntvtyP90
                | IxColumn::IntvtyP99
                | IxColumn::IntvtyP999
        )
    }

    /// The compare metric the column is a statistic of.
    pub fn cmp_metric(self) -> cmp::Metric {
        match self {
            IxColumn::TtftMedian | IxColumn::TtftP90 | IxColumn::TtftP99 | IxColumn::TtftP999 => {
                cmp::Metric::Ttft
            }
            IxColumn::IntvtyMedian
            | IxColumn::IntvtyP90
            | IxColumn::IntvtyP99
            | IxColumn::IntvtyP999 => cmp::Metric::Intvty,
            IxColumn::E2elMedian | IxColumn::E2elP90 | IxColumn::E2elP99 | IxColumn::E2elP999 => {
                cmp::Metric::E2el
            }
        }
    }

    /// The point's value in the column's unit (TTFT × 1000 to ms, as the script's
    /// `MS_DISPLAY_KEYS`; E2EL in s; interactivity as stored); `None` when the row has none.
    pub fn value(self, p: &cmp::Point) -> Option<f64> {
        let v = *p.values.get(self.key())?;
        let scale = if self.cmp_metric() == cmp::Metric::Ttft {
            1000.0
        } else {
            1.0
        };
        Some(v * scale).filter(|x| x.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_headers_are_compare_results_py_metric_defs() {
        // (result_key, header_label, higher_is_better) of METRIC_DEFS after TPUT/GPU
        let defs = [
            ("median_ttft", "TTFT Median (ms)", false),
            ("p90_ttft", "TTFT P90 (ms)", false),
            ("p99_ttft", "TTFT P99 (ms)", false),
            ("p99.9_ttft", "TTFT P99.9 (ms)", false),
            ("median_intvty", "Intvty Median", true),
            ("p90_intvty", "Intvty@P90 TPOT", true),
            ("p99_intvty", "Intvty@P99 TPOT", true),
            ("p99.9_intvty", "Intvty@P99.9 TPOT", true),
            ("median_e2el", "E2EL Median (s)", false),
            ("p90_e2el", "E2EL P90 (s)", false),
            ("p99_e2el", "E2EL P99 (s)", false),
            ("p99.9_e2el", "E2EL P99.9 (s)", false),
        ];
        let ours: Vec<_> = IxColumn::ALL
            .iter()
            .map(|c| (c.key(), c.label(), c.higher_is_better()))
            .collect();
        assert_eq!(ours, defs);
    }
}
