//! JSON text byte-for-byte as CPython's `json.dumps(value, indent=2)` writes it (the layout of
//! every file InferenceX's `utils/process_result.py` and `utils/aggregate_power*.py` write).
//!
//! * Layout: `indent=2` → items separated by `",\n"` + indentation, key/value by `": "`, empty
//!   containers as `{}` / `[]`, no trailing newline (the tools' `print` adds one on stdout).
//! * Strings: `ensure_ascii=True` — `\"`, `\\`, `\b \f \n \r \t`, every other character outside
//!   `' '..='~'` as `\uXXXX` (lowercase hex; astral characters as a UTF-16 surrogate pair; DEL is
//!   escaped too, as CPython's C encoder does).
//! * Integers as integers, floats as Python `repr(float)` ([`py_float_repr`]).
//! * Key order: the map's insertion order (the workspace enables serde_json `preserve_order`).
//!
//! The float and string primitives come from the leaf crate `servebench-pyjson`, shared with the
//! catalog crate (metrics must not depend on catalog: data flows catalog → … → metrics).

use std::fmt::Write as _;

use serde_json::Value;

/// Python `repr(float)`: see [`servebench_pyjson::py_float_repr`].
pub use servebench_pyjson::py_float_repr;
use servebench_pyjson::write_str_ascii as write_str;

/// Python `round(x, ndigits)` for a float: the correctly rounded decimal value (ties to even on
/// the exact binary value, as CPython's `dtoa`-based rounding), returned as the nearest `f64`.
/// Non-finite values are returned unchanged. `ndigits` ≤ 17 (callers use 3 and 6).
pub fn py_round(x: f64, ndigits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Rust's fixed-precision formatting is exact and rounds ties to even, like CPython.
    let s = format!("{:.*}", ndigits, x);
    // round(-0.0001, 3) is -0.0 in Python; parsing "-0.000" keeps the sign.
    s.parse().expect("formatted float parses")
}

/// `json.dumps(value, indent=2)` (ASCII-escaped, Python float repr, no trailing newline).
/// A `serde_json::Value` only holds finite numbers, so Python's `NaN`/`Infinity` tokens never
/// appear; producers of non-finite values must reject them before building the value.
pub fn dumps_indent2(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out
}

fn write_value(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                out.push_str(&py_float_repr(n.as_f64().expect("f64 number")));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_value(out, item, level + 1);
            }
            newline_indent(out, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_str(out, k);
                out.push_str(": ");
                write_value(out, v, level + 1);
            }
            newline_indent(out, level);
            out.push('}');
        }
    }
}

fn newline_indent(out: &mut String, level: usize) {
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', 2 * level));
}

/// Python `repr(str)` (used in error messages that quote a value the way Python does, e.g.
/// `invalid literal for int() with base 10: 'abc'`): single quotes unless the text contains `'`
/// and no `"`; backslash, the quote, `\n \r \t` and non-printable characters escaped.
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_cpython() {
        // Expected strings printed by CPython 3.11.7 `repr(x)`.
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (40.0, "40.0"),
            (0.1, "0.1"),
            (1.23e-05, "1.23e-05"),
            (4e-06, "4e-06"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e-05, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1234567890123456.7, "1234567890123456.8"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (0.49731000000000003, "0.49731000000000003"),
            (887.4087205171463, "887.4087205171463"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-2.5e-10, "-2.5e-10"),
            (123e100, "1.23e+102"),
            (0.001, "0.001"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float_repr(*x), *want, "repr({x:e})");
        }
        assert_eq!(py_float_repr(f64::NAN), "nan");
        assert_eq!(py_float_repr(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn round_ties_to_even_like_python() {
        // CPython: round(0.125, 2) == 0.12, round(0.375, 2) == 0.38, round(2.675, 2) == 2.67
        // (2.675 is 2.67499999… in binary), round(1.0005, 3) == 1.0.
        assert_eq!(py_round(0.125, 2), 0.12);
        assert_eq!(py_round(0.375, 2), 0.38);
        assert_eq!(py_round(2.675, 2), 2.67);
        assert_eq!(py_round(1.0005, 3), 1.0);
        assert_eq!(py_round(1234.5678949999, 6), 1234.567895);
        assert!(py_round(-0.0001, 3).is_sign_negative());
    }

    #[test]
    fn indent2_layout_and_escapes() {
        let v = json!({
            "a": 1,
            "b": [1.5, {"c": null}],
            "empty_list": [],
            "empty_obj": {},
            "s": "q\"\\\n\u{1}é😀\u{7f}/",
            "t": true,
        });
        let want =
            "{\n  \"a\": 1,\n  \"b\": [\n    1.5,\n    {\n      \"c\": null\n    }\n  ],\n  \
                    \"empty_list\": [],\n  \"empty_obj\": {},\n  \
                    \"s\": \"q\\\"\\\\\\n\\u0001\\u00e9\\ud83d\\ude00\\u007f/\",\n  \"t\": true\n}";
        assert_eq!(dumps_indent2(&v), want);
        assert_eq!(dumps_indent2(&json!([])), "[]");
        assert_eq!(dumps_indent2(&json!("x")), "\"x\"");
    }

    #[test]
    fn repr_str_quotes_like_python() {
        assert_eq!(py_repr_str("abc"), "'abc'");
        assert_eq!(py_repr_str("it's"), "\"it's\"");
        assert_eq!(py_repr_str("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(py_repr_str("x\ny\u{1}"), "'x\\ny\\x01'");
    }
}
