//! The streaming scanner: one pass over a `BufRead`, one line buffer, no whole-file load.
//!
//! The first-error rule (cases/README.md "Triage rule implied by the triage rows"): scan top to
//! bottom; skip logging noise (`INFO`/`DEBUG`/`WARNING` lines, `NCCL INFO`, progress bars, CI
//! group markers, shell `set -x` echoes), traceback frame lines (`File "…", line N`) and echoed
//! source lines (indented code inside a traceback, `raise X(`); then the first line matching a
//! *specific* signature wins. A line that looks like an error but matches no signature
//! (`unclassified`) comes next; generic wrappers ("EngineCore failed to start", "Process
//! completed with exit code", `ZeroDivisionError`, …) count only when nothing else exists.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use servebench_contracts::JobStage;

use crate::clock::{days_from_civil, ErrorTime};
use crate::normalise::normalise_ephemeral;
use crate::prefix::{bare_prefix, level_prefix};
use crate::shell::{
    attribute, template_fields, trace_command, trace_is_not_a_set_e_candidate,
    trace_starts_nothing, ShellContext,
};
use crate::signatures::{LayerSpec, LineMatch, Signature, SignatureTable};
use crate::types::Layer;

/// How the first error was chosen (the tiers of the first-error rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// Matched a specific signature.
    Specific,
    /// Looked like an error (level ERROR, `XxxError:` …) but matched no signature.
    Unclassified,
    /// Only a generic wrapper/symptom matched.
    Generic,
}

/// A line of the log that evidence refers to (a stage marker, the job start…).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMark {
    /// 1-based line number.
    pub line_no: u64,
    /// The line without its CI timestamp and log prefix, trimmed, at most
    /// [`MARK_QUOTE_CHARS`] characters (longer lines end with `…`).
    pub line: String,
}

/// Longest quote of a marker line kept in a [`LogMark`] (characters).
pub const MARK_QUOTE_CHARS: usize = 160;

impl LogMark {
    fn new(line_no: u64, body: &str) -> Self {
        let body = body.trim();
        let line = if body.chars().count() > MARK_QUOTE_CHARS {
            let mut s: String = body.chars().take(MARK_QUOTE_CHARS).collect();
            s.push('…');
            s
        } else {
            body.to_string()
        };
        LogMark { line_no, line }
    }
}

/// The markers seen in a log before a given line: what the evidence may say about the stage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageMarks {
    /// First line showing the job started (`Runner name: …`, `Job: …`, `salloc: Granted job
    /// allocation`, the runner's version banner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_start: Option<LogMark>,
    /// The marker that set the current stage (launcher, recipe, engine, client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<LogMark>,
    /// First image import / container start marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_import: Option<LogMark>,
    /// First engine launch marker (`vllm serve`, `sglang.launch_server`, `trtllm-serve`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_launch: Option<LogMark>,
    /// First "model weights loaded" marker (vLLM `Model loading took`, SGLang `Load weight
    /// end`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_loaded: Option<LogMark>,
    /// First "server ready" marker (`Application startup complete`, SGLang `The server is
    /// fired up and ready to roll`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ready: Option<LogMark>,
}

/// The first real error of one log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstError {
    /// The log file (as given).
    pub file: String,
    /// 1-based line number.
    pub line_no: u64,
    /// The message: the line without its CI timestamp and log-level prefix, trimmed.
    pub line: String,
    /// The message with its ephemeral details replaced (ports, pids, temporary directories,
    /// timestamps, attempt directories: [`crate::normalise_ephemeral`]), so that the same
    /// failure on two runners or ports reads the same; `line` and `raw` keep the text as
    /// written.
    #[serde(default)]
    pub summary: String,
    /// The line exactly as written (without the newline).
    pub raw: String,
    /// Following lines that belong to the error (e.g. `- MODEL_PATH`), trimmed.
    pub continuation: Vec<String>,
    /// The CI timestamp of the line, when the log has them.
    pub timestamp: Option<String>,
    /// Matched signature id (`None` for `unclassified`).
    pub signature_id: Option<String>,
    /// Category (`unclassified` when no signature matched).
    pub category: String,
    /// How it was chosen.
    pub tier: Tier,
    /// Named fields extracted by the pattern and continuation (e.g. `var = MODEL_PATH`).
    pub fields: BTreeMap<String, String>,
    /// Stage the log was in at this line (launcher, recipe, engine, client), if any marker.
    pub stage: Option<Layer>,
    /// The owning layer decided by the shell rules ([`crate::shell::attribute`]) for a row
    /// with `layer = "shell"`; `None` for other rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributed_layer: Option<Layer>,
    /// An image import / container start marker appeared before this line.
    pub after_image_import: bool,
    /// An engine start marker appeared before this line.
    pub after_engine_start: bool,
    /// Seconds between the log's first timestamp and this line (CI timestamps), if known.
    pub seconds_after_log_start: Option<f64>,
    /// Later lines that matched the same signature (e.g. 19 more `ClientConnectorError`).
    pub repeats: u64,
    /// The markers seen before this line, each with its line number (what the evidence
    /// quotes).
    #[serde(default)]
    pub marks: StageMarks,
    /// When the line was written, as far as the log says ([`crate::clock`]): the time on the
    /// line, else the last one before it. What orders first errors across nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<ErrorTime>,
    /// The node the log comes from, in a multi-node job ([`crate::multinode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The role of the log in a multi-node job (`decode worker w1`, `frontend`, `Slurm batch
    /// log` …; [`crate::multinode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

impl FirstError {
    /// Where the error sits among the job's stages, from the markers before it: the one
    /// wording of triage's evidence and the attempt comment ([`JobStage::en`]). "Before any
    /// image import or server start" only when the log shows the job start.
    pub fn job_stage(&self) -> JobStage {
        let m = &self.marks;
        match (&m.engine_launch, &m.image_import) {
            (Some(_), _) => match (&m.server_ready, &m.model_loaded) {
                (Some(_), _) => JobStage::AfterServerReady,
                (None, Some(_)) => JobStage::EngineStartUpAfterModelLoad,
                (None, None) => JobStage::EngineStartUp,
            },
            (None, Some(_)) => JobStage::AfterImageImport,
            (None, None) if m.job_start.is_some() => JobStage::BeforeImportOrServerStart,
            (None, None) => JobStage::Unknown,
        }
    }
}

