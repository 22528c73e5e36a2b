//! [`run`]: the one entry of every measuring command — `sweep`/`bench`
//! ([`crate::sweep::run_sweep`]), `search` (`servebench-slo`) and `eval`
//! ([`crate::standalone_eval`]) are drivers of it. It builds the tokio runtime (multi-thread,
//! one worker per CPU this process may run on; on the virtual clock a current-thread runtime
//! whose clock starts paused, so client and simulator share one discrete-event clock) and the
//! Ctrl-C watcher over the session's cancel token, runs the driver's body on it (which opens the
//! [`crate::Session`]: target, model, identity, workload) and stops the watcher when the body
//! ends.

use std::future::Future;

use servebench_contracts::SimClock;
use servebench_endpoint::CancelToken;

use crate::error::{PipelineError, Result};

/// Runs `body` with `cancel` on a new runtime, `cancel` cancelled by the first Ctrl-C
/// (`on_ctrl_c` runs first, to say what stops): multi-thread on the wall clock; on the virtual
/// clock ([`SimClock::Virtual`]) current-thread with its clock paused from the start (tokio
/// `start_paused`: time advances to the next timer only when every task waits). Errors: the
/// runtime could not be built ([`PipelineError::Runtime`]); the body's own outcome is its `T`.
pub fn run<T, F>(
    clock: SimClock,
    cancel: &CancelToken,
    on_ctrl_c: impl FnOnce() + Send + 'static,
    body: impl FnOnce(CancelToken) -> F,
) -> Result<T>
where
    F: Future<Output = T>,
{
    match clock {
        SimClock::Wall => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(PipelineError::Runtime)?;
            rt.block_on(async {
                let watcher = servebench_endpoint::cancel_on_ctrl_c(cancel, on_ctrl_c);
                let out = body(cancel.clone()).await;
                watcher.abort();
                Ok(out)
            })
        }
        SimClock::Virtual => {
            // Time driver only: with the I/O driver on, every advance of the paused clock parks
            // on epoll (a syscall per virtual instant, and the signal driver's orphan reaping),
            // ~10 % of a simulated point's CPU. Nothing on this runtime touches a socket (the
            // connections are in-memory pipes); Ctrl-C is watched from a thread of its own.
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .map_err(PipelineError::Runtime)?;
            let watcher = CtrlCThread::start(cancel, on_ctrl_c).map_err(PipelineError::Runtime)?;
            let out = rt.block_on(body(cancel.clone()));
            watcher.stop();
            Ok(out)
        }
    }
}

/// A Ctrl-C watcher on its own OS thread (a one-thread runtime with the I/O and signal drivers),
/// for a runtime built without them. Stopped (and joined) by [`CtrlCThread::stop`].
struct CtrlCThread {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl CtrlCThread {
    /// Errors: the thread or its runtime could not be created.
    fn start(
        cancel: &CancelToken,
        on_ctrl_c: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<CtrlCThread> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let cancel = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("ctrl-c".into())
            .spawn(move || {
                rt.block_on(async move {
                    tokio::select! {
                        r = tokio::signal::ctrl_c() => {
                            if r.is_ok() {
                                on_ctrl_c();
                                cancel.cancel();
                            }
                        }
                        _ = stopped => {}
                    }
                })
            })?;
        Ok(CtrlCThread { stop, thread })
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
