//! A point's energy in PostgreSQL: servebench_points' energy columns (as SQLite's), InferenceX's
//! `benchmark_results.metrics` holding energy numbers only when measured (a modelled point's
//! numbers stay in servebench's table), and a schema-1 store migrating into both.

use crate::common::pg::{admin_sql, fresh_db, query_text};
use crate::common::{energy_rows, ENERGY_COLUMNS};
use servebench_store::{RunKind, RunMeta, Store, StoredRow, PG_SCHEMA_VERSION};

/// The energy columns in `common::ENERGY_COLUMNS`' spelling, in insertion order.
fn columns(url: &str) -> Vec<String> {
    query_text(
        url,
        "SELECT string_agg(coalesce(power_source, '-') || '|' || coalesce(power_valid::text, '-')
                || '|' || coalesce(avg_power_w::text, '-') || '|'
                || coalesce(joules_per_output_token::text, '-'), ',' ORDER BY id)
         FROM servebench_points",
    )
    .split(',')
    .map(str::to_string)
    .collect()
}

/// The energy keys of InferenceX's `metrics` per concurrency: `conc:key=value;…`.
fn ix_metrics(url: &str) -> String {
    query_text(
        url,
        "SELECT string_agg(conc || ':' || (SELECT coalesce(string_agg(k || '=' || (metrics->>k), ';'
                ORDER BY k), '') FROM jsonb_object_keys(metrics) k
                WHERE k LIKE 'power%' OR k LIKE 'joules%' OR k LIKE '%power_w'), ' ' ORDER BY conc)
         FROM benchmark_results",
    )
}

#[test]
fn energy_columns_and_inferencex_metrics_and_a_schema_1_store_migrates() {
    let Some(url) = fresh_db("sb_energy") else {
        return;
    };
    let mut s = Store::open(&url).unwrap();
    let run = s.record_run(&RunMeta::new(RunKind::Sweep)).unwrap();
    let want = energy_rows();
    for r in &want {
        s.add_point(run, r).unwrap();
    }
    let back: Vec<_> = s
        .points(run)
        .unwrap()
        .into_iter()
        .map(|p| match p.row {
            StoredRow::Servebench(r) => r,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(back, want, "energy round-trips in the row");
    drop(s);
    assert_eq!(columns(&url), ENERGY_COLUMNS);
    // InferenceX's metrics: numbers only for the measured point, power_valid for all three
    let ix = "1:power_metric_schema_version=2;power_valid=0 \
              4: \
              8:power_metric_schema_version=2;power_valid=0 \
              32:avg_power_w=317.0;avg_total_gpu_power_w=317.0;joules_per_input_token=0.098275;\
              joules_per_output_token=1.509453;joules_per_successful_query=100.63;\
              joules_per_total_token=0.092251;power_metric_schema_version=2;power_valid=1";
    assert_eq!(ix_metrics(&url), ix);

    // schema 1: no energy columns, the modelled numbers in metrics (as version 1 wrote them)
    admin_sql(
        &url,
        "DROP INDEX servebench_points_energy;
         ALTER TABLE servebench_points DROP COLUMN power_source, DROP COLUMN power_valid,
           DROP COLUMN avg_power_w, DROP COLUMN total_gpu_energy_j,
           DROP COLUMN joules_per_output_token, DROP COLUMN joules_per_total_token;
         UPDATE benchmark_results SET metrics = metrics
           || '{\"avg_power_w\": 350.0, \"joules_per_output_token\": 2.053}'::jsonb WHERE conc = 1;
         UPDATE servebench_schema SET version = 1;",
    );
    let s = Store::open(&url).unwrap();
    assert_eq!(s.schema_version().unwrap(), PG_SCHEMA_VERSION);
    assert_eq!(s.points(run).unwrap().len(), 4);
    drop(s);
    assert_eq!(columns(&url), ENERGY_COLUMNS, "filled from the rows");
    assert_eq!(
        ix_metrics(&url),
        ix,
        "modelled numbers left InferenceX's metrics"
    );
}
