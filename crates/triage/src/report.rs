//! Combining per-log results into one triage verdict, with evidence across logs.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use servebench_contracts::JobStage;

use crate::normalise::group_key;
use crate::scan::{FirstError, LogMark, LogTriage, SecondaryError};
use crate::signatures::{render_with_defaults, LayerSpec, Signature, SignatureTable};
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
    /// How far the clocks of two nodes may disagree (milliseconds): first errors on different
    /// nodes closer than this are not ordered by their times ([`crate::multinode`]).
    #[serde(default = "default_skew")]
    pub clock_skew_ms: u64,
}

fn default_skew() -> u64 {
    crate::multinode::DEFAULT_CLOCK_SKEW_MS
}

impl Default for TriageOptions {
    fn default() -> Self {
        TriageOptions {
            phase: Phase::Targeted,
            repairs_used: 0,
            infra_retries_used: 0,
            clock_skew_ms: crate::multinode::DEFAULT_CLOCK_SKEW_MS,
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
                let origin = match (&fe.node, &fe.role) {
                    (Some(n), Some(r)) => format!(" (node {n}, {r})"),
                    (Some(n), None) => format!(" (node {n})"),
                    (None, Some(r)) => format!(" ({r})"),
                    (None, None) => String::new(),
                };
                let _ = writeln!(o, "First error: {}:{}{origin}", fe.file, fe.line_no);
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
    // Empty and binary logs, said by name (`FILE: empty log`, `FILE: not a text log (…)`).
    let unreadable: Vec<String> = logs.iter().filter_map(|l| l.unreadable_reason()).collect();
    // A multi-node job: the first error across nodes by time, with its node and role.
    let placement = crate::multinode::place(&logs, opts.clock_skew_ms);
    let Some(bi) = placement
        .as_ref()
        .map(|p| p.chosen)
        .or_else(|| best_log(&logs))
    else {
        return no_error_report(logs, secondary, unreadable, opts);
    };
    let mut fe = logs[bi]
        .first_error
        .clone()
        .expect("best has a first error");
    crate::multinode::enrich(&mut fe, &logs[bi]);
    if let Some(p) = &placement {
        fe.node = p.node.clone();
        fe.role = p.role.clone();
    }
    let agreement = Agreement::of(&logs, &fe);
    let sig = fe.signature_id.as_deref().and_then(|id| table.get(id));
    let verdict = Verdict::of(sig, &fe, table);
    let phase = sig.and_then(|s| s.phase).unwrap_or(opts.phase);
    let deterministic = match verdict.persistence {
        Persistence::Deterministic => true,
        Persistence::Mixed | Persistence::Symptom => agreement.runners.len() >= 2,
        _ => false,
    };
    let mut evidence = log_evidence(&fe, &logs, &agreement, verdict.persistence);
    if let Some(p) = placement {
        // after the first-error line, before agreement and stage
        let at = evidence.len().min(1);
        evidence.splice(at..at, p.evidence);
    }
    let mut reasoning = table_reasoning(&fe, verdict.persistence);
    if let Some(why) = &verdict.layer_reason {
        reasoning.insert(0, why.clone());
    }
    let next = NextStep::within_budget(&verdict, &fe, opts);
    if next.action == Action::Stop && verdict.persistence.is_deterministic() {
        if let Some(outcome) = next.outcome {
            reasoning.push(format!(
                "no repair possible inside the candidate's scope ({} layer): stop as {}",
                verdict.layer,
                outcome.as_str()
            ));
        }
    }
    evidence.extend(unreadable);
    let logs_agreeing = agreement.logs.len();
    let same_first_error_runners = agreement.runners;
    let fix = verdict.render(&verdict.fix, &fe.fields);

    TriageReport {
        signature_id: fe.signature_id.clone(),
        category: verdict.category,
        class: verdict.class,
        section_class: verdict.section_class,
        layer: verdict.layer,
        persistence: verdict.persistence,
        deterministic,
        retry: next.action == Action::Retry,
        evidence,
        reasoning,
        fix,
        next_step: next.text,
        action: next.action,
        outcome: next.outcome,
        phase,
        repairs_used: opts.repairs_used,
        same_first_error_runners,
        logs_agreeing,
        first_error: Some(fe),
        secondary,
        logs,
    }
}

/// The log whose first error is reported: the best tier (specific > unclassified > generic),
/// then the first such log.
fn best_log(logs: &[LogTriage]) -> Option<usize> {
    logs.iter()
        .enumerate()
        .filter_map(|(i, l)| l.first_error.as_ref().map(|fe| (fe.tier, i)))
        .min_by_key(|(t, i)| (*t, *i))
        .map(|(_, i)| i)
}

/// The verdict when no log holds an error-like line: inspect, with the line count of the text
/// logs and the `unreadable` reasons as evidence.
fn no_error_report(
    logs: Vec<LogTriage>,
    secondary: Vec<SecondaryError>,
    unreadable: Vec<String>,
    opts: &TriageOptions,
) -> TriageReport {
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
    TriageReport {
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
        next_step: "Check that these are the failing job's logs (gh run view --log-failed).".into(),
        action: Action::Inspect,
        outcome: None,
        phase: opts.phase,
        repairs_used: opts.repairs_used,
        same_first_error_runners: vec![],
        logs_agreeing: 0,
        secondary,
        logs,
    }
}

/// The logs whose first error is the same as the reported one (same [`normalise`] key),
/// including its own.
struct Agreement<'l> {
    /// The grouping key of the reported first error.
    key: String,
    /// The agreeing logs, in input order.
    logs: Vec<&'l LogTriage>,
    /// Their distinct runner names, sorted.
    runners: Vec<String>,
}

impl<'l> Agreement<'l> {
    fn of(logs: &'l [LogTriage], fe: &FirstError) -> Self {
        let key = normalise(fe);
        let agreeing: Vec<&LogTriage> = logs
            .iter()
            .filter(|l| l.first_error.as_ref().is_some_and(|f| normalise(f) == key))
            .collect();
        let runners = agreeing
            .iter()
            .filter_map(|l| l.runner.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Agreement {
            key,
            logs: agreeing,
            runners,
        }
    }

    /// `FILE:LINE` of each agreeing log's first error.
    fn locations(&self) -> Vec<String> {
        self.logs
            .iter()
            .filter_map(|l| {
                l.first_error
                    .as_ref()
                    .map(|f| format!("{}:{}", f.file, f.line_no))
            })
            .collect()
    }
}

/// What the signature table says about a first error (class, owner, persistence, templates),
/// before the repair/retry budget is applied.
struct Verdict {
    category: String,
    class: String,
    layer: Layer,
    persistence: Persistence,
    action: Action,
    /// The terminal outcome when the action is a stop.
    outcome: Option<Outcome>,
    /// The AUTOMATION.md §5.4 class, when there is one.
    section_class: Option<String>,
    /// The fix template ([`crate::signatures::render_template`]).
    fix: String,
    /// The next-step template ([`crate::signatures::render_template`]).
    next: String,
    /// Words for template fields the log did not give ([`Signature::defaults`]).
    defaults: std::collections::BTreeMap<String, String>,
    /// Why the layer is not the stage the log was in (a `layer = "env"` row whose variables
    /// are the launcher's contract), for the reasoning.
    layer_reason: Option<String>,
}

impl Verdict {
    /// The verdict of signature `sig` for `fe` (an unclassified line when `None`); `table`
    /// holds the launcher's environment contract for `layer = "env"` rows.
    fn of(sig: Option<&Signature>, fe: &FirstError, table: &SignatureTable) -> Self {
        let Some(s) = sig else {
            return Self::unclassified(fe);
        };
        let mut layer_reason = None;
        let layer = match s.layer {
            LayerSpec::Fixed(l) => l,
            LayerSpec::Context { fallback } => fe.stage.unwrap_or(fallback),
            LayerSpec::Env { fallback } => {
                let vars = fe.fields.get("var").map(String::as_str).unwrap_or("");
                match table.env_owner(vars) {
                    Some(owner) => {
                        if fe.stage.is_some_and(|st| st != owner) {
                            layer_reason = Some(format!(
                                "{vars} belongs to the launcher's environment contract (InferenceX's workflow env passes it to the launcher, which passes it on): the {} only checks it, the launcher must set it",
                                fe.stage.map_or("recipe", |st| st.as_str())
                            ));
                        }
                        owner
                    }
                    None => fe.stage.unwrap_or(fallback),
                }
            }
            LayerSpec::Shell => fe.attributed_layer.or(fe.stage).unwrap_or(Layer::Unknown),
        };
        let mut v = Verdict {
            category: s.category.clone(),
            class: s.class.clone(),
            layer,
            persistence: s.persistence,
            action: s.action,
            outcome: s.outcome,
            section_class: if s.is_section_class() {
                Some(s.id.clone())
            } else {
                s.related.clone()
            },
            fix: s.fix.clone(),
            next: s.next.clone(),
            defaults: s.defaults.clone(),
            layer_reason,
        };
        if s.layer == LayerSpec::Shell {
            v.scope_shell_repair();
        }
        v
    }

