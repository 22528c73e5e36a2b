//! [`EngineProfile`]: the shape of what servebench knows about one engine, and the
//! recognition rules every caller asks instead of matching strings itself (an image, a catalog
//! framework, a launch command, `/metrics` names → an [`Engine`]).
//!
//! The profiles themselves are the engine modules (`sglang.rs`, `vllm.rs`, …), registered in
//! `lib.rs`'s `engines!` list; nothing here names an engine.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::metrics::MetricFamilies;
use crate::Engine;

/// How an engine's prefix cache is flushed (`--flush-cache auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushRoute {
    /// `POST` this path (vLLM `/reset_prefix_cache`, SGLang `/flush_cache`).
    Post(&'static str),
    /// llama.cpp: `POST /slots/{id}?action=erase` for every slot of `GET /slots`.
    LlamaSlots,
}

/// The output-cap fields of a chat request (servebench body; `--compat inferencex` sends
/// InferenceX's own body whatever the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatCap {
    /// `max_tokens` and `max_completion_tokens` (B12: engines honour one or the other).
    Both,
    /// `max_tokens` only.
    MaxTokens,
    /// `max_completion_tokens` only (strict OpenAI: reasoning models reject `max_tokens`).
    MaxCompletionTokens,
}

/// The optional request-body fields an engine gets (client `BodyBuilder`, AgentX replay).
/// Completions always carry `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyQuirks {
    /// Output cap fields of a chat request.
    pub chat_cap: ChatCap,
    /// `ignore_eos: true` is sent (then `completion_tokens` must equal the cap).
    pub ignore_eos: bool,
    /// `min_tokens` = the cap is sent.
    pub min_tokens: bool,
    /// `stream_options.continuous_usage_stats` is sent with `--itl per-token`.
    pub continuous_usage: bool,
    /// AgentX output-cap field: InferenceX's `max_completion_tokens`; `transformers serve`
    /// gets `max_tokens`.
    pub agentx_cap_field: &'static str,
    /// AgentX `ignore_eos: true` (not for `transformers serve`, HTTP 422, nor strict OpenAI).
    pub agentx_ignore_eos: bool,
}

impl BodyQuirks {
    /// The body of an SGLang/vLLM-like server: both chat caps, `ignore_eos`, `min_tokens`, no
    /// per-chunk usage, InferenceX's AgentX fields.
    pub const OPENAI_PLUS: BodyQuirks = BodyQuirks {
        chat_cap: ChatCap::Both,
        ignore_eos: true,
        min_tokens: true,
        continuous_usage: false,
        agentx_cap_field: "max_completion_tokens",
        agentx_ignore_eos: true,
    };
}

/// One way a launch command starts the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchForm {
    /// `python3 -m MODULE ARGS…` (`sglang.launch_server`, `atom.entrypoints.openai_server`).
    Module(&'static str),
    /// `PROGRAM SUBCOMMAND ARGS…` (`sglang serve`, `vllm serve`).
    Subcommand(&'static str, &'static str),
    /// `PROGRAM [serve] ARGS…` (`trtllm-serve`; a leading `serve` is skipped).
    Program(&'static str),
}

/// Where a launch names its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelArg {
    /// The first of these flags (`--model-path`, `--model`).
    Flag(&'static [&'static str]),
    /// The flags, else a first positional argument (`vllm serve MODEL`).
    FlagThenPositional(&'static [&'static str]),
    /// A first positional argument, else the flags (`trtllm-serve MODEL`).
    PositionalThenFlag(&'static [&'static str]),
}

/// How an engine is started: the command forms that start it and its argument spellings (what
/// the `--simulate` shims read from a recipe's launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchSyntax {
    /// The command forms; empty when servebench never starts this engine from a recipe.
    pub forms: &'static [LaunchForm],
    /// The model argument.
    pub model: ModelArg,
    /// Port flags (`--port`; ATOM `--server-port`).
    pub port_flags: &'static [&'static str],
    /// The engine's default host.
    pub default_host: &'static str,
    /// The engine's default port.
    pub default_port: u16,
}

