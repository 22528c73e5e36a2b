//! Validity rules: contract violations that make a point invalid (docs/measurement.md
//! "Validity rules"; MEASUREMENT.md Part 1 "Output tokens", Part 2 §1.2 item 7).
//!
//! A point is measured under two promises of the fixed-sequence workload:
//!
//! 1. **Fixed output length.** When the request fixed the output length (`ignore_eos` sent, or
//!    the profile's `min_tokens = max_tokens`), every successful request must return exactly
//!    `max_tokens` output tokens (`usage.completion_tokens`). One request short or long is a
//!    violation: the throughput and TPOT of such a point describe another workload.
//! 2. **Prompt length.** On a fixed-length (random) workload whose prompts were sized with the
//!    model's own tokenizer, `usage.prompt_tokens` minus the fixed per-prompt overhead the
//!    server adds (chat template, BOS; measured once by the preflight) must be within
//!    [`PROMPT_TOLERANCE`] (5 %) of the client-side count of the prompt as built.
//!
//! A violation is never only a warning: [`PointMetrics::apply_validity`] marks the point
//! [`PointStatus::Invalid`] and keeps the one-line reason (`fixed length violated: 2/4 short
//! (min 5, want 128)`). What could not be checked is said in a line too (never silently valid).

use servebench_client::{OutputSource, Phase, RequestRecord};

use crate::point::{PointMetrics, PointStatus};

/// Largest tolerated relative difference between the server's prompt count (less its fixed
/// overhead) and the intended prompt length: 0.05 (5 %, MEASUREMENT.md Part 1).
pub const PROMPT_TOLERANCE: f64 = 0.05;

/// Whether (and against what) the prompt length is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptCheck {
    /// Check `usage.prompt_tokens − overhead` against the client-side count; `overhead` =
    /// tokens the server adds to every prompt (chat template, BOS), measured by the preflight
    /// (`usage.prompt_tokens` of a one-word prompt − its client-side count), may be negative.
    Check {
        /// Fixed per-prompt server overhead, tokens.
        overhead: i64,
    },
    /// Not checked; the text says why (e.g. no `--tokenizer`).
    NotChecked(String),
}

/// What the requests of the point promised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidityOptions {
    /// The request fixed the output length (`ignore_eos`, or `min_tokens = max_tokens`).
    pub fixed_output: bool,
    /// The prompt-length rule.
    pub prompt: PromptCheck,
}

/// The outcome of the rules for one point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validity {
    /// One line per violated rule; non-empty → the point is invalid.
    pub violations: Vec<String>,
    /// One line per rule (or part of the requests) that could not be checked.
    pub unchecked: Vec<String>,
}

