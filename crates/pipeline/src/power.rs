//! GPU energy of each measured point: sampling and its hand-over to the metrics crate.
//!
//! * [`PowerSampler`]: reads every GPU once (board power W, cumulative energy counter mJ).
//!   [`NvmlSampler`] is the real one: `nvml-wrapper` loads `libnvidia-ml.so.1` at run time,
//!   so the binary builds and runs where there is no NVIDIA driver — the point then says
//!   `telemetry_missing: …` with NVML's own error, never zeros. Tests inject their own sampler.
//! * [`PowerMonitor`]: a thread reading the sampler every [`SAMPLE_PERIOD`] (10 Hz) from
//!   before the measured phase until one reading after its end (so the window is bracketed).
//! * [`PointPower`]: what a sweep does per point, decided once from `--power`,
//!   `--power-telemetry` and the target ([`PowerPlan`]); its [`PointPower::finish`] integrates
//!   with `servebench_metrics::power` (InferenceX's `aggregate_power.py` method) and returns
//!   the agg row's block and the `power_validation.json` sidecar.
//!
//! Must not know about: how energy is integrated or validated (metrics), the store, reports.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use servebench_contracts::PowerFields;
use servebench_metrics::power::aggregate::BenchmarkData;
use servebench_metrics::power::{energy_from_readings, GpuReading};

/// Time between two readings of every GPU (10 Hz; InferenceX's monitor reads every 1 s).
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// `--power`: whether a point's GPU energy is measured, and how.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PowerMode {
    /// NVML when the endpoint is on this machine (loopback host) and NVML loads; otherwise
    /// the point says why it was not measured.
    #[default]
    Auto,
    /// NVML, required: the sweep stops before its first point when NVML cannot be read.
    Nvml,
    /// Integrate a telemetry CSV another process writes (nvidia-smi / amd-smi as InferenceX's
    /// `start_gpu_monitor` records it) over each point's window (`--power-telemetry FILE`).
    Telemetry(PathBuf),
    /// Nothing measured, no power keys written.
    Off,
}

/// The power settings of a sweep.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PowerPlan {
    /// How.
    pub mode: PowerMode,
    /// NVML device indices to read (`--power-gpus`); `None`: those `CUDA_VISIBLE_DEVICES`
    /// names when it lists indices, else every device.
    pub gpus: Option<Vec<u32>>,
}

/// One reading of every GPU: `(gpu id, board power W, energy counter mJ if supported)`.
pub type Readings = Vec<(String, f64, Option<u64>)>;

/// Reads every sampled GPU once.
pub trait PowerSampler: Send {
    /// The GPUs now; `Err` (one line) when the read failed.
    fn read(&mut self) -> Result<Readings, String>;
}

/// NVML through `nvml-wrapper`, loaded at run time.
pub struct NvmlSampler {
    nvml: nvml_wrapper::Nvml,
    indices: Vec<u32>,
}

impl NvmlSampler {
    /// Loads NVML (`libnvidia-ml.so.1`, then `libnvidia-ml.so`) and picks the devices;
    /// `Err`: one line with NVML's error (no library, no driver, no device).
    pub fn open(gpus: Option<&[u32]>) -> Result<NvmlSampler, String> {
        // nvml-wrapper loads `libnvidia-ml.so.1` (what the driver installs); a development
        // install may have only the unversioned name
        let nvml = match nvml_wrapper::Nvml::init() {
            Ok(n) => n,
            Err(e1) => nvml_wrapper::Nvml::builder()
                .lib_path(std::ffi::OsStr::new("libnvidia-ml.so"))
                .init()
                .map_err(|_| format!("NVML not loadable: {e1}"))?,
        };
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML device count: {e}"))?;
        let indices: Vec<u32> = match gpus {
            Some(g) => g.to_vec(),
            None => visible_devices(std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref())
                .unwrap_or_else(|| (0..count).collect()),
        };
        if indices.is_empty() {
            return Err("NVML reports no GPU".into());
        }
        if let Some(bad) = indices.iter().find(|i| **i >= count) {
            return Err(format!("GPU {bad} does not exist (NVML sees {count})"));
        }
        let mut s = NvmlSampler { nvml, indices };
        s.read()?;
        Ok(s)
    }

