//! Issue 32: every multinode config of the real InferenceX repository
//! (`shared/data/inferencex/repo-843c6254f.tar.gz`, unmodified) plans a Slurm job, and its node
//! count is the one the config's prefill/decode shape gives. The expected counts are derived
//! here from the raw YAML (no matrix expansion, no planner code): per search-space entry, each
//! side's `PREFILL_NODES` / `DECODE_NODES` launcher setting, else
//! `ceil(num-worker × tp × pp × pcp-size / gpus-per-node)` with the runner's `runners.yaml`
//! `gpus-per-node`, else the launchers' 4 for GB200/GB300 NVL72 trays and 8 otherwise. Where a
//! config's srt-slurm recipe is in the checkout, the plan must read the recipe's own
//! `resources:` node counts, compared with a second independent read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use servebench_catalog::{Catalog, Runners};
use servebench_runner::multinode_plan::job_plan;
use servebench_runner::{build_plan, EvalSelection, PlanOptions};

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    servebench_catalog::yaml::parse(&text)
        .and_then(|n| n.into_json())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn extract() -> Option<(tempfile::TempDir, PathBuf)> {
    let tarball = servebench_testkit::shared_path(
        env!("CARGO_MANIFEST_DIR"),
        "data/inferencex/repo-843c6254f.tar.gz",
    )?;
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "tar xzf {}", tarball.display());
    let ix = dir.path().join("InferenceX");
    Some((dir, ix))
}

/// (prefill num-worker, tp, pp, pcp, decode num-worker, tp, pp, pcp, CONFIG_FILE or "").
type Shape = (u64, u64, u64, u64, u64, u64, u64, u64, String);

fn int(w: &Value, k: &str, default: u64) -> u64 {
    w.get(k).and_then(Value::as_u64).unwrap_or(default)
}

/// Per multinode config: its search-space shapes → expected worker nodes (independent).
fn expected(ix: &Path) -> BTreeMap<String, BTreeMap<Shape, u64>> {
    let runners = yaml(&ix.join("configs/runners.yaml"));
    let mut out = BTreeMap::new();
    for file in ["configs/nvidia-master.yaml", "configs/amd-master.yaml"] {
        let doc = yaml(&ix.join(file));
        for (key, cfg) in doc.as_object().unwrap() {
            if cfg.get("multinode").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            let runner = cfg["runner"].as_str().unwrap();
            let gpn = runners["hardware"]
                .get(runner)
                .and_then(|h| h.get("gpus-per-node"))
                .and_then(Value::as_u64)
                .unwrap_or(if runner.contains("gb200") || runner.contains("gb300") {
                    4
                } else {
                    8
                });
            let mut shapes = BTreeMap::new();
            for entries in cfg["scenarios"].as_object().unwrap().values() {
                for e in entries.as_array().unwrap() {
                    for ss in e["search-space"].as_array().unwrap() {
                        let mut settings = BTreeMap::new();
                        for side in ["prefill", "decode"] {
                            for s in ss[side]
                                .get("additional-settings")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                            {
                                let (k, v) = s.as_str().unwrap().split_once('=').unwrap();
                                settings.entry(k.to_string()).or_insert(v.to_string());
                            }
                        }
                        let (p, d) = (&ss["prefill"], &ss["decode"]);
                        let nodes = |w: &Value, var: &str| -> u64 {
                            match settings.get(var) {
                                Some(v) => v.parse().unwrap(),
                                None => (int(w, "num-worker", 0)
                                    * int(w, "tp", 1)
                                    * int(w, "pp", 1)
                                    * int(w, "pcp-size", 1))
                                .div_ceil(gpn),
                            }
                        };
                        let shape: Shape = (
                            int(p, "num-worker", 0),
                            int(p, "tp", 1),
                            int(p, "pp", 1),
                            int(p, "pcp-size", 1),
                            int(d, "num-worker", 0),
                            int(d, "tp", 1),
                            int(d, "pp", 1),
                            int(d, "pcp-size", 1),
                            settings.get("CONFIG_FILE").cloned().unwrap_or_default(),
                        );
                        let n = nodes(p, "PREFILL_NODES") + nodes(d, "DECODE_NODES");
                        let prev = shapes.insert(shape.clone(), n);
                        assert!(prev.is_none() || prev == Some(n), "{key}: {shape:?}");
                    }
                }
            }
            out.insert(key.clone(), shapes);
        }
    }
    out
}

