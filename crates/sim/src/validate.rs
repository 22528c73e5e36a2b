//! Predicted beside measured: the simulator's presets held against real published results
//! (`../shared/data/real-results/rows.csv`, built by its `normalize.py`; issue 22).
//!
//! Each row the presets can model (InferenceX fixed-sequence, single-node aggregated serving,
//! no speculative decoding, a model and GPU with presets) is run through the same engine the
//! HTTP server plays back — [`crate::engine::simulate_closed_loop`], the continuous-batching
//! scheduler with [`EngineConfig::step_cost`] — with the row's GPU, TP/EP/DP-attention,
//! concurrency and ISL/OSL, and its median TTFT, median TPOT and output tokens/s per GPU are
//! set beside the measured ones. Errors are `(predicted − measured) / measured × 100`; per
//! hardware × metric (and per hardware × ISL/OSL × metric) the median and p90 of the absolute
//! error are reported. The efficiency factors are fitted on the **H200** rows only
//! ([`fit`], [`FIT_HARDWARE`]); every other GPU is a test set.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::engine::{simulate_closed_loop_with, Workload};
use crate::model::{EngineConfig, Parallelism};
use crate::presets::{Calibration, Presets};

/// The hardware whose rows the efficiency factors are fitted on; all others are test sets.
pub const FIT_HARDWARE: &[&str] = &["h200"];

/// Requests per client in a modelled point (InferenceX sends 10 × conc; 4 × conc keeps one
/// steady-state stretch after the first wave while a row costs milliseconds to seconds).
pub const REQUESTS_PER_CLIENT: u32 = 4;

/// InferenceX's `--random-range-ratio` for fixed-sequence points: every request's ISL and OSL
/// are drawn as uniform integers in [⌊0.8·L⌋, L] (mean ≈ 0.9·L). Source: SemiAnalysisAI/
/// InferenceX `.github/workflows/benchmark-tmpl.yml` (input `random-range-ratio`, default
/// `'0.8'`, passed as `RANDOM_RANGE_RATIO`) and `utils/bench_serving/benchmark_serving.py`
/// (`sample_uniform`: `randint(int(L * ratio), L + 1)`), HEAD 843c6254. The spread also keeps
/// requests from finishing in lock-step.
pub const RANDOM_RANGE_RATIO: f64 = 0.8;

/// The (ISL, OSL) of `n` requests drawn as InferenceX draws them ([`RANDOM_RANGE_RATIO`]),
/// from a fixed-seed SplitMix64 stream, so a prediction is deterministic.
pub fn sampled_lengths(isl: u32, osl: u32, n: usize) -> Vec<(u32, u32)> {
    let mut state: u64 = 0x5EED_0022;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut draw = |l: u32| {
        let lo = (l as f64 * RANDOM_RANGE_RATIO) as u32;
        lo + (next() % u64::from(l - lo + 1)) as u32
    };
    (0..n).map(|_| (draw(isl), draw(osl).max(2))).collect()
}

/// Target median |error|, percent, on the test set: (output tok/s/GPU, median TPOT, median
/// TTFT), at every ISL/OSL (issue 22).
pub const TARGETS_PCT: [(Metric, f64); 3] = [
    (Metric::OutputTputPerGpu, 20.0),
    (Metric::MedianTpot, 20.0),
    (Metric::MedianTtft, 35.0),
];

/// A compared quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Output tokens/s per GPU.
    OutputTputPerGpu,
    /// Median time per output token.
    MedianTpot,
    /// Median time to first token.
    MedianTtft,
}

impl Metric {
    /// All metrics, in report order.
    pub const ALL: [Metric; 3] = [
        Metric::OutputTputPerGpu,
        Metric::MedianTpot,
        Metric::MedianTtft,
    ];

    /// The JSON key (`output_tput_per_gpu`, `median_tpot`, `median_ttft`).
    pub fn key(self) -> &'static str {
        match self {
            Metric::OutputTputPerGpu => "output_tput_per_gpu",
            Metric::MedianTpot => "median_tpot",
            Metric::MedianTtft => "median_ttft",
        }
    }
}

