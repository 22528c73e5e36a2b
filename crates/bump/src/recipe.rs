//! Which recipe script a config runs, and which other configs run the same one.
//!
//! InferenceX naming (AUTOMATION.md §4.3): `benchmarks/single_node/<subdir><model-code>_<precision>_<sku>[_<framework>][_mtp].sh`
//! with `<subdir>` = `agentic/` or `fixed_seq_len/`, `<model-code>` = the model prefix, `<sku>` =
//! the runner label's hardware (`cluster:b200-nscale` → `b200`), `_mtp` iff spec-decoding is
//! `mtp`. Launchers try the framework-tagged name first, then the legacy name without the
//! framework (`_trt` for trt). Recipes are looked up in `<dir>/<subdir>` and then `<dir>`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use servebench_catalog::schema::ConfigEntry;
use servebench_catalog::Catalog;

/// The hardware SKU of a runner label (`cluster:b200-nscale` → `b200`, `mi355x-amds` → `mi355x`).
pub fn sku_of_runner(runner: &str) -> String {
    let r = runner.strip_prefix("cluster:").unwrap_or(runner);
    r.split(['-', '_']).next().unwrap_or(r).to_string()
}

/// The engine a framework runs, in InferenceX's framework spelling (`dynamo-sglang` →
/// `sglang`, `trtllm`/`dynamo-trt` → `trt`), else the one the image repository names; the
/// framework itself when neither names a known engine (`servebench_engines::Engine`).
pub fn engine_of(framework: &str, repository: &str) -> String {
    use servebench_engines::Engine;
    let f = framework.to_ascii_lowercase();
    Engine::from_framework(&f)
        .or_else(|| Engine::from_image(repository))
        .and_then(|e| e.profile().framework)
        .map_or(f, str::to_string)
}

/// One recipe a config uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeUse {
    /// `agentic-coding` or `fixed-seq-len`.
    pub scenario: String,
    /// Spec-decoding of the search-space rows using it (`mtp`, `none`, `draft_model`).
    pub spec: String,
    /// Candidate file names relative to the recipes directory, in lookup order.
    pub candidates: Vec<String>,
    /// The file found, if any.
    pub path: Option<PathBuf>,
}

fn spec_values(scenario: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for block in scenario.as_array().into_iter().flatten() {
        for row in block
            .get("search-space")
            .and_then(|s| s.as_array())
            .into_iter()
            .flatten()
        {
            let s = row
                .get("spec-decoding")
                .and_then(|v| v.as_str())
                .unwrap_or("none")
                .to_string();
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// The single-node recipes an entry uses (empty for multinode entries).
pub fn recipe_uses(entry: &ConfigEntry, dir: &Path) -> Vec<RecipeUse> {
    if entry.multinode {
        return vec![];
    }
    let sku = sku_of_runner(&entry.runner);
    let mut out = Vec::new();
    for (scen, subdir) in [
        ("fixed-seq-len", "fixed_seq_len"),
        ("agentic-coding", "agentic"),
    ] {
        let Some(s) = entry.json.get("scenarios").and_then(|s| s.get(scen)) else {
            continue;
        };
        for spec in spec_values(s) {
            let mtp = if spec == "mtp" { "_mtp" } else { "" };
            let stem = format!("{}_{}_{}", entry.model_prefix, entry.precision, sku);
            let mut names = vec![format!("{stem}_{}{mtp}.sh", entry.framework)];
            let trt = servebench_engines::Engine::Trtllm.profile().framework;
            let legacy = if trt == Some(entry.framework.as_str()) {
                format!("{stem}_trt{mtp}.sh")
            } else {
                format!("{stem}{mtp}.sh")
            };
            if !names.contains(&legacy) {
                names.push(legacy);
            }
            let mut candidates = Vec::new();
            for n in &names {
                candidates.push(format!("{subdir}/{n}"));
            }
            candidates.extend(names.iter().cloned());
            let path = candidates.iter().map(|c| dir.join(c)).find(|p| p.is_file());
            out.push(RecipeUse {
                scenario: scen.into(),
                spec,
                candidates,
                path,
            });
        }
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Other catalog keys whose recipes resolve to `path` (so it is shared and must not be edited).
pub fn other_users(path: &Path, key: &str, catalog: &Catalog, dir: &Path) -> Vec<String> {
    catalog
        .entries
        .values()
        .filter(|e| e.key != key)
        .filter(|e| {
            recipe_uses(e, dir)
                .iter()
                .any(|u| u.path.as_deref().is_some_and(|p| same_file(p, path)))
        })
        .map(|e| e.key.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skus_and_engines() {
        assert_eq!(sku_of_runner("cluster:b200-nscale"), "b200");
        assert_eq!(sku_of_runner("mi355x-amds"), "mi355x");
        assert_eq!(sku_of_runner("gb200-nv"), "gb200");
        assert_eq!(sku_of_runner("h200"), "h200");
        assert_eq!(engine_of("dynamo-sglang", ""), "sglang");
        assert_eq!(engine_of("dynamo-trt", ""), "trt");
        assert_eq!(engine_of("llmd-vllm", ""), "vllm");
        assert_eq!(engine_of("custom", "lmsysorg/sglang"), "sglang");
    }

    #[test]
    fn scenario_recipe_is_found_by_convention() {
        let dir = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/scenario"
        ));
        let cat = Catalog::load(&[dir.join("master.yaml").display().to_string()]).unwrap();
        let e = cat.get("qwen3.8next-fp4-b200-sglang-agentic-mtp").unwrap();
        let uses = recipe_uses(e, &dir.join("recipes"));
        assert_eq!(uses.len(), 1);
        assert_eq!(uses[0].scenario, "agentic-coding");
        assert_eq!(
            uses[0].candidates[0],
            "agentic/qwen3.8next_fp4_b200_sglang_mtp.sh"
        );
        assert!(uses[0]
            .path
            .as_ref()
            .unwrap()
            .ends_with("recipes/qwen3.8next_fp4_b200_sglang_mtp.sh"));
        assert!(other_users(
            uses[0].path.as_ref().unwrap(),
            &e.key,
            &cat,
            &dir.join("recipes")
        )
        .is_empty());
    }
}
