//! What an engine's `/metrics` families mean: [`MetricFamilies`] (part of each
//! [`crate::EngineProfile`]) with ONE formula each for the prefix-cache hit rate
//! ([`MetricFamilies::prefix_cache`]), KV-cache usage ([`MetricFamilies::kv_usage`]), queue
//! depth ([`MetricFamilies::queue`]) and KV-offload transfer counters
//! ([`MetricFamilies::offload`]), all over a window of scrapes ([`ScrapeSet`]: counters are
//! increases over the window, gauges their max), and the AgentX `server_metrics` block
//! ([`ServerMetrics`], InferenceX `utils/agentic/aggregation/backends/base.py`
//! `empty_server_metrics` key set) that each engine's adapter fills.
//!
//! **The prefix-cache hit rate is InferenceX's** `server_overall_cache_hit_rate`
//! (`utils/agentic/aggregation/backends/{vllm,sglang,atom}.py`; MEASUREMENT.md §5.7): prompt
//! tokens served from any prefix cache over prompt tokens looked up, token-weighted over the
//! window — vLLM `prefix_cache_hits / prefix_cache_queries` (replaced by `(local_cache_hit +
//! external_kv_transfer) / Σ prompt_tokens_by_source` when vLLM exports that family), SGLang
//! `Σ cached_tokens{cache_source} / prompt_tokens` (else the mean of the `cache_hit_rate`
//! gauge), ATOM `prefix_cache_cached_tokens / prefix_cache_full_tokens`, and llama.cpp (which
//! InferenceX does not run) `prompt_tokens_cached / (prompt_tokens + prompt_tokens_cached)`,
//! its prompt-token counter excluding cached tokens. The pipeline's `--flush-cache` hit rate
//! (a window of two scrapes: before and after the measured phase) and the AgentX
//! `server_metrics` block (1 s scrapes over the profiling window) both use it; before this
//! crate the pipeline had its own copy that summed unlabelled SGLang `cached_tokens` series and
//! took the SGLang gauge at the end of the phase.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::prom::{ScrapeSet, SeriesStats};

/// The families a prefix-cache hit rate is computed from, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixCacheFormula {
    /// The engine exposes no prefix-cache metrics.
    None,
    /// `Σ hits / Σ queries` (first family of each list with series); with `by_source` (a
    /// counter family labelled `source`): `(hit sources) / Σ all sources` when it has a
    /// positive total.
    HitsOverQueries {
        /// Hit-token counters, the first one present is read (vLLM, then its older name).
        hits: &'static [&'static str],
        /// Looked-up-token counters, same order.
        queries: &'static [&'static str],
        /// `(family, source values that are hits)`.
        by_source: Option<(&'static str, &'static [&'static str])>,
    },
    /// `Σ cached (over the values of `label`) / prompt`; else the mean of `gauge` (0–1 or
    /// 0–100).
    CachedOverPrompt {
        /// Cached-token counters.
        cached: &'static [&'static str],
        /// Only series carrying this label count (`cache_source`); `None`: every series.
        label: Option<&'static str>,
        /// Prompt-token counters (all prompt tokens, cached included).
        prompt: &'static [&'static str],
        /// A hit-rate gauge read when there are no counters.
        gauge: Option<&'static str>,
    },
    /// `cached / (computed + cached)`: the prompt-token counter excludes cached tokens.
    CachedOverComputedPlusCached {
        /// Cached-token counters.
        cached: &'static [&'static str],
        /// Computed prompt-token counters.
        computed: &'static [&'static str],
    },
}

/// KV-offload transfer counters (bytes and seconds, each direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffloadFamilies {
    /// Bytes GPU → CPU.
    pub bytes_gpu_to_cpu: &'static str,
    /// Bytes CPU → GPU.
    pub bytes_cpu_to_gpu: &'static str,
    /// Seconds GPU → CPU.
    pub time_gpu_to_cpu: &'static str,
    /// Seconds CPU → GPU.
    pub time_cpu_to_gpu: &'static str,
}

