//! When a log line was written: the timestamp formats of the logs a multi-node job leaves, so
//! that first errors on different nodes can be put in order ([`crate::multinode`]).
//!
//! Formats read (at the start of the line unless said):
//! * ISO 8601 `2026-09-21T01:15:04.933Z` (GitHub Actions, Dynamo's Rust `tracing` logs) and
//!   `2026-09-21 01:15:07[,.]mmm` (Python `logging`, srt-slurm), also inside a leading `[`
//!   (SGLang `[2026-09-21 01:15:07 TP0]`);
//! * UCX's `[1784273406.684686] [host:pid:thread]` (seconds since the epoch);
//! * slurmstepd's `… CANCELLED AT 2023-03-06T03:17:51 …` (anywhere in the line);
//! * without a year: vLLM's `ERROR 04-30 10:20:36 [core.py:396]` and glog's `E0717
//!   07:30:06.719633 …` (NIXL's C++ logging) take the year of the last full timestamp of the
//!   same log, and are not read before one.
//!
//! Times without a zone are taken as the nodes' common local time (a cluster's nodes share
//! one zone); offsets of ISO times are ignored like the CI timestamps elsewhere in triage.

use serde::{Deserialize, Serialize};

/// A time read from a log line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineTime {
    /// Seconds since the Unix epoch (UTC or the nodes' common local time).
    Full(f64),
    /// Month, day and seconds of the day, without a year (vLLM, glog).
    NoYear {
        /// 1–12.
        month: u32,
        /// 1–31.
        day: u32,
        /// Seconds since midnight, with fraction.
        secs: f64,
    },
}

/// When an error line was written, as far as its log says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorTime {
    /// Seconds since the Unix epoch ([`LineTime::Full`] resolved).
    pub secs: f64,
    /// The 1-based line the time was read from.
    pub line_no: u64,
    /// True when the error line itself carries the time; false when it is the last time
    /// written before it (the error is at or after it).
    pub exact: bool,
}

impl ErrorTime {
    /// `2026-09-21 01:15:07.250` (millisecond precision, no zone).
    pub fn text(&self) -> String {
        format_secs(self.secs)
    }
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let s = b.get(at..at + n)?;
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
}

/// Fraction after `at` when `b[at]` is `.` or `,`: (value, bytes used).
fn fraction(b: &[u8], at: usize) -> f64 {
    if !matches!(b.get(at), Some(b'.') | Some(b',')) {
        return 0.0;
    }
    let mut v = 0.0;
    let mut scale = 0.1;
    for d in b[at + 1..]
        .iter()
        .take_while(|d| d.is_ascii_digit())
        .take(9)
    {
        v += f64::from(d - b'0') * scale;
        scale /= 10.0;
    }
    v
}

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DD HH:MM:SS.mmm` of seconds since the epoch.
pub fn format_secs(secs: f64) -> String {
    let ms = (secs * 1000.0).round() as i64;
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let s = rem / 1000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        rem % 1000
    )
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.,frac]` at `at`.
fn iso_at(b: &[u8], at: usize) -> Option<f64> {
    let sep = |i: usize, c: u8| b.get(at + i) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && (sep(10, b'T') || sep(10, b' ')) && sep(13, b':'))
        || !sep(16, b':')
    {
        return None;
    }
    let (y, mo, d) = (
        digits(b, at, 4)?,
        digits(b, at + 5, 2)?,
        digits(b, at + 8, 2)?,
    );
    let (h, mi, s) = (
        digits(b, at + 11, 2)?,
        digits(b, at + 14, 2)?,
        digits(b, at + 17, 2)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    Some(secs as f64 + fraction(b, at + 19))
}

/// `HH:MM:SS[.frac]` at `at` → seconds of the day.
fn hms_at(b: &[u8], at: usize) -> Option<f64> {
    if b.get(at + 2) != Some(&b':') || b.get(at + 5) != Some(&b':') {
        return None;
    }
    let (h, m, s) = (
        digits(b, at, 2)?,
        digits(b, at + 3, 2)?,
        digits(b, at + 6, 2)?,
    );
    (h <= 23 && m <= 59 && s <= 60).then(|| (h * 3600 + m * 60 + s) as f64 + fraction(b, at + 8))
}

