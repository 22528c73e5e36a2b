//! Running GSM8K against an OpenAI-compatible endpoint: request construction, the concurrent
//! client with retries, resume, aggregation and the result files.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};

use servebench_endpoint::{run_model, CancelToken, Readiness, Target};

use crate::error::{DocFailure, EvalError, InputFile, WriteOp};
use crate::result::{EvalMeta, EvalResult, EvalRow, SampleRecord};
use crate::scoring::{mean, mean_stderr};
use crate::task::{load_docs, resolve_data_dir, Doc, Message, Profile, TaskSpec, REQUEST_SEED};
use crate::thresholds::{gate, Thresholds};

/// Everything [`run_gsm8k`] needs besides the [`Target`]. `Default` gives InferenceX's
/// settings, 16 requests in flight, output in `servebench-out/eval-gsm8k`.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// `model` sent in requests. `None` = the first id of `GET /v1/models`
    /// ([`servebench_endpoint::discover_model`]).
    pub model: Option<String>,
    /// Requests in flight (lm-eval `num_concurrent`); also the connection pool size.
    pub conc: usize,
    /// Only the first N test documents (lm-eval `--limit N`).
    pub limit: Option<usize>,
    /// Task definition.
    pub profile: Profile,
    /// `max_tokens` (default: [`TaskSpec::default_max_tokens`]).
    pub max_tokens: Option<u32>,
    /// Per-request timeout, each attempt (lm-eval/InferenceX: 1800 s).
    pub request_timeout: Duration,
    /// Retries after the first attempt on connection errors, HTTP 429 and 5xx.
    pub max_retries: u32,
    /// Smallest backoff; attempt k waits `clamp(0.5·2^k s, min, 10·min)` (tenacity's
    /// `wait_exponential(multiplier=0.5, min=1, max=10)` with min = 1 s).
    pub retry_backoff_min: Duration,
    /// Output folder: `result.json`, `samples.jsonl`.
    pub out_dir: PathBuf,
    /// Ignore an existing `samples.jsonl` instead of resuming from it.
    pub fresh: bool,
    /// GSM8K folder (`test.jsonl`, `train.jsonl`, `example_model_solutions.jsonl`).
    pub data_dir: Option<PathBuf>,
    /// `--threshold` (validate_scores.py `--min-score`).
    pub threshold: Option<f64>,
    /// `thresholds.yaml`.
    pub thresholds_file: Option<PathBuf>,
    /// Row metadata; `meta.model_prefix` is also the thresholds key.
    pub meta: EvalMeta,
    /// Said in the summary and `result.json` when the target replays recorded answers (the
    /// embedded simulator with the GSM8K answer book; see [`crate::sim_answers::replay_note`]).
    pub replay_note: Option<String>,
    /// The simulator answered with this chosen accuracy (`--sim-gsm8k-accuracy`,
    /// [`crate::sim_answers::with_accuracy`]): written into the row as `simulated_accuracy`,
    /// so a stored score is never taken for a measurement.
    pub simulated_accuracy: Option<f64>,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// Stop request (Ctrl-C; the endpoint layer's one token): the run ends early with a
    /// partial result.
    pub cancel: CancelToken,
    /// Readiness wait ([`Readiness`]): when set, an endpoint must answer `GET /health` or
    /// `GET /v1/models` with HTTP 200 (API key sent) within this time before any request is
    /// sent. `None` (the default) sends at once; the CLI and the sweep set it
    /// (`--ready-timeout`, 30 s). The simulator is ready once started.
    pub ready_timeout: Option<Duration>,
    /// Warn (stderr, one line) when a given `model` is not among the ids of `GET /v1/models`
    /// of an endpoint ([`servebench_endpoint::model_not_served_warning`]). Default true; a
    /// sweep that already checked the same model sets false.
    pub check_model: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            model: None,
            conc: 16,
            limit: None,
            profile: Profile::InferenceX,
            max_tokens: None,
            request_timeout: Duration::from_secs(1800),
            max_retries: 5,
            retry_backoff_min: Duration::from_secs(1),
            out_dir: PathBuf::from("servebench-out/eval-gsm8k"),
            fresh: false,
            data_dir: None,
            threshold: None,
            thresholds_file: None,
            meta: EvalMeta::default(),
            replay_note: None,
            simulated_accuracy: None,
            progress: false,
            cancel: CancelToken::new(),
            ready_timeout: None,
            check_model: true,
        }
    }
}

