//! The typed documents of `servebench-contracts` read the files a real `servebench sweep`
//! writes (embedded simulator) and write them back byte for byte: every point's
//! `result.json` as a `ResultDoc`, `summary.json` as a `SummaryDoc` — a plain sweep, and one
//! with `--repeats 2 --ci --slo --window steady`, whose summary carries the `extras` the slo
//! observer adds (rewritten by it without the final newline). The values read are the ones
//! the files hold (spot checks against the untyped JSON), so a field read into the wrong
//! place cannot pass.

use crate::common;
use common::{agentx_traces, ok, read_json, servebench_in, stderr, stdout};

use std::path::Path;

use serde_json::Value;

use servebench_metrics::{RequestRate, ResultDoc, ResultFile, SummaryDoc};

fn sweep(dir: &Path, out: &str, extra: &[&str]) {
    let o = servebench_in(dir)
        .args([
            "sweep",
            "--conc",
            "1,3",
            "--isl",
            "64",
            "--osl",
            "8",
            "--num-prompts",
            "12",
            "--no-store",
            "--out",
            out,
        ])
        .args(extra)
        .output()
        .unwrap();
    ok(&o);
}

/// Reads `result.json` of a point as a typed document and checks it writes back the same
/// bytes; returns the document.
fn round_trip_result(path: &Path) -> ResultDoc {
    let text = std::fs::read_to_string(path).unwrap();
    let file: ResultFile = serde_json::from_str(&text).unwrap();
    let ResultFile::Single(doc) = &file else {
        panic!("{}: not read as a fixed-sequence ResultDoc", path.display());
    };
    assert_eq!(
        file.file_text(),
        text,
        "{}: typed result does not write back byte for byte",
        path.display()
    );
    // and straight into the struct (not through the enum)
    let direct: ResultDoc = serde_json::from_str(&text).unwrap();
    assert_eq!(&direct, doc.as_ref());
    *doc.clone()
}

/// Reads `summary.json` as a typed document and checks it writes back the same bytes (with
/// the final newline the file output writes; `extras` included: the file has one writer).
fn round_trip_summary(path: &Path) -> SummaryDoc {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: SummaryDoc = serde_json::from_str(&text).unwrap();
    let again = doc.file_text();
    assert_eq!(
        again,
        text,
        "{}: typed summary does not write back byte for byte",
        path.display()
    );
    doc
}

/// Keys of `v` against the generated schema `schema` (`docs/schema/*.schema.json`), nested
/// objects included: every required key present, no key outside `properties` where
/// `additionalProperties` is false.
fn check_keys(v: &Value, schema: &Value, at: &str) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let Some(obj) = v.as_object() else {
        return; // null where the schema allows it
    };
    for k in schema["required"].as_array().into_iter().flatten() {
        let k = k.as_str().unwrap();
        assert!(obj.contains_key(k), "{at}: required key `{k}` missing");
    }
    for (k, val) in obj {
        match props.get(k) {
            Some(p) => check_keys(val, p, &format!("{at}.{k}")),
            None => assert!(
                schema.get("additionalProperties") != Some(&Value::Bool(false)),
                "{at}: key `{k}` is not in the generated schema"
            ),
        }
    }
}

fn schema(file: &str) -> Value {
    read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/schema")
            .join(file),
    )
}

#[test]
fn sweep_files_round_trip_through_the_typed_documents() {
    let tmp = tempfile::tempdir().unwrap();
    sweep(tmp.path(), "plain", &[]);
    let d = tmp.path().join("plain");
    for conc in [1u64, 3] {
        let path = d.join(format!("conc{conc}/result.json"));
        let doc = round_trip_result(&path);
        let v = read_json(&path);
        check_keys(&v, &schema("result.schema.json"), "result.json");
        assert_eq!(doc.max_concurrency, Some(conc));
        assert_eq!(doc.num_prompts, 12);
        assert_eq!(doc.completed, v["completed"].as_u64().unwrap());
        assert_eq!(doc.input_lens.len(), 12);
        assert_eq!(
            doc.request_rate,
            RequestRate::Infinite,
            "closed loop: \"inf\""
        );
        assert_eq!(
            doc.p99_9_tpot_ms,
            v["p99.9_tpot_ms"].as_f64(),
            "p99.9 key read into p99_9"
        );
        assert_eq!(doc.mean_e2el_ms, v["mean_e2el_ms"].as_f64());
        assert!(v["request_goodput:"].is_null());
        let sim = doc.servebench.simulator.as_ref().expect("simulator block");
        assert_eq!(Some(sim.speedup), v["servebench"]["time_scale"].as_f64());
        assert_eq!(
            Some(doc.servebench.ttfo_ms.n),
            v["servebench"]["ttfo_ms"]["n"].as_u64()
        );
        assert_eq!(doc.servebench.records_file, "records.jsonl");
    }
    let s = round_trip_summary(&d.join("summary.json"));
    check_keys(
        &read_json(&d.join("summary.json")),
        &schema("summary.schema.json"),
        "summary.json",
    );
    assert_eq!(s.concurrencies, [1, 3]);
    assert_eq!(s.points.len(), 2);
    assert_eq!(s.points[1].conc, Some(3));
    assert!(s.store.is_none() && s.extras.is_none() && !s.interrupted);
    assert_eq!(s.repeats, 1);
}

