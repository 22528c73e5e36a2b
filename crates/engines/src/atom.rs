//! ATOM, AMD's inference engine (InferenceX `framework: atom`, images `rocm/atom…`, launched as
//! `python3 -m atom.entrypoints.openai_server --model M --server-port P -tp N`:
//! `benchmarks/single_node/*_atom*.sh`). Its `/metrics` names carry `atom:` (worker) or
//! `atom_` (Atomesh's normalised form); the adapter is InferenceX's
//! `utils/agentic/aggregation/backends/atom.py`.

use crate::metrics::{first_total, rate, MetricFamilies, PrefixCacheFormula, ServerMetrics};
use crate::prom::ScrapeSet;
use crate::profile::{BodyQuirks, EngineProfile, LaunchForm, LaunchSyntax, ModelArg};

/// ATOM's profile: InferenceX measures it with `benchmark_serving.py --backend vllm`, so the
/// request body is vLLM's (both chat caps, `ignore_eos`, `min_tokens`); no prefix-cache flush
/// route is known.
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "atom",
    aliases: &[],
    display: "ATOM",
    framework: Some("atom"),
    framework_words: &["atom"],
    image_words: &["atom"],
    flag_tables: None,
    body: BodyQuirks::OPENAI_PLUS,
    flush: None,
    flush_404_hint: None,
    completions_backend: "vllm",
    launch: LaunchSyntax {
        forms: &[LaunchForm::Module("atom.entrypoints.openai_server")],
        model: ModelArg::Flag(&["--model"]),
        port_flags: &["--server-port", "--port"],
        default_host: "0.0.0.0",
        default_port: 8000,
    },
    metrics: MetricFamilies {
        prefixes: &["atom:", "atom_"],
        detect_rank: 3,
        adapter: "atom",
        prefix_cache: PrefixCacheFormula::CachedOverPrompt {
            cached: &[
                "atom:prefix_cache_cached_tokens",
                "atom_prefix_cache_cached_tokens",
            ],
            label: None,
            prompt: &[
                "atom:prefix_cache_full_tokens",
                "atom_prefix_cache_full_tokens",
            ],
            gauge: None,
        },
        prefix_cache_source:
            "atom:prefix_cache_cached_tokens/prefix_cache_full_tokens Δ over the measured phase",
        kv_usage: &["atom:kv_cache_usage_ratio", "atom_kv_cache_usage_ratio"],
        queue_waiting: &["atom:requests_waiting", "atom_requests_waiting"],
        queue_running: &["atom:requests_running", "atom_requests_running"],
        offload: None,
        server_metrics: Some(server_metrics),
    },
};

/// InferenceX `backends/atom.py`: the admitted-cache counter may already include a completed
/// LMCache load, so the overall rate is the cached/full rate (external tokens not added).
fn server_metrics(f: &MetricFamilies, set: &ScrapeSet, m: &mut ServerMetrics) {
    let both = |s: &'static [&'static str]| first_total(set, s);
    let prompt = both(&["atom:prompt_tokens", "atom_prompt_tokens"]);
    let gen = both(&["atom:generation_tokens", "atom_generation_tokens"]);
    let pc = f.prefix_cache(set);
    let external = both(&["atom:lmcache_loaded_tokens", "atom_lmcache_loaded_tokens"]);
    let ext = rate(external, pc.queries);
    m.cache.gpu_cache_hit_rate = pc.rate;
    m.cache.cpu_cache_hit_rate = ext;
    m.cache.external_cache_hit_rate = ext;
    m.cache.overall_cache_hit_rate = pc.rate;
    m.cache.prefix_cache_hits = pc.hits;
    m.cache.prefix_cache_queries = pc.queries;
    m.cache.external_prefix_cache_hits = external;
    m.cache.external_prefix_cache_queries = pc.queries;
    m.kv_cache.gpu_usage_pct = f.kv_usage(set);
    m.tokens.prompt_total = prompt.map(|x| x.round() as u64);
    m.tokens.generation_total = gen.map(|x| x.round() as u64);
}

#[cfg(test)]
mod tests {
    use crate::metrics::ServerMetrics;
    use crate::prom::{parse_text, ScrapeSet};
    use crate::{BodyQuirks, ChatCap, Engine, LaunchArgs};

