//! Parity with InferenceX `utils/process_result.py` on every golden case
//! (`shared/data/inferencex/golden/process-result/R1–R4`): the agg file and the
//! power-validation sidecar the same run wrote, byte for byte; plus the reference's error
//! messages, the multinode fallbacks and the power path on hand-computed values.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use servebench_metrics::inferencex::{dumps_indent2, process_result, BASE_ENV_VARS};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex/golden/process-result"
);

fn read(name: &str) -> String {
    let path = format!("{GOLDEN}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn case(n: &str) -> (Value, BTreeMap<String, String>) {
    let raw: Value = serde_json::from_str(&read(&format!("{n}-input.json"))).unwrap();
    let env: BTreeMap<String, String> =
        serde_json::from_str(&read(&format!("{n}-env.json"))).unwrap();
    (raw, env)
}

#[test]
fn every_golden_case_is_byte_identical() {
    let mut seen = 0;
    for entry in std::fs::read_dir(GOLDEN).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(n) = name.strip_suffix("-input.json") else {
            continue;
        };
        seen += 1;
        let (raw, env) = case(n);
        let out = process_result(&raw, &env, None).unwrap_or_else(|e| panic!("{n}: {e:#}"));
        assert_eq!(
            out.agg_file_name(),
            format!("agg_{}.json", env["RESULT_FILENAME"])
        );
        let want_agg = read(&format!("{n}-agg.json"));
        assert_eq!(out.agg_json(), want_agg, "{n}: agg differs");
        let want_side = read(&format!("{n}-power-validation.json"));
        assert_eq!(
            out.power_validation_json(),
            want_side,
            "{n}: power validation differs"
        );
        // The sidecar is the tool's own output too, not only ours.
        assert_eq!(
            out.power_validation_file_name(),
            format!("power_validation_{}.json", env["RESULT_FILENAME"])
        );
    }
    assert_eq!(seen, 4, "R1–R4 expected in {GOLDEN}");
}

#[test]
fn golden_values_spot_checks() {
    // Independent of the byte comparison: the formulas on R2 (G = TP×PP×PCP = 8, not ×EP/DCP)
    // and R3 (output per decode GPU, input per prefill GPU).
    let (raw, env) = case("R2");
    let out = process_result(&raw, &env, None).unwrap();
    let total = raw["total_token_throughput"].as_f64().unwrap();
    let output = raw["output_throughput"].as_f64().unwrap();
    assert_eq!(out.agg["tput_per_gpu"], json!(total / 8.0));
    assert_eq!(out.agg["input_tput_per_gpu"], json!((total - output) / 8.0));
    assert_eq!(out.agg["std_tpot"], json!(1.23e-05));
    assert_eq!(out.agg["std_intvty"], json!(1000.0 / 0.0123));
    assert_eq!(out.agg["recipe_fingerprint"], json!(""));
    let (raw, env) = case("R3");
    let out = process_result(&raw, &env, None).unwrap();
    assert_eq!(out.agg["tput_per_gpu"], json!(368.64 / 24.0));
    assert_eq!(out.agg["output_tput_per_gpu"], json!(40.96 / 16.0));
    assert_eq!(out.agg["input_tput_per_gpu"], json!((368.64 - 40.96) / 8.0));
}

fn err(raw: &Value, env: &BTreeMap<String, String>) -> String {
    format!("{:#}", process_result(raw, env, None).unwrap_err())
}

#[test]
fn missing_environment_is_named_like_the_reference() {
    let (raw, env) = case("R1");
    let mut e = env.clone();
    e.remove("ISL");
    e.remove("RUNNER_TYPE");
    assert_eq!(
        err(&raw, &e),
        "Missing required environment variables: RUNNER_TYPE, ISL"
    );
    assert_eq!(
        err(&raw, &BTreeMap::new()),
        format!(
            "Missing required environment variables: {}",
            BASE_ENV_VARS.join(", ")
        )
    );
    let mut e = env.clone();
    e.remove("TP");
    e.remove("DP_ATTENTION");
    assert_eq!(
        err(&raw, &e),
        "Missing required environment variables: TP, DP_ATTENTION"
    );
    let (raw, env) = case("R3");
    let mut e = env.clone();
    e.remove("DECODE_EP");
    assert_eq!(
        err(&raw, &e),
        "Missing required environment variables: DECODE_EP"
    );
}

