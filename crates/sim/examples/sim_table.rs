//! Prints modelled numbers for a few workloads (used to write docs/simulator.md):
//! `cargo run -p servebench-sim --example sim_table`.
use std::sync::Arc;

use servebench_sim::{simulate_closed_loop, EngineConfig, Workload};

fn row(gpu: &str, model: &str, tp: u32, conc: u32, n: u32, isl: u32, osl: u32, overhead: bool) {
    let cfg = Arc::new(EngineConfig::from_presets(gpu, model, tp).expect("preset"));
    let s = simulate_closed_loop(
        cfg,
        &Workload {
            concurrency: conc,
            num_requests: n,
            input_tokens: isl,
            output_tokens: osl,
            request_overhead: overhead,
        },
    );
    let e2e_max = s
        .requests
        .iter()
        .map(|r| r.last_token_s - r.sent_s)
        .fold(0.0, f64::max)
        * 1e3;
    println!(
        "| {gpu} | {model} | TP{tp} | {conc} | {isl}/{osl} | {:.1} | {:.2} | {:.1} | {:.0} | {:.0} | {} | {:.0} |",
        s.mean_ttft_ms, s.mean_tpot_ms, s.mean_e2el_ms, s.output_throughput, s.total_throughput / tp as f64, s.max_waiting, e2e_max
    );
}

fn main() {
    println!("| GPU | model | TP | conc | ISL/OSL | TTFT ms | TPOT ms | E2EL ms | out tok/s | total tok/s/GPU | max waiting | max E2EL ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    // References (docs/simulator.md).
    row("h100", "qwen3-8b", 1, 1, 100, 233, 221, true);
    row("h100", "qwen3-8b", 1, 4, 100, 233, 221, true);
    row("h200", "llama-3.1-8b", 1, 8, 8, 32, 128, false);
    row("a100-40gb", "llama-3.1-8b", 1, 1, 20, 1024, 128, true);
    row("a100-40gb", "llama-3.1-8b", 1, 8, 160, 1024, 128, true);
    // The default sweep.
    for gpu in ["h100", "h200", "b200"] {
        for conc in [1, 4, 8, 16, 64, 256] {
            row(gpu, "qwen3-8b", 1, conc, 10 * conc, 1024, 1024, true);
        }
    }
    for model in ["llama-3.1-8b", "qwen3-30b-a3b"] {
        for conc in [1, 16, 64] {
            row("h200", model, 1, conc, 10 * conc, 1024, 1024, true);
        }
    }
    for tp in [2, 4, 8] {
        row("h200", "llama-3.1-70b", tp, 16, 160, 1024, 1024, true);
    }
}
