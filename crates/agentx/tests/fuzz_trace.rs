//! Fuzzing the agentic trace loader (issue 12, item 5): byte mutations of the real traces in
//! `shared/data/agentx-traces` (the files under 200 KB, so one execution stays fast). Bounded
//! run in CI (`FUZZ_SECONDS`, default 2 s); the long run's figures are in docs/reliability.md.
//!
//! Invariants besides "no panic": an error is one line naming where (`origin`) and what; an
//! accepted trace can be walked (subagent count).

#[path = "../../triage/tests/fuzz_support/mutate.rs"]
mod mutate;

use servebench_agentx::trace::parse_trace;

fn seeds() -> Vec<Vec<u8>> {
    let dir = mutate::shared_dir(env!("CARGO_MANIFEST_DIR")).join("data/agentx-traces");
    let mut seeds = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    for p in entries {
        let b = std::fs::read(&p).unwrap();
        if b.len() <= 200 * 1024 {
            seeds.push(b);
        }
    }
    seeds
}

#[test]
fn fuzz_trace_loader() {
    let dict: &[&[u8]] = &[
        b"\"requests\":",
        b"\"in\":",
        b"\"out\":",
        b"\"id\":",
        b"\"subagent\"",
        b"null",
        b"-1",
        b"1e400",
        b"18446744073709551616",
        b"[]",
        b"{}",
        b"\"\\ud800\"",
        b",",
        b":",
    ];
    mutate::fuzz("agentx_trace", &seeds(), dict, 256 * 1024, |input| {
        let text = String::from_utf8_lossy(input);
        match parse_trace(&text, "t.json") {
            Ok(t) => {
                let _ = t.subagent_count();
                "ok".into()
            }
            Err(e) => {
                let s = e.to_string();
                assert!(s.contains("t.json") && !s.contains('\n'), "{s:?}");
                let w = e
                    .what
                    .split(|c: char| c == ':' || c == '`')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                format!("err:{w}")
            }
        }
    });
}