/// An engine's `/metrics` families.
#[derive(Debug, Clone, Copy)]
pub struct MetricFamilies {
    /// Metric-name prefixes that identify the engine on `/metrics` (`vllm:`; ATOM `atom:` and
    /// `atom_`); empty when it has none.
    pub prefixes: &'static [&'static str],
    /// Detection order among engines with prefixes (lower first).
    pub detect_rank: u8,
    /// `server_metrics.adapter` name (`vllm`, `sglang`, `llamacpp`, `atom`).
    pub adapter: &'static str,
    /// Prefix-cache hit rate.
    pub prefix_cache: PrefixCacheFormula,
    /// One sentence naming the prefix-cache families and the window (`source` of the
    /// pipeline's `prefix_cache` block).
    pub prefix_cache_source: &'static str,
    /// GPU KV-cache usage gauges (0–1 or 0–100), the first present is read.
    pub kv_usage: &'static [&'static str],
    /// Requests waiting (queued) gauges.
    pub queue_waiting: &'static [&'static str],
    /// Requests running gauges.
    pub queue_running: &'static [&'static str],
    /// KV-offload transfer counters, when the engine has them.
    pub offload: Option<OffloadFamilies>,
    /// Fills the engine's `server_metrics` block (its own families beyond the formulas above).
    pub server_metrics: Option<fn(&MetricFamilies, &ScrapeSet, &mut ServerMetrics)>,
}

impl MetricFamilies {
    /// No known metrics.
    pub const NONE: MetricFamilies = MetricFamilies {
        prefixes: &[],
        detect_rank: u8::MAX,
        adapter: "none",
        prefix_cache: PrefixCacheFormula::None,
        prefix_cache_source: "n/a: the server exposes no prefix-cache metrics",
        kv_usage: &[],
        queue_waiting: &[],
        queue_running: &[],
        offload: None,
        server_metrics: None,
    };
}

/// A prefix-cache window: hit and looked-up prompt tokens, and their ratio.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PrefixCache {
    /// Prompt tokens served from a prefix cache in the window.
    pub hits: Option<f64>,
    /// Prompt tokens looked up in the window.
    pub queries: Option<f64>,
    /// `hits / queries` (0–1); `None` when nothing was looked up or nothing is exposed.
    pub rate: Option<f64>,
    /// The rate came from a hit-rate gauge, not from counters.
    pub from_gauge: bool,
}

/// KV-offload transfers over the window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Offload {
    /// Bytes GPU → CPU.
    pub bytes_gpu_to_cpu: Option<f64>,
    /// Bytes CPU → GPU.
    pub bytes_cpu_to_gpu: Option<f64>,
    /// Seconds GPU → CPU.
    pub time_gpu_to_cpu: Option<f64>,
    /// Seconds CPU → GPU.
    pub time_cpu_to_gpu: Option<f64>,
}

