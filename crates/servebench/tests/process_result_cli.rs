//! `servebench metrics process-result`: the golden result-processor cases through the binary —
//! files written byte-identical to InferenceX's, the reference's invocation (environment only,
//! `<RESULT_FILENAME>.json` in the working directory), stdout mode, and errors as one line.

use crate::common;
use common::stderr;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex/golden/process-result"
);

fn golden(name: &str) -> String {
    let p = format!("{GOLDEN}/{name}");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn env_of(case: &str) -> BTreeMap<String, String> {
    serde_json::from_str(&golden(&format!("{case}-env.json"))).unwrap()
}

/// Runs the binary in `dir` with exactly `env` as its environment.
fn sb(dir: &Path, env: &BTreeMap<String, String>, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["metrics", "process-result"])
        .args(args)
        .env_clear()
        .envs(env)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn env_file_and_output_write_the_golden_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for case in ["R1", "R2", "R3", "R4"] {
        let out_dir = dir.path().join(case);
        std::fs::create_dir(&out_dir).unwrap();
        let agg = out_dir.join("agg.json");
        let o = sb(
            dir.path(),
            &BTreeMap::new(),
            &[
                "--input",
                &format!("{GOLDEN}/{case}-input.json"),
                "--env-file",
                &format!("{GOLDEN}/{case}-env.json"),
                "-o",
                agg.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{case}: {}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&agg).unwrap(),
            golden(&format!("{case}-agg.json")),
            "{case}: agg bytes"
        );
        let name = format!("power_validation_{}.json", env_of(case)["RESULT_FILENAME"]);
        assert_eq!(
            std::fs::read_to_string(out_dir.join(&name)).unwrap(),
            golden(&format!("{case}-power-validation.json")),
            "{case}: sidecar bytes"
        );
        assert!(o.stdout.is_empty(), "{case}: nothing on stdout with -o");
    }
}

#[test]
fn reference_invocation_environment_only() {
    // Like `python3 utils/process_result.py` in a directory holding <RESULT_FILENAME>.json,
    // with the environment as the only input; the agg row is printed with a newline.
    let dir = tempfile::tempdir().unwrap();
    let env = env_of("R3");
    let name = &env["RESULT_FILENAME"];
    std::fs::write(
        dir.path().join(format!("{name}.json")),
        golden("R3-input.json"),
    )
    .unwrap();
    let o = sb(dir.path(), &env, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        golden("R3-agg.json") + "\n"
    );
    // Without -o nothing is written unless the sidecar path is asked for.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let side = dir.path().join("side.json");
    let o = sb(
        dir.path(),
        &env,
        &["--power-validation", side.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        golden("R3-power-validation.json")
    );
}

#[test]
fn errors_are_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let input = format!("{GOLDEN}/R1-input.json");
    let mut env = env_of("R1");
    env.remove("EP_SIZE");
    env.remove("TP");
    let o = sb(dir.path(), &env, &["--input", &input]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: Missing required environment variables: TP, EP_SIZE\n"
    );
    assert!(o.stdout.is_empty());

    // No input and no RESULT_FILENAME.
    let o = sb(dir.path(), &BTreeMap::new(), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("RESULT_FILENAME is not set"),
        "{}",
        stderr(&o)
    );

    // An env file with a non-string value names the file and the key.
    let bad = dir.path().join("env.json");
    std::fs::write(&bad, r#"{"TP": 4}"#).unwrap();
    let o = sb(
        dir.path(),
        &BTreeMap::new(),
        &["--input", &input, "--env-file", bad.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("env.json") && e.contains("\"TP\""), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");

    // A missing input file is named.
    let o = sb(dir.path(), &env_of("R1"), &["--input", "nope.json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nope.json"), "{}", stderr(&o));
}

#[test]
fn present_telemetry_is_integrated_and_power_packages_refused() {
    // A telemetry file with no samples: integrated (no_usable_power_samples), not ignored.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gpu_metrics.csv"),
        "timestamp,index,power.draw\n",
    )
    .unwrap();
    let o = sb(
        dir.path(),
        &env_of("R1"),
        &[
            "--input",
            &format!("{GOLDEN}/R1-input.json"),
            "-o",
            "agg.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let name = format!("power_validation_{}.json", env_of("R1")["RESULT_FILENAME"]);
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap();
    assert_eq!(
        side["reasons"],
        serde_json::json!(["no_usable_power_samples"])
    );
    // REQUIRE_POWER makes the invalid power the exit status, after the files are written.
    let mut env = env_of("R1");
    env.insert("REQUIRE_POWER".into(), "1".into());
    let o = sb(
        dir.path(),
        &env,
        &[
            "--input",
            &format!("{GOLDEN}/R1-input.json"),
            "-o",
            "agg2.json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(dir.path().join("agg2.json").is_file());

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("LOGS/power")).unwrap();
    let o = sb(
        dir.path(),
        &env_of("R4"),
        &["--input", &format!("{GOLDEN}/R4-input.json")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("LOGS/power exists"), "{}", stderr(&o));
}

/// `metrics aggregate-power` / `agentx-power` run as InferenceX runs the Python (relative paths,
/// in the result directory) on two parity cases: every file left behind equals the golden.
#[test]
fn aggregate_power_and_agentx_power_write_the_python_bytes() {
    let data = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../metrics/tests/data/aggregate-power"
    );
    // The last run goes the way a recipe under `servebench run` calls the adapter: the venv's
    // python shim (`engine-shim python3 -m utils.agentic.aggregation.power_adapter …`).
    for (case, via_shim) in [
        ("nvidia_smi_8gpu_1hz_noisy", false),
        ("agentx_valid_whole_deployment", false),
        ("agentx_valid_whole_deployment", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let input = Path::new(data).join(case).join("input");
        let expected = Path::new(data).join(case).join("expected");
        let status = Command::new("cp")
            .arg("-r")
            .arg(format!("{}/.", input.display()))
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let args: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(data).join(case).join("args.json")).unwrap(),
        )
        .unwrap();
        let sub = if args["tool"] == "aggregate_power" {
            "aggregate-power"
        } else {
            "agentx-power"
        };
        let argv: Vec<&str> = args["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_servebench"));
        if via_shim {
            cmd.args([
                "engine-shim",
                "python3",
                "-m",
                "utils.agentic.aggregation.power_adapter",
            ]);
        } else {
            cmd.args(["metrics", sub]);
        }
        let o = cmd
            .args(&argv)
            .env("TZ", "UTC")
            .env_remove("REQUIRE_POWER")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{case}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with("[aggregate_power] avg_power_w="), "{out}");
        let list = |root: &Path| {
            let o = Command::new("find")
                .arg(".")
                .arg("-type")
                .arg("f")
                .current_dir(root)
                .output()
                .unwrap();
            let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(String::from)
                .collect();
            v.sort();
            v
        };
        assert_eq!(list(dir.path()), list(&expected), "{case}");
        for f in list(&expected) {
            assert_eq!(
                std::fs::read(dir.path().join(&f)).unwrap(),
                std::fs::read(expected.join(&f)).unwrap(),
                "{case}/{f}"
            );
        }
    }
}
