//! Load generation: closed loop (`--conc C`) and open loop (`--request-rate R --burstiness B`,
//! optionally capped by `--conc`), pulling requests from a [`RequestSource`].
//!
//! Closed loop: C lanes, each with its own connection, each sending its next request as soon as
//! its previous one ended (InferenceX: `request_rate=inf` behind a FIFO semaphore of C). The
//! record's `scheduled_ns` is the moment the lane became free, so `queue_ms` is the client's own
//! overhead. Open loop: arrivals at gamma-distributed gaps (shape B, scale 1/(R·B); B = 1 is
//! Poisson; InferenceX §1.4), each request's `scheduled_ns` is its arrival time; with a cap, C
//! lanes take arrivals in FIFO order and the wait for a free lane shows in `queue_ms`
//! (coordinated omission is visible, never hidden). Without a cap, every arrival gets its own
//! task and a connection from a shared idle pool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use rand_distr::Distribution;

use crate::http::{execute, Cancel, ClientCtx, Conn};
use crate::record::{Phase, RequestRecord};
use servebench_workload::{RequestSource, RequestSpec, TurnOutcome};

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Closed loop with this many lanes.
    Closed {
        /// Concurrency (lanes).
        concurrency: usize,
    },
    /// Open loop.
    Open {
        /// Mean request rate, requests/s.
        rate: f64,
        /// Gamma shape (1 = Poisson).
        burstiness: f64,
        /// Maximum requests in flight (`None` = unbounded).
        max_concurrency: Option<usize>,
        /// Seed of the inter-arrival generator.
        seed: u64,
    },
}

/// Called with every finished record (write to `records.jsonl`, advance progress bars).
pub type RecordSink = Arc<dyn Fn(&RequestRecord) + Send + Sync>;

/// What a phase produced.
#[derive(Debug)]
pub struct PhaseResult {
    /// Records in completion order.
    pub records: Vec<RequestRecord>,
    /// ns when the phase started (before the first request was issued).
    pub start_ns: u64,
    /// ns when the last request finished.
    pub end_ns: u64,
    /// Whether Ctrl-C stopped it.
    pub cancelled: bool,
    /// Peak number of requests in flight, as seen by the client.
    pub peak_in_flight: usize,
}

struct Shared {
    ctx: ClientCtx,
    source: Mutex<Box<dyn RequestSource>>,
    wants_text: bool,
    sink: RecordSink,
    phase: Phase,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    records: Mutex<Vec<RequestRecord>>,
}

impl Shared {
    fn next(&self, lane: Option<usize>, prev: Option<&TurnOutcome>) -> Option<RequestSpec> {
        self.source
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next(lane, prev)
    }

    async fn run_one(
        &self,
        slot: &mut Option<Conn>,
        spec: &RequestSpec,
        scheduled: u64,
        cancel: &mut Cancel,
    ) -> TurnOutcome {
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
        let mut rec = execute(&self.ctx, slot, spec, self.phase, scheduled, cancel).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let outcome = TurnOutcome {
            id: rec.id,
            success: rec.success,
            output_tokens: rec.output_tokens,
            text: if self.wants_text {
                rec.text.clone()
            } else {
                None
            },
        };
        if !self.ctx.capture_text {
            rec.text = None;
        }
        (self.sink)(&rec);
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rec);
        outcome
    }
}

