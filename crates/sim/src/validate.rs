//! Predicted beside measured: the simulator's presets held against real published results
//! (`../shared/data/real-results/rows.csv`, built by its `normalize.py`; issue 22).
//!
//! Each row the presets can model (InferenceX fixed-sequence, single-node aggregated serving,
//! no speculative decoding, a model and GPU with presets) is run through the same engine the
//! HTTP server plays back — [`crate::closed_loop::simulate_closed_loop`], the continuous-batching
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

use crate::closed_loop::{simulate_closed_loop_with, Workload};
use crate::model::{EngineConfig, Parallelism};
use crate::presets::{Calibration, Presets};

/// Suffix of the hardware key of disaggregated rows' groups (`gb200-disagg`).
pub const DISAGG_SUFFIX: &str = "-disagg";

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
    /// `date` of the run, `YYYY-MM-DD` (empty: not recorded; also empty when the file has no
    /// `date` column). Its month stands for the software generation ([`by_generation`]).
    pub date: String,
    /// `image`: the engine's container image (e.g. `lmsysorg/sglang:v0.5.9-rocm700-mi30x`);
    /// empty where the source does not record it or the file has no `image` column.
    pub image: String,
    /// A disaggregated row's prefill/decode shape (`None`: the file has no such columns).
    pub shape: Option<crate::validate_disagg::DisaggShape>,
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
    // optional columns (a file without them reads as "not recorded")
    let date_col = header.iter().position(|h| h == "date");
    let image_col = header.iter().position(|h| h == "image");
    let shape_cols: Option<Vec<usize>> = crate::validate_disagg::SHAPE_COLUMNS
        .iter()
        .map(|n| header.iter().position(|h| h == n))
        .collect();
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
        let opt = |c: Option<usize>| c.and_then(|c| r.get(c)).map_or("", |v| v.trim());
        let date = opt(date_col);
        if !date.is_empty() && !is_iso_date(date) {
            return Err(ValidateError::Parse {
                path: p.clone(),
                line,
                message: format!("column `date`: not a YYYY-MM-DD date: `{date}`"),
            });
        }
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
            date: date.to_string(),
            image: opt(image_col).to_string(),
            shape: match &shape_cols {
                Some(cols) => {
                    let mut v = [0u32; 8];
                    for (k, c) in cols.iter().enumerate() {
                        let x = opt(Some(*c));
                        v[k] = if x.is_empty() {
                            0
                        } else {
                            x.parse().map_err(|_| ValidateError::Parse {
                                path: p.clone(),
                                line,
                                message: format!(
                                    "column `{}`: not a count: `{x}`",
                                    crate::validate_disagg::SHAPE_COLUMNS[k]
                                ),
                            })?
                        };
                    }
                    Some(crate::validate_disagg::DisaggShape::from_values(v))
                }
                None => None,
            },
        });
    }
    Ok(rows)
}

/// Whether `s` is a calendar date written `YYYY-MM-DD` (digits in those places, month 01–12,
/// day within the month: 2026-02-29 and 2026-04-31 are refused, 2024-02-29 is not; year ≥ 1).
fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) {
        return false;
    }
    if !digits(5..7) || !digits(8..10) {
        return false;
    }
    let year: u32 = s[0..4].parse().unwrap_or(0);
    let month: u32 = s[5..7].parse().unwrap_or(0);
    let day: u32 = s[8..10].parse().unwrap_or(0);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year >= 1 && (1..=days).contains(&day)
}

/// The month (`YYYY-MM`) of a row's `date`, or [`UNKNOWN_MONTH`] where no date is recorded.
pub fn month_of(date: &str) -> &str {
    if date.len() >= 7 {
        &date[..7]
    } else {
        UNKNOWN_MONTH
    }
}

/// The month key of rows without a `date`.
pub const UNKNOWN_MONTH: &str = "unknown";

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
        crate::validate_disagg::check_shape(row)?;
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

