//! Cache-state control of fixed-sequence points (issue 13 item 5; docs/measurement.md §12.7):
//! `--flush-cache auto|off|PATH` flushes the server's prefix cache after the warmup, right
//! before each point's measured phase (AgentX points, `crate::agentx`: before the warmup, which
//! primes the cache as the harness intends); a point whose prompts were already sent earlier in the
//! sweep without a flush gets a one-line warning; and the server-side prefix-cache hit rate of
//! the measured phase comes from `/metrics` counter deltas.
//!
//! Flush endpoints: vLLM `POST /reset_prefix_cache` (registered with `VLLM_SERVER_DEV_MODE=1`;
//! also the embedded simulator), SGLang `POST /flush_cache`, llama.cpp `POST
//! /slots/{id}?action=erase` for every slot of `GET /slots` (needs `--slot-save-path`; it does
//! not clear llama.cpp's host-memory prompt cache, `--cache-ram`). `auto` picks one from the
//! metric names the server exposes (`vllm:`, `sglang:`, `llamacpp:`), else from `--engine`.
//!
//! Hit rate: the engine's one prefix-cache formula (`servebench_engines::MetricFamilies::
//! prefix_cache`, InferenceX's token-weighted `server_overall_cache_hit_rate`) over a window of
//! two scrapes, before and after the measured phase: Δhits / Δqueries in prompt tokens (vLLM
//! `prefix_cache_{hits,queries}`, SGLang `Σ cached_tokens{cache_source} / prompt_tokens`, else
//! the mean of the `cache_hit_rate` gauge at the two scrapes, llama.cpp `prompt_tokens_cached /
//! (that + prompt_tokens)`, ATOM `prefix_cache_cached_tokens / prefix_cache_full_tokens`).
//! `null` (printed `n/a`) when the server exposes none of them. The counters are server-wide:
//! traffic from another client during the phase is counted too.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde_json::{json, Value};
use servebench_client::http::{simple_request, Method};
use servebench_client::Endpoint;
use servebench_engines::{prom, Engine, FlushRoute, MetricFamilies, PrefixCacheFormula};

/// `--flush-cache`: what to do with the server's prefix cache before each point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushCache {
    /// Never flush (the hit rate is still reported and repeated prompts are warned about).
    Off,
    /// The engine's own flush endpoint (from its metric names, else `--engine`).
    Auto,
    /// `POST` this path (starts with `/`, e.g. `/reset_prefix_cache`).
    Path(String),
}

impl FlushCache {
    /// Parses `auto`, `off` or a path starting with `/`.
    ///
    /// # Errors
    /// A one-line message naming the value.
    pub fn parse(s: &str) -> Result<FlushCache, String> {
        match s {
            "auto" => Ok(FlushCache::Auto),
            "off" => Ok(FlushCache::Off),
            p if p.starts_with('/') && !p.contains(char::is_whitespace) => {
                Ok(FlushCache::Path(p.to_string()))
            }
            other => Err(format!(
                "--flush-cache {other:?}: expected auto, off or an endpoint path such as /reset_prefix_cache"
            )),
        }
    }

    /// As on the command line.
    pub fn as_str(&self) -> &str {
        match self {
            FlushCache::Off => "off",
            FlushCache::Auto => "auto",
            FlushCache::Path(p) => p,
        }
    }
}

/// The engine a `/metrics` text names by its metric prefixes (`vllm:`, `sglang:`, `llamacpp:`,
/// `atom:`), over the one Prometheus parser (`servebench_engines::prom`).
pub fn detect(metrics: &str) -> Option<Engine> {
    let samples = prom::parse_text(metrics);
    Engine::from_metric_names(samples.iter().map(|s| s.name.as_str()))
}

/// The detected engine's name in messages, `this engine` when none is known.
fn name(e: Option<Engine>) -> &'static str {
    e.map_or("this engine", |e| e.profile().display)
}

