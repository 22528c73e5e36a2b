//! The srt-slurm recipes a multinode config runs, and the engine flags they pass.
//!
//! InferenceX's multinode configs name an srt-slurm recipe in a search-space row's
//! `additional-settings` (`CONFIG_FILE=recipes/trtllm/gb200-fp4/8k1k/mtp/ctx1_….yaml`, an
//! optional `:variant` after the path). The GB200/GB300 launchers
//! (`runners/launch_gb200-nv.sh`, `_RECIPE_SRC=…/benchmarks/multi_node/srt-slurm-recipes/${_RECIPE_REL#recipes/}`)
//! overlay InferenceX's own copies from `benchmarks/multi_node/srt-slurm-recipes/` onto the
//! srt-slurm checkout they clone at job time; a recipe that is not among those copies lives
//! only in NVIDIA/srt-slurm and cannot be read before the job runs.
//!
//! A recipe's engine flags are the keys of `backend.<engine>_config.{prefill,decode,aggregated}`
//! (srt-slurm passes each key `k: v` as `--k v` to the worker's launch), wherever the block sits
//! (a `base:` or `zip_override_*:` variant too). `trtllm_config` holds TensorRT-LLM LLM-API
//! options (a YAML file given to the worker), not command-line flags: not checked, and said.

use servebench_engines::Engine;
use std::path::{Path, PathBuf};

use saphyr_parser::{Event, Parser};
use serde::Serialize;
use servebench_catalog::schema::ConfigEntry;

use crate::flags::{check_flags, FlagCheck};
use crate::{BumpError, RecipeReport};

/// InferenceX's multi-node benchmark directory beside the single-node recipes directory
/// (`benchmarks/single_node` → `benchmarks/multi_node`).
pub fn multi_node_dir(single_node: &Path) -> PathBuf {
    match single_node.parent() {
        Some(p) if single_node.file_name().is_some_and(|n| n == "single_node") => {
            p.join("multi_node")
        }
        _ => single_node.join("../multi_node"),
    }
}

/// One srt-slurm recipe a multinode config names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SrtRecipeUse {
    /// `fixed-seq-len` or `agentic-coding`.
    pub scenario: String,
    /// The value as the catalog writes it (`recipes/trtllm/…yaml`, a `:variant` kept).
    pub config_file: String,
    /// The path the launcher would read InferenceX's copy from.
    pub looked_for: PathBuf,
    /// True when that file exists.
    pub found: bool,
}