/// One real result row (the columns of rows.csv this module reads).
#[derive(Debug, Clone, PartialEq)]
pub struct RealRow {
    /// `row_id`.
    pub row_id: String,
    /// `source_id` (S1 = InferenceX dashboard API).
    pub source_id: String,
    /// `scenario` (`fixed_seq`, …).
    pub scenario: String,
    /// `hardware` (lower case, e.g. `h200`).
    pub hardware: String,
    /// `model_prefix` (`dsr1`, …).
    pub model_prefix: String,
    /// `precision` (`fp8`, `fp4`).
    pub precision: String,
    /// `framework` (`sglang`, `trt`, …).
    pub framework: String,
    /// `spec_decoding` (`none`, `mtp`).
    pub spec_decoding: String,
    /// `disagg` (prefill/decode disaggregation).
    pub disagg: bool,
    /// `tp`.
    pub tp: u32,
    /// `ep`.
    pub ep: u32,
    /// `dp_attention`.
    pub dp_attention: bool,
    /// `isl`, tokens.
    pub isl: u32,
    /// `osl`, tokens.
    pub osl: u32,
    /// `conc`.
    pub conc: u32,
    /// `output_tput_per_gpu`, tok/s.
    pub output_tput_per_gpu: Option<f64>,
    /// `median_tpot_s`, s.
    pub median_tpot_s: Option<f64>,
    /// `median_ttft_s`, s.
    pub median_ttft_s: Option<f64>,
}

/// Reading rows.csv failed: the file, line and what is wrong, in one line.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// The file cannot be read.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// A header column is missing or a value does not parse.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line of the record.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Reads rows.csv (all rows; [`modelable`] says which can be modelled).
///
/// Errors: the file cannot be read; a needed column is missing from the header; a number
/// column that is not empty does not parse (file:line and column named).
pub fn read_rows(path: &Path) -> Result<Vec<RealRow>, ValidateError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ValidateError::Read {
        path: p.clone(),
        error,
    })?;
    // the 1-based line a record starts on, from its byte offset (the csv crate's own line
    // count is one short after CRLF line ends, which rows.csv has)
    let line_at = |byte: u64| {
        let b = text.as_bytes();
        let mut upto = (byte as usize).min(b.len());
        // after a CRLF record end the next record's offset can sit on its `\n`
        while upto < b.len() && (b[upto] == b'\r' || b[upto] == b'\n') {
            upto += 1;
        }
        text.as_bytes()[..upto]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64
            + 1
    };
    let parse_err = |line: u64, message: String| ValidateError::Parse {
        path: p.clone(),
        line: line as usize,
        message,
    };
    // the csv crate (RFC 4180: quoted commas, newlines and `""`); a record whose field count
    // differs from the header's is an error naming its line, never a silently short row
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .from_reader(text.as_bytes());
    let mut recs = rdr.records().map(|r| {
        r.map(|rec| {
            let line = rec.position().map_or(0, |pos| line_at(pos.byte()));
            (line, rec.iter().map(str::to_string).collect::<Vec<_>>())
        })
        .map_err(|e| {
            let line = e.position().map_or(0, |pos| line_at(pos.byte()));
            let message = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => {
                    format!("{len} fields, the header has {expected_len}")
                }
                _ => e.to_string(),
            };
            parse_err(line, message)
        })
    });
    let header = match recs.next() {
        Some(h) => h?.1,
        None => return Err(parse_err(1, "empty file (no header)".into())),
    };
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| parse_err(1, format!("header lacks column `{name}`")))
    };
    let names = [
        "row_id",
        "source_id",
        "scenario",
        "hardware",
        "model_prefix",
        "precision",
        "framework",
        "spec_decoding",
        "disagg",
        "tp",
        "ep",
        "dp_attention",
        "isl",
        "osl",
        "conc",
        "output_tput_per_gpu",
        "median_tpot_s",
        "median_ttft_s",
    ];
    let idx: Vec<usize> = names.iter().map(|n| col(n)).collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for rec in recs {
        let (line, r) = rec?;
        let line = line as usize;
        let get = |i: usize| r.get(idx[i]).map(String::as_str).unwrap_or("");
        let err = |i: usize, what: &str| ValidateError::Parse {
            path: p.clone(),
            line,
            message: format!("column `{}`: {what} `{}`", names[i], get(i)),
        };
        let uint = |i: usize| -> Result<u32, ValidateError> {
            let v = get(i);
            if v.is_empty() {
                return Ok(0);
            }
            v.parse::<u32>().ok().ok_or_else(|| err(i, "not a count:"))
        };
        // TP, ISL, OSL and concurrency of a measured row are at least 1 (EP 0 = not set)
        let count1 = |i: usize| -> Result<u32, ValidateError> {
            match uint(i)? {
                0 if !get(i).is_empty() => Err(err(i, "not a count of at least 1:")),
                n => Ok(n),
            }
        };
        let num = |i: usize| -> Result<Option<f64>, ValidateError> {
            let v = get(i);
            if v.is_empty() {
                return Ok(None);
            }
            // a measurement is a positive, finite number (throughput, seconds): NaN, ±inf,
            // zero or negative is a broken row, not a missing value
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                Ok(_) => Err(err(i, "not a positive finite number:")),
                Err(_) => Err(err(i, "not a number:")),
            }
        };
        let flag = |i: usize| get(i).eq_ignore_ascii_case("true");
        rows.push(RealRow {
            row_id: get(0).to_string(),
            source_id: get(1).to_string(),
            scenario: get(2).to_string(),
            hardware: get(3).to_ascii_lowercase(),
            model_prefix: get(4).to_string(),
            precision: get(5).to_ascii_lowercase(),
            framework: get(6).to_string(),
            spec_decoding: get(7).to_string(),
            disagg: flag(8),
            tp: count1(9)?,
            ep: uint(10)?,
            dp_attention: flag(11),
            isl: count1(12)?,
            osl: count1(13)?,
            conc: count1(14)?,
            output_tput_per_gpu: num(15)?,
            median_tpot_s: num(16)?,
            median_ttft_s: num(17)?,
        });
    }
    Ok(rows)
}

