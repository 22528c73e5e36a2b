//! Parity with lm-evaluation-harness itself: lm-eval (`python -m lm_eval --model
//! local-chat-completions --apply_chat_template …`, InferenceX's invocation) and servebench each
//! run GSM8K against the embedded simulator (replaying recorded solutions) through a recording
//! proxy. Asserted, per profile:
//! - for every document, the request bodies both clients put on the wire decode to the same
//!   JSON (same `messages`, byte-identical strings, same key order; same `model`, `max_tokens`,
//!   `temperature`, `stop`, `seed`, `top_p`);
//! - per document, lm-eval's logged response, filtered responses (strict-match,
//!   flexible-extract) and `exact_match` equal servebench's text, extractions and verdicts;
//! - the aggregate scores are equal (means exactly, standard errors to 1e-15).
//!
//! The task is the profile's YAML pointed at the local JSONL files (`dataset_path: json`,
//! `data_files`), nothing else changed: `inferencex` = `../shared/data/inferencex/gsm8k.yaml`,
//! `lm-eval` = the YAML shipped in the installed lm-eval package.
//! Needs `SERVEBENCH_LM_EVAL_PYTHON`. `SERVEBENCH_PARITY_LIMIT` (default 200) sets `--limit`.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use servebench_endpoint::{answer_book, Endpoint, SimOptions, Target, TlsConfig};
use servebench_eval::sim_answers::{load_from, DEFAULT_MODEL};
use servebench_eval::task::{load_docs, Profile, TaskSpec};
use servebench_eval::{run_gsm8k, EvalOptions, SampleRecord};

const MAX_TOKENS: u32 = 5376;
const CONC: usize = 16;

fn find_files(dir: &Path, prefix: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            find_files(&p, prefix, out);
        } else if p.file_name().unwrap().to_string_lossy().starts_with(prefix) {
            out.push(p);
        }
    }
}

/// The profile's task YAML with the dataset pointed at local files.
fn local_task_yaml(source: &str, data: &Path) -> String {
    let mut y = source.to_string();
    let mut replace = |from: &str, to: &str| {
        assert_eq!(
            y.matches(from).count(),
            1,
            "task YAML should contain {from:?} once"
        );
        y = y.replace(from, to);
    };
    replace("task: gsm8k\n", "task: gsm8k_local\n");
    replace("tag:\n  - math_word_problems\n", "");
    replace(
        "dataset_path: openai/gsm8k\ndataset_name: main\n",
        &format!(
            "dataset_path: json\ndataset_kwargs:\n  data_files:\n    train: {}\n    test: {}\n",
            data.join("train.jsonl").display(),
            data.join("test.jsonl").display()
        ),
    );
    y
}

