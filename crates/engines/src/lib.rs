//! Everything servebench knows about a serving engine, in one crate.
//!
//! Owns: the one [`Engine`] enum and, per engine, an [`EngineProfile`] (`src/<engine>.rs`):
//! its names (`--engine` spelling and aliases, display name, InferenceX `framework`), the
//! optional request-body fields it gets ([`BodyQuirks`]), its prefix-cache flush route
//! ([`FlushRoute`]), how it is recognised from an image, a catalog framework, a launch command
//! ([`LaunchSyntax`], [`LaunchArgs`]) or its `/metrics` names, its flag tables per release
//! ([`flags`], [`FlagTable::parse`]), and its `/metrics` families with one formula each for the
//! prefix-cache hit rate, KV usage, queue depth and KV-offload counters ([`metrics`]: InferenceX's
//! token-weighted `server_overall_cache_hit_rate`), plus the one Prometheus text parser
//! ([`prom`]) and the AgentX `server_metrics` block built from it
//! ([`metrics::ServerMetrics`]). Every other crate asks this one instead of matching engine
//! names: `client` (request bodies), `pipeline` (cache flush and hit rate, profile mismatch),
//! `agentx` (server metrics), `runner` (the `--simulate` shims), `bump`, `report`.
//!
//! Adding an engine: one module `src/<engine>.rs` holding its `PROFILE` constant (and, if it
//! has `/metrics` families, their adapter), and one line in the `engines!` list below.
//!
//! Must not know about: HTTP, files other than its embedded flag tables, rows, recipes,
//! catalogs, the simulator. It is a leaf: only serde.

#![warn(missing_docs)]

pub mod flags;
pub mod metrics;
pub mod profile;
pub mod prom;

pub use flags::{
    engine_of_image, table, table_for_image, tables, version_of_image, versions,
    vllm_flexible_argv, ArgError, FlagStatus, FlagTable, Nargs, OptionSpec, Parsed,
};
pub use metrics::{MetricFamilies, PrefixCache, PrefixCacheFormula, ServerMetrics};
pub use profile::{
    display_name, BodyQuirks, ChatCap, EngineProfile, FlushRoute, LaunchArgs, LaunchForm,
    LaunchSyntax, ModelArg, TWO_SEGMENT_FRAMEWORKS,
};

/// Declares the engines: each `Variant => module` line adds a variant of [`Engine`] whose
/// profile is `module::PROFILE`. The order is the order of [`Engine::ALL`]: help texts, and
/// which engine a framework or image is recognised as when several could match.
macro_rules! engines {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)+) => {
        $(mod $module;)+

        /// A serving engine (`--engine`; the rows' `engine`). Everything about it is its
        /// [`EngineProfile`] ([`Engine::profile`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Engine {
            $($(#[$doc])* $variant,)+
        }

        impl Engine {
            /// Every engine, in registration order.
            pub const ALL: &'static [Engine] = &[$(Engine::$variant,)+];

            /// The engine's profile.
            pub fn profile(self) -> &'static EngineProfile {
                match self {
                    $(Engine::$variant => &$module::PROFILE,)+
                }
            }
        }
    };
}