/// Another error line, reported as secondary (downstream symptom or later failure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondaryError {
    /// The log file.
    pub file: String,
    /// 1-based line number of its first occurrence.
    pub line_no: u64,
    /// The message (de-prefixed, trimmed).
    pub line: String,
    /// Signature id.
    pub signature_id: String,
    /// Category.
    pub category: String,
    /// Generic wrapper/symptom.
    pub generic: bool,
    /// Occurrences in this log.
    pub count: u64,
}

/// Triage of one log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogTriage {
    /// The log file (as given).
    pub file: String,
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Runner name (`Runner name: '…'`), if the log names it.
    pub runner: Option<String>,
    /// Line number of the `Runner name:` line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_line: Option<u64>,
    /// Job title (`Job: …`), if the log names it.
    pub job: Option<String>,
    /// First CI timestamp of the log.
    pub first_timestamp: Option<String>,
    /// The first real error (`None`: nothing error-like found).
    pub first_error: Option<FirstError>,
    /// Other matched errors, first occurrence order, one entry per signature.
    pub secondary: Vec<SecondaryError>,
    /// Byte offset (0-based) of the first NUL byte when it lies in the first
    /// [`BINARY_SNIFF_BYTES`] bytes: the file is not a text log and was not scanned further
    /// (`first_error` and `secondary` are then empty). `None` for text logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_at: Option<u64>,
    /// The last time written in the log (where it stops), when it has timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_time: Option<ErrorTime>,
    /// srt-slurm's last `Model is not ready, waiting for N prefills and M decodes` line: the
    /// roles the router was still waiting for ([`crate::multinode::WorkerWait`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_wait: Option<crate::multinode::WorkerWait>,
}

/// How far into a log a NUL byte marks it as binary (git's heuristic looks at 8000 bytes). A NUL
/// further on is read like any other byte (lossy), so a long text log with one stray NUL is
/// still triaged.
pub const BINARY_SNIFF_BYTES: u64 = 8000;

/// Traceback lines kept as context for the exception line that ends the traceback.
const MAX_TRACEBACK_LINES: usize = 256;

impl LogTriage {
    /// Why this log holds nothing to triage: `FILE: empty log` or `FILE: not a text log (binary
    /// data at byte N)`; `None` for a text log with content.
    pub fn unreadable_reason(&self) -> Option<String> {
        if let Some(at) = self.binary_at {
            Some(format!(
                "{}: not a text log (binary data at byte {at})",
                self.file
            ))
        } else if self.bytes == 0 {
            Some(format!("{}: empty log", self.file))
        } else {
            None
        }
    }
}

// ------------------------------------------------------------------------------- line prefixes

struct Split<'a> {
    ts: Option<&'a str>,
    level: Option<&'a str>,
    body: &'a str,
}

/// Splits a CI timestamp (`2026-09-21T01:15:02.114Z `) off the front.
fn split_ci_timestamp(line: &str) -> (Option<&str>, &str) {
    let b = line.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_digit());
    if b.len() < 21
        || !(digit(0) && digit(1) && digit(2) && digit(3))
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return (None, line);
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        while digit(i) {
            i += 1;
        }
    }
    if b.get(i) == Some(&b'Z') {
        i += 1;
    } else if matches!(b.get(i), Some(b'+') | Some(b'-')) {
        i += 1;
        while digit(i) || b.get(i) == Some(&b':') {
            i += 1;
        }
    }
    if b.get(i) == Some(&b' ') {
        (Some(&line[..i]), &line[i + 1..])
    } else if i == b.len() {
        (Some(&line[..i]), "")
    } else {
        (None, line)
    }
}

fn split_line(line: &str) -> Split<'_> {
    let (ts, rest) = split_ci_timestamp(line);
    if let Some(r) = rest.strip_prefix("##[") {
        if let Some(end) = r.find(']') {
            let tag = &r[..end];
            return Split {
                ts,
                level: Some(tag),
                body: &r[end + 1..],
            };
        }
    }
    // Cheap gate: the level regex can only match lines starting with one of these bytes.
    let first = rest.as_bytes().first().copied().unwrap_or(b' ');
    if matches!(
        first,
        b'(' | b'[' | b'0'..=b'9' | b'I' | b'W' | b'E' | b'D' | b'C' | b'T' | b'N' | b'F'
    ) {
        if let Some((level, end)) = level_prefix(rest) {
            // A bare level word (`ERROR: salloc failed …`, `ERROR request 0 failed`) is part of
            // the message; only a structured log prefix (date, time, [file:line]) is removed.
            let bare = rest[..end]
                .trim_end()
                .trim_end_matches(':')
                .trim_matches(['[', ']']);
            let body = if bare == level { rest } else { &rest[end..] };
            return Split {
                ts,
                level: Some(level),
                body,
            };
        }
        if let Some(end) = bare_prefix(rest) {
            return Split {
                ts,
                level: None,
                body: &rest[end..],
            };
        }
    }
    Split {
        ts,
        level: None,
        body: rest,
    }
}

fn is_noise_level(level: &str) -> bool {
    matches!(
        level,
        "INFO"
            | "WARNING"
            | "WARN"
            | "DEBUG"
            | "TRACE"
            | "NOTICE"
            | "warning"
            | "notice"
            | "debug"
            | "group"
            | "endgroup"
            | "command"
            | "section"
    )
}

/// SGLang's per-batch statistics (`[2026-09-21 01:15:09 TP0] Decode batch. #running-req: 16,
/// …`, `Prefill batch. …`): INFO-level lines printed without a level word, one every few
/// decode steps, the bulk of an SGLang server log.
fn is_batch_stats(body: &str) -> bool {
    body.starts_with("Decode batch") || body.starts_with("Prefill batch")
}

fn is_progress_bar(body: &str) -> bool {
    body.contains("it/s]") || body.contains("s/it]") || (body.contains("%|") && body.contains('|'))
}

fn is_frame(body: &str) -> bool {
    let t = body.trim_start();
    (t.starts_with("File \"") && t.contains("\", line "))
        || t.starts_with("frame #")
        || (t.starts_with('#')
            && t.as_bytes().get(1).is_some_and(|c| c.is_ascii_digit())
            && t.contains(" in "))
}

fn is_echoed_source(body: &str) -> bool {
    if !body.starts_with([' ', '\t']) {
        return false;
    }
    let t = body.trim_start();
    if t.is_empty() || t.chars().all(|c| matches!(c, '^' | '~' | ' ')) {
        return true;
    }
    const KW: [&str; 17] = [
        "raise ", "raise(", "assert ", "return ", "await ", "yield ", "def ", "class ", "if ",
        "elif ", "else:", "for ", "while ", "with ", "try:", "except", "finally:",
    ];
    KW.iter().any(|k| t.starts_with(k))
}