async fn lm_eval_package_dir(py: &str) -> PathBuf {
    let out = tokio::process::Command::new(py)
        .args([
            "-c",
            "import lm_eval, os; print(os.path.dirname(lm_eval.__file__))",
        ])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lm_eval_and_servebench_send_identical_requests_and_score_identically() {
    let Some(py) = common::service(
        "SERVEBENCH_LM_EVAL_PYTHON",
        "runs lm-eval itself against the simulator",
    ) else {
        return;
    };
    let limit: usize = std::env::var("SERVEBENCH_PARITY_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let data = std::fs::canonicalize(common::gsm8k_dir()).unwrap();
    let test = load_docs(&data.join("test.jsonl")).unwrap();
    let book = Arc::new(load_from(DEFAULT_MODEL, Some(&data)).unwrap());
    let pkg = lm_eval_package_dir(&py).await;

    for profile in [Profile::InferenceX, Profile::LmEval] {
        let spec = TaskSpec::new(profile);
        let source = match profile {
            Profile::InferenceX => {
                std::fs::read_to_string(data.join("../inferencex/gsm8k.yaml")).unwrap()
            }
            Profile::LmEval => std::fs::read_to_string(pkg.join("tasks/gsm8k/gsm8k.yaml")).unwrap(),
        };
        let tmp = tempfile::tempdir().unwrap();
        let yaml = tmp.path().join("gsm8k_local.yaml");
        std::fs::write(&yaml, local_task_yaml(&source, &data)).unwrap();

        let b = book.clone();
        let sim = Target::start_simulator(SimOptions {
            answers: Some(answer_book(move |p| b.lookup(p).map(str::to_string))),
            zero_delay: true,
            ..Default::default()
        })
        .await
        .unwrap();
        let proxy = common::start_proxy(sim.endpoint().base_url().to_string()).await;

        // 1. lm-eval, as InferenceX invokes it (benchmark_lib.sh::run_lm_eval).
        let lm_out = tmp.path().join("lm-eval-out");
        let t = Instant::now();
        let out = tokio::time::timeout(
            Duration::from_secs(600),
            tokio::process::Command::new(&py)
                .args(["-m", "lm_eval", "--model", "local-chat-completions", "--apply_chat_template", "--tasks"])
                .arg(&yaml)
                .arg("--output_path")
                .arg(&lm_out)
                .args(["--log_samples", "--model_args"])
                .arg(format!(
                    "model=qwen3-8b,base_url={}/v1/chat/completions,api_key=EMPTY,eos_string=</s>,max_retries=5,num_concurrent={CONC},timeout=1800,tokenized_requests=False,max_length=9472",
                    proxy.url()
                ))
                .args(["--gen_kwargs", &format!("max_tokens={MAX_TOKENS},temperature=0,top_p=1")])
                .args(["--limit", &limit.to_string()])
                .env("HF_DATASETS_OFFLINE", "1")
                .env("HF_HUB_OFFLINE", "1")
                .env("HF_HOME", tmp.path().join("hf"))
                .current_dir(tmp.path())
                .output(),
        )
        .await
        .expect("lm-eval finished within 600 s")
        .unwrap();
        assert!(
            out.status.success(),
            "lm-eval failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .rev()
                .take(30)
                .collect::<Vec<_>>()
                .join("\n")
        );
        let lm_secs = t.elapsed().as_secs_f64();
        let lm_bodies = proxy.take();

        // 2. servebench, same target, same settings.
        let t = Instant::now();
        let via_proxy =
            Target::remote(Endpoint::new(&proxy.url(), None, &TlsConfig::default()).unwrap());
        let r = run_gsm8k(
            &via_proxy,
            EvalOptions {
                model: Some("qwen3-8b".into()),
                conc: CONC,
                limit: Some(limit),
                profile,
                max_tokens: Some(MAX_TOKENS),
                out_dir: tmp.path().join("servebench-out"),
                data_dir: Some(data.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let sb_secs = t.elapsed().as_secs_f64();
        let sb_bodies = proxy.take();
        proxy.stop();
        sim.shutdown().await;

        // Requests: one per document each, identical per document.
        assert_eq!(lm_bodies.len(), limit, "{profile}: lm-eval requests");
        assert_eq!(sb_bodies.len(), limit, "{profile}: servebench requests");
        let doc_of: HashMap<String, usize> = test
            .iter()
            .enumerate()
            .take(limit)
            .map(|(i, d)| (spec.doc_to_text(d), i))
            .collect();
        let by_doc = |bodies: &[bytes::Bytes]| -> HashMap<usize, Value> {
            let mut m = HashMap::new();
            for b in bodies {
                let v: Value = serde_json::from_slice(b).unwrap();
                let last = v["messages"].as_array().unwrap().last().unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let id = *doc_of
                    .get(&last)
                    .unwrap_or_else(|| panic!("{profile}: unknown prompt {last:?}"));
                assert!(m.insert(id, v).is_none(), "{profile}: doc {id} sent twice");
            }
            m
        };
        let (lm, sb) = (by_doc(&lm_bodies), by_doc(&sb_bodies));
        for id in 0..limit {
            let (a, b) = (&lm[&id], &sb[&id]);
            assert_eq!(
                serde_json::to_string(&a["messages"]).unwrap(),
                serde_json::to_string(&b["messages"]).unwrap(),
                "{profile}: doc {id} messages differ"
            );
            assert_eq!(a, b, "{profile}: doc {id} request bodies differ");
            let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(a), keys(b), "{profile}: doc {id} key order");
        }

        // Per-sample verdicts.
        let mut files = Vec::new();
        find_files(&lm_out, "samples_gsm8k_local", &mut files);
        assert_eq!(files.len(), 1, "{profile}: one lm-eval samples file");
        let ours: HashMap<usize, SampleRecord> = std::fs::read_to_string(&r.samples_file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<SampleRecord>(l).unwrap())
            .map(|s| (s.doc_id, s))
            .collect();
        let mut checked = 0;
        for line in std::fs::read_to_string(&files[0]).unwrap().lines() {
            let s: Value = serde_json::from_str(line).unwrap();
            let id = s["doc_id"].as_u64().unwrap() as usize;
            let o = &ours[&id];
            assert_eq!(
                s["resps"][0][0].as_str().unwrap(),
                o.text,
                "{profile}: doc {id} response"
            );
            let filtered = match &s["filtered_resps"] {
                Value::Array(a) => a[0].as_str().unwrap().to_string(),
                v => v.as_str().unwrap().to_string(),
            };
            let em = s["exact_match"].as_f64().unwrap() == 1.0;
            let v = match s["filter"].as_str().unwrap() {
                "strict-match" => &o.strict,
                "flexible-extract" => &o.flexible,
                f => panic!("unexpected filter {f}"),
            };
            assert_eq!(
                (filtered.as_str(), em),
                (v.extracted.as_str(), v.correct),
                "{profile}: doc {id} {}",
                s["filter"]
            );
            checked += 1;
        }
        assert_eq!(checked, 2 * limit, "{profile}: samples × filters");

        // Aggregates.
        let mut files = Vec::new();
        find_files(&lm_out, "results_", &mut files);
        assert_eq!(files.len(), 1);
        let res: Value =
            serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        let g = &res["results"]["gsm8k_local"];
        assert_eq!(
            g["exact_match,strict-match"].as_f64(),
            r.row.em_strict,
            "{profile}: em_strict"
        );
        assert_eq!(
            g["exact_match,flexible-extract"].as_f64(),
            r.row.em_flexible,
            "{profile}: em_flexible"
        );
        let close = |a: &Value, b: Option<f64>| (a.as_f64().unwrap() - b.unwrap()).abs() <= 1e-15;
        assert!(
            close(&g["exact_match_stderr,strict-match"], r.row.em_strict_se),
            "{profile}: strict stderr"
        );
        assert!(
            close(
                &g["exact_match_stderr,flexible-extract"],
                r.row.em_flexible_se
            ),
            "{profile}: flexible stderr"
        );
        assert_eq!(
            res["n-samples"]["gsm8k_local"]["effective"].as_u64(),
            Some(r.row.n_eff as u64)
        );
        eprintln!(
            "{profile}: {limit} docs, identical requests and verdicts; em_strict {:.4} ± {:.4}, em_flexible {:.4} ± {:.4}; lm-eval {lm_secs:.1} s (incl. start-up), servebench {sb_secs:.2} s",
            r.row.em_strict.unwrap(),
            r.row.em_strict_se.unwrap(),
            r.row.em_flexible.unwrap(),
            r.row.em_flexible_se.unwrap()
        );
    }
}
