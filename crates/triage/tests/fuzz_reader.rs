//! Fuzzing the triage reader (issue 12, item 5): byte mutations of the real job logs in
//! `shared/` (the scenario logs, the triage cases) and of the published error lines of the
//! signature table. Bounded run in CI (`FUZZ_SECONDS`, default 2 s); the long run's figures
//! are in docs/reliability.md.
//!
//! Invariants besides "no panic": the first error lies inside the log; reading through a tiny
//! buffer gives the same result as reading from memory (the scanner does not depend on how
//! the bytes arrive); the report's first evidence line quotes the first error's `FILE:LINE`.

#[path = "fuzz_support/mutate.rs"]
mod mutate;

use std::io::BufReader;

use servebench_triage::{build_report, scan_reader, SignatureTable, TriageOptions};

fn seeds() -> Vec<Vec<u8>> {
    let shared = mutate::shared_dir(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = Vec::new();
    for f in [
        "data/scenario/logs/agentic-c1.log",
        "data/scenario/logs/eval-c16.log",
        "cases/README.md",
    ] {
        let p = shared.join(f);
        seeds.push(std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())));
    }
    // Each published error line as its own small log, after a job start.
    for s in SignatureTable::builtin().signatures() {
        if let Some(t) = &s.source_text {
            seeds.push(
                format!(
                    "Runner name: 'r'\n+ vllm serve /m\n{t}\nProcess completed with exit code 1.\n"
                )
                .into_bytes(),
            );
        }
    }
    seeds
}

#[test]
fn fuzz_triage_reader() {
    let table = SignatureTable::builtin();
    let dict: &[&[u8]] = &[
        b"Traceback (most recent call last):\n",
        b"  File \"/x/breakable_cudagraph.py\", line 1, in f\n",
        b"    assert sm_100 <= arch <= sm_110f\n",
        b"2026-09-21T01:15:04.933Z ",
        b"ERROR 04-30 10:20:36 [core.py:396] ",
        b"(EngineCore pid=1) ",
        b"[2026-09-21 01:15:07 TP0] ",
        b"##[error]",
        b"Runner name: 'x'\n",
        b"+ enroot import docker://a/b:c\n",
        b"Model loading took 1 GiB\n",
        b"Application startup complete.\n",
        b"  - MODEL_PATH\n",
    ];
    let mut small = 1usize;
    mutate::fuzz("triage_reader", &seeds(), dict, 64 * 1024, |input| {
        let whole = scan_reader(input, "f.log", table).unwrap();
        small = small % 13 + 1;
        // every fourth execution: the same bytes through a 1–13-byte buffer (slow, so not all)
        #[allow(clippy::manual_is_multiple_of)] // MSRV 1.85
        if small % 4 == 0 {
            let piecewise =
                scan_reader(BufReader::with_capacity(small, input), "f.log", table).unwrap();
            assert_eq!(whole, piecewise, "result depends on the read size {small}");
        }
        if let Some(fe) = &whole.first_error {
            assert!(fe.line_no >= 1 && fe.line_no <= whole.lines, "{fe:?}");
        }
        let r = build_report(vec![whole], table, &TriageOptions::default());
        let _ = r.render_text();
        match &r.first_error {
            Some(fe) => {
                assert!(
                    r.evidence[0].contains(&format!("f.log:{}", fe.line_no)),
                    "{:?}",
                    r.evidence
                );
                format!("{:?}:{}", fe.tier, r.category)
            }
            None => "none".into(),
        }
    });
}
