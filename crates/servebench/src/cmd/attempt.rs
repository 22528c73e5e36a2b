//! `servebench attempt`: the attempt comment of an image bump (AUTOMATION.md §5.6: one per
//! Initial attempt, Repair N/5, Infrastructure retry N and the Final full sweep), bilingual
//! Markdown by default, HTML or JSON on request.
//!
//! Inputs, all files or store runs:
//! * `--baseline`: the frozen baseline — a baseline table (`baseline.json` shape), InferenceX
//!   rows, or a store run id;
//! * `--candidate RUN|FILE`: the attempt's results (store run or agg rows), **or**
//!   `--logs LOG…`: the attempt's job logs when it produced no results. The logs are triaged
//!   (first error, layer, class, transient/deterministic, next step, outcome); each log's
//!   `Job: …` line names its point (`conc<N>`, `eval-only <task>`), so every job becomes a row;
//!   a job without a result row has no identity to match, so its delta is
//!   `N/A: no matched baseline`;
//! * `--change FILE`: provenance of the old and new image (`images.json` shape: `ref`,
//!   `index_digest`, `platform_digests`, `kind`, `labels`), plus `--recipe-edit FILE:OLD=NEW`
//!   for each recipe flag the bump renamed (the value is read from the recipe).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use servebench_compare::{CompareOptions, Metric as CMetric, PointStatus as CStatus, Stat};
use servebench_report::attempt::{
    build_attempt, AttemptEval, AttemptInput, AttemptPoint, BaselineEval, BaselinePoint,
    BaselineTable, ChangeInput, ImageInfo, RecipeEdit, TopologySpec,
};
use servebench_report::model::{
    AttemptKind, AttemptStatus, Bilingual, FailureSummary, PointStatus, RunRef, Span,
};
use servebench_report::{words, Format, Lang};
use servebench_triage::{Action, Layer, Persistence, TriageOptions, TriageReport};

/// Arguments of `servebench attempt`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The frozen baseline: a baseline table file (`baseline.json` shape), an InferenceX
    /// `agg_bmk.json`/`agg_eval_all.json` file, or a run id in the store.
    #[arg(long, value_name = "FILE|RUN")]
    pub baseline: String,
    /// The attempt's results: a run id in the store (`latest` = newest non-baseline run) or a
    /// file of agg rows / a sweep `summary.json`.
    #[arg(
        long,
        value_name = "RUN|FILE",
        conflicts_with = "logs",
        required_unless_present = "logs"
    )]
    pub candidate: Option<String>,
    /// The attempt's job logs (when it produced no results): triaged for the failure paragraph;
    /// each log's `Job: …` line gives its row.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub logs: Vec<PathBuf>,
    /// Which attempt: `initial`, `repair N` (or `repair-N`), `retry N`, `final`.
    #[arg(long, value_name = "KIND", default_value = "initial", value_parser = parse_kind)]
    pub kind: AttemptKind,
    /// Override the status (default: `failed` when a row or eval failed, else `passed`):
    /// passed, failed, running, queued, cancelled, not-dispatched, blocked.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<AttemptStatus>,
    /// Image provenance of the change (`images.json` shape: `{"old": {...}, "new": {...}}`).
    #[arg(long, value_name = "FILE")]
    pub change: Option<PathBuf>,
    /// The bump's provenance file (`provenance.json` written by `servebench bump`): the Change
    /// line's images, digests, labels and applied recipe migrations (the record whose new image
    /// is `--image`, else the last one). Alternative to `--change`.
    #[arg(long, value_name = "FILE", conflicts_with = "change")]
    pub provenance: Option<PathBuf>,
    /// A recipe flag the bump renamed: `RECIPE:OLD=NEW` (`RECIPE:OLD=` for a removal); the value
    /// is read from the recipe file, from OLD (before the bump) or NEW (already renamed).
    /// Repeatable.
    #[arg(long = "recipe-edit", value_name = "RECIPE:OLD=NEW")]
    pub recipe_edits: Vec<String>,
    /// Evidence link for the recipe edits (upstream PR).
    #[arg(long, value_name = "URL")]
    pub edit_evidence: Option<String>,
    /// Candidate image (default: the change's new image, else the `IMAGE=` line of the logs,
    /// else the candidate run's image).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// CI run id shown in the header.
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// CI run attempt.
    #[arg(long, value_name = "N")]
    pub run_attempt: Option<u32>,
    /// Link of the run.
    #[arg(long, value_name = "URL")]
    pub run_url: Option<String>,
    /// Head commit of the candidate branch (first 12 hex shown).
    #[arg(long, value_name = "SHA")]
    pub head: Option<String>,
    /// Time shown (default: the logs' first timestamp, or the candidate run's time), RFC 3339
    /// or `YYYY-MM-DD HH:MM`.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub time: Option<String>,
    /// Workload label (default: the candidate's, from its results; else the baseline's).
    #[arg(long, value_name = "LABEL")]
    pub workload: Option<String>,
    /// Topology label (default: the candidate's, from its results; else the baseline's).
    #[arg(long, value_name = "LABEL")]
    pub topology: Option<String>,
    /// Latency statistic.
    #[arg(long, value_name = "STAT", default_value = "mean")]
    pub stat: String,
    /// Repairs already used, 0 to 5 (AUTOMATION.md: at most 5 repairs per bump; default: the
    /// attempt kind's, 0 for the initial attempt).
    #[arg(long, value_name = "N", value_parser = parse_repairs_used)]
    pub repairs_used: Option<u32>,
    /// Title prefix / bot name (HTML title).
    #[arg(long, value_name = "NAME")]
    pub title_prefix: Option<String>,
    /// Output format: md, html, json.
    #[arg(long, value_name = "FORMAT", default_value = "md")]
    pub format: Format,
    /// Languages: en, en+zh.
    #[arg(long, value_name = "LANG", default_value = "en+zh")]
    pub lang: Lang,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Results store (for run ids).
    #[arg(
        long,
        value_name = "PATH",
        env = "SERVEBENCH_DB",
        default_value = "servebench.db"
    )]
    pub db: PathBuf,
}