/// The model preset key for a row's model and precision (`None`: no preset).
pub fn model_key(row: &RealRow) -> Option<&'static str> {
    match (row.model_prefix.as_str(), row.precision.as_str()) {
        ("dsr1", "fp8") => Some("deepseek-r1-fp8"),
        ("dsr1", "fp4") => Some("deepseek-r1-fp4"),
        _ => None,
    }
}

/// Whether the simulator can model a row: `Ok(())`, or the reason it cannot (used as a
/// count key in [`Validation::skipped`]).
pub fn modelable(row: &RealRow) -> Result<(), String> {
    if row.scenario != "fixed_seq" {
        return Err(format!("scenario {} (not fixed ISL/OSL)", row.scenario));
    }
    if model_key(row).is_none() {
        return Err(format!(
            "no model preset for {} {}",
            row.model_prefix, row.precision
        ));
    }
    if row.disagg {
        return Err("prefill/decode disaggregation (not modelled)".into());
    }
    if row.spec_decoding != "none" && !row.spec_decoding.is_empty() {
        return Err(format!(
            "speculative decoding {} (not modelled)",
            row.spec_decoding
        ));
    }
    if Presets::embedded().gpu(&row.hardware).is_err() {
        return Err(format!("no GPU preset for {}", row.hardware));
    }
    if row.conc == 0 || row.isl == 0 || row.osl < 2 || row.tp == 0 {
        return Err("conc, ISL, OSL or TP missing".into());
    }
    Ok(())
}