    /// The devices' names, for the sweep's opening line.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .indices
            .iter()
            .map(|i| {
                let name = self
                    .nvml
                    .device_by_index(*i)
                    .and_then(|d| d.name())
                    .unwrap_or_else(|_| "?".into());
                format!("{i}: {name}")
            })
            .collect();
        names.join(", ")
    }
}

impl PowerSampler for NvmlSampler {
    fn read(&mut self) -> Result<Readings, String> {
        let mut out = Vec::with_capacity(self.indices.len());
        for i in &self.indices {
            let d = self
                .nvml
                .device_by_index(*i)
                .map_err(|e| format!("NVML GPU {i}: {e}"))?;
            let mw = d
                .power_usage()
                .map_err(|e| format!("NVML GPU {i} power: {e}"))?;
            out.push((
                i.to_string(),
                f64::from(mw) / 1000.0,
                d.total_energy_consumption().ok(),
            ));
        }
        Ok(out)
    }
}

/// `CUDA_VISIBLE_DEVICES` as NVML indices, when it lists only integers.
pub fn visible_devices(v: Option<&str>) -> Option<Vec<u32>> {
    let v = v?.trim();
    if v.is_empty() {
        return None;
    }
    v.split(',').map(|x| x.trim().parse().ok()).collect()
}

