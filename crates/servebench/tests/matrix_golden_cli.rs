//! `servebench matrix` with InferenceX's argv verbatim, against every golden generator output
//! (`shared/data/inferencex/golden/matrix/`): same stdout bytes, same exit status, same argparse
//! error line.

use std::path::Path;
use std::process::Command;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/inferencex"
);

/// A working directory with `configs/*.yaml` pointing at the shared data (the reference's layout).
fn repo_layout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("configs")).unwrap();
    for f in ["nvidia-master.yaml", "amd-master.yaml", "runners.yaml"] {
        std::fs::copy(Path::new(DATA).join(f), dir.path().join("configs").join(f)).unwrap();
    }
    dir
}

#[test]
fn generator_argv_verbatim_matches_every_golden_file() {
    let dir = repo_layout();
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(format!("{DATA}/golden/matrix"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".args.json") else {
            continue;
        };
        n += 1;
        let args: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let argv: Vec<&str> = args["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_servebench"))
            .arg("matrix")
            .args(&argv)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let code = args["exit_code"].as_i64().unwrap() as i32;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{stem}: stderr {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if code == 0 {
            let want = std::fs::read(format!(
                "{DATA}/golden/matrix/{}",
                args["stdout_file"].as_str().unwrap()
            ))
            .unwrap();
            assert!(
                out.stdout == want,
                "{stem}: stdout differs from the golden file"
            );
        } else {
            assert!(out.stdout.is_empty(), "{stem}: nothing on stdout");
            let want = std::fs::read_to_string(format!(
                "{DATA}/golden/matrix/{}",
                args["stderr_file"].as_str().unwrap()
            ))
            .unwrap();
            let got = String::from_utf8_lossy(&out.stderr)
                .replace("servebench matrix", "generate_sweep_configs.py");
            assert_eq!(got, want, "{stem}");
        }
    }
    assert_eq!(n, 13);
}

#[test]
fn argument_errors_exit_2() {
    let dir = repo_layout();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_servebench"))
            .args([
                "matrix",
                "full-sweep",
                "--config-files",
                "configs/nvidia-master.yaml",
            ])
            .args(extra)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let out = run(&["--step-size", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .ends_with("servebench matrix: error: --step-size must be greater than 1\n"));
    let out = run(&["--no-evals", "--all-evals"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .ends_with("servebench matrix: error: --all-evals cannot be combined with --no-evals\n"));
    let out = run(&["--seq-lens", "1k8k"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "1k8k is not a choice at this commit"
    );
    // A generation error (not an argument error) exits 1 with the reference's message.
    let out = run(&["--runner-type", "b999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("Invalid runner type(s): {'b999'}. Valid runner types are: b200,"));
}