/// A one-line warning when the server's `GET /metrics` series name an engine (vLLM, SGLang,
/// llama.cpp, by their `vllm:`/`sglang:`/`llamacpp:` prefixes) other than the `--engine`
/// profile: requests then carry the other engine's optional fields, and the agg rows default to
/// its name as `framework`, which compare matches baselines on (a new-user run against
/// llama.cpp without `--engine` was labelled vllm). `None` when they agree, or when `/metrics`
/// cannot be read or names no known engine.
pub async fn profile_mismatch_warning(ep: &Endpoint, profile: Engine) -> Option<String> {
    let Some((200, text)) = get_text(ep, "/metrics").await else {
        return None;
    };
    let engine = detect(&text)?;
    let prefix = engine.profile().metrics.prefixes.first()?;
    (engine != profile).then(|| {
        format!(
            "warning: the server at {} exposes {} series ({prefix}…) on /metrics, but the engine profile is {} (--engine; {} when not given), which decides the optional request fields and, without --framework, the rows' framework; pass --engine {}",
            ep.base_url,
            engine.profile().display,
            profile.name(),
            Engine::DEFAULT_NAME,
            engine.name()
        )
    })
}

/// The prefix-cache hit rate over a phase from the `/metrics` samples before and after it:
/// `(rate, hit tokens, query tokens, source)`; rate `None` when nothing was counted. The formula
/// is the engine's one (`MetricFamilies::prefix_cache`) over the window of the two scrapes.
pub fn hit_rate(
    engine: Option<Engine>,
    before: &[prom::Sample],
    after: &[prom::Sample],
) -> (Option<f64>, Option<f64>, Option<f64>, String) {
    let Some(fams) = engine.map(|e| e.profile().metrics) else {
        return (
            None,
            None,
            None,
            MetricFamilies::NONE.prefix_cache_source.into(),
        );
    };
    if before.is_empty() || after.is_empty() {
        return (
            None,
            None,
            None,
            "n/a: /metrics could not be read before and after the phase".into(),
        );
    }
    let mut set = prom::ScrapeSet::default();
    set.add(before);
    set.add(after);
    let pc = fams.prefix_cache(&set);
    let src = if pc.from_gauge {
        format!(
            "{} gauge, mean of the values before and after the phase",
            match fams.prefix_cache {
                PrefixCacheFormula::CachedOverPrompt { gauge: Some(g), .. } => g,
                _ => "hit-rate",
            }
        )
    } else if pc.rate.is_some() || pc.queries.is_some() {
        fams.prefix_cache_source.to_string()
    } else if matches!(fams.prefix_cache, PrefixCacheFormula::None) {
        MetricFamilies::NONE.prefix_cache_source.into()
    } else {
        format!(
            "n/a: /metrics has no {} prefix-cache counters",
            name(engine)
        )
    };
    (pc.rate, pc.hits, pc.queries, src)
}

/// Fingerprint of a prompt text (warm-cache detection within a sweep).
pub fn fingerprint(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// What happened before a measured phase.
#[derive(Debug, Clone)]
pub struct Before {
    engine: Option<Engine>,
    flushed: bool,
    flush_detail: String,
    repeated: usize,
    samples: Vec<prom::Sample>,
}

/// Per-sweep cache state: the mode, the engine once detected, and every prompt sent so far.
#[derive(Debug)]
pub struct CacheControl {
    mode: Option<FlushCache>,
    profile: Engine,
    engine: Option<Option<Engine>>,
    seen: HashSet<u64>,
}

async fn get_text(ep: &Endpoint, path: &str) -> Option<(u16, String)> {
    let r = simple_request(ep, Method::GET, path, None, Duration::from_secs(10))
        .await
        .ok()?;
    Some((r.status, String::from_utf8_lossy(&r.body).into_owned()))
}

/// The samples of `GET /metrics` (none when it cannot be read).
pub(crate) async fn scrape(ep: &Endpoint) -> Vec<prom::Sample> {
    match get_text(ep, "/metrics").await {
        Some((200, t)) => prom::parse_text(&t),
        _ => Vec::new(),
    }
}

async fn post(ep: &Endpoint, path: &str) -> Result<(u16, String), String> {
    let mut last = Err(String::new());
    // a server that still frees the warmup's blocks refuses for a moment (vLLM, SGLang, the
    // simulator): retry briefly; 404/405/501 mean the endpoint is not there
    for _ in 0..10 {
        last = simple_request(ep, Method::POST, path, None, Duration::from_secs(30))
            .await
            .map(|r| {
                (
                    r.status,
                    String::from_utf8_lossy(&r.body).trim().to_string(),
                )
            })
            .map_err(|e| format!("{e:#}"));
        match &last {
            Ok((s, _)) if (200..300).contains(s) || matches!(s, 404 | 405 | 501) => break,
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    last
}

/// One line of a server's answer: the `error.message` of a JSON error, else the body, shortened.
fn short(body: &str) -> String {
    let msg = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str().map(str::to_string))
        })
        .unwrap_or_else(|| body.lines().next().unwrap_or("").to_string());
    msg.chars().take(160).collect()
}

