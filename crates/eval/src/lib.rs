//! Eval: GSM8K exactly as lm-evaluation-harness / InferenceX run it (prompts, few-shot sampler,
//! filters, exact match, standard error, threshold gate) and the simulator answer book that
//! replays recorded model solutions.
//!
//! Must not know about: throughput metrics, the store, reports.
