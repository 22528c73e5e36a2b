//! Combining per-log results into one triage verdict, with evidence across logs.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::normalise::group_key;
use crate::scan::{FirstError, LogMark, LogTriage, SecondaryError};
use crate::signatures::{render_template, LayerSpec, SignatureTable};
use crate::types::{
    Action, Layer, Outcome, Persistence, Phase, MAX_INFRA_RETRIES_PER_ATTEMPT, MAX_REPAIRS,
};

/// Where the logs come from in the candidate's life, and the budget already used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriageOptions {
    /// Phase of the attempt that produced the logs (default `targeted`).
    pub phase: Phase,
    /// Repairs already used (0 for the initial attempt).
    pub repairs_used: u32,
    /// Infrastructure retries already used for this attempt.
    pub infra_retries_used: u32,
}

impl Default for TriageOptions {
    fn default() -> Self {
        TriageOptions {
            phase: Phase::Targeted,
            repairs_used: 0,
            infra_retries_used: 0,
        }
    }
}

/// The triage verdict over one or more logs of the same attempt.
///
/// `first_error` is the first real error of the first log that has the best kind of first error
/// (specific signature > unclassified error line > generic wrapper); the other logs are compared
/// with it for the evidence (`same first error on N runners`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriageReport {
    /// The first real error (file, 1-based line number, message, continuation lines, fields).
    pub first_error: Option<FirstError>,
    /// Signature id (`"D1"`, `"missing_env_var"`, …); `None` when unclassified or no error.
    pub signature_id: Option<String>,
    /// Category (`missing_env_var`, `cuda_oom`, …; `unclassified`; `none` when no error).
    pub category: String,
    /// Class description.
    pub class: String,
    /// The AUTOMATION.md §5.4 class (`"F3"`…) this maps to, when there is one.
    pub section_class: Option<String>,
    /// Owning layer of the fix.
    pub layer: Layer,
    /// Transient / deterministic / mixed, from the signature.
    pub persistence: Persistence,
    /// Deterministic: the class is D, or the same first error appeared on ≥ 2 runners.
    pub deterministic: bool,
    /// True when the next step is an infrastructure retry on the same head.
    pub retry: bool,
    /// Evidence: only what the logs show, each line quoting the log line(s) it rests on with
    /// `FILE:LINE` (first-error locations, agreement across runners, stage and timing).
    pub evidence: Vec<String>,
    /// Conclusions drawn from the signature table rather than from the logs (e.g.
    /// "deterministic class: a retry on the same head fails the same way").
    #[serde(default)]
    pub reasoning: Vec<String>,
    /// The fix (from the table, fields filled in).
    pub fix: String,
    /// The next step (from the table, fields filled in, budget applied).
    pub next_step: String,
    /// What to do next.
    pub action: Action,
    /// Terminal outcome implied now (`None` while a repair or retry is still the next step).
    pub outcome: Option<Outcome>,
    /// Phase the outcome belongs to.
    pub phase: Phase,
    /// Repairs used so far (this triage does not consume one).
    pub repairs_used: u32,
    /// Runners whose first error is the same as `first_error` (including its own).
    pub same_first_error_runners: Vec<String>,
    /// Number of logs whose first error is the same as `first_error` (including its own).
    pub logs_agreeing: usize,
    /// Secondary errors of every log (downstream symptoms, wrappers, later failures).
    pub secondary: Vec<SecondaryError>,
    /// Per-log results.
    pub logs: Vec<LogTriage>,
}

