//! The words of the report in English and Simplified Chinese.
//!
//! Chinese terminology (issue 4): benchmark 基准测试, image 镜像, config 配置, throughput 吞吐量,
//! latency 延迟, prefill/decode 预填充/解码, speculative decoding 投机解码, sweep 扫描,
//! launcher 启动器, artifact 产物, evaluation 评估. Model, hardware, framework, flag and variable
//! names stay as they are. Numbers from the tables are not repeated in Chinese.

use crate::model::{AttemptKind, AttemptStatus, NaReason, RowStatus};

/// English header words of an attempt kind: `Initial attempt`, `Repair 2/5`,
/// `Infrastructure retry 1`, `Final full sweep`.
pub fn attempt_kind_en(k: AttemptKind) -> String {
    match k {
        AttemptKind::Initial => "Initial attempt".into(),
        AttemptKind::Repair { n, max } => format!("Repair {n}/{max}"),
        AttemptKind::Retry { n } => format!("Infrastructure retry {n}"),
        AttemptKind::Final => "Final full sweep".into(),
    }
}

/// Chinese of [`attempt_kind_en`].
pub fn attempt_kind_zh(k: AttemptKind) -> String {
    match k {
        AttemptKind::Initial => "首次尝试".into(),
        AttemptKind::Repair { n, max } => format!("第 {n}/{max} 次修复"),
        AttemptKind::Retry { n } => format!("第 {n} 次基础设施重试"),
        AttemptKind::Final => "最终完整扫描".into(),
    }
}

/// English of an attempt status (`Passed`, `Failed`, …, `not dispatched (stopped)`).
pub fn attempt_status_en(s: AttemptStatus) -> &'static str {
    match s {
        AttemptStatus::Passed => "Passed",
        AttemptStatus::Failed => "Failed",
        AttemptStatus::Running => "Running",
        AttemptStatus::Queued => "Queued",
        AttemptStatus::Cancelled => "Cancelled",
        AttemptStatus::NotDispatched => "not dispatched (stopped)",
        AttemptStatus::BlockedBeforeDispatch => "blocked before dispatch",
        AttemptStatus::NotComparable => "Not comparable",
    }
}

/// Chinese of [`attempt_status_en`].
pub fn attempt_status_zh(s: AttemptStatus) -> &'static str {
    match s {
        AttemptStatus::Passed => "通过",
        AttemptStatus::Failed => "失败",
        AttemptStatus::Running => "运行中",
        AttemptStatus::Queued => "排队中",
        AttemptStatus::Cancelled => "已取消",
        AttemptStatus::NotDispatched => "未派发（已停止）",
        AttemptStatus::BlockedBeforeDispatch => "派发前受阻",
        AttemptStatus::NotComparable => "不可比较",
    }
}

/// English of an N/A reason (`no matched baseline`, …). Details carry their numbers.
pub fn na_reason_en(r: &NaReason) -> String {
    let with = |base: &str, d: &str| {
        if d.is_empty() {
            base.to_string()
        } else {
            format!("{base} ({d})")
        }
    };
    match r {
        NaReason::NoMatchedBaseline => "no matched baseline".into(),
        NaReason::BaselineMissing => "baseline missing".into(),
        NaReason::BaselineZero => "baseline is 0".into(),
        NaReason::CandidateMissing => "candidate value missing".into(),
        NaReason::PointFailed => "point failed".into(),
        NaReason::BaselineFailed => "baseline point failed".into(),
        NaReason::PointUnavailable => "point unavailable".into(),
        NaReason::WorkloadMismatch(d) => with("workload/dataset mismatch", d),
        NaReason::StatisticMismatch(d) => with("statistic mismatch", d),
        NaReason::EvalNotPassed => "eval not passed".into(),
        NaReason::BaselineEvalNotPassed => "baseline eval not passed".into(),
        NaReason::SampleCountMismatch => "sample counts differ".into(),
        NaReason::NotComparable(d) if d.is_empty() => "not comparable".into(),
        NaReason::NotComparable(d) => format!("not comparable: {d}"),
        NaReason::CandidateInvalid(d) if d.is_empty() => "candidate invalid".into(),
        NaReason::CandidateInvalid(d) => format!("candidate invalid: {d}"),
        NaReason::JobFailed(d) if d.is_empty() => "its job failed".into(),
        NaReason::JobFailed(d) => format!("its job failed: {d}"),
        NaReason::TelemetryMissing(d) => {
            // the row's reason codes repeat the words (`telemetry_missing: NVML not loadable`)
            let d = d.strip_prefix("telemetry_missing: ").unwrap_or(d);
            with("telemetry missing", d)
        }
    }
}

