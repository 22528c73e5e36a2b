//! The GSM8K task definitions (two profiles), the documents, and the chat prompts lm-eval
//! builds from them.
//!
//! `inferencex` is InferenceX's `utils/evals/gsm8k.yaml` (`../shared/data/inferencex/gsm8k.yaml`,
//! MEASUREMENT.md Part 2 §4.3); `lm-eval` is upstream `lm_eval/tasks/gsm8k/gsm8k.yaml` (metadata
//! version 3.0). They differ in three places only: the prompt (InferenceX adds the
//! "End your response with the answer on the last line, formatted as: #### [number]" line),
//! strict-match's `group_select` (InferenceX −1 = last `####`, upstream 0 = first), and the stop
//! strings (upstream also stops at `Question:`).
//!
//! Prompt construction follows lm-eval with `--apply_chat_template` (which at InferenceX's pinned
//! commit and in 0.4.10+ turns on `fewshot_as_multiturn`): for each test document, in document
//! order, the default `ContextSampler` draws `num_fewshot` training documents with
//! `random.Random(1234).sample(train, 5)` (one generator shared by all documents, so doc *i*'s
//! shots depend on every draw before it), and the messages are
//! `[user: text(shot1), assistant: answer(shot1), …, user: text(doc)]`, no system message.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{EvalError, InputFile};
use crate::pyrandom::PyRandom;
use crate::scoring::{ExactMatch, RegexFilter};

/// Which GSM8K task definition to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// InferenceX's task (default): explicit `#### [number]` instruction, strict = last match,
    /// stop `</s>`, `<|im_end|>`.
    #[default]
    #[serde(rename = "inferencex")]
    InferenceX,
    /// Upstream lm-evaluation-harness task: plain prompt, strict = first match, stop also at
    /// `Question:`.
    #[serde(rename = "lm-eval")]
    LmEval,
}

impl Profile {
    /// `"inferencex"` or `"lm-eval"`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::InferenceX => "inferencex",
            Profile::LmEval => "lm-eval",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = EvalError;
    fn from_str(s: &str) -> Result<Profile, EvalError> {
        match s {
            "inferencex" => Ok(Profile::InferenceX),
            "lm-eval" | "lm_eval" | "lmeval" => Ok(Profile::LmEval),
            other => Err(EvalError::UnknownProfile(other.to_string())),
        }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The instruction line InferenceX inserts between the question and `Answer:`.
pub const INFERENCEX_INSTRUCTION: &str =
    "End your response with the answer on the last line, formatted as: #### [number]";

/// Strict-match pattern (both profiles).
pub const STRICT_PATTERN: &str = r"#### (\-?[0-9\.\,]+)";
/// Flexible-extract pattern (both profiles).
pub const FLEXIBLE_PATTERN: &str = r"(-?[$0-9.,]{2,})|(-?[0-9]+)";
/// `regexes_to_ignore` of the `exact_match` metric (both profiles), applied in this order.
pub const IGNORE_REGEXES: [&str; 4] = [",", r"\$", "(?s).*#### ", r"\.$"];
/// lm-eval's default few-shot seed (`--fewshot_random_seed`, default 1234).
pub const FEWSHOT_SEED: i64 = 1234;
/// `num_fewshot` of both task YAMLs.
pub const NUM_FEWSHOT: usize = 5;
/// The request seed lm-eval's API models send (`seed=1234`).
pub const REQUEST_SEED: u64 = 1234;

/// One GSM8K document (`test.jsonl` / `train.jsonl` line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doc {
    /// The problem text.
    pub question: String,
    /// The worked solution ending in `#### <n>` (the reference for `exact_match`).
    pub answer: String,
}

/// One chat message as sent in `messages` (`{"role": …, "content": …}`, nothing else).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `"user"` or `"assistant"`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// A fully resolved task: prompt template, generation settings, filters and metric.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    /// Task name as lm-eval reports it (`gsm8k`).
    pub task: &'static str,
    /// Which definition this is.
    pub profile: Profile,
    /// `generation_kwargs.until` plus lm-eval's `eos_string` when not already present (the API
    /// models send at most four).
    pub stop: Vec<String>,
    /// Few-shot count.
    pub num_fewshot: usize,
    /// Few-shot sampler seed.
    pub fewshot_seed: i64,
    /// `strict-match` filter.
    pub strict: RegexFilter,
    /// `flexible-extract` filter.
    pub flexible: RegexFilter,
    /// The `exact_match` metric.
    pub metric: ExactMatch,
    /// `max_tokens` when the user gives none: InferenceX's `MAX_OUT` for 8k1k evals
    /// (EVAL_CTX 9472 − 4096 = 5376) for `inferencex`, lm-eval's `max_gen_toks` default 256 for
    /// `lm-eval`.
    pub default_max_tokens: u32,
}

impl TaskSpec {
    /// The task for a profile.
    pub fn new(profile: Profile) -> TaskSpec {
        let (strict_select, stop, default_max_tokens): (i64, &[&str], u32) = match profile {
            Profile::InferenceX => (-1, &["</s>", "<|im_end|>"], 5376),
            Profile::LmEval => (0, &["Question:", "</s>", "<|im_end|>"], 256),
        };
        TaskSpec {
            task: "gsm8k",
            profile,
            stop: stop.iter().map(|s| s.to_string()).collect(),
            num_fewshot: NUM_FEWSHOT,
            fewshot_seed: FEWSHOT_SEED,
            strict: RegexFilter::new("strict-match", STRICT_PATTERN, strict_select)
                .expect("strict pattern compiles"),
            flexible: RegexFilter::new("flexible-extract", FLEXIBLE_PATTERN, -1)
                .expect("flexible pattern compiles"),
            metric: ExactMatch::new(&IGNORE_REGEXES, true).expect("ignore patterns compile"),
            default_max_tokens,
        }
    }