engines! {
    /// SGLang.
    Sglang => sglang,
    /// vLLM.
    Vllm => vllm,
    /// TensorRT-LLM `trtllm-serve`.
    Trtllm => trtllm,
    /// llama.cpp `llama-server`.
    LlamaCpp => llamacpp,
    /// Hugging Face `transformers serve`.
    Transformers => transformers,
    /// A strict OpenAI-compatible API.
    Openai => openai,
    /// AMD ATOM.
    Atom => atom,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PrefixCacheFormula;
    use crate::prom::{parse_text, ScrapeSet};

    /// Every profile is reachable by its own name and aliases, and only by them.
    #[test]
    fn names_aliases_and_registration_agree() {
        for e in Engine::ALL.iter().copied() {
            let p = e.profile();
            assert_eq!(Engine::parse(p.name), Ok(e));
            for a in p.aliases {
                assert_eq!(Engine::parse(a), Ok(e), "{a}");
            }
            if !p.metrics.prefixes.is_empty() {
                assert!(
                    !matches!(p.metrics.prefix_cache, PrefixCacheFormula::None)
                        || p.metrics.server_metrics.is_some(),
                    "{}",
                    p.name
                );
            }
        }
        let e = Engine::parse("tgi").unwrap_err();
        assert_eq!(
            e,
            "unknown engine profile `tgi` (expected one of sglang, vllm, trtllm, llama.cpp, transformers, openai, atom)"
        );
        assert_eq!(Engine::parse("TRT"), Ok(Engine::Trtllm));
        assert_eq!(Engine::parse("llamacpp"), Ok(Engine::LlamaCpp));
    }

    #[test]
    fn frameworks_images_and_launches_are_recognised() {
        for (f, e) in [
            ("sglang", Some(Engine::Sglang)),
            ("dynamo-sglang", Some(Engine::Sglang)),
            ("sglang-disagg", Some(Engine::Sglang)),
            ("vllm", Some(Engine::Vllm)),
            ("llmd-vllm", Some(Engine::Vllm)),
            ("trt", Some(Engine::Trtllm)),
            ("dynamo-trt", Some(Engine::Trtllm)),
            ("llama.cpp", Some(Engine::LlamaCpp)),
            ("tilert", None),
        ] {
            assert_eq!(Engine::from_framework(f), e, "{f}");
        }
        for (i, e) in [
            ("lmsysorg/sglang:v0.5.20-cu130", Some(Engine::Sglang)),
            ("vllm/vllm-openai:v0.27.1", Some(Engine::Vllm)),
            (
                "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6",
                Some(Engine::Trtllm),
            ),
            ("ghcr.io/ggml-org/llama.cpp:server", Some(Engine::LlamaCpp)),
            ("ubuntu:24.04", None),
        ] {
            assert_eq!(Engine::from_image(i), e, "{i}");
        }
        assert_eq!(engine_of_image("lmsysorg/sglang:v0.5.20"), Some("sglang"));
        assert_eq!(engine_of_image("rocm/atom:x"), None, "ATOM has no tables");
        let a = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let args = a("-m sglang.launch_server --model-path /m --port 8123 --tp 8");
        let (e, rest) = Engine::from_launch("python3", &args).unwrap();
        assert_eq!((e, rest.len()), (Engine::Sglang, 6));
        let l = LaunchArgs::parse(e, rest);
        assert_eq!((l.model.as_deref(), l.port, l.tp), (Some("/m"), 8123, 8));
        let args = a("serve m --port 1");
        assert_eq!(Engine::from_launch("vllm", &args).unwrap().0, Engine::Vllm);
        assert_eq!(LaunchArgs::parse(Engine::Vllm, &args[1..]).host, "0.0.0.0");
        let (e, rest) = Engine::from_launch("trtllm-serve", &args).unwrap();
        assert_eq!((e, rest[0].as_str()), (Engine::Trtllm, "m"));
        assert_eq!(Engine::from_launch("sglang", &a("version")), None);
        assert_eq!(
            Engine::launch_programs(),
            ["sglang", "vllm", "trtllm-serve"]
        );
        assert_eq!(display_name("sglang-disagg"), "SGLang");
        assert_eq!(display_name("trt"), "TensorRT-LLM");
        assert_eq!(display_name("tilert"), "tilert");
    }

    /// Server detection by metric prefix: vLLM before SGLang, then llama.cpp, then ATOM.
    #[test]
    fn engines_are_detected_from_metric_names() {
        assert_eq!(
            Engine::from_metric_names(["process_cpu", "sglang:prompt_tokens"]),
            Some(Engine::Sglang)
        );
        assert_eq!(
            Engine::from_metric_names(["sglang:x", "vllm:y"]),
            Some(Engine::Vllm)
        );
        assert_eq!(
            Engine::from_metric_names(["llamacpp:prompt_tokens"]),
            Some(Engine::LlamaCpp)
        );
        assert_eq!(Engine::from_metric_names(["go_gc"]), None);
    }

    fn window(a: &str, b: &str) -> ScrapeSet {
        let mut set = ScrapeSet::default();
        set.add(&parse_text(a));
        set.add(&parse_text(b));
        set
    }

    /// The one prefix-cache formula per engine, over a window of two scrapes (what the
    /// pipeline's `--flush-cache` reads) — the same function the AgentX block's overall rate is.
    #[test]
    fn prefix_cache_formula_per_engine() {
        let vllm0 = "# TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 100.0\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 400.0\nvllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 20\nvllm:prefix_cache_queries_total{engine=\"1\",model_name=\"m\"} 100\n";
        let vllm1 = "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 400.0\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1000.0\nvllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 20\nvllm:prefix_cache_queries_total{engine=\"1\",model_name=\"m\"} 100\n";
        let v = Engine::Vllm.profile().metrics;
        let pc = v.prefix_cache(&window(vllm0, vllm1));
        // Δhits = 300, Δqueries = 600 → 0.5
        assert_eq!(
            (pc.rate, pc.hits, pc.queries),
            (Some(0.5), Some(300.0), Some(600.0))
        );
        // vLLM with prompt_tokens_by_source: (local hits + external transfers) / Σ sources
        let by = |l: u64, x: u64, c: u64| {
            format!("# TYPE vllm:prompt_tokens_by_source counter\nvllm:prompt_tokens_by_source_total{{source=\"local_cache_hit\"}} {l}\nvllm:prompt_tokens_by_source_total{{source=\"external_kv_transfer\"}} {x}\nvllm:prompt_tokens_by_source_total{{source=\"local_compute\"}} {c}\n")
        };
        let pc = v.prefix_cache(&window(&by(0, 0, 0), &by(300, 100, 600)));
        assert_eq!(
            (pc.rate, pc.hits, pc.queries),
            (Some(0.4), Some(400.0), Some(1000.0))
        );
        // older vLLM names
        let pc = v.prefix_cache(&window(
            "vllm:gpu_prefix_cache_hits_total 0\nvllm:gpu_prefix_cache_queries_total 0\n",
            "vllm:gpu_prefix_cache_hits_total 5\nvllm:gpu_prefix_cache_queries_total 20\n",
        ));
        assert_eq!(pc.rate, Some(0.25));
        // llama.cpp: prompt_tokens_total excludes cached tokens: Δcached 30 / (30 + Δ10)
        let l0 = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 98\nllamacpp:prompt_tokens_cached_total 94\n";
        let l1 = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 108\nllamacpp:prompt_tokens_cached_total 124\n";
        let pc = Engine::LlamaCpp
            .profile()
            .metrics
            .prefix_cache(&window(l0, l1));
        assert_eq!(
            (pc.rate, pc.hits, pc.queries),
            (Some(0.75), Some(30.0), Some(40.0))
        );
        // SGLang: Σ cached_tokens over cache_source / prompt_tokens; without counters the
        // cache_hit_rate gauge (percent or fraction), its mean over the window
        let s = Engine::Sglang.profile().metrics;
        let s0 = "# TYPE sglang:prompt_tokens counter\nsglang:prompt_tokens_total 0\n# TYPE sglang:cached_tokens counter\nsglang:cached_tokens_total{cache_source=\"device\"} 0\nsglang:cached_tokens_total{cache_source=\"host\"} 0\n";
        let s1 = s0
            .replace("prompt_tokens_total 0", "prompt_tokens_total 1000")
            .replace("\"device\"} 0", "\"device\"} 600")
            .replace("\"host\"} 0", "\"host\"} 100");
        assert_eq!(s.prefix_cache(&window(s0, &s1)).rate, Some(0.7));
        let g = s.prefix_cache(&window(
            "sglang:cache_hit_rate{model_name=\"m\"} 40.0\n",
            "sglang:cache_hit_rate{model_name=\"m\"} 44.0\n",
        ));
        assert_eq!((g.rate, g.from_gauge, g.hits), (Some(0.42), true, None));
        // nothing exposed; nothing looked up in the window
        assert_eq!(v.prefix_cache(&window("x 1\n", "x 2\n")).rate, None);
        let pc = v.prefix_cache(&window(vllm1, vllm1));
        assert_eq!((pc.rate, pc.queries), (None, Some(0.0)));
        // engines without families
        assert_eq!(
            Engine::Trtllm
                .profile()
                .metrics
                .prefix_cache(&window(vllm0, vllm1)),
            PrefixCache::default()
        );
    }

    /// KV usage, queue depth and offload counters: one reading per engine.
    #[test]
    fn kv_usage_queue_and_offload() {
        let v = Engine::Vllm.profile().metrics;
        let t = |u: f64, w: u64| {
            format!("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{engine=\"0\"}} {u}\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {w}\n# TYPE vllm:kv_offload_bytes_gpu_to_cpu counter\nvllm:kv_offload_bytes_gpu_to_cpu_total {}\n# TYPE vllm:kv_offload_time_gpu_to_cpu counter\nvllm:kv_offload_time_gpu_to_cpu_total {}\n", w * 1000, w)
        };
        let set = window(&t(0.25, 1), &t(0.75, 5));
        assert_eq!(v.kv_usage(&set), Some(0.75));
        assert_eq!(v.queue(&set), (Some(5.0), None));
        let o = v.offload(&set);
        assert_eq!(
            (o.bytes_gpu_to_cpu, o.time_gpu_to_cpu),
            (Some(4000.0), Some(4.0))
        );
        let m = ServerMetrics::from_scrapes(&set).unwrap();
        assert_eq!(
            m.kv_offload.bandwidth_gpu_to_cpu_bytes_per_second,
            Some(1000.0)
        );
        // SGLang's token_usage in percent
        let s = Engine::Sglang.profile().metrics;
        assert_eq!(
            s.kv_usage(&window(
                "sglang:token_usage 10\n",
                "sglang:token_usage 42\n"
            )),
            Some(0.42)
        );
    }
}
