//! The embedded simulator as an eval target (used when `servebench eval gsm8k` has no
//! `--endpoint`): `servebench_sim::SimServer` started in-process with the GSM8K answer book.

use std::sync::Arc;

use crate::run::SimChoice;
use crate::sim_answers::Gsm8kAnswers;

/// A simulator started for one eval run.
pub(crate) struct Running {
    pub base_url: String,
    pub describe: String,
    pub model: String,
    server: servebench_sim::SimServer,
}

/// Starts the simulator on 127.0.0.1 (random port) replaying `book`.
pub(crate) async fn start(choice: &SimChoice, book: Gsm8kAnswers) -> anyhow::Result<Running> {
    let opts = servebench_sim::SimOptions {
        gpu: choice.gpu.clone(),
        model: choice.model.clone(),
        speedup: choice.speedup,
        zero_delay: choice.zero_delay,
        answers: Some(Arc::new(book)),
        ..Default::default()
    };
    let server = servebench_sim::SimServer::start(opts).await?;
    Ok(Running {
        base_url: server.base_url(),
        describe: server.describe(),
        model: choice.model.clone(),
        server,
    })
}

impl Running {
    /// Stops the simulator.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}
