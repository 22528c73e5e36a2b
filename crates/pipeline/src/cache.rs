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
//! Hit rate = Δhits / Δqueries over the measured phase, in prompt tokens:
//! vLLM `vllm:prefix_cache_{hits,queries}_total` (older `vllm:gpu_prefix_cache_*`), SGLang
//! `sglang:cached_tokens_total` / `sglang:prompt_tokens_total` (else the `sglang:cache_hit_rate`
//! gauge at the end of the phase), llama.cpp `llamacpp:prompt_tokens_cached_total` /
//! (that + `llamacpp:prompt_tokens_total`, which excludes cached tokens). `null` (printed `n/a`)
//! when the server exposes none of them. The counters are server-wide: traffic from another
//! client during the phase is counted too.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde_json::{json, Value};
use servebench_client::http::{simple_request, Method};
use servebench_client::profile::FlushRoute;
use servebench_client::{Endpoint, Engine};

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

/// Which engine's prefix-cache metrics and flush endpoint apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheEngine {
    /// vLLM (and the embedded simulator).
    Vllm,
    /// SGLang.
    Sglang,
    /// llama.cpp `llama-server`.
    LlamaCpp,
    /// No known prefix-cache metrics or endpoint.
    Unknown,
}

impl CacheEngine {
    /// From the metric names of a `/metrics` text (the one Prometheus parser,
    /// `servebench_agentx::prom::parse_text`), if one carries a known engine's prefix
    /// ([`servebench_client::profile::EngineProfile::metric_prefix`]).
    pub fn detect(metrics: &str) -> Option<CacheEngine> {
        let samples = servebench_agentx::prom::parse_text(metrics);
        let names = samples.iter().map(|s| s.name.as_str());
        Engine::from_metric_names(names).map(CacheEngine::from_profile)
    }

    /// From the `--engine` profile.
    pub fn from_profile(e: Engine) -> CacheEngine {
        match e {
            Engine::Vllm => CacheEngine::Vllm,
            Engine::Sglang => CacheEngine::Sglang,
            Engine::LlamaCpp => CacheEngine::LlamaCpp,
            _ => CacheEngine::Unknown,
        }
    }

    /// The `--engine` profile of a detected engine.
    fn engine(self) -> Option<Engine> {
        match self {
            CacheEngine::Vllm => Some(Engine::Vllm),
            CacheEngine::Sglang => Some(Engine::Sglang),
            CacheEngine::LlamaCpp => Some(Engine::LlamaCpp),
            CacheEngine::Unknown => None,
        }
    }

    /// The `--engine` profile of a detected engine, with the metric prefix that told it.
    fn profile(self) -> Option<(Engine, &'static str)> {
        let e = self.engine()?;
        Some((e, e.profile().metric_prefix?))
    }

    fn name(self) -> &'static str {
        self.engine().map_or("this engine", |e| e.profile().display)
    }
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
    let detected = CacheEngine::detect(&text)?;
    let (engine, prefix) = detected.profile()?;
    (engine != profile).then(|| {
        format!(
            "warning: the server at {} exposes {} series ({prefix}…) on /metrics, but the engine profile is {} (--engine; vllm when not given), which decides the optional request fields and, without --framework, the rows' framework; pass --engine {}",
            ep.base_url,
            detected.name(),
            profile.name(),
            engine.name()
        )
    })
}

/// Prefix-cache counters read from one `/metrics` text (prompt tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CacheCounters {
    /// Prompt tokens served from the cache (cumulative).
    pub hits: Option<f64>,
    /// Prompt tokens looked up (cumulative).
    pub queries: Option<f64>,
    /// A hit-rate gauge (0–1) when the engine has no counters (SGLang `cache_hit_rate`).
    pub gauge: Option<f64>,
}

