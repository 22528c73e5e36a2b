//! Shared helpers for the catalog integration tests.
#![allow(dead_code)]

use servebench_catalog::matrix::{
    seq_len_from_str, Common, FullSweep, Mode, ScenarioType, TestConfig,
};

/// `../shared/data/inferencex` from the crate directory.
pub const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex"
);

/// Maps the reference's `configs/X.yaml` path to the shared data file.
pub fn data_path(p: &str) -> String {
    format!("{DATA}/{}", p.strip_prefix("configs/").unwrap_or(p))
}

/// Parsed generator argv (argparse `nargs='+'` semantics) for library-level parity tests.
pub struct Parsed {
    pub mode: Mode,
    pub common: Common,
    pub config_files: Vec<String>,
    pub runner_config: String,
    pub full: Option<FullSweep>,
}

/// Parses `generate_sweep_configs.py` argv the way its argparse parser does.
pub fn parse_argv(argv: &[String]) -> Parsed {
    let sub = argv[0].as_str();
    let mut i = 1;
    let mut opts: Vec<(String, Vec<String>)> = Vec::new();
    while i < argv.len() {
        let flag = argv[i].clone();
        assert!(flag.starts_with("--"), "unexpected positional {flag}");
        i += 1;
        let mut vals = Vec::new();
        while i < argv.len() && !argv[i].starts_with("--") {
            vals.push(argv[i].clone());
            i += 1;
        }
        opts.push((flag, vals));
    }
    let get = |f: &str| opts.iter().find(|(k, _)| k == f).map(|(_, v)| v.clone());
    let int = |f: &str| get(f).map(|v| v[0].parse::<i64>().unwrap());
    let seq = |f: &str| {
        get(f).map(|v| {
            v.iter()
                .map(|s| seq_len_from_str(s).unwrap())
                .collect::<Vec<_>>()
        })
    };
    let common = Common {
        no_evals: get("--no-evals").is_some(),
        evals_only: get("--evals-only").is_some(),
        all_evals: get("--all-evals").is_some(),
        runner_node_filter: get("--runner-node-filter").map(|v| v[0].clone()),
        scenario_type: get("--scenario-type")
            .map(|v| v.iter().map(|s| ScenarioType::parse(s).unwrap()).collect()),
    };
    let config_files = get("--config-files")
        .unwrap()
        .iter()
        .map(|p| data_path(p))
        .collect();
    let runner_config = data_path(
        &get("--runner-config")
            .map(|v| v[0].clone())
            .unwrap_or("configs/runners.yaml".into()),
    );
    let (mode, full) = if sub == "full-sweep" {
        let mut single = get("--single-node").is_some();
        let mut multi = get("--multi-node").is_some();
        if !single && !multi {
            single = true;
            multi = true;
        }
        let fs = FullSweep {
            model_prefix: get("--model-prefix"),
            precision: get("--precision"),
            framework: get("--framework"),
            runner_type: get("--runner-type"),
            seq_lens: seq("--seq-lens"),
            step_size: int("--step-size").unwrap_or(2),
            min_conc: int("--min-conc"),
            max_conc: int("--max-conc"),
            max_tp: int("--max-tp"),
            max_ep: int("--max-ep"),
            single_node: single,
            multi_node: multi,
        };
        (Mode::FullSweep(fs.clone()), Some(fs))
    } else {
        let tc = TestConfig {
            config_keys: get("--config-keys").unwrap(),
            conc: get("--conc").map(|v| v.iter().map(|s| s.parse().unwrap()).collect()),
            seq_lens: seq("--seq-lens"),
        };
        (Mode::TestConfig(tc), None)
    };
    Parsed {
        mode,
        common,
        config_files,
        runner_config,
        full,
    }
}

/// All `*.args.json` cases of a golden folder, sorted.
pub fn cases(folder: &str) -> Vec<(String, serde_json::Value)> {
    let dir = format!("{DATA}/golden/{folder}");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".args.json") {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            out.push((stem.to_string(), v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
