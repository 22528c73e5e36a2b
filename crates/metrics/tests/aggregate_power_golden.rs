//! Parity with InferenceX `utils/aggregate_power.py` and the AgentX power adapter
//! (`utils/agentic/aggregation/power_adapter.py`): every case under
//! `tests/data/aggregate-power/` (built by its `make_goldens.py` from the REAL tools: their own
//! test cases plus gapped, short, wrong-GPU-count, truncated and malformed telemetry) run through
//! `servebench_metrics::power` on a copy of `input/` must leave exactly the files the Python left
//! (`expected/`, every file byte for byte, none more or less) and exit as it did.
//!
//! `python_today_writes_the_committed_goldens` regenerates every case with the real tools
//! (python3 and the InferenceX tarball in `$SERVEBENCH_SHARED`) and compares: skipped with a
//! message when either is missing, a failure under `SERVEBENCH_REQUIRE_SERVICES=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use servebench_metrics::inferencex::py_int_str;
use servebench_metrics::power::{
    agentx_power, aggregate_power, AgentxPowerArgs, AggregatePowerArgs,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aggregate-power");

/// Every file under `root`, relative path → bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if root.is_dir() {
        walk(root, root, &mut out);
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// Runs servebench's port with the case's argv/env in `work`; returns the exit status.
fn run_port(args: &Value, work: &Path) -> u8 {
    let argv: Vec<String> = args["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let env_require = args["env"]["REQUIRE_POWER"]
        .as_str()
        .is_some_and(|v| ["1", "true", "yes"].contains(&v.to_lowercase().as_str()));
    let flag = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .map(|i| argv[i + 1].clone())
    };
    let require_power = env_require || argv.iter().any(|a| a == "--require-power");
    let expected_num_gpus = flag("--expected-num-gpus").map(|s| py_int_str(&s).unwrap());
    match args["tool"].as_str().unwrap() {
        "aggregate_power" => {
            let out = aggregate_power(&AggregatePowerArgs {
                csv: PathBuf::from(
                    flag("--csv").unwrap_or_else(|| "/workspace/gpu_metrics.csv".into()),
                ),
                bench_result: flag("--bench-result").unwrap().into(),
                agg_result: flag("--agg-result").unwrap().into(),
                expected_num_gpus,
                validation_result: flag("--validation-result").map(PathBuf::from),
                require_power,
                dir: Some(work.to_path_buf()),
            })
            .unwrap();
            out.exit_code
        }
        "power_adapter" => agentx_power(&AgentxPowerArgs {
            result_dir: flag("--result-dir").unwrap().into(),
            agg_result: flag("--agg-result").unwrap().into(),
            expected_num_gpus,
            require_power,
            dir: Some(work.to_path_buf()),
        })
        .unwrap()
        .exit_code(),
        other => panic!("unknown tool {other}"),
    }
}

/// Checks every case under `root`; returns how many ran.
fn check_cases(root: &Path) -> usize {
    // nvidia-smi timestamps are local time; the goldens were made with TZ=UTC.
    std::env::set_var("TZ", "UTC");
    let mut failures = Vec::new();
    let mut n = 0;
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("args.json").is_file())
        .collect();
    cases.sort();
    for case in cases {
        n += 1;
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let args: Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("args.json")).unwrap())
                .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("w");
        std::fs::create_dir_all(&work).unwrap();
        copy_tree(&case.join("input"), &work);
        let rc = run_port(&args, &work);
        let want_rc: u8 = std::fs::read_to_string(case.join("expected.rc"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if rc != want_rc {
            failures.push(format!("{name}: exit {rc}, Python exited {want_rc}"));
        }
        let (got, want) = (tree(&work), tree(&case.join("expected")));
        let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
        if names(&got) != names(&want) {
            failures.push(format!(
                "{name}: files {:?}, Python left {:?}",
                names(&got),
                names(&want)
            ));
            continue;
        }
        for (file, bytes) in &want {
            if &got[file] != bytes {
                failures.push(format!(
                    "{name}/{file} differs:\n--- python\n{}\n--- servebench\n{}",
                    String::from_utf8_lossy(bytes),
                    String::from_utf8_lossy(&got[file])
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    n
}

/// `_parse_timestamp` as the real tool answered for each string (timestamps.json), except
/// the documented deviation: other Unicode digits than ASCII.
fn check_timestamps(file: &Path) {
    std::env::set_var("TZ", "UTC");
    let cases: Vec<(String, Option<f64>)> =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert!(cases.len() >= 40);
    let mut bad = Vec::new();
    for (s, want) in cases {
        if s.chars().any(|c| c.is_numeric() && !c.is_ascii_digit()) {
            continue;
        }
        let got = servebench_metrics::power::parse::parse_timestamp(&s);
        if got.map(f64::to_bits) != want.map(f64::to_bits) {
            bad.push(format!("{s:?}: python {want:?}, servebench {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn timestamps_parse_as_python_parses_them() {
    check_timestamps(&Path::new(DATA).join("timestamps.json"));
}

#[test]
fn committed_goldens_are_byte_identical() {
    let n = check_cases(Path::new(DATA));
    assert!(n >= 60, "only {n} cases in {DATA}");
}

/// The InferenceX tree (utils/) extracted from the shared tarball, or why not.
fn inferencex_root(dir: &Path) -> Result<PathBuf, String> {
    Command::new("python3")
        .arg("--version")
        .output()
        .map_err(|e| format!("python3 is not runnable: {e}"))?;
    let shared = std::env::var("SERVEBENCH_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string());
    let tarball = Path::new(&shared).join("data/inferencex/repo-843c6254f.tar.gz");
    if !tarball.is_file() {
        return Err(format!(
            "{} not found (set SERVEBENCH_SHARED)",
            tarball.display()
        ));
    }
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .arg("InferenceX/utils")
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !st.success() {
        return Err(format!("tar -xzf {} failed", tarball.display()));
    }
    Ok(dir.join("InferenceX"))
}

#[test]
fn python_today_writes_the_committed_goldens() {
    let tmp = tempfile::tempdir().unwrap();
    let root = match inferencex_root(tmp.path()) {
        Ok(r) => r,
        Err(why) => {
            // skipped, or a failure under SERVEBENCH_REQUIRE_SERVICES=1
            servebench_testkit::skip_or_fail(&why);
            return;
        }
    };
    let out = tmp.path().join("cases");
    let st = Command::new("python3")
        .arg(Path::new(DATA).join("make_goldens.py"))
        .arg("--ix")
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "make_goldens.py failed");
    // The real tools, run now, write what is committed …
    // (Case files only: the top level holds the script, README and timestamps.json.)
    let cases = |t: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        t.into_iter().filter(|(k, _)| k.contains('/')).collect()
    };
    let (live, committed) = (cases(tree(&out)), cases(tree(Path::new(DATA))));
    let only = |a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>| {
        a.keys()
            .filter(|k| !b.contains_key(*k))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(
        only(&live, &committed).is_empty() && only(&committed, &live).is_empty(),
        "regenerate (see README.md): only live {:?}, only committed {:?}",
        only(&live, &committed),
        only(&committed, &live)
    );
    for (k, v) in &live {
        assert!(
            committed[k] == *v,
            "{k}: the live Python output differs from the golden"
        );
    }
    assert_eq!(
        std::fs::read_to_string(out.join("timestamps.json")).unwrap(),
        std::fs::read_to_string(Path::new(DATA).join("timestamps.json")).unwrap()
    );
    // … and servebench writes the same from the fresh inputs.
    check_cases(&out);
    check_timestamps(&out.join("timestamps.json"));
}
