//! The simulator's GSM8K answer book: replays a real model's recorded solution for each GSM8K
//! test question (`example_model_solutions.jsonl` of openai/grade-school-math, four models).
//!
//! A prompt is recognised when its last `Question: ` is followed by a test question and then a
//! newline (so both profiles' prompts, and completions-style prompts holding all five shots,
//! resolve to the test question). The recorded solution's final line `A: <n>` becomes
//! `#### <n>`, the format the prompt asks for; solutions whose last line is not `A: …` (a few
//! were cut off mid-sentence when recorded) are replayed unchanged. So the simulator's score is
//! that model's real score under lm-eval's scorer: a replay of recorded outputs, not inference.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{EvalError, InputFile};

/// The recorded models in `example_model_solutions.jsonl`, in file order.
pub const MODELS: [&str; 4] = [
    "6b_finetuning",
    "6b_verification",
    "175b_finetuning",
    "175b_verification",
];

/// The default `--sim-answers` model (the strongest recorded one, 56.25 % `is_correct`).
pub const DEFAULT_MODEL: &str = "175b_verification";

/// File name of the recorded solutions inside the GSM8K data folder.
pub const SOLUTIONS_FILE: &str = "example_model_solutions.jsonl";

#[derive(Deserialize)]
struct Recorded {
    solution: String,
    is_correct: bool,
}

/// One recorded solution.
#[derive(Debug, Clone)]
pub struct RecordedSolution {
    /// 0-based line in the file = GSM8K test doc id (the file is in test-set order).
    pub doc_id: usize,
    /// The test question.
    pub question: String,
    /// The solution as recorded (ends in `A: <n>` when complete).
    pub solution: String,
    /// The recording's own correctness label.
    pub is_correct: bool,
}

/// Reads every recorded solution of one model.
///
/// # Errors
/// Unknown model name (lists the known ones, [`EvalError::UnknownSimModel`]), missing file
/// (names it, [`EvalError::Read`]), malformed line (file:line, [`EvalError::Record`]).
pub fn read_solutions(path: &Path, model: &str) -> Result<Vec<RecordedSolution>, EvalError> {
    if !MODELS.contains(&model) {
        return Err(EvalError::UnknownSimModel(model.to_string()));
    }
    let text = std::fs::read_to_string(path).map_err(|error| EvalError::Read {
        file: InputFile::RecordedSolutions,
        path: path.to_path_buf(),
        error,
    })?;
    let mut out = Vec::with_capacity(1319);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |problem: String, source| EvalError::Record {
            path: path.to_path_buf(),
            line: i + 1,
            problem,
            source,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad("not JSON".into(), Some(e)))?;
        let question = v
            .get("question")
            .and_then(|q| q.as_str())
            .ok_or_else(|| bad("no `question`".into(), None))?
            .to_string();
        let rec: Recorded = serde_json::from_value(
            v.get(model)
                .cloned()
                .ok_or_else(|| bad(format!("no `{model}`"), None))?,
        )
        .map_err(|e| {
            bad(
                format!("`{model}` is not {{solution, is_correct}}"),
                Some(e),
            )
        })?;
        out.push(RecordedSolution {
            doc_id: out.len(),
            question,
            solution: rec.solution,
            is_correct: rec.is_correct,
        });
    }
    Ok(out)
}

/// Turns a recorded solution's final `A: <n>` line into `#### <n>`; anything else unchanged.
pub fn to_gsm8k_format(solution: &str) -> String {
    match solution.rfind('\n') {
        Some(pos) if solution[pos + 1..].starts_with("A: ") => {
            format!("{}\n#### {}", &solution[..pos], &solution[pos + 4..])
        }
        None if solution.starts_with("A: ") => format!("#### {}", &solution[3..]),
        _ => solution.to_string(),
    }
}

/// The recorded solutions of one model, by test question. The simulator replays them through
/// the endpoint layer's `answer_book(move |p| book.lookup(p).map(str::to_string))`: this crate
/// does not depend on the simulator.
pub struct Gsm8kAnswers {
    model: String,
    by_question: HashMap<String, String>,
}

