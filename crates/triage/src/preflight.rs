//! Pre-launch environment check (cases/README.md B25c): a variable that is set but empty counts
//! as unset, and a gated model needs `HF_TOKEN`.

use serde::{Deserialize, Serialize};

/// One missing variable found before launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreflightFinding {
    /// Always `missing_env_var`.
    pub category: String,
    /// The variable.
    pub var: String,
    /// `unset` or `empty`.
    pub reason: String,
    /// One line for the user, e.g. `missing_env_var: HF_TOKEN (set but empty)`.
    pub message: String,
}

/// The variables a launch needs: `base`, plus `HF_TOKEN` when the model is gated.
pub fn required_env(base: &[&str], model_gated: bool) -> Vec<String> {
    let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    if model_gated && !v.iter().any(|s| s == "HF_TOKEN") {
        v.push("HF_TOKEN".into());
    }
    v
}

/// Checks `required` against `lookup` (e.g. `|k| std::env::var(k).ok()`); an empty or
/// whitespace-only value is reported as missing, like an unset one.
pub fn preflight_env(
    required: &[String],
    lookup: impl Fn(&str) -> Option<String>,
) -> Vec<PreflightFinding> {
    required
        .iter()
        .filter_map(|var| {
            let reason = match lookup(var) {
                None => "unset",
                Some(v) if v.trim().is_empty() => "empty",
                Some(_) => return None,
            };
            Some(PreflightFinding {
                category: "missing_env_var".into(),
                var: var.clone(),
                reason: reason.into(),
                message: format!(
                    "missing_env_var: {var} ({})",
                    if reason == "empty" {
                        "set but empty"
                    } else {
                        "not set"
                    }
                ),
            })
        })
        .collect()
}
