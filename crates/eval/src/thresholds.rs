//! The eval gate, with InferenceX's `utils/evals/validate_scores.py` semantics
//! (MEASUREMENT.md Part 2 §4.4): the threshold is `thresholds.yaml: models.<prefix>.<task>`,
//! else `default.<task>`, else `--min-score` (servebench: `--threshold`, default 0.85); every
//! `exact_match,*` metric (here strict and flexible) must be ≥ the threshold.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use saphyr_parser::{Event, Parser};
use serde::{Deserialize, Serialize};

use crate::error::{EvalError, InputFile};

/// `validate_scores.py`'s `--min-score` default.
pub const DEFAULT_MIN_SCORE: f64 = 0.85;

/// A parsed `thresholds.yaml`: `default: {task: score}`, `models: {prefix: {task: score}}`.
#[derive(Debug, Clone, Default)]
pub struct Thresholds {
    /// Where it was read from (for messages).
    pub path: PathBuf,
    /// `default.<task>`.
    pub default: BTreeMap<String, f64>,
    /// `models.<prefix>.<task>`.
    pub models: BTreeMap<String, BTreeMap<String, f64>>,
}

/// A resolved threshold and the rule that supplied it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// Minimum score, a fraction in [0, 1].
    pub value: f64,
    /// e.g. `thresholds.yaml models.qwen3.5.gsm8k`, `thresholds.yaml default.gsm8k`,
    /// `--threshold`, `default 0.85`.
    pub source: String,
}

/// Outcome of the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// The threshold applied.
    pub threshold: Threshold,
    /// `em_strict ≥ threshold`.
    pub strict_pass: bool,
    /// `em_flexible ≥ threshold`.
    pub flexible_pass: bool,
    /// Both passed (and at least one sample was scored).
    pub pass: bool,
}

/// Applies the gate: both scores must be present and ≥ the threshold.
pub fn gate(threshold: Threshold, em_strict: Option<f64>, em_flexible: Option<f64>) -> GateVerdict {
    let strict_pass = em_strict.is_some_and(|v| v >= threshold.value);
    let flexible_pass = em_flexible.is_some_and(|v| v >= threshold.value);
    GateVerdict {
        threshold,
        strict_pass,
        flexible_pass,
        pass: strict_pass && flexible_pass,
    }
}

/// A minimal YAML tree: enough for threshold files (mappings of mappings of numbers).
#[derive(Debug, Clone)]
enum Node {
    Scalar(String, usize),
    Map(Vec<(String, Node)>),
    Seq(usize),
}

impl Thresholds {
    /// Reads a thresholds file.
    ///
    /// # Errors
    /// One line naming the file (and the line) when it cannot be read, is not YAML, or a
    /// threshold is not a number in [0, 1] ([`EvalError::Read`], [`EvalError::Thresholds`]).
    pub fn load(path: &Path) -> Result<Thresholds, EvalError> {
        let text = std::fs::read_to_string(path).map_err(|error| EvalError::Read {
            file: InputFile::Thresholds,
            path: path.to_path_buf(),
            error,
        })?;
        Thresholds::parse(&text, path)
    }