/// The time a line was written, when it says (see the module docs for the formats).
pub fn line_time(line: &str) -> Option<LineTime> {
    let b = line.as_bytes();
    let first = *b.first()?;
    if first.is_ascii_digit() {
        if let Some(t) = iso_at(b, 0) {
            return Some(LineTime::Full(t));
        }
    }
    if first == b'[' {
        if let Some(t) = iso_at(b, 1) {
            return Some(LineTime::Full(t));
        }
        // UCX: `[1784273406.684686]`
        if let Some(secs) = digits(b, 1, 10) {
            if b.get(11) == Some(&b'.') {
                return Some(LineTime::Full(secs as f64 + fraction(b, 11)));
            }
        }
    }
    // vLLM: `LEVEL MM-DD HH:MM:SS`
    for level in ["INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL "] {
        if let Some(rest) = line.strip_prefix(level) {
            let r = rest.as_bytes();
            if r.get(2) == Some(&b'-') && r.get(5) == Some(&b' ') {
                let (m, d) = (digits(r, 0, 2)?, digits(r, 3, 2)?);
                let secs = hms_at(r, 6)?;
                return no_year(m, d, secs);
            }
            return None;
        }
    }
    // glog: `E0717 07:30:06.719633  994396 file.cpp:537]`
    if matches!(first, b'I' | b'W' | b'E' | b'F') && b.get(5) == Some(&b' ') {
        if let (Some(m), Some(d)) = (digits(b, 1, 2), digits(b, 3, 2)) {
            if let Some(secs) = hms_at(b, 6) {
                return no_year(m, d, secs);
            }
        }
    }
    // slurmstepd: `slurmstepd: error: *** STEP 1943824.0 ON node CANCELLED AT
    // 2023-03-06T03:17:51 …` (searched only in slurmstepd's lines: no scan of every line)
    if first != b's' || !line.starts_with("slurmstepd") {
        return None;
    }
    if let Some(p) = line.find(" CANCELLED AT ") {
        if let Some(t) = iso_at(b, p + " CANCELLED AT ".len()) {
            return Some(LineTime::Full(t));
        }
    }
    None
}

fn no_year(m: i64, d: i64, secs: f64) -> Option<LineTime> {
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some(LineTime::NoYear {
        month: m as u32,
        day: d as u32,
        secs,
    })
}

/// The year of seconds since the epoch.
pub fn year_of(secs: f64) -> i64 {
    civil_from_days((secs / 86400.0).floor() as i64).0
}

impl LineTime {
    /// Seconds since the epoch; a time without a year takes `year` (`None`: not resolvable).
    pub fn resolve(self, year: Option<i64>) -> Option<f64> {
        match self {
            LineTime::Full(s) => Some(s),
            LineTime::NoYear { month, day, secs } => {
                let y = year?;
                Some((days_from_civil(y, i64::from(month), i64::from(day)) * 86400) as f64 + secs)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(l: &str) -> f64 {
        match line_time(l) {
            Some(LineTime::Full(s)) => s,
            other => panic!("{l}: {other:?}"),
        }
    }

    #[test]
    fn every_format_reads_the_same_instant() {
        let t = full("2026-09-21T01:15:07.250Z ERROR dynamo_runtime::worker: x");
        assert_eq!(format_secs(t), "2026-09-21 01:15:07.250");
        assert_eq!(
            full("[2026-09-21 01:15:07 TP0] Scheduler hit an exception"),
            t - 0.25
        );
        assert_eq!(full("2026-09-21 01:15:07,250 - srtctl - ERROR - x"), t);
        let ucx = full("[1784273406.684686] [cn05:994396:0]  ib_mlx5_dv.c:452  UCX  ERROR   x");
        assert_eq!(format_secs(ucx), "2026-07-17 07:30:06.685");
        let slurm = full("slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***");
        assert_eq!(format_secs(slurm), "2023-03-06 03:17:51.000");
        let v = line_time("ERROR 09-21 01:15:07 [core.py:396] EngineCore failed").unwrap();
        assert_eq!(v.resolve(None), None);
        assert_eq!(v.resolve(Some(2026)), Some(t - 0.25));
        let g = line_time(
            "E0921 01:15:07.250000  994396 ucx_utils.cpp:537] UCX endpoint create failed",
        )
        .unwrap();
        assert_eq!(g.resolve(Some(year_of(t))), Some(t));
        for none in [
            "srun: error: Node failure on x",
            "+ srun --nodes=2",
            "[rank0]: x",
            "ERROR: salloc failed",
            "2026-13-01 00:00:00 bad month",
            "",
        ] {
            assert_eq!(line_time(none), None, "{none}");
        }
    }
}