#[test]
fn reference_value_errors() {
    let (raw, env) = case("R1");
    let with = |k: &str, v: &str| {
        let mut e = env.clone();
        e.insert(k.into(), v.into());
        e
    };
    assert_eq!(
        err(&raw, &with("DISAGG", "True")),
        "Disaggregated mode requires multinode setup."
    );
    assert_eq!(
        err(&raw, &with("PP_SIZE", "0")),
        "PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers."
    );
    assert_eq!(
        err(&raw, &with("ISL", "8k")),
        "ISL: invalid literal for int() with base 10: '8k'"
    );
    assert_eq!(
        err(&raw, &with("ROUTER_METADATA", "{\"name\": \"r\"}")),
        "ROUTER_METADATA must contain exactly 'name' and 'version'"
    );
    assert_eq!(
        err(&raw, &with("TP", "0")),
        "per-GPU throughput (TP × PP × PCP = 0): float division by zero"
    );
    let mut r = raw.clone();
    r["median_tpot_ms"] = json!(0.0);
    assert_eq!(
        err(&r, &env),
        "raw result key 'median_tpot_ms': float division by zero"
    );
    r["median_tpot_ms"] = Value::Null;
    assert_eq!(
        err(&r, &env),
        "raw result key 'median_tpot_ms': float() argument must be a string or a real number, not 'NoneType'"
    );
    let mut r = raw.clone();
    r.as_object_mut().unwrap().shift_remove("model_id");
    assert_eq!(
        err(&r, &env),
        "raw result has no key 'model_id' (KeyError: 'model_id')"
    );

    let (raw, env) = case("R3");
    let mut e = env.clone();
    e.remove("DECODE_HARDWARE");
    assert_eq!(
        err(&raw, &e),
        "PREFILL_HARDWARE and DECODE_HARDWARE must be specified together."
    );
    let mut e = env.clone();
    e.insert("DECODE_PCP_SIZE".into(), "-1".into());
    assert_eq!(
        err(&raw, &e),
        "Multinode PP, DCP, and PCP sizes must be positive integers."
    );
    let mut e = env.clone();
    e.insert("PREFILL_GPUS".into(), "0".into());
    assert_eq!(
        err(&raw, &e),
        "Multinode results require at least one prefill GPU."
    );
    e.insert("DECODE_GPUS".into(), "0".into());
    assert_eq!(err(&raw, &e), "Multinode results require at least one GPU.");
}

#[test]
fn key_rules_follow_the_reference_loop() {
    // `endswith('ms')` (not `_ms`: "warmup_items" ends in "ms" and is kept as seconds under its
    // own name), `replace('_ms', '')` everywhere in the key, and every key containing `tpot`
    // — even one not ending in ms — yields `replace('tpot', 'intvty')` = 1000 / value.
    let (raw, env) = case("R1");
    let mut r = raw.clone();
    let o = r.as_object_mut().unwrap();
    o.insert("warmup_items".into(), json!(7));
    o.insert("x_ms_total_ms".into(), json!(2500));
    o.insert("tpot_hint".into(), json!("4"));
    let out = process_result(&r, &env, None).unwrap();
    let keys: Vec<&str> = out
        .agg
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys[keys.len() - 5..],
        [
            "warmup_items",
            "x_total",
            "intvty_hint",
            "power_metric_schema_version",
            "power_valid"
        ]
    );
    assert_eq!(out.agg["warmup_items"], json!(0.007));
    assert_eq!(out.agg["x_total"], json!(2.5));
    assert_eq!(out.agg["intvty_hint"], json!(250.0));
    assert!(out.agg.get("tpot_hint").is_none());
}

