//! Simulator: an OpenAI-compatible server whose timing comes from a model of a named GPU
//! serving a named model with continuous batching.
//!
//! Must not know about: the client, metrics, the store. Content for known prompts comes from an
//! [`AnswerBook`] supplied by the caller (the binary wires the GSM8K one from `eval`).

/// Supplies the text the simulator streams for a prompt it recognises.
///
/// `prompt` is the completions prompt, or for chat the content of the last user message.
/// Returns `None` for unknown prompts (the simulator then streams generic text).
pub trait AnswerBook: Send + Sync + 'static {
    /// The full response text for this prompt, if known.
    fn answer(&self, prompt: &str) -> Option<String>;
}
