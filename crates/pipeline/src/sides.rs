//! Loading the two sides of a comparison — store runs (`12`, `12,13`, `latest`,
//! `latest-baseline`) or files (agg rows, a sweep `summary.json`, InferenceX rows, a baseline
//! table) — and building the [`Comparison`] that `compare`, `report` and `attempt` print.

use std::path::{Path, PathBuf};

use servebench_compare::{
    compare, parse_baseline, CompareOptions, Comparison, EvalPoint, IdentityOverrides, Point,
    RunInfo, Stat, Verdict,
};
use servebench_store::{RunId, Store, StoredRow};

use crate::error::{flag, io, Context, IoOp, PipelineError, Result};

/// Exit status when a metric regressed beyond the noise band and the gate.
pub const EXIT_REGRESSION: u8 = 2;
/// Exit status when no metric regressed but a candidate point or eval is invalid (failed,
/// failure rate over the gate, eval did not run).
pub const EXIT_CANDIDATE_INVALID: u8 = 3;

/// What to compare and how (the `compare` flags).
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// Baseline: run id(s), `latest-baseline`, or a file.
    pub baseline: String,
    /// Candidate: run id(s), `latest`, or a file.
    pub candidate: String,
    /// Latency statistic compared.
    pub stat: Stat,
    /// Results store.
    pub db: PathBuf,
    /// Regression gate, %.
    pub gate: f64,
    /// Comparability tolerance for mean input/output length, %.
    pub length_tolerance: f64,
    /// Maximum failure fraction of a point (default per workload).
    pub max_failure_rate: Option<f64>,
    /// Repeats needed before a tail percentile can be a regression.
    pub tail_min_repeats: usize,
}

impl CompareRequest {
    /// `baseline` against `candidate` with the `compare` defaults (mean, gate 5 %, length
    /// tolerance 5 %, 5 repeats for tails).
    pub fn new(db: &Path, baseline: &str, candidate: &str) -> CompareRequest {
        CompareRequest {
            baseline: baseline.to_string(),
            candidate: candidate.to_string(),
            stat: Stat::Mean,
            db: db.to_path_buf(),
            gate: 5.0,
            length_tolerance: 5.0,
            max_failure_rate: None,
            tail_min_repeats: 5,
        }
    }
}

/// Opens the store at `db`; a missing file is an error here (reading commands never create
/// one): `./servebench.db: no results store (run a sweep or `servebench baseline import` first,
/// or pass --db)`.
pub fn open_store(db: &Path) -> Result<Store> {
    if !db.exists() {
        return Err(PipelineError::NotFound(format!(
            "{}: no results store here (run `servebench sweep` or `servebench baseline import` \
             first, or pass --db PATH)",
            db.display()
        )));
    }
    Ok(Store::open(db)?)
}

/// One side of a comparison, loaded.
pub struct Side {
    /// Run facts for headers.
    pub info: RunInfo,
    /// Points (repeats not yet merged).
    pub points: Vec<Point>,
    /// Eval rows.
    pub evals: Vec<EvalPoint>,
}

fn side_from_runs(store: &Store, ids: &[RunId]) -> Result<Side> {
    let mut points = Vec::new();
    let mut evals = Vec::new();
    let mut info = RunInfo::default();
    for (k, id) in ids.iter().enumerate() {
        let run = store.get_run(*id)?.ok_or_else(|| {
            PipelineError::NotFound(format!(
                "run {id} does not exist in {} (see `servebench runs`)",
                store.path().display()
            ))
        })?;
        if k == 0 {
            info = RunInfo {
                run_id: Some(id.0),
                label: format!("run {id}"),
                image: run.meta.image.clone(),
                created_at: Some(run.created_at.clone()),
                config_key: run.meta.config_key.clone(),
                kind: Some(run.kind.as_str().to_string()),
                endpoint: run.meta.endpoint.clone(),
            };
        } else {
            info.label.push_str(&format!("+{id}"));
            info.image = info.image.or(run.meta.image.clone());
            info.config_key = info.config_key.or(run.meta.config_key.clone());
        }
        let first = points.len();
        for p in store.points(*id)? {
            let point = match &p.row {
                StoredRow::Servebench(r) => Point::from_agg(r),
                StoredRow::Imported(r) => Point::from_foreign(r),
            };
            points.push(point.with_context(|| format!("run {id}, point {}", p.id))?);
        }
        if let Some(dir) = &run.meta.out_dir {
            // `--ci` runs: within-run intervals for compare's noise rule.
            crate::confidence::attach_bootstrap(&mut points[first..], dir);
        }
        for e in store.evals(*id)? {
            let eval = match &e.row {
                StoredRow::Servebench(r) => EvalPoint::from_eval(r),
                StoredRow::Imported(r) => EvalPoint::from_foreign(r),
            };
            evals.push(eval.with_context(|| format!("run {id}, eval {}", e.id))?);
        }
    }
    Ok(Side {
        info,
        points,
        evals,
    })
}