fn looks_like_error(level: Option<&str>, body: &str) -> bool {
    if matches!(level, Some("ERROR" | "CRITICAL" | "FATAL" | "error")) {
        return !body.trim().is_empty();
    }
    // Two regexes: the anchored forms stop within the first word; the phrases, searched
    // anywhere, get a literal prefilter of their own (ASCII word boundaries keep the search in
    // the DFA on non-ASCII text).
    static A: OnceLock<Regex> = OnceLock::new();
    static P: OnceLock<Regex> = OnceLock::new();
    let anchored = A.get_or_init(|| {
        Regex::new(concat!(
            r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Fault)(?-u:\b):?",
            r"|^(?i:error|fatal)(?:\[\w+\])?[:\s]",
        ))
        .expect("error-like regex")
    });
    let phrases = P.get_or_init(|| {
        Regex::new(
            r"(?i)(?-u:\b)(?:segmentation fault|core dumped|out of memory|panicked at)(?-u:\b)",
        )
        .expect("error-like phrases")
    });
    anchored.is_match(body) || phrases.is_match(body)
}

// ------------------------------------------------------------------------------- stage markers

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Marker {
    JobStart,
    /// `Run bash PATH`: a script the job runs (a recipe unless it is a launcher).
    RunScript,
    ModelLoaded,
    ServerReady,
    Launcher,
    ImageImport,
    Recipe,
    Engine,
    Client,
}

const MARKERS: &[(&str, Marker)] = &[
    ("Runner name: ", Marker::JobStart),
    ("Current runner version:", Marker::JobStart),
    ("salloc: Granted job allocation", Marker::JobStart),
    ("Job: ", Marker::JobStart),
    ("Model loading took", Marker::ModelLoaded),
    ("Loading weights took", Marker::ModelLoaded),
    ("Loading model weights took", Marker::ModelLoaded),
    ("Load weight end", Marker::ModelLoaded),
    ("Application startup complete", Marker::ServerReady),
    (
        "The server is fired up and ready to roll",
        Marker::ServerReady,
    ),
    ("runners/launch_", Marker::Launcher),
    ("enroot import", Marker::ImageImport),
    ("Creating squashfs", Marker::ImageImport),
    ("docker pull", Marker::ImageImport),
    ("Pulling from ", Marker::ImageImport),
    ("Fetching image manifest", Marker::ImageImport),
    ("--container-image", Marker::ImageImport),
    ("docker run ", Marker::ImageImport),
    ("podman run ", Marker::ImageImport),
    ("enroot start", Marker::ImageImport),
    ("apptainer exec", Marker::ImageImport),
    ("singularity exec", Marker::ImageImport),
    ("Run bash ", Marker::RunScript),
    ("benchmarks/single_node/", Marker::Recipe),
    ("benchmarks/multi_node/", Marker::Recipe),
    ("benchmark_lib.sh", Marker::Recipe),
    ("sglang.launch_server", Marker::Engine),
    ("vllm serve", Marker::Engine),
    ("vllm.entrypoints", Marker::Engine),
    ("trtllm-serve", Marker::Engine),
    ("Starting vLLM API server", Marker::Engine),
    ("benchmark_serving", Marker::Client),
    ("aiperf", Marker::Client),
    ("[harness]", Marker::Client),
];

/// All markers as one alternation of literals (searched with a literal prefilter).
fn marker_re() -> &'static Regex {
    static S: OnceLock<Regex> = OnceLock::new();
    S.get_or_init(|| {
        let alt: Vec<String> = MARKERS.iter().map(|(m, _)| regex::escape(m)).collect();
        Regex::new(&alt.join("|")).expect("marker regex")
    })
}

/// The markers a line holds, as a bit set over [`MARKERS`] (bit `i` = `MARKERS[i]`), so they
/// are applied in table order as before; no allocation per line. No marker text overlaps
/// another, so the non-overlapping search finds every one (a unit test checks this against a
/// set search).
fn markers_in(line: &str) -> u64 {
    const _: () = assert!(MARKERS.len() <= 64);
    let mut bits = 0u64;
    for m in marker_re().find_iter(line) {
        if let Some(i) = MARKERS.iter().position(|(t, _)| *t == m.as_str()) {
            bits |= 1 << i;
        }
    }
    bits
}

// ------------------------------------------------------------------------------- time

