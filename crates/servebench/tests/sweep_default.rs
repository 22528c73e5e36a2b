//! The README command `servebench sweep` (no arguments) finishes in under 60 s against the
//! embedded simulator and writes every file of the output layout (contract.md).

use crate::common;
use common::{check_schema, read_json, read_jsonl};

use std::process::Command;
use std::time::Instant;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_servebench"));
    c.env(
        "SERVEBENCH_DB",
        std::env::temp_dir().join("servebench-tests-scratch.db"),
    );
    c
}

#[test]
fn default_sweep_finishes_under_a_minute_with_all_files() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o = bin().arg("sweep").current_dir(dir.path()).output().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(secs < 60.0, "took {secs:.1} s");
    assert!(
        stdout.contains("simulated 1× H200"),
        "says what was simulated:\n{stdout}"
    );
    assert!(
        stdout.contains("| Concurrency | Total tok/s/GPU | Output tok/s/GPU | TTFT ms | TPOT ms |"),
        "{stdout}"
    );
    let results = stdout
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .expect("results path printed");
    let out = dir.path().join(results);
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["schema_version"], 1);
    check_schema(&summary, "summary.schema.json");
    let points = summary["points"].as_array().unwrap();
    assert_eq!(
        points
            .iter()
            .map(|p| p["conc"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 4, 8, 16]
    );
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    let mut prev_tput = 0.0;
    for p in points {
        let c = p["conc"].as_u64().unwrap();
        let d = out.join(format!("conc{c}"));
        let raw = read_json(&d.join("result.json"));
        check_schema(&raw, "result.schema.json");
        check_schema(p, "agg-row.schema.json");
        for r in read_jsonl(&d.join("records.jsonl")) {
            check_schema(&r, "record.schema.json");
        }
        assert_eq!(raw["completed"].as_u64().unwrap(), 10 * c);
        assert_eq!(read_json(&d.join("agg.json")), *p);
        assert_eq!(read_jsonl(&d.join("records.jsonl")).len() as u64, 12 * c);
        assert_eq!(p["point_status"], "ok");
        let tput = p["tput_per_gpu"].as_f64().unwrap();
        assert!(
            tput > prev_tput,
            "throughput grows with concurrency on the simulator"
        );
        prev_tput = tput;
        // 1k/1k: mean ISL/OSL ≈ 0.9 × nominal (range ratio 0.8)
        let isl = p["mean_isl"].as_f64().unwrap();
        assert!((819.0..=1024.0).contains(&isl), "{isl}");
        assert_eq!(
            p["mean_isl_server"], p["mean_isl"],
            "calibrated counts equal the server's"
        );
    }
}