/// The chat-completions URL for a base URL.
pub fn chat_url(endpoint: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    if e.ends_with("/chat/completions") {
        e.to_string()
    } else if e.ends_with("/v1") {
        format!("{e}/chat/completions")
    } else {
        format!("{e}/v1/chat/completions")
    }
}

/// The base URL of an `--endpoint` given to eval: the full `…/v1/chat/completions` is
/// accepted too (lm-eval's `base_url`), so that suffix is dropped before the endpoint layer's
/// normalisation (`…/v1` and trailing slashes).
pub fn chat_base(endpoint: &str) -> &str {
    let e = endpoint.trim_end_matches('/');
    e.strip_suffix("/chat/completions").unwrap_or(e)
}

/// Request parameters other than `messages`, in the order lm-eval's `LocalChatCompletion`
/// builds them (`model, max_tokens, temperature, stop, seed`, then the `--gen_kwargs`
/// InferenceX adds: `top_p`). `temperature` 0 and `top_p` 1 are integers, as lm-eval sends
/// them when they come from `--gen_kwargs temperature=0,top_p=1`.
pub fn request_params(spec: &TaskSpec, model: &str, max_tokens: u32) -> Value {
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stop": spec.stop.iter().take(4).collect::<Vec<_>>(),
        "seed": REQUEST_SEED,
        "top_p": 1,
    })
}

/// The full request body: `messages` first, then [`request_params`].
pub fn request_body(messages: &[Message], params: &Value) -> Value {
    let mut body = serde_json::Map::new();
    body.insert(
        "messages".into(),
        serde_json::to_value(messages).expect("messages serialise"),
    );
    if let Value::Object(p) = params {
        for (k, v) in p {
            body.insert(k.clone(), v.clone());
        }
    }
    Value::Object(body)
}

/// Picks the text to score from a chat-completions response: `choices[0].message.content`,
/// or `reasoning_content` when content is null or empty (InferenceX's lm-eval patch), else "".
/// Returns `(text, source)` with source `content`, `reasoning_content` or `none`.
pub fn response_text(resp: &Value) -> (String, &'static str) {
    let msg = resp.pointer("/choices/0/message");
    let field = |k: &str| {
        msg.and_then(|m| m.get(k))
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    if let Some(c) = field("content") {
        (c.to_string(), "content")
    } else if let Some(r) = field("reasoning_content") {
        (r.to_string(), "reasoning_content")
    } else {
        (String::new(), "none")
    }
}

struct Sent {
    response: Value,
    attempts: u32,
    latency_ms: f64,
}

async fn send_with_retries(
    client: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: Vec<u8>,
    opts: &EvalOptions,
) -> Result<Sent, DocFailure> {
    let t0 = Instant::now();
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let mut req = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(k) = api_key {
            req = req.bearer_auth(k);
        }
        let failure = match req.send().await {
            Ok(resp) => {
                let status = resp.status();
                match resp.bytes().await {
                    Ok(bytes) if status.is_success() => {
                        let response =
                            serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|_| {
                                Value::String(String::from_utf8_lossy(&bytes).into_owned())
                            });
                        return Ok(Sent {
                            response,
                            attempts: attempt,
                            latency_ms: t0.elapsed().as_secs_f64() * 1e3,
                        });
                    }
                    Ok(bytes) => DocFailure::Http {
                        url: url.to_string(),
                        status: status.as_u16(),
                        body: String::from_utf8_lossy(&bytes).chars().take(200).collect(),
                    },
                    Err(e) if e.is_timeout() => DocFailure::BodyTimeout {
                        url: url.to_string(),
                        timeout_s: opts.request_timeout.as_secs_f64(),
                    },
                    Err(error) => DocFailure::Body {
                        url: url.to_string(),
                        error,
                    },
                }
            }
            Err(e) if e.is_timeout() => DocFailure::Timeout {
                url: url.to_string(),
                timeout_s: opts.request_timeout.as_secs_f64(),
            },
            Err(error) if error.is_connect() || error.is_request() => DocFailure::Connect {
                url: url.to_string(),
                error,
            },
            Err(error) => DocFailure::Request {
                url: url.to_string(),
                error,
            },
        };
        if !failure.is_retryable() {
            return Err(failure);
        }
        if attempt > opts.max_retries {
            return Err(DocFailure::GaveUp {
                last: Box::new(failure),
                attempts: attempt,
            });
        }
        tokio::time::sleep(backoff(attempt, opts.retry_backoff_min)).await;
    }
}