pub(crate) fn median_of(mut v: Vec<f64>) -> f64 {
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
    if row.disagg {
        return crate::validate_disagg::predict(row, calibration);
    }
    let s = simulate_row(row, calibration)?;
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

/// The closed-loop run of a row's point that [`predict`] summarises (the same engine, presets,
/// lengths and front-end latency); its [`crate::closed_loop::SimSummary::energy_j`] is the modelled
/// energy `crate::validate_energy` compares.
///
/// Errors: as [`predict`]; a disaggregated row (one engine cannot stand for its
/// prefill/decode fleet, which [`crate::validate_disagg`] runs and which models no energy).
pub fn simulate_row(
    row: &RealRow,
    calibration: Option<&Calibration>,
) -> Result<crate::closed_loop::SimSummary, String> {
    if row.disagg {
        return Err("prefill/decode disaggregation (one engine does not model its fleet; the fleet models no energy)".into());
    }
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
    Ok(s)
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
    /// Date of the run, `YYYY-MM-DD` (empty: not recorded).
    pub date: String,
    /// Container image of the engine (`None`: not recorded).
    pub image: Option<String>,
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

pub(crate) fn stats(errs: &[f64]) -> ErrorStats {
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
    /// Per hardware, per software generation (month of the row's date × framework × image),
    /// oldest month first ([`by_generation`]).
    pub by_hardware_month: BTreeMap<String, Vec<GenerationErrors>>,
    /// Per hardware, the errors on its newest month's rows only ([`newest_month`]).
    pub newest_month: BTreeMap<String, MonthErrors>,
    /// Every modelled row.
    pub rows: Vec<RowResult>,
    /// Rows not modelled, counted by reason.
    pub skipped: BTreeMap<String, usize>,
}

/// The errors of one software generation of one GPU: the modelled rows measured in one month
/// (of rows.csv's `date`) with one framework and one container image (`image`, where the
/// source records it). The datasheet model knows nothing of software versions, so the same
/// GPU and recipe measured on another image is another population; this is how the
/// validation shows it (docs/simulator.md, "Where the targets are missed").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerationErrors {
    /// `YYYY-MM`, or [`UNKNOWN_MONTH`] for rows without a date.
    pub month: String,
    /// Framework (`sglang`, `trt`, `atom`, …).
    pub framework: String,
    /// Container image (`None`: not recorded for these rows).
    pub image: Option<String>,
    /// Modelled rows in the group (a metric's `n` can be smaller where a row lacks it).
    pub n_rows: usize,
    /// Per metric key ([`Metric::key`]): n, median / p90 |error| and median signed error, %.
    pub errors: BTreeMap<&'static str, ErrorStats>,
}

/// The errors of one GPU's rows of one month (all frameworks and images of that month).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonthErrors {
    /// `YYYY-MM` (the newest month with a date; [`UNKNOWN_MONTH`] only when no row has one).
    pub month: String,
    /// Modelled rows of the month.
    pub n_rows: usize,
    /// Per metric key: n, median / p90 |error| and median signed error, %.
    pub errors: BTreeMap<&'static str, ErrorStats>,
}

/// Per-metric error statistics of `rows` (metrics a row lacks are left out of that metric).
fn errors_of<'a>(
    rows: impl IntoIterator<Item = &'a RowResult>,
) -> (usize, BTreeMap<&'static str, ErrorStats>) {
    let mut n = 0;
    let mut per: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for r in rows {
        n += 1;
        for m in Metric::ALL {
            if let Some(e) = r.error_pct.get(m.key()) {
                per.entry(m.key()).or_default().push(*e);
            }
        }
    }
    (n, per.into_iter().map(|(k, e)| (k, stats(&e))).collect())
}

/// Groups modelled rows by hardware and software generation — month of the date
/// ([`month_of`]) × framework × image — and gives each group's error statistics. Per hardware
/// the groups are ordered by month, then framework, then image (no image first).
pub fn by_generation(rows: &[RowResult]) -> BTreeMap<String, Vec<GenerationErrors>> {
    let mut groups: BTreeMap<(&str, &str, &str, Option<&str>), Vec<&RowResult>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((
                r.hardware.as_str(),
                month_of(&r.date),
                r.framework.as_str(),
                r.image.as_deref(),
            ))
            .or_default()
            .push(r);
    }
    let mut out: BTreeMap<String, Vec<GenerationErrors>> = BTreeMap::new();
    for ((hw, month, framework, image), rs) in groups {
        let (n_rows, errors) = errors_of(rs);
        out.entry(hw.to_string())
            .or_default()
            .push(GenerationErrors {
                month: month.to_string(),
                framework: framework.to_string(),
                image: image.map(str::to_string),
                n_rows,
                errors,
            });
    }
    out
}