impl TriageReport {
    /// One phrase for the verdict, e.g. `deterministic (same first error on 2 runners)`.
    pub fn determinism(&self) -> String {
        let runners = self.same_first_error_runners.len();
        let agree = if runners >= 2 {
            format!(" (same first error on {runners} runners)")
        } else if self.logs_agreeing >= 2 {
            format!(" (same first error in {} logs)", self.logs_agreeing)
        } else {
            String::new()
        };
        match self.persistence {
            _ if self.first_error.is_none() => "no error found".into(),
            Persistence::Deterministic => format!("deterministic{agree}"),
            Persistence::Mixed | Persistence::Symptom if self.deterministic => {
                format!("deterministic{agree}")
            }
            Persistence::Mixed => "mixed: inspect before deciding".into(),
            Persistence::Symptom => "symptom only: find the real error".into(),
            Persistence::Transient => format!("transient{agree}"),
            Persistence::TransientNode => format!("transient (node-specific){agree}"),
            Persistence::Tooling => "tooling quirk".into(),
        }
    }

    /// Multi-line plain-text rendering for the terminal.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        match &self.first_error {
            None => {
                let _ = writeln!(o, "First error: none found");
            }
            Some(fe) => {
                let _ = writeln!(o, "First error: {}:{}", fe.file, fe.line_no);
                let _ = writeln!(o, "  {}", fe.line);
                for c in &fe.continuation {
                    let _ = writeln!(o, "    {c}");
                }
                if fe.repeats > 0 {
                    let _ = writeln!(o, "  (repeated {} more times in this log)", fe.repeats);
                }
            }
        }
        let fields = self
            .first_error
            .as_ref()
            .map(|fe| {
                fe.fields
                    .iter()
                    // The shell rules' template fields are said by Fix/Next already.
                    .filter(|(k, _)| !crate::shell::TEMPLATE_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let id = match (&self.signature_id, &self.section_class) {
            (Some(id), Some(sc)) if id != sc => format!(" [{id}, §5.4 {sc}]"),
            (Some(id), _) => format!(" [{id}]"),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "Class:       {} — {}{}{}",
            self.category,
            self.class,
            if fields.is_empty() {
                String::new()
            } else {
                format!(" ({fields})")
            },
            id
        );
        let _ = writeln!(o, "Layer:       {}", self.layer);
        let _ = writeln!(
            o,
            "Verdict:     {}; {}",
            self.determinism(),
            if self.retry {
                "infrastructure retry"
            } else {
                "no retry"
            }
        );
        let _ = writeln!(o, "Fix:         {}", self.fix);
        let _ = writeln!(o, "Next:        {}", self.next_step);
        let _ = writeln!(
            o,
            "Outcome:     {} · phase {} · repairs {}",
            self.outcome
                .map(|x| x.as_str())
                .unwrap_or("none yet (not terminal)"),
            self.phase,
            self.repairs_used
        );
        if !self.evidence.is_empty() {
            let _ = writeln!(o, "Evidence:");
            for e in &self.evidence {
                let _ = writeln!(o, "  - {e}");
            }
        }
        if !self.reasoning.is_empty() {
            let _ = writeln!(o, "Reasoning (signature table):");
            for e in &self.reasoning {
                let _ = writeln!(o, "  - {e}");
            }
        }
        if !self.secondary.is_empty() {
            let _ = writeln!(o, "Secondary:");
            for s in &self.secondary {
                let _ = writeln!(
                    o,
                    "  - {}:{} {}{}{}: {}",
                    s.file,
                    s.line_no,
                    s.category,
                    if s.generic { " (generic)" } else { "" },
                    if s.count > 1 {
                        format!(" ×{}", s.count)
                    } else {
                        String::new()
                    },
                    s.line
                );
            }
        }
        o
    }
}

/// The key logs are grouped by: the signature, then the message and its continuation with
/// ephemeral details (ports, pids, temporary directories, timestamps) and digits normalised
/// ([`crate::group_key`]).
fn normalise(fe: &FirstError) -> String {
    let mut text = String::with_capacity(fe.line.len() + 16);
    text.push_str(&fe.line);
    for c in &fe.continuation {
        text.push('\n');
        text.push_str(c);
    }
    format!(
        "{}|{}",
        fe.signature_id.as_deref().unwrap_or("?"),
        group_key(&text)
    )
}

fn list(items: &[String]) -> String {
    items.join(", ")
}

/// Combines per-log scans into one verdict (see [`TriageReport`]).
pub fn build_report(
    logs: Vec<LogTriage>,
    table: &SignatureTable,
    opts: &TriageOptions,
) -> TriageReport {
    let secondary: Vec<SecondaryError> = logs
        .iter()
        .flat_map(|l| l.secondary.iter().cloned())
        .collect();
    let best = logs
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.first_error.as_ref().map(|fe| (fe.tier, i)))
        .min_by_key(|(t, i)| (*t, *i))
        .map(|(_, i)| i);
    // Empty and binary logs, said by name (`FILE: empty log`, `FILE: not a text log (…)`).
    let unreadable: Vec<String> = logs.iter().filter_map(|l| l.unreadable_reason()).collect();
    let Some(bi) = best else {
        let text_logs: Vec<&LogTriage> = logs
            .iter()
            .filter(|l| l.unreadable_reason().is_none())
            .collect();
        let total: u64 = text_logs.iter().map(|l| l.lines).sum();
        let mut evidence = unreadable;
        if !text_logs.is_empty() {
            evidence.push(format!(
                "{} log(s), {total} lines: no error-like line",
                text_logs.len()
            ));
        }
        return TriageReport {
            first_error: None,
            signature_id: None,
            category: "none".into(),
            class: "no error-like line found".into(),
            section_class: None,
            layer: Layer::Unknown,
            persistence: Persistence::Mixed,
            deterministic: false,
            retry: false,
            evidence,
            reasoning: vec![],
            fix: "none".into(),
            next_step: "Check that these are the failing job's logs (gh run view --log-failed)."
                .into(),
            action: Action::Inspect,
            outcome: None,
            phase: opts.phase,
            repairs_used: opts.repairs_used,
            same_first_error_runners: vec![],
            logs_agreeing: 0,
            secondary,
            logs,
        };
    };
    let fe = logs[bi]
        .first_error
        .clone()
        .expect("best has a first error");
    let key = normalise(&fe);
    let agreeing: Vec<&LogTriage> = logs
        .iter()
        .filter(|l| l.first_error.as_ref().is_some_and(|f| normalise(f) == key))
        .collect();
    let runners: Vec<String> = agreeing
        .iter()
        .filter_map(|l| l.runner.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let sig = fe.signature_id.as_deref().and_then(|id| table.get(id));
    let (category, class, layer, persistence, mut action, sig_outcome, section_class, fix_t, next_t) = match sig {
        Some(s) => {
            let layer = match s.layer {
                LayerSpec::Fixed(l) => l,
                LayerSpec::Context { fallback } => fe.stage.unwrap_or(fallback),
                LayerSpec::Shell => fe.attributed_layer.or(fe.stage).unwrap_or(Layer::Unknown),
            };
            let section = if s.is_section_class() { Some(s.id.clone()) } else { s.related.clone() };
            (
                s.category.clone(),
                s.class.clone(),
                layer,
                s.persistence,
                s.action,
                s.outcome,
                section,
                s.fix.clone(),
                s.next.clone(),
            )
        }
        None => (
            "unclassified".to_string(),
            "error line matching no signature".to_string(),
            Layer::Unknown,
            Persistence::Mixed,
            Action::Inspect,
            None,
            None,
            "unknown".to_string(),
            format!(
                "Read about 50 lines around {}:{} and state the root cause; add a signature to signatures.toml if it recurs.",
                fe.file, fe.line_no
            ),
        ),
    };
    let phase = sig.and_then(|s| s.phase).unwrap_or(opts.phase);
    // Shell rows: the repair happens in the attributed layer; outside the candidate's scope
    // (the host, the launcher) the attempt is readiness-blocked; an unknown owner is inspected.
    let mut sig_outcome = sig_outcome;
    if sig.is_some_and(|s| s.layer == LayerSpec::Shell) && action == Action::Repair {
        match layer {
            Layer::Host | Layer::Launcher | Layer::Node => {
                action = Action::Stop;
                sig_outcome = Some(Outcome::ReadinessBlocked);
            }
            Layer::Unknown => action = Action::Inspect,
            _ => {}
        }
    }

    let deterministic = match persistence {
        Persistence::Deterministic => true,
        Persistence::Mixed | Persistence::Symptom => runners.len() >= 2,
        _ => false,
    };

    // Evidence: only what the logs show, quoted with FILE:LINE.
    let mut evidence = Vec::new();
    let mut reasoning = Vec::new();
    let locs: Vec<String> = agreeing
        .iter()
        .filter_map(|l| {
            l.first_error
                .as_ref()
                .map(|f| format!("{}:{}", f.file, f.line_no))
        })
        .collect();
    let written: BTreeSet<&str> = agreeing
        .iter()
        .filter_map(|l| l.first_error.as_ref().map(|f| f.line.as_str()))
        .collect();
    if written.len() > 1 {
        evidence.push(format!(
            "first error at {}: `{}` (as written at {}:{}: `{}`; the lines differ only in ports, pids, temporary paths, timestamps or numbers)",
            list(&locs),
            quote(&fe.summary),
            fe.file,
            fe.line_no,
            quote(&fe.line)
        ));
    } else {
        evidence.push(format!(
            "first error at {}: `{}`",
            list(&locs),
            quote(&fe.line)
        ));
    }
    if logs.len() >= 2 {
        if agreeing.len() == logs.len() {
            if runners.len() >= 2 {
                let what = if persistence.is_transient() {
                    "not node-specific"
                } else {
                    "deterministic, not a node fault"
                };
                let named: Vec<String> = agreeing
                    .iter()
                    .filter_map(|l| Some(format!("{}:{}", l.file, l.runner_line?)))
                    .collect();
                evidence.push(format!(
                    "same first error on {} runners ({}): {what} (runner names at {})",
                    runners.len(),
                    list(&runners),
                    list(&named)
                ));
            } else {
                evidence.push(format!("same first error in all {} logs", logs.len()));
            }
        } else {
            let others: Vec<String> = logs
                .iter()
                .filter(|l| l.first_error.as_ref().is_none_or(|f| normalise(f) != key))
                .map(|l| match &l.first_error {
                    Some(f) => format!("{} → {} at {}:{}", l.file, f.category, l.file, f.line_no),
                    None => format!("{} → no error", l.file),
                })
                .collect();
            evidence.push(format!(
                "{} of {} logs share this first error; the others differ: {}",
                agreeing.len(),
                logs.len(),
                list(&others)
            ));
        }
    }
    evidence.push(stage_evidence(&fe));
    if fe.repeats > 0 {
        evidence.push(format!("repeated {} more times in {}", fe.repeats, fe.file));
    }
    if fe.tier == crate::scan::Tier::Generic {
        let status = fe
            .fields
            .get("exit_status")
            .or_else(|| fe.fields.get("code"));
        match status.map(String::as_str) {
            Some("127") => reasoning.push(
                "exit status 127 is the shell's `command not found` (or a script file that does not exist): the shell's own message went to the script's stderr; if none of these logs holds it, read where the recipe's stderr went".into(),
            ),
            Some("126") => reasoning.push(
                "exit status 126 is the shell's `found but not executable` (Permission denied, bad interpreter): the shell's own message went to the script's stderr".into(),
            ),
            _ => {}
        }
    }
    match persistence {
        Persistence::Deterministic => reasoning
            .push("deterministic class: a retry on the same head fails the same way".into()),
        Persistence::Transient | Persistence::TransientNode => reasoning.push(
            "transient class: infrastructure retry on the same head, no repair consumed".into(),
        ),
        _ => {}
    }

    // Budget.
    let mut outcome = if action == Action::Stop {
        sig_outcome
    } else {
        None
    };
    let mut next_step = render_template(&next_t, &fe.fields, layer);
    if action == Action::Repair && opts.repairs_used >= MAX_REPAIRS {
        outcome = Some(Outcome::Failed);
        action = Action::Stop;
        next_step =
            format!("Repair budget exhausted ({MAX_REPAIRS}/{MAX_REPAIRS}): stop as failed.");
    } else if action == Action::Retry && opts.infra_retries_used >= MAX_INFRA_RETRIES_PER_ATTEMPT {
        action = Action::Inspect;
        next_step = format!(
            "Infrastructure retries exhausted ({0}/{0}) for this attempt: inspect before anything else. {next_step}",
            MAX_INFRA_RETRIES_PER_ATTEMPT
        );
    }
    if action == Action::Stop && persistence.is_deterministic() && outcome.is_some() {
        reasoning.push(format!(
            "no repair possible inside the candidate's scope ({layer} layer): stop as {}",
            outcome.map(|o| o.as_str()).unwrap_or("-")
        ));
    }

    evidence.extend(unreadable);

    TriageReport {
        signature_id: fe.signature_id.clone(),
        category,
        class,
        section_class,
        layer,
        persistence,
        deterministic,
        retry: action == Action::Retry,
        evidence,
        reasoning,
        fix: render_template(&fix_t, &fe.fields, layer),
        next_step,
        action,
        outcome,
        phase,
        repairs_used: opts.repairs_used,
        same_first_error_runners: runners,
        logs_agreeing: agreeing.len(),
        first_error: Some(fe),
        secondary,
        logs,
    }
}

/// A log line quoted inside backticks (backticks in it become `'`).
fn quote(s: &str) -> String {
    s.replace('`', "'")
}

fn at(file: &str, m: &LogMark) -> String {
    format!("{file}:{} `{}`", m.line_no, quote(&m.line))
}

/// Where the first error sits relative to the job's stages, claiming only what the log shows:
/// "before any image import or server start" needs the job start in the log and no import or
/// launch marker before the error; an error after model loading is "during engine start-up"
/// until the server reported ready.
fn stage_evidence(fe: &FirstError) -> String {
    let m = &fe.marks;
    let f = fe.file.as_str();
    let mut parts = Vec::new();
    if let Some(s) = fe.seconds_after_log_start {
        parts.push(format!("{s:.1} s after the log's first line"));
    }
    parts.push(match (&m.engine_launch, &m.image_import) {
        (Some(launch), _) => match (&m.server_ready, &m.model_loaded) {
            (Some(ready), _) => format!(
                "after the server reported ready at {} (engine launched at {}:{})",
                at(f, ready),
                f,
                launch.line_no
            ),
            (None, Some(loaded)) => format!(
                "during engine start-up: after model loading at {}, before any server-ready line (engine launched at {}:{})",
                at(f, loaded),
                f,
                launch.line_no
            ),
            (None, None) => format!(
                "during engine start-up, before any model-loaded or server-ready line (engine launched at {})",
                at(f, launch)
            ),
        },
        (None, Some(import)) => format!(
            "after the image import at {}, before any server start line",
            at(f, import)
        ),
        (None, None) => match &m.job_start {
            Some(start) => format!(
                "before any image import or server start: the job starts at {} and lines {}–{} hold no import or launch line",
                at(f, start),
                start.line_no,
                fe.line_no.saturating_sub(1).max(start.line_no)
            ),
            None => format!(
                "no image import or server start line in lines 1–{}, but the log does not show the job start (an earlier part may be in another log): no claim on the stage",
                fe.line_no.saturating_sub(1)
            ),
        },
    });
    let stage = match (fe.stage, &m.stage) {
        (Some(st), Some(mk)) => {
            format!("raised while the {st} was running (since {}), ", at(f, mk))
        }
        (Some(st), None) => format!("raised while the {st} was running, "),
        _ => "raised ".to_string(),
    };
    format!("{stage}{}", parts.join(", "))
}