#[test]
fn optional_fields_and_types() {
    let (raw, env) = case("R1");
    let mut e = env.clone();
    e.insert("KV_P2P_TRANSFER".into(), String::new());
    e.insert("ROUTER_METADATA".into(), "null".into());
    e.insert("IS_MULTINODE".into(), "FALSE".into());
    let out = process_result(&raw, &e, None).unwrap();
    let want = read("R1-agg.json");
    assert_eq!(
        out.agg_json(),
        want,
        "empty optional values behave as unset"
    );
    // conc is int(max_concurrency): a float truncates, a string parses.
    let mut r = raw.clone();
    r["max_concurrency"] = json!(8.9);
    assert_eq!(
        process_result(&r, &env, None).unwrap().agg["conc"],
        json!(8)
    );
    r["max_concurrency"] = json!(" 8 ");
    assert_eq!(
        process_result(&r, &env, None).unwrap().agg["conc"],
        json!(8)
    );
    // A JSON integer latency becomes a float (value / 1000.0).
    r["p90_e2el_ms"] = json!(10655);
    let text = process_result(&r, &env, None).unwrap().agg_json();
    assert!(text.contains("\"p90_e2el\": 10.655,"), "{text}");
}

#[test]
fn sidecar_reasons_follow_the_benchmark_contract() {
    let (raw, env) = case("R1");
    // `completed` must be a JSON integer > 0; a duration far from end − start is flagged.
    let mut r = raw.clone();
    r["completed"] = json!(16.0);
    r["duration"] = json!(50.0);
    let side = process_result(&r, &env, None).unwrap().power_validation;
    assert_eq!(
        side["reasons"],
        json!([
            "benchmark_duration_mismatch",
            "invalid_successful_query_count",
            "telemetry_file_missing"
        ])
    );
    assert_eq!(side["benchmark_window"]["completed"], json!(0));
    // No usable window: no window object, no telemetry check.
    let mut r = raw.clone();
    r.as_object_mut()
        .unwrap()
        .shift_remove("benchmark_end_time_unix");
    let side = process_result(&r, &env, None).unwrap().power_validation;
    assert_eq!(side["reasons"], json!(["invalid_benchmark_window"]));
    assert_eq!(side["benchmark_window"], Value::Null);
    // GPU_METRICS_CSV names the telemetry source (pathlib-normalised).
    let mut e = env.clone();
    e.insert("GPU_METRICS_CSV".into(), "./logs//gpu.csv".into());
    let side = process_result(&raw, &e, None).unwrap().power_validation;
    assert_eq!(side["telemetry_source"], json!("logs/gpu.csv"));
    // Multinode: POWER_ARTIFACT_DIR and POWER_PRODUCER_SHA reach the sidecar.
    let (raw, env) = case("R3");
    let mut e = env.clone();
    e.insert("POWER_ARTIFACT_DIR".into(), "out/power/".into());
    e.insert("POWER_PRODUCER_SHA".into(), "abc".into());
    let side = process_result(&raw, &e, None).unwrap().power_validation;
    assert_eq!(side["failures"], json!(["power dir missing: out/power"]));
    assert_eq!(side["telemetry_source"], json!("out/power"));
    assert_eq!(
        side["producer"]["expected_producer_git_commit"],
        json!("abc")
    );
}

/// R1's window (1787313600.125 … 1787313641.412345) covered at 1 Hz by `watts.len()` GPUs at
/// constant power, epoch-second timestamps, in a fresh directory.
fn telemetry_dir(watts: &[f64], skip: Option<(usize, std::ops::Range<i64>)>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("timestamp, index, power.draw [W]\n");
    for t in 1_787_313_599..=1_787_313_643i64 {
        for (g, w) in watts.iter().enumerate() {
            if skip
                .as_ref()
                .is_some_and(|(sg, r)| *sg == g && r.contains(&t))
            {
                continue;
            }
            csv.push_str(&format!("{t}, {g}, {w:.2} W\n"));
        }
    }
    std::fs::write(dir.path().join("gpu_metrics.csv"), csv).unwrap();
    dir
}

