//! Recipe flags checked against the target image's engine flag table
//! (`servebench-engines`), before anything is dispatched: which flags of the engine launch
//! the new release deleted or renamed, and whether the bumped recipe still passes them.

use serde::{Deserialize, Serialize};
use servebench_engines::{FlagStatus, FlagTable};

/// One flag of a recipe's engine launch that the target release does not take as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagFinding {
    /// The flag as the recipe writes it (`--cuda-graph-max-bs`).
    pub flag: String,
    /// 1-based line in the recipe before the bump.
    pub line: usize,
    /// `removed`, `renamed` or `deprecated` (still accepted, with a replacement).
    pub status: String,
    /// The replacement, when a table says what it became.
    pub replacement: Option<String>,
    /// One line: what the target's argparse does with it and what it became.
    pub message: String,
    /// The bumped recipe still passes it (the launch will fail unless it is only deprecated).
    pub still_in_recipe: bool,
}

/// The result of checking one recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FlagCheck {
    /// The table used (`sglang 0.5.20 (source …)`), or None.
    pub table: Option<String>,
    /// Why nothing was checked (no table for the image's version), said once.
    pub unchecked: Option<String>,
    /// Engine flags found in the recipe's launch.
    pub checked: usize,
    /// Flags the target release does not take as written.
    pub findings: Vec<FlagFinding>,
}

const LAUNCH: &[&str] = &[
    "sglang.launch_server",
    "sglang serve",
    "vllm serve",
    "vllm.entrypoints.openai.api_server",
    "trtllm-serve",
];

fn code_part(line: &str) -> &str {
    // drop a trailing comment (a `#` at a word start outside quotes)
    let b = line.as_bytes();
    let (mut sq, mut dq) = (false, false);
    for i in 0..b.len() {
        match b[i] {
            b'\'' if !dq => sq = !sq,
            b'"' if !sq => dq = !dq,
            b'#' if !sq && !dq && (i == 0 || b[i - 1].is_ascii_whitespace()) => return &line[..i],
            _ => {}
        }
    }
    line
}

fn flags_in(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'' || c == '\\'))
        .filter(|w| w.starts_with("--") && w.len() > 2 && !w.starts_with("--$"))
        .map(|w| w.split('=').next().unwrap_or(w).to_string())
        .collect()
}

/// The extent (line indexes) of the command starting at `i`: an array `NAME=( … )` up to its
/// closing `)`, else the line and its `\` continuations.
fn extent(lines: &[&str], i: usize, in_array: bool) -> std::ops::Range<usize> {
    let mut j = i;
    if in_array {
        while j < lines.len() {
            let c = code_part(lines[j]).trim_end();
            if c.ends_with(')') && (j > i || c.trim_start() == ")" || !c.contains("=(")) {
                return i..j + 1;
            }
            j += 1;
        }
        return i..lines.len();
    }
    while j < lines.len() && code_part(lines[j]).trim_end().ends_with('\\') {
        j += 1;
    }
    i..(j + 1).min(lines.len())
}

