//! JSON text exactly as InferenceX's Python tools write it.
//!
//! Three writers over `serde_json::Value` (insertion-ordered maps):
//! * [`dumps_py`] — `json.dumps(value)`: separators `", "`/`": "`, ASCII-escaped, keys in
//!   construction order, floats as Python `repr` (the sweep generator's stdout);
//! * [`dumps_canonical`] — `json.dumps(value, sort_keys=True, separators=(",", ":"))`
//!   (ASCII-escaped; NaN/Infinity rejected): the input of [`recipe_fingerprint`];
//! * [`dumps_pydantic`] — pydantic `model_dump_json()`: compact, UTF-8 kept as is
//!   (the change-log processor's stdout; field order is chosen by the caller).
//!
//! Python float `repr` (CPython `float_repr_style = 'short'`): the shortest digit string that
//! round-trips, in fixed notation when the decimal exponent is in `-4 < decpt <= 16`, else
//! `d.ddde±XX` with at least two exponent digits — `0.8`, `1e-05`, `1e+16`, `1000000000000000.0`.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use servebench_pyjson::py_float_repr;
use servebench_pyjson::write_str_ascii;

fn write_str_utf8(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    /// `json.dumps(v)`.
    Python,
    /// `json.dumps(v, sort_keys=True, separators=(",", ":"))`.
    Canonical,
    /// pydantic `model_dump_json()`.
    Pydantic,
}

/// Error for values that the canonical form cannot carry (NaN, ±Infinity).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("canonical JSON cannot represent the non-finite number {0}")]
pub struct NonFinite(pub String);

fn write_value(out: &mut String, v: &Value, style: Style) -> Result<(), NonFinite> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if !x.is_finite() {
                    if style == Style::Canonical {
                        return Err(NonFinite(py_float_repr(x)));
                    }
                    out.push_str(if x.is_nan() {
                        "NaN"
                    } else if x > 0.0 {
                        "Infinity"
                    } else {
                        "-Infinity"
                    });
                } else if style == Style::Pydantic {
                    out.push_str(&serde_json::to_string(&x).unwrap_or_default());
                } else {
                    out.push_str(&py_float_repr(x));
                }
            }
        }
        Value::String(s) => {
            if style == Style::Pydantic {
                write_str_utf8(out, s)
            } else {
                write_str_ascii(out, s)
            }
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(if style == Style::Python { ", " } else { "," });
                }
                write_value(out, item, style)?;
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map.iter().collect(), style)?,
    }
    Ok(())
}

/// Writes `{k: v, …}` from borrowed entries (sorted first in the canonical style).
fn write_object(
    out: &mut String,
    mut entries: Vec<(&String, &Value)>,
    style: Style,
) -> Result<(), NonFinite> {
    out.push('{');
    if style == Style::Canonical {
        // Python sorts str keys by code point; UTF-8 byte order is the same order.
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    for (i, (k, val)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push_str(if style == Style::Python { ", " } else { "," });
        }
        if style == Style::Pydantic {
            write_str_utf8(out, k)
        } else {
            write_str_ascii(out, k)
        }
        out.push_str(if style == Style::Python { ": " } else { ":" });
        write_value(out, val, style)?;
    }
    out.push('}');
    Ok(())
}

/// [`dumps_canonical`] of the object holding the entries of `map` whose key passes `keep`,
/// without copying the values (grouping keys of matrix rows).
///
/// Errors: a NaN or infinite float.
pub fn dumps_canonical_filtered(
    map: &serde_json::Map<String, Value>,
    keep: impl Fn(&str) -> bool,
) -> Result<String, NonFinite> {
    let mut out = String::new();
    let entries = map.iter().filter(|(k, _)| keep(k)).collect();
    write_object(&mut out, entries, Style::Canonical)?;
    Ok(out)
}

/// [`dumps_canonical`] of the array `[map[f] for f in fields]` (`null` for a missing field),
/// without copying the values.
///
/// Errors: a NaN or infinite float.
pub fn dumps_canonical_fields(
    map: &serde_json::Map<String, Value>,
    fields: &[&str],
) -> Result<String, NonFinite> {
    let mut out = String::from("[");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match map.get(*f) {
            Some(v) => write_value(&mut out, v, Style::Canonical)?,
            None => out.push_str("null"),
        }
    }
    out.push(']');
    Ok(out)
}

/// `json.dumps(value)` with Python's defaults (no trailing newline).
pub fn dumps_py(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Style::Python).expect("python style accepts non-finite numbers");
    out
}

/// `json.dumps(value, sort_keys=True, separators=(",", ":"))`, ASCII-escaped.
///
/// Errors: a NaN or infinite float (the fingerprint must not depend on them).
pub fn dumps_canonical(value: &Value) -> Result<String, NonFinite> {
    let mut out = String::new();
    write_value(&mut out, value, Style::Canonical)?;
    Ok(out)
}

/// pydantic `model_dump_json()` text of an already ordered value (compact, UTF-8).
pub fn dumps_pydantic(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Style::Pydantic)
        .expect("pydantic style accepts non-finite numbers");
    out
}

/// The `recipe-fingerprint` of a matrix row: SHA-256 (lowercase hex, 64 chars) of the canonical
/// JSON of the row without `conc`, `exp-name` and `recipe-fingerprint`.
///
/// Source: InferenceX `utils/process_changelog.py` (AUTOMATION.md §2.6). Errors: non-finite floats.
pub fn recipe_fingerprint(row: &serde_json::Map<String, Value>) -> Result<String, NonFinite> {
    let text = dumps_canonical_filtered(row, |k| {
        k != "conc" && k != "exp-name" && k != "recipe-fingerprint"
    })?;
    Ok(hex::encode(Sha256::digest(text.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_python() {
        // Expected strings produced by CPython 3.11 `repr(float(x))`.
        let cases: &[(f64, &str)] = &[
            (0.8, "0.8"),
            (3.39, "3.39"),
            (1e-05, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.23e-05, "1.23e-05"),
            (4e-06, "4e-06"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.21429, "0.21429"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float_repr(*x), *want, "repr({x:e})");
        }
    }

    #[test]
    fn canonical_sorts_and_escapes() {
        let v = json!({"b": 1, "a": [true, null, 0.8], "é": "ü\"\n\u{1F600}"});
        assert_eq!(
            dumps_canonical(&v).unwrap(),
            r#"{"a":[true,null,0.8],"b":1,"\u00e9":"\u00fc\"\n\ud83d\ude00"}"#
        );
        assert_eq!(
            dumps_py(&json!({"x": [1, 2], "y": {}})),
            r#"{"x": [1, 2], "y": {}}"#
        );
        assert_eq!(dumps_pydantic(&json!({"x": "é"})), "{\"x\":\"é\"}");
    }

    #[test]
    fn fingerprint_matches_python_hashlib() {
        // python3 -c 'import json,hashlib; print(hashlib.sha256(json.dumps({"b":0.8,"a":"\u00e9","conc":4},
        //   sort_keys=True,separators=(",",":")).encode()).hexdigest())' with conc removed first.
        let row = json!({"conc": 4, "exp-name": "x", "b": 0.8, "a": "é"});
        let text = dumps_canonical(&json!({"a": "é", "b": 0.8})).unwrap();
        assert_eq!(text, r#"{"a":"\u00e9","b":0.8}"#);
        assert_eq!(
            recipe_fingerprint(row.as_object().unwrap()).unwrap(),
            hex::encode(Sha256::digest(text.as_bytes()))
        );
    }
}