/// Wait before retry number `attempt` (1-based): tenacity `wait_exponential(multiplier=0.5,
/// min=1, max=10)` scaled so that `min` is the given duration: 1, 2, 4, 8, 10, 10 … × min.
pub fn backoff(attempt: u32, min: Duration) -> Duration {
    let factor = (0.5 * 2f64.powi(attempt.min(30) as i32)).clamp(1.0, 10.0);
    min.mul_f64(factor)
}

/// Reads `samples.jsonl` from an earlier run and keeps the records that belong to this run
/// (same doc range, profile, request parameters and messages). The file is rewritten with
/// only those (dropping a torn last line), so appending continues cleanly. Returns the kept
/// records, the lines of a different run dropped, and the lines that do not parse (a line cut
/// by a crash).
fn resume(
    path: &Path,
    prompts: &[Vec<Message>],
    params: &Value,
    profile: Profile,
) -> Result<(BTreeMap<usize, SampleRecord>, usize, usize), EvalError> {
    let mut kept = BTreeMap::new();
    let mut dropped = 0;
    let mut torn = 0;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((kept, 0, 0)),
        Err(error) => {
            return Err(EvalError::Read {
                file: InputFile::Samples,
                path: path.to_path_buf(),
                error,
            })
        }
    };
    for line in text.lines() {
        let Ok(rec) = serde_json::from_str::<SampleRecord>(line) else {
            torn += 1;
            continue;
        };
        let ok = rec.doc_id < prompts.len()
            && rec.profile == profile
            && &rec.request == params
            && rec.messages == prompts[rec.doc_id]
            && !kept.contains_key(&rec.doc_id);
        if ok {
            kept.insert(rec.doc_id, rec);
        } else {
            dropped += 1;
        }
    }
    let tmp = path.with_extension("jsonl.tmp");
    {
        let mut f = std::fs::File::create(&tmp).map_err(write_err(WriteOp::Write, &tmp))?;
        for rec in kept.values() {
            serde_json::to_writer(&mut f, rec)?;
            f.write_all(b"\n")?;
        }
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).map_err(write_err(WriteOp::Replace, path))?;
    Ok((kept, dropped, torn))
}

/// Runs GSM8K and writes `result.json` and `samples.jsonl` under `opts.out_dir`.
///
/// Async: call it from a tokio runtime (the sweep does; `servebench eval gsm8k` builds one).
/// `target` is the endpoint (API key and TLS settings included) or the embedded simulator,
/// started by the caller (`servebench_endpoint::Target`). Steps: readiness wait (when
/// [`EvalOptions::ready_timeout`] is set); load `test.jsonl`/`train.jsonl`; build every prompt in doc order (few-shot draws are
/// sequential); resume from `samples.jsonl` unless `fresh`; send the remaining documents with
/// `conc` requests in flight (non-streaming chat completions, retries per
/// [`EvalOptions::max_retries`]); score each response as it arrives and append its line;
/// aggregate in doc order (mean and standard error as lm-eval); apply the threshold gate.
///
/// # Errors
/// Missing/malformed data files (named), unreachable endpoint, a request that fails after its
/// retries or with a non-retryable status (the run stops; finished samples stay in
/// `samples.jsonl` and a rerun with the same `out_dir` resumes), unwritable output folder.
/// A cancelled [`EvalOptions::cancel`] is not an error: the result of the samples finished so far comes back
/// with `interrupted = true` and `result.json` says `"partial": true`.
pub async fn run_gsm8k(target: &Target, opts: EvalOptions) -> Result<EvalResult, EvalError> {
    if opts.conc < 1 {
        return Err(EvalError::ZeroConcurrency);
    }
    let spec = TaskSpec::new(opts.profile);
    let dir = resolve_data_dir(opts.data_dir.as_deref())?;
    let test = load_docs(&dir.join("test.jsonl"))?;
    let train = load_docs(&dir.join("train.jsonl"))?;
    let n = opts.limit.map_or(test.len(), |l| l.min(test.len()));
    let prompts = spec.build_prompts(&test, &train, n)?;

    std::fs::create_dir_all(&opts.out_dir)
        .map_err(write_err(WriteOp::CreateFolder, &opts.out_dir))?;
    let samples_file = opts.out_dir.join("samples.jsonl");
    let result_file = opts.out_dir.join("result.json");

    run_on_target(
        &opts,
        &spec,
        &test,
        &prompts,
        target,
        &samples_file,
        &result_file,
    )
    .await
}

