//! Cell parsers of InferenceX `utils/aggregate_power.py`: `_parse_timestamp`, `_parse_power`,
//! `_detect_columns`, the GPU sort key, and `statistics.mean` (exactly rounded), as CPython 3.11
//! evaluates them.
//!
//! Deviations (inputs no SMI tool writes): digits and case folding are ASCII (Python's `\d`
//! and `float()` also take other Unicode digits; its case-insensitive match also folds
//! `ı`/`İ`, which is handled), so a timestamp of Arabic-Indic digits is refused where Python
//! reads it; a naive time inside a daylight-saving gap takes the offset of
//! the instant before it, as CPython's `local_to_seconds` with `fold=0` does.

use chrono::{Local, NaiveDate, NaiveDateTime, Offset, TimeZone};

use super::pycsv::py_strip;

/// Lower-cases ASCII and folds `ı`/`İ` to `i`, as Python's `re.IGNORECASE` does for the
/// letters of the column patterns.
fn fold(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{130}' | '\u{131}' => 'i',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// `_detect_columns`: (timestamp, power, GPU identity) column names.
///
/// Timestamp: the first name containing `time`; power: the first containing `power` and none
/// of `limit`, `cap`, `max`, `min`; GPU: the first equal to one of `index`, `gpu`, `gpu_id`,
/// `gpu_index`, `card`, `device` (all case-insensitive).
pub fn detect_columns(header: &[String]) -> (Option<&str>, Option<&str>, Option<&str>) {
    let ts = header
        .iter()
        .find(|c| fold(c).contains("time"))
        .map(String::as_str);
    let power = header
        .iter()
        .find(|c| {
            let f = fold(c);
            f.contains("power") && !["limit", "cap", "max", "min"].iter().any(|x| f.contains(x))
        })
        .map(String::as_str);
    let gpu = header
        .iter()
        .find(|c| {
            let f = fold(py_strip(c));
            ["index", "gpu", "gpu_id", "gpu_index", "card", "device"].contains(&f.as_str())
        })
        .map(String::as_str);
    (ts, power, gpu)
}

/// The first match of `-?\d+(?:\.\d+)?` in `s`, if any.
fn search_number(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let start = (0..b.len()).find(|&i| digit(i) || (b[i] == b'-' && digit(i + 1)))?;
    let mut end = start + usize::from(b[start] == b'-');
    while digit(end) {
        end += 1;
    }
    if b.get(end) == Some(&b'.') && digit(end + 1) {
        end += 1;
        while digit(end) {
            end += 1;
        }
    }
    Some(&s[start..end])
}

/// Whether the whole of `s` is `-?\d+(?:\.\d+)?`.
fn is_number(s: &str) -> bool {
    search_number(s).is_some_and(|m| m.len() == s.len())
}

/// `_parse_power`: the first number in the cell (`"412.34 W"` → 412.34); `None` for empty,
/// `[N/A]`, `N/A`, `NA` (any case) or a cell without digits. Sign and range are checked by the
/// caller.
pub fn parse_power(value: &str) -> Option<f64> {
    let v = py_strip(value);
    if v.is_empty() || ["[n/a]", "n/a", "na"].contains(&v.to_ascii_lowercase().as_str()) {
        return None;
    }
    search_number(v)?.parse().ok()
}

/// `_parse_timestamp`: Unix seconds (f64) from a telemetry timestamp cell.
///
/// * a plain number `-?\d+(\.\d+)?` is epoch seconds, or milliseconds when above 1e12;
/// * `YYYY/MM/DD HH:MM:SS[.ffffff]` (nvidia-smi; `strptime`) is local time;
/// * otherwise ISO 8601 through Python 3.11's `datetime.fromisoformat` (the first space becomes
///   `T` when there is no `T`), naive values local time, aware ones converted to UTC.
pub fn parse_timestamp(value: &str) -> Option<f64> {
    let v = py_strip(value);
    if v.is_empty() {
        return None;
    }
    if is_number(v) {
        let n: f64 = v.parse().ok()?;
        return Some(if n > 1e12 { n / 1000.0 } else { n });
    }
    if let Some((dt, us)) = strptime_nvidia(v) {
        return naive_timestamp(dt, us);
    }
    let iso = if v.contains(' ') && !v.contains('T') {
        v.replacen(' ', "T", 1)
    } else {
        v.to_string()
    };
    let (dt, us, offset) = fromisoformat(iso.as_bytes())?;
    match offset {
        None => naive_timestamp(dt, us),
        Some(off_us) => {
            let total_us = dt.and_utc().timestamp() as i128 * 1_000_000 + us as i128 - off_us;
            Some(total_us as f64 / 1e6)
        }
    }
}

/// `datetime(...).timestamp()` of a naive local time: `local_to_seconds(..., fold=0)` whole
/// seconds, then `+ microsecond / 1e6` in floating point (CPython `datetime_timestamp`).
fn naive_timestamp(dt: NaiveDateTime, us: u32) -> Option<f64> {
    let secs = local_to_seconds(dt.and_utc().timestamp())?;
    Some(secs as f64 + us as f64 / 1e6)
}

/// Local wall-clock seconds of a UTC instant `u` (`u + utcoffset(u)`).
fn local(u: i64) -> Option<i64> {
    let utc = chrono::DateTime::from_timestamp(u, 0)?.naive_utc();
    let off = Local.offset_from_utc_datetime(&utc).fix().local_minus_utc();
    Some(u + i64::from(off))
}

/// CPython `local_to_seconds(…, fold=0)`: the UTC instant of local wall time `t` (seconds of
/// the wall time read as UTC).
fn local_to_seconds(t: i64) -> Option<i64> {
    const MAX_FOLD_SECONDS: i64 = 24 * 3600;
    let a = local(t)? - t;
    let u1 = t - a;
    let t1 = local(u1)?;
    let b;
    if t1 == t {
        let u2 = u1 - MAX_FOLD_SECONDS;
        b = local(u2)? - u2;
        if a == b {
            return Some(u1);
        }
    } else {
        b = t1 - u1;
    }
    let u2 = t - b;
    let t2 = local(u2)?;
    if t2 == t {
        return Some(u2);
    }
    if t1 == t {
        return Some(u1);
    }
    Some(u1.max(u2))
}

/// Python `strptime` with `%Y/%m/%d %H:%M:%S.%f`, then `%Y/%m/%d %H:%M:%S`: the date, time and
/// microseconds, or `None` when neither format matches or the values are out of range.
fn strptime_nvidia(v: &str) -> Option<(NaiveDateTime, u32)> {
    use std::sync::OnceLock;
    static FORMATS: OnceLock<[regex::Regex; 2]> = OnceLock::new();
    // `_strptime`'s directive regexes (alternatives in its order: leftmost-first, as Python's
    // backtracking `re`), the format's space as `\s+` (Python's whitespace set).
    let formats = FORMATS.get_or_init(|| {
        let ws = r"[\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]+";
        let date = r"(?P<Y>[0-9][0-9][0-9][0-9])/(?P<m>1[0-2]|0[1-9]|[1-9])/(?P<d>3[01]|[12][0-9]|0[1-9]|[1-9]| [1-9])";
        let time = r"(?P<H>2[0-3]|[0-1][0-9]|[0-9]):(?P<M>[0-5][0-9]|[0-9]):(?P<S>6[0-1]|[0-5][0-9]|[0-9])";
        [
            regex::Regex::new(&format!(r"^{date}{ws}{time}\.(?P<f>[0-9]{{1,6}})")).unwrap(),
            regex::Regex::new(&format!(r"^{date}{ws}{time}")).unwrap(),
        ]
    });
    for re in formats {
        let Some(c) = re.captures(v) else { continue };
        if c.get(0).map(|m| m.end()) != Some(v.len()) {
            continue; // "unconverted data remains"
        }
        let n = |k: &str| c[k].trim().parse::<u32>().ok();
        let us = match c.name("f") {
            Some(f) => format!("{:0<6}", f.as_str()).parse().ok()?,
            None => 0,
        };
        let date = NaiveDate::from_ymd_opt(n("Y")? as i32, n("m")?, n("d")?)?;
        if n("Y")? == 0 {
            return None;
        }
        let time = chrono::NaiveTime::from_hms_opt(n("H")?, n("M")?, n("S")?)?;
        // datetime() refuses second 60/61 (chrono would read 60 as a leap second).
        if n("S")? > 59 {
            return None;
        }
        return Some((NaiveDateTime::new(date, time), us));
    }
    None
}

/// `n` ASCII digits at `b[i..]` as a number (CPython `parse_digits`; reading past the end is
/// reading the C string's NUL, which is not a digit).
fn digits(b: &[u8], i: usize, n: usize) -> Option<u32> {
    let mut v = 0u32;
    for k in 0..n {
        let d = *b.get(i + k)?;
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(d - b'0');
    }
    Some(v)
}

/// The byte at `i`, NUL past the end (C string semantics of CPython's parser).
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// CPython 3.11 `parse_hh_mm_ss_ff` over `b[start..end]`: (h, m, s, µs, rv) where rv 1 means
/// text remains (an error unless a time zone follows).
fn parse_hh_mm_ss_ff(b: &[u8], start: usize, end: usize) -> Option<([u32; 4], bool)> {
    let mut vals = [0u32; 4];
    let mut p = start;
    let mut has_separator = true;
    for (i, val) in vals.iter_mut().take(3).enumerate() {
        *val = digits(b, p, 2)?;
        p += 2;
        let c = at(b, p);
        p += 1;
        if i == 0 {
            has_separator = c == b':';
        }
        if p >= end {
            return Some((vals, c != 0));
        } else if has_separator && c == b':' {
            continue;
        } else if c == b'.' || c == b',' {
            break;
        } else if !has_separator {
            p -= 1;
        } else {
            return None;
        }
    }
    let remains = end.saturating_sub(p);
    let to_parse = remains.min(6);
    let us = digits(b, p, to_parse)?;
    p += to_parse;
    vals[3] = if to_parse < 6 {
        us * [100_000, 10_000, 1_000, 100, 10][to_parse.checked_sub(1)?]
    } else {
        us
    };
    while at(b, p).is_ascii_digit() {
        p += 1;
    }
    Some((vals, at(b, p) != 0))
}

/// CPython 3.11 `datetime.fromisoformat`: the wall time, its
/// microseconds, and the UTC offset in µs when the string has one.
pub(crate) fn fromisoformat(b: &[u8]) -> Option<(NaiveDateTime, u32, Option<i128>)> {
    let len = b.len();
    if len < 7 {
        return None;
    }
    // `_find_isoformat_datetime_separator`.
    let digit = |i: usize| at(b, i).is_ascii_digit();
    let sep = if len == 7 {
        7
    } else if b[4] == b'-' {
        if b[5] == b'W' {
            if len > 8 && b[8] == b'-' {
                if len == 9 {
                    return None;
                }
                if len > 10 && digit(10) {
                    8
                } else {
                    10
                }
            } else {
                8
            }
        } else {
            10
        }
    } else if b[4] == b'W' {
        let mut idx = 7;
        while idx < len && digit(idx) {
            idx += 1;
        }
        if idx < 9 {
            idx
        } else if idx % 2 == 0 {
            7
        } else {
            8
        }
    } else {
        8
    };
    // parse_isoformat_date over b[..sep]
    let year = digits(b, 0, 4)?;
    let mut p = 4;
    let uses_sep = at(b, p) == b'-';
    if uses_sep {
        p += 1;
    }
    let date = if at(b, p) == b'W' {
        p += 1;
        let week = digits(b, p, 2)?;
        p += 2;
        let weekday = if p < sep {
            if uses_sep {
                if at(b, p) != b'-' {
                    return None;
                }
                p += 1;
            }
            digits(b, p, 1)?
        } else {
            1
        };
        let weekday =
            chrono::Weekday::try_from(u8::try_from(weekday).ok()?.checked_sub(1)?).ok()?;
        NaiveDate::from_isoywd_opt(year as i32, week, weekday)?
    } else {
        let month = digits(b, p, 2)?;
        p += 2;
        if uses_sep {
            if at(b, p) != b'-' {
                return None;
            }
            p += 1;
        }
        let day = digits(b, p, 2)?;
        NaiveDate::from_ymd_opt(year as i32, month, day)?
    };
    if year == 0 || chrono::Datelike::year(&date) < 1 {
        return None;
    }
    let (mut hms, mut offset) = ([0u32; 4], None);
    if len > sep {
        // parse_isoformat_time over b[sep+1..]
        let start = sep + 1;
        let mut tz = start;
        loop {
            if matches!(at(b, tz), b'Z' | b'+' | b'-') {
                break;
            }
            tz += 1;
            if tz >= len {
                break;
            }
        }
        let (vals, rv) = parse_hh_mm_ss_ff(b, start, tz)?;
        hms = vals;
        if tz == len {
            if rv {
                return None;
            }
        } else if at(b, tz) == b'Z' {
            if at(b, tz + 1) != 0 {
                return None;
            }
            offset = Some(0);
        } else {
            let sign: i128 = if at(b, tz) == b'-' { -1 } else { 1 };
            let (t, rv) = parse_hh_mm_ss_ff(b, tz + 1, len)?;
            if rv {
                return None;
            }
            let secs = i128::from(t[0]) * 3600 + i128::from(t[1]) * 60 + i128::from(t[2]);
            let off_us = sign * (secs * 1_000_000 + i128::from(t[3]));
            // timezone() needs |offset| < 24 h.
            if off_us.abs() >= 86_400_000_000 {
                return None;
            }
            offset = Some(off_us);
        }
    }
    let time = chrono::NaiveTime::from_hms_opt(hms[0], hms[1], hms[2])?;
    if hms[2] > 59 {
        return None;
    }
    Some((NaiveDateTime::new(date, time), hms[3], offset))
}

/// `_gpu_sort_key` order: decimal ids first by value (ties keep their order), then the others
/// by text.
pub fn gpu_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    match (numeric(a), numeric(b)) {
        (true, true) => {
            let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
            a.len().cmp(&b.len()).then_with(|| a.cmp(b))
        }
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.cmp(b),
    }
}

