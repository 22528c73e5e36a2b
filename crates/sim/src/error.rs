//! [`SimError`]: why the simulator cannot be configured or started; one line naming the preset,
//! flag, file or address.
//!
//! `Display` is the line `anyhow` printed before this crate had its own type, cause included
//! where it was part of the line (`cannot listen on 127.0.0.1:80: Permission denied (os error
//! 13)`); such a cause is a field, not a `source()`, so `anyhow`'s `{:#}` prints the line once,
//! as before.

use std::net::SocketAddr;
use std::path::PathBuf;

/// An error of the simulator: an unknown preset, an engine configuration that cannot run, or a
/// server that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A disaggregated fleet that cannot be set up (a malformed worker shape, a worker wider
    /// than the cost model's TP range that is not whole TP8 replicas).
    #[error("disaggregated fleet `{spec}`: {why}")]
    Disagg {
        /// The shape as given.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// No GPU preset has this key or alias.
    #[error("unknown GPU `{name}` (known: {})", known.join(", "))]
    UnknownGpu {
        /// The name given.
        name: String,
        /// The known GPU keys, sorted.
        known: Vec<String>,
    },
    /// No model preset has this key, served name or alias.
    #[error("unknown model `{name}` (known: {})", known.join(", "))]
    UnknownModel {
        /// The name given.
        name: String,
        /// The known model keys, sorted.
        known: Vec<String>,
    },
    /// The tensor-parallel degree is not in 1..=8.
    #[error("tp: must be between 1 and 8, got {tp}")]
    Tp {
        /// The TP degree given.
        tp: u32,
    },
    /// Expert parallelism other than 1 or the TP degree (the recipes shard experts over the
    /// same GPUs as attention).
    #[error("ep: expert parallelism {ep} must be 1 or the TP degree {tp}")]
    Ep {
        /// The EP degree given.
        ep: u32,
        /// The TP degree.
        tp: u32,
    },
    /// TP cannot split the model's KV heads evenly (neither divides the other).
    #[error("tp: {model} has {kv_heads} KV heads, which TP {tp} cannot split evenly")]
    TpSplit {
        /// The model's display name.
        model: String,
        /// Its KV heads.
        kv_heads: u32,
        /// The TP degree given.
        tp: u32,
    },
    /// The weights leave fewer than 64 KV-cache blocks per GPU at this TP.
    #[error(
        "model: {model} does not fit on {gpu} at TP {tp}: {weights_gib:.1} GiB of weights per GPU, {usable_gib:.1} GiB usable ({utilization_pct}% of {hbm_gib} GiB minus {reserve_gib} GiB reserve)"
    )]
    DoesNotFit {
        /// The model's display name.
        model: String,
        /// The GPU's display name.
        gpu: String,
        /// The TP degree.
        tp: u32,
        /// Weights per GPU, GiB (params × bytes per param / TP).
        weights_gib: f64,
        /// HBM usable for weights and KV cache, GiB (HBM × utilization − reserve).
        usable_gib: f64,
        /// `gpu_memory_utilization` in percent, rounded.
        utilization_pct: f64,
        /// HBM per GPU, GiB.
        hbm_gib: f64,
        /// Activation reserve, GiB.
        reserve_gib: f64,
    },
    /// The speedup (wall time = modelled time / speedup) is not a positive number.
    #[error("speedup: must be a positive number, got {speedup}")]
    Speedup {
        /// The value given.
        speedup: f64,
    },
    /// The host-DRAM KV tier (`--kv-offloading dram --total-cpu-dram-gb GB`) cannot be modelled.
    #[error("KV offload (DRAM tier): {what}")]
    HostKv {
        /// What is wrong, naming the preset or the value.
        what: String,
    },
    /// The planted slowdown (`--sim-slowdown`, step time × F) is not a positive number.
    #[error("slowdown: must be a positive number, got {slowdown}")]
    Slowdown {
        /// The value given.
        slowdown: f64,
    },
    /// The emission log file cannot be created.
    #[error("emission log {}: cannot create: {error}", path.display())]
    EmissionLog {
        /// The file.
        path: PathBuf,
        /// The I/O error (printed in the line).
        error: std::io::Error,
    },
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {error}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The socket error (printed in the line).
        error: std::io::Error,
    },
    /// The bound socket's local address cannot be read (the OS error, as it is).
    #[error(transparent)]
    LocalAddr(std::io::Error),
    /// The engine thread cannot be started (the OS error, as it is).
    #[error(transparent)]
    EngineThread(std::io::Error),
    /// The tokenizer (`SimOptions::tokenizer`) cannot be loaded (the workload crate's error,
    /// as it is: `tokenizer file … does not exist`, `…: cannot load tokenizer: …`).
    #[error(transparent)]
    Tokenizer(#[from] servebench_workload::WorkloadError),
}

