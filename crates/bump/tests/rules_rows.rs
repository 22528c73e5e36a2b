//! Every row of AUTOMATION.md §6.1 through a whole bump: a catalog entry, its recipe found by
//! the InferenceX naming convention, the version crossing, and what happens to the recipe
//! (edited for `auto` rules, reported for `advise` rules, left alone outside the crossing or in a
//! shared recipe).

use std::path::PathBuf;

use servebench_bump::{plan, BumpOptions, BumpPlan, Resolve};

struct Case {
    _tmp: tempfile::TempDir,
    recipe: PathBuf,
    plan: BumpPlan,
}

fn entry(key: &str, image: &str, fw: &str, runner: &str) -> String {
    format!(
        "{key}:\n  image: {image}\n  model: org/model\n  model-prefix: mp\n  runner: {runner}\n  precision: fp8\n  framework: {fw}\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n      search-space:\n      - {{ tp: 8, conc-start: 4, conc-end: 64 }}\n"
    )
}

fn bump_with(entries: &str, key: &str, new_image: &str, fw: &str, sku: &str, recipe: &str) -> Case {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("master.yaml"), entries).unwrap();
    std::fs::create_dir_all(dir.join("single_node/fixed_seq_len")).unwrap();
    let rp = dir.join(format!("single_node/fixed_seq_len/mp_fp8_{sku}_{fw}.sh"));
    std::fs::write(&rp, recipe).unwrap();
    let plan = plan(&BumpOptions {
        key: key.into(),
        image: new_image.into(),
        catalogs: vec![dir.join("master.yaml")],
        recipes_dir: Some(dir.join("single_node")),
        changelog: None,
        resolve: Resolve::Off,
        pr_link: "XXX".into(),
        pin_digest: false,
        rules: None,
    })
    .unwrap();
    Case {
        _tmp: tmp,
        recipe: rp,
        plan,
    }
}

fn bump(old: &str, new: &str, fw: &str, runner: &str, recipe: &str) -> Case {
    let sku = runner
        .trim_start_matches("cluster:")
        .split(['-', '_'])
        .next()
        .unwrap()
        .to_string();
    bump_with(&entry("k", old, fw, runner), "k", new, fw, &sku, recipe)
}

impl Case {
    fn new_recipe(&self) -> Option<String> {
        self.plan.record.recipes[0]
            .change
            .as_ref()
            .map(|c| c.new.clone())
    }
    fn outcome(&self, rule: &str) -> (String, String) {
        let o = self.plan.record.recipes[0]
            .outcomes
            .iter()
            .find(|o| o.rule == rule)
            .unwrap_or_else(|| {
                panic!(
                    "no outcome for {rule}: {:?}",
                    self.plan.record.recipes[0].outcomes
                )
            });
        (o.status.clone(), o.message.clone())
    }
    fn no_outcomes(&self) -> bool {
        self.plan.record.recipes[0].outcomes.is_empty()
    }
}

const SGL: &str = "python3 -m sglang.launch_server --model-path $MODEL \\\n  --tp $TP \\\n  --cuda-graph-max-bs=$CONC \\\n  --max-running-requests $CONC\n";

