//! Parity with InferenceX's sweep generator on every golden case in
//! `shared/data/inferencex/golden/matrix/` (stdout byte for byte; argument errors by message).

use crate::common;

use common::{cases, parse_argv, DATA};
use servebench_catalog::matrix::{check_args, generate, to_stdout};
use servebench_catalog::{Catalog, Runners};

#[test]
fn every_golden_matrix_case_matches_byte_for_byte() {
    let all = cases("matrix");
    assert!(
        all.len() == 13,
        "expected the golden matrix cases, found {}",
        all.len()
    );
    let mut failures = Vec::new();
    for (name, args) in &all {
        let argv: Vec<String> = args["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let p = parse_argv(&argv);
        let exit = args["exit_code"].as_i64().unwrap();
        if exit == 2 {
            let err = check_args(p.full.as_ref(), &p.common).expect_err(name);
            let want = std::fs::read_to_string(format!(
                "{DATA}/golden/matrix/{}",
                args["stderr_file"].as_str().unwrap()
            ))
            .unwrap();
            let want_line = want.lines().last().unwrap();
            assert_eq!(
                format!("generate_sweep_configs.py: error: {err}"),
                want_line,
                "{name}"
            );
            continue;
        }
        check_args(p.full.as_ref(), &p.common).unwrap();
        let catalog = Catalog::load(&p.config_files).unwrap();
        let runners = Runners::load(&p.runner_config).unwrap();
        let rows = generate(&p.mode, &p.common, &catalog, &runners).unwrap();
        let got = to_stdout(&rows);
        let want = std::fs::read_to_string(format!(
            "{DATA}/golden/matrix/{}",
            args["stdout_file"].as_str().unwrap()
        ))
        .unwrap();
        if got != want {
            let g: serde_json::Value = serde_json::from_str(&got).unwrap();
            let w: serde_json::Value = serde_json::from_str(&want).unwrap();
            let (ga, wa) = (g.as_array().unwrap(), w.as_array().unwrap());
            let first = ga.iter().zip(wa.iter()).position(|(a, b)| a != b);
            failures.push(format!(
                "{name}: rows got {} want {}; first differing row {:?}\n got: {}\nwant: {}",
                ga.len(),
                wa.len(),
                first,
                first.map(|i| ga[i].to_string()).unwrap_or_default(),
                first.map(|i| wa[i].to_string()).unwrap_or_default()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
