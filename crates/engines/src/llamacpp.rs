//! llama.cpp `llama-server` (`--metrics`; InferenceX does not run it: its adapter follows the
//! same token-weighted hit rate).

use crate::metrics::{first_total, MetricFamilies, PrefixCacheFormula, PromptBySource, ServerMetrics};
use crate::prom::ScrapeSet;
use crate::profile::{BodyQuirks, ChatCap, EngineProfile, FlushRoute, LaunchSyntax};

/// llama.cpp's profile: `max_tokens` only, `ignore_eos` honoured, `min_tokens` ignored by the
/// server (not sent).
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "llama.cpp",
    aliases: &["llamacpp", "llama-cpp"],
    display: "llama.cpp",
    framework: None,
    framework_words: &["llama"],
    image_words: &["llama.cpp", "llama-cpp", "llamacpp"],
    flag_tables: None,
    body: BodyQuirks {
        chat_cap: ChatCap::MaxTokens,
        min_tokens: false,
        ..BodyQuirks::OPENAI_PLUS
    },
    flush: Some(FlushRoute::LlamaSlots),
    flush_404_hint: None,
    completions_backend: "openai",
    launch: LaunchSyntax::NONE,
    metrics: MetricFamilies {
        prefixes: &["llamacpp:"],
        detect_rank: 2,
        adapter: "llamacpp",
        prefix_cache: PrefixCacheFormula::CachedOverComputedPlusCached {
            cached: &["llamacpp:prompt_tokens_cached"],
            computed: &["llamacpp:prompt_tokens"],
        },
        prefix_cache_source:
            "llamacpp:prompt_tokens_cached / (cached + prompt_tokens) Δ over the measured phase",
        kv_usage: &["llamacpp:kv_cache_usage_ratio"],
        queue_waiting: &["llamacpp:requests_deferred"],
        queue_running: &["llamacpp:requests_processing"],
        offload: None,
        server_metrics: Some(server_metrics),
    },
};

/// llama.cpp counts computed and reused prompt tokens apart: prompt tokens = computed + cached,
/// hit rate = cached / prompt tokens (the token-weighted rate, like vLLM's hits/queries and
/// SGLang's cached/prompt).
fn server_metrics(f: &MetricFamilies, set: &ScrapeSet, m: &mut ServerMetrics) {
    let computed = first_total(set, &["llamacpp:prompt_tokens"]);
    let pc = f.prefix_cache(set);
    m.cache.gpu_cache_hit_rate = pc.rate;
    m.cache.overall_cache_hit_rate = pc.rate;
    m.cache.prefix_cache_hits = pc.hits;
    m.cache.prefix_cache_queries = pc.queries;
    m.kv_cache.gpu_usage_pct = f.kv_usage(set);
    let prompt = match (computed, pc.hits) {
        (Some(a), Some(b)) => Some(a + b),
        (a, None) => a,
        (None, b) => b,
    };
    m.tokens.prompt_total = prompt.map(|x| x.round() as u64);
    m.tokens.generation_total =
        first_total(set, &["llamacpp:tokens_predicted"]).map(|x| x.round() as u64);
    m.tokens.prompt_by_source = PromptBySource {
        gpu_cache_hit: pc.hits,
        cpu_or_external_cache_hit: None,
        computed,
        raw: Default::default(),
    };
}
