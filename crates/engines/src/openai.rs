//! A strict OpenAI-compatible API.

use crate::metrics::MetricFamilies;
use crate::profile::{BodyQuirks, ChatCap, EngineProfile, LaunchSyntax};

/// Strict OpenAI: chat gets `max_completion_tokens` only (reasoning models reject
/// `max_tokens`); no `ignore_eos` or `min_tokens`.
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "openai",
    aliases: &[],
    display: "openai",
    framework: None,
    framework_words: &[],
    image_words: &[],
    flag_tables: None,
    body: BodyQuirks {
        chat_cap: ChatCap::MaxCompletionTokens,
        ignore_eos: false,
        min_tokens: false,
        continuous_usage: false,
        agentx_cap_field: "max_completion_tokens",
        agentx_ignore_eos: false,
    },
    flush: None,
    flush_404_hint: None,
    completions_backend: "openai",
    launch: LaunchSyntax::NONE,
    metrics: MetricFamilies::NONE,
};
