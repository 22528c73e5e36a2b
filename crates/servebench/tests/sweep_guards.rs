//! Guards of `servebench sweep`/`bench` found by a new-user trial: an `--out` directory that
//! already holds results is refused (unless `--overwrite`), runs that fail before measuring
//! leave no empty output directory, and bad flags are refused in one line naming the flag
//! before the simulator or any I/O starts.

use crate::common;
use common::{err_lines, output_in, stderr};

/// A tiny simulator sweep (one point, 2 prompts of 16 → 4 tokens).
const TINY: &[&str] = &[
    "sweep",
    "--conc",
    "1",
    "--num-prompts",
    "2",
    "--warmups",
    "0",
    "--isl",
    "16",
    "--osl",
    "4",
    "--sim-speedup",
    "20",
    "--db",
    "s.db",
];

fn tiny(extra: &[&str]) -> Vec<String> {
    TINY.iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
}

#[test]
fn out_dir_with_results_is_refused_unless_overwrite() {
    let d = tempfile::tempdir().unwrap();
    let first = output_in(d.path(), &tiny(&["--out", "intr"]));
    assert!(first.status.success(), "{}", stderr(&first));
    let records = d.path().join("intr/conc1/records.jsonl");
    let before = std::fs::read(&records).unwrap();

    // the second run into the same directory is refused in one line naming it
    let second = output_in(d.path(), &tiny(&["--out", "intr"]));
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    let lines = err_lines(&second);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].contains("intr") && lines[0].contains("--overwrite"),
        "{lines:?}"
    );
    assert_eq!(std::fs::read(&records).unwrap(), before, "files untouched");
    // and nothing was recorded in the store for it
    let store = servebench_store::Store::open(d.path().join("s.db")).unwrap();
    assert_eq!(store.list_runs(None, None).unwrap().len(), 1);
    drop(store);

    // a directory holding only point records (no summary.json) is refused too
    std::fs::create_dir_all(d.path().join("pts/conc4")).unwrap();
    std::fs::write(d.path().join("pts/conc4/records.jsonl"), "{}\n").unwrap();
    let o = output_in(d.path(), &tiny(&["--out", "pts"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("pts"), "{}", stderr(&o));

    // --overwrite replaces them, and says so
    let third = output_in(d.path(), &tiny(&["--out", "intr", "--overwrite"]));
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(
        stderr(&third).contains("--overwrite") && stderr(&third).contains("intr"),
        "{}",
        stderr(&third)
    );

    // an existing but empty directory is fine
    std::fs::create_dir_all(d.path().join("empty")).unwrap();
    let o = output_in(d.path(), &tiny(&["--out", "empty"]));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn failing_before_the_first_point_leaves_no_empty_output_directory() {
    let d = tempfile::tempdir().unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    // default (timestamped) directory
    let o = output_in(
        d.path(),
        &[
            "bench",
            "--endpoint",
            &url,
            "--ready-timeout",
            "0.5",
            "--no-store",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        !d.path().join("servebench-out").exists(),
        "left behind: {:?}",
        std::fs::read_dir(d.path().join("servebench-out"))
            .map(|r| r.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
    // a named --out that did not exist before
    let o = output_in(
        d.path(),
        &[
            "bench",
            "--endpoint",
            &url,
            "--ready-timeout",
            "0.5",
            "--no-store",
            "--out",
            "named",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!d.path().join("named").exists());
    // a named --out that existed before is kept
    std::fs::create_dir_all(d.path().join("mine")).unwrap();
    let o = output_in(
        d.path(),
        &[
            "bench",
            "--endpoint",
            &url,
            "--ready-timeout",
            "0.5",
            "--no-store",
            "--out",
            "mine",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(d.path().join("mine").is_dir());
}

#[test]
fn unreachable_https_endpoint_is_one_line_naming_it() {
    // https is measured through the endpoint layer's TLS (tests/tls_endpoint.rs); nothing
    // listens here, so the readiness wait fails in one line naming the URL
    let d = tempfile::tempdir().unwrap();
    let o = output_in(
        d.path(),
        &[
            "bench",
            "--endpoint",
            "https://127.0.0.1:9",
            "--no-store",
            "--ready-timeout",
            "0",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let lines = err_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("https://127.0.0.1:9") && lines[0].contains("not ready"),
        "{lines:?}"
    );
}

#[test]
fn bad_flags_are_one_line_naming_the_flag_before_any_io() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["sweep", "--num-prompts", "0"], "--num-prompts"),
        (&["sweep", "--isl", "0"], "--isl"),
        (&["sweep", "--osl", "0"], "--osl"),
        (&["sweep", "--range-ratio", "0"], "--range-ratio"),
        (&["sweep", "--range-ratio", "1.5"], "--range-ratio"),
        (&["sweep", "--range-ratio", "-1"], "--range-ratio"),
        (&["sweep", "--conc", "0"], "--conc"),
        (&["sweep", "--conc", "1,0"], "--conc"),
        (&["sweep", "--burstiness", "2"], "--request-rate"),
        (
            &["sweep", "--request-rate", "2", "--burstiness", "0"],
            "--burstiness",
        ),
        (
            &["sweep", "--request-rate", "2", "--burstiness", "-1"],
            "--burstiness",
        ),
        (&["sweep", "--gpus", "0"], "--gpus"),
        (
            &["sweep", "--gpus", "0", "--endpoint", "http://127.0.0.1:9"],
            "--gpus",
        ),
        (&["bench", "--tp", "0"], "--tp"),
        (
            &["sweep", "--eval", "gsm8k", "--eval-limit", "0"],
            "--eval-limit",
        ),
        (
            &["sweep", "--eval", "gsm8k", "--eval-conc", "0"],
            "--eval-conc",
        ),
        (
            &["sweep", "--eval", "gsm8k", "--eval-thresholds", "nope.yaml"],
            "nope.yaml",
        ),
        (
            &["sweep", "--eval", "gsm8k", "--sim-answers", "gpt-9"],
            "--sim-answers",
        ),
        (&["sweep", "--sim-speedup", "-2"], "--sim-speedup"),
        // KV offload: a budget without a mode, dram without a budget
        (
            &["sweep", "--total-cpu-dram-gb", "100"],
            "--total-cpu-dram-gb needs --kv-offloading dram",
        ),
        (
            &["sweep", "--kv-offloading", "dram"],
            "--kv-offloading dram needs --total-cpu-dram-gb",
        ),
        // fixed-sequence flags with an AgentX replay (a new-user run found them silently
        // ignored): refused, naming each, whether agentx is asked for or implied by --traces
        (
            &["sweep", "--scenario", "agentx", "--isl", "512"],
            "--isl: fixed-sequence flag not used by --scenario agentx",
        ),
        (
            &[
                "bench",
                "--traces",
                "t",
                "--num-prompts",
                "5",
                "--seed",
                "3",
            ],
            "--num-prompts, --seed: fixed-sequence flags not used",
        ),
        (
            &[
                "sweep",
                "--scenario",
                "agentx",
                "--request-rate",
                "2",
                "--api",
                "chat",
            ],
            "--api, --request-rate: fixed-sequence flags",
        ),
        // ... and the counting modes it does not use (a new-user pass: accepted, then ignored)
        (
            &[
                "sweep",
                "--traces",
                "t",
                "--compat",
                "inferencex",
                "--itl",
                "per-token",
            ],
            "--compat, --itl: fixed-sequence flags not used",
        ),
        (
            &["sweep", "--scenario", "agentx", "--chat-template"],
            "--chat-template: fixed-sequence flag not used",
        ),
        // the AgentX window without AgentX
        (
            &["sweep", "--duration", "5"],
            "--duration 5: the AgentX profiling window",
        ),
        // a repeated concurrency overwrote its own point directory
        (
            &["sweep", "--conc", "1,2,1"],
            "--conc: 1 is given twice; to measure a concurrency again use --repeats N",
        ),
    ];
    for (args, flag) in cases {
        let mut a = args.to_vec();
        a.extend(["--db", "s.db"]);
        let o = output_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let lines = err_lines(&o);
        assert_eq!(lines.len(), 1, "{args:?}: one line: {lines:?}");
        assert!(lines[0].contains(flag), "{args:?}: {lines:?}");
        assert!(
            !d.path().join("s.db").exists() && !d.path().join("servebench-out").exists(),
            "{args:?}: refused before any I/O"
        );
    }
}

#[test]
fn help_states_the_default_prompt_count_truthfully() {
    let d = tempfile::tempdir().unwrap();
    let o = output_in(d.path(), &["sweep", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout).replace('\n', " ");
    assert!(help.contains("default 10 × concurrency"), "{help}");
    assert!(!help.contains("5 × without"), "{help}");
}

/// `--resume` into a directory with no sweep (a new-user pass: it warned "an older servebench
/// wrote it", measured, and wrote no flags file, so a second --resume with other flags was
/// accepted and mislabelled the points): said plainly, measured, flags recorded and checked.
#[test]
fn resume_into_an_empty_directory_starts_the_sweep_and_records_its_flags() {
    let d = tempfile::tempdir().unwrap();
    let o = output_in(d.path(), &tiny(&["--resume", "--out", "fresh"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--resume: fresh holds no sweep yet: measuring every point"),
        "{err}"
    );
    assert!(!err.contains("older servebench"), "{err}");
    assert!(d.path().join("fresh/sweep-flags.json").exists());
    assert!(d.path().join("fresh/conc1/point.json").exists());
    // the flags are now checked
    let o = output_in(
        d.path(),
        &tiny(&["--resume", "--out", "fresh", "--seed", "7"]),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--seed 0 → 7"), "{}", stderr(&o));
}