/// Chinese of an N/A reason (details with numbers are left to the English text).
pub fn na_reason_zh(r: &NaReason) -> &'static str {
    match r {
        NaReason::NoMatchedBaseline => "没有匹配的基线点",
        NaReason::BaselineMissing => "基线缺少该值",
        NaReason::BaselineZero => "基线值为零",
        NaReason::CandidateMissing => "候选结果缺少该值",
        NaReason::PointFailed => "该点运行失败",
        NaReason::BaselineFailed => "基线点运行失败",
        NaReason::PointUnavailable => "该点没有结果",
        NaReason::WorkloadMismatch(_) => "工作负载或数据集不一致",
        NaReason::StatisticMismatch(_) => "延迟统计量不一致",
        NaReason::EvalNotPassed => "评估未通过",
        NaReason::BaselineEvalNotPassed => "基线评估未通过",
        NaReason::SampleCountMismatch => "样本数不一致",
        NaReason::NotComparable(_) => "未通过可比性检查（数值见英文说明）",
        NaReason::CandidateInvalid(_) => "候选结果无效（数值见英文说明）",
        NaReason::JobFailed(_) => "产生该值的作业失败（错误见英文说明）",
        NaReason::TelemetryMissing(_) => "没有 GPU 功耗遥测数据（原因见英文说明）",
    }
}

/// English of a point status in notes (`None` for a passed point: nothing to say).
pub fn point_status_en(s: RowStatus) -> Option<&'static str> {
    match s {
        RowStatus::Passed => None,
        RowStatus::Partial => Some("partial"),
        RowStatus::Failed => Some("failed"),
        RowStatus::Invalid => Some("invalid (a validity rule was violated)"),
        RowStatus::Unavailable => Some("unavailable"),
        RowStatus::BaselineOnly => {
            Some("baseline values; the candidate has no point with this identity")
        }
    }
}

/// Chinese of [`point_status_en`].
pub fn point_status_zh(s: RowStatus) -> Option<&'static str> {
    match s {
        RowStatus::Passed => None,
        RowStatus::Partial => Some("部分完成（已中断）"),
        RowStatus::Failed => Some("失败"),
        RowStatus::Invalid => Some("无效（违反有效性规则）"),
        RowStatus::Unavailable => Some("没有结果"),
        RowStatus::BaselineOnly => Some("仅为基线数值，候选结果中没有相同标识的点"),
    }
}

/// Latency statistic line: `mean` → `Mean latency`, `p90` → `P90 latency`.
pub fn statistic_en(stat: &str) -> String {
    match stat.to_ascii_lowercase().as_str() {
        "mean" => "Mean latency".into(),
        "median" | "p50" => "Median latency".into(),
        s if s.starts_with('p') => format!("{} latency", s.to_ascii_uppercase()),
        s => format!("{s} latency"),
    }
}

/// Chinese of [`statistic_en`].
pub fn statistic_zh(stat: &str) -> String {
    match stat.to_ascii_lowercase().as_str() {
        "mean" => "平均延迟".into(),
        "median" | "p50" => "中位数延迟".into(),
        s if s.starts_with('p') => format!("{} 延迟", s.to_ascii_uppercase()),
        s => format!("{s} 延迟"),
    }
}