/// `a / b` when both are known and `b > 0` (InferenceX `aggregation_common.rate`).
pub fn rate(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A gauge exported as 0–1 or 0–100, as 0–1 (InferenceX `normalize_fraction`: > 1.5 is a
/// percentage).
pub fn fraction(x: Option<f64>) -> Option<f64> {
    x.map(|v| if v > 1.5 { v / 100.0 } else { v })
}

/// Σ of the window increases of the first family of `names` that has series.
pub fn first_total(set: &ScrapeSet, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| set.sum_total(n, |_| true))
}

impl MetricFamilies {
    /// The prefix-cache hit rate over the window of `set` ([`PrefixCacheFormula`]; the formula
    /// is InferenceX's `server_overall_cache_hit_rate`, module docs).
    pub fn prefix_cache(&self, set: &ScrapeSet) -> PrefixCache {
        match self.prefix_cache {
            PrefixCacheFormula::None => PrefixCache::default(),
            PrefixCacheFormula::HitsOverQueries {
                hits,
                queries,
                by_source,
            } => {
                if let Some((fam, hit_sources)) = by_source {
                    let by = set.by_label(fam, "source");
                    let total: f64 = by.values().sum();
                    if !by.is_empty() && total > 0.0 {
                        let h: f64 = hit_sources
                            .iter()
                            .map(|s| by.get(*s).copied().unwrap_or(0.0))
                            .sum();
                        return PrefixCache {
                            hits: Some(h),
                            queries: Some(total),
                            rate: Some(h / total),
                            from_gauge: false,
                        };
                    }
                }
                let (h, q) = (first_total(set, hits), first_total(set, queries));
                PrefixCache {
                    hits: h,
                    queries: q,
                    rate: rate(h, q),
                    from_gauge: false,
                }
            }
            PrefixCacheFormula::CachedOverPrompt {
                cached,
                label,
                prompt,
                gauge,
            } => {
                let c = cached.iter().find_map(|n| match label {
                    Some(l) => {
                        let by = set.by_label(n, l);
                        (!by.is_empty()).then(|| by.values().sum::<f64>())
                    }
                    None => set.sum_total(n, |_| true),
                });
                let p = first_total(set, prompt);
                match rate(c, p) {
                    Some(r) => PrefixCache {
                        hits: c,
                        queries: p,
                        rate: Some(r),
                        from_gauge: false,
                    },
                    None => {
                        // InferenceX: the gauge's mean over its series' window means
                        let g = gauge.map(|g| set.series(g)).filter(|s| !s.is_empty());
                        match g {
                            Some(s) => PrefixCache {
                                hits: None,
                                queries: None,
                                rate: fraction(Some(
                                    s.iter().map(|x| x.avg).sum::<f64>() / s.len() as f64,
                                )),
                                from_gauge: true,
                            },
                            None => PrefixCache {
                                hits: c,
                                queries: c.and(p),
                                rate: None,
                                from_gauge: false,
                            },
                        }
                    }
                }
            }
            PrefixCacheFormula::CachedOverComputedPlusCached { cached, computed } => {
                let c = first_total(set, cached);
                let p = match (first_total(set, computed), c) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, None) => a,
                    (None, b) => b,
                };
                PrefixCache {
                    hits: c,
                    queries: c.and(p),
                    rate: c.and(rate(c, p)),
                    from_gauge: false,
                }
            }
        }
    }

    /// Peak GPU KV-cache usage over the window, 0–1 (max of the first family present).
    pub fn kv_usage(&self, set: &ScrapeSet) -> Option<f64> {
        fraction(set.gauge_max(self.kv_usage))
    }

    /// Peak `(waiting, running)` requests over the window.
    pub fn queue(&self, set: &ScrapeSet) -> (Option<f64>, Option<f64>) {
        (
            set.gauge_max(self.queue_waiting),
            set.gauge_max(self.queue_running),
        )
    }

    /// KV-offload transfers over the window (`None` fields when not exposed).
    pub fn offload(&self, set: &ScrapeSet) -> Offload {
        let Some(o) = self.offload else {
            return Offload::default();
        };
        let t = |n: &str| set.sum_total(n, |_| true);
        Offload {
            bytes_gpu_to_cpu: t(o.bytes_gpu_to_cpu),
            bytes_cpu_to_gpu: t(o.bytes_cpu_to_gpu),
            time_gpu_to_cpu: t(o.time_gpu_to_cpu),
            time_cpu_to_gpu: t(o.time_cpu_to_gpu),
        }
    }
}

/// `server_metrics.cache`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerCache {
    /// GPU prefix-cache hit rate (0–1).
    pub gpu_cache_hit_rate: Option<f64>,
    /// CPU (offload) hit rate.
    pub cpu_cache_hit_rate: Option<f64>,
    /// External hit rate.
    pub external_cache_hit_rate: Option<f64>,
    /// Overall hit rate: [`MetricFamilies::prefix_cache`].
    pub overall_cache_hit_rate: Option<f64>,
    /// Prefix-cache hits (tokens) in the window.
    pub prefix_cache_hits: Option<f64>,
    /// Prefix-cache queries (tokens) in the window.
    pub prefix_cache_queries: Option<f64>,
    /// External hits.
    pub external_prefix_cache_hits: Option<f64>,
    /// External queries.
    pub external_prefix_cache_queries: Option<f64>,
    /// SGLang cached tokens per `cache_source`.
    pub cached_tokens_by_source: BTreeMap<String, f64>,
    /// Dynamo frontend (not scraped here).
    pub frontend_cache_hit_rate: Option<f64>,
    /// Dynamo router (not scraped here).
    pub router_kv_hit_rate: Option<f64>,
    /// Dynamo router (not scraped here).
    pub router_shared_cache_hit_rate: Option<f64>,
    /// Dynamo frontend (not scraped here).
    pub frontend_cached_tokens: Option<f64>,
    /// Dynamo frontend (not scraped here).
    pub frontend_input_tokens: Option<f64>,
}

/// `server_metrics.kv_cache`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerKv {
    /// Peak GPU KV usage (0–1): [`MetricFamilies::kv_usage`].
    pub gpu_usage_pct: Option<f64>,
    /// GPU KV capacity, tokens.
    pub gpu_total_tokens: Option<u64>,
    /// CPU KV usage (0–1).
    pub cpu_usage_pct: Option<f64>,
    /// CPU KV used, tokens.
    pub cpu_used_tokens: Option<f64>,
    /// CPU KV capacity, tokens.
    pub cpu_total_tokens: Option<f64>,
}

