//! Modelled energy beside measured (issue 30): the simulator's power model (docs/simulator.md
//! "Energy": per step `idle_w + (tdp_w − idle_w) · u` on every GPU) held against the real rows
//! of `../shared/data/real-results/rows.csv` that carry measured power — InferenceX's
//! `avg_power_w` (W per GPU over the benchmark window) and `joules_per_output_token` (all GPUs'
//! energy / output tokens), kept in the row's `extra_json` — as [`crate::validate`] does for
//! latency: the same modelable rows, the same closed-loop run
//! ([`crate::validate::simulate_row`]), errors `(modelled − measured) / measured × 100`, and
//! per GPU the median and p90 of |error| and the median signed error.
//!
//! Modelled W/GPU = the run's modelled energy / its duration / TP; modelled J/output token =
//! energy / output tokens. Rows the presets cannot model are counted by reason, as in
//! `sim validate`; so are disaggregated rows (the simulated prefill/decode fleet of
//! [`crate::validate_disagg`] models no energy, and one engine of the row's TP is not its
//! fleet). The latency efficiency factors are not refitted on energy. The power
//! parameters of a GPU with rows (`idle_w`, `overhead_power_share`) are fitted by
//! [`crate::power_fit::fit_power`] on the training split only ([`is_held_out`]: 1k/1k rows train, every other
//! ISL/OSL is held out), as `validate::fit` fits latency on H200 alone; the tests check that the
//! committed values are that fit and that the held-out errors stay under recorded ceilings.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::power::{PowerParams, PowerProfile};
use crate::validate::{modelable, simulate_row, stats, ErrorStats, RealRow, ValidateError};

/// The held-out rule of the power fit, fixed before fitting: a row is held out unless its
/// ISL/OSL is 1024/1024 (MI355X: 8 rows train, the 7 rows of 8k/1k — prefill-heavy, a
/// workload the fit never sees — are the test set).
pub fn is_held_out(isl_osl: &str) -> bool {
    isl_osl != "1024/1024"
}

/// A row's measured power (from `extra_json`): `(avg_power_w, joules_per_output_token)`.
pub type MeasuredPower = (Option<f64>, Option<f64>);

/// Reads the measured power of every row of rows.csv that has some, by `row_id`.
///
/// Errors: the file cannot be read or parsed; the header lacks `row_id` or `extra_json`; an
/// `extra_json` is not a JSON object (file and line named).
pub fn read_measured_power(path: &Path) -> Result<BTreeMap<String, MeasuredPower>, ValidateError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ValidateError::Read {
        path: p.clone(),
        error,
    })?;
    let err = |line: u64, message: String| ValidateError::Parse {
        path: p.clone(),
        line: line as usize,
        message,
    };
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text.as_bytes());
    let header = rdr.headers().map_err(|e| err(1, e.to_string()))?.clone();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| err(1, format!("header lacks column `{name}`")))
    };
    let (id, extra) = (col("row_id")?, col("extra_json")?);
    let mut out = BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |pos| pos.line());
            err(line, e.to_string())
        })?;
        let line = rec.position().map_or(0, |pos| pos.line());
        let x = rec.get(extra).unwrap_or("").trim();
        if x.is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(x)
            .map_err(|e| err(line, format!("column `extra_json`: not JSON: {e}")))?;
        let o = v
            .as_object()
            .ok_or_else(|| err(line, "column `extra_json`: not a JSON object".into()))?;
        let num = |k: &str| {
            o.get(k)
                .and_then(serde_json::Value::as_f64)
                .filter(|x| x.is_finite() && *x > 0.0)
        };
        let m = (num("avg_power_w"), num("joules_per_output_token"));
        if m.0.is_some() || m.1.is_some() {
            out.insert(rec.get(id).unwrap_or("").to_string(), m);
        }
    }
    Ok(out)
}

/// The compared energy quantities.
pub const ENERGY_METRICS: [&str; 2] = ["avg_power_w", "joules_per_output_token"];