/// One eval run against a started target: settles the model, keeps the resumable samples,
/// sends the rest ([`send_all`]) and aggregates ([`eval_row`]) into `result.json`.
#[allow(clippy::too_many_arguments)]
async fn run_on_target(
    opts: &EvalOptions,
    spec: &TaskSpec,
    test: &[Doc],
    prompts: &[Vec<Message>],
    target: &Target,
    samples_file: &Path,
    result_file: &Path,
) -> Result<EvalResult, EvalError> {
    let ep = target.endpoint();
    let url = ep.url("/v1/chat/completions");
    let describe = match target.simulator() {
        Some(s) => s.describe().to_string(),
        None => format!("endpoint {url}"),
    };
    let client = http_client(opts, ep)?;
    if let Some(max_wait) = opts.ready_timeout {
        target
            .wait_ready(&Readiness { timeout: max_wait }, &opts.cancel)
            .await?;
    }
    let (model, warning) = run_model(target, opts.model.as_deref(), opts.check_model).await?;
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    let max_tokens = opts.max_tokens.unwrap_or(spec.default_max_tokens);
    let params = request_params(spec, &model, max_tokens);
    let mut done = kept_samples(opts, spec, prompts, &params, samples_file)?;
    let resumed = done.len();
    let todo: Vec<usize> = (0..prompts.len())
        .filter(|i| !done.contains_key(i))
        .collect();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(samples_file)
        .map_err(write_err(WriteOp::Write, samples_file))?;
    let pb = progress_bar(opts, prompts.len(), resumed);
    let sender = Sender {
        opts,
        spec,
        test,
        prompts,
        client: &client,
        url: &url,
        api_key: ep.api_key(),
        params: &params,
        file: Mutex::new(file),
        pb: &pb,
        stop: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
    };
    let t0 = Instant::now();
    let results = sender.send_all(todo).await;
    let duration_s = t0.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let requests_sent = sender.sent.load(Ordering::Relaxed);

    let first_error = collect(results, &mut done);
    let interrupted = opts.cancel.is_cancelled();
    if let (Some((doc, failure)), false) = (first_error, interrupted) {
        return Err(EvalError::Doc {
            doc,
            failure,
            saved: done.len(),
            total: prompts.len(),
            samples_file: samples_file.to_path_buf(),
        });
    }
    let (row, gate) = eval_row(opts, spec, model, &done)?;
    let result = EvalResult {
        row,
        gate,
        profile: opts.profile,
        url: url.clone(),
        target: describe,
        replay_note: opts.replay_note.clone(),
        result_file: result_file.to_path_buf(),
        samples_file: samples_file.to_path_buf(),
        resumed,
        requests_sent,
        duration_s,
        max_tokens,
        interrupted,
    };
    write_result_json(&result, spec, test.len())?;
    Ok(result)
}

/// The HTTP client of the run: `conc` idle connections, the per-request timeout, and the
/// endpoint layer's TLS roots (and `--ca-cert`), not reqwest's own.
fn http_client(
    opts: &EvalOptions,
    ep: &servebench_endpoint::Endpoint,
) -> Result<reqwest::Client, EvalError> {
    let mut builder = reqwest::Client::builder()
        .pool_max_idle_per_host(opts.conc)
        .timeout(opts.request_timeout)
        .connect_timeout(Duration::from_secs(30).min(opts.request_timeout));
    if let Some(tls) = ep.tls_config() {
        builder = builder.use_preconfigured_tls((*tls).clone());
    }
    builder.build().map_err(EvalError::HttpClient)
}

