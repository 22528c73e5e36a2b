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
    let rt = match clock {
        SimClock::Wall => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
        SimClock::Virtual => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build(),
    }
    .map_err(PipelineError::Runtime)?;
    rt.block_on(async {
        let watcher = servebench_endpoint::cancel_on_ctrl_c(cancel, on_ctrl_c);
        let out = body(cancel.clone()).await;
        watcher.abort();
        Ok(out)
    })
}