/// Seconds since the epoch of a CI timestamp (`YYYY-MM-DDTHH:MM:SS(.f)Z`); offsets ignored.
fn ts_seconds(ts: &str) -> Option<f64> {
    let n = |a: usize, b: usize| ts.get(a..b)?.parse::<i64>().ok();
    let days = days_from_civil(n(0, 4)?, n(5, 7)?, n(8, 10)?);
    let secs = n(11, 13)? * 3600 + n(14, 16)? * 60 + n(17, 19)?;
    let mut frac = 0.0;
    if ts.as_bytes().get(19) == Some(&b'.') {
        let digits: String = ts[20..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if !digits.is_empty() {
            frac = format!("0.{digits}").parse().unwrap_or(0.0);
        }
    }
    Some((days * 86400 + secs) as f64 + frac)
}

// ------------------------------------------------------------------------------- shell context

/// Id of the synthetic row for a `set -e` stop (signatures.toml).
pub const SET_E_SIGNATURE: &str = "shell_set_e_command_failed";

/// Recipes remembered from `Run bash PATH` lines (the first few are enough to place files).
const MAX_RECIPE_PATHS: usize = 8;

/// Output lines kept after the last `set -x` trace (the failing command's own message).
const MAX_TRACE_OUTPUT: usize = 3;

/// The path of a `Run bash PATH` line (`None` when there is no path).
fn run_script_path(body: &str) -> Option<&str> {
    let at = body.find("Run bash ")?;
    let p = body[at + "Run bash ".len()..].split_whitespace().next()?;
    let p = p.trim_matches(['\'', '"']);
    (!p.is_empty() && !p.starts_with('-')).then_some(p)
}

/// A shell row's fields, made uniform (`shell` → `script`, `shell_line` → `script_line`), with
/// the attribution's template fields added; returns the owning layer.
fn shell_fields(
    category: &str,
    fields: &mut BTreeMap<String, String>,
    ctx: &ShellContext<'_>,
) -> Layer {
    if let Some(sh) = fields.remove("shell") {
        fields.entry("script".into()).or_insert(sh);
    }
    if let Some(l) = fields.remove("shell_line") {
        fields.entry("script_line".into()).or_insert(l);
    }
    let a = attribute(category, fields, ctx);
    for (k, v) in template_fields(fields, &a) {
        fields.insert(k, v);
    }
    a.layer
}

/// The last `set -x` trace line (`+ cmd`) and the first lines of output after it; the buffers
/// are reused, so tracing costs no allocation per line once they have grown.
#[derive(Default)]
struct Trace {
    /// 0: no trace seen yet.
    line_no: u64,
    body: String,
    raw: String,
    ts: String,
    has_ts: bool,
    epoch: u64,
    out: Vec<String>,
    out_len: usize,
}

impl Trace {
    fn record(&mut self, line_no: u64, body: &str, raw: &str, ts: Option<&str>, epoch: u64) {
        self.line_no = line_no;
        self.body.clear();
        self.body.push_str(body.trim());
        self.raw.clear();
        self.raw.push_str(raw);
        self.ts.clear();
        self.has_ts = ts.is_some();
        self.ts.push_str(ts.unwrap_or(""));
        self.epoch = epoch;
        self.out_len = 0;
    }

    fn output(&mut self, text: &str) {
        if self.out_len >= MAX_TRACE_OUTPUT {
            return;
        }
        if self.out.len() <= self.out_len {
            self.out.push(String::new());
        }
        let slot = &mut self.out[self.out_len];
        slot.clear();
        slot.push_str(text);
        self.out_len += 1;
    }

    /// The traced command (`+ cp a b` → `cp a b`).
    fn command(&self) -> &str {
        self.body.trim_start_matches('+').trim_start()
    }

    /// The first error for a `set -e` stop, when the wrapper's `fields` carry a non-zero exit
    /// status (`exit_status` of D9, `code` of `process_exit_code`), a trace exists, nothing
    /// in the context changed since it, and the traced command is not one whose failure
    /// means something else ([`trace_is_not_a_set_e_candidate`]). `sig` is the synthetic
    /// [`SET_E_SIGNATURE`] row; `seen` the context of the log at the wrapper line.
    fn set_e_error(
        &self,
        sig: &Signature,
        wrapper_fields: &BTreeMap<String, String>,
        seen: &SeenSoFar<'_>,
    ) -> Option<FirstError> {
        let status = wrapper_fields
            .get("exit_status")
            .or_else(|| wrapper_fields.get("code"))?;
        if status.parse::<u32>().ok()? == 0 || self.line_no == 0 || self.epoch != seen.stages.epoch
        {
            return None;
        }
        let command = self.command();
        if command.is_empty() || trace_is_not_a_set_e_candidate(command) {
            return None;
        }
        let mut fields = BTreeMap::new();
        fields.insert("command".to_string(), command.to_string());
        fields.insert("exit_status".to_string(), status.clone());
        let layer = shell_fields(&sig.category, &mut fields, &seen.stages.shell());
        let ts = self.has_ts.then(|| self.ts.clone());
        Some(FirstError {
            file: seen.file.to_string(),
            line_no: self.line_no,
            line: self.body.clone(),
            summary: normalise_ephemeral(&self.body),
            raw: self.raw.clone(),
            continuation: self.out[..self.out_len].to_vec(),
            seconds_after_log_start: seconds_since(seen.job.first_ts_secs, ts.as_deref()),
            at: seen.time_at(self.line_no),
            node: None,
            role: None,
            timestamp: ts,
            signature_id: Some(sig.id.clone()),
            category: sig.category.clone(),
            tier: Tier::Specific,
            fields,
            stage: seen.stages.stage,
            attributed_layer: Some(layer),
            after_image_import: seen.stages.saw_import,
            after_engine_start: seen.stages.saw_engine,
            repeats: 0,
            marks: seen.stages.marks.clone(),
        })
    }
}

// ------------------------------------------------------------------------------- the scanner

/// Seconds from `first` (the log's first timestamp, seconds since the epoch) to the CI
/// timestamp `ts`, rounded to the millisecond; `None` when either is unknown.
fn seconds_since(first: Option<f64>, ts: Option<&str>) -> Option<f64> {
    match (first, ts.and_then(ts_seconds)) {
        (Some(a), Some(b)) => Some(((b - a) * 1000.0).round() / 1000.0),
        _ => None,
    }
}

/// One line as the scanner sees it (borrowed from the line buffer: no allocation).
struct Line<'l> {
    /// 1-based line number.
    no: u64,
    /// The line as written, without the newline (invalid UTF-8 replaced).
    raw: &'l str,
    /// Its CI timestamp, log level and message.
    split: Split<'l>,
}

/// What the log says about its job: runner, job title, first CI timestamp.
#[derive(Default)]
struct JobInfo {
    runner: Option<String>,
    /// Line number of the `Runner name:` line.
    runner_line: Option<u64>,
    job: Option<String>,
    first_ts: Option<String>,
    /// `first_ts` in seconds since the epoch ([`ts_seconds`]).
    first_ts_secs: Option<f64>,
}

impl JobInfo {
    /// Keeps the log's first CI timestamp (every line counts, continuation lines included).
    fn note_timestamp(&mut self, ts: Option<&str>) {
        if self.first_ts.is_none() {
            if let Some(ts) = ts {
                self.first_ts = Some(ts.to_string());
                self.first_ts_secs = ts_seconds(ts);
            }
        }
    }

    /// Keeps the first `Runner name: …` and `Job: …` messages.
    fn note_names(&mut self, line_no: u64, body: &str) {
        if self.runner.is_none() {
            if let Some(r) = body.strip_prefix("Runner name: ") {
                self.runner = Some(r.trim().trim_matches(['\'', '"']).to_string());
                self.runner_line = Some(line_no);
            }
        }
        if self.job.is_none() {
            if let Some(j) = body.strip_prefix("Job: ") {
                self.job = Some(j.trim().to_string());
            }
        }
    }
}

/// The stage context a first error records, built from the stage markers ([`MARKERS`]) of
/// every line, noise included.
#[derive(Default)]
struct StageContext {
    /// The stage set by the last launcher/recipe/engine/client marker.
    stage: Option<Layer>,
    /// An image import / container start marker was seen.
    saw_import: bool,
    /// An engine launch marker was seen.
    saw_engine: bool,
    /// The marker lines, quoted for the evidence.
    marks: StageMarks,
    /// Recipes the log started (`Run bash PATH`, launchers excluded), at most
    /// [`MAX_RECIPE_PATHS`].
    recipe_paths: Vec<String>,
    /// Bumped whenever the context a first error records (stage, import, engine, marks)
    /// changes: a trace is a `set -e` candidate only if nothing changed since it.
    epoch: u64,
}

