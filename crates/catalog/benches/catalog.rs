//! Validate and expand the whole real catalog (issue 6 budget: < 100 ms).
//!
//! `load_validate_expand`: read + parse + validate `nvidia-master.yaml` and `amd-master.yaml`
//! (all rules), read `runners.yaml`, then `full-sweep` over every config with the default eval
//! marking — the same work as `servebench matrix full-sweep --config-files … --runner-config …`.

use criterion::{criterion_group, criterion_main, Criterion};
use servebench_catalog::matrix::{generate, Common, FullSweep, Mode};
use servebench_catalog::{Catalog, Runners};

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex"
);

fn bench(c: &mut Criterion) {
    let files = vec![
        format!("{DATA}/nvidia-master.yaml"),
        format!("{DATA}/amd-master.yaml"),
    ];
    let runners_file = format!("{DATA}/runners.yaml");
    let mode = Mode::FullSweep(FullSweep::default());
    let common = Common::default();
    c.bench_function("load_validate_expand_whole_catalog", |b| {
        b.iter(|| {
            let catalog = Catalog::load(&files).unwrap();
            let runners = Runners::load(&runners_file).unwrap();
            let rows = generate(&mode, &common, &catalog, &runners).unwrap();
            assert!(rows.len() > 1000);
            rows.len()
        })
    });
    let catalog = Catalog::load(&files).unwrap();
    let runners = Runners::load(&runners_file).unwrap();
    c.bench_function("expand_only_whole_catalog", |b| {
        b.iter(|| generate(&mode, &common, &catalog, &runners).unwrap().len())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