/// Worker nodes of visible recipes, read here by PyYAML (the parser InferenceX and srt-slurm
/// use; the recipes hold anchors and merge keys): `resources.prefill_nodes + decode_nodes`, or
/// `agg_nodes`; `None` without a top-level `resources:`. Empty when python3 with PyYAML is
/// missing (said on stderr; the shape check does not need it).
fn recipe_nodes(paths: &[PathBuf]) -> BTreeMap<PathBuf, Option<u64>> {
    let prog = "import sys, json, yaml\nout = {}\nfor p in sys.argv[1:]:\n    r = (yaml.safe_load(open(p)) or {}).get('resources')\n    if not isinstance(r, dict):\n        out[p] = None\n    else:\n        n = (r.get('prefill_nodes') or 0) + (r.get('decode_nodes') or 0)\n        out[p] = n if n > 0 else (r.get('agg_nodes') or 1)\nprint(json.dumps(out))\n";
    let Some(py) = servebench_testkit::python3() else {
        return BTreeMap::new();
    };
    let out = std::process::Command::new(py)
        .arg("-c")
        .arg(prog)
        .args(paths)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "recipe resources not cross-checked: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return BTreeMap::new();
    }
    let v: BTreeMap<String, Option<u64>> = serde_json::from_slice(&out.stdout).unwrap();
    v.into_iter().map(|(k, n)| (PathBuf::from(k), n)).collect()
}

#[test]
fn every_multinode_config_of_the_real_repository_plans_its_shapes_node_count() {
    let Some((_dir, ix)) = extract() else { return };
    let want = expected(&ix);
    assert_eq!(want.len(), 94, "multinode configs in the repository");
    let files: Vec<String> = ["nvidia-master.yaml", "amd-master.yaml"]
        .iter()
        .map(|f| ix.join("configs").join(f).display().to_string())
        .collect();
    let catalog = Catalog::load(&files).unwrap();
    let runners = Runners::load(&ix.join("configs/runners.yaml").display().to_string()).unwrap();
    let (mut points, mut visible) = (0, 0);
    let mut recipes = Vec::new();
    let mut skus = std::collections::BTreeSet::new();
    for (key, shapes) in &want {
        let plan = build_plan(
            &catalog,
            &runners,
            &PlanOptions {
                keys: vec![key.clone()],
                evals: EvalSelection::None,
                checkout: Some(ix.clone()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{key}: {e}"));
        let mut covered = std::collections::BTreeSet::new();
        for p in &plan {
            let d = p
                .disagg
                .as_deref()
                .unwrap_or_else(|| panic!("{key}: {} has no shape", p.id));
            let shape: Shape = (
                d.prefill.num_worker.into(),
                d.prefill.tp.into(),
                d.prefill.pp.into(),
                d.prefill.pcp.into(),
                d.decode.num_worker.into(),
                d.decode.tp.into(),
                d.decode.pp.into(),
                d.decode.pcp.into(),
                d.config_file().unwrap_or("").to_string(),
            );
            let n = *shapes.get(&shape).unwrap_or_else(|| {
                panic!("{key}: {} has a shape not in the YAML: {shape:?}", p.id)
            });
            let job = job_plan(p, d).unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(
                u64::from(job.layout.total_nodes()),
                n,
                "{key}: {} ({})",
                p.id,
                d.tag()
            );
            assert_eq!(
                job.layout.nodes.len() as u64,
                n,
                "{key}: one role list per node"
            );
            assert!(job.layout.nodes.iter().flatten().count() >= 1);
            if let Some(path) = &p.multinode_recipe {
                visible += 1;
                assert!(path.is_file());
                if d.config_file().is_some() {
                    recipes.push((
                        key.clone(),
                        path.clone(),
                        job.recipe.as_ref().map(|r| u64::from(r.worker_nodes())),
                        n,
                    ));
                    if let Some(r) = &job.recipe {
                        assert!(job.sbatch_nodes >= r.worker_nodes());
                    }
                }
            } else {
                assert_eq!(job.sbatch_nodes, job.layout.total_nodes());
            }
            skus.insert(servebench_runner::recipe::sku(&p.runner));
            covered.insert(shape);
            points += 1;
        }
        assert_eq!(
            covered.len(),
            shapes.len(),
            "{key}: every search-space shape is planned"
        );
    }
    let paths: Vec<PathBuf> = recipes.iter().map(|r| r.1.clone()).collect();
    let theirs = recipe_nodes(&paths);
    let (mut with_resources, mut recipe_differs) = (0, 0);
    if !theirs.is_empty() {
        for (key, path, ours, shape_nodes) in &recipes {
            let t = theirs[path];
            assert_eq!(*ours, t, "{key}: {}", path.display());
            if let Some(t) = t {
                with_resources += 1;
                recipe_differs += usize::from(t != *shape_nodes);
            }
        }
        assert!(with_resources > 100, "{with_resources}");
    }
    eprintln!(
        "94 multinode configs: {points} points; recipe visible for {visible}, {with_resources} with resources ({recipe_differs} differ from the shape); SKUs {skus:?}"
    );
    assert!(visible > 100, "{visible}");
    assert!(skus.contains("gb200") && skus.contains("gb300") && skus.contains("mi355x"));
}