#[test]
fn repeats_and_extras_round_trip_through_the_typed_documents() {
    let tmp = tempfile::tempdir().unwrap();
    sweep(
        tmp.path(),
        "x",
        &[
            "--repeats",
            "2",
            "--ci",
            "--slo",
            "ttft=60ms,tpot=6ms@p90",
            "--window",
            "steady",
        ],
    );
    let d = tmp.path().join("x");
    for conc in [1, 3] {
        for r in [1u32, 2] {
            let doc = round_trip_result(&d.join(format!("conc{conc}-r{r}/result.json")));
            assert_eq!((doc.servebench.repeat, doc.servebench.repeats), (r, 2));
        }
    }
    let s = round_trip_summary(&d.join("summary.json"));
    check_keys(
        &read_json(&d.join("summary.json")),
        &schema("summary.schema.json"),
        "summary.json",
    );
    assert_eq!(s.points.len(), 4);
    let extras = s.extras.as_ref().expect("--ci/--slo write extras");
    assert_eq!(extras.slo.as_deref(), Some("ttft=60ms,tpot=6ms@p90"));
    assert_eq!(extras.window, "steady");
    assert!(extras.confidence.as_ref().is_some_and(|c| c.level == 0.95));
    assert_eq!(extras.points.len(), 4);
    assert_eq!(
        extras
            .points
            .iter()
            .map(|p| (p.conc, p.repeat))
            .collect::<Vec<_>>(),
        [(1, 1), (1, 2), (3, 1), (3, 2)]
    );
    assert!(
        !extras.points[0].bootstrap_half_widths().is_empty(),
        "--ci: request bootstrap half-widths per point"
    );
    assert_eq!(extras.repeats.len(), 2, "t-intervals per concurrency");
}

/// An AgentX point's `result.json` reads as an `AgentxResultDoc` (servebench-contracts; not
/// the fixed-sequence type, not untyped JSON) and writes back byte for byte; its `servebench`
/// block holds what the file holds and the keys the generated schema lists; its aggregate is
/// the point's `agentx.json`.
#[test]
fn agentx_result_round_trips_through_its_typed_document() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = agentx_traces(tmp.path(), &["trace_0504.json", "trace_0167.json"]);
    let o = servebench_in(tmp.path())
        .args([
            "sweep",
            "--scenario",
            "agentx",
            "--conc",
            "2",
            "--duration",
            "6",
        ])
        .arg("--traces")
        .arg(&traces)
        .args(["--no-store", "--out", "ax"])
        .output()
        .unwrap();
    // a short window is not a valid InferenceX submission (unsafe_override): measured, exit 1
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("not a valid InferenceX submission"),
        "{}",
        stdout(&o)
    );
    let path = tmp.path().join("ax/conc2/result.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let file: ResultFile = serde_json::from_str(&text).unwrap();
    let ResultFile::Agentx(doc) = &file else {
        panic!("AgentX result.json not read as an AgentxResultDoc: {file:?}");
    };
    assert_eq!(
        file.file_text(),
        text,
        "typed AgentX result does not write back byte for byte"
    );
    let v = read_json(&path);
    check_keys(&v, &schema("agentx-result.schema.json"), "result.json");
    let sb = &doc.servebench;
    assert_eq!(sb.records_file, "agentx_records.jsonl");
    assert_eq!((sb.repeat, sb.repeats), (1, 1));
    assert!(sb.short_window, "6 s < 900 s");
    assert_eq!(sb.submission_invalid_reasons, ["unsafe_override"]);
    assert_eq!(Some(sb.time_scale), v["servebench"]["time_scale"].as_f64());
    assert_eq!(
        Some(sb.context_overflow_requests.profiling_responses),
        v["servebench"]["context_overflow_requests"]["profiling_responses"].as_u64()
    );
    assert!(sb.context_overflow_requests.profiling_responses > 0);
    // the simulator says per request what its prefix cache held (vLLM's usage shape)
    let rc = &sb.server_reported_cache;
    assert!(
        rc.requests > 0 && rc.requests_reporting == rc.requests,
        "{rc:?}"
    );
    assert!(rc.hit_rate.is_some_and(|h| h > 0.0 && h <= 1.0), "{rc:?}");
    assert_eq!(file.time_scale(), sb.time_scale);
    // summary.json: typed, and without the fixed-sequence shape the replay did not use
    let summary = round_trip_summary(&tmp.path().join("ax/summary.json"));
    assert_eq!(
        (summary.isl, summary.osl, summary.range_ratio, summary.seed),
        (None, None, None, None)
    );
    assert_eq!(
        (
            summary.api.as_str(),
            summary.request_rate,
            summary.burstiness
        ),
        ("chat", None, None)
    );
    // the aggregate part is agentx.json, key for key
    let agentx = read_json(&tmp.path().join("ax/conc2/agentx.json"));
    assert_eq!(Value::Object(doc.aggregate.clone()), agentx);
    // the table's row (agg.json) and the AgentX aggregate count input tokens alike (the
    // server's usage, the harness's --use-server-token-count): same tok/s/GPU on one GPU
    let agg = read_json(&tmp.path().join("ax/conc2/agg.json"));
    let thr = &agentx["request_metrics"]["throughput"]["per_gpu"];
    for (row, ax) in [
        ("tput_per_gpu", "total_tput_tps"),
        ("input_tput_per_gpu", "input_tput_tps"),
        ("output_tput_per_gpu", "output_tput_tps"),
    ] {
        let (a, b) = (agg[row].as_f64().unwrap(), thr[ax].as_f64().unwrap());
        assert!(
            (a - b).abs() <= 0.01,
            "{row} {a} vs agentx.json {ax} {b}: {thr}"
        );
    }
}