impl Before {
    /// Whether the cache was flushed, and how (`POST /reset_prefix_cache → HTTP 200`, or why
    /// not).
    pub fn flush(&self) -> (bool, &str) {
        (self.flushed, &self.flush_detail)
    }
}

impl CacheControl {
    /// `mode` = `--flush-cache` (`None`: not given: no flush, no hit rate, warnings only).
    pub fn new(mode: Option<FlushCache>, profile: Engine) -> CacheControl {
        CacheControl {
            mode,
            profile,
            engine: None,
            seen: HashSet::new(),
        }
    }

    /// The engine whose metrics and flush route apply: detected from `/metrics`, else the
    /// `--engine` profile when it has prefix-cache metrics or a flush route; `None` otherwise.
    async fn engine(&mut self, ep: &Endpoint) -> Option<Engine> {
        if let Some(e) = self.engine {
            return e;
        }
        let detected = match get_text(ep, "/metrics").await {
            Some((200, t)) => detect(&t),
            _ => None,
        };
        let p = self.profile.profile();
        let known =
            p.flush.is_some() || !matches!(p.metrics.prefix_cache, PrefixCacheFormula::None);
        let e = detected.or(known.then_some(self.profile));
        self.engine = Some(e);
        e
    }

    async fn flush(&self, ep: &Endpoint, engine: Option<Engine>) -> (bool, String) {
        let path = match (&self.mode, engine) {
            (None | Some(FlushCache::Off), _) => return (false, "not flushed (--flush-cache off)".into()),
            (Some(FlushCache::Path(p)), _) => p.clone(),
            (Some(FlushCache::Auto), e) => match e.and_then(|e| e.profile().flush) {
                Some(FlushRoute::Post(p)) => p.to_string(),
                Some(FlushRoute::LlamaSlots) => return flush_llama_slots(ep).await,
                None => {
                return (
                    false,
                    format!(
                        "not flushed: no prefix-cache flush endpoint is known for engine profile {} (no {} metrics either); pass --flush-cache PATH if the server has one",
                        self.profile.name(),
                        Engine::ALL
                            .iter()
                            .flat_map(|e| e.profile().metrics.prefixes.iter().copied())
                            .collect::<Vec<_>>()
                            .join("/")
                    ),
                )
                }
            },
        };
        match post(ep, &path).await {
            Ok((s, _)) if (200..300).contains(&s) => (true, format!("POST {path} → HTTP {s}")),
            Ok((s, body)) => (
                false,
                format!(
                    "not flushed: POST {path} → HTTP {s} {}{}",
                    short(&body),
                    match engine.map(|e| e.profile()) {
                        Some(p)
                            if s == 404
                                && matches!(p.flush, Some(FlushRoute::Post(r)) if r == path) =>
                        {
                            p.flush_404_hint.unwrap_or("")
                        }
                        _ => "",
                    }
                ),
            ),
            Err(e) => (false, format!("not flushed: POST {path}: {e}")),
        }
    }

