//! The simulator's DeepSeek-R1 presets against real InferenceX results (issue 22): the same
//! validation `servebench sim validate --against ../shared/data/real-results/rows.csv` prints,
//! run on the shared data. It fails when a test-set (not fitted) hardware's median |error|
//! at an ISL/OSL regresses past its ceiling: the target (20 % output tok/s/GPU and
//! median TPOT, 35 % median TTFT) where the model meets it, else the value the model reached
//! when this test was written, rounded up (docs/simulator.md, "Validation against
//! InferenceX", says where and why targets are missed). The ceilings are bounds on errors,
//! not predictions: a change that makes the model better passes, one that makes it worse
//! fails.

use std::path::PathBuf;

use servebench_sim::validate::{
    fit, read_rows, validate, Metric, RealRow, FIT_HARDWARE, TARGETS_PCT,
};

fn rows_csv() -> Option<PathBuf> {
    servebench_testkit::shared_path(env!("CARGO_MANIFEST_DIR"), "data/real-results/rows.csv")
}

/// Ceilings (median |error|, percent) where the model misses the target: (hardware,
/// ISL/OSL, metric, achieved when written + margin). Everything not listed must meet the
/// issue's target.
const MISSED: &[(&str, &str, Metric, f64)] = &[
    // achieved median |error| on 2026-12-02 (crates/sim/presets.json calibration fitted on
    // H200 with InferenceX's length spread; SGLang's scheduler recv interval from the
    // recipes), rounded up + 2 points
    ("b200", "8192/1024", Metric::OutputTputPerGpu, 27.0),
    ("b300", "1024/1024", Metric::OutputTputPerGpu, 26.0),
    ("b300", "1024/1024", Metric::MedianTpot, 34.0),
    ("b300", "8192/1024", Metric::OutputTputPerGpu, 33.0),
    ("b300", "8192/1024", Metric::MedianTpot, 36.0),
    ("mi300x", "1024/1024", Metric::OutputTputPerGpu, 75.0),
    ("mi300x", "1024/1024", Metric::MedianTpot, 43.0),
    ("mi300x", "1024/8192", Metric::OutputTputPerGpu, 75.0),
    ("mi300x", "1024/8192", Metric::MedianTpot, 43.0),
    ("mi300x", "8192/1024", Metric::OutputTputPerGpu, 86.0),
    ("mi300x", "8192/1024", Metric::MedianTpot, 46.0),
    ("mi300x", "8192/1024", Metric::MedianTtft, 39.0),
    ("mi325x", "1024/1024", Metric::OutputTputPerGpu, 61.0),
    ("mi325x", "1024/1024", Metric::MedianTpot, 39.0),
    ("mi325x", "1024/8192", Metric::OutputTputPerGpu, 70.0),
    ("mi325x", "1024/8192", Metric::MedianTpot, 42.0),
    ("mi325x", "8192/1024", Metric::OutputTputPerGpu, 71.0),
    ("mi325x", "8192/1024", Metric::MedianTpot, 45.0),
    ("mi325x", "8192/1024", Metric::MedianTtft, 35.0),
];

fn ceiling(hw: &str, seq: &str, m: Metric) -> f64 {
    MISSED
        .iter()
        .find(|(h, s, mm, _)| *h == hw && *s == seq && *mm == m)
        .map(|x| x.3)
        .unwrap_or_else(|| TARGETS_PCT.iter().find(|t| t.0 == m).unwrap().1)
}