impl StageContext {
    /// Applies the markers of one line, in [`MARKERS`] order. `after_ts` is the line after its
    /// CI timestamp (markers never lie in it), `body` the message quoted in a [`LogMark`].
    fn apply_markers(&mut self, line_no: u64, after_ts: &str, body: &str) {
        // Most lines hold no marker: one prefiltered literal search decides.
        let found = markers_in(after_ts);
        if found == 0 {
            return;
        }
        let before = self.fingerprint();
        for i in (0..MARKERS.len()).filter(|i| found & (1 << i) != 0) {
            self.apply_marker(MARKERS[i], line_no, body);
        }
        if self.fingerprint() != before {
            self.epoch += 1;
        }
    }

    /// What a change of context is judged by (the [`Self::epoch`] rule).
    fn fingerprint(&self) -> (Option<Layer>, bool, bool, bool, bool, bool) {
        (
            self.stage,
            self.saw_import,
            self.saw_engine,
            self.marks.job_start.is_some(),
            self.marks.model_loaded.is_some(),
            self.marks.server_ready.is_some(),
        )
    }

    /// Applies one marker `(text, kind)` found on line `line_no`; a marker that changes the
    /// stage becomes [`StageMarks::stage`].
    fn apply_marker(&mut self, (text, kind): (&str, Marker), line_no: u64, body: &str) {
        let before = self.stage;
        let mark = || Some(LogMark::new(line_no, body));
        let marks = &mut self.marks;
        match kind {
            Marker::JobStart => {
                // `Job: ` only counts at the start of the message.
                let at_start = text != "Job: " || body.starts_with("Job: ");
                if marks.job_start.is_none() && at_start {
                    marks.job_start = mark();
                }
            }
            Marker::ModelLoaded => {
                if marks.model_loaded.is_none() {
                    marks.model_loaded = mark();
                }
            }
            Marker::ServerReady => {
                if marks.server_ready.is_none() {
                    marks.server_ready = mark();
                }
            }
            Marker::Launcher => self.stage = Some(Layer::Launcher),
            Marker::ImageImport => {
                self.saw_import = true;
                if marks.image_import.is_none() {
                    marks.image_import = mark();
                }
                if self.stage.is_none() {
                    self.stage = Some(Layer::Launcher);
                }
            }
            Marker::Recipe => self.stage = Some(Layer::Recipe),
            Marker::Engine => {
                self.saw_engine = true;
                if marks.engine_launch.is_none() {
                    marks.engine_launch = mark();
                }
                self.stage = Some(Layer::Engine);
            }
            Marker::Client => self.stage = Some(Layer::Client),
            Marker::RunScript => self.note_run_script(body),
        }
        if self.stage != before {
            self.marks.stage = mark();
        }
    }

    /// Remembers the script of a `Run bash PATH` line when it is a recipe (not under
    /// `runners/`, not `launch_*`), up to [`MAX_RECIPE_PATHS`] distinct paths.
    fn note_run_script(&mut self, body: &str) {
        let Some(p) = run_script_path(body) else {
            return;
        };
        let launcher = p.contains("runners/")
            || p.rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("launch_"));
        if !launcher
            && self.recipe_paths.len() < MAX_RECIPE_PATHS
            && !self.recipe_paths.iter().any(|r| r == p)
        {
            self.recipe_paths.push(p.to_string());
        }
    }

    /// The inputs of the shell attribution rules ([`attribute`]).
    fn shell(&self) -> ShellContext<'_> {
        ShellContext {
            in_container: self.saw_import,
            stage: self.stage,
            recipe_paths: &self.recipe_paths,
        }
    }
}

/// What the scan knows about the log up to the current line: everything a [`FirstError`]
/// records besides the line itself.
struct SeenSoFar<'a> {
    /// The log file (as given; only labels the results).
    file: &'a str,
    job: JobInfo,
    stages: StageContext,
    /// The year of the last full timestamp (for vLLM's and glog's times without one).
    year: Option<i64>,
    /// The last time written so far: seconds since the epoch and its line.
    last_time: Option<(f64, u64)>,
    /// The log's last worker-wait line ([`crate::multinode::WorkerWait::parse`]).
    worker_wait: Option<crate::multinode::WorkerWait>,
    /// The node of the log's first `Node failure on X` line (srun/salloc/sbatch).
    lost_node: Option<String>,
}

impl SeenSoFar<'_> {
    /// Reads the time of line `no` ([`crate::clock::line_time`]), keeping the year and the
    /// last time seen.
    fn note_time(&mut self, no: u64, raw: &str) {
        let Some(t) = crate::clock::line_time(raw) else {
            return;
        };
        if let crate::clock::LineTime::Full(s) = t {
            self.year = Some(crate::clock::year_of(s));
        }
        if let Some(secs) = t.resolve(self.year) {
            self.last_time = Some((secs, no));
        }
    }

    /// The time of an error at line `no`: its own, else the last one before it.
    fn time_at(&self, no: u64) -> Option<ErrorTime> {
        self.last_time.map(|(secs, at)| ErrorTime {
            secs,
            line_no: at,
            exact: at == no,
        })
    }

    /// A first-error candidate for `line`: `sig` is the matched signature (`None`:
    /// unclassified), `attributed_layer` the shell rules' owner for a shell row.
    fn first_error(
        &self,
        line: &Line<'_>,
        tier: Tier,
        sig: Option<&Signature>,
        fields: BTreeMap<String, String>,
        attributed_layer: Option<Layer>,
    ) -> FirstError {
        let body = line.split.body.trim();
        FirstError {
            file: self.file.to_string(),
            line_no: line.no,
            line: body.to_string(),
            summary: normalise_ephemeral(body),
            raw: line.raw.to_string(),
            continuation: Vec::new(),
            timestamp: line.split.ts.map(str::to_string),
            signature_id: sig.map(|s| s.id.clone()),
            category: sig.map_or_else(|| "unclassified".into(), |s| s.category.clone()),
            tier,
            fields,
            stage: self.stages.stage,
            attributed_layer,
            after_image_import: self.stages.saw_import,
            after_engine_start: self.stages.saw_engine,
            seconds_after_log_start: seconds_since(self.job.first_ts_secs, line.split.ts),
            repeats: 0,
            marks: self.stages.marks.clone(),
            at: self.time_at(line.no),
            node: None,
            role: None,
        }
    }
}