fn side_from_file(path: &Path) -> Result<Side> {
    let text = std::fs::read_to_string(path).map_err(io(IoOp::Read, path))?;
    let name = path.display().to_string();
    // A sweep's summary.json: an object with an array of agg rows.
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        PipelineError::Invalid(format!(
            "{name}: not valid JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    let rows_text = match &v {
        serde_json::Value::Object(m) if m.contains_key("schema_version") => {
            let rows = ["points", "rows"]
                .iter()
                .find_map(|k| m.get(*k).filter(|r| r.is_array()))
                .ok_or_else(|| {
                    PipelineError::Invalid(format!(
                        "{name}: summary has no `points` array of agg rows"
                    ))
                })?;
            rows.to_string()
        }
        _ => text,
    };
    let imp = parse_baseline(&rows_text, &name, &IdentityOverrides::default())?;
    for n in &imp.notes {
        eprintln!("note: {n}");
    }
    let points = imp
        .points
        .iter()
        .map(Point::from_foreign)
        .collect::<Result<Vec<_>, _>>()?;
    let evals = imp
        .evals
        .iter()
        .map(EvalPoint::from_foreign)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Side {
        info: RunInfo {
            run_id: None,
            label: path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or(name),
            image: imp.image.clone(),
            created_at: imp.date.clone(),
            config_key: imp.config_key.clone(),
            kind: Some("baseline".into()),
            endpoint: None,
        },
        points,
        evals,
    })
}

/// Loads one side: `latest` (newest non-baseline run), `latest-baseline`, run ids (`12` or
/// `12,13`), or a file. A value that is both a run id and an existing file is read as the run.
pub fn load_side(db: &Path, arg: &str) -> Result<Side> {
    let is_ids = !arg.is_empty()
        && arg
            .split(',')
            .all(|s| !s.is_empty() && s.trim().chars().all(|c| c.is_ascii_digit()));
    if arg == "latest" || arg == "latest-baseline" {
        let store = open_store(db)?;
        let runs = store.list_runs(None, None)?;
        let want_baseline = arg == "latest-baseline";
        let run = runs
            .iter()
            .find(|r| (r.kind == servebench_store::RunKind::Baseline) == want_baseline)
            .ok_or_else(|| {
                PipelineError::NotFound(format!(
                    "{}: no {} run in the store",
                    db.display(),
                    if want_baseline {
                        "baseline"
                    } else {
                        "non-baseline"
                    }
                ))
            })?;
        return side_from_runs(&store, &[run.id]);
    }
    if is_ids {
        let ids: Vec<RunId> = arg
            .split(',')
            .map(|s| s.trim().parse().map(RunId))
            .collect::<Result<_, _>>()
            .map_err(|e| flag!("run id {arg:?}: {e}"))?;
        let store = open_store(db)?;
        return side_from_runs(&store, &ids);
    }
    let path = Path::new(arg);
    if path.exists() {
        return side_from_file(path);
    }
    Err(PipelineError::NotFound(format!(
        "{arg}: neither a run id nor an existing file"
    )))
}

