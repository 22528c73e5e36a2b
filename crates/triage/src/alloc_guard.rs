//! A counted regression guard for the scanner's cost per line (not a timed test): the number of
//! heap allocations while a log of noise is scanned. The scanner reuses one line buffer and
//! borrows every valid UTF-8 line; a change that allocates per line (a `String` per line, a
//! regex capture per prefix, a match set per line) shows up here as thousands of allocations.
//!
//! Counted per thread by `allocation_counter::measure` (the test harness runs tests in
//! parallel), the counting allocator of the `allocation-counter` crate.

/// Lines of the benchmark's noise mix (crates/triage/examples/triage_bench.rs), plus a
/// non-ASCII line and shell traces.
const NOISE: &[&str] = &[
    "INFO 09-21 01:15:07 [model_runner.py:1203] Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static.",
    "b200-n17:41233:41301 [3] NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/CUMEM/read",
    "Loading safetensors checkpoint shards:  42% Completed | 21/50 [00:31<00:43,  1.49s/it]",
    "+ echo 'waiting for server'",
    "[2026-09-21 01:15:09 TP0] Decode batch. #running-req: 16, #token: 48211, token usage: 0.31, cuda graph: True, gen throughput (token/s): 1432.11, #queue-req: 0",
    "WARNING 09-21 01:15:09 [config.py:1101] Possibly too large swap space. 32.00 GiB out of the 2015.60 GiB total CPU memory is allocated for the swap space.",
    "Received request chatcmpl-8f2a41c2b0e94d6e8a2f3c1d9b7e6a5f: prompt: '', params: SamplingParams(n=1, temperature=0.0, max_tokens=1024)",
    "DEBUG 09-21 01:15:10 [scheduler.py:312] num_running=16 num_waiting=0 kv_usage=0.31",
    "100%|██████████| 1319/1319 [02:11<00:00, 10.03it/s]",
    "  Stage 3/5 → replaying trace agentx-0007 (turn 12 of 40), in flight 16 ✓",
    "++ dirname /work/ix/benchmarks/single_node/qwen.sh",
];

#[test]
fn scanning_noise_allocates_nothing_per_line() {
    let table = crate::SignatureTable::builtin();
    let mut log = String::new();
    for i in 0..22_000 {
        log.push_str("2026-09-21T01:15:07.123Z ");
        log.push_str(NOISE[i % NOISE.len()]);
        log.push('\n');
    }
    log.push_str("2026-09-21T01:16:00.000Z launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill\n");
    log.push_str("2026-09-21T01:16:01.000Z ##[error]Process completed with exit code 1.\n");
    // Warm up: the tables and regex caches are built on first use.
    let warm = crate::scan_reader(log.as_bytes(), "warm.log", table).unwrap();
    assert_eq!(warm.first_error.unwrap().category, "removed_cli_alias");

    let mut r = None;
    let n = allocation_counter::measure(|| {
        r = Some(crate::scan_reader(log.as_bytes(), "job.log", table).unwrap());
    })
    .count_total;
    let r = r.unwrap();
    assert_eq!(r.lines, 22_002);
    assert_eq!(r.first_error.as_ref().unwrap().line_no, 22_001);
    // Fixed costs only (the line buffer, the first error and its marks, the secondary
    // wrapper, the regex search caches; 71 when written): far below one per 100 lines. One
    // allocation per marker line (a match set) gave 2,071.
    assert!(n < 100, "{n} allocations for 22,002 lines");
}