/// Parses `initial`, `final`, `repair N`/`repair-N`/`repair:N`/`repairN`, `retry N`.
pub fn parse_kind(s: &str) -> Result<AttemptKind, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = |p: &str| -> Option<Result<u32, String>> {
        let rest = t.strip_prefix(p)?;
        let n = rest.trim_start_matches([' ', '-', ':', '=', '/']);
        let n = n.split('/').next().unwrap_or(n);
        Some(
            n.parse::<u32>()
                .map_err(|_| format!("attempt kind {s:?}: `{p}` needs a number, e.g. `{p} 1`")),
        )
    };
    match t.as_str() {
        "initial" | "initial attempt" => Ok(AttemptKind::Initial),
        "final" | "final full sweep" | "final-sweep" => Ok(AttemptKind::Final),
        _ => {
            if let Some(n) = split("repair") {
                let n = n?;
                if !(1..=servebench_triage::MAX_REPAIRS).contains(&n) {
                    return Err(format!(
                        "attempt kind {s:?}: repairs are numbered 1 to {}",
                        servebench_triage::MAX_REPAIRS
                    ));
                }
                Ok(AttemptKind::Repair {
                    n,
                    max: servebench_triage::MAX_REPAIRS,
                })
            } else if let Some(n) = split("retry") {
                let n = n?;
                if !(1..=servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT).contains(&n) {
                    return Err(format!(
                        "attempt kind {s:?}: infrastructure retries are numbered 1 to {}",
                        servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT
                    ));
                }
                Ok(AttemptKind::Retry { n })
            } else {
                Err(format!(
                    "unknown attempt kind {s:?}: expected initial, repair N, retry N or final"
                ))
            }
        }
    }
}