#[test]
fn row1_sglang_cuda_graph_max_bs_only_on_the_crossing() {
    let c = bump(
        "lmsysorg/sglang:v0.5.19-cu130",
        "lmsysorg/sglang:v0.5.20-cu130",
        "sglang",
        "b200-nb",
        SGL,
    );
    assert_eq!(
        c.new_recipe().unwrap(),
        SGL.replace(
            "--cuda-graph-max-bs=$CONC",
            "--cuda-graph-max-bs-decode=$CONC"
        )
    );
    assert_eq!(c.outcome("sglang-cuda-graph-max-bs-decode").0, "applied");
    assert!(c.recipe.exists());
    // Not crossed: v0.5.18 → v0.5.19 leaves the recipe alone.
    let c = bump(
        "lmsysorg/sglang:v0.5.18-cu130",
        "lmsysorg/sglang:v0.5.19-cu130",
        "sglang",
        "b200-nb",
        SGL,
    );
    assert!(c.new_recipe().is_none() && c.no_outcomes());
    // A dated cu13 nightly after 2026-09-15 crosses it too.
    let c = bump(
        "lmsysorg/sglang:v0.5.19-cu130",
        "lmsysorg/sglang:nightly-dev-cu13-20260920-0a1b2c3d",
        "sglang",
        "b200-nb",
        SGL,
    );
    assert_eq!(c.outcome("sglang-cuda-graph-max-bs-decode").0, "applied");
    // An undated custom tag: cannot tell, so reported and not edited.
    let c = bump(
        "lmsysorg/sglang:v0.5.19-cu130",
        "lmsysorg/sglang:deepseek-v4-blackwell",
        "sglang",
        "b200-nb",
        SGL,
    );
    let (st, msg) = c.outcome("sglang-cuda-graph-max-bs-decode");
    assert_eq!(st, "not-applied");
    assert!(
        msg.starts_with(
            "cannot tell whether `lmsysorg/sglang:deepseek-v4-blackwell` is in sglang ≥ v0.5.20"
        ),
        "{msg}"
    );
    assert!(c.new_recipe().is_none());
}

#[test]
fn row2_symm_mem_prefill_graph_is_advice_when_symm_mem_is_used() {
    let r = "python3 -m sglang.launch_server --enable-symm-mem --tp 8\n";
    let c = bump(
        "lmsysorg/sglang:v0.5.14-cu130",
        "lmsysorg/sglang:v0.5.20-cu130",
        "sglang",
        "b200-nb",
        r,
    );
    let (st, msg) = c.outcome("sglang-disable-prefill-cuda-graph");
    assert_eq!(st, "advice");
    assert!(
        msg.starts_with("consider adding `--disable-prefill-cuda-graph`"),
        "{msg}"
    );
    assert!(c.new_recipe().is_none());
    let c = bump(
        "lmsysorg/sglang:v0.5.14-cu130",
        "lmsysorg/sglang:v0.5.20-cu130",
        "sglang",
        "b200-nb",
        "python3 -m sglang.launch_server --tp 8\n",
    );
    assert!(c.no_outcomes());
}

#[test]
fn rows3_4_sglang_v055_replacements() {
    let r = "python3 -m sglang.launch_server \\\n  --enable-ep-moe \\\n  --enable-flashinfer-trtllm-moe \\\n  --tp 8\n";
    let c = bump(
        "lmsysorg/sglang:v0.5.4-cu129",
        "lmsysorg/sglang:v0.5.5-cu129",
        "sglang",
        "b200-nb",
        r,
    );
    assert_eq!(
        c.new_recipe().unwrap(),
        "python3 -m sglang.launch_server \\\n  --ep-size $EP_SIZE \\\n  --moe-runner-backend flashinfer_trtllm \\\n  --tp 8\n"
    );
    assert_eq!(c.outcome("sglang-enable-ep-moe").0, "applied");
    assert_eq!(
        c.outcome("sglang-enable-flashinfer-trtllm-moe").0,
        "applied"
    );
}

#[test]
fn row5_deepgemm_only_on_b300() {
    let r = "python3 -m sglang.launch_server --tp 8\n";
    let c = bump(
        "lmsysorg/sglang:v0.5.11-cu130",
        "lmsysorg/sglang:v0.5.12-cu130",
        "sglang",
        "b300-nv",
        r,
    );
    assert_eq!(c.outcome("sglang-b300-deepgemm-cutlass").0, "advice");
    let c = bump(
        "lmsysorg/sglang:v0.5.11-cu130",
        "lmsysorg/sglang:v0.5.12-cu130",
        "sglang",
        "b200-nb",
        r,
    );
    assert!(c.no_outcomes());
}

const VLLM: &str = "vllm serve $MODEL \\\n  --tensor-parallel-size $TP \\\n  --gpu-memory-utilization 0.95 \\\n  --async-scheduling \\\n  --max-seq-len-to-capture 8192\nwait_for_server_ready\n";

