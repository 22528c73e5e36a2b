//! Prints modelled numbers for a few workloads (used to write docs/simulator.md):
//! `cargo run -p servebench-sim --example sim_table`.
use std::sync::Arc;

use servebench_sim::{simulate_closed_loop, EngineConfig, Workload};

#[allow(clippy::too_many_arguments)]
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

fn presets() {
    use servebench_sim::model::Chunk;
    println!("| GPU | model | TP | weights GiB/GPU | KV bytes/token/GPU | KV budget tokens | max_model_len | max_num_seqs / chunk | decode step, 1 seq @1k ctx, ms | prefill 1k tokens, ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for gpu in ["h100", "h200", "b200", "a100", "a100-40gb", "mi300x"] {
        for model in ["qwen3-8b", "llama-3.1-8b", "qwen3-30b-a3b", "llama-3.1-70b"] {
            for tp in [1, 2, 4, 8] {
                let Ok(c) = EngineConfig::from_presets(gpu, model, tp) else {
                    continue;
                };
                if tp > 1 && model != "llama-3.1-70b" {
                    continue;
                }
                let d = c
                    .step_cost(&[Chunk {
                        context: 1024,
                        tokens: 1,
                        samples: true,
                    }])
                    .total_s
                    * 1e3;
                let p = c
                    .step_cost(&[Chunk {
                        context: 0,
                        tokens: 1024,
                        samples: true,
                    }])
                    .total_s
                    * 1e3;
                println!(
                    "| {gpu} | {model} | {tp} | {:.1} | {} | {} | {} | {} / {} | {d:.2} | {p:.1} |",
                    c.weight_bytes_per_gpu / (1u64 << 30) as f64,
                    c.kv_bytes_per_token_per_gpu,
                    c.kv_capacity_tokens(),
                    c.max_model_len,
                    c.max_num_seqs,
                    c.max_num_batched_tokens
                );
                break;
            }
        }
    }
    println!();
}

fn main() {
    presets();
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
