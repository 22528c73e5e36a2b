//! SGLang (`python3 -m sglang.launch_server`, `sglang serve`).

use crate::metrics::{
    first_total, rate, sum_of_max, MetricFamilies, PrefixCacheFormula, PromptBySource,
    ServerMetrics,
};
use crate::prom::ScrapeSet;
use crate::profile::{BodyQuirks, EngineProfile, FlushRoute, LaunchForm, LaunchSyntax, ModelArg};

/// SGLang's profile.
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "sglang",
    aliases: &[],
    display: "SGLang",
    framework: Some("sglang"),
    framework_words: &["sglang"],
    image_words: &["sglang", "sgl-dev"],
    flag_tables: Some("sglang"),
    body: BodyQuirks {
        continuous_usage: true,
        ..BodyQuirks::OPENAI_PLUS
    },
    flush: Some(FlushRoute::Post("/flush_cache")),
    flush_404_hint: None,
    completions_backend: "openai",
    launch: LaunchSyntax {
        forms: &[
            LaunchForm::Module("sglang.launch_server"),
            LaunchForm::Subcommand("sglang", "serve"),
        ],
        model: ModelArg::Flag(&["--model-path", "--model"]),
        port_flags: &["--port"],
        default_host: "127.0.0.1",
        default_port: 30000,
    },
    metrics: MetricFamilies {
        prefixes: &["sglang:"],
        detect_rank: 1,
        adapter: "sglang",
        prefix_cache: PrefixCacheFormula::CachedOverPrompt {
            cached: &["sglang:cached_tokens"],
            label: Some("cache_source"),
            prompt: &["sglang:prompt_tokens"],
            gauge: Some("sglang:cache_hit_rate"),
        },
        prefix_cache_source: "sglang:cached_tokens/prompt_tokens Δ over the measured phase",
        kv_usage: &["sglang:token_usage"],
        queue_waiting: &["sglang:num_queue_reqs"],
        queue_running: &["sglang:num_running_reqs"],
        offload: None,
        server_metrics: Some(server_metrics),
    },
};

/// InferenceX `backends/sglang.py` reduced to the `server_metrics` block.
fn server_metrics(f: &MetricFamilies, set: &ScrapeSet, m: &mut ServerMetrics) {
    let prompt = first_total(set, &["sglang:prompt_tokens"]);
    let gen = first_total(set, &["sglang:generation_tokens"]);
    let cached = set.by_label("sglang:cached_tokens", "cache_source");
    let dev = cached.get("device").copied();
    let host = cached.get("host").copied();
    m.cache.gpu_cache_hit_rate = rate(dev, prompt);
    m.cache.cpu_cache_hit_rate = rate(host, prompt);
    m.cache.external_cache_hit_rate = m.cache.cpu_cache_hit_rate;
    m.cache.overall_cache_hit_rate = f.prefix_cache(set).rate;
    m.kv_cache.gpu_usage_pct = f.kv_usage(set);
    m.kv_cache.gpu_total_tokens = sum_of_max(set, "sglang:max_total_num_tokens");
    m.tokens.prompt_total = prompt.map(|x| x.round() as u64);
    m.tokens.generation_total = gen.map(|x| x.round() as u64);
    m.tokens.prompt_by_source = PromptBySource {
        gpu_cache_hit: dev,
        cpu_or_external_cache_hit: host,
        computed: None,
        raw: cached.clone(),
    };
    m.cache.cached_tokens_by_source = cached;
}
