//! The preflight request: one small request with the run's body shape before anything is
//! measured, so a server that rejects an optional field fails in one line naming it (or, with
//! `lenient`, the field is dropped and the request retried).

use std::sync::Arc;
use std::time::Duration;

use servebench_client::{BodyBuilder, Cancel, ClientCtx, Phase};

use crate::error::{PipelineError, Result};

/// Returns a [`PipelineError::Preflight`] with a formatted message.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err(PipelineError::Preflight(format!($($t)*)))
    };
}

/// The preflight's prompt: one word, so its server-side count minus its client-side count is
/// the fixed per-prompt overhead the server adds (chat template, BOS), for the prompt-length
/// validity rule ([`servebench_metrics::validity`]).
pub const PREFLIGHT_PROMPT: &str = "Hello";

/// Sends the preflight; on success `builder` holds the accepted body shape and the result is
/// the response's `usage.prompt_tokens` (`None` when it carried none).
pub async fn preflight(
    ctx: &ClientCtx,
    builder: &mut BodyBuilder,
    lenient: bool,
) -> Result<Option<u64>> {
    let spec = servebench_workload::RequestSpec {
        id: 0,
        session: None,
        prompt: servebench_workload::Prompt::Text(Arc::from(PREFLIGHT_PROMPT)),
        prompt_tokens: None,
        max_tokens: 4,
        delay: Duration::ZERO,
    };
    let url = format!("{}{}", ctx.endpoint.base_url, ctx.builder.api.path());
    for _ in 0..8 {
        let c = ClientCtx {
            builder: builder.clone(),
            timeout: ctx.timeout.min(Duration::from_secs(120)),
            ..ctx.clone()
        };
        let mut slot = None;
        let rec = servebench_client::http::execute(
            &c,
            &mut slot,
            &spec,
            Phase::Warmup,
            c.clock.now_ns(),
            &mut Cancel::never(),
        )
        .await;
        if rec.success {
            return Ok(rec.prompt_tokens_server);
        }
        let err = rec.error.clone().unwrap_or_default();
        let one_line: String = err.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(status) = rec.http_status.filter(|s| (400..500).contains(s)) {
            let fields = servebench_client::unknown_fields_in(&err, &builder.sent_optional());
            if !fields.is_empty() {
                let names = fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if !lenient {
                    bail!(
                        "{url} rejected request field {names} (HTTP {status}: {one_line}); choose an --engine profile without it (e.g. --engine transformers) or pass --lenient to retry without it"
                    );
                }
                eprintln!("warning: {url} rejected {names} (HTTP {status}); --lenient: retrying without it");
                let mut dropped = false;
                for f in fields {
                    dropped |= builder.drop_field(f);
                }
                if dropped {
                    continue;
                }
            }
            bail!("{url}: preflight request failed with HTTP {status}: {one_line}");
        }
        bail!(
            "{url}: preflight request failed ({}): {one_line}",
            rec.failure.unwrap_or_else(|| "unknown".into())
        );
    }
    bail!("{url}: the server kept rejecting request fields")
}