/// Runs one phase (warmup or measured) to completion or cancellation.
pub async fn run_phase(
    ctx: ClientCtx,
    phase: Phase,
    source: Box<dyn RequestSource>,
    load: Load,
    sink: RecordSink,
    cancel: Cancel,
) -> PhaseResult {
    let wants_text = source.wants_response_text();
    let mut ctx = ctx;
    if wants_text {
        ctx.capture_text = true;
    }
    let clock = ctx.clock;
    let shared = Arc::new(Shared {
        ctx,
        source: Mutex::new(source),
        wants_text,
        sink,
        phase,
        in_flight: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        records: Mutex::new(Vec::new()),
    });
    let start_ns = clock.now_ns();
    match load {
        Load::Closed { concurrency } => {
            let mut tasks = Vec::with_capacity(concurrency);
            for lane in 0..concurrency.max(1) {
                let sh = shared.clone();
                let mut cancel = cancel.clone();
                tasks.push(tokio::spawn(async move {
                    let mut conn: Option<Conn> = None;
                    let mut prev: Option<TurnOutcome> = None;
                    loop {
                        if cancel.is_cancelled() {
                            break;
                        }
                        let Some(spec) = sh.next(Some(lane), prev.as_ref()) else {
                            break;
                        };
                        if !spec.delay.is_zero() {
                            tokio::select! {
                                _ = tokio::time::sleep(spec.delay) => {}
                                _ = cancel.wait() => break,
                            }
                        }
                        let scheduled = sh.ctx.clock.now_ns();
                        prev = Some(sh.run_one(&mut conn, &spec, scheduled, &mut cancel).await);
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        }
        Load::Open {
            rate,
            burstiness,
            max_concurrency,
            seed,
        } => {
            run_open(
                &shared,
                rate,
                burstiness,
                max_concurrency,
                seed,
                cancel.clone(),
            )
            .await;
        }
    }
    let end_ns = clock.now_ns();
    let records = std::mem::take(&mut *shared.records.lock().unwrap_or_else(|p| p.into_inner()));
    let end_ns = records
        .iter()
        .map(|r| r.end_ns)
        .max()
        .unwrap_or(end_ns)
        .min(end_ns)
        .max(start_ns);
    PhaseResult {
        records,
        start_ns,
        end_ns,
        cancelled: cancel.is_cancelled(),
        peak_in_flight: shared.peak.load(Ordering::SeqCst),
    }
}

async fn run_open(
    shared: &Arc<Shared>,
    rate: f64,
    burstiness: f64,
    cap: Option<usize>,
    seed: u64,
    mut cancel: Cancel,
) {
    let clock = shared.ctx.clock;
    let gamma = if rate.is_finite() && rate > 0.0 {
        let shape = if burstiness > 0.0 { burstiness } else { 1.0 };
        rand_distr::Gamma::new(shape, 1.0 / (rate * shape)).ok()
    } else {
        None
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let origin = clock.origin();
    let mut next_at_ns = clock.now_ns();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(RequestSpec, u64)>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let idle: Arc<Mutex<Vec<Conn>>> = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    if let Some(c) = cap {
        for _ in 0..c.max(1) {
            let sh = shared.clone();
            let rx = rx.clone();
            let mut cancel = cancel.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = None;
                loop {
                    let item = rx.lock().await.recv().await;
                    let Some((spec, scheduled)) = item else { break };
                    if cancel.is_cancelled() {
                        break;
                    }
                    sh.run_one(&mut conn, &spec, scheduled, &mut cancel).await;
                }
            }));
        }
    }
    loop {
        if cancel.is_cancelled() {
            break;
        }
        let Some(spec) = shared.next(None, None) else {
            break;
        };
        let at = origin + Duration::from_nanos(next_at_ns);
        tokio::select! {
            _ = tokio::time::sleep_until(at.into()) => {}
            _ = cancel.wait() => break,
        }
        let scheduled = next_at_ns;
        if cap.is_some() {
            let _ = tx.send((spec, scheduled));
        } else {
            let sh = shared.clone();
            let idle = idle.clone();
            let mut cancel = cancel.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
                sh.run_one(&mut conn, &spec, scheduled, &mut cancel).await;
                if let Some(c) = conn {
                    idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
                }
            }));
        }
        if let Some(g) = &gamma {
            let dt: f64 = g.sample(&mut rng);
            next_at_ns += (dt * 1e9) as u64;
        }
    }
    drop(tx);
    for t in tasks {
        let _ = t.await;
    }
}
