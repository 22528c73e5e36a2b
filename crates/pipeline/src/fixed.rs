//! [`FixedSequence`]: the fixed-sequence random workload (InferenceX `random` dataset) as a
//! [`RequestWorkload`]: the dataset (built once per parameter set: a point or repeat with the
//! same ones reuses it), the warmup (2 × conc copies of prompt 0, discarded) and the measured
//! requests of a point, and what the point is; the session's [`crate::measure::Measured`]
//! skeleton measures it.

use std::path::Path;
use std::sync::Arc;

use servebench_client::{Api, BodyBuilder, ClientCtx, Clock, Compat, Endpoint, Load};
use servebench_metrics::{ItlMode, PromptCheck, PromptCount, ValidityOptions};
use servebench_workload::{
    build_calibrated, build_with_tokenizer, ChatTemplate, Dataset, DatasetSource, LocalTokenizer,
    RandomDatasetConfig,
};

use crate::console::Console;
use crate::error::{Context, PipelineError, Result};
use crate::executor::{PointSpec, SweepCtx};
use crate::measure::{PointMeta, PointRequests, PointRun, RequestWorkload, StreamFacts, Warmup};
use crate::plan::SweepPlan;
use crate::target::Target;

/// The fixed-sequence workload against one target: the client context (body shape after the
/// preflight) and the tokenizer that sizes prompts.
pub struct FixedSequence {
    base_ctx: ClientCtx,
    tokenizer: Option<Arc<LocalTokenizer>>,
    template: Option<Arc<ChatTemplate>>,
    /// What the requests promise (fixed output length, prompt lengths): the validity rules.
    validity: ValidityOptions,
    /// The last dataset built and its parameters: a point (or repeat) with the same ones
    /// reuses it (the build is a function of them, the tokenizer and the template; with a
    /// 128k-vocab tokenizer it was most of a short point's CPU).
    last: Option<(RandomDatasetConfig, Dataset)>,
}

impl FixedSequence {
    /// Loads the tokenizer (and chat template), builds the request body for `model` and sends
    /// the preflight request (one small request with the run's body shape).
    pub async fn new(
        plan: &SweepPlan,
        target: &Target,
        model: &str,
        console: &dyn Console,
    ) -> Result<FixedSequence> {
        let tokenizer: Option<Arc<LocalTokenizer>> = match &plan.tokenizer {
            Some(p) => Some(Arc::new(
                LocalTokenizer::from_path(p).map_err(PipelineError::Workload)?,
            )),
            None => None,
        };
        let template: Option<Arc<ChatTemplate>> = match (&plan.tokenizer, plan.chat_template) {
            (Some(tp), true) => {
                let dir = if tp.is_dir() {
                    tp.clone()
                } else {
                    tp.parent().map(Path::to_path_buf).unwrap_or_default()
                };
                Some(Arc::new(
                    ChatTemplate::from_tokenizer_config(&dir.join("tokenizer_config.json"))
                        .map_err(PipelineError::Workload)?,
                ))
            }
            _ => None,
        };
        if tokenizer.is_none() {
            console.line(&format!(
                "no --tokenizer: prompt lengths are calibrated against the server's tokenizer ({}/tokenize, else usage.prompt_tokens)",
                target.endpoint.base_url
            ));
        }
        let compat = plan.compat;
        let mut builder = BodyBuilder::new(
            model,
            plan.api,
            plan.engine,
            compat,
            plan.itl_mode == ItlMode::Token,
        );
        let base_ctx = ClientCtx {
            endpoint: target.endpoint.clone(),
            builder: builder.clone(),
            compat,
            new_connection_per_request: plan.new_connection_per_request
                || compat == Compat::InferenceX,
            timeout: target.client_wait(plan.timeout_s),
            clock: Clock::start(),
            capture_text: false,
            api_key: plan.api_key.clone(),
        };
        let preflight_prompt =
            crate::preflight::preflight(&base_ctx, &mut builder, plan.lenient).await?;
        let validity = validity_options(&builder, tokenizer.as_deref(), preflight_prompt)?;
        console.line(&validity_line(&validity));
        Ok(FixedSequence {
            base_ctx: ClientCtx {
                builder,
                ..base_ctx
            },
            tokenizer,
            template,
            validity,
            last: None,
        })
    }
}

impl RequestWorkload for FixedSequence {
    type Prepared = Dataset;

    fn client(&self) -> &ClientCtx {
        &self.base_ctx
    }

    async fn prepare(&mut self, ctx: &SweepCtx<'_>, conc: u64) -> Result<Dataset> {
        let p = fixed_plan(ctx.plan);
        let cfg = RandomDatasetConfig {
            input_len: p.isl,
            output_len: p.osl,
            range_ratio: p.range_ratio,
            num_prompts: p.prompts_at(conc),
            seed: p.seed,
        };
        if let Some((c, d)) = &self.last {
            if *c == cfg {
                return Ok(d.clone());
            }
        }
        let d = build_dataset(
            &cfg,
            self.tokenizer.clone(),
            self.template.clone(),
            &ctx.target.endpoint,
            ctx.model,
        )
        .await?;
        self.last = Some((cfg, d.clone()));
        Ok(d)
    }

    fn describe(&self, workload: &Dataset) -> String {
        workload.describe()
    }

    /// `conc 4: 40 measured requests (10 per lane), 8 warmup`: what a point of `conc` sends
    /// (the dataset line above names the first concurrency's prompts only).
    fn requests_line(&self, ctx: &SweepCtx<'_>, conc: u64) -> Option<String> {
        let f = fixed_plan(ctx.plan);
        let (n, w) = (f.prompts_at(conc), f.warmups_at(conc));
        let per_lane = if n as u64 % conc.max(1) == 0 {
            format!(" ({} per lane)", n as u64 / conc.max(1))
        } else {
            String::new()
        };
        Some(format!(
            "conc {conc}: {n} measured requests{per_lane}, {w} warmup"
        ))
    }

