//! Cases B14, B15, B17 of `../shared/cases/README.md` (fixtures F14, F15, F17), under both
//! profiles. The README's values are stated for the upstream task (`lm-eval` profile); the
//! InferenceX task differs only in strict-match's group selection (last `####` instead of
//! first), which gives the same values for these single-`####` responses — asserted too.

use servebench_eval::task::{Profile, TaskSpec};

const F14: &str = "Toula bought 3 dozen donuts at $68 per dozen, so 3 * $68 = $204.\nShe bought 2 dozen mini cupcakes at $80 per dozen, so 2 * $80 = $160.\nShe bought 6 dozen mini cheesecakes at $55 per dozen, so 6 * $55 = $330.\nTotal = $204 + $160 + $330 = $694.";
const F15: &str = "Two subs cost 2 x $7.50 = $15.00. Adding the chips, cookies and the $5.00 tip, the total cost of her delivery order is $29.00.";

/// (response, target, strict raw, strict ok, flexible raw, flexible normalised, flexible ok)
type Row = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static str,
    &'static str,
    bool,
);

const ROWS: &[Row] = &[
    // B14
    (
        F14,
        "...\n#### 694",
        "[invalid]",
        false,
        "$694.",
        "694",
        true,
    ),
    // B15 (parity mode: 29.00 != 29)
    (
        F15,
        "...\n#### 29",
        "[invalid]",
        false,
        "$29.00.",
        "29.00",
        false,
    ),
    // B17 (a)–(e)
    (
        "The temperature went from 2 degrees to -3 degrees.\n#### -3",
        "#### -3",
        "-3",
        true,
        "-3",
        "-3",
        true,
    ),
    (
        "The total is 72 clips, altogether.",
        "#### 72",
        "[invalid]",
        false,
        "72",
        "72",
        true,
    ),
    (
        "She pays 1,000 + 234 = 1,234 dollars.\n#### 1,234",
        "#### 1234",
        "1,234",
        true,
        "1,234",
        "1234",
        true,
    ),
    (
        "So the answer is 18.\n#### 18.",
        "#### 18",
        "18.",
        true,
        "18.",
        "18",
        true,
    ),
    (
        "He ends with 5 apples. The answer is 5",
        "#### 5",
        "[invalid]",
        false,
        "5",
        "5",
        true,
    ),
];

#[test]
fn b14_b15_b17_both_profiles() {
    for profile in [Profile::LmEval, Profile::InferenceX] {
        let spec = TaskSpec::new(profile);
        for (i, (resp, target, s_raw, s_ok, f_raw, f_norm, f_ok)) in ROWS.iter().enumerate() {
            let v = spec.score(resp, target);
            let ctx = format!("{profile} row {i}");
            assert_eq!(v.strict.extracted, *s_raw, "{ctx} strict raw");
            assert_eq!(v.strict.correct, *s_ok, "{ctx} strict verdict");
            assert_eq!(v.flexible.extracted, *f_raw, "{ctx} flexible raw");
            assert_eq!(v.flexible.normalised, *f_norm, "{ctx} flexible normalised");
            assert_eq!(v.flexible.correct, *f_ok, "{ctx} flexible verdict");
        }
    }
}

#[test]
fn b14_target_reduces_to_final_number() {
    let spec = TaskSpec::new(Profile::InferenceX);
    let v = spec.score(
        "",
        "Toula bought 3 dozen...\nSo the total is $694.\n#### 694",
    );
    assert_eq!(v.reference_normalised, "694");
    assert_eq!(v.strict.extracted, "[invalid]");
    assert_eq!(v.flexible.extracted, "[invalid]");
}

#[test]
fn profiles_differ_on_strict_group_selection() {
    // Two `####` lines: upstream takes the first, InferenceX the last.
    let resp = "#### 12\nWait, recompute.\n#### 14";
    let up = TaskSpec::new(Profile::LmEval).score(resp, "#### 14");
    let ix = TaskSpec::new(Profile::InferenceX).score(resp, "#### 14");
    assert_eq!(
        (up.strict.extracted.as_str(), up.strict.correct),
        ("12", false)
    );
    assert_eq!(
        (ix.strict.extracted.as_str(), ix.strict.correct),
        ("14", true)
    );
    // Flexible is the last number in both.
    assert!(up.flexible.correct && ix.flexible.correct);
}

#[test]
fn ignore_case_and_dollar_normalisation() {
    let spec = TaskSpec::new(Profile::InferenceX);
    // `$1,000.` → `1000`; the reference `#### 1000`.
    let v = spec.score("It costs $1,000.", "#### 1000");
    assert_eq!(
        (
            v.flexible.extracted.as_str(),
            v.flexible.normalised.as_str()
        ),
        ("$1,000.", "1000")
    );
    assert!(v.flexible.correct);
    // A lone comma or `$` is not a number: `{2,}` needs two characters, `-?[0-9]+` a digit.
    let v = spec.score("Answer: $ , 7", "#### 7");
    assert_eq!(v.flexible.extracted, "7");
}

/// Issue 27: `--sim-gsm8k-accuracy A` — every prefix of the 1,319 test questions, as `--limit`
/// cuts them, scores ⌊n·A⌋/n under both filters of both profiles (the book's answers put
/// through the task's own prompt and scorer), and an accuracy the recorded wrong answers cannot
/// reach is refused in one line.
#[test]
fn a_chosen_simulated_accuracy_scores_that_accuracy_for_any_limit() {
    use servebench_eval::sim_answers::with_accuracy;
    let Some(dir) = servebench_testkit::require(
        servebench_testkit::shared_path(env!("CARGO_MANIFEST_DIR"), "data/gsm8k"),
        "no shared data/gsm8k",
    ) else {
        return;
    };
    let test = servebench_eval::task::load_docs(&dir.join("test.jsonl")).unwrap();
    let spec = TaskSpec::new(Profile::InferenceX);
    let lm = TaskSpec::new(Profile::LmEval);
    for a in [0.9, 0.85, 0.5] {
        let book = with_accuracy(a, Some(&dir)).unwrap();
        let mut right = 0u64;
        for (i, doc) in test.iter().enumerate() {
            let answer = book
                .lookup(&spec.doc_to_text(doc))
                .unwrap_or_else(|| panic!("question {i} not found"));
            let v = spec.score(answer, &doc.answer);
            let w = lm.score(answer, &doc.answer);
            assert_eq!(v.strict.correct, v.flexible.correct, "{a} q{i}");
            assert_eq!(v.strict.correct, w.strict.correct, "{a} q{i}");
            right += u64::from(v.strict.correct);
            let n = i as u64 + 1;
            // ⌊n·A⌋, or one more where a question no recorded model got wrong came when the
            // count was already there (the next questions then bring it back)
            let want = (n as f64 * a + 1e-9).floor() as u64;
            assert!(
                right == want || right == want + 1,
                "accuracy {a}, first {n} questions: {right} right, want {want}"
            );
            if a == 0.9 && [100, 1319].contains(&n) {
                assert_eq!(right, want, "accuracy 0.9, first {n}: exact");
            }
        }
    }
    let e = match with_accuracy(0.05, Some(&dir)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("0.05 is below what the recorded wrong answers allow"),
    };
    assert!(e.contains("the lowest accuracy they allow is"), "{e}");
    assert!(with_accuracy(1.5, Some(&dir)).is_err());
}