/// SGLang's `--scheduler-recv-interval` as the InferenceX recipe of a row sets it
/// ([`EngineConfig::scheduler_recv_interval`]; 1 = every step, the default and every other
/// framework's behaviour). Source: SemiAnalysisAI/InferenceX
/// `benchmarks/single_node/fixed_seq_len/dsr1_{fp8,fp4}_{b200,b300}.sh` (HEAD 843c6254,
/// 2026-08-22; the flag is in the B200 SGLang recipes since 6be2c699, 2025-09-23, before the
/// oldest row): SGLang on B200/B300 polls every 10 decode steps below conc 16 and every 30 from
/// conc 16 (FP8 at TP4: 10; FP4 with DP attention: 1). The H200 and AMD SGLang recipes, TRT-LLM
/// and ATOM do not set it. The rows' measurements are not used to choose it.
pub fn recipe_recv_interval(row: &RealRow) -> u32 {
    let blackwell = matches!(row.hardware.as_str(), "b200" | "b300");
    if row.framework != "sglang" || !blackwell {
        return 1;
    }
    if row.precision == "fp4" && row.hardware == "b200" && row.dp_attention {
        return 1;
    }
    if row.precision == "fp8" && row.tp == 4 {
        return 10;
    }
    if row.conc >= 16 {
        30
    } else {
        10
    }
}

/// What the simulator predicts for one row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// Output tokens/s per GPU.
    pub output_tput_per_gpu: f64,
    /// Median TPOT, s.
    pub median_tpot_s: f64,
    /// Median TTFT, s.
    pub median_ttft_s: f64,
}

impl Prediction {
    /// The value of `m`.
    pub fn get(&self, m: Metric) -> f64 {
        match m {
            Metric::OutputTputPerGpu => self.output_tput_per_gpu,
            Metric::MedianTpot => self.median_tpot_s,
            Metric::MedianTtft => self.median_ttft_s,
        }
    }
}

fn measured(row: &RealRow, m: Metric) -> Option<f64> {
    match m {
        Metric::OutputTputPerGpu => row.output_tput_per_gpu,
        Metric::MedianTpot => row.median_tpot_s,
        Metric::MedianTtft => row.median_ttft_s,
    }
    .filter(|v| v.is_finite() && *v > 0.0)
}

fn median_of(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Nearest-rank percentile `q` (0–100) of `v`.
fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// Runs the row's point through the engine model (closed loop, `conc` clients,
/// [`REQUESTS_PER_CLIENT`] × `conc` requests with ISL/OSL drawn as InferenceX draws them ([`sampled_lengths`]), front-end latency
/// charged) with the embedded presets and `calibration` (when given, it replaces the model's).
///
/// Errors: the configuration cannot be built (unknown preset, does not fit), as one line.
pub fn predict(row: &RealRow, calibration: Option<&Calibration>) -> Result<Prediction, String> {
    let p = Presets::embedded();
    let mk = model_key(row).ok_or("no model preset")?;
    let (gk, g) = p.gpu(&row.hardware).map_err(|e| e.to_string())?;
    let (mk, m) = p.model(mk).map_err(|e| e.to_string())?;
    let mut m = m.clone();
    if let Some(c) = calibration {
        m.calibration = Some(c.clone());
    }
    let par = Parallelism {
        tp: row.tp,
        ep: if row.ep == row.tp { row.tp } else { 1 },
        dp_attention: row.dp_attention,
    };
    let mut cfg = EngineConfig::with_parallelism(gk, g.clone(), mk, m, par, p.engine.clone())
        .map_err(|e| e.to_string())?;
    cfg.scheduler_recv_interval = recipe_recv_interval(row);
    let n = row.conc * REQUESTS_PER_CLIENT;
    let lengths = sampled_lengths(row.isl, row.osl, n as usize);
    let s = simulate_closed_loop_with(
        Arc::new(cfg),
        &Workload {
            concurrency: row.conc,
            num_requests: n,
            input_tokens: row.isl,
            output_tokens: row.osl,
            request_overhead: true,
        },
        |i| lengths[i],
    );
    let done: Vec<_> = s.requests.iter().filter(|r| r.output_tokens > 1).collect();
    Ok(Prediction {
        output_tput_per_gpu: s.output_throughput / row.tp as f64,
        median_tpot_s: median_of(
            done.iter()
                .map(|r| (r.last_token_s - r.first_token_s) / (r.output_tokens - 1) as f64)
                .collect(),
        ),
        median_ttft_s: median_of(done.iter().map(|r| r.first_token_s - r.sent_s).collect()),
    })
}

/// One modelled row: identity, prediction, measurement and signed % errors.
#[derive(Debug, Clone, Serialize)]
pub struct RowResult {
    /// `row_id` of rows.csv.
    pub row_id: String,
    /// GPU.
    pub hardware: String,
    /// Framework of the measurement.
    pub framework: String,
    /// Precision.
    pub precision: String,
    /// TP / EP / DP attention.
    pub tp: u32,
    /// EP.
    pub ep: u32,
    /// DP attention.
    pub dp_attention: bool,
    /// ISL/OSL, e.g. "1024/1024".
    pub isl_osl: String,
    /// Concurrency.
    pub conc: u32,
    /// Predicted.
    pub predicted: Prediction,
    /// Measured (NaN where the row has no value).
    pub measured: Prediction,
    /// Signed % error per metric key (absent where not measured).
    pub error_pct: BTreeMap<&'static str, f64>,
}

/// Median and p90 of the absolute % error of one group.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Rows.
    pub n: usize,
    /// Median |error|, percent.
    pub median_abs_pct_error: f64,
    /// p90 |error| (nearest rank), percent.
    pub p90_abs_pct_error: f64,
    /// Median signed error, percent (> 0: the model predicts more than measured).
    pub median_pct_error: f64,
}

