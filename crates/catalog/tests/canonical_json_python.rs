//! Canonical JSON and float formatting checked against the real `python3` on this machine:
//! thousands of awkward floats (random bit patterns, powers of ten, repr boundaries) and
//! unicode strings go through `json.dumps(sort_keys=True, separators=(",", ":"))` and through
//! servebench; the texts must be identical. Skips (with a message) when python3 is absent.

use std::io::Write;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use serde_json::{json, Value};
use servebench_catalog::pyjson::{dumps_canonical, dumps_py, py_float_repr};

/// Sends one JSON document per line to python, which prints json.dumps canonical and default forms.
fn python_dumps(docs: &[String]) -> Vec<(String, String)> {
    let script = r#"
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    print(json.dumps(v, sort_keys=True, separators=(",", ":")))
    print(json.dumps(v))
"#;
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    // Feed stdin from a thread: python answers line by line, so reading and writing must overlap.
    let mut stdin = child.stdin.take().unwrap();
    let input: Vec<String> = docs.to_vec();
    let writer = std::thread::spawn(move || {
        for d in input {
            writeln!(stdin, "{d}").unwrap();
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .chunks(2)
        .map(|c| (c[0].to_string(), c[1].to_string()))
        .collect()
}

fn awkward_floats() -> Vec<f64> {
    let mut v = vec![
        0.8,
        3.39,
        1e-05,
        1e16,
        1e15,
        9999999999999998.0,
        1e17,
        0.0001,
        0.00001,
        1.0,
        -2.5,
        0.1 + 0.2,
        1.23e-05,
        4e-06,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        0.21429,
        0.683,
        0.15239,
        123_456_789.123_456_79,
        1.5,
        2.0f64.powi(53),
        2.0f64.powi(63),
        1e22,
        1e23,
        0.3,
        2.675,
        100.0,
        -0.0,
        0.0,
    ];
    for e in -30..=30 {
        v.push(10f64.powi(e));
        v.push(-1.5 * 10f64.powi(e));
        v.push(1.0 / 3.0 * 10f64.powi(e));
    }
    // Deterministic pseudo-random bit patterns (xorshift), finite only.
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    while v.len() < 3000 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let x = f64::from_bits(s);
        if x.is_finite() {
            v.push(x);
        }
    }
    v
}

#[test]
fn floats_and_strings_match_python_json_dumps() {
    if servebench_testkit::python3().is_none() {
        return;
    }
    let floats = awkward_floats();
    let strings = [
        "é",
        "ü\"\\\n\t\u{1}\u{7f}",
        "\u{1F600} emoji",
        "日本語",
        "plain ascii / slash",
        "\u{2028}\u{feff}",
    ];
    let mut docs: Vec<Value> = floats
        .iter()
        .map(|x| json!({"x": x, "k": [x, 1, true, null]}))
        .collect();
    for s in strings {
        docs.push(json!({"s": s, s: 0.8, "a": {"é": 1, "e": 2, "Z": 3}}));
    }
    let lines: Vec<String> = docs
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect();
    let want = python_dumps(&lines);
    assert_eq!(want.len(), docs.len());
    let mut bad = Vec::new();
    for (d, (canon, default)) in docs.iter().zip(want.iter()) {
        let c = dumps_canonical(d).unwrap();
        let p = dumps_py(d);
        if &c != canon || &p != default {
            bad.push(format!("ours {c} | {p}\npython {canon} | {default}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches, first:\n{}",
        bad.len(),
        bad[0]
    );
}

#[test]
fn hard_coded_python_reprs() {
    // Produced by CPython 3.11 `repr()`; verified on this machine.
    for (x, want) in [
        (0.8, "0.8"),
        (1e-05, "1e-05"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (4e-06, "4e-06"),
    ] {
        assert_eq!(py_float_repr(x), want);
    }
    assert_eq!(
        dumps_canonical(&json!({"b": 1, "a": [true, null, 0.8], "é": "ü\"\n\u{1F600}"})).unwrap(),
        r#"{"a":[true,null,0.8],"b":1,"\u00e9":"\u00fc\"\n\ud83d\ude00"}"#
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Our repr always parses back to the same f64 (the shortest round-trip property).
    #[test]
    fn repr_round_trips(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        let s = py_float_repr(x);
        prop_assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits());
    }
}
