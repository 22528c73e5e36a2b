//! [`FixedSequence`]: the fixed-sequence random workload (InferenceX `random` dataset) as an
//! [`Executor`]. Per point: the dataset (built once per concurrency), warmup (2 × conc copies of
//! prompt 0, discarded), the measured phase, the metrics, the raw result and the agg row.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use servebench_client::{
    run_phase, Api, BodyBuilder, ClientCtx, Clock, Compat, Endpoint, Load, Phase,
    RecordWriterThread, RequestRecord,
};
use servebench_metrics::{
    agg_row, compute, result_doc, AggExtra, ItlMode, PointOptions, PromptCheck, ResultFile,
    ResultSetup, RunInfo, ValidityOptions,
};
use servebench_workload::{
    build_calibrated, build_with_tokenizer, ChatTemplate, Dataset, DatasetSource, LocalTokenizer,
    RandomDatasetConfig,
};

use crate::error::{Context, PipelineError, Result};
use crate::executor::{Executor, PointOutput, PointSpec, SweepCtx};
use crate::observe::Console;
use crate::plan::SweepPlan;
use crate::progress::{PointProgress, ProgressCounter};
use crate::target::Target;

/// The fixed-sequence workload against one target: the client context (body shape after the
/// preflight) and the tokenizer that sizes prompts.
pub struct FixedSequence {
    base_ctx: ClientCtx,
    tokenizer: Option<Arc<LocalTokenizer>>,
    template: Option<Arc<ChatTemplate>>,
    /// What the requests promise (fixed output length, prompt lengths): the validity rules.
    validity: ValidityOptions,
    /// `--flush-cache` and the prompts sent so far (warm-cache warnings).
    cache: crate::cache::CacheControl,
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
            timeout: Duration::from_secs_f64(plan.timeout_s),
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
            cache: crate::cache::CacheControl::new(plan.flush_cache.clone(), plan.engine),
        })
    }
}

impl Executor for FixedSequence {
    type Workload = Dataset;

