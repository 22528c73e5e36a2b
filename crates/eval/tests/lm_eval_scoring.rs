//! servebench's scorer against lm-evaluation-harness's own code (the installed `lm_eval`
//! package: `lm_eval.filters` pipeline built from the task YAML's `filter_list`,
//! `lm_eval.api.metrics.exact_match_hf_evaluate` with the YAML's metric options, `mean`,
//! `mean_stderr`), per sample, on:
//! - all 5,276 recorded solutions (4 models × 1,319), as replayed (`A: n` → `#### n`) and raw;
//! - 4,000 generated adversarial strings (numbers with signs, commas, dots, `$`, several
//!   `####`, trailing newlines) against generated targets.
//!
//! Both profiles: `inferencex` uses `../shared/data/inferencex/gsm8k.yaml`, `lm-eval` uses the
//! `lm_eval/tasks/gsm8k/gsm8k.yaml` shipped in the installed package.
//! Needs `SERVEBENCH_LM_EVAL_PYTHON` (scripts/services/lm-eval.sh).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use servebench_eval::pyrandom::PyRandom;
use servebench_eval::scoring::{mean, mean_stderr};
use servebench_eval::sim_answers::{read_solutions, to_gsm8k_format, MODELS};
use servebench_eval::task::{load_docs, Profile, TaskSpec};

const HARNESS: &str = r#"
import json, sys, yaml, os
import lm_eval
from lm_eval.api.registry import get_filter
from lm_eval.api.metrics import exact_match_hf_evaluate, mean, mean_stderr
import lm_eval.filters  # registers the filters

yaml_path = sys.argv[1]
if yaml_path == "UPSTREAM":
    yaml_path = os.path.join(os.path.dirname(lm_eval.__file__), "tasks", "gsm8k", "gsm8k.yaml")
cfg = yaml.safe_load(open(yaml_path))
metric = dict(cfg["metric_list"][0])
assert metric.pop("metric") == "exact_match"
for k in ("aggregation", "higher_is_better"):
    metric.pop(k, None)
pipelines = []
for f in cfg["filter_list"]:
    comps = [(c["function"], {k: v for k, v in c.items() if k != "function"}) for c in f["filter"]]
    pipelines.append((f["name"], comps))
rows = [json.loads(l) for l in sys.stdin]
out = {"filters": [], "samples": [], "lm_eval_version": lm_eval.__version__, "yaml": yaml_path}
per_filter = {}
for name, comps in pipelines:
    resps = [[r["response"]] for r in rows]
    docs = [{"answer": r["target"]} for r in rows]
    for func, kwargs in comps:
        resps = get_filter(func)(**kwargs).apply(resps, docs)
    resps = list(resps)
    ems = [exact_match_hf_evaluate(predictions=[p], references=[r["target"]], **metric)["exact_match"] for p, r in zip(resps, rows)]
    per_filter[name] = (resps, ems)
    out["filters"].append({"name": name, "mean": mean(ems), "stderr": mean_stderr(ems)})
for i in range(len(rows)):
    out["samples"].append({name: [per_filter[name][0][i], float(per_filter[name][1][i])] for name, _ in pipelines})
print(json.dumps(out))
"#;