/// `--time`: RFC 3339 (`2026-09-21T01:15:02Z`, `2026-09-21T03:15:02+02:00`) or
/// `YYYY-MM-DD HH:MM` (UTC, an optional ` UTC` suffix). Returns the text as given.
pub fn parse_time(s: &str) -> Result<String, String> {
    let t = s.trim();
    let plain = t.strip_suffix(" UTC").unwrap_or(t);
    if chrono::DateTime::parse_from_rfc3339(t).is_ok()
        || chrono::NaiveDateTime::parse_from_str(plain, "%Y-%m-%d %H:%M").is_ok()
    {
        Ok(t.to_string())
    } else {
        Err(format!(
            "time {s:?}: expected RFC 3339 (2026-09-21T01:15:02Z) or YYYY-MM-DD HH:MM (UTC)"
        ))
    }
}

/// `--repairs-used`: 0 to [`servebench_triage::MAX_REPAIRS`] (5).
fn parse_repairs_used(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("repairs used {s:?}: expected a number 0 to 5"))?;
    if n > servebench_triage::MAX_REPAIRS {
        return Err(format!(
            "repairs used {n}: at most {} repairs per bump (AUTOMATION.md)",
            servebench_triage::MAX_REPAIRS
        ));
    }
    Ok(n)
}

fn parse_status(s: &str) -> Result<AttemptStatus, String> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "passed" => AttemptStatus::Passed,
        "failed" => AttemptStatus::Failed,
        "running" => AttemptStatus::Running,
        "queued" => AttemptStatus::Queued,
        "cancelled" | "canceled" => AttemptStatus::Cancelled,
        "not-dispatched" | "stopped" => AttemptStatus::NotDispatched,
        "blocked" | "blocked-before-dispatch" => AttemptStatus::BlockedBeforeDispatch,
        _ => {
            return Err(format!(
                "unknown status {s:?}: passed, failed, running, queued, cancelled, \
                 not-dispatched, blocked"
            ))
        }
    })
}

/// `2026-09-21T01:15:02.114Z` → `2026-09-21 01:15 UTC`; `2026-09-21 01:15` → with ` UTC`.
pub fn fmt_utc(s: &str) -> String {
    let s = s.trim();
    if s.ends_with("UTC") {
        return s.to_string();
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M UTC")
            .to_string();
    }
    let b = s.as_bytes();
    if s.len() >= 16 && (b[10] == b'T' || b[10] == b' ') {
        format!("{} {} UTC", &s[..10], &s[11..16])
    } else {
        s.to_string()
    }
}

/// Loads the baseline: a baseline table file as written, or anything `compare` can load
/// (InferenceX rows, store run) converted to a table at `stat`.
fn load_baseline(db: &Path, arg: &str, stat: Stat) -> Result<BaselineTable> {
    let path = Path::new(arg);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        if let Ok(t) = serde_json::from_str::<BaselineTable>(&text) {
            return Ok(t);
        }
    }
    let side = super::compare::load_side(db, arg).context("--baseline")?;
    let first = side
        .points
        .first()
        .ok_or_else(|| anyhow!("--baseline {arg}: has no benchmark points"))?;
    let mut points: Vec<BaselinePoint> = side
        .points
        .iter()
        .map(|p| BaselinePoint {
            conc: p.identity.conc,
            total_tput_per_gpu: p.value(CMetric::TotalTputPerGpu, stat),
            output_tput_per_gpu: p.value(CMetric::OutputTputPerGpu, stat),
            ttft_ms: p.value(CMetric::Ttft, stat),
            tpot_ms: p.value(CMetric::Tpot, stat),
            e2el_ms: p.value(CMetric::E2el, stat),
            interactivity: p.value(CMetric::Intvty, stat),
        })
        .collect();
    points.sort_by_key(|p| p.conc);
    Ok(BaselineTable {
        config_key: side.info.config_key.clone(),
        date: side
            .info
            .created_at
            .as_deref()
            .map(|d| d.chars().take(10).collect())
            .unwrap_or_else(|| "unknown date".into()),
        image: side
            .info
            .image
            .clone()
            .unwrap_or_else(|| "unknown image".into()),
        workload: first.identity.workload_label(),
        topology: TopologySpec::Label(first.identity.topology_label()),
        statistic: stat.to_string(),
        points,
        evals: side
            .evals
            .iter()
            .map(|e| BaselineEval {
                task: e.task.clone(),
                metric: e.metric.clone(),
                conc: e.identity.conc,
                score: e.score,
                samples: e.samples,
                stderr: e.score_se,
            })
            .collect(),
        sources: vec![],
        framework: Some(first.identity.framework.clone()),
    })
}