fn config_files(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => {
            if let Some(rest) = s.trim().strip_prefix("CONFIG_FILE=") {
                let rest = rest.trim().trim_matches('"').to_string();
                if !rest.is_empty() && !out.contains(&rest) {
                    out.push(rest);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| config_files(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| config_files(x, out)),
        _ => {}
    }
}

/// The srt-slurm recipes a multinode entry names (`CONFIG_FILE=` anywhere in a scenario's
/// search space, first occurrence order, each once per scenario), resolved under `multi`
/// (InferenceX's `benchmarks/multi_node`) as the launchers do: `recipes/X[:variant]` →
/// `srt-slurm-recipes/X` (runners/launch_gb200-nv.sh, launch_gb300-nv.sh), a workspace path
/// `benchmarks/…` → that path in the checkout, and for llm-d frameworks
/// `llm-d-recipes/X` (benchmarks/multi_node/llm-d/submit.sh).
pub fn srt_recipe_uses(entry: &ConfigEntry, multi: &Path) -> Vec<SrtRecipeUse> {
    let llmd = entry.framework.starts_with("llmd");
    let mut out = Vec::new();
    for scen in ["fixed-seq-len", "agentic-coding"] {
        let Some(s) = entry.json.get("scenarios").and_then(|s| s.get(scen)) else {
            continue;
        };
        let mut files = Vec::new();
        config_files(s, &mut files);
        for cf in files {
            let rel = cf.split(':').next().unwrap_or(&cf);
            let looked_for = if let Some(r) = rel.strip_prefix("recipes/") {
                multi.join("srt-slurm-recipes").join(r)
            } else if let Some(r) = rel.strip_prefix("benchmarks/multi_node/") {
                multi.join(r)
            } else if llmd {
                multi.join("llm-d-recipes").join(rel)
            } else {
                multi.join("srt-slurm-recipes").join(rel)
            };
            out.push(SrtRecipeUse {
                scenario: scen.into(),
                found: looked_for.is_file(),
                config_file: cf,
                looked_for,
            });
        }
    }
    out
}

/// The engine flags of an srt-slurm recipe: per engine block (`sglang`, `vllm`, `trtllm`),
/// each key of a `prefill`/`decode`/`aggregated` mapping under `<engine>_config` as `--key`,
/// with its 1-based line. Errors: the YAML does not parse (`LINE: message`).
pub fn recipe_flags(text: &str) -> Result<Vec<(String, String, usize)>, String> {
    struct Frame {
        is_map: bool,
        expecting_key: bool,
        key: Option<String>,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending: Option<String> = None;
    let mut out = Vec::new();
    // the engine of the `<engine>_config` frame at depth d-1 when the frame at d is a role map
    let engine_of = |stack: &[Frame]| -> Option<String> {
        let n = stack.len();
        if n < 2 {
            return None;
        }
        let role = stack[n - 1].key.as_deref()?;
        if !matches!(role, "prefill" | "decode" | "aggregated" | "agg") {
            return None;
        }
        let cfg = stack[n - 2].key.as_deref()?;
        // srt-slurm's `<engine>_config` blocks: SGLang, vLLM (command-line flags), TRT-LLM
        let engine = Engine::parse(cfg.strip_suffix("_config")?).ok()?;
        matches!(engine, Engine::Sglang | Engine::Vllm | Engine::Trtllm)
            .then(|| engine.name().to_string())
    };
    for ev in Parser::new_from_str(text) {
        let (e, sp) = ev.map_err(|e| format!("{}: {}", e.marker().line(), e.info()))?;
        match e {
            Event::Scalar(v, ..) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                if top.is_map && top.expecting_key {
                    top.expecting_key = false;
                    if let Some(engine) = engine_of(&stack) {
                        out.push((engine, format!("--{v}"), sp.start.line()));
                    }
                    pending = Some(v.into_owned());
                } else {
                    pending = None;
                    if top.is_map {
                        top.expecting_key = true;
                    }
                }
            }
            Event::Alias(_) => {
                if let Some(top) = stack.last_mut() {
                    if top.is_map {
                        top.expecting_key = !top.expecting_key;
                    }
                }
                pending = None;
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_map = matches!(e, Event::MappingStart(..));
                let key = match stack.last_mut() {
                    Some(top) if top.is_map && top.expecting_key => {
                        top.expecting_key = false;
                        None
                    }
                    Some(top) => {
                        if top.is_map {
                            top.expecting_key = true;
                        }
                        pending.take()
                    }
                    None => None,
                };
                stack.push(Frame {
                    is_map,
                    expecting_key: is_map,
                    key,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    Ok(out)
}

/// What the bump checks the recipes of a multinode entry with.
pub struct SrtCheck<'a> {
    /// Config key (for the notes).
    pub key: &'a str,
    /// The target image (its flag table).
    pub image: &'a str,
    /// InferenceX's `benchmarks/multi_node` ([`multi_node_dir`]).
    pub multi_dir: &'a Path,
}

/// The srt-slurm recipes of a multinode entry, each one it can see checked against the target
/// image's flag table; each one it cannot see said in `notes`, one line with the path it looked
/// for. Recipes are read, never edited (the flag rules edit shell scripts).
pub fn check_srt_recipes(
    entry: &ConfigEntry,
    c: &SrtCheck<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<RecipeReport>, BumpError> {
    let uses = srt_recipe_uses(entry, c.multi_dir);
    let llmd = entry.framework.starts_with("llmd");
    if uses.is_empty() {
        notes.push(format!(
            "`{}` is multinode and names no srt-slurm recipe (no CONFIG_FILE= in its search space): no engine flags to check",
            c.key
        ));
    }
    let mut reports: Vec<RecipeReport> = Vec::new();
    let mut missing: Vec<&str> = Vec::new();
    for u in &uses {
        if !u.found {
            if missing.contains(&u.config_file.as_str()) {
                continue;
            }
            missing.push(&u.config_file);
            notes.push(format!(
                "srt-slurm recipe {} ({}) not checked: not among InferenceX's copies, looked for {} (it lives only in NVIDIA/srt-slurm, cloned at job time)",
                u.config_file,
                u.scenario,
                u.looked_for.display()
            ));
            continue;
        }
        if reports.iter().any(|r| r.path == u.looked_for) {
            continue;
        }
        let text = crate::read(&u.looked_for)?;
        let flags = match recipe_flags(&text) {
            _ if llmd => FlagCheck {
                unchecked: Some(format!(
                    "an llm-d recipe (EPP config and per-role serve args that benchmarks/multi_node/llm-d/server.sh assembles): its {} flags are not checked",
                    entry.framework
                )),
                ..FlagCheck::default()
            },
            Err(e) => FlagCheck {
                unchecked: Some(format!(
                    "{}:{e}: not valid YAML, its engine flags are not checked",
                    u.looked_for.display()
                )),
                ..FlagCheck::default()
            },
            Ok(found) => flag_check(c.image, &found),
        };
        reports.push(RecipeReport {
            path: u.looked_for.clone(),
            scenario: u.scenario.clone(),
            shared_with: vec![],
            outcomes: vec![],
            change: None,
            flags,
        });
    }
    Ok(reports)
}

/// The flag check of one recipe's `(engine, flag, line)` list: the command-line engines
/// against the image's table ([`crate::flags::check_flags`]), `trtllm_config` said unchecked.
fn flag_check(image: &str, found: &[(String, String, usize)]) -> FlagCheck {
    let cli: Vec<&(String, String, usize)> = found
        .iter()
        .filter(|(e, ..)| Engine::parse(e) != Ok(Engine::Trtllm))
        .collect();
    if cli.is_empty() {
        let why = if found.is_empty() {
            "no sglang_config/vllm_config block with prefill/decode/aggregated keys: no engine flags to check".to_string()
        } else {
            "trtllm_config holds TensorRT-LLM LLM-API options (the YAML file each worker reads), not command-line flags; servebench has no table for them, so they are not checked".to_string()
        };
        return FlagCheck {
            unchecked: Some(why),
            ..FlagCheck::default()
        };
    }
    let engine = cli[0].0.as_str();
    let flags: Vec<(String, usize)> = cli.iter().map(|(_, f, l)| (f.clone(), *l)).collect();
    // recipes are not edited: every flag is still in the recipe the job reads
    let after: Vec<String> = flags.iter().map(|(f, _)| f.clone()).collect();
    check_flags(engine, image, &flags, &after)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = "name: x
backend:
  type: sglang
  prefill_environment:
    NCCL_MNNVL_ENABLE: '1'
  sglang_config:
    prefill:
      tp-size: 8
      numa-bind-nodes: [0, 0, 1, 1]
      cuda-graph-max-bs: 256
    decode: {tp-size: 16, enable-dp-attention: true}
zip_override_lowlat:
  backend:
    trtllm_config:
      decode:
        max_batch_size: 8
";

    #[test]
    fn keys_of_the_role_blocks_are_the_flags_with_their_lines() {
        let f = recipe_flags(RECIPE).unwrap();
        let got: Vec<(&str, &str, usize)> = f
            .iter()
            .map(|(e, k, l)| (e.as_str(), k.as_str(), *l))
            .collect();
        assert_eq!(
            got,
            vec![
                ("sglang", "--tp-size", 8),
                ("sglang", "--numa-bind-nodes", 9),
                ("sglang", "--cuda-graph-max-bs", 10),
                ("sglang", "--tp-size", 11),
                ("sglang", "--enable-dp-attention", 11),
                ("trtllm", "--max_batch_size", 16),
            ]
        );
        let e = recipe_flags("a: [1,\n").unwrap_err();
        assert!(e.starts_with("2: ") || e.starts_with("3: "), "{e}");
    }
}
