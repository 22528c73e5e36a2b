//! Bootstrap (seeded), t-interval and the small-sample rule, with hand-computed values.

use servebench_metrics::confidence::{
    bootstrap_ci, fmt_pm, is_small_sample, mark_small, min_samples, named_stat, point_bootstrap,
    t_975, t_interval, CiMethod, SplitMix64,
};

#[test]
fn splitmix64_reference_outputs() {
    // Steele/Lea/Flood reference generator from state 0
    let mut g = SplitMix64::new(0);
    assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
    assert_eq!(g.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    assert_eq!(g.next_u64(), 0x06c4_5d18_8009_454f);
    // index = ⌊u·n/2⁶⁴⌋: for n = 2 the top bit of each output
    let mut g = SplitMix64::new(0);
    assert_eq!((g.index(2), g.index(2), g.index(2)), (1, 0, 0));
}

#[test]
fn bootstrap_is_seeded_and_resamples_requests() {
    // one resample from seed 0 draws requests 1 then 0 (top bits above): pooled [20, 10]
    let groups: [&[f64]; 2] = [&[10.0], &[20.0]];
    let first = |v: &mut Vec<f64>| v.first().copied();
    let ci = bootstrap_ci(&groups, first, 1, 0).unwrap();
    assert_eq!(
        (ci.value, ci.lo, ci.hi, ci.half_width),
        (10.0, 20.0, 20.0, 0.0)
    );
    assert_eq!((ci.n, ci.method), (2, CiMethod::Bootstrap));

    // means of 2 draws from {0, 1} are 0, ½, 1 with probabilities ¼ ½ ¼: with 1,000
    // resamples the 2.5th and 97.5th percentiles are 0 and 1
    let groups: [&[f64]; 2] = [&[0.0], &[1.0]];
    let mean = |v: &mut Vec<f64>| named_stat("mean", v);
    let ci = bootstrap_ci(&groups, mean, 1000, 42).unwrap();
    assert_eq!(
        (ci.value, ci.lo, ci.hi, ci.half_width),
        (0.5, 0.0, 1.0, 0.5)
    );
    assert_eq!(ci.fmt(2), "0.50 ± 0.50");
    // same seed → same interval; constant data → zero width
    let a = bootstrap_ci(
        &[&[1.0, 5.0][..], &[2.0], &[9.0, 9.0, 3.0]],
        |v| named_stat("p90", v),
        500,
        7,
    );
    let b = bootstrap_ci(
        &[&[1.0, 5.0][..], &[2.0], &[9.0, 9.0, 3.0]],
        |v| named_stat("p90", v),
        500,
        7,
    );
    assert_eq!(a, b);
    let c = bootstrap_ci(
        &[&[4.0][..], &[4.0], &[4.0]],
        |v| named_stat("median", v),
        200,
        1,
    )
    .unwrap();
    assert_eq!((c.value, c.half_width), (4.0, 0.0));
    // a request's samples travel together: groups [1,1,1,1] and [9] — every resample's pooled
    // median is 1 or 9 (never a mix like 5), so the interval ends are exactly 1 and 9
    let g: [&[f64]; 2] = [&[1.0, 1.0, 1.0, 1.0], &[9.0]];
    let m = bootstrap_ci(&g, |v| named_stat("median", v), 1000, 3).unwrap();
    assert_eq!((m.value, m.lo, m.hi), (1.0, 1.0, 9.0));
    assert!(bootstrap_ci(&[], mean, 10, 0).is_none());
}

#[test]
fn t_interval_across_repeats() {
    // B20's baseline repeats: mean 106.6, s = 9.2087 (n − 1), t(0.975, 4) = 2.7764
    let ci = t_interval(&[100.0, 112.0, 95.0, 108.0, 118.0]).unwrap();
    assert!((ci.value - 106.6).abs() < 1e-12);
    assert!((ci.half_width - 2.7764 * 9.208_691_546_577_07 / 5f64.sqrt()).abs() < 1e-9);
    assert!((ci.half_width - 11.4339).abs() < 1e-4);
    assert_eq!(ci.fmt(1), "106.6 ± 11.4");
    assert_eq!((ci.n, ci.method), (5, CiMethod::TInterval));
    assert!(t_interval(&[1.0]).is_none());
    assert_eq!(t_interval(&[3.0, 3.0]).unwrap().half_width, 0.0);
    // beyond the table: t(0.975, 31) = 2.0395, t(60) = 2.0003, t(120) = 1.9799
    assert!((t_975(31) - 2.0395).abs() < 2e-4);
    assert!((t_975(60) - 2.0003).abs() < 2e-4);
    assert!((t_975(120) - 1.9799).abs() < 2e-4);
    assert_eq!(fmt_pm(1.0, 0.25, 2), "1.00 ± 0.25");
}

#[test]
fn small_sample_rule() {
    assert_eq!(
        [50.0, 90.0, 95.0, 99.0, 99.9].map(min_samples),
        [2, 10, 20, 100, 1000]
    );
    assert!(is_small_sample("p99", 99));
    assert!(!is_small_sample("p99", 100));
    assert!(is_small_sample("p90", 9));
    assert!(!is_small_sample("p90", 10));
    assert!(is_small_sample("p99.9", 999));
    assert!(is_small_sample("median", 1));
    assert!(!is_small_sample("mean", 1));
    assert_eq!(mark_small("12.3".into(), "p99", 50), "12.3*");
    assert_eq!(mark_small("12.3".into(), "p90", 50), "12.3");
}

use crate::support;

#[test]
fn point_bootstrap_keys_and_small_sample_flags() {
    let recs: Vec<_> = (0..20)
        .map(|i| support::ok(i, 0, 1000, 10.0 + i as f64, 100.0 + i as f64, 10))
        .collect();
    let cis = point_bootstrap(&recs, 1.0, 200, 9);
    let keys: Vec<&str> = cis.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        &keys[..4],
        [
            "mean_ttft_ms",
            "median_ttft_ms",
            "p90_ttft_ms",
            "p99_ttft_ms"
        ]
    );
    let p99 = cis.iter().find(|c| c.key == "p99_ttft_ms").unwrap();
    assert!(p99.small_sample, "20 requests < 100");
    let p90 = cis.iter().find(|c| c.key == "p90_ttft_ms").unwrap();
    assert!(!p90.small_sample);
    // TTFT 10..29: mean 19.5; the interval contains it and is reproducible
    let mean = cis.iter().find(|c| c.key == "mean_ttft_ms").unwrap();
    assert_eq!(mean.ci.value, 19.5);
    assert!(mean.ci.lo < 19.5 && mean.ci.hi > 19.5);
    assert_eq!(cis, point_bootstrap(&recs, 1.0, 200, 9));
    // ITL: 20 requests × 9 gaps = 180 samples, so p99 is not small
    let itl = cis.iter().find(|c| c.key == "p99_itl_ms").unwrap();
    assert_eq!((itl.samples, itl.small_sample), (180, false));
}

/// `named_stat` finds a percentile by selection, not a sort: the same value, bit for bit, as
/// the linear percentile of the sorted sample, for every statistic, sample size 1..=60 and
/// samples with ties, negative values and zeros (a wrong neighbour or rank would differ).
#[test]
fn named_stat_by_selection_equals_the_sorted_percentile() {
    let mut rng = SplitMix64::new(11);
    for n in 1..=60usize {
        for round in 0..20 {
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    let u = rng.index(1000) as f64;
                    match round % 3 {
                        0 => u / 7.0,
                        1 => (u / 100.0).floor() - 4.0, // many ties, negatives, zeros
                        _ => (u * 1e-3).sqrt(),
                    }
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| a.total_cmp(b));
            for (name, p) in [
                ("median", 50.0),
                ("p50", 50.0),
                ("p90", 90.0),
                ("p95", 95.0),
                ("p99", 99.0),
                ("p99.9", 99.9),
            ] {
                let want = servebench_metrics::stats::percentile(&sorted, p).unwrap();
                let got = named_stat(name, &mut v.clone()).unwrap();
                assert_eq!(got.to_bits(), want.to_bits(), "{name} of {v:?}");
            }
        }
    }
    assert_eq!(named_stat("p90", &mut []), None);
}