/// Reads `--change` and applies `--recipe-edit`s.
fn load_change(args: &Args) -> Result<Option<ChangeInput>> {
    let mut change = match &args.change {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("{}: cannot read", p.display()))?;
            let c: ChangeInput = serde_json::from_str(&text).map_err(|e| {
                anyhow!(
                    "{}: line {}, column {}: {e} (expected {{\"old\": {{\"ref\": …}}, \"new\": {{\"ref\": …}}}})",
                    p.display(),
                    e.line(),
                    e.column()
                )
            })?;
            Some(c)
        }
        None => None,
    };
    if let Some(p) = &args.provenance {
        let records = servebench_bump::load_change_records(p)?;
        let rec = records
            .iter()
            .rev()
            .find(|r| args.image.as_deref().is_none_or(|i| r.new_image == i))
            .ok_or_else(|| match &args.image {
                Some(i) => anyhow!("{}: no bump record for image {i}", p.display()),
                None => anyhow!("{}: no bump record", p.display()),
            })?;
        change = Some(change_from_record(rec));
    }
    for spec in &args.recipe_edits {
        let edit = recipe_edit(spec, args.edit_evidence.as_deref())?;
        match &mut change {
            Some(c) => c.recipe_edits.push(edit),
            None => bail!("--recipe-edit {spec}: needs --change FILE (the image provenance)"),
        }
    }
    Ok(change)
}

/// Library-version labels (plain names like `sgl-kernel`, `flashinfer`, `cuda`; dotted OCI
/// label keys are left out) and the build commit of an image's labels.
fn image_info(reference: &str, p: Option<&servebench_bump::Provenance>) -> ImageInfo {
    let Some(p) = p else {
        return ImageInfo {
            reference: reference.to_string(),
            ..Default::default()
        };
    };
    let build_commit = [
        "ai.sglang.build.commit",
        "org.opencontainers.image.revision",
    ]
    .iter()
    .find_map(|k| p.labels.get(*k).cloned());
    ImageInfo {
        reference: reference.to_string(),
        index_digest: p.index_digest.clone(),
        platform_digests: p
            .platform_digests
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        kind: None,
        labels: p
            .labels
            .iter()
            .filter(|(k, _)| !k.contains('.'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        build_commit,
        created: p.created.clone(),
    }
}

/// The Change line's input from a bump record.
pub fn change_from_record(r: &servebench_bump::ChangeRecord) -> ChangeInput {
    let mut edits = Vec::new();
    for rr in &r.recipes {
        let file = rr
            .path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| rr.path.display().to_string());
        for o in rr.outcomes.iter().filter(|o| o.status == "applied") {
            edits.push(RecipeEdit {
                file: file.clone(),
                summary: Some(o.summary.clone()),
                evidence: o.evidence.first().cloned(),
                ..Default::default()
            });
        }
    }
    ChangeInput {
        old: image_info(&r.old_image, r.old_provenance.as_ref()),
        new: image_info(&r.new_image, r.new_provenance.as_ref()),
        recipe_edits: edits,
        digests_resolved: r.new_provenance.is_some(),
    }
}

/// `RECIPE:OLD=NEW` → the edit, with the flag's value read from the recipe.
fn recipe_edit(spec: &str, evidence: Option<&str>) -> Result<RecipeEdit> {
    let (file, flags) = spec
        .rsplit_once(':')
        .ok_or_else(|| anyhow!("--recipe-edit {spec}: expected RECIPE:OLD=NEW"))?;
    let (old, new) = flags
        .split_once('=')
        .ok_or_else(|| anyhow!("--recipe-edit {spec}: expected RECIPE:OLD=NEW"))?;
    if !old.starts_with('-') {
        bail!("--recipe-edit {spec}: `{old}` is not a flag");
    }
    let text = std::fs::read_to_string(file).with_context(|| format!("{file}: cannot read"))?;
    // Before the bump the recipe has OLD; after it (the usual case once `servebench bump` has
    // run) it has NEW: the value is the same either way.
    let value = flag_value(&text, old)
        .or_else(|| (!new.is_empty()).then(|| flag_value(&text, new)).flatten())
        .ok_or_else(|| {
            if new.is_empty() {
                anyhow!("{file}: flag {old} not found (--recipe-edit {spec})")
            } else {
                anyhow!("{file}: flag {old} not found, nor {new} (--recipe-edit {spec})")
            }
        })?;
    let name = Path::new(file)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string());
    let new_flag = (!new.is_empty()).then(|| new.to_string());
    Ok(RecipeEdit {
        file: name,
        old_flag: old.to_string(),
        new_value: if new_flag.is_some() {
            value.clone()
        } else {
            None
        },
        new_flag,
        old_value: value,
        reason: None,
        evidence: evidence.map(str::to_string),
        summary: None,
    })
}

