//! Multinode configs: the srt-slurm recipe YAMLs they name (`CONFIG_FILE=recipes/…`), checked
//! against the target image's flag table where InferenceX has a copy, said one line each where
//! it has none. Real data: InferenceX's master config and its `benchmarks/` tree from the
//! shared repository tarball (commit 843c625).

use std::path::{Path, PathBuf};
use std::process::Command;

use servebench_bump::{plan, srt, BumpOptions, Resolve};

fn shared() -> PathBuf {
    std::env::var("SERVEBENCH_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").into())
        .into()
}

/// `InferenceX/benchmarks` of the shared tarball, extracted under `dir`; returns
/// `benchmarks/single_node`.
fn benchmarks(dir: &Path) -> PathBuf {
    let tarball = shared().join("data/inferencex/repo-843c6254f.tar.gz");
    assert!(
        tarball.is_file(),
        "{} not found (set SERVEBENCH_SHARED)",
        tarball.display()
    );
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .arg("InferenceX/benchmarks")
        .status()
        .expect("tar runs");
    assert!(st.success(), "tar -xzf {} failed", tarball.display());
    dir.join("InferenceX/benchmarks/single_node")
}

fn opts(key: &str, image: &str, recipes: &Path) -> BumpOptions {
    BumpOptions {
        key: key.into(),
        image: image.into(),
        catalogs: vec![shared().join("data/inferencex/nvidia-master.yaml")],
        recipes_dir: Some(recipes.to_path_buf()),
        changelog: None,
        resolve: Resolve::Off,
        pr_link: "https://github.com/SemiAnalysisAI/InferenceX/pull/XXX".into(),
        pin_digest: false,
        rules: None,
    }
}

#[test]
fn visible_srt_recipe_flags_are_checked_and_missing_ones_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let single = benchmarks(tmp.path());
    let multi = single.parent().unwrap().join("multi_node");

    // InferenceX has its own copy of this recipe: its sglang_config keys are checked.
    let key = "glm5.2-fp8-h200-dynamo-sglang-agentic-mtp-2p2d";
    let p = plan(&opts(key, "lmsysorg/sglang:v0.5.20-cu130", &single)).unwrap();
    let want = multi
        .join("srt-slurm-recipes/sglang/glm5.2/agentic/disagg-h200-2p2d-pcp8-tp8-dp8-mtp.yaml");
    assert_eq!(p.record.recipes.len(), 1, "{:?}", p.notes);
    let r = &p.record.recipes[0];
    assert_eq!(r.path, want);
    assert!(r.change.is_none(), "srt-slurm recipes are never edited");
    let f = &r.flags;
    assert!(f.unchecked.is_none(), "{:?}", f.unchecked);
    assert!(
        f.table.as_deref().unwrap().starts_with("sglang 0.5.20"),
        "{:?}",
        f.table
    );
    let text = std::fs::read_to_string(&want).unwrap();
    let keys = srt::recipe_flags(&text).unwrap();
    assert_eq!(f.checked, keys.len());
    assert!(f.checked >= 20, "{} flags", f.checked);
    // every finding points at the recipe line that holds the key
    let lines: Vec<&str> = text.lines().collect();
    for x in &f.findings {
        let key = x.flag.trim_start_matches('-');
        assert!(lines[x.line - 1].contains(&format!("{key}:")), "{x:?}");
        assert!(x.still_in_recipe);
    }
    assert!(
        !p.notes.iter().any(|n| n.contains("not checked")),
        "{:?}",
        p.notes
    );

    // None of these three is among InferenceX's copies: one line each, with the path.
    let key = "dsr1-fp4-gb200-dynamo-sglang";
    let p = plan(&opts(key, "lmsysorg/sglang:v0.5.20-cu130", &single)).unwrap();
    assert!(p.record.recipes.is_empty());
    let unchecked: Vec<&String> = p
        .notes
        .iter()
        .filter(|n| n.starts_with("srt-slurm recipe "))
        .collect();
    assert_eq!(unchecked.len(), 3, "{:?}", p.notes);
    for (n, rel) in unchecked
        .iter()
        .zip(["low-latency.yaml", "mid-curve.yaml", "max-tpt.yaml"])
    {
        let path = multi.join("srt-slurm-recipes/gb200-fp4/8k1k").join(rel);
        assert_eq!(
            **n,
            format!(
                "srt-slurm recipe recipes/gb200-fp4/8k1k/{rel} (fixed-seq-len) not checked: not among InferenceX's copies, looked for {} (it lives only in NVIDIA/srt-slurm, cloned at job time)",
                path.display()
            )
        );
    }

    // trtllm_config holds LLM-API options, not flags: said, not passed.
    let key = "glm5.2-fp4-gb300-dynamo-trt-agentic-agg-mtp";
    let p = plan(&opts(
        key,
        "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc23",
        &single,
    ))
    .unwrap();
    assert_eq!(p.record.recipes.len(), 1, "{:?}", p.notes);
    let why = p.record.recipes[0].flags.unchecked.as_deref().unwrap();
    assert!(
        why.starts_with("trtllm_config holds TensorRT-LLM LLM-API options"),
        "{why}"
    );
}

#[test]
fn every_recipe_inferencex_ships_parses_to_engine_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let single = benchmarks(tmp.path());
    let multi = srt::multi_node_dir(&single);
    let cat = servebench_catalog::Catalog::load(&[
        shared()
            .join("data/inferencex/nvidia-master.yaml")
            .display()
            .to_string(),
        shared()
            .join("data/inferencex/amd-master.yaml")
            .display()
            .to_string(),
    ])
    .unwrap();
    let (mut entries, mut uses, mut found, mut flags) = (0, 0, 0, 0);
    for e in cat.entries.values().filter(|e| e.multinode) {
        entries += 1;
        for u in srt::srt_recipe_uses(e, &multi) {
            uses += 1;
            if !u.found || e.framework.starts_with("llmd") {
                continue;
            }
            found += 1;
            let text = std::fs::read_to_string(&u.looked_for).unwrap();
            let f = srt::recipe_flags(&text)
                .unwrap_or_else(|err| panic!("{}:{err}", u.looked_for.display()));
            assert!(!f.is_empty(), "{}: no engine block", u.looked_for.display());
            flags += f.len();
        }
    }
    eprintln!("{entries} multinode entries, {uses} recipe uses, {found} visible, {flags} flags");
    assert!(entries >= 90, "{entries}");
    assert!(found >= 200 && found < uses, "{found} of {uses}");
}