    /// An error line matching no signature: inspect it.
    fn unclassified(fe: &FirstError) -> Self {
        Verdict {
            category: "unclassified".to_string(),
            class: "error line matching no signature".to_string(),
            layer: Layer::Unknown,
            persistence: Persistence::Mixed,
            action: Action::Inspect,
            outcome: None,
            section_class: None,
            fix: "unknown".to_string(),
            next: format!(
                "Read about 50 lines around {}:{} and state the root cause; add a signature to signatures.toml if it recurs.",
                fe.file, fe.line_no
            ),
            defaults: Default::default(),
            layer_reason: None,
        }
    }

    /// `template` with `fields`, this verdict's defaults for the fields the log did not give,
    /// and the layer (never a placeholder: [`crate::signatures::render_template`]).
    fn render(
        &self,
        template: &str,
        fields: &std::collections::BTreeMap<String, String>,
    ) -> String {
        render_with_defaults(template, fields, &self.defaults, self.layer)
    }

    /// Shell rows: the repair happens in the attributed layer; outside the candidate's scope
    /// (the host, the launcher) the attempt is readiness-blocked; an unknown owner is
    /// inspected.
    fn scope_shell_repair(&mut self) {
        if self.action != Action::Repair {
            return;
        }
        match self.layer {
            Layer::Host | Layer::Launcher | Layer::Node => {
                self.action = Action::Stop;
                self.outcome = Some(Outcome::ReadinessBlocked);
            }
            Layer::Unknown => self.action = Action::Inspect,
            _ => {}
        }
    }
}

/// The next step once the budget is applied: [`MAX_REPAIRS`] repairs per candidate,
/// [`MAX_INFRA_RETRIES_PER_ATTEMPT`] infrastructure retries per attempt.
struct NextStep {
    action: Action,
    /// Terminal outcome implied now (`None` while a repair or retry is still the next step).
    outcome: Option<Outcome>,
    /// The next step, template fields filled in.
    text: String,
}

impl NextStep {
    fn within_budget(v: &Verdict, fe: &FirstError, opts: &TriageOptions) -> Self {
        let mut next = NextStep {
            action: v.action,
            outcome: if v.action == Action::Stop {
                v.outcome
            } else {
                None
            },
            text: v.render(&v.next, &fe.fields),
        };
        if next.action == Action::Repair && opts.repairs_used >= MAX_REPAIRS {
            next.outcome = Some(Outcome::Failed);
            next.action = Action::Stop;
            next.text =
                format!("Repair budget exhausted ({MAX_REPAIRS}/{MAX_REPAIRS}): stop as failed.");
        } else if next.action == Action::Retry
            && opts.infra_retries_used >= MAX_INFRA_RETRIES_PER_ATTEMPT
        {
            next.action = Action::Inspect;
            next.text = format!(
                "Infrastructure retries exhausted ({0}/{0}) for this attempt: inspect before anything else. {1}",
                MAX_INFRA_RETRIES_PER_ATTEMPT, next.text
            );
        }
        next
    }
}

/// Evidence: only what the logs show, quoted with `FILE:LINE` (the first error, agreement
/// across logs, the stage and timing, repeats).
fn log_evidence(
    fe: &FirstError,
    logs: &[LogTriage],
    agreement: &Agreement<'_>,
    persistence: Persistence,
) -> Vec<String> {
    let mut evidence = vec![first_error_evidence(fe, agreement)];
    if logs.len() >= 2 {
        evidence.push(agreement_evidence(logs, agreement, persistence));
    }
    evidence.push(stage_evidence(fe));
    if fe.repeats > 0 {
        evidence.push(format!("repeated {} more times in {}", fe.repeats, fe.file));
    }
    evidence
}

/// `first error at FILE:LINE, …: `line``; when the agreeing logs wrote the line differently,
/// the normalised summary with the reported log's own text.
fn first_error_evidence(fe: &FirstError, agreement: &Agreement<'_>) -> String {
    let locs = agreement.locations();
    let written: BTreeSet<&str> = agreement
        .logs
        .iter()
        .filter_map(|l| l.first_error.as_ref().map(|f| f.line.as_str()))
        .collect();
    if written.len() > 1 {
        format!(
            "first error at {}: `{}` (as written at {}:{}: `{}`; the lines differ only in ports, pids, temporary paths, timestamps or numbers)",
            list(&locs),
            quote(&fe.summary),
            fe.file,
            fe.line_no,
            quote(&fe.line)
        )
    } else {
        format!("first error at {}: `{}`", list(&locs), quote(&fe.line))
    }
}

/// How two or more logs compare: the same first error on N runners (with the runner-name
/// lines), in all logs, or which logs differ and how.
fn agreement_evidence(
    logs: &[LogTriage],
    agreement: &Agreement<'_>,
    persistence: Persistence,
) -> String {
    let runners = &agreement.runners;
    if agreement.logs.len() != logs.len() {
        let others: Vec<String> = logs
            .iter()
            .filter(|l| {
                l.first_error
                    .as_ref()
                    .is_none_or(|f| normalise(f) != agreement.key)
            })
            .map(|l| match &l.first_error {
                Some(f) => format!("{} → {} at {}:{}", l.file, f.category, l.file, f.line_no),
                None => format!("{} → no error", l.file),
            })
            .collect();
        return format!(
            "{} of {} logs share this first error; the others differ: {}",
            agreement.logs.len(),
            logs.len(),
            list(&others)
        );
    }
    if runners.len() < 2 {
        return format!("same first error in all {} logs", logs.len());
    }
    let what = if persistence.is_transient() {
        "not node-specific"
    } else {
        "deterministic, not a node fault"
    };
    let named: Vec<String> = agreement
        .logs
        .iter()
        .filter_map(|l| Some(format!("{}:{}", l.file, l.runner_line?)))
        .collect();
    format!(
        "same first error on {} runners ({}): {what} (runner names at {})",
        runners.len(),
        list(runners),
        list(&named)
    )
}

/// Conclusions drawn from the signature table rather than the logs: what a generic wrapper's
/// exit status 126/127 means, what the class's persistence implies for a retry.
fn table_reasoning(fe: &FirstError, persistence: Persistence) -> Vec<String> {
    let mut reasoning = Vec::new();
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
    reasoning
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
    // The words are JobStage's (the attempt comment says the same); the evidence adds the
    // lines they rest on.
    let stage = fe.job_stage();
    let words = stage.en().unwrap_or_default();
    parts.push(match (stage, &m.engine_launch, &m.model_loaded, &m.server_ready) {
        (JobStage::AfterServerReady, Some(launch), _, Some(ready)) => format!(
            "{words} (ready at {}; engine launched at {}:{})",
            at(f, ready),
            f,
            launch.line_no
        ),
        (JobStage::EngineStartUpAfterModelLoad, Some(launch), Some(loaded), _) => format!(
            "{words} (model loaded at {}; engine launched at {}:{})",
            at(f, loaded),
            f,
            launch.line_no
        ),
        (JobStage::EngineStartUp, Some(launch), _, _) => {
            format!("{words} (engine launched at {})", at(f, launch))
        }
        (JobStage::AfterImageImport, _, _, _) => match &m.image_import {
            Some(import) => format!("{words} (image imported at {})", at(f, import)),
            None => words.to_string(),
        },
        (JobStage::BeforeImportOrServerStart, _, _, _) => match &m.job_start {
            Some(start) => format!(
                "{words}: the job starts at {} and lines {}–{} hold no import or launch line",
                at(f, start),
                start.line_no,
                fe.line_no.saturating_sub(1).max(start.line_no)
            ),
            None => words.to_string(),
        },
        _ => format!(
            "no image import or server start line in lines 1–{}, but the log does not show the job start (an earlier part may be in another log): no claim on the stage",
            fe.line_no.saturating_sub(1)
        ),
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
