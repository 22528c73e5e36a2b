//! Engine Prometheus metrics during the profiling window (MEASUREMENT.md §5.7 "Server
//! metrics"): a text-format parser, a 1 s scraper of `<endpoint>/metrics`, per-series stats
//! (counters: increase over the window = `total`; gauges: `max`/`avg`), and the vLLM and SGLang
//! adapters of InferenceX's `backends/{vllm,sglang}.py` reduced to the `server_metrics` block,
//! plus a llama.cpp adapter (InferenceX has none) with the same token-weighted hit rate.
//!
//! Metric names read: vLLM `vllm:prefix_cache_hits`, `vllm:prefix_cache_queries`,
//! `vllm:external_prefix_cache_{hits,queries}`, `vllm:kv_cache_usage_perc` (or
//! `vllm:gpu_cache_usage_perc`), `vllm:prompt_tokens`, `vllm:generation_tokens`; SGLang
//! `sglang:prompt_tokens`, `sglang:generation_tokens`, `sglang:cached_tokens{cache_source}`,
//! `sglang:cache_hit_rate`, `sglang:token_usage`, `sglang:max_total_num_tokens`; llama.cpp
//! (`llama-server --metrics`) `llamacpp:prompt_tokens` (prompt tokens computed, cached ones
//! excluded), `llamacpp:prompt_tokens_cached` (prompt tokens reused from the slot or prompt
//! cache), `llamacpp:tokens_predicted`, `llamacpp:kv_cache_usage_ratio` (older builds).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::aggregate::AgentxRecord;

/// One sample line: family name (counter `_total` suffix removed), labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Family name (`vllm:prefix_cache_hits`).
    pub name: String,
    /// Labels, sorted.
    pub labels: BTreeMap<String, String>,
    /// Value.
    pub value: f64,
    /// Whether the family is a counter.
    pub counter: bool,
}

/// Parses Prometheus text exposition. Histogram/summary series (`_bucket`, `_sum`, `_count`,
/// `_created`) are skipped; counters are named by their family (without `_total`).
pub fn parse_text(text: &str) -> Vec<Sample> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            if let (Some(n), Some(t)) = (it.next(), it.next()) {
                types.insert(n.to_string(), t.to_string());
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name_labels, value) = match line.rfind('}') {
            Some(p) => (&line[..=p], line[p + 1..].trim()),
            None => match line.split_once(char::is_whitespace) {
                Some((a, b)) => (a, b.trim()),
                None => continue,
            },
        };
        let value = value.split_whitespace().next().unwrap_or("");
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (raw, labels) = match name_labels.find('{') {
            Some(p) => (
                &name_labels[..p],
                parse_labels(&name_labels[p + 1..name_labels.len() - 1]),
            ),
            None => (name_labels, BTreeMap::new()),
        };
        let (name, counter) = if let Some(base) = raw.strip_suffix("_total") {
            // the family is declared either without `_total` (OpenMetrics, vLLM) or with it
            // (llama.cpp: `# TYPE llamacpp:prompt_tokens_total counter`)
            if types.get(base).map(String::as_str) == Some("counter")
                || types.get(raw).map(String::as_str) == Some("counter")
                || !types.contains_key(raw)
            {
                (base.to_string(), true)
            } else {
                (raw.to_string(), false)
            }
        } else {
            match types.get(raw).map(String::as_str) {
                Some("counter") => (raw.to_string(), true),
                Some("gauge") | Some("untyped") | None => {
                    if ["_bucket", "_sum", "_count", "_created"]
                        .iter()
                        .any(|s| raw.ends_with(s))
                        && types
                            .keys()
                            .any(|k| raw.starts_with(k.as_str()) && k != raw)
                    {
                        continue;
                    }
                    (raw.to_string(), false)
                }
                _ => continue,
            }
        };
        out.push(Sample {
            name,
            labels,
            value,
            counter,
        });
    }
    out
}

fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b',' || b[i] == b' ') {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] != b'=' {
            i += 1;
        }
        let key = s[ks..i].trim().to_string();
        i += 1; // '='
        if i >= b.len() || b[i] != b'"' {
            break;
        }
        i += 1;
        let mut val = String::new();
        while i < b.len() && b[i] != b'"' {
            if b[i] == b'\\' && i + 1 < b.len() {
                i += 1;
                val.push(match b[i] {
                    b'n' => '\n',
                    c => c as char,
                });
            } else {
                let ch = s[i..].chars().next().unwrap_or(' ');
                val.push(ch);
                i += ch.len_utf8() - 1;
            }
            i += 1;
        }
        i += 1;
        if !key.is_empty() {
            out.insert(key, val);
        }
    }
    out
}

/// Stats of one series over the scrapes of the window.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesStats {
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Counter: last − first (the window's increase); gauge: `None`.
    pub total: Option<f64>,
    /// Largest value seen.
    pub max: f64,
    /// Mean of the values seen.
    pub avg: f64,
}

/// Accumulates scrapes: per (family, labels) first/last/max/sum/count.
#[derive(Debug, Clone, Default)]
pub struct ScrapeSet {
    series: BTreeMap<(String, Vec<(String, String)>), Acc>,
    /// Scrapes taken.
    pub scrapes: u64,
    /// Scrapes that failed (connection, HTTP status).
    pub failures: u64,
}

#[derive(Debug, Clone)]
struct Acc {
    counter: bool,
    first: f64,
    last: f64,
    max: f64,
    sum: f64,
    n: u64,
}

impl ScrapeSet {
    /// Adds one scrape's samples.
    pub fn add(&mut self, samples: &[Sample]) {
        self.scrapes += 1;
        for s in samples {
            let key = (
                s.name.clone(),
                s.labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            );
            let a = self.series.entry(key).or_insert(Acc {
                counter: s.counter,
                first: s.value,
                last: s.value,
                max: s.value,
                sum: 0.0,
                n: 0,
            });
            a.last = s.value;
            a.max = a.max.max(s.value);
            a.sum += s.value;
            a.n += 1;
        }
    }

    /// Number of metric families seen.
    pub fn metric_count(&self) -> usize {
        let mut names: Vec<&str> = self.series.keys().map(|(n, _)| n.as_str()).collect();
        names.dedup();
        names.len()
    }

    /// Series of a family.
    pub fn series(&self, name: &str) -> Vec<SeriesStats> {
        self.series
            .iter()
            .filter(|((n, _), _)| n == name)
            .map(|((_, l), a)| SeriesStats {
                labels: l.iter().cloned().collect(),
                total: a.counter.then(|| (a.last - a.first).max(0.0)),
                max: a.max,
                avg: a.sum / a.n.max(1) as f64,
            })
            .collect()
    }

    /// Σ over series of the counter increase (`total`, else `max`); `None` if no series.
    fn sum_total(&self, name: &str, filter: impl Fn(&SeriesStats) -> bool) -> Option<f64> {
        let s: Vec<f64> = self
            .series(name)
            .into_iter()
            .filter(|x| filter(x))
            .map(|x| x.total.unwrap_or(x.max))
            .collect();
        (!s.is_empty()).then(|| s.iter().sum())
    }

    /// max over series of the gauge max.
    fn gauge_max(&self, names: &[&str]) -> Option<f64> {
        names
            .iter()
            .flat_map(|n| self.series(n))
            .map(|x| x.max)
            .reduce(f64::max)
    }

    fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.series(name) {
            if let Some(l) = s.labels.get(label) {
                *out.entry(l.clone()).or_insert(0.0) += s.total.unwrap_or(s.max);
            }
        }
        out
    }
}

/// Scrapes `<base>/metrics` every `every` until `stop` fires; returns the accumulated set.
/// With `start`, the first scrape waits for it (the profiling window opening), so counter
/// increases cover the window and not the warmup; a stop before the start scrapes once.
pub async fn scrape_until(
    ep: servebench_client::Endpoint,
    every: Duration,
    start: Option<std::sync::Arc<tokio::sync::Notify>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> ScrapeSet {
    let mut set = ScrapeSet::default();
    if let Some(n) = start {
        tokio::select! {
            _ = n.notified() => {}
            _ = stop.changed() => {}
        }
    }
    loop {
        match servebench_client::http::simple_request(
            &ep,
            http_get(),
            "/metrics",
            None,
            Duration::from_secs(5),
        )
        .await
        {
            Ok(r) if r.status == 200 => {
                let text = String::from_utf8_lossy(&r.body);
                set.add(&parse_text(&text));
            }
            _ => set.failures += 1,
        }
        if *stop.borrow() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => {}
        }
    }
    set
}

