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
