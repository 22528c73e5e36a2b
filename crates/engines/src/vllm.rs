//! vLLM (`vllm serve`, `python3 -m vllm.entrypoints.openai.api_server`).

use crate::metrics::{
    first_total, fraction, rate, MetricFamilies, OffloadFamilies, PrefixCacheFormula,
    PromptBySource, ServerMetrics,
};
use crate::prom::ScrapeSet;
use crate::profile::{BodyQuirks, EngineProfile, FlushRoute, LaunchForm, LaunchSyntax, ModelArg};

/// vLLM's profile.
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "vllm",
    aliases: &[],
    display: "vLLM",
    framework: Some("vllm"),
    framework_words: &["vllm"],
    image_words: &["vllm"],
    flag_tables: Some("vllm"),
    body: BodyQuirks {
        continuous_usage: true,
        ..BodyQuirks::OPENAI_PLUS
    },
    flush: Some(FlushRoute::Post("/reset_prefix_cache")),
    flush_404_hint: Some(" (vLLM serves it only with VLLM_SERVER_DEV_MODE=1)"),
    completions_backend: "vllm",
    launch: LaunchSyntax {
        forms: &[
            LaunchForm::Subcommand("vllm", "serve"),
            LaunchForm::Module("vllm.entrypoints.openai.api_server"),
        ],
        model: ModelArg::FlagThenPositional(&["--model"]),
        port_flags: &["--port"],
        default_host: "0.0.0.0",
        default_port: 8000,
    },
    metrics: MetricFamilies {
        prefixes: &["vllm:"],
        detect_rank: 0,
        adapter: "vllm",
        prefix_cache: PrefixCacheFormula::HitsOverQueries {
            hits: &["vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"],
            queries: &["vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"],
            by_source: Some((
                "vllm:prompt_tokens_by_source",
                &["local_cache_hit", "external_kv_transfer"],
            )),
        },
        prefix_cache_source: "vllm:prefix_cache_hits/queries Δ over the measured phase",
        kv_usage: &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        queue_waiting: &["vllm:num_requests_waiting"],
        queue_running: &["vllm:num_requests_running"],
        offload: Some(OffloadFamilies {
            bytes_gpu_to_cpu: "vllm:kv_offload_bytes_gpu_to_cpu",
            bytes_cpu_to_gpu: "vllm:kv_offload_bytes_cpu_to_gpu",
            time_gpu_to_cpu: "vllm:kv_offload_time_gpu_to_cpu",
            time_cpu_to_gpu: "vllm:kv_offload_time_cpu_to_gpu",
        }),
        server_metrics: Some(server_metrics),
    },
};

/// InferenceX `backends/vllm.py` reduced to the `server_metrics` block.
fn server_metrics(f: &MetricFamilies, set: &ScrapeSet, m: &mut ServerMetrics) {
    let all = |n: &str| set.sum_total(n, |_| true);
    let hits = all("vllm:prefix_cache_hits");
    let queries = all("vllm:prefix_cache_queries");
    let ehits = all("vllm:external_prefix_cache_hits");
    let equeries = all("vllm:external_prefix_cache_queries");
    let ext = rate(ehits, equeries);
    m.cache.gpu_cache_hit_rate = rate(hits, queries);
    m.cache.external_cache_hit_rate = ext;
    m.cache.cpu_cache_hit_rate = ext;
    m.cache.overall_cache_hit_rate = f.prefix_cache(set).rate;
    let by_src = set.by_label("vllm:prompt_tokens_by_source", "source");
    if !by_src.is_empty() {
        let total: f64 = by_src.values().sum();
        let local = by_src.get("local_cache_hit").copied();
        let xfer = by_src.get("external_kv_transfer").copied();
        if total > 0.0 {
            if let Some(l) = local {
                m.cache.gpu_cache_hit_rate = Some(l / total);
            }
            if let Some(x) = xfer {
                m.cache.cpu_cache_hit_rate = Some(x / total);
                m.cache.external_cache_hit_rate = Some(x / total);
            }
        }
        m.tokens.prompt_by_source = PromptBySource {
            gpu_cache_hit: local,
            cpu_or_external_cache_hit: xfer,
            computed: by_src.get("local_compute").copied(),
            raw: by_src,
        };
    }
    m.cache.prefix_cache_hits = hits;
    m.cache.prefix_cache_queries = queries;
    m.cache.external_prefix_cache_hits = ehits;
    m.cache.external_prefix_cache_queries = equeries;
    m.kv_cache.gpu_usage_pct = f.kv_usage(set);
    m.kv_cache.cpu_usage_pct = fraction(set.gauge_max(&["vllm:cpu_kv_cache_usage_perc"]));
    let o = f.offload(set);
    m.kv_offload.bytes_gpu_to_cpu = o.bytes_gpu_to_cpu;
    m.kv_offload.bytes_cpu_to_gpu = o.bytes_cpu_to_gpu;
    m.kv_offload.time_gpu_to_cpu = o.time_gpu_to_cpu;
    m.kv_offload.time_cpu_to_gpu = o.time_cpu_to_gpu;
    m.kv_offload.bandwidth_gpu_to_cpu_bytes_per_second =
        rate(o.bytes_gpu_to_cpu, o.time_gpu_to_cpu);
    m.kv_offload.bandwidth_cpu_to_gpu_bytes_per_second =
        rate(o.bytes_cpu_to_gpu, o.time_cpu_to_gpu);
    m.tokens.prompt_total = first_total(set, &["vllm:prompt_tokens"]).map(|x| x.round() as u64);
    m.tokens.generation_total =
        first_total(set, &["vllm:generation_tokens"]).map(|x| x.round() as u64);
}
