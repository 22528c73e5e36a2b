//! [`run`]: the one entry of every measuring command — `sweep`/`bench`
//! ([`crate::sweep::run_sweep`]), `search` (`servebench-slo`) and `eval`
//! ([`crate::standalone_eval`]) are drivers of it. It builds the tokio runtime (multi-thread,
//! one worker per CPU this process may run on) and the Ctrl-C watcher over the session's cancel
//! token, runs the driver's body on it (which opens the [`crate::Session`]: target, model,
//! identity, workload) and stops the watcher when the body ends.

use std::future::Future;

use servebench_endpoint::CancelToken;

use crate::error::{PipelineError, Result};

/// Runs `body` with `cancel` on a new multi-thread runtime, `cancel` cancelled by the first
/// Ctrl-C (`on_ctrl_c` runs first, to say what stops). Errors: the runtime could not be built
/// ([`PipelineError::Runtime`]); the body's own outcome is its `T`.
pub fn run<T, F>(
    cancel: &CancelToken,
    on_ctrl_c: impl FnOnce() + Send + 'static,
    body: impl FnOnce(CancelToken) -> F,
) -> Result<T>
where
    F: Future<Output = T>,
{
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