#[test]
fn measured_power_valid_single_node() {
    // R1: 4 GPUs, window 41.28734493255615 s (end − start), 16 queries, 130273 in, 16282 out.
    let (raw, env) = case("R1");
    let watts = [400.0, 410.0, 390.0, 405.0];
    let dir = telemetry_dir(&watts, None);
    let out = process_result(&raw, &env, Some(dir.path())).unwrap();
    let window = 1787313641.412345 - 1787313600.125;
    let energy: f64 = watts.iter().map(|w| w * window).sum();
    let agg = out.agg.as_object().unwrap();
    let keys: Vec<&str> = agg.keys().skip(agg.len() - 9).map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "power_metric_schema_version",
            "power_valid",
            "avg_power_w",
            "avg_total_gpu_power_w",
            "total_gpu_energy_j",
            "joules_per_successful_query",
            "joules_per_input_token",
            "joules_per_output_token",
            "joules_per_total_token"
        ]
    );
    assert_eq!(out.agg["power_valid"], json!(1));
    // Constant power: the trapezoids give power × window to rounding.
    let near = |k: &str, want: f64| {
        let got = out.agg[k].as_f64().unwrap();
        assert!(
            (got - want).abs() <= want * 1e-9 + 1e-3,
            "{k}: {got} vs {want}"
        );
    };
    near("avg_power_w", 401.25);
    near("avg_total_gpu_power_w", 1605.0);
    near("total_gpu_energy_j", energy);
    near("joules_per_output_token", energy / 16282.0);
    near("joules_per_total_token", energy / 146555.0);
    let side = &out.power_validation;
    assert_eq!(side["power_valid"], json!(true));
    assert_eq!(side["reasons"], json!([]));
    assert_eq!(side["telemetry_source"], json!("gpu_metrics.csv"));
    assert_eq!(side["observed_gpu_ids"], json!(["0", "1", "2", "3"]));
    assert_eq!(side["per_gpu_sample_counts"]["0"], json!(45));
    assert_eq!(side["per_gpu_max_sample_gap_s"]["2"], json!(1.0));
    assert_eq!(side["accumulator_check"], Value::Null);
    assert!(dumps_indent2(side).contains("\"integration_method\": \"per_device_trapezoidal"));
}

#[test]
fn measured_power_invalid_single_node() {
    let (raw, env) = case("R1");
    // Three GPUs where four are expected; GPU 1 misses 4 s inside the window.
    let dir = telemetry_dir(
        &[500.0, 500.0, 500.0],
        Some((1, 1_787_313_610..1_787_313_614)),
    );
    let out = process_result(&raw, &env, Some(dir.path())).unwrap();
    let side = &out.power_validation;
    assert_eq!(
        side["reasons"],
        json!(["expected_gpu_count_mismatch", "sampling_gap_exceeded"])
    );
    assert_eq!(
        side["device_issues"],
        json!({"1": ["sampling_gap_exceeded"]})
    );
    assert_eq!(side["per_gpu_max_sample_gap_s"]["1"], json!(5.0));
    assert_eq!(side["metrics"], json!({}));
    assert_eq!(out.agg["power_valid"], json!(0));
    assert!(out.agg.get("avg_power_w").is_none());
    // GPU_METRICS_CSV is looked up first; a missing one falls back to gpu_metrics.csv.
    let mut e = env.clone();
    e.insert("GPU_METRICS_CSV".into(), "nope/gpu.csv".into());
    let side = process_result(&raw, &e, Some(dir.path()))
        .unwrap()
        .power_validation;
    assert_eq!(side["telemetry_source"], json!("gpu_metrics.csv"));
    // An empty directory: the golden situation.
    let empty = tempfile::tempdir().unwrap();
    let out = process_result(&raw, &env, Some(empty.path())).unwrap();
    assert_eq!(out.agg_json(), read("R1-agg.json"));
    assert_eq!(
        out.power_validation_json(),
        read("R1-power-validation.json")
    );
}

