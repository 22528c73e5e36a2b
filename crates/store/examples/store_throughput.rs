//! Store throughput: N points (distinct concurrencies of one config) added to one run, each its
//! own transaction as a sweep adds them, into a SQLite file or a PostgreSQL database; prints the
//! elapsed time and rate (docs/benchmarks.md §10).
//!
//! ```text
//! cargo run --release -p servebench-store --example store_throughput -- DB [N]
//! ```
//! `DB`: a SQLite path (created; must not exist) or `postgres://…` (an empty database).

use std::time::Instant;

use servebench_contracts::{AggRow, PointStatus, StatRow};
use servebench_store::{RunKind, RunMeta, RunStatus, Store};

fn row(conc: u64) -> AggRow {
    let stat = |x: f64| StatRow {
        mean: Some(x),
        median: Some(x),
        std: Some(0.0),
        p90: Some(x),
        p99: Some(x),
        p99_9: Some(x),
    };
    AggRow {
        identity: servebench_contracts::Identity {
            isl: Some(1024),
            osl: Some(1024),
            ..servebench_contracts::Identity::single_node(
                "h200",
                "lmsysorg/sglang:v0.5",
                "Qwen/Qwen3-8B",
                "qwen3",
                "sglang",
                "bf16",
            )
        },
        conc: Some(conc),
        tput_per_gpu: 1234.5 + conc as f64,
        output_tput_per_gpu: 600.25,
        input_tput_per_gpu: 634.25,
        ttft: stat(0.12),
        tpot: stat(0.01),
        itl: stat(0.01),
        e2el: stat(10.5),
        intvty: stat(100.0),
        schema_version: 1,
        api: "completions".into(),
        engine: "sglang".into(),
        endpoint: "http://127.0.0.1:8000".into(),
        itl_mode: "chunk".into(),
        compat: "servebench".into(),
        num_gpus: 1,
        num_requests_total: 40,
        num_requests_successful: 40,
        num_requests_failed: 0,
        failure_reasons: Default::default(),
        point_status: PointStatus::Ok,
        duration: 30.0,
        request_throughput: 1.25,
        output_throughput: 600.25,
        total_token_throughput: 1234.5,
        input_throughput: 634.25,
        mean_isl: Some(1024.0),
        mean_isl_server: None,
        mean_osl: Some(1024.0),
        records_file: format!("conc{conc}/records.jsonl"),
        invalid_reasons: Vec::new(),
        power: None,
        multinode: None,
        extra: Default::default(),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let db = args.next().expect("usage: store_throughput DB [N]");
    let n: u64 = args.next().map_or(10_000, |s| s.parse().expect("N"));
    let rows: Vec<AggRow> = (1..=n).map(row).collect();
    let t0 = Instant::now();
    let mut s = Store::open(&db).unwrap_or_else(|e| panic!("{e:#}"));
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    let t1 = Instant::now();
    for r in &rows {
        s.add_point(run, r).unwrap();
    }
    s.finish_run(run, RunStatus::Ok).unwrap();
    let dt = t1.elapsed().as_secs_f64();
    let stored = s.get_run(run).unwrap().unwrap().n_points;
    assert_eq!(stored, n, "every point stored");
    println!(
        "{}: {n} points in {dt:.2} s ({:.0} points/s, {:.3} ms each; open {:.2} s)",
        s.path().display(),
        n as f64 / dt,
        dt * 1000.0 / n as f64,
        (t1 - t0).as_secs_f64()
    );
}