    /// After the warmup, before the measured phase of `label` whose prompts have fingerprints
    /// `prompts`: flush (per the mode), warn on stderr when prompts repeat without a flush,
    /// read the counters. Returns `None` when `--flush-cache` was not given and nothing is
    /// measured.
    pub async fn before_measured(
        &mut self,
        ep: &Endpoint,
        label: &str,
        seed: u32,
        prompts: &[u64],
        console: &dyn crate::console::Console,
    ) -> Option<Before> {
        let repeated = prompts.iter().filter(|p| self.seen.contains(p)).count();
        if self.mode.is_none() {
            if repeated > 0 {
                console.warn(&format!("warning: {label}: {repeated} of {} prompts were already sent earlier in this sweep (same --seed {seed}) and the server's prefix cache is not flushed: the point may measure a warm cache (--flush-cache auto flushes it before each point)", prompts.len()));
            }
            return None;
        }
        let engine = self.engine(ep).await;
        let (flushed, flush_detail) = self.flush(ep, engine).await;
        // why it was not flushed is said once per point, with the hit rate, after the phase
        // (`after_measured`); before it only the warm-cache warning
        if repeated > 0 && !flushed {
            console.warn(&format!("warning: {label}: {repeated} of {} prompts were already sent earlier in this sweep (same --seed {seed}) and the prefix cache was {flush_detail}: the point may measure a warm cache", prompts.len()));
        }
        let samples = scrape(ep).await;
        Some(Before {
            engine,
            flushed,
            flush_detail,
            repeated,
            samples,
        })
    }

    /// Marks `prompts` (and the warmup's) as sent. Call after every point.
    pub fn sent(&mut self, prompts: &[u64]) {
        self.seen.extend(prompts.iter().copied());
    }

    /// After the measured phase: the `prefix_cache` block of `result.json` (`None` without
    /// `--flush-cache`) and its console line.
    pub async fn after_measured(
        &self,
        ep: &Endpoint,
        label: &str,
        before: Option<Before>,
        console: &dyn crate::console::Console,
    ) -> Option<Value> {
        let b = before?;
        let after = scrape(ep).await;
        let (rate, hits, queries, source) = hit_rate(b.engine, &b.samples, &after);
        let ineffective = b.flushed && b.repeated > 0 && rate.is_some_and(|r| r >= 0.5);
        if ineffective {
            // measured on llama.cpp: slot erase leaves its host-memory prompt cache (--cache-ram)
            console.warn(&format!("warning: {label}: the flush did not empty the cache: {} of the repeated prompts' tokens were served from it{}", fmt_rate(rate), if b.engine == Some(Engine::LlamaCpp) { " (llama.cpp keeps prompts in its host-memory prompt cache; start llama-server with --cache-ram 0)" } else { "" }));
        }
        console.line(&format!(
            "{label}: prefix cache {}; server hit rate {} ({source})",
            if b.flushed {
                format!("flushed ({})", b.flush_detail)
            } else {
                b.flush_detail.clone()
            },
            fmt_rate(rate)
        ));
        Some(json!({
            "flush": self.mode.as_ref().map(FlushCache::as_str),
            "flushed": b.flushed,
            "flush_detail": b.flush_detail,
            "repeated_prompts": b.repeated,
            "flush_ineffective": ineffective,
            "hit_rate": rate,
            "hit_tokens": hits,
            "query_tokens": queries,
            "source": source,
        }))
    }
}