/// Chinese of [`servebench_contracts::JobStage::en`] (the stage at a job's first error, as
/// triage words it); `None` for `Unknown`, which claims nothing.
pub fn job_stage_zh(s: servebench_contracts::JobStage) -> Option<&'static str> {
    use servebench_contracts::JobStage as S;
    Some(match s {
        S::BeforeImportOrServerStart => "发生在镜像导入和服务启动之前",
        S::AfterImageImport => "发生在镜像导入之后、服务启动之前",
        S::EngineStartUp => "发生在推理引擎启动过程中，此前没有模型加载完成或服务就绪的日志",
        S::EngineStartUpAfterModelLoad => {
            "发生在推理引擎启动过程中，模型已加载，此前没有服务就绪的日志"
        }
        S::AfterServerReady => "发生在服务报告就绪之后",
        S::Unknown => return None,
    })
}

/// Chinese name of a failure layer; unknown layers stay as they are.
pub fn layer_zh(layer: &str) -> String {
    let l = layer.to_ascii_lowercase();
    let zh = match l.as_str() {
        "launcher" => "启动器",
        "host" => "主机",
        "recipe" => "配方",
        "image" => "镜像",
        "registry" | "image/registry" => "镜像仓库",
        "engine" | "server" | "server/engine" => "推理引擎",
        "runner" | "node" | "runner/node" => "运行器节点",
        "infrastructure" | "infra" | "runner/allocation/infrastructure" => "基础设施",
        "allocation" => "资源分配",
        "eval" | "evaluation" | "eval/collection" => "评估",
        "changelog" | "changelog/setup/matrix" | "setup" => "变更日志与矩阵配置",
        "matrix" => "矩阵",
        "config" | "catalog" => "配置",
        "client" => "基准测试客户端",
        "lifecycle" | "tooling" | "lifecycle/tooling" => "自动化工具",
        "readiness" => "就绪检查",
        "capacity" => "集群容量",
        "network" => "网络",
        "scheduler" => "调度器",
        _ => return layer.to_string(),
    };
    zh.to_string()
}

/// Chinese of a multi-node log's role as triage names it (`decode worker w1` → `decode 工作进程
/// w1`, `frontend 0` → `前端 0`, `Slurm batch log` → `Slurm 批处理日志`); a list (`prefill worker
/// w0, decode worker w1`) is translated item by item; names (etcd, NATS, routers) stay.
pub fn role_zh(role: &str) -> String {
    role.split(", ")
        .map(|r| {
            for (en, zh) in [
                ("prefill worker", "prefill 工作进程"),
                ("decode worker", "decode 工作进程"),
                ("aggregated worker", "聚合工作进程"),
                ("frontend", "前端"),
                ("Slurm batch log", "Slurm 批处理日志"),
                ("benchmark client", "基准测试客户端"),
            ] {
                if let Some(rest) = r.strip_prefix(en) {
                    return format!("{zh}{rest}");
                }
            }
            r.to_string()
        })
        .collect::<Vec<_>>()
        .join("、")
}

/// Chinese of an engine display name stays the same; this maps framework ids to display names
/// (`sglang` → `SGLang`, `vllm` → `vLLM`, `trt`/`trtllm` → `TensorRT-LLM`, `atom` → `ATOM`):
/// the engine's profile (`servebench_engines::display_name`).
pub fn engine_display(framework: &str) -> String {
    servebench_engines::display_name(framework)
}

pub use servebench_contracts::labels::{topology_label, workload_label};