fn array_start(lines: &[&str], name: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let t = code_part(l).trim_start();
            let t = t.strip_prefix("local ").unwrap_or(t);
            t.starts_with(&format!("{name}=(")) || t.starts_with(&format!("{name}+=("))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The engine flags of a recipe's launch(es), with their 1-based lines: the words starting
/// with `--` of each engine launch command (continued lines, or the `NAME=( … )` array it is
/// built in) and of the arrays it expands (`"${ARGS[@]}"`, one level). Flags assembled inside
/// strings or other variables are not seen.
pub fn engine_flags(src: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out: Vec<(String, usize)> = Vec::new();
    let mut seen_lines = std::collections::BTreeSet::new();
    for (i, l) in lines.iter().enumerate() {
        let c = code_part(l);
        if !LAUNCH.iter().any(|k| c.contains(k)) {
            continue;
        }
        // inside an array assignment opened on this line or an earlier `NAME=(` line
        let opener = (0..=i).rev().take(3).find(|&k| {
            let t = code_part(lines[k]).trim_end();
            t.contains("=(") && !t.contains(')')
        });
        let range = match opener {
            Some(k) => extent(&lines, k, true),
            None => extent(&lines, i, false),
        };
        let mut arrays = Vec::new();
        for k in range {
            if !seen_lines.insert(k) {
                continue;
            }
            let c = code_part(lines[k]);
            for f in flags_in(c) {
                out.push((f, k + 1));
            }
            let mut rest = c;
            while let Some(p) = rest.find("${") {
                let after = &rest[p + 2..];
                if let Some(e) = after.find("[@]}") {
                    let name = &after[..e];
                    if name
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                    {
                        arrays.push(name.to_string());
                    }
                }
                rest = after;
            }
        }
        for name in arrays {
            for s in array_start(&lines, &name) {
                for k in extent(&lines, s, true) {
                    if seen_lines.insert(k) {
                        for f in flags_in(code_part(lines[k])) {
                            out.push((f, k + 1));
                        }
                    }
                }
            }
        }
    }
    out.sort_by_key(|(_, l)| *l);
    out
}

/// What `flag` became, from the tables: a deprecated alias's target, else the option of
/// `new` with the same destination as `flag` had in the latest other table that knows it.
fn replacement(flag: &str, new: &FlagTable) -> Option<(String, String)> {
    let mut others: Vec<&FlagTable> = servebench_engines::tables()
        .iter()
        .filter(|t| t.engine == new.engine && t.version != new.version)
        .collect();
    others.reverse();
    for t in others {
        let Some(o) = t.options.iter().find(|o| o.flags.iter().any(|f| f == flag)) else {
            continue;
        };
        if let Some(n) = &o.deprecated_alias_of {
            return Some((n.clone(), format!("{} {}", t.engine, t.version)));
        }
        if let Some(n) = new
            .options
            .iter()
            .find(|n| n.dest == o.dest && !n.flags.is_empty())
        {
            return Some((n.flags[0].clone(), format!("{} {}", t.engine, t.version)));
        }
    }
    None
}

/// Checks a recipe's engine flags (`before`: the recipe as it is; `after`: as the bump would
/// leave it) against `engine`'s table for `image`. A missing table is said in
/// [`FlagCheck::unchecked`]; nothing passes silently.
pub fn check_recipe(engine: &str, image: &str, before: &str, after: &str) -> FlagCheck {
    let after_flags: Vec<String> = engine_flags(after).into_iter().map(|(f, _)| f).collect();
    check_flags(engine, image, &engine_flags(before), &after_flags)
}

/// Checks engine flags found in a recipe (`flags`: each with its 1-based line, in the recipe
/// as it is; `after_flags`: those the bumped recipe still passes) against `engine`'s table for
/// `image`: the one check behind [`check_recipe`] (shell scripts) and the srt-slurm recipe
/// YAMLs of multinode configs ([`crate::srt`]). A missing table is said in
/// [`FlagCheck::unchecked`].
pub fn check_flags(
    engine: &str,
    image: &str,
    flags: &[(String, usize)],
    after_flags: &[String],
) -> FlagCheck {
    let table = match servebench_engines::table_for_image(engine, image) {
        Ok(t) => t,
        Err(line) => {
            return FlagCheck {
                unchecked: Some(line),
                ..FlagCheck::default()
            }
        }
    };
    let mut findings: Vec<FlagFinding> = Vec::new();
    for (flag, line) in flags {
        if findings.iter().any(|f| &f.flag == flag) {
            continue;
        }
        let status = table.classify(flag);
        let rep = replacement(flag, table);
        let still = after_flags.iter().any(|f| f == flag);
        let v = format!("{} {}", table.engine, table.version);
        let (status, replacement, message) = match status {
            FlagStatus::Known | FlagStatus::Abbreviation(_) => continue,
            FlagStatus::DeprecatedAlias(n) => (
                "deprecated",
                Some(n.clone()),
                format!("{flag} is a deprecated alias of {n} in {v} (still accepted)"),
            ),
            FlagStatus::Ambiguous(m) => {
                let argparse = format!(
                    "{}: error: ambiguous option: {flag} could match {}",
                    table.prog,
                    m.join(", ")
                );
                match &rep {
                    Some((n, src)) => (
                        "renamed",
                        Some(n.clone()),
                        format!("{flag} was deleted in {v} (it was an alias of {n} in {src}); {v} refuses it: `{argparse}`"),
                    ),
                    None => (
                        "removed",
                        None,
                        format!("{flag} was deleted in {v}; it refuses it: `{argparse}`"),
                    ),
                }
            }
            FlagStatus::Unknown => {
                let argparse = format!("{}: error: unrecognized arguments: {flag}", table.prog);
                match &rep {
                    Some((n, src)) => (
                        "renamed",
                        Some(n.clone()),
                        format!("{flag} was deleted in {v} (it was {n} in {src}); {v} refuses it: `{argparse}`"),
                    ),
                    None => (
                        "removed",
                        None,
                        format!("{flag} is not a {v} flag: `{argparse}`"),
                    ),
                }
            }
        };
        findings.push(FlagFinding {
            flag: flag.clone(),
            line: *line,
            status: status.into(),
            replacement,
            message,
            still_in_recipe: still,
        });
    }
    FlagCheck {
        table: Some(format!(
            "{} {} ({}{})",
            table.engine,
            table.version,
            table.source,
            table
                .source_commit
                .as_ref()
                .map(|c| format!(", commit {c}"))
                .unwrap_or_default()
        )),
        unchecked: None,
        checked: flags.len(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"#!/usr/bin/env bash
PARALLEL_ARGS=(
    --tp "$TP"
    --ep-size "$EP_SIZE"
)
run_benchmark_serving --model "$MODEL" --no-such-client-flag 1
SGLANG_CMD=(
    python3 -m sglang.launch_server
    --model-path "$MODEL_PATH"   # a comment --not-a-flag
    "${PARALLEL_ARGS[@]}"
    --cuda-graph-max-bs "$CONC"
)
"${SGLANG_CMD[@]}" > log 2>&1 &
"#;

    #[test]
    fn launch_flags_come_from_the_command_and_its_arrays() {
        let f: Vec<String> = engine_flags(RECIPE).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            f,
            vec!["--tp", "--ep-size", "--model-path", "--cuda-graph-max-bs"]
        );
        let cont = "python3 -m sglang.launch_server --model-path m \\\n  --port 1 \\\n  --cuda-graph-max-bs 4\nrun_benchmark_serving --x 1\n";
        let f: Vec<(String, usize)> = engine_flags(cont);
        assert_eq!(f.len(), 3);
        assert_eq!(f[2], ("--cuda-graph-max-bs".to_string(), 3));
    }

    #[test]
    fn the_removed_alias_is_reported_as_renamed_with_argparse_text() {
        let after = RECIPE.replace("--cuda-graph-max-bs ", "--cuda-graph-max-bs-decode ");
        let c = check_recipe("sglang", "lmsysorg/sglang:v0.5.20-cu130", RECIPE, &after);
        assert_eq!(c.checked, 4);
        assert!(c
            .table
            .as_deref()
            .unwrap()
            .starts_with("sglang 0.5.20 (PyPI"));
        assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
        let f = &c.findings[0];
        assert_eq!(f.flag, "--cuda-graph-max-bs");
        assert_eq!(f.line, 11);
        assert_eq!(f.status, "renamed");
        assert_eq!(f.replacement.as_deref(), Some("--cuda-graph-max-bs-decode"));
        assert!(f.message.contains("sglang serve: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"), "{}", f.message);
        assert!(!f.still_in_recipe);
        let c = check_recipe("sglang", "lmsysorg/sglang:v0.5.20-cu130", RECIPE, RECIPE);
        assert!(c.findings[0].still_in_recipe);
        // at 0.5.16 the alias is still accepted, and said to be deprecated
        let c = check_recipe("sglang", "lmsysorg/sglang:v0.5.16-cu130", RECIPE, RECIPE);
        assert_eq!(c.findings[0].status, "deprecated");
        // no table: said, not passed
        let c = check_recipe("sglang", "lmsysorg/sglang:v0.5.17-cu130", RECIPE, RECIPE);
        assert!(c
            .unchecked
            .unwrap()
            .contains("no sglang flag table for release 0.5.17"));
        assert!(c.findings.is_empty());
    }
}