/// `server_metrics.kv_offload`: [`MetricFamilies::offload`] and the bandwidths (bytes / s).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerOffload {
    /// Bytes GPU→CPU.
    pub bytes_gpu_to_cpu: Option<f64>,
    /// Bytes CPU→GPU.
    pub bytes_cpu_to_gpu: Option<f64>,
    /// Time GPU→CPU, s.
    pub time_gpu_to_cpu: Option<f64>,
    /// Time CPU→GPU, s.
    pub time_cpu_to_gpu: Option<f64>,
    /// Bytes/s.
    pub bandwidth_gpu_to_cpu_bytes_per_second: Option<f64>,
    /// Bytes/s.
    pub bandwidth_cpu_to_gpu_bytes_per_second: Option<f64>,
}

/// `server_metrics.tokens.prompt_by_source`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptBySource {
    /// Prompt tokens served from the GPU cache.
    pub gpu_cache_hit: Option<f64>,
    /// From CPU / external cache.
    pub cpu_or_external_cache_hit: Option<f64>,
    /// Computed.
    pub computed: Option<f64>,
    /// Raw per-source sums.
    pub raw: BTreeMap<String, f64>,
}

/// `server_metrics.tokens`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerTokens {
    /// Prompt tokens (server counter, else Σ ISL of kept records).
    pub prompt_total: Option<u64>,
    /// Generation tokens (server counter, else Σ OSL).
    pub generation_total: Option<u64>,
    /// Kept records.
    pub requests_completed: Option<u64>,
    /// By source.
    pub prompt_by_source: PromptBySource,
}

/// `server_metrics` (InferenceX `empty_server_metrics` key set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// Whether any metric was scraped.
    pub present: bool,
    /// [`MetricFamilies::adapter`] of the engine detected, or `none`.
    pub adapter: String,
    /// Metric families seen.
    pub metric_count: u64,
    /// Cache block.
    pub cache: ServerCache,
    /// KV block.
    pub kv_cache: ServerKv,
    /// Offload block.
    pub kv_offload: ServerOffload,
    /// Tokens block.
    pub tokens: ServerTokens,
    /// Per-engine sources (empty here).
    pub sources: Vec<serde_json::Map<String, serde_json::Value>>,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        Self {
            present: false,
            adapter: "none".into(),
            metric_count: 0,
            cache: ServerCache::default(),
            kv_cache: ServerKv::default(),
            kv_offload: ServerOffload::default(),
            tokens: ServerTokens::default(),
            sources: Vec::new(),
        }
    }
}

/// Error for metric names of an engine no adapter knows (InferenceX raises too).
#[derive(Debug)]
pub struct UnknownBackend(pub String);

impl std::fmt::Display for UnknownBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefixes: Vec<String> = crate::Engine::ALL
            .iter()
            .flat_map(|e| e.profile().metrics.prefixes.iter())
            .map(|p| format!("{p}*"))
            .collect();
        write!(
            f,
            "unsupported server metrics backend: no {} metric among [{}]",
            prefixes.join(", "),
            self.0
        )
    }
}

impl std::error::Error for UnknownBackend {}

impl ServerMetrics {
    /// Reduces a scrape set: the engine is detected from the metric names
    /// ([`crate::Engine::from_metric_names`]) and its adapter fills the block. No metric →
    /// `present: false`; only unknown names → error.
    pub fn from_scrapes(set: &ScrapeSet) -> Result<Self, UnknownBackend> {
        let mut m = ServerMetrics {
            metric_count: set.metric_count() as u64,
            present: set.metric_count() > 0,
            ..Default::default()
        };
        if !m.present {
            return Ok(m);
        }
        let names = set.names();
        let engine = crate::Engine::from_metric_names(names.iter().copied());
        let fams = engine.map(|e| e.profile().metrics);
        match fams.and_then(|f| f.server_metrics.map(|a| (f, a))) {
            Some((f, adapter)) => {
                m.adapter = f.adapter.into();
                adapter(&f, set, &mut m);
                Ok(m)
            }
            None => {
                let mut n = names;
                n.truncate(10);
                Err(UnknownBackend(n.join(", ")))
            }
        }
    }
}

/// Σ of the per-series maxima of `name` (a capacity gauge per rank), rounded.
pub fn sum_of_max(set: &ScrapeSet, name: &str) -> Option<u64> {
    set.series(name)
        .iter()
        .map(|s: &SeriesStats| s.max)
        .reduce(|a, b| a + b)
        .map(|x| x.round() as u64)
}