    /// Parses thresholds YAML text; `path` is used in messages only.
    ///
    /// # Errors
    /// See [`Thresholds::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Thresholds, EvalError> {
        let p = path.display().to_string();
        let mut events = Vec::new();
        for ev in Parser::new_from_str(text) {
            let (ev, span) = ev.map_err(|e| {
                bad(
                    &p,
                    Some(e.marker().line()),
                    format!("not valid YAML: {}", e.info()),
                )
            })?;
            events.push((ev, span.start.line()));
        }
        let mut i = 0;
        // Skip StreamStart / DocumentStart.
        while i < events.len()
            && matches!(events[i].0, Event::StreamStart | Event::DocumentStart(_))
        {
            i += 1;
        }
        if i >= events.len() || matches!(events[i].0, Event::StreamEnd | Event::DocumentEnd) {
            return Ok(Thresholds {
                path: path.to_path_buf(),
                ..Default::default()
            });
        }
        let root = build(&events, &mut i, &p)?;
        let Node::Map(top) = root else {
            return Err(bad(
                &p,
                None,
                "expected a mapping with `default:` and `models:`",
            ));
        };
        let mut out = Thresholds {
            path: path.to_path_buf(),
            ..Default::default()
        };
        for (k, v) in top {
            match k.as_str() {
                "default" => out.default = task_map(&v, &p, "default")?,
                "models" => {
                    let Node::Map(models) = v else {
                        return Err(bad(
                            &p,
                            None,
                            "`models` must be a mapping of model prefix → tasks",
                        ));
                    };
                    for (prefix, tasks) in models {
                        let m = task_map(&tasks, &p, &format!("models.{prefix}"))?;
                        out.models.insert(prefix, m);
                    }
                }
                _ => {} // other keys are ignored, as validate_scores.py does
            }
        }
        Ok(out)
    }

    /// The threshold for `task`, InferenceX order: `models.<prefix>.<task>` → `default.<task>`
    /// → `min_score` (the `--threshold` flag) → 0.85.
    pub fn resolve(
        file: Option<&Thresholds>,
        model_prefix: Option<&str>,
        task: &str,
        min_score: Option<f64>,
    ) -> Threshold {
        if let Some(t) = file {
            let name = t
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| t.path.display().to_string());
            if let Some(prefix) = model_prefix {
                if let Some(v) = t.models.get(prefix).and_then(|m| m.get(task)) {
                    return Threshold {
                        value: *v,
                        source: format!("{name} models.{prefix}.{task}"),
                    };
                }
            }
            if let Some(v) = t.default.get(task) {
                return Threshold {
                    value: *v,
                    source: format!("{name} default.{task}"),
                };
            }
        }
        match min_score {
            Some(v) => Threshold {
                value: v,
                source: "--threshold".into(),
            },
            None => Threshold {
                value: DEFAULT_MIN_SCORE,
                source: format!("default {DEFAULT_MIN_SCORE}"),
            },
        }
    }
}

/// `<file>[:<line>]: <problem>`.
fn bad(file: &str, line: Option<usize>, problem: impl Into<String>) -> EvalError {
    EvalError::Thresholds {
        file: file.to_string(),
        line,
        problem: problem.into(),
    }
}

fn task_map(node: &Node, p: &str, at: &str) -> Result<BTreeMap<String, f64>, EvalError> {
    let Node::Map(entries) = node else {
        return Err(bad(
            p,
            None,
            format!("`{at}` must be a mapping of task → threshold"),
        ));
    };
    let mut out = BTreeMap::new();
    for (task, v) in entries {
        match v {
            Node::Scalar(s, line) => {
                let x: f64 = s.trim().parse().map_err(|_| {
                    bad(
                        p,
                        Some(*line),
                        format!("`{at}.{task}` is {s:?}, not a number"),
                    )
                })?;
                if !(0.0..=1.0).contains(&x) {
                    return Err(bad(
                        p,
                        Some(*line),
                        format!("`{at}.{task}` = {x} is outside [0, 1]"),
                    ));
                }
                out.insert(task.clone(), x);
            }
            Node::Seq(line) => {
                return Err(bad(
                    p,
                    Some(*line),
                    format!("`{at}.{task}` must be a number"),
                ))
            }
            Node::Map(_) => return Err(bad(p, None, format!("`{at}.{task}` must be a number"))),
        }
    }
    Ok(out)
}

