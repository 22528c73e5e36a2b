//! The SLO search against the embedded simulator finds the knee that the simulator's own cost
//! model predicts, within one step of the search.
//!
//! Workload: one request per lane (`num_prompts = concurrency`), ISL 64, OSL 2048, range ratio 1,
//! no warmup. All lanes start together and their prefills fit one step (64 × 64 = 4,096 ≤ the
//! 8,192-token budget), so every request decodes in lockstep with the others: decode step j
//! (j = 1 … OSL − 1) runs C sequences of context 64 + j − 1, and
//! TPOT(C) = Σ_j step_cost(C × {context 64 + j − 1, 1 token, sampled}) / (OSL − 1),
//! computed here with `EngineConfig::step_cost` (crates/sim/src/model.rs). The predicted knee of
//! `tpot ≤ 7.3 ms` is the largest C with TPOT(C) ≤ 7.3.

use servebench_metrics::goodput::Slo;
use servebench_metrics::search::{Axis, Outcome, SearchConfig};
use servebench_pipeline::{FixedPlan, SweepPlan, Workload};
use servebench_sim::model::Chunk;
use servebench_sim::EngineConfig;
use servebench_slo::{run_search, SearchRequest};

const ISL: u32 = 64;
const OSL: u32 = 2048;
const SLO_TPOT_MS: f64 = 7.3;

fn predicted_tpot_ms(cfg: &EngineConfig, c: u32) -> f64 {
    let mut sum = 0.0;
    for j in 1..OSL {
        let chunks = vec![
            Chunk {
                context: ISL + j - 1,
                tokens: 1,
                samples: true,
            };
            c as usize
        ];
        sum += cfg.step_cost(&chunks).total_s;
    }
    sum / f64::from(OSL - 1) * 1e3
}

#[test]
fn search_finds_the_knee_the_cost_model_predicts() {
    let cfg = EngineConfig::from_presets("h200", "qwen3-8b", 1).unwrap();
    let knee = (1..=256u32)
        .take_while(|&c| predicted_tpot_ms(&cfg, c) <= SLO_TPOT_MS)
        .last()
        .expect("C = 1 meets the SLO");
    assert!(
        (8..=128).contains(&knee),
        "test setup: predicted knee {knee} should be mid-range"
    );

    let dir = tempfile::tempdir().unwrap();
    let mut plan = SweepPlan::default();
    plan.workload = Workload::FixedSequence(FixedPlan {
        isl: ISL,
        osl: OSL,
        range_ratio: 1.0,
        warmups: Some(0),
        ..FixedPlan::default()
    });
    plan.sim.speedup = Some(2.0);
    plan.db = None;
    let req = SearchRequest {
        plan,
        slo: Slo::parse(&format!("tpot={SLO_TPOT_MS}ms@p50")).unwrap(),
        config: SearchConfig {
            axis: Axis::Conc,
            start: 16.0,
            max: 256.0,
            tolerance: 0.1,
            max_probes: 12,
        },
        prompts_per_lane: Some(1),
        rate_max_concurrency: 0,
        out: dir.path().to_path_buf(),
    };
    let r = run_search(req).unwrap();
    print!("{}", r.render());
    let found = r.knee.expect("a knee");
    let step = r.step.unwrap();
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(
        (found - f64::from(knee)).abs() <= step,
        "found knee {found}, model predicts {knee}, step {step}"
    );
    // the evidence: the knee's measured median TPOT agrees with the model's TPOT there
    let at = r.probes.iter().find(|p| p.load == found).unwrap();
    let observed = at.goodput.evidence[0].observed_ms.unwrap();
    let model = predicted_tpot_ms(&cfg, found as u32);
    assert!(
        (observed - model).abs() / model < 0.02,
        "median TPOT at conc {found}: measured {observed:.3} ms, model {model:.3} ms"
    );
    assert!(dir.path().join("search.json").is_file());
}