    /// Warmup: 2 × conc copies of prompt 0 (InferenceX's); measured: the dataset, closed loop
    /// at `conc`, or open loop at `--request-rate` (× the simulator's speedup: the rate is in
    /// modelled time) with at most `conc` in flight.
    fn requests(&self, ctx: &SweepCtx<'_>, dataset: &Dataset, point: &PointSpec) -> PointRun {
        let (c, f) = (ctx.plan, fixed_plan(ctx.plan));
        let conc = point.conc;
        let warmups = f.warmups_at(conc);
        PointRun::Stream(PointRequests {
            warmup: Some(Warmup {
                source: Box::new(DatasetSource::new(dataset.warmup_requests(warmups))),
                requests: warmups as u64,
            }),
            measured: Box::new(DatasetSource::new(dataset.requests())),
            requests: f.prompts_at(conc) as u64,
            load: match f.request_rate {
                Some(rate) => Load::Open {
                    rate: rate * ctx.target.sim_speedup,
                    burstiness: f.burstiness(),
                    max_concurrency: Some(conc as usize),
                    seed: u64::from(f.seed),
                },
                None => Load::Closed {
                    concurrency: conc as usize,
                },
            },
            cache_seed: f.seed,
            cache_prompts: dataset
                .entries
                .iter()
                .map(|e| crate::cache::fingerprint(&e.text))
                .collect(),
            facts: StreamFacts {
                backend: match c.api {
                    Api::Chat => "openai-chat".into(),
                    Api::Completions => c.engine.profile().completions_backend.into(),
                },
                tokenizer_id: match &dataset.token_source {
                    servebench_workload::TokenCountSource::LocalTokenizer(p) => p.clone(),
                    servebench_workload::TokenCountSource::Server(d) => format!("server: {d}"),
                },
                num_prompts: f.prompts_at(conc) as u64,
                request_rate: f.request_rate,
                burstiness: f.burstiness(),
                num_warmups: warmups as u64,
                dataset: dataset.describe(),
            },
        })
    }

    fn meta(&self, ctx: &SweepCtx<'_>, _dataset: &Dataset, _point: &PointSpec) -> PointMeta {
        PointMeta {
            api: ctx.plan.api,
            prompt_count: PromptCount::Client,
            lengths_in_row: true,
        }
    }

    fn validity(&self) -> Option<&ValidityOptions> {
        Some(&self.validity)
    }
}

/// The validity rules this run can apply: the output length is fixed when the body sends
/// `ignore_eos` or `min_tokens` (= `max_tokens`); the prompt length is checked only with the
/// model's own tokenizer (`--tokenizer`), against `usage.prompt_tokens` less the fixed overhead
/// the preflight measured (its one-word prompt: server count − client count).
fn validity_options(
    builder: &BodyBuilder,
    tokenizer: Option<&LocalTokenizer>,
    preflight_prompt_tokens: Option<u64>,
) -> Result<ValidityOptions> {
    let fixed_output =
        builder.fields.contains("ignore_eos") || builder.fields.contains("min_tokens");
    let prompt = match (tokenizer, preflight_prompt_tokens) {
        (None, _) => PromptCheck::NotChecked(
            "no --tokenizer (prompts were sized with the server's own count)".into(),
        ),
        (Some(_), None) => {
            PromptCheck::NotChecked("the preflight response carried no usage.prompt_tokens".into())
        }
        (Some(t), Some(server)) => {
            let client = t
                .encode(crate::preflight::PREFLIGHT_PROMPT)
                .map_err(PipelineError::Workload)?
                .len() as i64;
            PromptCheck::Check {
                overhead: server as i64 - client,
            }
        }
    };
    Ok(ValidityOptions {
        fixed_output,
        prompt,
    })
}

/// The one line saying which validity rules apply (docs/measurement.md "Validity rules").
fn validity_line(v: &ValidityOptions) -> String {
    let out = if v.fixed_output {
        "output length fixed by the request: every response must carry exactly max_tokens"
    } else {
        "output length not fixed by this engine profile: not checked"
    };
    let prompt = match &v.prompt {
        PromptCheck::Check { overhead } => format!(
            "prompt length checked: usage.prompt_tokens − {overhead} (server overhead measured by the preflight) within 5 % of the client count"
        ),
        PromptCheck::NotChecked(why) => format!("prompt length not checked: {why}"),
    };
    format!("validity: {out}; {prompt}")
}

async fn build_dataset(
    cfg: &RandomDatasetConfig,
    tokenizer: Option<Arc<LocalTokenizer>>,
    template: Option<Arc<ChatTemplate>>,
    ep: &Endpoint,
    model: &str,
) -> Result<Dataset> {
    let cfg = cfg.clone();
    let ep = ep.clone();
    let model = model.to_string();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || match tokenizer {
        Some(t) => build_with_tokenizer(&cfg, &t, template.as_deref()),
        None => {
            let mut counter =
                servebench_client::tokenize::ServerTokenCounter::new(ep, &model, handle);
            build_calibrated(&cfg, &mut counter)
        }
    })
    .await
    .context("dataset builder panicked")?
    .map_err(PipelineError::Workload)
}

/// The fixed-sequence flags of a plan this executor runs (built only for
/// [`Workload::FixedSequence`], crate::workload::AnyExecutor).
fn fixed_plan(plan: &crate::plan::SweepPlan) -> &crate::plan::FixedPlan {
    match &plan.workload {
        crate::plan::Workload::FixedSequence(f) => f,
        other => unreachable!(
            "the fixed-sequence executor runs a {} plan",
            other.scenario()
        ),
    }
}
