//! The workload seam: an [`Executor`] measures one point of one workload; the scheduler
//! ([`crate::sweep`]) walks concurrencies × repeats and hands every finished point to the
//! observers. The fixed-sequence random workload is [`crate::fixed::FixedSequence`]; a second
//! workload (AgentX trace replay) plugs in as one more `impl Executor`.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use servebench_client::{Cancel, RequestRecord};
use servebench_metrics::{AggRow, Identity, PointMetrics, ResultFile};

use crate::error::Result;
use crate::plan::SweepPlan;
use crate::target::Target;

/// What every executor may read while measuring: the plan, the target, the model and identity
/// the rows carry, and the sweep's cancel token (Ctrl-C).
pub struct SweepCtx<'a> {
    /// The plan.
    pub plan: &'a SweepPlan,
    /// The target (endpoint or simulator).
    pub target: &'a Target,
    /// Model name sent in requests.
    pub model: &'a str,
    /// Identity written into every agg row.
    pub identity: &'a Identity,
    /// Cancelled by Ctrl-C: an executor stops its point and returns what it measured.
    pub cancel: &'a Cancel,
    /// Progress bars on stderr (a terminal); else plain progress lines.
    pub tty: bool,
    /// Where lines for the user go (the session's reporter).
    pub console: &'a std::sync::Arc<dyn crate::console::Console>,
}

/// One scheduled point: a concurrency and which of its repeats.
#[derive(Debug, Clone)]
pub struct PointSpec {
    /// Concurrency.
    pub conc: u64,
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// Repeats per concurrency.
    pub repeats: u32,
    /// Directory of the point's files (`DIR/conc<C>` or `DIR/conc<C>-r<k>`), created.
    pub dir: PathBuf,
}

impl PointSpec {
    /// How the point is named in progress lines: `conc 4`, or `conc 4 repeat 2/3`.
    pub fn label(&self) -> String {
        point_label(self.conc, self.repeat, self.repeats)
    }
}

/// One measured point, as the observers receive it.
#[derive(Debug, Clone)]
pub struct PointOutput {
    /// The point.
    pub spec: PointSpec,
    /// Computed statistics (ms; scaled back to modelled time on the simulator).
    pub metrics: PointMetrics,
    /// The aggregated row (`agg.json`, the store's point row).
    pub agg: AggRow,
    /// The raw result (`result.json`): a fixed-sequence point's InferenceX keys plus the
    /// `servebench` block ([`servebench_metrics::ResultDoc`]), or another workload's result.
    pub result: ResultFile,
    /// Measured phase wall time, s.
    pub wall_s: f64,
    /// The point's request records, in memory: exactly what its `records.jsonl` holds (warmup
    /// then measured; a point kept by `--resume` reads them back from that file). Observers
    /// that need per-request data (the slo extras, the search's goodput) read them here.
    pub records: Arc<[RequestRecord]>,
}

/// Measures points of one workload.
pub trait Executor {
    /// What is built once per concurrency and reused by its repeats (the dataset).
    type Workload;

    /// Builds the workload of concurrency `conc`.
    fn prepare(
        &mut self,
        ctx: &SweepCtx<'_>,
        conc: u64,
    ) -> impl Future<Output = Result<Self::Workload>>;

    /// One line describing the workload (`summary.json` `datasets`; printed for the first).
    fn describe(&self, workload: &Self::Workload) -> String;

    /// A line saying how many requests a point of concurrency `conc` measures, printed before
    /// its first point; `None` when the workload has no fixed count (a replay window).
    fn requests_line(&self, _ctx: &SweepCtx<'_>, _conc: u64) -> Option<String> {
        None
    }

    /// Warms up and measures one point, writing its records into `point.dir` and returning
    /// them in [`PointOutput::records`].
    fn run_point(
        &mut self,
        ctx: &SweepCtx<'_>,
        workload: &Self::Workload,
        point: &PointSpec,
    ) -> impl Future<Output = Result<PointOutput>>;
}

/// Point directory under the output directory: `conc<C>`, or `conc<C>-r<k>` with repeats.
pub fn point_dir_name(conc: u64, repeat: u32, repeats: u32) -> String {
    if repeats <= 1 {
        format!("conc{conc}")
    } else {
        format!("conc{conc}-r{repeat}")
    }
}

/// How a point is named in progress lines: `conc 4`, or `conc 4 repeat 2/3`.
pub fn point_label(conc: u64, repeat: u32, repeats: u32) -> String {
    if repeats <= 1 {
        format!("conc {conc}")
    } else {
        format!("conc {conc} repeat {repeat}/{repeats}")
    }
}
