//! The extras observer on a real sweep against the simulator: goodput, steady window,
//! bootstrap and t-intervals land in summary.json; without the observer summary.json has no
//! `extras` key (the default output is untouched).

use servebench_metrics::goodput::Slo;
use servebench_pipeline::{run_sweep, FixedPlan, SweepPlan, Workload};
use servebench_slo::{ExtrasObserver, ExtrasOptions};

fn plan(dir: &std::path::Path) -> SweepPlan {
    let mut p = SweepPlan::default();
    p.concurrencies = vec![4];
    p.workload = Workload::FixedSequence(FixedPlan {
        isl: 32,
        osl: 32,
        range_ratio: 1.0,
        num_prompts: Some(20),
        warmups: Some(0),
        ..FixedPlan::default()
    });
    p.sim.speedup = Some(10.0);
    p.db = None;
    p.out = Some(dir.to_path_buf());
    p
}

fn summary(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn extras_in_summary_and_default_untouched() {
    let base = tempfile::tempdir().unwrap();
    let plain = base.path().join("plain");
    assert_eq!(run_sweep(plan(&plain), Vec::new()).unwrap().exit, 0);
    assert!(
        summary(&plain).get("extras").is_none(),
        "default output unchanged"
    );

    let dir = base.path().join("extras");
    let mut p = plan(&dir);
    p.repeats = 2;
    let opts = ExtrasOptions {
        // every request meets a 1,000 s E2EL; nobody meets a 1 µs TTFT
        slo: Some(Slo::parse("e2el=1000s,ttft=1000s@p99").unwrap()),
        steady: true,
        confidence: true,
        seed: 7,
        ..ExtrasOptions::off()
    };
    let obs = ExtrasObserver::new(opts, false);
    let out = run_sweep(p, vec![Box::new(obs)]).unwrap();
    assert_eq!(out.exit, 0);
    // the observers got each point's records in memory: exactly its records.jsonl (compared
    // by start time and id: two requests finishing together may reach the file and the
    // in-memory list in either order)
    for pt in &out.points {
        let by_start = |mut v: Vec<servebench_client::RequestRecord>| {
            v.sort_by_key(|r| (r.t0_ns, r.id));
            v
        };
        let on_disk = servebench_client::read_records(&pt.spec.dir.join("records.jsonl")).unwrap();
        assert_eq!(on_disk.len(), 20);
        assert_eq!(
            by_start(pt.records.to_vec()),
            by_start(on_disk),
            "{}",
            pt.spec.label()
        );
    }
    // one writer: the typed document's own text (pretty, final newline), extras included
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let doc: servebench_contracts::SummaryDoc = serde_json::from_str(&text).unwrap();
    assert_eq!(text, doc.file_text());
    assert_eq!(doc.extras.as_ref().map(|e| e.points.len()), Some(2));
    let s = summary(&dir);
    let e = &s["extras"];
    assert_eq!(e["slo"], "ttft=1000000ms,e2el=1000000ms@p99");
    assert_eq!(e["window"], "steady");
    let points = e["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "two repeats of conc 4");
    for pt in points {
        let g = &pt["goodput"];
        assert_eq!(
            (g["requests"].as_u64(), g["good"].as_u64()),
            (Some(20), Some(20))
        );
        assert_eq!(g["meets_slo"], true);
        let w = &pt["steady"]["window"];
        let (inside, ramp, drain) = (
            w["inside"].as_u64().unwrap(),
            w["outside_rampup"].as_u64().unwrap(),
            w["outside_drain"].as_u64().unwrap(),
        );
        assert_eq!(inside + ramp + drain, 20);
        // the first 3 lanes start before the 4th: the window opens at the 4th start
        assert_eq!(ramp, 3, "{w}");
        assert!(drain >= 1 && inside >= 10, "{w}");
        let st = &pt["steady"];
        let (a, b, d) = (
            st["start_s"].as_f64().unwrap(),
            st["end_s"].as_f64().unwrap(),
            st["duration_s"].as_f64().unwrap(),
        );
        assert!(a < b && ((b - a) - d).abs() < 1e-6, "{st}");
        // modelled time = wall × speedup 10
        assert!(
            (d - w["end_s"].as_f64().unwrap() * 10.0 + w["start_s"].as_f64().unwrap() * 10.0).abs()
                < 1e-6
        );
        let keys: Vec<&str> = pt["bootstrap"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["key"].as_str().unwrap())
            .collect();
        assert!(keys.contains(&"median_ttft_ms") && keys.contains(&"p99_itl_ms"));
        // 20 requests: p99 of TTFT is a small-sample estimate, p90 is not
        let small: Vec<&str> = pt["small_sample"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert!(small.contains(&"p99_ttft_ms") && !small.contains(&"p90_ttft_ms"));
    }
    let reps = e["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 1);
    assert_eq!(reps[0]["repeats"], 2);
    let ci = &reps[0]["intervals"]["tput_per_gpu"];
    assert_eq!(ci["method"], "t_interval");
    assert!(ci["half_width"].as_f64().unwrap() >= 0.0);
    // the agg rows themselves are untouched: no goodput keys in them
    assert!(s["points"][0].get("goodput_rps").is_none());
}
