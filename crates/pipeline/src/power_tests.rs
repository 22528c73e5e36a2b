//! The NVML path through an injected sampler (CI has no GPU): resolution, the monitor thread,
//! read errors, and the honest "not measured" of every way NVML can be missing.

use super::*;

/// Every GPU at a constant power; the counter advances by exactly that power.
struct Constant {
    watts: Vec<f64>,
    t0: f64,
}

impl PowerSampler for Constant {
    fn read(&mut self) -> Result<Readings, String> {
        let dt = unix_now() - self.t0;
        Ok(self
            .watts
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let mj = 5_000_000 + (dt * w * 1000.0).round() as u64;
                (i.to_string(), *w, Some(mj))
            })
            .collect())
    }
}

/// Fails every read, as a GPU that fell off the bus does.
struct Failing;

impl PowerSampler for Failing {
    fn read(&mut self) -> Result<Readings, String> {
        Err("GPU 0 power: GPU is lost".into())
    }
}

fn window(start: f64, end: f64, out_tokens: u64) -> BenchmarkData {
    BenchmarkData {
        start,
        end,
        duration: end - start,
        completed: 4,
        total_input_tokens: 4096,
        total_output_tokens: out_tokens,
    }
}

/// An endpoint nothing listens on (only the modelled path reads it).
fn ep() -> servebench_client::Endpoint {
    servebench_client::Endpoint::parse("http://127.0.0.1:9").unwrap()
}

fn sampled(s: impl PowerSampler + 'static) -> PointPower {
    PointPower::Sampled(Arc::new(Mutex::new(Box::new(s))))
}

#[tokio::test]
async fn a_point_sampled_through_the_monitor_gets_its_energy_and_counter_check() {
    let p = sampled(Constant {
        watts: vec![400.0],
        t0: unix_now(),
    });
    let sampling = p.start(&ep()).await;
    let start = unix_now();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let end = unix_now();
    let e = p
        .finish(&ep(), sampling, &window(start, end, 256), 1)
        .await
        .unwrap();
    assert!(e.fields.valid, "{:?}", e.fields.invalid_reasons);
    assert_eq!(e.fields.source, servebench_contracts::PowerSource::Nvml);
    let m = e.fields.metrics.unwrap();
    // constant power: the trapezoid integral is exact whatever the sample times were
    assert_eq!(m.avg_power_w, 400.0);
    let expect = 400.0 * (end - start);
    assert!((m.total_gpu_energy_j - expect).abs() < 1e-3, "{m:?}");
    assert!((m.joules_per_output_token - expect / 256.0).abs() < 1e-5);
    let check = &e.sidecar["accumulator_check"];
    assert_eq!(
        check["within_tolerance"],
        serde_json::json!(true),
        "{check}"
    );
    assert!(e.sidecar["per_gpu_sample_counts"]["0"].as_u64().unwrap() >= 2);
    assert!(e.line.contains("J/output token"), "{}", e.line);
}

#[tokio::test]
async fn read_errors_are_reasons_never_zeros() {
    let p = sampled(Failing);
    let sampling = p.start(&ep()).await;
    let start = unix_now();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let e = p
        .finish(&ep(), sampling, &window(start, unix_now(), 64), 1)
        .await
        .unwrap();
    assert!(!e.fields.valid);
    assert_eq!(e.fields.metrics, None);
    assert_eq!(
        e.fields.invalid_reasons,
        vec![
            "telemetry_read_error: GPU 0 power: GPU is lost",
            "no_usable_power_samples"
        ]
    );
}

#[tokio::test]
async fn two_gpus_sampled_for_a_one_gpu_point_are_a_count_mismatch() {
    let p = sampled(Constant {
        watts: vec![100.0, 120.0],
        t0: unix_now(),
    });
    let sampling = p.start(&ep()).await;
    let start = unix_now();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let e = p
        .finish(&ep(), sampling, &window(start, unix_now(), 64), 1)
        .await
        .unwrap();
    assert_eq!(
        e.fields.invalid_reasons,
        vec!["expected_gpu_count_mismatch"]
    );
}

fn no_nvml(_: Option<&[u32]>) -> Result<Box<dyn PowerSampler>, String> {
    Err("NVML not loadable (libnvidia-ml.so.1: cannot open shared object file)".into())
}

#[tokio::test]
async fn without_nvml_every_point_says_why_and_nvml_mode_refuses_to_start() {
    let auto = PowerPlan::default();
    let p = PointPower::resolve(&auto, false, "127.0.0.1", no_nvml).unwrap();
    let e = p
        .finish(&ep(), PointSampling::Idle, &window(1.0, 2.0, 1), 1)
        .await
        .unwrap();
    assert_eq!(e.fields, servebench_contracts::PowerFields::missing(
        "telemetry_missing: NVML not loadable (libnvidia-ml.so.1: cannot open shared object file)"
    ));
    let mut o = serde_json::Map::new();
    e.fields.write(&mut o);
    assert_eq!(o["power_valid"], serde_json::json!(0));
    assert!(!o.contains_key("joules_per_output_token"), "never zeros");

    let nvml = PowerPlan {
        mode: PowerMode::Nvml,
        gpus: None,
    };
    let err = PointPower::resolve(&nvml, false, "127.0.0.1", no_nvml)
        .err()
        .unwrap();
    assert!(err.starts_with("--power nvml: NVML not loadable"), "{err}");

    // a remote endpoint: the local GPUs are not the server's
    let p = PointPower::resolve(&auto, false, "gpu-box.example", |_| {
        panic!("NVML must not be read for a remote endpoint")
    })
    .unwrap();
    assert!(matches!(&p, PointPower::Missing(r) if r.contains("gpu-box.example")));
    // --power off writes nothing; the simulator models energy
    let off = PowerPlan {
        mode: PowerMode::Off,
        gpus: None,
    };
    assert!(matches!(
        PointPower::resolve(&off, false, "localhost", no_nvml),
        Ok(PointPower::Off)
    ));
    assert!(matches!(
        PointPower::resolve(&auto, true, "127.0.0.1", no_nvml),
        Ok(PointPower::Modelled)
    ));
    // a simulator that exports no energy counter: said, never zeros
    let e = PointPower::Modelled
        .finish(
            &ep(),
            PointSampling::Modelled(None),
            &window(1.0, 2.0, 1),
            1,
        )
        .await
        .unwrap();
    assert_eq!(e.fields.source, servebench_contracts::PowerSource::Modelled);
    assert_eq!(e.fields.metrics, None);
    assert!(e.fields.invalid_reasons[0].starts_with("telemetry_missing"));
}

