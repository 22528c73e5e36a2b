//! Engine Prometheus metrics during the profiling window (MEASUREMENT.md §5.7 "Server
//! metrics"): a 1 s scraper of `<endpoint>/metrics` ([`scrape_until`]). The text parser, the
//! window statistics and the `server_metrics` block (InferenceX's per-engine adapters, with the
//! one prefix-cache, KV-usage and offload formula per engine) are `servebench-engines`'
//! (`prom`, `metrics`), re-exported here; the token totals' fallback to the kept records is
//! [`fill_totals`].

use std::time::Duration;

use crate::aggregate::AgentxRecord;
use crate::aiperf_export::ServerMetricsScrapes;

pub use servebench_engines::metrics::{
    PromptBySource, ServerCache, ServerKv, ServerMetrics, ServerOffload, ServerTokens,
    UnknownBackend,
};
pub use servebench_engines::prom::{parse_text, Sample, ScrapeSet, SeriesStats};

/// Scrapes `<base>/metrics` every `every` until `stop` fires; returns the accumulated set.
/// With `start`, the first scrape waits for it (the profiling window opening), so counter
/// increases cover the window and not the warmup; a stop before the start scrapes once.
/// With `export`, the same scrapes also fill AIPerf's server-metrics export
/// ([`ServerMetricsScrapes`]), timed in modelled seconds (the client clock's seconds ×
/// `time_scale`) and with its window in modelled ns from the clock's origin `origin`, so a
/// virtual-clock run writes the same bytes every time.
pub async fn scrape_until(
    ep: servebench_client::Endpoint,
    every: Duration,
    start: Option<std::sync::Arc<tokio::sync::Notify>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    export: Option<ExportClock>,
) -> (ScrapeSet, Option<ServerMetricsScrapes>) {
    let mut set = ScrapeSet::default();
    let mut out = export.map(|_| ServerMetricsScrapes::new(&format!("{}/metrics", ep.base_url)));
    if let Some(n) = start {
        tokio::select! {
            _ = n.notified() => {}
            _ = stop.changed() => {}
        }
    }
    let modelled_ns = |c: &ExportClock| {
        servebench_client::http::now()
            .saturating_duration_since(c.origin)
            .as_secs_f64()
            * c.time_scale
            * 1e9
    };
    let first = export.as_ref().map(modelled_ns);
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
                if let (Some(o), Some(c), Some(f)) = (out.as_mut(), export.as_ref(), first) {
                    let now = modelled_ns(c);
                    o.add_text(&text, (now - f) / 1e9);
                    o.start_ns = f as u128;
                    o.end_ns = now as u128;
                }
            }
            _ => {
                set.failures += 1;
                if let Some(o) = out.as_mut() {
                    o.failures += 1;
                }
            }
        }
        if *stop.borrow() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => {}
        }
    }
    (set, out)
}

/// The clock an AIPerf export is timed on ([`scrape_until`]): the client clock's origin and
/// its modelled seconds per second (1 on the wall clock against an engine).
#[derive(Debug, Clone, Copy)]
pub struct ExportClock {
    /// Instant the run's times count from.
    pub origin: std::time::Instant,
    /// Modelled seconds per second of the client's clock.
    pub time_scale: f64,
}

fn http_get() -> servebench_client::http::Method {
    servebench_client::http::Method::GET
}

/// Token totals fall back to Σ ISL / Σ OSL of kept records; `requests_completed` = kept.
pub fn fill_totals(m: &mut ServerMetrics, kept: &[&AgentxRecord]) {
    if m.tokens.prompt_total.is_none() && kept.iter().any(|r| r.isl.is_some()) {
        m.tokens.prompt_total = Some(kept.iter().filter_map(|r| r.isl).sum());
    }
    if m.tokens.generation_total.is_none() && kept.iter().any(|r| r.osl.is_some()) {
        m.tokens.generation_total = Some(kept.iter().filter_map(|r| r.osl).sum());
    }
    m.tokens.requests_completed = Some(kept.len() as u64);
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
}