/// The Python traceback being read: its frames and echoed source are the context of the
/// exception line that ends it (signatures with `traceback_context`).
#[derive(Default)]
struct Traceback {
    /// Inside a traceback (after `Traceback (most recent call last)`).
    open: bool,
    /// Lines of the open traceback, quoted like a [`LogMark`], at most [`MAX_TRACEBACK_LINES`].
    lines: Vec<String>,
    /// The lines of the traceback that ended at the current line (empty on other lines).
    ended: Vec<String>,
}

impl Traceback {
    /// Reads one line that is not noise; `true` when it belongs to a traceback (its header, an
    /// indented or empty line inside it) and so is not an error line itself.
    fn read(&mut self, line_no: u64, body: &str, trimmed: &str) -> bool {
        self.ended.clear();
        if trimmed.starts_with("Traceback (most recent call last)") {
            self.open = true;
            self.lines.clear();
            return true;
        }
        if self.open {
            if body.is_empty() || body.starts_with([' ', '\t']) {
                if self.lines.len() < MAX_TRACEBACK_LINES && !trimmed.is_empty() {
                    self.lines.push(LogMark::new(line_no, trimmed).line);
                }
                return true;
            }
            self.open = false;
            self.ended = std::mem::take(&mut self.lines);
        }
        false
    }
}

/// The first-error candidates, one per [`Tier`], and the secondary errors.
#[derive(Default)]
struct Candidates {
    specific: Option<FirstError>,
    unclassified: Option<FirstError>,
    generic: Option<FirstError>,
    /// Which candidate is collecting continuation lines, and with which signature (index).
    cont: Option<(Tier, usize)>,
    /// Other matched errors, one per signature, first occurrence order.
    secondary: Vec<SecondaryError>,
    /// Signature index → index in `secondary`.
    secondary_idx: HashMap<usize, usize>,
}

/// Continuation lines kept per first error.
const MAX_CONTINUATION: usize = 64;

impl Candidates {
    /// The candidate slot of `tier` (specific and generic rows; unclassified has its own rule).
    fn slot(&mut self, tier: Tier) -> &mut Option<FirstError> {
        match tier {
            Tier::Specific => &mut self.specific,
            Tier::Unclassified => &mut self.unclassified,
            Tier::Generic => &mut self.generic,
        }
    }

    /// Adds `body` to the candidate collecting continuation lines when the signature's
    /// continuation pattern matches it (its named groups join the fields, `, `-separated).
    /// `false` when no continuation is open or this line ends it.
    fn continue_with(&mut self, sigs: &[Signature], body: &str) -> bool {
        let Some((tier, si)) = self.cont else {
            return false;
        };
        let re = sigs[si]
            .continuation
            .as_ref()
            .expect("cont only set with a continuation");
        let Some(c) = re.captures(body) else {
            self.cont = None;
            return false;
        };
        if let Some(fe) = self.slot(tier).as_mut() {
            if fe.continuation.len() < MAX_CONTINUATION {
                fe.continuation.push(body.trim().to_string());
                for name in re.capture_names().flatten() {
                    if let Some(v) = c.name(name) {
                        fe.fields
                            .entry(name.to_string())
                            .and_modify(|old| {
                                old.push_str(", ");
                                old.push_str(v.as_str());
                            })
                            .or_insert_with(|| v.as_str().to_string());
                    }
                }
            }
        }
        true
    }

    /// Counts a line of signature `si` that is not the first error: one entry per signature,
    /// at its first occurrence.
    fn add_secondary(&mut self, si: usize, s: &Signature, file: &str, line: &Line<'_>) {
        match self.secondary_idx.get(&si) {
            Some(&i) => self.secondary[i].count += 1,
            None => {
                self.secondary_idx.insert(si, self.secondary.len());
                self.secondary.push(SecondaryError {
                    file: file.to_string(),
                    line_no: line.no,
                    line: line.split.body.trim().to_string(),
                    signature_id: s.id.clone(),
                    category: s.category.clone(),
                    generic: s.generic,
                    count: 1,
                });
            }
        }
    }

    /// Chooses by tier (specific > unclassified > generic); the generic candidate becomes
    /// secondary when something better exists, the chosen signature is not also secondary,
    /// and the secondary errors come in line order.
    fn choose(self) -> (Option<FirstError>, Vec<SecondaryError>) {
        let mut secondary = self.secondary;
        let generic = self.generic;
        let chosen = self.specific.or(self.unclassified).or(generic.clone());
        if let (Some(ch), Some(g)) = (&chosen, &generic) {
            if ch.tier != Tier::Generic {
                let sig_id = g.signature_id.clone().unwrap_or_default();
                secondary.retain(|s| s.signature_id != sig_id);
                secondary.push(SecondaryError {
                    file: g.file.clone(),
                    line_no: g.line_no,
                    line: g.line.clone(),
                    signature_id: sig_id,
                    category: g.category.clone(),
                    generic: true,
                    count: g.repeats + 1,
                });
            }
        }
        if let Some(ch) = &chosen {
            secondary.retain(|s| Some(&s.signature_id) != ch.signature_id.as_ref());
        }
        secondary.sort_by_key(|s| s.line_no);
        (chosen, secondary)
    }
}

/// The first-error rule as a state machine over lines: [`Scanner::line`] reads one line,
/// [`Scanner::finish`] gives the result.
struct Scanner<'a> {
    table: &'a SignatureTable,
    /// Index of the synthetic [`SET_E_SIGNATURE`] row, if the table has it.
    set_e_sig: Option<usize>,
    /// Lines read so far.
    line_no: u64,
    seen: SeenSoFar<'a>,
    traceback: Traceback,
    /// The last `set -x` trace and the output after it.
    trace: Trace,
    /// A generic wrapper was seen (the first one may be a `set -e` stop; shell errors after it
    /// are teardown).
    seen_wrapper: bool,
    found: Candidates,
}

impl<'a> Scanner<'a> {
    fn new(file: &'a str, table: &'a SignatureTable) -> Self {
        Scanner {
            table,
            set_e_sig: table
                .signatures()
                .iter()
                .position(|s| s.synthetic && s.id == SET_E_SIGNATURE),
            line_no: 0,
            seen: SeenSoFar {
                file,
                job: JobInfo::default(),
                stages: StageContext::default(),
                year: None,
                last_time: None,
                worker_wait: None,
                lost_node: None,
            },
            traceback: Traceback::default(),
            trace: Trace::default(),
            seen_wrapper: false,
            found: Candidates::default(),
        }
    }