/// One modelled row with measured power.
#[derive(Debug, Clone, Serialize)]
pub struct EnergyRow {
    /// `row_id`.
    pub row_id: String,
    /// GPU.
    pub hardware: String,
    /// Framework of the measurement.
    pub framework: String,
    /// Precision.
    pub precision: String,
    /// TP.
    pub tp: u32,
    /// `ISL/OSL`.
    pub isl_osl: String,
    /// Concurrency.
    pub conc: u32,
    /// Modelled W per GPU.
    pub modelled_w: f64,
    /// Measured W per GPU.
    pub measured_w: Option<f64>,
    /// Modelled J per output token.
    pub modelled_j_per_output_token: f64,
    /// Measured J per output token.
    pub measured_j_per_output_token: Option<f64>,
    /// Signed % error per metric key ([`ENERGY_METRICS`]), where measured.
    pub error_pct: BTreeMap<&'static str, f64>,
    /// `"train"` or `"held-out"` ([`is_held_out`]).
    pub split: &'static str,
    /// Modelled run duration (first send to last token), s.
    pub duration_s: f64,
    /// Output tokens of the run.
    pub output_tokens: u64,
    /// The run's per-GPU power profile: the energy under other power parameters.
    pub profile: PowerProfile,
}

impl EnergyRow {
    /// Modelled W per GPU under `p`: profile energy / duration.
    pub fn watts_with(&self, p: &PowerParams) -> f64 {
        self.profile.energy_per_gpu_j(p) / self.duration_s
    }
}

/// The energy comparison (`servebench sim validate --energy --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct EnergyValidation {
    /// Per GPU, per metric key.
    pub by_hardware: BTreeMap<String, BTreeMap<&'static str, ErrorStats>>,
    /// Per GPU, per split (`train`, `held-out`), per metric key.
    pub by_hardware_split:
        BTreeMap<String, BTreeMap<&'static str, BTreeMap<&'static str, ErrorStats>>>,
    /// GPUs of the modelled rows whose power parameters are fitted (`true`: the preset has an
    /// `overhead_power_share`) or datasheet-only (`false`).
    pub power_fitted: BTreeMap<String, bool>,
    /// Every modelled row with measured power.
    pub rows: Vec<EnergyRow>,
    /// Rows with measured power not modelled, by reason.
    pub skipped: BTreeMap<String, usize>,
}

/// Models every row of `rows` that has measured power in `power` and the presets can model.
pub fn validate_energy(
    rows: &[RealRow],
    power: &BTreeMap<String, MeasuredPower>,
) -> EnergyValidation {
    let mut out = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        let Some(&(mw, mj)) = power.get(&r.row_id) else {
            continue;
        };
        let run = modelable(r).and_then(|()| simulate_row(r, None));
        let s = match run {
            Ok(s) => s,
            Err(why) => {
                *skipped.entry(why).or_default() += 1;
                continue;
            }
        };
        let out_tokens: u64 = s.requests.iter().map(|q| q.output_tokens as u64).sum();
        let (Some(e), true) = (s.energy_j, s.duration_s > 0.0 && out_tokens > 0) else {
            *skipped
                .entry(format!("no power figures for {}", r.hardware))
                .or_default() += 1;
            continue;
        };
        let w = e / s.duration_s / r.tp as f64;
        let j = e / out_tokens as f64;
        let mut error_pct = BTreeMap::new();
        for (k, modelled, measured) in [(ENERGY_METRICS[0], w, mw), (ENERGY_METRICS[1], j, mj)] {
            if let Some(m) = measured {
                error_pct.insert(k, (modelled - m) / m * 100.0);
            }
        }
        let split = if is_held_out(&format!("{}/{}", r.isl, r.osl)) {
            "held-out"
        } else {
            "train"
        };
        out.push(EnergyRow {
            row_id: r.row_id.clone(),
            hardware: r.hardware.clone(),
            framework: r.framework.clone(),
            precision: r.precision.clone(),
            tp: r.tp,
            isl_osl: format!("{}/{}", r.isl, r.osl),
            conc: r.conc,
            modelled_w: w,
            measured_w: mw,
            modelled_j_per_output_token: j,
            measured_j_per_output_token: mj,
            error_pct,
            split,
            duration_s: s.duration_s,
            output_tokens: out_tokens,
            profile: s.power_profile,
        });
    }
    let per_metric = |keep: &dyn Fn(&EnergyRow) -> bool| {
        let mut per = BTreeMap::new();
        for k in ENERGY_METRICS {
            let errs: Vec<f64> = out
                .iter()
                .filter(|r| keep(r))
                .filter_map(|r| r.error_pct.get(k).copied())
                .collect();
            if !errs.is_empty() {
                per.insert(k, stats(&errs));
            }
        }
        per
    };
    let mut by_hardware = BTreeMap::new();
    let mut by_hardware_split = BTreeMap::new();
    let mut power_fitted = BTreeMap::new();
    let gpus: std::collections::BTreeSet<&str> = out.iter().map(|r| r.hardware.as_str()).collect();
    for g in gpus {
        by_hardware.insert(g.to_string(), per_metric(&|r| r.hardware == g));
        let mut splits = BTreeMap::new();
        for sp in ["train", "held-out"] {
            let per = per_metric(&|r| r.hardware == g && r.split == sp);
            if !per.is_empty() {
                splits.insert(sp, per);
            }
        }
        by_hardware_split.insert(g.to_string(), splits);
        let fitted = crate::presets::Presets::embedded()
            .gpu(g)
            .is_ok_and(|(_, p)| p.overhead_power_share.is_some());
        power_fitted.insert(g.to_string(), fitted);
    }
    EnergyValidation {
        by_hardware,
        by_hardware_split,
        power_fitted,
        rows: out,
        skipped,
    }
}