/// The samples kept from `samples.jsonl` (none with `fresh`, which deletes the file), said on
/// stderr when any were kept or dropped, re-scored with the current scorer.
fn kept_samples(
    opts: &EvalOptions,
    spec: &TaskSpec,
    prompts: &[Vec<Message>],
    params: &Value,
    samples_file: &Path,
) -> Result<BTreeMap<usize, SampleRecord>, EvalError> {
    let (mut done, dropped, torn) = if opts.fresh {
        let _ = std::fs::remove_file(samples_file);
        (BTreeMap::new(), 0, 0)
    } else {
        resume(samples_file, prompts, params, opts.profile)?
    };
    let resumed = done.len();
    if resumed > 0 || dropped > 0 || torn > 0 {
        eprintln!(
            "resuming from {}: {resumed} samples kept{}{}",
            samples_file.display(),
            if dropped > 0 {
                format!(", {dropped} lines from a different run dropped")
            } else {
                String::new()
            },
            if torn > 0 {
                format!(", {torn} cut line(s) (an interrupted write) dropped")
            } else {
                String::new()
            }
        );
    }
    for rec in done.values_mut() {
        let v = spec.score(&rec.text, &rec.target);
        rec.target_normalised = v.reference_normalised;
        rec.strict = v.strict;
        rec.flexible = v.flexible;
    }
    Ok(done)
}

/// The progress bar on stderr (hidden unless [`EvalOptions::progress`]), at `resumed` of
/// `total`.
fn progress_bar(opts: &EvalOptions, total: usize, resumed: usize) -> indicatif::ProgressBar {
    if !opts.progress {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "gsm8k {bar:40} {pos}/{len} [{elapsed_precise}<{eta_precise}] {msg}",
        )
        .expect("valid template"),
    );
    pb.set_position(resumed as u64);
    pb
}

/// A document's outcome: its scored sample, or its id with why it failed (`None`: not sent or
/// abandoned, after an earlier failure or Ctrl-C).
type DocOutcome = Result<SampleRecord, (usize, Option<DocFailure>)>;

/// What sending the documents shares: the request parts, the samples file, the progress bar,
/// the stop flag (set by the first failure) and the count of requests sent.
struct Sender<'a> {
    opts: &'a EvalOptions,
    spec: &'a TaskSpec,
    test: &'a [Doc],
    prompts: &'a [Vec<Message>],
    client: &'a reqwest::Client,
    url: &'a str,
    api_key: Option<&'a str>,
    params: &'a Value,
    file: Mutex<std::fs::File>,
    pb: &'a indicatif::ProgressBar,
    stop: AtomicBool,
    sent: AtomicUsize,
}

impl Sender<'_> {
    /// Sends the documents `todo` with `conc` requests in flight, in any order.
    async fn send_all(&self, todo: Vec<usize>) -> Vec<DocOutcome> {
        futures_util::stream::iter(todo)
            .map(|doc_id| self.one(doc_id))
            .buffer_unordered(self.opts.conc)
            .collect()
            .await
    }

    /// Sends one document (with retries), scores the response and appends its sample line; a
    /// failure stops the documents not yet sent, Ctrl-C abandons this one (a rerun resumes it).
    async fn one(&self, doc_id: usize) -> DocOutcome {
        let opts = self.opts;
        if self.stop.load(Ordering::Relaxed) || opts.cancel.is_cancelled() {
            return Err((doc_id, None));
        }
        let messages = &self.prompts[doc_id];
        let body =
            serde_json::to_vec(&request_body(messages, self.params)).expect("body serialises");
        self.sent.fetch_add(1, Ordering::Relaxed);
        let r = tokio::select! {
            r = send_with_retries(self.client, self.url, self.api_key, body, opts) => r,
            () = opts.cancel.cancelled() => return Err((doc_id, None)),
        };
        let s = match r {
            Ok(s) => s,
            Err(e) => {
                self.stop.store(true, Ordering::Relaxed);
                return Err((doc_id, Some(e)));
            }
        };
        let (text, source) = response_text(&s.response);
        let target_text = &self.test[doc_id].answer;
        let v = self.spec.score(&text, target_text);
        let rec = SampleRecord {
            doc_id,
            profile: opts.profile,
            request: self.params.clone(),
            messages: messages.clone(),
            response: s.response,
            text,
            text_source: source.to_string(),
            target: target_text.clone(),
            target_normalised: v.reference_normalised,
            strict: v.strict,
            flexible: v.flexible,
            attempts: s.attempts,
            latency_ms: s.latency_ms,
        };
        let mut line = serde_json::to_vec(&rec).expect("record serialises");
        line.push(b'\n');
        {
            let mut f = self.file.lock().expect("samples file lock");
            if let Err(e) = f.write_all(&line).and_then(|_| f.flush()) {
                self.stop.store(true, Ordering::Relaxed);
                return Err((doc_id, Some(DocFailure::Append(e))));
            }
        }
        self.pb.inc(1);
        Ok(rec)
    }
}