/// Chinese of a triage next step, from its structured parts (the English text comes from the
/// triage signature table): a specific sentence for the common categories, else one by action.
/// `category` is the triage category (`missing_env_var`, `removed_flag`…), `action` one of
/// `stop|repair|retry|inspect|wait`, `var` the variable or flag named by the error, if any.
pub fn next_step_zh(category: &str, layer: &str, action: &str, var: Option<&str>) -> String {
    let l = layer_zh(layer);
    let code = |v: &str| format!("`{v}`");
    match category {
        "missing_env_var" => {
            let v = var.map(code).unwrap_or_else(|| "缺失的环境变量".into());
            let extra = if var == Some("MODEL_PATH") {
                "（回退到预置权重路径的逻辑必须放在 `check_env_vars` 之前）"
            } else {
                ""
            };
            format!("修复{l}：在检查运行之前设置 {v}{extra}。修改配方或镜像都无法解决，修复后重新运行。")
        }
        "removed_flag" | "ambiguous_option" | "unrecognized_arguments" => format!(
            "在该配置独享的配方中改用新版本的参数名{}，取值保持不变，然后作为一次修复重新运行。",
            var.map(|v| format!("（替换 {}）", code(v)))
                .unwrap_or_default()
        ),
        _ => match action {
            "retry" => "在同一提交上进行基础设施重试，不修改配方，也不消耗修复次数。".into(),
            "repair" => format!("在{l}中做最小范围的修复，然后作为下一次修复重新运行。"),
            "stop" => format!(
                "停止本次更新：问题出在{l}，超出本次更新可修改的范围，需由负责方修复后再重新运行。"
            ),
            "inspect" => "先收集更多日志证据，再决定重试还是修复。".into(),
            "wait" => "等待运行进入终止状态后再处理。".into(),
            _ => format!("由{l}的负责方处理后重新运行。"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(workload_label(Some(8192), Some(1024), false), "8k/1k");
        assert_eq!(workload_label(Some(1024), Some(1024), false), "1k/1k");
        assert_eq!(workload_label(Some(1000), Some(1024), false), "1000/1k");
        assert_eq!(workload_label(None, None, true), "AgentX");
        assert_eq!(topology_label(1, 1), "TP1/EP1");
        assert_eq!(statistic_en("mean"), "Mean latency");
        assert_eq!(statistic_en("p90"), "P90 latency");
        assert_eq!(statistic_zh("mean"), "平均延迟");
        assert_eq!(
            attempt_kind_en(AttemptKind::Repair { n: 2, max: 5 }),
            "Repair 2/5"
        );
        assert_eq!(layer_zh("launcher"), "启动器");
        assert_eq!(layer_zh("host"), "主机");
        assert_eq!(layer_zh("mystery"), "mystery");
        assert_eq!(engine_display("sglang"), "SGLang");
    }
}

/// The store's endpoint text of a run on the embedded simulator starts with this.
pub const SIMULATOR_ENDPOINT_PREFIX: &str = "embedded simulator";

/// Whether a run's endpoint (store field `endpoint`) is the embedded simulator.
pub fn is_simulator_endpoint(endpoint: &str) -> bool {
    endpoint.trim_start().starts_with(SIMULATOR_ENDPOINT_PREFIX)
}

/// Short form of an endpoint for tables: the simulator's description
/// `embedded simulator: simulated 1× H200 SXM 141GB (…) serving Qwen3-8B (…); …` →
/// `sim: H200/Qwen3-8B` (`sim: 8×H100/…` for several GPUs); any other endpoint unchanged.
pub fn endpoint_short(endpoint: &str) -> String {
    if !is_simulator_endpoint(endpoint) {
        return endpoint.to_string();
    }
    let gpu = endpoint.split_once("simulated ").map(|(_, rest)| {
        let mut words = rest.split_whitespace();
        let first = words.next().unwrap_or("");
        match first.strip_suffix('×') {
            Some("1") => words.next().unwrap_or("").to_string(),
            Some(n) => format!("{n}×{}", words.next().unwrap_or("")),
            None => first.to_string(),
        }
    });
    let model = endpoint
        .split_once("serving ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .map(|m| m.trim_end_matches([',', ';']).to_string());
    match (gpu, model) {
        (Some(g), Some(m)) if !g.is_empty() => format!("sim: {g}/{m}"),
        _ => "sim".into(),
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::*;

    #[test]
    fn simulator_endpoint_is_shortened() {
        let d = "embedded simulator: simulated 1× H200 SXM 141GB (TP1; 989.4 TFLOP/s BF16, 4.8 TB/s, 141 GiB each) serving Qwen3-8B (8.19B params, 2 bytes/param, 36 layers); KV budget 798400 tokens, max batch 1024, chunk 8192 tokens, speedup ×10";
        assert_eq!(endpoint_short(d), "sim: H200/Qwen3-8B");
        let d8 = d.replace("1× H200", "8× H100");
        assert_eq!(endpoint_short(&d8), "sim: 8×H100/Qwen3-8B");
        assert_eq!(
            endpoint_short("http://10.0.0.1:8000"),
            "http://10.0.0.1:8000"
        );
        assert!(is_simulator_endpoint(d));
        assert!(!is_simulator_endpoint("http://x"));
    }
}
