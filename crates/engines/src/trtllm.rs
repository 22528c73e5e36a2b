//! TensorRT-LLM `trtllm-serve` (InferenceX framework `trt`; every InferenceX recipe starts it
//! under `mpirun`).

use crate::metrics::MetricFamilies;
use crate::profile::{BodyQuirks, EngineProfile, LaunchForm, LaunchSyntax, ModelArg};

/// TensorRT-LLM's profile: no known prefix-cache flush or `/metrics` families.
pub(crate) const PROFILE: EngineProfile = EngineProfile {
    name: "trtllm",
    aliases: &["trt", "tensorrt-llm"],
    display: "TensorRT-LLM",
    framework: Some("trt"),
    framework_words: &["trt", "tensorrt"],
    image_words: &["tensorrt-llm", "tensorrtllm", "tensorrt"],
    flag_tables: None,
    body: BodyQuirks::OPENAI_PLUS,
    flush: None,
    flush_404_hint: None,
    completions_backend: "openai",
    launch: LaunchSyntax {
        forms: &[LaunchForm::Program("trtllm-serve")],
        model: ModelArg::PositionalThenFlag(&["--model"]),
        port_flags: &["--port"],
        default_host: "localhost",
        default_port: 8000,
    },
    metrics: MetricFamilies::NONE,
};