#[test]
fn test_set_errors_stay_within_targets_or_recorded_ceilings_and_p90s_are_current() {
    let Some(p) = rows_csv() else { return };
    let mut rows = read_rows(&p).unwrap();
    // single-node rows only: the disaggregated rows run through the simulated fleet
    // (validate_disagg.rs, issue 32), which costs minutes of CPU for the high-concurrency
    // NVL72 rows; their errors are in docs/simulator.md "Multinode", not bounded here
    rows.retain(|r| !r.disagg);
    // all rows (the fit set too: its p90 feeds the plausibility check below)
    let t = std::time::Instant::now();
    let v = validate(&rows, None);
    eprintln!(
        "validated {} rows in {:.1} s",
        v.rows.len(),
        t.elapsed().as_secs_f64()
    );
    let mut failures = vec![];
    let mut seen = 0;
    for hw in ["b200", "b300", "mi300x", "mi325x", "mi355x"] {
        let Some(seqs) = v.by_hardware_isl_osl.get(hw) else {
            failures.push(format!("{hw}: no row modelled"));
            continue;
        };
        for (seq, ms) in seqs {
            for m in Metric::ALL {
                let Some(st) = ms.get(m.key()) else { continue };
                seen += 1;
                let c = ceiling(hw, seq, m);
                eprintln!(
                    "{hw} {seq} {}: n {} median |err| {:.1} % (ceiling {c} %)",
                    m.key(),
                    st.n,
                    st.median_abs_pct_error
                );
                if st.median_abs_pct_error.is_nan() || st.median_abs_pct_error > c {
                    failures.push(format!(
                        "{hw} {seq} {}: median |error| {:.1} % > {c} %",
                        m.key(),
                        st.median_abs_pct_error
                    ));
                }
                // a recorded miss is the achieved error + a small margin: when the model gets
                // better, the ceiling must follow (or the entry go), so it never leaves room
                // for a later regression
                let target = TARGETS_PCT.iter().find(|t| t.0 == m).unwrap().1;
                if c > target && st.median_abs_pct_error + 5.0 < c {
                    failures.push(format!(
                        "{hw} {seq} {}: median |error| {:.1} % is well under the recorded ceiling {c} %: lower it in MISSED to {}",
                        m.key(),
                        st.median_abs_pct_error,
                        (st.median_abs_pct_error.ceil() + 2.0).max(target)
                    ));
                }
            }
        }
    }
    assert!(seen >= 30, "only {seen} hardware × ISL/OSL × metric groups");
    // the software-generation breakdown partitions each hardware's rows: every modelled row is
    // in exactly one month × framework × image group, and each metric's n adds up to the
    // hardware's (docs/simulator.md's per-date table comes from it)
    for (hw, per_m) in &v.by_hardware {
        let groups = v.by_hardware_month.get(hw).map_or(&[][..], Vec::as_slice);
        let rows = v.rows.iter().filter(|r| &r.hardware == hw).count();
        let in_groups: usize = groups.iter().map(|g| g.n_rows).sum();
        if in_groups != rows {
            failures.push(format!(
                "{hw}: by_hardware_month holds {in_groups} rows, the validation modelled {rows}"
            ));
        }
        for (m, st) in per_m {
            let n: usize = groups
                .iter()
                .filter_map(|g| g.errors.get(m))
                .map(|s| s.n)
                .sum();
            if n != st.n {
                failures.push(format!(
                    "{hw} {m}: by_hardware_month counts {n}, by_hardware {}",
                    st.n
                ));
            }
        }
        let newest = &v.newest_month[hw];
        let latest = v
            .rows
            .iter()
            .filter(|r| &r.hardware == hw && r.date.len() == 10)
            .map(|r| &r.date[..7])
            .max();
        if latest.is_some_and(|l| l != newest.month) {
            failures.push(format!(
                "{hw}: newest_month says {}, the newest row is from {latest:?}",
                newest.month
            ));
        }
    }
    // the p90 |errors| the reports' plausibility check uses are this validation's
    for (hw, p90) in servebench_sim::plausibility::P90_ABS_PCT_ERROR {
        for (i, m) in Metric::ALL.iter().enumerate() {
            let now = v.by_hardware[*hw][m.key()].p90_abs_pct_error;
            if (now - p90[i]).abs() > 1.0 {
                failures.push(format!(
                    "{hw} {}: plausibility::P90_ABS_PCT_ERROR records {} % but the validation gives {now:.1} %",
                    m.key(),
                    p90[i]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_fit_never_sees_the_test_set() {
    let Some(p) = rows_csv() else { return };
    let rows = read_rows(&p).unwrap();
    assert_eq!(FIT_HARDWARE, &["h200"]);
    // fitting on everything but H200 has nothing to fit: the calibration is the presets'
    // one unchanged, so test rows cannot move it
    let no_h200: Vec<RealRow> = rows
        .iter()
        .filter(|r| r.hardware != "h200")
        .cloned()
        .collect();
    let (c, objective) = fit(&no_h200);
    assert!(objective.is_infinite(), "{objective}");
    let presets = servebench_sim::Presets::embedded()
        .model("deepseek-r1-fp8")
        .unwrap()
        .1
        .calibration
        .clone()
        .expect("the DeepSeek-R1 presets carry a fitted calibration");
    assert_eq!(c.mfu, presets.mfu);
    assert_eq!(c.bandwidth_efficiency, presets.bandwidth_efficiency);
    assert_eq!(c.step_overhead_ms, presets.step_overhead_ms);
    assert!(
        presets.fit.to_lowercase().contains("h200 rows"),
        "{}",
        presets.fit
    );
}

/// The held-out guard's other half: the calibration committed in `presets.json` is exactly what
/// [`fit`] returns on the H200 rows (refitted here from the shared `rows.csv`, not copied), so
/// the presets cannot drift from the fit (a hand-edited constant, or rows of test hardware
/// that once moved it) without this failing. `fit` starts from the committed values: when they
/// are its result, its first pass over every grid moves nothing and it stops.
#[test]
fn the_committed_calibration_is_the_fit_of_the_h200_rows() {
    let Some(p) = rows_csv() else { return };
    let rows = read_rows(&p).unwrap();
    let h200: Vec<RealRow> = rows
        .iter()
        .filter(|r| r.hardware == "h200")
        .cloned()
        .collect();
    assert!(h200.len() > 100, "{} H200 rows", h200.len());
    let t = std::time::Instant::now();
    let (c, objective) = fit(&h200);
    eprintln!(
        "refit on {} H200 rows in {:.1} s: objective {objective:.2} %",
        h200.len(),
        t.elapsed().as_secs_f64()
    );
    let committed = servebench_sim::Presets::embedded()
        .model("deepseek-r1-fp8")
        .unwrap()
        .1
        .calibration
        .clone()
        .expect("the DeepSeek-R1 presets carry a fitted calibration");
    let numbers = |c: &servebench_sim::presets::Calibration| {
        [
            ("mfu", c.mfu),
            ("bandwidth_efficiency", c.bandwidth_efficiency),
            ("step_overhead_ms", c.step_overhead_ms),
            ("request_overhead_ms", c.request_overhead_ms),
            ("per_seq_overhead_us", c.per_seq_overhead_us),
            ("prefill_step_overhead_ms", c.prefill_step_overhead_ms),
        ]
    };
    assert_eq!(
        numbers(&c),
        numbers(&committed),
        "presets.json's calibration is not the fit of the H200 rows"
    );
    // and its note states the fit's own row count and objective
    let modelled = c
        .fit
        .split("on the ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string();
    assert!(
        committed
            .fit
            .contains(&format!("on the {modelled} modelable H200 rows")),
        "{modelled} rows fitted; the note says: {}",
        committed.fit
    );
    assert!(
        committed.fit.contains(&format!("= {objective:.2} %")),
        "objective {objective:.2} %; the note says: {}",
        committed.fit
    );
}

/// The power model against the rows with measured power (issue 30; `sim validate --energy`,
/// docs/simulator.md "Modelled vs real"): every such row is modelled or counted with its
/// reason, and the MI355X median |error| per split stays within the value reached with the
/// committed fit (idle_w 420 W, overhead_power_share 0.06; 2026-12-03), rounded up + 2 points
/// — the held-out (8k/1k) ceilings are the honest ones; before the fit (datasheet idle 154 W,
/// share 0) all 15 rows erred by 44 % (W/GPU) and 39 % (J/output token).
#[test]
fn energy_errors_stay_within_recorded_ceilings() {
    use servebench_sim::validate_energy::{
        energy_rows_table, energy_table, read_measured_power, validate_energy,
    };
    let Some(p) = rows_csv() else { return };
    let rows = read_rows(&p).unwrap();
    let power = read_measured_power(&p).unwrap();
    let v = validate_energy(&rows, &power);
    println!("{}\n{}", energy_rows_table(&v), energy_table(&v));
    let skipped: usize = v.skipped.values().sum();
    assert_eq!(v.rows.len() + skipped, power.len(), "{:?}", v.skipped);
    assert!(v.rows.len() >= 15, "{} rows modelled", v.rows.len());
    for (hw, split, metric, ceiling) in [
        ("mi355x", "train", "avg_power_w", 8.0),
        ("mi355x", "train", "joules_per_output_token", 15.0),
        ("mi355x", "held-out", "avg_power_w", 12.0),
        ("mi355x", "held-out", "joules_per_output_token", 6.0),
    ] {
        let e = v.by_hardware_split[hw][split][metric];
        assert!(
            e.median_abs_pct_error <= ceiling,
            "{hw} {split} {metric}: median |error| {:.1} % > {ceiling} %",
            e.median_abs_pct_error
        );
    }
}

/// The committed power parameters of every GPU with fitted power (`overhead_power_share` in
/// presets.json) are exactly what `power_fit::fit_power` finds on its training rows (1k/1k),
/// and the fit does not move when every held-out row's measurement is replaced: the held-out
/// rows never enter it (docs/simulator.md "Energy").
#[test]
fn the_committed_power_parameters_are_the_fit_of_the_training_rows() {
    use servebench_sim::power_fit::fit_power;
    use servebench_sim::presets::Presets;
    use servebench_sim::validate_energy::{read_measured_power, validate_energy};
    let Some(p) = rows_csv() else { return };
    let rows = read_rows(&p).unwrap();
    let power = read_measured_power(&p).unwrap();
    let v = validate_energy(&rows, &power);
    let presets = Presets::embedded();
    let fitted: Vec<&String> = v
        .power_fitted
        .iter()
        .filter(|(_, f)| **f)
        .map(|(g, _)| g)
        .collect();
    assert_eq!(fitted, ["mi355x"], "GPUs with fitted power");
    for g in fitted {
        let (_, gpu) = presets.gpu(g).unwrap();
        let f = fit_power(&v.rows, g, gpu.tdp_w.unwrap()).unwrap();
        assert_eq!(
            (f.params.idle_w, f.params.overhead_power_share),
            (gpu.idle_w.unwrap(), gpu.overhead_power_share.unwrap()),
            "{g}: the fit of the training rows ({} rows, mean |error| {:.2} %) vs presets.json",
            f.n_train,
            f.train_mean_abs_pct_error
        );
        let source = gpu.power_source.as_deref().unwrap();
        assert!(
            source.contains(&format!("{} training rows", f.n_train))
                && source.contains(&format!("{:.2} %", f.train_mean_abs_pct_error)),
            "{g}: power_source names the fit's rows and objective: {source}"
        );
        let mut poisoned = v.rows.clone();
        for r in poisoned.iter_mut().filter(|r| r.split == "held-out") {
            r.measured_w = Some(1.0e6);
        }
        assert_eq!(fit_power(&poisoned, g, gpu.tdp_w.unwrap()), Some(f));
        assert!(v
            .rows
            .iter()
            .any(|r| r.hardware == *g && r.split == "held-out"));
    }
}
