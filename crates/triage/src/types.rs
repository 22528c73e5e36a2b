//! Outcomes, phases, layers and the other closed vocabularies of triage, as Rust types.
//!
//! Source: AUTOMATION.md §5.3 (Klaud lifecycle: 11 outcomes, 6 phases, budget of one initial
//! attempt + 5 repairs, up to 2 infrastructure retries per attempt) and §5.4 (T/D/M).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Repairs allowed after the initial attempt (§5.3 `MAX_REPAIRS`), final-sweep repairs included.
pub const MAX_REPAIRS: u32 = 5;
/// Infrastructure retries allowed per attempt; they do not consume a repair (§5.3).
pub const MAX_INFRA_RETRIES_PER_ATTEMPT: u32 = 2;

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name { $($(#[$vm])* #[serde(rename = $s)] $v),+ }
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v),+];
            /// The wire spelling (kebab-case, as in AUTOMATION.md).
            pub fn as_str(self) -> &'static str { match self { $($name::$v => $s),+ } }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s { $($s => Ok($name::$v),)+ _ => Err(format!(
                    "unknown {} `{}` (expected one of: {})", stringify!($name), s,
                    [$($s),+].join(", "))) }
            }
        }
    };
}

string_enum! {
    /// Terminal outcome of a candidate (`CandidateOutcome.outcome`, §5.3, 11 values).
    Outcome {
        /// Exact-head full sweep verified (phase must be `final-sweep`).
        Validated => "validated",
        /// Capacity gate failed; PR closed, branch deleted (retry later).
        CapacityDeferred => "capacity-deferred",
        /// Confirmed infra/readiness blocker before GPU work (missing weights or mounts, wrong
        /// credential, …); PR closed, branch deleted.
        ReadinessBlocked => "readiness-blocked",
        /// The shipped image cannot run the recipe without a patch or out-of-scope change.
        Incompatible => "incompatible",
        /// An overlapping PR or claim exists.
        Duplicate => "duplicate",
        /// Family no longer live.
        Retired => "retired",
        /// Family already on the target image.
        AlreadyUpdated => "already-updated",
        /// Cause unproven (not the same as incompatible).
        Uncertain => "uncertain",
        /// Exhausted repairs, same failure twice without progress, or baseline roster unmet.
        Failed => "failed",
        /// Maintainer applied `klaud-handoff`.
        Handoff => "handoff",
        /// Missing/invalid structured output or action failure (phase unknown, repairs null).
        UnexpectedError => "unexpected-error",
    }
}

string_enum! {
    /// Lifecycle phase in which an outcome was reached (§5.3).
    Phase {
        /// Candidate resolution (tags, digests, capacity).
        Resolve => "resolve",
        /// Frozen baseline collection.
        Baseline => "baseline",
        /// Targeted attempts (initial + repairs).
        Targeted => "targeted",
        /// The final full sweep.
        FinalSweep => "final-sweep",
        /// Cleanup after the outcome.
        Cleanup => "cleanup",
        /// Unknown (only with `unexpected-error`).
        Unknown => "unknown",
    }
}

string_enum! {
    /// The layer that owns the fix for a failure (where a repair must happen).
    Layer {
        /// `perf-changelog.yaml` (append-only rules, §3).
        Changelog => "changelog",
        /// Master-config entries and their validation (§1–2).
        Config => "config",
        /// CI labels, checks and workflow gating (§5.2).
        Ci => "ci",
        /// The runner node itself (disk, docker socket, GPU held by another process, ports).
        Node => "node",
        /// The machine a script runs on outside any container: the tools on its PATH, its
        /// files and their permissions (the local executor's machine, a Slurm node's shell).
        Host => "host",
        /// Network/DNS and downloads (registry pulls, release archives).
        Network => "network",
        /// Slurm allocation, locks, capacity.
        Scheduler => "scheduler",
        /// The cluster launcher `runners/launch_*.sh` (env contract, weights staging, import).
        Launcher => "launcher",
        /// The container image (tag, contents, build).
        Image => "image",
        /// The benchmark recipe script (engine flags and env).
        Recipe => "recipe",
        /// The serving engine itself.
        Engine => "engine",
        /// The benchmark client / harness.
        Client => "client",
        /// Accuracy evals and their collection.
        Eval => "eval",
        /// The automation (ownership, baseline, final-sweep verification).
        Automation => "automation",
        /// `gh`/`jq` tooling quirks.
        Tooling => "tooling",
        /// Not determined from the logs.
        Unknown => "unknown",
    }
}