impl Gsm8kAnswers {
    /// Builds the book from recorded solutions.
    pub fn new(model: &str, solutions: &[RecordedSolution]) -> Gsm8kAnswers {
        Gsm8kAnswers {
            model: model.to_string(),
            by_question: solutions
                .iter()
                .map(|s| (s.question.clone(), to_gsm8k_format(&s.solution)))
                .collect(),
        }
    }

    /// The recorded model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Number of questions known.
    pub fn len(&self) -> usize {
        self.by_question.len()
    }

    /// True when no question is known.
    pub fn is_empty(&self) -> bool {
        self.by_question.is_empty()
    }

    /// Finds the test question in a prompt: the text after a `Question: ` up to one of the
    /// following newlines (or the end), trying the last `Question: ` first.
    pub fn lookup(&self, prompt: &str) -> Option<&str> {
        const MARK: &str = "Question: ";
        let starts: Vec<usize> = prompt
            .match_indices(MARK)
            .map(|(i, _)| i + MARK.len())
            .collect();
        for &start in starts.iter().rev() {
            let rest = &prompt[start..];
            let ends = rest
                .match_indices('\n')
                .map(|(i, _)| i)
                .chain(std::iter::once(rest.len()));
            for end in ends {
                if let Some(a) = self.by_question.get(&rest[..end]) {
                    return Some(a);
                }
            }
        }
        None
    }
}

/// What a score against the replaying simulator means (said in the summary and
/// `result.json`): the recorded model's real score under lm-eval's scorer.
pub fn replay_note(recorded_model: &str) -> String {
    format!(
        "the simulator replays the recorded solutions of the {recorded_model} model (openai/grade-school-math example_model_solutions.jsonl): this score is that model's real score under lm-eval's scorer, not a measurement of any engine"
    )
}

/// Loads the answer book for a recorded model (`--sim-answers NAME`), from `data_dir` or the
/// GSM8K folder resolved by [`crate::task::resolve_data_dir`] (`SERVEBENCH_GSM8K_DIR`, else
/// `data/gsm8k` of the shared data folder, [`crate::shared::shared_dir`]).
///
/// # Errors
/// Unknown model name, no shared data folder, or the file is missing / malformed (one line
/// naming it).
pub fn load_from(name: &str, data_dir: Option<&Path>) -> Result<Gsm8kAnswers, EvalError> {
    let dir: PathBuf = crate::task::resolve_data_dir(data_dir)?;
    let solutions = read_solutions(&dir.join(SOLUTIONS_FILE), name)?;
    Ok(Gsm8kAnswers::new(name, &solutions))
}

/// The eval row key of a simulated accuracy ([`with_accuracy`]).
pub const SIMULATED_ACCURACY_KEY: &str = "simulated_accuracy";