#[test]
fn the_real_nvml_loader_reports_its_absence_in_one_line() {
    // CI has no NVIDIA driver: the real loader must fail cleanly, naming the library. Where a
    // GPU exists (the H200 machine) it opens and reads.
    match NvmlSampler::open(None) {
        Err(e) => {
            assert!(
                e.contains("NVML") && !e.contains('\n'),
                "one line naming NVML: {e}"
            );
        }
        Ok(mut s) => {
            let r = s.read().unwrap();
            assert!(!r.is_empty() && r.iter().all(|(_, w, _)| *w > 0.0), "{r:?}");
        }
    }
}

#[test]
fn cuda_visible_devices_and_local_hosts() {
    assert_eq!(visible_devices(Some("0,2")), Some(vec![0, 2]));
    assert_eq!(
        visible_devices(Some("GPU-5e2f,1")),
        None,
        "UUIDs: every device"
    );
    assert_eq!(visible_devices(Some("")), None);
    assert_eq!(visible_devices(None), None);
    for h in ["localhost", "127.0.0.1", "[::1]", "0.0.0.0"] {
        assert!(is_local_host(h), "{h}");
    }
    assert!(!is_local_host("10.1.2.3"));
}

/// 600 W until `switch_at` (Unix s), 300 W after: an AgentX point's warmup, then its
/// profiling window.
struct Stepped {
    switch_at: Arc<Mutex<f64>>,
}

impl PowerSampler for Stepped {
    fn read(&mut self) -> Result<Readings, String> {
        let w = if unix_now() < *self.switch_at.lock().unwrap() {
            600.0
        } else {
            300.0
        };
        Ok(vec![("0".into(), w, None)])
    }
}

/// An AgentX point is sampled from before its warmup, and integrated over its profiling window
/// only (as InferenceX's power_adapter.py windows it): the warmup's 600 W is not in it.
#[tokio::test]
async fn an_agentx_point_is_integrated_over_its_profiling_window_only() {
    let switch_at = Arc::new(Mutex::new(f64::INFINITY));
    let p = sampled(Stepped {
        switch_at: switch_at.clone(),
    });
    let clock = servebench_client::Clock::start();
    let anchor = (unix_now(), clock.now_ns());
    let sampling = p.start(&ep()).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // the warmup, at 600 W
    *switch_at.lock().unwrap() = unix_now();
    // a 300 W reading before the window opens, so its edge interpolates between 300 W readings
    let PointSampling::Monitor(m) = &sampling else {
        panic!("NVML sampling runs a monitor");
    };
    // (the reading after the switch may have begun before it: the one after that has not)
    m.wait_past(unix_now(), Duration::from_secs(10)).await;
    let t1 = m.last_t().expect("a reading");
    m.wait_past(t1, Duration::from_secs(10)).await;
    let w0 = clock.now_ns();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let w1 = clock.now_ns();
    let b = crate::measure::window_of(anchor, (w0, w1), (11, 123_708, 1_246));
    // Unix seconds as f64 keep ~0.2 µs near 1.7e9 s
    assert!((b.duration - (w1 - w0) as f64 / 1e9).abs() < 1e-6);
    let e = p.finish_window(&ep(), sampling, &b, 1.0, 1).await.unwrap();
    assert!(e.fields.valid, "{:?}", e.fields.invalid_reasons);
    let m = e.fields.metrics.unwrap();
    assert_eq!(
        m.avg_power_w, 300.0,
        "the warmup's 600 W is outside the window"
    );
    assert!((m.joules_per_output_token - 300.0 * b.duration / 1_246.0).abs() < 1e-5);
}

/// Without NVML an AgentX point says why, with no numbers (never zeros).
#[tokio::test]
async fn an_agentx_point_without_nvml_says_telemetry_missing() {
    let p = PointPower::resolve(&PowerPlan::default(), false, "127.0.0.1", no_nvml).unwrap();
    let sampling = p.start(&ep()).await;
    let b = crate::measure::window_of((1000.0, 0), (5_000_000_000, 65_000_000_000), (11, 1, 1));
    assert_eq!((b.start, b.end, b.duration), (1005.0, 1065.0, 60.0));
    let e = p.finish_window(&ep(), sampling, &b, 1.0, 1).await.unwrap();
    assert!(
        !e.fields.valid && e.fields.metrics.is_none(),
        "{:?}",
        e.fields
    );
    assert!(
        e.fields.invalid_reasons[0].starts_with("telemetry_missing: "),
        "{:?}",
        e.fields.invalid_reasons
    );
}