/// Sum of every sample of family `name` (a `_total` suffix on either side is ignored), over
/// the one Prometheus text parser (`servebench_agentx::prom::parse_text`).
fn family_sum(samples: &[servebench_agentx::prom::Sample], name: &str) -> Option<f64> {
    let name = name.strip_suffix("_total").unwrap_or(name);
    samples
        .iter()
        .filter(|s| s.name.strip_suffix("_total").unwrap_or(&s.name) == name)
        .map(|s| s.value)
        .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

/// Reads the prefix-cache counters of `engine` from a Prometheus text.
pub fn counters(engine: CacheEngine, text: &str) -> CacheCounters {
    let samples = servebench_agentx::prom::parse_text(text);
    let f = |n: &str| family_sum(&samples, n);
    match engine {
        CacheEngine::Vllm => CacheCounters {
            hits: f("vllm:prefix_cache_hits").or_else(|| f("vllm:gpu_prefix_cache_hits")),
            queries: f("vllm:prefix_cache_queries").or_else(|| f("vllm:gpu_prefix_cache_queries")),
            gauge: None,
        },
        CacheEngine::Sglang => CacheCounters {
            hits: f("sglang:cached_tokens"),
            queries: f("sglang:cached_tokens").and(f("sglang:prompt_tokens")),
            gauge: f("sglang:cache_hit_rate").map(|v| if v > 1.5 { v / 100.0 } else { v }),
        },
        CacheEngine::LlamaCpp => {
            let cached = f("llamacpp:prompt_tokens_cached");
            CacheCounters {
                hits: cached,
                queries: cached.zip(f("llamacpp:prompt_tokens")).map(|(c, p)| c + p),
                gauge: None,
            }
        }
        CacheEngine::Unknown => CacheCounters::default(),
    }
}

/// The hit rate over a phase from counters before and after: `(rate, hit tokens, query
/// tokens, source)`; rate `None` when nothing was counted.
pub fn hit_rate(
    engine: CacheEngine,
    before: &CacheCounters,
    after: &CacheCounters,
) -> (Option<f64>, Option<f64>, Option<f64>, String) {
    let src = match engine {
        CacheEngine::Vllm => "vllm:prefix_cache_hits/queries Δ over the measured phase",
        CacheEngine::Sglang => "sglang:cached_tokens/prompt_tokens Δ over the measured phase",
        CacheEngine::LlamaCpp => {
            "llamacpp:prompt_tokens_cached / (cached + prompt_tokens) Δ over the measured phase"
        }
        CacheEngine::Unknown => "n/a: the server exposes no prefix-cache metrics",
    };
    match (before.hits, before.queries, after.hits, after.queries) {
        (Some(h0), Some(q0), Some(h1), Some(q1)) => {
            let (h, q) = ((h1 - h0).max(0.0), (q1 - q0).max(0.0));
            let rate = (q > 0.0).then(|| h / q);
            (rate, Some(h), Some(q), src.to_string())
        }
        _ => match after.gauge {
            Some(g) => (
                Some(g),
                None,
                None,
                "sglang:cache_hit_rate gauge at the end of the phase".into(),
            ),
            None if engine == CacheEngine::Unknown => (None, None, None, src.into()),
            None => (
                None,
                None,
                None,
                format!(
                    "n/a: /metrics has no {} prefix-cache counters",
                    engine.name()
                ),
            ),
        },
    }
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
    engine: CacheEngine,
    flushed: bool,
    flush_detail: String,
    repeated: usize,
    counters: CacheCounters,
}

/// Per-sweep cache state: the mode, the engine once detected, and every prompt sent so far.
#[derive(Debug)]
pub struct CacheControl {
    mode: Option<FlushCache>,
    profile: Engine,
    engine: Option<CacheEngine>,
    seen: HashSet<u64>,
}

async fn get_text(ep: &Endpoint, path: &str) -> Option<(u16, String)> {
    let r = simple_request(ep, Method::GET, path, None, Duration::from_secs(10))
        .await
        .ok()?;
    Some((r.status, String::from_utf8_lossy(&r.body).into_owned()))
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

    async fn engine(&mut self, ep: &Endpoint) -> CacheEngine {
        if let Some(e) = self.engine {
            return e;
        }
        let detected = match get_text(ep, "/metrics").await {
            Some((200, t)) => CacheEngine::detect(&t),
            _ => None,
        };
        let e = detected.unwrap_or_else(|| CacheEngine::from_profile(self.profile));
        self.engine = Some(e);
        e
    }

    async fn flush(&self, ep: &Endpoint, engine: CacheEngine) -> (bool, String) {
        let path = match (&self.mode, engine) {
            (None | Some(FlushCache::Off), _) => return (false, "not flushed (--flush-cache off)".into()),
            (Some(FlushCache::Path(p)), _) => p.clone(),
            (Some(FlushCache::Auto), e) => match e.engine().and_then(|e| e.profile().flush) {
                Some(FlushRoute::Post(p)) => p.to_string(),
                Some(FlushRoute::LlamaSlots) => return flush_llama_slots(ep).await,
                None => {
                return (
                    false,
                    format!(
                        "not flushed: no prefix-cache flush endpoint is known for engine profile {} (no vllm:/sglang:/llamacpp: metrics either); pass --flush-cache PATH if the server has one",
                        self.profile.name()
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
                    match engine.engine().map(|e| e.profile()) {
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
        let counters = match get_text(ep, "/metrics").await {
            Some((200, t)) => counters(engine, &t),
            _ => CacheCounters::default(),
        };
        Some(Before {
            engine,
            flushed,
            flush_detail,
            repeated,
            counters,
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
        let after = match get_text(ep, "/metrics").await {
            Some((200, t)) => counters(b.engine, &t),
            _ => CacheCounters::default(),
        };
        let (rate, hits, queries, source) = hit_rate(b.engine, &b.counters, &after);
        let ineffective = b.flushed && b.repeated > 0 && rate.is_some_and(|r| r >= 0.5);
        if ineffective {
            // measured on llama.cpp: slot erase leaves its host-memory prompt cache (--cache-ram)
            console.warn(&format!("warning: {label}: the flush did not empty the cache: {} of the repeated prompts' tokens were served from it{}", fmt_rate(rate), if b.engine == CacheEngine::LlamaCpp { " (llama.cpp keeps prompts in its host-memory prompt cache; start llama-server with --cache-ram 0)" } else { "" }));
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

    #[test]
    fn counters_of_each_engine_and_the_delta() {
        let vllm0 = "# TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 100.0\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 400.0\nvllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 20\nvllm:prefix_cache_queries_total{engine=\"1\",model_name=\"m\"} 100\n";
        let vllm1 = "vllm:prefix_cache_hits_total{engine=\"0\"} 400.0\nvllm:prefix_cache_queries_total{engine=\"0\"} 1000.0\nvllm:prefix_cache_hits_total{engine=\"1\"} 20\nvllm:prefix_cache_queries_total{engine=\"1\"} 100\n";
        assert_eq!(CacheEngine::detect(vllm0), Some(CacheEngine::Vllm));
        let (a, b) = (
            counters(CacheEngine::Vllm, vllm0),
            counters(CacheEngine::Vllm, vllm1),
        );
        assert_eq!((a.hits, a.queries), (Some(120.0), Some(500.0)));
        let (rate, h, q, _) = hit_rate(CacheEngine::Vllm, &a, &b);
        // Δhits = 300, Δqueries = 600 → 0.5
        assert_eq!((rate, h, q), (Some(0.5), Some(300.0), Some(600.0)));
        // llama.cpp: prompt_tokens_total excludes cached tokens
        let l0 = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 98\nllamacpp:prompt_tokens_cached_total 94\n";
        let l1 = "llamacpp:prompt_tokens_total 108\nllamacpp:prompt_tokens_cached_total 124\n";
        assert_eq!(CacheEngine::detect(l0), Some(CacheEngine::LlamaCpp));
        let (rate, h, q, _) = hit_rate(
            CacheEngine::LlamaCpp,
            &counters(CacheEngine::LlamaCpp, l0),
            &counters(CacheEngine::LlamaCpp, l1),
        );
        // Δcached 30, Δprocessed 10 → 30 / 40
        assert_eq!((rate, h, q), (Some(0.75), Some(30.0), Some(40.0)));
        // SGLang without counters: the gauge (percent or fraction)
        let s = "sglang:cache_hit_rate{model_name=\"m\"} 42.0\n";
        let c = counters(CacheEngine::Sglang, s);
        let (rate, _, _, src) = hit_rate(CacheEngine::Sglang, &c, &c);
        assert_eq!(rate, Some(0.42));
        assert!(src.contains("gauge"), "{src}");
        // nothing exposed
        let (rate, _, _, src) = hit_rate(
            CacheEngine::Vllm,
            &counters(CacheEngine::Vllm, "x 1\n"),
            &CacheCounters::default(),
        );
        assert_eq!(rate, None);
        assert!(src.starts_with("n/a"), "{src}");
        // no prompt tokens in the phase: no rate
        let (rate, _, q, _) = hit_rate(CacheEngine::Vllm, &b, &b);
        assert_eq!((rate, q), (None, Some(0.0)));
    }
}