    /// Reads the next line (`raw`: without its newline).
    fn line(&mut self, raw: &str) {
        self.line_no += 1;
        let line = Line {
            no: self.line_no,
            raw,
            split: split_line(raw),
        };
        let sp = &line.split;
        self.seen.job.note_timestamp(sp.ts);
        self.seen.note_time(line.no, raw);
        if let Some(w) = crate::multinode::WorkerWait::parse(line.no, sp.body) {
            self.seen.worker_wait = Some(w);
        }
        if self.seen.lost_node.is_none() {
            if let Some(i) = sp.body.find("error: Node failure on ") {
                let rest = &sp.body[i + "error: Node failure on ".len()..];
                let node: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
                    .collect();
                if !node.is_empty() {
                    self.seen.lost_node = Some(node);
                }
            }
        }
        let trace = trace_command(sp.body);
        // Continuation lines of the candidate just found. A `set -x` trace between them (`+
        // echo '  - DURATION'`, `+ for var in …`) neither belongs to the error nor ends it.
        if trace.is_none() && self.found.continue_with(self.table.signatures(), sp.body) {
            return;
        }
        // Context: runner, job, stage markers (every line, noise included). Markers never lie
        // in the CI timestamp: search after it. A trace that starts no program (`++
        // AIPERF_DIR=/workspace/utils/aiperf`, `+ echo …`, `+ [[ … ]]`) is no evidence of a
        // stage: only a traced command that runs something (`+ srun --container-image=…`, `+
        // python3 -m sglang.launch_server …`, `+ source …/benchmark_lib.sh`) is.
        self.seen.job.note_names(line.no, sp.body);
        if !trace.is_some_and(trace_starts_nothing) {
            let after_ts = sp.ts.map_or(raw, |ts| &raw[ts.len()..]);
            self.seen.stages.apply_markers(line.no, after_ts, sp.body);
        }
        if self.is_not_an_error_line(&line) {
            return;
        }
        let trimmed = sp.body.trim_start();
        if self.trace.line_no > 0 && !sp.body.starts_with("servebench-job:") && !trimmed.is_empty()
        {
            self.trace.output(trimmed);
        }
        self.classify(&line);
    }

    /// `true` for a line that cannot be the error: noise (noise log levels, SGLang batch
    /// statistics, `NCCL INFO`, progress bars), `set -x` traces (remembered in
    /// [`Self::trace`]), traceback lines (kept in [`Self::traceback`]), exception chaining
    /// headers, frames and echoed source.
    fn is_not_an_error_line(&mut self, line: &Line<'_>) -> bool {
        let body = line.split.body;
        if line.split.level.is_some_and(is_noise_level) {
            return true;
        }
        if trace_command(body).is_some() {
            self.trace.record(
                line.no,
                body,
                line.raw,
                line.split.ts,
                self.seen.stages.epoch,
            );
            return true;
        }
        if is_batch_stats(body)
            || body.contains(" NCCL INFO ")
            || body.starts_with("NCCL INFO")
            || is_progress_bar(body)
        {
            return true;
        }
        let trimmed = body.trim_start();
        self.traceback.read(line.no, body, trimmed)
            || trimmed.starts_with("During handling of the above exception")
            || trimmed.starts_with("The above exception was the direct cause")
            || is_frame(body)
            || is_echoed_source(body)
    }

    /// Matches a line against the signatures (with the traceback that just ended as context);
    /// a line matching none is an unclassified candidate when it looks like an error.
    fn classify(&mut self, line: &Line<'_>) {
        let body = line.split.body;
        match self
            .table
            .match_line_in_traceback(body, &self.traceback.ended)
        {
            Some(m) => self.matched(line, m),
            None => {
                if self.found.unclassified.is_none() && looks_like_error(line.split.level, body) {
                    self.found.unclassified = Some(self.seen.first_error(
                        line,
                        Tier::Unclassified,
                        None,
                        BTreeMap::new(),
                        None,
                    ));
                }
            }
        }
    }

    /// A line that matched signature `m.sig`: the first of its tier becomes that tier's
    /// candidate (a shell row gets its owning layer), a repeat of the candidate's signature is
    /// counted, anything else is secondary. A shell error after the log's first wrapper is
    /// teardown: secondary only.
    fn matched(&mut self, line: &Line<'_>, m: LineMatch) {
        let table = self.table;
        let s = &table.signatures()[m.sig];
        let tier = if s.generic {
            Tier::Generic
        } else {
            Tier::Specific
        };
        let is_shell = s.layer == LayerSpec::Shell;
        let mut fields = m.fields;
        let attributed =
            is_shell.then(|| shell_fields(&s.category, &mut fields, &self.seen.stages.shell()));
        if s.generic && !self.seen_wrapper {
            self.seen_wrapper = true;
            self.set_e_stop(&fields);
        }
        let demoted = is_shell && self.seen_wrapper;
        let slot = self.found.slot(tier);
        match slot {
            None if !demoted => {
                *slot = Some(
                    self.seen
                        .first_error(line, tier, Some(s), fields, attributed),
                );
                if s.continuation.is_some() {
                    self.found.cont = Some((tier, m.sig));
                }
            }
            Some(fe) if fe.signature_id.as_deref() == Some(s.id.as_str()) => fe.repeats += 1,
            _ => self.found.add_secondary(m.sig, s, self.seen.file, line),
        }
    }

    /// The log's first wrapper, with a non-zero exit status (`wrapper_fields`) and nothing
    /// above it: a `set -e` stop after the last traced command, when there is one
    /// ([`Trace::set_e_error`]).
    fn set_e_stop(&mut self, wrapper_fields: &BTreeMap<String, String>) {
        if self.found.specific.is_some() || self.found.unclassified.is_some() {
            return;
        }
        if let Some(si) = self.set_e_sig {
            self.found.specific =
                self.trace
                    .set_e_error(&self.table.signatures()[si], wrapper_fields, &self.seen);
        }
    }