/// Python `statistics.mean` of floats: the exact rational mean rounded once to the nearest
/// `f64` (ties to even). Falls back to a plain sum / n only when the values' binary exponents
/// span more than 60 bits or there are more than 4,096 of them (never for watt readings).
pub fn py_mean(values: &[f64]) -> f64 {
    match values {
        [] => f64::NAN,
        [x] => *x,
        _ => exact_mean(values).unwrap_or_else(|| values.iter().sum::<f64>() / values.len() as f64),
    }
}

fn decompose(x: f64) -> (i128, i32) {
    let bits = x.to_bits();
    let sign = if bits >> 63 == 1 { -1 } else { 1 };
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    (sign * m as i128, e)
}

fn exact_mean(values: &[f64]) -> Option<f64> {
    if values.len() > 4096 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let parts: Vec<(i128, i32)> = values.iter().map(|v| decompose(*v)).collect();
    let emin = parts.iter().filter(|(m, _)| *m != 0).map(|(_, e)| *e).min();
    let Some(emin) = emin else {
        return Some(0.0);
    };
    let mut sum: i128 = 0;
    for (m, e) in &parts {
        if *m == 0 {
            continue;
        }
        let shift = (e - emin) as u32;
        if shift > 60 {
            return None;
        }
        sum += m << shift;
    }
    if sum == 0 {
        return Some(0.0);
    }
    let neg = sum < 0;
    let a = sum.unsigned_abs();
    let n = values.len() as u128;
    let bitlen = |x: u128| 128 - x.leading_zeros() as i32;
    let k = (56 + bitlen(n) - bitlen(a)).max(0);
    let num = a << k;
    let (q, r) = (num / n, num % n);
    let sh = bitlen(q) - 53;
    debug_assert!(sh >= 1);
    let mut mant = q >> sh;
    let rem = q & ((1u128 << sh) - 1);
    let half = 1u128 << (sh - 1);
    if rem > half || (rem == half && (r != 0 || mant & 1 == 1)) {
        mant += 1;
    }
    let e = emin - k + sh;
    if e < -1000 || e > 960 {
        return None;
    }
    let v = mant as f64 * 2f64.powi(e);
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_mean_rounds_once() {
        // Python: statistics.mean([0.1, 0.2]) == 0.15000000000000002; mean([1.0, 2.0]) == 1.5
        assert_eq!(py_mean(&[0.1, 0.2]), 0.15000000000000002);
        assert_eq!(py_mean(&[1.0, 2.0]), 1.5);
        assert_eq!(py_mean(&[100.0, 200.0, 400.0]), 233.33333333333334);
        assert_eq!(py_mean(&[412.34, 412.35]), 412.34500000000003);
        assert_eq!(py_mean(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn numbers_in_cells() {
        assert_eq!(parse_power("412.34 W"), Some(412.34));
        assert_eq!(parse_power("[N/A]"), None);
        assert_eq!(parse_power("--5 W"), Some(-5.0));
        assert_eq!(parse_power(".5"), Some(5.0));
        assert_eq!(parse_timestamp("1700000000123"), Some(1_700_000_000.123));
    }
}
