//! Benchmark of `servebench_triage` on a large synthetic job log.
//!
//! ```text
//! triage_bench gen PATH [SIZE_MB]   # write a synthetic log: noise + one real error near the end
//! triage_bench gen-utf8 PATH [SIZE_MB]  # the same, its replay-progress line with `→` and `✓`
//! triage_bench run PATH...          # triage it; prints wall time, MB/s and peak RSS (VmHWM)
//! ```
//! `scripts/bench-triage.sh` runs both in separate processes so the peak RSS is triage's own.

use std::io::{BufWriter, Write};
use std::time::Instant;

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
    "  Stage 3/5: replaying trace agentx-0007 (turn 12 of 40), in flight 16",
];

/// The noise line that `gen-utf8` writes instead of `NOISE[9]` (non-ASCII, like the arrows and
/// check marks of real progress output).
const UTF8_LINE: &str = "  Stage 3/5 → replaying trace agentx-0007 (turn 12 of 40), in flight 16 ✓";

fn gen(path: &str, size_mb: u64, utf8: bool) -> std::io::Result<()> {
    let target = size_mb * 1024 * 1024;
    let f = std::fs::File::create(path)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut written: u64 = 0;
    let mut i: u64 = 0;
    let mut error_written = false;
    let t0 = Instant::now();
    while written < target {
        let ms = i % 1000;
        let s = (i / 1000) % 60;
        let m = (i / 60_000) % 60;
        let line = if !error_written && written >= target / 100 * 99 {
            error_written = true;
            "launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill".to_string()
        } else {
            let k = (i % NOISE.len() as u64) as usize;
            if utf8 && k == 9 {
                UTF8_LINE.to_string()
            } else {
                NOISE[k].to_string()
            }
        };
        let l = format!("2026-09-21T01:{m:02}:{s:02}.{ms:03}Z {line}\n");
        w.write_all(l.as_bytes())?;
        written += l.len() as u64;
        i += 1;
    }
    w.write_all(b"2026-09-21T02:00:00.000Z ##[error]Process completed with exit code 1.\n")?;
    w.flush()?;
    eprintln!(
        "wrote {path}: {:.1} MB, {i} lines in {:.2} s",
        written as f64 / 1048576.0,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn status_kb(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(mode @ ("gen" | "gen-utf8")) if args.len() >= 2 => {
            let size = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(200);
            gen(&args[1], size, mode == "gen-utf8")?;
        }
        Some("run") if args.len() >= 2 => {
            let paths = &args[1..];
            let bytes: u64 = paths
                .iter()
                .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
                .sum();
            let rss0 = status_kb("VmRSS:");
            let t0 = Instant::now();
            let r = servebench_triage::triage_logs(paths)?;
            let dt = t0.elapsed().as_secs_f64();
            let fe = r.first_error.as_ref();
            println!(
                "triage: {:.1} MB, {} lines in {:.3} s ({:.0} MB/s); first error {}:{} [{}]; peak RSS {} kB (VmHWM; {} kB before triage)",
                bytes as f64 / 1048576.0,
                r.logs.iter().map(|l| l.lines).sum::<u64>(),
                dt,
                bytes as f64 / 1048576.0 / dt,
                fe.map(|f| f.file.as_str()).unwrap_or("-"),
                fe.map(|f| f.line_no).unwrap_or(0),
                r.category,
                status_kb("VmHWM:").map(|v| v.to_string()).unwrap_or("?".into()),
                rss0.map(|v| v.to_string()).unwrap_or("?".into()),
            );
        }
        _ => anyhow::bail!(
            "usage: triage_bench gen|gen-utf8 PATH [SIZE_MB] | triage_bench run PATH..."
        ),
    }
    Ok(())
}