/// The value of `flag` in a shell script: `--flag VALUE` or `--flag=VALUE` (quotes stripped);
/// `Some(None)` for a flag without a value; `None` when the flag is absent.
fn flag_value(text: &str, flag: &str) -> Option<Option<String>> {
    let toks: Vec<&str> = text.split_whitespace().filter(|t| *t != "\\").collect();
    for (i, t) in toks.iter().enumerate() {
        if *t == flag {
            let v = toks
                .get(i + 1)
                .filter(|v| !v.starts_with("--") && !v.starts_with('>'))
                .map(|v| v.trim_matches(['"', '\'']).to_string());
            return Some(v);
        }
        if let Some(v) = t.strip_prefix(&format!("{flag}=")) {
            return Some(Some(v.trim_matches(['"', '\'']).to_string()));
        }
    }
    None
}

/// What a job line says about its point: `(conc, eval task)`.
fn job_point(job: &str) -> Option<(u32, Option<String>)> {
    let conc = job
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find_map(|w| w.strip_prefix("conc").and_then(|n| n.parse::<u32>().ok()))?;
    let eval = job
        .split_once("eval-only")
        .map(|(_, rest)| {
            rest.trim()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter(|t| !t.is_empty());
    Some((conc, eval))
}

/// First `+ IMAGE=…` (launcher trace) or `IMAGE=…` line of the logs.
fn image_from_logs(paths: &[PathBuf]) -> Option<String> {
    for p in paths {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        for line in text.lines().take(500) {
            if let Some((_, v)) = line.split_once("IMAGE=") {
                let v = v.trim().trim_matches(['"', '\'']);
                if !v.is_empty() {
                    return Some(v.to_string());
                }
            }
        }
    }
    None
}

/// The launcher script the logs ran (`Run bash ./runners/launch_….sh`).
fn launcher_from_logs(paths: &[PathBuf]) -> Option<String> {
    for p in paths {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        for line in text.lines().take(500) {
            if let Some(i) = line.find("runners/launch_") {
                let s = &line[i..];
                let end = s.find(char::is_whitespace).unwrap_or(s.len());
                return Some(s[..end].to_string());
            }
        }
    }
    None
}

fn file_name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string())
}

/// The failure paragraph from a triage report.
pub fn failure_summary(r: &TriageReport, repairs_used: u32) -> Option<FailureSummary> {
    let fe = r.first_error.as_ref()?;
    let mut lines = vec![fe.line.clone()];
    lines.extend(fe.continuation.iter().cloned());
    let before_import = !fe.after_image_import;
    let before_engine = !fe.after_engine_start;
    // Before the image was imported and the engine started, neither the recipe nor the image
    // nor the engine had run: the owning layer is elsewhere.
    let not_layers = if before_import
        && before_engine
        && matches!(
            r.layer,
            Layer::Launcher | Layer::Node | Layer::Network | Layer::Scheduler | Layer::Config
        ) {
        vec!["recipe".into(), "image".into(), "engine".into()]
    } else {
        vec![]
    };
    let deterministic = if r.deterministic {
        Some(true)
    } else if r.persistence.is_transient() {
        Some(false)
    } else {
        None
    };
    let class = match &r.section_class {
        Some(sc) => format!("{} ({sc})", r.class),
        None => r.class.clone(),
    };
    Some(FailureSummary {
        first_error: lines,
        log_file: Some(file_name(&fe.file)),
        line: Some(fe.line_no),
        layer: r.layer.as_str().to_string(),
        not_layers,
        seconds_after_start: fe.seconds_after_log_start,
        before_image_import: Some(before_import),
        before_engine_start: Some(before_engine),
        class: Some(class),
        deterministic,
        same_on: r.same_first_error_runners.clone(),
        repairable_in_recipe: (r.action == Action::Stop && r.layer != Layer::Recipe)
            .then_some(false),
        outcome: r.outcome.map(|o| o.as_str().to_string()),
        phase: Some(r.phase.as_str().to_string()),
        repairs_used: Some(repairs_used),
        max_repairs: Some(servebench_triage::MAX_REPAIRS),
    })
}