impl LaunchSyntax {
    /// No known launch command.
    pub const NONE: LaunchSyntax = LaunchSyntax {
        forms: &[],
        model: ModelArg::Flag(&["--model"]),
        port_flags: &["--port"],
        default_host: "127.0.0.1",
        default_port: 8000,
    };
}

/// Everything servebench knows about one engine, in one place. Built as a `const` in the
/// engine's module (`crates/engines/src/<engine>.rs`) and reached through
/// [`Engine::profile`].
#[derive(Debug, Clone, Copy)]
pub struct EngineProfile {
    /// Name on the command line (`--engine`) and in the rows' `engine` key (`sglang`,
    /// `trtllm`, `llama.cpp`).
    pub name: &'static str,
    /// Other spellings `--engine` accepts (`trt`, `tensorrt-llm`, `llamacpp`).
    pub aliases: &'static [&'static str],
    /// Name in messages and reports (`vLLM`, `SGLang`, `TensorRT-LLM`).
    pub display: &'static str,
    /// InferenceX's `framework` spelling of the plain engine (`trt` for TensorRT-LLM), the
    /// rows' default `framework`; `None` when InferenceX has no such framework.
    pub framework: Option<&'static str>,
    /// Substrings of a catalog `framework` that name this engine (`dynamo-sglang`,
    /// `sglang-disagg` → SGLang), checked in registration order.
    pub framework_words: &'static [&'static str],
    /// Substrings of an image's repository name that name this engine (`lmsysorg/sglang`,
    /// `rocm/atom-dev`).
    pub image_words: &'static [&'static str],
    /// The key of this engine's flag tables (`tables/<key>-<version>.json`), `None` when it
    /// has none.
    pub flag_tables: Option<&'static str>,
    /// Optional request-body fields.
    pub body: BodyQuirks,
    /// Prefix-cache flush, `None` when none is known.
    pub flush: Option<FlushRoute>,
    /// Said after a 404 on the flush route.
    pub flush_404_hint: Option<&'static str>,
    /// InferenceX `backend` of a completions run (`vllm`, else `openai`; chat is
    /// `openai-chat`).
    pub completions_backend: &'static str,
    /// How it is launched.
    pub launch: LaunchSyntax,
    /// Its `/metrics` families and the one formula for each derived number.
    pub metrics: MetricFamilies,
}

impl Engine {
    /// The default `--engine` (`vllm`: the profile InferenceX's `benchmark_serving.py
    /// --backend vllm` body matches).
    pub const DEFAULT_NAME: &'static str = "vllm";