string_enum! {
    /// Transient or deterministic (§5.4 T/D/M columns).
    Persistence {
        /// Infrastructure; retry on the same head with no recipe change (T).
        Transient => "transient",
        /// Node-specific infrastructure (T(node)): retry elsewhere, report the node.
        TransientNode => "transient-node",
        /// Needs a code/image change or a stop (D).
        Deterministic => "deterministic",
        /// Mixed: inspect before deciding (M).
        Mixed => "mixed",
        /// Only a downstream symptom of an earlier error ("–").
        Symptom => "symptom",
        /// Tooling quirk of gh/jq ("–").
        Tooling => "tooling",
    }
}

string_enum! {
    /// What the session does next because of this failure (§5.3 "diagnose").
    Action {
        /// Infrastructure retry on the same head (≤ 2 per attempt; consumes no repair).
        Retry => "retry",
        /// A repair inside the candidate's scope (consumes one of the 5 repairs).
        Repair => "repair",
        /// Stop with the implied outcome.
        Stop => "stop",
        /// Read more evidence before deciding.
        Inspect => "inspect",
        /// Wait for the run to reach a terminal state.
        Wait => "wait",
    }
}

impl Persistence {
    /// True for the deterministic class (D).
    pub fn is_deterministic(self) -> bool {
        self == Persistence::Deterministic
    }
    /// True for T and T(node).
    pub fn is_transient(self) -> bool {
        matches!(self, Persistence::Transient | Persistence::TransientNode)
    }
}

/// A candidate's terminal record (`CandidateOutcome`, §5.3), validated on construction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateOutcome {
    /// The outcome.
    pub outcome: Outcome,
    /// The phase it was reached in.
    pub phase: Phase,
    /// Repairs used (`None` only for `unexpected-error`).
    pub repairs_used: Option<u32>,
}

impl CandidateOutcome {
    /// Builds and validates a record.
    ///
    /// Errors (§5.3): `validated` needs phase `final-sweep`; `unexpected-error` needs phase
    /// `unknown` and no repairs; every other outcome needs a known phase and `repairs_used`;
    /// repairs above [`MAX_REPAIRS`] are rejected.
    pub fn new(outcome: Outcome, phase: Phase, repairs_used: Option<u32>) -> Result<Self, String> {
        match outcome {
            Outcome::UnexpectedError => {
                if phase != Phase::Unknown || repairs_used.is_some() {
                    return Err("unexpected-error has phase unknown and repairs null".into());
                }
            }
            _ => {
                if phase == Phase::Unknown {
                    return Err(format!("outcome {outcome} needs a phase (not unknown)"));
                }
                let Some(r) = repairs_used else {
                    return Err(format!("outcome {outcome} needs repairs_used"));
                };
                if r > MAX_REPAIRS {
                    return Err(format!(
                        "repairs_used {r} exceeds the budget of {MAX_REPAIRS}"
                    ));
                }
                if outcome == Outcome::Validated && phase != Phase::FinalSweep {
                    return Err("validated needs phase final-sweep".into());
                }
            }
        }
        Ok(CandidateOutcome {
            outcome,
            phase,
            repairs_used,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_and_phase_counts_match_the_spec() {
        assert_eq!(Outcome::ALL.len(), 11);
        assert_eq!(Phase::ALL.len(), 6);
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>().unwrap(), *o);
            assert_eq!(
                serde_json::to_string(o).unwrap(),
                format!("\"{}\"", o.as_str())
            );
        }
        assert!("readiness_blocked".parse::<Outcome>().is_err());
    }

    #[test]
    fn candidate_outcome_rules() {
        assert!(CandidateOutcome::new(Outcome::ReadinessBlocked, Phase::Targeted, Some(0)).is_ok());
        assert!(CandidateOutcome::new(Outcome::Validated, Phase::Targeted, Some(1)).is_err());
        assert!(CandidateOutcome::new(Outcome::Validated, Phase::FinalSweep, Some(1)).is_ok());
        assert!(CandidateOutcome::new(Outcome::Failed, Phase::Targeted, None).is_err());
        assert!(CandidateOutcome::new(Outcome::Failed, Phase::Targeted, Some(6)).is_err());
        assert!(CandidateOutcome::new(Outcome::UnexpectedError, Phase::Unknown, None).is_ok());
        assert!(CandidateOutcome::new(Outcome::UnexpectedError, Phase::Targeted, None).is_err());
    }
}