/// Moves the scored samples of `results` into `done`; returns the failure of the lowest
/// document id, if any.
fn collect(
    results: Vec<DocOutcome>,
    done: &mut BTreeMap<usize, SampleRecord>,
) -> Option<(usize, DocFailure)> {
    let mut first_error: Option<(usize, DocFailure)> = None;
    for r in results {
        match r {
            Ok(rec) => {
                done.insert(rec.doc_id, rec);
            }
            Err((id, Some(failure))) => {
                if first_error.as_ref().is_none_or(|(fid, _)| id < *fid) {
                    first_error = Some((id, failure));
                }
            }
            Err((_, None)) => {}
        }
    }
    first_error
}

/// The aggregate row (§4.4: exact match strict/flexible, their standard errors, n_eff, in doc
/// order as lm-eval) and the threshold gate of the samples `done`.
fn eval_row(
    opts: &EvalOptions,
    spec: &TaskSpec,
    model: String,
    done: &BTreeMap<usize, SampleRecord>,
) -> Result<(EvalRow, crate::thresholds::GateVerdict), EvalError> {
    let strict: Vec<f64> = done
        .values()
        .map(|r| f64::from(u8::from(r.strict.correct)))
        .collect();
    let flexible: Vec<f64> = done
        .values()
        .map(|r| f64::from(u8::from(r.flexible.correct)))
        .collect();
    let em_strict = mean(&strict);
    let em_flexible = mean(&flexible);
    let em_strict_se = mean_stderr(&strict);
    let em_flexible_se = mean_stderr(&flexible);

    let thresholds = match &opts.thresholds_file {
        Some(p) => Some(Thresholds::load(p)?),
        None => None,
    };
    let threshold = Thresholds::resolve(
        thresholds.as_ref(),
        opts.meta.model_prefix.as_deref(),
        spec.task,
        opts.threshold,
    );
    let gate = gate(threshold, em_strict, em_flexible);

    let m = &opts.meta;
    let row = EvalRow {
        is_multinode: false,
        model_prefix: m.model_prefix.clone(),
        model,
        hw: m.hw.as_ref().map(|h| h.to_uppercase()),
        framework: m.framework.clone(),
        precision: m.precision.clone(),
        spec_decoding: m.spec_decoding.clone(),
        isl: m.isl,
        osl: m.osl,
        tp: m.tp,
        ep: m.ep,
        prefill_tp: None,
        prefill_ep: None,
        prefill_num_workers: None,
        decode_tp: None,
        decode_ep: None,
        decode_num_workers: None,
        conc: opts.conc as u32,
        dp_attention: m.dp_attention,
        prefill_dp_attention: None,
        decode_dp_attention: None,
        task: spec.task.to_string(),
        em_strict,
        em_strict_se,
        em_flexible,
        em_flexible_se,
        n_eff: done.len(),
        source: "result.json".into(),
        score: em_strict,
        score_name: "em_strict".into(),
        score_se: em_strict_se,
        threshold: None,
        threshold_source: None,
        passed: None,
        image: None,
        target: None,
        identity_defaults: None,
        extra: Default::default(),
    };
    let mut row = row;
    if let Some(a) = opts.simulated_accuracy {
        row.set_extra(crate::sim_answers::SIMULATED_ACCURACY_KEY, json!(a));
    }
    Ok((row, gate))
}