#[test]
fn row6_vllm_011_piecewise_is_advice() {
    let c = bump(
        "vllm/vllm-openai:v0.10.2",
        "vllm/vllm-openai:v0.11.0",
        "vllm",
        "h200-cw",
        VLLM,
    );
    assert_eq!(c.outcome("vllm-0.11-cudagraph-piecewise").0, "advice");
    assert!(c.new_recipe().is_none());
}

#[test]
fn row7_vllm_014_removals_fix_the_continuation() {
    let c = bump(
        "vllm/vllm-openai:v0.13.0",
        "vllm/vllm-openai:v0.14.0",
        "vllm",
        "h200-cw",
        VLLM,
    );
    assert_eq!(
        c.new_recipe().unwrap(),
        "vllm serve $MODEL \\\n  --tensor-parallel-size $TP \\\n  --gpu-memory-utilization 0.95\nwait_for_server_ready\n"
    );
    assert_eq!(c.outcome("vllm-0.14-async-scheduling").0, "applied");
    assert_eq!(c.outcome("vllm-0.14-max-seq-len-to-capture").0, "applied");
}

#[test]
fn row8_vllm_gpu_memory_utilization_is_advice_not_edit() {
    let c = bump(
        "vllm/vllm-openai:v0.20.1",
        "vllm/vllm-openai:v0.21.0",
        "vllm",
        "h200-cw",
        VLLM,
    );
    let (st, msg) = c.outcome("vllm-0.20.2-gpu-memory-utilization");
    assert_eq!(st, "advice");
    assert!(
        msg.starts_with(
            "consider changing `--gpu-memory-utilization 0.95` → `--gpu-memory-utilization 0.90`"
        ),
        "{msg}"
    );
    // 0.14 removals are already behind both images: not part of this crossing? They are still
    // covered (old ≥ 0.14) and present, so they are applied and said to be already required.
    let (st, msg) = c.outcome("vllm-0.14-async-scheduling");
    assert_eq!(st, "applied");
    assert!(
        msg.ends_with("(already required by the old image)"),
        "{msg}"
    );
}

#[test]
fn rows9_10_vllm_rocm() {
    let r = "export VLLM_ROCM_USE_AITER_UNIFIED_ATTENTION=1\nexport VLLM_ROCM_USE_AITER_MHA=0\nexport VLLM_MORIIO_CONNECTOR_READ_MODE=1\nvllm serve $MODEL --all2all-backend mori --tp 8\n";
    let c = bump(
        "vllm/vllm-openai-rocm:v0.16.0",
        "vllm/vllm-openai-rocm:v0.17.0",
        "vllm",
        "mi355x-amds",
        r,
    );
    assert_eq!(
        c.outcome("vllm-rocm-0.17-aiter-unified-attention").0,
        "advice"
    );
    assert_eq!(c.outcome("vllm-rocm-0.17-aiter-mha").0, "advice");
    assert!(c.new_recipe().is_none());
    let c = bump(
        "vllm/vllm-openai-rocm:v0.23.0",
        "vllm/vllm-openai-rocm:v0.24.0",
        "vllm",
        "mi355x-amds",
        r,
    );
    assert_eq!(c.outcome("vllm-rocm-0.24-mori-low-latency").0, "applied");
    assert_eq!(c.outcome("vllm-rocm-0.24-moriio-read-mode").0, "advice");
    assert_eq!(
        c.new_recipe().unwrap(),
        r.replace(
            "--all2all-backend mori ",
            "--all2all-backend mori_low_latency "
        )
    );
    // CUDA images never get ROCm rules.
    let c = bump(
        "vllm/vllm-openai:v0.23.0",
        "vllm/vllm-openai:v0.24.0",
        "vllm",
        "h200-cw",
        r,
    );
    assert!(c.plan.record.recipes[0]
        .outcomes
        .iter()
        .all(|o| !o.rule.starts_with("vllm-rocm")));
}

#[test]
fn row11_flashinfer_allreduce_env_on_dated_nightlies() {
    let r = "export VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm\nvllm serve $MODEL\n";
    let c = bump(
        "vllm/vllm-openai:v0.23.0",
        "vllm/vllm-openai:nightly-dev-x86_64-cu13-20260715-1a2b3c4",
        "vllm",
        "h200-cw",
        r,
    );
    let (st, msg) = c.outcome("vllm-flashinfer-allreduce-backend");
    assert_eq!(st, "advice");
    assert!(
        msg.starts_with("remove `VLLM_FLASHINFER_ALLREDUCE_BACKEND`"),
        "{msg}"
    );
}