/// `json.dumps(x, indent=2)` by the real `python3` on this machine (stdin → stdout; the stdin
/// writer runs on its own thread so a full pipe cannot deadlock). `None` when python3 is absent
/// (said as skipped, or a failure under `SERVEBENCH_REQUIRE_SERVICES=1`).
fn python_dumps_indent2(program: &str, input: &str) -> Option<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    // absent: skipped, or a failure under SERVEBENCH_REQUIRE_SERVICES=1
    let python = servebench_testkit::python3()?;
    let mut child = Command::new(python)
        .args(["-c", program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "python3 failed");
    Some(String::from_utf8(out.stdout).unwrap())
}

/// Deterministic xorshift64* stream.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn float_repr_and_layout_match_real_python() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut xs: Vec<f64> = vec![
        0.0,
        -0.0,
        1e16,
        9999999999999998.0,
        1e15,
        0.0001,
        0.00009999,
        1e-5,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
        0.1 + 0.2,
        1.0 / 3.0,
        2.5e-7,
        123456789.0,
    ];
    while xs.len() < 4000 {
        let r = rng.next();
        let x = match r % 3 {
            // Any finite bit pattern.
            0 => f64::from_bits(rng.next()),
            // Short decimals at every scale (where fixed/exponent switches happen).
            1 => {
                let digits = (rng.next() % 100_000) as f64;
                let scale = (rng.next() % 44) as i32 - 22;
                digits * 10f64.powi(scale)
            }
            // Latency-like values: ms statistics divided by 1000, and 1000 / ms.
            _ => {
                let ms = (rng.next() % 10_000_000) as f64 / 1000.0;
                if r & 1 == 0 {
                    ms / 1000.0
                } else {
                    1000.0 / (ms + 0.001)
                }
            }
        };
        if x.is_finite() {
            xs.push(if r % 5 == 1 { -x } else { x });
        }
    }
    let bits: Vec<String> = xs.iter().map(|x| x.to_bits().to_string()).collect();
    let program = "import json,struct,sys\n\
        xs=[struct.unpack('<d',struct.pack('<Q',int(b)))[0] for b in sys.stdin.read().split()]\n\
        sys.stdout.write(json.dumps({'xs': xs, 'nested': [[], {}, [xs[:2]]]}, indent=2))";
    let Some(want) = python_dumps_indent2(program, &bits.join(" ")) else {
        return;
    };
    let ours = dumps_indent2(&json!({"xs": xs, "nested": [[], {}, [xs[..2].to_vec()]]}));
    if ours != want {
        for (a, b) in ours.lines().zip(want.lines()) {
            assert_eq!(a, b, "first differing line");
        }
    }
    assert_eq!(ours, want);
}

#[test]
fn string_escapes_match_real_python() {
    let mut rng = Rng(0xfeed_beef_0000_0042);
    let pool: Vec<char> = "aZ09 ~\"\\/\u{0}\u{1}\u{8}\u{9}\u{a}\u{c}\u{d}\u{1f}\u{7f}\u{80}\u{e9}\u{2028}\u{ffff}\u{10000}\u{1f600}"
        .chars()
        .collect();
    let strings: Vec<String> = (0..300)
        .map(|_| {
            let n = rng.next() % 12;
            (0..n)
                .map(|_| pool[(rng.next() % pool.len() as u64) as usize])
                .collect()
        })
        .collect();
    let obj: serde_json::Map<String, Value> = strings
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("{s}#{i}"), json!(s)))
        .collect();
    let value = Value::Object(obj);
    let input = serde_json::to_string(&value).unwrap();
    let program =
        "import json,sys\nsys.stdout.write(json.dumps(json.loads(sys.stdin.read()), indent=2))";
    let Some(want) = python_dumps_indent2(program, &input) else {
        return;
    };
    assert_eq!(dumps_indent2(&value), want);
}
