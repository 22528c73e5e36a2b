//! The simulated prefill/decode fleet in pure modelled time ([`simulate_fleet_closed_loop`],
//! [`Fleet`]): TTFT = the prefill engine's + the modelled KV transfer, decode workers split the
//! batch, the released timeline is monotone, an aggregated fleet is its prefill engine.

use std::sync::Arc;

use servebench_sim::closed_loop::{simulate_closed_loop_with, simulate_fleet_closed_loop};
use servebench_sim::disagg::{Fabric, FleetConfig, RouterPolicy, WorkerShape};
use servebench_sim::engine::SeqSpec;
use servebench_sim::fleet::Fleet;
use servebench_sim::Workload;

fn shape(workers: u32, tp: u32) -> WorkerShape {
    WorkerShape {
        workers,
        tp,
        ep: tp,
        dp_attention: false,
    }
}

fn fleet(fabric: Option<Fabric>, decode: u32) -> Arc<FleetConfig> {
    Arc::new(
        FleetConfig::from_presets(
            "b200",
            "deepseek-r1-fp8",
            shape(1, 8),
            shape(decode, 8),
            fabric,
            RouterPolicy::RoundRobin,
            |_| {},
        )
        .unwrap(),
    )
}

fn w(conc: u32) -> Workload {
    Workload {
        concurrency: conc,
        num_requests: conc * 4,
        input_tokens: 8192,
        output_tokens: 256,
        request_overhead: true,
    }
}

/// One request alone: TTFT on the fleet = TTFT of the same prefill engine alone + the
/// modelled KV transfer (exactly), and every token is generated.
#[test]
fn ttft_is_the_prefill_plus_the_kv_transfer() {
    let f = fleet(None, 1);
    let alone = simulate_closed_loop_with(
        f.prefill.clone(),
        &Workload {
            num_requests: 1,
            ..w(1)
        },
        |_| (8192, 1),
    );
    let s = simulate_fleet_closed_loop(
        f.clone(),
        &Workload {
            num_requests: 1,
            ..w(1)
        },
        |_| (8192, 256),
    );
    let r = s.requests[0];
    let want = alone.requests[0].first_token_s + f.transfer_s(8192);
    assert!(
        (r.first_token_s - want).abs() < 1e-9,
        "{} vs {want}",
        r.first_token_s
    );
    assert_eq!(r.output_tokens, 256);
    assert!(
        f.transfer_s(8192) > 0.009,
        "RDMA 8k tokens: {}",
        f.transfer_s(8192)
    );
    // a slower fabric adds exactly the difference in transfer time
    let slow = fleet(Some(Fabric::Rdma { gb_s: 5.0 }), 1);
    let s2 = simulate_fleet_closed_loop(
        slow.clone(),
        &Workload {
            num_requests: 1,
            ..w(1)
        },
        |_| (8192, 256),
    );
    let d = s2.requests[0].first_token_s - r.first_token_s;
    assert!((d - (slow.transfer_s(8192) - f.transfer_s(8192))).abs() < 1e-9);
}

/// Under load, a second decode worker halves each decode batch: the time per output token
/// falls and throughput does not; every request finishes with all its tokens; the clock
/// the caller sees never goes back.
#[test]
fn decode_workers_split_the_batch_and_time_is_monotone() {
    let one = simulate_fleet_closed_loop(fleet(None, 1), &w(128), |_| (256, 512));
    let two = simulate_fleet_closed_loop(fleet(None, 2), &w(128), |_| (256, 512));
    assert!(one.requests.iter().all(|r| r.output_tokens == 512));
    assert!(two.requests.iter().all(|r| r.output_tokens == 512));
    assert!(
        two.mean_tpot_ms < one.mean_tpot_ms * 0.95,
        "{} vs {}",
        two.mean_tpot_ms,
        one.mean_tpot_ms
    );
    assert!(
        two.output_throughput > one.output_throughput,
        "{} vs {}",
        two.output_throughput,
        one.output_throughput
    );
    let mut f: Fleet<usize> = Fleet::new(fleet(None, 2));
    for i in 0..16 {
        let spec = SeqSpec {
            prompt_tokens: 512 + 64 * i as u32,
            output_tokens: 8,
            ready_at_s: 0.001 * i as f64,
        };
        f.submit_with_prefix(i, spec, Vec::new());
    }
    let (mut out, mut last, mut tokens) = (Vec::new(), 0.0, 0);
    while let Some(info) = f.step(&mut out) {
        assert!(info.end_s >= last, "{} < {last}", info.end_s);
        last = info.end_s;
        tokens += out.len();
        out.clear();
    }
    assert_eq!(tokens, 16 * 8);
    assert!(f.is_idle());
    assert_eq!(f.counters().finished, 16);
}

/// Aggregated (no decode workers): the prefill engines serve whole requests, no transfer.
#[test]
fn an_aggregated_fleet_has_no_transfer() {
    let f = fleet(None, 0);
    let s = simulate_fleet_closed_loop(f.clone(), &w(1), |_| (1024, 16));
    let alone = simulate_closed_loop_with(f.prefill.clone(), &w(1), |_| (1024, 16));
    assert_eq!(s.requests, alone.requests);
}
