//! Loading the two sides of a comparison — store runs (`12`, `12,13`, `latest`,
//! `latest-baseline`) or files (agg rows, a sweep `summary.json`, InferenceX rows, a baseline
//! table) — and building the [`Comparison`] that `compare`, `report` and `attempt` print.

use std::path::{Path, PathBuf};

use servebench_compare::{
    compare, parse_baseline, source_links, BaselineFormat, BaselineImport, CompareOptions,
    Comparison, EvalPoint, IdentityOverrides, Point, RunInfo, Stat, Verdict,
};
use servebench_store::{RunId, RunKind, RunMeta, RunStatus, Store, StoredRow};

use crate::error::{flag, io, Context, IoOp, Result, ReviewError};

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
    if !servebench_store::is_postgres_url(db) && !db.exists() {
        return Err(ReviewError::NotFound(format!(
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
            ReviewError::NotFound(format!(
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
                sources: Vec::new(),
            };
        } else {
            info.label.push_str(&format!("+{id}"));
            info.image = info.image.or(run.meta.image.clone());
            info.config_key = info.config_key.or(run.meta.config_key.clone());
        }
        let first = points.len();
        let mut files = Vec::new();
        for p in store.points(*id)? {
            let point = match &p.row {
                StoredRow::Servebench(r) => {
                    files.push(Some(r.records_file.clone()));
                    Point::from_agg(r)
                }
                StoredRow::Imported(r) => {
                    files.push(None);
                    Point::from_foreign(r)
                }
            };
            points.push(point.with_context(|| format!("run {id}, point {}", p.id))?);
        }
        if let Some(dir) = &run.meta.out_dir {
            // `--ci` runs: within-run intervals for compare's noise rule.
            crate::confidence::attach_bootstrap(&mut points[first..], dir);
            // per-request samples: the bootstrap of the difference (docs/compare.md §4a)
            for n in crate::confidence::attach_samples(&mut points[first..], &files, dir) {
                eprintln!("note: run {id} {n}: compared without its per-request records");
            }
        }
        for e in store.evals(*id)? {
            let eval = match &e.row {
                StoredRow::Servebench(r) => EvalPoint::from_eval(r),
                StoredRow::Imported(r) => EvalPoint::from_foreign(r),
            };
            evals.push(eval.with_context(|| format!("run {id}, eval {}", e.id))?);
        }
    }
    info.sources = source_links(&points);
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
        ReviewError::Invalid(format!(
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
                    ReviewError::Invalid(format!(
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
    // A dashboard history capture holds each configuration at several dates: compared from
    // the file, the newest row of each identity stands for it (stored with `baseline import`,
    // every run is kept as its own history run).
    let rows = if imp.format == BaselineFormat::InferencexApi {
        let (rows, left_out) = imp.latest_per_identity()?;
        if left_out > 0 {
            eprintln!(
                "note: {name}: {left_out} older dashboard rows of the same configuration left out \
                 (the newest date of each kept; `servebench baseline import` stores every run)"
            );
        }
        rows
    } else {
        imp.points.clone()
    };
    let mut points = rows
        .iter()
        .map(Point::from_foreign)
        .collect::<Result<Vec<_>, _>>()?;
    // A sweep's summary.json: its points' records lie beside it (conc<C>/records.jsonl).
    if let (serde_json::Value::Object(m), Some(dir)) = (&v, path.parent()) {
        if m.contains_key("schema_version") {
            let files: Vec<Option<String>> =
                serde_json::from_str::<Vec<serde_json::Value>>(&rows_text)
                    .unwrap_or_default()
                    .iter()
                    .map(|r| r["records_file"].as_str().map(str::to_string))
                    .collect();
            if files.len() == points.len() {
                for n in crate::confidence::attach_samples(&mut points, &files, dir) {
                    eprintln!("note: {name} {n}: compared without its per-request records");
                }
            }
        }
    }
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
            sources: source_links(&points),
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
                ReviewError::NotFound(format!(
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
    Err(ReviewError::NotFound(format!(
        "{arg}: neither a run id nor an existing file"
    )))
}

/// The candidate's configurations in one phrase, for the line that says nothing matched:
/// `h200 · sglang · dsr1 · fp8 · 1k/1k · TP8/EP1 · conc 4, 8` (one such group per distinct
/// configuration, `; ` joined).
pub fn identity_summary(points: &[Point]) -> String {
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for p in points {
        let i = &p.identity;
        let cfg = format!(
            "{} · {} · {} · {}{} · {} · {}",
            i.hw,
            i.framework,
            i.model_prefix,
            i.precision,
            if i.spec_decoding.is_empty() || i.spec_decoding == "none" {
                String::new()
            } else {
                format!(" · {}", i.spec_decoding)
            },
            i.workload_label(),
            i.topology_label()
        );
        match groups.iter_mut().find(|(c, _)| *c == cfg) {
            Some((_, concs)) if !concs.contains(&i.conc) => concs.push(i.conc),
            Some(_) => {}
            None => groups.push((cfg, vec![i.conc])),
        }
    }
    if groups.is_empty() {
        return "no points".into();
    }
    groups
        .into_iter()
        .map(|(cfg, mut concs)| {
            concs.sort_unstable();
            let c: Vec<String> = concs.iter().map(u32::to_string).collect();
            format!("{cfg} · conc {}", c.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `latest-baseline` for a candidate: the newest baseline run (by its time — an imported CI
/// run's date, else when it was stored — then by id) with a point whose identity
/// ([`servebench_compare::PointKey::match_key`]) a candidate point has — after `baseline
/// import` of a dashboard file the store holds one baseline run per CI run, most about other
/// configurations. When no baseline run has such a point, the newest baseline run. Returns
/// the run, its side and the one line that says which run was picked and why (`note: --baseline
/// latest-baseline: run 12, …`).
///
/// Errors: no baseline run in the store, or a run that does not load.
pub fn latest_baseline_for(db: &Path, cand: &[Point]) -> Result<(RunId, Side, String)> {
    let store = open_store(db)?;
    // newest first by the run's time (an imported CI run's own date, else when it was
    // stored), then by id: an import stores its runs oldest first
    let mut runs: Vec<_> = store
        .list_runs(None, None)?
        .into_iter()
        .filter(|r| r.kind == RunKind::Baseline)
        .collect();
    runs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.0.cmp(&a.id.0)));
    let baselines: Vec<RunId> = runs.iter().map(|r| r.id).collect();
    let Some(&newest) = baselines.first() else {
        return Err(ReviewError::NotFound(format!(
            "{}: no baseline run in the store",
            db.display()
        )));
    };
    let keys: Vec<servebench_compare::PointKey> =
        cand.iter().map(|p| p.identity.match_key()).collect();
    for (k, id) in baselines.iter().enumerate() {
        let side = side_from_runs(&store, &[*id])?;
        if side
            .points
            .iter()
            .any(|p| keys.contains(&p.identity.match_key()))
        {
            let line = if k == 0 {
                format!(
                    "note: --baseline latest-baseline: run {id}, the newest baseline run ({} in the store)",
                    baselines.len()
                )
            } else {
                format!(
                    "note: --baseline latest-baseline: run {id}, the newest of the {} baseline runs with a point matching the candidate ({k} newer baseline run(s) hold other configurations)",
                    baselines.len()
                )
            };
            return Ok((*id, side, line));
        }
    }
    let side = side_from_runs(&store, &[newest])?;
    let line = format!(
        "warning: --baseline latest-baseline: none of the {} baseline runs has a point matching the candidate ({}); comparing with the newest, run {newest}, so nothing is compared",
        baselines.len(),
        identity_summary(cand)
    );
    Ok((newest, side, line))
}

/// Builds the comparison `req` asks for (the `compare` command, reports with a baseline).
/// `latest-baseline` is the newest baseline run matching the candidate
/// ([`latest_baseline_for`]); the line saying which is printed on stderr.
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
    let (base, cand) = if args.baseline == "latest-baseline" {
        let cand = load_side(&args.db, &args.candidate).context("--candidate")?;
        let (_, base, line) = latest_baseline_for(&args.db, &cand.points).context("--baseline")?;
        eprintln!("{line}");
        (base, cand)
    } else if let Some(branch) = crate::branch_baseline::branch_of(&args.baseline) {
        let cand = load_side(&args.db, &args.candidate).context("--candidate")?;
        let (base, line) =
            crate::branch_baseline::branch_baseline_for(&args.db, &args.candidate, branch)
                .context("--baseline")?;
        eprintln!("{line}");
        (base, cand)
    } else {
        let base = load_side(&args.db, &args.baseline).context("--baseline")?;
        let cand = load_side(&args.db, &args.candidate).context("--candidate")?;
        (base, cand)
    };
    let (mut base, cand) = (base, cand);
    // the stored noise floor of the baseline's configuration (earlier A/A runs in the store)
    let exclude: Vec<i64> = cand.info.run_id.into_iter().collect();
    crate::noise_floor::attach(&args.db, &mut base.points, &exclude, args.stat)?;
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
        // a candidate InferenceX would not accept is named whatever its verdict
        let submission = p.candidate.submission_invalid_text();
        let mut why: Vec<String> = match p.verdict {
            Verdict::NoChange if submission.is_none() => continue,
            Verdict::NoChange => Vec::new(),
            Verdict::Regression
            | Verdict::Improvement
            | Verdict::Observation
            | Verdict::Inconclusive => p
                .metrics
                .iter()
                .filter(|m| m.verdict == p.verdict)
                .map(|m| {
                    let mut s = format!("{} {}", m.metric.label(), m.delta.pct_text());
                    if let Some(e) = &m.evidence {
                        s.push_str(&format!(" — {}", e.text()));
                    }
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
                // the row's reason first (a candidate InferenceX would not accept says why),
                // then every gate it failed
                let mut why: Vec<String> =
                    p.na.iter()
                        .map(|r| format!("Δ N/A: {}", r.text()))
                        .collect();
                for g in &p.gates {
                    if g.outcome == servebench_compare::GateOutcome::Failed
                        && !why.iter().any(|w| w.contains(&g.message))
                    {
                        why.push(g.message.clone());
                    }
                }
                why
            }
        };
        why.extend(submission);
        out.push(format!("{name}: {} — {}", p.verdict, why.join("; ")));
    }
    out.extend(lag_line(c));
    out.extend(noise_floor_line(c));
    out.extend(evidence_counts_line(c));
    for b in &c.unmatched_baseline {
        out.push(format!(
            "{} · {} · c{}: baseline point with no candidate",
            b.identity.workload_label(),
            b.identity.topology_label(),
            b.identity.conc
        ));
    }
    if !c.baseline_other_configs.is_empty() {
        out.push(other_configs_line(c));
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
    // Candidate points InferenceX would not accept: the verdict line says so (with the first
    // reason), whatever else the comparison found.
    let not_valid: Vec<&servebench_compare::PointComparison> = c
        .points
        .iter()
        .filter(|p| !p.candidate.submission_invalid.is_empty())
        .collect();
    let submission = match not_valid.first() {
        None => String::new(),
        Some(first) => format!(
            " — {} candidate point{} ({}: {})",
            not_valid.len(),
            if not_valid.len() == 1 {
                " is not a valid InferenceX submission"
            } else {
                "s are not valid InferenceX submissions"
            },
            not_valid
                .iter()
                .map(|p| format!("c{}", p.identity.conc))
                .collect::<Vec<_>>()
                .join(", "),
            first
                .candidate
                .submission_invalid_text()
                .unwrap_or_default()
                .trim_start_matches("not a valid InferenceX submission: ")
        ),
    };
    out.push(format!(
        "Verdict: {}{} (baseline {}, candidate {}, {} latency, gate ±{}%){submission}",
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
    if !c.baseline.sources.is_empty() {
        out.push(format!(
            "Baseline sources: {}",
            c.baseline
                .sources
                .iter()
                .map(|s| format!("{} {}", s.name, s.url))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}

/// The client/host lag of both sides (`t0 − scheduled`, wall ms, the worst point's p99 and
/// the largest), when the points carry their records: a loaded host shows here. Nothing is
/// widened for it (docs/compare.md §4a): the line is the evidence.
pub fn lag_line(c: &Comparison) -> Option<String> {
    let worst = |f: &dyn Fn(&servebench_compare::PointComparison) -> Option<&Point>| {
        c.points
            .iter()
            .filter_map(|p| f(p)?.samples.as_ref()?.lag())
            .fold(None::<(f64, f64, f64)>, |acc, l| {
                let (a, b, m) = acc.unwrap_or((0.0, 0.0, 0.0));
                Some((a.max(l.p50_ms), b.max(l.p99_ms), m.max(l.max_ms)))
            })
    };
    let b = worst(&|p| p.baseline.as_ref())?;
    let k = worst(&|p| Some(&p.candidate))?;
    Some(format!(
        "Host lag (wall ms per request, worst point: the client sending it after it was due + \
         the simulator reading it or publishing its steps late): baseline p50 {:.2}, p99 {:.2}, max {:.2}; candidate \
         p50 {:.2}, p99 {:.2}, max {:.2} — the numbers are not corrected for it; a change it \
         could account for (× the simulator's speedup) is inconclusive, not a regression",
        b.0, b.1, b.2, k.0, k.1, k.2
    ))
}

/// `Noise floor (…): TTFT ms 7.2%, TPOT ms 1.1%; …` — the largest stored floor per metric
/// over the baseline's points, when any ([`crate::noise_floor`]).
pub fn noise_floor_line(c: &Comparison) -> Option<String> {
    let mut shown: Vec<(servebench_compare::Metric, f64)> = Vec::new();
    for m in &c.options.metrics {
        let k = m.agg_key(c.options.stat);
        let f = c
            .points
            .iter()
            .filter_map(|p| p.baseline.as_ref()?.noise_floor.get(&k).copied())
            .fold(None::<f64>, |a, x| Some(a.map_or(x, |a| a.max(x))));
        if let Some(f) = f {
            shown.push((*m, f));
        }
    }
    if shown.is_empty() {
        return None;
    }
    Some(format!(
        "Noise floor (run-to-run spread of earlier runs of the baseline's configuration and \
         image in the store, 1.96·√2·CV): {}; each metric's gate is the larger of it and ±{}%",
        shown
            .iter()
            .map(|(m, f)| format!("{} {f:.1}%", m.label()))
            .collect::<Vec<_>>()
            .join(", "),
        c.options.gate_pct
    ))
}

/// `Statistics: 56 metric comparisons from per-request records (bootstrap 95% CI, FDR 5%):
/// 0 regressions, 1 improvement, 50 no change, 5 inconclusive` when any metric had evidence.
fn evidence_counts_line(c: &Comparison) -> Option<String> {
    let ms: Vec<&servebench_compare::MetricComparison> = c
        .points
        .iter()
        .flat_map(|p| p.metrics.iter())
        .filter(|m| m.evidence.is_some())
        .collect();
    if ms.is_empty() {
        return None;
    }
    let n = |v: Verdict| ms.iter().filter(|m| m.verdict == v).count();
    let floor = c
        .points
        .iter()
        .filter_map(|p| p.baseline.as_ref())
        .any(|b| !b.noise_floor.is_empty());
    Some(format!(
        "Statistics: {} metric comparisons from per-request records (bootstrap 95% CI of the \
         change, Benjamini–Hochberg FDR {}%{}): {} regression(s), {} improvement(s), {} no \
         change, {} inconclusive",
        ms.len(),
        servebench_compare::evidence::FDR_Q * 100.0,
        if floor {
            ", gate widened to the stored noise floor where larger"
        } else {
            ""
        },
        n(Verdict::Regression),
        n(Verdict::Improvement),
        n(Verdict::NoChange),
        n(Verdict::Inconclusive)
    ))
}

/// One line for the baseline points of configurations the candidate did not run:
/// `Baseline: 434 points of 119 other configurations not compared (the candidate ran none of
/// them; e.g. b200 sglang dsr1 fp8)`.
fn other_configs_line(c: &Comparison) -> String {
    let mut configs: Vec<String> = c
        .baseline_other_configs
        .iter()
        .map(|p| {
            let i = &p.identity;
            format!(
                "{} {} {} {}{}{}",
                i.hw,
                i.framework,
                i.model_prefix,
                i.precision,
                if i.spec_decoding == "none" {
                    String::new()
                } else {
                    format!(" {}", i.spec_decoding)
                },
                if i.disagg { " disagg" } else { "" }
            )
        })
        .collect();
    configs.sort();
    configs.dedup();
    let n = c.baseline_other_configs.len();
    format!(
        "Baseline: {n} point{} of {} other configuration{} not compared (the candidate ran none \
         of them; e.g. {})",
        if n == 1 { "" } else { "s" },
        configs.len(),
        if configs.len() == 1 { "" } else { "s" },
        configs
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// What `servebench baseline import` stored: one run per entry.
#[derive(Debug, Clone)]
pub struct ImportedRun {
    /// The new baseline run.
    pub run: RunId,
    /// What was imported into it.
    pub import: BaselineImport,
}

/// Imports a baseline file into the store at `db` (created if missing) as runs of kind
/// `baseline`: one run for InferenceX rows or a baseline table; for InferenceX dashboard API
/// rows (`/api/v1/benchmarks`, `/benchmarks/history`) one **history run per CI run**
/// (`run_url`), dated by its rows' `date`, with `source.url` = the run link in its
/// provenance. `label`: the run label (default: the file name; history runs add ` · <date> ·
/// run <id>`). `branch`: the runs' branch (`--branch`; `None`: no branch, so `compare
/// --baseline main` never picks them). Notes of the parse are printed to stderr.
pub fn import_baseline(
    db: &Path,
    file: &Path,
    ov: &IdentityOverrides,
    label: Option<&str>,
    branch: Option<&str>,
) -> Result<Vec<ImportedRun>> {
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(io(IoOp::Read, file))?;
    let imp = parse_baseline(&text, &name, ov)?;
    for n in &imp.notes {
        eprintln!("note: {n}");
    }
    let base_label = label.map(str::to_string).unwrap_or_else(|| {
        file.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone())
    });
    let history = imp.format == BaselineFormat::InferencexApi;
    let parts = imp.split_by_run()?;
    let mut store = Store::open(db)?;
    let mut out = Vec::new();
    for part in parts {
        let url = part
            .points
            .first()
            .and_then(|r| r.as_object().get("run_url"))
            .and_then(|u| u.as_str())
            .map(str::to_string);
        let mut meta = RunMeta::new(RunKind::Baseline);
        meta.label = Some(if history {
            let mut l = base_label.clone();
            if let Some(d) = &part.date {
                l.push_str(&format!(" · {d}"));
            }
            if let Some(id) = url.as_deref().and_then(run_id_of_url) {
                l.push_str(&format!(" · run {id}"));
            }
            l
        } else {
            base_label.clone()
        });
        meta.image = part.image.clone();
        meta.config_key = part.config_key.clone();
        meta.workload = part.workload.clone();
        meta.topology = part.topology.clone();
        meta.branch = branch.map(str::to_string);
        // A baseline's date is when it was measured: it is the run's time.
        meta.created_at = part.date.as_ref().map(|d| {
            if d.len() == 10 {
                format!("{d}T00:00:00Z")
            } else {
                d.clone()
            }
        });
        meta.meta = serde_json::json!({
            "source_file": std::fs::canonicalize(file).unwrap_or(file.to_path_buf()),
            "format": part.format,
            "statistic": part.statistic.map(|s| s.to_string()),
            "date": part.date,
            "run_url": url,
        });
        let run = store.record_run(&meta)?;
        store.set_provenance(run, "source.file", &name)?;
        store.set_provenance(run, "source.format", part.format.label())?;
        if let Some(u) = &url {
            store.set_provenance(run, "source.url", u)?;
        }
        for p in &part.points {
            store.add_foreign_point(run, p)?;
        }
        for e in &part.evals {
            store.add_foreign_eval(run, e)?;
        }
        store.finish_run(run, RunStatus::Ok)?;
        out.push(ImportedRun { run, import: part });
    }
    Ok(out)
}

/// `https://github.com/o/r/actions/runs/27213443242/attempts/1` → `27213443242`.
fn run_id_of_url(url: &str) -> Option<&str> {
    let rest = url.split("/runs/").nth(1)?;
    let id = rest.split('/').next()?;
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then_some(id)
}
