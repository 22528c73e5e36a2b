//! One status model for a run: each point's measurement validity (AgentX
//! `agentx_submission_valid` / `invalid_reasons`), its eval gate (GSM8K score against its
//! threshold), the comparison's verdict (when a baseline was given) and the triage outcome roll
//! up into one [`RunStatus`] and one exit code. The table, `run --status`, `runs` and the
//! attempt comment all read it (`summary.json`), so they say the same thing.

use serde::{Deserialize, Serialize};

/// The status of a whole run, worst first in [`RunStatus::severity`]'s order. Exit codes
/// follow `servebench compare` where they overlap (2 regression, 3 invalid) and Ctrl-C's 130.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every point stored, valid, every eval gate passed, no regression. Exit 0.
    Passed,
    /// Everything measured and valid, but no point had a comparable baseline point (nothing
    /// was checked against the baseline). Exit 0, as `compare`.
    NotComparable,
    /// A metric or eval regressed beyond the gate (the comparison's verdict). Exit 2.
    Regression,
    /// A stored point is not a valid submission (AgentX validity rules, `invalid_reasons`).
    /// Exit 3, as `compare` for an invalid candidate.
    Invalid,
    /// An eval job scored under its threshold (or produced no score). Exit 1.
    EvalFailed,
    /// A point failed (its job, after the retries triage allowed) or could not start. Exit 1.
    Failed,
    /// Ctrl-C / SIGTERM / `--cancel` stopped the run. Exit 130.
    Cancelled,
}

impl RunStatus {
    /// `passed`, `not comparable`, `regression`, `invalid`, `eval failed`, `failed`,
    /// `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Passed => "passed",
            RunStatus::NotComparable => "not comparable",
            RunStatus::Regression => "regression",
            RunStatus::Invalid => "invalid",
            RunStatus::EvalFailed => "eval failed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// How bad it is (higher = worse): the run's status is the worst of its parts.
    pub fn severity(self) -> u8 {
        match self {
            RunStatus::Passed => 0,
            RunStatus::NotComparable => 1,
            RunStatus::Regression => 2,
            RunStatus::Invalid => 3,
            RunStatus::EvalFailed => 4,
            RunStatus::Failed => 5,
            RunStatus::Cancelled => 6,
        }
    }

    /// The worse of two statuses.
    pub fn worst(self, other: RunStatus) -> RunStatus {
        if other.severity() > self.severity() {
            other
        } else {
            self
        }
    }

    /// The process exit code: 0 passed / not comparable, 1 failed / eval failed,
    /// 2 regression, 3 invalid, 130 cancelled.
    pub fn exit_code(self) -> u8 {
        match self {
            RunStatus::Passed | RunStatus::NotComparable => 0,
            RunStatus::Failed | RunStatus::EvalFailed => 1,
            RunStatus::Regression => 2,
            RunStatus::Invalid => 3,
            RunStatus::Cancelled => 130,
        }
    }

    /// Whether the run passed (only [`RunStatus::Passed`]).
    pub fn passed(self) -> bool {
        self == RunStatus::Passed
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The comparison's overall verdict as the run status needs it (the runner does not know
/// about comparisons: the binary maps `servebench_compare::Verdict` onto this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictOutcome {
    /// No regression (no change, improvement, observations only).
    NoRegression,
    /// Nothing was compared (no matched or comparable baseline point).
    NotComparable,
    /// The candidate is invalid (failed points, failure rate over the gate, eval not run).
    CandidateInvalid,
    /// A metric or eval regressed.
    Regression,
}

impl VerdictOutcome {
    /// The run status this verdict alone implies.
    pub fn status(self) -> RunStatus {
        match self {
            VerdictOutcome::NoRegression => RunStatus::Passed,
            VerdictOutcome::NotComparable => RunStatus::NotComparable,
            VerdictOutcome::CandidateInvalid => RunStatus::Invalid,
            VerdictOutcome::Regression => RunStatus::Regression,
        }
    }
}

/// An eval job's gate, read from the eval row its measurement stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalGate {
    /// Task (`gsm8k`).
    pub task: String,
    /// Score (fraction), `None` when the eval produced none.
    pub score: Option<f64>,
    /// Threshold (fraction), when the row carries it.
    pub threshold: Option<f64>,
    /// Passed its threshold (a row without `passed` passes when it has a score).
    pub passed: bool,
}

impl EvalGate {
    /// `gsm8k 56.25 % < threshold 85 %` / `gsm8k 91.00 % ≥ threshold 85 %` / `gsm8k: no score`.
    pub fn describe(&self) -> String {
        let pct = |x: f64| format!("{:.2} %", x * 100.0);
        match (self.score, self.threshold) {
            (None, _) => format!("{}: no score", self.task),
            (Some(s), Some(t)) => format!(
                "{} {} {} threshold {}",
                self.task,
                pct(s),
                if self.passed { "≥" } else { "<" },
                pct(t)
            ),
            (Some(s), None) => format!(
                "{} {} ({})",
                self.task,
                pct(s),
                if self.passed { "passed" } else { "failed" }
            ),
        }
    }
}

/// Why a stored point is not a valid submission, in words: each AgentX reason code worded
/// (`unsafe_override`, `context_overflow_rate_exceeded`, unknown codes as written), then the
/// row's own `invalid_reasons`. Empty for a valid point.
pub fn invalid_words(agentx_codes: &[String], invalid_reasons: &[String]) -> Vec<String> {
    let mut v: Vec<String> = agentx_codes
        .iter()
        .map(|code| match code.as_str() {
            "context_overflow_rate_exceeded" => format!(
                "more than 1 % of the profiling requests were rejected as longer than the \
                 server's context ({code})"
            ),
            "unsafe_override" => {
                format!(
                    "the profiling window is shorter than the 900 s InferenceX requires ({code})"
                )
            }
            "run_cancelled" => format!("the run was cancelled ({code})"),
            other => other.to_string(),
        })
        .collect();
    v.extend(invalid_reasons.iter().cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_wins_and_exit_codes_follow_compare() {
        use RunStatus::*;
        assert_eq!(Passed.worst(EvalFailed), EvalFailed);
        assert_eq!(EvalFailed.worst(Passed), EvalFailed);
        assert_eq!(Regression.worst(Invalid), Invalid);
        assert_eq!(Failed.worst(Cancelled), Cancelled);
        assert_eq!(Passed.exit_code(), 0);
        assert_eq!(Regression.exit_code(), 2);
        assert_eq!(Invalid.exit_code(), 3);
        assert_eq!(EvalFailed.exit_code(), 1);
        assert_eq!(Cancelled.exit_code(), 130);
        assert!(!EvalFailed.passed() && !Invalid.passed() && Passed.passed());
        assert_eq!(
            serde_json::to_string(&EvalFailed).unwrap(),
            "\"eval-failed\""
        );
        assert_eq!(VerdictOutcome::Regression.status(), Regression);
    }

    #[test]
    fn gate_and_reasons_are_worded() {
        let g = EvalGate {
            task: "gsm8k".into(),
            score: Some(0.5625),
            threshold: Some(0.85),
            passed: false,
        };
        assert_eq!(g.describe(), "gsm8k 56.25 % < threshold 85.00 %");
        let w = invalid_words(
            &[
                "unsafe_override".into(),
                "context_overflow_rate_exceeded".into(),
            ],
            &["fixed length violated".into()],
        );
        assert_eq!(w.len(), 3);
        assert!(w[0].contains("900 s") && w[1].contains("1 %") && w[2] == "fixed length violated");
    }
}