    /// The triage of the log: `bytes` read, `binary_at` as in [`LogTriage::binary_at`] (a
    /// binary log has no first or secondary error: whatever matched before the NUL is noise).
    fn finish(self, bytes: u64, binary_at: Option<u64>) -> LogTriage {
        let (mut first_error, secondary) = match binary_at {
            Some(_) => (None, vec![]),
            None => self.found.choose(),
        };
        // a lost node's first line can be the one slurmstepd prints on a surviving node (`***
        // JOB 7 ON mn1 CANCELLED … DUE TO NODE FAILURE`, racing srun's line in a batch log):
        // the lost node is the one srun's `Node failure on X` line of the same log names
        if let (Some(fe), Some(n)) = (first_error.as_mut(), &self.seen.lost_node) {
            if fe.signature_id.as_deref() == Some("node_lost") && !fe.fields.contains_key("node") {
                fe.fields.insert("node".into(), n.clone());
            }
        }
        let last_time = self.seen.time_at(0).map(|t| ErrorTime { exact: true, ..t });
        let worker_wait = self.seen.worker_wait;
        let job = self.seen.job;
        LogTriage {
            file: self.seen.file.to_string(),
            lines: self.line_no,
            bytes,
            runner: job.runner,
            runner_line: job.runner_line,
            job: job.job,
            first_timestamp: job.first_ts,
            first_error,
            secondary,
            binary_at,
            last_time,
            worker_wait,
        }
    }
}

/// Offset (from the log's start) of a NUL byte in `line` that lies within the first
/// [`BINARY_SNIFF_BYTES`] bytes; `offset` is where `line` starts.
fn binary_byte(offset: u64, line: &[u8]) -> Option<u64> {
    if offset >= BINARY_SNIFF_BYTES {
        return None;
    }
    let at = offset + line.iter().position(|&b| b == 0)? as u64;
    (at < BINARY_SNIFF_BYTES).then_some(at)
}

/// Scans one log. `file` is only used to label the results.
///
/// Memory: one line buffer plus one entry per distinct matched signature; the file is never
/// held whole. Invalid UTF-8 is replaced (lossy), `\r\n` is accepted.
pub fn scan_reader<R: BufRead>(
    mut reader: R,
    file: &str,
    table: &SignatureTable,
) -> std::io::Result<LogTriage> {
    let mut scanner = Scanner::new(file, table);
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut bytes: u64 = 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(at) = binary_byte(bytes, &buf) {
            return Ok(scanner.finish(bytes, Some(at)));
        }
        bytes += n as u64;
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        // Valid UTF-8 (nearly every line) is borrowed after the fast check; only an invalid
        // line pays for the replacing pass.
        match std::str::from_utf8(&buf) {
            Ok(line) => scanner.line(line),
            Err(_) => scanner.line(&String::from_utf8_lossy(&buf)),
        }
    }
    Ok(scanner.finish(bytes, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_early_is_binary_late_is_text() {
        let t = SignatureTable::builtin();
        let mut b = b"abc\n\x00\x01RuntimeError: CUDA error: out of memory\n".to_vec();
        let l = scan_reader(&b[..], "b", t).unwrap();
        assert_eq!(l.binary_at, Some(4));
        assert!(l.first_error.is_none());
        assert_eq!(
            l.unreadable_reason().as_deref(),
            Some("b: not a text log (binary data at byte 4)")
        );
        // A stray NUL after the first 8000 bytes: still a text log, still triaged.
        b = vec![b'x'; 8100];
        b.push(b'\n');
        b.extend(b"\x00\nRuntimeError: CUDA error: out of memory\n");
        let l = scan_reader(&b[..], "t", t).unwrap();
        assert_eq!(l.binary_at, None);
        assert!(l.first_error.is_some());
        let l = scan_reader(&b""[..], "e", t).unwrap();
        assert_eq!(l.unreadable_reason().as_deref(), Some("e: empty log"));
    }

    #[test]
    fn prefixes_are_split() {
        let s = split_line("2026-09-21T01:15:04.933Z Error: The following required environment variables are not set:");
        assert_eq!(s.ts, Some("2026-09-21T01:15:04.933Z"));
        assert_eq!(
            s.body,
            "Error: The following required environment variables are not set:"
        );
        let s = split_line("ERROR 04-30 10:20:36 [core.py:396]   File \"x.py\", line 3, in f");
        assert_eq!(s.level, Some("ERROR"));
        assert_eq!(s.body, "  File \"x.py\", line 3, in f");
        let s =
            split_line("INFO 04-30 10:20:35 [monitor.py:33] torch.compile takes 13.93 s in total");
        assert_eq!(s.level, Some("INFO"));
        let s = split_line("##[error]Process completed with exit code 1.");
        assert_eq!(
            (s.level, s.body),
            (Some("error"), "Process completed with exit code 1.")
        );
        let s = split_line("WARNING [ready_checker.py] Endpoint is not ready.");
        assert_eq!(s.level, Some("WARNING"));
        let s = split_line("[2026-09-21 01:15:07 TP0] Scheduler hit an exception");
        assert_eq!((s.level, s.body), (None, "Scheduler hit an exception"));
        let s = split_line("ERROR request 0 failed: boom");
        assert_eq!(
            (s.level, s.body),
            (Some("ERROR"), "ERROR request 0 failed: boom")
        );
        let s = split_line("ERROR: salloc failed");
        assert_eq!((s.level, s.body), (Some("ERROR"), "ERROR: salloc failed"));
        let s = split_line("Error: x");
        assert_eq!((s.level, s.body), (None, "Error: x"));
    }

    #[test]
    fn marker_bits_are_what_a_set_search_finds() {
        let set = regex::RegexSet::new(MARKERS.iter().map(|(m, _)| regex::escape(m))).unwrap();
        let mut lines: Vec<String> = vec![
            "+ srun --container-image=/squash/x.sqsh bash benchmarks/single_node/qwen.sh".into(),
            "Run bash ./runners/launch_b200-dgxc-slurm.sh".into(),
            "aiperf profile --url http://h:8888 (after vllm serve /m)".into(),
            "servebench-job: Run bash /work/ix/benchmarks/single_node/agentic/q.sh".into(),
            "no marker here".into(),
        ];
        // Every pair of markers, in both orders, with and without a space between them.
        for (a, _) in MARKERS {
            for (b, _) in MARKERS {
                lines.push(format!("{a}{b}"));
                lines.push(format!("x {a} y {b} z"));
            }
        }
        for l in &lines {
            let want: u64 = set.matches(l).iter().map(|i| 1u64 << i).sum();
            assert_eq!(markers_in(l), want, "{l}");
        }
    }

    #[test]
    fn timestamps() {
        let a = ts_seconds("2026-09-21T01:15:02.114Z").unwrap();
        let b = ts_seconds("2026-09-21T01:15:04.933Z").unwrap();
        assert!((b - a - 2.819).abs() < 1e-6);
        let c = ts_seconds("2026-09-22T00:00:00Z").unwrap();
        assert!((c - ts_seconds("2026-09-21T23:59:59Z").unwrap() - 1.0).abs() < 1e-9);
    }
}