/// llama.cpp: erase every slot listed by `GET /slots`.
async fn flush_llama_slots(ep: &Endpoint) -> (bool, String) {
    let ids: Vec<u64> = match get_text(ep, "/slots").await {
        Some((200, t)) => serde_json::from_str::<Value>(&t)
            .ok()
            .and_then(|v| {
                v.as_array()
                    .map(|a| a.iter().filter_map(|s| s["id"].as_u64()).collect())
            })
            .unwrap_or_default(),
        Some((s, t)) => {
            return (
                false,
                format!("not flushed: llama.cpp GET /slots → HTTP {s} {}", short(&t)),
            )
        }
        None => return (false, "not flushed: llama.cpp GET /slots failed".into()),
    };
    if ids.is_empty() {
        return (
            false,
            "not flushed: llama.cpp GET /slots listed no slot".into(),
        );
    }
    for id in &ids {
        let path = format!("/slots/{id}?action=erase");
        match post(ep, &path).await {
            Ok((s, _)) if (200..300).contains(&s) => {}
            Ok((s, body)) => {
                return (
                    false,
                    format!(
                        "not flushed: llama.cpp has no flush on this server (POST {path} → HTTP {s} {})",
                        short(&body)
                    ),
                )
            }
            Err(e) => return (false, format!("not flushed: POST {path}: {e}")),
        }
    }
    (
        true,
        format!(
            "llama.cpp POST /slots/{{id}}?action=erase for {} slots → HTTP 200 (its host-memory prompt cache, --cache-ram, is not cleared by it)",
            ids.len()
        ),
    )
}

/// A hit rate as a percentage with one decimal, `n/a` when there is none.
pub fn fmt_rate(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{:.1} %", r * 100.0),
        None => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_values_parse_and_bad_ones_name_the_value() {
        assert_eq!(FlushCache::parse("auto"), Ok(FlushCache::Auto));
        assert_eq!(FlushCache::parse("off"), Ok(FlushCache::Off));
        assert_eq!(
            FlushCache::parse("/flush_cache"),
            Ok(FlushCache::Path("/flush_cache".into()))
        );
        let e = FlushCache::parse("sometimes").unwrap_err();
        assert!(e.starts_with("--flush-cache \"sometimes\""), "{e}");
    }

    /// The pipeline asks the engines crate: detection, and the one hit-rate formula over the
    /// window of the scrapes before and after a phase (formula cases:
    /// `servebench-engines` `prefix_cache_formula_per_engine`).
    #[test]
    fn hit_rate_of_each_engine_over_the_phase() {
        let vllm0 = "# TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 100.0\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 400.0\n";
        let vllm1 = "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 400.0\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1000.0\n";
        assert_eq!(detect(vllm0), Some(Engine::Vllm));
        let (a, b) = (prom::parse_text(vllm0), prom::parse_text(vllm1));
        let (rate, h, q, src) = hit_rate(Some(Engine::Vllm), &a, &b);
        assert_eq!((rate, h, q), (Some(0.5), Some(300.0), Some(600.0)));
        assert!(src.starts_with("vllm:prefix_cache_hits/queries"), "{src}");
        let l0 = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 98\nllamacpp:prompt_tokens_cached_total 94\n";
        assert_eq!(detect(l0), Some(Engine::LlamaCpp));
        // SGLang without counters: the gauge (percent or fraction)
        let s = prom::parse_text("sglang:cache_hit_rate{model_name=\"m\"} 42.0\n");
        let (rate, _, _, src) = hit_rate(Some(Engine::Sglang), &s, &s);
        assert_eq!(rate, Some(0.42));
        assert!(src.contains("gauge"), "{src}");
        // nothing exposed: known engine, no counters; no known engine
        let x = prom::parse_text("x 1\n");
        let (rate, _, _, src) = hit_rate(Some(Engine::Vllm), &x, &x);
        assert_eq!(rate, None);
        assert!(src.starts_with("n/a: /metrics has no vLLM"), "{src}");
        let (rate, _, _, src) = hit_rate(None, &x, &x);
        assert_eq!(rate, None);
        assert!(src.starts_with("n/a"), "{src}");
        // no prompt tokens in the phase: no rate
        let (rate, _, q, _) = hit_rate(Some(Engine::Vllm), &b, &b);
        assert_eq!((rate, q), (None, Some(0.0)));
    }
}