    fn a(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// ATOM as InferenceX runs it: recognised from its image, its catalog framework and its
    /// launch command (`dsr1_fp8_mi355x_atom.sh`), with vLLM's request body.
    #[test]
    fn atom_is_recognised_from_image_framework_and_launch() {
        for image in [
            "rocm/atom:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom0.1.3",
            "rocm/atom-dev:nightly_202608201032",
        ] {
            assert_eq!(Engine::from_image(image), Some(Engine::Atom), "{image}");
        }
        assert_eq!(Engine::from_framework("atom"), Some(Engine::Atom));
        assert_eq!(Engine::from_framework("atom-disagg"), Some(Engine::Atom));
        assert_eq!(Engine::parse("ATOM"), Ok(Engine::Atom));
        assert_eq!(Engine::Atom.profile().display, "ATOM");
        let args = a("-m atom.entrypoints.openai_server --model /models/dsr1 --server-port 8888 -tp 8 --kv_cache_dtype fp8 --max-model-len 10240 --block-size 16");
        let (e, rest) = Engine::from_launch("python3", &args).unwrap();
        assert_eq!(e, Engine::Atom);
        assert_eq!(rest[0], "--model");
        let l = LaunchArgs::parse(e, rest);
        assert_eq!(
            (l.model.as_deref(), l.port, l.tp, l.context_length),
            (Some("/models/dsr1"), 8888, 8, Some(10240))
        );
        // no other engine claims the launch, and `python3 -m other` is nobody's
        assert_eq!(Engine::from_launch("python3", &a("-m atomic.thing")), None);
        // InferenceX's client for ATOM is `benchmark_serving.py --backend vllm`: vLLM's body
        assert_eq!(
            Engine::Atom.profile().body,
            BodyQuirks {
                continuous_usage: false,
                ..Engine::Vllm.profile().body
            }
        );
        assert_eq!(Engine::Atom.profile().body.chat_cap, ChatCap::Both);
        assert_eq!(Engine::Atom.profile().completions_backend, "vllm");
    }

    /// ATOM's metric families, as `backends/atom.py` reads them: detected by `atom:` or
    /// `atom_`, hit rate = cached / full prompt tokens over the window, LMCache loads as the
    /// external rate, KV usage and queue depth from their gauges.
    #[test]
    fn atom_metric_families_and_hit_rate() {
        let text = |cached: u64, full: u64, loaded: u64, usage: f64, waiting: u64| {
            format!(
                "# TYPE atom:prefix_cache_cached_tokens counter\natom:prefix_cache_cached_tokens_total {cached}\n\
# TYPE atom:prefix_cache_full_tokens counter\natom:prefix_cache_full_tokens_total {full}\n\
# TYPE atom:lmcache_loaded_tokens counter\natom:lmcache_loaded_tokens_total {loaded}\n\
# TYPE atom:prompt_tokens counter\natom:prompt_tokens_total {full}\n\
# TYPE atom:kv_cache_usage_ratio gauge\natom:kv_cache_usage_ratio {usage}\n\
# TYPE atom:requests_waiting gauge\natom:requests_waiting {waiting}\n\
# TYPE atom:requests_running gauge\natom:requests_running 4\n"
            )
        };
        let (t0, t1) = (text(100, 1000, 0, 0.2, 0), text(700, 2000, 100, 0.55, 3));
        let names: Vec<String> = parse_text(&t0).into_iter().map(|s| s.name).collect();
        assert_eq!(
            Engine::from_metric_names(names.iter().map(String::as_str)),
            Some(Engine::Atom)
        );
        assert_eq!(
            Engine::from_metric_names(["atom_requests_running"]),
            Some(Engine::Atom)
        );
        let mut set = ScrapeSet::default();
        set.add(&parse_text(&t0));
        set.add(&parse_text(&t1));
        let f = Engine::Atom.profile().metrics;
        let pc = f.prefix_cache(&set);
        // Δcached 600 / Δfull 1000
        assert_eq!((pc.hits, pc.queries, pc.rate), (Some(600.0), Some(1000.0), Some(0.6)));
        assert_eq!(f.kv_usage(&set), Some(0.55));
        assert_eq!(f.queue(&set), (Some(3.0), Some(4.0)));
        let m = ServerMetrics::from_scrapes(&set).unwrap();
        assert_eq!(m.adapter, "atom");
        assert_eq!(m.cache.overall_cache_hit_rate, Some(0.6));
        assert_eq!(m.cache.external_cache_hit_rate, Some(0.1));
        assert_eq!(m.tokens.prompt_total, Some(1000));
    }
}