    /// `doc_to_text`: the user turn for a document.
    pub fn doc_to_text(&self, doc: &Doc) -> String {
        match self.profile {
            Profile::InferenceX => format!(
                "Question: {}\n{INFERENCEX_INSTRUCTION}\nAnswer:",
                doc.question
            ),
            Profile::LmEval => format!("Question: {}\nAnswer:", doc.question),
        }
    }

    /// Builds the messages of every test document in `0..n`, drawing few-shot examples in
    /// document order from one `random.Random(fewshot_seed)` exactly as lm-eval's default
    /// sampler does. The result for doc *i* does not depend on `n` as long as `n > i`.
    ///
    /// # Errors
    /// The training pool is smaller than `num_fewshot`
    /// ([`EvalError::SampleLargerThanPopulation`]).
    pub fn build_prompts(
        &self,
        test: &[Doc],
        train: &[Doc],
        n: usize,
    ) -> Result<Vec<Vec<Message>>, EvalError> {
        let mut rng = PyRandom::new(self.fewshot_seed);
        let mut out = Vec::with_capacity(n);
        for doc in test.iter().take(n) {
            let mut messages = Vec::with_capacity(2 * self.num_fewshot + 1);
            for j in rng.sample_indices(train.len(), self.num_fewshot)? {
                let shot = &train[j];
                messages.push(Message {
                    role: "user".into(),
                    content: self.doc_to_text(shot),
                });
                messages.push(Message {
                    role: "assistant".into(),
                    content: shot.answer.clone(),
                });
            }
            messages.push(Message {
                role: "user".into(),
                content: self.doc_to_text(doc),
            });
            out.push(messages);
        }
        Ok(out)
    }

    /// Scores one response against a document's reference answer.
    pub fn score(&self, response: &str, reference: &str) -> Verdicts {
        let s = self.strict.apply(response);
        let f = self.flexible.apply(response);
        let (sn, rn, sok) = self.metric.score(&s, reference);
        let (fn_, _, fok) = self.metric.score(&f, reference);
        Verdicts {
            reference_normalised: rn,
            strict: Verdict {
                extracted: s,
                normalised: sn,
                correct: sok,
            },
            flexible: Verdict {
                extracted: f,
                normalised: fn_,
                correct: fok,
            },
        }
    }
}

/// One filter's outcome for one response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// What the filter extracted (`[invalid]` when nothing matched).
    pub extracted: String,
    /// The extraction after `regexes_to_ignore` and `ignore_case`.
    pub normalised: String,
    /// `exact_match` = 1.
    pub correct: bool,
}

/// Both filters' outcomes for one response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdicts {
    /// The reference answer after `regexes_to_ignore` and `ignore_case` (its final number).
    pub reference_normalised: String,
    /// `strict-match`.
    pub strict: Verdict,
    /// `flexible-extract`.
    pub flexible: Verdict,
}

/// Where GSM8K's JSONL files live.
///
/// Order: `explicit` (the `--gsm8k-dir` flag, which clap also fills from `SERVEBENCH_GSM8K_DIR`),
/// then `$SERVEBENCH_GSM8K_DIR`, then `data/gsm8k` of the shared data folder
/// ([`crate::shared::shared_dir`]: `$SERVEBENCH_SHARED`, else `../shared` from the working
/// directory, else `shared/` beside the checkout the binary was built in).
///
/// # Errors
/// [`EvalError::NoSharedDir`] (every place tried, one line) when neither variable is set and no
/// shared folder exists. A folder that is found is not checked for its files here.
pub fn resolve_data_dir(explicit: Option<&Path>) -> Result<PathBuf, EvalError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("SERVEBENCH_GSM8K_DIR").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(crate::shared::shared_dir()?.join("data").join("gsm8k"))
}

/// Reads a GSM8K JSONL file (`{"question": …, "answer": …}` per line).
///
/// # Errors
/// One line naming the file (missing: with the hint to set `SERVEBENCH_GSM8K_DIR`), or the
/// file and line number of a malformed record ([`EvalError::Read`], [`EvalError::Record`]).
pub fn load_docs(path: &Path) -> Result<Vec<Doc>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|error| EvalError::Read {
        file: InputFile::Gsm8k,
        path: path.to_path_buf(),
        error,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str::<Doc>(l).map_err(|e| EvalError::Record {
                path: path.to_path_buf(),
                line: i + 1,
                problem: "not a GSM8K record".into(),
                source: Some(e),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_print() {
        assert_eq!(
            "inferencex".parse::<Profile>().unwrap(),
            Profile::InferenceX
        );
        assert_eq!("lm-eval".parse::<Profile>().unwrap(), Profile::LmEval);
        assert!("gsm".parse::<Profile>().is_err());
        assert_eq!(Profile::LmEval.to_string(), "lm-eval");
    }

    #[test]
    fn prompt_text_per_profile() {
        let d = Doc {
            question: "What is 1+1?".into(),
            answer: "1+1=2\n#### 2".into(),
        };
        assert_eq!(
            TaskSpec::new(Profile::InferenceX).doc_to_text(&d),
            "Question: What is 1+1?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:"
        );
        assert_eq!(
            TaskSpec::new(Profile::LmEval).doc_to_text(&d),
            "Question: What is 1+1?\nAnswer:"
        );
    }
}