/// `Result` of this crate: [`SimError`] unless said otherwise.
pub type Result<T, E = SimError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::SimError;
    use crate::{EngineConfig, Presets, SimOptions, SimServer};

    /// The same text as the `anyhow::bail!` lines these replaced, plain and through `anyhow`.
    #[test]
    fn preset_and_config_errors_keep_their_line() {
        let p = Presets::embedded();
        let e = p.gpu("tpu-v5").unwrap_err();
        assert!(
            matches!(&e, SimError::UnknownGpu { name, known } if name == "tpu-v5" && known.iter().any(|k| k == "h200"))
        );
        let known = p.gpus.keys().cloned().collect::<Vec<_>>().join(", ");
        assert_eq!(
            e.to_string(),
            format!("unknown GPU `tpu-v5` (known: {known})")
        );
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            format!("unknown GPU `tpu-v5` (known: {known})")
        );

        let e = EngineConfig::from_presets("h200", "gpt-9", 1).unwrap_err();
        assert!(matches!(&e, SimError::UnknownModel { name, .. } if name == "gpt-9"));
        assert!(
            e.to_string().starts_with("unknown model `gpt-9` (known: "),
            "{e}"
        );

        let e = EngineConfig::from_presets("h200", "qwen3-8b", 9).unwrap_err();
        assert!(matches!(e, SimError::Tp { tp: 9 }));
        assert_eq!(e.to_string(), "tp: must be between 1 and 8, got 9");
    }

    #[test]
    fn does_not_fit_prints_the_numbers_as_before() {
        let p = Presets::embedded();
        let (gk, g) = p.gpu("h200").unwrap();
        let (mk, m) = p.model("qwen3-8b").unwrap();
        let mut g = g.clone();
        g.hbm_gib = 8.0;
        let e = EngineConfig::new(gk, g.clone(), mk, m.clone(), 1, p.engine.clone()).unwrap_err();
        assert!(matches!(&e, SimError::DoesNotFit { tp: 1, .. }));
        // the old format, computed the same way
        let c = &p.engine;
        let gib = (1u64 << 30) as f64;
        let weights = m.params as f64 * m.bytes_per_param / gib;
        let usable =
            (g.hbm_gib * gib * c.gpu_memory_utilization - c.activation_reserve_gib * gib) / gib;
        let old = format!(
            "model: {} does not fit on {} at TP 1: {:.1} GiB of weights per GPU, {:.1} GiB usable ({}% of {} GiB minus {} GiB reserve)",
            m.name,
            g.name,
            weights,
            usable,
            (c.gpu_memory_utilization * 100.0).round(),
            g.hbm_gib,
            c.activation_reserve_gib
        );
        assert_eq!(e.to_string(), old);
        assert!(
            e.to_string().contains("GiB usable (") && e.to_string().contains("% of 8 GiB minus "),
            "{e}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn start_errors_name_the_flag_file_or_address() {
        let e = SimServer::start(SimOptions {
            speedup: -1.0,
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
        assert!(matches!(e, SimError::Speedup { speedup } if speedup == -1.0));
        assert_eq!(e.to_string(), "speedup: must be a positive number, got -1");
        let e = SimServer::start(SimOptions {
            slowdown: 0.0,
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
        assert_eq!(e.to_string(), "slowdown: must be a positive number, got 0");

        let e = SimServer::start(SimOptions {
            emission_log: Some("/nonexistent-dir/x.jsonl".into()),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
        assert!(matches!(&e, SimError::EmissionLog { .. }));
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "emission log /nonexistent-dir/x.jsonl: cannot create: No such file or directory (os error 2)"
        );

        let e = SimServer::start(SimOptions {
            tokenizer: Some("/nonexistent/tok.json".into()),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
        assert!(matches!(
            &e,
            SimError::Tokenizer(servebench_workload::WorkloadError::TokenizerMissing { .. })
        ));
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "tokenizer file /nonexistent/tok.json does not exist"
        );

        // a port already taken
        let first = SimServer::start(SimOptions::default()).await.unwrap();
        let taken = first.addr();
        let e = SimServer::start(SimOptions {
            port: taken.port(),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
        assert!(matches!(&e, SimError::Listen { addr, .. } if *addr == taken));
        assert!(
            e.to_string()
                .starts_with(&format!("cannot listen on {taken}: ")),
            "{e}"
        );
        first.shutdown().await;
    }
}