/// Now, Unix s.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A sampling thread over one point.
pub struct PowerMonitor {
    stop: Arc<AtomicBool>,
    got: Arc<Mutex<(Vec<GpuReading>, Vec<String>)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PowerMonitor {
    /// Starts reading `sampler` every `period`; each reading is stamped with the Unix time
    /// taken right after it.
    pub fn start(sampler: Arc<Mutex<Box<dyn PowerSampler>>>, period: Duration) -> PowerMonitor {
        let stop = Arc::new(AtomicBool::new(false));
        let got: Arc<Mutex<(Vec<GpuReading>, Vec<String>)>> = Arc::default();
        let (s, g) = (stop.clone(), got.clone());
        let thread = std::thread::spawn(move || {
            let begin = std::time::Instant::now();
            let mut tick = 0u32;
            while !s.load(Ordering::Relaxed) {
                let r = sampler.lock().unwrap_or_else(|p| p.into_inner()).read();
                let t = unix_now();
                let mut got = g.lock().unwrap_or_else(|p| p.into_inner());
                match r {
                    Ok(rs) => got
                        .0
                        .extend(rs.into_iter().map(|(gpu, watts, e)| GpuReading {
                            gpu,
                            t_unix: t,
                            watts,
                            energy_mj: e,
                        })),
                    Err(e) => {
                        let reason = format!("telemetry_read_error: {e}");
                        if !got.1.contains(&reason) {
                            got.1.push(reason);
                        }
                    }
                }
                drop(got);
                tick += 1;
                let next = period * tick;
                if let Some(wait) = next.checked_sub(begin.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        });
        PowerMonitor {
            stop,
            got,
            thread: Some(thread),
        }
    }

    /// The latest reading's time, Unix s.
    pub fn last_t(&self) -> Option<f64> {
        let got = self.got.lock().unwrap_or_else(|p| p.into_inner());
        got.0.last().map(|r| r.t_unix)
    }

    /// Waits (async, at most `limit`) for a reading after `t`.
    pub async fn wait_past(&self, t: f64, limit: Duration) {
        let until = std::time::Instant::now() + limit;
        while self.last_t().is_none_or(|x| x <= t) && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops the thread; the readings and the read errors (reasons).
    pub fn stop(mut self) -> (Vec<GpuReading>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.got.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for PowerMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a sweep does about energy, per point (decided once, [`PointPower::resolve`]).
pub enum PointPower {
    /// Sample through this sampler.
    Sampled(Arc<Mutex<Box<dyn PowerSampler>>>),
    /// Integrate this telemetry CSV.
    Telemetry(PathBuf),
    /// Not measured, for this reason (written into every row).
    Missing(String),
    /// The simulator: its modelled GPU energy counter (`servebench_sim_energy_joules_total`
    /// and `servebench_sim_modelled_seconds_total` on `/metrics`), read before and after the
    /// measured phase.
    Modelled,
    /// Nothing written (`--power off`, or the simulator until it models energy).
    Off,
}

/// A point's energy as measured: the agg row's block and the sidecar.
pub struct PointEnergy {
    /// The agg row's power keys.
    pub fields: PowerFields,
    /// `power_validation.json` (InferenceX sidecar keys; NVML adds the counter check).
    pub sidecar: Value,
    /// A line for the console.
    pub line: String,
}

/// A started point's sampling.
pub enum PointSampling {
    /// The monitor thread.
    Monitor(PowerMonitor),
    /// The simulator's (modelled s, modelled J) counters at the start, when readable.
    Modelled(Option<(f64, f64)>),
    /// Nothing runs during the point.
    Idle,
}

/// The simulator's modelled time (s) and modelled GPU energy (J) counters, when it exports
/// them (a GPU preset without power figures does not).
pub async fn sim_energy_counters(ep: &servebench_client::Endpoint) -> Option<(f64, f64)> {
    let samples = crate::cache::scrape(ep).await;
    // the Prometheus parser names counters by their family, without `_total`
    let get = |name: &str| samples.iter().find(|s| s.name == name).map(|s| s.value);
    Some((
        get("servebench_sim_modelled_seconds")?,
        get("servebench_sim_energy_joules")?,
    ))
}

impl PointPower {
    /// The sweep's choice: `--power off` → nothing; the simulator → its modelled energy; a telemetry
    /// file → it; NVML when asked or (auto) when the endpoint's host is this machine. `Err`
    /// only for `--power nvml` when NVML cannot be read.
    pub fn resolve(
        plan: &PowerPlan,
        is_sim: bool,
        endpoint_host: &str,
        open: impl FnOnce(Option<&[u32]>) -> Result<Box<dyn PowerSampler>, String>,
    ) -> Result<PointPower, String> {
        match &plan.mode {
            PowerMode::Off => Ok(PointPower::Off),
            PowerMode::Telemetry(p) => Ok(PointPower::Telemetry(p.clone())),
            _ if is_sim => Ok(PointPower::Modelled),
            PowerMode::Nvml => open(plan.gpus.as_deref())
                .map(|s| PointPower::Sampled(Arc::new(Mutex::new(s))))
                .map_err(|e| format!("--power nvml: {e}")),
            PowerMode::Auto if !is_local_host(endpoint_host) => Ok(PointPower::Missing(format!(
                "telemetry_missing: the endpoint's host {endpoint_host} is not this machine, whose GPUs NVML would read (--power nvml samples them anyway; --power-telemetry FILE integrates the server's own nvidia-smi log)"
            ))),
            PowerMode::Auto => Ok(match open(plan.gpus.as_deref()) {
                Ok(s) => PointPower::Sampled(Arc::new(Mutex::new(s))),
                Err(e) => PointPower::Missing(format!("telemetry_missing: {e}")),
            }),
        }
    }

    /// Starts sampling before the measured phase: waits (≤ 1 s) for a first reading so the
    /// window is bracketed.
    pub async fn start(&self, ep: &servebench_client::Endpoint) -> PointSampling {
        match self {
            PointPower::Modelled => PointSampling::Modelled(sim_energy_counters(ep).await),
            PointPower::Sampled(s) => {
                let m = PowerMonitor::start(s.clone(), SAMPLE_PERIOD);
                m.wait_past(0.0, Duration::from_secs(1)).await;
                PointSampling::Monitor(m)
            }
            _ => PointSampling::Idle,
        }
    }

    /// The point's energy over `b` (the benchmark window and its counts) for `expected_gpus`
    /// GPUs; `None` when nothing is written ([`PointPower::Off`]).
    pub async fn finish(
        &self,
        ep: &servebench_client::Endpoint,
        sampling: PointSampling,
        b: &BenchmarkData,
        expected_gpus: i64,
    ) -> Option<PointEnergy> {
        match (self, sampling) {
            (PointPower::Off, _) => None,
            (PointPower::Missing(reason), _) => Some(PointEnergy {
                fields: PowerFields::missing(reason.clone()),
                sidecar: Value::Null,
                line: format!("energy not measured: {reason}"),
            }),
            (PointPower::Sampled(_), PointSampling::Monitor(m)) => {
                m.wait_past(b.end, SAMPLE_PERIOD * 10).await;
                let (readings, errors) = m.stop();
                let e = energy_from_readings(&readings, &errors, b, expected_gpus);
                let line = energy_line(&e.fields, e.counter_energy_j, readings.len());
                Some(PointEnergy {
                    fields: e.fields,
                    sidecar: e.sidecar,
                    line,
                })
            }
            (PointPower::Modelled, PointSampling::Modelled(start)) => {
                let fields = match (start, sim_energy_counters(ep).await) {
                    (Some((t0, e0)), Some((t1, e1))) => servebench_metrics::power::modelled_energy(
                        e1 - e0,
                        t1 - t0,
                        b,
                        expected_gpus,
                    ),
                    _ => PowerFields {
                        source: servebench_contracts::PowerSource::Modelled,
                        valid: false,
                        metrics: None,
                        invalid_reasons: vec!["telemetry_missing: the simulator exports no modelled energy (servebench_sim_energy_joules_total): its GPU preset has no tdp_w/idle_w".into()],
                    },
                };
                let line = energy_line(&fields, None, 0);
                Some(PointEnergy {
                    fields,
                    sidecar: Value::Null,
                    line,
                })
            }
            (PointPower::Sampled(_) | PointPower::Modelled, _) => None,
            (PointPower::Telemetry(csv), _) => {
                // InferenceX's monitor writes one row a second: wait for the row after the end
                tokio::time::sleep(Duration::from_secs(2)).await;
                let e = servebench_metrics::power::telemetry_energy(csv, b, expected_gpus);
                let line = energy_line(&e.fields, None, 0);
                Some(PointEnergy {
                    fields: e.fields,
                    sidecar: e.sidecar,
                    line,
                })
            }
        }
    }
}

impl PointPower {
    /// [`PointPower::finish`] for a point whose sampling ran longer than its benchmark window
    /// `b` (an AgentX point: warmup, then the profiling window; InferenceX's
    /// `power_adapter.py` integrates the profiling window only). Samples (NVML) and a telemetry
    /// file are integrated over `b` as they are; the simulator's modelled counters cover the
    /// whole point, so its energy is the point's mean modelled power × the window's modelled
    /// length (`b.duration` × `time_scale`).
    pub async fn finish_window(
        &self,
        ep: &servebench_client::Endpoint,
        sampling: PointSampling,
        b: &BenchmarkData,
        time_scale: f64,
        expected_gpus: i64,
    ) -> Option<PointEnergy> {
        let PointSampling::Modelled(start) = sampling else {
            return self.finish(ep, sampling, b, expected_gpus).await;
        };
        let window_s = b.duration * time_scale;
        let fields = match (start, sim_energy_counters(ep).await) {
            (Some((t0, e0)), Some((t1, e1))) if t1 > t0 => {
                servebench_metrics::power::modelled_energy(
                    (e1 - e0) / (t1 - t0) * window_s,
                    window_s,
                    b,
                    expected_gpus,
                )
            }
            _ => {
                return self
                    .finish(ep, PointSampling::Modelled(start), b, expected_gpus)
                    .await
            }
        };
        let line = energy_line(&fields, None, 0);
        Some(PointEnergy {
            fields,
            sidecar: Value::Null,
            line,
        })
    }
}

/// `localhost`, a loopback address, or this machine's host name.
pub fn is_local_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Ok(ip) = h.parse::<std::net::IpAddr>() {
        return ip.is_loopback() || ip.is_unspecified();
    }
    std::fs::read_to_string("/etc/hostname").is_ok_and(|n| n.trim().eq_ignore_ascii_case(h))
}

/// `energy: 1.52 J/output token, 318.4 W/GPU (NVML 10 Hz, 1203 readings; counter within 0.6 %)`.
fn energy_line(f: &PowerFields, counter: Option<f64>, readings: usize) -> String {
    match f.usable() {
        Some(m) => {
            let check = match counter {
                Some(c) if c > 0.0 => format!(
                    "; energy counter {:.1} J, samples {:+.2} %",
                    c,
                    (m.total_gpu_energy_j - c) / c * 100.0
                ),
                _ => String::new(),
            };
            format!(
                "energy: {:.4} J/output token, {:.4} J/token, {:.1} W/GPU, {:.1} J ({}{}{check})",
                m.joules_per_output_token,
                m.joules_per_total_token,
                m.avg_power_w,
                m.total_gpu_energy_j,
                if f.source == servebench_contracts::PowerSource::Modelled {
                    "modelled, not measured"
                } else {
                    f.source.as_str()
                },
                if readings > 0 {
                    format!(" {} readings", readings)
                } else {
                    String::new()
                },
            )
        }
        None => format!(
            "energy not valid ({}): {}",
            f.source.as_str(),
            f.invalid_reasons.join(", ")
        ),
    }
}

#[cfg(test)]
#[path = "power_tests.rs"]
mod tests;