/// An answer book that scores a chosen `accuracy` (a fraction in (0, 1]) under lm-eval's scorer,
/// for testing the accuracy gate against the simulator (`--sim-gsm8k-accuracy A`): each test
/// question is answered either with the dataset's own reference solution (`test.jsonl`,
/// `#### n`) or with a recorded wrong solution (`example_model_solutions.jsonl`, the first of
/// [`DEFAULT_MODEL`] and the other recorded models whose answer both filters of both profiles
/// score wrong). Question *i* (test order) is answered correctly while the correct count is
/// under ⌊(i+1)·A⌋, else wrongly, so the first *n* questions score ⌊n·A⌋/n whatever `--limit`
/// cuts, within one question (a question no recorded model got wrong is answered correctly,
/// and the next ones wrongly until the count is back). Every choice is checked with the task's scorer when the
/// book is built. Not a model's output: the summary, `result.json` and the row say so.
///
/// # Errors
/// `accuracy` outside (0, 1] or lower than the recorded wrong answers allow
/// ([`EvalError::SimAccuracy`]), or the GSM8K files cannot be read (one line naming them).
pub fn with_accuracy(accuracy: f64, data_dir: Option<&Path>) -> Result<Gsm8kAnswers, EvalError> {
    use crate::task::{Profile, TaskSpec};
    if !(accuracy > 0.0 && accuracy <= 1.0) {
        return Err(EvalError::SimAccuracy(format!(
            "--sim-gsm8k-accuracy {accuracy}: must be in (0, 1]"
        )));
    }
    let dir: PathBuf = crate::task::resolve_data_dir(data_dir)?;
    let test = crate::task::load_docs(&dir.join("test.jsonl"))?;
    let mut recorded = Vec::new();
    for m in
        std::iter::once(DEFAULT_MODEL).chain(MODELS.into_iter().filter(|m| *m != DEFAULT_MODEL))
    {
        recorded.push(read_solutions(&dir.join(SOLUTIONS_FILE), m)?);
    }
    let specs = [
        TaskSpec::new(Profile::InferenceX),
        TaskSpec::new(Profile::LmEval),
    ];
    let all = |answer: &str, reference: &str, correct: bool| {
        specs.iter().all(|t| {
            let v = t.score(answer, reference);
            v.strict.correct == correct && v.flexible.correct == correct
        })
    };
    let mut by_question = HashMap::with_capacity(test.len());
    let mut right = 0u64;
    let mut wrong_available = 0usize;
    for (i, doc) in test.iter().enumerate() {
        let wrong = recorded
            .iter()
            .filter_map(|sols| sols.get(i).filter(|s| s.question == doc.question))
            .map(|s| to_gsm8k_format(&s.solution))
            .find(|a| all(a, &doc.answer, false));
        wrong_available += usize::from(wrong.is_some());
        let target = ((i + 1) as f64 * accuracy + 1e-9).floor() as u64;
        let answer = match wrong {
            Some(w) if right >= target => w,
            _ => {
                if !all(&doc.answer, &doc.answer, true) {
                    return Err(EvalError::SimAccuracy(format!(
                        "test.jsonl line {}: the reference solution does not score as correct",
                        i + 1
                    )));
                }
                right += 1;
                doc.answer.clone()
            }
        };
        by_question.insert(doc.question.clone(), answer);
    }
    let n = test.len() as f64;
    let want = (n * accuracy + 1e-9).floor();
    // a question without a recorded wrong answer may leave the count one over at the end
    if right as f64 > want + 1.0 {
        return Err(EvalError::SimAccuracy(format!(
            "--sim-gsm8k-accuracy {accuracy}: the recorded solutions have a wrong answer for only {wrong_available} of {} questions; the lowest accuracy they allow is {:.3}",
            test.len(),
            1.0 - wrong_available as f64 / n
        )));
    }
    Ok(Gsm8kAnswers {
        model: format!("simulated accuracy {accuracy}"),
        by_question,
    })
}

/// What a score against [`with_accuracy`]'s book means (summary, `result.json`).
pub fn accuracy_note(accuracy: f64) -> String {
    format!(
        "SIMULATED accuracy {accuracy}: the simulator answers ⌊n·{accuracy}⌋ of the first n GSM8K questions with the dataset's reference solutions and the rest with recorded wrong solutions (--sim-gsm8k-accuracy); this score tests the gate, it measures no model and no engine"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_answer_line_becomes_hashes() {
        assert_eq!(to_gsm8k_format("a\nb = 3\nA: 18"), "a\nb = 3\n#### 18");
        assert_eq!(to_gsm8k_format("A: 5"), "#### 5");
        assert_eq!(to_gsm8k_format("cut off = <<3/4"), "cut off = <<3/4");
        assert_eq!(to_gsm8k_format("x\nA: -3.5"), "x\n#### -3.5");
    }

    #[test]
    fn lookup_uses_last_question_and_newline_boundaries() {
        let sols = vec![
            RecordedSolution {
                doc_id: 0,
                question: "How many?".into(),
                solution: "two\nA: 2".into(),
                is_correct: true,
            },
            RecordedSolution {
                doc_id: 1,
                question: "Train q".into(),
                solution: "x\nA: 9".into(),
                is_correct: true,
            },
        ];
        let book = Gsm8kAnswers::new("m", &sols);
        assert_eq!(
            book.lookup("Question: How many?\nAnswer:"),
            Some("two\n#### 2")
        );
        assert_eq!(
            book.lookup(
                "Question: Train q\nAnswer: x\n\nQuestion: How many?\nEnd your response…\nAnswer:"
            ),
            Some("two\n#### 2")
        );
        assert_eq!(book.lookup("Question: How many"), None);
        assert_eq!(book.lookup("hello"), None);
    }
}
