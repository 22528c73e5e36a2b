//! Wires the simulator's plausibility check (`servebench_sim::plausibility`) into the reports
//! (`servebench_report::plausibility`): `report`, `compare` and `attempt` call [`install`].

use servebench_compare::{Metric, Point, Stat};
use servebench_sim::plausibility::{check as sim_check, RunIdentity};

/// The check the reports call per point: the simulator's prediction beside the measurement.
fn check(p: &Point) -> Option<(String, String)> {
    let id = &p.identity;
    let d = &id.topology.decode;
    let run = RunIdentity {
        hardware: id.hw.clone(),
        model_prefix: id.model_prefix.clone(),
        precision: id.precision.clone(),
        framework: id.framework.clone(),
        spec_decoding: id.spec_decoding.clone(),
        disagg: id.disagg,
        tp: d.tp,
        ep: d.ep,
        dp_attention: d.dp_attention,
        isl: id.isl?,
        osl: id.osl?,
        conc: id.conc,
    };
    let r = sim_check(
        &run,
        p.value(Metric::OutputTputPerGpu, Stat::Median),
        p.value(Metric::Tpot, Stat::Median),
        p.value(Metric::Ttft, Stat::Median),
    )?;
    let zh = if r.implausible() {
        "测量值与模拟器预测的偏差超出验证的 p90 误差，请检查引擎配置"
    } else {
        "测量值在模拟器预测的 p90 误差范围内"
    };
    Some((r.line(), zh.to_string()))
}

/// Installs the check for this process's reports.
pub fn install() {
    servebench_report::plausibility::set_check(check);
}
