//! Measured GPU energy, as InferenceX computes it (`utils/aggregate_power.py`,
//! `utils/agentic/aggregation/power_adapter.py`): telemetry CSVs written by its
//! `start_gpu_monitor` (nvidia-smi `--query-gpu=timestamp,index,power.draw,…` or amd-smi watch
//! mode, plus amd-smi energy-accumulator snapshots) → per-GPU trapezoidal energy over the
//! benchmark window with linear interpolation at its edges → validation (GPU count, window
//! bracketed by every GPU, max sample gap 3 s, bad values, unreadable rows) → the agg row's
//! `avg_power_w`, `avg_total_gpu_power_w`, `total_gpu_energy_j`, `joules_per_*`,
//! `power_valid` (1/0), `power_metric_schema_version` and the validation sidecar, byte for
//! byte as the Python writes them (CPython 3.11; see `parse` for the few inputs no SMI tool
//! writes where it differs).
//!
//! Must not know about: how samples are taken (NVML sampling lives with the measuring
//! pipeline; it hands over [`integrate::RawSamples`]), HTTP, the store.
//!
//! * [`pycsv`] — Python's `csv.DictReader` (excel dialect, `skipinitialspace`).
//! * [`parse`] — timestamp, power and column parsing; exact `statistics.mean`.
//! * [`integrate`] — `integrate_power`, `integrate_samples`, `cross_check_accumulator`.
//! * [`aggregate`] — `run`: window and counts, agg patch, sidecar, exit status.
//! * [`agentx`] — the AgentX power adapter (profiling window, successful records).
//! * [`sampled`] — a point's energy from servebench's own NVML readings, with the NVML
//!   energy-counter cross-check.

pub mod agentx;
pub mod aggregate;
pub mod integrate;
pub mod parse;
pub mod pycsv;
pub mod sampled;

pub use agentx::{agentx_power, AgentxOutcome, AgentxPowerArgs};
pub use aggregate::{aggregate_power, AggregatePowerArgs, PowerError, PowerOutcome, PowerVerdict};
pub use integrate::{integrate_power, integrate_samples, PowerIntegration, RawSamples};
pub use sampled::{
    energy_from_readings, modelled_energy, telemetry_energy, GpuReading, SampledEnergy,
};