#[test]
fn row12_atom_env_replacement_is_advice() {
    let r = "export AITER_QUICK_REDUCE_CAST_BF16_TO_FP16=0\nATOM_M3_SPARSE_USE_ASM_PA=1 python3 -m atom.entrypoints.openai_server\n";
    let c = bump(
        "rocm/atom:rocm7.2.0_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260801",
        "rocm/atom:rocm7.2.1_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260901",
        "atom",
        "mi355x-amds",
        r,
    );
    assert_eq!(c.outcome("atom-force-attn-triton-quick-reduce").0, "advice");
    assert_eq!(c.outcome("atom-force-attn-triton-asm-pa").0, "advice");
}

#[test]
fn shared_recipe_is_reported_not_edited() {
    let entries = format!(
        "{}{}",
        entry(
            "mp-fp8-b200-sglang",
            "lmsysorg/sglang:v0.5.19-cu130",
            "sglang",
            "b200-nb"
        ),
        entry(
            "mp-fp8-b200-sglang-hicache",
            "lmsysorg/sglang:v0.5.19-cu130",
            "sglang",
            "b200-dgxc"
        )
    );
    let c = bump_with(
        &entries,
        "mp-fp8-b200-sglang",
        "lmsysorg/sglang:v0.5.20-cu130",
        "sglang",
        "b200",
        SGL,
    );
    let r = &c.plan.record.recipes[0];
    assert_eq!(
        r.shared_with,
        vec!["mp-fp8-b200-sglang-hicache".to_string()]
    );
    assert!(r.change.is_none());
    let (st, msg) = c.outcome("sglang-cuda-graph-max-bs-decode");
    assert_eq!(st, "not-applied");
    assert!(
        msg.starts_with("shared recipe (also used by mp-fp8-b200-sglang-hicache): not edited"),
        "{msg}"
    );
    assert!(
        c.plan
            .record
            .change_line
            .contains("is shared (mp-fp8-b200-sglang-hicache): not edited."),
        "{}",
        c.plan.record.change_line
    );
    // The catalog line still changes (only the image).
    let (m, p) = c.plan.catalog.as_ref().unwrap().changed_lines();
    assert_eq!((m.len(), p.len()), (1, 1));
    assert!(std::fs::read_to_string(&c.recipe).unwrap() == SGL);
}

#[test]
fn real_master_config_changes_exactly_one_line() {
    // The InferenceX NVIDIA master file: comments, flow maps, quoted images everywhere.
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/inferencex/nvidia-master.yaml"
    );
    let text = std::fs::read_to_string(src).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("nvidia-master.yaml");
    std::fs::write(&f, &text).unwrap();
    let cat = servebench_catalog::Catalog::load(&[f.display().to_string()]).unwrap();
    let mut checked = 0;
    for (key, e) in cat.entries.iter().step_by(7) {
        let new = if e.image.contains('#') {
            "nvcr.io#nvidia/x/y:2.0".to_string()
        } else {
            "lmsysorg/sglang:v0.5.99-cu130".to_string()
        };
        let p = plan(&BumpOptions {
            key: key.clone(),
            image: new.clone(),
            catalogs: vec![f.clone()],
            recipes_dir: None,
            changelog: None,
            resolve: Resolve::Off,
            pr_link: "XXX".into(),
            pin_digest: false,
            rules: None,
        })
        .unwrap();
        let c = p.catalog.as_ref().unwrap();
        let (m, pl) = c.changed_lines();
        assert_eq!(m.len(), 1, "{key}: {}", c.diff);
        assert_eq!(pl.len(), 1, "{key}");
        assert!(
            m[0].contains(&e.image) && pl[0].contains(&new),
            "{key}: {m:?} {pl:?}"
        );
        assert_eq!(c.new.lines().count(), text.lines().count());
        checked += 1;
    }
    assert!(checked > 20);
}