    async fn prepare(&mut self, ctx: &SweepCtx<'_>, conc: u64) -> Result<Dataset> {
        let p = fixed_plan(ctx.plan);
        let cfg = RandomDatasetConfig {
            input_len: p.isl,
            output_len: p.osl,
            range_ratio: p.range_ratio,
            num_prompts: p.prompts_at(conc),
            seed: p.seed,
        };
        build_dataset(
            &cfg,
            self.tokenizer.clone(),
            self.template.clone(),
            &ctx.target.endpoint,
            ctx.model,
        )
        .await
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

    async fn run_point(
        &mut self,
        ctx: &SweepCtx<'_>,
        dataset: &Dataset,
        point: &PointSpec,
    ) -> Result<PointOutput> {
        let c = ctx.plan;
        let f = fixed_plan(c);
        let (conc, label) = (point.conc, point.label());
        let (compat, api, itl_mode) = (c.compat, c.api, c.itl_mode);
        let num_prompts = f.prompts_at(conc);
        let num_warmups = f.warmups_at(conc);
        let base_ctx = &self.base_ctx;
        let writer = RecordWriterThread::spawn(&point.dir.join("records.jsonl"))
            .map_err(PipelineError::Client)?;
        let load = match f.request_rate {
            // against the simulator the rate is in modelled time: wall rate = rate × speedup
            Some(rate) => Load::Open {
                rate: rate * ctx.target.sim_speedup,
                burstiness: f.burstiness(),
                max_concurrency: Some(conc as usize),
                seed: u64::from(f.seed),
            },
            None => Load::Closed {
                concurrency: conc as usize,
            },
        };
        // the warmup's records, kept for the point's in-memory records (as in records.jsonl)
        let mut warmup_records = Vec::new();
        if num_warmups > 0 {
            let bar = PointProgress::requests(ctx, num_warmups as u64, &format!("{label} warmup"));
            let r = run_phase(
                base_ctx.clone(),
                Phase::Warmup,
                Box::new(DatasetSource::new(dataset.warmup_requests(num_warmups))),
                Load::Closed {
                    concurrency: conc as usize,
                },
                sink(writer.sender(), bar.counter()),
                ctx.cancel.clone(),
            )
            .await;
            bar.finish();
            let failed = r.records.iter().filter(|r| !r.success).count();
            if failed > 0 && !ctx.tty {
                ctx.console.warn(&format!(
                    "{label}: warmup: {failed} of {} requests failed",
                    r.records.len()
                ));
            }
            warmup_records = r.records;
        }
        if ctx.cancel.is_cancelled() {
            writer.finish().map_err(PipelineError::Client)?;
            return Err(PipelineError::Interrupted);
        }
        // after the warmup (it repeats prompt 0), right before the measured phase
        let prompts: Vec<u64> = dataset
            .entries
            .iter()
            .map(|e| crate::cache::fingerprint(&e.text))
            .collect();
        let cache_before = self
            .cache
            .before_measured(
                &ctx.target.endpoint,
                &label,
                f.seed,
                &prompts,
                &**ctx.console,
            )
            .await;
        let bar = PointProgress::requests(ctx, num_prompts as u64, &label);
        let wall_start = chrono::Utc::now();
        let res = run_phase(
            base_ctx.clone(),
            Phase::Measured,
            Box::new(DatasetSource::new(dataset.requests())),
            load,
            sink(writer.sender(), bar.counter()),
            ctx.cancel.clone(),
        )
        .await;
        bar.finish();
        let wall_end = chrono::Utc::now();
        writer.finish().map_err(PipelineError::Client)?;
        let prefix_cache = self
            .cache
            .after_measured(&ctx.target.endpoint, &label, cache_before, &**ctx.console)
            .await;
        self.cache.sent(&prompts);
        let mut m = compute(
            &res.records,
            &PointOptions {
                compat,
                itl_mode,
                phase_window_ns: (res.start_ns, res.end_ns),
                max_failed_fraction: 0.05,
                cancelled: res.cancelled,
                prompt_count: servebench_metrics::PromptCount::Client,
            },
        );
        let validity = servebench_metrics::validity::check(&res.records, &self.validity);
        m.apply_validity(&validity, &self.validity);
        let target = ctx.target;
        m.rescale_time(target.sim_speedup);
        let extra = AggExtra {
            benchmark_type: "single_turn".into(),
            api: api.as_str().into(),
            engine: c.engine.name().into(),
            endpoint: target.endpoint.base_url.clone(),
            records_file: "records.jsonl".into(),
        };
        let agg = agg_row(ctx.identity, Some(conc), &m, &extra);
        let info = RunInfo {
            date: wall_start.format("%Y%m%d-%H%M%S").to_string(),
            backend: match api {
                Api::Chat => "openai-chat".into(),
                Api::Completions => c.engine.profile().completions_backend.into(),
            },
            model_id: ctx.model.to_string(),
            tokenizer_id: match &dataset.token_source {
                servebench_workload::TokenCountSource::LocalTokenizer(p) => p.clone(),
                servebench_workload::TokenCountSource::Server(d) => format!("server: {d}"),
            },
            num_prompts: num_prompts as u64,
            request_rate: f.request_rate,
            burstiness: f.burstiness(),
            max_concurrency: Some(conc),
            benchmark_start_time_unix: wall_start.timestamp_micros() as f64 / 1e6,
            benchmark_end_time_unix: wall_end.timestamp_micros() as f64 / 1e6,
        };
        let setup = ResultSetup {
            api: api.as_str().into(),
            engine: c.engine.name().into(),
            endpoint: target.endpoint.base_url.clone(),
            request_fields: base_ctx
                .builder
                .sent_optional()
                .into_iter()
                .map(String::from)
                .collect(),
            new_connection_per_request: base_ctx.new_connection_per_request,
            num_warmups: num_warmups as u64,
            dataset: dataset.describe(),
            validity_not_checked: validity.unchecked.clone(),
            simulator: target.simulator_info(),
            time_scale: target.sim_speedup,
            records_file: "records.jsonl".into(),
            repeat: point.repeat,
            repeats: point.repeats,
            prefix_cache,
        };
        let result = ResultFile::Single(Box::new(result_doc(&info, &m, setup)));
        Ok(PointOutput {
            spec: point.clone(),
            metrics: m,
            agg,
            result,
            wall_s: (res.end_ns.saturating_sub(res.start_ns)) as f64 / 1e9,
            records: warmup_records.into_iter().chain(res.records).collect(),
        })
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

fn sink(
    tx: std::sync::mpsc::Sender<RequestRecord>,
    bar: ProgressCounter,
) -> servebench_client::RecordSink {
    // records go to the writer thread; nothing here blocks the async workers
    let tx = std::sync::Mutex::new(tx);
    Arc::new(move |r: &RequestRecord| {
        let _ = tx.lock().unwrap_or_else(|p| p.into_inner()).send(r.clone());
        bar.inc();
    })
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
