//! Parity with InferenceX's change-log processor on every golden case in
//! `shared/data/inferencex/golden/changelog/` (stdout byte for byte; errors by message).

use crate::common;

use common::{cases, DATA};
use servebench_catalog::changelog::{process, ProcessOptions};
use servebench_catalog::{Catalog, Runners};

fn head_for(args: &serde_json::Value, base: &str) -> String {
    if let Some(app) = args.get("head_appends").and_then(|v| v.as_str()) {
        let add = std::fs::read_to_string(format!("{DATA}/golden/changelog/{app}")).unwrap();
        return format!("{base}{add}");
    }
    // CE: base with line 5 deleted, then the C1 additions appended (see CE-head.diff).
    let add =
        std::fs::read_to_string(format!("{DATA}/golden/changelog/C1-head-additions.yaml")).unwrap();
    let lines: Vec<&str> = base.split_inclusive('\n').collect();
    assert_eq!(
        lines[4],
        "    - \"6-7% uplift for llama for 6/8 configs\"\n"
    );
    let mut head: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 4)
        .map(|(_, l)| *l)
        .collect();
    head.push_str(&add);
    head
}

#[test]
fn every_golden_changelog_case_matches() {
    let base = std::fs::read_to_string(format!("{DATA}/perf-changelog.yaml")).unwrap();
    // process_changelog.py loads configs/amd-master.yaml + configs/nvidia-master.yaml (amd first).
    let catalog = Catalog::load(&[
        format!("{DATA}/amd-master.yaml"),
        format!("{DATA}/nvidia-master.yaml"),
    ])
    .unwrap();
    let runners = Runners::load(&format!("{DATA}/runners.yaml")).unwrap();
    let all = cases("changelog");
    assert_eq!(all.len(), 5);
    let mut failures = Vec::new();
    for (name, args) in &all {
        let argv: Vec<String> = args["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let flag = |f: &str| argv.iter().any(|a| a == f);
        let val = |f: &str| argv[argv.iter().position(|a| a == f).unwrap() + 1].clone();
        let opts = ProcessOptions {
            trim_conc: flag("--trim-conc"),
            all_evals: flag("--all-evals"),
            evals_only: flag("--evals-only"),
        };
        let head = head_for(args, &base);
        let result = process(
            &base,
            &head,
            &val("--changelog-file"),
            &val("--base-ref"),
            &val("--head-ref"),
            &opts,
            &catalog,
            &runners,
        );
        if args["exit_code"].as_i64().unwrap() != 0 {
            let want = std::fs::read_to_string(format!(
                "{DATA}/golden/changelog/{}",
                args["error_last_line_file"].as_str().unwrap()
            ))
            .unwrap();
            let want = want
                .trim_end_matches('\n')
                .strip_prefix("ValueError: ")
                .unwrap()
                .to_string();
            match result {
                Ok(_) => failures.push(format!("{name}: expected an error")),
                Err(e) => {
                    if e.to_string() != want {
                        failures.push(format!("{name}: error\n got: {e}\nwant: {want}"));
                    }
                }
            }
            continue;
        }
        let got = result.unwrap().to_json_text().unwrap();
        let want = std::fs::read_to_string(format!(
            "{DATA}/golden/changelog/{}",
            args["stdout_file"].as_str().unwrap()
        ))
        .unwrap();
        if got != want {
            let pos = got
                .bytes()
                .zip(want.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            let lo = pos.saturating_sub(300);
            failures.push(format!(
                "{name}: differs at byte {pos} (len got {} want {})\n got: …{}\nwant: …{}",
                got.len(),
                want.len(),
                &got[lo..(pos + 200).min(got.len())],
                &want[lo..(pos + 200).min(want.len())]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
