//! `servebench search` and the sweep's `--slo` through the binary: bad specs are one line
//! naming the bad part before anything runs; a short search against the simulator writes
//! search.json and prints the knee.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_servebench"))
}

#[test]
fn bad_slo_is_one_line_naming_the_part() {
    for args in [
        vec!["search", "--slo", "ttft=500ms,foo=1ms", "--no-store"],
        vec!["sweep", "--slo", "tpot=fast", "--no-store"],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        let part = if args[0] == "search" {
            "foo=1ms"
        } else {
            "tpot=fast"
        };
        assert!(lines[0].contains(part), "{args:?}: {err}");
    }
}

#[test]
fn short_search_on_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("s");
    let out = bin()
        .args([
            "search",
            "--slo",
            "e2el=600s",
            "--metric",
            "conc",
            "--start",
            "1",
            "--max",
            "2",
            "--isl",
            "16",
            "--osl",
            "8",
            "--range-ratio",
            "1",
            "--warmups",
            "0",
            "--prompts-per-lane",
            "2",
            "--sim-speedup",
            "10",
            "--no-store",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("knee ≥ conc 2: the SLO is still met at the highest load allowed"),
        "{stdout}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("search.json")).unwrap())
            .unwrap();
    assert_eq!(r["outcome"], "above_max");
    assert_eq!(r["probes"].as_array().unwrap().len(), 2);
    assert!(out_dir.join("probe-1-conc1/conc1/records.jsonl").is_file());
}