/// The `Next:` line from a triage report (English from the signature table; Chinese from its
/// structured parts).
pub fn next_step(r: &TriageReport, launcher: Option<&str>) -> Bilingual {
    let mut en = vec![Span::Text(r.next_step.clone())];
    let mut zh = vec![Span::Text(words::next_step_zh(
        &r.category,
        r.layer.as_str(),
        r.action.as_str(),
        r.first_error
            .as_ref()
            .and_then(|f| f.fields.get("var").or_else(|| f.fields.get("flag")))
            .map(String::as_str),
    ))];
    if let (Some(l), Layer::Launcher) = (launcher, r.layer) {
        en.push(Span::Text(" Launcher: ".into()));
        en.push(Span::Code(l.to_string()));
        en.push(Span::Text(".".into()));
        zh.push(Span::Text("启动器脚本：".into()));
        zh.push(Span::Code(l.to_string()));
        zh.push(Span::Text("。".into()));
    }
    Bilingual { en, zh }
}

fn repairs_of(kind: AttemptKind) -> u32 {
    match kind {
        AttemptKind::Repair { n, .. } => n,
        _ => 0,
    }
}

/// Builds the attempt input from the arguments (the files and the store).
pub fn input(args: &Args) -> Result<AttemptInput> {
    let stat = Stat::parse(&args.stat)
        .ok_or_else(|| anyhow!("--stat {}: expected mean, median, p90 or p99", args.stat))?;
    let baseline = load_baseline(&args.db, &args.baseline, stat)?;
    let change = load_change(args)?;
    let repairs_used = args.repairs_used.unwrap_or(repairs_of(args.kind));
    let mut points = Vec::new();
    let mut evals = Vec::new();
    let mut failure = None;
    let mut next = None;
    let mut time = args.time.as_deref().map(fmt_utc);
    let mut image = args
        .image
        .clone()
        .or_else(|| change.as_ref().map(|c| c.new.reference.clone()));
    let mut run = args.run_id.as_ref().map(|id| RunRef {
        id: id.clone(),
        attempt: args.run_attempt,
        url: args.run_url.clone(),
    });
    let mut comparison = None;
    if let Some(c) = &args.candidate {
        let side = super::compare::load_side(&args.db, c).context("--candidate")?;
        for p in &side.points {
            points.push(AttemptPoint {
                conc: p.identity.conc,
                status: match p.status {
                    CStatus::Ok => PointStatus::Passed,
                    CStatus::Partial => PointStatus::Partial,
                    CStatus::Failed => PointStatus::Failed,
                },
                has_result: true,
                request_errors: p.num_requests_failed,
                first_error: None,
                values: BaselinePoint {
                    conc: p.identity.conc,
                    total_tput_per_gpu: p.value(CMetric::TotalTputPerGpu, stat),
                    output_tput_per_gpu: p.value(CMetric::OutputTputPerGpu, stat),
                    ttft_ms: p.value(CMetric::Ttft, stat),
                    tpot_ms: p.value(CMetric::Tpot, stat),
                    e2el_ms: p.value(CMetric::E2el, stat),
                    interactivity: p.value(CMetric::Intvty, stat),
                },
            });
        }
        for e in &side.evals {
            evals.push(AttemptEval {
                task: e.task.clone(),
                metric: e.metric.clone(),
                conc: e.identity.conc,
                score: e.score,
                samples: e.samples,
                stderr: e.score_se,
                passed: e.passed.unwrap_or(e.score.is_some()),
            });
        }
        // Match, gate and decide exactly as `servebench compare` does (docs/compare.md).
        let base_side =
            super::compare::load_side(&args.db, &args.baseline).context("--baseline")?;
        let opts = CompareOptions {
            stat,
            ..CompareOptions::default()
        };
        comparison = Some(servebench_compare::compare(
            base_side.info,
            base_side.points,
            base_side.evals,
            side.info.clone(),
            side.points.clone(),
            side.evals.clone(),
            &opts,
        ));
        image = image.or(side.info.image.clone());
        time = time.or(side.info.created_at.as_deref().map(fmt_utc));
        if run.is_none() {
            run = side.info.run_id.map(|id| RunRef {
                id: id.to_string(),
                attempt: None,
                url: None,
            });
        }
    } else {
        let opts = TriageOptions {
            repairs_used,
            ..TriageOptions::default()
        };
        let report = servebench_triage::triage_logs_with(&args.logs, &opts)?;
        let main_error = report.first_error.as_ref().map(|f| f.line.clone());
        for log in &report.logs {
            let job = log.job.as_deref().ok_or_else(|| {
                anyhow!(
                    "{}: no `Job: …` line naming the point (conc<N>); cannot tell which row it is",
                    log.file
                )
            })?;
            let (conc, eval) = job_point(job).ok_or_else(|| {
                anyhow!(
                    "{}: job line {job:?} names no concurrency (conc<N>)",
                    log.file
                )
            })?;
            let failed = log.first_error.is_some();
            let own_error = log
                .first_error
                .as_ref()
                .map(|f| f.line.clone())
                .filter(|l| Some(l) != main_error.as_ref());
            match eval {
                Some(task) => {
                    let metric = baseline
                        .evals
                        .iter()
                        .find(|e| e.task == task && e.conc == conc)
                        .or_else(|| baseline.evals.iter().find(|e| e.task == task))
                        .map(|e| e.metric.clone())
                        .unwrap_or_else(|| "em_strict".into());
                    evals.push(AttemptEval {
                        task,
                        metric,
                        conc,
                        score: None,
                        samples: None,
                        stderr: None,
                        passed: false,
                    });
                }
                None => points.push(AttemptPoint {
                    conc,
                    status: if failed {
                        PointStatus::Failed
                    } else {
                        PointStatus::Unavailable
                    },
                    has_result: false,
                    request_errors: None,
                    first_error: own_error,
                    values: BaselinePoint {
                        conc,
                        ..Default::default()
                    },
                }),
            }
        }
        failure = failure_summary(&report, repairs_used);
        if report.first_error.is_some() {
            next = Some(next_step(
                &report,
                launcher_from_logs(&args.logs).as_deref(),
            ));
        }
        if time.is_none() {
            time = report
                .logs
                .iter()
                .filter_map(|l| l.first_timestamp.clone())
                .min()
                .map(|t| fmt_utc(&t));
        }
        image = image.or_else(|| image_from_logs(&args.logs));
        if report.persistence == Persistence::Symptom && failure.is_some() {
            eprintln!("note: the first error found is only a symptom; read the server log too");
        }
    }
    let failed = points
        .iter()
        .any(|p| matches!(p.status, PointStatus::Failed | PointStatus::Unavailable))
        || evals.iter().any(|e| !e.passed);
    // Nothing checked against the baseline: no candidate point has a comparable baseline
    // point (none matched its identity, or every matched pair failed a gate).
    let nothing_compared = comparison.as_ref().is_some_and(|c| {
        c.points
            .iter()
            .all(|p| p.verdict == servebench_compare::Verdict::NotComparable)
    });
    let status = args.status.unwrap_or(if failed {
        AttemptStatus::Failed
    } else if nothing_compared {
        AttemptStatus::NotComparable
    } else {
        AttemptStatus::Passed
    });
    // The candidate's own workload and topology (uniform over its points), else the baseline's.
    let uniform = |f: &dyn Fn(&servebench_compare::Identity) -> String| -> Option<String> {
        let c = comparison.as_ref()?;
        let mut labels = c.points.iter().map(|p| f(&p.identity));
        let first = labels.next()?;
        labels.all(|l| l == first).then_some(first)
    };
    let cand_workload = uniform(&|i| i.workload_label());
    let cand_topology = uniform(&|i| i.topology_label());
    Ok(AttemptInput {
        title_prefix: args.title_prefix.clone(),
        kind: args.kind,
        status,
        run,
        time,
        image: image.ok_or_else(|| {
            anyhow!("the candidate image is unknown: pass --image REF or --change FILE")
        })?,
        head: args.head.clone(),
        workload: args
            .workload
            .clone()
            .or(cand_workload)
            .unwrap_or_else(|| baseline.workload.clone()),
        topology: args
            .topology
            .clone()
            .or(cand_topology)
            .unwrap_or_else(|| baseline.topology.label()),
        statistic: stat.to_string(),
        change,
        baseline: Some(baseline),
        points,
        evals,
        failure,
        next,
        columns: vec![],
        comparison,
    })
}

