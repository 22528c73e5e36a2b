//! [`Target`]: what a sweep measures — an engine endpoint, or the embedded simulator — on top
//! of the endpoint layer (`servebench-endpoint`: URL normalisation, API key, TLS, readiness,
//! the one place the simulator is started). The same target is handed to the eval, so a sweep
//! with `--eval` starts one simulator and shares it.

use std::path::Path;

use serde_json::{json, Value};
use servebench_endpoint::{answer_book, CancelToken, Endpoint, Readiness, SimOptions};

use crate::console::Console;
use crate::error::Result;
use crate::plan::{SweepPlan, DEFAULT_SIM_SPEEDUP};
use servebench_contracts::SimClock;

/// The endpoint layer's target plus what the sweep reads on every point.
pub struct Target {
    /// The endpoint layer's target (handed to the eval).
    pub inner: servebench_endpoint::Target,
    /// Where the measuring client sends requests (host, port, TLS settings).
    pub endpoint: servebench_client::Endpoint,
    /// Wall time = modelled time / speedup (1 for a real endpoint); reported times are scaled
    /// back by it.
    pub sim_speedup: f64,
    /// The simulator's one-line description (GPU, model, TP).
    pub sim_describe: Option<String>,
    /// The embedded simulator's clock (`None` for an endpoint).
    pub sim_clock: Option<SimClock>,
}

impl Target {
    /// Waits for `endpoint` to be ready, or starts the simulator with its emission log in
    /// `out_dir` and `answers` (prompt → recorded response) for GSM8K replay.
    pub async fn start(
        plan: &SweepPlan,
        endpoint: Option<Endpoint>,
        out_dir: &Path,
        answers: Option<servebench_eval::sim_answers::Gsm8kAnswers>,
        cancel: &CancelToken,
        console: &dyn Console,
    ) -> Result<Target> {
        let inner = match endpoint {
            Some(ep) => {
                // With --endpoint, --sim-speedup says the endpoint is a servebench simulator
                // started with that --speedup (`servebench run --simulate --sim-speedup`):
                // wall times are scaled back to modelled time as for the embedded one.
                let t = match plan.sim.speedup {
                    Some(s) => servebench_endpoint::Target::remote_scaled(ep, s),
                    None => servebench_endpoint::Target::remote(ep),
                };
                t.wait_ready(&Readiness::seconds(plan.ready_timeout_s), cancel)
                    .await?;
                t
            }
            None => {
                let clock = plan.sim_clock();
                let speedup = plan.sim.speedup.unwrap_or(DEFAULT_SIM_SPEEDUP);
                let opts = SimOptions {
                    clock,
                    gpu: plan.sim.gpu.clone(),
                    model: plan.sim.model.clone(),
                    tp: plan.tp(),
                    speedup,
                    slowdown: plan.sim.slowdown,
                    overrides: plan.sim_overrides(),
                    // --kv-offloading dram: the recorded DRAM budget is the simulator's tier
                    host_kv_dram_gb: (plan.identity.kv_offload.mode
                        == servebench_contracts::KvOffload::Dram)
                        .then_some(plan.identity.kv_offload.dram_gb as f64),
                    emission_log: Some(out_dir.join("sim-emission.jsonl")),
                    fleet: plan.sim.fleet.clone(),
                    answers: answers
                        .map(|book| answer_book(move |p| book.lookup(p).map(str::to_string))),
                    ..Default::default()
                };
                let t = servebench_endpoint::Target::start_simulator(opts).await?;
                let d = t.describe();
                if clock == SimClock::Virtual {
                    console.line("no --endpoint: started the embedded simulator in this process, on the virtual clock (in-memory connections)");
                    console.line(&format!("  {d}"));
                    console.line("  sim_clock: virtual — a discrete-event clock: time advances only when client and simulator both wait, so the numbers are modelled time, the same on any host and in any run (not a wall-clock measurement of this machine; --sim-clock wall for that)");
                } else {
                    console.line(&format!(
                        "no --endpoint: started the embedded simulator at {}",
                        t.endpoint().base_url()
                    ));
                    console.line(&format!("  {d}"));
                    console.line(&format!(
                        "  sim_clock: wall — wall time = modelled time / {speedup}; the numbers below are scaled back to modelled time (latency ×{speedup}, throughput ÷{speedup})"
                    ));
                }
                t
            }
        };
        Ok(Target::of(inner))
    }

    /// The pipeline's view of a started endpoint-layer target (client endpoint, time scale,
    /// the simulator's description).
    pub fn of(inner: servebench_endpoint::Target) -> Target {
        Target {
            endpoint: inner.endpoint().client().clone(),
            sim_speedup: inner.time_scale(),
            sim_describe: inner.simulator().map(|s| s.describe().to_string()),
            sim_clock: inner.simulator().map(|s| s.clock()),
            inner,
        }
    }

    /// Whether this is the embedded simulator.
    pub fn is_sim(&self) -> bool {
        self.inner.is_simulator()
    }

    /// Whether the run is on the virtual clock (the embedded simulator with
    /// `--sim-clock virtual`).
    pub fn is_virtual(&self) -> bool {
        self.sim_clock == Some(SimClock::Virtual)
    }

    /// A wait given in modelled seconds (`--timeout`) on the client's clock: as given on the
    /// wall clock (a real endpoint, or a sped-up simulator, where it stays a wall-time limit),
    /// ÷ the speedup on the virtual clock (which runs 1,000× slower than modelled time).
    pub fn client_wait(&self, seconds: f64) -> std::time::Duration {
        let s = if self.is_virtual() {
            seconds / self.sim_speedup
        } else {
            seconds
        };
        std::time::Duration::from_secs_f64(s)
    }

    /// `{"describe": …, "speedup": …}` for the simulator, `null` for an endpoint (result,
    /// summary and store metadata).
    pub fn simulator_json(&self) -> Value {
        match &self.sim_describe {
            Some(d) => match self.sim_clock {
                Some(c) => {
                    json!({"describe": d, "speedup": self.sim_speedup, "clock": c.as_str()})
                }
                None => json!({"describe": d, "speedup": self.sim_speedup}),
            },
            None => Value::Null,
        }
    }

    /// The simulator (`describe`, `speedup`), `None` for an endpoint (typed
    /// [`Target::simulator_json`]: `result.json` and `summary.json`).
    pub fn simulator_info(&self) -> Option<servebench_contracts::SimulatorInfo> {
        self.sim_describe
            .as_ref()
            .map(|d| servebench_contracts::SimulatorInfo {
                describe: d.clone(),
                speedup: self.sim_speedup,
                clock: self.sim_clock,
            })
    }

    /// Stops the simulator, if any.
    pub async fn shutdown(self) {
        self.inner.shutdown().await;
    }
}

/// The endpoint of `plan` (URL, API key, `--ca-cert`), checked before any I/O; `None` for
/// the simulator. The normalisation note (`--endpoint …/v1: using the base URL …`) is said
/// once.
pub fn plan_endpoint(plan: &SweepPlan, console: &dyn Console) -> Result<Option<Endpoint>> {
    let Some(url) = &plan.endpoint else {
        return Ok(None);
    };
    let tls = servebench_endpoint::TlsConfig::with_ca_cert(plan.ca_cert.clone());
    let ep = Endpoint::new(url, plan.api_key.clone(), &tls)?;
    if let Some(note) = ep.normalisation_note() {
        console.line(&note);
    }
    Ok(Some(ep))
}
