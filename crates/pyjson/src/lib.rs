//! Python-compatible text primitives shared by the writers that must match InferenceX's Python
//! tools byte for byte (the catalog's canonical/`json.dumps` JSON and recipe fingerprint; the
//! metrics crate's `process_result` agg files).
//!
//! Owns: CPython `repr(float)` and the `ensure_ascii` JSON string literal. Must not know about:
//! catalogs, metrics or any servebench stage (a leaf crate, so both ends of the data flow can use
//! it without depending on each other).
#![warn(missing_docs)]

use std::fmt::Write as _;

/// Python `repr(x)` of a float (CPython's `float_repr_style = 'short'`).
///
/// The shortest digit string that round-trips (Rust's `{:e}` yields the same shortest digits as
/// CPython's `dtoa` mode 0), printed in fixed notation when the decimal-point position `decpt`
/// (value = `0.DIGITS × 10^decpt`) satisfies `-4 < decpt <= 16`, else as `d[.ddd]e±XX` with at
/// least two exponent digits. Fixed notation always has a fractional part (`40.0`).
/// Examples: `0.0097734`, `1.23e-05`, `4e-06`, `1e+16`, `1000000000000000.0`, `-0.0`.
/// Non-finite values give `inf`, `-inf`, `nan` (Python's repr; JSON writers must reject them).
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let neg = x.is_sign_negative();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if x == 0.0 {
        out.push_str("0.0");
        return out;
    }
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let decpt = exp + 1;
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else if decpt >= n {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (decpt - n) as usize));
        out.push_str(".0");
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
    out
}

/// A JSON string literal as CPython's `ensure_ascii` encoder writes it.
pub fn write_str_ascii(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_examples() {
        for (x, want) in [
            (0.8, "0.8"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (40.0, "40.0"),
            (-0.0, "-0.0"),
            (0.0097734, "0.0097734"),
        ] {
            assert_eq!(py_float_repr(x), want, "repr({x:e})");
        }
        assert_eq!(py_float_repr(f64::NAN), "nan");
        assert_eq!(py_float_repr(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn ascii_string_literal() {
        let mut s = String::new();
        write_str_ascii(&mut s, "a\"b\\\n\u{7f}é😀");
        assert_eq!(s, r#""a\"b\\\n\u007f\u00e9\ud83d\ude00""#);
    }
}