fn stats(errs: &[f64]) -> ErrorStats {
    let abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
    ErrorStats {
        n: errs.len(),
        median_abs_pct_error: median_of(abs.clone()),
        p90_abs_pct_error: percentile(abs, 90.0),
        median_pct_error: median_of(errs.to_vec()),
    }
}

/// The whole comparison (`servebench sim validate --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    /// Hardware the efficiency factors were fitted on.
    pub fit: Vec<String>,
    /// Per hardware, per metric key.
    pub by_hardware: BTreeMap<String, BTreeMap<&'static str, ErrorStats>>,
    /// Per hardware, per ISL/OSL, per metric key.
    pub by_hardware_isl_osl: BTreeMap<String, BTreeMap<String, BTreeMap<&'static str, ErrorStats>>>,
    /// Every modelled row.
    pub rows: Vec<RowResult>,
    /// Rows not modelled, counted by reason.
    pub skipped: BTreeMap<String, usize>,
}

/// Predicts every modelable row of `rows` (with `calibration` instead of the presets' when
/// given) and aggregates the errors.
pub fn validate(rows: &[RealRow], calibration: Option<&Calibration>) -> Validation {
    let mut out = Validation {
        fit: FIT_HARDWARE.iter().map(|s| s.to_string()).collect(),
        by_hardware: BTreeMap::new(),
        by_hardware_isl_osl: BTreeMap::new(),
        rows: Vec::new(),
        skipped: BTreeMap::new(),
    };
    let mut errs: BTreeMap<(String, String, Metric), Vec<f64>> = BTreeMap::new();
    let mut todo: Vec<&RealRow> = Vec::new();
    for row in rows {
        match modelable(row) {
            Ok(()) => todo.push(row),
            Err(why) => *out.skipped.entry(why).or_default() += 1,
        }
    }
    // rows are independent: spread them over the cores (each prediction is deterministic,
    // so the result does not depend on the split)
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16);
    let per = todo.len().div_ceil(threads).max(1);
    let preds: Vec<Result<Prediction, String>> = std::thread::scope(|sc| {
        let hs: Vec<_> = todo
            .chunks(per)
            .map(|c| {
                sc.spawn(move || {
                    c.iter()
                        .map(|r| predict(r, calibration))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().expect("a prediction thread panicked"))
            .collect()
    });
    for (row, pred) in todo.into_iter().zip(preds) {
        let pred = match pred {
            Ok(p) => p,
            Err(why) => {
                *out.skipped.entry(why).or_default() += 1;
                continue;
            }
        };
        let isl_osl = format!("{}/{}", row.isl, row.osl);
        let mut error_pct = BTreeMap::new();
        for m in Metric::ALL {
            if let Some(v) = measured(row, m) {
                let e = (pred.get(m) / v - 1.0) * 100.0;
                error_pct.insert(m.key(), e);
                errs.entry((row.hardware.clone(), isl_osl.clone(), m))
                    .or_default()
                    .push(e);
            }
        }
        out.rows.push(RowResult {
            row_id: row.row_id.clone(),
            hardware: row.hardware.clone(),
            framework: row.framework.clone(),
            precision: row.precision.clone(),
            tp: row.tp,
            ep: row.ep,
            dp_attention: row.dp_attention,
            isl_osl,
            conc: row.conc,
            predicted: pred,
            measured: Prediction {
                output_tput_per_gpu: measured(row, Metric::OutputTputPerGpu).unwrap_or(f64::NAN),
                median_tpot_s: measured(row, Metric::MedianTpot).unwrap_or(f64::NAN),
                median_ttft_s: measured(row, Metric::MedianTtft).unwrap_or(f64::NAN),
            },
            error_pct,
        });
    }
    let mut per_hw: BTreeMap<(String, Metric), Vec<f64>> = BTreeMap::new();
    for ((hw, seq, m), e) in &errs {
        per_hw
            .entry((hw.clone(), *m))
            .or_default()
            .extend(e.iter().copied());
        out.by_hardware_isl_osl
            .entry(hw.clone())
            .or_default()
            .entry(seq.clone())
            .or_default()
            .insert(m.key(), stats(e));
    }
    for ((hw, m), e) in per_hw {
        out.by_hardware
            .entry(hw)
            .or_default()
            .insert(m.key(), stats(&e));
    }
    out
}

/// The fit objective: mean over metrics of the median |error| on `rows` (lower is better).
fn objective(v: &Validation) -> f64 {
    let mut per_m: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &v.rows {
        for (k, e) in &r.error_pct {
            per_m.entry(k).or_default().push(e.abs());
        }
    }
    let meds: Vec<f64> = per_m.into_values().map(median_of).collect();
    if meds.is_empty() {
        f64::INFINITY
    } else {
        meds.iter().sum::<f64>() / meds.len() as f64
    }
}

/// Fits the efficiency factors of the DeepSeek-R1 presets by coordinate descent over fixed
/// grids, on the rows of [`FIT_HARDWARE`] only (the others are never looked at). Returns the
/// calibration and its objective (mean of the three metrics' median |error|, percent).
pub fn fit(rows: &[RealRow]) -> (Calibration, f64) {
    let train: Vec<RealRow> = rows
        .iter()
        .filter(|r| FIT_HARDWARE.contains(&r.hardware.as_str()) && modelable(r).is_ok())
        .cloned()
        .collect();
    let base = Presets::embedded()
        .model("deepseek-r1-fp8")
        .ok()
        .and_then(|(_, m)| m.calibration.clone())
        .unwrap_or_default();
    let e = &Presets::embedded().engine;
    let mut x = [
        base.mfu.unwrap_or(e.mfu),
        base.bandwidth_efficiency.unwrap_or(e.bandwidth_efficiency),
        base.step_overhead_ms.unwrap_or(e.step_overhead_ms),
        base.request_overhead_ms.unwrap_or(e.request_overhead_ms),
        base.per_seq_overhead_us.unwrap_or(e.per_seq_overhead_us),
        base.prefill_step_overhead_ms
            .unwrap_or(e.prefill_step_overhead_ms),
    ];
    let grids: [&[f64]; 6] = [
        &[0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        &[0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9],
        &[1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0, 12.0],
        &[0.0, 5.0, 10.0, 25.0, 50.0, 100.0],
        &[0.0, 5.0, 20.0, 50.0],
        &[0.0, 10.0, 20.0, 40.0, 60.0, 80.0, 120.0],
    ];
    let cal = |x: &[f64; 6]| {
        Calibration {
        mfu: Some(x[0]),
        bandwidth_efficiency: Some(x[1]),
        link_efficiency: base.link_efficiency,
        step_overhead_ms: Some(x[2]),
        request_overhead_ms: Some(x[3]),
        per_seq_overhead_us: Some(x[4]),
        prefill_step_overhead_ms: Some(x[5]),
        fit: format!(
            "coordinate descent on the {} modelable rows of {} (rows.csv), objective: mean of the median |error| of output tok/s/GPU, median TPOT and median TTFT",
            train.len(),
            FIT_HARDWARE.join(", ")
        ),
    }
    };
    let mut best = objective(&validate(&train, Some(&cal(&x))));
    for _pass in 0..2 {
        for (i, grid) in grids.iter().enumerate() {
            for &g in grid.iter() {
                let mut y = x;
                y[i] = g;
                let o = objective(&validate(&train, Some(&cal(&y))));
                if o < best {
                    best = o;
                    x = y;
                }
            }
        }
    }
    (cal(&x), best)
}

/// The validation as a text table: per hardware × ISL/OSL × metric n, median and p90
/// |error|, median signed error, whether the hardware was fitted on, and the target.
pub fn table(v: &Validation) -> String {
    let mut s = format!(
        "{:<8} {:<5} {:<10} {:<20} {:>4} {:>9} {:>9} {:>9} {:>7}\n",
        "hardware", "set", "ISL/OSL", "metric", "n", "med|err|%", "p90|err|%", "med err%", "target"
    );
    for (hw, seqs) in &v.by_hardware_isl_osl {
        let set = if v.fit.contains(hw) { "fit" } else { "test" };
        let mut all: Vec<(String, &BTreeMap<&'static str, ErrorStats>)> =
            seqs.iter().map(|(k, m)| (k.clone(), m)).collect();
        if let Some(m) = v.by_hardware.get(hw) {
            all.push(("all".into(), m));
        }
        for (seq, ms) in all {
            for (m, target) in TARGETS_PCT {
                if let Some(st) = ms.get(m.key()) {
                    s.push_str(&format!(
                        "{:<8} {:<5} {:<10} {:<20} {:>4} {:>9.1} {:>9.1} {:>+9.1} {:>6.0}%\n",
                        hw,
                        set,
                        seq,
                        m.key(),
                        st.n,
                        st.median_abs_pct_error,
                        st.p90_abs_pct_error,
                        st.median_pct_error,
                        target
                    ));
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rows.csv with the 18 columns read_rows needs, `body` appended after the header.
    fn rows_file(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rows.csv");
        let header = "row_id,source_id,scenario,hardware,model_prefix,precision,framework,\
spec_decoding,disagg,tp,ep,dp_attention,isl,osl,conc,output_tput_per_gpu,median_tpot_s,median_ttft_s\n";
        std::fs::write(&p, format!("{header}{body}")).unwrap();
        (d, p)
    }

    const GOOD: &str =
        "1,S1,fixed_seq,h200,dsr1,fp8,sglang,none,false,8,1,false,1024,1024,4,40.5,0.012,0.13\n";

    #[test]
    fn rows_csv_quotes_and_multiline_fields_are_read() {
        let quoted = "2,\"S1, \"\"api\"\"\nsecond line\",fixed_seq,h200,dsr1,fp8,sglang,none,false,8,1,false,1024,1024,4,40.5,0.012,0.13\n";
        let (_d, p) = rows_file(&format!("{GOOD}{quoted}{GOOD}"));
        let rows = read_rows(&p).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].source_id, "S1, \"api\"\nsecond line");
        assert_eq!((rows[2].tp, rows[2].conc), (8, 4));
        assert_eq!(rows[0].median_tpot_s, Some(0.012));
    }

    #[test]
    fn a_broken_rows_csv_line_is_an_error_naming_file_line_and_column() {
        let cases = [
            (
                "999,S1,broken,row\n",
                "rows.csv:3: 4 fields, the header has 18",
            ),
            (
                &GOOD.replace(",40.5,", ",nan,"),
                "rows.csv:3: column `output_tput_per_gpu`: not a positive finite number: `nan`",
            ),
            (
                &GOOD.replace(",0.012,", ",-0.01,"),
                "rows.csv:3: column `median_tpot_s`: not a positive finite number: `-0.01`",
            ),
            (
                &GOOD.replace(",8,1,", ",0,1,"),
                "rows.csv:3: column `tp`: not a count of at least 1: `0`",
            ),
            (
                &GOOD.replace(",8,1,", ",8.5,1,"),
                "rows.csv:3: column `tp`: not a count: `8.5`",
            ),
            (
                &GOOD.replace(",40.5,", ",abc,"),
                "rows.csv:3: column `output_tput_per_gpu`: not a number: `abc`",
            ),
        ];
        // CRLF line ends (rows.csv's own) count one line each
        let crlf = format!("{}{}", GOOD.replace('\n', "\r\n"), "999,S1,broken,row\r\n");
        let (_d, p) = rows_file(&crlf);
        let e = read_rows(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("rows.csv:3: 4 fields, the header has 18"),
            "{e}"
        );
        for (bad, want) in cases {
            let (_d, p) = rows_file(&format!("{GOOD}{bad}"));
            let e = read_rows(&p).unwrap_err().to_string();
            assert!(e.ends_with(want), "{bad:?}: got {e:?}, want …{want:?}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn the_recv_interval_follows_the_recipes() {
        let row = |hw: &str, fw: &str, prec: &str, tp: u32, conc: u32, dpa: bool| RealRow {
            row_id: String::new(),
            source_id: String::new(),
            scenario: "fixed_seq".into(),
            hardware: hw.into(),
            model_prefix: "dsr1".into(),
            precision: prec.into(),
            framework: fw.into(),
            spec_decoding: "none".into(),
            disagg: false,
            tp,
            ep: 1,
            dp_attention: dpa,
            isl: 1024,
            osl: 1024,
            conc,
            output_tput_per_gpu: None,
            median_tpot_s: None,
            median_ttft_s: None,
        };
        let r =
            |hw, fw, prec, tp, conc, dpa| recipe_recv_interval(&row(hw, fw, prec, tp, conc, dpa));
        assert_eq!(r("b200", "sglang", "fp8", 8, 4, false), 10);
        assert_eq!(r("b200", "sglang", "fp8", 8, 64, false), 30);
        assert_eq!(r("b200", "sglang", "fp8", 4, 64, false), 10);
        assert_eq!(r("b300", "sglang", "fp4", 4, 16, false), 30);
        assert_eq!(r("b200", "sglang", "fp4", 8, 64, true), 1);
        assert_eq!(r("b200", "trt", "fp8", 8, 64, false), 1);
        assert_eq!(r("h200", "sglang", "fp8", 8, 64, false), 1);
        assert_eq!(r("mi355x", "sglang", "fp4", 8, 64, false), 1);
    }

    #[test]
    fn lengths_are_drawn_as_inferencex_draws_them() {
        let l = sampled_lengths(1024, 8192, 4000);
        assert_eq!(l, sampled_lengths(1024, 8192, 4000), "deterministic");
        assert!(l
            .iter()
            .all(|&(i, o)| (819..=1024).contains(&i) && (6553..=8192).contains(&o)));
        let mean = l.iter().map(|x| x.0 as f64).sum::<f64>() / l.len() as f64;
        assert!((mean - 921.5).abs() < 5.0, "{mean}");
        assert!(l.iter().any(|x| x.0 == 819) && l.iter().any(|x| x.0 == 1024));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(v.clone(), 90.0), 9.0);
        assert_eq!(median_of(v), 5.5);
    }
}