fn build(events: &[(Event<'_>, usize)], i: &mut usize, p: &str) -> Result<Node, EvalError> {
    let Some((ev, line)) = events.get(*i) else {
        return Err(bad(p, None, "unexpected end of YAML"));
    };
    let line = *line;
    *i += 1;
    match ev {
        Event::Scalar(s, ..) => Ok(Node::Scalar(s.to_string(), line)),
        Event::MappingStart(..) => {
            let mut entries = Vec::new();
            loop {
                match events.get(*i).map(|e| &e.0) {
                    Some(Event::MappingEnd) => {
                        *i += 1;
                        return Ok(Node::Map(entries));
                    }
                    None => {
                        return Err(bad(
                            p,
                            None,
                            format!("unterminated mapping starting at line {line}"),
                        ))
                    }
                    _ => {
                        let key = match build(events, i, p)? {
                            Node::Scalar(k, _) => k,
                            _ => return Err(bad(p, Some(line), "only plain keys are supported")),
                        };
                        let value = build(events, i, p)?;
                        entries.push((key, value));
                    }
                }
            }
        }
        Event::SequenceStart(..) => {
            let mut depth = 1;
            while depth > 0 {
                match events.get(*i).map(|e| &e.0) {
                    Some(Event::SequenceStart(..)) => depth += 1,
                    Some(Event::SequenceEnd) => depth -= 1,
                    None => {
                        return Err(bad(
                            p,
                            None,
                            format!("unterminated sequence at line {line}"),
                        ))
                    }
                    _ => {}
                }
                *i += 1;
            }
            Ok(Node::Seq(line))
        }
        Event::Alias(_) => return Err(bad(p, Some(line), "YAML aliases are not supported here")),
        _ => return Err(bad(p, Some(line), "unexpected YAML structure")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARED: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/inferencex/thresholds.yaml"
    );

    #[test]
    fn reads_the_inferencex_file() {
        let t = Thresholds::load(Path::new(SHARED)).unwrap();
        assert_eq!(t.default.get("gsm8k"), Some(&0.90));
        assert_eq!(t.default.get("swebench_lite"), Some(&0.50));
        assert_eq!(t.models["qwen3.5"]["gsm8k"], 0.94);
        assert_eq!(t.models["glm5.1"]["gsm8k"], 0.93);
        assert_eq!(t.models.len(), 8);
    }

    #[test]
    fn lookup_order() {
        let t = Thresholds::load(Path::new(SHARED)).unwrap();
        let r = Thresholds::resolve(Some(&t), Some("qwen3.5"), "gsm8k", Some(0.5));
        assert_eq!(r.value, 0.94);
        assert_eq!(r.source, "thresholds.yaml models.qwen3.5.gsm8k");
        let r = Thresholds::resolve(Some(&t), Some("unknown-model"), "gsm8k", None);
        assert_eq!(
            (r.value, r.source.as_str()),
            (0.90, "thresholds.yaml default.gsm8k")
        );
        let r = Thresholds::resolve(Some(&t), None, "other_task", Some(0.7));
        assert_eq!((r.value, r.source.as_str()), (0.7, "--threshold"));
        let r = Thresholds::resolve(None, Some("qwen3.5"), "gsm8k", None);
        assert_eq!((r.value, r.source.as_str()), (0.85, "default 0.85"));
    }

    #[test]
    fn both_scores_must_pass() {
        let th = Threshold {
            value: 0.9,
            source: "x".into(),
        };
        assert!(gate(th.clone(), Some(0.9), Some(0.95)).pass);
        let g = gate(th.clone(), Some(0.95), Some(0.89));
        assert!(g.strict_pass && !g.flexible_pass && !g.pass);
        assert!(!gate(th, None, None).pass);
    }

    #[test]
    fn bad_values_name_file_and_line() {
        let e = Thresholds::parse("default:\n  gsm8k: high\n", Path::new("t.yaml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.yaml:2: `default.gsm8k` is \"high\", not a number"
        );
        let e = Thresholds::parse("default:\n  gsm8k: 1.5\n", Path::new("t.yaml")).unwrap_err();
        assert!(e.to_string().starts_with("t.yaml:2:"), "{e}");
        let e = Thresholds::parse("default: [\n", Path::new("t.yaml")).unwrap_err();
        assert!(e.to_string().starts_with("t.yaml:"), "{e}");
    }
}