    /// Profile name as on the command line ([`EngineProfile::name`]).
    pub fn name(self) -> &'static str {
        self.profile().name
    }

    /// Parses a profile name or one of its aliases, case-insensitively.
    ///
    /// # Errors
    /// One line naming the value and every accepted name.
    pub fn parse(s: &str) -> Result<Self, String> {
        let l = s.to_ascii_lowercase();
        Engine::ALL
            .iter()
            .copied()
            .find(|e| {
                let p = e.profile();
                p.name == l || p.aliases.contains(&l.as_str())
            })
            .ok_or_else(|| {
                let names: Vec<&str> = Engine::ALL.iter().map(|e| e.name()).collect();
                format!(
                    "unknown engine profile `{l}` (expected one of {})",
                    names.join(", ")
                )
            })
    }

    /// The engine a catalog/InferenceX `framework` runs (`dynamo-sglang` → SGLang,
    /// `dynamo-trt` → TensorRT-LLM, `atom-disagg` → ATOM), `None` for an unknown one.
    pub fn from_framework(framework: &str) -> Option<Engine> {
        let f = framework.to_ascii_lowercase();
        Engine::ALL.iter().copied().find(|e| {
            let p = e.profile();
            p.framework == Some(f.as_str())
                || p.name == f
                || p.framework_words.iter().any(|w| f.contains(w))
        })
    }

    /// The engine of an image reference, from its repository's last path component
    /// (`lmsysorg/sglang:v0.5.20` → SGLang, `vllm/vllm-openai:v0.27.1` → vLLM,
    /// `nvcr.io/nvidia/tensorrt-llm/release:1.2` → TensorRT-LLM, `rocm/atom-dev:nightly` →
    /// ATOM); `None` when no profile's words appear.
    pub fn from_image(image: &str) -> Option<Engine> {
        let repo = image.split('@').next().unwrap_or(image);
        let repo = match repo.rfind(':') {
            Some(i) if !repo[i..].contains('/') => &repo[..i],
            _ => repo,
        }
        .to_ascii_lowercase();
        let last = repo.rsplit(['/', '#']).next().unwrap_or(&repo);
        Engine::ALL
            .iter()
            .copied()
            .find(|e| e.profile().image_words.iter().any(|w| last.contains(w)))
            .or_else(|| {
                // a word naming the engine higher up (`nvcr.io/nvidia/tensorrt-llm/release`)
                Engine::ALL.iter().copied().find(|e| {
                    e.profile()
                        .image_words
                        .iter()
                        .any(|w| w.len() > 5 && repo.contains(w))
                })
            })
    }

    /// The engine whose metric prefix the names carry (`/metrics` server detection), checking
    /// engines in [`MetricFamilies::detect_rank`] order (vLLM before SGLang: a vLLM frontend
    /// may re-export SGLang names, never the other way round).
    pub fn from_metric_names<'a>(
        names: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<Engine> {
        let mut order: Vec<Engine> = Engine::ALL
            .iter()
            .copied()
            .filter(|e| !e.profile().metrics.prefixes.is_empty())
            .collect();
        order.sort_by_key(|e| e.profile().metrics.detect_rank);
        order.into_iter().find(|e| {
            let p = e.profile().metrics.prefixes;
            names
                .clone()
                .into_iter()
                .any(|n| p.iter().any(|x| n.starts_with(x)))
        })
    }

    /// The engine a command line starts, with the engine's own argv (after the module or
    /// subcommand): `tool` is the program's name (`python3`, `sglang`, `trtllm-serve`),
    /// `args` its arguments. `None` when no profile's [`LaunchSyntax::forms`] match.
    pub fn from_launch<'a>(tool: &str, args: &'a [String]) -> Option<(Engine, &'a [String])> {
        let sub = args.first().map(String::as_str);
        let module = match (args.first().map(String::as_str), args.get(1)) {
            (Some("-m"), Some(m)) if tool.starts_with("python") => Some(m.as_str()),
            _ => None,
        };
        for e in Engine::ALL.iter().copied() {
            for form in e.profile().launch.forms {
                match *form {
                    LaunchForm::Module(m) if module == Some(m) => return Some((e, &args[2..])),
                    LaunchForm::Subcommand(p, s) if tool == p && sub == Some(s) => {
                        return Some((e, &args[1..]))
                    }
                    LaunchForm::Program(p) if tool == p => {
                        return Some((
                            e,
                            if sub == Some("serve") {
                                &args[1..]
                            } else {
                                args
                            },
                        ))
                    }
                    _ => {}
                }
            }
        }
        None
    }

    /// The programs a launch form names (`sglang`, `vllm`, `trtllm-serve`): what a shim folder
    /// must hold besides `python3` for every known launch to be seen.
    pub fn launch_programs() -> Vec<&'static str> {
        let mut out = Vec::new();
        for e in Engine::ALL {
            for f in e.profile().launch.forms {
                let p = match *f {
                    LaunchForm::Module(_) => continue,
                    LaunchForm::Subcommand(p, _) | LaunchForm::Program(p) => p,
                };
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// InferenceX framework spellings of two `-`-joined segments (a frontend or a disaggregated
/// mode around an engine): a config key `<model>-<precision>-<sku>-<framework>[-<variant>…]`
/// keeps them whole when split on `-` (AUTOMATION §1.2).
pub const TWO_SEGMENT_FRAMEWORKS: &[&str] = &[
    "dynamo-sglang",
    "dynamo-vllm",
    "dynamo-trt",
    "llmd-vllm",
    "sglang-disagg",
    "atom-disagg",
];

/// Display name of a framework or engine spelling (`sglang-disagg` → `SGLang`, `trt` →
/// `TensorRT-LLM`); the spelling itself when no engine is recognised.
pub fn display_name(framework: &str) -> String {
    match Engine::parse(framework)
        .ok()
        .or_else(|| Engine::from_framework(framework))
    {
        Some(e) => e.profile().display.to_string(),
        None => framework.to_string(),
    }
}

/// The arguments of an engine launch that servebench reads (engine defaults filled in); the
/// runner's `--simulate` shim records them flattened into its `engine.json`
/// (`servebench_runner::shim::EngineLaunch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchArgs {
    /// `--host`, else the engine's default.
    pub host: String,
    /// The port flag, else the engine's default.
    pub port: u16,
    /// The model path or id.
    pub model: Option<String>,
    /// `--served-model-name`.
    pub served_model_name: Option<String>,
    /// Tensor parallelism (default 1).
    pub tp: u32,
    /// Expert parallelism (default 1).
    pub ep: u32,
    /// Data parallelism (default 1).
    pub dp: u32,
    /// Context length, tokens (`--context-length`, `--max-model-len`, `--max_seq_len`).
    pub context_length: Option<u32>,
    /// Max running requests (`--max-running-requests`, `--max-num-seqs`, `--max_batch_size`).
    pub max_running_requests: Option<u32>,
}

/// The value of the last of `names` given as `--flag value` or `--flag=value`.
fn flag_value(args: &[String], names: &[&str]) -> Option<String> {
    let mut out = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        for n in names {
            if a == n {
                if let Some(v) = args.get(i + 1) {
                    out = Some(v.clone());
                }
            } else if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                out = Some(v.to_string());
            }
        }
        i += 1;
    }
    out
}