/// Per hardware, the error statistics of its rows from the newest month that has a date
/// (rows without a date count only where no row of that hardware has one): the model against
/// the software each GPU runs now rather than the mix of a year of releases.
pub fn newest_month(rows: &[RowResult]) -> BTreeMap<String, MonthErrors> {
    let mut newest: BTreeMap<&str, &str> = BTreeMap::new();
    for r in rows {
        let m = month_of(&r.date);
        let e = newest.entry(r.hardware.as_str()).or_insert(m);
        if *e == UNKNOWN_MONTH || (m != UNKNOWN_MONTH && m > *e) {
            *e = m;
        }
    }
    newest
        .into_iter()
        .map(|(hw, month)| {
            let (n_rows, errors) = errors_of(
                rows.iter()
                    .filter(|r| r.hardware == hw && month_of(&r.date) == month),
            );
            let m = MonthErrors {
                month: month.to_string(),
                n_rows,
                errors,
            };
            (hw.to_string(), m)
        })
        .collect()
}

/// Predicts every modelable row of `rows` (with `calibration` instead of the presets' when
/// given) and aggregates the errors.
pub fn validate(rows: &[RealRow], calibration: Option<&Calibration>) -> Validation {
    let mut out = Validation {
        fit: FIT_HARDWARE.iter().map(|s| s.to_string()).collect(),
        by_hardware: BTreeMap::new(),
        by_hardware_isl_osl: BTreeMap::new(),
        by_hardware_month: BTreeMap::new(),
        newest_month: BTreeMap::new(),
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
        // disaggregated rows form their own groups (`gb200-disagg`): the single-node groups
        // keep their rows
        let hardware = if row.disagg {
            format!("{}{DISAGG_SUFFIX}", row.hardware)
        } else {
            row.hardware.clone()
        };
        let mut error_pct = BTreeMap::new();
        for m in Metric::ALL {
            if let Some(v) = measured(row, m) {
                let e = (pred.get(m) / v - 1.0) * 100.0;
                error_pct.insert(m.key(), e);
                errs.entry((hardware.clone(), isl_osl.clone(), m))
                    .or_default()
                    .push(e);
            }
        }
        out.rows.push(RowResult {
            row_id: row.row_id.clone(),
            hardware,
            framework: row.framework.clone(),
            precision: row.precision.clone(),
            tp: row.tp,
            ep: row.ep,
            dp_attention: row.dp_attention,
            isl_osl,
            conc: row.conc,
            date: row.date.clone(),
            image: (!row.image.is_empty()).then(|| row.image.clone()),
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
    out.by_hardware_month = by_generation(&out.rows);
    out.newest_month = newest_month(&out.rows);
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
/// calibration and its objective (mean of the three metrics' median |error|, percent). Starts
/// from the DeepSeek-R1 presets' calibration; two passes, or one when it moves nothing (the
/// committed calibration is then its own fit: `tests/validate.rs` checks that it is).
pub fn fit(rows: &[RealRow]) -> (Calibration, f64) {
    let train: Vec<RealRow> = rows
        .iter()
        .filter(|r| {
            FIT_HARDWARE.contains(&r.hardware.as_str()) && !r.disagg && modelable(r).is_ok()
        })
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
        let start = x;
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
        // a pass that moved nothing: the next one would evaluate the same points again (the
        // validation is deterministic), so the result is final
        if x == start {
            break;
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

/// `median |error|` and median signed error of `m` in `errors` as two columns (`-` where the
/// group has no value for `m`).
fn two_cols(errors: &BTreeMap<&'static str, ErrorStats>, m: Metric) -> String {
    match errors.get(m.key()) {
        Some(st) => format!(
            "{:>9.1} {:>+8.1}",
            st.median_abs_pct_error, st.median_pct_error
        ),
        None => format!("{:>9} {:>8}", "-", "-"),
    }
}

/// The software-generation breakdown as a text table ([`Validation::by_hardware_month`]): per
/// hardware × month × framework × image the rows, and per metric the median |error| and the
/// median signed error, percent (`image` last, `-` where not recorded).
pub fn generation_table(v: &Validation) -> String {
    let mut s = format!(
        "{:<8} {:<7} {:<6} {:>4} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8}  image\n",
        "hardware",
        "month",
        "fw",
        "n",
        "tput|e|%",
        "tput e%",
        "TPOT|e|%",
        "TPOT e%",
        "TTFT|e|%",
        "TTFT e%"
    );
    for (hw, groups) in &v.by_hardware_month {
        for g in groups {
            s.push_str(&format!(
                "{:<8} {:<7} {:<6} {:>4} {} {} {}  {}\n",
                hw,
                g.month,
                g.framework,
                g.n_rows,
                two_cols(&g.errors, Metric::OutputTputPerGpu),
                two_cols(&g.errors, Metric::MedianTpot),
                two_cols(&g.errors, Metric::MedianTtft),
                g.image.as_deref().unwrap_or("-")
            ));
        }
    }
    s
}

/// Per hardware, the median |error| on its newest month only beside all months, percent
/// ([`Validation::newest_month`], [`Validation::by_hardware`]); one line per hardware.
pub fn newest_month_table(v: &Validation) -> String {
    let mut s = format!(
        "{:<8} {:<5} {:<7} {:>4} {:>15} {:>15} {:>15}\n",
        "hardware", "set", "newest", "n", "tput |e|% (all)", "TPOT |e|% (all)", "TTFT |e|% (all)"
    );
    let cell =
        |newest: &MonthErrors, all: Option<&BTreeMap<&'static str, ErrorStats>>, m: Metric| {
            let med = |e: Option<&ErrorStats>| {
                e.map_or("-".to_string(), |st| {
                    format!("{:.1}", st.median_abs_pct_error)
                })
            };
            format!(
                "{:>15}",
                format!(
                    "{} ({})",
                    med(newest.errors.get(m.key())),
                    med(all.and_then(|a| a.get(m.key())))
                )
            )
        };
    for (hw, nm) in &v.newest_month {
        let set = if v.fit.contains(hw) { "fit" } else { "test" };
        let all = v.by_hardware.get(hw);
        s.push_str(&format!(
            "{:<8} {:<5} {:<7} {:>4} {} {} {}\n",
            hw,
            set,
            nm.month,
            nm.n_rows,
            cell(nm, all, Metric::OutputTputPerGpu),
            cell(nm, all, Metric::MedianTpot),
            cell(nm, all, Metric::MedianTtft)
        ));
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
            date: String::new(),
            image: String::new(),
            shape: None,
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

    /// A modelled row with the given signed errors (tput, TPOT, TTFT; `None`: not measured).
    fn result(
        hw: &str,
        date: &str,
        fw: &str,
        image: Option<&str>,
        e: [Option<f64>; 3],
    ) -> RowResult {
        let nan = Prediction {
            output_tput_per_gpu: f64::NAN,
            median_tpot_s: f64::NAN,
            median_ttft_s: f64::NAN,
        };
        RowResult {
            row_id: String::new(),
            hardware: hw.into(),
            framework: fw.into(),
            precision: "fp8".into(),
            tp: 8,
            ep: 1,
            dp_attention: false,
            isl_osl: "1024/1024".into(),
            conc: 4,
            date: date.into(),
            image: image.map(str::to_string),
            predicted: nan,
            measured: nan,
            error_pct: Metric::ALL
                .iter()
                .zip(e)
                .filter_map(|(m, e)| Some((m.key(), e?)))
                .collect(),
        }
    }

    #[test]
    fn the_generation_breakdown_groups_by_month_framework_and_image() {
        let img = Some("lmsysorg/sglang:v0.5.9-rocm700-mi30x");
        let rows = [
            result(
                "mi300x",
                "2025-12-10",
                "sglang",
                None,
                [Some(10.0), Some(-30.0), Some(5.0)],
            ),
            result(
                "mi300x",
                "2025-12-31",
                "sglang",
                None,
                [Some(-30.0), Some(20.0), None],
            ),
            result(
                "mi300x",
                "2025-12-15",
                "sglang",
                None,
                [Some(50.0), Some(-10.0), Some(-7.0)],
            ),
            result(
                "mi300x",
                "2026-02-12",
                "sglang",
                None,
                [Some(90.0), Some(-45.0), Some(1.0)],
            ),
            result(
                "mi300x",
                "2026-02-27",
                "sglang",
                img,
                [Some(80.0), Some(-40.0), Some(2.0)],
            ),
            result(
                "mi300x",
                "2026-02-27",
                "sglang",
                img,
                [Some(-60.0), Some(44.0), Some(4.0)],
            ),
            result(
                "mi300x",
                "",
                "sglang",
                None,
                [Some(1.0), Some(1.0), Some(1.0)],
            ),
            result(
                "h200",
                "2026-05-17",
                "trt",
                None,
                [Some(3.0), Some(4.0), Some(5.0)],
            ),
            result(
                "h200",
                "2026-05-01",
                "sglang",
                None,
                [Some(-6.0), Some(2.0), Some(9.0)],
            ),
            result(
                "h200",
                "2026-03-25",
                "sglang",
                None,
                [Some(100.0), Some(100.0), Some(100.0)],
            ),
        ];
        let g = by_generation(&rows);
        let keys: Vec<(&str, &str, Option<&str>, usize)> = g["mi300x"]
            .iter()
            .map(|x| {
                (
                    x.month.as_str(),
                    x.framework.as_str(),
                    x.image.as_deref(),
                    x.n_rows,
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                ("2025-12", "sglang", None, 3),
                ("2026-02", "sglang", None, 1),
                ("2026-02", "sglang", img, 2),
                (UNKNOWN_MONTH, "sglang", None, 1),
            ]
        );
        let dec = &g["mi300x"][0].errors;
        // tput |e| 10, 30, 50 → 30; signed 10, −30, 50 → 10
        assert_eq!(dec["output_tput_per_gpu"].median_abs_pct_error, 30.0);
        assert_eq!(dec["output_tput_per_gpu"].median_pct_error, 10.0);
        // TPOT |e| 30, 20, 10 → 20; signed −30, 20, −10 → −10
        assert_eq!(dec["median_tpot"].median_abs_pct_error, 20.0);
        assert_eq!(dec["median_tpot"].median_pct_error, -10.0);
        // TTFT measured on 2 of the 3 rows: |e| 5, 7 → 6
        assert_eq!(
            (
                dec["median_ttft"].n,
                dec["median_ttft"].median_abs_pct_error
            ),
            (2, 6.0)
        );
        let feb_img = &g["mi300x"][2].errors;
        assert_eq!(feb_img["output_tput_per_gpu"].median_abs_pct_error, 70.0);
        assert_eq!(feb_img["output_tput_per_gpu"].median_pct_error, 10.0);
        assert_eq!(g["h200"].len(), 3, "{:?}", g["h200"]);

        let newest = newest_month(&rows);
        // mi300x: February is its newest dated month (the undated row is not newer)
        let n = &newest["mi300x"];
        assert_eq!((n.month.as_str(), n.n_rows), ("2026-02", 3));
        // tput |e| 90, 80, 60 → 80; TPOT |e| 45, 40, 44 → 44
        assert_eq!(n.errors["output_tput_per_gpu"].median_abs_pct_error, 80.0);
        assert_eq!(n.errors["median_tpot"].median_abs_pct_error, 44.0);
        // h200: May across both frameworks: tput |e| 3, 6 → 4.5
        let n = &newest["h200"];
        assert_eq!((n.month.as_str(), n.n_rows), ("2026-05", 2));
        assert_eq!(n.errors["output_tput_per_gpu"].median_abs_pct_error, 4.5);
        // a hardware with undated rows only keeps them as its newest
        let only = newest_month(&rows[6..7]);
        assert_eq!(
            (only["mi300x"].month.as_str(), only["mi300x"].n_rows),
            (UNKNOWN_MONTH, 1)
        );
    }

    #[test]
    fn validate_fills_the_breakdown_from_the_rows_date_and_image() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rows.csv");
        let header = "row_id,source_id,scenario,hardware,model_prefix,precision,framework,\
spec_decoding,disagg,tp,ep,dp_attention,isl,osl,conc,output_tput_per_gpu,median_tpot_s,median_ttft_s,date,image\n";
        let row = |id: u32, hw: &str, tpot: &str, date: &str, image: &str| {
            format!("{id},S1,fixed_seq,{hw},dsr1,fp8,sglang,none,false,8,1,false,1024,1024,4,30,{tpot},0.15,{date},{image}\n")
        };
        let body = [
            row(1, "mi300x", "0.0213", "2025-12-10", ""),
            row(2, "mi300x", "0.0266", "2026-01-05", ""),
            row(
                3,
                "mi300x",
                "0.0244",
                "2026-02-27",
                "lmsysorg/sglang:v0.5.9-rocm700-mi30x",
            ),
            row(
                4,
                "mi300x",
                "0.0146",
                "2026-05-18",
                "lmsysorg/sglang:v0.5.12-rocm700-mi30x",
            ),
            row(
                5,
                "mi300x",
                "0.0150",
                "2026-05-19",
                "lmsysorg/sglang:v0.5.12-rocm700-mi30x",
            ),
            row(6, "h200", "0.0117", "2025-12-10", ""),
        ]
        .concat();
        std::fs::write(&p, format!("{header}{body}")).unwrap();
        let rows = read_rows(&p).unwrap();
        assert_eq!(
            (rows[3].date.as_str(), rows[3].image.as_str()),
            ("2026-05-18", "lmsysorg/sglang:v0.5.12-rocm700-mi30x")
        );
        let v = validate(&rows, None);
        assert_eq!(v.rows.len(), 6);
        let months: Vec<(&str, usize)> = v.by_hardware_month["mi300x"]
            .iter()
            .map(|g| (g.month.as_str(), g.n_rows))
            .collect();
        assert_eq!(
            months,
            [
                ("2025-12", 1),
                ("2026-01", 1),
                ("2026-02", 1),
                ("2026-05", 2)
            ]
        );
        // the same recipe and GPU: one prediction, so each month's TPOT error is that of its
        // measurement, and the May group's median is the mean of its two rows' errors
        let pred = v.rows[0].predicted.median_tpot_s;
        let e = |meas: f64| (pred / meas - 1.0) * 100.0;
        let may = &v.by_hardware_month["mi300x"][3].errors["median_tpot"];
        assert!(
            (may.median_pct_error - (e(0.0146) + e(0.0150)) / 2.0).abs() < 1e-9,
            "{may:?}"
        );
        let dec = &v.by_hardware_month["mi300x"][0].errors["median_tpot"];
        assert!(
            (dec.median_abs_pct_error - e(0.0213).abs()).abs() < 1e-9,
            "{dec:?}"
        );
        assert_eq!(v.newest_month["mi300x"].month, "2026-05");
        assert_eq!(v.newest_month["mi300x"].n_rows, 2);
        assert_eq!(v.newest_month["h200"].month, "2025-12");
        let t = generation_table(&v);
        assert_eq!(t.lines().count(), 1 + 5, "{t}");
        assert!(
            t.lines()
                .any(|l| l.starts_with("mi300x   2026-05 sglang    2 ")
                    && l.ends_with("lmsysorg/sglang:v0.5.12-rocm700-mi30x")),
            "{t}"
        );
        let n = newest_month_table(&v);
        assert!(
            n.lines()
                .any(|l| l.starts_with("mi300x   test  2026-05    2 ")),
            "{n}"
        );
        // a file without date/image columns reads as "not recorded"
        let (_d, p) = rows_file(GOOD);
        let r = read_rows(&p).unwrap();
        assert_eq!((r[0].date.as_str(), r[0].image.as_str()), ("", ""));
    }

    #[test]
    fn calendar_dates_only() {
        for ok in ["2024-02-29", "2000-02-29", "2026-12-31", "2026-04-30"] {
            assert!(is_iso_date(ok), "{ok}");
        }
        for bad in [
            "1900-02-29",
            "2026-02-29",
            "2026-06-31",
            "2026-00-10",
            "2026-01-00",
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
    }

    #[test]
    fn a_malformed_date_is_an_error_naming_file_line_and_column() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rows.csv");
        let header = "row_id,source_id,scenario,hardware,model_prefix,precision,framework,\
spec_decoding,disagg,tp,ep,dp_attention,isl,osl,conc,output_tput_per_gpu,median_tpot_s,median_ttft_s,date\n";
        let good = GOOD.replace('\n', ",2026-02-27\n");
        for bad in [
            "2026-2-27",
            "27.02.2026",
            "2026-13-01",
            "2026-02-29",
            "2026-04-31",
            "0000-01-01",
        ] {
            let body = format!("{good}{}", GOOD.replace('\n', &format!(",{bad}\n")));
            std::fs::write(&p, format!("{header}{body}")).unwrap();
            let e = read_rows(&p).unwrap_err().to_string();
            assert!(
                e.ends_with(&format!(
                    "rows.csv:3: column `date`: not a YYYY-MM-DD date: `{bad}`"
                )),
                "{e}"
            );
        }
        std::fs::write(&p, format!("{header}{good}")).unwrap();
        assert_eq!(read_rows(&p).unwrap()[0].date, "2026-02-27");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(v.clone(), 90.0), 9.0);
        assert_eq!(median_of(v), 5.5);
    }
}
