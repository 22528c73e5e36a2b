//! Endpoint layer: everything about *where* requests go, shared by sweep, replay and eval.
//!
//! Owns: the base URL rule (a trailing `/v1` and slashes dropped, [`normalise_base_url`]), the
//! API key rule (`--api-key`, else `$SERVEBENCH_API_KEY`, else `$OPENAI_API_KEY`,
//! [`api_key_or_env`]; sent on readiness checks and model discovery too), the TLS settings of
//! `https://` endpoints ([`TlsConfig`]: rustls, Mozilla's roots plus `--ca-cert FILE`), the
//! bounded readiness wait ([`Readiness`]), model discovery ([`discover_model`]), the one
//! cancel token ([`CancelToken`], wired to Ctrl-C by [`cancel_on_ctrl_c`]) and the
//! [`Target`]: an endpoint, or the embedded simulator started here (the one place it is
//! started, with the `sim` feature) and handed to whichever stage needs it.
//!
//! Must not know about: workloads, request bodies, metrics, the store, reports, GSM8K. The
//! measuring HTTP/1.1 transport (plain and TLS) is `servebench-client`'s; this crate only
//! builds its settings and uses it for readiness and discovery.
//!
//! ```no_run
//! # async fn f() -> Result<(), servebench_endpoint::EndpointError> {
//! use servebench_endpoint::{api_key_or_env, CancelToken, Endpoint, Readiness, Target, TlsConfig};
//! let ep = Endpoint::new("https://h:8443/v1", api_key_or_env(None), &TlsConfig::default())?;
//! if let Some(note) = ep.normalisation_note() {
//!     println!("{note}");
//! }
//! let target = Target::remote(ep);
//! target.wait_ready(&Readiness::seconds(30.0), &CancelToken::new()).await?;
//! let model = servebench_endpoint::discover_model(target.endpoint()).await?;
//! # let _ = model; Ok(()) }
//! ```

#![warn(missing_docs)]

mod endpoint;
mod error;
mod ready;
mod target;
mod tls;

pub use endpoint::{api_key_or_env, normalise_base_url, Endpoint};
pub use error::EndpointError;
pub use ready::{
    cancel_on_ctrl_c, discover_model, model_not_served_warning, run_model, served_models, Readiness,
};
pub use servebench_client::http::CancelToken;
pub use target::{Simulator, Target};
pub use tls::TlsConfig;

#[cfg(feature = "sim")]
pub use servebench_sim::fleet_spec::FleetSpec;
#[cfg(feature = "sim")]
pub use servebench_sim::{AnswerBook, EngineOverrides, MetricsDialect, SimOptions, SimServer};
#[cfg(feature = "sim")]
pub use target::answer_book;