/// The per-GPU table (Markdown): per GPU, all rows and each split (`train`, `held-out`), n,
/// median |error|, p90 |error| and median signed error of W/GPU and J/output token, and
/// whether the GPU's power parameters are fitted or datasheet-only.
pub fn energy_table(v: &EnergyValidation) -> String {
    let mut s = String::from(
        "| GPU | power | rows | n | W/GPU: median abs error | p90 abs | median signed | J/output tok: median abs error | p90 abs | median signed |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let line =
        |s: &mut String, g: &str, power: &str, set: &str, per: &BTreeMap<&str, ErrorStats>| {
            let cols = |k: &str| match per.get(k) {
                Some(e) => format!(
                    "{:.0} % | {:.0} % | {:+.0} %",
                    e.median_abs_pct_error, e.p90_abs_pct_error, e.median_pct_error
                ),
                None => "– | – | –".into(),
            };
            let n = per.values().map(|e| e.n).max().unwrap_or(0);
            s.push_str(&format!(
                "| {g} | {power} | {set} | {n} | {} | {} |\n",
                cols(ENERGY_METRICS[0]),
                cols(ENERGY_METRICS[1])
            ));
        };
    for (g, per) in &v.by_hardware {
        let power = if v.power_fitted.get(g).copied().unwrap_or(false) {
            "fitted"
        } else {
            "datasheet"
        };
        line(&mut s, g, power, "all", per);
        for (sp, per) in v.by_hardware_split.get(g).into_iter().flatten() {
            line(&mut s, g, power, sp, per);
        }
    }
    s.push_str(&power_fit_notes(v));
    s
}

/// After the table: per GPU of the rows, what [`crate::power_fit::fit_power`] finds on the
/// training split beside what presets.json has, and the GPUs whose power is datasheet-only.
pub fn power_fit_notes(v: &EnergyValidation) -> String {
    let mut s = String::new();
    let presets = crate::presets::Presets::embedded();
    for (g, fitted) in &v.power_fitted {
        let Ok((_, gpu)) = presets.gpu(g) else {
            continue;
        };
        let Some(tdp) = gpu.tdp_w else { continue };
        if let Some(f) = crate::power_fit::fit_power(&v.rows, g, tdp) {
            s.push_str(&format!(
                "{g}: the fit on the train split ({} rows of 1024/1024; the other ISL/OSL held out) gives idle_w {:.0} W, overhead_power_share {:.2} (train mean |error| {:.2} %); presets.json has idle_w {:.0} W, overhead_power_share {}{}\n",
                f.n_train,
                f.params.idle_w,
                f.params.overhead_power_share,
                f.train_mean_abs_pct_error,
                gpu.idle_w.unwrap_or(0.0),
                gpu.overhead_power_share.map_or("absent".into(), |x| format!("{x:.2}")),
                if *fitted { "" } else { " (not fitted)" },
            ));
        }
    }
    let datasheet: Vec<&str> = presets
        .gpus
        .iter()
        .filter(|(_, g)| g.tdp_w.is_some() && g.overhead_power_share.is_none())
        .map(|(k, _)| k.as_str())
        .collect();
    s.push_str(&format!(
        "power from the datasheet only (no rows with measured power; idle_w an assumption): {}\n",
        datasheet.join(", ")
    ));
    s
}

/// Every modelled row (Markdown): modelled beside measured.
pub fn energy_rows_table(v: &EnergyValidation) -> String {
    let mut s = String::from(
        "| row | GPU | split | fw | prec | TP | ISL/OSL | conc | W/GPU modelled | measured | error | J/output tok modelled | measured | error |\n\
         |---:|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let opt = |x: Option<f64>, d: usize| x.map_or("–".into(), |x| format!("{x:.d$}"));
    let pct = |x: Option<&f64>| x.map_or("–".into(), |x| format!("{x:+.0} %"));
    for r in &v.rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {:.3} | {} | {} |\n",
            r.row_id,
            r.hardware,
            r.split,
            r.framework,
            r.precision,
            r.tp,
            r.isl_osl,
            r.conc,
            r.modelled_w,
            opt(r.measured_w, 0),
            pct(r.error_pct.get(ENERGY_METRICS[0])),
            r.modelled_j_per_output_token,
            opt(r.measured_j_per_output_token, 3),
            pct(r.error_pct.get(ENERGY_METRICS[1])),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_file(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rows.csv");
        std::fs::write(&p, body).unwrap();
        (d, p)
    }

    #[test]
    fn measured_power_comes_from_extra_json_and_a_broken_one_is_named() {
        let (_d, p) = rows_file(
            "row_id,hardware,extra_json\n\
             1,mi355x,\"{\"\"avg_power_w\"\": 628.907, \"\"joules_per_output_token\"\": 6.353339}\"\n\
             2,mi355x,\"{\"\"p99.9_ttft\"\": 0.8}\"\n\
             3,b200,\"{\"\"avg_power_w\"\": 645.9}\"\n",
        );
        let m = read_measured_power(&p).unwrap();
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m["1"], (Some(628.907), Some(6.353339)));
        assert_eq!(m["3"], (Some(645.9), None));
        let (_d, p) = rows_file("row_id,extra_json\n1,\"{\"\"a\"\": \"\n2,[1]\n");
        let e = read_measured_power(&p).unwrap_err().to_string();
        assert!(e.contains("rows.csv:2") && e.contains("extra_json"), "{e}");
    }

    #[test]
    fn a_modelled_row_is_set_beside_its_measurement() {
        let row = RealRow {
            row_id: "1".into(),
            source_id: "S1".into(),
            scenario: "fixed_seq".into(),
            hardware: "mi355x".into(),
            model_prefix: "dsr1".into(),
            precision: "fp4".into(),
            framework: "sglang".into(),
            spec_decoding: "none".into(),
            disagg: false,
            tp: 4,
            ep: 1,
            dp_attention: false,
            isl: 1024,
            osl: 1024,
            conc: 4,
            output_tput_per_gpu: None,
            median_tpot_s: None,
            median_ttft_s: None,
            date: String::new(),
            image: String::new(),
            shape: None,
        };
        let power = BTreeMap::from([("1".to_string(), (Some(628.907), Some(6.353339)))]);
        let v = validate_energy(std::slice::from_ref(&row), &power);
        assert_eq!(v.rows.len(), 1, "{:?}", v.skipped);
        let r = &v.rows[0];
        // between the MI355X's idle (154 W) and TDP (1,400 W) per GPU
        assert!(r.modelled_w > 154.0 && r.modelled_w < 1400.0, "{r:?}");
        // the run's power profile gives back the energy the engine summed step by step
        let (_, gpu) = crate::presets::Presets::embedded().gpu("mi355x").unwrap();
        let params = PowerParams {
            tdp_w: gpu.tdp_w.unwrap(),
            idle_w: gpu.idle_w.unwrap(),
            overhead_power_share: gpu.overhead_power_share.unwrap(),
        };
        assert!(
            (r.watts_with(&params) - r.modelled_w).abs() < 1e-6 * r.modelled_w,
            "{r:?}"
        );
        let e = r.error_pct["avg_power_w"];
        assert!((e - (r.modelled_w - 628.907) / 628.907 * 100.0).abs() < 1e-9);
        assert_eq!(v.by_hardware["mi355x"]["avg_power_w"].n, 1);
        assert!(
            energy_table(&v).contains("| mi355x | fitted | all | 1 |"),
            "{}",
            energy_table(&v)
        );
        assert_eq!(r.split, "train");
        assert!(energy_table(&v).contains("| mi355x | fitted | train | 1 |"));
        // a row without a model preset is counted, not modelled
        let other = RealRow {
            model_prefix: "dsv4".into(),
            ..row
        };
        let v = validate_energy(&[other], &power);
        assert!(v.rows.is_empty());
        assert_eq!(v.skipped.values().sum::<usize>(), 1, "{:?}", v.skipped);
    }
}