fn http_get() -> servebench_client::http::Method {
    servebench_client::http::Method::GET
}

fn rate(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn frac(x: Option<f64>) -> Option<f64> {
    x.map(|v| if v > 1.5 { v / 100.0 } else { v })
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
    /// Overall hit rate.
    pub overall_cache_hit_rate: Option<f64>,
    /// vLLM prefix-cache hits (tokens) in the window.
    pub prefix_cache_hits: Option<f64>,
    /// vLLM prefix-cache queries (tokens) in the window.
    pub prefix_cache_queries: Option<f64>,
    /// vLLM external hits.
    pub external_prefix_cache_hits: Option<f64>,
    /// vLLM external queries.
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
    /// Peak GPU KV usage (0–1).
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

/// `server_metrics.kv_offload` (not produced by the adapters here; kept for the key set).
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
    /// `vllm`, `sglang`, `llamacpp` or `none`.
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
#[derive(Debug, thiserror::Error)]
#[error("unsupported server metrics backend: no vllm:*, sglang:* or llamacpp:* metric among [{0}]")]
pub struct UnknownBackend(pub String);

impl ServerMetrics {
    /// Reduces a scrape set. No metric → `present: false`; only unknown names → error.
    pub fn from_scrapes(set: &ScrapeSet) -> Result<Self, UnknownBackend> {
        let mut m = ServerMetrics {
            metric_count: set.metric_count() as u64,
            present: set.metric_count() > 0,
            ..Default::default()
        };
        if !m.present {
            return Ok(m);
        }
        let names: Vec<&str> = set.series.keys().map(|(n, _)| n.as_str()).collect();
        // server detection by metric prefix: the engine profiles' one rule
        let engine = servebench_client::Engine::from_metric_names(names.iter().copied());
        if engine == Some(servebench_client::Engine::Vllm) {
            m.adapter = "vllm".into();
            let hits = set.sum_total("vllm:prefix_cache_hits", |_| true);
            let queries = set.sum_total("vllm:prefix_cache_queries", |_| true);
            let ehits = set.sum_total("vllm:external_prefix_cache_hits", |_| true);
            let equeries = set.sum_total("vllm:external_prefix_cache_queries", |_| true);
            let gpu = rate(hits, queries);
            let ext = rate(ehits, equeries);
            m.cache.gpu_cache_hit_rate = gpu;
            m.cache.external_cache_hit_rate = ext;
            m.cache.cpu_cache_hit_rate = ext;
            m.cache.overall_cache_hit_rate = gpu;
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
                    m.cache.overall_cache_hit_rate =
                        Some((local.unwrap_or(0.0) + xfer.unwrap_or(0.0)) / total);
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
            m.kv_cache.gpu_usage_pct =
                frac(set.gauge_max(&["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]));
            m.kv_cache.cpu_usage_pct = frac(set.gauge_max(&["vllm:cpu_kv_cache_usage_perc"]));
            m.tokens.prompt_total = set
                .sum_total("vllm:prompt_tokens", |_| true)
                .map(|x| x.round() as u64);
            m.tokens.generation_total = set
                .sum_total("vllm:generation_tokens", |_| true)
                .map(|x| x.round() as u64);
        } else if engine == Some(servebench_client::Engine::Sglang) {
            m.adapter = "sglang".into();
            let prompt = set.sum_total("sglang:prompt_tokens", |_| true);
            let gen = set.sum_total("sglang:generation_tokens", |_| true);
            let cached = set.by_label("sglang:cached_tokens", "cache_source");
            let dev = cached.get("device").copied();
            let host = cached.get("host").copied();
            let all = (!cached.is_empty()).then(|| cached.values().sum::<f64>());
            m.cache.gpu_cache_hit_rate = rate(dev, prompt);
            m.cache.cpu_cache_hit_rate = rate(host, prompt);
            m.cache.external_cache_hit_rate = m.cache.cpu_cache_hit_rate;
            m.cache.overall_cache_hit_rate = rate(all, prompt).or_else(|| {
                let s = set.series("sglang:cache_hit_rate");
                (!s.is_empty())
                    .then(|| s.iter().map(|x| x.avg).sum::<f64>() / s.len() as f64)
                    .map(|v| if v > 1.5 { v / 100.0 } else { v })
            });
            m.kv_cache.gpu_usage_pct = frac(set.gauge_max(&["sglang:token_usage"]));
            m.kv_cache.gpu_total_tokens = set
                .series("sglang:max_total_num_tokens")
                .iter()
                .map(|s| s.max)
                .reduce(|a, b| a + b)
                .map(|x| x.round() as u64);
            m.tokens.prompt_total = prompt.map(|x| x.round() as u64);
            m.tokens.generation_total = gen.map(|x| x.round() as u64);
            m.tokens.prompt_by_source = PromptBySource {
                gpu_cache_hit: dev,
                cpu_or_external_cache_hit: host,
                computed: None,
                raw: cached.clone(),
            };
            m.cache.cached_tokens_by_source = cached;
        } else if engine == Some(servebench_client::Engine::LlamaCpp) {
            // llama.cpp counts computed and reused prompt tokens apart: prompt tokens =
            // computed + cached, hit rate = cached / prompt tokens (the token-weighted rate,
            // like vLLM's hits/queries and SGLang's cached/prompt)
            m.adapter = "llamacpp".into();
            let computed = set.sum_total("llamacpp:prompt_tokens", |_| true);
            let cached = set.sum_total("llamacpp:prompt_tokens_cached", |_| true);
            let prompt = match (computed, cached) {
                (Some(a), Some(b)) => Some(a + b),
                (a, None) => a,
                (None, b) => b,
            };
            let hit = cached.and(rate(cached, prompt));
            m.cache.gpu_cache_hit_rate = hit;
            m.cache.overall_cache_hit_rate = hit;
            m.cache.prefix_cache_hits = cached;
            m.cache.prefix_cache_queries = cached.and(prompt);
            m.kv_cache.gpu_usage_pct = frac(set.gauge_max(&["llamacpp:kv_cache_usage_ratio"]));
            m.tokens.prompt_total = prompt.map(|x| x.round() as u64);
            m.tokens.generation_total = set
                .sum_total("llamacpp:tokens_predicted", |_| true)
                .map(|x| x.round() as u64);
            m.tokens.prompt_by_source = PromptBySource {
                gpu_cache_hit: cached,
                cpu_or_external_cache_hit: None,
                computed,
                raw: BTreeMap::new(),
            };
        } else {
            let mut n: Vec<&str> = names;
            n.dedup();
            n.truncate(10);
            return Err(UnknownBackend(n.join(", ")));
        }
        Ok(m)
    }

    /// Token totals fall back to Σ ISL / Σ OSL of kept records; `requests_completed` = kept.
    pub fn fill_totals(&mut self, kept: &[&AgentxRecord]) {
        if self.tokens.prompt_total.is_none() && kept.iter().any(|r| r.isl.is_some()) {
            self.tokens.prompt_total = Some(kept.iter().filter_map(|r| r.isl).sum());
        }
        if self.tokens.generation_total.is_none() && kept.iter().any(|r| r.osl.is_some()) {
            self.tokens.generation_total = Some(kept.iter().filter_map(|r| r.osl).sum());
        }
        self.tokens.requests_completed = Some(kept.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM_A: &str = "# HELP vllm:prefix_cache_hits x\n# TYPE vllm:prefix_cache_hits counter\n\
vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 100.0\n\
# TYPE vllm:prefix_cache_queries counter\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 400.0\n\
# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.25\n\
# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_bucket{le=\"1\"} 3\n\
vllm:e2e_request_latency_seconds_sum 2.5\n";

    #[test]
    fn vllm_rates_are_window_increases() {
        let mut set = ScrapeSet::default();
        set.add(&parse_text(VLLM_A));
        let b = VLLM_A
            .replace("} 100.0", "} 400.0")
            .replace("} 400.0\n# TYPE vllm:kv", "} 1400.0\n# TYPE vllm:kv")
            .replace("0.25", "0.75");
        set.add(&parse_text(&b));
        let m = ServerMetrics::from_scrapes(&set).unwrap();
        assert_eq!(m.adapter, "vllm");
        assert_eq!(m.cache.prefix_cache_hits, Some(300.0));
        assert_eq!(m.cache.prefix_cache_queries, Some(1000.0));
        assert_eq!(m.cache.gpu_cache_hit_rate, Some(0.3));
        assert_eq!(m.kv_cache.gpu_usage_pct, Some(0.75));
        assert_eq!(m.metric_count, 3);
    }

    #[test]
    fn sglang_rates_use_cached_tokens_by_source() {
        let t = "# TYPE sglang:prompt_tokens counter\nsglang:prompt_tokens_total 0\n\
# TYPE sglang:cached_tokens counter\nsglang:cached_tokens_total{cache_source=\"device\"} 0\n\
# TYPE sglang:token_usage gauge\nsglang:token_usage 0.1\n";
        let mut set = ScrapeSet::default();
        set.add(&parse_text(t));
        let t2 = t
            .replace("prompt_tokens_total 0", "prompt_tokens_total 1000")
            .replace("\"device\"} 0", "\"device\"} 600")
            .replace("usage 0.1", "usage 42");
        set.add(&parse_text(&t2));
        let m = ServerMetrics::from_scrapes(&set).unwrap();
        assert_eq!(m.adapter, "sglang");
        assert_eq!(m.cache.gpu_cache_hit_rate, Some(0.6));
        assert_eq!(m.cache.overall_cache_hit_rate, Some(0.6));
        assert_eq!(m.kv_cache.gpu_usage_pct, Some(0.42));
    }

    /// Text of llama-server b11434 `/metrics` (names and types as it sends them).
    fn llamacpp(computed: u64, cached: u64, predicted: u64) -> String {
        format!(
            "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens\n\
# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total {computed}\n\
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache\n\
# TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total {cached}\n\
# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total {predicted}\n\
# TYPE llamacpp:prompt_tokens_seconds gauge\nllamacpp:prompt_tokens_seconds 430.1\n\
# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n"
        )
    }

    #[test]
    fn llamacpp_hit_rate_is_cached_over_computed_plus_cached_in_the_window() {
        let mut set = ScrapeSet::default();
        set.add(&parse_text(&llamacpp(18_999, 18_993, 16)));
        set.add(&parse_text(&llamacpp(19_999, 20_993, 116)));
        set.add(&parse_text(&llamacpp(20_999, 21_993, 216)));
        let m = ServerMetrics::from_scrapes(&set).unwrap();
        assert_eq!(m.adapter, "llamacpp");
        // window: 2,000 computed + 3,000 reused = 5,000 prompt tokens
        assert_eq!(m.tokens.prompt_total, Some(5_000));
        assert_eq!(m.cache.prefix_cache_hits, Some(3_000.0));
        assert_eq!(m.cache.prefix_cache_queries, Some(5_000.0));
        assert_eq!(m.cache.gpu_cache_hit_rate, Some(0.6));
        assert_eq!(m.cache.overall_cache_hit_rate, Some(0.6));
        assert_eq!(m.tokens.prompt_by_source.computed, Some(2_000.0));
        assert_eq!(m.tokens.generation_total, Some(200));
        // no prompt tokens in the window: no rate (not 0, not NaN)
        let mut idle = ScrapeSet::default();
        idle.add(&parse_text(&llamacpp(5, 5, 5)));
        idle.add(&parse_text(&llamacpp(5, 5, 5)));
        let m = ServerMetrics::from_scrapes(&idle).unwrap();
        assert_eq!(m.cache.gpu_cache_hit_rate, None);
    }

    #[test]
    fn unknown_backend_is_an_error_and_nothing_is_absent() {
        let mut set = ScrapeSet::default();
        set.add(&parse_text("foo_bar 1\n"));
        assert!(ServerMetrics::from_scrapes(&set).is_err());
        let m = ServerMetrics::from_scrapes(&ScrapeSet::default()).unwrap();
        assert!(!m.present);
        assert_eq!(m.adapter, "none");
    }

    #[test]
    fn labels_with_escapes() {
        let s = parse_text("x{a=\"1,2\",b=\"q\\\"t\"} 3\n");
        assert_eq!(s[0].labels["a"], "1,2");
        assert_eq!(s[0].labels["b"], "q\"t");
        assert_eq!(s[0].value, 3.0);
    }
}
