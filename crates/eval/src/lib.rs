//! Eval: GSM8K exactly as lm-evaluation-harness / InferenceX run it (prompts, few-shot sampler,
//! filters, exact match, standard error, threshold gate) and the answer book of recorded
//! model solutions that the simulator replays.
//!
//! Owns: the task definitions ([`task`], profiles `inferencex` and `lm-eval`), CPython's
//! `random.Random` for lm-eval's few-shot sampler ([`pyrandom`]), lm-eval's filters and
//! `exact_match` ([`scoring`]), the threshold gate ([`thresholds`]), the concurrent
//! non-streaming chat client with retries and resume ([`run_gsm8k`]), the result files
//! ([`result`]), the GSM8K answer book ([`sim_answers`]), and where the shared data folder is
//! ([`shared`]).
//!
//! Must not know about: throughput metrics, the store, reports, the simulator. Where requests
//! go is the endpoint layer's (`servebench-endpoint`): [`run_gsm8k`] takes its `Target` (an
//! endpoint with API key and TLS settings, or the simulator the caller started), and uses its
//! readiness wait, model discovery and cancel token.
//!
//! Errors are [`EvalError`]: one line naming the file (and line), the URL or the document;
//! the endpoint layer's errors pass through unchanged ([`EvalError::Endpoint`]).

#![warn(missing_docs)]

pub mod error;
pub mod pyrandom;
pub mod result;
mod run;
pub mod scoring;
pub mod shared;
pub mod sim_answers;
mod summary;
pub mod task;
pub mod thresholds;

pub use error::{DocFailure, EvalError, InputFile, WriteOp};
pub use result::{EvalMeta, EvalResult, EvalRow, SampleRecord};
pub use run::{
    backoff, chat_base, chat_url, request_body, request_params, response_text, run_gsm8k,
    EvalOptions,
};
pub use summary::{default_out_dir, render_summary, utc_stamp};
pub use task::{Profile, TaskSpec};
