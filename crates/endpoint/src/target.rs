//! [`Target`]: what a run sends requests to — an endpoint, or the embedded simulator started
//! here ([`Target::start_simulator`], feature `sim`: the one place it is started) and handed
//! to every stage that needs it (sweep points, eval, replay).

use crate::{CancelToken, Endpoint, EndpointError, Readiness};

/// The embedded simulator behind a [`Target`].
pub struct Simulator {
    describe: String,
    model: String,
    speedup: f64,
    clock: servebench_contracts::SimClock,
    #[cfg(feature = "sim")]
    server: servebench_sim::SimServer,
}

impl Simulator {
    /// One line: GPU, model, TP, speed.
    pub fn describe(&self) -> &str {
        &self.describe
    }
    /// The simulated model's name as started (`qwen3-8b`, …), the `model` to request.
    pub fn model(&self) -> &str {
        &self.model
    }
    /// Serving-clock time = modelled time / speedup (> 0; on the virtual clock
    /// `servebench_sim::VIRTUAL_SPEEDUP`).
    pub fn speedup(&self) -> f64 {
        self.speedup
    }
    /// The clock it runs on.
    pub fn clock(&self) -> servebench_contracts::SimClock {
        self.clock
    }
    /// The running server (emission log, engine configuration).
    #[cfg(feature = "sim")]
    pub fn server(&self) -> &servebench_sim::SimServer {
        &self.server
    }
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("describe", &self.describe)
            .field("speedup", &self.speedup)
            .finish()
    }
}

/// Where a run sends its requests: an [`Endpoint`], and the simulator behind it when it is the
/// embedded one. Stages take `&Target`; whoever made it calls [`Target::shutdown`].
#[derive(Debug)]
pub struct Target {
    endpoint: Endpoint,
    sim: Option<Simulator>,
    /// Time scale of a remote endpoint that is a servebench simulator started elsewhere with
    /// `--speedup` ([`Target::remote_scaled`]); 1 for any other endpoint.
    remote_scale: f64,
}

impl Target {
    /// A remote endpoint (an engine, a proxy, a hosted API).
    pub fn remote(endpoint: Endpoint) -> Target {
        Target {
            endpoint,
            sim: None,
            remote_scale: 1.0,
        }
    }

    /// A remote endpoint that is a servebench simulator running `speedup` times faster than
    /// real time (`servebench sim --speedup`, as `servebench run --simulate --sim-speedup`
    /// starts it): [`Target::time_scale`] is `speedup`, so reported times are modelled time.
    pub fn remote_scaled(endpoint: Endpoint, speedup: f64) -> Target {
        Target {
            endpoint,
            sim: None,
            remote_scale: speedup,
        }
    }

    /// Starts the embedded simulator on `opts.host` (127.0.0.1, a free port unless set), or on
    /// the virtual clock (`opts.clock`) in memory: the endpoint then opens in-memory
    /// connections ([`servebench_client::MemoryDial`]) and the caller's runtime must be a
    /// current-thread one with a paused clock.
    ///
    /// # Errors
    /// [`EndpointError::Simulator`] with the simulator's reason (unknown preset, bind failure).
    #[cfg(feature = "sim")]
    pub async fn start_simulator(
        opts: servebench_sim::SimOptions,
    ) -> Result<Target, EndpointError> {
        let model = opts.model.clone();
        let server = servebench_sim::SimServer::start(opts)
            .await
            .map_err(|e| EndpointError::Simulator(format!("{e:#}")))?;
        let (speedup, clock) = (server.speedup(), server.clock());
        let mut endpoint = Endpoint::new(&server.base_url(), None, &crate::TlsConfig::default())?;
        if clock == servebench_contracts::SimClock::Virtual {
            endpoint =
                endpoint.with_memory(servebench_client::MemoryDial::new(server.memory_dialer()));
        }
        Ok(Target {
            endpoint,
            remote_scale: 1.0,
            sim: Some(Simulator {
                describe: server.describe(),
                model,
                speedup,
                clock,
                server,
            }),
        })
    }

    /// Where requests go (for the simulator: its `http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The embedded simulator, if this is it.
    pub fn simulator(&self) -> Option<&Simulator> {
        self.sim.as_ref()
    }

    /// Whether this is the embedded simulator.
    pub fn is_simulator(&self) -> bool {
        self.sim.is_some()
    }

    /// Factor from wall time to reported (modelled) time: the simulator's speedup, 1 for an
    /// endpoint (the given speedup for [`Target::remote_scaled`]). Reported latencies are multiplied by it, throughputs divided.
    pub fn time_scale(&self) -> f64 {
        self.sim.as_ref().map_or(self.remote_scale, |s| s.speedup)
    }

    /// One line for reports: `endpoint URL`, or the simulator's description.
    pub fn describe(&self) -> String {
        match &self.sim {
            Some(s) => s.describe.clone(),
            None => format!("endpoint {}", self.endpoint.base_url()),
        }
    }

    /// The readiness wait ([`Readiness::wait`]) for an endpoint; the simulator is ready once
    /// started, so it returns at once there.
    ///
    /// # Errors
    /// [`EndpointError::NotReady`].
    pub async fn wait_ready(
        &self,
        readiness: &Readiness,
        cancel: &CancelToken,
    ) -> Result<(), EndpointError> {
        if self.sim.is_some() {
            return Ok(());
        }
        readiness.wait(&self.endpoint, cancel).await
    }

    /// Stops the simulator, if any (an endpoint is left alone).
    pub async fn shutdown(self) {
        #[cfg(feature = "sim")]
        if let Some(s) = self.sim {
            s.server.shutdown().await;
        }
    }
}

/// An [`servebench_sim::AnswerBook`] from a lookup function (prompt → the full response
/// text), so that stages can supply replayed answers without depending on the simulator.
#[cfg(feature = "sim")]
pub fn answer_book<F>(lookup: F) -> std::sync::Arc<dyn servebench_sim::AnswerBook>
where
    F: Fn(&str) -> Option<String> + Send + Sync + 'static,
{
    struct FnBook<F>(F);
    impl<F> servebench_sim::AnswerBook for FnBook<F>
    where
        F: Fn(&str) -> Option<String> + Send + Sync + 'static,
    {
        fn answer(&self, prompt: &str) -> Option<String> {
            (self.0)(prompt)
        }
    }
    std::sync::Arc::new(FnBook(lookup))
}