/// Builds the comparison `req` asks for (the `compare` command, reports with a baseline).
pub fn build_comparison(args: &CompareRequest) -> Result<Comparison> {
    if args.gate.is_nan() || args.gate < 0.0 {
        return Err(flag!(
            "--gate {}: must be a non-negative percentage",
            args.gate
        ));
    }
    if let Some(f) = args.max_failure_rate {
        if !(0.0..=1.0).contains(&f) {
            return Err(flag!(
                "--max-failure-rate {f}: must be a fraction between 0 and 1"
            ));
        }
    }
    let base = load_side(&args.db, &args.baseline).context("--baseline")?;
    let cand = load_side(&args.db, &args.candidate).context("--candidate")?;
    let opts = CompareOptions {
        stat: args.stat,
        gate_pct: args.gate,
        length_tolerance_pct: args.length_tolerance,
        max_failure_rate: args.max_failure_rate,
        tail_min_repeats: args.tail_min_repeats,
        ..CompareOptions::default()
    };
    Ok(compare(
        base.info,
        base.points,
        base.evals,
        cand.info,
        cand.points,
        cand.evals,
        &opts,
    ))
}

/// The exit status for a comparison: 0 no regression, [`EXIT_REGRESSION`], else
/// [`EXIT_CANDIDATE_INVALID`] when a candidate point or eval is invalid.
pub fn exit_status(c: &Comparison) -> u8 {
    if c.has_regression() {
        EXIT_REGRESSION
    } else if c.has_invalid_candidate() {
        EXIT_CANDIDATE_INVALID
    } else {
        0
    }
}

/// The verdict summary printed under the table: one line per row that is not `no_change`,
/// then the overall verdict.
pub fn summary_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for p in &c.points {
        let name = format!(
            "{} · {} · c{}",
            p.identity.workload_label(),
            p.identity.topology_label(),
            p.identity.conc
        );
        let why: Vec<String> = match p.verdict {
            Verdict::NoChange => continue,
            Verdict::Regression | Verdict::Improvement | Verdict::Observation => p
                .metrics
                .iter()
                .filter(|m| m.verdict == p.verdict)
                .map(|m| {
                    let mut s = format!("{} {}", m.metric.label(), m.delta.pct_text());
                    if let Some(sp) = &m.baseline_spread {
                        s.push_str(&format!(
                            " (baseline {} repeats: mean {:.2}, sd {}, range {:.2}–{:.2})",
                            sp.n,
                            sp.mean,
                            sp.sd.map_or("n/a".into(), |x| format!("{x:.2}")),
                            sp.min,
                            sp.max
                        ));
                    }
                    s
                })
                .collect(),
            Verdict::NotComparable | Verdict::CandidateInvalid => {
                let gates: Vec<String> = p
                    .gates
                    .iter()
                    .filter(|g| g.outcome == servebench_compare::GateOutcome::Failed)
                    .map(|g| g.message.clone())
                    .collect();
                if gates.is_empty() {
                    p.na.iter()
                        .map(|r| format!("Δ N/A: {}", r.text()))
                        .collect()
                } else {
                    gates
                }
            }
        };
        out.push(format!("{name}: {} — {}", p.verdict, why.join("; ")));
    }
    for b in &c.unmatched_baseline {
        out.push(format!(
            "{} · {} · c{}: baseline point with no candidate",
            b.identity.workload_label(),
            b.identity.topology_label(),
            b.identity.conc
        ));
    }
    for e in &c.evals {
        if e.verdict != Verdict::NoChange {
            let why = match &e.delta.na {
                Some(r) => format!("Δ N/A: {}", r.text()),
                None => e.delta.pp_text(),
            };
            out.push(format!(
                "{}/{} · c{}: {} — {why}",
                e.task, e.metric, e.conc, e.verdict
            ));
        }
    }
    let code = exit_status(c);
    out.push(format!(
        "Verdict: {}{} (baseline {}, candidate {}, {} latency, gate ±{}%)",
        c.verdict,
        if code != 0 {
            format!(", exit {code}")
        } else {
            String::new()
        },
        c.baseline.label,
        c.candidate.label,
        c.options.stat,
        c.options.gate_pct
    ));
    out
}