/// Runs `servebench attempt`.
pub fn run(args: Args) -> Result<ExitCode> {
    let input = input(&args)?;
    let doc = build_attempt(&input);
    let colored = args.output.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let out = servebench_report::render(&doc, args.format, args.lang, colored);
    match &args.output {
        Some(p) => {
            std::fs::write(p, out).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        assert_eq!(parse_kind("initial"), Ok(AttemptKind::Initial));
        assert_eq!(
            parse_kind("repair 2"),
            Ok(AttemptKind::Repair { n: 2, max: 5 })
        );
        assert_eq!(
            parse_kind("repair-3"),
            Ok(AttemptKind::Repair { n: 3, max: 5 })
        );
        assert_eq!(parse_kind("retry 1"), Ok(AttemptKind::Retry { n: 1 }));
        assert_eq!(parse_kind("final"), Ok(AttemptKind::Final));
        assert!(parse_kind("repair 6").is_err());
        assert!(parse_kind("repair").is_err());
        assert!(parse_kind("bogus").is_err());
    }

    #[test]
    fn times_and_repairs_are_validated() {
        assert!(parse_time("2026-09-21T01:15:02Z").is_ok());
        assert!(parse_time("2026-09-21T03:15:02.114+02:00").is_ok());
        assert_eq!(
            fmt_utc("2026-09-21T03:15:02.114+02:00"),
            "2026-09-21 01:15 UTC"
        );
        assert!(parse_time("2026-09-21 01:15").is_ok());
        assert!(parse_time("2026-09-21 01:15 UTC").is_ok());
        assert!(parse_time("garbage").is_err());
        assert!(parse_time("2026-13-40 99:99").is_err());
        assert_eq!(parse_repairs_used("5"), Ok(5));
        assert!(parse_repairs_used("6").is_err());
        assert!(parse_repairs_used("x").is_err());
    }

    #[test]
    fn job_lines_name_points() {
        assert_eq!(
            job_point("benchmark (qwen3.8next-fp4-b200-sglang-agentic-mtp, agentic-coding, tp1 ep1 conc1)"),
            Some((1, None))
        );
        assert_eq!(
            job_point("benchmark (k, agentic-coding, tp1 ep1 conc16, eval-only gsm8k)"),
            Some((16, Some("gsm8k".into())))
        );
        assert_eq!(job_point("benchmark (no conc here)"), None);
    }

    #[test]
    fn flag_values_from_recipes() {
        let r =
            "python3 -m x \\\n  --cuda-graph-max-bs 64 \\\n  --foo=\"bar\" --flag-only \\\n  > log";
        assert_eq!(
            flag_value(r, "--cuda-graph-max-bs"),
            Some(Some("64".into()))
        );
        assert_eq!(flag_value(r, "--foo"), Some(Some("bar".into())));
        assert_eq!(flag_value(r, "--flag-only"), Some(None));
        assert_eq!(flag_value(r, "--absent"), None);
        assert_eq!(fmt_utc("2026-09-21T01:15:02.114Z"), "2026-09-21 01:15 UTC");
    }
}
