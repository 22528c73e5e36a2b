//! Workload: what is sent. The fixed-sequence random dataset with InferenceX semantics
//! (lengths U[floor(L*r), L], seed 0, prompts built to exact token length), tokenizer and chat template.
//!
//! Owns: the numpy-compatible generator ([`numpy_rng`]), the model tokenizer and chat template
//! ([`tokenizer`]), the random dataset ([`random`]) and the request-source abstraction the
//! client's driver pulls requests from ([`source`]; the planned agentic workload plugs in there).
//!
//! Must not know about: HTTP, timing, metrics, the store. (Server-side token counting is reached
//! through the [`tokenizer::TokenCounter`] trait, implemented by the client crate.)
//!
//! Errors: every fallible function returns [`WorkloadError`] (one variant per failure kind, one
//! line naming the file, flag or value).
#![warn(missing_docs)]

pub mod error;
mod fast_bpe;
pub mod fast_count;
pub mod fast_decode;
pub mod numpy_rng;
pub mod random;
pub mod source;
pub mod tokenizer;

pub use error::WorkloadError;
pub use random::{
    build_calibrated, build_with_tokenizer, build_with_tokenizer_library_only, CountStats, Dataset,
    DatasetEntry, RandomDatasetConfig, TokenCountSource,
};
pub use source::{ChatMessage, DatasetSource, Prompt, RequestSource, RequestSpec, TurnOutcome};
pub use tokenizer::{ChatTemplate, LocalTokenizer, TokenCounter};