fn num(args: &[String], names: &[&str]) -> Option<u32> {
    flag_value(args, names).and_then(|v| v.trim().parse().ok())
}

impl LaunchArgs {
    /// Reads a launch's argv (the engine's own, after the module / `serve`).
    pub fn parse(engine: Engine, argv: &[String]) -> LaunchArgs {
        let l = engine.profile().launch;
        let positional = || {
            argv.first()
                .filter(|a| !a.starts_with('-'))
                .map(|s| s.to_string())
        };
        let model = match l.model {
            ModelArg::Flag(f) => flag_value(argv, f),
            ModelArg::FlagThenPositional(f) => flag_value(argv, f).or_else(positional),
            ModelArg::PositionalThenFlag(f) => positional().or_else(|| flag_value(argv, f)),
        };
        LaunchArgs {
            host: flag_value(argv, &["--host"]).unwrap_or_else(|| l.default_host.into()),
            port: num(argv, l.port_flags)
                .map(|p| p as u16)
                .unwrap_or(l.default_port),
            model,
            served_model_name: flag_value(argv, &["--served-model-name"]),
            tp: num(
                argv,
                &[
                    "--tp",
                    "--tp-size",
                    "--tensor-parallel-size",
                    "-tp",
                    "--tp_size",
                ],
            )
            .unwrap_or(1),
            ep: num(
                argv,
                &["--ep", "--ep-size", "--expert-parallel-size", "--ep_size"],
            )
            .unwrap_or(1),
            dp: num(argv, &["--dp", "--dp-size", "--data-parallel-size", "-dp"]).unwrap_or(1),
            context_length: num(
                argv,
                &["--context-length", "--max-model-len", "--max_seq_len"],
            ),
            max_running_requests: num(
                argv,
                &[
                    "--max-running-requests",
                    "--max-num-seqs",
                    "--max_batch_size",
                ],
            ),
        }
    }
}

impl Serialize for Engine {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Engine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Engine::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
