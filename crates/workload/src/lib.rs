//! Workload: what is sent. The fixed-sequence random dataset with InferenceX semantics
//! (lengths U[floor(L*r), L], seed 0, prompts built to exact token length), tokenizer and chat template.
//!
//! Must not know about: HTTP, timing, metrics, the store.