fn run_harness(py: &str, yaml: &str, rows: &[Value]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("harness.py");
    std::fs::write(&script, HARNESS).unwrap();
    let mut child = Command::new(py)
        .arg(&script)
        .arg(yaml)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the lm-eval python");
    {
        let mut stdin = child.stdin.take().unwrap();
        for r in rows {
            serde_json::to_writer(&mut stdin, r).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Adversarial responses/targets from a small alphabet rich in the characters the regexes
/// care about.
fn generated(n: usize) -> Vec<(String, String)> {
    let pieces = [
        "#### ",
        "####",
        "# ",
        "-",
        "$",
        ",",
        ".",
        "0",
        "1",
        "7",
        "12",
        "3.5",
        "1,234",
        " ",
        "\n",
        "A: ",
        "The answer is ",
        "x",
        "İ",
        "Ä",
        "--",
        "..",
        ",,",
        "$$",
        "-$5",
        "18.",
        "\n\n",
        "\t",
        "####  9",
        "1.000",
        "0.50",
    ];
    let targets = [
        "#### 18",
        "#### -3",
        "#### 1234",
        "#### 5",
        "#### 0.5",
        "x\n#### 7",
        "#### 12",
        "#### 1,234",
    ];
    let mut r = PyRandom::new(20261130);
    (0..n)
        .map(|_| {
            let len = 1 + r.randbelow(12);
            let s: String = (0..len)
                .map(|_| pieces[r.randbelow(pieces.len())])
                .collect();
            (s, targets[r.randbelow(targets.len())].to_string())
        })
        .collect()
}

#[test]
fn recorded_solutions_and_adversarial_strings_score_identically_to_lm_eval() {
    let Some(py) = common::service(
        "SERVEBENCH_LM_EVAL_PYTHON",
        "scores compared with lm-eval's own filter code",
    ) else {
        return;
    };
    let dir = common::gsm8k_dir();
    let test = load_docs(&dir.join("test.jsonl")).unwrap();
    let mut cases: Vec<(String, String, String)> = Vec::new(); // (label, response, target)
    for m in MODELS {
        let sols = read_solutions(&dir.join("example_model_solutions.jsonl"), m).unwrap();
        assert_eq!(sols.len(), 1319);
        for s in &sols {
            let target = &test[s.doc_id].answer;
            cases.push((
                format!("{m}/{}/replayed", s.doc_id),
                to_gsm8k_format(&s.solution),
                target.clone(),
            ));
            cases.push((
                format!("{m}/{}/raw", s.doc_id),
                s.solution.clone(),
                target.clone(),
            ));
        }
    }
    assert_eq!(cases.len(), 2 * 5276);
    for (i, (resp, target)) in generated(4000).into_iter().enumerate() {
        cases.push((format!("generated/{i}"), resp, target));
    }
    let rows: Vec<Value> = cases
        .iter()
        .map(|(_, r, t)| json!({"response": r, "target": t}))
        .collect();
    let inferencex_yaml = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/inferencex/gsm8k.yaml"
    );

    for (profile, yaml) in [
        (Profile::InferenceX, inferencex_yaml),
        (Profile::LmEval, "UPSTREAM"),
    ] {
        let spec = TaskSpec::new(profile);
        let py_out = run_harness(&py, yaml, &rows);
        let samples = py_out["samples"].as_array().unwrap();
        assert_eq!(samples.len(), cases.len());
        let mut strict = Vec::new();
        let mut flexible = Vec::new();
        let mut mismatches = Vec::new();
        for ((label, resp, target), p) in cases.iter().zip(samples) {
            let v = spec.score(resp, target);
            let want_s = (
                p["strict-match"][0].as_str().unwrap(),
                p["strict-match"][1].as_f64().unwrap() == 1.0,
            );
            let want_f = (
                p["flexible-extract"][0].as_str().unwrap(),
                p["flexible-extract"][1].as_f64().unwrap() == 1.0,
            );
            if (v.strict.extracted.as_str(), v.strict.correct) != want_s
                || (v.flexible.extracted.as_str(), v.flexible.correct) != want_f
            {
                mismatches.push(format!(
                    "{label}: servebench strict {:?}/{} flexible {:?}/{}; lm-eval {want_s:?} {want_f:?}; response {resp:?}",
                    v.strict.extracted, v.strict.correct, v.flexible.extracted, v.flexible.correct
                ));
            }
            strict.push(f64::from(u8::from(v.strict.correct)));
            flexible.push(f64::from(u8::from(v.flexible.correct)));
        }
        assert!(
            mismatches.is_empty(),
            "{profile}: {} mismatches, first: {:#?}",
            mismatches.len(),
            &mismatches[..mismatches.len().min(5)]
        );
        // Aggregates: the means are exact; the standard errors agree to the last bits.
        let filters = py_out["filters"].as_array().unwrap();
        let agg = |name: &str| filters.iter().find(|f| f["name"] == name).unwrap().clone();
        let (ps, pf) = (agg("strict-match"), agg("flexible-extract"));
        assert_eq!(mean(&strict), ps["mean"].as_f64(), "{profile} strict mean");
        assert_eq!(
            mean(&flexible),
            pf["mean"].as_f64(),
            "{profile} flexible mean"
        );
        let close = |a: Option<f64>, b: Option<f64>| (a.unwrap() - b.unwrap()).abs() <= 1e-15;
        assert!(
            close(mean_stderr(&strict), ps["stderr"].as_f64()),
            "{profile} strict stderr"
        );
        assert!(
            close(mean_stderr(&flexible), pf["stderr"].as_f64()),
            "{profile} flexible stderr"
        );
        eprintln!(
            "{profile}: {} responses scored identically to lm-eval {} ({}); strict mean {:.6}, flexible mean {:.6}",
            cases.len(),
            py_out["lm_eval_version"],
            py_out["yaml"],
            ps["mean"],
            pf["mean"]
        );
    }
}

#[test]
fn per_model_replay_scores() {
    // Each recorded model's replayed score under both profiles, computed per model; printed for
    // the docs and cross-checked against the recording's own `is_correct` labels: a solution
    // the recording marks correct has the right final `A: n`, so after replay strict-match must
    // accept it (the converse can fail only for cut-off solutions).
    let dir = common::gsm8k_dir();
    let test = load_docs(&dir.join("test.jsonl")).unwrap();
    for profile in [Profile::InferenceX, Profile::LmEval] {
        let spec = TaskSpec::new(profile);
        for m in MODELS {
            let sols = read_solutions(&dir.join("example_model_solutions.jsonl"), m).unwrap();
            let mut ok = 0;
            for s in &sols {
                let v = spec.score(&to_gsm8k_format(&s.solution), &test[s.doc_id].answer);
                if s.is_correct {
                    assert!(
                        v.strict.correct,
                        "{m} doc {}: recorded correct but strict says no",
                        s.doc_id
                    );
                }
                ok += usize::from(v.strict.correct);
            }
            let labelled = sols.iter().filter(|s| s.is_correct).count();
            eprintln!(
                "{profile} {m}: em_strict {ok}/1319 = {:.4} (recording's is_correct: {labelled})",
                ok as f64 / 1319.0
            );
            assert!(ok >= labelled);
        }
    }
}
