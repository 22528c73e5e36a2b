//! Hugging Face `transformers serve`.

use crate::metrics::MetricFamilies;
use crate::profile::{BodyQuirks, ChatCap, EngineProfile, LaunchSyntax};

/// `transformers serve`: `max_tokens` only; `ignore_eos` and `min_tokens` are refused with HTTP
/// 422, so neither is sent (AgentX too).
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "transformers",
    aliases: &[],
    display: "transformers",
    framework: None,
    framework_words: &[],
    image_words: &[],
    flag_tables: None,
    body: BodyQuirks {
        chat_cap: ChatCap::MaxTokens,
        ignore_eos: false,
        min_tokens: false,
        continuous_usage: false,
        agentx_cap_field: "max_tokens",
        agentx_ignore_eos: false,
    },
    flush: None,
    flush_404_hint: None,
    completions_backend: "openai",
    launch: LaunchSyntax::NONE,
    metrics: MetricFamilies::NONE,
};