fn stderr_value(x: Option<f64>) -> Value {
    x.map_or(Value::String("N/A".into()), |v| json!(v))
}

/// Writes `result.json`: `schema_version`, the §4.4 `row`, lm-eval-shaped `results` /
/// `n-samples` (so InferenceX's `collect_eval_results.py` logic applies unchanged), the gate,
/// and run details.
fn write_result_json(r: &EvalResult, spec: &TaskSpec, n_original: usize) -> Result<(), EvalError> {
    let row = &r.row;
    let doc = json!({
        "schema_version": 1,
        "row": row,
        "results": {
            spec.task: {
                "alias": spec.task,
                "exact_match,strict-match": row.em_strict,
                "exact_match_stderr,strict-match": stderr_value(row.em_strict_se),
                "exact_match,flexible-extract": row.em_flexible,
                "exact_match_stderr,flexible-extract": stderr_value(row.em_flexible_se),
            }
        },
        "n-samples": { spec.task: { "original": n_original, "effective": row.n_eff } },
        "partial": r.interrupted,
        "gate": r.gate,
        "servebench": {
            "profile": r.profile,
            "url": r.url,
            "target": r.target,
            "replay_note": r.replay_note,
            "samples_file": "samples.jsonl",
            "max_tokens": r.max_tokens,
            "stop": spec.stop,
            "num_fewshot": spec.num_fewshot,
            "fewshot_seed": spec.fewshot_seed,
            "resumed": r.resumed,
            "requests_sent": r.requests_sent,
            "duration_s": r.duration_s,
            "interrupted": r.interrupted,
        }
    });
    let text = serde_json::to_string_pretty(&doc)?;
    std::fs::write(&r.result_file, text + "\n").map_err(write_err(WriteOp::Write, &r.result_file))
}

/// `cannot <op> <path>` over the operating system's error.
fn write_err(op: WriteOp, path: &Path) -> impl FnOnce(std::io::Error) -> EvalError + '_ {
    move |source| EvalError::Write {
        op,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(chat_url("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(chat_url("http://h:1/"), "http://h:1/v1/chat/completions");
        assert_eq!(chat_url("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(
            chat_url("http://h:1/v1/chat/completions"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            chat_base("http://h:1/v1/chat/completions/"),
            "http://h:1/v1"
        );
        assert_eq!(chat_base("http://h:1/v1"), "http://h:1/v1");
    }

    #[test]
    fn backoff_follows_tenacity() {
        let s = |k| backoff(k, Duration::from_secs(1)).as_secs_f64();
        assert_eq!(
            [s(1), s(2), s(3), s(4), s(5), s(6)],
            [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
        );
    }

    #[test]
    fn reasoning_fallback() {
        let r = json!({"choices":[{"message":{"content":"","reasoning_content":"#### 4"}}]});
        assert_eq!(
            response_text(&r),
            ("#### 4".to_string(), "reasoning_content")
        );
        let r = json!({"choices":[{"message":{"content":null,"reasoning_content":"x"}}]});
        assert_eq!(response_text(&r).1, "reasoning_content");
        let r = json!({"choices":[{"message":{"content":"a","reasoning_content":"x"}}]});
        assert_eq!(response_text(&r), ("a".to_string(), "content"));
        assert_eq!(
            response_text(&json!({"error": "x"})),
            (String::new(), "none")
        );
    }

    #[test]
    fn body_key_order_matches_lm_eval() {
        let spec = TaskSpec::new(Profile::InferenceX);
        let p = request_params(&spec, "m", 5376);
        let b = request_body(&[], &p);
        let keys: Vec<_> = b.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "messages",
                "model",
                "max_tokens",
                "temperature",
                "stop",
                "seed",
                "top_p"
            ]
        );
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"messages":[],"model":"m","max_tokens":5376,"temperature":0,"stop":["</s>","<|im_end|>"],"seed":1234,"top_p":1}"#
        );
    }
}
