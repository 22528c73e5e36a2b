//! Eval: GSM8K exactly as lm-evaluation-harness / InferenceX run it (prompts, few-shot sampler,
//! filters, exact match, standard error, threshold gate) and the simulator answer book that
//! replays recorded model solutions.
//!
//! Owns: the task definitions ([`task`], profiles `inferencex` and `lm-eval`), CPython's
//! `random.Random` for lm-eval's few-shot sampler ([`pyrandom`]), lm-eval's filters and
//! `exact_match` ([`scoring`]), the threshold gate ([`thresholds`]), the concurrent
//! non-streaming chat client with retries and resume ([`run_gsm8k`]), the result files
//! ([`result`]), and the GSM8K [`servebench_sim::AnswerBook`] ([`sim_answers`]).
//!
//! Must not know about: throughput metrics, the store, reports.

mod embedded;
pub mod pyrandom;
pub mod result;
mod run;
pub mod scoring;
pub mod sim_answers;
mod summary;
pub mod task;
pub mod thresholds;

pub use result::{EvalMeta, EvalResult, EvalRow, SampleRecord};
pub use run::{
    backoff, chat_url, request_body, request_params, response_text, run_gsm8k, EvalOptions,
    Interrupt, SimChoice,
};
pub use summary::{default_out_dir, render_summary, utc_stamp};
pub use task::{Profile, TaskSpec};
