//! Issue 32: a multinode point of the real repository under `run --simulate` runs its
//! prefill/decode fleet on the virtual clock by default — inside the point's sweep
//! (`sweep --sim-prefill … --sim-decode … --sim-router …`), not as a wall-clock `servebench sim`
//! played back ×20 — so two runs of the point store byte-identical rows and sweep aggregates.

use crate::common;
use common::run_in;
use common::runs::{find_files, real_args, real_repo, stored_rows};

#[test]
fn a_fleet_point_on_the_virtual_clock_stores_byte_identical_rows_twice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if real_repo(d).is_none() {
        return;
    }
    let mut rows = Vec::new();
    let mut aggs = Vec::new();
    for i in 0..2 {
        let out = d.join(format!("out{i}"));
        let db = d.join(format!("run{i}.db"));
        let args = real_args(
            "run",
            &["dsr1-fp4-gb200-dynamo-trt"],
            &[
                "--simulate",
                "--no-evals",
                "--conc",
                "4",
                "--num-prompts",
                "8",
                "--warmups",
                "0",
                "--isl",
                "1024",
                "--osl",
                "64",
                "--out",
                out.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ],
        );
        let (rc, so, se) = run_in(d, &args);
        assert_eq!(rc, 0, "{so}\n{se}");
        assert!(so.contains("stored 1 row"), "{so}");
        // the sweep itself runs the fleet, on the virtual clock
        let log = std::fs::read_to_string(&find_files(&out.join("points"), "job.log")[0]).unwrap();
        let measuring = log.lines().find(|l| l.contains("measuring: ")).unwrap();
        for f in [
            "--sim-clock virtual",
            "--sim-gpu gb200",
            "--sim-prefill 1x4/ep4/dpa",
            "--sim-decode 4x8/ep8",
            "--sim-router round-robin",
        ] {
            assert!(measuring.contains(f), "{f}: {measuring}");
        }
        let mlog =
            std::fs::read_to_string(&find_files(&out.join("points"), "measure.log")[0]).unwrap();
        assert!(
            mlog.contains("on the virtual clock")
                && mlog.contains("disaggregated 1×TP4/EP4/DPA prefill + 4×TP8/EP8 decode"),
            "{mlog}"
        );
        let runs = stored_rows(&db);
        let pts = runs.last().unwrap();
        assert_eq!(pts.len(), 1);
        let v = pts[0].to_value();
        assert_eq!(v["is_multinode"], true, "{v}");
        assert_eq!(
            (v["num_prefill_gpu"].as_u64(), v["num_decode_gpu"].as_u64()),
            (Some(4), Some(32)),
            "{v}"
        );
        assert!(v["median_ttft"].as_f64().unwrap() > 0.0, "{v}");
        rows.push(serde_json::to_string(&v).unwrap());
        let agg = find_files(&out.join("points"), "agg.json");
        assert_eq!(agg.len(), 1, "{agg:?}");
        aggs.push(std::fs::read(&agg[0]).unwrap());
    }
    assert_eq!(rows[0], rows[1], "stored rows of two virtual runs differ");
    assert!(
        aggs[0] == aggs[1],
        "sweep agg.json of two virtual runs differ"
    );
}