impl Validity {
    /// No rule violated.
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Applies the rules to the measured, successful requests of `records` (warmup, failed and
/// cancelled requests are not checked: the failure gate counts those).
pub fn check(records: &[RequestRecord], opts: &ValidityOptions) -> Validity {
    let ok: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measured && r.success)
        .collect();
    let mut v = Validity::default();
    if opts.fixed_output {
        output_rule(&ok, &mut v);
    }
    match &opts.prompt {
        PromptCheck::Check { overhead } => prompt_rule(&ok, *overhead, &mut v),
        PromptCheck::NotChecked(why) => v
            .unchecked
            .push(format!("prompt length not checked: {why}")),
    }
    v
}

fn output_rule(ok: &[&RequestRecord], v: &mut Validity) {
    // only the server's own count is evidence; a chunk count may merge tokens
    let checked: Vec<&RequestRecord> = ok
        .iter()
        .copied()
        .filter(|r| r.output_tokens_source == OutputSource::Usage)
        .collect();
    let unchecked = ok.len() - checked.len();
    if unchecked > 0 {
        v.unchecked.push(format!(
            "fixed length not checked for {unchecked} of {} successful requests: no usage.completion_tokens",
            ok.len()
        ));
    }
    let n = checked.len();
    let want = |r: &RequestRecord| u64::from(r.requested_output_tokens);
    let short: Vec<&RequestRecord> = checked
        .iter()
        .copied()
        .filter(|r| r.output_tokens < want(r))
        .collect();
    let long: Vec<&RequestRecord> = checked
        .iter()
        .copied()
        .filter(|r| r.output_tokens > want(r))
        .collect();
    let mut parts = Vec::new();
    // the shortest (first in dataset order on ties) with what it asked for
    if let Some(r) = short
        .iter()
        .min_by_key(|r| (r.output_tokens, r.id, r.t0_ns))
    {
        parts.push(format!(
            "{}/{n} short (min {}, want {})",
            short.len(),
            r.output_tokens,
            want(r)
        ));
    }
    if let Some(r) = long
        .iter()
        .max_by_key(|r| (r.output_tokens, std::cmp::Reverse((r.id, r.t0_ns))))
    {
        parts.push(format!(
            "{}/{n} long (max {}, want {})",
            long.len(),
            r.output_tokens,
            want(r)
        ));
    }
    if !parts.is_empty() {
        v.violations
            .push(format!("fixed length violated: {}", parts.join(", ")));
    }
}

fn prompt_rule(ok: &[&RequestRecord], overhead: i64, v: &mut Validity) {
    let pairs: Vec<(&RequestRecord, i64, i64)> = ok
        .iter()
        .filter_map(|r| {
            let c = i64::from(r.prompt_tokens_client?);
            let s = i64::try_from(r.prompt_tokens_server?).ok()?;
            (c > 0).then_some((*r, c, s))
        })
        .collect();
    if pairs.is_empty() {
        if !ok.is_empty() {
            v.unchecked.push(
                "prompt length not checked: no response carried usage.prompt_tokens".to_string(),
            );
        }
        return;
    }
    if pairs.len() < ok.len() {
        v.unchecked.push(format!(
            "prompt length not checked for {} of {} successful requests: no usage.prompt_tokens",
            ok.len() - pairs.len(),
            ok.len()
        ));
    }
    // relative deviation of the server's count (less the fixed overhead) from the intended
    let dev = |c: i64, s: i64| (s - overhead - c) as f64 / c as f64;
    let off: Vec<&(&RequestRecord, i64, i64)> = pairs
        .iter()
        .filter(|(_, c, s)| dev(*c, *s).abs() > PROMPT_TOLERANCE)
        .collect();
    let Some(&&(_, c, s)) = off.iter().max_by(|a, b| {
        dev(a.1, a.2)
            .abs()
            .total_cmp(&dev(b.1, b.2).abs())
            // the first in dataset order on ties
            .then((b.0.id, b.0.t0_ns).cmp(&(a.0.id, a.0.t0_ns)))
    }) else {
        return;
    };
    let over = match overhead {
        0 => String::new(),
        o if o > 0 => format!(" + {o} server overhead"),
        o => format!(" - {} server overhead", -o),
    };
    v.violations.push(format!(
        "prompt length violated: {}/{} off by more than 5 % (worst: usage.prompt_tokens {s}, intended {c}{over}, {:+.1} %)",
        off.len(),
        pairs.len(),
        dev(c, s) * 100.0
    ));
}

/// Warnings of [`crate::compute`] that a checked rule supersedes (the rule's line says it
/// with the numbers, and a violation is no longer only a warning).
fn superseded(w: &str, opts: &ValidityOptions) -> bool {
    (opts.fixed_output && w.starts_with("output-length check:"))
        || (matches!(opts.prompt, PromptCheck::Check { .. })
            && w.contains("usage.prompt_tokens differs from the client-side prompt count"))
}

impl PointMetrics {
    /// Records the outcome of the validity rules: each violation goes to
    /// [`PointMetrics::invalid_reasons`] and the table notes, an `ok` or `partial` point becomes
    /// [`PointStatus::Invalid`] (a `failed` point stays failed, its reasons kept); each
    /// not-checked line but the run-wide `prompt length not checked: <why>` (said once by the
    /// caller) goes to the warnings. Warnings a checked rule supersedes are dropped.
    pub fn apply_validity(&mut self, v: &Validity, opts: &ValidityOptions) {
        self.warnings.retain(|w| !superseded(w, opts));
        // the run-wide "prompt length not checked: <why>" is said once by the caller, not per
        // point; what this point's requests lacked (usage) is a warning of the point
        let run_wide = match &opts.prompt {
            PromptCheck::NotChecked(why) => Some(format!("prompt length not checked: {why}")),
            PromptCheck::Check { .. } => None,
        };
        self.warnings.extend(
            v.unchecked
                .iter()
                .filter(|u| Some(*u) != run_wide.as_ref())
                .cloned(),
        );
        if v.violations.is_empty() {
            return;
        }
        self.invalid_reasons.extend(v.violations.iter().cloned());
        self.notes
            .extend(v.violations.iter().map(|x| format!("INVALID: {x}")));
        if matches!(
            self.point_status,
            PointStatus::Ok | PointStatus::Interrupted
        ) {
            self.point_status = PointStatus::Invalid;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_client::RequestRecord;

    fn rec(id: u64, want: u32, out: u64, prompt: (u32, Option<u64>)) -> RequestRecord {
        RequestRecord {
            id,
            phase: Phase::Measured,
            session: None,
            response_id: None,
            scheduled_ns: 0,
            t0_ns: id,
            end_ns: id + 10,
            queue_ms: 0.0,
            connect_ms: None,
            redials: 0,
            ttft_ms: Some(1.0),
            ttfo_ms: Some(1.0),
            e2el_ms: Some(5.0),
            tpot_ms: None,
            itl_ms: vec![],
            tokens_per_chunk: None,
            token_events: out as u32,
            output_tokens: out,
            output_tokens_source: OutputSource::Usage,
            prompt_tokens_client: Some(prompt.0),
            prompt_tokens_server: prompt.1,
            prompt_tokens_cached: None,
            requested_output_tokens: want,
            http_status: Some(200),
            success: true,
            failure: None,
            error: None,
            warnings: vec![],
            phases: None,
            text: None,
        }
    }

    fn fixed(prompt: PromptCheck) -> ValidityOptions {
        ValidityOptions {
            fixed_output: true,
            prompt,
        }
    }

    #[test]
    fn two_of_four_short_is_the_exact_line() {
        let recs = vec![
            rec(0, 128, 128, (100, Some(100))),
            rec(1, 128, 5, (100, Some(100))),
            rec(2, 128, 128, (100, Some(100))),
            rec(3, 128, 77, (100, Some(100))),
        ];
        let v = check(&recs, &fixed(PromptCheck::Check { overhead: 0 }));
        assert_eq!(
            v.violations,
            vec!["fixed length violated: 2/4 short (min 5, want 128)".to_string()]
        );
        assert!(v.unchecked.is_empty(), "{:?}", v.unchecked);
    }

    #[test]
    fn long_and_short_together_name_both_with_their_own_want() {
        // OSL drawn per request: the short one wanted 100, the long one 120
        let recs = vec![
            rec(0, 100, 90, (64, None)),
            rec(1, 120, 130, (64, None)),
            rec(2, 110, 110, (64, None)),
        ];
        let v = check(
            &recs,
            &fixed(PromptCheck::NotChecked("no --tokenizer".into())),
        );
        assert_eq!(
            v.violations,
            vec![
                "fixed length violated: 1/3 short (min 90, want 100), 1/3 long (max 130, want 120)"
                    .to_string()
            ]
        );
        assert_eq!(
            v.unchecked,
            vec!["prompt length not checked: no --tokenizer".to_string()]
        );
    }

    #[test]
    fn without_a_fixed_length_short_answers_are_no_violation() {
        let recs = vec![rec(0, 128, 5, (10, Some(10)))];
        let v = check(
            &recs,
            &ValidityOptions {
                fixed_output: false,
                prompt: PromptCheck::Check { overhead: 0 },
            },
        );
        assert!(v.is_valid());
    }

    #[test]
    fn failed_warmup_and_chunk_counted_requests_are_not_judged() {
        let mut failed = rec(0, 128, 0, (100, None));
        failed.success = false;
        let mut warm = rec(1, 128, 3, (100, Some(300)));
        warm.phase = Phase::Warmup;
        let mut chunks = rec(2, 128, 60, (100, Some(100)));
        chunks.output_tokens_source = OutputSource::Chunks;
        let good = rec(3, 128, 128, (100, Some(104)));
        let v = check(
            &[failed, warm, chunks, good],
            &fixed(PromptCheck::Check { overhead: 0 }),
        );
        assert!(v.is_valid(), "{:?}", v.violations);
        assert_eq!(
            v.unchecked,
            vec![
                "fixed length not checked for 1 of 2 successful requests: no usage.completion_tokens"
                    .to_string()
            ]
        );
    }

    #[test]
    fn prompt_rule_subtracts_the_server_overhead_and_uses_5_percent() {
        // chat template adds 9 tokens: 128 + 9 = 137 is exact; 143 − 9 = 134 is +4.7 % (ok);
        // 144 − 9 = 135 is +5.5 % (off); 109 − 9 = 100 vs 120 intended is −16.7 % (worst)
        let recs = vec![
            rec(0, 8, 8, (128, Some(137))),
            rec(1, 8, 8, (128, Some(143))),
            rec(2, 8, 8, (128, Some(144))),
            rec(3, 8, 8, (120, Some(109))),
        ];
        let v = check(&recs, &fixed(PromptCheck::Check { overhead: 9 }));
        assert_eq!(
            v.violations,
            vec![
                "prompt length violated: 2/4 off by more than 5 % (worst: usage.prompt_tokens 109, intended 120 + 9 server overhead, -16.7 %)"
                    .to_string()
            ]
        );
        // the same numbers without the overhead subtracted: all four off (+7.0 % … +12.5 %,
        // −9.2 %), the worst +12.5 %
        let v0 = check(&recs, &fixed(PromptCheck::Check { overhead: 0 }));
        assert_eq!(
            v0.violations,
            vec![
                "prompt length violated: 4/4 off by more than 5 % (worst: usage.prompt_tokens 144, intended 128, +12.5 %)"
                    .to_string()
            ]
        );
    }

    #[test]
    fn no_usage_prompt_tokens_says_not_checked() {
        let v = check(
            &[rec(0, 8, 8, (128, None))],
            &fixed(PromptCheck::Check { overhead: 0 }),
        );
        assert!(v.is_valid());
        assert_eq!(
            v.unchecked,
            vec!["prompt length not checked: no response carried usage.prompt_tokens".to_string()]
        );
    }
}
